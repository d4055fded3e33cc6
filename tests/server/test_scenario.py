"""One user over several weeks, through the HTTP API only: facts that change, a correction, tool
results that go stale, a repeated tool call, a session that expires, and a handoff after a discussion
with a rejected idea. Each step checks what the profile, the context block and the packet show."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from hippograph.config import SessionSettings, Settings, WorldSettings
from hippograph.server.app import create_app
from tests.apps import LOCAL
from tests.unit.test_handoff import REPORT, ROLES

NOW = datetime.now(UTC).replace(microsecond=0)


@pytest.fixture(autouse=True)
def _now() -> None:
    """Times are relative to the test's start, not to when the module was imported: a tool result
    "a minute ago" with a 10-minute TTL must still hold however long the suite ran before."""
    global NOW
    NOW = datetime.now(UTC).replace(microsecond=0)


def at(days: float, minutes: float = 0) -> str:
    return (NOW - timedelta(days=days) + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


def post(client: TestClient, session: str, *messages: dict) -> dict:
    resp = client.post("/v1/memories", json={"user_id": "mara", "session_id": session, "agent_id": "intake",
                                             "messages": list(messages)})
    assert resp.status_code == 200, resp.text
    return resp.json()


def context(client: TestClient, session: str, query: str) -> dict:
    resp = client.post("/v1/context", json={"user_id": "mara", "session_id": session, "query": query,
                                            "token_budget": 1200})
    assert resp.status_code == 200, resp.text
    return resp.json()


def facts(client: TestClient) -> list[str]:
    return [f["fact"] for f in client.get("/v1/users/mara/profile").json()["facts"]]


def test_weeks_of_one_user(tmp_path) -> None:
    settings = Settings(data_dir=tmp_path, sessions=SessionSettings(ttl_seconds=4, sweep_seconds=3600),
                        world=WorldSettings(tool_ttl={"fx_rate": 600}))
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        # week 1: who she is
        post(client, "w1",
             {"id": "w1-1", "role": "user", "content": "I live in Seattle and I work at Acme Corp.", "timestamp": at(21)},
             {"id": "w1-2", "role": "assistant", "content": "Noted, thanks.", "timestamp": at(21, 1)})
        assert any("Seattle" in f for f in facts(client)) and any("Acme" in f for f in facts(client))

        # week 2: she moved; the old city is history, never current
        post(client, "w2", {"id": "w2-1", "role": "user", "content": "I moved to Portland last weekend.",
                            "timestamp": at(14)})
        now_facts = facts(client)
        assert any("Portland" in f for f in now_facts) and not any("Seattle" in f for f in now_facts)
        history = client.get("/v1/users/mara/profile/history").json()["facts"]
        seattle = next(f for f in history if "Seattle" in f["fact"])
        assert seattle["current"] is False and seattle["invalid_at"]

        # a correction by the user
        acme = next(f for f in client.get("/v1/users/mara/profile").json()["facts"] if "Acme" in f["fact"])
        fixed = client.patch(f"/v1/users/mara/profile/{acme['id']}", json={"text": "Works at Acme Robotics",
                                                                             "actor": "user:mara"})
        assert fixed.status_code == 200
        assert "Works at Acme Robotics" in facts(client) and acme["fact"] not in facts(client)

        # week 3: a tool result that goes stale, and the same call made twice
        stale_rate = {"id": "w3-2", "role": "tool", "name": "fx_rate", "content": "EUR/USD 1.08",
                      "metadata": {"arguments": {"pair": "EUR/USD"}}, "timestamp": at(0, -30)}
        post(client, "w3", {"id": "w3-1", "role": "user", "content": "What's the euro rate?", "timestamp": at(0, -31)},
             stale_rate,
             {"id": "w3-3", "role": "tool", "name": "fx_rate", "content": "EUR/USD 1.09",
              "metadata": {"arguments": {"pair": " eur/usd "}}, "timestamp": at(0, -1)})
        block = context(client, "w3", "And the euro rate now?")
        tools = block["sections"]["tools"]
        assert len(tools) == 1 and "called 2 times" in tools[0]["text"]  # one line per call
        assert tools[0]["text"].endswith("its result is in the conversation below")  # where 1.09 is, once
        assert block["context"].count("EUR/USD 1.09") == 1
        rendered = {i["id"]: i["text"] for i in block["sections"]["pinned"] + block["sections"]["recent"]}
        assert any("expired" in t and "1.08" in t for t in rendered.values())  # stale, and says so
        assert any("valid until" in t and "1.09" in t for t in rendered.values())
        assert not any("1.08" in f or "1.09" in f for f in facts(client))  # the world is never a note
        assert "Portland" in block["context"] and "Works at Acme Robotics" in context(
            client, "w3", "Where does she work?")["context"]

        # the sessions expire: their messages and tool results go, what she taught stays
        time.sleep(4.5)
        block = context(client, "w3", "Where do I live?")
        assert block["sections"]["pinned"] == block["sections"]["recent"] == block["sections"]["tools"] == []
        assert client.get("/v1/users/mara/sessions").json()["sessions"] == []
        assert any("Portland" in f for f in facts(client)) and "Works at Acme Robotics" in facts(client)
        hits = client.post("/v1/search", json={"user_id": "mara", "query": "euro rate EUR/USD"}).json()
        assert not any(h["kind"] == "episode" and "EUR" in h["text"] for h in hits)
        expired = [e for e in client.get("/v1/users/mara/audit?kind=memory").json()["events"]
                   if e["action"] == "expire"]
        assert {e["session_id"] for e in expired} == {"w1", "w2", "w3"} and all(e["text"] is None for e in expired)


def test_handoff_after_a_discussion_with_a_rejected_idea(client: TestClient) -> None:
    resp = client.post("/v1/memories", json={"user_id": "gus", "session_id": "intake", "agent_id": "agent-a",
                                             "messages": [{"id": f"h{i}", "role": ROLES[r], "content": c}
                                                          for i, (r, c) in enumerate(REPORT)]})
    assert resp.status_code == 200
    resp = client.post("/v1/handoffs", json={"user_id": "gus", "session_id": "intake",
                                             "task": "generate weekly regional report", "to_agent": "agent-b"})
    assert resp.status_code == 200, resp.text
    packet = resp.json()
    assert packet["task"] == "generate weekly regional report" and packet["source_session"] == "intake"
    assert "exclude archived projects" in packet["requirements"]
    assert not any("include archived" in r for r in packet["requirements"])
    assert packet["format"] == "summary table first, details after"
    assert packet["constraints_confirmed_by_user"] is True
    assert packet["open_questions"] == ["Should I also send it to the finance team?"]
    assert packet["from_agent"] == "agent-a" and packet["to_agent"] == "agent-b"
    assert {s for d in packet["details"] for s in d["sources"]} <= {f"h{i}" for i in range(8)}

    for body, code in [({"user_id": "gus", "session_id": "nope", "task": "x"}, 404),
                       ({"user_id": "nobody", "session_id": "intake", "task": "x"}, 404),
                       ({"user_id": "gus", "session_id": "intake", "task": "  "}, 422),
                       ({"user_id": "gus", "session_id": "intake"}, 422),
                       ({"user_id": "gus", "session_id": "intake", "task": "x", "extra": 1}, 422)]:
        resp = client.post("/v1/handoffs", json=body)
        assert resp.status_code == code, (body, resp.text)
        assert resp.json()["detail"]
