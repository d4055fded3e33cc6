"""Tier 1 is meant to vanish: rolling summaries of long sessions, and expiry of idle ones.

Summaries: once a session reaches `summary_threshold` messages, everything but the last
`summary_keep_recent` is summarised; the summary rolls forward each time that many more messages have
aged out of the window. It is computed from a snapshot of the session with no store lock or transaction
held (a summariser may call a model); the write then checks, inside one short transaction, that no
newer summary landed meanwhile. A summary is stored as an episode of kind `summary` in the session: it
is never extracted (exact facts come from the messages themselves) and never indexed for recall.

Expiry: a session idle for `ttl_seconds` of server time (client timestamps may be anything) is deleted
from both stores with its messages, summaries and tool observations. Notes and relations extracted
from it stay (that is tier 2), and keep citing the client's ids of the messages they came from: the
store keeps episode id -> client id, and nothing else, for each expired message they cite. Each
deleted memory is recorded in the audit log, without its text. (Deleting a session through the API is
another thing: it forgets what was derived from it too, see `hippograph.forgetting`.) On a disk too
full to write (see `storage_guard`), expiry waits until space returns, and reads go on meanwhile.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta

from hippograph.audit import audit_event
from hippograph.config import SessionSettings
from hippograph.errors import HippographError
from hippograph.graph.base import GraphStore
from hippograph.models import Episode, EpisodeKind, stable_id, utcnow
from hippograph.planner.summary import Summarizer, SummaryLine, render
from hippograph.storage_guard import StorageGuard
from hippograph.vectors.indexer import Indexer

log = logging.getLogger("hippograph.lifecycle")

SUMMARY_SEQ = -1  # before every message: summaries never take a message's place in the session order


def stored_summary(episodes: Sequence[Episode]) -> Episode | None:
    """The session's current summary among its episodes (the one that covers the most)."""
    found = [e for e in episodes if e.kind == EpisodeKind.summary]
    return max(found, key=covered_through, default=None)


def covered_through(summary: Episode | None) -> int:
    """The seq of the last message a summary covers (-1 for none)."""
    return int(summary.metadata.get("through_seq", -1)) if summary is not None else -1


def summary_lines(summary: Episode | None) -> list[SummaryLine]:
    return [SummaryLine.model_validate(x) for x in summary.metadata.get("lines", [])] if summary else []


def drop_summary_lines(graph: GraphStore, user_id: str, session_ids: Collection[str], gone: Collection[str]) -> int:
    """Rewrite the summaries of these sessions without the lines quoting deleted episodes (inside the
    caller's batch). Returns how many summaries changed."""
    changed = 0
    for session_id in session_ids:
        for summary in [e for e in graph.session_episodes(user_id, session_id) if e.kind == EpisodeKind.summary]:
            lines = summary_lines(summary)
            kept = [line for line in lines if line.source not in gone]
            if len(kept) == len(lines):
                continue
            rewritten = summary.model_copy(update={
                "content": render(kept) or "(nothing of substance)",
                "metadata": {**summary.metadata, "lines": [line.model_dump(mode="json") for line in kept]}})
            graph.delete_episodes(user_id, [summary.id])
            graph.add_episodes([rewritten])
            graph.mark_processed([summary.id], summary.extractor or "summary")
            graph.set_indexed([summary.id], False)
            changed += 1
    return changed


