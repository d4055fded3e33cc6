"""`hippograph bench locomo`: evidence recall of the context block on LoCoMo, with baselines.

Each conversation is ingested as its own user through the service the server uses (session dates as
timestamps). For every question, each method returns a context of at most `--budget` tokens, and an
evidence turn counts only if its text is inside that context (strict containment, whitespace
normalised). Categories: 4 single-hop, 1 multi-hop, 2 temporal, 3 open-domain; 5 (adversarial) is
reported apart and left out of `overall`.

`--data` takes several files and folders, each a *writer* (the hands a conversation came from): a file is
one writer, named by its stem; a folder is one writer, or one per sub-folder when it has them
(`bench/conversations` holds `w1/`, `w2/`, ...). The report gives every method per writer too, and names
each writer and category where Hippograph is behind a baseline; `--folds writers` leaves one writer out.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from hippograph.bench.common import (
    ABLATIONS,
    RANKED_BASELINES,
    MethodStats,
    bench_service,
    command_line,
    machine,
    markdown_table,
    models_used,
    pack,
    ranked_episodes,
    turn_line,
    write_report,
)
from hippograph.bench.folds import Candidate, cross_validate, markdown
from hippograph.datasets import Batch, locomo_batches
from hippograph.errors import InvalidInput
from hippograph.service import Hippograph

CATEGORIES = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain", 5: "adversarial"}
SCORED = ("single-hop", "multi-hop", "temporal", "open-domain")
COLUMNS = (*SCORED, "overall", "adversarial", "tokens_mean", "latency_p50_ms", "latency_p95_ms")
METHODS = ("hippograph", "full-context", "sliding-window", *RANKED_BASELINES)
WINDOW_RECENT, WINDOW_PINNED = 20, 3
_DIA = re.compile(r"D(\d+):(\d+)")
_SPACE = re.compile(r"\s+")


def norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


@dataclass
class Question:
    user_id: str
    text: str
    group: str
    evidence: list[str]  # normalised texts of the evidence turns
    writer: str = ""


def parse_evidence(raw: object) -> list[str]:
    """dia ids out of LoCoMo's evidence field, which has malformed entries ('D8:6; D9:17', 'D30:05')."""
    items = raw if isinstance(raw, list) else [raw]
    return [f"D{int(a)}:{int(b)}" for item in items for a, b in _DIA.findall(str(item))]


def _json_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.json") if p.is_file())


def load_samples(paths: Sequence[Path]) -> tuple[list[dict], dict[str, str]]:
    """The samples of every file and folder, and each sample's writer (by sample_id)."""
    samples: list[dict] = []
    writers: dict[str, str] = {}
    for path in paths:
        if path.is_dir():
            subs = sorted(p for p in path.iterdir() if p.is_dir() and _json_files(p))
            parts = [(sub.name, _json_files(sub)) for sub in subs] if subs else [(path.name, _json_files(path))]
        else:
            parts = [(path.stem, [path])]
        if not any(files for _, files in parts):
            raise InvalidInput(f"no LoCoMo files in {path}")
        for writer, files in parts:
            for file in files:
                try:
                    data = json.loads(file.read_text())
                except (OSError, ValueError) as exc:
                    raise InvalidInput(f"cannot read {file}: {exc}") from exc
                if not isinstance(data, list) or not data or not all(isinstance(x, dict) and "conversation" in x
                                                                     for x in data):
                    raise InvalidInput(f"{file} is not LoCoMo data (a list of samples with 'conversation')")
                for sample in data:
                    sid = str(sample.get("sample_id") or "")
                    if not sid or sid in writers:
                        raise InvalidInput(f"{file}: sample_id {sid!r} is missing or used twice")
                    writers[sid] = writer
                    samples.append(sample)
    return samples, writers


