from __future__ import annotations

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, Field

from hippograph.auth import TENANT_PATTERN, ApiKey, Principal, Scope
from hippograph.errors import Forbidden
from hippograph.server.deps import Admin, Service

router = APIRouter(prefix="/v1/keys", tags=["keys"])


class KeyRequest(BaseModel):
    model_config = {"extra": "forbid"}

    scopes: list[Scope] = Field(min_length=1, description="read, write and/or admin.")
    tenant: str | None = Field(None, pattern=TENANT_PATTERN,
                               description="The key's tenant; an admin key makes keys of its own tenant only.")
    name: str | None = Field(None, min_length=1, max_length=200, pattern=r"^[^\x00-\x1f]+$",
                             description="What the key is for (shown in lists, never secret).")


class KeyOut(BaseModel):
    id: str
    tenant: str
    name: str | None = None
    scopes: list[Scope]
    created_at: str
    revoked_at: str | None = None
    active: bool


class NewKeyOut(KeyOut):
    key: str = Field(description="The key itself: shown only now, stored only as a hash.")


def key_out(k: ApiKey) -> KeyOut:
    return KeyOut(id=k.id, tenant=k.tenant, name=k.name, scopes=k.scopes, created_at=k.created_at.isoformat(),
                  revoked_at=k.revoked_at.isoformat() if k.revoked_at else None, active=k.active)


def _tenant(who: Principal, asked: str | None) -> str:
    if asked is None or asked == who.tenant or who.open:
        return asked or who.tenant
    raise Forbidden(f"this key's tenant is {who.tenant!r}: it cannot make keys of another tenant")


@router.post("", status_code=201, response_model=NewKeyOut)
def create_key(body: KeyRequest, service: Service, who: Admin) -> NewKeyOut:
    """A new API key of the tenant. The key is in this response only: store it now."""
    record, key = service.tenancy.create_key(_tenant(who, body.tenant), sorted(set(body.scopes),
                                             key=list(Scope).index), body.name)
    return NewKeyOut(**key_out(record).model_dump(), key=key)


@router.get("")
def list_keys(service: Service, who: Admin) -> dict:
    """The tenant's keys, active and revoked (never the keys themselves)."""
    return {"keys": [key_out(k) for k in service.tenancy.list_keys(None if who.open else who.tenant)]}


@router.delete("/{key_id}", response_model=KeyOut)
def revoke_key(service: Service, who: Admin, key_id: str = Path(min_length=1, max_length=64),
               force: bool = Query(False, description="Revoke the tenant's last active admin key too.")) -> KeyOut:
    """Revoke a key of the tenant now; requests with it are refused from this moment on, on every replica.
    The tenant's last active admin key is refused (409) unless `force=true`: without it, the tenant's keys
    can only be managed with `hippograph keys` where the server's data is. Revoking every key never
    opens the server: once a key existed, requests without one are refused."""
    return key_out(service.tenancy.revoke_key(key_id, None if who.open else who.tenant, force=force))
