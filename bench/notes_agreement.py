"""How far two careful readers agree on the notes of the same messages, beside the judgement on them.

A sample of a writer's sequences is labelled again, from scratch, by readers who see only the corpus format
(`bench/notes/README.md`) and the catalogue, never the labels, the code or each other's files
(`bench/notes-agreement/<writer><reader>.json`). Every labelling is then scored as `hippograph bench extraction`
scores the pipeline, against every other labelling of the same messages: a reader's `expected` block becomes the
notes it keeps (each note the clause its label names, current or in the history), and the writer's, or another
reader's, `expected` block judges them. Beside that, on the same sequences and against the same labellings:

- `model, out of writer`: the judgement trained without the writer (every other writer), at the packaged thresholds;
- `labels of <reader>, all right`: the pipeline with that reader's labels in place of its models
  (`train.simulate(gold=...)`), judged by the others.

    python bench/notes_agreement.py --cache DIR [--report bench/results/notes-agreement.json]

What two readers agree on bounds what any judgement can be shown to reach on words written by others.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from hippograph.bench.extraction import CaseFile, CaseSequence, matches, score_sequence, summarise
from hippograph.models import Note, NoteKind
from hippograph.notes_model import corpus, judge, scoring, train
from hippograph.notes_model.features import clause_rows

ROOT = Path(__file__).resolve().parents[1]
AGREEMENT = ROOT / "bench" / "notes-agreement"
ALL_RIGHT = frozenset({"act", "slot", "pair", "stated"})


def _clause_of(seq: corpus.Sequence, keywords: Sequence[str], source: str | None) -> tuple[str, str | None]:
    """The clause whose label gave a value (in `source` when named, else the last one that did), and its
    message; the keywords themselves when no clause holds them."""
    found: tuple[str, str | None] = (" ".join(k.split("|")[0] for k in keywords), source)
    for m in seq.user_messages():
        if source and m.id != source:
            continue
        for c in m.clauses:
            if c.gives_note and matches(c.text + " " + " ".join(c.value), keywords):
                found = (c.text + " (" + " ".join(c.value) + ")", m.id)
    return found


def notes_of(seq: corpus.Sequence, case: CaseSequence) -> list[Note]:
    """The notes a labelling keeps at a sequence's end (`case` is the sequence as a case, its entries with their
    kinds): its current entries, and what it replaced or retired in the history."""
    now = datetime.now(UTC)
    notes = []
    exp = case.expected
    for e in exp.current:
        text, source = _clause_of(seq, e.keywords, e.source)
        notes.append(Note(id=str(len(notes)), user_id="u", kind=NoteKind(e.kind), text=text,
                          slot=e.topic.partition(":")[0], valid_at=now, source_episode_ids=[source] if source else [],
                          confidence=1.0))
    for old, entry in [(r.old, r) for r in exp.replaced] + [(r.keywords, r) for r in exp.retired]:
        text, source = _clause_of(seq, old, None)
        notes.append(Note(id=str(len(notes)), user_id="u", kind=NoteKind(entry.kind), text=text,
                          slot=entry.topic.partition(":")[0], valid_at=now, invalid_at=now,
                          source_episode_ids=[source] if source else [], confidence=1.0))
    return notes


def agree(judged: list[corpus.Sequence], kept: list[corpus.Sequence]) -> dict:
    """The notes of labelling `kept`, scored against labelling `judged` of the same sequences."""
    by_id = {s.id: s for s in kept}
    theirs = {c.id: c for c in _cases(kept).sequences}
    scored = []
    for case in _cases(judged).sequences:
        ids = {str(m.id): str(m.id) for s in case.sessions for m in s.messages if m.id}
        scored.append({"id": case.id, **score_sequence(case, notes_of(by_id[case.id], theirs[case.id]), ids)})
    return summarise(scored)


def _cases(seqs: list[corpus.Sequence]) -> CaseFile:
    return CaseFile.model_validate(corpus.as_cases(seqs, "agreement"))


def measures(got: dict) -> dict:
    out = {m: scoring.value(got, path) for m, path in scoring.NOTE_MEASURES}
    out["objective"] = round(scoring.objective(got), 4)
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", type=Path, help="the feature matrices of `python -m hippograph.notes_model.train --cache`")
    ap.add_argument("--relabels", type=Path, default=AGREEMENT)
    ap.add_argument("--report", type=Path)
    args = ap.parse_args(argv)
    started = time.time()
    cat = corpus.catalogue()
    seqs, rows, x = train.build(list(corpus.corpus_files(train.DEFAULT_CORPUS)), args.cache)
    limits = judge.limits_of(judge.WEIGHTS)
    readers: dict[str, dict[str, list[corpus.Sequence]]] = {}
    for f in sorted(args.relabels.glob("*.json")):
        part = corpus.load(f, cat)
        writer = part[0].id.split("-")[0]
        readers.setdefault(writer, {})[f.stem] = part
    nlp, _ = train._readers()
    multi = train.multi_slots()
    report: dict = {"pairs": {}, "by writer": {}}
    pooled: dict[tuple[str, str], list[dict]] = {}
    for writer, theirs in sorted(readers.items()):
        ids = {s.id for s in next(iter(theirs.values()))}
        labellings = {writer: [s for s in seqs if s.id in ids], **theirs}
        at = [i for i, r in enumerate(rows) if r.sequence in ids]
        own_rows, own_x = [rows[i] for i in at], x[at]
        j = train._without({writer}, rows, x, multi, train.written(), train.HIDDEN)
        gold = {}  # each labelling's labels on the same pieces as the writer's (the cut reads no label)
        place = {(r.sequence, r.message, r.index): k for k, r in enumerate(own_rows)}
        for name, part in labellings.items():
            gold_rows = clause_rows(part, nlp)
            gold[name] = (part, gold_rows, own_x[[place[(r.sequence, r.message, r.index)] for r in gold_rows]])
        found = {}
        for judged_name, judged in labellings.items():
            found[(judged_name, "model, out of writer")] = train.simulate(j, judged, own_rows, own_x, limits)
            for name, labelling in labellings.items():
                if name != judged_name:
                    found[(judged_name, name)] = agree(judged, labelling)
                    found[(judged_name, f"labels of {name}, all right")] = _simulate_judged(j, *gold[name], judged,
                                                                                            limits)
        for (judged_name, name), got in found.items():
            scores = measures(got)
            report["by writer"].setdefault(writer, {})[f"{name} judged by {judged_name}"] = scores
            pooled.setdefault(_kind_of(judged_name, name, writer), []).append(scores)
            print(writer, f"{name} judged by {judged_name}", scores, flush=True)
    for kind, got in sorted(pooled.items()):
        report["pairs"][" judged by ".join(kind)] = {
            m: round(float(np.mean([g[m] for g in got if g[m] is not None])), 3) for m in got[0]} | {"n": len(got)}
    print(json.dumps(report["pairs"], indent=1))
    report["seconds"], report["load"] = round(time.time() - started), os.getloadavg()
    if args.report:
        args.report.write_text(json.dumps(report, indent=1) + "\n")
    return 0


def _kind_of(judged: str, name: str, writer: str) -> tuple[str, str]:
    """The pair's kind, pooled across writers: a reader, the model or a reader's labels; judged by the writer or
    by another reader."""
    by = "the writer" if judged == writer else "a reader"
    if name.startswith("model"):
        return ("model, out of writer", by)
    if name.startswith("labels of"):
        return ("a reader's labels, all right" if name[10:].split(",")[0] != writer else "the writer's labels", by)
    return ("the writer" if name == writer else "a reader", by)


def _simulate_judged(j: judge.Judgement, labelled: list[corpus.Sequence], gold_rows: list, x: np.ndarray,
                     judged: list[corpus.Sequence], limits: judge.Thresholds) -> dict:
    """`labelled`'s labels in place of the models, judged by `judged`'s expected blocks."""
    expected = {s.id: s for s in judged}
    swapped = [corpus.Sequence(s.writer, s.id, s.description, expected[s.id].messages, expected[s.id].expected)
               for s in labelled]
    # the rows carry `labelled`'s labels (gold); the sequences carry `judged`'s expected blocks and silent messages
    return train.simulate(j, swapped, gold_rows, x, limits, ALL_RIGHT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
