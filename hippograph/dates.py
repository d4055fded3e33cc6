"""Relative dates ("last month", "in March", "two weeks ago") resolved against the moment they were said,
into absolute month/year text ("in June 2024"). Notes keep what was meant, not when it was said;
retrieval can resolve a question's relative dates with the same rules."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "few": 3}
_COUNT = r"(\d{1,2}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|a few)"
_MONTH_NAMES = "|".join(MONTHS)
_RELATIVE = re.compile(
    rf"\b(?P<ago>{_COUNT}\s+(?P<unit>day|week|month|year)s?\s+ago)"
    r"|\b(?P<rel>(?P<edge>(?:at|by) the (?:start|beginning|end) of |early |late )?"
    r"(?P<which>last|this|next|past) (?P<runit>month|year|week)\b)"
    rf"|\b(?P<named>(?:in|since|from|on|by|until|back in) (?P<month>{_MONTH_NAMES})(?!\s*,?\s*\d))"
    r"|\b(?P<day>yesterday|today|tomorrow)\b",
    re.IGNORECASE,
)


def _shift_months(at: datetime, months: int) -> tuple[int, int]:
    index = at.year * 12 + at.month - 1 + months
    return index // 12, index % 12 + 1


def month_year(year: int, month: int) -> str:
    return f"{MONTHS[month - 1]} {year}"


def day_month_year(when: datetime) -> str:
    return f"{when.day} {MONTHS[when.month - 1]} {when.year}"


def _count(word: str) -> int:
    word = word.lower()
    word = word.removeprefix("a ")
    return int(word) if word.isdigit() else _NUMBERS.get(word, 1)


def resolve(phrase: str, at: datetime) -> str | None:
    """One relative phrase as absolute text: 'last month' said in July 2024 -> 'in June 2024'; None if
    the phrase is not one this module knows."""
    m = _RELATIVE.fullmatch(phrase.strip())
    return _replacement(m, at) if m else None


def _replacement(m: re.Match[str], at: datetime) -> str:
    if m["ago"]:
        n, unit = _count(m.group(2)), m["unit"].lower()
        if unit == "year":
            return f"in {at.year - n}"
        if unit == "day":
            return f"on {day_month_year(at - timedelta(days=n))}"
        when = at - timedelta(days=7 * n) if unit == "week" else None
        year, month = (when.year, when.month) if when else _shift_months(at, -n)
        return f"in {month_year(year, month)}"
    if m["rel"]:
        which, unit = m["which"].lower(), m["runit"].lower()
        step = -1 if which in ("last", "past") else 1 if which == "next" else 0
        lead = (m["edge"] or "in ").lower()
        if unit == "year":
            return f"{lead}{at.year + step}"
        if unit == "week":
            when = at + timedelta(days=7 * step)
            return f"in {month_year(when.year, when.month)}"
        year, month = _shift_months(at, step)
        return f"{lead}{month_year(year, month)}"
    if m["named"]:
        word, name = m["named"].split(" ", 1)[0], m["month"]
        month = next(i for i, n in enumerate(MONTHS, 1) if n.lower() == name.lower())
        future = word.lower() in ("by", "until")
        year = at.year + (1 if future and month < at.month else 0) - (1 if not future and month > at.month else 0)
        return f"{m['named'].rsplit(' ', 1)[0]} {month_year(year, month)}"
    day = {"yesterday": -1, "today": 0, "tomorrow": 1}[m["day"].lower()]
    return f"on {day_month_year(at + timedelta(days=day))}"


def resolve_in_text(text: str, at: datetime) -> str:
    """Every relative date of the text made absolute: 'Started at Globex last month' said on 8 July 2024
    -> 'Started at Globex in June 2024'."""
    return _RELATIVE.sub(lambda m: _replacement(m, at), text)


_ABSOLUTE = re.compile(rf"\b(?:{_MONTH_NAMES}|(?:19|20)\d\d)\b", re.IGNORECASE)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_SINCE = re.compile(r"\b(?:since|starting|as of|from)\s+(?P<phrase>(?:the (?:start|beginning) of )?"
                    r"(?:this|last) (?:week|month)|today|yesterday)\b|"
                    rf"\b(?:since|starting|as of|from)\s+(?:last\s+)?(?P<weekday>{'|'.join(_WEEKDAYS)})\b", re.IGNORECASE)


def when_said(note: str, message: str, at: datetime) -> str:
    """The note with the date the message gives for it when the note itself has none: "took a staff
    job at Initech, so no more freelancing from this month" said in December 2024 -> "... since
    December 2024"; "moved here two weeks ago" -> "... in November 2024"."""
    if _ABSOLUTE.search(note):
        return note
    if (since := _SINCE.search(message)) is not None and since["weekday"]:
        back = (at.weekday() - _WEEKDAYS.index(since["weekday"].lower())) % 7 or 7  # the last one before
        return f"{note} since {day_month_year(at - timedelta(days=back))}"
    if since is not None:
        resolved = resolve(since["phrase"], at) or ""
        return f"{note} since {resolved.split(' ', 1)[-1]}" if resolved else note
    found = _RELATIVE.search(message)
    return f"{note} {_replacement(found, at)}" if found is not None else note


