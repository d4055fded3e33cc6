"""Writes on a full disk: refused with a clear error instead of killing the process.

Qdrant Edge keeps its data in memory-mapped files that it creates sparse: 32 MiB WAL segments (the
next one made ahead of need), 32 MiB vector chunks, payload and index pages, all holes on disk until
written. A store into such a page when the disk is full is no error Python can catch but a SIGBUS that
kills the server mid-request. So every write path asks the guard first: when a filesystem holding the
data has less than `min_free_bytes` free (HIPPOGRAPH_MIN_FREE_BYTES), the write is refused with
`InsufficientStorage` (HTTP 507) before anything is written; reads go on, and the first write after
space is freed goes through, with no restart. One statvfs per store path: microseconds.

The reserve must cover what writes can take between two checks. Measured on the embedded stores: a
fresh store takes 0.1 MB (ext4) to 10 MB (tmpfs, which fills the index flag files at once); a short
message 30 to 200 KB (SQLite WAL, Qdrant WAL, vector chunk and payload pages); a request of 5 x 99,000
characters 2 MB, about four times its text. A full request (HIPPOGRAPH_MAX_REQUEST_BYTES, 5 MB) thus
needs some 20 MB; the 64 MiB default leaves room for a few of them at once. Optimising the vector index
(`hippograph optimize`) rewrites the segments and needs about their size on top (`check(need=...)`).

The reserve is checked when a request starts, but more writes to the memory-mapped store follow
that no request starts: a write acknowledged with "wait": false is extracted and indexed afterwards by
the background threads, the sweep expires sessions and compacts, session summaries roll forward, the
start-up repairs re-index. On a disk that was filled meanwhile (by the server down to the reserve, or
by another process to the last byte) one such upsert killed the server with SIGBUS. So the Qdrant
Edge store itself asks `room` right before each change of its files, under its lock (its changes are
one at a time): a quarter of the reserve (`floor`) plus what the change can take must be free, else it
raises the same InsufficientStorage, and the work that wanted it stays pending for the sweep, which
retries once the reserve is free again. A change takes a few pages of each file it touches (measured
on tmpfs: 4 to 8 KiB per one-point upsert, 0.3 MiB at most for 64 points, also where a new 32 MiB
vector chunk or WAL segment begins, as those are created sparse), so the floor (16 MiB by default)
covers it with room to spare, and also what SQLite writes meanwhile, which fails cleanly anyway.
One statvfs: microseconds, nothing cached, so a freed disk is seen at once.

What still fails (another process filled the disk between the check and the write) arrives as
SQLITE_FULL from SQLite or ENOSPC from the OS; `disk_full` turns it into the same error. The stores
roll such a write back, so nothing acknowledged is lost. Only a store into a memory-mapped page has no
error to return: another process taking the floor whole within the milliseconds between `room` and the
change is the one way left to kill the server with a full disk.

Opening writes too: a new store is created only with the reserve free. On a memory-backed filesystem
(tmpfs) loading a shard populates its cached files (vector chunks, payload index pages), which
allocates every hole in them at once (measured: 52 MB for a store of 50 points, 18 MB more after an
optimize, nothing on a load after that); a disk (ext4) allocates nothing there. Replaying the WAL of
a store not flushed before its process died writes the points' payloads and lexical vectors besides
(2 MiB for 5,000 points). `before_open` counts those holes, adds the floor for the replay, and on
tmpfs refuses to open when they do not fit rather than letting the load die. A restart on a nearly
full disk otherwise opens: the start-up repairs (which write) wait for space, and reads are served
meanwhile.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from hippograph.errors import InsufficientStorage

log = logging.getLogger("hippograph.storage")

DEFAULT_MIN_FREE_BYTES = 64 * 2**20
SETTING = "HIPPOGRAPH_MIN_FREE_BYTES"
SQLITE_FULL = 13
# Qdrant Edge's folders that a load does not populate: the WAL (written in order), the payload (Cold by
# default) and the sparse vectors. Measured on tmpfs, the holes of everything else match what a load
# allocates (49.9 MiB counted for 49.8 populated; 22.8 for 22.8; 18.1 for 18.0 after an optimize). A
# folder Qdrant adds or renames counts in full: the estimate can only err on the safe side.
NOT_POPULATED = ("wal", "payload_storage", "vector_storage-lexical")
MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "shm", "devtmpfs"})
FULL_MESSAGES = ("database or disk is full", "no space left on device", "os error 28", "disk quota exceeded")
ADVICE = "free space on that disk; writes resume by themselves (no restart), reads go on meanwhile"


def mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged writer may still use on the filesystem holding `path` (or, if it does not
    exist yet, its nearest existing parent): what `df` shows as available."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _sizes(folder: Path, skip: Sequence[str] = ()) -> tuple[int, int]:
    """(allocated bytes, unallocated bytes) of the files under `folder`, leaving out folders named in
    `skip`; the unallocated are what the files claim beyond what they hold on disk (sparse regions)."""
    used = unused = 0
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in skip]
        for name in files:
            try:
                st = os.stat(os.path.join(root, name))
            except OSError:
                continue  # replaced while we looked
            used += st.st_blocks * 512
            unused += max(0, st.st_size - st.st_blocks * 512)
    return used, unused


def allocated_bytes(folder: Path, names: Sequence[str]) -> int:
    """What the files under the folders named `names` (at any depth under `folder`) hold on disk."""
    total = 0
    for root, dirs, _ in os.walk(folder):
        for name in [d for d in dirs if d in names]:
            total += _sizes(Path(root) / name)[0]
        dirs[:] = [d for d in dirs if d not in names]
    return total


def unallocated_bytes(folder: Path) -> int:
    """The holes of the files under the vector store `folder` that loading it fills on a memory-backed
    disk (all but NOT_POPULATED's)."""
    return _sizes(folder, NOT_POPULATED)[1]


def memory_backed(path: Path) -> bool:
    """Whether `path` lives on tmpfs or a like filesystem (Linux; False where /proc cannot tell)."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return False
    target = str(Path(path).resolve())
    best, kind = "", ""
    for line in mounts:
        parts = line.split()
        if len(parts) < 3:
            continue
        point = parts[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, parts[2]
    return kind in MEMORY_FILESYSTEMS


def _is_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    if isinstance(exc, sqlite3.Error) and getattr(exc, "sqlite_errorcode", None) == SQLITE_FULL:
        return True
    text = str(exc).lower()
    return any(m in text for m in FULL_MESSAGES)


def disk_full(exc: BaseException, path: Path) -> InsufficientStorage | None:
    """The domain error for a store's native "disk full" error, or None for any other error."""
    if not _is_full(exc):
        return None
    return InsufficientStorage(f"the disk holding {path} ran full during a write ({type(exc).__name__}: {exc}); "
                               "the write was not acknowledged, nothing acknowledged before was lost, and what "
                               f"it left half done is finished once space returns; {ADVICE}")


class StorageGuard:
    """Checks, before each write, that the filesystems holding `stores` keep `min_free_bytes` free.

    `stores` are the embedded stores' files or folders (none for servers such as Neo4j or Qdrant:
    the guard then allows everything); `mapped` is the one kept in memory-mapped files (Qdrant Edge).
    """

    def __init__(self, stores: Sequence[Path] = (), min_free_bytes: int = DEFAULT_MIN_FREE_BYTES,
                 mapped: Path | None = None) -> None:
        self.stores = [Path(p) for p in stores]
        self.min_free_bytes = min_free_bytes
        self.mapped = Path(mapped) if mapped is not None else None
        self._short = False  # the last look found too little space (a change is logged once)
        self._lock = threading.Lock()

    def _lowest(self) -> tuple[Path, int] | None:
        found = [(p, free_bytes(p)) for p in self.stores]
        return min(found, key=lambda x: x[1]) if found else None

    def shortage(self, need: int = 0) -> str | None:
        """Why writes must wait now, or None when there is room for them (and `need` bytes more)."""
        found = self._lowest()
        if found is None:
            return None
        path, free = found
        if free >= self.min_free_bytes + need:
            self._note(False, f"the disk holding {path} has {mib(free)} free again: writes resume")
            return None
        wanted = f"the {mib(self.min_free_bytes)} kept in reserve ({SETTING})"
        if need:
            wanted += f" plus the {mib(need)} this needs"
        return f"the disk holding {path} has {mib(free)} free, less than {wanted} so that no write dies half-way"

    def _note(self, short: bool, message: str) -> None:
        with self._lock:
            changed, self._short = self._short != short, short
        if changed:
            (log.warning if short else log.info)("%s", message)

    @property
    def floor(self) -> int:
        """Free space the memory-mapped store keeps for its own changes: a quarter of the reserve.
        Writes already accepted, and the background work that finishes acknowledged writes, may use
        the reserve down to here; below it nothing touches the mapped files."""
        return self.min_free_bytes // 4

    def room(self, action: str, need: int = 0) -> None:
        """Raise InsufficientStorage unless the memory-mapped store's disk keeps `floor` free after a
        change of `need` bytes: the last check before a store into its files (see the module doc)."""
        if self.mapped is None or not self.min_free_bytes:
            return
        free = free_bytes(self.mapped)
        if free >= self.floor + need:
            return
        wanted = f"the {mib(self.floor)} the vector index keeps for its own files (a quarter of {SETTING})"
        if need:
            wanted += f" plus the {mib(need)} this needs"
        why = f"the disk holding {self.mapped} has {mib(free)} free, less than {wanted}"
        raise InsufficientStorage(f"{action} refused: {why}; nothing was written to the vector index, and what "
                                  f"waits for it stays pending until space returns; {ADVICE}")

    def check(self, action: str, need: int = 0) -> None:
        """Raise InsufficientStorage (HTTP 507) when the disk cannot take a write now."""
        if (why := self.shortage(need)) is not None:
            self._note(True, f"writes refused with 507: {why}; {ADVICE}")
            raise InsufficientStorage(f"{action} refused: {why}; nothing was written; {ADVICE}")

    def allows(self, action: str) -> bool:
        """For background work that can wait: False (logged once until space returns) when the disk
        cannot take a write now."""
        if (why := self.shortage()) is None:
            return True
        self._note(True, f"{action} deferred, writes refused with 507: {why}; {ADVICE}")
        return False

    def before_open(self) -> None:
        """Refuse to open when opening itself would write more than the disk holds: creating a store
        needs the reserve; loading a shard from tmpfs needs room for the holes of its files."""
        if any(not p.exists() for p in self.stores) and (why := self.shortage()) is not None:
            raise InsufficientStorage(f"creating the stores refused: {why}; free space there and start again")
        if self.mapped is None or not self.mapped.exists() or not memory_backed(self.mapped):
            return
        need, free = unallocated_bytes(self.mapped), free_bytes(self.mapped)
        if free < need + max(self.floor, 2**20):  # the floor: what replaying the WAL writes besides
            raise InsufficientStorage(
                f"opening the vector store {self.mapped} refused: on this memory-backed filesystem loading it "
                f"takes up to {mib(need)} (the unwritten parts of its files), and {mib(free)} is free; "
                "free space there and start again")

    def mapped_bytes(self) -> int:
        """What the memory-mapped store holds on disk (an optimize rewrites about that much)."""
        return _sizes(self.mapped, ("wal",))[0] if self.mapped is not None and self.mapped.exists() else 0

    def status(self) -> dict:
        """For /readyz: free space, the reserve, and whether writes are taken."""
        found = self._lowest()
        out: dict = {"min_free_bytes": self.min_free_bytes,
                     "free_bytes": found[1] if found else None, "writable": True}
        if (why := self.shortage()) is not None:
            out.update(writable=False, warning=f"reads only, writes refused with 507: {why}; {ADVICE}")
        return out
