"""API keys, tenants and scopes: who is asking, for which tenant, allowed to do what.

A key is `hg_<id>_<secret>`. Only its SHA-256 is stored, in the graph store (the system of record, so
every replica sees a key's creation and revocation at once); the key itself is shown once, when it is
made. A key belongs to one tenant and has scopes:

- `read`: context, search, profile, graph, sessions, audit, memories by id
- `write`: memories, corrections, note/memory/session deletes, handoffs
- `admin`: keys, deleting a user, usage

A user id is unique only within its tenant: each (tenant, user id) pair owns an internal *owner key*
(random, made on the user's first write) under which both stores keep the user's data, so the ids of
entities, relations, notes and episodes cannot be worked out from a user id.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from hippograph.errors import InvalidInput
from hippograph.models import utcnow

DEFAULT_TENANT = "default"
TENANT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
_TENANT = re.compile(TENANT_PATTERN)
_KEY = re.compile(r"^hg_([0-9a-f]{16})_([A-Za-z0-9_-]{32,128})$")


class Scope(StrEnum):
    read = "read"
    write = "write"
    admin = "admin"


ALL_SCOPES = frozenset(Scope)


class ApiKey(BaseModel):
    """A key as stored: never the key itself, only its hash."""

    id: str
    tenant: str
    name: str | None = None
    scopes: list[Scope]
    key_hash: str = Field(exclude=True, repr=False)
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


@dataclass(frozen=True)
class Principal:
    """Who a request acts as. `key_id` is None when the server runs open (no key exists, loopback only)."""

    tenant: str
    scopes: frozenset[Scope]
    key_id: str | None = None

    @property
    def open(self) -> bool:
        return self.key_id is None

    def actor(self, given: str) -> str:
        """The actor the audit log records: what the caller says, with the key it used."""
        return given if self.key_id is None else f"{given} (key {self.key_id})"


OPEN = Principal(tenant=DEFAULT_TENANT, scopes=ALL_SCOPES)


def check_tenant(tenant: str) -> str:
    if not _TENANT.match(tenant):
        raise InvalidInput(f"tenant {tenant!r}: 1 to 64 letters, digits, '_', '.' or '-', starting with a "
                           "letter or digit")
    return tenant


def parse_scopes(text: str | list[str]) -> list[Scope]:
    names = [s.strip() for s in (text.split(",") if isinstance(text, str) else text) if s.strip()]
    unknown = [s for s in names if s not in Scope.__members__]
    if unknown or not names:
        raise InvalidInput(f"scopes: {', '.join(unknown) or 'none given'}; choose from read, write, admin")
    return sorted({Scope(s) for s in names}, key=list(Scope).index)


def hash_key(key: str) -> str:
    """Keys carry 190+ bits of randomness: a plain SHA-256 cannot be reversed or guessed."""
    return hashlib.sha256(key.encode()).hexdigest()


def looks_like_key(key: str) -> bool:
    return bool(_KEY.match(key))


def new_key(tenant: str, scopes: list[Scope], name: str | None = None) -> tuple[ApiKey, str]:
    """A new key: the record to store, and the key to show once."""
    key_id = secrets.token_hex(8)
    key = f"hg_{key_id}_{secrets.token_urlsafe(32)}"
    record = ApiKey(id=key_id, tenant=check_tenant(tenant), name=name, scopes=scopes, key_hash=hash_key(key),
                    created_at=utcnow())
    return record, key


def new_owner() -> str:
    """An owner key: the internal user id both stores file a (tenant, user) pair's data under."""
    return f"u_{secrets.token_hex(12)}"
