"""The SQLite store's part in forgetting: deleting what was derived from deleted episodes, episode ids
kept without content after expiry, audit redaction and compaction of the files.

Deleted text must leave the bytes on disk: the connection runs with `secure_delete` (freed space is
zeroed) and `compact()` checkpoints the write-ahead log into the database and truncates it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager

import networkx as nx

from hippograph.graph.cache import PerUser
from hippograph.graph.ppr import PageRankGraph
from hippograph.graph.schema import chunks, marks, note_of, relation_of
from hippograph.models import Note, Relation

#: table of episode id -> client id for episodes that expired while notes or relations cite them
EPISODE_REFS = """
CREATE TABLE IF NOT EXISTS episode_refs (
    episode_id TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    client_id  TEXT
);
CREATE INDEX IF NOT EXISTS episode_refs_user ON episode_refs(user_id);
"""


class SqliteForgetting:
    """Mixed into SqliteGraphStore (which provides the connection, transactions and caches)."""

    _lock: threading.RLock
    _graphs: dict[str, nx.MultiDiGraph]
    _ppr: PerUser[PageRankGraph]
    _history: PerUser[dict[str, tuple[list[Note], list[Relation]]]]

    _tx: Callable[[], AbstractContextManager[sqlite3.Connection]]  # the store's
    _rows: Callable[..., list[sqlite3.Row]]

    def _changed(self, user_id: str) -> None:
        self._graphs.pop(user_id, None)
        self._ppr.drop(user_id)
        self._history.drop(user_id)

    def mentioned_in(self, user_id: str, episode_ids: Sequence[str]) -> list[str]:
        out: list[str] = []
        for chunk in chunks(episode_ids):
            out += [r["entity_id"] for r in self._rows(
                f"SELECT DISTINCT entity_id FROM mentions WHERE +user_id=? AND episode_id IN ({marks(len(chunk))})",
                (user_id, *chunk))]
        return list(dict.fromkeys(out))

    def keep_client_ids(self, user_id: str, client_ids: Mapping[str, str | None]) -> None:
        if client_ids:
            with self._tx() as c:
                c.executemany("INSERT OR REPLACE INTO episode_refs(episode_id, user_id, client_id) VALUES (?,?,?)",
                              [(ep, user_id, client) for ep, client in client_ids.items()])

    def client_ids(self, user_id: str, episode_ids: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for chunk in chunks(episode_ids):
            m = marks(len(chunk))
            for r in self._rows(f"SELECT episode_id AS id, client_id FROM episode_refs WHERE +user_id=? AND "
                                f"episode_id IN ({m}) UNION ALL SELECT id, client_id FROM episodes WHERE +user_id=? "
                                f"AND id IN ({m})", (user_id, *chunk, user_id, *chunk)):
                out[r["id"]] = r["client_id"] or r["id"]
        return out

    def drop_orphan_entities(self, user_id: str, entity_ids: Sequence[str]) -> list[str]:
        gone: list[str] = []
        with self._tx() as c:
            for chunk in chunks(entity_ids):
                m = marks(len(chunk))
                found = [r["id"] for r in c.execute(
                    f"SELECT id FROM entities e WHERE user_id=? AND is_user=0 AND id IN ({m}) "
                    "AND NOT EXISTS (SELECT 1 FROM mentions x WHERE x.entity_id = e.id) "
                    "AND NOT EXISTS (SELECT 1 FROM relations r WHERE r.user_id = e.user_id "
                    "AND (r.source_id = e.id OR r.target_id = e.id))", (user_id, *chunk))]
                if found:
                    f = marks(len(found))
                    c.execute(f"DELETE FROM aliases WHERE user_id=? AND entity_id IN ({f})", (user_id, *found))
                    c.execute(f"DELETE FROM entities WHERE id IN ({f})", found)
                gone += found
        if gone:
            self._changed(user_id)
        return gone

    def delete_relations(self, user_id: str, ids: Sequence[str]) -> None:
        with self._tx() as c:
            for chunk in chunks(ids):
                c.execute(f"DELETE FROM relations WHERE user_id=? AND id IN ({marks(len(chunk))})", (user_id, *chunk))
        self._changed(user_id)

    def rewrite_relations(self, relations: Sequence[Relation]) -> None:
        with self._tx() as c:
            c.executemany("UPDATE relations SET fact=?, episodes=? WHERE user_id=? AND id=?",
                          [(r.fact, json.dumps(r.source_episode_ids), r.user_id, r.id) for r in relations])
        for user in {r.user_id for r in relations}:
            self._changed(user)

    def set_note_sources(self, user_id: str, note_id: str, episode_ids: Sequence[str]) -> None:
        with self._tx() as c:
            c.execute("UPDATE notes SET episodes=? WHERE user_id=? AND id=?",
                      (json.dumps(list(episode_ids)), user_id, note_id))
        self._history.drop(user_id)

    def derived_from(self, user_id: str, episode_ids: Sequence[str]) -> tuple[list[Note], list[Relation]]:
        notes: dict[str, Note] = {}
        relations: dict[str, Relation] = {}
        for chunk in chunks(episode_ids):
            m = marks(len(chunk))  # sources are JSON lists: json_each looks inside them in SQL
            for r in self._rows("SELECT * FROM notes n WHERE user_id=? AND EXISTS (SELECT 1 FROM "
                                f"json_each(n.episodes) j WHERE j.value IN ({m}))", (user_id, *chunk)):
                notes[r["id"]] = note_of(r)
            for r in self._rows("SELECT * FROM relations r WHERE user_id=? AND EXISTS (SELECT 1 FROM "
                                f"json_each(r.episodes) j WHERE j.value IN ({m}))", (user_id, *chunk)):
                relations[r["id"]] = relation_of(r)
        return (sorted(notes.values(), key=lambda n: (n.valid_at, n.id)),
                sorted(relations.values(), key=lambda r: r.id))

    def redact_audit(self, user_id: str, item_ids: Sequence[str]) -> None:
        with self._tx() as c:
            for chunk in chunks(item_ids):
                c.execute(f"UPDATE audit SET text=NULL WHERE user_id=? AND item_id IN ({marks(len(chunk))}) "
                          "AND text IS NOT NULL", (user_id, *chunk))

    def compact(self, full: bool = False) -> None:
        """Checkpoint the WAL into the database and truncate it to nothing: with secure_delete on,
        deleted rows were zeroed in the pages, and the log holds no older copy of them any more.
        `full` first rebuilds the database (VACUUM), for free pages a version without secure_delete
        left as they were."""
        if full:
            self._rows("VACUUM")
        self._rows("PRAGMA wal_checkpoint(TRUNCATE)")
