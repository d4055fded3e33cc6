"""`hippograph bench extraction`: are the long-term notes right? On labelled per-user sequences of
messages (the format is `bench/extraction/README.md`), each sequence is ingested session by session
as a fresh user through the service the server uses; then the user's notes, current and historical,
are scored against what the sequence says should be remembered:

- precision and recall of the current notes, per kind and pooled: a current note is right when it
  has the expected kind and every keyword of one expected item (one note per item);
- replacement accuracy: the new note is current and the old one is in the history, no longer current;
- retirement accuracy: a retracted note is in the history and no current note says it;
- false notes: messages that must give nothing (small talk, questions, other people's facts, tool
  results, the world's facts...) but are the source of a note.

The notes scored are those the agent is told of: a candidate (a current note less sure than the service
states, `HIPPOGRAPH_PROFILE__STATED_CONFIDENCE`) is left out, and counted (`candidates`).

Each file is scored on its own (a tuned part and a held-out part are reported side by side), and a
report of an earlier revision (`--baseline`) is printed beside this one.
"""

from __future__ import annotations

import json
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from hippograph.bench.common import bench_service, command_line, machine, models_used
from hippograph.config import Settings
from hippograph.errors import InvalidInput
from hippograph.models import MessageIn, Note, NoteKind, stable_id

if TYPE_CHECKING:
    from hippograph.service import Hippograph

KINDS = tuple(k.value for k in NoteKind)
DEFAULT_CASES = Path(__file__).resolve().parents[2] / "bench" / "extraction"


class CaseSession(BaseModel):
    session_id: str
    messages: list[MessageIn]

    @model_validator(mode="after")
    def _ids(self) -> CaseSession:
        if any(m.id is None for m in self.messages):
            raise ValueError(f"session {self.session_id}: every labelled message needs its id")
        return self


class Expected(BaseModel):
    kind: Literal["fact", "preference", "decision"]
    topic: str = ""
    keywords: list[str] = Field(min_length=1)
    source: str | None = None


class Replacement(BaseModel):
    kind: Literal["fact", "preference", "decision"]
    topic: str = ""
    old: list[str] = Field(min_length=1)
    new: list[str] = Field(min_length=1)


class Retirement(BaseModel):
    kind: Literal["fact", "preference", "decision"]
    topic: str = ""
    keywords: list[str] = Field(min_length=1)


class Expectations(BaseModel):
    current: list[Expected] = Field(default_factory=list)
    replaced: list[Replacement] = Field(default_factory=list)
    retired: list[Retirement] = Field(default_factory=list)
    no_note: list[str] = Field(default_factory=list)


class CaseSequence(BaseModel):
    id: str
    description: str = ""
    sessions: list[CaseSession] = Field(min_length=1)
    expected: Expectations

    @model_validator(mode="after")
    def _known_ids(self) -> CaseSequence:
        ids = [m.id for s in self.sessions for m in s.messages]
        if len(ids) != len(set(ids)):
            raise ValueError(f"sequence {self.id}: message ids repeat")
        unknown = [i for i in [*self.expected.no_note, *(e.source for e in self.expected.current if e.source)]
                   if i not in ids]
        if unknown:
            raise ValueError(f"sequence {self.id}: expected names unknown message ids {unknown}")
        return self


class CaseFile(BaseModel):
    split: str
    sequences: list[CaseSequence] = Field(min_length=1)


def matches(text: str, keywords: Sequence[str]) -> bool:
    """Every keyword (one of its `|` alternatives) occurs in the text, case-insensitively."""
    low = text.lower()
    return all(any(alt.strip().lower() in low for alt in kw.split("|") if alt.strip()) for kw in keywords)


