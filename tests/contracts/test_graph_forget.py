"""The graph-store contract, forgetting part: every backend runs these same assertions (the cascade of
`graph.forget` over the protocol's primitives, and the primitives themselves)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hippograph.audit import audit_event
from hippograph.graph.base import GraphStore
from hippograph.graph.forget import forget_episodes, forget_note
from hippograph.models import Entity, Episode, Note, NoteKind, Relation, Role

T0 = datetime(2024, 1, 1, tzinfo=UTC)
SAID = {
    1: "I live in Seattle and I love hiking.",
    2: "We moved there in 2019. I live in Seattle now, near the lake.",
    3: "My sister Ana lives in Lisbon.",
}


def ep(i: int, content: str, session: str = "s1", client: str | None = None) -> Episode:
    return Episode(id=f"ep{i}", user_id="u1", session_id=session, role=Role.user, content=content,
                   client_id=client, timestamp=T0 + timedelta(minutes=i), seq=i)


def rel(rid: str, source: Entity, target: Entity, predicate: str, fact: str, sources: list[str]) -> Relation:
    return Relation(id=rid, user_id="u1", source_id=source.id, target_id=target.id, predicate=predicate, fact=fact,
                    valid_at=T0, source_episode_ids=sources)


def note(nid: str, text: str, sources: list[str], slot: str | None = None, days: int = 0) -> Note:
    return Note(id=nid, user_id="u1", kind=NoteKind.fact, text=text, slot=slot or f"fact:{nid}",
                valid_at=T0 + timedelta(days=days), source_episode_ids=sources)


def seed(store: GraphStore) -> dict[str, Entity]:
    """Alice said three things; what was extracted from them, with its sources."""
    me = store.ensure_user("u1", "Alice")
    store.add_episodes([ep(i, text, client=f"m{i}") for i, text in SAID.items()])
    seattle, hiking, ana, lisbon = store.resolve_entities("u1", [
        Entity(id="", user_id="u1", name=n, type=t)
        for n, t in (("Seattle", "Place"), ("hiking", "Activity"), ("Ana", "Person"), ("Lisbon", "Place"))])
    store.link_mentions("ep1", [seattle.id, hiking.id])
    store.link_mentions("ep2", [seattle.id])
    store.link_mentions("ep3", [ana.id, lisbon.id])
    store.add_relations([
        rel("r-seattle", me, seattle, "LIVES_IN", SAID[1], ["ep1", "ep2"]),
        rel("r-hiking", me, hiking, "LIKES", SAID[1], ["ep1"]),
        rel("r-lisbon", ana, lisbon, "LIVES_IN", SAID[3], ["ep3"]),
    ])
    store.add_note(note("n-old", "Likes golf", ["ep0"], slot="fact:hobby"))
    store.add_note(note("n-hike", "Loves hiking", ["ep1"], slot="fact:hobby", days=1))
    store.supersede_note("n-old", "n-hike", T0 + timedelta(days=1))
    store.add_note(note("n-home", "Lives in Seattle", ["ep1", "ep2"]))
    store.add_audit([audit_event("u1", "extractor:spacy", "create", "n-hike", "Loves hiking"),
                     audit_event("u1", "extractor:spacy", "create", "n-home", "Lives in Seattle")])
    return {"me": me, "seattle": seattle, "hiking": hiking, "ana": ana, "lisbon": lisbon}


def test_forgetting_an_episode_takes_what_only_it_said(store: GraphStore) -> None:
    ents = seed(store)
    gone = forget_episodes(store, "u1", ["ep1"])

    assert [e.id for e in gone.episodes] == ["ep1"] and store.get_episodes("u1", ["ep1"]) == []
    assert gone.notes == ["n-hike"] and gone.relations == ["r-hiking"]
    assert store.notes_by_ids(["n-hike"]) == [] and store.get_relations(["r-hiking"]) == []
    home, = store.notes_by_ids(["n-home"])
    assert home.source_episode_ids == ["ep2"] and home.text == "Lives in Seattle"
    seattle, = store.get_relations(["r-seattle"])
    assert seattle.source_episode_ids == ["ep2"]
    assert seattle.fact == "I live in Seattle now, near the lake."  # the remaining source's own sentence
    assert {r.id for r in gone.changed_relations} == {"r-seattle"} and [n.id for n in gone.changed_notes] == ["n-home"]
    # an entity only the deleted message named goes; one still mentioned stays
    assert gone.entities == [ents["hiking"].id] and store.get_entity("u1", ents["hiking"].id) is None
    assert store.get_entity("u1", ents["seattle"].id) is not None and store.get_entity("u1", ents["me"].id) is not None
    # the note the deleted one had replaced keeps its history but points at nothing that is gone
    old, = store.notes_by_ids(["n-old"])
    assert old.invalid_at is not None and old.superseded_by is None
    assert store.derived_from("u1", ["ep1"]) == ([], [])
    assert [e.text for e in store.audit_log("u1", "n-hike")] == [None]
    assert [e.text for e in store.audit_log("u1", "n-home")] == ["Lives in Seattle"]
    assert store.mentions_of("u1", [ents["seattle"].id]) == {ents["seattle"].id: ["ep2"]}
    assert [r.id for r in store.relations_of("u1", [ents["me"].id])] == ["r-seattle"]
    assert store.personalized_pagerank("u1", [ents["me"].id])  # traversal caches follow


def test_a_relation_left_without_its_words_is_said_neutrally(store: GraphStore) -> None:
    ents = seed(store)
    store.add_relations([rel("r-visit", ents["me"], ents["lisbon"], "VISITED", "I visited Lisbon in May.",
                             ["ep1", "ep-expired"])])
    store.add_relations([rel("r-visit2", ents["me"], ents["ana"], "KNOWS", "Ana and I go back.", ["ep1", "ep3"])])
    forget_episodes(store, "u1", ["ep1"])
    visit, = store.get_relations(["r-visit"])
    assert visit.source_episode_ids == ["ep-expired"]
    assert visit.fact == "I visited Lisbon in May."  # not a sentence of the deleted message: unchanged
    knows, = store.get_relations(["r-visit2"])
    assert knows.fact == "Ana and I go back."
    store.add_relations([rel("r-said", ents["me"], ents["lisbon"], "LIKES", SAID[2], ["ep2", "ep-expired"])])
    forget_episodes(store, "u1", ["ep2"])
    said, = store.get_relations(["r-said"])
    assert said.source_episode_ids == ["ep-expired"] and said.fact == "Alice likes Lisbon"


def test_forgetting_a_session_leaves_nothing_derived_only_from_it(store: GraphStore) -> None:
    seed(store)
    ids = [e.id for e in store.session_episodes("u1", "s1")]
    gone = forget_episodes(store, "u1", ids)
    assert sorted(gone.relations) == ["r-hiking", "r-lisbon", "r-seattle"]
    assert sorted(gone.notes) == ["n-hike", "n-home"]
    assert [n.id for n in store.list_notes("u1", include_history=True)] == ["n-old"]  # its source was elsewhere
    assert [e.name for e in store.find_entities("u1", None)] == ["Alice"]
    assert store.all_item_ids("u1") == {"episode": [], "note": [], "relation": []}


def test_forgetting_a_note_takes_the_relations_that_say_it(store: GraphStore) -> None:
    ents = seed(store)
    hike, = store.notes_by_ids(["n-hike"])
    gone = forget_note(store, "u1", hike)
    assert gone.notes == ["n-hike"] and gone.relations == ["r-hiking"]  # same message, names its target
    assert {r.id for r in store.get_relations(["r-hiking", "r-seattle"])} == {"r-seattle"}  # same message, other thing
    assert store.get_entity("u1", ents["hiking"].id) is not None  # the message still mentions it
    assert [e.text for e in store.audit_log("u1", "n-hike")] == [None]
    old, = store.notes_by_ids(["n-old"])
    assert old.superseded_by is None and old.invalid_at is not None


def test_expired_episodes_keep_only_their_client_ids(store: GraphStore) -> None:
    seed(store)
    store.add_episodes([ep(7, "no client id here", session="s2")])
    store.keep_client_ids("u1", {"ep1": "m1", "ep-gone": None})
    store.delete_session("u1", "s1")
    assert store.client_ids("u1", ["ep1", "ep2", "ep-gone", "ep7", "nope"]) == {
        "ep1": "m1", "ep-gone": "ep-gone", "ep7": "ep7"}
    assert store.client_ids("u2", ["ep1", "ep7"]) == {}  # another user's ids are not there
    forget_episodes(store, "u1", ["ep1"])  # deleting an expired message forgets its id too
    assert store.client_ids("u1", ["ep1"]) == {}
    home, = store.notes_by_ids(["n-home"])
    assert home.source_episode_ids == ["ep2"]


def test_orphans_are_only_entities_nothing_touches(store: GraphStore) -> None:
    ents = seed(store)
    lone, = store.resolve_entities("u1", [Entity(id="", user_id="u1", name="Oslo", type="Place")])
    ids = [ents["me"].id, ents["seattle"].id, ents["ana"].id, lone.id]
    assert store.drop_orphan_entities("u1", ids) == [lone.id]
    assert store.drop_orphan_entities("u2", [ents["seattle"].id]) == []


def test_rewrites_are_scoped_and_compaction_runs(store: GraphStore) -> None:
    seed(store)
    store.set_note_sources("u1", "n-home", ["ep2"])
    store.rewrite_relations([store.get_relations(["r-seattle"])[0].model_copy(
        update={"fact": "Alice lives in Seattle", "source_episode_ids": ["ep2"]})])
    store.delete_relations("u2", ["r-lisbon"])  # not u2's: nothing happens
    assert store.notes_by_ids(["n-home"])[0].source_episode_ids == ["ep2"]
    assert [(r.id, r.fact) for r in store.get_relations(["r-seattle", "r-lisbon"])] == [
        ("r-lisbon", SAID[3]), ("r-seattle", "Alice lives in Seattle")]
    store.compact()
    assert store.user_exists("u1")


def test_sqlite_full_compaction_scrubs_what_an_older_version_left(tmp_path) -> None:
    """A store written without secure_delete keeps deleted rows in its free pages; `compact(full=True)`
    (what `hippograph optimize` runs) rewrites the file without them."""
    import sqlite3

    from hippograph.graph.sqlite_store import SqliteGraphStore

    secret = "old-secret-" + "x" * 2000  # long enough to spill into an overflow page
    path = tmp_path / "g.sqlite3"
    store = SqliteGraphStore(path)
    store.open()
    store.add_episodes([ep(1, SAID[1]), ep(2, secret)])
    store.close()
    with sqlite3.connect(path) as conn:  # as a version without secure_delete deleted it
        conn.execute("PRAGMA secure_delete=OFF")
        conn.execute("DELETE FROM episodes WHERE id='ep2'")
    assert secret.encode() in path.read_bytes()
    store.open()
    store.compact(full=True)
    assert [e.id for e in store.get_episodes("u1", ["ep1", "ep2"])] == ["ep1"]
    store.close()
    assert all(secret[:40].encode() not in f.read_bytes() for f in tmp_path.iterdir() if f.is_file())
