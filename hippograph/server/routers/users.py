from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Path, Query

from hippograph.inputs import Id
from hippograph.operations import (
    AuditOut,
    AuditQuery,
    CorrectedOut,
    DeletedOut,
    EndedOut,
    MemoryDelete,
    MemoryOut,
    MemoryRef,
    NoteCorrection,
    NoteRef,
    ProfileOut,
    ProfileQuery,
    SessionRef,
    SessionsOut,
    UserRef,
    UsersOut,
    UsersQuery,
    run,
)
from hippograph.server.deps import Admin, Reader, Service, Writer
from hippograph.server.schemas import CorrectionRequest

router = APIRouter(prefix="/v1/users", tags=["users"])
UserId = Path(min_length=1, max_length=256)
ActorQuery = Query("api", min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f]+$",
                   description="Who deletes it, for the audit log.")


@router.get("")
def users(service: Service, who: Reader, q: str | None = Query(None, max_length=256),
          limit: int = Query(100, ge=1, le=1000)) -> UsersOut:
    """The ids of the users the key's tenant has memories of, in order (`q`: those starting with it)."""
    return run(service, who, "users", UsersQuery(q=q, limit=limit))


@router.get("/{user_id}/profile")
def profile(service: Service, who: Reader, user_id: Id = UserId, history: bool = False) -> ProfileOut:
    """How Hippograph remembers the user: current facts, preferences and decisions
    (`?history=true` adds superseded items with their validity intervals)."""
    return run(service, who, "profile", ProfileQuery(user_id=user_id, history=history))


@router.get("/{user_id}/profile/history")
def profile_history(service: Service, who: Reader, user_id: Id = UserId) -> ProfileOut:
    """Every profile item, current or replaced, with its validity interval (`valid_at`, `invalid_at`)
    and what replaced it; replaced items are never shown as current."""
    return run(service, who, "profile", ProfileQuery(user_id=user_id, history=True))


@router.patch("/{user_id}/profile/{item_id}")
def correct_profile_item(service: Service, who: Writer, body: CorrectionRequest, item_id: Id,
                         user_id: Id = UserId) -> CorrectedOut:
    """Correct a current profile item: a new item with the text replaces it, and the old one stays
    in the history as superseded. Returns the new item."""
    return run(service, who, "correct_note", NoteCorrection(user_id=user_id, item_id=item_id, text=body.text,
                                                              actor=body.actor))


@router.delete("/{user_id}/profile/{item_id}")
def delete_profile_item(service: Service, who: Writer, item_id: Id, user_id: Id = UserId,
                        actor: str = ActorQuery) -> DeletedOut:
    """Delete a profile item: its text leaves every store and the audit log (the delete is recorded
    without it), the relations saying the same thing go too, and an item it replaced no longer points
    at it."""
    return run(service, who, "delete_note", NoteRef(user_id=user_id, item_id=item_id, actor=actor))


@router.get("/{user_id}/audit")
def audit_log(
    service: Service, who: Reader, user_id: Id = UserId, item_id: Id | None = Query(None, max_length=256),
    limit: int = Query(1000, ge=1, le=10_000),
    kind: Literal["note", "memory"] | None = Query(None, description="Only profile items, or only memories."),
) -> AuditOut:
    """Every creation, supersession, correction, retirement, deletion and expiry of the user's profile
    items and memories, oldest first, with who made it and when (`item_id` narrows it to one item and
    what replaced it). Deletes and expiries are listed without text, and a deleted item's earlier
    events lose theirs."""
    return run(service, who, "audit", AuditQuery(user_id=user_id, item_id=item_id, limit=limit, kind=kind))


@router.get("/{user_id}/memories/{memory_id}")
def get_memory(service: Service, who: Reader, memory_id: Id, user_id: Id = UserId) -> MemoryOut:
    """A stored message or document (a document comes in parts): its content, whether it is extracted
    and searchable yet (`status`: processed or pending) and which extractor processed it."""
    return run(service, who, "get_memory", MemoryRef(user_id=user_id, memory_id=memory_id))


@router.delete("/{user_id}/memories/{memory_id}")
def delete_memory(service: Service, who: Writer, memory_id: Id, user_id: Id = UserId,
                  actor: str = ActorQuery) -> DeletedOut:
    """Delete one message or document (the client's id, or ours; an expired one too while notes cite
    it) from every store, with the profile items and relations derived only from it; those with other
    sources no longer cite it, and session summaries lose its lines."""
    return run(service, who, "delete_memory", MemoryDelete(user_id=user_id, memory_id=memory_id, actor=actor))


@router.get("/{user_id}/sessions")
def sessions(service: Service, who: Reader, user_id: Id = UserId) -> SessionsOut:
    """The user's live sessions, most recent first, with when each expires unless used again."""
    return run(service, who, "sessions", UserRef(user_id=user_id))


@router.delete("/{user_id}/sessions/{session_id}")
def end_session(service: Service, who: Writer, session_id: Id, user_id: Id = UserId,
                actor: str = ActorQuery) -> EndedOut:
    """Forget a session now: its messages, summaries and tool results, and the profile items and
    relations derived only from them (the TTL, unlike this, keeps what was extracted)."""
    return run(service, who, "end_session", SessionRef(user_id=user_id, session_id=session_id, actor=actor))


@router.delete("/{user_id}")
def forget_user(service: Service, who: Admin, user_id: Id = UserId) -> DeletedOut:
    """Forget the user everywhere: episodes, notes, entities, relations and vectors."""
    return run(service, who, "forget_user", UserRef(user_id=user_id))
