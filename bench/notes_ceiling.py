"""What the notes pipeline loses around its models: the notes kept over every writer's sequences when the
writers' own labels stand in for the act model, the slot model, the pair model, or all three
(`train.simulate(gold=...)`). With all three right and every note stated, what is still lost is lost by how
messages are cut into clauses and how a clause becomes a note, not by the judgement. "values apart" also gives
each note clause that shares a piece with another its own note, with its own words (a perfect tagger of values).

    python bench/notes_ceiling.py --cache DIR [--tries "ROW;ROW"] [--report bench/results/notes-ceiling.json]

It also counts the writers' note clauses that have no piece of their own (the cut joined them to another
clause, whose label the piece took) and those cut into more than one piece.

The judgement is the packaged one (trained on every writer: in-writer), at its thresholds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from hippograph.notes_model import corpus, judge, scoring, train
from hippograph.notes_model.judge import Judgement

TRIES = {"models": frozenset(), "act right": frozenset({"act"}), "slot right": frozenset({"slot"}),
         "pair right": frozenset({"pair"}), "act and slot right": frozenset({"act", "slot"}),
         "all right, all stated": frozenset({"act", "slot", "pair", "stated"}),
         "models, values apart": frozenset({"apart"}),
         "all right, all stated, values apart": frozenset({"act", "slot", "pair", "stated", "apart"})}


def cut_apart(seqs: list[corpus.Sequence], rows: list) -> dict[str, float]:
    """How the writers' note clauses fare in the cut: without a piece of their own, or in several."""
    count = train.pieces_of_clauses(rows)
    pieces = [count.get((s.id, m.id), {}).get(id(c), 0) for s in seqs for m in s.user_messages() for c in m.clauses
              if c.gives_note]
    return {"note clauses": len(pieces), "without a piece of their own": round(sum(p == 0 for p in pieces) / len(pieces), 3),
            "in more than one piece": round(sum(p > 1 for p in pieces) / len(pieces), 3)}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", type=Path, help="the feature matrices of `python -m hippograph.notes_model.train --cache`")
    ap.add_argument("--report", type=Path)
    ap.add_argument("--tries", default=";".join(TRIES), help="which of the rows, separated by ; (default: all)")
    args = ap.parse_args(argv)
    tries = [t.strip() for t in args.tries.split(";") if t.strip()]
    unknown = sorted(set(tries) - set(TRIES))
    if unknown:
        ap.error(f"unknown rows {unknown}; the rows are {list(TRIES)}")
    started = time.time()
    seqs, rows, x = train.build(list(corpus.corpus_files(train.DEFAULT_CORPUS)), args.cache)
    j, limits = Judgement.load(judge.WEIGHTS), judge.limits_of(judge.WEIGHTS)
    report: dict = {"note clauses": cut_apart(seqs, rows)}
    print(report["note clauses"], flush=True)
    for name in tries:
        gold = TRIES[name]
        got = train.simulate(j, seqs, rows, x, limits, gold)
        report[name] = {m: scoring.value(got, path) for m, path in scoring.NOTE_MEASURES}
        report[name]["objective"] = round(scoring.objective(got), 4)
        print(name, report[name], flush=True)
    report["seconds"], report["load"] = round(time.time() - started), os.getloadavg()
    if args.report:
        args.report.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
