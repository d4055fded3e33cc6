"""The labelled notes corpus (bench/notes/) and its checker: every file of every writer passes the
checker, and the checker refuses what breaks the format, naming the problem."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from hippograph.notes_model import corpus

ROOT = Path(__file__).resolve().parents[2]
NOTES = ROOT / "bench" / "notes"

EXAMPLE = {
    "writer": "wx",
    "sequences": [{
        "id": "wx-001", "description": "account territory changes",
        "sessions": [
            {"session_id": "s1", "messages": [
                {"id": "m1", "role": "user", "timestamp": "2024-03-04T09:00:00Z",
                 "content": "Morning! I look after the Benelux accounts, can you draft a note?",
                 "labels": [{"clause": "Morning!", "act": "small_talk"},
                            {"clause": "I look after the Benelux accounts", "act": "states",
                             "slot": "responsibility", "value": ["Benelux"]},
                            {"clause": "can you draft a note?", "act": "asks"}]},
                {"id": "m2", "role": "assistant", "timestamp": "2024-03-04T09:00:20Z", "content": "Sure."}]},
            {"session_id": "s2", "messages": [
                {"id": "m3", "role": "user", "timestamp": "2024-05-13T08:10:00Z",
                 "content": "territory shuffle: the Nordics are mine. we run CI on Buildkite",
                 "labels": [{"clause": "territory shuffle: the Nordics are mine", "act": "changes",
                             "slot": "responsibility", "value": ["Nordics"]},
                            {"clause": "we run CI on Buildkite", "act": "states", "slot": "decision",
                             "subject": "CI", "value": ["Buildkite"]}]}]},
        ],
        "expected": {
            "current": [{"slot": "responsibility", "keywords": ["Nordics"], "source": "m3"},
                        {"slot": "decision", "subject": "CI", "keywords": ["Buildkite"], "source": "m3"}],
            "replaced": [{"slot": "responsibility", "old": ["Benelux"], "new": ["Nordics"]}],
            "retired": [],
        },
    }],
}


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "part-01.json"
    path.write_text(json.dumps(data))
    return path


def test_a_well_formed_file_loads_with_its_clauses_and_counts(tmp_path: Path) -> None:
    [seq] = corpus.load(_write(tmp_path, EXAMPLE))
    assert seq.writer == "wx" and [m.id for m in seq.user_messages()] == ["m1", "m3"]
    m1 = seq.user_messages()[0]
    assert [c.act for c in m1.clauses] == ["small_talk", "states", "asks"] and m1.gives_note
    assert m1.clauses[1].kind == "fact"  # from the catalogue
    counts = corpus.summary([seq])
    assert counts["user_messages"] == 2 and counts["replaced"] == 1
    assert counts["note_slots"] == {"decision": 1, "responsibility": 2}


@pytest.mark.parametrize(("change", "problem"), [
    (lambda d: d["sequences"][0]["sessions"][0]["messages"][0]["labels"][1].update(slot="territory"),
     "slot 'territory' is not in the catalogue"),
    (lambda d: d["sequences"][0]["sessions"][0]["messages"][0]["labels"][1].update(clause="I run Benelux"),
     "is not in the message's content"),
    (lambda d: d["sequences"][0]["sessions"][0]["messages"][0]["labels"][1].update(value=["Iberia"]),
     "value key word 'Iberia' is not in the message"),
    (lambda d: d["sequences"][0]["sessions"][1]["messages"][0]["labels"][1].pop("subject"),
     "needs a subject"),
    (lambda d: d["sequences"][0]["sessions"][0]["messages"][0]["labels"][0].update(act="greets"),
     "act 'greets' is not one of"),
    (lambda d: d["sequences"][0]["sessions"][0]["messages"][0].pop("labels"), "a user message needs labels"),
    (lambda d: d["sequences"][0]["expected"]["current"][0].update(source="m2"),
     "source 'm2' is not a user message"),
    (lambda d: d["sequences"][0]["sessions"][1]["messages"][0].update(timestamp="2024-01-01T00:00:00Z"),
     "timestamps go back in time"),
    (lambda d: d["sequences"][0]["sessions"][0]["messages"][0]["labels"][1].update(kind="preference"),
     "is of kind 'fact', not 'preference'"),
])
def test_a_broken_file_is_refused_with_what_is_wrong(tmp_path: Path, change, problem: str) -> None:
    data = copy.deepcopy(EXAMPLE)
    change(data)
    with pytest.raises(corpus.CorpusError) as err:
        corpus.load(_write(tmp_path, data))
    assert any(problem in p for p in err.value.problems), err.value.problems


def test_every_writers_files_pass_the_checker() -> None:
    files = list(corpus.corpus_files(NOTES))
    assert files, "no corpus files under bench/notes"
    seqs = corpus.load_all(files)
    writers = {s.writer for s in seqs}
    assert writers == {p.parent.name for p in files}  # each folder is one writer, named as its files say
    ids = [(s.writer, s.id) for s in seqs]
    assert len(ids) == len(set(ids))


def test_a_writers_folder_is_a_split_of_the_extraction_benchmark(tmp_path: Path) -> None:
    from hippograph.bench.extraction import load_cases

    folder = tmp_path / "wx"
    folder.mkdir()
    _write(folder, EXAMPLE)
    cases = load_cases(folder)
    assert cases.split == "wx"
    [seq] = cases.sequences
    assert [(e.kind, e.topic, e.keywords, e.source) for e in seq.expected.current] == [
        ("fact", "responsibility", ["Nordics"], "m3"), ("decision", "decision: CI", ["Buildkite"], "m3")]
    assert [(r.kind, r.old, r.new) for r in seq.expected.replaced] == [("fact", ["Benelux"], ["Nordics"])]
    assert seq.expected.no_note == ["m2"]  # the assistant's turn; both user messages give notes
    assert [m.role.value for s in seq.sessions for m in s.messages] == ["user", "assistant", "user"]
