"""The index over the system of record: embeds records (dense + lexical) and queries the vector store."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import TypeVar

from hippograph.models import VectorHit, VectorRecord
from hippograph.vectors.base import Embedder, SparseVec, VectorFilter, VectorStore, embed_query
from hippograph.vectors.lemmas import Lemmas
from hippograph.vectors.lexical import SparseEncoder

#: texts in each half before a helper embeds one of them: below it the hand-over costs more than it gains
SPREAD_FROM = 4
V = TypeVar("V")


def spread(embed: Callable[[Sequence[str]], Sequence[V]], texts: Sequence[str],
           helper: Executor | None = None) -> dict[str, V]:
    """Each distinct text's vector. With a `helper`, the second half is embedded there meanwhile (the model
    runs without the interpreter lock, so on another core), unless it has not started by the time the first
    half is done."""
    unique = list(dict.fromkeys(texts))
    half = (len(unique) + 1) // 2
    if helper is None or half < SPREAD_FROM:
        return dict(zip(unique, embed(unique), strict=True))
    other = helper.submit(embed, unique[half:])
    first = embed(unique[:half])
    second = embed(unique[half:]) if other.cancel() else other.result()
    return dict(zip(unique, [*first, *second], strict=True))


class Indexer:
    def __init__(self, store: VectorStore, embedder: Embedder, sparse: SparseEncoder,
                 lemmas: Lemmas | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.sparse = sparse
        self.lemmas = lemmas  # None: the lexical side searches words (stems) only

    def embed(self, texts: Sequence[str], helper: Executor | None = None) -> dict[str, list[float]]:
        """Each distinct text's vector (for `index(known=...)`, made ahead of the records), `spread` over
        the `helper`."""
        return spread(self.embedder.embed, texts, helper)

    def index(self, records: Sequence[VectorRecord], known: dict[str, list[float]] | None = None,
              helper: Executor | None = None) -> None:
        """Embed and upsert the records; `known`: vectors already made for some of their texts;
        `helper`: where half of the others may be embedded meanwhile (`embed`)."""
        records = list({r.id: r for r in records}.values())  # one point per id: the last version wins
        if not records:
            return
        texts = [r.text for r in records]
        vectors = dict(known or {})
        vectors |= self.embed([t for t in texts if t not in vectors], helper)  # relations often share their sentence
        lexical = [f"{r.text} {r.lexical_extra}" if r.lexical_extra else r.text for r in records]
        self.store.upsert(records, [vectors[t] for t in texts], self.sparse.encode_documents(lexical))

    def query_words(self, query: str) -> str:
        """What the lexical side searches for a query: its words and, with lemmas on, its lemmas that
        reach other terms than its words."""
        if self.lemmas is None:
            return query
        extra = self.lemmas.of_query(query)
        return f"{query} {extra}" if extra else query

    def search(
        self, flt: VectorFilter, query: str, limit: int, mode: str = "hybrid",
        dense_vector: Sequence[float] | None = None, sparse_vector: SparseVec | None = None,
        depth: int | None = None,
    ) -> list[VectorHit]:
        """mode: hybrid (dense + lexical fused by reciprocal rank), dense or lexical. `sparse_vector` is
        the lexical query when the caller made it (weighted terms), else it is encoded from the query.
        `depth`: the candidates each side of a hybrid search fuses (the store's default when None)."""
        dense = None
        if mode in ("hybrid", "dense"):
            dense = dense_vector if dense_vector is not None else embed_query(self.embedder, query)
        sparse = None
        if mode in ("hybrid", "lexical"):
            sparse = sparse_vector if sparse_vector is not None else self.sparse.encode_query(self.query_words(query))
        if sparse is not None and not sparse.indices:
            sparse = None
            if dense is None:
                return []
        return self.store.query(flt, limit, dense=dense, sparse=sparse, depth=depth)
