from __future__ import annotations

from fastapi import APIRouter

from hippograph.ingest import IngestResult
from hippograph.operations import run
from hippograph.server.deps import Reader, Service, Writer
from hippograph.server.schemas import ContextRequest, MemoriesRequest, SearchRequest
from hippograph.service import ContextResult, SearchHit

router = APIRouter(prefix="/v1", tags=["memories"])


@router.post("/memories", response_model=IngestResult)
def add_memories(body: MemoriesRequest, service: Service, who: Writer) -> IngestResult:
    """Store messages and/or documents. Client ids are idempotency keys: a retried id is stored once."""
    return run(service, who, "remember", body)


@router.post("/context", response_model=ContextResult)
def context(body: ContextRequest, service: Service, who: Reader) -> ContextResult:
    """The ordered context block for the next turn, fitted to the token budget."""
    return run(service, who, "context", body)


@router.post("/search", response_model=list[SearchHit])
def search(body: SearchRequest, service: Service, who: Reader) -> list[SearchHit]:
    """Ranked memories (hybrid dense + lexical) with score, text and provenance."""
    return run(service, who, "search", body)
