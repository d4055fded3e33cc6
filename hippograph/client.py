"""The Python SDK: `Client` and `AsyncClient` for a running Hippograph server.

    from hippograph import Client
    with Client("http://127.0.0.1:8765", api_key="hg_…") as hg:
        hg.remember("alice", messages=[{"id": "m1", "role": "user", "content": "I moved to Lyon."}],
                    session_id="s1")
        print(hg.context("alice", "Where does she live?").context)

Every method is one operation of `hippograph.operations` (its arguments validated by the same model as
the REST API, its result parsed into the same model the server returns). The methods are written once,
in `_Operations`: the sync client runs each call at once, the async one returns an awaitable of the same
result. Errors raise one exception per class (`Unauthorized`, `Forbidden`, `NotFound`, `Conflict`,
`InvalidInput`, `RateLimited`, `Unavailable`, `InsufficientStorage`), with the server's message.

Calls answered 429 or 503 (and calls that could not reach the server) are retried with exponential
backoff, waiting what `Retry-After` says when the server says it. That is safe for writes: message and
document ids are idempotency keys, and a message given without an id gets one here before the first try,
so a retried write stores nothing twice."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Self

import httpx
from pydantic import BaseModel, ValidationError

from hippograph.context_entry import ContextResult
from hippograph.errors import BackendUnavailable, HippographError, InvalidInput, RateLimited
from hippograph.ingest import IngestResult
from hippograph.operations import (
    BY_NAME,
    AuditOut,
    CorrectedOut,
    DeletedOut,
    EndedOut,
    MemoryOut,
    MemoryStatusOut,
    Operation,
    ProfileOut,
    SessionsOut,
    UsersOut,
)
from hippograph.server.app import STATUS
from hippograph.server.schemas import EntityOut, HandoffOut, NeighborsOut
from hippograph.service import SearchHit

# the server's own table of which error answers which status, read backwards (503: BackendUnavailable), and
# the statuses it answers without one of its errors (malformed JSON, a body too large, a wrong method)
_BY_STATUS: dict[int, type[HippographError]] = {400: InvalidInput, 405: InvalidInput, 413: InvalidInput,
                                                415: InvalidInput}
for _cls, _code in STATUS.items():
    _BY_STATUS.setdefault(_code, _cls)
_RETRY = frozenset({429, 503})
MAX_WAIT = 30.0  # seconds: no single wait is longer, whatever Retry-After says


def _plain(value: Any) -> Any:
    """Models given as arguments (MessageIn, DocumentIn...) as the JSON the API takes."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=True)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _with_ids(items: list[dict]) -> list[dict]:
    return [item if item.get("id") else {**item, "id": f"sdk-{uuid.uuid4().hex}"} for item in items]


def _error(response: httpx.Response) -> HippographError:
    try:
        body = response.json()
        detail = body.get("detail") if isinstance(body, dict) else None
    except ValueError:
        detail = None
    message = str(detail or response.text.strip() or response.reason_phrase or "no message")
    if response.status_code == 429:
        return RateLimited(message, _retry_after(response) or 1.0)
    cls = _BY_STATUS.get(response.status_code, HippographError)
    return cls(f"{message}" if cls is not HippographError else f"HTTP {response.status_code}: {message}")


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return None


