"""The index over the system of record: embeds records (dense + lexical) and queries the vector store."""

from __future__ import annotations

from collections.abc import Sequence

from hippograph.models import VectorHit, VectorRecord
from hippograph.vectors.base import Embedder, VectorFilter, VectorStore, embed_query
from hippograph.vectors.lexical import SparseEncoder


class Indexer:
    def __init__(self, store: VectorStore, embedder: Embedder, sparse: SparseEncoder) -> None:
        self.store = store
        self.embedder = embedder
        self.sparse = sparse

    def index(self, records: Sequence[VectorRecord]) -> None:
        records = list({r.id: r for r in records}.values())  # one point per id: the last version wins
        if not records:
            return
        texts = [r.text for r in records]
        unique = list(dict.fromkeys(texts))  # relations often share their sentence: embed it once
        vectors = dict(zip(unique, self.embedder.embed(unique), strict=True))
        lexical = [f"{r.text} {r.lexical_extra}" if r.lexical_extra else r.text for r in records]
        self.store.upsert(records, [vectors[t] for t in texts], self.sparse.encode_documents(lexical))

    def search(
        self, flt: VectorFilter, query: str, limit: int, mode: str = "hybrid",
        dense_vector: Sequence[float] | None = None,
    ) -> list[VectorHit]:
        """mode: hybrid (dense + lexical fused by reciprocal rank), dense or lexical."""
        dense = None
        if mode in ("hybrid", "dense"):
            dense = dense_vector if dense_vector is not None else embed_query(self.embedder, query)
        sparse = self.sparse.encode_query(query) if mode in ("hybrid", "lexical") else None
        if sparse is not None and not sparse.indices:
            sparse = None
            if dense is None:
                return []
        return self.store.query(flt, limit, dense=dense, sparse=sparse)
