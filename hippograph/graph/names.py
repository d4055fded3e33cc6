"""Entity names compared by meaning: "Acme" and "Acme Corporation", "U.S." and "United States".

Names are embedded once (a bounded cache by name text, shared by every user: a name's vector depends on
nothing else) and a user's names are stacked into one matrix, kept while the same names come back. On
it, a query's phrases are linked to the names they mean, and near-synonym names are tied by edges of the
PageRank graph (the synonym edges of HippoRAG 2). Thresholds are cosines on MiniLM's scale: another
embedder's cosines are read on it through its `cosine_zero`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hippograph.vectors.base import Embedder, cosine_zero

#: name vectors kept (a 384-float vector each: about 150 MB at the bound)
NAME_CACHE = 100_000
#: users' name matrices and synonym edge lists kept
MATRIX_CACHE = 16
#: a name is tied to at most this many near-synonyms (its closest): a bound, not a tuned value
SYNONYMS_PER_NAME = 10
_BLOCK = 1024  # rows of the all-pairs similarity computed at once


@dataclass(frozen=True)
class Synonyms:
    """Synonym edges asked of the PageRank graph: names of the graph's entities closer than `threshold`."""

    vectors: NameVectors
    threshold: float


class NameVectors:
    def __init__(self, embedder: Embedder, capacity: int = NAME_CACHE) -> None:
        self.embedder = embedder
        self.capacity = capacity
        self._zero = cosine_zero(embedder)
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._matrices: OrderedDict[tuple, tuple[list[str], np.ndarray]] = OrderedDict()
        self._edges: OrderedDict[tuple, list[tuple[str, str, float]]] = OrderedDict()
        self._lock = threading.Lock()

    def scale(self, cosines: np.ndarray) -> np.ndarray:
        """Cosines read on MiniLM's scale (this embedder's "unrelated" is 0, identical stays 1)."""
        return (cosines - self._zero) / (1.0 - self._zero)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of these texts, one row each; names seen before are not embedded again."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        made = self.embedder.embed(missing) if missing else []
        with self._lock:
            for text, vector in zip(missing, made, strict=True):
                self._vectors[text] = np.asarray(vector, dtype=np.float32)
            rows = []
            for text in texts:
                self._vectors.move_to_end(text)
                rows.append(self._vectors[text])
            while len(self._vectors) > self.capacity:
                self._vectors.popitem(last=False)
        return np.vstack(rows) if rows else np.zeros((0, self.embedder.dim), dtype=np.float32)

    def matrix(self, names: Mapping[str, str]) -> tuple[list[str], np.ndarray]:
        """The entity ids of `names` (id -> name) and their names' vectors, one row each; kept while
        the same names are asked again."""
        key = tuple(names.items())
        with self._lock:
            got = self._matrices.get(key)
            if got is not None:
                self._matrices.move_to_end(key)
                return got
        ids = list(names)
        made = (ids, self.embed([names[i] for i in ids]))
        with self._lock:
            self._matrices[key] = made
            while len(self._matrices) > MATRIX_CACHE:
                self._matrices.popitem(last=False)
        return made

    def link(self, phrases: Sequence[str], names: Mapping[str, str], threshold: float) -> list[str]:
        """For each phrase, the entity whose name means it most closely, if at least `threshold`
        close; entity ids in the phrases' order, each once."""
        ids, names_matrix = self.matrix(names)
        if not phrases or not ids:
            return []
        sims = self.scale(self.embed(list(phrases)) @ names_matrix.T)
        best = sims.argmax(axis=1)
        return list(dict.fromkeys(ids[j] for i, j in enumerate(best) if sims[i, j] >= threshold))

    def synonym_edges(self, names: Mapping[str, str], threshold: float) -> list[tuple[str, str, float]]:
        """Pairs of entities whose names are at least `threshold` close, with their similarity: each
        entity with its `SYNONYMS_PER_NAME` closest such names, each pair once."""
        key = (threshold, tuple(names.items()))
        with self._lock:
            got = self._edges.get(key)
            if got is not None:
                self._edges.move_to_end(key)
                return got
        ids, m = self.matrix(names)
        k = min(SYNONYMS_PER_NAME, len(ids) - 1)
        edges: dict[tuple[int, int], float] = {}
        for start in range(0, len(ids) if k > 0 else 0, _BLOCK):
            sims = self.scale(m[start:start + _BLOCK] @ m.T)
            rows = np.arange(sims.shape[0])
            sims[rows, rows + start] = -np.inf  # not its own synonym
            top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
            for row, col in zip(np.repeat(rows, k), top.ravel(), strict=True):
                if sims[row, col] >= threshold:
                    a, b = sorted((start + int(row), int(col)))
                    edges[(a, b)] = float(sims[row, col])
        made = [(ids[a], ids[b], sim) for (a, b), sim in sorted(edges.items())]
        with self._lock:
            self._edges[key] = made
            while len(self._edges) > MATRIX_CACHE:
                self._edges.popitem(last=False)
        return made