class SessionKeeper:
    def __init__(self, graph: GraphStore, indexer: Indexer, summarizer: Summarizer, settings: SessionSettings,
                 write_lock: threading.Lock, fallback: Summarizer | None = None,
                 guard: StorageGuard | None = None, on_delete: Callable[[], None] | None = None,
                 user_write: Callable[[str], AbstractContextManager[None]] | None = None) -> None:
        self.graph = graph
        # one user's writes one at a time (the ingestor's: its lock per user, then the store's lease)
        self._user_write = user_write or graph.write_lease
        self.indexer = indexer
        self.summarizer = summarizer
        self.fallback = fallback  # when the summarizer (a model) fails
        self.settings = settings
        self._write_lock = write_lock  # the ingest path's: an expiry never interleaves with a write
        self.guard = guard or StorageGuard()  # on a full disk expiry waits (a read must not fail for it)
        self._on_delete = on_delete  # told after each delete (compaction is due)

    # --- summaries -----------------------------------------------------------------------------
    def summarize(self, user_id: str, session_id: str) -> Episode | None:
        """Roll the session's summary forward if enough messages aged out of the window since the last
        one. Returns the new summary, or None when none was due (or another caller wrote it first)."""
        cfg = self.settings
        episodes = self.graph.session_episodes(user_id, session_id)
        messages = [e for e in episodes if e.kind == EpisodeKind.message]
        if len(messages) < cfg.summary_threshold:
            return None
        previous = stored_summary(episodes)
        through = covered_through(previous)
        aged = [m for m in messages[: len(messages) - cfg.summary_keep_recent] if m.seq > through]
        step = cfg.summary_threshold - cfg.summary_keep_recent
        if not aged or (previous is not None and len(aged) < step):
            return None
        # the model (if any) runs here, with no lock or transaction held
        method = self.summarizer.name
        try:
            lines = self.summarizer.summarize(summary_lines(previous), aged, cfg.summary_max_tokens)
        except HippographError as exc:
            if self.fallback is None:
                raise
            log.warning("summary by %s failed (%s); using %s", method, exc, self.fallback.name)
            method = self.fallback.name
            lines = self.fallback.summarize(summary_lines(previous), aged, cfg.summary_max_tokens)
        last = aged[-1]
        covered = int(previous.metadata.get("messages", 0) if previous else 0) + len(aged)
        # under the user's lease: another process summarising the same session waits, then finds it done
        with self._user_write(user_id), self.graph.batch():
            current = stored_summary(self.graph.session_episodes(user_id, session_id))
            if covered_through(current) >= last.seq:
                return None  # a concurrent call summarised as far or further
            # a message deleted while the summary was being written must not come back in it
            alive = {e.id for e in self.graph.get_episodes(user_id, [line.source for line in lines])}
            lines = [line for line in lines if line.source in alive]
            summary = Episode(
                id=stable_id("sum", user_id, session_id, str(last.seq)), user_id=user_id, session_id=session_id,
                kind=EpisodeKind.summary, content=render(lines) or "(nothing of substance)",
                timestamp=last.timestamp, seq=SUMMARY_SEQ,
                metadata={"through_seq": last.seq, "messages": covered, "method": method,
                          "lines": [line.model_dump(mode="json") for line in lines]})
            self.graph.add_episodes([summary])
            self.graph.mark_processed([summary.id], f"summary:{method}")
            self.graph.set_indexed([summary.id], False)
            actor = f"summarizer:{method}"
            events = [audit_event(user_id, actor, "create", summary.id, None, current.id if current else None,
                                  item_kind="memory")]
            if current is not None:
                self.graph.delete_episodes(user_id, [current.id])
                events.append(audit_event(user_id, actor, "supersede", current.id, None, summary.id,
                                          item_kind="memory"))
            self.graph.add_audit(events)
        return summary

    # --- expiry --------------------------------------------------------------------------------
    def expire(self, user_id: str | None = None, now: datetime | None = None) -> int:
        """Delete every session (of one user, or of all) idle longer than the TTL. Returns how many."""
        if not self.settings.ttl_seconds:
            return 0
        now = now or utcnow()
        before = now - timedelta(seconds=self.settings.ttl_seconds)
        if not self.graph.expired_sessions(before, user_id=user_id, limit=1):
            return 0  # the common case, on every read: no lock taken, writes go on
        if not self.guard.allows("deleting expired sessions"):
            return 0
        done = 0
        while found := self.graph.expired_sessions(before, user_id=user_id, limit=100):
            gone = 0
            by_user: dict[str, list[str]] = {}
            for s in found:
                by_user.setdefault(s.user_id, []).append(s.session_id)
            for user, sessions in by_user.items():
                # the user's lease first, as a write takes it (then the write lock); under it, what is
                # still idle: another process may have written to a session meanwhile, or expired it
                with self._user_write(user), self._write_lock:
                    idle = {x.session_id for x in self.graph.expired_sessions(before, user_id=user,
                                                                               limit=len(sessions) + 100)}
                    for session_id in sessions:
                        if session_id in idle:
                            self.delete(user, session_id, now, "session-ttl", "expire")
                            gone += 1
            done += gone
            if not gone:
                break  # every one found was written to or expired elsewhere: the next sweep looks again
        return done

    def delete(self, user_id: str, session_id: str, now: datetime, actor: str, action: str = "delete") -> int:
        """Delete one session's memories from both stores as its TTL does (the caller holds the write
        lock): notes and relations stay, and keep the client ids of the messages they cite. Returns
        how many memories went."""
        episodes = self.graph.session_episodes(user_id, session_id)
        ids = [e.id for e in episodes]
        self.indexer.store.delete(ids)  # the index first: the system of record can always redo it
        with self.graph.batch():
            notes, relations = self.graph.derived_from(user_id, ids)
            cited = {ep for n in notes for ep in n.source_episode_ids} | {
                ep for r in relations for ep in r.source_episode_ids}
            deleted = self.graph.delete_session(user_id, session_id)
            self.graph.keep_client_ids(user_id, {e.id: e.client_id for e in episodes if e.id in cited})
            self.graph.add_audit([audit_event(user_id, actor, action, ep, None, at=now, item_kind="memory",
                                              session_id=session_id) for ep in deleted])
        if late := sorted(set(deleted) - set(ids)):
            self.indexer.store.delete(late)
        if self._on_delete is not None:
            self._on_delete()
        log.info("session %r of user %r deleted (%s): %d memories", session_id, user_id, actor, len(deleted))
        return len(deleted)
