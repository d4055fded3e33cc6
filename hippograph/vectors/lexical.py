"""Sparse lexical vectors for BM25 search, computed on the client by qdrant-edge's `Bm25`.

`Bm25.embed_document` gives each distinct term (Word tokenizer, lowercased, English stopwords
removed, Snowball English stemmer, terms hashed to u32 indices) the BM25 term-frequency part of the
score, `tf * (k + 1) / (tf + k * (1 - b + b * doc_len / avg_len))`, where `doc_len` counts the terms
left after stopword removal. `embed_query` gives every distinct query term the weight 1.0. The IDF
factor is not in either: the store applies it (sparse vector config with the IDF modifier), so a
query scores `sum(idf(t) * tf_part(t, doc))` over shared terms - plain BM25 - with document
frequencies that stay current as points come and go.

`avg_len`, `k` and `b` are baked into the stored vectors: changing them needs a re-index.

The encoder keeps nothing of the texts it encodes (no vocabulary, no document statistics): what a
delete must remove lives in the vector store, which drops it from its statistics and, once
compacted, from its files.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from hippograph.errors import ConfigurationError
from hippograph.vectors.base import SparseVec

#: Expected terms per document after stopword removal. Memory items (messages, facts, relations)
#: are short; Qdrant's default of 256 would all but switch off length normalisation for them.
DEFAULT_AVG_LEN = 32.0


class SparseEncoder:
    """BM25 document/query term weights (English), with IDF left to the engine."""

    def __init__(
        self,
        *,
        k: float = 1.2,
        b: float = 0.75,
        avg_len: float = DEFAULT_AVG_LEN,
        language: str = "english",
        ascii_folding: bool = True,
    ) -> None:
        self.k = k
        self.b = b
        self.avg_len = avg_len
        self.language = language
        self.ascii_folding = ascii_folding
        self.name = f"bm25-{language}-k{k:g}-b{b:g}-avg{avg_len:g}"
        self._model: Any = None
        self._lock = threading.Lock()

    def _bm25(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    from qdrant_edge import Bm25, Bm25Config

                    try:
                        self._model = Bm25(
                            Bm25Config(
                                k=self.k,
                                b=self.b,
                                avg_len=self.avg_len,
                                language=self.language,
                                ascii_folding=self.ascii_folding,
                            )
                        )
                    except Exception as exc:  # ValueError, or the binding's plain Exception
                        raise ConfigurationError(f"invalid BM25 settings: {exc}") from exc
        return self._model

    def encode_documents(self, texts: Sequence[str]) -> list[SparseVec]:
        """Term weights of texts to index."""
        model = self._bm25()
        return [_to_sparse(model.embed_document(text)) for text in texts]

    def encode_document(self, text: str) -> SparseVec:
        return self.encode_documents([text])[0]

    def encode_query(self, text: str) -> SparseVec:
        """Query terms, each weighted 1.0; empty when the text has only stopwords or punctuation."""
        return _to_sparse(self._bm25().embed_query(text))


def _to_sparse(vector: Any) -> SparseVec:
    return SparseVec(indices=list(vector.indices), values=[float(v) for v in vector.values])
