"""Plan settings chosen leaving one writer out, over conversations and multi-hop passage sets together.

    python bench/plan_writers.py --conversations ../shared/data/locomo/locomo_dev5.json bench/conversations \\
        --multihop bench/multihop --musique ../shared/data/musique --hotpotqa ../shared/data/hotpotqa \\
        --workdir /tmp/plan-writers --out bench/results/plan-writers.json

Every candidate setting (`CANDIDATES`: plan fields overridden, each written out whole so that the shipped
defaults do not move them) is scored on every set: a conversation writer by evidence recall of the context
block within 1,000 tokens (as `hippograph bench locomo`), a passage set by the mean of passage recall@2 and
@5 (as `hippograph bench multihop`). Then, set by set, the candidate with the best mean over the *other*
sets is chosen and scored on the set left out. The report gives every candidate on every set, each fold's
choice and its held-out gain over the first candidate (the settings before this choice), and on how many
sets each candidate is ahead of it. The stores are kept in --workdir (one per conversation file group and
one per passage set) and reused by a later run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from hippograph.bench.common import bench_service, machine
from hippograph.bench.locomo import SCORED, load_questions, load_samples, recall
from hippograph.bench.multihop import USER, load, passages_in_order
from hippograph.datasets import locomo_batches
from hippograph.models import DocumentIn

BEFORE = {"entity_weight": 0.0, "expand_weight": 1.0}
CANDIDATES: dict[str, dict[str, object]] = {
    "before (entities off, second hop 1.0)": BEFORE,
    "entities 0.5": {"entity_weight": 0.5, "expand_weight": 1.0},
    "second hop 0.5": {"entity_weight": 0.0, "expand_weight": 0.5},
    "entities 0.5, second hop 0.5": {"entity_weight": 0.5, "expand_weight": 0.5},
    "entities 1.0, second hop 0.5": {"entity_weight": 1.0, "expand_weight": 0.5},
}
BUDGET = 1000


def conversation_scores(paths: list[Path], workdir: Path | None) -> dict[str, dict[str, float]]:
    """Set (writer) -> candidate -> overall evidence recall (%)."""
    samples, writers = load_samples(paths)
    questions, _ = load_questions(samples, writers)
    questions = [q for q in questions if q.group in SCORED]
    got: dict[str, dict[str, list[float]]] = {}
    with bench_service(workdir / "conversations" if workdir else None) as service:
        for b in locomo_batches(samples):
            service.remember(b.user_id, b.session_id, b.agent_id, b.messages)
        for name, overrides in CANDIDATES.items():
            for q in questions:
                text = service.context(q.user_id, q.text, token_budget=BUDGET, overrides=overrides).context
                got.setdefault(f"conversations {q.writer}", {}).setdefault(name, []).append(recall(q.evidence, text))
            print(f"conversations: {name}", file=sys.stderr)
    return {s: {c: 100 * statistics.mean(v) for c, v in by.items()} for s, by in got.items()}


def passage_scores(dataset: str, name: str, questions_path: Path, corpus_path: Path,
                   workdir: Path | None) -> dict[str, float]:
    """Candidate -> mean of passage recall@2 and @5 (%) on one passage set."""
    passages, questions, _ = load(dataset, questions_path, corpus_path)
    out: dict[str, float] = {}
    with bench_service(workdir / name if workdir else None) as service:
        for i in range(0, len(passages), 50):
            service.remember(USER, None, None, documents=[DocumentIn(id=p.id, title=p.title or None, text=p.text)
                                                          for p in passages[i:i + 50] if p.text])
        for cand, overrides in CANDIDATES.items():
            scores = []
            for q in questions:
                _, _, cands, _ = service.recall(USER, q.text, overrides=overrides)
                ranked = passages_in_order([c.source_ids for c in cands], 5)
                scores.append(sum(len(set(ranked[:k]) & q.gold) / len(q.gold) for k in (2, 5)) / 2)
            out[cand] = 100 * statistics.mean(scores)
    print(f"passages {name}: done", file=sys.stderr)
    return out


def choose(scores: dict[str, dict[str, float]]) -> dict:
    """Leave one set out: the candidate best on the mean of the others, scored on it."""
    sets, first = list(scores), next(iter(CANDIDATES))
    folds = {}
    for held in sets:
        rest = [s for s in sets if s != held]
        best = max(CANDIDATES, key=lambda c: statistics.mean(scores[s][c] for s in rest))
        folds[held] = {"chosen": best, "held_out": round(scores[held][best], 2),
                       "gain": round(scores[held][best] - scores[held][first], 2)}
    ahead = {c: {"ahead": sum(scores[s][c] > scores[s][first] + 1e-9 for s in sets),
                 "behind": sum(scores[s][c] < scores[s][first] - 1e-9 for s in sets)} for c in CANDIDATES}
    gains = [f["gain"] for f in folds.values()]
    return {"folds": folds, "held_out_gain_mean": round(statistics.mean(gains), 2),
            "held_out_ahead": sum(g > 0 for g in gains), "held_out_behind": sum(g < 0 for g in gains),
            "against_before": ahead}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conversations", nargs="+", type=Path, required=True, help="as bench locomo --data")
    ap.add_argument("--multihop", type=Path, required=True, help="a folder of passage sets (one per writer)")
    ap.add_argument("--musique", type=Path, help="a folder with musique_dev50.json and musique_corpus.json")
    ap.add_argument("--hotpotqa", type=Path, help="a folder with hotpotqa_dev50.json and hotpotqa_corpus.json")
    ap.add_argument("--candidates", type=Path,
                    help="a JSON object of candidate name -> plan fields overridden, the first the one to beat "
                         "(default: the entity route and second-hop weights above)")
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if args.candidates:
        CANDIDATES.clear()
        CANDIDATES.update(json.loads(args.candidates.read_text()))
    scores = conversation_scores(args.conversations, args.workdir)
    for folder in sorted(p for p in args.multihop.iterdir() if (p / "questions.json").exists()):
        scores[f"passages {folder.name}"] = passage_scores("musique", folder.name, folder / "questions.json",
                                                          folder / "corpus.json", args.workdir)
    for dataset, folder in (("musique", args.musique), ("hotpotqa", args.hotpotqa)):
        if folder is not None:
            scores[f"passages {dataset}"] = passage_scores(dataset, dataset, folder / f"{dataset}_dev50.json",
                                                           folder / f"{dataset}_corpus.json", args.workdir)
    report = {"command": "python bench/plan_writers.py " + " ".join(sys.argv[1:]), "candidates": CANDIDATES, "machine": machine(),
              "measures": "conversations: evidence recall within 1,000 tokens; passages: mean of recall@2 and @5",
              "scores": {s: {c: round(v, 2) for c, v in by.items()} for s, by in scores.items()},
              **choose(scores)}
    print(f"| set | {' | '.join(CANDIDATES)} |\n|---|{'---|' * len(CANDIDATES)}")
    for s, by in scores.items():
        print(f"| {s} | " + " | ".join(f"{by[c]:.1f}" for c in CANDIDATES) + " |")
    for held, f in report["folds"].items():
        print(f"{held}: chose {f['chosen']}, held out {f['held_out']} ({f['gain']:+.2f})")
    print(f"held-out gain {report['held_out_gain_mean']:+.2f} on the mean, ahead on {report['held_out_ahead']}, "
          f"behind on {report['held_out_behind']} of {len(scores)}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
