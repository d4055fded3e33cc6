"""The same seeded workload on both stores gives the same top-k (up to ties)."""

from __future__ import annotations

import dataclasses
import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from hippograph.models import MemoryKind, VectorHit, VectorRecord
from hippograph.vectors.base import SparseVec, VectorFilter, VectorStore
from hippograph.vectors.edge_store import EdgeVectorStore
from hippograph.vectors.lexical import SparseEncoder
from hippograph.vectors.payload import RRF_K, prefetch_limit
from hippograph.vectors.qdrant_store import QdrantVectorStore
from tests.contracts.conftest import drop_qdrant_collection, qdrant_server_kwargs

DIM = 16
N_POINTS = 300
N_QUERIES = 40
T0 = datetime(2025, 1, 1, tzinfo=UTC)
USERS = ["u1", "u2", "u3"]
SESSIONS = ["s1", "s2", "s3", "s4", None]
WORDS = [
    "apple",
    "river",
    "mountain",
    "coffee",
    "budget",
    "python",
    "guitar",
    "doctor",
    "paris",
    "train",
    "meeting",
    "invoice",
    "garden",
]
lexical = SparseEncoder()


def make_records(rng: random.Random, ids: range, tag: str = "") -> list[VectorRecord]:
    records = []
    for i in ids:
        words = rng.sample(WORDS, rng.randint(1, 4)) + [rng.choice(WORDS) for _ in range(rng.randint(0, 3))]
        records.append(
            VectorRecord(
                id=f"item_{i}",
                user_id=rng.choice(USERS),
                kind=rng.choice(list(MemoryKind)),
                text=" ".join(words) + tag,
                session_id=rng.choice(SESSIONS),
                timestamp=T0 + timedelta(hours=rng.randint(0, 24 * 30)),
            )
        )
    return records


def write(stores: tuple[VectorStore, ...], records: list[VectorRecord], rng: np.random.Generator) -> None:
    vectors = rng.standard_normal((len(records), DIM)).tolist()
    sparse = lexical.encode_documents([r.text for r in records])
    for start in range(0, len(records), 64):
        part = slice(start, start + 64)
        for store in stores:
            store.upsert(records[part], vectors[part], sparse[part])


def random_filter(rng: random.Random) -> VectorFilter:
    kwargs: dict = {"user_id": rng.choice(USERS)}
    if rng.random() < 0.4:
        kwargs["kinds"] = rng.sample(list(MemoryKind), rng.randint(1, 2))
    if rng.random() < 0.25:
        kwargs["session_id"] = rng.choice(SESSIONS[:-1])
    elif rng.random() < 0.25:
        kwargs["exclude_session_id"] = rng.choice(SESSIONS[:-1])
    if rng.random() < 0.3:
        kwargs["since"] = T0 + timedelta(days=rng.randint(0, 20))
    if rng.random() < 0.3:
        kwargs["until"] = T0 + timedelta(days=rng.randint(10, 30))
    if rng.random() < 0.15:
        kwargs["ids"] = [f"item_{i}" for i in rng.sample(range(N_POINTS), 60)]
    return VectorFilter(**kwargs)


def assert_same_ranking(a: list[VectorHit], b: list[VectorHit], what: str, tol: float = 1e-4) -> None:
    """Same scores rank by rank, and the same ids with the same scores, except among the points
    that tie with the last one (which of equal scores make the cut is free)."""
    assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=tol), what
    if not a:
        return
    cutoff = a[-1].score + tol
    above_a = {h.id: h.score for h in a if h.score > cutoff}
    above_b = {h.id: h.score for h in b if h.score > cutoff}
    assert above_a.keys() == above_b.keys(), what
    for item_id, score in above_a.items():
        assert score == pytest.approx(above_b[item_id], abs=tol), what


def rrf(lists: list[list[VectorHit]], limit: int) -> list[VectorHit]:
    """Reciprocal rank fusion as Qdrant does it: sum of 1 / (rank + k), rank counted from 0."""
    scores: dict[str, float] = {}
    hits: dict[str, VectorHit] = {}
    for ranked in lists:
        for rank, hit in enumerate(ranked):
            scores[hit.id] = scores.get(hit.id, 0.0) + 1.0 / (rank + RRF_K)
            hits[hit.id] = hit
    best = sorted(scores.items(), key=lambda item: -item[1])[:limit]
    return [dataclasses.replace(hits[item_id], score=score) for item_id, score in best]


