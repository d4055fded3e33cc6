"""Relative dates resolved against the moment they were said."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hippograph.dates import resolve, resolve_in_text, when_said

SAID = datetime(2025, 3, 12, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize(("phrase", "expected"), [
    ("last month", "in February 2025"),
    ("this month", "in March 2025"),
    ("next month", "in April 2025"),
    ("at the start of this month", "at the start of March 2025"),
    ("last year", "in 2024"),
    ("two months ago", "in January 2025"),
    ("3 weeks ago", "in February 2025"),
    ("a year ago", "in 2024"),
    ("yesterday", "on 11 March 2025"),
    ("four days ago", "on 8 March 2025"),
    ("in November", "in November 2024"),  # a month after the current one is last year's
    ("in January", "in January 2025"),
    ("by June", "by June 2025"),
])  # fmt: skip
def test_phrases(phrase: str, expected: str) -> None:
    assert resolve(phrase, SAID) == expected


def test_in_text_and_across_a_year_end() -> None:
    assert resolve_in_text("Joined Globex last month", datetime(2025, 1, 5, tzinfo=UTC)) == \
        "Joined Globex in December 2024"
    assert resolve_in_text("Moved here in March 2019", SAID) == "Moved here in March 2019"  # already absolute
    assert resolve("sometime", SAID) is None


def test_a_note_gets_the_date_its_message_gives() -> None:
    at = datetime(2024, 12, 11, 9, 0, tzinfo=UTC)  # a Wednesday
    assert when_said("Took a staff job at LinguaBridge", "so no more freelancing from this month", at) == \
        "Took a staff job at LinguaBridge since December 2024"
    assert when_said("Reports to Farah", "since last monday i'm reporting to farah", at) == \
        "Reports to Farah since 9 December 2024"
    assert when_said("Lives in Bend", "we moved house two months ago", at) == "Lives in Bend in October 2024"
    assert when_said("Started at Lumo in June 2024", "started in june", at) == "Started at Lumo in June 2024"
    assert when_said("Lives in Bend", "we love it there", at) == "Lives in Bend"
