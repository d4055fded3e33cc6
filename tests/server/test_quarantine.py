"""A message that fails every time it is processed: it never fails its neighbours or the user's later
writes, it is tried a bounded number of times, then quarantined (kept, listed, no longer tried), and
released by an admin. The failure is real: a model behind a real OpenAI-compatible server on loopback
(tests/fakes/openai_server.py) that answers one message with JSON of the wrong shape, every time."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from hippograph.auth import Scope
from hippograph.config import AuthSettings, ExtractionSettings, Settings
from hippograph.models import MessageIn, Role
from hippograph.server.app import create_app
from hippograph.sweeper import Sweeper
from hippograph.wiring import build
from tests.apps import LOCAL
from tests.conftest import ROOT
from tests.fakes.answers import answer
from tests.fakes.openai_server import FakeOpenAI
from tests.server.test_llm_path import llm_settings

ADMIN = "quarantine-admin-" + "k" * 32
POISON = "POISON"


def poisoned(request: dict) -> dict:
    """A good model's answer, but for any prompt holding POISON: an answer of the wrong shape."""
    if POISON in json.dumps(request.get("messages")):
        return {"entities": "none, sorry"}
    return answer(request)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(answer=poisoned, dim=64).start() as server:
        yield server


def settings(fake: FakeOpenAI, tmp_path: Path) -> Settings:
    base = llm_settings(fake, tmp_path / "data", max_retries=0)
    return base.model_copy(update={"extraction": ExtractionSettings(backend="llm", on_llm_failure="retry",
                                                                    max_attempts=3),
                                   "auth": AuthSettings(bootstrap_key=ADMIN)})


def msg_in(mid: str, text: str) -> MessageIn:
    return MessageIn(id=mid, role=Role.user, content=text)


def msg(mid: str, text: str) -> dict:
    return {"id": mid, "role": "user", "content": text}


def write(client: TestClient, *messages: dict, user: str = "pia") -> dict:
    resp = client.post("/v1/memories", json={"user_id": user, "session_id": "s", "messages": list(messages)})
    assert resp.status_code == 200, resp.text
    return resp.json()


def status(client: TestClient, *ids: str, user: str = "pia") -> dict:
    resp = client.post("/v1/memories/status", json={"user_id": user, "ids": list(ids)})
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_a_failing_message_is_quarantined_and_never_holds_back_the_others(
    fake: FakeOpenAI, tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "hippograph.ingest")
    with TestClient(create_app(settings(fake, tmp_path)), headers={"Authorization": f"Bearer {ADMIN}"}, base_url=LOCAL) as client:
        svc = client.app.state.service  # type: ignore[attr-defined]
        first = write(client, msg("m1", "I live in Oslo."), msg("bad", f"{POISON} I work at Acme."),
                      msg("m2", "I work at Initech."))
        # its neighbours in the write are processed; it stays pending, and the answer says why
        assert first["pending"] == ["bad"], first
        assert any("bad: processing failed" in w and "attempt 1 of 3" in w for w in first["warnings"]), first
        profile = client.get("/v1/users/pia/profile").json()
        assert {f["fact"] for f in profile["facts"]} == {"Lives in Oslo", "Works at Initech"}

        # the user's next write is processed as usual; the backlog's failure is the second attempt
        second = write(client, msg("m3", "I prefer tea."))
        assert second["pending"] == [] and second["stored"] == ["m3"], second
        assert any("attempt 2 of 3" in w for w in second["warnings"]), second
        assert svc.retry_pending() == 0  # the third attempt: quarantined
        assert status(client, "bad", "m3") == {"user_id": "pia", "processed": ["m3"], "pending": [],
                                               "quarantined": ["bad"], "unknown": []}
        part = client.get("/v1/users/pia/memories/bad").json()["parts"][0]
        assert part["status"] == "quarantined" and part["attempts"] == 3 and "ExtractionError" in part["failure"]
        said = [r.getMessage() for r in caplog.records if "quarantined after" in r.getMessage()]
        assert len(said) == 1 and "'bad'" in said[0] and "'pia'" in said[0] and "ExtractionError" in said[0]

        # no longer tried: not by the sweep, not by the user's writes
        calls = len(fake.calls("/chat/completions"))
        assert svc.retry_pending() == 0
        assert write(client, msg("m4", "I live in Bergen."))["warnings"] == []
        assert len(fake.calls("/chat/completions")) == calls + 1
        listed = client.get("/v1/admin/quarantine").json()["quarantined"]
        assert [(q["user_id"], q["memory_id"], q["attempts"]) for q in listed] == [("pia", "bad", 3)]
        assert "wrong shape" in listed[0]["failure"] or "does not match" in listed[0]["failure"]

        # released once the model is fixed: the sweep processes it
        fake.answer = answer
        released = client.post("/v1/admin/quarantine/release", json={"user_id": "pia", "ids": ["bad", "m1"]})
        assert released.status_code == 200 and released.json()["released"] == ["bad"], released.text
        assert status(client, "bad")["pending"] == ["bad"]
        assert svc.retry_pending() == 1
        assert status(client, "bad")["processed"] == ["bad"]
        assert client.get("/v1/admin/quarantine").json()["quarantined"] == []


