from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Path, Query

from hippograph.inputs import Id
from hippograph.server.deps import Admin, Reader, Service, Writer
from hippograph.server.schemas import CorrectionRequest

router = APIRouter(prefix="/v1/users", tags=["users"])
UserId = Path(min_length=1, max_length=256)
ActorQuery = Query("api", min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f]+$",
                   description="Who deletes it, for the audit log.")


@router.get("/{user_id}/profile")
def profile(service: Service, who: Reader, user_id: Id = UserId, history: bool = False) -> dict:
    """How Hippograph remembers the user: current facts, preferences and decisions
    (`?history=true` adds superseded items with their validity intervals)."""
    owner = service.tenancy.owner(who.tenant, user_id)
    return {**service.profile(owner, include_history=history), "user_id": user_id}


@router.get("/{user_id}/profile/history")
def profile_history(service: Service, who: Reader, user_id: Id = UserId) -> dict:
    """Every profile item, current or replaced, with its validity interval (`valid_at`, `invalid_at`)
    and what replaced it; replaced items are never shown as current."""
    owner = service.tenancy.owner(who.tenant, user_id)
    return {**service.profile(owner, include_history=True), "user_id": user_id}


@router.patch("/{user_id}/profile/{item_id}")
def correct_profile_item(service: Service, who: Writer, body: CorrectionRequest, item_id: Id,
                         user_id: Id = UserId) -> dict:
    """Correct a current profile item: a new item with the text replaces it, and the old one stays
    in the history as superseded. Returns the new item."""
    owner = service.tenancy.owner(who.tenant, user_id)
    new = service.correct_note(owner, item_id, body.text, actor=who.actor(body.actor))
    return {"id": new.id, "replaces": item_id, "kind": new.kind.value, "text": new.text,
            "updated": new.valid_at.isoformat(), "confidence": new.confidence}


@router.delete("/{user_id}/profile/{item_id}")
def delete_profile_item(service: Service, who: Writer, item_id: Id, user_id: Id = UserId,
                        actor: str = ActorQuery) -> dict:
    """Delete a profile item: its text leaves every store and the audit log (the delete is recorded
    without it), the relations saying the same thing go too, and an item it replaced no longer points
    at it."""
    owner = service.tenancy.owner(who.tenant, user_id)
    service.delete_note(owner, item_id, actor=who.actor(actor))
    return {"deleted": item_id}


@router.get("/{user_id}/audit")
def audit_log(
    service: Service, who: Reader, user_id: Id = UserId, item_id: Id | None = Query(None, max_length=256),
    limit: int = Query(1000, ge=1, le=10_000),
    kind: Literal["note", "memory"] | None = Query(None, description="Only profile items, or only memories."),
) -> dict:
    """Every creation, supersession, correction, retirement, deletion and expiry of the user's profile
    items and memories, oldest first, with who made it and when (`item_id` narrows it to one item and
    what replaced it). Deletes and expiries are listed without text, and a deleted item's earlier
    events lose theirs."""
    owner = service.tenancy.owner(who.tenant, user_id)
    events = service.audit(owner, item_id, limit, kind)
    return {"user_id": user_id, "events": [{**e.model_dump(mode="json"), "user_id": user_id} for e in events]}


@router.get("/{user_id}/memories/{memory_id}")
def get_memory(service: Service, who: Reader, memory_id: Id, user_id: Id = UserId) -> dict:
    """A stored message or document (a document comes in parts): its content, whether it is extracted
    and searchable yet (`status`: processed or pending) and which extractor processed it."""
    owner = service.tenancy.owner(who.tenant, user_id)
    return {**service.get_memory(owner, memory_id), "user_id": user_id}


@router.delete("/{user_id}/memories/{memory_id}")
def delete_memory(service: Service, who: Writer, memory_id: Id, user_id: Id = UserId,
                  actor: str = ActorQuery) -> dict:
    """Delete one message or document (the client's id, or ours; an expired one too while notes cite
    it) from every store, with the profile items and relations derived only from it; those with other
    sources no longer cite it, and session summaries lose its lines."""
    owner = service.tenancy.owner(who.tenant, user_id)
    return {"deleted": service.delete_memory(owner, memory_id, actor=who.actor(actor))}


@router.get("/{user_id}/sessions")
def sessions(service: Service, who: Reader, user_id: Id = UserId) -> dict:
    """The user's live sessions, most recent first, with when each expires unless used again."""
    owner = service.tenancy.owner(who.tenant, user_id)
    return {"user_id": user_id, "sessions": service.list_sessions(owner)}


@router.delete("/{user_id}/sessions/{session_id}")
def end_session(service: Service, who: Writer, session_id: Id, user_id: Id = UserId,
                actor: str = ActorQuery) -> dict:
    """Forget a session now: its messages, summaries and tool results, and the profile items and
    relations derived only from them (the TTL, unlike this, keeps what was extracted)."""
    owner = service.tenancy.owner(who.tenant, user_id)
    return {"deleted": session_id,
            "memories_deleted": service.end_session(owner, session_id, actor=who.actor(actor))}


@router.delete("/{user_id}")
def forget_user(service: Service, who: Admin, user_id: Id = UserId) -> dict:
    """Forget the user everywhere: episodes, notes, entities, relations and vectors."""
    service.forget_user(service.tenancy.owner(who.tenant, user_id))
    return {"deleted": user_id}
