from __future__ import annotations

from fastapi import APIRouter, Response

from hippograph.context_entry import ContextResult
from hippograph.ingest import IngestResult
from hippograph.operations import MemoryStatusOut, MemoryStatusQuery, run
from hippograph.server.deps import Reader, Service, Writer
from hippograph.server.schemas import ContextRequest, MemoriesRequest, SearchRequest
from hippograph.service import SearchHit

router = APIRouter(prefix="/v1", tags=["memories"])


@router.post("/memories", response_model=IngestResult,
             responses={202: {"model": IngestResult, "description": "Stored, not yet extracted (`wait`: false): "
                                                                     "`pending` lists what is not searchable yet."}})
def add_memories(body: MemoriesRequest, service: Service, who: Writer, response: Response) -> IngestResult:
    """Store messages and/or documents. Client ids are idempotency keys: a retried id is stored once.
    With `"wait": false` the answer comes once the write is stored: 202 while some of it is `pending`
    (extraction follows), 200 if nothing is (a retry of what is processed, or a backlog so long that
    the write was extracted before the answer)."""
    result = run(service, who, "remember", body)
    if not body.wait and result.pending:
        response.status_code = 202
    return result


@router.post("/memories/status", response_model=MemoryStatusOut)
def memory_status(body: MemoryStatusQuery, service: Service, who: Reader) -> MemoryStatusOut:
    """Which of these stored messages or documents are extracted and searchable yet."""
    return run(service, who, "memory_status", body)


@router.post("/context", response_model=ContextResult)
def context(body: ContextRequest, service: Service, who: Reader) -> ContextResult:
    """The ordered context block for the next turn, fitted to the token budget."""
    return run(service, who, "context", body)


@router.post("/search", response_model=list[SearchHit])
def search(body: SearchRequest, service: Service, who: Reader) -> list[SearchHit]:
    """Ranked memories (hybrid dense + lexical) with score, text and provenance."""
    return run(service, who, "search", body)
