"""Usage accounting: model calls and tokens per user and per operation, since the process started.

Counted for every call to a configured endpoint (chat or embeddings), including failed ones, so the
numbers say what the endpoint was asked to do. Read through `GET /v1/usage` and `GET /metrics`.
"""

from __future__ import annotations

import contextvars
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pydantic import BaseModel

ANONYMOUS = "-"  # calls not made for one user (start-up checks, benchmarks' baselines)

#: the user whose work a call does, for usage accounting (set by the service around each request)
current_user: contextvars.ContextVar[str | None] = contextvars.ContextVar("hippograph_user", default=None)


@contextmanager
def acting_for(user_id: str | None) -> Iterator[None]:
    token = current_user.set(user_id)
    try:
        yield
    finally:
        current_user.reset(token)


@dataclass
class Counter:
    calls: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class UsageRow(BaseModel):
    user_id: str
    operation: str
    model: str
    calls: int
    failed: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class UsageMeter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str, str], Counter] = defaultdict(Counter)

    def record(self, user_id: str | None, operation: str, model: str, prompt_tokens: int = 0,
               completion_tokens: int = 0, failed: bool = False) -> None:
        with self._lock:
            c = self._counts[(user_id or ANONYMOUS, operation, model)]
            c.calls += 1
            c.failed += int(failed)
            c.prompt_tokens += prompt_tokens
            c.completion_tokens += completion_tokens

    def load(self, rows: list[UsageRow]) -> None:
        """Add these rows' counts (a meter over a selection of another meter's rows)."""
        with self._lock:
            for r in rows:
                c = self._counts[(r.user_id, r.operation, r.model)]
                c.calls += r.calls
                c.failed += r.failed
                c.prompt_tokens += r.prompt_tokens
                c.completion_tokens += r.completion_tokens

    def rows(self, user_id: str | None = None) -> list[UsageRow]:
        with self._lock:
            items = sorted(self._counts.items())
        return [UsageRow(user_id=u, operation=op, model=m, calls=c.calls, failed=c.failed,
                         prompt_tokens=c.prompt_tokens, completion_tokens=c.completion_tokens,
                         total_tokens=c.prompt_tokens + c.completion_tokens)
                for (u, op, m), c in items if user_id is None or u == user_id]

    def prometheus(self) -> str:
        """The counters in the Prometheus text format."""
        lines = []
        for metric, field, help_ in (("hippograph_llm_calls_total", "calls", "Model calls made."),
                                     ("hippograph_llm_failed_calls_total", "failed", "Model calls that failed."),
                                     ("hippograph_llm_prompt_tokens_total", "prompt_tokens", "Prompt tokens sent."),
                                     ("hippograph_llm_completion_tokens_total", "completion_tokens",
                                      "Completion tokens received.")):
            lines += [f"# HELP {metric} {help_}", f"# TYPE {metric} counter"]
            for row in self.rows():
                labels = f'user_id="{_esc(row.user_id)}",operation="{_esc(row.operation)}",model="{_esc(row.model)}"'
                lines.append(f"{metric}{{{labels}}} {getattr(row, field)}")
        return "\n".join(lines) + "\n"


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