def check(
    edge: VectorStore, qdrant: VectorStore, live: dict[str, VectorRecord], seed: int, exact_idf: bool = True
) -> None:
    assert edge.count() == qdrant.count() == len(live)
    for user in USERS:
        assert edge.count(user) == qdrant.count(user) == sum(r.user_id == user for r in live.values())
    rng = random.Random(seed)
    queries = np.random.default_rng(seed).standard_normal((N_QUERIES, DIM)).tolist()
    for n, dense in enumerate(queries):
        flt = random_filter(rng)
        k = rng.choice([1, 5, 10, 20])
        text = " ".join(rng.sample(WORDS, rng.randint(1, 3)))
        sparse = lexical.encode_query(text)
        what = f"seed {seed} query {n}: {flt} k={k} text={text!r}"
        assert_same_ranking(
            edge.query(flt, k, dense=dense), qdrant.query(flt, k, dense=dense), "dense " + what
        )
        if exact_idf:
            assert_same_ranking(
                edge.query(flt, k, sparse=sparse), qdrant.query(flt, k, sparse=sparse), "sparse " + what
            )
        else:  # the same matches, scored with slightly different IDF statistics
            assert ids_matching(edge, flt, sparse) == ids_matching(qdrant, flt, sparse), "sparse " + what
        for store in (edge, qdrant):
            # Hybrid = RRF of the store's own dense and sparse lists (their order among ties is the
            # store's own, so fused scores are compared per store, not across).
            depth = prefetch_limit(k)
            expected = rrf([store.query(flt, depth, dense=dense), store.query(flt, depth, sparse=sparse)], k)
            assert_same_ranking(store.query(flt, k, dense=dense, sparse=sparse), expected, "hybrid " + what)
            # a shallower fusion asked for: the best `k + 2` of each side only
            expected = rrf([store.query(flt, k + 2, dense=dense), store.query(flt, k + 2, sparse=sparse)], k)
            assert_same_ranking(store.query(flt, k, dense=dense, sparse=sparse, depth=k + 2), expected,
                                "hybrid, depth k + 2, " + what)


def ids_matching(store: VectorStore, flt: VectorFilter, sparse: SparseVec) -> set[str]:
    return {h.id for h in store.query(flt, N_POINTS * 2, sparse=sparse)}


@pytest.mark.parametrize("qdrant_side", ["qdrant-local", "qdrant-server"])
def test_same_top_k_through_writes_and_maintenance(tmp_path: Path, qdrant_side: str) -> None:
    # A tiny indexing threshold, so that maintain() really rebuilds segments (HNSW) for 300 points.
    collection = f"congruence_{uuid.uuid4().hex[:12]}"
    qdrant = (QdrantVectorStore({"location": ":memory:"}, "memory", DIM) if qdrant_side == "qdrant-local"
              else QdrantVectorStore(qdrant_server_kwargs(), collection, DIM))
    edge = EdgeVectorStore(tmp_path / "edge", DIM, indexing_threshold_kb=1)
    stores = (edge, qdrant)
    for store in stores:
        store.open()
    rng, vectors = random.Random(7), np.random.default_rng(7)
    live: dict[str, VectorRecord] = {}

    def upsert(records: list[VectorRecord]) -> None:
        write(stores, records, vectors)
        live.update((r.id, r) for r in records)

    def delete(ids: list[str]) -> None:
        for store in stores:
            store.delete(ids)
        for item_id in ids:
            live.pop(item_id, None)

    try:
        upsert(make_records(rng, range(N_POINTS)))
        check(edge, qdrant, live, seed=10)
        delete([f"item_{i}" for i in rng.sample(range(N_POINTS), 20)])
        upsert(make_records(rng, range(10), " rewritten"))  # new text and vectors for live and deleted ids
        # The server counts a deleted or replaced point in its segments' IDF statistics until they are
        # optimised, so there, after deletes, only the matches agree exactly (local mode recounts).
        exact = qdrant_side == "qdrant-local"
        check(edge, qdrant, live, seed=11, exact_idf=exact)

        assert edge.maintain()  # segments rebuilt: still the same answers
        check(edge, qdrant, live, seed=12, exact_idf=exact)

        # Writes after the rebuild. Qdrant keeps a replaced or deleted point of a rebuilt segment in
        # that segment's IDF statistics until the segment is vacuumed (20% deleted, 1000+ points),
        # so from here on only the matches, not the BM25 scores, agree exactly.
        upsert(make_records(rng, range(100, 130), " again"))
        delete([f"item_{i}" for i in rng.sample(range(N_POINTS), 15)])
        for store in stores:
            store.delete_user("u3")
        live = {k: r for k, r in live.items() if r.user_id != "u3"}
        upsert([r for r in make_records(rng, range(N_POINTS, N_POINTS + 40)) if r.user_id == "u3"])
        check(edge, qdrant, live, seed=13, exact_idf=False)

        edge.close()
        edge.open()
        check(edge, qdrant, live, seed=14, exact_idf=False)
    finally:
        edge.close()
        qdrant.close()
        if qdrant_side == "qdrant-server":
            drop_qdrant_collection(collection)
