"""The VectorStore contract, compaction part: `compact()` keeps every live point as it was (payload,
vectors, payload indexes, lexical statistics) and, in the embedded store, leaves nothing deleted in
any file, even when a compaction was cut short."""

from __future__ import annotations

import shutil
from pathlib import Path

from hippograph.models import MemoryKind
from hippograph.vectors.base import VectorFilter, VectorStore
from hippograph.vectors.edge_store import EdgeVectorStore
from tests.contracts.test_vector_contract import (  # noqa: F401  (make_store: the suite's fixture)
    DIM,
    Factory,
    ids_of,
    lexical,
    make_store,
    put,
    record,
    unit,
)

SECRET = "zebulon-quartz-7731"


def seeded(store: VectorStore) -> None:
    records = [record(f"ep_{i}", f"note {i} about the harbour and boat number {i}", minutes=i,
                      kind=MemoryKind.note if i % 3 == 0 else MemoryKind.episode, session=f"s{i % 2}",
                      extra={"role": "user" if i % 2 else "assistant"})
               for i in range(40)]
    records.append(record("ep_secret", f"my locker code is {SECRET}", session="s0"))
    put(store, records, [unit(1, (i % 7) / 7, i / 40) for i in range(len(records))])
    store.delete(["ep_secret", "ep_3", "ep_4"])


def answers(store: VectorStore) -> list[list[tuple[str, float]]]:
    """Every matching point with its score, per filter: dense and lexical scores (IDF included) must
    not change; fused scores come from ranks, which ties may swap once segments are rewritten."""
    filters = [VectorFilter(user_id="u1"), VectorFilter(user_id="u1", kinds=[MemoryKind.note]),
               VectorFilter(user_id="u1", session_id="s1", extra={"role": "user"})]
    out = []
    for f in filters:
        out.append(sorted((h.id, round(h.score, 4)) for h in store.query(f, 100, dense=unit(1, 0.5))))
        out.append(sorted((h.id, round(h.score, 4)) for h in store.query(
            f, 100, sparse=lexical.encode_query("harbour boat 12"))))
        out.append(sorted((h.id, 0.0) for h in store.query(
            f, 100, dense=unit(1, 0.2, 0.3), sparse=lexical.encode_query("boat 7"))))
    return out


def test_compaction_keeps_every_live_point_as_it_was(make_store: Factory) -> None:  # noqa: F811
    store = make_store()
    seeded(store)
    before, got = answers(store), {h.id: h for h in store.get([f"ep_{i}" for i in range(40)])}
    store.compact()
    assert store.count() == 38 and store.has(["ep_secret", "ep_3", "ep_0"]) == {"ep_0"}
    assert answers(store) == before
    assert {h.id: h for h in store.get([f"ep_{i}" for i in range(40)])} == got
    put(store, [record("ep_new", "a new boat in the harbour")], [unit(0, 1)])  # still writable
    assert ids_of(store.query(VectorFilter(user_id="u1"), 1, dense=unit(0, 1))) == ["ep_new"]
    store.close()
    again = make_store()
    assert again.count() == 39


def files_holding(folder: Path, text: str) -> list[str]:
    return [str(f) for f in folder.rglob("*") if f.is_file() and text.encode() in f.read_bytes()]


def test_edge_compaction_leaves_nothing_deleted_in_any_file(tmp_path: Path) -> None:
    store = EdgeVectorStore(tmp_path / "edge", DIM)
    store.open()
    seeded(store)
    store.flush()
    assert files_holding(tmp_path, SECRET)  # deleted, yet still in the segment and the WAL
    store.compact()
    store.close()
    assert files_holding(tmp_path, SECRET) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edge"]


def test_edge_compaction_cut_short_is_finished_or_undone_on_open(tmp_path: Path) -> None:
    path = tmp_path / "edge"
    store = EdgeVectorStore(path, DIM)
    store.open()
    seeded(store)
    store.compact()
    store.close()
    # cut after the old copy moved aside and before the new one moved in: the new one is complete
    shutil.copytree(path, tmp_path / "edge.old")
    path.rename(tmp_path / "edge.compacting")
    store.open()
    assert store.count() == 38 and not (tmp_path / "edge.old").exists()
    store.close()
    # cut while copying: the partial copy goes, the store is as it was
    shutil.copytree(path, tmp_path / "edge.compacting")
    (tmp_path / "edge.compacting" / "edge_config.json").unlink()
    store.open()
    assert store.count() == 38 and sorted(p.name for p in tmp_path.iterdir()) == ["edge"]
    store.close()
