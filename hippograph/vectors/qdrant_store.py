"""The vector store over a Qdrant server (or qdrant-client's local mode, for tests) via qdrant-client.

Same collection layout and payload as `EdgeVectorStore`: a named dense vector "dense" (cosine), a
sparse vector "lexical" whose IDF the engine applies, keyword indexes on user_id (tenant), kind and
session_id and a float index on ts. Hybrid queries fuse both prefetches with RRF inside the engine.
Writes wait until the server has applied them (`wait=True`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from hippograph.errors import BackendUnavailable, ConfigurationError, InvalidInput
from hippograph.models import MemoryKind, VectorHit, VectorRecord, point_id
from hippograph.vectors.base import SIZE_HINT, SparseVec, VectorFilter
from hippograph.vectors.payload import (
    DENSE,
    LEXICAL,
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

_PAYLOAD_INDEXES: dict[str, Any] = {
    "user_id": models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
    "kind": models.PayloadSchemaType.KEYWORD,
    "session_id": models.PayloadSchemaType.KEYWORD,
    TIME_FIELD: models.PayloadSchemaType.FLOAT,
    SPEAKER_FIELD: models.PayloadSchemaType.KEYWORD,
}


def _qdrant_filter(flt: VectorFilter) -> models.Filter:
    """The same conditions as the edge store's filter (since and until inclusive)."""
    must: list[Any] = [models.FieldCondition(key="user_id", match=models.MatchValue(value=flt.user_id))]
    must_not: list[Any] = []
    if flt.kinds is not None:
        kinds = [MemoryKind(k).value for k in flt.kinds]
        must.append(models.FieldCondition(key="kind", match=models.MatchAny(any=kinds)))
    if flt.session_id is not None:
        must.append(models.FieldCondition(key="session_id", match=models.MatchValue(value=flt.session_id)))
    if flt.exclude_session_id is not None:
        must_not.append(
            models.FieldCondition(key="session_id", match=models.MatchValue(value=flt.exclude_session_id))
        )
    if flt.since is not None or flt.until is not None:
        since = epoch(flt.since) if flt.since is not None else None
        until = epoch(flt.until) if flt.until is not None else None
        must.append(models.FieldCondition(key=TIME_FIELD, range=models.Range(gte=since, lte=until)))
    if flt.ids is not None:
        must.append(models.HasIdCondition(has_id=[point_id(i) for i in dict.fromkeys(flt.ids)]))
    for key, value in flt.extra.items():
        must.append(models.FieldCondition(key=f"extra.{key}", match=models.MatchValue(value=value)))
    return models.Filter(must=must, must_not=must_not or None)


def _only_user(user_id: str) -> models.Filter:
    return models.Filter(must=[models.FieldCondition(key="user_id", match=models.MatchValue(value=user_id))])


@contextlib.contextmanager
def _native_errors(what: str) -> Iterator[None]:
    """Map qdrant-client's errors into hippograph.errors."""
    try:
        yield
    except UnexpectedResponse as exc:
        if exc.status_code in (401, 403):
            raise ConfigurationError(f"{what}: Qdrant refused the credentials ({exc.status_code})") from exc
        if exc.status_code in (400, 422):
            raise InvalidInput(f"{what}: {exc}") from exc
        raise BackendUnavailable(f"{what}: {exc}") from exc
    except (ResponseHandlingException, ConnectionError, TimeoutError, OSError) as exc:
        raise BackendUnavailable(f"{what}: Qdrant unreachable: {exc}") from exc
    except Exception as exc:
        # grpc.RpcError, and local mode's RuntimeError for a folder locked by another process.
        if type(exc).__module__.startswith(("grpc", "httpx", "httpcore")) or isinstance(exc, RuntimeError):
            raise BackendUnavailable(f"{what}: {type(exc).__name__}: {exc}") from exc
        raise


