"""Bad requests get a 4xx with a message that says what was wrong, never a 500, and lose nothing."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

GOOD = {"user_id": "u", "messages": [{"role": "user", "content": "I live in Oslo."}]}


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"messages": [{"role": "user", "content": "x"}]}, 422, "user_id"),
        ({"user_id": "u"}, 422, "nothing to store"),
        ({"user_id": "u", "messages": [{"role": "wizard", "content": "x"}]}, 422, "role"),
        ({"user_id": "u", "messages": [{"role": "user"}]}, 422, "content"),
        ({"user_id": "u", "messages": [{"role": "user", "content": ""}]}, 422, "content"),
        ({"user_id": 42, "messages": [{"role": "user", "content": "x"}]}, 422, "user_id"),
        ({"user_id": "u", "messages": "not a list"}, 422, "messages"),
        ({"user_id": "u", "messages": [{"role": "user", "content": 5}]}, 422, "content"),
        ({"user_id": "u", "messages": [{"role": "user", "content": "x", "timestamp": "yesterday"}]}, 422,
         "timestamp"),
        ({"user_id": "", "messages": [{"role": "user", "content": "x"}]}, 422, "user_id"),
        ({"user_id": "u", "messages": [{"role": "user", "content": "x"}], "surprise": 1}, 422, "surprise"),
    ],
)
def test_bad_memories_requests(client: TestClient, body: dict, status: int, needle: str) -> None:
    resp = client.post("/v1/memories", json=body)
    assert resp.status_code == status, resp.text
    assert needle in resp.json()["detail"]


def test_not_json(client: TestClient) -> None:
    resp = client.post("/v1/memories", content=b"{not json", headers={"content-type": "application/json"})
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"] == "InvalidJSON" and "not valid JSON" in resp.json()["detail"]


def test_twenty_megabyte_message_is_refused_and_nothing_is_lost(client: TestClient) -> None:
    assert client.post("/v1/memories", json={"user_id": "big", "messages": [
        {"id": "keep", "role": "user", "content": "I live in Lisbon."}]}).status_code == 200
    huge = {"user_id": "big", "messages": [{"role": "user", "content": "x" * (20 * 1024 * 1024)}]}
    resp = client.post("/v1/memories", json=huge)
    assert resp.status_code == 413
    assert "limit" in resp.json()["detail"]
    hits = client.post("/v1/search", json={"user_id": "big", "query": "Lisbon"}).json()
    assert any(h["provenance"] == ["keep"] for h in hits)
    assert client.get("/readyz").status_code == 200


def test_content_over_the_character_limit(client: TestClient) -> None:
    resp = client.post("/v1/memories", json={"user_id": "too-long-first", "messages": [
        {"role": "user", "content": "word " * 30_000}]})
    assert resp.status_code == 422 and "content" in resp.json()["detail"]
    # the refused first write left no user behind
    assert client.get("/v1/users/too-long-first/profile").status_code == 404


def test_unknown_user(client: TestClient) -> None:
    for method, url, kwargs in [
        ("get", "/v1/users/ghost/profile", {}),
        ("delete", "/v1/users/ghost", {}),
        ("delete", "/v1/users/ghost/profile/x", {}),
        ("post", "/v1/search", {"json": {"user_id": "ghost", "query": "anything"}}),
        ("get", "/v1/graph/entities", {"params": {"user_id": "ghost"}}),
    ]:
        resp = getattr(client, method)(url, **kwargs)
        assert resp.status_code == 404, (url, resp.text)
        assert "ghost" in resp.json()["detail"]


def test_context_for_an_unknown_user_is_just_the_query(client: TestClient) -> None:
    resp = client.post("/v1/context", json={"user_id": "newcomer", "query": "Hello, what can you do?"})
    assert resp.status_code == 200
    body = resp.json()
    assert body["plan"]["known_user"] is False and body["context"].endswith("Hello, what can you do?")


@pytest.mark.parametrize(
    "body",
    [
        {"user_id": "u", "query": ""},
        {"user_id": "u", "query": "x", "token_budget": 5},
        {"user_id": "u", "query": "x", "token_budget": "lots"},
        {"query": "x"},
        {"user_id": "u", "query": "x", "plan": "telepathy"},
    ],
)
def test_bad_context_requests(client: TestClient, body: dict) -> None:
    resp = client.post("/v1/context", json=body)
    assert resp.status_code == 422, resp.text
    assert resp.json()["detail"]


def test_bad_search_and_graph_requests(client: TestClient) -> None:
    assert client.post("/v1/search", json={"user_id": "u", "query": "x", "limit": 0}).status_code == 422
    assert client.post("/v1/search", json={"user_id": "u", "query": "x", "limit": 10_000}).status_code == 422
    assert client.get("/v1/graph/entities").status_code == 422
    assert client.get("/v1/graph/entities/x/neighbors", params={"user_id": "u", "depth": 99}).status_code == 422
    assert client.post("/v1/memories", json=GOOD).status_code == 200


def test_control_characters_in_the_actor_are_refused(client: TestClient) -> None:
    client.post("/v1/memories", json={"user_id": "actor-user", "session_id": "s", "messages": [
        {"id": "m1", "role": "user", "content": "I live in Oslo."}]})
    resp = client.delete("/v1/users/actor-user/memories/m1", params={"actor": "agent:\x00x"})
    assert resp.status_code == 422 and "actor" in resp.json()["detail"]
    assert client.get("/v1/users/actor-user/memories/m1").status_code == 200  # nothing was deleted
