"""Throughput of the write path and latency of the context block on LoCoMo, embedded default.

    .venv/bin/python bench/ingest_and_query.py --data ../shared/data/locomo/locomo_dev5.json \
        [--conversations 5] [--budget 1000] [--out FILE.json]

Ingests every session through the same service the server uses (a fresh data folder), then asks
each non-adversarial QA question of its conversation for a context block. Reports messages/s for
ingest (with the share of time spent in extraction, embedding and the stores), p50/p95 context
latency, mean tokens, and the machine's load average so noisy runs can be recognised.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from hippograph.config import Settings
from hippograph.datasets import locomo_batches
from hippograph.wiring import build


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Timed:
    """Wraps a method and adds up the seconds spent in it."""

    def __init__(self, obj: object, name: str) -> None:
        self.seconds = 0.0
        inner = getattr(obj, name)

        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        setattr(obj, name, wrapper)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--conversations", type=int, default=5)
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    samples = json.loads(args.data.read_text())[: args.conversations]
    batches = locomo_batches(samples)
    n_messages = sum(len(b.messages) for b in batches)
    with tempfile.TemporaryDirectory() as tmp:
        service = build(Settings(data_dir=Path(tmp)))
        start = time.perf_counter()
        service.open()
        open_s = time.perf_counter() - start
        extract = Timed(service.extractor, "extract")
        embed = Timed(service.indexer.embedder, "embed")
        start = time.perf_counter()
        for b in batches:
            service.remember(b.user_id, b.session_id, None, b.messages)
        ingest_s = time.perf_counter() - start
        extract_s, embed_s = extract.seconds, embed.seconds  # the queries below embed too
        questions = [(s["sample_id"], qa["question"]) for s in samples for qa in s["qa"] if qa.get("category") != 5]
        latencies, tokens = [], []
        for user, question in questions:
            t = time.perf_counter()
            result = service.context(user, question, token_budget=args.budget)
            latencies.append((time.perf_counter() - t) * 1000)
            tokens.append(result.tokens)
        service.close()

    report = {
        "command": "bench/ingest_and_query.py " + " ".join(f"--{k} {v}" for k, v in vars(args).items() if v),
        "machine": {"cpus": os.cpu_count(), "loadavg_1m_end": round(os.getloadavg()[0], 2)},
        "open_s": round(open_s, 2),
        "messages": n_messages,
        "ingest_s": round(ingest_s, 1),
        "ingest_messages_per_s": round(n_messages / ingest_s, 1),
        "ingest_share": {"extraction": round(extract_s / ingest_s, 3),
                         "embedding": round(embed_s / ingest_s, 3),
                         "stores_and_rest": round(1 - (extract_s + embed_s) / ingest_s, 3)},
        "questions": len(questions),
        "context_ms_p50": round(statistics.median(latencies), 1),
        "context_ms_p95": round(percentile(latencies, 0.95), 1),
        "tokens_mean": round(statistics.mean(tokens), 1),
        "tokens_max": max(tokens),
        "budget": args.budget,
    }
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
