"""The input boundary of the HTTP API: one id grammar everywhere, timestamps as ISO strings in a
bounded range, JSON-clean metadata, and one error body for every error, over the real app and stores."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from fastapi.testclient import TestClient

from hippograph.config import Settings, WorldSettings
from hippograph.inputs import ID_MAX_LENGTH, METADATA_MAX_CHARS, METADATA_MAX_DEPTH, plus_seconds
from hippograph.server.app import create_app
from tests.apps import LOCAL


def say(user: str, content: str = "I live in Oslo.", **extra: object) -> dict:
    return {"user_id": user, "messages": [{"role": "user", "content": content, **extra}]}


def raw(client: TestClient, url: str, body: bytes) -> httpx.Response:
    return client.post(url, content=body, headers={"content-type": "application/json"})


def assert_error_body(resp: httpx.Response, status: int, error: str) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) <= {"error", "detail", "errors"} and body["error"] == error, body
    assert isinstance(body["detail"], str) and body["detail"]
    return body


# --- timestamps --------------------------------------------------------------------------------------

@pytest.mark.parametrize("stamp", ["9999-12-31T23:30:00Z", "2201-01-01T00:00:00Z", "1899-12-31T23:59:59Z",
                                   "0001-01-01T00:00:00+05:00", "2201-01-01T00:30:00+14:00"])
@pytest.mark.parametrize("role", ["tool", "user"])
def test_timestamps_out_of_range_get_422_with_the_range(client: TestClient, stamp: str, role: str) -> None:
    resp = client.post("/v1/memories", json={"user_id": "tim", "messages": [
        {"role": role, "name": "weather", "content": "Oslo: 3C", "timestamp": stamp}]})
    body = assert_error_body(resp, 422, "InvalidInput")
    assert "messages.0.timestamp" in body["detail"] and "1900-01-01" in body["detail"]
    assert "2200-12-31" in body["detail"]


def test_a_document_timestamp_out_of_range_gets_422(client: TestClient) -> None:
    resp = client.post("/v1/memories", json={"user_id": "tim", "documents": [
        {"id": "d", "text": "Minutes.", "timestamp": "9999-01-01T00:00:00Z"}]})
    assert "documents.0.timestamp" in assert_error_body(resp, 422, "InvalidInput")["detail"]


def test_the_last_allowed_moment_is_stored_and_its_tool_result_shown(client: TestClient) -> None:
    at = "2200-12-31T23:30:00-14:00"  # the year as written counts (in UTC it is 2201)
    resp = client.post("/v1/memories", json={"user_id": "tim", "session_id": "far", "messages": [
        {"id": "w", "role": "tool", "name": "weather", "content": "Oslo: 3C", "timestamp": at}]})
    assert resp.status_code == 200, resp.text
    part = client.get("/v1/users/tim/memories/w").json()["parts"][0]
    assert part["timestamp"].startswith("2200-12-31T23:30") and part["metadata"]["expires_at"].startswith("2201-01-01")
    assert client.post("/v1/memories", json={"user_id": "tim", "documents": [
        {"id": "old", "text": "The minutes of 1900.", "timestamp": "1900-01-01T00:00:00+01:00"}]}).status_code == 200
    ctx = client.post("/v1/context", json={"user_id": "tim", "session_id": "far", "query": "weather in Oslo?"})
    assert ctx.status_code == 200 and "Oslo: 3C" in ctx.json()["context"]


def test_a_huge_tool_ttl_saturates_instead_of_overflowing(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, world=WorldSettings(tool_ttl={"almanac": 10**12}))
    with TestClient(create_app(settings), base_url=LOCAL) as c:
        resp = c.post("/v1/memories", json={"user_id": "ada", "session_id": "s", "messages": [
            {"id": "a", "role": "tool", "name": "almanac", "content": "Easter is on 4 April.",
             "timestamp": "2024-05-01T00:00:00Z"}]})
        assert resp.status_code == 200, resp.text
        assert c.get("/v1/users/ada/memories/a").json()["parts"][0]["metadata"]["expires_at"].startswith("9999-12-31")
        ctx = c.post("/v1/context", json={"user_id": "ada", "session_id": "s", "query": "When is Easter?"})
        assert ctx.status_code == 200 and "valid until 9999-12-31" in ctx.json()["context"]


def test_plus_seconds_holds_at_the_ends_of_time() -> None:
    late = datetime(9999, 12, 31, 23, 0, tzinfo=UTC)
    assert plus_seconds(late, 7200) == datetime.max.replace(tzinfo=UTC)
    assert plus_seconds(datetime(1, 1, 1, 1, tzinfo=UTC), -7200) == datetime.min.replace(tzinfo=UTC)
    assert plus_seconds(datetime(2024, 1, 1, tzinfo=UTC), 60) == datetime(2024, 1, 1, 0, 1, tzinfo=UTC)


@pytest.mark.parametrize("stamp", [253402300800, 1_700_000_000, 1.5, 0, True, "1700000000", "20240501", " 42 "])
def test_numbers_are_not_timestamps(client: TestClient, stamp: object) -> None:
    resp = client.post("/v1/memories", json=say("tim", timestamp=stamp))
    detail = assert_error_body(resp, 422, "InvalidInput")["detail"]
    assert "messages.0.timestamp" in detail and "ISO 8601" in detail


def test_a_timestamp_without_a_zone_is_utc(client: TestClient) -> None:
    assert client.post("/v1/memories", json=say("tim", id="naive", timestamp="2024-05-01T09:30:00")).status_code == 200
    assert client.get("/v1/users/tim/memories/naive").json()["parts"][0]["timestamp"] == "2024-05-01T09:30:00+00:00"


@pytest.mark.parametrize("stamp", ["2024-05-01T09:30:00+20:00", "2024-05-01T09:30:00-18:30", "2024-05-01T09:30:00+23:59"])
def test_utc_offsets_beyond_18_hours_get_422(client: TestClient, stamp: str) -> None:
    """Python takes offsets up to 24 hours, Neo4j (java.time) and ISO 8601 only 18: such a timestamp
    would be acknowledged here and fail in the store."""
    detail = assert_error_body(client.post("/v1/memories", json=say("far", timestamp=stamp)), 422, "InvalidInput")["detail"]
    assert "18 hours" in detail and "messages.0.timestamp" in detail
    assert client.get("/v1/users/far/profile").status_code == 404


def test_an_offset_of_18_hours_is_stored(client: TestClient) -> None:
    resp = client.post("/v1/memories", json=say("edge", id="e18", timestamp="2024-05-01T09:30:00+18:00"))
    assert resp.status_code == 200, resp.text
    assert client.get("/v1/users/edge/memories/e18").json()["parts"][0]["timestamp"] == "2024-05-01T09:30:00+18:00"


# --- metadata ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("body", "field", "where"), [
    (b'{"user_id": "meta", "metadata": {"score": NaN}, "messages": [{"role": "user", "content": "x"}]}',
     "metadata", "score"),
    (b'{"user_id": "meta", "metadata": {"a": {"b": [1, Infinity]}}, "messages": [{"role": "user", "content": "x"}]}',
     "metadata", "a.b[1]"),
    (b'{"user_id": "meta", "messages": [{"role": "tool", "content": "x", "metadata": {"arguments": {"t": -Infinity}}}]}',
     "messages.0.metadata", "arguments.t"),
    (b'{"user_id": "meta", "messages": [{"role": "user", "content": "x", "metadata": {"k": "\\ud800"}}]}',
     "messages.0.metadata", "at k"),
])
def test_metadata_that_json_cannot_carry_gets_422_naming_the_field(
    client: TestClient, body: bytes, field: str, where: str,
) -> None:
    detail = assert_error_body(raw(client, "/v1/memories", body), 422, "InvalidInput")["detail"]
    assert detail.startswith(f"{field}:") and where in detail
    assert client.get("/v1/users/meta/profile").status_code == 404  # nothing of it was stored


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(("depth", "status", "needle"), [
    (METADATA_MAX_DEPTH, 422, "nested deeper than 16 levels"),  # the object itself is the first level
    (500, 422, "nested deeper than 16 levels"),  # pickling it for extraction overflowed Python's stack
    (50_000, 400, "nested too deep to read"),  # beyond what the JSON parser reads
])
def test_deeply_nested_metadata_is_refused_before_anything_is_stored(
    client: TestClient, depth: int, status: int, needle: str,
) -> None:
    body = f'{{"user_id": "deep", "messages": [{{"id": "n", "role": "user", "content": "hi"}}], "metadata": {{"a": {nested(depth)}}}}}'
    resp = raw(client, "/v1/memories", body.encode())
    assert_error_body(resp, status, "InvalidInput" if status == 422 else "InvalidJSON")
    assert needle in resp.json()["detail"]
    assert client.get("/v1/users/deep/profile").status_code == 404  # nothing of it was stored
    assert client.post("/v1/memories", json=say("deep2", metadata={"a": {"b": [1, 2]}})).status_code == 200


def test_metadata_as_deep_and_large_as_allowed_is_stored_and_read_back(client: TestClient) -> None:
    deep: object = "end"
    for _ in range(METADATA_MAX_DEPTH - 1):
        deep = [deep]
    meta = {"a": deep, "pad": "x" * (METADATA_MAX_CHARS - 200)}
    assert client.post("/v1/memories", json=say("roomy", id="r", metadata=meta)).status_code == 200
    assert client.get("/v1/users/roomy/memories/r").json()["parts"][0]["metadata"] == meta
    meta["pad"] += "x" * 400
    detail = assert_error_body(client.post("/v1/memories", json=say("roomy", id="r2", metadata=meta)), 422,
                               "InvalidInput")["detail"]
    assert "characters as JSON is over the limit" in detail and str(METADATA_MAX_CHARS) in detail


# --- words -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("what", "body"), [
    ("messages[0].content", say("longword", "see " + "x" * 90_000 + " there")),
    ("messages[0].content", say("longword", "é" * 2049)),
    ("documents[0].text", {"user_id": "longword", "documents": [{"id": "d", "text": "A " + "b" * 5000}]}),
])
def test_a_word_over_the_limit_is_refused_with_what_to_do(client: TestClient, what: str, body: dict) -> None:
    detail = assert_error_body(client.post("/v1/memories", json=body), 422, "InvalidInput")["detail"]
    assert detail.startswith(what) and "HIPPOGRAPH_MAX_WORD_CHARS" in detail and "over the limit of 2048" in detail
    assert client.get("/v1/users/longword/profile").status_code == 404


def test_words_up_to_the_limit_and_long_tool_output_are_stored(client: TestClient) -> None:
    url = "https://example.com/a?sig=" + "k" * 2000  # a signed URL of 2,026 characters
    assert client.post("/v1/memories", json=say("wordy", f"The report is at {url} now.")).status_code == 200
    # a tool result is cut to its essentials before it is stored, so what it held before does not count
    resp = client.post("/v1/memories", json={"user_id": "wordy", "messages": [
        {"role": "tool", "name": "fetch", "content": "blob: " + "Q" * 50_000}]})
    assert resp.status_code == 200, resp.text


def test_a_message_and_a_document_cannot_share_an_id(client: TestClient) -> None:
    assert client.post("/v1/memories", json=say("kinds", id="shared")).status_code == 200
    doc = {"user_id": "kinds", "documents": [{"id": "shared", "text": "Minutes of the meeting."}]}
    assert "already given to a message" in assert_error_body(client.post("/v1/memories", json=doc), 409,
                                                             "Conflict")["detail"]
    assert client.post("/v1/memories", json={"user_id": "kinds", "documents": [{"id": "d7", "text": "Notes."}]}
                       ).status_code == 200
    assert "already given to a document" in assert_error_body(client.post("/v1/memories", json=say("kinds", id="d7")),
                                                              409, "Conflict")["detail"]
    both = {"user_id": "kinds", "messages": [{"id": "x1", "role": "user", "content": "hi"}],
            "documents": [{"id": "x1", "text": "Notes."}]}
    assert "each needs an id of its own" in assert_error_body(client.post("/v1/memories", json=both), 422,
                                                               "InvalidInput")["detail"]
    parts = client.get("/v1/users/kinds/memories/shared").json()["parts"]
    assert [p["kind"] for p in parts] == ["message"]


# --- ids -------------------------------------------------------------------------------------------

GOOD_IDS = ["alice@example.com", "D1:3", "conv-26", "session_1", "0b8f8f3e-5c1a-4c1e-9a7e-1f2d3c4b5a69",
            "tenant|user+tag", "José", "...", "a.b", "[1]", "x" * ID_MAX_LENGTH]
BAD_IDS = ["a/b", "..", ".", "a\\b", "a b", "a\tb", "nul\x00", "bell\x07", "del\x7f", "c1\x85", "zw\u200bsp",
           "q?x", "h#x", "p%2Fx", "x" * (ID_MAX_LENGTH + 1), ""]


@pytest.mark.parametrize("good", GOOD_IDS)
def test_every_id_the_grammar_accepts_can_be_read_and_forgotten_by_its_path(client: TestClient, good: str) -> None:
    user, seg = f"u-{good}"[:ID_MAX_LENGTH], quote(f"u-{good}"[:ID_MAX_LENGTH], safe="")
    resp = client.post("/v1/memories", json={"user_id": user, "session_id": good, "agent_id": good, "messages": [
        {"id": good, "role": "user", "content": "I work at Initech."}]})
    assert resp.status_code == 200, resp.text
    assert client.get(f"/v1/users/{seg}/memories/{quote(good, safe='')}").status_code == 200
    assert client.get(f"/v1/users/{seg}/audit", params={"item_id": good}).status_code == 200
    assert client.delete(f"/v1/users/{seg}/sessions/{quote(good, safe='')}").status_code == 200
    assert client.delete(f"/v1/users/{seg}").status_code == 200
    assert client.post("/v1/search", json={"user_id": user, "query": "Initech"}).status_code == 404


@pytest.mark.parametrize("bad", BAD_IDS)
@pytest.mark.parametrize("field", ["user_id", "session_id", "agent_id", "message id", "document id"])
def test_ids_outside_the_grammar_are_refused_in_bodies(client: TestClient, bad: str, field: str) -> None:
    body: dict = {"user_id": "ids", "messages": [{"role": "user", "content": "I live in Oslo."}]}
    if field == "message id":
        body["messages"][0]["id"] = bad
    elif field == "document id":
        body = {"user_id": "ids", "documents": [{"id": bad, "text": "Minutes."}]}
    else:
        body[field] = bad
    detail = assert_error_body(client.post("/v1/memories", json=body), 422, "InvalidInput")["detail"]
    assert "id" in detail and ("'/'" in detail or "at least 1" in detail)
    assert client.post("/v1/search", json={"user_id": "ids", "query": "Oslo"}).status_code == 404  # nothing stored


@pytest.mark.parametrize("bad", ["a b", "..", "nul\x00", "p%x", "x" * (ID_MAX_LENGTH + 1)])
def test_ids_outside_the_grammar_are_refused_in_paths_and_queries(client: TestClient, bad: str) -> None:
    seg = quote(bad, safe="").replace(".", "%2E")  # so that the client does not resolve ".."
    for method, url, kwargs in [
        ("get", f"/v1/users/{seg}/profile", {}),
        ("delete", f"/v1/users/{seg}", {}),
        ("get", f"/v1/users/ok/memories/{seg}", {}),
        ("delete", f"/v1/users/ok/sessions/{seg}", {}),
        ("delete", f"/v1/users/ok/profile/{seg}", {}),
        ("get", f"/v1/graph/entities/{seg}/neighbors", {}),
        ("get", "/v1/graph/entities", {"params": {"user_id": bad}}),
        ("get", "/v1/usage", {"params": {"user_id": bad}}),
        ("get", "/v1/users/ok/audit", {"params": {"item_id": bad}}),
        ("post", "/v1/handoffs", {"json": {"user_id": "ok", "session_id": "s", "task": "t", "to_agent": bad}}),
    ]:
        resp = getattr(client, method)(url, **kwargs)
        assert_error_body(resp, 422, "InvalidInput")
        assert "not a valid id" in resp.json()["detail"] or "at most" in resp.json()["detail"], (url, resp.text)


# --- one error body ----------------------------------------------------------------------------------

def test_unknown_routes_and_methods_answer_the_error_body(client: TestClient) -> None:
    body = assert_error_body(client.get("/v1/nowhere"), 404, "NotFound")
    assert "GET /v1/nowhere" in body["detail"]
    resp = client.delete("/v1/memories")
    assert "POST" in assert_error_body(resp, 405, "MethodNotAllowed")["detail"] and resp.headers["allow"] == "POST"
    # a path served by several routes: Allow names every method it has
    resp = client.put("/v1/users/ann/memories/m1")
    assert_error_body(resp, 405, "MethodNotAllowed")
    assert resp.headers["allow"] == "DELETE, GET"
    # a path a literal route and a route with a parameter both match: the literal one's methods
    resp = client.options("/v1/users/ann/profile/history")
    assert_error_body(resp, 405, "MethodNotAllowed")
    assert resp.headers["allow"] == "GET"
    assert client.options("/v1/users/ann/profile/note_1").headers["allow"] == "DELETE, PATCH"


@pytest.mark.parametrize("body", [b"{not json", b'{"user_id": "u",', b"\xff\xfe", b"[1, 2"])
def test_malformed_json_is_a_400_saying_so(client: TestClient, body: bytes) -> None:
    detail = assert_error_body(raw(client, "/v1/memories", body), 400, "InvalidJSON")["detail"]
    assert "not valid JSON" in detail


def test_no_body_at_all_is_a_422_naming_the_body(client: TestClient) -> None:
    assert assert_error_body(raw(client, "/v1/search", b""), 422, "InvalidInput")["detail"].startswith("body:")


def test_validation_errors_list_each_field(client: TestClient) -> None:
    body = assert_error_body(client.post("/v1/search", json={"user_id": "a/b", "query": ""}), 422, "InvalidInput")
    assert {tuple(e["loc"]) for e in body["errors"]} == {("body", "user_id"), ("body", "query")}


# --- the connection survives a refused request ---------------------------------------------------------

def test_after_a_refused_timestamp_the_connection_is_kept(server_factory) -> None:
    srv = server_factory()
    with httpx.Client(base_url=srv.url, timeout=30) as http:
        bad = http.post("/v1/memories", json={"user_id": "kim", "messages": [
            {"role": "tool", "name": "w", "content": "x", "timestamp": "9999-12-31T23:30:00Z"}]})
        assert bad.status_code == 422 and bad.headers.get("connection") != "close"
        good = http.post("/v1/memories", json=say("kim"))
        assert good.status_code == 200

        def local(resp: httpx.Response) -> object:
            return resp.extensions["network_stream"].get_extra_info("client_addr")
        assert local(bad) == local(good)  # the same TCP connection served both

