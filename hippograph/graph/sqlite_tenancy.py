"""The SQLite store's part in tenancy: owner keys of (tenant, user id) pairs, and API keys as hashes
(tables `owners` and `api_keys`, see `schema.SCHEMA`)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime

from hippograph.auth import ApiKey
from hippograph.graph.schema import chunks, iso, key_of, marks
from hippograph.models import utcnow


class SqliteTenancy:
    """Mixed into SqliteGraphStore (which provides the connection and transactions)."""

    _tx: Callable[[], AbstractContextManager[sqlite3.Connection]]  # the store's
    _rows: Callable[..., list[sqlite3.Row]]

    def owner_of(self, tenant: str, user_id: str, new_owner: str | None = None) -> str | None:
        rows = self._rows("SELECT owner FROM owners WHERE tenant=? AND user_id=?", (tenant, user_id))
        if rows or new_owner is None:
            return rows[0]["owner"] if rows else None
        with self._tx() as c:
            c.execute("INSERT OR IGNORE INTO owners(tenant, user_id, owner, created_at) VALUES (?,?,?,?)",
                      (tenant, user_id, new_owner, iso(utcnow())))
            return str(c.execute("SELECT owner FROM owners WHERE tenant=? AND user_id=?",
                                 (tenant, user_id)).fetchone()["owner"])

    def owners(self, owner_keys: Sequence[str]) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        for chunk in chunks(owner_keys):
            for r in self._rows(f"SELECT * FROM owners WHERE owner IN ({marks(len(chunk))})", chunk):
                out[r["owner"]] = (r["tenant"], r["user_id"])
        return out

    def tenant_users(self, tenant: str, prefix: str = "", limit: int = 100) -> list[str]:
        rows = self._rows("SELECT user_id FROM owners WHERE tenant=? AND substr(user_id, 1, ?)=? "
                          "ORDER BY user_id LIMIT ?", (tenant, len(prefix), prefix, limit))
        return [r["user_id"] for r in rows]

    def add_key(self, key: ApiKey) -> None:
        with self._tx() as c:
            c.execute("INSERT INTO api_keys(id, tenant, name, scopes, key_hash, created_at, revoked_at) "
                      "VALUES (?,?,?,?,?,?,?)",
                      (key.id, key.tenant, key.name, json.dumps([s.value for s in key.scopes]), key.key_hash,
                       iso(key.created_at), iso(key.revoked_at)))

    def key_by_hash(self, key_hash: str) -> ApiKey | None:
        rows = self._rows("SELECT * FROM api_keys WHERE key_hash=?", (key_hash,))
        return key_of(rows[0]) if rows else None

    def list_keys(self, tenant: str | None = None) -> list[ApiKey]:
        rows = self._rows("SELECT * FROM api_keys WHERE ? IS NULL OR tenant=? ORDER BY created_at, id",
                          (tenant, tenant))
        return [key_of(r) for r in rows]

    def revoke_key(self, key_id: str, at: datetime, tenant: str | None = None) -> ApiKey | None:
        with self._tx() as c:
            c.execute("UPDATE api_keys SET revoked_at=? WHERE id=? AND revoked_at IS NULL AND (? IS NULL OR tenant=?)",
                      (iso(at), key_id, tenant, tenant))
            rows = c.execute("SELECT * FROM api_keys WHERE id=? AND (? IS NULL OR tenant=?)",
                             (key_id, tenant, tenant)).fetchall()
        return key_of(rows[0]) if rows else None

    def has_keys(self) -> bool:
        return bool(self._rows("SELECT 1 FROM api_keys LIMIT 1", ()))