class QdrantVectorStore:
    """`VectorStore` over one Qdrant collection. `client_kwargs` go to `QdrantClient` as they are:
    url/api_key/timeout for a server, or location=":memory:" / path=... for the local mode (which
    is not thread-safe, so it runs under a lock)."""

    def __init__(self, client_kwargs: dict[str, Any], collection: str, dim: int, embedder: str | None = None) -> None:
        """`embedder` as in `EdgeVectorStore`: recorded with each point and checked at `open()`."""
        self.client_kwargs = dict(client_kwargs)
        self.collection = collection
        self.dim = dim
        self.embedder = embedder
        self.local = self.client_kwargs.get("location") == ":memory:" or "path" in self.client_kwargs
        self._client: QdrantClient | None = None
        self._lock: contextlib.AbstractContextManager[Any] = (
            threading.RLock() if self.local else contextlib.nullcontext()
        )

    # --- lifecycle -----------------------------------------------------------------------------

    def open(self) -> None:
        if self._client is not None:
            return
        with self._lock, _native_errors(f"cannot open Qdrant collection {self.collection!r}"):
            client = QdrantClient(**self.client_kwargs)
            try:
                self._ensure_collection(client)
            except BaseException:
                client.close()
                raise
            self._client = client

    def _ensure_collection(self, client: QdrantClient) -> None:
        if not client.collection_exists(self.collection):
            try:
                client.create_collection(
                    self.collection,
                    vectors_config={
                        DENSE: models.VectorParams(size=self.dim, distance=models.Distance.COSINE)
                    },
                    sparse_vectors_config={LEXICAL: models.SparseVectorParams(modifier=models.Modifier.IDF)},
                )
            except UnexpectedResponse as exc:
                if exc.status_code != 409:  # 409: created meanwhile by another process
                    raise
        info = client.get_collection(self.collection)
        vectors = info.config.params.vectors
        if not isinstance(vectors, dict) or DENSE not in vectors:
            raise ConfigurationError(f"collection {self.collection!r} has no {DENSE!r} vector")
        if vectors[DENSE].size != self.dim:
            raise ConfigurationError(
                f"collection {self.collection!r} holds {vectors[DENSE].size}-dimensional vectors, "
                f"the embedder gives {self.dim}: {SIZE_HINT}"
            )
        sparse = info.config.params.sparse_vectors or {}
        if LEXICAL not in sparse or sparse[LEXICAL].modifier != models.Modifier.IDF:
            raise ConfigurationError(
                f"collection {self.collection!r} has no {LEXICAL!r} sparse vector with IDF"
            )
        if self.embedder is not None:
            points, _ = client.scroll(self.collection, limit=1, with_payload=True, with_vectors=False)
            check_embedder(f"collection {self.collection!r}", (points[0].payload or {}) if points else None,
                           self.embedder)
        if self.local:
            return  # payload indexes do nothing in local mode (and warn)
        present = set(info.payload_schema or {})
        for field_name, schema in _PAYLOAD_INDEXES.items():
            if field_name not in present:
                client.create_payload_index(self.collection, field_name, field_schema=schema, wait=True)

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
            if client is not None:
                client.close()

    @contextlib.contextmanager
    def _use(self, what: str) -> Iterator[QdrantClient]:
        with self._lock, _native_errors(what):
            if self._client is None:
                raise BackendUnavailable(f"Qdrant collection {self.collection!r} is not open")
            yield self._client

    # --- VectorStore ---------------------------------------------------------------------------

    def maintain(self) -> bool:
        """Nothing to do: a Qdrant server (and the local mode) optimizes on its own."""
        return False

    def compact(self) -> None:
        """Nothing to do from here: a Qdrant server vacuums deleted points and rotates its WAL itself."""

    def upsert(
        self, records: Sequence[VectorRecord], dense: Sequence[Sequence[float]], sparse: Sequence[SparseVec]
    ) -> None:
        check_batch(records, dense, sparse, self.dim)
        if not records:
            return
        points = [
            models.PointStruct(
                id=point_id(record.id),
                vector={
                    DENSE: list(vector),
                    LEXICAL: models.SparseVector(indices=list(lexical.indices), values=list(lexical.values)),
                },
                payload=record_payload(record, self.embedder),
            )
            for record, vector, lexical in zip(records, dense, sparse, strict=True)
        ]
        with self._use("vector store write failed") as client:
            client.upsert(self.collection, points=points, wait=True)

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
        condition = _qdrant_filter(flt)
        lexical = None
        if sparse is not None:
            lexical = models.SparseVector(indices=list(sparse.indices), values=list(sparse.values))
        request: dict[str, Any] = {"query_filter": condition, "limit": n, "with_payload": True}
        if dense is not None and lexical is not None:
            request["prefetch"] = [
                models.Prefetch(query=list(dense), using=DENSE, filter=condition, limit=depth),
                models.Prefetch(query=lexical, using=LEXICAL, filter=condition, limit=depth),
            ]
            request["query"] = models.FusionQuery(fusion=models.Fusion.RRF)
        elif dense is not None:
            request.update(query=list(dense), using=DENSE)
        else:
            assert lexical is not None
            if not lexical.indices:
                return []
            request.update(query=lexical, using=LEXICAL)
        with self._use("vector store query failed") as client:
            response = client.query_points(self.collection, **request)
        return [hit_from_payload(p.payload or {}, p.score) for p in response.points]

    def _retrieve(self, ids: Sequence[str], with_payload: bool, with_vector: bool = False) -> list[models.Record]:
        if not ids:
            return []
        with self._use("vector store read failed") as client:
            return client.retrieve(
                self.collection,
                ids=[point_id(i) for i in dict.fromkeys(ids)],
                with_payload=with_payload,
                with_vectors=[DENSE] if with_vector else False,
            )

    def dense_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        by_point = {point_id(i): i for i in ids}
        return {by_point[str(r.id)]: list(r.vector[DENSE]) for r in self._retrieve(ids, False, True)  # type: ignore[arg-type]
                if isinstance(r.vector, dict) and DENSE in r.vector}

    def get(self, ids: Sequence[str]) -> list[VectorHit]:
        return [hit_from_payload(r.payload or {}, 0.0) for r in self._retrieve(ids, True)]

    def has(self, ids: Sequence[str]) -> set[str]:
        by_point = {point_id(i): i for i in ids}
        return {by_point[str(r.id)] for r in self._retrieve(ids, False)}

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        selector = models.PointIdsList(points=[point_id(i) for i in dict.fromkeys(ids)])
        with self._use("vector store delete failed") as client:
            client.delete(self.collection, points_selector=selector, wait=True)

    def delete_user(self, user_id: str) -> None:
        selector = models.FilterSelector(filter=_only_user(user_id))
        with self._use("vector store delete failed") as client:
            client.delete(self.collection, points_selector=selector, wait=True)

    def count(self, user_id: str | None = None) -> int:
        condition = _only_user(user_id) if user_id is not None else None
        with self._use("vector store count failed") as client:
            return int(client.count(self.collection, count_filter=condition, exact=True).count)
