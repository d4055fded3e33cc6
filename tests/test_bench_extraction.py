"""`hippograph bench extraction`: the scoring on hand-made notes, and the command end to end."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from hippograph.bench.extraction import CaseSequence, matches, score_sequence, summarise
from hippograph.cli import main
from hippograph.models import Note, NoteKind

T0 = datetime(2024, 3, 4, 9, tzinfo=UTC)

SEQUENCE = CaseSequence.model_validate({
    "id": "t-1",
    "sessions": [{"session_id": "s1", "messages": [
        {"id": "m1", "role": "user", "content": "Hi!", "timestamp": "2024-03-04T09:00:00Z"},
        {"id": "m2", "role": "user", "content": "I head the EMEA sales team.", "timestamp": "2024-03-04T09:01:00Z"},
        {"id": "m3", "role": "user", "content": "Short answers please.", "timestamp": "2024-03-04T09:02:00Z"},
        {"id": "m4", "role": "user", "content": "My sister lives in Leeds.", "timestamp": "2024-03-04T09:03:00Z"}]},
        {"session_id": "s2", "messages": [
            {"id": "m5", "role": "user", "content": "I run global sales now.", "timestamp": "2024-08-01T09:00:00Z"},
            {"id": "m6", "role": "user", "content": "Forget the short answers thing.",
             "timestamp": "2024-08-01T09:01:00Z"}]}],
    "expected": {
        "current": [{"kind": "fact", "keywords": ["global", "sales"], "source": "m5"}],
        "replaced": [{"kind": "fact", "old": ["EMEA"], "new": ["global"]}],
        "retired": [{"kind": "preference", "keywords": ["short"]}],
        "no_note": ["m1", "m4"]},
})


def note(i: int, kind: NoteKind, text: str, source: str, current: bool = True) -> Note:
    return Note(id=f"n{i}", user_id="u", kind=kind, text=text, slot=f"slot{i}", valid_at=T0,
                invalid_at=None if current else T0 + timedelta(days=1), source_episode_ids=[f"ep-{source}"])


def test_keywords_take_alternatives_and_ignore_case() -> None:
    assert matches("Leads the Global Sales team", ["lead|head|run", "global"])
    assert not matches("Leads the EMEA sales team", ["lead|head|run", "global"])


def test_a_right_profile_scores_full_marks() -> None:
    notes = [note(1, NoteKind.fact, "Heads the EMEA sales team", "m2", current=False),
             note(2, NoteKind.fact, "Runs global sales", "m5"),
             note(3, NoteKind.preference, "Prefers short answers", "m3", current=False)]
    got = summarise([score_sequence(SEQUENCE, notes, {f"ep-m{i}": f"m{i}" for i in range(1, 7)})])
    assert got["all"] == {"precision": 1.0, "recall": 1.0, "tp": 1, "fp": 0, "fn": 0}
    assert got["replacement_accuracy"] == 1.0 and got["retirement_accuracy"] == 1.0
    assert got["false_note_rate"] == 0.0 and got["no_note_messages"] == 2


def test_stale_missing_and_false_notes_are_counted() -> None:
    notes = [note(1, NoteKind.fact, "Heads the EMEA sales team", "m2"),  # never replaced
             note(3, NoteKind.preference, "Prefers short answers", "m3"),  # never retired
             note(4, NoteKind.fact, "Lives in Leeds", "m4")]  # the sister's fact
    scored = score_sequence(SEQUENCE, notes, {f"ep-m{i}": f"m{i}" for i in range(1, 7)})
    got = summarise([scored])
    assert got["fact"]["recall"] == 0.0 and got["fact"]["fp"] == 2 and got["preference"]["fp"] == 1
    assert got["all"]["precision"] == 0.0
    assert got["replacement_accuracy"] == 0.0 and got["retirement_accuracy"] == 0.0
    assert scored["false_note_messages"] == ["m4"] and got["false_note_rate"] == 0.5


def test_the_command_end_to_end(tmp_path, capsys) -> None:
    cases = tmp_path / "tiny.json"
    cases.write_text(json.dumps({"split": "tiny", "sequences": [{
        "id": "tiny-1",
        "sessions": [{"session_id": "s1", "messages": [
            {"id": "m1", "role": "user", "content": "Hi there!", "timestamp": "2024-03-04T09:00:00Z"},
            {"id": "m2", "role": "user", "content": "I live in Lisbon.", "timestamp": "2024-03-04T09:01:00Z"}]}],
        "expected": {"current": [{"kind": "fact", "keywords": ["Lisbon"], "source": "m2"}], "no_note": ["m1"]}}]}))
    out = tmp_path / "report.json"
    assert main(["bench", "extraction", "--cases", str(cases), "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    tiny = report["splits"]["tiny"]
    assert (tiny["sequences"], tiny["messages"], tiny["no_note_messages"]) == (1, 2, 1)
    assert tiny["fact"]["recall"] == 1.0 and tiny["false_note_messages"] == 0
    assert tiny["extracted_by"] == {"spacy": 2}  # every message, by the extractor that really ran
    assert "| fact recall | 1.000 |" in capsys.readouterr().out
    # an earlier report prints beside this one
    assert main(["bench", "extraction", "--cases", str(cases), "--baseline", str(out)]) == 0
    assert "tiny (before)" in capsys.readouterr().out


def test_a_bad_case_file_is_a_clear_error(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"split": "x", "sequences": [{"id": "a", "sessions": [{"session_id": "s", "messages": [
        {"id": "m1", "role": "user", "content": "Hi"}]}], "expected": {"no_note": ["m9"]}}]}))
    assert main(["bench", "extraction", "--cases", str(bad)]) == 2
    assert "unknown message ids ['m9']" in capsys.readouterr().err


def test_the_shipped_cases_load() -> None:
    from hippograph.bench.extraction import DEFAULT_CASES, load_cases

    files = {p.stem: load_cases(p) for p in sorted(DEFAULT_CASES.glob("*.json"))}
    assert set(files) == {"tune", "tune_b", "tune_c", "tune_d", "tune_e", "held_out"}
    assert {f.split for f in files.values()} == set(files)  # each file is the part it is named after
    messages = sum(len(s.messages) for f in files.values() for q in f.sequences for s in q.sessions)
    roles = {m.role.value for f in files.values() for q in f.sequences for s in q.sessions for m in s.messages}
    assert messages >= 200 and roles == {"user", "assistant", "tool"}
    # a sequence is one user over several sessions, and nothing is labelled twice
    assert all(len(q.sessions) >= 2 for f in files.values() for q in f.sequences)


def test_writers_out_scores_each_writer_by_a_judgement_trained_on_the_others(tmp_path, capsys) -> None:
    """`bench extraction --writers-out` on a corpus of two writers (two sequences each): each writer's part
    goes through the pipeline with the judgement trained on the other writer, and with the one trained on
    both; the report has both, and the spread of each measure across the writers."""
    from pathlib import Path

    notes = Path(__file__).resolve().parents[1] / "bench" / "notes"
    for w in ("w3", "w6"):
        first = json.loads(min((notes / w).glob("*.json")).read_text())
        (tmp_path / "corpus" / w).mkdir(parents=True)
        (tmp_path / "corpus" / w / "part-01.json").write_text(json.dumps({**first, "sequences": first["sequences"][:2]}))
    out = tmp_path / "report.json"
    corpus = tmp_path / "corpus"
    assert main(["bench", "extraction", "--writers-out", "--corpus", str(corpus), "--cases",
                 f"{corpus / 'w3'},{corpus / 'w6'}", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert set(report["splits"]) == {"w3", "w3 (in-writer)", "w6", "w6 (in-writer)"}
    for split in report["splits"].values():
        assert split["sequences"] == 2 and split["extracted_by"] == {"spacy": split["messages"]}
        assert split["all"]["tp"] + split["all"]["fn"] > 0  # the expected notes were looked for
    assert set(report["spread"]) >= {"all precision", "false-note rate"} and report["spread_in_writer"]
    assert "leave-one-writer-out: all precision" in capsys.readouterr().out
    # a writer the corpus does not have cannot be left out of it
    (tmp_path / "other" / "w9").mkdir(parents=True)
    (tmp_path / "other" / "w9" / "part-01.json").write_text((corpus / "w3" / "part-01.json").read_text())
    assert main(["bench", "extraction", "--writers-out", "--corpus", str(corpus), "--cases",
                 str(tmp_path / "other" / "w9")]) == 2
    assert "not writers of the corpus" in capsys.readouterr().err
