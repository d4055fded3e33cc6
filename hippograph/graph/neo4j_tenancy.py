"""The Neo4j store's part in tenancy: its Cypher, and the methods of `Neo4jGraphStore` that run it.
A (tenant, user id) pair is the `:User` node's `tenant` and `external_id`; its `user_id` is the owner
key every node and relationship of the user carries. API keys are (:ApiKey) nodes holding hashes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from hippograph.auth import ApiKey
from hippograph.graph.neo4j_cypher import Rows, from_neo, to_neo
from hippograph.models import utcnow

# --- tenants and keys: (:User {user_id: <owner key>, tenant, external_id}), (:ApiKey {...}) ---------
OWNER_OF = "MATCH (u:User {tenant: $tenant, external_id: $user}) RETURN u.user_id AS owner"
REGISTER_OWNER = """
MERGE (u:User {tenant: $tenant, external_id: $user})
ON CREATE SET u.user_id = $owner, u.name = $user, u.registered_at = $now
RETURN u.user_id AS owner
"""
OWNERS = "UNWIND $owners AS o MATCH (u:User {user_id: o}) RETURN o AS owner, u.tenant AS tenant, u.external_id AS user"
TENANT_USERS = """
MATCH (u:User {tenant: $tenant}) WHERE u.external_id STARTS WITH $prefix
RETURN u.external_id AS user ORDER BY user LIMIT $limit
"""
_KEY = "k {.id, .tenant, .name, .scopes, .key_hash, .created_at, .revoked_at} AS k"
ADD_KEY = "CREATE (k:ApiKey) SET k = $props"
KEY_BY_HASH = f"MATCH (k:ApiKey {{key_hash: $hash}}) RETURN {_KEY}"
LIST_KEYS = f"MATCH (k:ApiKey) WHERE $tenant IS NULL OR k.tenant = $tenant RETURN {_KEY} ORDER BY k.created_at, k.id"
REVOKE_KEY = f"""
MATCH (k:ApiKey {{id: $id}}) WHERE $tenant IS NULL OR k.tenant = $tenant
SET k.revoked_at = coalesce(k.revoked_at, $at)
RETURN {_KEY}
"""
HAS_KEYS = "RETURN EXISTS { MATCH (k:ApiKey) } AS ok"


def key_props(key: ApiKey) -> dict[str, Any]:
    return {"id": key.id, "tenant": key.tenant, "name": key.name, "scopes": [s.value for s in key.scopes],
            "key_hash": key.key_hash, "created_at": to_neo(key.created_at), "revoked_at": to_neo(key.revoked_at)}


def to_key(r: dict[str, Any]) -> ApiKey:
    return ApiKey(id=r["id"], tenant=r["tenant"], name=r.get("name"), scopes=list(r["scopes"]),
                  key_hash=r["key_hash"], created_at=from_neo(r["created_at"]), revoked_at=from_neo(r.get("revoked_at")))


class Neo4jTenancy:
    """Mixed into Neo4jGraphStore, which provides the queries and transactions."""

    _query: Callable[..., Rows]
    _update: Callable[..., Rows]

    def owner_of(self, tenant: str, user_id: str, new_owner: str | None = None) -> str | None:
        if new_owner is None:
            rows = self._query(OWNER_OF, tenant=tenant, user=user_id)
        else:
            rows = self._update(REGISTER_OWNER, tenant=tenant, user=user_id, owner=new_owner,
                                now=to_neo(utcnow()))
        return rows[0]["owner"] if rows else None

    def owners(self, owner_keys: Sequence[str]) -> dict[str, tuple[str, str]]:
        rows = self._query(OWNERS, owners=list(dict.fromkeys(owner_keys)))
        return {r["owner"]: (r["tenant"], r["user"]) for r in rows}

    def tenant_users(self, tenant: str, prefix: str = "", limit: int = 100) -> list[str]:
        return [r["user"] for r in self._query(TENANT_USERS, tenant=tenant, prefix=prefix, limit=limit)]

    def add_key(self, key: ApiKey) -> None:
        self._update(ADD_KEY, props=key_props(key))

    def key_by_hash(self, key_hash: str) -> ApiKey | None:
        rows = self._query(KEY_BY_HASH, hash=key_hash)
        return to_key(rows[0]["k"]) if rows else None

    def list_keys(self, tenant: str | None = None) -> list[ApiKey]:
        return [to_key(r["k"]) for r in self._query(LIST_KEYS, tenant=tenant)]

    def revoke_key(self, key_id: str, at: datetime, tenant: str | None = None) -> ApiKey | None:
        rows = self._update(REVOKE_KEY, id=key_id, tenant=tenant, at=to_neo(at))
        return to_key(rows[0]["k"]) if rows else None

    def has_keys(self) -> bool:
        return bool(self._query(HAS_KEYS)[0]["ok"])