def load_questions(samples: list[dict], writers: dict[str, str] | None = None
                   ) -> tuple[list[Question], dict[str, int]]:
    questions: list[Question] = []
    skipped = {"no_evidence": 0, "unknown_turn_ids": 0, "unknown_category": 0}
    for sample in samples:
        conv = sample["conversation"]
        turns = {}
        for key, value in conv.items():
            if re.fullmatch(r"session_\d+", key) and isinstance(value, list):
                for t in value:
                    if t.get("dia_id") and str(t.get("text", "")).strip():
                        a, b = _DIA.findall(t["dia_id"])[0] if _DIA.findall(t["dia_id"]) else ("0", "0")
                        turns[f"D{int(a)}:{int(b)}"] = norm(str(t["text"]))
        for qa in sample.get("qa", []):
            group = CATEGORIES.get(qa.get("category"))
            if group is None:
                skipped["unknown_category"] += 1
                continue
            ids = parse_evidence(qa.get("evidence", []))
            known = [turns[i] for i in dict.fromkeys(ids) if i in turns]
            skipped["unknown_turn_ids"] += len(set(ids)) - len(known)
            if not known:
                skipped["no_evidence"] += 1
                continue
            sid = str(sample["sample_id"])
            questions.append(Question(sid, str(qa["question"]), group, known, (writers or {}).get(sid, "")))
    return questions, skipped


def conversation_lines(batches: list[Batch]) -> dict[str, list[str]]:
    """Each conversation in order, one line per turn, as the transcript baselines see it."""
    out: dict[str, list[str]] = {}
    for b in batches:
        out.setdefault(b.user_id, []).extend(turn_line(f"{m.name}: {m.content}" if m.name else m.content,
                                                       m.timestamp) for m in b.messages)
    return out


def recall(evidence: list[str], context: str) -> float:
    text = norm(context)
    return sum(1 for e in evidence if e in text) / len(evidence)


def run(data: Path | Sequence[Path], budget: int, out: Path | None, workdir: Path | None,
        conversations: int | None, methods: tuple[str, ...] = METHODS, ablate: bool = False,
        folds: int | str | None = None) -> dict:
    paths = [Path(data)] if isinstance(data, str | Path) else [Path(d) for d in data]
    samples, writers = load_samples(paths)
    samples = samples[:conversations] if conversations else samples
    questions, skipped = load_questions(samples, writers)
    methods = (*methods, *ABLATIONS) if ablate else methods
    stats = {m: MethodStats() for m in methods}
    by_writer = {w: {m: MethodStats() for m in methods} for w in dict.fromkeys(q.writer for q in questions)}
    with bench_service(workdir) as service:
        counter = service.counter
        batches = locomo_batches(samples)
        started = datetime.now()
        for i, b in enumerate(batches):
            service.remember(b.user_id, b.session_id, b.agent_id, b.messages)
            print(f"\ringested {i + 1}/{len(batches)} sessions", end="", file=sys.stderr)
        ingest_s = (datetime.now() - started).total_seconds()
        print(file=sys.stderr)
        transcripts = conversation_lines(batches)
        for n, q in enumerate(questions):
            lines = transcripts[q.user_id]
            for method in methods:
                st = stats[method]
                if method == "hippograph" or method in ABLATIONS:
                    def ours(q: Question = q, method: str = method) -> tuple[str, int]:
                        res = service.context(q.user_id, q.text, token_budget=budget, overrides=ABLATIONS.get(method))
                        return res.context, res.tokens
                    text = st.timed(ours)
                elif method in ("full-context", "sliding-window"):
                    def transcript(lines: list[str] = lines, method: str = method) -> tuple[str, int]:
                        if method == "sliding-window":
                            lines = lines[:WINDOW_PINNED] + lines[max(WINDOW_PINNED, len(lines) - WINDOW_RECENT):]
                        return pack(lines, counter, budget, keep="last")
                    text = st.timed(transcript)
                else:
                    mode = RANKED_BASELINES[method]

                    def ranked(q: Question = q, mode: str = mode) -> tuple[str, int]:
                        hits = ranked_episodes(service, q.user_id, q.text, mode, limit=80)
                        return pack([turn_line(h.text, h.timestamp) for h in hits], counter, budget)
                    text = st.timed(ranked)
                got = recall(q.evidence, text)
                st.add(q.group, got)
                by_writer[q.writer][method].add(q.group, got)
            if (n + 1) % 25 == 0:
                print(f"\rquestions {n + 1}/{len(questions)}", end="", file=sys.stderr)
        print(file=sys.stderr)
        cv = _cross_validate(service, questions, budget, folds) if folds else None
        models = models_used(service)
    counts = {g: sum(1 for q in questions if q.group == g) for g in CATEGORIES.values()}
    report = {
        "benchmark": "locomo",
        "command": command_line(),
        "data": [str(p) for p in paths],
        "writers": {w: sorted(s for s, x in writers.items() if x == w) for w in by_writer},
        "budget": budget,
        "conversations": len(samples),
        "questions": counts,
        "skipped": skipped,
        "ingest_s": round(ingest_s, 1),
        "machine": machine(),
        "models": models,
        "metric": "evidence recall (%): evidence turns whose text is inside the returned context",
        "results": {m: stats[m].summary([*SCORED, "adversarial"], SCORED) for m in methods},
    }
    per_writer = {w: {m: st.summary([*SCORED, "adversarial"], SCORED) for m, st in per.items()}
                  for w, per in by_writer.items()}
    lagging = behind(per_writer)
    if len(by_writer) > 1:
        report["per_writer"] = per_writer
        report["behind"] = lagging
    if cv is not None:
        report["cross_validation"] = cv
    write_report(report, out, COLUMNS)
    if len(by_writer) > 1:
        print("\noverall per writer:")
        shown = [m for m in methods if m not in ABLATIONS and m not in ("full-context", "sliding-window")]
        print(markdown_table({w: {m: r[m]["overall"] for m in shown} for w, r in per_writer.items()},
                             shown, "writer"))
        print("behind a baseline: " + ("; ".join(f"{b['writer']} {b['category']} {b['hippograph']} < "
                                                 f"{b['baseline']} {b['score']}" for b in lagging) or "nowhere"))
    if cv is not None:
        by = "writer" if folds == "writers" else "conversation"
        print(f"\n{len(cv['per_fold'])} folds by {by}:\n{markdown(cv)}")
    return report


