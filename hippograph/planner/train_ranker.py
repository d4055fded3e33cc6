"""The learned ranker (`hippograph.planner.ranker`) trained on long conversations, and measured writer by
writer against the hand-set fusion and a plain hybrid search.

    python -m hippograph.planner.train_ranker --data ../shared/data/locomo/locomo_dev5.json bench/conversations \\
        --workdir /tmp/ranker-stores --report bench/results/ranker-writers-out.json

Every conversation is ingested as `hippograph bench locomo` does (a `--workdir` keeps the stores for the next
run). For each question of categories 1-4, the plan the heuristic picks recalls its candidates; each
candidate's features (`ranking_features`) are labelled by whether it is an evidence turn. Then, writer by
writer, a ranker fitted on the other writers orders that writer's candidates, and the context block built
with it is scored by evidence recall (as `bench locomo` scores it) beside the block of the hand-set fusion
and bm25+dense's. `--model hgb` measures gradient-boosted trees in place of the logistic regression (not
packaged). Without `--no-save` the logistic regression fitted on every writer is written into the package,
the same numbers for the same data.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from hippograph.bench.common import bench_service, command_line, machine, pack, ranked_episodes, turn_line
from hippograph.bench.locomo import SCORED, Question, load_questions, load_samples, norm, recall
from hippograph.datasets import locomo_batches
from hippograph.planner.dates import date_windows
from hippograph.planner.ranker import FEATURES, PACKAGED, LinearRanker, ranking_features
from hippograph.service import Hippograph
from hippograph.vectors.base import embed_query

OUT = Path(__file__).resolve().parent / PACKAGED
#: the inverse regularisation of the logistic regression
C = 1.0


def learned_method(depth: int) -> str:
    return f"learned@{depth}" if depth else "learned"
HAND_SET = {"ranker": ""}  # the plans with the weighted sum of reciprocal ranks, as the ranker is trained on


def candidate_rows(service: Hippograph, q: Question) -> tuple[np.ndarray, np.ndarray]:
    """The question's candidates as the plan recalls them (hand-set order): features and labels."""
    _, _, cands, _ = service.recall(q.user_id, q.text, overrides=HAND_SET)
    if not cands:
        return np.zeros((0, len(FEATURES)), dtype=np.float32), np.zeros(0, dtype=np.int8)
    cosines = service.retriever.cosines(embed_query(service.indexer.embedder, q.text), [c.id for c in cands],
                                        q.user_id)
    rows = ranking_features(cands, q.text, date_windows(q.text), cosines)
    labels = np.asarray([any(e in norm(c.text) for e in q.evidence) for c in cands], dtype=np.int8)
    return rows, labels


def fit_linear(rows: np.ndarray, labels: np.ndarray, weights: np.ndarray, about: dict | None = None) -> LinearRanker:
    from sklearn.linear_model import LogisticRegression

    mean = rows.mean(axis=0)
    scale = rows.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=C, max_iter=2000)
    model.fit((rows - mean) / scale, labels, sample_weight=weights)
    return LinearRanker(mean.tolist(), scale.tolist(), model.coef_[0].tolist(), float(model.intercept_[0]),
                        about=about)


def fit_trees(rows: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    from sklearn.ensemble import HistGradientBoostingClassifier

    model = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.1, max_leaf_nodes=15, random_state=0)
    model.fit(rows, labels, sample_weight=weights)
    return lambda x: model.predict_proba(x)[:, 1]


