"""`hippograph bench multihop`: passage recall@2 and @5 on MuSiQue or HotpotQA, with baselines.

The corpus goes in as documents of one user through the service the server uses (title + text per
passage). Each method ranks the passages for a question: Hippograph by its query planner (the plan
the heuristic picks, e.g. multi-hop with graph traversal), the baselines by BM25, dense or their
fusion over the same index. Recall@k = |top-k passages ∩ gold| / |gold|, averaged over questions, as
in the HippoRAG papers: MuSiQue's gold are its `is_supporting` paragraphs, HotpotQA's the titles in
`supporting_facts`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hippograph.bench.common import (
    ABLATIONS,
    RANKED_BASELINES,
    MethodStats,
    bench_service,
    command_line,
    machine,
    models_used,
    ranked_episodes,
    write_report,
)
from hippograph.bench.folds import Candidate, cross_validate, fold_slices, markdown
from hippograph.errors import InvalidInput
from hippograph.models import DocumentIn
from hippograph.service import Hippograph

USER = "corpus"
KS = (2, 5)
COLUMNS = ("recall@2", "recall@5", "latency_p50_ms", "latency_p95_ms")
METHODS = ("hippograph", *RANKED_BASELINES)
CANDIDATES = 60  # ranked stored pieces looked at per question (a passage may be several pieces)


@dataclass
class Passage:
    id: str
    title: str
    text: str


@dataclass
class Question:
    text: str
    gold: set[str]  # passage ids


def _read(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from exc


def load(dataset: str, questions_path: Path, corpus_path: Path) -> tuple[list[Passage], list[Question], dict]:
    raw_corpus, raw_questions = _read(corpus_path), _read(questions_path)
    if dataset == "hotpotqa":
        if not isinstance(raw_corpus, dict):
            raise InvalidInput(f"{corpus_path}: a HotpotQA corpus is an object {{title: [sentences]}}")
        passages = [Passage(f"p{i}", str(t), "".join(s) if isinstance(s, list) else str(s))
                    for i, (t, s) in enumerate(raw_corpus.items())]
    else:
        if not isinstance(raw_corpus, list):
            raise InvalidInput(f"{corpus_path}: a MuSiQue corpus is a list of {{title, text}}")
        passages = [Passage(f"p{i}", str(p.get("title", "")), str(p["text"])) for i, p in enumerate(raw_corpus)]
    by_title: dict[str, list[str]] = {}
    by_key: dict[tuple[str, str], str] = {}
    for p in passages:
        by_title.setdefault(p.title, []).append(p.id)
        by_key[(p.title, p.text.strip())] = p.id
    questions: list[Question] = []
    skipped = {"no_gold_in_corpus": 0, "gold_not_in_corpus": 0}
    for q in raw_questions:
        if dataset == "hotpotqa":
            titles = {str(t) for t, _ in q.get("supporting_facts", [])}
            gold = {pid for t in titles for pid in by_title.get(t, [])[:1]}
            missing = len(titles) - len(gold)
        else:
            sup = [p for p in q.get("paragraphs", []) if p.get("is_supporting")]
            gold = set()
            for p in sup:
                pid = by_key.get((str(p.get("title", "")), str(p.get("paragraph_text", "")).strip()))
                if pid is None and len(by_title.get(str(p.get("title", "")), [])) == 1:
                    pid = by_title[str(p["title"])][0]
                if pid is not None:
                    gold.add(pid)
            missing = len(sup) - len(gold)
        skipped["gold_not_in_corpus"] += missing
        if not gold:
            skipped["no_gold_in_corpus"] += 1
            continue
        questions.append(Question(str(q["question"]), gold))
    return passages, questions, skipped


def passages_in_order(source_ids: list[list[str]], limit: int) -> list[str]:
    """Passage ids in the order their pieces were ranked, each once."""
    out: list[str] = []
    for ids in source_ids:
        for pid in ids:
            if pid not in out:
                out.append(pid)
    return out[:limit]


def run(dataset: str, questions_path: Path, corpus_path: Path, out: Path | None, workdir: Path | None,
        limit: int | None = None, ablate: bool = False, folds: int | None = None) -> dict:
    passages, questions, skipped = load(dataset, questions_path, corpus_path)
    questions = questions[:limit] if limit else questions
    methods = (*METHODS, *ABLATIONS) if ablate else METHODS
    stats = {m: MethodStats() for m in methods}
    plans: dict[str, int] = {}
    with bench_service(workdir) as service:
        for i in range(0, len(passages), 50):
            docs = [DocumentIn(id=p.id, title=p.title or None, text=p.text) for p in passages[i:i + 50] if p.text]
            service.remember(USER, None, None, documents=docs)
            print(f"\ringested {min(i + 50, len(passages))}/{len(passages)} passages", end="", file=sys.stderr)
        print(file=sys.stderr)
        for n, q in enumerate(questions):
            for method in methods:
                ranker: Callable[[], tuple[list[str], None]]
                if method == "hippograph" or method in ABLATIONS:
                    def ranker(q: Question = q, method: str = method) -> tuple[list[str], None]:
                        plan, _, cands, _ = service.recall(USER, q.text, overrides=ABLATIONS.get(method))
                        if method == "hippograph":
                            plans[plan.name] = plans.get(plan.name, 0) + 1
                        return passages_in_order([c.source_ids for c in cands], max(KS)), None
                else:
                    def ranker(q: Question = q, mode: str = RANKED_BASELINES[method]) -> tuple[list[str], None]:
                        hits = ranked_episodes(service, USER, q.text, mode, CANDIDATES)
                        return passages_in_order([h.source_ids for h in hits], max(KS)), None
                st = stats[method]
                ranked = st.timed(ranker)
                for k in KS:
                    st.add(f"recall@{k}", len(set(ranked[:k]) & q.gold) / len(q.gold))
            print(f"\rquestions {n + 1}/{len(questions)}", end="", file=sys.stderr)
        print(file=sys.stderr)
        cv = _cross_validate(service, questions, folds) if folds else None
        models = models_used(service)
    results = {}
    for m in methods:
        summary = stats[m].summary([f"recall@{k}" for k in KS], [])
        summary.pop("tokens_mean", None)
        results[m] = summary
    report = {
        "benchmark": f"multihop/{dataset}",
        "command": command_line(),
        "questions": len(questions),
        "passages": len(passages),
        "skipped": skipped,
        "plans_chosen": plans,
        "machine": machine(),
        "models": models,
        "metric": "passage recall@k (%): top-k passages that are gold / gold passages, averaged",
        "results": results,
    }
    if cv is not None:
        report["cross_validation"] = cv
    write_report(report, out, COLUMNS)
    if cv is not None:
        for measure, result in cv.items():
            print(f"\n{folds} folds of the questions, chosen and scored on {measure}:\n{markdown(result, measure)}")
    return report


def _cross_validate(service: Hippograph, questions: list[Question], k: int) -> dict[str, dict]:
    """Per k of recall@k: the settings chosen on the other folds by that recall, scored on each fold."""
    if k < 2 or k > len(questions):
        raise InvalidInput(f"--folds must be between 2 and the number of questions ({len(questions)}), got {k}")
    ranked: dict[tuple[int, Candidate], list[str]] = {}

    def ranking(i: int, c: Candidate) -> list[str]:
        if (i, c) not in ranked:
            _, _, cands, _ = service.recall(USER, questions[i].text, plan_name=c.plan, overrides=c.params)
            ranked[(i, c)] = passages_in_order([x.source_ids for x in cands], max(KS))
        return ranked[(i, c)]

    out = {}
    for at in KS:
        def score(i: int, c: Candidate, at: int = at) -> float:
            return len(set(ranking(i, c)[:at]) & questions[i].gold) / len(questions[i].gold)
        out[f"recall@{at}"] = cross_validate(fold_slices(len(questions), k), score, ["all"] * len(questions),
                                             ["all"])
    return out
