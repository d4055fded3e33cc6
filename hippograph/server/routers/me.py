"""Who a request acts as: what the /ui pages ask first, to show only what the key may do."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from hippograph.auth import Principal, Scope
from hippograph.server.deps import Service, auth_mode, authenticate, bearer

router = APIRouter(prefix="/v1", tags=["keys"])


class MeOut(BaseModel):
    tenant: str
    scopes: list[Scope] = Field(description="What the key may do: read, write, admin.")
    key_id: str | None = Field(None, description="The key's id (never the key); none when the server runs open.")
    key_name: str | None = None
    auth: Literal["keys", "open", "disabled"] = Field(
        description="keys: every request needs one; open: no key exists yet (loopback only); disabled: on purpose.")


@router.get("/me", response_model=MeOut)
def me(request: Request, service: Service, _: object = Depends(bearer)) -> MeOut:
    """The tenant and scopes of the key sent (or of the open server), with any valid key."""
    who: Principal = authenticate(request, service)
    name = next((k.name for k in service.tenancy.list_keys(who.tenant) if k.id == who.key_id), None) \
        if who.key_id else None
    return MeOut(tenant=who.tenant, scopes=sorted(who.scopes, key=list(Scope).index), key_id=who.key_id,
                 key_name=name, auth=auth_mode(request.app.state.settings, service))  # type: ignore[arg-type]
