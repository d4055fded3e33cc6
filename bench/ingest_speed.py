"""Write speed on the embedded default, through `Hippograph.remember` (the path of POST /v1/memories).

- **Single stream**: the first `--messages` messages of `bench scale`'s synthetic stream (seed 7), one
  request per run of one session's consecutive messages, each waited for, one after the other, into a
  fresh store; messages/s, and the share of the time spent in the extractor and in the embedder (timed
  around their calls in this process: the extractor's call includes its round trip to the spaCy process).
- **LoCoMo conversations**: each conversation of the file into a fresh store, one request per session
  (19-32 sessions, 369-680 turns), waited for, and again with `wait=False`: the seconds until the last
  request was answered and until every turn was searchable (the background finished).

Each is run once per `--precisions` (MiniLM's `embeddings.precision`: int8, the default, and fp32 beside
it as the baseline) and per `--notes` (who decides the notes: the learned judgement, the default, and the
rules alone beside it), alternating, so all see the same machine; `--rounds` runs the single stream again.

    python bench/ingest_speed.py --out bench/results/ingest-speed.json
    python bench/ingest_speed.py --precisions int8 --notes learned,rules --rounds 3 --no-locomo --out F.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from itertools import groupby
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hippograph.bench.common import bench_service
from hippograph.bench.scale import generate
from hippograph.config import Settings
from hippograph.datasets import locomo_batches


def settings(precision: str, notes: str = "learned") -> Settings:
    base = Settings()
    return base.model_copy(update={"embeddings": base.embeddings.model_copy(update={"precision": precision}),
                                   "extraction": base.extraction.model_copy(update={"notes": notes})})


def single_stream(n: int, precision: str, notes: str = "learned") -> dict:
    stream = generate(7, n + 1)
    with tempfile.TemporaryDirectory() as tmp, bench_service(Path(tmp), settings(precision, notes)) as s:
        s.remember("warm-up", "w", None, [stream.messages[0][2]])
        spent = {"extract": 0.0, "embed": 0.0}
        extract, embed = s.ingestor.extractor.extract, s.indexer.embedder.embed

        def timed(fn, key):  # type: ignore[no-untyped-def]
            def call(*a, **k):  # type: ignore[no-untyped-def]
                t = time.perf_counter()
                try:
                    return fn(*a, **k)
                finally:
                    spent[key] += time.perf_counter() - t
            return call

        s.ingestor.extractor.extract, s.indexer.embedder.embed = timed(extract, "extract"), timed(embed, "embed")  # type: ignore[method-assign]
        started, stored = time.perf_counter(), 0
        for (user, session), group in groupby(stream.messages[1:], key=lambda m: (m[0], m[1])):
            stored += len(s.remember(user, session, None, [m for _, _, m in group]).stored)
        wall = time.perf_counter() - started
    return {"messages": stored, "seconds": round(wall, 2), "messages_per_s": round(stored / wall, 1),
            # the messages are embedded while they are extracted, so the shares overlap
            "extractor_share": round(spent["extract"] / wall, 2), "embedder_share": round(spent["embed"] / wall, 2)}


def conversation(sample: dict, wait: bool, precision: str) -> dict:
    batches = locomo_batches([sample])
    with tempfile.TemporaryDirectory() as tmp, bench_service(Path(tmp), settings(precision)) as s:
        s.remember("warm-up", "w", None, batches[0].messages[:2])
        started, turns = time.perf_counter(), 0
        for b in batches:
            turns += len(s.remember(b.user_id, b.session_id, None, b.messages, wait=wait).stored)
        answered = time.perf_counter() - started
        s.background.idle(900)
        searchable = time.perf_counter() - started
        ids = [m.id for b in batches for m in b.messages]
        pending = s.memory_status(batches[0].user_id, ids)["pending"]
    return {"turns": turns, "sessions": len(batches), "answered_s": round(answered, 2),
            "searchable_s": round(searchable, 2), "pending_at_end": len(pending)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, default=REPO.parent / "shared" / "data" / "locomo" / "locomo_dev5.json")
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--precisions", default="int8,fp32", help="MiniLM precisions, comma-separated")
    parser.add_argument("--notes", default="learned", help="who decides the notes: learned, rules, comma-separated")
    parser.add_argument("--rounds", type=int, default=1, help="single-stream runs of each variant")
    parser.add_argument("--no-locomo", action="store_true", help="the single stream only")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    precisions = args.precisions.split(",")
    notes = args.notes.split(",")
    load_before = os.getloadavg()[0]
    report: dict = {"command": " ".join(["python", *sys.argv]), "single_stream": {}, "locomo": {}}
    for r in range(args.rounds):
        for precision in precisions:
            for who in notes:
                key = precision if notes == ["learned"] else f"{precision} notes={who}"
                key = key if args.rounds == 1 else f"{key} round {r + 1}"
                report["single_stream"][key] = row = single_stream(args.messages, precision, who)
                print("single stream", key, json.dumps(row), flush=True)
    for sample in [] if args.no_locomo else json.loads(args.locomo.read_text()):
        for wait in (True, False):
            for precision in precisions:
                key = f"{sample['sample_id']} {'waited' if wait else 'wait=false'} {precision}"
                report["locomo"][key] = row = conversation(sample, wait, precision)
                print(key, json.dumps(row), flush=True)
    report["machine"] = {"cpus": os.cpu_count(), "loadavg_1m_before": round(load_before, 2),
                         "loadavg_1m_after": round(os.getloadavg()[0], 2)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
