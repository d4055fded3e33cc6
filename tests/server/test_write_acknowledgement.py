"""The acknowledgement of a write tells the truth: what it lists as stored and not pending is
extracted and searchable when the answer arrives, however large the write, and what is not yet is
listed in `pending`. Real app, real embedded stores; the LLM is a real HTTP server on loopback."""

from __future__ import annotations

import string
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from hippograph.config import ExtractionSettings, LLMSettings, Settings
from hippograph.server.app import create_app
from tests.apps import LOCAL
from tests.fakes.answers import answer
from tests.fakes.openai_server import FakeOpenAI

MAX_MESSAGES = 2000  # what POST /v1/memories accepts in one request


def code_word(i: int) -> str:
    """A made-up word per message ("qbaxz"), so a search can find exactly that message."""
    letters = string.ascii_lowercase
    return "q" + "".join(letters[(i // 26 ** k) % 26] for k in range(3)) + "z"


def messages(n: int) -> list[dict]:
    return [{"id": f"m{i}", "role": "user", "content": f"Ticket {i} has the code word {code_word(i)}."}
            for i in range(n)]


def test_a_2000_message_write_is_searchable_when_acknowledged_within_60s(tmp_path: Path) -> None:
    with TestClient(create_app(Settings(data_dir=tmp_path)), base_url=LOCAL) as c:
        started = time.monotonic()
        resp = c.post("/v1/memories", json={"user_id": "bulk", "session_id": "s", "messages": messages(MAX_MESSAGES)})
        took = time.monotonic() - started
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert len(body["stored"]) == MAX_MESSAGES and body["pending"] == []
        assert took < 60, f"the write took {took:.0f} s"
        for i in (0, 999, 1000, 1999):
            assert c.get(f"/v1/users/bulk/memories/m{i}").json()["parts"][0]["status"] == "processed"
            hits = c.post("/v1/search", json={"user_id": "bulk", "query": code_word(i), "limit": 5}).json()
            assert hits[0]["provenance"] == [f"m{i}"], (i, hits[:2])


@pytest.fixture
def llm_down(tmp_path: Path) -> Iterator[tuple[TestClient, FakeOpenAI]]:
    with FakeOpenAI(answer=answer, dim=64).start() as fake:
        fake.set_default("down")
        llm = LLMSettings(base_url=fake.base_url, api_key=SecretStr("test-key"), model="fake-model", max_retries=0,
                          timeout_seconds=5.0, cooldown_seconds=60.0)
        settings = Settings(data_dir=tmp_path, llm=llm,
                            extraction=ExtractionSettings(backend="llm", on_llm_failure="retry", batch_messages=100))
        with TestClient(create_app(settings), base_url=LOCAL) as c:
            yield c, fake


def test_when_the_extractor_fails_every_unprocessed_message_is_listed_as_pending(
    llm_down: tuple[TestClient, FakeOpenAI],
) -> None:
    c, fake = llm_down
    sent = messages(1500)  # two processing steps: the first fails, the second is not tried
    resp = c.post("/v1/memories", json={"user_id": "ivy", "session_id": "s", "messages": sent})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["pending"] == [m["id"] for m in sent] and body["stored"] == body["pending"]
    for i in (0, 1499):
        assert c.get(f"/v1/users/ivy/memories/m{i}").json()["parts"][0]["status"] == "pending"
    # a retried write of the same messages says the same while they wait for the sweep
    again = c.post("/v1/memories", json={"user_id": "ivy", "session_id": "s", "messages": sent[-3:]}).json()
    assert again["duplicates"] == ["m1497", "m1498", "m1499"] and set(again["pending"]) >= set(again["duplicates"])
    assert fake.calls("/chat/completions")  # the extractor was really tried
