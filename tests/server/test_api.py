"""The HTTP API end to end over the real embedded stores, spaCy and the ONNX embedder."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

CONVERSATION = [
    {"id": "m1", "role": "user", "content": "Hi there!", "timestamp": "2024-03-01T09:00:00Z"},
    {"id": "m2", "role": "user", "content": "I manage the Northwest region at Acme Corp.",
     "timestamp": "2024-03-01T09:00:10Z"},
    {"id": "m3", "role": "assistant", "content": "Got it, you manage the Northwest region.",
     "timestamp": "2024-03-01T09:00:20Z"},
    {"id": "m4", "role": "user", "content": "I live in Seattle and I prefer short answers.",
     "timestamp": "2024-03-01T09:00:30Z"},
    {"id": "m5", "role": "user", "content": "We decided to use Postgres for the billing service.",
     "timestamp": "2024-03-01T09:00:40Z"},
]


def post(client: TestClient, user: str, session: str, messages: list[dict]) -> dict:
    resp = client.post("/v1/memories", json={"user_id": user, "session_id": session, "messages": messages})
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_health(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    assert client.get("/openapi.json").status_code == 200


def test_round_trip_context_search_profile(client: TestClient) -> None:
    out = post(client, "alice", "s1", CONVERSATION)
    assert len(out["stored"]) == 5 and out["duplicates"] == []
    assert "m1" in out["skipped_small_talk"]
    assert any("Northwest region" in n["text"] for n in out["notes"])

    prof = client.get("/v1/users/alice/profile").json()
    assert set(prof) == {"user_id", "facts", "preferences", "decisions"}
    facts = [f["fact"] for f in prof["facts"]]
    assert any("Northwest region" in f for f in facts)
    assert any("short" in p["pref"].lower() for p in prof["preferences"])
    assert all({"id", "updated"} <= set(item) for group in ("facts", "preferences", "decisions")
               for item in prof[group])

    hits = client.post("/v1/search", json={"user_id": "alice", "query": "Which region does she manage?"}).json()
    assert hits and any("Northwest" in h["text"] for h in hits[:3])
    assert all(h["provenance"] for h in hits)

    ctx = client.post("/v1/context", json={"user_id": "alice", "session_id": "s2",
                                           "query": "Where do I live?", "token_budget": 400}).json()
    assert "Seattle" in ctx["context"]
    assert ctx["tokens"] <= 400
    assert ctx["context"].rstrip().endswith("Where do I live?")
    assert ctx["plan"]["name"] in {"single_hop", "multi_hop", "temporal", "profile"}
    seattle = [i for i in ctx["items"] if "Seattle" in i["text"]]
    assert seattle and all(i["provenance"] for i in seattle)
    assert "m4" in {p for i in seattle for p in i["provenance"]}


def test_idempotent_client_ids(client: TestClient) -> None:
    first = post(client, "idem", "s1", CONVERSATION[:3])
    again = post(client, "idem", "s1", CONVERSATION[:3])
    assert len(first["stored"]) == 3
    assert again["stored"] == [] and again["duplicates"] == ["m1", "m2", "m3"]
    search = client.post("/v1/search", json={"user_id": "idem", "query": "Northwest region", "limit": 20}).json()
    assert len([h for h in search if h["kind"] == "episode" and h["provenance"] == ["m2"]]) == 1
    changed = client.post("/v1/memories", json={"user_id": "idem", "messages": [
        {"id": "m2", "role": "user", "content": "something else entirely"}]})
    assert changed.status_code == 409 and "m2" in changed.json()["detail"]


PROMOTED = "I got promoted, I now manage the whole country."


@pytest.mark.parametrize(("notes", "change"), [
    ("rules", PROMOTED),
    ("learned", "I now manage the whole country."),
    # the judgement of 42 writers reads the clause as a job title (related 0.3, chosen out of writer): the new
    # job does not end the responsibility said before it (BENCHMARKS.md "Notes corpus")
    pytest.param("learned", PROMOTED, marks=pytest.mark.xfail(strict=True, reason="a job title, not a responsibility")),
])
def test_supersession_keeps_history(notes: str, change: str, request: pytest.FixtureRequest) -> None:
    client: TestClient = request.getfixturevalue("rules_client" if notes == "rules" else "client")
    user = "bob" if change == PROMOTED else "bob-country"  # the clients are the module's: a user per case
    post(client, user, "s1", [{"id": "a", "role": "user", "content": "I manage the Northwest region.",
                                "timestamp": "2024-01-10T10:00:00Z"}])
    post(client, user, "s2", [{"id": "b", "role": "user", "content": change, "timestamp": "2024-06-01T10:00:00Z"}])
    facts = [f["fact"] for f in client.get(f"/v1/users/{user}/profile").json()["facts"]]
    assert any("whole country" in f for f in facts)
    assert not any("Northwest" in f for f in facts)
    history = client.get(f"/v1/users/{user}/profile", params={"history": "true"}).json()["facts"]
    old = [f for f in history if "Northwest" in f["fact"]]
    assert old and old[0]["current"] is False
    assert old[0]["valid_at"].startswith("2024-01-10") and old[0]["invalid_at"].startswith("2024-06-01")
    ctx = client.post("/v1/context", json={"user_id": user, "query": "What do I manage?"}).json()
    notes = [i["text"] for i in ctx["sections"]["notes"]]
    assert any("whole country" in n for n in notes) and not any("Northwest" in n for n in notes)
    old_said = [i["text"] for i in ctx["sections"]["memories"] if i["provenance"] == ["a"]]
    # the rules word the note "Manages the whole country", the learned judgement keeps the user's words
    assert old_said and all(re.search(r"outdated since 2024-06-01; now: [^]]*(?i:manages?) the whole country", t)
                            for t in old_said)


def test_context_window_pins_and_marks_the_gap(client: TestClient) -> None:
    msgs = [{"id": f"w{i}", "role": "user" if i % 2 == 0 else "assistant",
             "content": f"Step {i} of the migration plan is to move table number {i}."} for i in range(25)]
    post(client, "carol", "long", msgs)
    ctx = client.post("/v1/context", json={"user_id": "carol", "session_id": "long",
                                           "query": "What is next?", "token_budget": 4000}).json()
    pinned = [i["provenance"][0] for i in ctx["sections"]["pinned"]]
    recent = [i["provenance"][0] for i in ctx["sections"]["recent"]]
    assert pinned == ["w0", "w1", "w2"]
    assert recent == [f"w{i}" for i in range(15, 25)]
    assert not set(pinned) & set(recent)
    assert "[12 earlier messages omitted]" in ctx["context"]
    text = ctx["context"]
    assert text.index("Start of this session") < text.index("Recent messages") < text.index("Current query")


def test_delete_profile_item_and_user(client: TestClient) -> None:
    post(client, "dave", "s1", [{"role": "user", "content": "I live in Denver."}])
    facts = client.get("/v1/users/dave/profile").json()["facts"]
    assert facts
    item = facts[0]["id"]
    assert client.delete(f"/v1/users/dave/profile/{item}").status_code == 200
    assert item not in [f["id"] for f in client.get("/v1/users/dave/profile").json()["facts"]]
    assert client.delete(f"/v1/users/dave/profile/{item}").status_code == 404
    ents = client.get("/v1/graph/entities", params={"user_id": "dave", "q": "denver"}).json()
    assert ents and ents[0]["name"] == "Denver"
    assert client.delete("/v1/users/dave").status_code == 200
    assert client.get("/v1/users/dave/profile").status_code == 404
    assert client.post("/v1/search", json={"user_id": "dave", "query": "Denver"}).status_code == 404
    assert client.get("/v1/graph/entities", params={"user_id": "dave"}).status_code == 404


def test_graph_neighbors(client: TestClient) -> None:
    post(client, "erin", "s1", [{"role": "user", "content": "Alice works at Acme. Bob manages Alice."}])
    ents = {e["name"]: e for e in client.get("/v1/graph/entities", params={"user_id": "erin"}).json()}
    assert "Alice" in ents
    out = client.get(f"/v1/graph/entities/{ents['Alice']['id']}/neighbors",
                     params={"user_id": "erin", "depth": 1}).json()
    names = {e["name"] for e in out["entities"]}
    assert "Acme" in names
    assert any(r["predicate"] == "WORKS_AT" for r in out["relations"])
    assert client.get("/v1/graph/entities/nope/neighbors", params={"user_id": "erin"}).status_code == 404
    # another user's entity is unknown to this one, exactly like an entity that does not exist
    post(client, "frank", "s1", [{"role": "user", "content": "I live in Lisbon."}])
    other = client.get(f"/v1/graph/entities/{ents['Alice']['id']}/neighbors", params={"user_id": "frank"})
    assert other.status_code == 404 and other.json()["detail"] == f"this user has no entity {ents['Alice']['id']!r}"


def test_tool_output_is_cut_to_essentials(client: TestClient) -> None:
    long = "\n".join([f"row {i}: status ok, value {i * 7}" for i in range(200)])
    out = post(client, "tool-user", "s1", [{"role": "tool", "name": "db_query", "content": long}])
    ctx = client.post("/v1/context", json={"user_id": "tool-user", "session_id": "s1", "query": "status?",
                                           "token_budget": 4000}).json()
    shown = ctx["sections"]["pinned"][0]["text"]  # the session's first message is pinned
    assert len(shown) < 700 and "cut from" in shown and shown.startswith("db_query (as of ")
    roomy = client.post("/v1/context", json={"user_id": "tool-user", "session_id": "s1", "query": "status?",
                                             "token_budget": 300}).json()
    assert roomy["sections"]["pinned"][0]["text"] == shown  # it fits: never cut while the budget has room
    small = client.post("/v1/context", json={"user_id": "tool-user", "session_id": "s1", "query": "status?",
                                             "token_budget": 200}).json()
    assert small["sections"]["pinned"][0]["text"].endswith("[…]")  # cut again to fit, and it says so
    assert small["tokens"] == 200  # to fill what is left
    assert out["stored"]


def test_documents_are_chunked_searchable_and_never_notes(client: TestClient) -> None:
    text = ("Project Falcon is run by the Berlin office. " * 3 + "\n") + \
        " ".join(f"Paragraph {i} talks about quarterly budget item {i}." for i in range(80))
    resp = client.post("/v1/memories", json={"user_id": "docs", "documents": [
        {"id": "handbook", "title": "Team handbook", "text": text, "timestamp": "2024-02-02T00:00:00Z"}]})
    assert resp.status_code == 200, resp.text
    out = resp.json()
    assert out["stored"] == ["handbook"] and out["notes"] == []
    hits = client.post("/v1/search", json={"user_id": "docs", "query": "Who runs Project Falcon?"}).json()
    assert hits[0]["provenance"] == ["handbook"] and "Falcon" in hits[0]["text"]
    assert len(hits[0]["text"]) < len(text)  # a chunk, not the whole document
    again = client.post("/v1/memories", json={"user_id": "docs", "documents": [
        {"id": "handbook", "title": "Team handbook", "text": text}]}).json()
    assert again["stored"] == [] and again["duplicates"] == ["handbook"]
    assert client.get("/v1/users/docs/profile").json()["facts"] == []


def test_long_session_gets_a_summary_first(client: TestClient) -> None:
    msgs = [{"id": f"L{i}", "role": "user" if i % 2 == 0 else "assistant",
             "content": f"We reviewed invoice batch {i} and found {i} missing purchase orders."} for i in range(40)]
    post(client, "long-user", "s", msgs)
    ctx = client.post("/v1/context", json={"user_id": "long-user", "session_id": "s",
                                           "query": "How many purchase orders were missing?",
                                           "token_budget": 3000}).json()
    summary = ctx["sections"]["summary"]
    assert summary and {p for i in summary for p in i["provenance"]} <= {f"L{i}" for i in range(3, 30)}
    assert ctx["context"].startswith("## Summary of earlier conversation")


def test_memories_of_one_write_keep_its_order(client: TestClient) -> None:
    """Messages sent without timestamps in one write are shown in the order they were said, on either
    side of the rank: the question before its answer, though the answer matches the query better."""
    said = [("q1", "user", "Who is going to lead the Lisbon office from March?"),
            ("a1", "assistant", "Priya Raman will lead the Lisbon office from March."),
            ("q2", "user", "And who takes over the Porto team then?"),
            ("a2", "assistant", "Tomas Reis takes over the Porto team.")]
    post(client, "ordered", "s1", [{"id": i, "role": r, "content": c} for i, r, c in said])
    ctx = client.post("/v1/context", json={"user_id": "ordered", "query": "Priya Raman Lisbon office lead"}).json()
    memories = ctx["context"].split("## Relevant memories")[1]
    at = [memories.find(c) for _, _, c in said if c in memories]
    assert len(at) >= 2 and at == sorted(at), memories
    stamps = [client.get(f"/v1/users/ordered/memories/{i}").json()["parts"][0]["timestamp"] for i, _, _ in said]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
