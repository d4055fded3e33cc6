from __future__ import annotations

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from hippograph.auth import Principal
from hippograph.inputs import Id
from hippograph.llm.usage import UsageMeter, UsageRow
from hippograph.server.deps import Admin, Service
from hippograph.service import Hippograph

router = APIRouter(tags=["usage"])


def _tenant_rows(service: Hippograph, who: Principal, user_id: str | None = None) -> UsageMeter:
    """The tenant's rows only, each under the user id the tenant knows (calls made for no user are not
    anybody's tenant: they are left out)."""
    rows = service.usage.rows()
    users = service.tenancy.users_of([r.user_id for r in rows], who.tenant)
    meter = UsageMeter()
    meter.load([r.model_copy(update={"user_id": users[r.user_id]}) for r in rows if r.user_id in users
                and (user_id is None or users[r.user_id] == user_id)])
    return meter


@router.get("/v1/usage")
def usage(service: Service, who: Admin, user_id: Id | None = Query(None, min_length=1, max_length=256)) -> dict:
    """Model calls and tokens (LLM and hosted embeddings) per user of the key's tenant and operation
    since the server started: `extract`, `summarize`, `resolve`, `embed`."""
    rows: list[UsageRow] = _tenant_rows(service, who, user_id).rows()
    totals = {k: sum(getattr(r, k) for r in rows) for k in ("calls", "failed", "prompt_tokens", "completion_tokens",
                                                           "total_tokens")}
    return {"usage": [r.model_dump() for r in rows], "totals": totals}


@router.get("/metrics", response_class=PlainTextResponse)
def metrics(service: Service, who: Admin) -> str:
    """The same counters in the Prometheus text format (scrape with an admin key as bearer token)."""
    return _tenant_rows(service, who).prometheus()
