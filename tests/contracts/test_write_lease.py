"""The write lease on Neo4j: two stores on one database (two API replicas) apply one user's writes one
after another; other users are not held up; a dead holder's lease runs out; a live holder keeps it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from hippograph.graph import lease
from hippograph.graph.neo4j_store import Neo4jGraphStore


@pytest.fixture
def replicas(graph_store: Callable[..., Neo4jGraphStore]) -> Iterator[tuple[Neo4jGraphStore, Neo4jGraphStore]]:
    a, b = graph_store("neo4j"), graph_store("neo4j", fresh=False)
    a.open()
    b.open()
    yield a, b
    a.close()
    b.close()


def _holding(hold: Callable[[], object], seconds: float, log: list[str], name: str) -> threading.Thread:
    """A thread that takes the lease, notes when, holds it for `seconds`, and notes when it lets go."""
    def run() -> None:
        with hold():  # type: ignore[attr-defined]
            log.append(f"{name} in")
            time.sleep(seconds)
            log.append(f"{name} out")
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _wait_for(log: list[str], entry: str) -> None:
    deadline = time.monotonic() + 10
    while entry not in log:
        assert time.monotonic() < deadline, f"{entry!r} never happened: {log}"
        time.sleep(0.01)


def test_one_user_one_writer_across_stores_and_other_users_go_on(replicas) -> None:
    a, b = replicas
    log: list[str] = []
    first = _holding(lambda: a.write_lease("u1"), 0.6, log, "a")
    _wait_for(log, "a in")
    second = _holding(lambda: b.write_lease("u1"), 0.0, log, "b")
    other = _holding(lambda: b.write_lease("u2"), 0.0, log, "other user")
    other.join(5)
    assert "other user out" in log and "a out" not in log  # u2 did not wait for u1's writer
    first.join(5)
    second.join(5)
    assert [e for e in log if not e.startswith("other")] == ["a in", "a out", "b in", "b out"]


def test_a_dead_holders_lease_runs_out_and_a_live_one_is_renewed(replicas, neo4j_cypher) -> None:
    a, b = replicas
    # a holder that died a moment ago, with 1.5 s of its lease left
    neo4j_cypher("CREATE (:WriteLease {user_id: 'u3', owner: 'gone:1:x', until: timestamp() + 1500})")
    started = time.monotonic()
    with b.write_lease("u3"):
        waited = time.monotonic() - started
    assert 1.0 < waited < 10
    # given back, and with no such user (none was made here) the node goes too
    assert neo4j_cypher("MATCH (l:WriteLease {user_id: 'u3'}) RETURN l") == []

    # a live holder with a 0.6 s lease, working for 2 s: renewed, never taken from it
    log: list[str] = []
    short = lambda: lease.hold("u4", a._take, a._renew, a._release, lease_ms=600)
    first = _holding(short, 2.0, log, "a")
    _wait_for(log, "a in")
    second = _holding(lambda: b.write_lease("u4"), 0.0, log, "b")
    first.join(10)
    second.join(10)
    assert log == ["a in", "a out", "b in", "b out"]


def test_concurrent_writers_on_two_stores_lose_no_update(replicas, neo4j_cypher) -> None:
    # read, think, write back: without one writer at a time, updates are lost
    a, b = replicas
    neo4j_cypher("CREATE (:Counter {user_id: 'u5', n: 0})")

    def work(store: Neo4jGraphStore) -> None:
        for _ in range(8):
            with store.write_lease("u5"):
                n = neo4j_cypher("MATCH (c:Counter {user_id: 'u5'}) RETURN c.n AS n")[0]["n"]
                time.sleep(0.002)
                neo4j_cypher("MATCH (c:Counter {user_id: 'u5'}) SET c.n = $n", n=n + 1)

    threads = [threading.Thread(target=work, args=(s,)) for s in (a, b) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert neo4j_cypher("MATCH (c:Counter {user_id: 'u5'}) RETURN c.n AS n")[0]["n"] == 48