def question_weights(sizes: Sequence[int]) -> np.ndarray:
    """Each question weighs the same, however many candidates it has."""
    return np.concatenate([np.full(n, 1.0 / n, dtype=np.float64) for n in sizes if n]) if any(sizes) else np.zeros(0)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hippograph.planner.train_ranker", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", nargs="+", type=Path, required=True,
                    help="LoCoMo files or folders, one writer each (as `hippograph bench locomo --data`)")
    ap.add_argument("--workdir", type=Path, help="keep the stores here for the next run")
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--model", choices=["lr", "hgb"], default="lr", help="the model measured out of writer")
    ap.add_argument("--depths", default="0",
                    help="comma-separated depths the ranker orders, each measured as a method: the best N of the "
                         "hand-set order (0: all candidates, the method 'learned'; N: 'learned@N')")
    ap.add_argument("--report", type=Path, help="write the per-writer table here (JSON)")
    ap.add_argument("--no-save", action="store_true", help="measure only; leave the packaged ranker as it is")
    ap.add_argument("--no-measure", action="store_true", help="fit on every writer and save, without the measure")
    args = ap.parse_args(argv)
    try:
        args.depths = [int(d) for d in args.depths.split(",")]
    except ValueError:
        ap.error(f"--depths takes whole numbers separated by commas, not {args.depths!r}")
    samples, writers = load_samples(args.data)
    questions, _ = load_questions(samples, writers)
    questions = [q for q in questions if q.group in SCORED]
    with bench_service(args.workdir) as service:
        batches = locomo_batches(samples)
        for i, b in enumerate(batches):
            service.remember(b.user_id, b.session_id, b.agent_id, b.messages)
            print(f"\ringested {i + 1}/{len(batches)} sessions", end="", file=sys.stderr)
        print(file=sys.stderr)
        rows, labels, sizes = [], [], []
        for n, q in enumerate(questions):
            x, y = candidate_rows(service, q)
            rows.append(x)
            labels.append(y)
            sizes.append(len(y))
            if (n + 1) % 100 == 0:
                print(f"\rfeatures of {n + 1}/{len(questions)} questions", end="", file=sys.stderr)
        print(file=sys.stderr)
        names = list(dict.fromkeys(q.writer for q in questions))
        report: dict = {"command": command_line().replace("hippograph ", "python -m hippograph.planner.train_ranker ", 1),
                        "writers": names, "questions": len(questions), "model": args.model,
                        "features": list(FEATURES)}
        if not args.no_measure:
            report["per_writer"] = measure(service, questions, rows, labels, sizes, names, args)
            report["machine"] = machine()
            print_table(report["per_writer"])
        if not args.no_save:
            x, y = np.concatenate(rows), np.concatenate(labels)
            ranker = fit_linear(x, y, question_weights(sizes),
                                about={"writers": names, "questions": len(questions), "candidates": len(y),
                                       "C": C})
            ranker.save(OUT)
            print(f"written to {OUT}", file=sys.stderr)
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(report, indent=2) + "\n")
    return 0


def measure(service: Hippograph, questions: list[Question], rows: list[np.ndarray], labels: list[np.ndarray],
            sizes: list[int], names: list[str], args: argparse.Namespace) -> dict:
    """Per writer and category: evidence recall of the block with the ranker fitted without that writer,
    with the hand-set fusion, and of bm25+dense packed into the same budget."""
    out: dict = {}
    for writer in names:
        train = [i for i, q in enumerate(questions) if q.writer != writer]
        test = [i for i, q in enumerate(questions) if q.writer == writer]
        x = np.concatenate([rows[i] for i in train])
        y = np.concatenate([labels[i] for i in train])
        w = question_weights([sizes[i] for i in train])
        service.retriever.rankers["fold"] = (fit_linear(x, y, w) if args.model == "lr" else fit_trees(x, y, w))
        methods = {"hand-set": HAND_SET,
                   **{learned_method(d): {"ranker": "fold", "rerank_depth": d} for d in args.depths},
                   "bm25+dense": None}
        got: dict[str, dict[str, list[float]]] = {m: {} for m in methods}
        for i in test:
            q = questions[i]
            for method, overrides in methods.items():
                if overrides is None:
                    hits = ranked_episodes(service, q.user_id, q.text, "hybrid", limit=80)
                    text, _ = pack([turn_line(h.text, h.timestamp) for h in hits], service.counter, args.budget)
                else:
                    text = service.context(q.user_id, q.text, token_budget=args.budget, overrides=overrides).context
                got[method].setdefault(q.group, []).append(recall(q.evidence, text))
        out[writer] = {m: {**{g: round(100 * statistics.mean(v), 1) for g, v in by.items()},
                           "overall": round(100 * statistics.mean([x for v in by.values() for x in v]), 1)}
                       for m, by in got.items()}
        print(f"{writer}: " + ", ".join(f"{m} {r['overall']}" for m, r in out[writer].items()), file=sys.stderr)
    return out


def print_table(per_writer: dict) -> None:
    cols = [*SCORED, "overall"]
    print("| writer | method | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for writer, by in per_writer.items():
        for method, r in by.items():
            print(f"| {writer} | {method} | " + " | ".join(str(r.get(c, "")) for c in cols) + " |")
    for method in next(iter(per_writer.values())):
        mean = statistics.mean(by[method]["overall"] for by in per_writer.values())
        ahead = sum(by[method]["overall"] > by["hand-set"]["overall"] for by in per_writer.values())
        print(f"mean over writers, {method}: {mean:.1f}" + (f" (ahead of hand-set on {ahead} of "
                                                             f"{len(per_writer)})" if method.startswith("learned") else ""))


if __name__ == "__main__":
    sys.exit(main())
