"""Forgetting on the Neo4j backend: after a memory, session or user is deleted, no node or relationship
property anywhere in the graph holds the deleted text (Neo4j's own store files are not scanned: Neo4j
reuses deleted records itself), and the embedded vector store's files do not either."""

from __future__ import annotations

import os

import pytest
from fastapi.testclient import TestClient
from neo4j import Driver

from hippograph.config import GraphSettings, Settings
from hippograph.server.app import create_app
from hippograph.service import Hippograph
from tests.apps import LOCAL
from tests.server.test_forgetting import SECRET, files_holding, say, search

URI = os.environ.get("HIPPOGRAPH_TEST_NEO4J_URI", "")


def holding(driver: Driver, secret: str) -> list[str]:
    """Every node and relationship of the whole graph whose properties mention the secret."""
    with driver.session(database="neo4j") as session:
        rows = session.run("MATCH (n) RETURN labels(n) AS what, properties(n) AS props UNION ALL "
                           "MATCH ()-[r]->() RETURN [type(r)] AS what, properties(r) AS props").data()
    return [f"{r['what']}: {r['props']}" for r in rows if secret.casefold() in repr(r["props"]).casefold()]


@pytest.mark.parametrize("how", ["memory", "session", "user"])
def test_deleted_text_leaves_the_neo4j_graph(tmp_path, driver: Driver, how: str) -> None:
    secret, user = SECRET, f"val-neo4j-{how}"
    with driver.session(database="neo4j") as session:  # what an earlier, failed run may have left
        session.run("MATCH (u:User {tenant: 'default', external_id: $user}) WITH u.user_id AS owner "
                    "MATCH (n) WHERE n.user_id = owner DETACH DELETE n", user=user).consume()
    assert holding(driver, secret) == []
    settings = Settings(data_dir=tmp_path / "data", graph=GraphSettings(backend="neo4j", uri=URI))
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        say(client, user, "s1", "v1", f"I live in {secret} and I love hiking.")
        say(client, user, "s2", "v2", "Remind me to water the plants.")
        assert any(secret in f["fact"] for f in client.get(f"/v1/users/{user}/profile").json()["facts"])
        assert any(secret in h["text"] for h in search(client, user, secret))
        found = holding(driver, secret)
        assert any("Note" in f for f in found) and any("'fact'" in f for f in found)  # the scan sees it
        path = {"memory": f"/v1/users/{user}/memories/v1", "session": f"/v1/users/{user}/sessions/s1",
                "user": f"/v1/users/{user}"}[how]
        assert client.delete(path).status_code == 200
        svc: Hippograph = client.app.state.service
        svc.expire_sessions()  # the sweep: compaction of the vector store
        assert holding(driver, secret) == []
        if how != "user":
            assert [h for h in search(client, user, secret) if secret in h["text"]] == []
    assert files_holding(tmp_path / "data", secret) == []
