"""Tier 1 is meant to vanish: rolling summaries of long sessions, sessions that expire with everything
in them but the notes, memories and sessions deleted on request (with what was derived only from
them), and a profile that stays small."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient

from hippograph.bench.common import bench_service
from hippograph.config import ProfileSettings, SessionSettings, Settings
from hippograph.lifecycle import covered_through, stored_summary
from hippograph.models import Episode, EpisodeKind, MessageIn, Role, utcnow
from hippograph.planner.summary import ExtractiveSummarizer, SummaryLine
from hippograph.server.app import create_app
from tests.apps import LOCAL

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def turn(i: int, session: str = "s") -> MessageIn:
    role = Role.user if i % 2 == 0 else Role.assistant
    return MessageIn(id=f"{session}-{i}", role=role, timestamp=T0 + timedelta(minutes=i),
                     content=f"Step {i}: we checked invoice batch {i} and found {i % 7} missing purchase orders.")


def summary_of(svc, user: str, session: str) -> Episode | None:
    return stored_summary(svc.graph.session_episodes(user, session))


def test_a_long_session_gets_a_rolling_capped_summary() -> None:
    settings = Settings(sessions=SessionSettings(summary_threshold=30, summary_keep_recent=15,
                                                 summary_max_tokens=120))
    with bench_service(None, settings) as svc:
        for i in range(29):
            svc.remember("ann", "s", None, [turn(i)])
        assert summary_of(svc, "ann", "s") is None  # below the threshold: nothing to summarise
        svc.remember("ann", "s", None, [turn(29)])
        first = summary_of(svc, "ann", "s")
        assert first is not None and covered_through(first) == 14  # all but the 15 most recent
        assert first.metadata["method"] == "extractive" and first.metadata["messages"] == 15
        assert svc.counter.count(first.content) <= 120
        sources = {line["source"] for line in first.metadata["lines"]}
        assert sources and sources <= {e.id for e in svc.graph.session_episodes("ann", "s") if e.seq <= 14}

        for i in range(30, 44):  # 14 more aged out: not yet a step of 15
            svc.remember("ann", "s", None, [turn(i)])
        assert summary_of(svc, "ann", "s").id == first.id
        svc.remember("ann", "s", None, [turn(44)])
        second = summary_of(svc, "ann", "s")
        assert second.id != first.id and covered_through(second) == 29 and second.metadata["messages"] == 30
        assert svc.counter.count(second.content) <= 120  # rolled, never grown past the cap
        kinds = [e.kind for e in svc.graph.session_episodes("ann", "s")]
        assert kinds.count(EpisodeKind.summary) == 1  # the old summary was replaced, not piled up
        summaries = [e for e in svc.audit("ann", item_kind="memory") if e.actor == "summarizer:extractive"]
        assert [(e.action, e.item_id) for e in summaries] == [
            ("create", first.id), ("create", second.id), ("supersede", first.id)]

        # a summary is never recall material and never a source of notes
        assert all(h.id != second.id for h in svc.search("ann", "missing purchase orders invoice batch", 50))
        assert all(second.id not in n.source_episode_ids for n in svc.graph.list_notes("ann", True))

        ctx = svc.context("ann", "How many purchase orders were missing?", session_id="s", token_budget=3000)
        lines = ctx.sections["summary"]
        shown = {i.id for i in ctx.sections["pinned"] + ctx.sections["recent"]}
        assert lines and not ({i.id for i in lines} & shown)  # nothing twice in the block
        assert ctx.context.startswith("## Summary of earlier conversation")


class BlockingCheckSummarizer(ExtractiveSummarizer):
    """Stands for a slow model: while it runs, another request must be able to write."""

    def __init__(self, svc_box: list, counter) -> None:
        super().__init__(counter)
        self.svc_box = svc_box
        self.wrote_meanwhile: list[bool] = []

    def summarize(self, previous: Sequence[SummaryLine], episodes: Sequence[Episode], max_tokens: int
                  ) -> list[SummaryLine]:
        svc = self.svc_box[0]
        done = threading.Event()

        def write() -> None:
            svc.remember("other", "o", None, [MessageIn(role=Role.user, content="I moved to Lisbon last year.")])
            done.set()

        threading.Thread(target=write, daemon=True).start()
        self.wrote_meanwhile.append(done.wait(60))
        return super().summarize(previous, episodes, max_tokens)


def test_no_store_lock_is_held_while_a_summary_is_computed() -> None:
    settings = Settings(sessions=SessionSettings(summary_threshold=4, summary_keep_recent=2))
    with bench_service(None, settings) as svc:
        box = [svc]
        svc.sessions.summarizer = slow = BlockingCheckSummarizer(box, svc.counter)
        svc.remember("bea", "s", None, [turn(i) for i in range(4)])
        assert slow.wrote_meanwhile == [True]
        assert summary_of(svc, "bea", "s") is not None
        assert svc.graph.list_sessions("other")  # the concurrent write landed


def test_an_expired_session_is_gone_but_its_notes_stay() -> None:
    settings = Settings(sessions=SessionSettings(ttl_seconds=3600))
    with bench_service(None, settings) as svc:
        svc.remember("cal", "old", "agent-a", [
            MessageIn(id="c1", role=Role.user, content="I work at Initech as a data engineer."),
            MessageIn(id="c2", role=Role.tool, name="weather", content="Oslo: 3C", metadata={"arguments": {"c": 1}}),
            MessageIn(id="c3", role=Role.user, content="Our quarterly migration to Snowflake is blocked.")])
        svc.remember("cal", "new", "agent-a", [MessageIn(id="c4", role=Role.user, content="Plan the offsite.")])
        notes_before = [n.text for n in svc.graph.list_notes("cal")]
        assert any("Initech" in t for t in notes_before)
        assert [s["session_id"] for s in svc.list_sessions("cal")] == ["new", "old"]

        assert svc.expire_sessions(now=utcnow() + timedelta(minutes=30)) == 0  # not idle long enough
        old_ids = {e.id for e in svc.graph.session_episodes("cal", "old")}
        assert len(old_ids) == 3
        # "new" is touched again later, so only "old" is idle past the TTL
        svc.graph.touch_sessions("cal", ["new"], utcnow() + timedelta(hours=1))
        assert svc.expire_sessions(now=utcnow() + timedelta(hours=1, minutes=1)) == 1

        assert svc.graph.session_episodes("cal", "old") == []
        assert svc.indexer.store.has(sorted(old_ids)) == set()  # gone from the vector store too
        assert [n.text for n in svc.graph.list_notes("cal")] == notes_before  # tier 2 stays
        assert all("Snowflake" not in h.text or h.kind != "episode" for h in svc.search("cal", "Snowflake", 20))
        ctx = svc.context("cal", "What was blocked?", session_id="old")
        assert ctx.sections["recent"] == [] and ctx.sections["tools"] == []
        expired = [e for e in svc.audit("cal", item_kind="memory") if e.action == "expire"]
        assert {e.item_id for e in expired} == old_ids
        assert all(e.actor == "session-ttl" and e.text is None and e.session_id == "old" for e in expired)
        assert [s["session_id"] for s in svc.list_sessions("cal")] == ["new"]


def test_expiry_over_http_with_a_short_ttl(tmp_path) -> None:
    settings = Settings(data_dir=tmp_path, sessions=SessionSettings(ttl_seconds=1, sweep_seconds=3600))
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        body = {"user_id": "dan", "session_id": "s1", "messages": [
            {"id": "d1", "role": "user", "content": "Please always answer me in French."}]}
        assert client.post("/v1/memories", json=body).status_code == 200
        sessions = client.get("/v1/users/dan/sessions").json()["sessions"]
        assert [s["session_id"] for s in sessions] == ["s1"] and sessions[0]["expires_at"]
        time.sleep(1.3)
        ctx = client.post("/v1/context", json={"user_id": "dan", "session_id": "s1", "query": "language?"}).json()
        assert ctx["sections"]["recent"] == []  # the idle session expired before the block was built
        assert "French" in ctx["context"]  # ... and the preference it taught is still known
        assert client.get("/v1/users/dan/sessions").json()["sessions"] == []
        prefs = client.get("/v1/users/dan/profile").json()["preferences"]
        assert any("French" in p["pref"] for p in prefs)
        assert len(prefs[0]["source"]) == 1  # the message expired; the item still cites where it came from


def test_end_a_session_and_delete_a_memory(client: TestClient) -> None:
    msgs = [{"id": "e1", "role": "user", "content": "My manager is Priya Shah."},
            {"id": "e2", "role": "user", "content": "The launch date for Apollo is in May."}]
    assert client.post("/v1/memories", json={"user_id": "eve", "session_id": "a", "messages": msgs}).status_code == 200
    assert client.post("/v1/memories", json={"user_id": "eve", "session_id": "b", "messages": [
        {"id": "e3", "role": "user", "content": "Apollo needs a new logo."}]}).status_code == 200

    resp = client.delete("/v1/users/eve/memories/e2?actor=user:eve")
    assert resp.status_code == 200 and resp.json() == {"deleted": ["e2"]}
    hits = client.post("/v1/search", json={"user_id": "eve", "query": "Apollo launch date May"}).json()
    assert all(h["provenance"] != ["e2"] for h in hits)
    assert client.delete("/v1/users/eve/memories/e2").status_code == 404
    assert client.delete("/v1/users/nobody/memories/e2").status_code == 404

    resp = client.delete("/v1/users/eve/sessions/a?actor=agent:cleanup")
    assert resp.status_code == 200 and resp.json()["memories_deleted"] == 1
    assert client.delete("/v1/users/eve/sessions/a").status_code == 404
    assert [s["session_id"] for s in client.get("/v1/users/eve/sessions").json()["sessions"]] == ["b"]
    events = client.get("/v1/users/eve/audit?kind=memory").json()["events"]
    assert [(e["action"], e["actor"]) for e in events if e["action"] != "create"] == [
        ("delete", "user:eve"), ("delete", "agent:cleanup")]
    # ending a session on request forgets what was derived only from it (the TTL would keep it)
    assert not any("Priya" in f["fact"] for f in client.get("/v1/users/eve/profile").json()["facts"])


def test_the_profile_stays_under_its_cap_and_confidence_grows() -> None:
    settings = Settings(profile=ProfileSettings(max_items=3))
    facts = ["I work at Globex.", "I'm allergic to peanuts.", "I'm vegetarian.", "I speak Dutch.", "I live in Porto."]
    with bench_service(None, settings) as svc:
        for i, text in enumerate(facts):
            svc.remember("fay", f"s{i}", None, [MessageIn(id=f"f{i}", role=Role.user, content=text,
                                                         timestamp=T0 + timedelta(days=i))])
        once = next(n for n in svc.graph.list_notes("fay") if "Porto" in n.text).confidence
        svc.remember("fay", "s9", None, [MessageIn(id="f9", role=Role.user, content="I live in Porto.",
                                                   timestamp=T0 + timedelta(days=9))])
        current = svc.graph.list_notes("fay")
        assert len(current) == 3
        retired = [e for e in svc.audit("fay", item_kind="note") if e.action == "retire"]
        assert retired and all(e.actor == "profile-cap" for e in retired)
        history = {n.id: n for n in svc.graph.list_notes("fay", include_history=True)}
        assert all(history[e.item_id].invalid_at is not None for e in retired)  # kept as history
        assert {n.id for n in current}.isdisjoint(e.item_id for e in retired)
        porto = next(n for n in current if "Porto" in n.text)
        assert porto.confidence > once and len(porto.source_episode_ids) == 2  # said twice: surer
        assert not svc.indexer.store.has([e.item_id for e in retired])  # retired items leave the index
