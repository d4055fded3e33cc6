from __future__ import annotations

from fastapi import APIRouter

from hippograph.server.deps import Service, Writer
from hippograph.server.schemas import HandoffOut, HandoffRequest

router = APIRouter(prefix="/v1", tags=["handoffs"])


@router.post("/handoffs", response_model=HandoffOut)
def handoff(body: HandoffRequest, service: Service, who: Writer) -> dict:
    """A handoff packet for the next agent: the session's conclusions (task, requirements, format,
    open questions), never its transcript. Ideas raised and then rejected appear only as what was
    decided instead ("exclude archived projects")."""
    owner = service.tenancy.owner(who.tenant, body.user_id)
    return {**service.handoff(owner, body.session_id, body.task, body.to_agent), "user_id": body.user_id}
