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

What still fails (another process filled the disk between the check and the write) arrives as
SQLITE_FULL from SQLite or ENOSPC from the OS; `disk_full` turns it into the same error. The stores
roll such a write back, so nothing acknowledged is lost.

Opening writes too: a new store is created only with the reserve free. On a memory-backed filesystem
(tmpfs) loading a shard populates its cached files (vector chunks, payload index pages), which
allocates every hole in them at once (measured: 52 MB for a store of 50 points, 18 MB more after an
optimize, nothing on a load after that); a disk (ext4) allocates nothing there. `before_open` counts
those holes and on tmpfs refuses to open when they do not fit rather than letting the load die. A
restart on a nearly full disk otherwise opens: the start-up repairs (which write) wait for space, and
reads are served meanwhile.
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
        need, free = _sizes(self.mapped, NOT_POPULATED)[1], free_bytes(self.mapped)
        if free < need + 2**20:
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
