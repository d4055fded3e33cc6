"""What the notes pipeline loses around its models: the notes kept over every writer's sequences when the
writers' own labels stand in for the act model, the slot model, the pair model, or all three
(`train.simulate(gold=...)`). With all three right and every note stated, what is still lost is lost by how
messages are cut into clauses and how a clause becomes a note, not by the judgement.

    python bench/notes_ceiling.py --cache DIR [--report bench/results/notes-ceiling.json]

The judgement is the packaged one (trained on every writer: in-writer), at its thresholds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from hippograph.notes_model import corpus, judge, train
from hippograph.notes_model.judge import Judgement

TRIES = {"models": frozenset(), "act right": frozenset({"act"}), "slot right": frozenset({"slot"}),
         "pair right": frozenset({"pair"}), "act and slot right": frozenset({"act", "slot"}),
         "all right, all stated": frozenset({"act", "slot", "pair", "stated"})}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", type=Path, help="the feature matrices of `python -m hippograph.notes_model.train --cache`")
    ap.add_argument("--report", type=Path)
    args = ap.parse_args(argv)
    started = time.time()
    seqs, rows, x = train.build(list(corpus.corpus_files(train.DEFAULT_CORPUS)), args.cache)
    j, limits = Judgement.load(judge.WEIGHTS), judge.limits_of(judge.WEIGHTS)
    report: dict = {}
    for name, gold in TRIES.items():
        got = train.simulate(j, seqs, rows, x, limits, gold)
        report[name] = {m: train._value(got, path) for m, path in train.NOTE_MEASURES}
        report[name]["objective"] = round(train.objective(got), 4)
        print(name, report[name], flush=True)
    report["seconds"], report["load"] = round(time.time() - started), os.getloadavg()
    if args.report:
        args.report.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
