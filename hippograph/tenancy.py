"""Keys and owners over the graph store: who a request is, and under which owner key a user's data lives."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from hippograph.auth import (
    DEFAULT_TENANT,
    OPEN,
    ApiKey,
    Principal,
    Scope,
    check_tenant,
    hash_key,
    new_key,
    new_owner,
)
from hippograph.errors import ConfigurationError, Conflict, Forbidden, NotFound, Unauthorized
from hippograph.graph.base import GraphStore
from hippograph.models import utcnow
from hippograph.storage_guard import StorageGuard

log = logging.getLogger("hippograph.auth")

#: the owner key of a user nobody has stored anything for: it matches nothing in either store
NOBODY = "\x00nobody"


class Tenancy:
    def __init__(self, graph: GraphStore, guard: StorageGuard | None = None) -> None:
        self.graph = graph
        self.guard = guard or StorageGuard()  # keys and owner keys are writes like any other

    # --- keys ----------------------------------------------------------------------------------
    def create_key(self, tenant: str, scopes: list[Scope], name: str | None = None) -> tuple[ApiKey, str]:
        record, key = new_key(tenant, scopes, name)
        self.guard.check("creating the API key")
        self.graph.add_key(record)
        return record, key

    def register_key(self, key: str, tenant: str, scopes: list[Scope], name: str) -> ApiKey:
        """A key chosen by the operator (HIPPOGRAPH_AUTH__BOOTSTRAP_KEY): stored as its hash once."""
        if len(key) < 32:
            raise ConfigurationError("HIPPOGRAPH_AUTH__BOOTSTRAP_KEY must be at least 32 characters "
                               "(e.g. the output of `openssl rand -hex 32`)")
        found = self.graph.key_by_hash(hash_key(key))
        if found is not None:
            return found
        record, _ = new_key(tenant, scopes, name)
        record = record.model_copy(update={"key_hash": hash_key(key)})
        self.graph.add_key(record)
        return record

    def list_keys(self, tenant: str | None = None) -> list[ApiKey]:
        return self.graph.list_keys(tenant)

    def revoke_key(self, key_id: str, tenant: str | None = None, force: bool = False) -> ApiKey:
        """Revoke now (every replica reads keys from the store, so it takes effect at once). Never refused
        for a low disk: a revocation is a small update that must not wait for space. The last active
        admin key of a tenant is revoked only with `force`: without it nobody can manage the tenant's
        keys through the API any more (a data folder or database that has had a key never runs open
        again: `has_keys`)."""
        keys = self.graph.list_keys(tenant)
        key = next((k for k in keys if k.id == key_id), None)
        if key is None:
            raise NotFound(f"no API key {key_id!r}")
        admins = [k for k in keys if k.active and Scope.admin in k.scopes and k.tenant == key.tenant]
        if [k.id for k in admins] == [key_id]:
            if not force:
                raise Conflict(f"{key_id!r} is the last active admin key of tenant {key.tenant!r}: without it nobody "
                               "can create or revoke the tenant's keys through the API (the server stays closed; only "
                               "`hippograph keys create` where its data is can make one); to revoke it anyway, say so: "
                               "`hippograph keys revoke ID --force`, or DELETE /v1/keys/ID?force=true")
            log.warning("revoking %r, the last active admin key of tenant %r", key_id, key.tenant)
        found = self.graph.revoke_key(key_id, utcnow(), tenant)
        if found is None:
            raise NotFound(f"no API key {key_id!r}")
        return found

    def authenticate(self, authorization: str | None, open_ok: bool, disabled: bool = False) -> Principal:
        """The principal of a request from its Authorization header. Without one, the server acts open
        (every scope, the default tenant) where keys are `disabled` on purpose, or where `open_ok` and
        no key was ever made."""
        if authorization is None or not authorization.strip():
            if disabled or (open_ok and not self.graph.has_keys()):
                return OPEN
            raise Unauthorized("missing API key: send `Authorization: Bearer <key>` (an admin creates keys with "
                               "`hippograph keys create` or POST /v1/keys)")
        scheme, _, key = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise Unauthorized("the Authorization header must be `Bearer <key>`")
        found = self.graph.key_by_hash(hash_key(key.strip()))  # looked up by the hash: equal when found
        if found is None:
            raise Unauthorized("unknown API key")
        if not found.active:
            raise Unauthorized("this API key was revoked")
        return Principal(tenant=found.tenant, scopes=frozenset(found.scopes), key_id=found.id)

    @staticmethod
    def require(principal: Principal, scope: Scope) -> Principal:
        if scope not in principal.scopes:
            have = ", ".join(sorted(principal.scopes)) or "none"
            raise Forbidden(f"this API key lacks the '{scope.value}' scope (it has: {have})")
        return principal

    # --- owners --------------------------------------------------------------------------------
    def owner(self, tenant: str, user_id: str, create: bool = False, must_exist: bool = True) -> str:
        """The owner key of the tenant's user; made on first write (`create`). A user nobody stored
        anything for (in this tenant: another tenant's users are nobody here) is a NotFound, or with
        `must_exist=False` NOBODY, which both stores know nothing of."""
        found = self.graph.owner_of(tenant, user_id)
        if found is not None:
            return found
        if not create:
            if must_exist:
                raise NotFound(f"unknown user {user_id!r}: nothing has been stored for this user id")
            return NOBODY
        self.guard.check("storing messages")
        owner = self.graph.owner_of(check_tenant(tenant), user_id, new_owner=new_owner())
        assert owner is not None  # registering always yields the pair's owner
        self.graph.ensure_user(owner, name=user_id)
        return owner

    def users_of(self, owner_keys: Sequence[str], tenant: str) -> dict[str, str]:
        """Of these owner keys, those of the tenant, with their user ids."""
        return {o: u for o, (t, u) in self.graph.owners(owner_keys).items() if t == tenant}


__all__ = ["DEFAULT_TENANT", "NOBODY", "Tenancy"]
