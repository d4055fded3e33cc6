"""Clause cuts learned from the corpus's writers against the rule's, out of writer.

The notes judgement reads a message clause by clause (`notes_model.segment`). The rule cuts a sentence where a
coordinated verb with its own subject starts; `segment.Bounds` is a regression learned from where the writers
of the notes corpus start their clauses. For each group of writers (`train.groups`), the cut is learned without
them, every writer's messages are cut with it, the judgement is trained on the other groups' pieces and the
notes it keeps over this group's sequences are scored (`train.simulate`) at the packaged thresholds, and with
--choose at thresholds chosen on that cut's parts. The rule's cut is scored the same way, in the same run,
unless --cuts says otherwise.

    python bench/notes_bounds.py --cache DIR [--threshold 0.4] [--report bench/results/notes-bounds.json]

`--cache`: a folder of `python -m hippograph.notes_model.train --cache` (its per-file feature matrices are
read for the vectors of texts they hold; new pieces are embedded).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from hippograph.notes_model import corpus, judge, scoring, train
from hippograph.notes_model.features import DIM, clause_rows, clause_starts, matrix, parsed
from hippograph.notes_model.segment import fit_bounds


class Vectors:
    """MiniLM vectors by text, seeded from kept feature matrices, the rest embedded once."""

    def __init__(self, embed) -> None:
        self.known: dict[str, np.ndarray] = {}
        self.embed_ = embed
        self.made = 0

    def seed(self, rows, x: np.ndarray) -> None:
        for r, v in zip(rows, x, strict=True):
            self.known.setdefault(r.text, v[:DIM])
            self.known.setdefault(r.content, v[DIM:2 * DIM])
            if r.previous:
                self.known.setdefault(r.previous, v[2 * DIM:3 * DIM])

    def __call__(self, texts):
        missing = [t for t in texts if t not in self.known]
        if missing:
            for t, v in zip(missing, np.asarray(self.embed_(missing), dtype=np.float32), strict=True):
                self.known[t] = v
            self.made += len(missing)
        return [self.known[t] for t in texts]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", type=Path, required=True)
    ap.add_argument("--threshold", type=float, default=0.4)
    ap.add_argument("--cuts", default="rule,learned")
    ap.add_argument("--folds", type=int, default=train.FOLDS)
    ap.add_argument("--report", type=Path)
    ap.add_argument("--choose", action="store_true",
                    help="also choose each cut's own thresholds on its out-of-writer parts (`train.choose_limits`)")
    args = ap.parse_args(argv)
    started = time.time()
    nlp, embed = train._readers()
    vectors = Vectors(embed)
    files = list(corpus.corpus_files(train.DEFAULT_CORPUS))
    cat = corpus.catalogue()
    seqs, docs = [], []
    for f in files:  # parsed once; the rule's pieces seed the vectors from the kept matrices
        part = corpus.load(f, cat)
        d = parsed(part, nlp)
        kept = args.cache / f"notes-{train.FEATURES_VERSION}-{train._corpus_key([f])}.npy"
        if kept.is_file():
            r = clause_rows(part, nlp, docs=d)
            x = np.load(kept)
            if len(x) == len(r):
                vectors.seed(r, x)
        seqs += part
        docs += d
    print(f"parsed {len(docs)} messages, {len(vectors.known)} vectors kept ({time.time() - started:.0f} s)", flush=True)
    starts = clause_starts(seqs, docs)
    multi = train.multi_slots()
    limits = judge.limits_of(judge.WEIGHTS)
    writers = sorted({s.writer for s in seqs})
    report: dict = {"threshold": args.threshold, "limits": limits.__dict__, "folds": args.folds}
    for cut in args.cuts.split(","):
        notes: dict[str, dict] = {}
        parts: dict = {}
        pieces = 0
        for group in train.groups(writers, args.folds):
            t = time.time()
            bounds = None
            if cut == "learned":
                bounds = fit_bounds([e for e in starts if e[0] not in group], args.threshold)
            rows = clause_rows(seqs, nlp, bounds, docs)
            x = matrix(rows, vectors)
            j = train._without(set(group), rows, x, multi, None)
            for w in group:
                parts[w] = (j, *train._of(w, seqs, rows, x))
                notes[w] = train.simulate(*parts[w], limits)
                pieces += len(parts[w][2])
            print(f"{cut}: group {group[0]}.. {time.time() - t:.0f} s, {vectors.made} texts embedded", flush=True)
        objective = {w: round(scoring.objective(m), 4) for w, m in notes.items()}
        report[cut] = {"notes": notes, "spread": scoring.spread(notes), "objective": objective, "pieces": pieces,
                       "objective_mean": round(float(np.mean(list(objective.values()))), 4)}
        print(f"{cut} cut ({pieces} pieces): objective {report[cut]['objective_mean']}\n" + scoring.table(notes), flush=True)
        if args.choose:  # its own thresholds, chosen as the packaged ones were on the rule's cut
            chosen, _ = train.choose_limits(parts)
            again = {w: train.simulate(*p, chosen) for w, p in parts.items()}
            mine = {w: round(scoring.objective(m), 4) for w, m in again.items()}
            report[cut]["chosen"] = {"limits": chosen.__dict__, "notes": again, "spread": scoring.spread(again),
                                     "objective": mine, "objective_mean": round(float(np.mean(list(mine.values()))), 4)}
            print(f"{cut} cut at the thresholds chosen on it {chosen.__dict__}: objective "
                  f"{report[cut]['chosen']['objective_mean']}\n" + scoring.table(again), flush=True)
        if args.report:  # kept after each cut: a long run stopped halfway keeps what it measured
            args.report.write_text(json.dumps(report, indent=1) + "\n")
    if "rule" in report and "learned" in report:
        a, b = report["rule"]["objective"], report["learned"]["objective"]
        report["learned_better_on"] = sum(b[w] > a[w] for w in a)
        print(f"learned cut better on {report['learned_better_on']} of {len(a)} writers")
    report["seconds"] = round(time.time() - started)
    report["load"] = os.getloadavg()
    if args.report:
        args.report.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
