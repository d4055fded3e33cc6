"""One writer per user across every process on one store: the write lease both graph stores hold.

Several API replicas can share one database. A user's writes must still be applied one after another,
in the order they were taken (a statement replaces the earlier one, sequence numbers follow each other),
so the lock that orders them lives in the store, not in a process: a lease per user, taken by a
compare-and-set, renewed by its holder while it works, and given back at the end. A holder that dies
(SIGKILL, a lost machine) stops renewing, and the lease passes on once it has run out.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hippograph.errors import BackendUnavailable

#: how long a lease lasts without renewal: the longest a dead holder keeps a user's writes waiting
LEASE_MS = 15_000
#: how long a writer waits for another's lease before its write fails as unavailable (a 503)
WAIT_S = 120.0

#: (user id, owner, lease ms) -> (taken?, ms until the holder's lease runs out)
Take = Callable[[str, str, int], tuple[bool, int]]
#: (user id, owner, lease ms) -> None, and (user id, owner) -> None
Renew = Callable[[str, str, int], None]
Release = Callable[[str, str], None]


def new_owner() -> str:
    """Who holds a lease: this host and process, and one acquisition of it."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"


@contextmanager
def hold(user_id: str, take: Take, renew: Renew, release: Release, lease_ms: int = LEASE_MS,
         wait_s: float = WAIT_S) -> Iterator[None]:
    """The user's lease for the block, waited for (with backoff) while another holds it, renewed every
    third of its length while the block runs, and released at the end."""
    owner = new_owner()
    deadline = time.monotonic() + wait_s
    pause = 0.005
    while True:
        taken, left_ms = take(user_id, owner, lease_ms)
        if taken:
            break
        if time.monotonic() >= deadline:
            raise BackendUnavailable(f"another writer has held this user's write lease for over {wait_s:.0f} s; "
                                     "try again")
        time.sleep(min(pause, max(0.001, left_ms / 1000)))
        pause = min(pause * 2, 0.2)
    stop = threading.Event()

    def keep() -> None:
        while not stop.wait(lease_ms / 3000):
            try:
                renew(user_id, owner, lease_ms)
            except BackendUnavailable:
                pass  # the store is away: the work the lease guards fails too, and the lease runs out

    keeper = threading.Thread(target=keep, name="write-lease", daemon=True)
    keeper.start()
    try:
        yield
    finally:
        stop.set()
        keeper.join()
        try:
            release(user_id, owner)
        except BackendUnavailable:
            pass  # it runs out on its own