_WEEKDAY_SAID = re.compile(rf"\b(?P<which>last|next|this past|this coming)\s+(?P<weekday>{'|'.join(_WEEKDAYS)})\b",
                           re.IGNORECASE)


def month_span(year: int, month: int) -> tuple[datetime, datetime]:
    """The month as [its first day, the next month's first day) in UTC."""
    start = datetime(year, month, 1, tzinfo=UTC)
    return start, datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)


def _day_span(when: datetime) -> tuple[datetime, datetime]:
    start = datetime(when.year, when.month, when.day, tzinfo=UTC)
    return start, start + timedelta(days=1)


def _week_span(when: datetime) -> tuple[datetime, datetime]:
    start = _day_span(when)[0] - timedelta(days=when.weekday())
    return start, start + timedelta(days=7)


def _shifting(text: str) -> Iterator[re.Match[str]]:
    """The relative dates of the text that move away from when it was said: not "today" or "this
    week/month/year", which the message's own date already says."""
    for m in _RELATIVE.finditer(text):
        if not ((m["day"] and m["day"].lower() == "today") or (m["which"] and m["which"].lower() == "this")):
            yield m


def _span(m: re.Match[str], at: datetime) -> tuple[datetime, datetime]:
    """The stretch of time one relative phrase of `_RELATIVE` means, said at `at` (UTC days)."""
    if m["ago"]:
        n, unit = _count(m.group(2)), m["unit"].lower()
        if unit == "day":
            return _day_span(at - timedelta(days=n))
        if unit == "week":
            return _week_span(at - timedelta(days=7 * n))
        if unit == "month":
            return month_span(*_shift_months(at, -n))
        return datetime(at.year - n, 1, 1, tzinfo=UTC), datetime(at.year - n + 1, 1, 1, tzinfo=UTC)
    if m["rel"]:
        which, unit = m["which"].lower(), m["runit"].lower()
        step = -1 if which in ("last", "past") else 1 if which == "next" else 0
        if unit == "week":
            return _week_span(at + timedelta(days=7 * step))
        if unit == "month":
            return month_span(*_shift_months(at, step))
        return datetime(at.year + step, 1, 1, tzinfo=UTC), datetime(at.year + step + 1, 1, 1, tzinfo=UTC)
    if m["named"]:
        meant = _replacement(m, at).rsplit(" ", 2)
        month = next(i for i, n in enumerate(MONTHS, 1) if n == meant[-2])
        return month_span(int(meant[-1]), month)
    day = {"yesterday": -1, "today": 0, "tomorrow": 1}[m["day"].lower()]
    return _day_span(at + timedelta(days=day))


# a word every relative date read here has: most messages have none, and one search tells
_ANY_RELATIVE = re.compile(rf"\b(?:ago|last|this|next|past|yesterday|today|tomorrow|weekends?|{_MONTH_NAMES})\b",
                           re.IGNORECASE)


# said in conversation, not in notes: "last night", "last weekend", "this past weekend", "two weekends ago",
# "this weekend" (the coming one, or the one it is). "Next weekend" is left out: this one or the one after
# cannot be told.
_NEAR_SAID = re.compile(rf"\b(?P<night>last night)\b|\b(?P<weekend>last|this past|past|this) weekend\b|"
                        rf"\b(?P<count>{_COUNT}) weekends? ago\b", re.IGNORECASE)


