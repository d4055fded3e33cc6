"""Check multi-hop document sets of MuSiQue's format (bench/multihop/README.md) and print their counts.

    python bench/check_multihop.py bench/multihop/w1 bench/multihop/w2 ...

A set is a folder with `corpus.json` (a list of {title, text}) and `questions.json` (a list of questions
in MuSiQue's format). Exits 1 and names every problem when a set breaks a rule: the shape, a title used
twice, a paragraph that is not a passage of the corpus word for word, a step whose answer its passage does
not hold, a question that names an answer of its own inner steps (the hop it should make), too few
distractors, or too few questions or passages. Standard library only, so that it runs anywhere.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

MIN_PASSAGES, MIN_QUESTIONS = 100, 30
MIN_HOPS, MAX_HOPS = 2, 4
MIN_DISTRACTORS = 8  # paragraphs of a question that do not support it
KINDS = ("bridge", "comparison")
WORD = re.compile(r"[a-z0-9]+")


def norm(text: str) -> str:
    return " ".join(WORD.findall(str(text).lower()))


def holds(passage: str, answer: str, aliases: list[str]) -> bool:
    """The passage says the answer (or one of its aliases) in so many words (case and punctuation aside)."""
    text = f" {norm(passage)} "
    return any(n and f" {n} " in text for n in (norm(a) for a in [answer, *aliases]))


def check_set(folder: Path) -> tuple[list[str], Counter]:
    problems: list[str] = []
    counts: Counter = Counter()
    try:
        corpus = json.loads((folder / "corpus.json").read_text())
        questions = json.loads((folder / "questions.json").read_text())
    except (OSError, ValueError) as exc:
        return [f"{folder}: {exc}"], counts
    if not isinstance(corpus, list) or not all(isinstance(p, dict) and {"title", "text"} <= p.keys()
                                               for p in corpus):
        return [f"{folder}/corpus.json: a list of {{title, text}} objects"], counts
    if not isinstance(questions, list):
        return [f"{folder}/questions.json: a list of questions"], counts
    titles = Counter(str(p["title"]) for p in corpus)
    problems += [f"{folder}/corpus.json: title {t!r} is used {n} times" for t, n in titles.items() if n > 1]
    text_of = {str(p["title"]): str(p["text"]) for p in corpus}
    problems += [f"{folder}/corpus.json: {t!r} has an empty text" for t, x in text_of.items() if not x.strip()]
    counts["passages"] = len(corpus)
    ids: set[str] = set()
    for n, q in enumerate(questions):
        where = f"{folder}/questions.json[{n}]"
        missing = {"id", "question", "answer", "question_decomposition", "paragraphs", "kind"} - set(q)
        if missing:
            problems.append(f"{where}: lacks {sorted(missing)}")
            continue
        where = f"{where} ({q['id']})"
        if q["id"] in ids:
            problems.append(f"{where}: the id is used twice")
        ids.add(q["id"])
        if q["kind"] not in KINDS:
            problems.append(f"{where}: kind is one of {KINDS}")
        aliases = [str(a) for a in q.get("answer_aliases") or []]
        paragraphs = q["paragraphs"]
        by_idx = {p.get("idx"): p for p in paragraphs if isinstance(p, dict)}
        if len(by_idx) != len(paragraphs) or sorted(by_idx) != list(range(len(paragraphs))):
            problems.append(f"{where}: paragraphs are objects with idx 0, 1, ... in order")
            continue
        for p in paragraphs:
            if text_of.get(str(p.get("title"))) != p.get("paragraph_text"):
                problems.append(f"{where}: paragraph {p['idx']} ({p.get('title')!r}) is not a passage of the "
                                f"corpus word for word")
        steps = q["question_decomposition"]
        if not isinstance(steps, list) or not MIN_HOPS <= len(steps) <= MAX_HOPS:
            problems.append(f"{where}: {MIN_HOPS} to {MAX_HOPS} steps in question_decomposition")
            continue
        support = {p["idx"] for p in paragraphs if p.get("is_supporting")}
        used = set()
        for k, step in enumerate(steps):
            idx = step.get("paragraph_support_idx")
            if idx not in by_idx or not by_idx[idx].get("is_supporting"):
                problems.append(f"{where}: step {k + 1} points at no supporting paragraph")
                continue
            used.add(idx)
            if not holds(by_idx[idx]["paragraph_text"], str(step.get("answer", "")), []):
                problems.append(f"{where}: step {k + 1}'s answer {step.get('answer')!r} is not in its paragraph")
        if used != support:
            problems.append(f"{where}: the supporting paragraphs are exactly those the steps point at")
        if len(used) < MIN_HOPS:
            problems.append(f"{where}: its steps need at least {MIN_HOPS} different passages")
        if q["kind"] == "bridge":
            last = steps[-1].get("paragraph_support_idx")
            if last in by_idx and not holds(by_idx[last]["paragraph_text"], str(q["answer"]), aliases):
                problems.append(f"{where}: the answer {q['answer']!r} is not in the last step's paragraph")
            asked = f" {norm(q['question'])} "
            for k, step in enumerate(steps[:-1]):
                inner = norm(str(step.get("answer", "")))
                if inner and f" {inner} " in asked:
                    problems.append(f"{where}: the question names step {k + 1}'s answer {step['answer']!r}: "
                                    f"the hop is given away")
        if len(paragraphs) - len(support) < MIN_DISTRACTORS:
            problems.append(f"{where}: at least {MIN_DISTRACTORS} paragraphs that do not support it")
        counts["questions"] += 1
        counts[f"{len(steps)}-hop"] += 1
        counts[q["kind"]] += 1
    if counts["passages"] < MIN_PASSAGES:
        problems.append(f"{folder}: {counts['passages']} passages, at least {MIN_PASSAGES}")
    if counts["questions"] < MIN_QUESTIONS:
        problems.append(f"{folder}: {counts['questions']} questions, at least {MIN_QUESTIONS}")
    return problems, counts


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    bad = 0
    total: Counter = Counter()
    for arg in argv:
        problems, counts = check_set(Path(arg))
        total += counts
        print(f"{arg}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        for p in problems:
            print(f"  {p}")
        bad += bool(problems)
    print("all: " + ", ".join(f"{k} {v}" for k, v in sorted(total.items())))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
