from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from hippograph.server.deps import auth_mode

router = APIRouter(tags=["health"])


class Alive(BaseModel):
    status: Literal["ok"] = "ok"


class Ready(BaseModel):
    """What /readyz answers once the server can take requests (503 with `{"status": "starting"}` before)."""

    status: Literal["ready"] = "ready"
    graph: str = Field(description="The graph store: SqliteGraphStore (embedded) or Neo4jGraphStore.",
                       examples=["SqliteGraphStore"])
    vectors: str = Field(description="The vector store: EdgeVectorStore (embedded) or QdrantVectorStore.",
                         examples=["EdgeVectorStore"])
    embedder: str = Field(examples=["minilm-onnx-int8-dynamic"])
    extractor: str = Field(examples=["spacy"])
    tokenizer: str = Field(examples=["cl100k_base"])
    storage: dict[str, Any] = Field(description="Free space against the limit below which writes get 507.",
                                    examples=[{"min_free_bytes": 67108864, "free_bytes": 81303474176, "writable": True}])
    auth: Literal["keys", "open", "disabled"] = Field(description="Whether requests need an API key.")


@router.get("/healthz")
def healthz() -> Alive:
    """The process is alive."""
    return Alive()


@router.get("/readyz", response_model=Ready)
def readyz(request: Request) -> JSONResponse:
    """Stores open and models loaded: the server can take requests."""
    service = getattr(request.app.state, "service", None)
    if service is None or not service.ready:
        return JSONResponse({"status": "starting"}, status_code=503)
    return JSONResponse({"status": "ready", **service.describe(), "auth": auth_mode(request.app.state.settings, service)})
