"""Does more labelled data help the writers the corpus already has? Each writer of the corpus is scored in the
same groups as `python -m hippograph.notes_model.train --report` deals them (`train.groups`), by the judgement
trained on the other groups **and** on the `--extra` folders (corpus-format files by other writers, never
scored): the notes kept over its sequences (`train.simulate`) at the thresholds chosen over these parts
(`train.choose_limits`) and at those of `--limits`, and its shares of one-off instructions and of lasting
preferences stated (`notes_instructions.shares`). Set beside the packaged report, the only change is the extra
training data: the groups are the same.

    python bench/notes_more_writers.py --cache /tmp/notes-cache --extra bench/extraction/instructions-w50 \\
        ... --extra bench/extraction/instructions-w55 --out bench/results/notes-more-writers.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import notes_instructions as ni

from hippograph.bench.common import machine
from hippograph.notes_model import corpus, judge, scoring, train


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=train.DEFAULT_CORPUS)
    ap.add_argument("--extra", type=Path, action="append", required=True, help="a folder of corpus-format files")
    ap.add_argument("--folds", type=int, default=train.FOLDS)
    ap.add_argument("--hidden", type=int, default=train.HIDDEN)
    ap.add_argument("--least", type=int, default=5, help="a writer counts in a share's mean with at least this many pieces")
    ap.add_argument("--limits", type=Path, default=judge.WEIGHTS, help="a folder with a limits.json")
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    began = time.perf_counter()
    files = list(corpus.corpus_files(args.corpus))
    extra = [f for folder in args.extra for f in sorted(folder.glob("*.json"))]
    if not files or not extra:
        print("nothing to score: no corpus files, or no --extra files", file=sys.stderr)
        return 2
    seqs, rows, x = train.build(files + extra, args.cache)
    limits = judge.limits_of(args.limits)
    parts = train.out_of_writer(seqs, rows, x, None, args.folds, args.hidden, writers=sorted({f.parent.name for f in files}))
    shares = {w: ni.shares(r, ni.stated(j, r, xs, limits)) for w, (j, _, r, xs) in parts.items()}
    print(f"scored {len(parts)} writers ({time.perf_counter() - began:.0f} s)", flush=True)
    at_limits = {w: train.simulate(j, s, r, xs, limits) for w, (j, s, r, xs) in parts.items()}
    chosen, tried = train.choose_limits(parts)
    notes = {w: train.simulate(j, s, r, xs, chosen) for w, (j, s, r, xs) in parts.items()}
    report = {"extra": [str(f) for f in args.extra], "limits": limits.__dict__, "chosen": chosen.__dict__,
              "notes": notes, "notes_at_limits": at_limits, "shares": shares, "summary": ni.summary(shares, args.least),
              "objective": round(float(np.mean([scoring.objective(m) for m in notes.values()])), 4),
              "objective_at_limits": round(float(np.mean([scoring.objective(m) for m in at_limits.values()])), 4),
              "tried": tried, "command": " ".join(["python", "bench/notes_more_writers.py", *argv]),
              "seconds": round(time.perf_counter() - began), "machine": machine()}
    print(f"thresholds chosen: {chosen.__dict__}; objective {report['objective']} (at --limits "
          f"{report['objective_at_limits']})\n" + scoring.table(notes))
    print(f"shares stated: {report['summary']}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