def behind(per_writer: dict[str, dict[str, dict[str, float | int]]]) -> list[dict]:
    """Every writer and category (and overall) where Hippograph scores below one of the ranked baselines."""
    out = []
    for writer, results in per_writer.items():
        ours = results.get("hippograph")
        if ours is None:
            continue
        for category in (*SCORED, "overall"):
            for baseline in RANKED_BASELINES:
                if baseline in results and results[baseline][category] > ours[category]:
                    out.append({"writer": writer, "category": category, "hippograph": ours[category],
                                "baseline": baseline, "score": results[baseline][category]})
    return out


def conversation_folds(questions: list[Question], k: int | str) -> list[list[int]]:
    """Question indices by fold: whole conversations, dealt round-robin into k folds (k at least the
    number of conversations: leave one conversation out); k = "writers": one fold per writer."""
    if k == "writers":
        names = list(dict.fromkeys(q.writer for q in questions))
        if len(names) < 2:
            raise InvalidInput("--folds writers needs conversations of at least 2 writers in --data")
        return [[i for i, q in enumerate(questions) if q.writer == w] for w in names]
    k = int(k)
    users = list(dict.fromkeys(q.user_id for q in questions))
    if k < 2 or len(users) < 2:
        raise InvalidInput(f"--folds needs at least 2 folds of whole conversations (got {k} folds over "
                           f"{len(users)} conversations; use --conversations 2 or more)")
    fold_of = {u: i % min(k, len(users)) for i, u in enumerate(users)}
    out: list[list[int]] = [[] for _ in range(min(k, len(users)))]
    for i, q in enumerate(questions):
        out[fold_of[q.user_id]].append(i)
    return out


def _cross_validate(service: Hippograph, questions: list[Question], budget: int, k: int | str) -> dict:
    def score(i: int, c: Candidate) -> float:
        q = questions[i]
        return recall(q.evidence, service.context(q.user_id, q.text, token_budget=budget, plan_name=c.plan,
                                                  overrides=c.params).context)

    folds = conversation_folds(questions, k)
    cv = cross_validate(folds, score, [q.group for q in questions], SCORED)
    cv["fold_members"] = [sorted({questions[i].user_id for i in fold}) for fold in folds]
    if k == "writers":
        cv["fold_writers"] = [questions[fold[0]].writer for fold in folds]
    return cv
