"""The embedded store's traversal and ranking: the methods of `SqliteGraphStore` that walk a user's
graph (networkx, for neighbourhoods and entity PageRank) and rank their episodes (the scipy PageRank
graph of `graph.ppr`). Both graphs are per-user caches built from SQLite on first use; the store drops
them whenever the user's graph changes."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence

import networkx as nx

from hippograph.graph.base import Subgraph
from hippograph.graph.cache import PerUser
from hippograph.graph.names import Synonyms
from hippograph.graph.ppr import ATTRIBUTE_TYPES, PageRankGraph
from hippograph.graph.schema import entity_of, marks
from hippograph.models import Entity, Relation


class SqliteTraversal:
    """Mixed into SqliteGraphStore, which provides the rows, the lock and the caches."""

    _rows: Callable[..., list[sqlite3.Row]]
    _lock: threading.RLock
    _graphs: dict[str, nx.MultiDiGraph]
    _ppr: PerUser[PageRankGraph]
    get_entity: Callable[[str, str], Entity | None]
    get_relations: Callable[[Sequence[str]], list[Relation]]

    def _graph(self, user_id: str) -> nx.MultiDiGraph:
        g = self._graphs.get(user_id)
        if g is None:
            g = nx.MultiDiGraph()
            g.add_nodes_from(r["id"] for r in self._rows("SELECT id FROM entities WHERE user_id=?", (user_id,)))
            for r in self._rows("SELECT id,source_id,target_id,predicate,invalid_at FROM relations "
                                "WHERE user_id=?", (user_id,)):
                g.add_edge(r["source_id"], r["target_id"], key=r["id"], predicate=r["predicate"],
                           current=r["invalid_at"] is None)
            self._graphs[user_id] = g
        return g

    def neighbors(self, user_id: str, entity_id: str, depth: int = 1, include_invalid: bool = False) -> Subgraph:
        ent = self.get_entity(user_id, entity_id)
        if ent is None:
            return Subgraph([], [])
        with self._lock:
            g = self._graph(ent.user_id)
            view = g if include_invalid else nx.subgraph_view(
                g, filter_edge=lambda u, v, k: g.edges[u, v, k]["current"])
            reach = nx.single_source_shortest_path_length(view.to_undirected(as_view=True), entity_id,
                                                          cutoff=depth)
            rel_ids = [k for u, v, k in view.subgraph(reach).edges(keys=True)]
        ents = self._rows(f"SELECT * FROM entities WHERE id IN ({marks(len(reach))})", tuple(reach))
        return Subgraph([entity_of(r) for r in ents], self.get_relations(rel_ids))

    def personalized_pagerank(self, user_id: str, seeds: Sequence[str], limit: int = 20) -> list[tuple[str, float]]:
        with self._lock:
            g = self._graph(user_id)
            seeds = [s for s in seeds if s in g]
            if not seeds:
                return []
            simple = nx.Graph()
            simple.add_nodes_from(g.nodes)
            simple.add_edges_from((u, v) for u, v, cur in g.edges(data="current") if cur)
            ranks = nx.pagerank(simple, personalization={s: 1.0 for s in seeds}, max_iter=200)
        return sorted(ranks.items(), key=lambda kv: -kv[1])[:limit]

    def rank_episodes(self, user_id: str, seeds: Mapping[str, float], limit: int = 30,
                      synonyms: Synonyms | None = None) -> list[tuple[str, float]]:
        return self._ranking_graph(user_id).rank_episodes(seeds, limit, synonyms=synonyms)

    def entity_names(self, user_id: str) -> dict[str, str]:
        return dict(self._ranking_graph(user_id).names)

    def _ranking_graph(self, user_id: str) -> PageRankGraph:
        """The user's PageRank graph, built once and kept until the user's graph changes."""
        generation = self._ppr.generation
        graph = self._ppr.get(user_id)
        if graph is None:
            rows = self._rows(
                "SELECT m.episode_id, m.entity_id, e.name FROM mentions m JOIN entities e ON e.id = m.entity_id "
                f"WHERE m.user_id=? AND e.type NOT IN ({marks(len(ATTRIBUTE_TYPES))})", (user_id, *ATTRIBUTE_TYPES))
            graph = PageRankGraph(
                [(r["episode_id"], r["entity_id"]) for r in rows],
                [(r["source_id"], r["target_id"]) for r in self._rows(
                    "SELECT source_id, target_id FROM relations WHERE user_id=? AND invalid_at IS NULL", (user_id,))],
                {r["entity_id"]: r["name"] for r in rows})
            self._ppr.put(user_id, graph, generation)
        return graph
