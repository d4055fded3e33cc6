"""Executes a plan: hybrid recall of stored messages and documents, replies brought along with the
questions they answer, and (multi-hop) the question's entities linked into the graph and spread by
personalised PageRank onto the episodes that mention them. All routes meet in one reciprocal-rank score.

Works against the store protocols only; it never knows which backend is running.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from hippograph.dates import spans_in, with_dates
from hippograph.graph.base import GraphStore
from hippograph.graph.names import NameVectors, Synonyms
from hippograph.graph.schema import normalise
from hippograph.models import Entity, Episode, EpisodeKind, MemoryKind, Note, VectorHit
from hippograph.planner.dates import date_windows
from hippograph.planner.plans import Plan
from hippograph.planner.ranker import LinearRanker, ranking_features
from hippograph.records import DATES_FIELD, episode_text
from hippograph.vectors.base import SparseVec, VectorFilter, embed_query
from hippograph.vectors.indexer import Indexer
from hippograph.vectors.payload import RRF_K, prefetch_limit

#: a note or relation stands for at most this many of the episodes it came from: the latest ones
SOURCES_PER_FACT = 3
# how far from a time a question names a message may have been said and still say it ("yesterday", "last
# month"); chosen to cover "last month" said late in the next, not tuned
SAID_AROUND = timedelta(days=45)
#: at most this many people named in one question are searched on their own
PEOPLE_LIMIT = 3
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")


@dataclass
class Candidate:
    id: str
    kind: str  # episode | note
    text: str
    timestamp: datetime
    source_ids: list[str]
    score: float = 0.0
    via: list[str] = field(default_factory=list)
    session_id: str | None = None
    message: bool = True  # a message (its relative dates are shown resolved), not a document or note
    ranks: dict[str, int] = field(default_factory=dict)  # each route's best (0-based) rank of it
    dates: str | None = None  # what a message's relative dates mean, where its record kept it
    speaker: str = ""  # who said a message, lower-cased ("" for a document or note)

    def shown_text(self) -> str:
        """The text a context block shows: a message's with what its relative dates mean after it
        (`dates.with_dates`), read from its record where the record kept them."""
        if not self.message:
            return self.text
        if self.dates is None:
            return with_dates(self.text, self.timestamp)
        return f"{self.text} ({self.dates})" if self.dates else self.text


def rank_score(rank: int) -> float:
    """The reciprocal-rank score of a 0-based rank, with the constant the vector stores fuse with, so
    every route adds to the hybrid score on one scale."""
    return 1.0 / (RRF_K + rank + 1)


def _mix(query: Sequence[float] | None, hit: Sequence[float] | None) -> list[float] | None:
    """The normalised sum of the query's and a hit's (unit) vectors: the direction of both at once."""
    if query is None or hit is None:
        return list(query) if query is not None else None
    both = np.asarray(query, dtype=np.float32) + np.asarray(hit, dtype=np.float32)
    norm = float(np.linalg.norm(both))
    return (both / norm).tolist() if norm > 0 else list(query)


def _depth(plan: Plan) -> int:
    """What each side of a route's hybrid search fuses (`Plan.route_depth`)."""
    return prefetch_limit(plan.recall_limit, plan.route_depth)


def _from_hit(h: VectorHit, route: str) -> Candidate:
    return Candidate(h.id, h.kind.value, h.text, h.timestamp, h.source_ids, h.score, [route], h.session_id,
                     message=h.kind == MemoryKind.episode and h.extra.get("role") != EpisodeKind.document.value,
                     dates=h.extra.get(DATES_FIELD), speaker=h.extra.get("speaker", ""))


def _credit(found: dict[str, Candidate], ranked: Iterable[Candidate | None], route: str, weight: float) -> int:
    """One route's ranked list joins the fused scores: each candidate gains `weight` times the
    reciprocal-rank score of its place (a None keeps its place but is skipped). Returns how many
    candidates were new."""
    new = 0
    for rank, c in enumerate(ranked):
        if c is None:
            continue
        got = found.get(c.id)
        if got is None:
            got = found[c.id] = c
            c.score, c.via = 0.0, [route]
            new += 1
        elif route not in got.via:
            got.via.append(route)
        got.score += weight * rank_score(rank)
        got.ranks[route] = min(got.ranks.get(route, rank), rank)
    return new


