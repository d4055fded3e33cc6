from __future__ import annotations

from fastapi import APIRouter

from hippograph.server.deps import Service
from hippograph.server.schemas import HandoffOut, HandoffRequest

router = APIRouter(prefix="/v1", tags=["handoffs"])


@router.post("/handoffs", response_model=HandoffOut)
def handoff(body: HandoffRequest, service: Service) -> dict:
    """A handoff packet for the next agent: the session's conclusions (task, requirements, format,
    open questions), never its transcript. Ideas raised and then rejected appear only as what was
    decided instead ("exclude archived projects")."""
    return service.handoff(body.user_id, body.session_id, body.task, body.to_agent)
