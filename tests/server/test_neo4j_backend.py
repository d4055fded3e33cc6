"""The server on the Neo4j backend, end to end: the graph as Neo4j Browser shows it, the README's
queries, supersession as validity intervals, and nothing left after forgetting the user."""

from __future__ import annotations

import os
import re
import uuid

from fastapi.testclient import TestClient
from neo4j import Driver

from hippograph.config import GraphSettings, Settings
from hippograph.errors import BackendUnavailable, DataRejected
from hippograph.graph.neo4j_store import Neo4jGraphStore
from hippograph.models import Entity
from hippograph.server.app import create_app
from tests.apps import LOCAL
from tests.conftest import ROOT

URI = os.environ.get("HIPPOGRAPH_TEST_NEO4J_URI", "")


def cypher(driver: Driver, query: str, **params: object) -> list[dict]:
    with driver.session(database="neo4j") as session:
        return session.run(query, params).data()


def readme_queries() -> list[str]:
    block = (ROOT / "README.md").read_text().split("```cypher")[1].split("```")[0]
    return [q.strip() for q in re.sub(r"//.*", "", block).split(";") if q.strip()]


def test_neo4j_backend_end_to_end(tmp_path, driver: Driver) -> None:
    user = f"alice-{uuid.uuid4().hex[:8]}"
    settings = Settings(data_dir=tmp_path, graph=GraphSettings(backend="neo4j", uri=URI))
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        assert client.get("/readyz").json()["graph"] == "Neo4jGraphStore"
        for session, mid, text, ts in [
            ("monday", "m2", "I manage the Northwest region at Acme Corp.", "2024-01-10T10:00:00Z"),
            ("monday", "m4", "I live in Seattle and I love hiking.", "2024-01-10T10:01:00Z"),
            ("june", "m6", "I got promoted, I now manage the whole country.", "2024-06-01T10:00:00Z"),
            ("june", "m7", "The move is done, we are in Portland now.", "2024-06-01T10:01:00Z"),
        ]:
            resp = client.post("/v1/memories", json={"user_id": user, "session_id": session, "messages": [
                {"id": mid, "role": "user", "content": text, "timestamp": ts}]})
            assert resp.status_code == 200, resp.text

        facts = [f["fact"] for f in client.get(f"/v1/users/{user}/profile").json()["facts"]]
        assert any("Portland" in f for f in facts) and not any("Seattle" in f for f in facts)
        # the user's data lives under its owner key, found from the tenant and user id as the README says
        owner = cypher(driver, readme_queries()[0], tenant="default", name=user)[0]["user"]
        assert owner.startswith("u_") and user not in owner
        name, user = user, owner

        assert cypher(driver, "MATCH (n {user_id: $u}) WHERE n.name IS NULL RETURN n", u=user) == []
        assert cypher(driver, "MATCH (:User {user_id: $u})-[:IS]->(e:Entity:Person) RETURN e", u=user)
        manages = cypher(driver, "MATCH (:Entity {user_id: $u})-[r:MANAGES]->(b:Entity) "
                                 "RETURN b.name AS target, r.valid_at AS since, r.invalid_at AS until, "
                                 "r.episodes AS episodes ORDER BY since", u=user)
        assert [m["target"] for m in manages] == ["Northwest region", "whole country"]
        assert manages[0]["until"] is not None and manages[1]["until"] is None
        assert all(m["episodes"] for m in manages)
        mentions = cypher(driver, "MATCH (ep:Episode {user_id: $u})-[:MENTIONS]->(e:Entity) "
                                  "RETURN DISTINCT e.name AS name", u=user)
        assert {"Seattle", "Acme Corp"} <= {m["name"] for m in mentions}

        # the multi-hop plan on Neo4j: entities linked by exact name, PageRank over the mention graph,
        # relation facts in the trace, outdated statements marked
        ctx = client.post("/v1/context", json={"user_id": name, "query": "What region does Acme Corp's manager run?",
                                               "plan": "graph", "token_budget": 400}).json()
        assert ctx["plan"]["name"] == "graph" and "Acme Corp" in ctx["plan"]["trace"]["linked_entities"]
        assert ctx["plan"]["trace"]["graph_facts"] and ctx["plan"]["trace"]["graph_episodes"] >= 1
        assert "I manage the Northwest region at Acme Corp." in ctx["context"] and "outdated since" in ctx["context"]

        for query in readme_queries():
            if query.startswith(":"):
                continue
            rows = cypher(driver, query, user=user, tenant="default", name=name)
            assert rows, f"README query returned nothing: {query}"

        # deleting a session on Neo4j too: its episodes go, and the notes only they taught
        sessions = cypher(driver, "MATCH (s:Session {user_id: $u}) RETURN s.name AS name ORDER BY name", u=user)
        assert [s["name"] for s in sessions] == ["june", "monday"]
        notes_before = cypher(driver, "MATCH (n:Note {user_id: $u}) RETURN count(n) AS n", u=user)[0]["n"]
        assert notes_before > 1
        resp = client.delete(f"/v1/users/{name}/sessions/monday?actor=user:alice")
        assert resp.status_code == 200 and resp.json()["memories_deleted"] == 2
        assert cypher(driver, "MATCH (e:Episode {user_id: $u, session_id: 'monday'}) RETURN e", u=user) == []
        left = cypher(driver, "MATCH (n:Note {user_id: $u}) RETURN n.text AS text, n.superseded_by AS by", u=user)
        assert {n["text"] for n in left} == {"I got promoted, I now manage the whole country",
                                             "The move is done, we are in Portland now"}
        assert all(n["by"] is None for n in left)
        deleted = cypher(driver, "MATCH (a:Audit {user_id: $u, action: 'delete', item_kind: 'memory'}) "
                                 "RETURN a.actor AS actor, a.session_id AS session", u=user)
        assert cypher(driver, "MATCH (a:Audit {user_id: $u, action: 'delete'}) WHERE a.text IS NOT NULL "
                              "RETURN a", u=user) == []
        assert deleted == [{"actor": "user:alice", "session": "monday"}] * 2

        assert client.delete(f"/v1/users/{name}").status_code == 200
        left = cypher(driver, "MATCH (n {user_id: $u}) RETURN count(n) AS n", u=user)[0]["n"]
        rels = cypher(driver, "MATCH ()-[r {user_id: $u}]->() RETURN count(r) AS n", u=user)[0]["n"]
        assert left == 0 and rels == 0
        assert client.app.state.service.indexer.store.count(user) == 0
        assert client.get(f"/v1/users/{name}/profile").status_code == 404


def test_a_value_too_large_for_an_index_is_refused_as_such_not_as_an_outage(driver: Driver) -> None:
    """Neo4j answers a 100,000-character entity name with a DatabaseError: it is the data, so it must be
    a 422 and count towards the message's quarantine, not a 503 that is retried forever."""
    store = Neo4jGraphStore(URI)
    store.open()
    user = f"huge-{uuid.uuid4().hex[:8]}"
    try:
        store.ensure_user(user)
        try:
            store.resolve_entities(user, [Entity(id="", user_id=user, name="a" * 100_000)])
        except DataRejected as exc:
            assert not isinstance(exc, BackendUnavailable) and "too large" in str(exc)
        else:
            raise AssertionError("Neo4j took a 100,000-character index key")
        kept = store.resolve_entities(user, [Entity(id="", user_id=user, name="Acme Corp")])
        assert kept[0].name == "Acme Corp"  # the store goes on
    finally:
        store.delete_user(user)
        store.close()
