"""Deleting for real: a memory, a session, a note or a user, from every store, and then from the bytes.

The graph store works out what goes with an item (see `graph.forget`); this module keeps the vector
index in step (deleted points go, notes and relations that lost a source are indexed again with their
new provenance and wording), drops the deleted messages' lines from the session summaries, and writes
one audit event per deleted item: what (kind and id), by whom and when, never the text.

Deleted data can still sit in the stores' files (SQLite's write-ahead log, Qdrant Edge's segments and
WAL) until they are compacted. `compact()` does that; the server's periodic sweep runs it once
something was deleted since the last time, and `hippograph optimize` runs it always.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import datetime

from hippograph.audit import audit_event
from hippograph.graph.base import GraphStore
from hippograph.graph.forget import Forgotten, forget_episodes, forget_note
from hippograph.lifecycle import drop_summary_lines
from hippograph.models import AuditEvent, Note, utcnow
from hippograph.records import note_record, relation_record
from hippograph.vectors.indexer import Indexer

log = logging.getLogger("hippograph.forgetting")


class Compactor:
    """Remembers that something was deleted, and compacts both stores when asked to."""

    def __init__(self, graph: GraphStore, indexer: Indexer) -> None:
        self.graph = graph
        self.indexer = indexer
        self._pending = threading.Event()
        self._lock = threading.Lock()

    def mark(self) -> None:
        self._pending.set()

    @property
    def pending(self) -> bool:
        return self._pending.is_set()

    def compact(self, force: bool = False) -> bool:
        """Compact both stores if anything was deleted since the last time (or `force`, which also
        rewrites the graph store whole: for `hippograph optimize`). True if run."""
        with self._lock:
            if not (force or self._pending.is_set()):
                return False
            self._pending.clear()
            try:
                self.graph.compact(full=force)
                self.indexer.store.compact()
            except BaseException:
                self._pending.set()  # the next sweep tries again
                raise
            return True


def events(user_id: str, actor: str, gone: Forgotten, at: datetime, expired: Sequence[str] = ()) -> list[AuditEvent]:
    """One delete event per item that went (without its text); `expired`: ids of memories that had
    expired already (only their client ids were left)."""
    out = [audit_event(user_id, actor, "delete", e.id, None, at=at, item_kind="memory", session_id=e.session_id)
           for e in gone.episodes]
    out += [audit_event(user_id, actor, "delete", i, None, at=at, item_kind="memory") for i in expired]
    out += [audit_event(user_id, actor, "delete", i, None, at=at) for i in gone.notes]
    out += [audit_event(user_id, actor, "delete", i, None, at=at, item_kind="relation") for i in gone.relations]
    return out


class Forgetting:
    def __init__(self, graph: GraphStore, indexer: Indexer, compactor: Compactor) -> None:
        self.graph = graph
        self.indexer = indexer
        self.compactor = compactor

    def episodes(self, user_id: str, ids: Sequence[str], actor: str) -> Forgotten:
        """Delete these episodes (stored, or expired and still cited) with the cascade (the caller
        holds the write lock)."""
        now = utcnow()
        with self.graph.batch():
            gone = forget_episodes(self.graph, user_id, ids)
            sessions = {e.session_id for e in gone.episodes if e.session_id}
            drop_summary_lines(self.graph, user_id, sessions, set(ids))
            stored = {e.id for e in gone.episodes}
            self.graph.add_audit(events(user_id, actor, gone, now, [i for i in ids if i not in stored]))
            self._index(gone, [*ids, *gone.notes, *gone.relations])
        return gone

    def session(self, user_id: str, session_id: str, actor: str) -> int:
        """Delete the session and everything in it with the cascade; returns how many memories went."""
        with self.graph.batch():
            ids = [e.id for e in self.graph.session_episodes(user_id, session_id)]
            gone = self.episodes(user_id, ids, actor)
            self.graph.delete_session(user_id, session_id)  # the session row (its episodes are gone)
        log.info("session %r of user %r deleted (%s): %d memories, %d notes, %d relations", session_id, user_id,
                 actor, len(gone.episodes), len(gone.notes), len(gone.relations))
        return len(gone.episodes)

    def note(self, user_id: str, note: Note, actor: str) -> Forgotten:
        with self.graph.batch():
            gone = forget_note(self.graph, user_id, note)
            self.graph.add_audit(events(user_id, actor, gone, utcnow()))
            self._index(gone, [*gone.notes, *gone.relations])
        return gone

    def user(self, user_id: str) -> None:
        self.indexer.store.delete_user(user_id)
        self.graph.delete_user(user_id)
        self.compactor.mark()

    def _index(self, gone: Forgotten, deleted: list[str]) -> None:
        """The index follows the system of record: deleted points go, changed ones are replaced. Run
        inside the graph batch, before it commits: if the index fails, nothing is deleted and the
        caller can try again; if the commit fails, `reindex_missing` puts the points back."""
        self.compactor.mark()
        self.indexer.store.delete(deleted)
        self.indexer.index([note_record(n) for n in gone.changed_notes if n.current]
                           + [relation_record(r) for r in gone.changed_relations if r.invalid_at is None])
