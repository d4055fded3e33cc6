"""SQLite schema of the embedded graph store (tables, upgrades of older stores, rows to models), and
the name normalisation used for entity resolution."""

from __future__ import annotations

import json
import re
import sqlite3
import unicodedata
from collections.abc import Iterator, Sequence
from datetime import datetime

from hippograph.auth import DEFAULT_TENANT, ApiKey
from hippograph.models import (
    Entity,
    Episode,
    EpisodeKind,
    Note,
    NoteKind,
    Relation,
    Role,
    SessionInfo,
    utcnow,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    user_id    TEXT PRIMARY KEY,
    entity_id  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS episodes (
    id        TEXT PRIMARY KEY,
    user_id   TEXT NOT NULL,
    session_id TEXT,
    agent_id  TEXT,
    kind      TEXT NOT NULL,
    role      TEXT,
    name      TEXT,
    title     TEXT,
    content   TEXT NOT NULL,
    client_id TEXT,
    ts        TEXT NOT NULL,
    seq       INTEGER NOT NULL DEFAULT 0,
    metadata  TEXT NOT NULL DEFAULT '{}',
    processed INTEGER NOT NULL DEFAULT 0,
    indexed   INTEGER NOT NULL DEFAULT 1,
    extractor TEXT,
    attempts  INTEGER NOT NULL DEFAULT 0,
    failure   TEXT,
    quarantined_at TEXT
);
CREATE INDEX IF NOT EXISTS episodes_session ON episodes(user_id, session_id, seq);
CREATE INDEX IF NOT EXISTS episodes_pending ON episodes(processed);
CREATE INDEX IF NOT EXISTS episodes_speaker ON episodes(user_id, name COLLATE NOCASE);
CREATE TABLE IF NOT EXISTS entities (
    id       TEXT PRIMARY KEY,
    user_id  TEXT NOT NULL,
    name     TEXT NOT NULL,
    type     TEXT NOT NULL,
    aliases  TEXT NOT NULL DEFAULT '[]',
    is_user  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS entities_user ON entities(user_id, name);
CREATE TABLE IF NOT EXISTS aliases (
    user_id   TEXT NOT NULL,
    norm      TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    PRIMARY KEY (user_id, norm)
);
CREATE TABLE IF NOT EXISTS relations (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    source_id  TEXT NOT NULL,
    target_id  TEXT NOT NULL,
    predicate  TEXT NOT NULL,
    fact       TEXT NOT NULL,
    valid_at   TEXT NOT NULL,
    invalid_at TEXT,
    episodes   TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS relations_source ON relations(user_id, source_id, predicate);
CREATE INDEX IF NOT EXISTS relations_target ON relations(user_id, target_id);
CREATE TABLE IF NOT EXISTS mentions (
    user_id    TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    entity_id  TEXT NOT NULL,
    PRIMARY KEY (episode_id, entity_id)
);
CREATE INDEX IF NOT EXISTS mentions_user ON mentions(user_id);
CREATE INDEX IF NOT EXISTS mentions_entity ON mentions(entity_id);
CREATE TABLE IF NOT EXISTS notes (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL,
    kind          TEXT NOT NULL,
    text          TEXT NOT NULL,
    slot          TEXT NOT NULL,
    valid_at      TEXT NOT NULL,
    invalid_at    TEXT,
    superseded_by TEXT,
    episodes      TEXT NOT NULL DEFAULT '[]',
    created_at    TEXT NOT NULL,
    confidence    REAL NOT NULL DEFAULT 0.7
);
CREATE INDEX IF NOT EXISTS notes_slot ON notes(user_id, slot, invalid_at);
CREATE TABLE IF NOT EXISTS audit (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    user_id    TEXT NOT NULL,
    at         TEXT NOT NULL,
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    item_kind  TEXT NOT NULL,
    item_id    TEXT NOT NULL,
    text       TEXT,
    related_id TEXT,
    session_id TEXT
);
CREATE INDEX IF NOT EXISTS audit_user ON audit(user_id, seq);
CREATE TABLE IF NOT EXISTS sessions (
    user_id        TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    started_at     TEXT NOT NULL,
    last_active_at TEXT NOT NULL,
    PRIMARY KEY (user_id, session_id)
);
CREATE INDEX IF NOT EXISTS sessions_active ON sessions(last_active_at);
CREATE TABLE IF NOT EXISTS owners (
    tenant     TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    owner      TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (tenant, user_id)
);
CREATE TABLE IF NOT EXISTS api_keys (
    id         TEXT PRIMARY KEY,
    tenant     TEXT NOT NULL,
    name       TEXT,
    scopes     TEXT NOT NULL,
    key_hash   TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE INDEX IF NOT EXISTS api_keys_tenant ON api_keys(tenant);
"""

# Columns added after a table's first release: (table, column, definition). A store made by an older
# version gains them when it is opened.
ADDED_COLUMNS = (
    ("notes", "confidence", "REAL NOT NULL DEFAULT 0.7"),
    ("audit", "session_id", "TEXT"),
    ("episodes", "attempts", "INTEGER NOT NULL DEFAULT 0"),
    ("episodes", "failure", "TEXT"),
    ("episodes", "quarantined_at", "TEXT"),
)
# A store made before sessions were tracked: its sessions start counting from the upgrade.
BACKFILL_SESSIONS = """
INSERT OR IGNORE INTO sessions(user_id, session_id, started_at, last_active_at)
SELECT DISTINCT user_id, session_id, ?, ? FROM episodes WHERE session_id IS NOT NULL
"""

# A store made before tenants: each of its users becomes a user of the default tenant, its data filed
# under the user id it always had.
BACKFILL_OWNERS = """
INSERT OR IGNORE INTO owners(tenant, user_id, owner, created_at)
SELECT ?, user_id, user_id, ? FROM (SELECT user_id FROM users UNION SELECT DISTINCT user_id FROM episodes)
"""

_ARTICLES = re.compile(r"^(the|a|an|my|our|his|her|their|your)\s+")
_SPACE = re.compile(r"\s+")


def normalise(name: str) -> str:
    """The key two entity names must share to be merged: case-, accent-, article- and space-folded."""
    s = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode() or name
    s = _SPACE.sub(" ", s.lower().strip(" .,;:!?'\"()[]"))
    s = _ARTICLES.sub("", s)
    s = s.removesuffix("'s")
    return s


# --- query helpers --------------------------------------------------------------------------------
def marks(n: int) -> str:
    """n `?` placeholders for an IN (...) list."""
    return ",".join("?" * n)


def chunks(ids: Sequence[str], size: int = 500) -> Iterator[list[str]]:
    """The distinct ids in pieces that stay under SQLite's bound-parameter limit."""
    ids = list(dict.fromkeys(ids))
    for i in range(0, len(ids), size):
        yield ids[i:i + size]


# --- rows to models, and the upgrade of older stores --------------------------------------------
def iso(dt: datetime | None) -> str | None:
    return dt.isoformat() if dt else None


def parse_dt(s: str | None) -> datetime | None:
    return datetime.fromisoformat(s) if s else None


def episode_of(r: sqlite3.Row) -> Episode:
    return Episode(
        id=r["id"], user_id=r["user_id"], session_id=r["session_id"], agent_id=r["agent_id"],
        kind=EpisodeKind(r["kind"]), role=Role(r["role"]) if r["role"] else None, name=r["name"],
        title=r["title"], content=r["content"], client_id=r["client_id"], timestamp=parse_dt(r["ts"]),
        seq=r["seq"], metadata=json.loads(r["metadata"] or "{}"), processed=bool(r["processed"]),
        extractor=r["extractor"], attempts=r["attempts"], failure=r["failure"],
        quarantined_at=parse_dt(r["quarantined_at"]),
    )


def entity_of(r: sqlite3.Row) -> Entity:
    return Entity(id=r["id"], user_id=r["user_id"], name=r["name"], type=r["type"],
                  aliases=json.loads(r["aliases"] or "[]"), is_user=bool(r["is_user"]))


def relation_of(r: sqlite3.Row) -> Relation:
    return Relation(id=r["id"], user_id=r["user_id"], source_id=r["source_id"], target_id=r["target_id"],
                    predicate=r["predicate"], fact=r["fact"], valid_at=parse_dt(r["valid_at"]),
                    invalid_at=parse_dt(r["invalid_at"]), source_episode_ids=json.loads(r["episodes"] or "[]"))


def note_of(r: sqlite3.Row) -> Note:
    return Note(id=r["id"], user_id=r["user_id"], kind=NoteKind(r["kind"]), text=r["text"], slot=r["slot"],
                valid_at=parse_dt(r["valid_at"]), invalid_at=parse_dt(r["invalid_at"]), superseded_by=r["superseded_by"],
                source_episode_ids=json.loads(r["episodes"] or "[]"), created_at=parse_dt(r["created_at"]),
                confidence=r["confidence"])


def key_of(r: sqlite3.Row) -> ApiKey:
    return ApiKey(id=r["id"], tenant=r["tenant"], name=r["name"], scopes=json.loads(r["scopes"]),
                  key_hash=r["key_hash"], created_at=parse_dt(r["created_at"]), revoked_at=parse_dt(r["revoked_at"]))


def session_of(r: sqlite3.Row) -> SessionInfo:
    return SessionInfo(user_id=r["user_id"], session_id=r["session_id"], started_at=parse_dt(r["started_at"]),
                       last_active_at=parse_dt(r["last_active_at"]))


def migrate(conn: sqlite3.Connection, fresh: bool, before_tenants: bool = False) -> None:
    """Bring a store made by an older version up to this schema (new columns; sessions tracked from now;
    users filed under the default tenant)."""
    for table, column, definition in ADDED_COLUMNS:
        if column not in {r["name"] for r in conn.execute(f"PRAGMA table_info({table})")}:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
    if fresh:
        now = iso(utcnow())
        conn.execute(BACKFILL_SESSIONS, (now, now))
    if before_tenants:
        conn.execute(BACKFILL_OWNERS, (DEFAULT_TENANT, iso(utcnow())))
