"""Writes acknowledged before they are extracted (`"wait": false`): the writes that wait for extraction,
per user, and the threads that extract them.

Nothing is held here that is not in the graph store already: a write is stored (and pending) before it
is queued, so a process that dies with writes in the queue loses nothing; the start-up repair or any
replica's sweep finishes their episodes. What the queue adds is the grouping: each write is extracted
as one batch, as a waited write is, so its result does not depend on whether the client waited. A
user's writes are processed in the order they were stored, by one thread at a time, under the user's
write (`Ingestor.user_write`), so they supersede each other in that order whichever thread or replica
does it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from hippograph.errors import HippographError

if TYPE_CHECKING:
    from hippograph.ingest import QueuedWrite

log = logging.getLogger("hippograph.background")

Work = Callable[[str, Sequence["QueuedWrite"]], int]


class Background:
    """`workers` threads that call `work(user_id, writes)` with the writes (episode ids) queued for a
    user, oldest first, then `after(user_id)`."""

    def __init__(self, work: Work, after: Callable[[str], None], workers: int = 2) -> None:
        self._work, self._after, self._workers = work, after, workers
        self._writes: dict[str, list[QueuedWrite]] = {}  # user -> queued writes, users in arrival order
        self._busy: set[str] = set()  # users a thread is on now (one thread per user)
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._stopping = False
        self.queued_episodes = 0  # in the queue or being processed

    def start(self) -> None:
        with self._cond:
            if self._threads:
                return
            self._stopping = False
            self._threads = [threading.Thread(target=self._run, name=f"hippograph-background-{i}", daemon=True)
                             for i in range(self._workers)]
        for t in self._threads:
            t.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Let the threads finish the writes they are on; what is still queued stays pending in the store."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            threads, self._threads = self._threads, []
        for t in threads:
            t.join(timeout)
        with self._cond:  # whoever waits for a write still queued is told it is not done (it stays pending)
            for writes in self._writes.values():
                for w in writes:
                    w.done.set()

    def submit(self, user_id: str, write: QueuedWrite) -> None:
        with self._cond:
            if self._stopping:
                write.done.set()
                return
            self._writes.setdefault(user_id, []).append(write)
            self.queued_episodes += len(write.episode_ids)
            self._cond.notify()

    def has(self, user_id: str) -> bool:
        """Whether writes of the user are queued or being processed."""
        with self._cond:
            return user_id in self._writes or user_id in self._busy

    def idle(self, timeout: float) -> bool:
        """Wait until nothing is queued or being processed (tests, benchmarks)."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._writes and not self._busy, timeout)

    def _next_user(self) -> str | None:
        return next((u for u in self._writes if u not in self._busy), None)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stopping or self._next_user() is not None)
                if self._stopping:
                    return
                user_id = self._next_user()
                assert user_id is not None
                writes = self._writes.pop(user_id)
                self._busy.add(user_id)
            try:
                self._drain(user_id, writes)
            finally:
                with self._cond:
                    self._busy.discard(user_id)
                    self.queued_episodes -= sum(len(w.episode_ids) for w in writes)
                    self._cond.notify_all()
                for w in writes:
                    w.done.set()

    def _drain(self, user_id: str, writes: list[QueuedWrite]) -> None:
        try:
            self._work(user_id, writes)
            self._after(user_id)
        except HippographError as exc:  # a store or the model down: the sweep tries again later
            log.warning("background extraction for user %r stopped: %s", user_id, exc)
        except Exception:  # never kill the thread: the episodes stay pending for the sweep
            log.exception("background extraction for user %r failed", user_id)
