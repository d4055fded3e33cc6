"""A real HTTP server on loopback that speaks the OpenAI REST API with deterministic answers.

Tests point the official ``openai`` client at it (``base_url=fake.base_url``) and script how it
misbehaves, request by request, instead of patching the client::

    with FakeOpenAI(answer=lambda req: {"facts": []}) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0)
        fake.script("429", "ok")
        ...

Endpoints (under ``/v1``): ``POST /chat/completions``, ``POST /embeddings``, ``GET /models``.

Every request first has its ``Authorization: Bearer <api_key>`` header checked (401 when wrong, unless
``api_key`` is None) and its route looked up (404 for anything else); requests rejected there don't
consume the script and are recorded with behaviour None. Every other request takes the next behaviour
from the script queue (FIFO, shared by all endpoints), or the default behaviour when the queue is empty:

``ok``              the good answer
``think``           the good content after a ``<think>...</think>`` block
``fenced``          the good content in a ```json fenced block, after a sentence
``truncated``       the first half of the good content, ``finish_reason: "length"``
``invalid``         content that is not JSON at all
``echo_schema``     content is the request's ``response_format.json_schema.schema`` (or ``{"type": "object"}``)
``empty``           ``choices: []`` (embeddings / models: ``data: []``)
``null_content``    message content null
``slow:<s>``        sleep <s> seconds, then answer ok
``429[:<s>]``       HTTP 429, ``Retry-After: <s>`` (default 0), type ``rate_limit_error``
``500|502|503``     that status with an OpenAI-style error body
``drop``            close the connection without a response
``down``            like ``drop``; meant for ``set_default("down")`` to simulate an outage
``bad_dim``         (embeddings) vectors one shorter than asked; elsewhere ok
``no_schema``       (chat) 400 for ``response_format`` of type ``json_schema``, as servers without schema
                    support answer; ``json_object`` and plain requests are answered ok

For embeddings and models the content-shaping behaviours (think, fenced, truncated, invalid, echo_schema,
null_content) are the same as ok. Malformed requests get 400 with an OpenAI-style error body.

An answer may also be a list of ``ToolCall``: the assistant message then calls those tools.

Embeddings are a hashed bag of lower-cased words, L2-normalised: identical texts give identical vectors and
texts sharing words are similar. Token counts are the number of words and punctuation marks.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import math
import re
import socket
import struct
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

JSONDict = dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """An answer that calls a tool: the message carries `tool_calls` instead of content."""

    name: str
    arguments: JSONDict


Answer = Callable[[JSONDict], "JSONDict | str | list[ToolCall]"]

CREATED = 1_700_000_000
MAX_EMBEDDING_INPUTS = 2048
THINK_PREFIX = "<think>\nLet me reason about this...\n</think>\n"
FENCE_INTRO = "Sure! Here is the JSON you asked for:\n"
INVALID_CONTENT = "Sorry, I can't help with that."
MODELS = ("fake-chat", "fake-embedding")

CONTENT_BEHAVIOURS = frozenset({"think", "fenced", "truncated", "invalid", "echo_schema", "null_content"})
SIMPLE_BEHAVIOURS = CONTENT_BEHAVIOURS | {"ok", "empty", "drop", "down", "bad_dim", "500", "502", "503", "no_schema"}

_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_WORD_RE = re.compile(r"\w+")

_SERVER_ERRORS = {
    500: "The server had an error while processing your request. Sorry about that!",
    502: "Bad gateway.",
    503: "The server is overloaded or not ready yet.",
}


def parse_behaviour(behaviour: str) -> tuple[str, float | None]:
    """Split ``"name:param"`` and check it; raises ValueError for an unknown behaviour or bad parameter."""
    if not isinstance(behaviour, str):
        raise TypeError(f"behaviour must be a string, not {behaviour!r}")
    name, sep, raw = behaviour.partition(":")
    if not sep and name in SIMPLE_BEHAVIOURS | {"429"}:
        return name, None
    if sep and name in ("slow", "429"):
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return name, value
    raise ValueError(f"unknown behaviour {behaviour!r}")


def count_tokens(text: str) -> int:
    """A deterministic token count: words and punctuation marks."""
    return len(_TOKEN_RE.findall(text))


def fake_embedding(text: str, dim: int) -> list[float]:
    """A hashed bag of lower-cased words, L2-normalised, rounded to float32 values."""
    vector = [0.0] * dim
    for word in _WORD_RE.findall(text.lower()) or [text]:
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        if dim:
            vector[int.from_bytes(digest[:4], "little") % dim] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return list(struct.unpack(f"<{dim}f", struct.pack(f"<{dim}f", *(v / norm for v in vector))))


def _message_text(messages: list[Any]) -> str:
    parts: list[str] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return "\n".join(parts)


def _error(message: str, type_: str, code: str | None = None, param: str | None = None) -> JSONDict:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


class _BadRequest(Exception):
    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False

    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.fake._connection_opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.fake._connection_closed(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.fake._handle(self)

    def do_POST(self) -> None:
        self.server.fake._handle(self)

    def do_PUT(self) -> None:
        self.server.fake._handle(self)

    def do_PATCH(self) -> None:
        self.server.fake._handle(self)

    def do_DELETE(self) -> None:
        self.server.fake._handle(self)

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def send_json(self, status: int, body: JSONDict, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except OSError:  # the client gave up (e.g. its timeout fired) and closed the socket
            self.close_connection = True


class FakeOpenAI:
    """An OpenAI-compatible HTTP server on 127.0.0.1 with scripted, deterministic behaviour."""

    def __init__(
        self,
        answer: Answer | None = None,
        dim: int = 64,
        api_key: str | None = "test-key",
    ) -> None:
        self.answer = answer
        self.dim = dim
        self.api_key = api_key
        self.requests: list[JSONDict] = []
        self.max_in_flight = 0
        self.in_flight = 0
        self._default = "ok"
        self._queue: deque[str] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._ids = itertools.count(1)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> Self:
        if self._server is not None:
            raise RuntimeError("FakeOpenAI is already started")
        self._stopping.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()  # wakes up slow requests, which then drop their connection
        server.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:  # idle keep-alive connections would otherwise keep being served
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self if self._server is not None else self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting and inspection ----------------------------------------------------------------

    def script(self, *behaviours: str) -> None:
        """Queue behaviours for the next requests, in order (shared by all endpoints)."""
        for behaviour in behaviours:
            parse_behaviour(behaviour)
        with self._lock:
            self._queue.extend(behaviours)

    def set_default(self, behaviour: str) -> None:
        """The behaviour used when the script queue is empty."""
        parse_behaviour(behaviour)
        with self._lock:
            self._default = behaviour

    def calls(self, path_suffix: str) -> list[JSONDict]:
        """The recorded requests whose path ends with ``path_suffix``, e.g. ``"/chat/completions"``."""
        with self._lock:
            return [r for r in self.requests if r["path"].endswith(path_suffix)]

    # -- request handling --------------------------------------------------------------------------

    def _connection_opened(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)

    def _connection_closed(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)

    def _handle(self, handler: _Handler) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            self._handle_request(handler)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _handle_request(self, handler: _Handler) -> None:
        method = handler.command
        path = handler.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in handler.headers.items()}
        raw = handler.read_body()
        body: Any = None
        body_error: str | None = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError as exc:
                body_error = f"We could not parse the JSON body of your request. ({exc})"
        record: JSONDict = {
            "method": method,
            "path": path,
            "headers": headers,
            "json": body,
            "behaviour": None,
            "status": None,
        }

        def respond(status: int, payload: JSONDict, extra: dict[str, str] | None = None) -> None:
            record["status"] = status
            request_id = f"req_fake_{next(self._ids)}"
            handler.send_json(status, payload, {"x-request-id": request_id, **(extra or {})})

        auth_error = self._check_auth(headers.get("authorization"))
        route = {
            ("POST", "/v1/chat/completions"): self._chat,
            ("POST", "/v1/embeddings"): self._embeddings,
            ("GET", "/v1/models"): self._models,
        }.get((method, path))
        if auth_error is not None or route is None:
            with self._lock:
                self.requests.append(record)
            if auth_error is not None:
                respond(401, auth_error)
            else:
                respond(404, _error(f"Invalid URL ({method} {path})", "invalid_request_error"))
            return

        with self._lock:
            behaviour = self._queue.popleft() if self._queue else self._default
            record["behaviour"] = behaviour
            self.requests.append(record)
        name, param = parse_behaviour(behaviour)

        if name in ("drop", "down"):
            handler.close_connection = True
            return
        if name == "slow":
            if self._stopping.wait(param or 0.0):
                handler.close_connection = True
                return
            name = "ok"
        if name == "429":
            retry_after = param or 0.0
            respond(
                429,
                _error(
                    "Rate limit reached for requests. Please try again later.",
                    "rate_limit_error",
                    "rate_limit_exceeded",
                ),
                {"Retry-After": f"{retry_after:g}"},
            )
            return
        if name in ("500", "502", "503"):
            status = int(name)
            respond(status, _error(_SERVER_ERRORS[status], "server_error"))
            return

        if body_error is not None:
            respond(400, _error(body_error, "invalid_request_error"))
            return
        try:
            if method == "POST" and not isinstance(body, dict):
                raise _BadRequest("The request body must be a JSON object.")
            payload = route(body, name)
        except _BadRequest as exc:
            respond(400, _error(exc.message, "invalid_request_error", param=exc.param))
            return
        except Exception as exc:  # noqa: BLE001 - a failing answer callable is reported as a server would
            respond(500, _error(f"answer callable raised {type(exc).__name__}: {exc}", "server_error"))
            return
        respond(200, payload)

    def _check_auth(self, authorization: str | None) -> JSONDict | None:
        if self.api_key is None:
            return None
        if not authorization or not authorization.startswith("Bearer "):
            return _error(
                "You didn't provide an API key. You need to provide your API key in an Authorization header "
                "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                "invalid_request_error",
            )
        key = authorization[len("Bearer ") :].strip()
        if key != self.api_key:
            shown = key[:3] + "*" * max(len(key) - 7, 0) + key[-4:] if len(key) > 7 else "*" * len(key)
            return _error(f"Incorrect API key provided: {shown}.", "invalid_request_error", "invalid_api_key")
        return None

    # -- endpoints ---------------------------------------------------------------------------------

    def _tool_calls(self, model: str, messages: list, calls: list[ToolCall]) -> JSONDict:
        message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [
            {"id": f"call_{next(self._ids)}", "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.arguments)}} for c in calls]}
        prompt_tokens = count_tokens(_message_text(messages))
        return {"id": f"chatcmpl-fake-{next(self._ids)}", "object": "chat.completion", "created": CREATED,
                "model": model, "choices": [{"index": 0, "message": message, "logprobs": None,
                                             "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 0, "total_tokens": prompt_tokens},
                "system_fingerprint": "fp_fake"}

    def _chat(self, body: JSONDict, behaviour: str) -> JSONDict:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise _BadRequest("you must provide a model parameter", "model")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _BadRequest("'messages' must be a non-empty array.", "messages")
        if body.get("stream"):
            raise _BadRequest("Streaming is not supported by this server.", "stream")
        if body.get("n") not in (None, 1):
            raise _BadRequest("Only n=1 is supported by this server.", "n")
        response_format = body.get("response_format")
        format_type = response_format.get("type") if isinstance(response_format, dict) else None
        json_schema: Any = None
        if format_type == "json_schema" and behaviour == "no_schema":  # a server without schema support
            raise _BadRequest("response_format of type 'json_schema' is not supported by this model",
                              "response_format")
        if format_type == "json_schema":
            spec = response_format.get("json_schema") if isinstance(response_format, dict) else None
            if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
                raise _BadRequest(
                    "Missing required parameter: 'response_format.json_schema.name'.",
                    "response_format.json_schema.name",
                )
            json_schema = spec.get("schema")
        elif format_type not in (None, "text", "json_object"):
            raise _BadRequest(
                f"Invalid value for 'response_format.type': {format_type!r}.", "response_format"
            )

        if self.answer is not None:
            good = self.answer(body)
        else:
            good = {} if format_type in ("json_schema", "json_object") else "ok"
        if isinstance(good, list):  # tool calls
            return self._tool_calls(model, messages, good)
        good_text = good if isinstance(good, str) else json.dumps(good)

        content: str | None = good_text
        finish_reason = "stop"
        if behaviour == "think":
            content = THINK_PREFIX + good_text
        elif behaviour == "fenced":
            content = f"{FENCE_INTRO}```json\n{good_text}\n```"
        elif behaviour == "truncated":
            content = good_text[: len(good_text) // 2]
            finish_reason = "length"
        elif behaviour == "invalid":
            content = INVALID_CONTENT
        elif behaviour == "echo_schema":
            content = json.dumps(json_schema if isinstance(json_schema, dict) else {"type": "object"})
        elif behaviour == "null_content":
            content = None

        prompt_tokens = count_tokens(_message_text(messages))
        completion_tokens = count_tokens(content or "")
        choices = [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ]
        return {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": CREATED,
            "model": model,
            "choices": [] if behaviour == "empty" else choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
            "system_fingerprint": "fp_fake",
        }

    def _embeddings(self, body: JSONDict, behaviour: str) -> JSONDict:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise _BadRequest("you must provide a model parameter", "model")
        raw_input = body.get("input")
        inputs = [raw_input] if isinstance(raw_input, str) else raw_input
        if not isinstance(inputs, list) or not inputs:
            raise _BadRequest("'input' must be a non-empty string or a non-empty array of strings.", "input")
        if not all(isinstance(text, str) for text in inputs):
            raise _BadRequest(
                "'input' must be a string or an array of strings (token ids are not supported)."
            )
        if any(text == "" for text in inputs):
            raise _BadRequest("'$.input' is invalid: empty strings cannot be embedded.", "input")
        if len(inputs) > MAX_EMBEDDING_INPUTS:
            raise _BadRequest(f"'input' has more than {MAX_EMBEDDING_INPUTS} entries.", "input")
        dim = body.get("dimensions", None)
        if dim is None:
            dim = self.dim
        elif isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise _BadRequest("'dimensions' must be a positive integer.", "dimensions")
        encoding = body.get("encoding_format", None) or "float"
        if encoding not in ("float", "base64"):
            raise _BadRequest("'encoding_format' must be 'float' or 'base64'.", "encoding_format")
        if behaviour == "bad_dim":
            dim -= 1

        data: list[JSONDict] = []
        for index, text in enumerate(inputs):
            vector = fake_embedding(text, dim)
            embedding: list[float] | str = vector
            if encoding == "base64":
                embedding = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode("ascii")
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(count_tokens(text) for text in inputs)
        return {
            "object": "list",
            "data": [] if behaviour == "empty" else data,
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _models(self, body: Any, behaviour: str) -> JSONDict:
        data = [{"id": m, "object": "model", "created": CREATED, "owned_by": "fake-openai"} for m in MODELS]
        return {"object": "list", "data": [] if behaviour == "empty" else data}