def score_sequence(seq: CaseSequence, notes: Sequence[Note], source_of: dict[str, str]) -> dict:
    """The tallies of one sequence: `notes` are the user's notes (current and historical), `source_of`
    maps episode ids to the labelled message ids."""
    current = [n for n in notes if n.current]
    history = [n for n in notes if not n.current]
    tally = {k: {"tp": 0, "fp": 0, "fn": 0} for k in KINDS}
    misses: list[dict] = []
    unmatched = list(current)
    for exp in seq.expected.current:
        hit = next((n for n in unmatched if n.kind.value == exp.kind and matches(n.text, exp.keywords)), None)
        if hit is None:
            tally[exp.kind]["fn"] += 1
            misses.append({"missing": exp.model_dump(exclude_defaults=True)})
        else:
            tally[exp.kind]["tp"] += 1
            unmatched.remove(hit)
    for n in unmatched:
        tally[n.kind.value]["fp"] += 1
        misses.append({"unexpected": {"kind": n.kind.value, "text": n.text,
                                      "from": [source_of.get(e, e) for e in n.source_episode_ids]}})
    replaced = []
    for rep in seq.expected.replaced:
        ok = (any(n.kind.value == rep.kind and matches(n.text, rep.new) for n in current)
              and any(n.kind.value == rep.kind and matches(n.text, rep.old) for n in history)
              and not any(matches(n.text, rep.old) and not matches(n.text, rep.new) for n in current))
        replaced.append(ok)
        if not ok:
            misses.append({"not_replaced": rep.model_dump(exclude_defaults=True)})
    retired = []
    for ret in seq.expected.retired:
        ok = (any(matches(n.text, ret.keywords) for n in history)
              and not any(matches(n.text, ret.keywords) for n in current))
        retired.append(ok)
        if not ok:
            misses.append({"not_retired": ret.model_dump(exclude_defaults=True)})
    silent = set(seq.expected.no_note)
    false_sources = sorted({source_of[e] for n in notes for e in n.source_episode_ids
                            if source_of.get(e) in silent})
    if false_sources:
        misses.append({"false_notes_from": false_sources,
                       "notes": [n.text for n in notes if {source_of.get(e) for e in n.source_episode_ids} & silent]})
    return {"kinds": tally, "replaced": replaced, "retired": retired, "no_note": len(silent),
            "false_note_messages": false_sources, "misses": misses}


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 3) if den else None


def summarise(scored: Sequence[dict]) -> dict:
    out: dict[str, object] = {}
    pooled = {"tp": 0, "fp": 0, "fn": 0}
    for kind in KINDS:
        t = {k: sum(s["kinds"][kind][k] for s in scored) for k in pooled}
        for k in pooled:
            pooled[k] += t[k]
        out[kind] = {"precision": _ratio(t["tp"], t["tp"] + t["fp"]), "recall": _ratio(t["tp"], t["tp"] + t["fn"]),
                     **t}
    out["all"] = {"precision": _ratio(pooled["tp"], pooled["tp"] + pooled["fp"]),
                  "recall": _ratio(pooled["tp"], pooled["tp"] + pooled["fn"]), **pooled}
    replaced = [ok for s in scored for ok in s["replaced"]]
    retired = [ok for s in scored for ok in s["retired"]]
    silent = sum(s["no_note"] for s in scored)
    false = sum(len(s["false_note_messages"]) for s in scored)
    out["replacement_accuracy"] = _ratio(sum(replaced), len(replaced))
    out["replacements"] = len(replaced)
    out["retirement_accuracy"] = _ratio(sum(retired), len(retired))
    out["retirements"] = len(retired)
    out["false_note_rate"] = _ratio(false, silent)
    out["false_note_messages"] = false
    out["no_note_messages"] = silent
    return out


