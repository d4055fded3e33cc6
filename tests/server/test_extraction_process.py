"""spaCy extraction in its child process: it gives what the in-process extractor gives, a child that
dies is replaced, and a write whose extraction died with it is extracted again by a new child, nothing
lost. Real child processes, real embedded stores."""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from fastapi.testclient import TestClient

from hippograph.config import ExtractionSettings, Settings
from hippograph.extraction.spacy_extractor import DEFAULT_MODEL, SpacyExtractor
from hippograph.extraction.worker import _CHILDREN, ProcessExtractor
from hippograph.models import Episode, EpisodeKind, Role
from hippograph.server.app import create_app
from tests.apps import LOCAL
from tests.server.test_write_acknowledgement import messages

SAID = ["I moved to Lisbon last month and I work at Feedzai now.", "My manager is Ana Costa.",
        "Do you know a good bakery near Alfama?", "I prefer short answers, please.",
        "We decided to use Postgres for the billing service.", "thanks!", "My sister Marta lives in Porto."]


def _child_pid() -> int:
    return _CHILDREN.get((DEFAULT_MODEL, 128, 100_000)).proc.pid


def test_the_child_extracts_what_the_process_extracts() -> None:
    episodes = [Episode(id=f"e{i}", user_id="u", session_id="s", kind=EpisodeKind.message, role=Role.user,
                        content=text, timestamp=datetime(2026, 5, 1, 10, i, tzinfo=UTC), seq=i)
                for i, text in enumerate(SAID)]
    here, there = SpacyExtractor().extract(episodes), ProcessExtractor(DEFAULT_MODEL).extract(episodes)
    assert there == here
    assert here.entities and here.relations and here.notes and here.small_talk == ["e5"]


def test_a_dead_child_is_replaced_and_what_it_was_extracting_stays_pending(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, extraction=ExtractionSettings(separate_process=True))
    with TestClient(create_app(settings), base_url=LOCAL) as c:
        first = _child_pid()
        os.kill(first, signal.SIGKILL)
        time.sleep(0.2)
        resp = c.post("/v1/memories", json={"user_id": "u", "messages": messages(3)})
        assert resp.status_code == 200 and resp.json()["pending"] == [], resp.text  # a new child took it
        assert _child_pid() != first

        answers: list = []
        big = threading.Thread(target=lambda: answers.append(
            c.post("/v1/memories", json={"user_id": "u", "messages": messages(2000)[3:]})))
        big.start()
        pool = _CHILDREN.get((DEFAULT_MODEL, 128, 100_000))
        deadline = time.monotonic() + 120
        while not pool.busy() and time.monotonic() < deadline:
            time.sleep(0.05)  # until a child extracts the write's messages (10 s or more for 1997 of them)
        busy = pool.busy()
        assert busy, "no child took the write's extraction within 120 s"
        os.kill(busy[0], signal.SIGKILL)
        big.join(300)  # a new child reads its model, then extracts the messages again in halves
        assert not big.is_alive(), "the write was not answered within 300 s of the kill"
        body = answers[0].json()
        assert answers[0].status_code == 200 and len(body["stored"]) == 1997
        # a new child extracted the killed call's messages again, in halves (the messages might have been
        # what killed it): none is lost or left pending, and the answer says what happened
        assert body["pending"] == [], body["pending"][:5]
        assert any("processed again in smaller batches" in w and "extraction process stopped" in w
                   for w in body["warnings"]), body["warnings"]
        assert c.app.state.service.retry_pending() == 0
        status = c.post("/v1/memories/status", json={"user_id": "u", "ids": body["stored"]}).json()
        assert len(status["processed"]) == 1997 and status["quarantined"] == []
