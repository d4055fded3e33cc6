"""Which current note a new one replaces when the user names the old value in a change."""

from __future__ import annotations

from datetime import UTC, datetime

from hippograph.models import Note, NoteKind
from hippograph.note_changes import named_old

AT = datetime(2025, 3, 1, tzinfo=UTC)


def note(kind: NoteKind, text: str, slot: str, source: str = "ep1") -> Note:
    return Note(id=f"note-{slot}", user_id="u", kind=kind, text=text, slot=slot, valid_at=AT,
                source_episode_ids=[source])


CURRENT = [note(NoteKind.decision, "Decided to track bugs in Jira", "decision:track:bug"),
           note(NoteKind.fact, "Works at Acme", "fact:work_at"),
           note(NoteKind.preference, "Wants the assistant to text them, not call", "preference:contact_channel")]


def test_the_old_value_named_in_a_change_is_replaced() -> None:
    old = named_old(NoteKind.decision, "decision:go_with:linear", "Decided to go with Linear",
                    "we went with Linear instead of Jira after all", CURRENT, "ep9")
    assert old is not None and old.text == "Decided to track bugs in Jira"
    old = named_old(NoteKind.fact, "fact:be_at:initech", "Has been at Initech for two weeks",
                    "quick update, left acme, been at initech two weeks now", CURRENT, "ep9")
    assert old is not None and old.slot == "fact:work_at"


def test_no_change_words_or_another_kind_replace_nothing() -> None:
    assert named_old(NoteKind.decision, "decision:x", "Decided to use Linear for roadmaps",
                     "Linear for roadmaps, Jira for bugs", CURRENT, "ep9") is None
    assert named_old(NoteKind.fact, "fact:use:jira", "Uses Jira daily", "I no longer mind Jira", CURRENT, "ep9") is None


def test_two_known_subjects_never_replace_each_other() -> None:
    assert named_old(NoteKind.preference, "preference:name", "Wants to be called Sam",
                     "Please call me Sam, not Samantha", CURRENT, "ep9") is None


def test_a_note_of_the_same_message_is_not_replaced() -> None:
    same = [note(NoteKind.fact, "Works at Acme", "fact:work_at", source="ep9")]
    assert named_old(NoteKind.fact, "fact:x", "Left Acme", "left acme", same, "ep9") is None


def test_a_retraction_names_the_closest_note_not_any_sharing_a_word() -> None:
    from hippograph.note_changes import retracted
    from hippograph.vectors.embedders import OnnxMiniLMEmbedder

    notes = [note(NoteKind.fact, "Runs a small pizza place in Leith", "fact:run:pizza place"),
             note(NoteKind.decision, "Decided to stop the late pizza nights", "decision:stop:pizza night"),
             note(NoteKind.preference, "Wants the assistant to keep your replies short", "preference:answer_length")]
    embed = OnnxMiniLMEmbedder().embed
    assert [n.slot for n in retracted("late pizza night", notes, embed)] == ["decision:stop:pizza night"]
    assert [n.slot for n in retracted("to keep it brief", notes, embed)] == ["preference:answer_length"]
    assert retracted("weekly digest", notes, embed) == []
    # without an embedder: the notes sharing the most words, at least half of the topic's
    assert [n.slot for n in retracted("late pizza night", notes)] == ["decision:stop:pizza night"]


def test_a_word_said_in_passing_names_no_old_value() -> None:
    grams = [note(NoteKind.preference, "Wants all weights in grams", "preference:do:weight")]
    assert named_old(NoteKind.preference, "preference:answer_length", "Wants short replies",
                     "keep your replies short, I'm reading with flour all over my hands", grams, "ep9") is None
