"""Dates named in a question become time windows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hippograph.planner.dates import date_windows


def days(query: str) -> list[tuple[str, str]]:
    return [(a.date().isoformat(), b.date().isoformat()) for a, b in date_windows(query)]


@pytest.mark.parametrize(("query", "expected"), [
    ("What dish did Nate make on 9 November, 2022?", [("2022-11-09", "2022-11-10")]),
    ("What happened on May 7th, 2023?", [("2023-05-07", "2023-05-08")]),
    ("Sept 3rd 2021 and 2023-05-08", [("2021-09-03", "2021-09-04"), ("2023-05-08", "2023-05-09")]),
    ("What did John share in January 2024?", [("2024-01-01", "2024-02-01")]),
    ("in December 2022", [("2022-12-01", "2023-01-01")]),
    ("on 31 February 2022", [("2022-02-01", "2022-03-01")]),  # no such day: the month stands
    ("What did she do in 2022? Where is May?", []),  # a bare year or month names no window
])
def test_date_windows(query: str, expected: list[tuple[str, str]]) -> None:
    assert days(query) == expected


def test_windows_are_utc() -> None:
    (start, end), = date_windows("on 9 November, 2022")
    assert start == datetime(2022, 11, 9, tzinfo=UTC) and end.tzinfo == UTC
