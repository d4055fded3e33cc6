"""The long-conversation corpus (bench/conversations/) and its checker: every file of every writer passes,
and each kind of broken file is named."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.scripts import ROOT, load

CHECK = load(ROOT / "bench" / "check_conversations.py")


def sample(sessions: int = 15, turns: int = 20) -> dict:
    """A conversation of the smallest size the checker takes, its questions answered by their turns."""
    conv: dict = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for n in range(1, sessions + 1):
        conv[f"session_{n}_date_time"] = f"10:{n:02d} am on {n} May, 2023"
        conv[f"session_{n}"] = [{"speaker": "Ana" if k % 2 else "Ben", "dia_id": f"D{n}:{k}",
                                 "text": f"On day {n} item {k} I bought a lamp{n}x{k} in Porto."}
                                for k in range(1, turns + 1)]
    qa: list[dict] = []
    for k in range(1, 51):
        qa.append({"question": f"What did Ana buy at turn {k}?", "answer": f"a lamp1x{k % 19 + 1}",
                   "evidence": [f"D1:{k % 19 + 1}"], "category": 4})
    for k in range(1, 16):
        qa.append({"question": f"Which lamps came at step {k}?", "answer": f"lamp2x{k} and lamp3x{k}",
                   "evidence": [f"D2:{k}", f"D3:{k}"], "category": 1})
        qa.append({"question": f"When was lamp4x{k} bought?", "answer": "4 May 2023",
                   "evidence": [f"D4:{k}"], "category": 2})
        qa.append({"question": f"What did Ben buy at step {k}?", "adversarial_answer": f"lamp5x{k}",
                   "evidence": [f"D5:{k}"], "category": 5})
    for k in range(1, 6):
        qa.append({"question": f"Does Ana like lamps ({k})?", "answer": "Likely yes",
                   "evidence": [f"D6:{k}"], "category": 3})
    return {"sample_id": "t-c1", "conversation": conv, "qa": qa}


def problems(data: object, tmp_path: Path) -> list[str]:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    found, _ = CHECK.check_file(path, set())
    return found


def test_a_well_formed_conversation_passes(tmp_path: Path) -> None:
    assert problems([sample()], tmp_path) == []


@pytest.mark.parametrize(("breakage", "message"), [
    (lambda s: s["conversation"].pop("session_7"), "without gaps"),
    (lambda s: s["conversation"].update({"session_3_date_time": "3 May 2023"}), "is not like"),
    (lambda s: s["conversation"].update({"session_3_date_time": "9:00 am on 1 April, 2023"}), "but the session before"),
    (lambda s: s["conversation"]["session_2"][4].update({"dia_id": "D2:9"}), "want 'D2:5'"),
    (lambda s: s["conversation"]["session_2"][4].update({"speaker": "Cleo"}), "neither speaker"),
    (lambda s: s["qa"][0].update({"evidence": ["D99:1"]}), "is not a turn"),
    (lambda s: s["qa"][0].update({"answer": "a bicycle"}), "is not in its evidence"),
    (lambda s: s["qa"][50].update({"evidence": ["D2:1"]}), "at least two evidence turns"),
    (lambda s: s["qa"][51].update({"answer": "lamp4x1"}), "names no date or time"),
    (lambda s: s["qa"][51].update({"answer": "4 May 2031"}), "after its evidence"),
    (lambda s: s["qa"][52].update({"answer": "x"}), "only 'adversarial_answer'"),
    (lambda s: s["qa"][52].update({"adversarial_answer": "a piano"}), "adversarial_answer 'a piano' is not"),
    (lambda s: s["qa"].append(dict(s["qa"][0])), "asked twice"),
    (lambda s: s.update({"qa": [q for q in s["qa"] if q["category"] != 3]}), "open-domain questions, want"),
])
def test_each_broken_rule_is_named(tmp_path: Path, breakage, message: str) -> None:  # type: ignore[no-untyped-def]
    broken = copy.deepcopy(sample())
    breakage(broken)
    found = problems([broken], tmp_path)
    assert any(message in p for p in found), found


def test_counting_answers_need_a_turn_per_thing_counted(tmp_path: Path) -> None:
    s = sample()
    s["qa"][0] = {"question": "How many lamps did Ana buy on day 1?", "answer": "two",
                  "evidence": ["D1:1", "D1:3"], "category": 4}
    assert problems([s], tmp_path) == []
    s["qa"][0]["answer"] = "five"
    assert any("is not in its evidence" in p for p in problems([s], tmp_path))


def test_every_corpus_file_passes_the_checker() -> None:
    files = sorted((ROOT / "bench" / "conversations").glob("*/*.json"))
    ids: set[str] = set()
    found = [p for f in files for p in CHECK.check_file(f, ids)[0]]
    assert found == []
    assert len(ids) == len(files)  # a sample per file, none named twice
