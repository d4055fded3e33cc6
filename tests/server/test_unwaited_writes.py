"""Writes sent with `"wait": false`: answered (202) once stored, extracted afterwards by the server's
background threads. The answer says truthfully what is not searchable yet, the status route says when
it is, the user's statements still replace each other in the order they were said, and a server killed
with SIGKILL before extracting them loses none. Real app, real embedded stores."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hippograph.config import ExtractionSettings, Settings
from hippograph.server.app import create_app
from tests.apps import LOCAL
from tests.server.test_write_acknowledgement import code_word, messages


def settled(c: TestClient | httpx.Client, user: str, ids: list[str], timeout: float = 120) -> dict:
    """Poll the status route until none of `ids` is pending; returns its last answer."""
    deadline = time.monotonic() + timeout
    while True:
        status = c.post("/v1/memories/status", json={"user_id": user, "ids": ids})
        assert status.status_code == 200, status.text
        body = status.json()
        if not body["pending"] or time.monotonic() > deadline:
            return body
        time.sleep(0.1)


@pytest.fixture
def client(tmp_path: Path):
    with TestClient(create_app(Settings(data_dir=tmp_path)), base_url=LOCAL) as c:
        yield c


def test_an_unwaited_write_is_answered_as_stored_and_pending_then_becomes_searchable(client: TestClient) -> None:
    sent = messages(400)
    resp = client.post("/v1/memories", json={"user_id": "quick", "session_id": "s", "messages": sent, "wait": False})
    assert resp.status_code == 202, resp.text
    body = resp.json()
    ids = [m["id"] for m in sent]
    assert body["stored"] == ids
    # nothing of it was extracted when the answer was made: all of it is listed as not searchable yet
    assert body["pending"] == ids and body["notes"] == [] and body["extractor"] is None
    done = settled(client, "quick", ids)
    assert done == {"user_id": "quick", "processed": ids, "pending": [], "quarantined": [], "unknown": []}
    for i in (0, 217, 399):
        assert client.get(f"/v1/users/quick/memories/m{i}").json()["parts"][0]["status"] == "processed"
        hits = client.post("/v1/search", json={"user_id": "quick", "query": code_word(i), "limit": 5}).json()
        assert hits[0]["provenance"] == [f"m{i}"], (i, hits[:2])


def test_a_retried_unwaited_write_is_stored_once_and_says_what_is_still_pending(client: TestClient) -> None:
    sent = messages(30)
    first = client.post("/v1/memories", json={"user_id": "retry", "messages": sent, "wait": False}).json()
    again = client.post("/v1/memories", json={"user_id": "retry", "messages": sent, "wait": False})
    body = again.json()
    assert again.status_code == (202 if body["pending"] else 200)
    assert first["stored"] == [m["id"] for m in sent] and body["stored"] == []
    assert body["duplicates"] == first["stored"]
    settled(client, "retry", first["stored"])
    # once extracted, a retry has nothing pending, and the audit log counts each message created once
    answer = client.post("/v1/memories", json={"user_id": "retry", "messages": sent, "wait": False})
    late = answer.json()
    assert answer.status_code == 200 and late["pending"] == [] and late["duplicates"] == first["stored"]
    audit = client.get("/v1/users/retry/audit", params={"kind": "memory"}).json()["events"]
    assert sorted(e["item_id"] for e in audit if e["action"] == "create") == sorted(
        client.get(f"/v1/users/retry/memories/{m['id']}").json()["parts"][0]["id"] for m in sent)


def test_unwaited_statements_replace_each_other_in_the_order_they_were_said(client: TestClient) -> None:
    # statements the notes judgement takes as the employer (what is tested is the order, not the wording:
    # "Since March I work at Hooli." is 'other' to it as much as an employer, BENCHMARKS "Notes corpus")
    said = ["I work at Initech.", "I moved jobs, I work at Globex now.", "These days I work at Umbrella Corp.",
            "I work at Hooli now."]
    ids = []
    for i, text in enumerate(said):
        body = {"user_id": "mover", "session_id": f"s{i}", "wait": False,
                "messages": [{"id": f"w{i}", "role": "user", "content": text,
                              "timestamp": f"2026-0{i + 1}-01T10:00:00Z"}]}
        assert client.post("/v1/memories", json=body).status_code == 202
        ids.append(f"w{i}")
    assert settled(client, "mover", ids)["processed"] == ids
    facts = client.get("/v1/users/mover/profile").json()["facts"]
    work = [f for f in facts if "work" in f["fact"].lower()]
    assert len(work) == 1 and "Hooli" in work[0]["fact"], facts


def test_the_status_of_documents_unknown_ids_and_other_users(client: TestClient) -> None:
    long_text = " ".join(f"Paragraph {i} describes the {code_word(i)} procedure in detail." for i in range(120))
    resp = client.post("/v1/memories", json={"user_id": "docs", "wait": False,
                                             "documents": [{"id": "manual", "title": "Manual", "text": long_text}]})
    assert resp.status_code == 202 and resp.json()["pending"] == ["manual"]
    assert len(client.get("/v1/users/docs/memories/manual").json()["parts"]) > 1  # a document in pieces
    done = settled(client, "docs", ["manual", "nope"])
    assert done["processed"] == ["manual"] and done["unknown"] == ["nope"]
    client.post("/v1/memories", json={"user_id": "other", "messages": [{"id": "x", "role": "user", "content": "hi"}]})
    # another user's ids are unknown to this one; an unknown user is a 404
    assert client.post("/v1/memories/status", json={"user_id": "other", "ids": ["manual"]}).json()["unknown"] == [
        "manual"]
    missing = client.post("/v1/memories/status", json={"user_id": "nobody", "ids": ["manual"]})
    assert missing.status_code == 404 and "nobody" in missing.json()["detail"]


@pytest.mark.parametrize("body, says", [
    ({"user_id": "u", "messages": [{"role": "user", "content": "hi"}], "wait": "no"}, "wait"),
    ({"user_id": "u", "messages": [{"role": "user", "content": "hi"}], "wait": 0}, "wait"),
])
def test_a_wait_that_is_not_true_or_false_is_refused(client: TestClient, body: dict, says: str) -> None:
    resp = client.post("/v1/memories", json=body)
    assert resp.status_code == 422 and says in resp.text


@pytest.mark.parametrize("body", [{"user_id": "u", "ids": []}, {"user_id": "u", "ids": ["a"] * 2001},
                                  {"user_id": "u"}])
def test_a_status_request_without_ids_or_with_too_many_is_refused(client: TestClient, body: dict) -> None:
    client.post("/v1/memories", json={"user_id": "u", "messages": [{"role": "user", "content": "hi"}]})
    resp = client.post("/v1/memories/status", json=body)
    assert resp.status_code == 422 and "ids" in resp.text


def test_unwaited_writes_survive_sigkill_before_extraction(server_factory, tmp_path: Path) -> None:
    data = tmp_path / "data"
    srv = server_factory(data)
    sent = messages(1500)
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        acked = []
        for start in range(0, len(sent), 500):
            resp = c.post("/v1/memories", json={"user_id": "k9", "session_id": "s", "wait": False,
                                                "messages": sent[start:start + 500]})
            assert resp.status_code == 202, resp.text
            acked += resp.json()["stored"]
        pending_then = c.post("/v1/memories/status", json={"user_id": "k9", "ids": acked}).json()["pending"]
    srv.kill9()
    assert pending_then, "the kill came after everything was extracted: this test checks nothing"
    again = server_factory(data)  # its start-up repair extracts what the killed one had not
    with httpx.Client(base_url=again.url, timeout=60) as c:
        done = settled(c, "k9", acked)
        assert done["processed"] == acked and done["pending"] == [] and done["unknown"] == []
        for i in (0, 777, 1499):
            hits = c.post("/v1/search", json={"user_id": "k9", "query": code_word(i), "limit": 5}).json()
            assert hits[0]["provenance"] == [f"m{i}"], (i, hits[:2])


def test_each_unwaited_write_is_extracted_as_its_own_batch(client: TestClient) -> None:
    """Two writes to one session, not waited for: the second replaces the first's note, and the first
    stays in the history, as when each write is waited for (one batch of both would keep the last only)."""
    for i, text in enumerate(["I work at Initech.", "I moved on, I work at Globex now."]):
        body = {"user_id": "two", "session_id": "same", "wait": False,
                "messages": [{"id": f"t{i}", "role": "user", "content": text, "timestamp": f"2026-0{i + 1}-01T10:00:00Z"}]}
        assert client.post("/v1/memories", json=body).status_code == 202
    assert settled(client, "two", ["t0", "t1"])["processed"] == ["t0", "t1"]
    facts = client.get("/v1/users/two/profile", params={"history": "true"}).json()["facts"]
    work = {f["fact"]: f["current"] for f in facts if "work" in f["fact"].lower()}
    assert [current for fact, current in work.items() if "Initech" in fact] == [False], facts
    assert [current for fact, current in work.items() if "Globex" in fact] == [True], facts


def test_past_the_backlog_an_unwaited_write_is_extracted_before_the_answer(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, extraction=ExtractionSettings(max_backlog=0))
    with TestClient(create_app(settings), base_url=LOCAL) as c:
        resp = c.post("/v1/memories", json={"user_id": "full", "wait": False, "messages": messages(5)})
        assert resp.status_code == 200, resp.text
        assert resp.json()["pending"] == [] and resp.json()["extractor"] == "spacy"
        assert c.post("/v1/memories/status", json={"user_id": "full", "ids": ["m0", "m4"]}).json()["processed"] == [
            "m0", "m4"]


def test_a_waited_write_behind_unwaited_ones_is_answered_after_them_with_its_own_result(client: TestClient) -> None:
    busy = client.post("/v1/memories", json={"user_id": "mixed", "session_id": "bulk", "wait": False,
                                             "messages": messages(400)})
    first = client.post("/v1/memories", json={"user_id": "mixed", "session_id": "s", "wait": False, "messages": [
        {"id": "old", "role": "user", "content": "I work at Initech.", "timestamp": "2026-01-01T10:00:00Z"}]})
    assert busy.status_code == first.status_code == 202
    waited = client.post("/v1/memories", json={"user_id": "mixed", "session_id": "s", "messages": [
        {"id": "new", "role": "user", "content": "I moved on, I work at Globex now.",
         "timestamp": "2026-02-01T10:00:00Z"}]})
    assert waited.status_code == 200, waited.text
    body = waited.json()
    assert body["stored"] == ["new"] and body["pending"] == [] and body["extractor"] == "spacy"
    assert any("Globex" in n["text"] and n["superseded"] for n in body["notes"]), body["notes"]
    # the unwaited writes before it were finished first: the waited one replaced their note
    status = client.post("/v1/memories/status", json={"user_id": "mixed", "ids": ["old", "m0", "m399"]}).json()
    assert status["processed"] == ["old", "m0", "m399"]
    facts = client.get("/v1/users/mixed/profile", params={"history": "true"}).json()["facts"]
    work = {f["fact"]: f["current"] for f in facts if "work" in f["fact"].lower()}
    assert [c for f, c in work.items() if "Initech" in f] == [False] and [c for f, c in work.items() if "Globex" in f] == [
        True], facts