def _near_span(m: re.Match[str], at: datetime) -> tuple[datetime, datetime]:
    today = _day_span(at)[0]
    if m["night"]:
        return today - timedelta(days=1), today
    saturday = today - timedelta(days=(at.weekday() - 5) % 7)  # the latest Saturday, today included
    if m["weekend"] and m["weekend"].lower() == "this":
        saturday = saturday if at.weekday() >= 5 else saturday + timedelta(days=7)
    else:
        if saturday + timedelta(days=1) >= today:  # said on the weekend: the one before
            saturday -= timedelta(days=7)
        if m["count"]:
            saturday -= timedelta(days=7 * (_count(m["count"]) - 1))
    return saturday, saturday + timedelta(days=2)


def _days_text(start: datetime, end: datetime) -> str:
    """[start, end) as "6–7 May 2023", "30 April – 1 May 2023" or "7 May 2023"."""
    last = end - timedelta(days=1)
    if last.date() == start.date():
        return day_month_year(start)
    if (start.year, start.month) == (last.year, last.month):
        return f"{start.day}\u2013{day_month_year(last)}"
    first = day_month_year(start) if start.year != last.year else f"{start.day} {MONTHS[start.month - 1]}"
    return f"{first} \u2013 {day_month_year(last)}"


def spans_in(text: str, at: datetime) -> list[tuple[datetime, datetime]]:
    """The stretches of time (UTC, [start, end)) the message's relative dates mean, as `dates_in` finds
    them: "yesterday" said on 8 May 2023 is 7 May; "last week" is the Monday-to-Sunday week before;
    "last weekend" the Saturday and Sunday before."""
    if not _ANY_RELATIVE.search(text):
        return []
    return [*(_span(m, at) for m in _shifting(text)),
            *(_day_span(_weekday(m, at)) for m in _WEEKDAY_SAID.finditer(text)),
            *(_near_span(m, at) for m in _NEAR_SAID.finditer(text))]


def _weekday(m: re.Match[str], at: datetime) -> datetime:
    day = _WEEKDAYS.index(m["weekday"].lower())
    if m["which"].lower() in ("last", "this past"):
        return at - timedelta(days=(at.weekday() - day) % 7 or 7)
    return at + timedelta(days=(day - at.weekday()) % 7 or 7)


def dates_in(text: str, at: datetime) -> list[tuple[str, str]]:
    """Each relative date a message says, with the date it means when said at `at`, in the order said:
    ("yesterday", "7 May 2023"), ("last Tuesday", "2 May 2023"), ("two months ago", "March 2023"),
    ("last year", "2022"). Left out: a weekday alone ("on Friday": past or coming, it cannot be told), and
    "today" or "this week/month/year", which the message's own date already says."""
    if not _ANY_RELATIVE.search(text):
        return []
    found: list[tuple[int, str, str]] = []
    for m in _shifting(text):
        week = (m["unit"] or m["runit"] or "").lower() == "week"  # a week says its days, not its month
        meant = f"on {_days_text(*_span(m, at))}" if week else _replacement(m, at)
        found.append((m.start(), m.group(0), meant.split(" ", 1)[1] if meant.startswith(("on ", "in ")) else meant))
    for m in _WEEKDAY_SAID.finditer(text):
        found.append((m.start(), m.group(0), day_month_year(_weekday(m, at))))
    for m in _NEAR_SAID.finditer(text):
        found.append((m.start(), m.group(0), _days_text(*_near_span(m, at))))
    out = [(said, meant) for _, said, meant in sorted(found)]
    return list(dict.fromkeys(out))


def dates_said(text: str, at: datetime) -> str:
    """The dates as words to search by: "yesterday = 7 May 2023; two months ago = March 2023"."""
    return "; ".join(f"{said} = {meant}" for said, meant in dates_in(text, at))


def with_dates(text: str, at: datetime) -> str:
    """The message with what its relative dates mean added after it, so a search for the date finds it
    and a reader sees it: "I went there yesterday. (yesterday = 7 May 2023)". The words said are kept as
    they were."""
    found = dates_said(text, at)
    return f"{text} ({found})" if found else text