def test_another_tenants_admin_sees_none_of_it(fake: FakeOpenAI, tmp_path: Path) -> None:
    with TestClient(create_app(settings(fake, tmp_path)), headers={"Authorization": f"Bearer {ADMIN}"}, base_url=LOCAL) as client:
        svc = client.app.state.service  # type: ignore[attr-defined]
        write(client, msg("bad", f"{POISON} hello there"))
        for _ in range(2):
            svc.retry_pending()
        assert len(client.get("/v1/admin/quarantine").json()["quarantined"]) == 1
        other = client.post("/v1/keys", json={"scopes": ["admin"], "tenant": "globex"})
        assert other.status_code == 403  # an admin key makes keys of its own tenant only
        _, key = svc.tenancy.create_key("globex", [Scope.read, Scope.write, Scope.admin])
        theirs = {"Authorization": f"Bearer {key}"}
        assert client.get("/v1/admin/quarantine", headers=theirs).json()["quarantined"] == []
        resp = client.post("/v1/admin/quarantine/release", headers=theirs, json={"user_id": "pia", "ids": ["bad"]})
        assert resp.status_code == 404  # their tenant has no such user


def test_a_quarantined_message_blocks_no_restart_forget_or_optimize(fake: FakeOpenAI, tmp_path: Path) -> None:
    cfg = settings(fake, tmp_path)
    svc = build(cfg)
    svc.open()
    try:
        svc.remember("ola", "s", None, [msg_in("good", "I live in Lima."), msg_in("bad", f"{POISON} again")])
        for _ in range(2):
            svc.retry_pending()
        assert [e.client_id for e in svc.graph.quarantined_episodes()] == ["bad"]
    finally:
        svc.close()
    again = build(cfg)
    again.open()  # ready at once; the first sweep leaves the quarantined message alone
    try:
        assert again.ready and again.retry_pending() == 0
        assert again.compact(force=True)
        again.forget_user("ola")
        assert again.graph.quarantined_episodes() == [] and not again.graph.user_exists("ola")
    finally:
        again.close()


def test_doctor_lists_and_releases_quarantined_messages(fake: FakeOpenAI, tmp_path: Path) -> None:
    cfg = settings(fake, tmp_path)
    svc = build(cfg)
    svc.open()
    try:
        owner = svc.tenancy.owner("default", "pia", create=True)
        svc.remember(owner, "s", None, [msg_in("bad", f"{POISON} once more")])
        for _ in range(2):
            svc.retry_pending()
    finally:
        svc.close()

    def doctor(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "hippograph.cli", "doctor", "--data-dir", str(cfg.data_dir),
                               *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)

    seen = doctor()
    assert seen.returncode == 1, seen.stderr
    assert "quarantined: 1" in seen.stdout and "default/pia/bad  3 attempts" in seen.stdout
    assert "ExtractionError" in seen.stdout and "keys: none made yet" in seen.stdout
    assert json.loads(doctor("--json").stdout)["quarantined"][0]["memory_id"] == "bad"
    released = doctor("--release", "pia/bad")
    assert released.returncode == 0 and "released default/pia/bad" in released.stdout
    assert doctor().returncode == 0
    missing = subprocess.run([sys.executable, "-m", "hippograph.cli", "doctor", "--data-dir", str(tmp_path / "nope")],
                             cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_the_sweep_goes_on_after_any_error() -> None:
    """Before, one unexpected error ended the sweep task for good (and expiry and compaction with it)."""
    seen: list[int] = []

    def flaky() -> None:
        seen.append(len(seen))
        if len(seen) == 1:
            raise RecursionError("maximum recursion depth exceeded while pickling an object")

    sweeper = Sweeper([flaky], every=0.05)
    sweeper.start()
    try:
        for _ in range(200):
            if len(seen) >= 3:
                break
            sweeper.stopping.wait(0.05)
    finally:
        sweeper.stop()
    assert len(seen) >= 3 and sweeper.passes >= 2
