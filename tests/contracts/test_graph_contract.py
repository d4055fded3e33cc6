"""One contract suite for the GraphStore protocol. Every backend runs these same assertions."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from hippograph.errors import BackendUnavailable, InvalidInput
from hippograph.graph.base import GraphStore
from hippograph.graph.names import NameVectors, Synonyms
from hippograph.graph.neo4j_store import Neo4jGraphStore
from hippograph.models import AuditEvent, Entity, Episode, EpisodeKind, Note, NoteKind, Relation, Role, new_id
from hippograph.vectors.embedders import OnnxMiniLMEmbedder

T0 = datetime(2024, 1, 1, tzinfo=UTC)


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


def test_failed_attempts_are_counted_then_quarantined_until_released(store: GraphStore) -> None:
    store.add_episodes([ep("u1", 0), ep("u1", 1), ep("u2", 0)])
    at = T0 + timedelta(days=1)
    assert store.record_failure(["u1-ep0"], "ValueError: first", at, quarantine_after=2) == []
    first = store.get_episodes("u1", ["u1-ep0"])[0]
    assert (first.attempts, first.failure, first.quarantined_at) == (1, "ValueError: first", None)
    assert {e.id for e in store.pending_episodes()} == {"u1-ep0", "u1-ep1", "u2-ep0"}  # still tried
    assert store.record_failure(["u1-ep0"], "ValueError: again", at, quarantine_after=2) == ["u1-ep0"]
    assert store.record_failure(["u1-ep0"], "ValueError: thrice", at, quarantine_after=2) == []  # already
    assert {e.id for e in store.pending_episodes()} == {"u1-ep1", "u2-ep0"}
    assert [e.id for e in store.pending_episodes(user_id="u1")] == ["u1-ep1"]
    kept = store.quarantined_episodes()
    assert [(e.id, e.attempts, e.failure, e.quarantined_at) for e in kept] == [
        ("u1-ep0", 3, "ValueError: thrice", at)]
    assert kept[0].content == "message 0" and not kept[0].processed
    assert store.quarantined_episodes(user_id="u2") == []
    assert store.release_episodes("u2", ["u1-ep0"]) == []  # another user's: not theirs to release
    assert store.release_episodes("u1", ["u1-ep0", "u1-ep1"]) == ["u1-ep0"]
    again = store.get_episodes("u1", ["u1-ep0"])[0]
    assert (again.attempts, again.quarantined_at) == (0, None) and store.quarantined_episodes() == []
    assert {e.id for e in store.pending_episodes()} == {"u1-ep0", "u1-ep1", "u2-ep0"}
    store.mark_processed(["u1-ep0"], "spacy")  # a processed episode counts no failures
    assert store.record_failure(["u1-ep0"], "late", at, quarantine_after=1) == []
    assert store.get_episodes("u1", ["u1-ep0"])[0].processed


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
    notes, relations = store.superseded("u1", ["e2", "x"])
    assert notes == [] and [r.id for r in relations] == [r1.id]
    assert store.superseded("u1", ["x"]) == ([], []) and store.superseded("u2", ["e2"]) == ([], [])


def test_neighbors_and_pagerank(store: GraphStore) -> None:
    a, b, c, d = store.resolve_entities("u1", [ent("u1", n) for n in ("Alice", "Bob", "Northwest", "Seattle")])
    for s, t, p in ((a, b, "MANAGES"), (b, c, "WORKS_IN"), (c, d, "HAS_OFFICE_IN")):
        store.add_relations([Relation(id=new_id("rel"), user_id="u1", source_id=s.id, target_id=t.id,
                                      predicate=p, fact=f"{s.name} {p} {t.name}", valid_at=T0)])
    one = store.neighbors("u1", b.id, depth=1)
    assert {e.name for e in one.entities} == {"Alice", "Bob", "Northwest"}
    assert {r.predicate for r in one.relations} == {"MANAGES", "WORKS_IN"}
    two = store.neighbors("u1", a.id, depth=2)
    # another user's entity is not there for this user: not the entity, not its neighbours
    assert store.get_entity("u2", a.id) is None and store.neighbors("u2", a.id, depth=2).entities == []
    assert {e.name for e in two.entities} == {"Alice", "Bob", "Northwest"}
    ranked = [eid for eid, _ in store.personalized_pagerank("u1", [a.id])]
    assert ranked.index(b.id) < ranked.index(d.id)
    assert {r.predicate for r in store.relations_of("u1", [c.id])} == {"WORKS_IN", "HAS_OFFICE_IN"}


def test_next_episodes_follow_within_their_session(store: GraphStore) -> None:
    store.add_episodes([ep("u1", 0), ep("u1", 1), ep("u1", 2), ep("u1", 3, session="s2"), ep("u2", 0)])
    after = store.next_episodes("u1", ["u1-ep0", "u1-ep2", "u1-ep3", "u2-ep0", "missing"])
    assert {k: v.id for k, v in after.items()} == {"u1-ep0": "u1-ep1"}  # ep2 ends s1; ep3 is alone in s2
    assert store.next_episodes("u1", []) == {}


def test_mentions_and_exact_names_and_episode_ranking(store: GraphStore) -> None:
    store.ensure_user("u1")
    store.add_episodes([ep("u1", i) for i in range(4)])
    acme, dana, lisbon, may = store.resolve_entities(
        "u1", [ent("u1", "Acme Corp", "Organization"), ent("u1", "Dana Kim", "Person"),
               ent("u1", "Lisbon", "Location"), ent("u1", "May 2024", "Date")])
    store.link_mentions("u1-ep0", [acme.id, may.id])
    store.link_mentions("u1-ep1", [acme.id, dana.id, may.id])
    store.link_mentions("u1-ep2", [dana.id, may.id])
    store.link_mentions("u1-ep3", [lisbon.id, may.id])
    assert store.mentions_of("u1", [acme.id, lisbon.id, "nope"]) == {acme.id: ["u1-ep0", "u1-ep1"],
                                                                    lisbon.id: ["u1-ep3"]}
    assert store.mentions_of("u2", [acme.id]) == {}
    # a limit leaves out what more episodes mention (May: four), and keeps the rest whole
    assert store.mentions_of("u1", [acme.id, may.id, lisbon.id], limit=2) == {acme.id: ["u1-ep0", "u1-ep1"],
                                                                             lisbon.id: ["u1-ep3"]}
    assert store.mentions_of("u1", [may.id], limit=4) == {may.id: ["u1-ep0", "u1-ep1", "u1-ep2", "u1-ep3"]}
    assert store.mentions_of("u1", [acme.id], limit=1) == {}
    named = store.entities_named("u1", ["acme corp", "dana kim", "nobody"])
    assert {k: [e.id for e in v] for k, v in named.items()} == {"acme corp": [acme.id], "dana kim": [dana.id]}
    # seeded with Acme: its episodes first, then ep2 through Dana; ep3 shares only a date, which ties nothing
    ranked = [eid for eid, _ in store.rank_episodes("u1", {acme.id: 1.0}, limit=10)]
    assert ranked[:2] in (["u1-ep0", "u1-ep1"], ["u1-ep1", "u1-ep0"]) and ranked[2] == "u1-ep2"
    assert "u1-ep3" not in ranked
    # an episode seed is not returned, what it leads to is
    from_ep0 = [eid for eid, _ in store.rank_episodes("u1", {"u1-ep0": 1.0}, limit=10)]
    assert from_ep0[0] == "u1-ep1" and "u1-ep0" not in from_ep0
    assert store.rank_episodes("u1", {"unknown": 1.0}) == []


@pytest.fixture(scope="module")
def names() -> NameVectors:
    return NameVectors(OnnxMiniLMEmbedder())


def test_synonym_edges_reach_a_passage_through_a_near_synonym(store: GraphStore, names: NameVectors) -> None:
    store.ensure_user("u1")
    store.add_episodes([ep("u1", i) for i in range(3)])
    corp, acme, dana, may = store.resolve_entities(
        "u1", [ent("u1", "Acme Corporation", "Organization"), ent("u1", "Acme", "Organization"),
               ent("u1", "Dana Kim", "Person"), ent("u1", "May 2024", "Date")])
    store.link_mentions("u1-ep0", [corp.id, may.id])
    store.link_mentions("u1-ep1", [acme.id])
    store.link_mentions("u1-ep2", [dana.id, may.id])
    # what a query is linked to by meaning: the named entities of the ranking graph, dates left out
    assert store.entity_names("u1") == dict(sorted({corp.id: "Acme Corporation", acme.id: "Acme",
                                                    dana.id: "Dana Kim"}.items()))
    assert store.entity_names("u2") == {}
    assert [e for e, _ in store.rank_episodes("u1", {corp.id: 1.0})] == ["u1-ep0"]
    synonyms = Synonyms(names, 0.7)  # "Acme" and "Acme Corporation" score 0.79 (int8 MiniLM) to 0.82 (fp32)
    assert [e for e, _ in store.rank_episodes("u1", {corp.id: 1.0}, synonyms=synonyms)] == ["u1-ep0", "u1-ep1"]
    assert [e for e, _ in store.rank_episodes("u1", {corp.id: 1.0}, synonyms=Synonyms(names, 0.95))] == ["u1-ep0"]
    # a new mention changes the graph: the synonyms are computed again with it
    store.link_mentions("u1-ep2", [acme.id])
    ranked = [e for e, _ in store.rank_episodes("u1", {corp.id: 1.0}, synonyms=synonyms)]
    assert ranked[0] == "u1-ep0" and set(ranked) == {"u1-ep0", "u1-ep1", "u1-ep2"}


def test_speakers_are_found_by_name_without_case(store: GraphStore) -> None:
    melanie = ep("u1", 0).model_copy(update={"name": "Melanie"})
    jon = ep("u1", 1).model_copy(update={"name": "Jon", "role": Role.assistant})
    doc = Episode(id="u1-doc", user_id="u1", kind=EpisodeKind.document, name="Gina", title="notes",
                  content="Gina wrote this", timestamp=T0)
    other = ep("u2", 0).model_copy(update={"name": "Caroline"})
    store.add_episodes([melanie, jon, doc, other])
    assert store.speakers_named("u1", ["melanie", "JON", "gina", "caroline", "what"]) == ["Jon", "Melanie"]
    assert store.speakers_named("u2", ["melanie", "caroline"]) == ["Caroline"]
    assert store.speakers_named("u1", []) == []


def test_invalid_relations_leave_traversal(store: GraphStore) -> None:
    a, b = store.resolve_entities("u1", [ent("u1", "Alice"), ent("u1", "Bob")])
    r = Relation(id=new_id("rel"), user_id="u1", source_id=a.id, target_id=b.id, predicate="KNOWS",
                 fact="Alice knows Bob", valid_at=T0)
    store.add_relations([r])
    store.invalidate_relations([r.id], T0 + timedelta(hours=1))
    assert {e.name for e in store.neighbors("u1", a.id, 1).entities} == {"Alice"}
    assert {e.name for e in store.neighbors("u1", a.id, 1, include_invalid=True).entities} == {"Alice", "Bob"}


def test_notes_supersede_and_delete(store: GraphStore) -> None:
    old = Note(id="n1", user_id="u1", kind=NoteKind.fact, text="Manages the Northwest region",
               slot="fact:manage", valid_at=T0, source_episode_ids=["e1"])
    new = Note(id="n2", user_id="u1", kind=NoteKind.fact, text="Manages the whole country",
               slot="fact:manage", valid_at=T0 + timedelta(days=30), source_episode_ids=["e9"])
    store.add_note(old)
    store.add_note(new)
    assert store.superseded("u1", ["e1", "e9"]) == ([], [])  # read (and, where kept, cached) before the change
    store.supersede_note("n1", "n2", new.valid_at)
    assert store.current_note_by_slot("u1", "fact:manage").id == "n2"
    assert [n.id for n in store.list_notes("u1")] == ["n2"]
    history = {n.id: n for n in store.list_notes("u1", include_history=True)}
    assert history["n1"].invalid_at == new.valid_at and history["n1"].superseded_by == "n2"
    notes, relations = store.superseded("u1", ["e1", "e9"])
    assert [n.id for n in notes] == ["n1"] and relations == [] and store.superseded("u1", ["e9"]) == ([], [])
    assert store.delete_note("u1", "n2") and not store.delete_note("u1", "n2")
    assert not store.delete_note("u2", "n1")


def test_sessions_track_activity_and_expire_whole(store: GraphStore) -> None:
    store.ensure_user("u1")
    store.ensure_user("u2")
    store.add_episodes([ep("u1", 0, "old"), ep("u1", 1, "old"), ep("u1", 2, "live"), ep("u2", 3, "old"),
                        ep("u1", 4, session=None)])
    x, = store.resolve_entities("u1", [ent("u1", "Alice")])
    store.link_mentions("u1-ep0", [x.id])
    store.touch_sessions("u1", ["old"], T0)
    store.touch_sessions("u1", ["old"], T0 - timedelta(hours=1))  # an earlier time never moves it back
    store.touch_sessions("u1", ["live"], T0 + timedelta(hours=2))
    store.touch_sessions("u2", ["old"], T0)
    sessions = store.list_sessions("u1")
    assert [(s.session_id, s.last_active_at) for s in sessions] == [("live", T0 + timedelta(hours=2)), ("old", T0)]
    assert sessions[1].started_at == T0
    before = T0 + timedelta(hours=1)
    assert [(s.user_id, s.session_id) for s in store.expired_sessions(before)] == [("u1", "old"), ("u2", "old")]
    assert [s.session_id for s in store.expired_sessions(before, user_id="u2")] == ["old"]
    assert store.expired_sessions(before, limit=1)[0].user_id == "u1"
    assert sorted(store.delete_session("u1", "old")) == ["u1-ep0", "u1-ep1"]
    assert store.session_episodes("u1", "old") == [] and store.mentions_of("u1", [x.id]) == {}
    assert [s.session_id for s in store.list_sessions("u1")] == ["live"]
    assert [e.id for e in store.get_episodes("u1", ["u1-ep2", "u1-ep4"])] == ["u1-ep2", "u1-ep4"]
    assert [e.id for e in store.session_episodes("u2", "old")] == ["u2-ep3"]  # another user's session stays
    assert store.delete_session("u1", "old") == []
    store.delete_user("u2")
    assert store.list_sessions("u2") == [] and store.expired_sessions(before) == []


def test_delete_episodes_of_the_user_only(store: GraphStore) -> None:
    store.ensure_user("u1")
    store.add_episodes([ep("u1", 0), ep("u1", 1), ep("u2", 2)])
    x, = store.resolve_entities("u1", [ent("u1", "Alice")])
    store.link_mentions("u1-ep0", [x.id])
    assert store.delete_episodes("u1", ["u1-ep0", "u2-ep2", "nope"]) == ["u1-ep0"]
    assert [e.id for e in store.session_episodes("u1", "s1")] == ["u1-ep1"]
    assert store.mentions_of("u1", [x.id]) == {} and store.get_episodes("u2", ["u2-ep2"])


def test_notes_keep_confidence_and_can_be_retired(store: GraphStore) -> None:
    store.add_note(Note(id="n1", user_id="u1", kind=NoteKind.preference, text="Likes tea", slot="pref:tea",
                        valid_at=T0, confidence=0.85))
    assert store.notes_by_ids(["n1"])[0].confidence == 0.85
    store.supersede_note("n1", None, T0 + timedelta(days=1))
    retired = store.notes_by_ids(["n1"])[0]
    assert retired.invalid_at == T0 + timedelta(days=1) and retired.superseded_by is None
    assert store.list_notes("u1") == [] and store.current_note_by_slot("u1", "pref:tea") is None


def test_audit_log_appends_in_order_and_filters_by_item(store: GraphStore) -> None:
    def event(i: int, user: str, action: str, item: str, related: str | None = None) -> AuditEvent:
        return AuditEvent(id=f"{user}-a{i}", user_id=user, at=T0 + timedelta(minutes=i // 2), actor="extractor:spacy",
                          action=action, item_kind="note", item_id=item, text=f"text {i}", related_id=related)

    store.ensure_user("u1")
    store.ensure_user("u2")
    with store.batch():
        store.add_audit([event(0, "u1", "create", "n1"), event(1, "u1", "create", "n2", "n1"),
                         event(2, "u1", "supersede", "n1", "n2")])
    store.add_audit([event(3, "u1", "delete", "n2"), event(0, "u2", "create", "x")])
    store.add_audit([event(3, "u1", "delete", "n2")])  # a retried write adds nothing
    log = store.audit_log("u1")
    assert [(e.action, e.item_id) for e in log] == [("create", "n1"), ("create", "n2"), ("supersede", "n1"),
                                                    ("delete", "n2")]
    assert log[2].related_id == "n2" and log[2].at == T0 + timedelta(minutes=1) and log[0].text == "text 0"
    assert [e.id for e in store.audit_log("u1", item_id="n1")] == ["u1-a0", "u1-a1", "u1-a2"]
    assert [e.id for e in store.audit_log("u1", limit=2)] == ["u1-a0", "u1-a1"]
    store.add_audit([AuditEvent(id="u1-m", user_id="u1", at=T0, actor="agent:a", action="create", item_kind="memory",
                                item_id="ep1", session_id="s1")])
    assert [(e.id, e.session_id) for e in store.audit_log("u1", item_kind="memory")] == [("u1-m", "s1")]
    assert len(store.audit_log("u1", item_kind="note")) == 4
    store.delete_user("u1")
    assert store.audit_log("u1") == [] and [e.id for e in store.audit_log("u2")] == ["u2-a0"]


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


@pytest.mark.parametrize("backend", ["embedded", "neo4j"])
def test_durable_across_reopen(backend, graph_store) -> None:
    s = graph_store(backend)
    s.open()
    s.ensure_user("u1")
    s.add_episodes([ep("u1", 0)])
    s.close()
    s2 = graph_store(backend, fresh=False)
    s2.open()
    assert [e.id for e in s2.session_episodes("u1", "s1")] == ["u1-ep0"]
    s2.close()


def test_batch_is_all_or_nothing_and_reads_its_own_writes(store: GraphStore) -> None:
    user = store.ensure_user("u1")
    with pytest.raises(RuntimeError), store.batch():
        a, b = store.resolve_entities("u1", [ent("u1", "Alice"), ent("u1", "Bob")])
        store.add_relations([Relation(id="r1", user_id="u1", source_id=a.id, target_id=b.id, predicate="KNOWS",
                                      fact="Alice knows Bob", valid_at=T0)])
        with store.batch():  # a nested batch joins the outer one
            store.add_note(Note(id="n1", user_id="u1", kind=NoteKind.fact, text="x", slot="s", valid_at=T0))
        assert [r.id for r in store.current_relations("u1", a.id, "KNOWS")] == ["r1"]
        assert store.current_note_by_slot("u1", "s").id == "n1"
        raise RuntimeError("the ingest failed half-way")
    assert store.find_entities("u1", None) == [user]
    assert store.get_relations(["r1"]) == [] and store.list_notes("u1", include_history=True) == []
    with store.batch():
        store.resolve_entities("u1", [ent("u1", "Carol")])
    assert [e.name for e in store.find_entities("u1", "carol")] == ["Carol"]


def test_threads_share_one_store(store: GraphStore) -> None:
    def work(i: int) -> None:
        with store.batch():
            store.ensure_user(f"t{i}")
            store.add_episodes([ep(f"t{i}", j) for j in range(5)])
            store.resolve_entities(f"t{i}", [ent(f"t{i}", "Alice")])
        store.mark_processed([f"t{i}-ep{j}" for j in range(5)], "rules")

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, range(8)))
    assert all(len(store.session_episodes(f"t{i}", "s1")) == 5 for i in range(8))
    assert all([e.name for e in store.find_entities(f"t{i}", "ali")] == ["Alice"] for i in range(8))
    assert store.pending_episodes() == []


def test_timestamps_round_trip_with_their_offsets(store: GraphStore) -> None:
    summer = datetime(2024, 7, 1, 9, 30, 0, 123456, tzinfo=ZoneInfo("Europe/Berlin"))
    india = datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    store.add_episodes([ep("u1", 0).model_copy(update={"timestamp": summer}),
                        ep("u1", 1).model_copy(update={"timestamp": india})])
    got = store.session_episodes("u1", "s1")
    assert [e.timestamp for e in got] == [summer, india]
    assert [e.timestamp.utcoffset() for e in got] == [timedelta(hours=2), timedelta(hours=5, minutes=30)]
    store.add_note(Note(id="n1", user_id="u1", kind=NoteKind.fact, text="x", slot="s", valid_at=summer,
                        created_at=india))
    note, = store.notes_by_ids(["n1"])
    assert note.valid_at == summer and note.created_at == india and note.invalid_at is None


def test_resolution_upgrades_a_generic_type(store: GraphStore) -> None:
    first, again, typed = store.resolve_entities(
        "u1", [ent("u1", "Acme"), ent("u1", "acme"), ent("u1", "ACME", "Organization")])
    assert first.id == again.id == typed.id
    assert (first.type, again.type, typed.type) == ("Thing", "Thing", "Organization")
    store.resolve_entities("u1", [ent("u1", "Acme", "Concept")])  # no way back to a generic type
    assert store.get_entity("u1", first.id).type == "Organization"


def test_relation_ids_are_found_by_a_fresh_store_object(store: GraphStore, graph_store, request) -> None:
    a, b = store.resolve_entities("u1", [ent("u1", "Alice"), ent("u1", "Bob")])
    store.add_relations([Relation(id=f"r{i}", user_id="u1", source_id=a.id, target_id=b.id, predicate=p,
                                  fact=f"Alice {p} Bob", valid_at=T0) for i, p in enumerate(["KNOWS", "LIKES"])])
    store.close()
    other = graph_store(request.node.callspec.params["store"], fresh=False)
    other.open()
    try:
        assert [r.predicate for r in other.get_relations(["r1", "r0", "nope"])] == ["KNOWS", "LIKES"]
        other.invalidate_relations(["r1"], T0 + timedelta(days=1))
        assert [r.id for r in other.relations_of("u1", [a.id])] == ["r0"]
        other.delete_user("u1")
        assert other.get_relations(["r0", "r1"]) == []
    finally:
        other.close()
        store.open()


# --- the Neo4j model: what a Neo4j Browser user sees ------------------------------------------------
@pytest.fixture
def neo(graph_store) -> Iterator[GraphStore]:
    s = graph_store("neo4j")
    s.open()
    yield s
    s.close()


def fill(store: GraphStore, user: str) -> tuple[Entity, Entity, Entity]:
    me = store.ensure_user(user)
    store.add_episodes([ep(user, 0, content="I manage the Northwest region at Acme")])
    nw, acme = store.resolve_entities(user, [ent(user, "Northwest region", "Region"),
                                             ent(user, "Acme", "Organization")])
    store.add_relations([Relation(id=f"{user}-r1", user_id=user, source_id=me.id, target_id=nw.id,
                                  predicate="MANAGES", fact="I manage the Northwest region", valid_at=T0,
                                  source_episode_ids=[f"{user}-ep0"])])
    store.link_mentions(f"{user}-ep0", [nw.id, acme.id])
    for i in (1, 2):
        store.add_note(Note(id=f"{user}-n{i}", user_id=user, kind=NoteKind.fact, text=f"fact {i}", slot="s",
                            valid_at=T0 + timedelta(days=i), source_episode_ids=[f"{user}-ep0"]))
    store.supersede_note(f"{user}-n1", f"{user}-n2", T0 + timedelta(days=2))
    return me, nw, acme


def test_neo4j_model_reads_as_a_graph(neo: GraphStore, neo4j_cypher) -> None:
    me, nw, acme = fill(neo, "u1")
    assert neo4j_cypher("MATCH (:User {user_id: 'u1'})-[:IS]->(e:Entity:Person {is_user: true}) "
                        "RETURN e.id AS id") == [{"id": me.id}]
    labels = {r["name"]: set(r["labels"]) for r in neo4j_cypher("MATCH (e:Entity) RETURN e.name AS name, "
                                                                 "labels(e) AS labels")}
    assert labels == {"u1": {"Entity", "Person"}, "Northwest region": {"Entity", "Region"},
                      "Acme": {"Entity", "Organization"}}
    rel, = neo4j_cypher("MATCH (:Entity {id: $a})-[r:MANAGES]->(:Entity {id: $b}) RETURN r {.*} AS r",
                        a=me.id, b=nw.id)
    assert rel["r"]["fact"] == "I manage the Northwest region" and rel["r"]["episodes"] == ["u1-ep0"]
    assert rel["r"]["valid_at"].to_native() == T0 and rel["r"]["user_id"] == "u1"
    mentioned = neo4j_cypher("MATCH (:Episode {id: 'u1-ep0'})-[:MENTIONS]->(e:Entity) RETURN e.id AS id")
    assert {r["id"] for r in mentioned} == {nw.id, acme.id}
    assert neo4j_cypher("MATCH (:User {user_id: 'u1'})-[:HAS_NOTE]->(n:Note)-[:SUPERSEDED_BY]->(m:Note)"
                        "-[:FROM]->(e:Episode) RETURN n.id AS n, m.id AS m, e.id AS e") == [
        {"n": "u1-n1", "m": "u1-n2", "e": "u1-ep0"}]
    assert neo4j_cypher("MATCH (n) WHERE n.user_id IS NULL RETURN count(n) AS c") == [{"c": 0}]
    assert neo4j_cypher("MATCH ()-[r]->() WHERE r.user_id IS NULL RETURN count(r) AS c") == [{"c": 0}]


def test_neo4j_retyped_entity_changes_label(neo: GraphStore, neo4j_cypher) -> None:
    neo.resolve_entities("u1", [ent("u1", "Acme")])
    neo.resolve_entities("u1", [ent("u1", "acme", "Organization"), ent("u1", "Work of art", "WORK_OF_ART")])
    rows = neo4j_cypher("MATCH (e:Entity) RETURN e.name AS name, labels(e) AS labels ORDER BY name")
    assert [(r["name"], set(r["labels"])) for r in rows] == [
        ("Acme", {"Entity", "Organization"}), ("Work of art", {"Entity"})]  # not a label: just :Entity


def test_neo4j_rejects_predicates_that_are_not_relationship_types(neo: GraphStore, neo4j_cypher) -> None:
    me, nw, _ = fill(neo, "u1")
    for bad in ("MANAGES; DROP", "MANAGES]->() DETACH DELETE (n) //", "manages", "", "1ST", "A" * 51):
        with pytest.raises(InvalidInput):
            neo.add_relations([Relation(id=new_id("rel"), user_id="u1", source_id=me.id, target_id=nw.id,
                                        predicate=bad, fact="x", valid_at=T0)])
        assert neo.current_relations("u1", me.id, bad) == []
    assert neo4j_cypher("MATCH (:Entity)-[r]->(:Entity) RETURN type(r) AS t") == [{"t": "MANAGES"}]


def test_neo4j_relations_need_stored_ends_of_the_user(neo: GraphStore) -> None:
    me, _, _ = fill(neo, "u1")
    other, = neo.resolve_entities("u2", [ent("u2", "Elsewhere")])
    for target in (other.id, "ent_missing"):
        with pytest.raises(InvalidInput):
            neo.add_relations([Relation(id=new_id("rel"), user_id="u1", source_id=me.id, target_id=target,
                                        predicate="KNOWS", fact="x", valid_at=T0)])


def test_neo4j_delete_user_leaves_nothing_of_the_user(neo: GraphStore, neo4j_cypher) -> None:
    fill(neo, "u1")
    fill(neo, "u2")
    neo.delete_user("u1")
    assert neo4j_cypher("MATCH (n {user_id: 'u1'}) RETURN count(n) AS c") == [{"c": 0}]
    assert neo4j_cypher("MATCH ()-[r {user_id: 'u1'}]->() RETURN count(r) AS c") == [{"c": 0}]
    assert neo4j_cypher("MATCH (n {user_id: 'u2'}) RETURN count(n) AS c") == [{"c": 7}]


def test_neo4j_unreachable_or_missing_database_is_backend_unavailable(neo4j_test_uri: str) -> None:
    down = Neo4jGraphStore("bolt://127.0.0.1:1")  # no I/O before open()
    with pytest.raises(BackendUnavailable, match="cannot reach"):
        down.open()
    with pytest.raises(BackendUnavailable, match="not open"):
        down.user_exists("u1")
    with pytest.raises(BackendUnavailable, match="does not exist"):
        Neo4jGraphStore(neo4j_test_uri, database="nosuchdb").open()
