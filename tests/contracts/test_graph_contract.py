"""One contract suite for the GraphStore protocol. Every backend runs these same assertions."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from hippograph.graph.base import GraphStore
from hippograph.graph.sqlite_store import SqliteGraphStore
from hippograph.models import Entity, Episode, Note, NoteKind, Relation, Role, new_id

T0 = datetime(2024, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["embedded"])
def store(request, tmp_path) -> Iterator[GraphStore]:
    s: GraphStore = SqliteGraphStore(tmp_path / "g.sqlite3")
    s.open()
    yield s
    s.close()


def ep(user: str, i: int, session: str = "s1", content: str | None = None) -> Episode:
    return Episode(id=f"{user}-ep{i}", user_id=user, session_id=session, role=Role.user,
                   content=content or f"message {i}", timestamp=T0 + timedelta(minutes=i), seq=i)


def ent(user: str, name: str, type_: str = "Thing") -> Entity:
    return Entity(id="", user_id=user, name=name, type=type_)


def test_user_entity_is_created_once(store: GraphStore) -> None:
    assert not store.user_exists("u1")
    a = store.ensure_user("u1")
    b = store.ensure_user("u1")
    assert a.id == b.id and a.is_user and store.user_exists("u1")


def test_episodes_are_idempotent_and_ordered(store: GraphStore) -> None:
    added = store.add_episodes([ep("u1", 0), ep("u1", 1)])
    again = store.add_episodes([ep("u1", 1), ep("u1", 2)])
    assert [e.id for e in added] == ["u1-ep0", "u1-ep1"]
    assert [e.id for e in again] == ["u1-ep2"]
    assert [e.id for e in store.session_episodes("u1", "s1")] == ["u1-ep0", "u1-ep1", "u1-ep2"]
    assert store.next_seq("u1", "s1") == 3
    assert store.next_seq("u1", "other") == 0


def test_pending_until_processed(store: GraphStore) -> None:
    store.add_episodes([ep("u1", 0), ep("u1", 1)])
    assert {e.id for e in store.pending_episodes()} == {"u1-ep0", "u1-ep1"}
    store.mark_processed(["u1-ep0"], "spacy")
    assert [e.id for e in store.pending_episodes()] == ["u1-ep1"]
    store.mark_processed(["u1-ep1"], "spacy")
    store.set_indexed(["u1-ep1"], False)
    assert store.all_item_ids("u1")["episode"] == ["u1-ep0"]


def test_entity_resolution_merges_normalised_names(store: GraphStore) -> None:
    first = store.resolve_entities("u1", [ent("u1", "the Northwest Region"), ent("u1", "Acme", "Organization")])
    second = store.resolve_entities("u1", [ent("u1", "northwest region"), ent("u1", "ACME")])
    assert [e.id for e in first] == [e.id for e in second]
    other_user = store.resolve_entities("u2", [ent("u2", "Acme")])
    assert other_user[0].id != first[1].id
    assert [e.name for e in store.find_entities("u1", "acme")] == ["Acme"]


def test_relations_dedupe_and_invalidate(store: GraphStore) -> None:
    user = store.ensure_user("u1")
    nw, = store.resolve_entities("u1", [ent("u1", "Northwest region")])
    r1 = Relation(id=new_id("rel"), user_id="u1", source_id=user.id, target_id=nw.id, predicate="MANAGES",
                  fact="I manage the Northwest region", valid_at=T0, source_episode_ids=["e1"])
    r2 = r1.model_copy(update={"id": new_id("rel"), "source_episode_ids": ["e2"]})
    stored1, = store.add_relations([r1])
    stored2, = store.add_relations([r2])
    assert stored2.id == stored1.id and stored2.source_episode_ids == ["e1", "e2"]
    assert [r.id for r in store.current_relations("u1", user.id, "MANAGES")] == [r1.id]
    store.invalidate_relations([r1.id], T0 + timedelta(days=1))
    assert store.current_relations("u1", user.id, "MANAGES") == []
    got, = store.get_relations([r1.id])
    assert got.invalid_at == T0 + timedelta(days=1)


def test_neighbors_and_pagerank(store: GraphStore) -> None:
    a, b, c, d = store.resolve_entities("u1", [ent("u1", n) for n in ("Alice", "Bob", "Northwest", "Seattle")])
    for s, t, p in ((a, b, "MANAGES"), (b, c, "WORKS_IN"), (c, d, "HAS_OFFICE_IN")):
        store.add_relations([Relation(id=new_id("rel"), user_id="u1", source_id=s.id, target_id=t.id,
                                      predicate=p, fact=f"{s.name} {p} {t.name}", valid_at=T0)])
    one = store.neighbors(b.id, depth=1)
    assert {e.name for e in one.entities} == {"Alice", "Bob", "Northwest"}
    assert {r.predicate for r in one.relations} == {"MANAGES", "WORKS_IN"}
    two = store.neighbors(a.id, depth=2)
    assert {e.name for e in two.entities} == {"Alice", "Bob", "Northwest"}
    ranked = [eid for eid, _ in store.personalized_pagerank("u1", [a.id])]
    assert ranked.index(b.id) < ranked.index(d.id)
    assert {r.predicate for r in store.relations_of("u1", [c.id])} == {"WORKS_IN", "HAS_OFFICE_IN"}


def test_invalid_relations_leave_traversal(store: GraphStore) -> None:
    a, b = store.resolve_entities("u1", [ent("u1", "Alice"), ent("u1", "Bob")])
    r = Relation(id=new_id("rel"), user_id="u1", source_id=a.id, target_id=b.id, predicate="KNOWS",
                 fact="Alice knows Bob", valid_at=T0)
    store.add_relations([r])
    store.invalidate_relations([r.id], T0 + timedelta(hours=1))
    assert {e.name for e in store.neighbors(a.id, 1).entities} == {"Alice"}
    assert {e.name for e in store.neighbors(a.id, 1, include_invalid=True).entities} == {"Alice", "Bob"}


def test_notes_supersede_and_delete(store: GraphStore) -> None:
    old = Note(id="n1", user_id="u1", kind=NoteKind.fact, text="Manages the Northwest region",
               slot="fact:manage", valid_at=T0, source_episode_ids=["e1"])
    new = Note(id="n2", user_id="u1", kind=NoteKind.fact, text="Manages the whole country",
               slot="fact:manage", valid_at=T0 + timedelta(days=30), source_episode_ids=["e9"])
    store.add_note(old)
    store.add_note(new)
    store.supersede_note("n1", "n2", new.valid_at)
    assert store.current_note_by_slot("u1", "fact:manage").id == "n2"
    assert [n.id for n in store.list_notes("u1")] == ["n2"]
    history = {n.id: n for n in store.list_notes("u1", include_history=True)}
    assert history["n1"].invalid_at == new.valid_at and history["n1"].superseded_by == "n2"
    assert store.delete_note("u1", "n2") and not store.delete_note("u1", "n2")
    assert not store.delete_note("u2", "n1")


def test_delete_user_forgets_everything_of_that_user_only(store: GraphStore) -> None:
    for user in ("u1", "u2"):
        store.ensure_user(user)
        store.add_episodes([ep(user, 0)])
        x, y = store.resolve_entities(user, [ent(user, "Alice"), ent(user, "Bob")])
        store.add_relations([Relation(id=new_id("rel"), user_id=user, source_id=x.id, target_id=y.id,
                                      predicate="KNOWS", fact="Alice knows Bob", valid_at=T0)])
        store.link_mentions(f"{user}-ep0", [x.id])
        store.add_note(Note(id=f"{user}-n", user_id=user, kind=NoteKind.fact, text="x", slot="s", valid_at=T0))
    store.delete_user("u1")
    assert not store.user_exists("u1")
    assert store.find_entities("u1", None) == [] and store.list_notes("u1") == []
    assert store.session_episodes("u1", "s1") == []
    assert all(not ids for ids in store.all_item_ids("u1").values())
    assert store.user_exists("u2") and len(store.find_entities("u2", None)) == 3
    assert store.list_notes("u2")[0].id == "u2-n"


def test_durable_across_reopen(tmp_path) -> None:
    s = SqliteGraphStore(tmp_path / "g.sqlite3")
    s.open()
    s.ensure_user("u1")
    s.add_episodes([ep("u1", 0)])
    s.close()
    s2 = SqliteGraphStore(tmp_path / "g.sqlite3")
    s2.open()
    assert [e.id for e in s2.session_episodes("u1", "s1")] == ["u1-ep0"]
    s2.close()
