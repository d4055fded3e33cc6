"""The multi-hop document sets' checker (bench/check_multihop.py): a well-formed set passes, and each kind
of broken set is named."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.scripts import ROOT, load

CHECK = load(ROOT / "bench" / "check_multihop.py")


def well_formed() -> tuple[list[dict], list[dict]]:
    """The smallest set the checker takes: films whose directors were born in towns on rivers."""
    corpus = []
    for k in range(CHECK.MIN_PASSAGES // 3 + 1):
        corpus += [{"title": f"Film {k}", "text": f"Film {k} is a drama directed by Ada Lane{k}."},
                   {"title": f"Ada Lane{k}", "text": f"Ada Lane{k} is a director born in Townsend{k}."},
                   {"title": f"Townsend{k}", "text": f"Townsend{k} is a town on the river Arlo{k}."}]
    questions = []
    for k in range(CHECK.MIN_QUESTIONS):
        film, person, town = corpus[3 * k: 3 * k + 3]
        others = [p for p in corpus if p not in (film, person, town)][: CHECK.MIN_DISTRACTORS]
        chosen = [town, *others[:4], film, *others[4:], person]
        paragraphs = [{"idx": i, "title": p["title"], "paragraph_text": p["text"],
                       "is_supporting": p in (film, person, town)} for i, p in enumerate(chosen)]
        idx = {p["title"]: p["idx"] for p in paragraphs}
        questions.append({
            "id": f"t-q{k}", "kind": "bridge", "answer": f"the river Arlo{k}", "answer_aliases": [f"Arlo{k}"],
            "question": f"On which river is the birthplace of the director of Film {k}?",
            "question_decomposition": [
                {"id": 1, "question": f"Who directed Film {k}?", "answer": f"Ada Lane{k}",
                 "paragraph_support_idx": idx[film["title"]]},
                {"id": 2, "question": "Where was she born?", "answer": f"Townsend{k}",
                 "paragraph_support_idx": idx[person["title"]]},
                {"id": 3, "question": "On which river is it?", "answer": f"the river Arlo{k}",
                 "paragraph_support_idx": idx[town["title"]]}],
            "paragraphs": paragraphs})
    return corpus, questions


def problems(corpus: object, questions: object, tmp_path: Path) -> list[str]:
    (tmp_path / "corpus.json").write_text(json.dumps(corpus))
    (tmp_path / "questions.json").write_text(json.dumps(questions))
    found, _ = CHECK.check_set(tmp_path)
    return found


def test_a_well_formed_set_passes_and_is_counted(tmp_path: Path) -> None:
    corpus, questions = well_formed()
    found, counts = problems(corpus, questions, tmp_path), CHECK.check_set(tmp_path)[1]
    assert found == []
    assert counts["questions"] == CHECK.MIN_QUESTIONS and counts["3-hop"] == CHECK.MIN_QUESTIONS
    assert counts["passages"] == len(corpus)


def _name_a_hop(c: list[dict], q: list[dict]) -> None:
    q[0]["question"] = "On which river is the birthplace of Ada Lane0?"


def _answer_elsewhere(c: list[dict], q: list[dict]) -> None:
    q[0]["question_decomposition"][1]["answer"] = "Lisbon"


def _paragraph_edited(c: list[dict], q: list[dict]) -> None:
    q[0]["paragraphs"][0]["paragraph_text"] += " It has a bridge."


def _title_twice(c: list[dict], q: list[dict]) -> None:
    c.append(dict(c[0]))


def _few_distractors(c: list[dict], q: list[dict]) -> None:
    q[0]["paragraphs"] = [dict(p, idx=i) for i, p in enumerate(p for p in q[0]["paragraphs"] if p["is_supporting"])]
    for step, title in zip(q[0]["question_decomposition"], ("Film 0", "Ada Lane0", "Townsend0"), strict=True):
        step["paragraph_support_idx"] = next(p["idx"] for p in q[0]["paragraphs"] if p["title"] == title)


def _one_hop(c: list[dict], q: list[dict]) -> None:
    q[0]["question_decomposition"] = q[0]["question_decomposition"][-1:]


def _support_unused(c: list[dict], q: list[dict]) -> None:
    next(p for p in q[0]["paragraphs"] if not p["is_supporting"])["is_supporting"] = True


def _final_answer_missing(c: list[dict], q: list[dict]) -> None:
    q[0]["answer"], q[0]["answer_aliases"] = "the Tagus", []


def _too_few_questions(c: list[dict], q: list[dict]) -> None:
    del q[1:]


@pytest.mark.parametrize(("breaks", "named"), [
    (_name_a_hop, "the hop is given away"),
    (_answer_elsewhere, "is not in its paragraph"),
    (_paragraph_edited, "not a passage of the corpus word for word"),
    (_title_twice, "is used 2 times"),
    (_few_distractors, "paragraphs that do not support it"),
    (_one_hop, "steps in question_decomposition"),
    (_support_unused, "exactly those the steps point at"),
    (_final_answer_missing, "is not in the last step's paragraph"),
    (_too_few_questions, "questions, at least"),
])
def test_each_broken_rule_is_named(tmp_path: Path, breaks, named: str) -> None:  # type: ignore[no-untyped-def]
    corpus, questions = well_formed()
    corpus, questions = copy.deepcopy(corpus), copy.deepcopy(questions)
    breaks(corpus, questions)
    found = problems(corpus, questions, tmp_path)
    assert any(named in p for p in found), found


def test_every_set_of_every_writer_passes() -> None:
    sets = sorted(p for p in (ROOT / "bench" / "multihop").iterdir() if p.is_dir())
    assert len(sets) >= 6
    total = 0
    for folder in sets:
        found, counts = CHECK.check_set(folder)
        assert found == [], (folder.name, found[:5])
        total += counts["questions"]
    assert total >= 6 * CHECK.MIN_QUESTIONS
