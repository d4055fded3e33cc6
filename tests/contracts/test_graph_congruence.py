"""The same seeded random workload on the embedded and the Neo4j graph stores gives the same answers.

Every write is applied to both stores (some inside batch(), one batch rolled back) and its return
value compared; then every read method is asked the same questions. Results are compared whole and in
order, except PageRank (scores within 1e-6, ids up to ties) and the few reads whose order neither store
defines (compared sorted).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hippograph.graph.base import GraphStore
from hippograph.graph.names import NameVectors, Synonyms
from hippograph.graph.schema import normalise
from hippograph.graph.sqlite_store import USER_ENTITY_KEY
from hippograph.models import Entity, Episode, Note, NoteKind, Relation, Role, stable_id
from hippograph.vectors.embedders import OnnxMiniLMEmbedder

T0 = datetime(2024, 3, 1, tzinfo=UTC)
USERS = ["u1", "u2", "u3"]
SESSIONS = ["s1", "s2", None]
NAMES = ["Alice", "alice", "the Alice", "Bob", "BOB", "Acme", "ACME corp", "Acme Corp.", "Northwest Region",
         "northwest region", "the Northwest region", "Émile", "Emile", "Seattle", "seattle!", "Python",
         "Paris", "my Paris", "Zoë", "rock_n_roll", "100% Juice", "O'Brien's", "Anna-Lena", "Mañana"]
TYPES = ["Thing", "Thing", "Concept", "Person", "Organization", "Place", "WORK_OF_ART", "Region"]
PREDICATES = ["KNOWS", "MANAGES", "WORKS_AT", "LIVES_IN", "LIKES"]
SLOTS = ["fact:job", "fact:home", "preference:food", "decision:db"]
QUERIES = ["a", "A", "ali", "acme", "ACME corp", "the northwest", "emile", "é", "Zo", "_", "n_r", "%", "100%",
           "o'brien", "user", " ", "nobody"]


NAME_VECTORS = NameVectors(OnnxMiniLMEmbedder())  # loads the model on first use


class Rollback(Exception):
    pass


class Workload:
    """Random operations, decided once and applied to both stores; tracks what exists to stay valid."""

    def __init__(self, stores: tuple[GraphStore, GraphStore], seed: int) -> None:
        self.stores = stores
        self.rng = random.Random(seed)
        self.entities: dict[str, set[str]] = {u: set() for u in USERS}
        self.relations: dict[str, set[str]] = {u: set() for u in USERS}
        self.episodes: dict[str, set[str]] = {u: set() for u in USERS}
        self.notes: dict[str, set[str]] = {u: set() for u in USERS}
        self.counter = 0

    def at(self) -> datetime:
        return T0 + timedelta(hours=self.rng.randint(0, 30))  # coarse: ties happen

    def next_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter:04d}"

    def both(self, op: Callable[[GraphStore], Any]) -> Any:
        a, b = (op(s) for s in self.stores)
        assert a == b
        return a

    def in_batch(self, ops: list[Callable[[GraphStore], Any]], fail: bool) -> None:
        results = []
        for s in self.stores:
            with pytest.raises(Rollback) if fail else nullcontext(), s.batch():
                results.append([op(s) for op in ops])
                if fail:
                    raise Rollback
        assert results[0] == results[1]

    # --- operations: each returns a function of a store, and updates the tracking ------------------
    def op_episodes(self, user: str) -> Callable[[GraphStore], Any]:
        session = self.rng.choice(SESSIONS)
        known = sorted(self.episodes[user])
        eps = []
        for i in range(self.rng.randint(1, 4)):
            eid = self.rng.choice(known) if known and self.rng.random() < 0.2 else self.next_id(f"{user}-ep")
            eps.append(Episode(id=eid, user_id=user, session_id=session, role=self.rng.choice(list(Role)),
                               content=f"content {eid}", timestamp=self.at(), seq=self.rng.randint(0, 3) + i,
                               metadata={"n": i, "tags": ["x", eid]}))
        self.episodes[user].update(e.id for e in eps)
        return lambda s: s.add_episodes(eps)

    def op_process(self, user: str) -> Callable[[GraphStore], Any]:
        ids = self.rng.sample(sorted(self.episodes[user]), min(3, len(self.episodes[user])))
        small = ids[:1] if self.rng.random() < 0.3 else []

        def op(s: GraphStore) -> None:
            s.mark_processed(ids, "rules")
            s.set_indexed(small, False)
        return op

    def op_resolve(self, user: str) -> Callable[[GraphStore], Any]:
        ents = [Entity(id="", user_id=user, name=self.rng.choice(NAMES), type=self.rng.choice(TYPES),
                       aliases=self.rng.sample(["x", "y"], self.rng.randint(0, 2)))
                for _ in range(self.rng.randint(1, 5))]
        if self.rng.random() < 0.1:
            ents.append(Entity(id="", user_id=user, name=user, type="Person", is_user=True))
        self.entities[user].update(stable_id("ent", user, USER_ENTITY_KEY if e.is_user else normalise(e.name))
                                   for e in ents)
        return lambda s: s.resolve_entities(user, ents)

    def op_relation(self, user: str) -> Callable[[GraphStore], Any]:
        """As the ingest does it: a single-valued predicate invalidates the other current targets."""
        src, tgt = (self.rng.choice(sorted(self.entities[user])) for _ in range(2))
        pred, at = self.rng.choice(PREDICATES), self.at()
        rels = [Relation(id=self.next_id("rel"), user_id=user, source_id=src, target_id=tgt, predicate=pred,
                         fact=f"{src} {pred} {tgt}", valid_at=at,
                         source_episode_ids=[f"e{self.rng.randint(0, 5)}"]) for _ in range(self.rng.randint(1, 2))]
        single = self.rng.random() < 0.4
        self.relations[user].update(r.id for r in rels)

        def op(s: GraphStore) -> Any:
            old = [x.id for x in s.current_relations(user, src, pred) if x.target_id != tgt] if single else []
            s.invalidate_relations(old, at)
            return sorted(old), s.add_relations(rels)
        return op

    def op_invalidate(self, user: str) -> Callable[[GraphStore], Any]:
        ids = self.rng.sample(sorted(self.relations[user]), min(2, len(self.relations[user]))) + ["rel-missing"]
        at = self.at()
        return lambda s: s.invalidate_relations(ids, at)

    def op_mentions(self, user: str) -> Callable[[GraphStore], Any]:
        episode = self.rng.choice(sorted(self.episodes[user]))
        ids = self.rng.sample(sorted(self.entities[user]), min(3, len(self.entities[user])))
        return lambda s: s.link_mentions(episode, ids)

    def op_note(self, user: str) -> Callable[[GraphStore], Any]:
        """As the ingest does it: confirm the current note of the slot, or supersede it."""
        slot, text, at, nid = self.rng.choice(SLOTS), self.rng.choice(["x", "y", "z"]), self.at(), self.next_id("n")
        episode = f"{user}-ep{self.rng.randint(1, 30):04d}"
        self.notes[user].add(nid)

        def op(s: GraphStore) -> str:
            cur = s.current_note_by_slot(user, slot)
            if cur is not None and cur.text == text:
                cur.source_episode_ids.append(episode)
                s.add_note(cur)
                return cur.id
            s.add_note(Note(id=nid, user_id=user, kind=NoteKind(slot.split(":")[0]), text=text, slot=slot,
                            valid_at=at, source_episode_ids=[episode], created_at=at))
            if cur is not None:
                s.supersede_note(cur.id, nid, at)
            return nid
        return op

    def op_delete_note(self, user: str) -> Callable[[GraphStore], Any]:
        nid = self.rng.choice(sorted(self.notes[user]))
        owner = user if self.rng.random() < 0.8 else self.rng.choice(USERS)  # sometimes not theirs
        return lambda s: s.delete_note(owner, nid)

    def run(self, steps: int) -> None:
        self.both(lambda s: s.ensure_user("u1"))
        self.both(lambda s: s.ensure_user("u2", name="Second user"))
        for step in range(steps):
            user = self.rng.choice(USERS)
            choices = [self.op_episodes, self.op_resolve, self.op_note, self.op_note]
            if self.episodes[user]:
                choices += [self.op_process, self.op_mentions] if self.entities[user] else [self.op_process]
            if self.entities[user]:
                choices += [self.op_relation] * 3
            if self.relations[user]:
                choices.append(self.op_invalidate)
            if self.notes[user]:
                choices.append(self.op_delete_note)
            if self.rng.random() < 0.15:
                snapshot = self.tracking()
                fail = self.rng.random() < 0.3
                self.in_batch([self.rng.choice(choices)(user) for _ in range(3)], fail)
                if fail:
                    self.restore(snapshot)
            else:
                self.both(self.rng.choice(choices)(user))
            if step == steps // 2:
                self.both(lambda s: s.delete_user("u3"))
                for tracked in (self.entities, self.relations, self.episodes, self.notes):
                    tracked["u3"] = set()

    def tracking(self) -> dict[str, dict[str, set[str]]]:
        return {k: {u: set(v) for u, v in getattr(self, k).items()}
                for k in ("entities", "relations", "episodes", "notes")}

    def restore(self, snapshot: dict[str, dict[str, set[str]]]) -> None:
        for k, v in snapshot.items():
            setattr(self, k, v)


def same_ranking(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> None:
    """Scores equal position by position; ids equal except among ties (and ties at the cut)."""
    assert len(a) == len(b)
    for (_, x), (_, y) in zip(a, b, strict=True):
        assert x == pytest.approx(y, abs=1e-6)
    cut = a[-1][1] if a else 0.0
    for one, other in ((a, dict(b)), (b, dict(a))):
        for eid, score in one:
            if score > cut + 1e-6:
                assert other.get(eid) == pytest.approx(score, abs=1e-6)


def by_id(items: list[Any]) -> list[Any]:
    return sorted(items, key=lambda x: x.id)


@pytest.fixture(params=[11, 22, 33])
def stores(request, graph_store) -> Iterator[tuple[tuple[GraphStore, GraphStore], Workload]]:
    pair = (graph_store("embedded"), graph_store("neo4j"))
    for s in pair:
        s.open()
    work = Workload(pair, request.param)
    work.run(steps=200)
    yield pair, work
    for s in pair:
        s.close()


def test_same_answers_from_every_read(stores) -> None:
    (emb, neo), work = stores
    rng = random.Random(7)

    def same(call: Callable[[GraphStore], Any], normalise_: Callable[[Any], Any] = lambda x: x) -> Any:
        a, b = normalise_(call(emb)), normalise_(call(neo))
        assert a == b
        return a

    all_entities = sorted(set().union(*work.entities.values())) + ["ent_missing"]
    all_episodes = sorted(set().union(*work.episodes.values())) + ["ep-missing"]
    same(lambda s: s.pending_episodes())
    same(lambda s: s.pending_episodes(limit=3))
    same(lambda s: s.all_item_ids(), lambda d: {k: sorted(v) for k, v in d.items()})
    same(lambda s: s.episodes_by_ids(all_episodes), by_id)
    same(lambda s: s.get_relations(sorted(set().union(*work.relations.values())) + ["rel-missing"]), by_id)
    same(lambda s: s.notes_by_ids(sorted(set().union(*work.notes.values())) + ["n-missing"]), by_id)
    for eid in all_entities:
        for user in [*USERS, "nobody"]:
            same(lambda s, u=user, e=eid: s.get_entity(u, e))
    for user in [*USERS, "nobody"]:
        same(lambda s, u=user: s.user_exists(u))
        same(lambda s, u=user: s.find_entities(u, None, limit=100))
        same(lambda s, u=user: s.find_entities(u, None, limit=4))
        for text in QUERIES:
            same(lambda s, u=user, t=text: s.find_entities(u, t, limit=100))
            same(lambda s, u=user, t=text: s.find_entities(u, t, limit=2))
        for session in SESSIONS:
            same(lambda s, u=user, x=session: s.next_seq(u, x))
            if session is not None:
                same(lambda s, u=user, x=session: s.session_episodes(u, x))
        same(lambda s, u=user: s.pending_episodes(limit=4, user_id=u))
        same(lambda s, u=user: s.all_item_ids(u), lambda d: {k: sorted(v) for k, v in d.items()})
        same(lambda s, u=user: s.get_episodes(u, all_episodes), by_id)
        same(lambda s, u=user: s.list_notes(u))
        same(lambda s, u=user: s.list_notes(u, include_history=True))
        for slot in SLOTS:
            same(lambda s, u=user, x=slot: s.current_note_by_slot(u, x))
        entities = sorted(work.entities.get(user, set()))
        for eid in [*entities, "ent_missing"]:
            for pred in PREDICATES:
                same(lambda s, u=user, e=eid, p=pred: s.current_relations(u, e, p), by_id)
            for depth in (0, 1, 2, 3):
                for invalid in (False, True):
                    same(lambda s, u=user, e=eid, d=depth, i=invalid: s.neighbors(u, e, d, i),
                         lambda g: (by_id(g.entities), by_id(g.relations)))
        for _ in range(5):
            picked = rng.sample(entities, min(len(entities), rng.randint(1, 3))) + ["ent_missing"]
            for invalid in (False, True):
                same(lambda s, u=user, p=picked, i=invalid: s.relations_of(u, p, i), by_id)
            for limit in (5, 100):
                same_ranking(emb.personalized_pagerank(user, picked, limit),
                             neo.personalized_pagerank(user, picked, limit))
            # the ranking of episodes, with and without the synonym edges between near names
            seeds = {e: 1.0 + i for i, e in enumerate(picked)}
            for synonyms in (None, Synonyms(NAME_VECTORS, 0.8), Synonyms(NAME_VECTORS, 0.6)):
                same_ranking(emb.rank_episodes(user, seeds, 20, synonyms=synonyms),
                             neo.rank_episodes(user, seeds, 20, synonyms=synonyms))
        same(lambda s, u=user: s.entity_names(u))