def load_cases(path: Path) -> CaseFile:
    """A case file; or a folder of the notes corpus (`bench/notes/README.md`), one writer's files as one
    split named after the writer."""
    if Path(path).is_dir():
        from hippograph.notes_model import corpus

        try:
            seqs = corpus.load_all(sorted(Path(path).glob("*.json")))
        except corpus.CorpusError as exc:
            raise InvalidInput(f"{path} is not a corpus folder (see bench/notes/README.md): {exc}") from exc
        if not seqs:
            raise InvalidInput(f"{path}: no corpus files (*.json) in it")
        return CaseFile.model_validate(corpus.as_cases(seqs, Path(path).name))
    try:
        return CaseFile.model_validate_json(Path(path).read_text())
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from exc
    except ValidationError as exc:
        raise InvalidInput(f"{path} is not a case file (see bench/extraction/README.md): {exc}") from exc


def run(cases: Sequence[Path], out: Path | None, workdir: Path | None, baseline: Path | None = None) -> dict:
    files = [load_cases(p) for p in cases]
    report: dict = {"command": command_line(), "machine": machine(), "splits": {}}
    with bench_service(workdir) as service:
        for path, cf in zip(cases, files, strict=True):
            report["splits"][cf.split] = score_split(service, path, cf)
        report["models"] = models_used(service)
    return _written(report, out, json.loads(Path(baseline).read_text()) if baseline else None)


def _written(report: dict, out: Path | None, earlier: dict | None = None) -> dict:
    print(table(report, earlier))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nwritten to {out}", file=sys.stderr)
    return report


def score_split(service: Hippograph, path: Path, cf: CaseFile) -> dict:
    """Each sequence of a case file ingested as a fresh user, session by session, and scored."""
    scored = []
    candidates = 0
    by: dict[str, int] = {}  # messages per extractor: an LLM that failed leaves spaCy's notes
    for seq in cf.sequences:
        user = f"{seq.id}-{uuid.uuid4().hex[:8]}"  # a fresh user, also in a reused workdir
        source_of: dict[str, str] = {}
        for session in seq.sessions:
            service.remember(user, session.session_id, None, session.messages)
            source_of.update({stable_id("ep", user, str(m.id)): str(m.id) for m in session.messages})
        notes = service.graph.list_notes(user, include_history=True)
        # what the agent is told: a candidate (a current note less sure than the service states) is not
        candidates += sum(n.current and n.confidence < service.stated for n in notes)
        notes = [n for n in notes if not n.current or n.confidence >= service.stated]
        scored.append({"id": seq.id, **score_sequence(seq, notes, source_of)})
        for ep in service.graph.get_episodes(user, list(source_of)):  # which extractor really ran
            by[ep.extractor or "none"] = by.get(ep.extractor or "none", 0) + 1
        print(f"\r{cf.split}: {len(scored)}/{len(cf.sequences)} sequences", end="", file=sys.stderr)
    print(file=sys.stderr)
    messages = sum(len(s.messages) for seq in cf.sequences for s in seq.sessions)
    return {"file": str(path), "sequences": len(cf.sequences), "messages": messages, "extracted_by": by,
            "candidates": candidates, **summarise(scored), "details": scored}


