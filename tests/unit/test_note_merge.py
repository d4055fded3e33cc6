"""Near-duplicate notes replace each other instead of piling up; different facts stay apart."""

from __future__ import annotations

import pytest

from hippograph.note_writer import near_duplicates, note_words


@pytest.mark.parametrize(("a", "b"), [
    ("Works at Acme Corp", "Works for Acme Corp now"),
    ("Loves hiking", "Loves hiking in the mountains"),
    ("Prefers tea over coffee", "Prefers tea to coffee"),
])
def test_same_thing_said_twice(a: str, b: str) -> None:
    assert near_duplicates(note_words(a), note_words(b))


@pytest.mark.parametrize(("a", "b"), [
    ("Manages the Northwest region", "Manages the Southwest region"),
    ("Lives in Seattle", "Lives in Portland"),
    ("Loves cooking Italian food", "Loves cooking Thai food"),
    ("Works at Acme Corp", "Works at Acme Labs"),
    ("Likes tea", "Prefers tea over coffee"),
])
def test_different_facts_stay_apart(a: str, b: str) -> None:
    assert not near_duplicates(note_words(a), note_words(b))
