"""Writes acknowledged before they are extracted (`"wait": false`): the users whose stored messages wait
for extraction, and the threads that do it.

Nothing is held here that is not in the graph store already: a write is stored (and pending) before its
user is queued, so a process that dies with users in the queue loses nothing; the start-up repair or any
replica's sweep finishes their episodes. The queue holds each user once, in the order they first
came; a user's episodes are processed oldest first, under the user's write (`Ingestor.user_write`), so
they supersede each other in the order they were said whichever thread or replica does it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from hippograph.errors import HippographError

log = logging.getLogger("hippograph.background")


class Background:
    """`workers` threads that call `work(user_id)` for each queued user until it returns 0 (nothing
    left to do for now), then `after(user_id)`."""

    def __init__(self, work: Callable[[str], int], after: Callable[[str], None], workers: int = 2) -> None:
        self._work, self._after, self._workers = work, after, workers
        self._queued: dict[str, None] = {}  # users with work waiting, in arrival order
        self._busy: set[str] = set()  # users a thread is on now (one thread per user)
        self._again: set[str] = set()  # busy users that were queued again meanwhile
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._stopping = False

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
        """Let the threads finish the user they are on; what is still queued stays pending in the store."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            threads, self._threads = self._threads, []
        for t in threads:
            t.join(timeout)

    def submit(self, user_id: str) -> None:
        with self._cond:
            if user_id in self._busy:
                self._again.add(user_id)
            else:
                self._queued[user_id] = None
            self._cond.notify()

    @property
    def waiting(self) -> int:
        with self._cond:
            return len(self._queued) + len(self._busy)

    def idle(self, timeout: float) -> bool:
        """Wait until no user is queued or being processed (tests, benchmarks, shutdown)."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._queued and not self._busy, timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stopping or bool(self._queued))
                if self._stopping:
                    return
                user_id = next(iter(self._queued))
                del self._queued[user_id]
                self._busy.add(user_id)
            try:
                self._drain(user_id)
            finally:
                with self._cond:
                    self._busy.discard(user_id)
                    if user_id in self._again:
                        self._again.discard(user_id)
                        self._queued[user_id] = None
                    self._cond.notify_all()

    def _drain(self, user_id: str) -> None:
        try:
            while not self._stopping and self._work(user_id):
                pass
            self._after(user_id)
        except HippographError as exc:  # a store or the model down: the sweep tries again later
            log.warning("background extraction for user %r stopped: %s", user_id, exc)
        except Exception:  # never kill the thread: the episodes stay pending for the sweep
            log.exception("background extraction for user %r failed", user_id)