def run_writers_out(cases: Sequence[Path], out: Path | None, corpus_root: Path, cache: Path | None = None) -> dict:
    """Each writer's part of the notes corpus (a folder of `cases`) through the pipeline twice: with the
    judgement trained on every other writer of `corpus_root` (leave-one-writer-out, the split named after
    the writer) and with the one trained on every writer (in-writer, "<writer> (in-writer)"), at the
    thresholds of the packaged weights; with the spread of each measure across writers, both ways."""
    from hippograph.notes_model import corpus, scoring, train
    from hippograph.notes_model.judge import WEIGHTS

    try:
        import sklearn  # noqa: F401  (training the judgements)
    except ImportError as exc:
        raise InvalidInput("--writers-out trains the notes judgement: it needs scikit-learn "
                           "(pip install 'hippograph[train]')") from exc

    files = list(corpus.corpus_files(corpus_root))
    if not files:
        raise InvalidInput(f"no corpus files under {corpus_root}")
    parts = [load_cases(p) for p in cases]
    if any(not Path(p).is_dir() for p in cases):
        raise InvalidInput("--writers-out scores folders of the notes corpus (bench/notes/w1 ...), not case files")
    _, rows, x = train.build(files, cache)
    writers = {r.writer for r in rows}
    if missing := [cf.split for cf in parts if cf.split not in writers]:
        raise InvalidInput(f"not writers of the corpus under {corpus_root}: {', '.join(missing)}")
    multi = train.multi_slots()
    report: dict = {"command": command_line(), "machine": machine(), "corpus": str(corpus_root), "splits": {}}
    base = Settings()
    limits = (WEIGHTS / "limits.json").read_text() if (WEIGHTS / "limits.json").is_file() else None
    with tempfile.TemporaryDirectory(prefix="hippograph-judgements-") as tmp:
        everyone = Path(tmp) / "everyone"
        train.train(rows, x, multi).save(everyone)
        for path, cf in zip(cases, parts, strict=True):
            apart = Path(tmp) / cf.split
            others = [i for i, r in enumerate(rows) if r.writer != cf.split]
            train.train([rows[i] for i in others], x[others], multi).save(apart)
            for folder in (apart, everyone):  # the thresholds the package's weights came with
                if limits is not None:
                    (folder / "limits.json").write_text(limits)
            for name, weights in ((cf.split, apart), (f"{cf.split} (in-writer)", everyone)):
                settings = base.model_copy(update={"extraction": base.extraction.model_copy(
                    update={"notes": "learned", "notes_weights": weights})})
                with bench_service(None, settings) as service:
                    report["splits"][name] = score_split(service, path, cf)
                    report["models"] = models_used(service)
    out_of = {k: v for k, v in report["splits"].items() if not k.endswith("(in-writer)")}
    in_writer = {k: v for k, v in report["splits"].items() if k.endswith("(in-writer)")}
    report["spread"], report["spread_in_writer"] = scoring.spread(out_of), scoring.spread(in_writer)
    _written(report, out)
    for name, spread in (("leave-one-writer-out", report["spread"]), ("in-writer", report["spread_in_writer"])):
        print(f"\n{name}: " + "; ".join(f"{k} {v['mean']:.3f} ({v['min']:.3f}-{v['max']:.3f})"
                                        for k, v in spread.items()))
    return report


ROWS = [("fact precision", "fact", "precision"), ("fact recall", "fact", "recall"),
        ("preference precision", "preference", "precision"), ("preference recall", "preference", "recall"),
        ("decision precision", "decision", "precision"), ("decision recall", "decision", "recall"),
        ("all precision", "all", "precision"), ("all recall", "all", "recall"),
        ("replacement accuracy", "replacement_accuracy", None), ("retirement accuracy", "retirement_accuracy", None),
        ("false-note rate", "false_note_rate", None)]


def table(report: dict, earlier: dict | None = None) -> str:
    """Each split of this report (and of the earlier one, marked `before`) as columns of one table."""
    columns = [(name, split) for name, split in report["splits"].items()]
    if earlier:
        columns = [(f"{name} (before)", split) for name, split in earlier["splits"].items()] + columns
    lines = ["| measure | " + " | ".join(name for name, _ in columns) + " |", "|---|" + "---|" * len(columns)]
    for label, key, sub in ROWS:
        cells = []
        for _, split in columns:
            value = split.get(key)
            value = value.get(sub) if sub and isinstance(value, dict) else value
            cells.append("—" if value is None else f"{value:.3f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("| sequences / messages | " + " | ".join(f"{s['sequences']} / {s['messages']}" for _, s in columns)
                 + " |")
    lines.append("| messages by extractor | " + " | ".join(
        ", ".join(f"{k} {v}" for k, v in sorted(s.get("extracted_by", {}).items())) or "—" for _, s in columns) + " |")
    return "\n".join(lines)
