"""Domain models shared by every part of Hippograph.

One id scheme runs across both stores: every episode, note, entity and relation has a string id
that is also the id of its point in the vector store (as a UUID derived from it, see `point_id`).
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from hippograph.inputs import ClientTimestamp, Id, Metadata


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def stable_id(prefix: str, *parts: str) -> str:
    """A deterministic id from its parts: the same client key always maps to the same id."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:20]
    return f"{prefix}_{digest}"


def point_id(item_id: str) -> str:
    """The vector-store point id (a UUID string, as Qdrant requires) for one of our ids."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"hippograph:{item_id}"))


class Role(StrEnum):
    user = "user"
    assistant = "assistant"
    tool = "tool"
    system = "system"


class EpisodeKind(StrEnum):
    message = "message"
    document = "document"
    summary = "summary"


class Episode(BaseModel):
    """One thing that happened: a message, a document or a summary. The raw record of tier 1."""

    id: str
    user_id: str
    session_id: str | None = None
    agent_id: str | None = None
    kind: EpisodeKind = EpisodeKind.message
    role: Role | None = None
    name: str | None = None
    title: str | None = None
    content: str
    client_id: str | None = None
    timestamp: datetime
    seq: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)
    processed: bool | None = Field(None, description="Extracted and indexed (None: not read from a store).")
    extractor: str | None = Field(None, description="What extracted it: spacy, llm:<model>, spacy:fallback.")
    attempts: int = Field(0, description="Failed attempts at processing it (errors of the message, not of a "
                                         "backend that was down).")
    failure: str | None = Field(None, description="Why the last attempt failed.")
    quarantined_at: datetime | None = Field(
        None, description="When it was set aside after too many failed attempts: kept, no longer retried.")


class NoteKind(StrEnum):
    fact = "fact"
    preference = "preference"
    decision = "decision"


class Note(BaseModel):
    """A tier-2 long-term item about a user. `slot` decides what replaces what."""

    id: str
    user_id: str
    kind: NoteKind
    text: str
    slot: str
    valid_at: datetime
    invalid_at: datetime | None = None
    superseded_by: str | None = None
    source_episode_ids: list[str] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utcnow)
    confidence: float = Field(
        0.7, ge=0.0, le=1.0,
        description="How sure the item is: the extractor's estimate, raised each time it is said again; "
                    "1.0 once a person set or corrected it.")

    @property
    def current(self) -> bool:
        return self.invalid_at is None


class AuditEvent(BaseModel):
    """One change to a user's long-term memory: who did what to which item, and when."""

    id: str
    user_id: str
    at: datetime
    actor: str = Field(description="Who made the change: 'extractor:<name>' for the write path, else the caller.")
    action: str = Field(description="create | supersede | correct | delete | retire | expire")
    item_kind: str = Field(description="note | memory | relation")
    item_id: str
    text: str | None = Field(None, description="The item's text after the change; never kept for a delete or "
                                                "an expiry, and dropped from every event about an item once "
                                                "it is deleted.")
    related_id: str | None = Field(None, description="The item that replaced it, or that it replaced.")
    session_id: str | None = Field(None, description="For a memory: the session it belongs to.")


class SessionInfo(BaseModel):
    """A session of a user: when the server first and last received something for it."""

    user_id: str
    session_id: str
    started_at: datetime
    last_active_at: datetime


class Entity(BaseModel):
    id: str
    user_id: str
    name: str
    type: str = "Thing"
    aliases: list[str] = Field(default_factory=list)
    is_user: bool = False


class Relation(BaseModel):
    """A directed, typed edge between two entities, with the sentence that supports it."""

    id: str
    user_id: str
    source_id: str
    target_id: str
    predicate: str
    fact: str
    valid_at: datetime
    invalid_at: datetime | None = None
    source_episode_ids: list[str] = Field(default_factory=list)


class MemoryKind(StrEnum):
    """Kinds of points in the vector store."""

    episode = "episode"
    note = "note"
    relation = "relation"


class VectorRecord(BaseModel):
    """A point to index: its id is one of our ids; text is what gets embedded."""

    id: str
    user_id: str
    kind: MemoryKind
    text: str
    session_id: str | None = None
    timestamp: datetime
    source_ids: list[str] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)
    lexical_extra: str = ""  # words it is also found by in the lexical index, neither embedded nor shown


@dataclass(slots=True)
class VectorHit:
    """A hit of a vector search, read from a payload the stores wrote with these types (a plain class: a
    context call reads hundreds of them, and a model's construction cost more than the search)."""
    id: str
    score: float
    kind: MemoryKind
    text: str
    user_id: str
    timestamp: datetime
    session_id: str | None = None
    source_ids: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


class MessageIn(BaseModel):
    """A message as a client sends it; `id` is the client's idempotency key."""

    id: Id | None = None
    role: Role
    content: str = Field(min_length=1)
    name: str | None = Field(None, max_length=256)
    timestamp: ClientTimestamp | None = None
    metadata: Metadata | None = Field(
        None, description="Per message; for a tool result, the call's `arguments` (an object).")


class DocumentIn(BaseModel):
    id: Id
    title: str | None = Field(None, max_length=1000)
    text: str = Field(min_length=1)
    timestamp: ClientTimestamp | None = None
