"""The fake OpenAI server, exercised through the real ``openai`` client."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.fakes.openai_server import FakeOpenAI

SCHEMA = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
    "required": ["facts"],
    "additionalProperties": False,
}
ANSWER = {"facts": ["Ada lives in Oslo", "Ada likes tea"]}
ANSWER_TEXT = json.dumps(ANSWER)


_clients: list[openai.OpenAI] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _clients:
        _clients.pop().close()


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(answer=lambda request: ANSWER) as server:
        yield server


def make_client(fake: FakeOpenAI, **kwargs: Any) -> openai.OpenAI:
    options: dict[str, Any] = {"api_key": "test-key", "max_retries": 0, "timeout": 10.0}
    options.update(kwargs)
    client = openai.OpenAI(base_url=fake.base_url, **options)
    _clients.append(client)
    return client


def ask(client: openai.OpenAI) -> Any:
    return client.chat.completions.create(
        model="fake-chat",
        messages=[
            {"role": "system", "content": "Extract facts."},
            {"role": "user", "content": "Ada lives in Oslo. She likes tea."},
        ],
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "x", "schema": SCHEMA, "strict": True},
        },
    )


def raw(fake: FakeOpenAI, method: str, path: str, body: Any = None, key: str = "test-key") -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        fake.base_url + path,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


# -- chat completions ----------------------------------------------------------------------------


def test_good_json_schema_completion(fake: FakeOpenAI) -> None:
    completion = ask(make_client(fake))
    assert completion.object == "chat.completion" and completion.model == "fake-chat"
    choice = completion.choices[0]
    assert choice.index == 0 and choice.finish_reason == "stop" and choice.message.role == "assistant"
    assert json.loads(choice.message.content or "") == ANSWER
    usage = completion.usage
    assert usage is not None and usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert ask(make_client(fake)).usage == usage  # deterministic

    [first, _] = fake.calls("/chat/completions")
    assert first["path"] == "/v1/chat/completions" and first["behaviour"] == "ok" and first["status"] == 200
    assert first["headers"]["authorization"] == "Bearer test-key"
    assert first["json"]["response_format"]["json_schema"]["schema"] == SCHEMA


def test_default_answers() -> None:
    with FakeOpenAI() as fake:
        client = make_client(fake)
        messages: Any = [{"role": "user", "content": "hi"}]
        plain = client.chat.completions.create(model="m", messages=messages)
        assert plain.choices[0].message.content == "ok"
        as_json = client.chat.completions.create(
            model="m", messages=messages, response_format={"type": "json_object"}
        )
        assert json.loads(as_json.choices[0].message.content or "") == {}


@pytest.mark.parametrize(
    ("behaviour", "expected", "finish_reason"),
    [
        ("think", "<think>\nLet me reason about this...\n</think>\n" + ANSWER_TEXT, "stop"),
        ("truncated", ANSWER_TEXT[: len(ANSWER_TEXT) // 2], "length"),
        ("invalid", "Sorry, I can't help with that.", "stop"),
        ("echo_schema", json.dumps(SCHEMA), "stop"),
        ("null_content", None, "stop"),
    ],
)
def test_content_shaping_behaviours(
    fake: FakeOpenAI, behaviour: str, expected: str | None, finish_reason: str
) -> None:
    fake.script(behaviour)
    client = make_client(fake)
    choice = ask(client).choices[0]
    assert choice.message.content == expected and choice.finish_reason == finish_reason
    assert ask(client).choices[0].message.content == ANSWER_TEXT  # the script is used up
    assert [c["behaviour"] for c in fake.calls("/chat/completions")] == [behaviour, "ok"]


def test_fenced_and_empty(fake: FakeOpenAI) -> None:
    fake.script("fenced", "empty")
    client = make_client(fake)
    content = ask(client).choices[0].message.content or ""
    intro, fenced = content.split("```json\n")
    assert intro.strip().endswith(":") and fenced.endswith("\n```")
    assert json.loads(fenced.removesuffix("```")) == ANSWER
    assert ask(client).choices == []


def test_echo_schema_without_a_schema(fake: FakeOpenAI) -> None:
    fake.script("echo_schema")
    completion = make_client(fake).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], response_format={"type": "json_object"}
    )
    assert json.loads(completion.choices[0].message.content or "") == {"type": "object"}


def test_rate_limit_without_and_with_client_retries(fake: FakeOpenAI) -> None:
    fake.script("429")
    with pytest.raises(openai.RateLimitError) as caught:
        ask(make_client(fake))
    assert caught.value.status_code == 429 and caught.value.code == "rate_limit_exceeded"
    assert caught.value.type == "rate_limit_error"
    assert caught.value.response.headers["retry-after"] == "0"

    fake.script("429", "ok")
    assert json.loads(ask(make_client(fake, max_retries=2)).choices[0].message.content or "") == ANSWER
    assert [c["behaviour"] for c in fake.calls("/chat/completions")] == ["429", "429", "ok"]


def test_rate_limit_retry_after_parameter(fake: FakeOpenAI) -> None:
    fake.script("429:7")
    with pytest.raises(openai.RateLimitError) as caught:
        ask(make_client(fake))
    assert caught.value.response.headers["retry-after"] == "7"


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors(fake: FakeOpenAI, status: int) -> None:
    fake.script(str(status))
    with pytest.raises(openai.InternalServerError) as caught:
        ask(make_client(fake))
    assert isinstance(caught.value, openai.APIStatusError) and caught.value.status_code == status
    assert caught.value.type == "server_error" and caught.value.message


def test_slow_answer_times_out_the_client(fake: FakeOpenAI) -> None:
    fake.script("slow:2")
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        ask(make_client(fake, timeout=0.5))
    assert time.monotonic() - started < 1.5

    fake.script("slow:0.1")
    assert ask(make_client(fake, timeout=5)).choices[0].message.content == ANSWER_TEXT


def test_drop_closes_the_connection(fake: FakeOpenAI) -> None:
    client = make_client(fake)
    ask(client)  # a pooled keep-alive connection is reused for the dropped request
    fake.script("drop")
    with pytest.raises(openai.APIConnectionError) as caught:
        ask(client)
    assert not isinstance(caught.value, openai.APITimeoutError)
    assert ask(client).choices[0].message.content == ANSWER_TEXT


def test_down_as_default_is_an_outage(fake: FakeOpenAI) -> None:
    client = make_client(fake)
    fake.set_default("down")
    for _ in range(2):
        with pytest.raises(openai.APIConnectionError):
            ask(client)
    with pytest.raises(openai.APIConnectionError):
        client.embeddings.create(model="e", input="hello")
    fake.set_default("ok")
    assert ask(client).choices[0].message.content == ANSWER_TEXT

    fake.script("down")  # queued, it applies to one request only
    with pytest.raises(openai.APIConnectionError):
        ask(client)
    assert ask(client).choices[0].message.content == ANSWER_TEXT


def test_authentication(fake: FakeOpenAI) -> None:
    fake.script("invalid")
    with pytest.raises(openai.AuthenticationError) as caught:
        ask(make_client(fake, api_key="wrong-key-123"))
    assert caught.value.code == "invalid_api_key" and caught.value.status_code == 401
    [rejected] = fake.requests
    assert rejected["behaviour"] is None and rejected["status"] == 401
    assert ask(make_client(fake)).choices[0].message.content == "Sorry, I can't help with that."

    with FakeOpenAI(api_key=None) as open_server:
        assert ask(make_client(open_server, api_key="anything")).choices[0].message.content == "{}"


def test_wire_errors_have_the_openai_shape(fake: FakeOpenAI) -> None:
    status, body = raw(fake, "POST", "/nope", {"model": "m"})
    assert status == 404
    assert body == {
        "error": {
            "message": "Invalid URL (POST /v1/nope)",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }
    status, body = raw(fake, "GET", "/chat/completions")
    assert status == 404
    status, body = raw(fake, "GET", "/models", key="bad")
    assert status == 401 and set(body["error"]) == {"message", "type", "param", "code"}

    messages = [{"role": "user", "content": "hi"}]
    for bad in (
        {"model": "m", "messages": messages, "stream": True},
        {"model": "m"},
        {"messages": messages},
        {"model": "m", "messages": messages, "response_format": {"type": "json_schema", "json_schema": {}}},
    ):
        status, body = raw(fake, "POST", "/chat/completions", bad)
        assert status == 400 and body["error"]["type"] == "invalid_request_error", bad
    for bad_input in ([[1, 2, 3]], [], "", ["fine", ""]):
        status, body = raw(fake, "POST", "/embeddings", {"model": "e", "input": bad_input})
        assert status == 400, bad_input
    status, body = raw(fake, "POST", "/embeddings", {"model": "e", "input": "x", "dimensions": 0})
    assert status == 400


def test_models_and_script_validation(fake: FakeOpenAI) -> None:
    assert [m.id for m in make_client(fake).models.list()] == ["fake-chat", "fake-embedding"]
    for typo in ("oops", "slow", "slow:x", "429:-1", "404"):
        with pytest.raises(ValueError):
            fake.script(typo)
    with pytest.raises(ValueError):
        fake.set_default("nope")


def test_answer_callable_sees_the_request() -> None:
    def answer(request: dict[str, Any]) -> str:
        return request["messages"][-1]["content"].upper()

    with FakeOpenAI(answer=answer) as fake:
        completion = make_client(fake).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "shout"}]
        )
        assert completion.choices[0].message.content == "SHOUT"


# -- embeddings ----------------------------------------------------------------------------------


def test_embeddings_float_and_base64_agree(fake: FakeOpenAI) -> None:
    client = make_client(fake)
    texts = ["The cat sat on the mat", "the cat sat on a hat", "Quarterly revenue grew sharply"]
    as_float = client.embeddings.create(model="e", input=texts, encoding_format="float")
    as_default = client.embeddings.create(model="e", input=texts)
    assert [c["json"]["encoding_format"] for c in fake.calls("/embeddings")] == ["float", "base64"]
    assert as_default.model == "e" and as_default.object == "list"
    assert as_default.usage.prompt_tokens == as_default.usage.total_tokens > 0
    vectors = [d.embedding for d in as_float.data]
    assert [d.index for d in as_float.data] == [0, 1, 2]
    assert [d.embedding for d in as_default.data] == vectors
    assert all(len(v) == 64 for v in vectors)
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-5) for v in vectors)

    again = client.embeddings.create(model="e", input="The cat sat on the mat").data[0].embedding
    assert again == vectors[0]
    assert cos(vectors[0], vectors[1]) > 0.5 > abs(cos(vectors[0], vectors[2]))


def test_embedding_dimensions_and_bad_dim(fake: FakeOpenAI) -> None:
    client = make_client(fake)
    assert len(client.embeddings.create(model="e", input="hello", dimensions=16).data[0].embedding) == 16
    fake.script("bad_dim", "bad_dim")
    assert len(client.embeddings.create(model="e", input="hello").data[0].embedding) == 63
    shorter = client.embeddings.create(model="e", input=["a", "b"], dimensions=16, encoding_format="float")
    assert [len(d.embedding) for d in shorter.data] == [15, 15]
    fake.script("empty", "think")
    assert client.embeddings.create(model="e", input="hello", encoding_format="float").data == []
    assert len(client.embeddings.create(model="e", input="hello").data[0].embedding) == 64
    with FakeOpenAI(dim=8) as small:
        assert len(make_client(small).embeddings.create(model="e", input="x").data[0].embedding) == 8


def test_embedding_errors_reach_the_client(fake: FakeOpenAI) -> None:
    fake.script("503")
    with pytest.raises(openai.InternalServerError):
        make_client(fake).embeddings.create(model="e", input="hello")
    with pytest.raises(openai.BadRequestError):
        make_client(fake).embeddings.create(model="e", input=[[1, 2, 3]])


# -- concurrency and lifecycle -------------------------------------------------------------------


def test_max_in_flight_counts_concurrent_requests(fake: FakeOpenAI) -> None:
    client = make_client(fake)
    ask(client)
    assert fake.max_in_flight == 1
    fake.script("slow:0.5", "slow:0.5", "slow:0.5")
    contents: list[str | None] = []

    def worker() -> None:
        contents.append(ask(client).choices[0].message.content)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert contents == [ANSWER_TEXT] * 3 and fake.max_in_flight == 3 and fake.in_flight == 0
    assert sorted(c["behaviour"] for c in fake.calls("/chat/completions")) == ["ok"] + ["slow:0.5"] * 3


def test_stop_closes_the_port() -> None:
    fake = FakeOpenAI().start()
    client = make_client(fake)
    assert fake.base_url.startswith("http://127.0.0.1:") and fake.base_url.endswith("/v1")
    ask(client)
    port = fake.port
    fake.stop()
    fake.stop()  # idempotent
    with pytest.raises(openai.APIConnectionError):
        ask(client)  # its keep-alive connection was closed too
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
