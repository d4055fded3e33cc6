"""The embedded graph store: SQLite (WAL, synchronous=FULL) for durability, networkx for traversal.

Every write is one SQLite transaction committed before the method returns, so whatever a caller was
told is stored survives a kill -9. networkx graphs are a per-user cache built from SQLite on first use
and kept in step with writes.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from datetime import datetime
from pathlib import Path

import networkx as nx

from hippograph.errors import BackendUnavailable
from hippograph.graph.cache import PerUser
from hippograph.graph.ppr import PageRankGraph
from hippograph.graph.schema import (
    SCHEMA,
    entity_of,
    episode_of,
    iso,
    marks,
    migrate,
    normalise,
    note_of,
    relation_of,
    session_of,
)
from hippograph.graph.sqlite_forget import EPISODE_REFS, SqliteForgetting
from hippograph.graph.sqlite_tenancy import SqliteTenancy
from hippograph.graph.sqlite_traversal import SqliteTraversal
from hippograph.models import AuditEvent, Entity, Episode, Note, Relation, SessionInfo, stable_id
from hippograph.storage_guard import disk_full

USER_ENTITY_KEY = "<user>"


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back what is open. SQLite may have rolled back itself (e.g. on SQLITE_FULL); a failing
    ROLLBACK must not hide the error that caused it."""
    if conn.in_transaction:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


