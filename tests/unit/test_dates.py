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


@pytest.mark.parametrize(("query", "expected"), [
    ("Where was John between August 11 and August 15 2023?", [("2023-08-11", "2023-08-16")]),
    ("what did I do between 11 and 15 August 2023", [("2023-08-11", "2023-08-16")]),
    ("from May 3 to May 9, 2023", [("2023-05-03", "2023-05-10")]),
    ("Where was Tim the week before 16 November 2023?", [("2023-11-09", "2023-11-16")]),
    ("and the weekend after May 7th, 2023?", [("2023-05-08", "2023-05-11")]),
])
def test_ranges_and_the_days_around_a_date(query: str, expected: list[tuple[str, str]]) -> None:
    assert days(query) == expected


def test_a_message_said_after_the_day_it_speaks_of_is_found_for_it(tmp_path) -> None:
    from hippograph.config import Settings
    from hippograph.models import MessageIn
    from hippograph.wiring import build

    service = build(Settings(data_dir=tmp_path / "data"))
    service.open()
    try:
        service.remember("dora", "s1", None, [MessageIn(
            id="m1", role="user", content="We hiked up to the old lighthouse yesterday, windy but great.",
            timestamp="2023-05-08T10:00:00Z")])
        service.remember("dora", "s2", None, [MessageIn(
            id=f"n{i}", role="user", content=f"Note {i}: the weekly groceries were delivered as usual.",
            timestamp=f"2023-05-{10 + i:02d}T10:00:00Z") for i in range(5)])
        _, _, ranked, trace = service.recall("dora", "What did Dora do on 7 May 2023?", plan_name="temporal")
        assert trace["dated"] == ["2023-05-07..2023-05-07"]
        assert "dated" in ranked[0].via and "lighthouse" in ranked[0].text  # said on the 8th, about the 7th
    finally:
        service.close()
