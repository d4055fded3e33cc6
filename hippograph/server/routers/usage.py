from __future__ import annotations

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from hippograph.inputs import Id
from hippograph.server.deps import Service

router = APIRouter(tags=["usage"])


@router.get("/v1/usage")
def usage(service: Service, user_id: Id | None = Query(None, min_length=1, max_length=256)) -> dict:
    """Model calls and tokens (LLM and hosted embeddings) per user and operation since the server
    started: `extract`, `summarize`, `resolve`, `embed`. Calls not made for one user count under "-"."""
    rows = service.usage.rows(user_id)
    totals = {k: sum(getattr(r, k) for r in rows) for k in ("calls", "failed", "prompt_tokens", "completion_tokens",
                                                           "total_tokens")}
    return {"usage": [r.model_dump() for r in rows], "totals": totals}


@router.get("/metrics", response_class=PlainTextResponse)
def metrics(service: Service) -> str:
    """The same counters in the Prometheus text format."""
    return service.usage.prometheus()
