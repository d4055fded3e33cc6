"""Dates a question names ("on 9 November, 2022", "in January 2024", "2023-05-08") as time windows,
so the retriever can look at what was said then."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from hippograph.dates import month_span

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?|" \
         r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\.?,?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b{_MONTH}\.?,?\s+(\d{{4}})\b", re.IGNORECASE)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
# "between August 11 and August 15, 2023", "between 11 and 15 August 2023", "from May 3 to May 9 2023"
_RANGE_MDY = re.compile(rf"\b(?:between|from)\s+{_MONTH}\.?\s+{_DAY}\s+(?:and|to|until)\s+(?:{_MONTH}\.?\s+)?{_DAY},?"
                        rf"\s+(\d{{4}})\b", re.IGNORECASE)
_RANGE_DMY = re.compile(rf"\b(?:between|from)\s+{_DAY}(?:\s+(?:of\s+)?{_MONTH}\.?)?\s+(?:and|to|until)\s+{_DAY}\s+"
                        rf"(?:of\s+)?{_MONTH}\.?,?\s+(\d{{4}})\b", re.IGNORECASE)
_AROUND = re.compile(r"\bthe\s+(week|weekend|few days)\s+(before|after)\s+(?:the\s+)?$", re.IGNORECASE)


def _month(name: str) -> int:
    return next(i for i, m in enumerate(_MONTHS, 1) if m.startswith(name.lower()[:3]))


def _day(year: int, month: int, day: int) -> tuple[datetime, datetime] | None:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None
    return start, start + timedelta(days=1)


def date_windows(query: str) -> list[tuple[datetime, datetime]]:
    """[start, end) in UTC for each day or month the query names, a range of days ("between August 11 and
    15, 2023"), or the days around one ("the week before 16 November 2023"); days win over the month
    they are in."""
    windows: list[tuple[datetime, datetime]] = []
    spans: list[tuple[int, int]] = []
    for m in (*_RANGE_MDY.finditer(query), *_RANGE_DMY.finditer(query)):
        year = int(m.groups()[-1])
        if m.re is _RANGE_MDY:
            first, last = _day(year, _month(m[1]), int(m[2])), _day(year, _month(m[3] or m[1]), int(m[4]))
        else:
            first, last = _day(year, _month(m[2] or m[4]), int(m[1])), _day(year, _month(m[4]), int(m[3]))
        if first is not None and last is not None and first[0] <= last[0]:
            windows.append((first[0], last[1]))
            spans.append(m.span())
    for rx, order in ((_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy"), (_ISO, "iso")):
        for m in rx.finditer(query):
            if order == "dmy":
                window = _day(int(m[3]), _month(m[2]), int(m[1]))
            elif order == "mdy":
                window = _day(int(m[3]), _month(m[1]), int(m[2]))
            else:
                window = _day(int(m[1]), int(m[2]), int(m[3]))
            if window is not None and not any(a <= m.start() < b for a, b in spans):
                windows.append(_around(query[:m.start()], window))
                spans.append(m.span())
    for m in _MONTH_YEAR.finditer(query):
        if any(a <= m.start() < b for a, b in spans):
            continue
        windows.append(month_span(int(m[2]), _month(m[1])))
    return list(dict.fromkeys(windows))


def _around(before: str, day: tuple[datetime, datetime]) -> tuple[datetime, datetime]:
    """"the week before 16 November 2023": the seven days before it; "the weekend after": the three
    days after; otherwise the day itself."""
    m = _AROUND.search(before)
    if m is None:
        return day
    length = timedelta(days={"week": 7, "weekend": 3, "few days": 4}[m[1].lower()])
    return (day[0] - length, day[0]) if m[2].lower() == "before" else (day[1], day[1] + length)
