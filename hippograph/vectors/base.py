"""The vector-store and embedder protocols.

Every vector store holds one collection of points, each with a dense vector (from the embedder) and
a sparse lexical vector (BM25 term weights, IDF applied by the engine), and answers hybrid queries
fused by reciprocal rank inside the engine. Stores never embed: the caller passes vectors in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

from hippograph.models import MemoryKind, VectorHit, VectorRecord

#: what to do when the stored vectors and the embedder disagree in size
SIZE_HINT = ("configure the embedder the vectors were made with (HIPPOGRAPH_EMBEDDINGS__BACKEND, __MODEL, __DIM), "
             "or use another data dir (HIPPOGRAPH_DATA_DIR) or collection (HIPPOGRAPH_VECTORS__COLLECTION) "
             "and ingest again")


@dataclass(frozen=True)
class SparseVec:
    indices: list[int]
    values: list[float]


@dataclass(frozen=True)
class VectorFilter:
    """What a query may see. `user_id` is mandatory: every query is scoped to one user."""

    user_id: str
    kinds: Sequence[MemoryKind] | None = None
    session_id: str | None = None
    exclude_session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    ids: Sequence[str] | None = None
    extra: dict[str, str] = field(default_factory=dict)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length dense vectors."""

    name: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def embed_query(embedder: Embedder, text: str) -> list[float]:
    """A search's vector. An embedder trained to embed searches apart from what they search (e5's
    "query: " and "passage: ") has an `embed_query(text)`; any other embeds the search like a text."""
    own = getattr(embedder, "embed_query", None)
    return own(text) if own is not None else embedder.embed([text])[0]


def cosine_zero(embedder: Embedder) -> float:
    """The cosine that means "unrelated" for this embedder: 0 unless it says otherwise (e5's cosines
    crowd into 0.8-1). Fixed similarity thresholds, chosen with MiniLM, read cosines rescaled by it."""
    return float(getattr(embedder, "cosine_zero", 0.0))


@runtime_checkable
class VectorStore(Protocol):
    dim: int

    def open(self) -> None:
        """Create or open the collection and its payload indexes. Raises ConfigurationError when an
        existing collection's vector size differs from `dim`, BackendUnavailable when unreachable."""

    def close(self) -> None: ...

    def maintain(self) -> bool:
        """Build indexes and compact (may block for seconds: run it offline). True if anything changed."""

    def compact(self) -> None:
        """Make deleted points leave the store's files (segments and write-ahead log) where the store
        can; may take a pass over the whole store."""

    def upsert(
        self, records: Sequence[VectorRecord], dense: Sequence[Sequence[float]], sparse: Sequence[SparseVec]
    ) -> None:
        """Insert or replace points; durable when it returns."""

    def query(
        self,
        flt: VectorFilter,
        limit: int,
        dense: Sequence[float] | None = None,
        sparse: SparseVec | None = None,
        depth: int | None = None,
    ) -> list[VectorHit]:
        """Dense, sparse, or (both given) hybrid search fused by reciprocal rank, best first. `depth`: the
        candidates each side of a hybrid search contributes to the fusion (`payload.prefetch_limit`
        of the limit when None)."""

    def get(self, ids: Sequence[str]) -> list[VectorHit]:
        """Points by our ids (score 0), in no particular order; unknown ids are skipped."""

    def delete(self, ids: Sequence[str]) -> None: ...

    def delete_user(self, user_id: str) -> None: ...

    def count(self, user_id: str | None = None) -> int: ...

    def has(self, ids: Sequence[str]) -> set[str]:
        """Which of these ids are stored."""

    def dense_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored dense vectors of these ids (unknown ids are skipped)."""
