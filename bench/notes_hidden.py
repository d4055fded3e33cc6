"""The act and slot models read straight from their features (a logistic regression, `hidden` 0) or through a
layer of rectified units, trained on some writers of the notes corpus and scored on writers they never saw.

Each judgement is trained on the `--trained-on` writers' folders of `bench/notes/` (`train.train`, the same rows
and features as the train command's) and scored over each `--scored-on` writer's sequences by the simulation
the thresholds are chosen on (`train.simulate`), all at the same thresholds (`--limits`, by default the
packaged ones), so that only the models differ.

    python bench/notes_hidden.py --trained-on tune,tune_b,tune_c,tune_d,tune_e,w1,...,w16 \\
        --scored-on w17,...,w32 --hidden 0,128 --cache /tmp/notes-cache --out bench/results/notes-hidden.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from hippograph.notes_model import corpus, judge, scoring, train


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=train.DEFAULT_CORPUS)
    ap.add_argument("--trained-on", required=True, help="writers' folders, comma-separated")
    ap.add_argument("--scored-on", required=True, help="writers' folders, comma-separated, none of --trained-on")
    ap.add_argument("--hidden", default="0,128", help="units of the layer, comma-separated (0: none)")
    ap.add_argument("--limits", type=Path, default=judge.WEIGHTS, help="a folder with a limits.json")
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    trained_on, scored_on = args.trained_on.split(","), args.scored_on.split(",")
    if set(trained_on) & set(scored_on):
        ap.error("a writer is both trained and scored on: " + ", ".join(sorted(set(trained_on) & set(scored_on))))
    files = [f for f in corpus.corpus_files(args.corpus) if f.parent.name in set(trained_on) | set(scored_on)]
    seqs, rows, x = train.build(files, args.cache)
    keep = [i for i, r in enumerate(rows) if r.writer in set(trained_on)]
    limits, multi = judge.limits_of(args.limits), train.multi_slots()
    report: dict[str, dict] = {"limits": limits.__dict__, "trained_on": trained_on, "by_hidden": {}}
    for hidden in (int(h) for h in args.hidden.split(",")):
        began = time.perf_counter()
        j = train.train([rows[i] for i in keep], x[keep], multi, hidden=hidden)
        seconds = time.perf_counter() - began
        notes = {w: train.simulate(j, *train._of(w, seqs, rows, x), limits) for w in scored_on}
        objective = {w: scoring.objective(m) for w, m in notes.items()}
        report["by_hidden"][str(hidden)] = {"train_seconds": round(seconds, 1), "objective": objective,
                                            "spread": scoring.spread(notes), "notes": notes}
        print(f"hidden {hidden} (trained in {seconds:.0f} s): objective {np.mean(list(objective.values())):.4f}\n"
              + scoring.table(notes), flush=True)
    first, *others = report["by_hidden"]
    for h in others:
        a, b = report["by_hidden"][first]["objective"], report["by_hidden"][h]["objective"]
        print(f"hidden {h} against {first}: objective higher on {sum(b[w] > a[w] for w in a)} of {len(a)} writers")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
