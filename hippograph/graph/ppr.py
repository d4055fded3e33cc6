"""Personalised PageRank over a user's entities and the messages/documents that mention them.

The graph is undirected: entity-entity edges are current relations, entity-episode edges are
mentions. Ranking spreads a seed's weight to what it is connected to, so a passage that mentions an
entity named in a question, or one that shares entities with the best vector hits, rises (the method
of HippoRAG). A scipy sparse matrix makes one ranking a few sparse products: milliseconds for
hundreds of thousands of nodes, where networkx takes seconds.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import sparse

from hippograph.graph.names import Synonyms

#: entity types that describe rather than identify: left out of the graph ranking
ATTRIBUTE_TYPES = ("Date", "Quantity", "Number", "Money", "Percent", "Time", "Ordinal", "Cardinal")


class PageRankGraph:
    def __init__(self, mentions: Sequence[tuple[str, str]], relations: Sequence[tuple[str, str]],
                 names: Mapping[str, str] | None = None) -> None:
        """mentions: (episode id, entity id); relations: (entity id, entity id); names: entity id ->
        name, of the entities synonym edges may tie.

        A mention edge weighs 1/(number of episodes mentioning the entity): an episode passes its rank
        mostly to its specific entities, not to the ones that half the corpus mentions."""
        self.episodes = {ep for ep, _ in mentions}
        mentions = list(dict.fromkeys(mentions))
        df: dict[str, int] = {}
        for _, ent in mentions:
            df[ent] = df.get(ent, 0) + 1
        self.nodes = list(dict.fromkeys(n for e in [*mentions, *relations] for n in e))
        self.index = {n: i for i, n in enumerate(self.nodes)}
        # by id, so that every store asks for the same synonyms in the same order
        self.names = {i: names[i] for i in sorted(names) if i in self.index} if names else {}
        weighted: dict[tuple[int, int], float] = {}
        for ep, ent in mentions:
            weighted[(self.index[ep], self.index[ent])] = 1.0 / df[ent]
        for a, b in relations:
            if a != b:
                weighted[(self.index[a], self.index[b])] = 1.0
        self._weighted = weighted
        self.transition, self.dangling = self._walk(weighted)
        self.is_episode = np.zeros(len(self.nodes), dtype=bool)
        self.is_episode[[self.index[ep] for ep in self.episodes]] = True
        self._with_synonyms: dict[tuple[int, float], tuple[sparse.csr_matrix, np.ndarray]] = {}
        self._lock = threading.Lock()

    def _walk(self, weighted: Mapping[tuple[int, int], float]) -> tuple[sparse.csr_matrix, np.ndarray]:
        """The (column-stochastic where a node has edges) transition matrix of these undirected
        weighted edges, and which nodes have none."""
        rows = [a for a, _ in weighted] + [b for _, b in weighted]
        cols = [b for _, b in weighted] + [a for a, _ in weighted]
        n = len(self.nodes)
        adj = sparse.csr_matrix((np.array([*weighted.values(), *weighted.values()]), (rows, cols)), shape=(n, n))
        degree = np.asarray(adj.sum(axis=1)).ravel()
        inv = np.divide(1.0, degree, out=np.zeros(n), where=degree > 0)
        return (sparse.diags(inv) @ adj).T.tocsr(), degree == 0

    def synonym_walk(self, synonyms: Synonyms) -> tuple[sparse.csr_matrix, np.ndarray]:
        """The transition matrix with synonym edges added: each weighs its names' similarity (a
        relation between the same two entities keeps its weight of 1). Made once per graph and threshold."""
        key = (id(synonyms.vectors), synonyms.threshold)
        with self._lock:
            got = self._with_synonyms.get(key)
        if got is not None:
            return got
        weighted = dict(self._weighted)
        for a, b, sim in synonyms.vectors.synonym_edges(self.names, synonyms.threshold):
            pair = (self.index[a], self.index[b])
            if pair not in weighted and pair[::-1] not in weighted:
                weighted[pair] = sim
        made = self._walk(weighted)
        with self._lock:
            self._with_synonyms[key] = made
        return made

    def _vector(self, seeds: Mapping[str, float], damping: float, iterations: int, tolerance: float,
                synonyms: Synonyms | None = None) -> np.ndarray | None:
        p = np.zeros(len(self.nodes))
        for node, weight in seeds.items():
            if node in self.index and weight > 0:
                p[self.index[node]] += weight
        if not p.any():
            return None
        p /= p.sum()
        transition, dangling = self.synonym_walk(synonyms) if synonyms else (self.transition, self.dangling)
        r = p.copy()
        for _ in range(iterations):
            nxt = damping * (transition @ r + r[dangling].sum() * p) + (1 - damping) * p
            done = np.abs(nxt - r).sum() < tolerance
            r = nxt
            if done:
                break
        return r

    def rank(self, seeds: Mapping[str, float], damping: float = 0.5, iterations: int = 50,
             tolerance: float = 1e-7) -> dict[str, float]:
        """PageRank personalised to the seeds (weights need not sum to 1); unknown seeds are ignored."""
        r = self._vector(seeds, damping, iterations, tolerance)
        return {} if r is None else {self.nodes[i]: float(r[i]) for i in np.flatnonzero(r)}

    def rank_episodes(self, seeds: Mapping[str, float], limit: int, damping: float = 0.5,
                      synonyms: Synonyms | None = None) -> list[tuple[str, float]]:
        """The best-ranked episodes that are not seeds (top-k taken in numpy: graphs run to 100k nodes),
        over synonym edges too when asked."""
        r = self._vector(seeds, damping, 50, 1e-7, synonyms)
        if r is None or limit <= 0:
            return []
        score = np.where(self.is_episode & (r > 0), r, 0.0)
        for node in seeds:
            if node in self.index:
                score[self.index[node]] = 0.0
        k = min(limit, int(np.count_nonzero(score)))
        if k == 0:
            return []
        top = np.argpartition(-score, k - 1)[:k]
        top = top[np.argsort(-score[top], kind="stable")]
        return [(self.nodes[i], float(score[i])) for i in top]
