"""The embedded vector store: one Qdrant Edge shard in a local folder (qdrant-edge-py 0.9).

Durability: every write goes to the shard's write-ahead log before `update()` returns. The WAL is a
memory-mapped file, so an acknowledged write survives the death of the process (kill -9) - the
kernel still holds the page - and is replayed on the next `open()`. It survives a crash of the
machine only once flushed: `flush_writes=True` flushes after every write (a few ms each, measured in
bench/vector_stores.py); otherwise `maintain()` and `close()` flush. The graph store is the system
of record, so a lost tail after a power cut is re-indexed from it.

Indexing: writes land in a plain segment that is scanned exactly (with the payload indexes), so
queries are exact and correct with no `maintain()` ever. `maintain()` runs the optimizers, which build HNSW once a segment passes the indexing
threshold (Qdrant's default is 10 MB of vectors, about 6,500 points at 384 dims) and vacuum deleted
points. Beware: `EdgeShard.optimize()` holds the GIL while it works (seconds per 10k points), which
stalls every Python thread of the process; call `maintain()` when the server is idle.

IDF: Qdrant keeps a deleted (or replaced) point of a rebuilt segment in that segment's sparse
statistics until the optimizer vacuums it (20% deleted and 1000+ points by default), so BM25 scores
drift a little after deletes there. Deletes empty the lexical vector first, which keeps the
statistics exact while the points are still in the appendable segment.

Disk space: the shard's files are memory-mapped and created sparse (WAL segments of 32 MiB, the next
one made ahead; vector chunks of 32 MiB; payload and index pages), so a write into a hole on a full
disk is a SIGBUS, not an error. The service checks free space when a write starts; with a `guard`,
this store asks it again right before each change of its files (`StorageGuard.room`), whoever makes
the change (a request, the background extraction, the sweep, a summary, the start-up repairs), and
refuses with InsufficientStorage when the disk is too full for it. What Qdrant still reports as "no
space left" becomes InsufficientStorage too.

The payload layout is shared with `qdrant_store` (see `payload.py`).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from hippograph.errors import BackendUnavailable, ConfigurationError, InsufficientStorage
from hippograph.models import MemoryKind, VectorHit, VectorRecord, point_id
from hippograph.storage_guard import (
    StorageGuard,
    allocated_bytes,
    disk_full,
    memory_backed,
    unallocated_bytes,
)
from hippograph.vectors.base import SIZE_HINT, SparseVec, VectorFilter
from hippograph.vectors.payload import (
    DENSE,
    LEXICAL,
    RRF_K,
    SPEAKER_FIELD,
    TIME_FIELD,
    check_batch,
    check_embedder,
    check_query,
    epoch,
    hit_from_payload,
    matches_nothing,
    prefetch_limit,
    record_payload,
    settle_ties,
)

# What a change of the shard can take on disk, asked of the guard before it is made (`_room`). Measured
# on tmpfs: a one-point upsert takes 4 to 8 KiB, 64 points 0.3 MiB at most (a page or two of each of the
# some 40 files a change touches, the WAL and the segment each holding the point once), and nothing more
# where a new vector chunk or WAL segment begins (they are created sparse).
CHANGE = 256 * 2**10  # pages touched, whatever the points
POINT = 1024  # a point's payload keys, ids and index entries, besides its vector and text
# A new shard's own files: 11 MiB on tmpfs (its flag files are filled at once), 0.1 MiB on ext4.
NEW_SHARD = 16 * 2**20
# Where a point's payload and lexical vector live: folders a load does not fill, so what they hold on
# disk is what was written (see NOT_POPULATED in storage_guard).
WRITTEN = ("payload_storage", "vector_storage-lexical")

# --- the edge store ------------------------------------------------------------------------------


def _edge_filter(flt: VectorFilter) -> qe.Filter:
    """user_id, kinds, session_id, extra must match; since <= ts <= until (both inclusive);
    points of exclude_session_id (but not points without a session) are left out."""
    must: list[Any] = [qe.FieldCondition("user_id", match=qe.MatchValue(flt.user_id))]
    must_not: list[Any] = []
    if flt.kinds is not None:
        must.append(qe.FieldCondition("kind", match=qe.MatchAny([MemoryKind(k).value for k in flt.kinds])))
    if flt.session_id is not None:
        must.append(qe.FieldCondition("session_id", match=qe.MatchValue(flt.session_id)))
    if flt.exclude_session_id is not None:
        must_not.append(qe.FieldCondition("session_id", match=qe.MatchValue(flt.exclude_session_id)))
    if flt.since is not None or flt.until is not None:
        since = epoch(flt.since) if flt.since is not None else None
        until = epoch(flt.until) if flt.until is not None else None
        must.append(qe.FieldCondition(TIME_FIELD, range=qe.RangeFloat(gte=since, lte=until)))
    if flt.ids is not None:
        must.append(qe.HasIdCondition({point_id(i) for i in flt.ids}))
    for key, value in flt.extra.items():
        must.append(qe.FieldCondition(f"extra.{key}", match=qe.MatchValue(value)))
    return qe.Filter(must=must, must_not=must_not or None)


def _only_user(user_id: str) -> qe.Filter:
    return qe.Filter(must=[qe.FieldCondition("user_id", match=qe.MatchValue(user_id))])


def _native(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


class EdgeVectorStore:
    """`VectorStore` over one Qdrant Edge shard in `path`. Thread-safe (one lock)."""

    def __init__(
        self,
        path: Path,
        dim: int,
        *,
        flush_writes: bool = False,
        indexing_threshold_kb: int | None = None,
        search_threads: int | None = None,
        embedder: str | None = None,
        guard: StorageGuard | None = None,
    ) -> None:
        """`embedder` names the embedder of the vectors: each point records it, and `open()` refuses a
        store whose vectors another made (None: neither recorded nor checked). `guard` is asked for
        room before each change of the files (None: never; a store on a disk that cannot fill)."""
        self.path = Path(path)
        self.guard = guard
        self.dim = dim
        self.embedder = embedder
        self.flush_writes = flush_writes
        self.indexing_threshold_kb = indexing_threshold_kb
        self.search_threads = search_threads
        self._shard: qe.EdgeShard | None = None
        self._lock = threading.RLock()

    # --- lifecycle -----------------------------------------------------------------------------

    def _config(self) -> qe.EdgeConfig:
        optimizers = None
        if self.indexing_threshold_kb is not None:
            optimizers = qe.EdgeOptimizersConfig(indexing_threshold=self.indexing_threshold_kb)
        return qe.EdgeConfig(
            vectors={DENSE: qe.EdgeVectorParams(size=self.dim, distance=qe.Distance.Cosine)},
            sparse_vectors={LEXICAL: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            optimizers=optimizers,
            max_search_threads=self.search_threads,
            wal_enabled=True,
        )

    def _check_stored_size(self, config_file: Path) -> None:
        try:
            stored = json.loads(config_file.read_text())["vectors"][DENSE]["size"]
        except (OSError, ValueError, KeyError, TypeError):
            return  # unreadable or another layout: EdgeShard.load checks compatibility itself
        if stored != self.dim:
            raise ConfigurationError(
                f"vector store {self.path} holds {stored}-dimensional vectors, the embedder gives {self.dim}: "
                f"{SIZE_HINT}"
            )

    def open(self) -> None:
        with self._lock:
            if self._shard is not None:
                return
            try:
                self._finish_compaction()  # before the folder is made: a missing folder means a swap was cut short
                self.path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigurationError(f"cannot create vector store folder {self.path}: {exc}") from exc
            config_file = self.path / "edge_config.json"
            exists = config_file.exists()
            if exists:
                self._check_stored_size(config_file)
            try:
                if exists:
                    shard = qe.EdgeShard.load(str(self.path), self._config())
                else:
                    shard = qe.EdgeShard.create(str(self.path), self._config())
            except Exception as exc:
                message = str(exc)
                if "ncompatible" in message:
                    raise ConfigurationError(f"vector store {self.path}: {message}") from exc
                if "WAL" in message or "WouldBlock" in message:
                    raise BackendUnavailable(
                        f"vector store {self.path} is in use by another process: {message}"
                    ) from exc
                raise disk_full(exc, self.path) or BackendUnavailable(
                    f"cannot open vector store {self.path}: {_native(exc)}") from exc
            self._shard = shard
            try:
                self._ensure_indexes(shard)
            except Exception as exc:
                self.close()
                raise disk_full(exc, self.path) or BackendUnavailable(
                    f"cannot index payload in {self.path}: {_native(exc)}") from exc
            if exists and self.embedder is not None:
                try:
                    records, _ = shard.scroll(qe.ScrollRequest(limit=1, with_payload=True, with_vector=False))
                    check_embedder(f"vector store {self.path}", records[0].payload if records else None,
                                   self.embedder)
                except BaseException:
                    self.close()
                    raise

    @staticmethod
    def _ensure_indexes(shard: qe.EdgeShard) -> None:
        present = set(shard.info().payload_schema)
        wanted: dict[str, Any] = {
            "user_id": qe.KeywordIndexParams(is_tenant=True),
            "kind": qe.PayloadSchemaType.Keyword,
            "session_id": qe.PayloadSchemaType.Keyword,
            TIME_FIELD: qe.PayloadSchemaType.Float,
            SPEAKER_FIELD: qe.PayloadSchemaType.Keyword,
        }
        for field_name, schema in wanted.items():
            if field_name not in present:
                shard.update(qe.UpdateOperation.create_field_index(field_name, schema))

    def close(self) -> None:
        with self._lock:
            shard, self._shard = self._shard, None
            if shard is None:
                return
            try:
                self._room("flushing the vector index at close", CHANGE)
                shard.flush()
            except InsufficientStorage:
                raise
            except Exception as exc:  # what it did not flush, its WAL replays at the next open
                raise disk_full(exc, self.path) or BackendUnavailable(
                    f"vector store flush at close failed: {_native(exc)}") from exc
            finally:
                shard.close()

    def _open_shard(self) -> qe.EdgeShard:
        if self._shard is None:
            raise BackendUnavailable(f"vector store {self.path} is not open")
        return self._shard

    def _room(self, action: str, need: int) -> None:
        """Raise InsufficientStorage, before anything is written, when the disk cannot take a change of
        `need` bytes: a store into a hole of a mapped file on a full disk kills the process. Called under
        the lock, so the changes it allows come one at a time."""
        if self.guard is not None:
            self.guard.room(action, need)

    def _write(self, operation: qe.UpdateOperation, need: int = CHANGE) -> None:
        with self._lock:
            shard = self._open_shard()
            self._room("writing to the vector index", need)
            try:
                shard.update(operation)
                if self.flush_writes:
                    shard.flush()
            except Exception as exc:
                raise disk_full(exc, self.path) or BackendUnavailable(
                    f"vector store write failed: {_native(exc)}") from exc

    def _delete_points(self, point_ids: list[Any]) -> int:
        """Delete points, emptying their lexical vectors first: in the appendable segment (where all
        writes land) a deleted point's terms otherwise stay in the IDF statistics (document count
        and frequencies) until the segment is rebuilt. Returns how many of the points existed."""
        with self._lock:
            shard = self._open_shard()
            try:
                existing = [r.id for r in shard.retrieve(point_ids, False, False)]
                if existing:
                    self._room("deleting from the vector index", CHANGE + POINT * len(existing))
                    empty = qe.SparseVector([], [])
                    shard.update(
                        qe.UpdateOperation.update_vectors(
                            [qe.PointVectors(p, {LEXICAL: empty}) for p in existing]
                        )
                    )
                    shard.update(qe.UpdateOperation.delete_points(existing))
                    if self.flush_writes:
                        shard.flush()
            except InsufficientStorage:
                raise
            except Exception as exc:
                raise disk_full(exc, self.path) or BackendUnavailable(
                    f"vector store delete failed: {_native(exc)}") from exc
            return len(existing)

    def flush(self) -> None:
        with self._lock:
            shard = self._open_shard()
            self._room("flushing the vector index", CHANGE)
            shard.flush()

    def _live_bytes(self) -> int:
        """About what the live points take once written again: what the payload and lexical files hold
        on disk, and each point's dense vector and keys (files a load fills are no measure of them).
        It walks the shard's files (some 100 stats): for a compaction or an optimize, not every write."""
        return allocated_bytes(self.path / "segments", WRITTEN) + self.count() * (4 * self.dim + POINT)

    def _load_bytes(self) -> int:
        """What loading the shard takes on a memory-backed disk, where loading fills every hole of the
        files it caches (see storage_guard): a rewritten shard is loaded afresh."""
        return unallocated_bytes(self.path) if memory_backed(self.path) else 0

    def maintain(self) -> bool:
        """Flush, then run the optimizers (HNSW build, vacuum) until none has work. True when any
        segment changed. Holds the GIL throughout (see the module doc)."""
        with self._lock:
            shard = self._open_shard()
            # the optimizers write new segments beside the old ones, as a compaction does
            self._room("optimizing the vector index", NEW_SHARD + 2 * self._live_bytes() + self._load_bytes())
            try:
                shard.flush()
                return bool(shard.optimize())
            except Exception as exc:
                raise disk_full(exc, self.path) or BackendUnavailable(
                    f"vector store maintenance failed: {_native(exc)}") from exc

    # --- compaction: deleted points leave the files --------------------------------------------
    def _beside(self, suffix: str) -> Path:
        return self.path.with_name(f"{self.path.name}.{suffix}")

    def _finish_compaction(self) -> None:
        """Complete or undo a compaction a crash interrupted. The new copy is renamed into place only
        once it is complete and closed, so a copy found where the store should be is complete."""
        fresh, old = self._beside("compacting"), self._beside("old")
        if not self.path.exists() and fresh.exists():
            os.rename(fresh, self.path)
        elif not self.path.exists() and old.exists():
            os.rename(old, self.path)
        for leftover in (fresh, old):
            shutil.rmtree(leftover, ignore_errors=True)

    def compact(self) -> None:
        """Rewrite the shard with only its live points, so nothing deleted stays in any file.

        A deleted point stays in its segment's payload and vector files until the vacuum optimizer
        rebuilds the segment (only past 20% deleted and 1000 points), and every write stays in the WAL
        (32 MB segments, kept until full and acknowledged) whatever the optimizer does. Copying the live
        points into a new shard and swapping the folders removes both. The cost is one pass over the
        store: run it when something was deleted, not on every write."""
        with self._lock:
            shard = self._open_shard()
            fresh_path, old = self._beside("compacting"), self._beside("old")
            shutil.rmtree(fresh_path, ignore_errors=True)
            # the copy holds each live point twice (its WAL and its segment) beside the old shard, and is
            # then loaded (measured on tmpfs, 3,000 points: 27 MiB at most while copying, and 50 MiB more
            # after it when the old shard had not been loaded, as its holes are filled by the load)
            self._room("compacting the vector index", NEW_SHARD + 2 * self._live_bytes() + self._load_bytes())
            try:
                shard.flush()
                fresh = qe.EdgeShard.create(str(fresh_path), self._config())
                try:
                    self._ensure_indexes(fresh)
                    offset: Any = None
                    while True:
                        page = qe.ScrollRequest(offset=offset, limit=512, with_payload=True, with_vector=True)
                        records, offset = shard.scroll(page)
                        if records:
                            fresh.update(qe.UpdateOperation.upsert_points(
                                [qe.Point(r.id, r.vector, r.payload) for r in records]))  # type: ignore[arg-type]
                        if offset is None:
                            break
                    fresh.flush()
                finally:
                    fresh.close()
            except Exception as exc:
                shutil.rmtree(fresh_path, ignore_errors=True)
                raise BackendUnavailable(f"vector store compaction failed: {_native(exc)}") from exc
            self._shard = None
            try:
                shard.close()
                os.rename(self.path, old)
                os.rename(fresh_path, self.path)
                shutil.rmtree(old, ignore_errors=True)
            except OSError as exc:
                raise BackendUnavailable(f"vector store compaction failed: {exc}") from exc
            finally:
                self.open()  # the new shard, or (after a failed swap) whichever copy is complete

    # --- VectorStore ---------------------------------------------------------------------------

    def upsert(
        self, records: Sequence[VectorRecord], dense: Sequence[Sequence[float]], sparse: Sequence[SparseVec]
    ) -> None:
        check_batch(records, dense, sparse, self.dim)
        if not records:
            return
        points = [
            qe.Point(
                point_id(record.id),
                {DENSE: list(vector), LEXICAL: qe.SparseVector(list(lexical.indices), list(lexical.values))},
                record_payload(record, self.embedder),
            )
            for record, vector, lexical in zip(records, dense, sparse, strict=True)
        ]
        # each point once in the WAL and once in the segment
        need = CHANGE + 2 * sum(4 * self.dim + 8 * len(lexical.indices) + len(record.text.encode())
                                + len(record.lexical_extra.encode()) + POINT
                                for record, lexical in zip(records, sparse, strict=True))
        self._write(qe.UpdateOperation.upsert_points(points), need)

    def query(
        self,
        flt: VectorFilter,
        limit: int,
        dense: Sequence[float] | None = None,
        sparse: SparseVec | None = None,
        depth: int | None = None,
    ) -> list[VectorHit]:
        check_query(self.dim, dense, sparse)
        if limit <= 0 or matches_nothing(flt):
            return []
        if dense is None or sparse is None:
            return self._query(flt, limit, dense, sparse)
        return settle_ties(lambda n: self._query(flt, n, dense, sparse, depth or prefetch_limit(limit)), limit)

    def _query(self, flt: VectorFilter, n: int, dense: Sequence[float] | None,
               sparse: SparseVec | None, depth: int = 0) -> list[VectorHit]:
        """The best n hits; a hybrid query fuses the best `depth` of each vector."""
        condition = _edge_filter(flt)
        lexical = qe.SparseVector(list(sparse.indices), list(sparse.values)) if sparse is not None else None
        if dense is not None and lexical is not None:
            request = qe.QueryRequest(
                limit=n,
                prefetches=[
                    qe.Prefetch(
                        limit=depth, query=qe.Query.Nearest(list(dense), using=DENSE), filter=condition
                    ),
                    qe.Prefetch(
                        limit=depth, query=qe.Query.Nearest(lexical, using=LEXICAL), filter=condition
                    ),
                ],
                query=qe.Fusion.Rrf(k=RRF_K),  # type: ignore[arg-type]  # the stub misses Fusion.Rrf
                filter=condition,
                with_payload=True,
                with_vector=False,
            )
        else:
            if lexical is not None and not lexical.indices:
                return []
            vector: Any = list(dense) if dense is not None else lexical
            request = qe.QueryRequest(
                limit=n,
                query=qe.Query.Nearest(vector, using=DENSE if dense is not None else LEXICAL),
                filter=condition,
                with_payload=True,
                with_vector=False,
            )
        with self._lock:
            shard = self._open_shard()
            try:
                points = shard.query(request)
            except Exception as exc:
                raise BackendUnavailable(f"vector store query failed: {_native(exc)}") from exc
        return [hit_from_payload(p.payload or {}, p.score) for p in points]

    def _retrieve(self, ids: Sequence[str], with_payload: bool, with_vector: bool = False) -> list[Any]:
        if not ids:
            return []
        with self._lock:
            shard = self._open_shard()
            try:
                return shard.retrieve([point_id(i) for i in dict.fromkeys(ids)], with_payload, with_vector)
            except Exception as exc:
                raise BackendUnavailable(f"vector store read failed: {_native(exc)}") from exc

    def get(self, ids: Sequence[str]) -> list[VectorHit]:
        return [hit_from_payload(r.payload or {}, 0.0) for r in self._retrieve(ids, True)]

    def has(self, ids: Sequence[str]) -> set[str]:
        by_point = {point_id(i): i for i in ids}
        return {by_point[str(r.id)] for r in self._retrieve(ids, False)}

    def dense_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        by_point = {point_id(i): i for i in ids}
        return {by_point[str(r.id)]: list(r.vector[DENSE]) for r in self._retrieve(ids, False, True)
                if isinstance(r.vector, dict) and DENSE in r.vector}

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._delete_points([point_id(i) for i in dict.fromkeys(ids)])

    def delete_user(self, user_id: str) -> None:
        only_user = _only_user(user_id)
        page = qe.ScrollRequest(limit=1000, filter=only_user, with_payload=False, with_vector=False)
        with self._lock:
            for _ in range(self.count(user_id) // 1000 + 1):
                try:
                    records, _ = self._open_shard().scroll(page)
                except Exception as exc:
                    raise BackendUnavailable(f"vector store read failed: {_native(exc)}") from exc
                if not records:
                    break
                self._delete_points([r.id for r in records])
            self._write(qe.UpdateOperation.delete_points_by_filter(only_user))  # whatever is left

    def count(self, user_id: str | None = None) -> int:
        condition = _only_user(user_id) if user_id is not None else None
        with self._lock:
            shard = self._open_shard()
            try:
                return int(shard.count(qe.CountRequest(exact=True, filter=condition)))
            except Exception as exc:
                raise BackendUnavailable(f"vector store count failed: {_native(exc)}") from exc
