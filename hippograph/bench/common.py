"""What every benchmark shares: a service on a fresh (or reused) data folder, the baselines' packing of
ranked turns into a token budget, percentiles, the report and its markdown table."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from hippograph.config import Settings
from hippograph.models import MemoryKind, VectorHit
from hippograph.service import Hippograph
from hippograph.tokens import TokenCounter
from hippograph.vectors.base import VectorFilter

T = TypeVar("T")

#: baselines that rank stored turns by one retriever, then fill the budget in rank order
RANKED_BASELINES = {"bm25": "lexical", "dense": "dense", "bm25+dense": "hybrid"}
#: with --ablate: Hippograph with one route switched off (plan parameters overridden), same stores; a
#: route the default plans leave out ("+") is switched on instead
ABLATIONS: dict[str, dict[str, object]] = {
    "hippograph +learned ranker": {"ranker": "learned"},
    "hippograph -replies": {"reply_weight": 0.0},
    "hippograph -second hop": {"expand_hits": 0},
    "hippograph -named dates": {"dated_weight": 0.0},
    "hippograph -facts": {"derived_weight": 0.0},
    "hippograph +graph": {"graph": True},
    # the graph by meaning (HippoRAG 2): query phrases linked to entity names by embedding, and synonym
    # edges between entities whose names embed close (0.8: HippoRAG 2's threshold)
    "hippograph +graph +meaning links": {"graph": True, "link_threshold": 0.8},
    "hippograph +graph +synonyms": {"graph": True, "synonym_threshold": 0.8},
    "hippograph +graph +meaning links +synonyms": {"graph": True, "link_threshold": 0.8, "synonym_threshold": 0.8},
    "hippograph +people": {"person_weight": 1.0},
    "hippograph -entities": {"entity_weight": 0.0},
    "hippograph +feedback": {"prf_terms": 10},
}


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass
class MethodStats:
    """Per-method tallies: recall per group, tokens and latency per query."""

    recall: dict[str, list[float]] = field(default_factory=dict)
    tokens: list[int] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)

    def add(self, group: str, value: float) -> None:
        self.recall.setdefault(group, []).append(value)

    def timed(self, fn: Callable[[], tuple[T, int | None]]) -> T:
        """Runs one query of a method, records its latency and its tokens (None: not a context)."""
        start = time.perf_counter()
        result, tokens = fn()
        self.latency_ms.append((time.perf_counter() - start) * 1000)
        if tokens is not None:
            self.tokens.append(tokens)
        return result

    def summary(self, groups: Sequence[str], overall: Sequence[str]) -> dict[str, float | int]:
        out: dict[str, float | int] = {}
        for g in groups:
            vals = self.recall.get(g, [])
            out[g] = round(100 * statistics.mean(vals), 1) if vals else 0.0
        pooled = [v for g in overall for v in self.recall.get(g, [])]
        if overall:
            out["overall"] = round(100 * statistics.mean(pooled), 1) if pooled else 0.0
        out["tokens_mean"] = round(statistics.mean(self.tokens), 1) if self.tokens else 0
        out["latency_p50_ms"] = round(percentile(self.latency_ms, 0.5), 2)
        out["latency_p95_ms"] = round(percentile(self.latency_ms, 0.95), 2)
        return out


@contextmanager
def bench_service(workdir: Path | None, settings: Settings | None = None) -> Iterator[Hippograph]:
    """A service on the embedded default (or the given settings) in `workdir`, or in a temporary folder
    that is removed afterwards. A reused workdir keeps what an earlier run ingested: client ids are
    idempotency keys, so ingesting the same data again stores nothing twice."""
    from hippograph.wiring import build

    with tempfile.TemporaryDirectory(prefix="hippograph-bench-") as tmp:
        folder = workdir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        service = build((settings or Settings()).model_copy(update={"data_dir": folder}))
        service.open()
        try:
            yield service
        finally:
            service.close()


def turn_line(text: str, hit_time: object | None = None) -> str:
    stamp = f"[{hit_time:%Y-%m-%d}] " if hit_time is not None else ""
    return f"- {stamp}{text}"


def pack(lines: Sequence[str], counter: TokenCounter, budget: int, keep: str = "first") -> tuple[str, int]:
    """Lines joined into one block that fits `budget` tokens: the first lines that fit (keep="first"),
    or the last ones (keep="last", for transcripts cut from the front)."""
    order = list(lines) if keep == "first" else list(reversed(lines))
    kept: list[str] = []
    used = 0
    for line in order:
        cost = counter.count(line) + 1
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    if keep == "last":
        kept.reverse()
    text = "\n".join(kept)
    return text, counter.count(text)


def ranked_episodes(service: Hippograph, user_id: str, query: str, mode: str, limit: int) -> list[VectorHit]:
    """The stored turns/passages of a user ranked by one retriever of the same index the server uses."""
    flt = VectorFilter(user_id=user_id, kinds=[MemoryKind.episode])
    return service.indexer.search(flt, query, limit, mode=mode)


def machine() -> dict[str, object]:
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "loadavg_1m_end": round(os.getloadavg()[0], 2)}


def markdown_table(results: dict[str, dict], columns: Sequence[str], label: str = "method") -> str:
    head = f"| {label} | " + " | ".join(columns) + " |"
    rule = "|---|" + "---|" * len(columns)
    rows = [f"| {name} | " + " | ".join(str(r.get(c, "")) for c in columns) + " |" for name, r in results.items()]
    return "\n".join([head, rule, *rows])


def models_used(service: Hippograph) -> dict:
    """Which extractor and embedder ran, and what the model endpoints were asked (calls, tokens)."""
    rows = service.usage.rows()
    return {"extractor": service.extractor.name, "embedder": service.indexer.embedder.name,
            "model_calls": sum(r.calls for r in rows), "model_failed_calls": sum(r.failed for r in rows),
            "model_tokens": sum(r.total_tokens for r in rows),
            "by_operation": {op: sum(r.calls for r in rows if r.operation == op) for op in {r.operation for r in rows}}}


def write_report(report: dict, out: Path | None, columns: Sequence[str], label: str = "method") -> None:
    print(markdown_table(report["results"], columns, label))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nwritten to {out}", file=sys.stderr)


def command_line() -> str:
    return "hippograph " + " ".join(sys.argv[1:])
