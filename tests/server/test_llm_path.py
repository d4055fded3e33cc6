"""The LLM path against a real OpenAI-compatible server on loopback (tests/fakes/openai_server.py):
good answers land in both stores; broken, slow, rate-limited and absent endpoints never lose a write
and never give a 500; hosted embeddings have their size checked; usage is counted per user and
operation. Nothing here patches the `openai` client: every failure comes over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from hippograph.bench.common import bench_service
from hippograph.config import EmbeddingSettings, ExtractionSettings, LLMSettings, SessionSettings, Settings
from hippograph.errors import ConfigurationError
from hippograph.lifecycle import stored_summary
from hippograph.models import MessageIn, Role
from hippograph.notes_model.corpus import catalogue
from hippograph.server.app import create_app
from hippograph.wiring import build
from tests.apps import LOCAL
from tests.fakes.answers import answer
from tests.fakes.openai_server import FakeOpenAI

MODEL = "fake-model"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(answer=answer, dim=64).start() as server:
        yield server


def llm_settings(fake: FakeOpenAI, tmp: Path | None = None, embeddings: bool = False, **llm: object) -> Settings:
    cfg = {"base_url": fake.base_url, "api_key": SecretStr("test-key"), "model": MODEL, "max_retries": 1,
           "timeout_seconds": 5.0, "cooldown_seconds": 0.0, **llm}
    extra: dict = {}
    if embeddings:
        extra["embeddings"] = EmbeddingSettings(backend="openai", base_url=fake.base_url, api_key=SecretStr("test-key"),
                                                model="fake-embed", dim=64, max_retries=0, timeout_seconds=5)
    return Settings(extraction=ExtractionSettings(backend="llm"), llm=LLMSettings(**cfg),
                    **({"data_dir": tmp} if tmp else {}), **extra)


def say(i: int, text: str, user: str = "ula") -> MessageIn:
    return MessageIn(id=f"{user}-{i}", role=Role.user, content=text)


def test_good_answers_land_in_both_stores_and_are_counted(fake: FakeOpenAI) -> None:
    with bench_service(None, llm_settings(fake, embeddings=True)) as svc:
        res = svc.remember("ula", "s1", None, [say(1, "I work at Initech and my manager is Priya Shah."),
                                               say(2, "Thanks!")])
        assert res.extractor == f"llm:{MODEL}" and res.warnings == [] and res.pending == []
        facts = [n.text for n in svc.graph.list_notes("ula")]
        assert "Works at Initech" in facts and "Reports to Priya Shah" in facts
        ent = svc.graph.entities_named("ula", ["initech"])["initech"][0]
        assert ent.type == "Organization"
        assert [r.predicate for r in svc.graph.relations_of("ula", [ent.id])] == ["WORKS_AT"]
        assert res.skipped_small_talk == ["ula-2"]
        hits = svc.search("ula", "Initech", 10)
        assert any(h.kind == "note" and h.text == "Works at Initech" for h in hits)  # indexed with fake vectors
        assert svc.graph.audit_log("ula", item_kind="note")[0].actor == f"extractor:llm:{MODEL}"

        request = fake.calls("/chat/completions")[0]["json"]
        assert request["response_format"]["type"] == "json_schema" and request["model"] == MODEL
        usage = {(r.user_id, r.operation): r for r in svc.usage.rows("ula")}
        assert usage[("ula", "extract")].calls == 1 and usage[("ula", "extract")].prompt_tokens > 0
        assert usage[("ula", "embed")].calls >= 2  # the write's records, then the search query
        assert fake.calls("/embeddings")[0]["headers"]["authorization"] == "Bearer test-key"


def test_the_models_notes_are_on_the_catalogue_and_written_as_the_learned_judgements(fake: FakeOpenAI) -> None:
    """The prompt asks for the notes catalogue's slots and acts; the answers go through the same note writer
    as the learned judgement's: a decision is keyed by its subject, a second pet is added and one that died
    is retired, a move replaces the city, and a slot outside the catalogue is given one by the slot model."""
    with bench_service(None, llm_settings(fake)) as svc:
        for i, text in enumerate(["I live in Lisbon. We went with Hetzner for hosting.",
                                  "We have a dog called Rex. We chose GitLab for CI.",
                                  "We have a cat called Miso. I prefer short answers.",
                                  "I moved to Porto. We picked Vercel for hosting.", "Rex died last week."]):
            svc.remember("cat", f"s{i}", None, [say(i, text, "cat")])
        system = fake.calls("/chat/completions")[0]["json"]["messages"][0]["content"]
        assert "blocked_times (several values)" in system and "retracts:" in system  # the catalogue, in the prompt
        notes = svc.graph.list_notes("cat", include_history=True)
        current = {n.text: n.slot for n in notes if n.current}
        assert current.get("Lives in Porto") == "city" and "Lives in Lisbon" not in current, notes
        assert current.get("Chose Vercel for hosting") == "decision:hosting", notes
        assert current.get("Chose GitLab for CI") == "decision:ci", notes  # another subject stays
        assert "Chose Hetzner for hosting" not in current
        assert current.get("Has a pet called Miso") == "pets:miso" and "Has a pet called Rex" not in current, notes
        assert any(n.text == "Has a pet called Rex" and not n.current for n in notes)  # retired, in the history
        prefers = [n for n in notes if n.text == "Prefers short answers"]
        assert prefers and prefers[0].slot.split(":")[0] in {s["slot"] for s in catalogue()["slots"]}, prefers


@pytest.mark.parametrize("broken", ["think", "fenced"])
def test_wrapped_answers_are_repaired(fake: FakeOpenAI, broken: str) -> None:
    with bench_service(None, llm_settings(fake)) as svc:
        fake.script(broken)
        res = svc.remember("vik", "s", None, [say(1, "I live in Porto.", "vik")])
        assert res.extractor == f"llm:{MODEL}" and len(fake.calls("/chat/completions")) == 1
        assert [n.text for n in svc.graph.list_notes("vik")] == ["Lives in Porto"]


@pytest.mark.parametrize("broken", ["truncated", "invalid", "echo_schema", "null_content", "empty", "429"])
def test_one_bad_answer_is_asked_again(fake: FakeOpenAI, broken: str) -> None:
    with bench_service(None, llm_settings(fake)) as svc:
        fake.script(broken)
        res = svc.remember("wes", "s", None, [say(1, "I live in Porto.", "wes")])
        assert res.extractor == f"llm:{MODEL}", res.warnings
        assert [n.text for n in svc.graph.list_notes("wes")] == ["Lives in Porto"]
        assert [c["behaviour"] for c in fake.calls("/chat/completions")][:2] == [broken, "ok"]


@pytest.mark.parametrize("broken", ["invalid", "echo_schema", "truncated", "slow:3", "500", "503", "drop", "429"])
def test_a_failing_endpoint_falls_back_to_spacy_and_loses_nothing(tmp_path, fake: FakeOpenAI, broken: str) -> None:
    settings = llm_settings(fake, tmp_path, timeout_seconds=1.0, max_retries=0, answer_retries=1)
    fake.set_default(broken)
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        resp = client.post("/v1/memories", json={"user_id": "xia", "session_id": "s", "messages": [
            {"id": "x1", "role": "user", "content": "I live in Lisbon and I work at Globex."}]})
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["stored"] == ["x1"] and body["extractor"] == "spacy:fallback" and body["warnings"]
        part = client.get("/v1/users/xia/memories/x1").json()["parts"][0]
        assert part["extractor"] == "spacy:fallback" and part["status"] == "processed"
        assert client.get("/v1/users/xia/memories/nope").status_code == 404
        facts = [f["fact"] for f in client.get("/v1/users/xia/profile").json()["facts"]]
        assert any("Lisbon" in f for f in facts)  # spaCy extracted it
        hits = client.post("/v1/search", json={"user_id": "xia", "query": "Lisbon"}).json()
        assert any(h["provenance"] == ["x1"] for h in hits)
        usage = client.get("/v1/usage?user_id=xia").json()
        assert usage["totals"]["failed"] >= 1
        assert 'operation="extract"' in client.get("/metrics").text


def test_after_a_failure_the_endpoint_rests_instead_of_stalling_every_write(fake: FakeOpenAI) -> None:
    with bench_service(None, llm_settings(fake, max_retries=0, cooldown_seconds=60.0)) as svc:
        fake.set_default("503")
        first = svc.remember("yan", "s", None, [say(1, "I live in Oslo.", "yan")])
        calls = len(fake.calls("/chat/completions"))
        second = svc.remember("yan", "s", None, [say(2, "I work at Initech.", "yan")])
        assert first.extractor == second.extractor == "spacy:fallback"
        assert len(fake.calls("/chat/completions")) == calls  # not called again during the cooldown
        assert "moments ago" in second.warnings[0]


def test_retry_mode_keeps_writes_pending_until_the_llm_is_back(fake: FakeOpenAI) -> None:
    settings = llm_settings(fake, max_retries=0).model_copy(
        update={"extraction": ExtractionSettings(backend="llm", on_llm_failure="retry")})
    with bench_service(None, settings) as svc:
        fake.set_default("down")
        res = svc.remember("zed", "s", None, [say(1, "I live in Quito.", "zed")])
        assert res.stored == ["zed-1"] and res.pending == ["zed-1"] and res.extractor is None
        assert svc.get_memory("zed", "zed-1")["parts"][0]["status"] == "pending"  # kept, not lost
        assert svc.graph.list_notes("zed") == []
        fake.set_default("ok")
        assert svc.retry_pending() == 1
        assert [n.text for n in svc.graph.list_notes("zed")] == ["Lives in Quito"]
        part = svc.get_memory("zed", "zed-1")["parts"][0]
        assert part["status"] == "processed" and part["extractor"] == f"llm:{MODEL}"
        assert any(h.kind == "episode" and "Quito" in h.text for h in svc.search("zed", "Quito", 5))


def test_batches_run_in_parallel_up_to_the_limit(fake: FakeOpenAI) -> None:
    settings = llm_settings(fake, max_concurrency=2).model_copy(
        update={"extraction": ExtractionSettings(backend="llm", batch_messages=1)})
    with bench_service(None, settings) as svc:
        fake.script(*["slow:0.4"] * 5)
        res = svc.remember("abe", "s", None, [say(i, f"I live in Town{i}.", "abe") for i in range(5)])
        assert res.extractor == f"llm:{MODEL}" and len(fake.calls("/chat/completions")) == 5
        assert fake.max_in_flight == 2


def test_llm_summaries_and_entity_resolution(fake: FakeOpenAI) -> None:
    settings = llm_settings(fake).model_copy(update={
        "sessions": SessionSettings(summary_threshold=4, summary_keep_recent=2),
        "extraction": ExtractionSettings(backend="llm", llm_entity_resolution=True)})
    with bench_service(None, settings) as svc:
        svc.remember("bo", "s", None, [say(1, "Robert Smith leads Project Zeta.", "bo")])
        svc.remember("bo", "s", None, [say(2, "Bob said the demo slipped.", "bo"), say(3, "Noted.", "bo"),
                                       say(4, "I live in Rome.", "bo")])
        names = {e.name for e in svc.graph.find_entities("bo", None, 50)}
        assert "Robert Smith" in names and "Bob" not in names  # merged by the model's judgement
        summary = stored_summary(svc.graph.session_episodes("bo", "s"))
        assert summary is not None and summary.metadata["method"] == f"llm:{MODEL}"
        assert all(line["source"].startswith("ep_") for line in summary.metadata["lines"])
        ops = {r.operation for r in svc.usage.rows("bo")}
        assert {"extract", "resolve", "summarize"} <= ops

        fake.set_default("500")  # a failing summary model: the extractive summary stands in
        for i in range(5, 8):
            svc.remember("bo", "s", None, [say(i, f"Step {i} of the demo plan is due on Friday.", "bo")])
        assert stored_summary(svc.graph.session_episodes("bo", "s")).metadata["method"] == "extractive"


def test_embedding_size_is_checked_at_start(tmp_path, fake: FakeOpenAI) -> None:
    wrong = llm_settings(fake, tmp_path, embeddings=True)
    wrong = wrong.model_copy(update={"embeddings": wrong.embeddings.model_copy(update={"dim": 32})})
    service = build(wrong)
    with pytest.raises(ConfigurationError, match=r"returns 64-dimensional vectors, but HIPPOGRAPH_EMBEDDINGS__DIM is 32"):
        service.open()
    service.close()

    right = llm_settings(fake, tmp_path / "b", embeddings=True)
    with bench_service(tmp_path / "b", right) as svc:
        svc.remember("cy", "s", None, [say(1, "I live in Oslo.", "cy")])
    local = Settings(data_dir=tmp_path / "b")  # the 384-dimensional packaged model on the 64-dim store
    service = build(local)
    with pytest.raises(ConfigurationError, match="HIPPOGRAPH_EMBEDDINGS__BACKEND"):
        service.open()
    service.close()


def test_settings_say_what_the_llm_path_needs() -> None:
    with pytest.raises(ValueError, match="HIPPOGRAPH_LLM__BASE_URL"):
        Settings(extraction=ExtractionSettings(backend="llm"))
    with pytest.raises(ValueError, match="HIPPOGRAPH_EMBEDDINGS__DIM"):
        EmbeddingSettings(backend="openai", base_url="http://x/v1", model="m")


def test_llm_extraction_lands_in_neo4j(tmp_path, fake: FakeOpenAI) -> None:
    import os
    import uuid

    from neo4j import GraphDatabase

    from hippograph.config import GraphSettings

    uri = os.environ.get("HIPPOGRAPH_TEST_NEO4J_URI")
    if not uri:
        pytest.fail("HIPPOGRAPH_TEST_NEO4J_URI is not set: run the tests with scripts/test, which starts Neo4j")
    user = f"llm-{uuid.uuid4().hex[:8]}"
    settings = llm_settings(fake, tmp_path).model_copy(update={"graph": GraphSettings(backend="neo4j", uri=uri)})
    with bench_service(tmp_path, settings) as svc:
        res = svc.remember(user, "s", None, [say(1, "I work at Initech.", user)])
        assert res.extractor == f"llm:{MODEL}"
        with GraphDatabase.driver(uri) as driver:
            rows, _, _ = driver.execute_query(
                "MATCH (:Entity {user_id: $u})-[r:WORKS_AT]->(o:Entity:Organization) "
                "MATCH (e:Episode {user_id: $u}) RETURN o.name AS org, e.extractor AS extractor", {"u": user})
            assert [r.data() for r in rows] == [{"org": "Initech", "extractor": f"llm:{MODEL}"}]
            notes, _, _ = driver.execute_query("MATCH (n:Note {user_id: $u}) RETURN n.text AS text", {"u": user})
            assert [r["text"] for r in notes] == ["Works at Initech"]
        assert any(h.kind == "note" for h in svc.search(user, "Initech", 5))  # and in the vector store
        svc.forget_user(user)


def test_a_server_without_schema_support_gets_the_schema_in_the_prompt(fake: FakeOpenAI) -> None:
    fake.set_default("no_schema")  # answers 400 to response_format json_schema, as some servers do
    with bench_service(None, llm_settings(fake)) as svc:
        first = svc.remember("dee", "s", None, [say(1, "I live in Oslo.", "dee")])
        second = svc.remember("dee", "s", None, [say(2, "I work at Initech.", "dee")])
        assert first.extractor == second.extractor == f"llm:{MODEL}"
        formats = [c["json"]["response_format"]["type"] for c in fake.calls("/chat/completions")]
        assert formats == ["json_schema", "json_object", "json_object"]  # switched once, then kept
        assert "JSON schema" in fake.calls("/chat/completions")[1]["json"]["messages"][0]["content"]
        assert {n.text for n in svc.graph.list_notes("dee")} == {"Lives in Oslo", "Works at Initech"}


def test_a_model_cannot_drop_a_real_message_as_small_talk() -> None:
    from datetime import UTC, datetime

    from hippograph.extraction.llm_extractor import to_extraction
    from hippograph.extraction.prompts import extract as p
    from hippograph.models import Episode

    batch = [Episode(id=f"ep{i}", user_id="u", role=Role.user, content=text, timestamp=datetime(2024, 1, 1, tzinfo=UTC))
             for i, text in enumerate(["I live in Lisbon.", "Thanks a lot!"])]
    answer = p.LLMExtraction.model_validate({"messages": [{"message": "m1", "small_talk": True},
                                                          {"message": "m2", "small_talk": True}]})
    # a tiny model called both small talk: only the one the rules agree on is left out of the index
    assert to_extraction(answer, batch, "llm:tiny").small_talk == ["ep1"]