class SqliteGraphStore(SqliteForgetting, SqliteTenancy, SqliteTraversal):
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self._graphs: dict[str, nx.MultiDiGraph] = {}
        self._ppr: PerUser[PageRankGraph] = PerUser()  # entities + episodes, dropped when a user's graph changes
        # episode id -> the superseded notes and invalid relations it said; dropped when they change
        self._history: PerUser[dict[str, tuple[list[Note], list[Relation]]]] = PerUser()
        self._depth = 0

    # --- lifecycle -----------------------------------------------------------------------------
    def open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA secure_delete=ON")  # deleted text is zeroed, not left in free pages
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            conn.executescript(SCHEMA + EPISODE_REFS)
            migrate(conn, "sessions" not in tables, before_tenants="owners" not in tables)
        except (sqlite3.Error, OSError) as exc:
            raise disk_full(exc, self.path) or BackendUnavailable(
                f"cannot open the graph database at {self.path}: {exc}") from exc
        self._conn = conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._graphs.clear()
            self._ppr.drop()
            self._history.drop()

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise BackendUnavailable("the graph store is not open")
        return self._conn

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One transaction; nested uses (inside `batch()`) join the outer one."""
        with self._lock:
            conn = self.conn
            if self._depth:
                self._depth += 1
                try:
                    yield conn
                finally:
                    self._depth -= 1
                return
            self._depth = 1
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield conn
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                _rollback(conn)
                self._graphs.clear()  # the cache may hold what was rolled back
                self._ppr.drop()
                self._history.drop()
                raise disk_full(exc, self.path) or BackendUnavailable(f"graph database write failed: {exc}") from exc
            except BaseException:
                _rollback(conn)
                self._graphs.clear()
                self._ppr.drop()
                self._history.drop()
                raise
            finally:
                self._depth = 0

    def write_lease(self, user_id: str) -> AbstractContextManager[None]:
        """Nothing to hold: an embedded graph store serves one process (API replicas share a Neo4j),
        and within it the ingestor orders each user's writes."""
        return nullcontext()

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Group the writes made inside into one transaction (all or nothing, one fsync)."""
        with self._tx():
            yield

    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self.conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise disk_full(exc, self.path) or BackendUnavailable(f"graph database read failed: {exc}") from exc

    # --- users ---------------------------------------------------------------------------------
    def ensure_user(self, user_id: str, name: str | None = None) -> Entity:
        eid = stable_id("ent", user_id, USER_ENTITY_KEY)
        rows = self._rows("SELECT * FROM entities WHERE id=?", (eid,))
        if rows:
            return entity_of(rows[0])
        ent = Entity(id=eid, user_id=user_id, name=name or user_id, type="Person", is_user=True)
        with self._tx() as c:
            c.execute("INSERT OR IGNORE INTO users(user_id, entity_id) VALUES (?,?)", (user_id, eid))
            self._insert_entity(c, ent, USER_ENTITY_KEY)
        return ent

    def user_exists(self, user_id: str) -> bool:
        return bool(self._rows("SELECT 1 FROM users WHERE user_id=?", (user_id,)))

    def delete_user(self, user_id: str) -> None:
        with self._tx() as c:
            for table in ("mentions", "relations", "notes", "aliases", "entities", "episodes", "episode_refs",
                          "audit", "sessions", "users"):
                c.execute(f"DELETE FROM {table} WHERE user_id=?", (user_id,))
            c.execute("DELETE FROM owners WHERE owner=?", (user_id,))
        self._graphs.pop(user_id, None)
        self._ppr.drop(user_id)
        self._history.drop(user_id)

    # --- episodes ------------------------------------------------------------------------------
    def add_episodes(self, episodes: Sequence[Episode]) -> list[Episode]:
        added: list[Episode] = []
        with self._tx() as c:
            for ep in episodes:
                cur = c.execute(
                    "INSERT OR IGNORE INTO episodes(id,user_id,session_id,agent_id,kind,role,name,title,"
                    "content,client_id,ts,seq,metadata) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (ep.id, ep.user_id, ep.session_id, ep.agent_id, ep.kind.value,
                     ep.role.value if ep.role else None, ep.name, ep.title, ep.content, ep.client_id,
                     iso(ep.timestamp), ep.seq, json.dumps(ep.metadata)),
                )
                if cur.rowcount:
                    added.append(ep)
        return added

    def get_episodes(self, user_id: str, ids: Sequence[str]) -> list[Episode]:
        if not ids:
            return []
        rows = self._rows(
            # "+user_id" keeps SQLite on the primary key: with a long id list it would otherwise pick the
            # (user_id, ...) index and read every episode of the user (12 ms instead of 0.5 at 30k)
            f"SELECT * FROM episodes WHERE +user_id=? AND id IN ({marks(len(ids))})", (user_id, *ids)
        )
        return [episode_of(r) for r in rows]

    def episodes_by_ids(self, ids: Sequence[str]) -> list[Episode]:
        if not ids:
            return []
        return [episode_of(r) for r in self._rows(f"SELECT * FROM episodes WHERE id IN ({marks(len(ids))})",
                                                tuple(ids))]

    def session_episodes(self, user_id: str, session_id: str) -> list[Episode]:
        rows = self._rows(
            "SELECT * FROM episodes WHERE user_id=? AND session_id=? ORDER BY seq, ts", (user_id, session_id)
        )
        return [episode_of(r) for r in rows]

    def next_episodes(self, user_id: str, ids: Sequence[str]) -> dict[str, Episode]:
        if not ids:
            return {}
        rows = self._rows(
            "SELECT a.id AS after_id, b.* FROM episodes a JOIN episodes b ON b.user_id = a.user_id "
            f"AND b.session_id = a.session_id AND b.seq = a.seq + 1 WHERE +a.user_id=? AND a.id IN ({marks(len(ids))})",
            (user_id, *ids),
        )
        return {r["after_id"]: episode_of(r) for r in rows}

    def next_seq(self, user_id: str, session_id: str | None) -> int:
        rows = self._rows(
            "SELECT COALESCE(MAX(seq), -1) + 1 AS n FROM episodes WHERE user_id=? AND session_id IS ?",
            (user_id, session_id),
        )
        return int(rows[0]["n"])

    def pending_episodes(self, limit: int = 1000, user_id: str | None = None) -> list[Episode]:
        scope, params = ("AND user_id=?", (user_id,)) if user_id else ("", ())
        rows = self._rows(f"SELECT * FROM episodes WHERE processed=0 AND quarantined_at IS NULL {scope} "
                          "ORDER BY rowid LIMIT ?", (*params, limit))
        return [episode_of(r) for r in rows]

    def record_failure(self, ids: Sequence[str], reason: str, at: datetime, quarantine_after: int) -> list[str]:
        if not ids:
            return []
        with self._tx() as c:
            m = marks(len(ids))
            c.execute(f"UPDATE episodes SET attempts=attempts+1, failure=? WHERE processed=0 AND id IN ({m})",
                      (reason, *ids))
            return [r["id"] for r in c.execute(
                f"UPDATE episodes SET quarantined_at=? WHERE processed=0 AND quarantined_at IS NULL AND attempts>=? "
                f"AND id IN ({m}) RETURNING id", (iso(at), quarantine_after, *ids))]

    def quarantined_episodes(self, limit: int = 1000, user_id: str | None = None) -> list[Episode]:
        scope, params = ("AND user_id=?", (user_id,)) if user_id else ("", ())
        rows = self._rows(f"SELECT * FROM episodes WHERE quarantined_at IS NOT NULL {scope} ORDER BY rowid LIMIT ?",
                          (*params, limit))
        return [episode_of(r) for r in rows]

    def release_episodes(self, user_id: str, ids: Sequence[str]) -> list[str]:
        if not ids:
            return []
        with self._tx() as c:
            return [r["id"] for r in c.execute(
                f"UPDATE episodes SET quarantined_at=NULL, attempts=0 WHERE user_id=? AND quarantined_at IS NOT NULL "
                f"AND id IN ({marks(len(ids))}) RETURNING id", (user_id, *ids))]

    def mark_processed(self, ids: Sequence[str], extractor: str) -> None:
        if not ids:
            return
        with self._tx() as c:
            c.execute(
                f"UPDATE episodes SET processed=1, extractor=?, quarantined_at=NULL WHERE id IN ({marks(len(ids))})",
                (extractor, *ids),
            )

    def delete_episodes(self, user_id: str, ids: Sequence[str]) -> list[str]:
        if not ids:
            return []
        with self._tx() as c:
            found = [r["id"] for r in c.execute(
                f"SELECT id FROM episodes WHERE +user_id=? AND id IN ({marks(len(ids))})", (user_id, *ids))]
            self._delete_episode_rows(c, user_id, found)
            c.execute(f"DELETE FROM episode_refs WHERE user_id=? AND episode_id IN ({marks(len(ids))})", (user_id, *ids))
        return found

    def _delete_episode_rows(self, c: sqlite3.Connection, user_id: str, ids: list[str]) -> None:
        """The episodes and their mention links (inside the caller's transaction), in chunks that stay
        under SQLite's limit on bound parameters however long a session grew."""
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            m = marks(len(chunk))
            c.execute(f"DELETE FROM mentions WHERE episode_id IN ({m})", chunk)
            c.execute(f"DELETE FROM episodes WHERE id IN ({m})", chunk)
        if ids:
            self._ppr.drop(user_id)

    # --- sessions ------------------------------------------------------------------------------
    def touch_sessions(self, user_id: str, session_ids: Sequence[str], at: datetime) -> None:
        if session_ids:
            with self._tx() as c:
                c.executemany(
                    "INSERT INTO sessions(user_id, session_id, started_at, last_active_at) VALUES (?,?,?,?) "
                    "ON CONFLICT(user_id, session_id) DO UPDATE SET last_active_at=excluded.last_active_at "
                    "WHERE excluded.last_active_at > sessions.last_active_at",
                    [(user_id, s, iso(at), iso(at)) for s in dict.fromkeys(session_ids)])

    def list_sessions(self, user_id: str) -> list[SessionInfo]:
        rows = self._rows("SELECT * FROM sessions WHERE user_id=? ORDER BY last_active_at DESC, session_id",
                          (user_id,))
        return [session_of(r) for r in rows]

    def expired_sessions(self, before: datetime, user_id: str | None = None, limit: int = 100) -> list[SessionInfo]:
        scope, params = ("AND user_id=?", (user_id,)) if user_id else ("", ())
        rows = self._rows(f"SELECT * FROM sessions WHERE last_active_at < ? {scope} "
                          "ORDER BY last_active_at, user_id, session_id LIMIT ?", (iso(before), *params, limit))
        return [session_of(r) for r in rows]

    def delete_session(self, user_id: str, session_id: str) -> list[str]:
        with self._tx() as c:
            ids = [r["id"] for r in c.execute("SELECT id FROM episodes WHERE user_id=? AND session_id=?",
                                              (user_id, session_id))]
            self._delete_episode_rows(c, user_id, ids)
            c.execute("DELETE FROM sessions WHERE user_id=? AND session_id=?", (user_id, session_id))
        return ids

    def all_item_ids(self, user_id: str | None = None) -> dict[str, list[str]]:
        scope, params = ("AND user_id=?", (user_id,)) if user_id else ("", ())
        return {
            "episode": [r["id"] for r in self._rows(
                f"SELECT id FROM episodes WHERE processed=1 AND indexed=1 {scope}", params)],
            "note": [r["id"] for r in self._rows(f"SELECT id FROM notes WHERE invalid_at IS NULL {scope}", params)],
            "relation": [r["id"] for r in self._rows(
                f"SELECT id FROM relations WHERE invalid_at IS NULL {scope}", params)],
        }

    def set_indexed(self, ids: Sequence[str], indexed: bool) -> None:
        """Whether an episode belongs in the vector index (small talk does not)."""
        if ids:
            with self._tx() as c:
                c.execute(
                    f"UPDATE episodes SET indexed=? WHERE id IN ({marks(len(ids))})", (int(indexed), *ids)
                )

    # --- entities ------------------------------------------------------------------------------
    def _insert_entity(self, c: sqlite3.Connection, ent: Entity, key: str) -> None:
        c.execute(
            "INSERT OR IGNORE INTO entities(id,user_id,name,type,aliases,is_user) VALUES (?,?,?,?,?,?)",
            (ent.id, ent.user_id, ent.name, ent.type, json.dumps(ent.aliases), int(ent.is_user)),
        )
        c.execute("INSERT OR IGNORE INTO aliases(user_id,norm,entity_id) VALUES (?,?,?)",
                  (ent.user_id, key, ent.id))
        g = self._graphs.get(ent.user_id)
        if g is not None:
            g.add_node(ent.id)

    def resolve_entities(self, user_id: str, entities: Sequence[Entity]) -> list[Entity]:
        out: list[Entity] = []
        with self._tx() as c:
            for ent in entities:
                key = USER_ENTITY_KEY if ent.is_user else normalise(ent.name)
                row = c.execute("SELECT e.* FROM aliases a JOIN entities e ON e.id=a.entity_id "
                                "WHERE a.user_id=? AND a.norm=?", (user_id, key)).fetchone()
                if row is not None:
                    stored = entity_of(row)
                    if stored.type in ("Thing", "Concept") and ent.type not in ("Thing", "Concept"):
                        c.execute("UPDATE entities SET type=? WHERE id=?", (ent.type, stored.id))
                        stored.type = ent.type
                    out.append(stored)
                    continue
                new = ent.model_copy(update={"id": stable_id("ent", user_id, key), "user_id": user_id})
                self._insert_entity(c, new, key)
                out.append(new)
        return out

    def get_entity(self, user_id: str, entity_id: str) -> Entity | None:
        rows = self._rows("SELECT * FROM entities WHERE id=? AND user_id=?", (entity_id, user_id))
        return entity_of(rows[0]) if rows else None

    def find_entities(self, user_id: str, q: str | None, limit: int = 20) -> list[Entity]:
        if q:
            like = f"%{normalise(q)}%"
            rows = self._rows(
                "SELECT DISTINCT e.* FROM aliases a JOIN entities e ON e.id=a.entity_id "
                "WHERE a.user_id=? AND (a.norm LIKE ? OR lower(e.name) LIKE ?) ORDER BY e.name LIMIT ?",
                (user_id, like, f"%{q.lower()}%", limit),
            )
        else:
            rows = self._rows("SELECT * FROM entities WHERE user_id=? ORDER BY name LIMIT ?", (user_id, limit))
        return [entity_of(r) for r in rows]

    def entities_named(self, user_id: str, norms: Sequence[str]) -> dict[str, list[Entity]]:
        norms = list(dict.fromkeys(norms))
        out: dict[str, list[Entity]] = {}
        for i in range(0, len(norms), 500):
            chunk = norms[i:i + 500]
            for r in self._rows("SELECT a.norm AS hit, e.* FROM aliases a JOIN entities e ON e.id = a.entity_id "
                                f"WHERE a.user_id=? AND a.norm IN ({marks(len(chunk))}) ORDER BY e.id",
                                (user_id, *chunk)):
                out.setdefault(r["hit"], []).append(entity_of(r))
        return out

    def speakers_named(self, user_id: str, names: Sequence[str]) -> list[str]:
        names = list(dict.fromkeys(n for n in names if n))[:500]
        if not names:
            return []
        rows = self._rows(f"SELECT DISTINCT name FROM episodes WHERE user_id=? AND name COLLATE NOCASE IN "
                          f"({marks(len(names))}) AND kind='message' ORDER BY name", (user_id, *names))
        return [r["name"] for r in rows]

    # --- relations -----------------------------------------------------------------------------
    def add_relations(self, relations: Sequence[Relation]) -> list[Relation]:
        out: list[Relation] = []
        with self._tx() as c:
            for rel in relations:
                row = c.execute(
                    "SELECT * FROM relations WHERE user_id=? AND source_id=? AND target_id=? AND predicate=? "
                    "AND invalid_at IS NULL", (rel.user_id, rel.source_id, rel.target_id, rel.predicate),
                ).fetchone()
                if row is not None:
                    stored = relation_of(row)
                    merged = list(dict.fromkeys(stored.source_episode_ids + rel.source_episode_ids))
                    c.execute("UPDATE relations SET episodes=? WHERE id=?", (json.dumps(merged), stored.id))
                    stored.source_episode_ids = merged
                    out.append(stored)
                    continue
                c.execute(
                    "INSERT INTO relations(id,user_id,source_id,target_id,predicate,fact,valid_at,invalid_at,"
                    "episodes) VALUES (?,?,?,?,?,?,?,?,?)",
                    (rel.id, rel.user_id, rel.source_id, rel.target_id, rel.predicate, rel.fact,
                     iso(rel.valid_at), iso(rel.invalid_at), json.dumps(rel.source_episode_ids)),
                )
                self._cache_edge(rel)
                out.append(rel)
        return out

    def _cache_edge(self, rel: Relation) -> None:
        self._ppr.drop(rel.user_id)
        self._history.drop(rel.user_id)
        g = self._graphs.get(rel.user_id)
        if g is not None:
            g.add_edge(rel.source_id, rel.target_id, key=rel.id, predicate=rel.predicate,
                       current=rel.invalid_at is None)

    def invalidate_relations(self, ids: Sequence[str], at: datetime) -> None:
        if not ids:
            return
        with self._tx() as c:
            c.execute(f"UPDATE relations SET invalid_at=? WHERE id IN ({marks(len(ids))})", (iso(at), *ids))
        for rel in self.get_relations(ids):
            self._cache_edge(rel)

    def current_relations(self, user_id: str, source_id: str, predicate: str) -> list[Relation]:
        rows = self._rows("SELECT * FROM relations WHERE user_id=? AND source_id=? AND predicate=? "
                          "AND invalid_at IS NULL", (user_id, source_id, predicate))
        return [relation_of(r) for r in rows]

    def get_relations(self, ids: Sequence[str]) -> list[Relation]:
        if not ids:
            return []
        return [relation_of(r) for r in self._rows(
            f"SELECT * FROM relations WHERE id IN ({marks(len(ids))})", tuple(ids))]

    def link_mentions(self, episode_id: str, entity_ids: Sequence[str]) -> None:
        if not entity_ids:
            return
        with self._tx() as c:
            row = c.execute("SELECT user_id FROM episodes WHERE id=?", (episode_id,)).fetchone()
            if row is None:
                return
            c.executemany("INSERT OR IGNORE INTO mentions(user_id,episode_id,entity_id) VALUES (?,?,?)",
                          [(row["user_id"], episode_id, eid) for eid in entity_ids])
        self._ppr.drop(row["user_id"])

    def mentions_of(self, user_id: str, entity_ids: Sequence[str], limit: int | None = None
                    ) -> dict[str, list[str]]:
        if limit is not None and entity_ids:  # counted on the index before any row is read
            entity_ids = [r["entity_id"] for r in self._rows(
                f"SELECT entity_id FROM mentions WHERE +user_id=? AND entity_id IN ({marks(len(entity_ids))}) "
                f"GROUP BY entity_id HAVING COUNT(*) <= ?", (user_id, *entity_ids, limit))]
        if not entity_ids:
            return {}
        out: dict[str, list[str]] = {}
        for r in self._rows(f"SELECT entity_id, episode_id FROM mentions WHERE +user_id=? AND entity_id IN "
                            f"({marks(len(entity_ids))}) ORDER BY episode_id", (user_id, *entity_ids)):
            out.setdefault(r["entity_id"], []).append(r["episode_id"])
        return out

    def relations_of(self, user_id: str, entity_ids: Sequence[str], include_invalid: bool = False) -> list[Relation]:
        """Relations touching any of these entities."""
        if not entity_ids:
            return []
        m = marks(len(entity_ids))
        cond = "" if include_invalid else "AND invalid_at IS NULL"
        rows = self._rows(f"SELECT * FROM relations WHERE user_id=? AND (source_id IN ({m}) OR target_id IN ({m})) "
                          f"{cond}", (user_id, *entity_ids, *entity_ids))
        return [relation_of(r) for r in rows]

    # --- notes ---------------------------------------------------------------------------------
    def add_note(self, note: Note) -> None:
        self._history.drop(note.user_id)
        with self._tx() as c:
            c.execute(
                "INSERT OR REPLACE INTO notes(id,user_id,kind,text,slot,valid_at,invalid_at,superseded_by,"
                "episodes,created_at,confidence) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (note.id, note.user_id, note.kind.value, note.text, note.slot, iso(note.valid_at),
                 iso(note.invalid_at), note.superseded_by, json.dumps(note.source_episode_ids),
                 iso(note.created_at), note.confidence),
            )

    def supersede_note(self, old_id: str, new_id: str | None, at: datetime) -> None:
        self._history.drop()
        with self._tx() as c:
            c.execute("UPDATE notes SET invalid_at=?, superseded_by=? WHERE id=?", (iso(at), new_id, old_id))

    def notes_by_ids(self, ids: Sequence[str]) -> list[Note]:
        if not ids:
            return []
        return [note_of(r) for r in self._rows(f"SELECT * FROM notes WHERE id IN ({marks(len(ids))})", tuple(ids))]

    def current_note_by_slot(self, user_id: str, slot: str) -> Note | None:
        rows = self._rows("SELECT * FROM notes WHERE user_id=? AND slot=? AND invalid_at IS NULL "
                          "ORDER BY valid_at DESC LIMIT 1", (user_id, slot))
        return note_of(rows[0]) if rows else None

    def list_notes(self, user_id: str, include_history: bool = False) -> list[Note]:
        cond = "" if include_history else "AND invalid_at IS NULL"
        rows = self._rows(f"SELECT * FROM notes WHERE user_id=? {cond} ORDER BY valid_at", (user_id,))
        return [note_of(r) for r in rows]

    def add_audit(self, events: Sequence[AuditEvent]) -> None:
        if not events:
            return
        with self._tx() as c:
            c.executemany(
                "INSERT OR IGNORE INTO audit(id,user_id,at,actor,action,item_kind,item_id,text,related_id,"
                "session_id) VALUES (?,?,?,?,?,?,?,?,?,?)",
                [(e.id, e.user_id, iso(e.at), e.actor, e.action, e.item_kind, e.item_id, e.text, e.related_id,
                  e.session_id) for e in events])

    def audit_log(self, user_id: str, item_id: str | None = None, limit: int = 1000,
                  item_kind: str | None = None) -> list[AuditEvent]:
        scope, params = ("AND (item_id=? OR related_id=?)", (item_id, item_id)) if item_id else ("", ())
        if item_kind:
            scope, params = f"{scope} AND item_kind=?", (*params, item_kind)
        rows = self._rows(f"SELECT * FROM audit WHERE user_id=? {scope} ORDER BY seq LIMIT ?",
                          (user_id, *params, limit))
        return [AuditEvent(id=r["id"], user_id=r["user_id"], at=datetime.fromisoformat(r["at"]), actor=r["actor"],
                           action=r["action"],
                           item_kind=r["item_kind"], item_id=r["item_id"], text=r["text"], related_id=r["related_id"],
                           session_id=r["session_id"])
                for r in rows]

    def superseded(self, user_id: str, episode_ids: Sequence[str]) -> tuple[list[Note], list[Relation]]:
        generation = self._history.generation
        by_episode = self._history.get(user_id)
        if by_episode is None:  # read once per user, then kept until a note or relation of the user changes
            by_episode = {}
            for r in self._rows("SELECT * FROM notes WHERE user_id=? AND invalid_at IS NOT NULL ORDER BY valid_at",
                                (user_id,)):
                note = note_of(r)
                for ep in note.source_episode_ids:
                    by_episode.setdefault(ep, ([], []))[0].append(note)
            for r in self._rows("SELECT * FROM relations WHERE user_id=? AND invalid_at IS NOT NULL ORDER BY id",
                                (user_id,)):
                rel = relation_of(r)
                for ep in rel.source_episode_ids:
                    by_episode.setdefault(ep, ([], []))[1].append(rel)
            self._history.put(user_id, by_episode, generation)
        notes: dict[str, Note] = {}
        relations: dict[str, Relation] = {}
        for ep in episode_ids:
            said_notes, said_relations = by_episode.get(ep, ([], []))
            notes.update((n.id, n) for n in said_notes)
            relations.update((r.id, r) for r in said_relations)
        return (sorted(notes.values(), key=lambda n: n.valid_at),
                sorted(relations.values(), key=lambda r: r.id))

    def delete_note(self, user_id: str, note_id: str) -> bool:
        self._history.drop(user_id)
        with self._tx() as c:
            c.execute("UPDATE notes SET superseded_by=NULL WHERE user_id=? AND superseded_by=?", (user_id, note_id))
            return bool(c.execute("DELETE FROM notes WHERE user_id=? AND id=?", (user_id, note_id)).rowcount)
