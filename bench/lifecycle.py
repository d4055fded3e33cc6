"""What the session tier costs, on the embedded default (spaCy, MiniLM, SQLite, Qdrant Edge).

    .venv/bin/python bench/lifecycle.py [--messages 600] [--queries 100] [--out bench/results/lifecycle.json]

One long session of synthetic messages is ingested in writes of 5 (a summary rolls every 15 messages
past 30), then:
- the time of each rolling summary (extractive; what `remember` spends on it after the write);
- the context latency for a question with that session (pinned + recent + summary + the tool log)
  against the same question without a session, side by side in one process (report the ratio);
- the time to expire the whole session from both stores (messages, summary, audit rows written), and
  then to compact the stores' files (the sweep's next step: SQLite checkpoint, vector shard rewrite).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hippograph.bench.common import bench_service, machine, percentile
from hippograph.config import SessionSettings, Settings
from hippograph.models import Episode, MessageIn, Role, utcnow

TOPICS = ["the invoice batch", "the Lisbon office move", "the Q3 budget", "the vendor contract", "the data migration",
          "the hiring plan", "the launch checklist", "the security review"]


def message(i: int) -> MessageIn:
    role = Role.user if i % 2 == 0 else Role.assistant
    topic = TOPICS[i % len(TOPICS)]
    text = (f"About {topic}: we decided to move step {i} to Friday because {i % 5} items are still open."
            if role == Role.user else f"Noted. I will track step {i} of {topic} and flag the {i % 5} open items.")
    return MessageIn(id=f"m{i}", role=role, content=text, timestamp=datetime(2024, 5, 1, tzinfo=UTC)
                     + timedelta(minutes=i))


def run(messages: int, queries: int) -> dict:
    settings = Settings(sessions=SessionSettings(ttl_seconds=3600))
    with bench_service(None, settings) as svc:
        summary_ms: list[float] = []
        keeper = svc.sessions
        original = keeper.summarize

        def timed(user_id: str, session_id: str) -> Episode | None:
            t0 = time.perf_counter()
            out = original(user_id, session_id)
            if out is not None:
                summary_ms.append((time.perf_counter() - t0) * 1000)
            return out

        keeper.summarize = timed  # type: ignore[method-assign]
        t0 = time.perf_counter()
        for i in range(0, messages, 5):
            svc.remember("u", "long", None, [message(j) for j in range(i, min(i + 5, messages))])
        ingest_s = time.perf_counter() - t0
        with_session: list[float] = []
        without: list[float] = []
        for q in range(queries + 2):
            question = f"What did we decide about {TOPICS[q % len(TOPICS)]}?"
            for sink, session in ((with_session, "long"), (without, None)):
                t = time.perf_counter()
                svc.context("u", question, session_id=session, token_budget=1500)
                if q >= 2:
                    sink.append((time.perf_counter() - t) * 1000)
        block = svc.context("u", "What did we decide about the Q3 budget?", session_id="long", token_budget=1500)
        t = time.perf_counter()
        expired = svc.sessions.expire(now=utcnow() + timedelta(hours=2))  # the sweep's expiry step
        expire_ms = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        svc.compact()  # the sweep's next step: what was deleted leaves the files
        compact_ms = (time.perf_counter() - t) * 1000
    return {
        "benchmark": "lifecycle",
        "command": "bench/lifecycle.py " + " ".join(sys.argv[1:]),
        "machine": machine(),
        "messages": messages,
        "ingest_messages_per_s": round(messages / ingest_s, 1),
        "summaries": len(summary_ms),
        "summary_ms_p50": round(statistics.median(summary_ms), 2) if summary_ms else None,
        "summary_ms_max": round(max(summary_ms), 2) if summary_ms else None,
        "summary_lines_in_block": len(block.sections["summary"]),
        "context_with_session_p50_ms": round(percentile(with_session, 0.5), 2),
        "context_with_session_p95_ms": round(percentile(with_session, 0.95), 2),
        "context_without_session_p50_ms": round(percentile(without, 0.5), 2),
        "context_without_session_p95_ms": round(percentile(without, 0.95), 2),
        "ratio_p50": round(percentile(with_session, 0.5) / percentile(without, 0.5), 2),
        "sessions_expired": expired,
        "expire_ms": round(expire_ms, 1),
        "compact_ms": round(compact_ms, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=600)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out")
    args = parser.parse_args()
    report = run(args.messages, args.queries)
    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
