"""Request and response bodies of the HTTP API."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from hippograph.inputs import Id, Metadata
from hippograph.models import DocumentIn, MessageIn
from hippograph.planner.handoff import HandoffPacket


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MessageBody(MessageIn, Strict):
    pass


class DocumentBody(DocumentIn, Strict):
    pass


class MemoriesRequest(Strict):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"anyOf": [
        {"required": ["messages"], "properties": {"messages": {"minItems": 1}}},
        {"required": ["documents"], "properties": {"documents": {"minItems": 1}}}]})

    user_id: Id
    session_id: Id | None = None
    agent_id: Id | None = None
    messages: list[MessageBody] = Field(default_factory=list, max_length=2000)
    documents: list[DocumentBody] = Field(default_factory=list, max_length=200)
    metadata: Metadata | None = None
    wait: StrictBool = Field(
        True, description="false: answer (202) as soon as the write is stored, before it is extracted; "
                          "`pending` lists what is not searchable yet, and memory_status says when it is.")

    @model_validator(mode="after")
    def _something_to_store(self) -> MemoriesRequest:
        if not self.messages and not self.documents:
            raise ValueError("nothing to store: give at least one of `messages` or `documents`")
        return self


class ContextRequest(Strict):
    user_id: Id
    session_id: Id | None = None
    query: str = Field(min_length=1, max_length=20_000)
    token_budget: int | None = Field(None, ge=64, le=200_000)
    plan: Literal["single_hop", "multi_hop", "graph", "temporal", "profile"] | None = Field(
        None, description="Force a plan instead of letting the planner choose (`graph`: the graph route, "
                          "which the planner does not choose by itself)."
    )


Actor = Field("api", min_length=1, max_length=256, pattern=r"^[^\x00-\x1f]+$",
              description="Who makes the change, as the audit log records it (an agent, a user, a tool).")


class CorrectionRequest(Strict):
    text: str = Field(min_length=1, max_length=2000, description="The corrected text of the profile item.")
    actor: str = Actor

    @model_validator(mode="after")
    def _not_blank(self) -> CorrectionRequest:
        if not self.text.strip():
            raise ValueError("text: a correction cannot be blank")
        return self


class HandoffRequest(Strict):
    user_id: Id
    session_id: Id
    task: str = Field(min_length=1, max_length=2000, description="What the receiving agent is to do.")
    to_agent: Id | None = None

    @model_validator(mode="after")
    def _task_not_blank(self) -> HandoffRequest:
        if not self.task.strip():
            raise ValueError("task: say what the receiving agent is to do (it cannot be blank)")
        return self


class HandoffOut(HandoffPacket):
    """The packet as the API returns it: who hands it to whom, and when."""

    source_session: str
    user_id: str
    from_agent: str | None = None
    to_agent: str | None = None
    created_at: str


class SearchRequest(Strict):
    user_id: Id
    query: str = Field(min_length=1, max_length=20_000)
    limit: int = Field(10, ge=1, le=100)


class EntityOut(BaseModel):
    id: str
    name: str
    type: str
    is_user: bool = False


class RelationOut(BaseModel):
    id: str
    source_id: str
    target_id: str
    predicate: str
    fact: str
    valid_at: str
    invalid_at: str | None = None
    source_episode_ids: list[str]


class NeighborsOut(BaseModel):
    entity_id: str
    depth: int
    entities: list[EntityOut]
    relations: list[RelationOut]
