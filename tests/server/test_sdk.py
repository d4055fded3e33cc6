"""The Python SDK against a real `hippograph serve`, sync and async: typed results, one exception per
error class, and retries that honour Retry-After without storing anything twice."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from hippograph import (
    AsyncClient,
    Client,
    ContextResult,
    Forbidden,
    InvalidInput,
    MessageIn,
    NotFound,
    RateLimited,
    Unauthorized,
    Unavailable,
)
from hippograph.ingest import IngestResult
from hippograph.operations import ProfileOut
from tests.conftest import ServerProcess, free_port

KEY = "hg_sdk_bootstrap_key_0123456789abcdefgh"
TURN = [{"id": "m1", "role": "user", "content": "Alice works at Acme Corp in Lyon. I report to Alice.",
         "timestamp": "2026-11-02T09:00:00Z"},
        {"id": "m2", "role": "user", "content": "I prefer short answers with a summary table first.",
         "timestamp": "2026-11-02T09:01:00Z"}]


@pytest.fixture
def server(tmp_path, monkeypatch) -> Iterator[ServerProcess]:
    monkeypatch.setenv("HIPPOGRAPH_AUTH__BOOTSTRAP_KEY", KEY)
    srv = ServerProcess(tmp_path / "data")
    srv.start()
    yield srv
    srv.stop()


def test_sync_client_end_to_end(server: ServerProcess) -> None:
    with Client(server.url, api_key=KEY) as hg:
        out = hg.remember("erin", messages=TURN, session_id="s1")
        assert isinstance(out, IngestResult) and out.stored == ["m1", "m2"]
        again = hg.remember("erin", messages=TURN, session_id="s1")  # an id is an idempotency key
        assert again.stored == [] and again.duplicates == ["m1", "m2"]
        block = hg.context("erin", "What format does the user want?", session_id="s1", token_budget=400)
        assert isinstance(block, ContextResult) and "table" in block.context and block.tokens <= 400
        hits = hg.search("erin", "Acme", limit=3)
        assert hits and any("Acme" in h.text for h in hits)
        profile = hg.profile("erin")
        assert isinstance(profile, ProfileOut)
        pref = next(p for p in profile.preferences if "short" in p["pref"])
        fixed = hg.correct_note("erin", pref["id"], "Prefers detailed answers", actor="sdk-test")
        assert fixed.replaces == pref["id"]
        history = hg.profile("erin", history=True)
        assert any(p["id"] == pref["id"] and not p["current"] for p in history.preferences)
        events = hg.audit("erin", item_id=pref["id"]).events
        assert [e.action for e in events][:1] == ["create"] and any(e.action == "correct" for e in events)
        assert any(s["session_id"] == "s1" for s in hg.sessions("erin").sessions)
        near = hg.neighbors("erin", "alice")  # by name, in any case
        assert any(e.name == "Acme Corp" for e in near.entities)
        packet = hg.handoff("erin", "s1", "write the weekly report")
        assert packet.source_session == "s1"
        assert hg.delete_note("erin", fixed.id).deleted == fixed.id
        assert hg.end_session("erin", "s1").memories_deleted >= 2
        with pytest.raises(NotFound, match="this user has no session 's1'"):
            hg.end_session("erin", "s1")
        with pytest.raises(InvalidInput, match="token_budget"):
            hg.context("erin", "x", token_budget=1)  # refused before it is sent
        hg.forget_user("erin")
        with pytest.raises(NotFound, match="unknown user 'erin'"):
            hg.profile("erin")


def test_errors_by_class(server: ServerProcess) -> None:
    with Client(server.url) as anonymous, pytest.raises(Unauthorized, match="missing API key"):
        anonymous.profile("erin")
    with Client(server.url, api_key=KEY) as admin:
        reader = admin._http.post("/v1/keys", json={"scopes": ["read"]}).json()["key"]
        admin.remember("fay", messages=[MessageIn(role="user", content="I live in Oslo.")])  # an id is given here
        assert admin.get_memory("fay", admin.profile("fay").facts[0]["source"][0]).parts[0]["content"] == \
            "I live in Oslo."
    with Client(server.url, api_key=reader) as hg:
        assert hg.profile("fay").facts
        with pytest.raises(Forbidden, match="lacks the 'write' scope"):
            hg.remember("fay", messages=TURN)
    with Client(f"http://127.0.0.1:{free_port()}", retries=1, backoff=0.01) as dead, \
            pytest.raises(Unavailable, match="cannot reach"):
        dead.profile("fay")


def test_retries_honour_retry_after(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HIPPOGRAPH_AUTH__BOOTSTRAP_KEY", KEY)
    monkeypatch.setenv("HIPPOGRAPH_AUTH__RATE_LIMIT_PER_MINUTE", "60")  # one a second, two at once
    monkeypatch.setenv("HIPPOGRAPH_AUTH__RATE_LIMIT_BURST", "2")
    srv = ServerProcess(tmp_path / "data")
    srv.start()
    try:
        with Client(srv.url, api_key=KEY, retries=0) as impatient, pytest.raises(RateLimited):
            for _ in range(5):
                impatient.remember("gil", messages=TURN)
        with Client(srv.url, api_key=KEY, retries=5) as patient:
            start = time.monotonic()
            results = [patient.remember("gil", messages=TURN) for _ in range(4)]
            assert time.monotonic() - start >= 1.0  # it waited for the limit, as Retry-After said
        assert all(r.stored == [] for r in results)  # retried writes stored nothing twice
        with Client(srv.url, api_key=KEY, retries=5) as patient:
            assert len(patient.get_memory("gil", "m1").parts) == 1
    finally:
        srv.stop()


def test_async_client(server: ServerProcess) -> None:
    async def main() -> None:
        async with AsyncClient(server.url, api_key=KEY) as hg:
            out = await hg.remember("hal", messages=TURN, session_id="s1")
            assert out.stored == ["m1", "m2"]
            block, profile = await asyncio.gather(hg.context("hal", "Where does Alice work?"), hg.profile("hal"))
            assert "Acme" in block.context and isinstance(profile, ProfileOut)
            with pytest.raises(NotFound):
                await hg.profile("nobody")
            with pytest.raises(InvalidInput):
                hg.search("hal", "")  # refused at the call, before anything is awaited
    asyncio.run(main())
