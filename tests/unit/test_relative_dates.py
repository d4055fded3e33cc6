"""Relative dates resolved against the moment they were said."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hippograph.dates import dates_in, resolve, resolve_in_text, when_said, with_dates

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


MONDAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


@pytest.mark.parametrize(("text", "meant"), [
    ("Went to the support group yesterday, it was powerful", [("yesterday", "7 May 2023")]),
    ("last Tuesday I finally painted that sunrise", [("last Tuesday", "2 May 2023")]),
    ("we're going camping next Friday!", [("next Friday", "12 May 2023")]),
    ("this past Saturday I ran my first 5k", [("this past Saturday", "6 May 2023")]),
    ("I started pottery two months ago", [("two months ago", "March 2023")]),
    ("last year was rough, this year is better", [("last year", "2022")]),  # this year: its own date says it
    ("I'm at the beach today", []),
    ("I watched the trilogy last night", [("last night", "7 May 2023")]),
    ("we went camping last weekend", [("last weekend", "6\u20137 May 2023")]),
    ("this past weekend was the parade", [("this past weekend", "6\u20137 May 2023")]),
    ("two weekends ago we hiked", [("two weekends ago", "29\u201330 April 2023")]),
    ("this weekend we're painting", [("this weekend", "13\u201314 May 2023")]),  # said on a Monday: coming
    ("next weekend maybe", []),  # this one or the one after: cannot be told
    ("I gave a talk at a school last week", [("last week", "1\u20137 May 2023")]),
    ("it was a great week", []),  # not "last week", and "weekend" is not "week"
    ("see you tomorrow", [("tomorrow", "9 May 2023")]),
    ("I have a gig on Friday", []),  # past or coming: cannot be told
    ("no dates in here at all", []),
])
def test_dates_a_message_says(text: str, meant: list[tuple[str, str]]) -> None:
    assert dates_in(text, MONDAY) == meant


def test_the_words_said_stay_and_the_dates_follow() -> None:
    text = "Went to the support group yesterday, it was powerful"
    assert with_dates(text, MONDAY) == f"{text} (yesterday = 7 May 2023)"
    assert with_dates("no dates here", MONDAY) == "no dates here"


def test_a_message_is_searched_by_its_dates_and_shown_with_them(tmp_path) -> None:
    from hippograph.config import Settings
    from hippograph.models import MessageIn
    from hippograph.wiring import build

    service = build(Settings(data_dir=tmp_path / "data"))
    service.open()
    try:
        service.remember("cleo", "s1", None, [
            MessageIn(id="m1", role="user", content="I adopted a kitten yesterday!", timestamp="2023-05-08T10:00:00Z"),
            MessageIn(id="m2", role="user", content="My sister lives in Porto.", timestamp="2023-05-08T10:01:00Z")])
        hits = [h for h in service.search("cleo", "7 May 2023", limit=3) if h.kind == "episode"]
        assert hits[0].text.endswith("I adopted a kitten yesterday!")  # found by the date it means
        block = service.context("cleo", "What happened on 7 May 2023?").context
        assert "I adopted a kitten yesterday! (yesterday = 7 May 2023)" in block
    finally:
        service.close()


def test_a_message_record_keeps_its_dates_and_a_record_without_them_still_shows_them() -> None:
    from hippograph.models import Episode, EpisodeKind, Role
    from hippograph.planner.retrieval import Candidate
    from hippograph.records import DATES_FIELD, episode_record

    said = Episode(id="e1", user_id="u", kind=EpisodeKind.message, role=Role.user, name="Ana",
                   content="I adopted a kitten yesterday!", timestamp=MONDAY)
    record = episode_record(said)
    assert record.extra[DATES_FIELD] == "yesterday = 7 May 2023"
    assert DATES_FIELD not in episode_record(said.model_copy(update={"kind": EpisodeKind.document})).extra
    plain = episode_record(said.model_copy(update={"content": "My sister lives in Porto."}))
    assert plain.extra[DATES_FIELD] == ""  # known to say none
    shown = f"{record.text} (yesterday = 7 May 2023)"
    kept = Candidate("e1", "episode", record.text, MONDAY, ["e1"], dates=record.extra[DATES_FIELD])
    assert kept.shown_text() == shown
    # a record written before records kept their dates: read from the text
    assert Candidate("e1", "episode", record.text, MONDAY, ["e1"]).shown_text() == shown
    assert Candidate("e2", "episode", plain.text, MONDAY, ["e2"], dates="").shown_text() == plain.text
    assert Candidate("d", "episode", record.text, MONDAY, ["d"], message=False).shown_text() == record.text