def _credit_hits(found: dict[str, Candidate], hits: Sequence[VectorHit], route: str, weight: float,
                 skip: Callable[[str], bool]) -> int:
    """`_credit` for a route's search hits, a hit whose id `skip` says is skipped: a candidate is made
    only for a hit not found before (most are)."""
    return _credit(found, (found.get(h.id) or _from_hit(h, route) for h in hits if not skip(h.id)), route, weight)


def _from_episode(e: Episode, route: str) -> Candidate:
    message = e.kind == EpisodeKind.message
    return Candidate(e.id, MemoryKind.episode.value, episode_text(e), e.timestamp, [e.client_id or e.id], 0.0,
                     [route], e.session_id, message=message, speaker=(e.name or "").lower() if message else "")


def dedupe(cands: list[Candidate]) -> list[Candidate]:
    """One candidate per text, the first in the order given: a message repeated word for word is one."""
    out: list[Candidate] = []
    texts: set[str] = set()
    for c in cands:
        if c.text.lower() not in texts:
            texts.add(c.text.lower())
            out.append(c)
    return out


class Retriever:
    def __init__(self, graph: GraphStore, indexer: Indexer, phrases: Callable[[str], list[str]] | None = None,
                 stated: float = 0.0) -> None:
        """`phrases` finds the phrases of a query that may name an entity (a parser's noun chunks and
        named entities); without it, the query's n-grams are compared by meaning. A note less sure than
        `stated` is a candidate, not stated to the agent."""
        self.graph = graph
        self.stated = stated
        self.indexer = indexer
        self.phrases = phrases
        self.names = NameVectors(indexer.embedder)  # entity names embedded once, for the graph by meaning
        self.rankers: dict[str, Callable[[np.ndarray], np.ndarray]] = {}

    def recall(
        self, plan: Plan, user_id: str, query: str, exclude_ids: set[str], dense: Sequence[float] | None = None,
    ) -> tuple[list[Candidate], dict]:
        """The user's messages and documents ranked for the query (best first), and a trace of what
        each step found. `dense` is the query's embedding when the caller already has it."""
        trace: dict = {}
        if dense is None and plan.recall_mode != "lexical":
            dense = embed_query(self.indexer.embedder, query)
        # the lexical query, made once: the query's words (and their lemmas, when lemmas are indexed)
        words = self.indexer.query_words(query) if plan.recall_mode != "dense" else query
        sparse = self.indexer.sparse.encode_query(words) if plan.recall_mode != "dense" else None
        flt = VectorFilter(user_id=user_id, kinds=[MemoryKind.episode])
        limit = plan.recall_limit + len(exclude_ids)
        hits = self.indexer.search(flt, query, limit, mode=plan.recall_mode, dense_vector=dense, sparse_vector=sparse)
        found = {h.id: _from_hit(h, plan.recall_mode) for h in hits if h.id not in exclude_ids}
        if plan.prf_terms and sparse is not None and sparse.indices and found:
            fed, terms = self._feedback(plan, sparse, list(found.values()))
            if terms:  # RM3: the recall is the expanded query's
                hits = self.indexer.search(flt, query, limit, mode=plan.recall_mode, dense_vector=dense,
                                           sparse_vector=fed)
                found = {h.id: _from_hit(h, plan.recall_mode) for h in hits if h.id not in exclude_ids}
                sparse = fed
            trace["feedback_terms"] = terms
        for rank, c in enumerate(found.values()):
            c.ranks[plan.recall_mode] = rank
            if plan.recall_mode != "hybrid":  # dense or lexical scores are not on the fused scale
                c.score = rank_score(rank)
        trace["recall"] = len(found)
        if plan.derived_weight or plan.notes_limit:
            trace["derived"], trace["notes"] = self._derived(plan, user_id, query, dense, sparse, found,
                                                             exclude_ids)
        if plan.person_weight:
            trace["people"] = self._people(plan, user_id, query, found, exclude_ids)
        if plan.entity_weight:
            trace["entities"] = self._entities(plan, user_id, query, dense, sparse, found, exclude_ids)
        windows = date_windows(query) if plan.dated_weight else []
        if windows:
            trace["dated"] = self._dated(plan, user_id, query, dense, sparse, windows, found, exclude_ids)
        if plan.expand_hits:
            trace["expanded"] = self._expand(plan, user_id, words, dense, found, exclude_ids)
        if plan.graph:
            hits_ranked = sorted(found.values(), key=lambda c: -c.score)
            ranked, seeds, facts = self.graph_episodes(plan, user_id, query, exclude_ids, hits_ranked)
            trace["linked_entities"] = [e.name for e in seeds]
            trace["graph_facts"] = facts
            trace["graph_episodes"] = len(ranked)
            _credit(found, ranked, "graph", plan.graph_weight)
        if plan.reply_weight:
            trace["replies"] = self._bring_replies(plan, user_id, found, exclude_ids)
        ranked = dedupe(sorted(found.values(), key=lambda c: -c.score))
        if plan.ranker and ranked:
            depth = plan.rerank_depth or len(ranked)
            ranked = self._rerank(plan.ranker, user_id, query, dense, windows or date_windows(query),
                                  ranked[:depth]) + ranked[depth:]
            trace["ranker"] = plan.ranker
        return ranked, trace

    def ranker(self, name: str) -> Callable[[np.ndarray], np.ndarray]:
        """The ranker of that name: one set on `rankers` (a benchmark's, trained on other data), or the
        packaged one ("learned")."""
        if name not in self.rankers:
            if name != "learned":
                raise ValueError(f"no ranker named {name!r}")
            self.rankers[name] = LinearRanker.packaged()
        return self.rankers[name]

    def _rerank(self, name: str, user_id: str, query: str, dense: Sequence[float] | None,
                windows: list[tuple[datetime, datetime]], ranked: list[Candidate]) -> list[Candidate]:
        """The candidates ordered by a learned ranker over each one's route ranks and traits instead of
        the hand-weighted sum (`ranking_features` says which); `ranked` is in the sum's order."""
        cosines = self.cosines(dense, [c.id for c in ranked], user_id)
        scores = self.ranker(name)(ranking_features(ranked, query, windows, cosines))
        for c, score in zip(ranked, scores, strict=True):
            c.score = float(score)
        return sorted(ranked, key=lambda c: -c.score)

    def cosines(self, dense: Sequence[float] | None, ids: Sequence[str], user_id: str) -> dict[str, float]:
        """Each of these messages' cosine with the query, from a dense search among them alone (the store
        scores only those points; fetching their vectors to multiply here took twice as long); none without
        a query vector."""
        if dense is None or not ids:
            return {}
        flt = VectorFilter(user_id=user_id, kinds=[MemoryKind.episode], ids=list(ids))
        return {h.id: h.score for h in self.indexer.search(flt, "", len(ids), mode="dense", dense_vector=dense)}

    def _feedback(self, plan: Plan, query: SparseVec, ranked: list[Candidate]) -> tuple[SparseVec, int]:
        """The lexical query with the terms of pseudo-relevance feedback (RM3): each term of the best
        `plan.prf_docs` hits weighs its share of each hit's BM25 term weights, summed over the hits,
        times its rarity in the rest of the recalled hits, `log((n + 1) / (had + 0.5))` for n hits of
        which `had` have it (a term every recalled hit has is no evidence of these; with no rest, the
        shares alone decide); the `plan.prf_terms` best that the query lacks are added, the best
        weighing `plan.prf_weight` of a query term and the others in proportion. The engine applies
        each term's IDF over the whole store on top. Returns the query and how many terms were added."""
        docs = self.indexer.sparse.encode_documents([c.text for c in ranked])
        feedback, rest = docs[: plan.prf_docs], docs[plan.prf_docs:]
        had = Counter(i for d in rest for i in d.indices)
        asked = set(query.indices)
        share: dict[int, float] = defaultdict(float)
        for d in feedback:
            total = sum(d.values)
            for i, v in zip(d.indices, d.values, strict=True):
                if i not in asked and total > 0:
                    share[i] += v / total
        score = {i: w * math.log((len(rest) + 1) / (had[i] + 0.5)) for i, w in share.items()}
        terms = [i for i in sorted(score, key=lambda i: (-score[i], i))[: plan.prf_terms] if score[i] > 0]
        if not terms:
            return query, 0
        top = score[terms[0]]
        return SparseVec(indices=[*query.indices, *terms],
                         values=[*query.values, *(plan.prf_weight * score[i] / top for i in terms)]), len(terms)

    def _derived(
        self, plan: Plan, user_id: str, query: str, dense: Sequence[float] | None, sparse: SparseVec | None,
        found: dict[str, Candidate], exclude_ids: set[str],
    ) -> tuple[int, list[str]]:
        """Notes and relation facts are short: matched against the query they point at the message
        they came from more sharply than the whole message does. The same search picks the notes the
        block shows (their ids, best first, are returned)."""
        flt = VectorFilter(user_id=user_id, kinds=[MemoryKind.note, MemoryKind.relation])
        hits = self.indexer.search(flt, query, plan.recall_limit, mode=plan.recall_mode, dense_vector=dense,
                                   sparse_vector=sparse, depth=_depth(plan))
        notes = [h.id for h in hits if h.kind == MemoryKind.note][: plan.notes_limit]
        if not plan.derived_weight:
            return 0, notes
        # a fact said many times points at its latest few sayings, not at all of them
        order = [ep for h in hits for ep in h.source_ids[-SOURCES_PER_FACT:] if ep not in exclude_ids]
        order = list(dict.fromkeys(order))
        missing = [ep for ep in order if ep not in found]
        episodes = {e.id: e for e in self.graph.get_episodes(user_id, missing)} if missing else {}
        ranked = [found.get(ep) or (_from_episode(episodes[ep], "derived") if ep in episodes else None) for ep in order]
        return _credit(found, ranked, "derived", plan.derived_weight), notes

    def _people(self, plan: Plan, user_id: str, query: str, found: dict[str, Candidate], exclude_ids: set[str],
                ) -> list[str]:
        """The question names people who speak in the conversations ("What activities does Melanie
        partake in?"): what each of them said is searched on its own, by the rest of the question, so
        their messages about it rise even where the whole question is closer to something else. Each
        person's search weighs `plan.person_weight`."""
        words = [w.removesuffix("'s").removesuffix("\u2019s") for w in _WORD.findall(query)]
        grams = [" ".join(words[i:i + n]) for n in (2, 1) for i in range(len(words) - n + 1)]
        people = self.graph.speakers_named(user_id, [g for g in grams if len(g) > 1])[:PEOPLE_LIMIT]
        if not people:
            return []
        rests = [_without(query, name) for name in people]
        vectors: list[list[float] | None] = (
            [embed_query(self.indexer.embedder, r) for r in rests] if plan.recall_mode != "lexical"
            else [None] * len(rests))
        for name, rest, vector in zip(people, rests, vectors, strict=True):
            flt = VectorFilter(user_id=user_id, kinds=[MemoryKind.episode], extra={"speaker": name.lower()})
            hits = self.indexer.search(flt, rest, plan.recall_limit, mode=plan.recall_mode, dense_vector=vector,
                                       depth=_depth(plan))
            _credit_hits(found, hits, "person", plan.person_weight, exclude_ids.__contains__)
        return people

    def _entities(
        self, plan: Plan, user_id: str, query: str, dense: Sequence[float] | None, sparse: SparseVec | None,
        found: dict[str, Candidate], exclude_ids: set[str],
    ) -> list[str]:
        """The entities the question names, walked to the messages that mention them (the graph's
        MENTIONS, on either store): for each (the rarest first, at most `PEOPLE_LIMIT`), those messages
        are searched for the question and weigh `plan.entity_weight`, so that what is said about a thing
        the question names rises even when other words of the question match elsewhere. A thing more
        than `plan.entity_mentions` messages mention is not walked."""
        seeds = [e for e in self.link_entities(user_id, query) if not e.is_user]
        mentions = self.graph.mentions_of(user_id, [e.id for e in seeds], limit=plan.entity_mentions)
        walked = sorted((e for e in seeds if mentions.get(e.id)), key=lambda e: len(mentions[e.id]))[:PEOPLE_LIMIT]
        for ent in walked:
            flt = VectorFilter(user_id=user_id, kinds=[MemoryKind.episode], ids=mentions[ent.id])
            hits = self.indexer.search(flt, query, plan.recall_limit, mode=plan.recall_mode, dense_vector=dense,
                                       sparse_vector=sparse, depth=_depth(plan))
            _credit_hits(found, hits, "entity", plan.entity_weight, exclude_ids.__contains__)
        return [e.name for e in walked]

    def _dated(
        self, plan: Plan, user_id: str, query: str, dense: Sequence[float] | None, sparse: SparseVec | None,
        windows: list[tuple[datetime, datetime]], found: dict[str, Candidate], exclude_ids: set[str],
    ) -> list[str]:
        """The question names a day or a month: what was said then is searched on its own and weighs
        `plan.dated_weight` next to the recall over all time."""
        for start, end in windows:
            flt = VectorFilter(user_id=user_id, kinds=[MemoryKind.episode], since=start,
                               until=end - timedelta(microseconds=1))
            hits = self.indexer.search(flt, query, plan.recall_limit, mode=plan.recall_mode, dense_vector=dense,
                                       sparse_vector=sparse, depth=_depth(plan))
            # what was said around then about then: "yesterday" said the day after, "next Friday" before
            near = VectorFilter(user_id=user_id, kinds=[MemoryKind.episode], since=start - SAID_AROUND,
                                until=end + SAID_AROUND)
            hits += [h for h in self.indexer.search(near, query, plan.recall_limit, mode=plan.recall_mode,
                                                    dense_vector=dense, sparse_vector=sparse, depth=_depth(plan))
                     if not start <= h.timestamp < end
                     and any(a < end and start < b for a, b in spans_in(h.text, h.timestamp))]
            _credit_hits(found, hits, "dated", plan.dated_weight, exclude_ids.__contains__)
        return [f"{a:%Y-%m-%d}..{b - timedelta(days=1):%Y-%m-%d}" for a, b in windows]

    def _expand(
        self, plan: Plan, user_id: str, words: str, dense: Sequence[float] | None, found: dict[str, Candidate],
        exclude_ids: set[str],
    ) -> int:
        """A second hop: the query extended by each of the best hits is searched again (its words added
        to the lexical query, its stored vector to the dense one), so what a hit names (the film a town
        passage mentions, the person a message talks about) is found even when the question does not
        name it. The i-th hit's search weighs `expand_weight / i`. `words` is the lexical query's text
        (the query with its lemmas); the hits' words are added as they are."""
        top = sorted(found.values(), key=lambda c: -c.score)[: plan.expand_hits]
        if not top:
            return 0
        texts = [f"{words} {c.text}" for c in top]
        stored = self.indexer.store.dense_vectors([c.id for c in top]) if dense is not None else {}
        vectors = [_mix(dense, stored.get(c.id)) for c in top]
        flt = VectorFilter(user_id=user_id, kinds=[MemoryKind.episode])
        added = 0
        for i, (c, text, vector) in enumerate(zip(top, texts, vectors, strict=True)):
            lexical = self.indexer.sparse.encode_query(text) if plan.recall_mode != "dense" else None
            hits = self.indexer.search(flt, text, plan.recall_limit, mode=plan.recall_mode, dense_vector=vector,
                                       sparse_vector=lexical, depth=_depth(plan))
            skipped = exclude_ids | {c.id}
            added += _credit_hits(found, hits, "expansion", plan.expand_weight / (i + 1), skipped.__contains__)
        return added

    def _bring_replies(self, plan: Plan, user_id: str, found: dict[str, Candidate], exclude_ids: set[str]) -> int:
        """A message that asks something lends part of its score to the message after it: in a
        conversation the answer follows the question, and it is the answer that holds the fact."""
        asking = [c for c in sorted(found.values(), key=lambda c: -c.score)[: plan.recall_limit] if "?" in c.text]
        after = self.graph.next_episodes(user_id, [c.id for c in asking])
        brought = 0
        for rank, c in enumerate(asking):
            reply = after.get(c.id)
            if reply is None or reply.id in exclude_ids or reply.kind.value != "message":
                continue
            got = found.get(reply.id)
            if got is None:
                got = found[reply.id] = _from_episode(reply, "reply")
                brought += 1
            elif "reply" not in got.via:
                got.via.append("reply")
            got.score += plan.reply_weight * c.score
            got.ranks["reply"] = min(got.ranks.get("reply", rank), rank)
        return brought

    def link_entities(self, user_id: str, query: str, threshold: float = 0.0) -> list[Entity]:
        """Entities of the user's graph whose name (or alias) is a phrase of the query, found by exact
        lookup of the query's normalised n-grams, longer phrases first; then (`threshold` > 0) for each
        phrase of the query the entity whose name means it most closely, when at least `threshold` close."""
        grams = _grams(query)
        named = self.graph.entities_named(user_id, [normalise(g) for g in grams])
        found: dict[str, Entity] = {}
        for key in grams:
            for ent in named.get(normalise(key), []):
                found.setdefault(ent.id, ent)
        if threshold > 0:
            phrases = self.phrases(query) if self.phrases is not None else grams
            for ent_id in self.names.link(phrases, self.graph.entity_names(user_id), threshold):
                if ent_id not in found and (meant := self.graph.get_entity(user_id, ent_id)) is not None:
                    found[ent_id] = meant
        return list(found.values())

    def graph_episodes(
        self, plan: Plan, user_id: str, query: str, exclude_ids: set[str], hits: list[Candidate]
    ) -> tuple[list[Candidate], list[Entity], list[str]]:
        """Episodes ranked by personalised PageRank over entities and the episodes that mention them,
        seeded with the entities the query names and with the best vector hits (their weight scaled by
        `plan.hit_seed_weight`): a passage linked through shared entities to both rises, which is how a
        second hop is found that the question's words alone do not reach. The relations between the
        query's entities and their neighbours are returned as readable facts; the episodes they were
        said in lead the ranking, as the most direct graph evidence."""
        seeds = [e for e in self.link_entities(user_id, query, plan.link_threshold) if not e.is_user]
        weights = {e.id: 1.0 for e in seeds}
        top = hits[: plan.hit_seeds]
        best = max((c.score for c in top), default=0.0)
        for c in top:
            if best > 0:
                weights[c.id] = weights.get(c.id, 0.0) + plan.hit_seed_weight * c.score / best
        if not weights:
            return [], seeds, []
        relations = self.graph.relations_of(user_id, [e.id for e in seeds])[: plan.graph_facts] if seeds else []
        names = {e.id: e.name for e in seeds}
        for ent_id in {x for r in relations for x in (r.source_id, r.target_id)} - set(names):
            ent = self.graph.get_entity(user_id, ent_id)
            names[ent_id] = "the user" if ent is None or ent.is_user else ent.name
        facts = [f"{names[r.source_id]} -[{r.predicate}]-> {names[r.target_id]}" for r in relations]
        synonyms = Synonyms(self.names, plan.synonym_threshold) if plan.synonym_threshold > 0 else None
        ranked = self.graph.rank_episodes(user_id, weights, limit=plan.graph_limit + len(exclude_ids),
                                          synonyms=synonyms)
        said = [ep for r in relations for ep in r.source_episode_ids[-SOURCES_PER_FACT:]]
        keep = [ep for ep in dict.fromkeys(said + [ep for ep, _ in ranked]) if ep not in exclude_ids][: plan.graph_limit]
        episodes = {e.id: e for e in self.graph.get_episodes(user_id, keep)}
        return [_from_episode(episodes[ep], "graph") for ep in keep if ep in episodes], seeds, facts

    def relevant_notes(self, plan: Plan, user_id: str, matched: Sequence[str]) -> list[Note]:
        """Every current note (profile plan), else the current ones among those the query matched; not the
        candidates (less sure than `stated`)."""
        if plan.all_notes:
            return [n for n in self.graph.list_notes(user_id) if n.confidence >= self.stated]
        by_id = {n.id: n for n in self.graph.notes_by_ids(list(matched)) if n.current and n.confidence >= self.stated}
        return [by_id[i] for i in matched if i in by_id]


def _grams(query: str) -> list[str]:
    """The query's phrases of 4 words down to 1 (single stop words and short words left out)."""
    words = _WORD.findall(query)
    grams: list[str] = []
    for n in (4, 3, 2, 1):
        for i in range(len(words) - n + 1):
            gram = " ".join(words[i:i + n])
            if n == 1 and (len(gram) < 3 or gram.lower() in _STOP):
                continue
            grams.append(gram)
    return grams


def _without(query: str, name: str) -> str:
    """The question with a name (and its possessive) taken out: what is asked about the person."""
    rest = re.sub(rf"\b{re.escape(name)}(?:['\u2019]s)?\b", " ", query, flags=re.IGNORECASE)
    rest = " ".join(rest.split())
    return rest if _WORD.search(rest) else query


_STOP = frozenset(
    ["the", "and", "for", "who", "what", "when", "where", "which", "why", "how", "does", "did", "was", "were", "are", "is", "has", "have", "had", "with", "from", "that", "this", "there", "their", "they", "them", "his", "her", "him", "she", "you", "your", "our", "its", "not", "but", "about", "into", "over", "under", "than", "then", "also"]
)
