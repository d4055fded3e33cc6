from __future__ import annotations

from fastapi import APIRouter

from hippograph.ingest import IngestResult
from hippograph.server.deps import Reader, Service, Writer
from hippograph.server.schemas import ContextRequest, MemoriesRequest, SearchRequest
from hippograph.service import ContextResult, SearchHit

router = APIRouter(prefix="/v1", tags=["memories"])


@router.post("/memories", response_model=IngestResult)
def add_memories(body: MemoriesRequest, service: Service, who: Writer) -> IngestResult:
    """Store messages and/or documents. Client ids are idempotency keys: a retried id is stored once."""
    service.check_sizes(body.messages, body.documents)  # a refused write registers no user
    return service.remember(service.tenancy.owner(who.tenant, body.user_id, create=True), body.session_id, body.agent_id, body.messages, body.documents,
                            body.metadata)


@router.post("/context", response_model=ContextResult)
def context(body: ContextRequest, service: Service, who: Reader) -> ContextResult:
    """The ordered context block for the next turn, fitted to the token budget."""
    return service.context(service.tenancy.owner(who.tenant, body.user_id, must_exist=False), body.query, body.session_id, body.token_budget, body.plan)


@router.post("/search", response_model=list[SearchHit])
def search(body: SearchRequest, service: Service, who: Reader) -> list[SearchHit]:
    """Ranked memories (hybrid dense + lexical) with score, text and provenance."""
    return service.search(service.tenancy.owner(who.tenant, body.user_id), body.query, body.limit)