class _Transport:
    """What both clients share: how an operation becomes a request, and a response a result."""

    def __init__(self, base_url: str, api_key: str | None, timeout: float, retries: int, backoff: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout, self.retries, self.backoff = timeout, retries, backoff

    def prepare(self, name: str, args: dict[str, Any]) -> tuple[Operation, str, str, dict[str, Any]]:
        op = BY_NAME[name]
        given = {k: _plain(v) for k, v in args.items() if v is not None}
        for many in ("messages", "documents"):
            if many in given:
                given[many] = _with_ids(given[many])
        try:
            checked = op.input.model_validate(given)
        except ValidationError as exc:
            raise InvalidInput(f"{name}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}"
                               if exc.errors() else str(exc)) from exc
        path, rest = op.request(checked)
        return op, op.method, path, rest

    def request_kwargs(self, op: Operation, rest: dict[str, Any]) -> dict[str, Any]:
        return {"json": rest} if op.has_body else {"params": rest}

    def result(self, op: Operation, response: httpx.Response) -> Any:
        if response.status_code >= 400:
            raise _error(response)
        return op.load(response.json())

    def outcome(self, op: Operation, attempt: int, response: httpx.Response | None,
                exc: httpx.TransportError | None) -> tuple[float | None, Any]:
        """(seconds to wait before trying again, None), or (None, the result); raises a final error."""
        final = attempt >= self.retries or (response is not None and response.status_code not in _RETRY)
        if final and response is not None:
            return None, self.result(op, response)
        if final:
            raise BackendUnavailable(f"cannot reach the Hippograph server at {self.base_url}: {exc}") from exc
        given = _retry_after(response) if response is not None else None
        return min(MAX_WAIT, given if given is not None else self.backoff * 2 ** attempt), None


class _Operations:
    """The methods, written once for both clients: each names its operation and passes its arguments."""

    def call(self, name: str, **args: Any) -> Any:
        """Any operation of the catalogue by its name, with its input's fields as arguments."""
        raise NotImplementedError

    def remember(self, user_id: str, messages: Sequence[Any] | None = None, documents: Sequence[Any] | None = None,
                 session_id: str | None = None, agent_id: str | None = None,
                 metadata: Mapping[str, Any] | None = None, wait: bool = True) -> IngestResult:
        """Store messages (dicts or `MessageIn`: id, role, content, timestamp...) and/or documents.
        `wait=False` returns once they are stored; `pending` lists what is not searchable yet."""
        return self.call("remember", user_id=user_id, messages=messages, documents=documents,
                          session_id=session_id, agent_id=agent_id, metadata=metadata, wait=wait)

    def memory_status(self, user_id: str, ids: Sequence[str]) -> MemoryStatusOut:
        """Which of these stored messages or documents are extracted and searchable yet."""
        return self.call("memory_status", user_id=user_id, ids=list(ids))

    def context(self, user_id: str, query: str, session_id: str | None = None, token_budget: int | None = None,
                plan: str | None = None) -> ContextResult:
        """The ordered context block for the next turn."""
        return self.call("context", user_id=user_id, query=query, session_id=session_id,
                          token_budget=token_budget, plan=plan)

    def search(self, user_id: str, query: str, limit: int = 10) -> list[SearchHit]:
        return self.call("search", user_id=user_id, query=query, limit=limit)

    def users(self, q: str | None = None, limit: int = 100) -> UsersOut:
        """The ids of the key's tenant's users (those starting with `q`)."""
        return self.call("users", q=q, limit=limit)

    def profile(self, user_id: str, history: bool = False) -> ProfileOut:
        return self.call("profile", user_id=user_id, history=history)

    def correct_note(self, user_id: str, item_id: str, text: str, actor: str | None = None) -> CorrectedOut:
        return self.call("correct_note", user_id=user_id, item_id=item_id, text=text, actor=actor)

    def delete_note(self, user_id: str, item_id: str, actor: str | None = None) -> DeletedOut:
        return self.call("delete_note", user_id=user_id, item_id=item_id, actor=actor)

    def get_memory(self, user_id: str, memory_id: str) -> MemoryOut:
        return self.call("get_memory", user_id=user_id, memory_id=memory_id)

    def delete_memory(self, user_id: str, memory_id: str, actor: str | None = None) -> DeletedOut:
        return self.call("delete_memory", user_id=user_id, memory_id=memory_id, actor=actor)

    def sessions(self, user_id: str) -> SessionsOut:
        return self.call("sessions", user_id=user_id)

    def end_session(self, user_id: str, session_id: str, actor: str | None = None) -> EndedOut:
        return self.call("end_session", user_id=user_id, session_id=session_id, actor=actor)

    def handoff(self, user_id: str, session_id: str, task: str, to_agent: str | None = None) -> HandoffOut:
        return self.call("handoff", user_id=user_id, session_id=session_id, task=task, to_agent=to_agent)

    def entities(self, user_id: str, q: str | None = None, limit: int = 50) -> list[EntityOut]:
        return self.call("entities", user_id=user_id, q=q, limit=limit)

    def neighbors(self, user_id: str, entity: str, depth: int = 1, history: bool = False) -> NeighborsOut:
        """By the entity's id or its name; `history`: the relations that no longer hold too."""
        return self.call("neighbors", user_id=user_id, entity=entity, depth=depth, history=history)

    def audit(self, user_id: str, item_id: str | None = None, limit: int = 1000, kind: str | None = None) -> AuditOut:
        return self.call("audit", user_id=user_id, item_id=item_id, limit=limit, kind=kind)

    def forget_user(self, user_id: str) -> DeletedOut:
        """Needs a key with the admin scope."""
        return self.call("forget_user", user_id=user_id)


class Client(_Operations):
    """A blocking client. `timeout` is per request (seconds); `retries` is how often a 429/503 or an
    unreachable server is tried again."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 30.0, retries: int = 3,
                 backoff: float = 0.5, transport: httpx.BaseTransport | None = None) -> None:
        self._t = _Transport(base_url, api_key, timeout, retries, backoff)
        self._http = httpx.Client(base_url=self._t.base_url, headers=self._t.headers, timeout=timeout,
                                  transport=transport)

    def call(self, name: str, **args: Any) -> Any:
        op, method, path, rest = self._t.prepare(name, args)
        for attempt in itertools.count():
            response, failed = None, None
            try:
                response = self._http.request(method, path, **self._t.request_kwargs(op, rest))
            except httpx.TransportError as exc:
                failed = exc
            pause, result = self._t.outcome(op, attempt, response, failed)
            if pause is None:
                return result
            time.sleep(pause)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class AsyncClient(_Operations):
    """The same methods as `Client`; each returns an awaitable of the same result."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 30.0, retries: int = 3,
                 backoff: float = 0.5, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._t = _Transport(base_url, api_key, timeout, retries, backoff)
        self._http = httpx.AsyncClient(base_url=self._t.base_url, headers=self._t.headers, timeout=timeout,
                                       transport=transport)

    def call(self, name: str, **args: Any) -> Any:
        prepared = self._t.prepare(name, args)  # bad arguments raise at the call, as in the sync client
        return self._send(*prepared)

    async def _send(self, op: Operation, method: str, path: str, rest: dict[str, Any]) -> Any:
        for attempt in itertools.count():
            response, failed = None, None
            try:
                response = await self._http.request(method, path, **self._t.request_kwargs(op, rest))
            except httpx.TransportError as exc:
                failed = exc
            pause, result = self._t.outcome(op, attempt, response, failed)
            if pause is None:
                return result
            await asyncio.sleep(pause)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()
