"""Executes a plan: hybrid recall, entity linking, graph traversal, reciprocal-rank fusion.

Works against the store protocols only; it never knows which backend is running.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from hippograph.graph.base import GraphStore
from hippograph.graph.schema import normalise
from hippograph.models import Entity, MemoryKind, Note, Relation, VectorHit
from hippograph.planner.plans import Plan
from hippograph.vectors.base import VectorFilter
from hippograph.vectors.indexer import Indexer

RRF_K = 60
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")


@dataclass
class Candidate:
    id: str
    kind: str  # note | episode | relation
    text: str
    timestamp: datetime
    source_ids: list[str]
    score: float = 0.0
    via: list[str] = field(default_factory=list)
    session_id: str | None = None


def rrf(lists: Sequence[Sequence[Candidate]], k: int = RRF_K) -> list[Candidate]:
    """Reciprocal-rank fusion of ranked candidate lists; a candidate keeps every route that found it."""
    fused: dict[str, Candidate] = {}
    for ranked in lists:
        for rank, c in enumerate(ranked):
            got = fused.setdefault(c.id, Candidate(c.id, c.kind, c.text, c.timestamp, c.source_ids,
                                                   session_id=c.session_id))
            got.score += 1.0 / (k + rank + 1)
            got.via = list(dict.fromkeys(got.via + c.via))
    return sorted(fused.values(), key=lambda c: -c.score)


def _from_hit(h: VectorHit, route: str) -> Candidate:
    return Candidate(h.id, h.kind.value, h.text, h.timestamp, h.source_ids, h.score, [route], h.session_id)


def _from_relation(r: Relation, names: dict[str, str], route: str) -> Candidate:
    src, tgt = names.get(r.source_id, "?"), names.get(r.target_id, "?")
    text = f"{src} -[{r.predicate}]-> {tgt}: {r.fact}"
    return Candidate(r.id, MemoryKind.relation.value, text, r.valid_at, r.source_episode_ids, 0.0, [route])


class Retriever:
    def __init__(self, graph: GraphStore, indexer: Indexer) -> None:
        self.graph = graph
        self.indexer = indexer

    def recall(self, plan: Plan, user_id: str, query: str, exclude_ids: set[str]) -> tuple[list[Candidate], dict]:
        """Ranked candidates for the query, and a trace of what each step found."""
        trace: dict = {}
        flt = VectorFilter(user_id=user_id, kinds=[MemoryKind.episode, MemoryKind.relation, MemoryKind.note])
        hits = self.indexer.search(flt, query, plan.recall_limit + len(exclude_ids), mode=plan.recall_mode)
        hits = [h for h in hits if h.id not in exclude_ids][: plan.recall_limit]
        vector = self._candidates(hits, plan.recall_mode)
        trace["hybrid_recall"] = len(vector)
        lists = [vector]
        if plan.graph:
            graph_cands, seeds = self._graph_candidates(plan, user_id, query, vector)
            trace["linked_entities"] = [e.name for e in seeds]
            trace["graph_facts"] = len(graph_cands)
            lists.append(graph_cands)
        return rrf(lists), trace

    def _candidates(self, hits: list[VectorHit], route: str) -> list[Candidate]:
        """Vector hits as candidates; relation hits are shown as named triples with their sentence."""
        rels = {r.id: r for r in self.graph.get_relations([h.id for h in hits if h.kind == MemoryKind.relation])}
        names = self._names({x for r in rels.values() for x in (r.source_id, r.target_id)})
        out = []
        for h in hits:
            if h.id in rels:
                c = _from_relation(rels[h.id], names, route)
                c.score = h.score
                out.append(c)
            else:
                out.append(_from_hit(h, route))
        return out

    def _names(self, entity_ids: set[str]) -> dict[str, str]:
        names = {}
        for eid in entity_ids:
            ent = self.graph.get_entity(eid)
            if ent is not None:
                names[eid] = "the user" if ent.is_user else ent.name
        return names

    def link_entities(self, user_id: str, query: str) -> list[Entity]:
        """Entities of the user's graph whose name occurs in the query (longest n-grams first)."""
        words = _WORD.findall(query)
        found: dict[str, Entity] = {}
        for n in (4, 3, 2, 1):
            for i in range(len(words) - n + 1):
                gram = " ".join(words[i:i + n])
                if n == 1 and (len(gram) < 3 or gram.lower() in _STOP):
                    continue
                key = normalise(gram)
                for ent in self.graph.find_entities(user_id, key, limit=5):
                    if normalise(ent.name) == key or key in [normalise(a) for a in ent.aliases]:
                        found.setdefault(ent.id, ent)
        return list(found.values())

    def _graph_candidates(
        self, plan: Plan, user_id: str, query: str, vector: list[Candidate]
    ) -> tuple[list[Candidate], list[Entity]]:
        seeds = self.link_entities(user_id, query)
        seed_ids = [e.id for e in seeds]
        # entities of the top relation hits join the seeds: their facts are what the question is near
        top_rel_ids = [c.id for c in vector[:5] if c.kind == MemoryKind.relation.value]
        for r in self.graph.get_relations(top_rel_ids):
            seed_ids += [r.source_id, r.target_id]
        if not seed_ids:
            return [], seeds
        ranked = [eid for eid, _ in self.graph.personalized_pagerank(user_id, seed_ids, limit=plan.graph_limit)]
        near: set[str] = set()
        for eid in dict.fromkeys(seed_ids):
            sub = self.graph.neighbors(eid, depth=plan.graph_depth)
            near.update(e.id for e in sub.entities)
        keep = [eid for eid in ranked if eid in near] or list(dict.fromkeys(seed_ids))
        rels = self.graph.relations_of(user_id, keep)
        names = self._names({x for r in rels for x in (r.source_id, r.target_id)})
        order = {eid: i for i, eid in enumerate(keep)}
        rels.sort(key=lambda r: min(order.get(r.source_id, 99), order.get(r.target_id, 99)))
        return [_from_relation(r, names, "graph") for r in rels[: plan.graph_limit]], seeds

    def relevant_notes(self, plan: Plan, user_id: str, query: str, limit: int = 6) -> list[Note]:
        notes = self.graph.list_notes(user_id)
        if plan.all_notes or len(notes) <= limit:
            return notes
        flt = VectorFilter(user_id=user_id, kinds=[MemoryKind.note])
        hits = self.indexer.search(flt, query, limit)
        by_id = {n.id: n for n in notes}
        return [by_id[h.id] for h in hits if h.id in by_id]


_STOP = frozenset(
    ["the", "and", "for", "who", "what", "when", "where", "which", "why", "how", "does", "did", "was", "were", "are", "is", "has", "have", "had", "with", "from", "that", "this", "there", "their", "they", "them", "his", "her", "him", "she", "you", "your", "our", "its", "not", "but", "about", "into", "over", "under", "than", "then", "also"]
)
