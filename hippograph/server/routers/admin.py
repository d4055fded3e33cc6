"""What an operator looks after: messages set aside after failing too often (`hippograph.failures`)."""

from __future__ import annotations

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from hippograph.inputs import Id
from hippograph.server.deps import Admin, Service
from hippograph.server.schemas import Strict

router = APIRouter(prefix="/v1/admin", tags=["admin"])


class QuarantinedOut(BaseModel):
    user_id: str
    memory_id: str = Field(description="The message's or document's id (the client's, else ours).")
    session_id: str | None = None
    attempts: int = Field(description="Failed attempts at processing it.")
    failure: str | None = Field(None, description="Why the last attempt failed.")
    quarantined_at: str


class QuarantineOut(BaseModel):
    quarantined: list[QuarantinedOut]


class ReleaseRequest(Strict):
    user_id: Id
    ids: list[Id] = Field(min_length=1, max_length=2000, description="The message or document ids to try again.")


class ReleaseOut(BaseModel):
    user_id: str
    released: list[str] = Field(description="Put back in line: the next sweep processes them again.")


@router.get("/quarantine", response_model=QuarantineOut)
def quarantine(service: Service, who: Admin, limit: int = Query(1000, ge=1, le=10_000)) -> QuarantineOut:
    """The tenant's messages and documents set aside after processing them failed too often
    (HIPPOGRAPH_EXTRACTION__MAX_ATTEMPTS): kept, readable and deletable by id, not searchable, and no
    longer tried by the user's writes, the sweep or a restart. Oldest first."""
    found = service.quarantine(limit if who.open else 10_000)
    owners = service.graph.owners(list({e.user_id for e in found}))
    mine = {o: u for o, (t, u) in owners.items() if who.open or t == who.tenant}
    out = [QuarantinedOut(user_id=mine[e.user_id], memory_id=e.client_id or e.id, session_id=e.session_id,
                          attempts=e.attempts, failure=e.failure,
                          quarantined_at=e.quarantined_at.isoformat() if e.quarantined_at else "")
           for e in found if e.user_id in mine]
    return QuarantineOut(quarantined=list({(q.user_id, q.memory_id): q for q in out}.values())[:limit])


@router.post("/quarantine/release", response_model=ReleaseOut)
def release(body: ReleaseRequest, service: Service, who: Admin) -> ReleaseOut:
    """Try these quarantined messages or documents of a user again (after an upgrade that fixes what
    failed them, say): the sweep processes them within HIPPOGRAPH_SESSIONS__SWEEP_SECONDS, and they
    are quarantined again if they still fail as often."""
    owner = service.tenancy.owner(who.tenant, body.user_id)
    return ReleaseOut(user_id=body.user_id, released=service.release(owner, body.ids))
