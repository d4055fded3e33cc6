"""The catalogue of what a client can do with its memory. Each operation is written once here: its input
model (the same pydantic model the REST API validates), the scope it needs, what it returns, the words
a model reads when it chooses the operation as a tool, and the one function that carries it out. The
three faces are made from it: the REST routes (`hippograph.server.routers`), the MCP tools
(`hippograph.mcp`) and the SDK methods (`hippograph.client`). `tests/test_faces.py` fails when one face
lacks an operation the catalogue has, unless `absent` says why.

The REST face of an operation is `method` + `path`: the path's `{fields}` come from the input, the other
fields are the JSON body (POST, PATCH) or the query string (GET, DELETE)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from hippograph.auth import Principal, Scope
from hippograph.context_entry import ContextResult
from hippograph.errors import NotFound
from hippograph.ingest import IngestResult
from hippograph.inputs import Id
from hippograph.models import AuditEvent
from hippograph.server.schemas import (
    Actor,
    ContextRequest,
    CorrectionRequest,
    EntityOut,
    HandoffOut,
    HandoffRequest,
    MemoriesRequest,
    NeighborsOut,
    RelationOut,
    SearchRequest,
    Strict,
)
from hippograph.service import Hippograph, SearchHit

FACES = ("rest", "mcp", "sdk")


# --- inputs of the operations that have no request body of their own -------------------------------------
class UserRef(Strict):
    user_id: Id = Field(description="The user whose memory this is (your own id for them).")


class UsersQuery(Strict):
    q: str | None = Field(None, max_length=256, description="Only the user ids that start with this.")
    limit: int = Field(100, ge=1, le=1000, description="At most this many.")


class UsersOut(BaseModel):
    users: list[str]


class ProfileQuery(UserRef):
    history: bool = Field(False, description="Also list replaced items, with when each was valid.")


class NoteCorrection(UserRef, CorrectionRequest):
    item_id: Id = Field(description="The id of the profile item to correct (from get_profile).")


class NoteRef(UserRef):
    item_id: Id = Field(description="The id of the profile item (from get_profile).")
    actor: str = Actor


class MemoryRef(UserRef):
    memory_id: Id = Field(description="The message or document id you gave when storing it (or ours).")


class MemoryStatusQuery(UserRef):
    ids: list[Id] = Field(min_length=1, max_length=2000,
                          description="Message or document ids you gave when storing them (or ours).")


class MemoryStatusOut(BaseModel):
    user_id: str
    processed: list[str] = Field(description="Extracted and searchable.")
    pending: list[str] = Field(description="Stored (acknowledged), not extracted or searchable yet.")
    quarantined: list[str] = Field(
        default_factory=list, description="Stored and kept, but set aside after processing failed too often: not "
                                          "searchable; an admin sees why at GET /v1/admin/quarantine.")
    unknown: list[str] = Field(description="Not stored for this user (never, or deleted since).")


class MemoryDelete(MemoryRef):
    actor: str = Actor


class SessionRef(UserRef):
    session_id: Id = Field(description="The session to forget.")
    actor: str = Actor


class AuditQuery(UserRef):
    item_id: Id | None = Field(None, description="Only this item and what replaced it.")
    limit: int = Field(1000, ge=1, le=10_000)
    kind: Literal["note", "memory"] | None = Field(None, description="Only profile items, or only memories.")


class EntitiesQuery(UserRef):
    q: str | None = Field(None, max_length=500, description="Part of the name to look for.")
    limit: int = Field(50, ge=1, le=500)


class NeighborsQuery(UserRef):
    entity: str = Field(min_length=1, max_length=500,
                           description="An entity's id, or its name (\"Acme Corp\"): a name is looked up "
                                       "among the user's entities.")
    depth: int = Field(1, ge=1, le=4, description="How many hops to follow.")
    history: bool = Field(False, description="Also the relations that no longer hold (with their invalid_at), and "
                                             "the entities only they reach.")


# --- outputs that were plain objects -------------------------------------------------------------------
class Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class ProfileOut(Open):
    user_id: str
    facts: list[dict[str, Any]]
    preferences: list[dict[str, Any]]
    decisions: list[dict[str, Any]]


class CorrectedOut(BaseModel):
    id: str = Field(description="The new item's id.")
    replaces: str
    kind: str
    text: str
    updated: str
    confidence: float


class DeletedOut(Open):
    deleted: Any = Field(description="What was deleted: the id, or the ids of the memory's parts.")


class MemoryOut(Open):
    id: str
    user_id: str
    parts: list[dict[str, Any]]


class SessionsOut(BaseModel):
    user_id: str
    sessions: list[dict[str, Any]]


class EndedOut(BaseModel):
    deleted: str
    memories_deleted: int


class AuditOut(BaseModel):
    user_id: str
    events: list[AuditEvent]


@dataclass(frozen=True)
class Operation:
    name: str  # the SDK method; the MCP tool is `tool`
    method: str
    path: str
    scope: Scope
    input: type[BaseModel]
    output: Any
    run: Callable[[Hippograph, Principal, Any], Any]
    description: str
    tool: str | None = None
    absent: Mapping[str, str] = field(default_factory=dict)  # face -> why it lacks this operation
    # what the tool answers, from the REST answer, when a model needs less of it (every token costs)
    tool_view: Callable[[Any], Any] | None = None

    @property
    def path_fields(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.path)

    @property
    def has_body(self) -> bool:
        return self.method in {"POST", "PATCH", "PUT"}

    def request(self, args: BaseModel) -> tuple[str, dict[str, Any]]:
        """The REST path and the rest of the input (body or query) for these arguments."""
        data = args.model_dump(mode="json", exclude_unset=not self.has_body, exclude_none=True)
        path = self.path.format(**{f: _segment(str(getattr(args, f))) for f in self.path_fields})
        return path, {k: v for k, v in data.items() if k not in self.path_fields}

    def dump(self, result: Any) -> Any:
        """The result as JSON-ready data, as the REST API returns it."""
        return TypeAdapter(self.output).dump_python(result, mode="json")

    def load(self, data: Any) -> Any:
        return TypeAdapter(self.output).validate_python(data)

    def tool_answer(self, result: Any) -> Any:
        data = self.dump(result)
        return self.tool_view(data) if self.tool_view else data


def _block_only(data: dict) -> dict:
    """The block as the model reads it, without the same items again as structured sections."""
    return {"context": data["context"], "tokens": data["tokens"], "token_budget": data["token_budget"],
            "plan": {k: data["plan"].get(k) for k in ("name", "reason")}}


def _segment(value: str) -> str:
    return quote(value, safe="")


# --- the handlers ---------------------------------------------------------------------------------------
def _owner(service: Hippograph, who: Principal, user_id: str, **how: bool) -> str:
    return service.tenancy.owner(who.tenant, user_id, **how)


def _remember(service: Hippograph, who: Principal, a: MemoriesRequest) -> IngestResult:
    service.check_sizes(a.messages, a.documents)  # a refused write registers no user
    return service.remember(_owner(service, who, a.user_id, create=True), a.session_id, a.agent_id, a.messages,
                            a.documents, a.metadata, wait=a.wait)


def _memory_status(service: Hippograph, who: Principal, a: MemoryStatusQuery) -> MemoryStatusOut:
    return MemoryStatusOut(user_id=a.user_id, **service.memory_status(_owner(service, who, a.user_id), a.ids))


def _context(service: Hippograph, who: Principal, a: ContextRequest) -> ContextResult:
    return service.context(_owner(service, who, a.user_id, must_exist=False), a.query, a.session_id,
                           a.token_budget, a.plan)


def _search(service: Hippograph, who: Principal, a: SearchRequest) -> list[SearchHit]:
    return service.search(_owner(service, who, a.user_id), a.query, a.limit)


def _users(service: Hippograph, who: Principal, a: UsersQuery) -> UsersOut:
    return UsersOut(users=service.graph.tenant_users(who.tenant, a.q or "", a.limit))


def _profile(service: Hippograph, who: Principal, a: ProfileQuery) -> ProfileOut:
    return ProfileOut(**{**service.profile(_owner(service, who, a.user_id), include_history=a.history),
                         "user_id": a.user_id})


def _correct(service: Hippograph, who: Principal, a: NoteCorrection) -> CorrectedOut:
    new = service.correct_note(_owner(service, who, a.user_id), a.item_id, a.text, actor=who.actor(a.actor))
    return CorrectedOut(id=new.id, replaces=a.item_id, kind=new.kind.value, text=new.text,
                        updated=new.valid_at.isoformat(), confidence=new.confidence)


def _delete_note(service: Hippograph, who: Principal, a: NoteRef) -> DeletedOut:
    service.delete_note(_owner(service, who, a.user_id), a.item_id, actor=who.actor(a.actor))
    return DeletedOut(deleted=a.item_id)


def _audit(service: Hippograph, who: Principal, a: AuditQuery) -> AuditOut:
    events = service.audit(_owner(service, who, a.user_id), a.item_id, a.limit, a.kind)
    return AuditOut(user_id=a.user_id, events=[e.model_copy(update={"user_id": a.user_id}) for e in events])


def _get_memory(service: Hippograph, who: Principal, a: MemoryRef) -> MemoryOut:
    return MemoryOut(**{**service.get_memory(_owner(service, who, a.user_id), a.memory_id), "user_id": a.user_id})


def _delete_memory(service: Hippograph, who: Principal, a: MemoryDelete) -> DeletedOut:
    return DeletedOut(deleted=service.delete_memory(_owner(service, who, a.user_id), a.memory_id,
                                                    actor=who.actor(a.actor)))


def _sessions(service: Hippograph, who: Principal, a: UserRef) -> SessionsOut:
    return SessionsOut(user_id=a.user_id, sessions=service.list_sessions(_owner(service, who, a.user_id)))


def _end_session(service: Hippograph, who: Principal, a: SessionRef) -> EndedOut:
    owner = _owner(service, who, a.user_id)
    return EndedOut(deleted=a.session_id,
                    memories_deleted=service.end_session(owner, a.session_id, actor=who.actor(a.actor)))


def _handoff(service: Hippograph, who: Principal, a: HandoffRequest) -> HandoffOut:
    owner = _owner(service, who, a.user_id)
    return HandoffOut(**{**service.handoff(owner, a.session_id, a.task, a.to_agent), "user_id": a.user_id})


def _entities(service: Hippograph, who: Principal, a: EntitiesQuery) -> list[EntityOut]:
    return [EntityOut(**e.model_dump()) for e in service.entities(_owner(service, who, a.user_id), a.q, a.limit)]


def _neighbors(service: Hippograph, who: Principal, a: NeighborsQuery) -> NeighborsOut:
    owner = _owner(service, who, a.user_id)
    entity_id = a.entity
    if service.graph.get_entity(owner, entity_id) is None:  # not an id: a name ("Acme", "acme corp")
        found = service.entities(owner, entity_id, 20)
        named = [e for e in found if e.name.lower() == entity_id.strip().lower()] or \
            (found if len(found) == 1 else [])  # a part of one name only
        if not named:
            raise NotFound(f"this user has no entity {entity_id!r}")
        entity_id = named[0].id
    sub = service.neighbors(owner, entity_id, a.depth, include_invalid=a.history)
    return NeighborsOut(
        entity_id=entity_id, depth=a.depth,
        entities=[EntityOut(**e.model_dump()) for e in sub.entities],
        relations=[RelationOut(id=r.id, source_id=r.source_id, target_id=r.target_id, predicate=r.predicate,
                               fact=r.fact, valid_at=r.valid_at.isoformat(),
                               invalid_at=r.invalid_at.isoformat() if r.invalid_at else None,
                               source_episode_ids=r.source_episode_ids) for r in sub.relations])


def _forget_user(service: Hippograph, who: Principal, a: UserRef) -> DeletedOut:
    service.forget_user(_owner(service, who, a.user_id))
    return DeletedOut(deleted=a.user_id)


_ADMIN_ONLY = ("erasing a whole user is an administrator's act, not a tool a model should be able to pick; "
               "it stays on the REST API and the SDK")

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "remember", "POST", "/v1/memories", Scope.write, MemoriesRequest, IngestResult, _remember,
        "Store what was said so it can be remembered later: the conversation's new messages (user, "
        "assistant, and tool results as role 'tool'), and/or documents. Call it after every turn. Give each "
        "message an id: a retried id is stored once. Returns what was learnt (profile notes, entities).",
        tool="remember"),
    Operation(
        "context", "POST", "/v1/context", Scope.read, ContextRequest, ContextResult, _context,
        "Get the memory to put in front of the next answer: one ordered block (the user's profile, relevant "
        "past messages and facts, the session's recent turns) fitted to a token budget. Call it before "
        "answering a user's message, with that message as the query.",
        tool="get_context", tool_view=_block_only),
    Operation(
        "search", "POST", "/v1/search", Scope.read, SearchRequest, list[SearchHit], _search,
        "Search the user's stored messages, facts and notes by meaning and words; ranked hits with their "
        "source ids. Use it to look something specific up; use get_context to prepare an answer.",
        tool="search"),
    Operation(
        "users", "GET", "/v1/users", Scope.read, UsersQuery, UsersOut, _users,
        "The ids of the users the key's tenant has memories of, in order (those starting with q only).",
        absent={"mcp": "an agent acts for the user it is given; listing every user of a tenant is for the "
                       "people who look after the memory (the /ui pages, the REST API, the SDK)"}),
    Operation(
        "profile", "GET", "/v1/users/{user_id}/profile", Scope.read, ProfileQuery, ProfileOut, _profile,
        "The user's long-term profile: current facts, preferences and decisions, each with its id, when it "
        "was last updated and its source messages. history=true adds the items it replaced.",
        tool="get_profile"),
    Operation(
        "correct_note", "PATCH", "/v1/users/{user_id}/profile/{item_id}", Scope.write, NoteCorrection,
        CorrectedOut, _correct,
        "Correct a profile item that is wrong or out of date (the user says so): a new item with the "
        "given text replaces it; the old one stays in the history. Needs the item's id from get_profile.",
        tool="correct_note"),
    Operation(
        "delete_note", "DELETE", "/v1/users/{user_id}/profile/{item_id}", Scope.write, NoteRef, DeletedOut,
        _delete_note,
        "Delete a profile item the user wants forgotten: its text leaves every store and the audit log. "
        "Needs the item's id from get_profile. To fix an item instead, use correct_note.",
        tool="delete_note"),
    Operation(
        "get_memory", "GET", "/v1/users/{user_id}/memories/{memory_id}", Scope.read, MemoryRef, MemoryOut,
        _get_memory,
        "One stored message or document by its id: its content and whether it is searchable yet.",
        tool="get_memory"),
    Operation(
        "memory_status", "POST", "/v1/memories/status", Scope.read, MemoryStatusQuery, MemoryStatusOut,
        _memory_status,
        "Which stored messages or documents are searchable yet: after a remember with wait=false, its ids "
        "move from pending to processed once they are extracted and indexed.",
        tool="memory_status"),
    Operation(
        "delete_memory", "DELETE", "/v1/users/{user_id}/memories/{memory_id}", Scope.write, MemoryDelete,
        DeletedOut, _delete_memory,
        "Delete one stored message or document by its id, with what was learnt only from it.",
        tool="delete_memory"),
    Operation(
        "sessions", "GET", "/v1/users/{user_id}/sessions", Scope.read, UserRef, SessionsOut, _sessions,
        "The user's live sessions, most recent first, with when each expires unless used again.",
        tool="list_sessions"),
    Operation(
        "end_session", "DELETE", "/v1/users/{user_id}/sessions/{session_id}", Scope.write, SessionRef, EndedOut,
        _end_session,
        "Forget a session now: its messages, summaries and tool results, and what was learnt only from "
        "them. Use it when the user asks to forget a conversation, not at the end of every chat.",
        tool="end_session"),
    Operation(
        "handoff", "POST", "/v1/handoffs", Scope.write, HandoffRequest, HandoffOut, _handoff,
        "Hand the session's work to another agent: a packet of its conclusions (task, requirements, format, "
        "open questions), never the transcript. Call it when another agent takes over the task.",
        tool="handoff"),
    Operation(
        "entities", "GET", "/v1/graph/entities", Scope.read, EntitiesQuery, list[EntityOut], _entities,
        "The people, places, organisations and things the user's memory knows, optionally by part of a name.",
        tool="graph_entities"),
    Operation(
        "neighbors", "GET", "/v1/graph/neighbors", Scope.read, NeighborsQuery, NeighborsOut,
        _neighbors,
        "What the memory's graph connects to an entity (by its name or id): the entities within a few hops "
        "and the relations between them, each a dated fact. Use it for questions that chain facts (who "
        "works with whom, what belongs to what).",
        tool="graph_neighbors"),
    Operation(
        "audit", "GET", "/v1/users/{user_id}/audit", Scope.read, AuditQuery, AuditOut, _audit,
        "Who changed the user's memory and when: every creation, replacement, correction, retirement and "
        "deletion of profile items and memories, oldest first. Use it to explain why a note says what it says.",
        tool="audit"),
    Operation(
        "forget_user", "DELETE", "/v1/users/{user_id}", Scope.admin, UserRef, DeletedOut, _forget_user,
        "Forget the user everywhere: messages, notes, entities, relations and vectors.",
        absent={"mcp": _ADMIN_ONLY}),
)

BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}
BY_TOOL: dict[str, Operation] = {op.tool: op for op in OPERATIONS if op.tool}

# REST routes under /v1 that are not memory operations: administration of the server itself.
REST_ONLY: dict[tuple[str, str], str] = {
    ("POST", "/v1/keys"): "key administration: `hippograph keys` and the REST API",
    ("GET", "/v1/keys"): "key administration: `hippograph keys` and the REST API",
    ("DELETE", "/v1/keys/{key_id}"): "key administration: `hippograph keys` and the REST API",
    ("GET", "/v1/usage"): "operators' usage counts, read by monitoring, not by agents",
    ("GET", "/v1/me"): "who the key sent is (tenant, scopes): what the /ui pages ask first",
    ("GET", "/v1/admin/quarantine"): "operators' view of failed messages: `hippograph doctor` and the REST API",
    ("POST", "/v1/admin/quarantine/release"): "operators' retry of failed messages: `hippograph doctor --release` "
                                              "and the REST API",
    ("GET", "/v1/users/{user_id}/profile/history"): "the same as profile with history=true",
    ("GET", "/v1/graph/entities/{entity_id}/neighbors"): "the same as neighbors, the entity's id in the path",
}


def run(service: Hippograph, who: Principal, name: str, args: BaseModel | Mapping[str, Any]) -> Any:
    """Carry out an operation as `who` (checking its scope), with arguments validated by its model."""
    op = BY_NAME[name]
    service.tenancy.require(who, op.scope)
    given = args if isinstance(args, op.input) else op.input.model_validate(args)
    # a write that is only stored (no extraction before the answer) is short: it needs no place
    with service.slot(op.scope, short=getattr(given, "wait", True) is False):
        return op.run(service, who, given)
