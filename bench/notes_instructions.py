"""Instructions for the task at hand against lasting preferences: how often the notes judgement keeps a one-off
instruction ("exclude drafts from this report") as a stated note, which every later context block would show,
and how often it keeps a lasting preference ("from now on leave drafts out of every report") as one.

Each writer of the corpus is scored by the judgement trained without its group of writers (`train.groups`,
`--folds`), never on its own words; the `--held-out` folders (corpus-format files nothing is trained on) by the
judgement trained on every writer. For each writer, of the pieces labelled `instructs`, the share the judgement
makes a stated note (`judge.act_of` gives "note" and its confidence, the act's probability times the slot's,
is at least `stated`: what the context block shows); of the pieces labelled `states` or `changes` in a
preference slot (and `other` with kind preference), the same share. The held-out folders are also scored over
their sequences by the simulation the thresholds are chosen on (`train.simulate`).

    python bench/notes_instructions.py --cache /tmp/notes-cache --held-out bench/extraction/instructions \\
        --out bench/results/notes-instructions.json
    python bench/notes_instructions.py --cache /tmp/notes-cache --without w38,w39,w40,w41,w42,w43,w44,w45,w46,w47,w48,w49 \\
        --held-out bench/extraction/instructions --limits OLD_WEIGHTS --out bench/results/notes-instructions-42.json

(`OLD_WEIGHTS`: a folder with the thresholds of the judgement of before, `limits.json` of revision e425d91.)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from hippograph.bench.common import machine
from hippograph.notes_model import corpus, judge, scoring, train
from hippograph.notes_model.features import Row
from hippograph.notes_model.judge import Judgement

PREFERENCE = frozenset(s["slot"] for s in corpus.catalogue()["slots"] if s["kind"] == "preference")


def lasting(row: Row) -> bool:
    """A piece its writer labelled as stating or changing a lasting preference."""
    label = row.label
    return label is not None and label.act in corpus.NOTE_ACTS and (
        label.slot in PREFERENCE or (label.slot == "other" and label.kind == "preference"))


def stated(j: Judgement, rows: list[Row], x: np.ndarray, limits: judge.Thresholds) -> np.ndarray:
    """Per piece: whether the judgement makes it a note the context block states."""
    cx = j.clause_features(x, [r.text for r in rows], train.messages(rows))
    acts, slots = j.act.probabilities(cx), j.slot.probabilities(cx)
    answers = [judge.Answer(dict(zip(j.act.classes, a, strict=True)), s, xi) for a, s, xi in zip(acts, slots, x, strict=True)]
    return np.array([judge.act_of(a.note, a.retract, limits) == "note" and a.confidence >= limits.stated for a in answers])


def shares(rows: list[Row], said: np.ndarray) -> dict[str, float]:
    task = np.array([r.act == "instructs" for r in rows])
    kept = np.array([lasting(r) for r in rows])
    return {"instructions": int(task.sum()), "instructions_stated": round(float(said[task].mean()), 4) if task.any() else float("nan"),
            "lasting": int(kept.sum()), "lasting_stated": round(float(said[kept].mean()), 4) if kept.any() else float("nan")}


def summary(by_writer: dict[str, dict], least: int) -> dict[str, dict[str, float]]:
    """Mean, lowest and highest over the writers with at least `least` pieces of each kind."""
    out = {}
    for key, count in (("instructions_stated", "instructions"), ("lasting_stated", "lasting")):
        values = [m[key] for m in by_writer.values() if m[count] >= least]
        out[key] = {"writers": len(values), "mean": round(float(np.mean(values)), 4),
                    "min": round(min(values), 4), "max": round(max(values), 4)}
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=train.DEFAULT_CORPUS)
    ap.add_argument("--without", default="", help="writers' folders of the corpus left out of everything, comma-separated")
    ap.add_argument("--held-out", type=Path, action="append", default=[], help="a folder of corpus-format files")
    ap.add_argument("--folds", type=int, default=train.FOLDS)
    ap.add_argument("--hidden", type=int, default=train.HIDDEN, help="units of the act and slot models' layer")
    ap.add_argument("--least", type=int, default=5, help="a writer counts in a mean with at least this many pieces")
    ap.add_argument("--limits", type=Path, default=judge.WEIGHTS, help="a folder with a limits.json")
    ap.add_argument("--word-pairs", type=int, default=train.PAIR_WRITERS, metavar="WRITERS",
                    help="the act and slot models also read pairs of words that at least this many writers used")
    ap.add_argument("--lead", action=argparse.BooleanOptionalAction, default=train.LEAD, help="the act and slot "
                    "models also read the acts a plain regression gives the clauses before each clause in its message")
    ap.add_argument("--held-out-only", action="store_true",
                    help="score only the --held-out folders, with the judgement saved in the --limits folder (its weights and "
                         "thresholds: the packaged one by default), instead of one trained here on every writer")
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.held_out_only and not args.held_out:
        ap.error("--held-out-only needs at least one --held-out folder")
    train.PAIR_WRITERS, train.LEAD = args.word_pairs, args.lead
    left = set(filter(None, args.without.split(",")))
    files = [f for f in corpus.corpus_files(args.corpus) if f.parent.name not in left]
    began = time.perf_counter()
    limits, multi = judge.limits_of(args.limits), train.multi_slots()
    by_writer: dict[str, dict] = {}
    if not args.held_out_only:
        seqs, rows, x = train.build(files, args.cache)
        for group in train.groups([r.writer for r in rows], args.folds):
            j = train._without(set(group), rows, x, multi, None, args.hidden)
            for w in group:
                _, held_rows, held_x = train._of(w, seqs, rows, x)
                by_writer[w] = shares(held_rows, stated(j, held_rows, held_x, limits))
            print(f"scored {', '.join(group)} ({time.perf_counter() - began:.0f} s)", flush=True)
    report: dict = {"limits": limits.__dict__, "without": sorted(left), "folds": args.folds,
                    "writers": by_writer, "summary": summary(by_writer, args.least) if by_writer else {}, "held_out": {}}
    if args.held_out:
        everyone = Judgement.load(args.limits) if args.held_out_only else train.train(rows, x, multi, hidden=args.hidden)
        for folder in args.held_out:
            hs, hr, hx = train.build(sorted(folder.glob("*.json")), args.cache)
            notes = train.simulate(everyone, hs, hr, hx, limits)
            report["held_out"][str(folder)] = {**shares(hr, stated(everyone, hr, hx, limits)), "notes": notes,
                                               "objective": round(scoring.objective(notes), 4)}
    report |= {"command": " ".join(["python", "bench/notes_instructions.py", *argv]),
               "seconds": round(time.perf_counter() - began), "machine": machine()}
    s = report["summary"]
    if s:
        print(f"out of writer ({args.folds} groups), mean (min-max) over the writers with {args.least}+ pieces:\n"
              f"  one-off instructions stated as notes: {s['instructions_stated']['mean']:.3f} "
              f"({s['instructions_stated']['min']:.3f}-{s['instructions_stated']['max']:.3f}, {s['instructions_stated']['writers']} writers)\n"
              f"  lasting preferences stated as notes:  {s['lasting_stated']['mean']:.3f} "
              f"({s['lasting_stated']['min']:.3f}-{s['lasting_stated']['max']:.3f}, {s['lasting_stated']['writers']} writers)")
    for folder, m in report["held_out"].items():
        print(f"{folder}: one-off instructions stated {m['instructions_stated']:.3f} of {m['instructions']}, lasting "
              f"preferences stated {m['lasting_stated']:.3f} of {m['lasting']}; objective {m['objective']:.3f}\n"
              + scoring.table({folder: m["notes"]}))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
