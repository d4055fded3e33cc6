from __future__ import annotations

from fastapi import APIRouter

from hippograph.operations import run
from hippograph.server.deps import Service, Writer
from hippograph.server.schemas import HandoffOut, HandoffRequest

router = APIRouter(prefix="/v1", tags=["handoffs"])


@router.post("/handoffs", response_model=HandoffOut)
def handoff(body: HandoffRequest, service: Service, who: Writer) -> HandoffOut:
    """A handoff packet for the next agent: the session's conclusions (task, requirements, format,
    open questions), never its transcript. Ideas raised and then rejected appear only as what was
    decided instead ("exclude archived projects")."""
    return run(service, who, "handoff", body)
