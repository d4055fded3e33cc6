"""The periodic sweep, in a thread of its own: a first pass at once (the start-up repairs run there, so a
server is ready before they are done), then one every `every` seconds.

A job that fails is logged and tried again at the next pass: a store that is down, a full disk or a
message that meets a bug never ends the sweeping, and with it session expiry and compaction for every
tenant (what one message fails on is counted and quarantined by the ingestor, `hippograph.failures`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from hippograph.errors import HippographError

log = logging.getLogger("hippograph.sweep")


class Sweeper:
    def __init__(self, jobs: Sequence[Callable[[], object]], every: float) -> None:
        self.jobs = list(jobs)
        self.every = every
        self.stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.passes = 0  # passes finished (tests, /readyz)

    def start(self) -> None:
        if self._thread is None:
            self.stopping.clear()
            self._thread = threading.Thread(target=self._run, name="hippograph-sweep", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Ask the pass under way to end (jobs look at `stopping` between their steps) and wait for it."""
        self.stopping.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                log.warning("the sweep did not end within %.0f s of the shutdown", timeout)

    def _run(self) -> None:
        while not self.stopping.is_set():
            for job in self.jobs:
                if self.stopping.is_set():
                    return
                name = getattr(job, "__name__", repr(job))
                try:
                    job()
                except HippographError as exc:  # a store or model down, a full disk: the next pass tries again
                    log.warning("%s failed: %s", name, exc)
                except Exception:  # never end the sweeping
                    log.exception("%s failed; the next sweep tries again", name)
            self.passes += 1
            self.stopping.wait(self.every)
