"""Tool results are the world's facts at one moment: observations that expire, shown 'as of' their
time, never notes or searchable memories; the context lists the session's tool calls so an agent can
see it already made the same call."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient

from hippograph.bench.common import bench_service
from hippograph.config import Settings, WorldSettings
from hippograph.models import MessageIn, Role
from hippograph.records import normalise_arguments


def iso(dt: datetime) -> str:
    return dt.isoformat().replace("+00:00", "Z")


def test_tool_calls_are_observations_with_a_log(client: TestClient) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    msgs = [
        {"id": "w1", "role": "user", "content": "What's the weather in Paris?", "timestamp": iso(now - timedelta(minutes=9))},
        {"id": "w2", "role": "tool", "name": "weather", "content": "I live in Berlin. Paris: 18C, sunny.",
         "metadata": {"arguments": {"City": " Paris "}}, "timestamp": iso(now - timedelta(minutes=8))},
        {"id": "w3", "role": "assistant", "content": "It is 18C and sunny in Paris.", "timestamp": iso(now - timedelta(minutes=7))},
        {"id": "w4", "role": "tool", "name": "weather", "content": "Paris: 17C, cloudy.",
         "metadata": {"arguments": {"city": "paris"}}, "timestamp": iso(now - timedelta(minutes=2))},
        {"id": "w5", "role": "tool", "name": "stocks", "content": "ACME 41.2 USD",
         "metadata": {"arguments": {"symbol": "ACME"}}, "timestamp": iso(now - timedelta(days=2))},
    ]
    resp = client.post("/v1/memories", json={"user_id": "wendy", "session_id": "trip", "messages": msgs})
    assert resp.status_code == 200, resp.text
    assert resp.json()["notes"] == []  # a tool's words are never facts about the user

    ctx = client.post("/v1/context", json={"user_id": "wendy", "session_id": "trip", "query": "Weather again?",
                                           "token_budget": 2000}).json()
    log = [i["text"] for i in ctx["sections"]["tools"]]
    assert len(log) == 2  # the two weather calls are one call: same tool, same normalised arguments
    weather = next(t for t in log if t.startswith("weather("))
    assert weather.startswith('weather({"city":"paris"}) called 2 times')
    assert all(t.endswith("→ its result is in the conversation below") for t in log)  # each result once
    recent = [i["text"] for i in ctx["sections"]["recent"] + ctx["sections"]["pinned"]]
    latest = next(t for t in recent if t.endswith("Paris: 17C, cloudy."))
    assert latest.startswith("weather (as of ") and "valid until" in latest
    stocks = next(t for t in recent if t.startswith("stocks ("))
    assert "expired" in stocks  # two days old, default validity one hour
    assert "## Tool calls in this session" in ctx["context"]
    assert all(ctx["context"].count(m["content"]) == 1 for m in msgs if m["role"] == "tool")

    hits = client.post("/v1/search", json={"user_id": "wendy", "query": "cloudy Paris weather"}).json()
    assert not any(set(h["provenance"]) & {"w2", "w4", "w5"} for h in hits)  # observations are not memories
    facts = client.get("/v1/users/wendy/profile").json()["facts"]
    assert not any("Berlin" in f["fact"] for f in facts)


def test_arguments_are_normalised() -> None:
    assert normalise_arguments({"City": " Paris ", "days": 2}) == normalise_arguments('{"days": 2, "city": "paris"}')
    assert normalise_arguments(None) == "{}"
    assert normalise_arguments("not json") == '"not json"'


def test_validity_is_configurable_per_tool() -> None:
    settings = Settings(world=WorldSettings(tool_ttl_seconds=3600, tool_ttl={"stocks": 60}))
    at = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
    with bench_service(None, settings) as svc:
        svc.remember("vic", "s", None, [
            MessageIn(id="a", role=Role.tool, name="stocks", content="ACME 41.2", timestamp=at),
            MessageIn(id="b", role=Role.tool, name="weather", content="Sunny", timestamp=at)])
        shown = {t.text.split(" (")[0]: t.text for t in svc.context("vic", "prices?", session_id="s").sections["pinned"]}
    assert f"expired {at + timedelta(seconds=60):%Y-%m-%d %H:%M} UTC" in shown["stocks"]
    assert f"valid until {at + timedelta(hours=1):%Y-%m-%d %H:%M} UTC" in shown["weather"]
