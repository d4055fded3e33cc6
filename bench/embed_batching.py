"""How many tokens one ONNX run of the MiniLM embedder should hold (`batch_tokens`).

A write embeds its own texts: a few to a few dozen. Each run pads its rows to its longest text, so one
run over a whole request wastes work on padding, and many one-row runs pay the per-run overhead. The
candidates take turns on the same request-sized chunks, so load that comes and goes hits them alike.

The budget is chosen on LoCoMo turns (speaker + text, as stored) and then reported on texts it was not
chosen on: MuSiQue passages (long) and the synthetic chat of `bench scale` (short). Offline only.

    python bench/embed_batching.py --out bench/results/embed-batching.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.embedders import load_musique
from hippograph.bench.scale import generate
from hippograph.vectors.embedders import OnnxMiniLMEmbedder

BUDGETS = (64, 128, 256, 512, 1024, 100_000)  # the last: one run per 32 texts, padding to the longest
CHUNKS = (3, 22, 64)  # texts per request


def locomo_turns(path: Path) -> list[str]:
    turns = []
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        for key in sorted((k for k in conv if k.startswith("session_") and k[8:].isdigit()), key=lambda k: int(k[8:])):
            turns += [f"{t['speaker']}: {t['text']}" for t in conv[key] or []]
    return turns


def timed(texts: list[str], repeats: int) -> dict[str, dict[int, float]]:
    """texts/s of each budget, per chunk size."""
    embedders = {b: OnnxMiniLMEmbedder(batch_tokens=b) for b in BUDGETS}
    for e in embedders.values():
        e.embed(texts[:4])
    seconds = {b: dict.fromkeys(CHUNKS, 0.0) for b in BUDGETS}
    for _ in range(repeats):
        for chunk in CHUNKS:
            for start in range(0, len(texts), chunk):
                for b, e in embedders.items():  # taking turns, chunk by chunk
                    t = time.perf_counter()
                    e.embed(texts[start:start + chunk])
                    seconds[b][chunk] += time.perf_counter() - t
    return {str(b): {str(c): round(repeats * len(texts) / s, 1) for c, s in by.items()} for b, by in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    data = REPO.parent / "shared" / "data"
    parser.add_argument("--locomo", type=Path, default=data / "locomo" / "locomo_dev5.json")
    parser.add_argument("--musique-questions", type=Path, default=data / "musique" / "musique_dev50.json")
    parser.add_argument("--musique-corpus", type=Path, default=data / "musique" / "musique_corpus.json")
    parser.add_argument("--texts", type=int, default=600, help="texts of each set")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    chat = [episode_text_of(m) for _, _, m in generate(7, args.texts).messages]
    sets = {"locomo_turns (chosen on)": locomo_turns(args.locomo)[: args.texts],
            "musique_passages (held out)": load_musique(args.musique_questions, args.musique_corpus).passages[: args.texts],
            "scale_chat (held out)": chat}
    load_before = os.getloadavg()[0]
    results = {name: timed(texts, args.repeats) for name, texts in sets.items()}
    chosen = results["locomo_turns (chosen on)"]
    best = max(BUDGETS, key=lambda b: sum(chosen[str(b)].values()))
    report = {"command": " ".join(["python", *sys.argv]), "metric": "texts/s by batch_tokens (rows) and texts "
              "per embed call (columns); the last budget pads up to 32 texts to the longest",
              "chosen_budget": best, "results": results,
              "machine": {"cpus": os.cpu_count(), "loadavg_1m_before": round(load_before, 2),
                          "loadavg_1m_after": round(os.getloadavg()[0], 2)}}
    print(json.dumps(report, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


def episode_text_of(message: object) -> str:
    name = getattr(message, "name", None) or getattr(getattr(message, "role", None), "value", "")
    return f"{name}: {getattr(message, 'content', '')}"


if __name__ == "__main__":
    main()
