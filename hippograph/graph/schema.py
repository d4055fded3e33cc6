"""SQLite schema of the embedded graph store, and the name normalisation used for entity resolution."""

from __future__ import annotations

import re
import unicodedata

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
    extractor TEXT
);
CREATE INDEX IF NOT EXISTS episodes_session ON episodes(user_id, session_id, seq);
CREATE INDEX IF NOT EXISTS episodes_pending ON episodes(processed);
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
"""

# Columns added after a table's first release: (table, column, definition). A store made by an older
# version gains them when it is opened.
ADDED_COLUMNS = (
    ("notes", "confidence", "REAL NOT NULL DEFAULT 0.7"),
    ("audit", "session_id", "TEXT"),
)
# A store made before sessions were tracked: its sessions start counting from the upgrade.
BACKFILL_SESSIONS = """
INSERT OR IGNORE INTO sessions(user_id, session_id, started_at, last_active_at)
SELECT DISTINCT user_id, session_id, ?, ? FROM episodes WHERE session_id IS NOT NULL
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
