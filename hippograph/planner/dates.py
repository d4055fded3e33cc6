"""Dates a question names ("on 9 November, 2022", "in January 2024", "2023-05-08") as time windows,
so the retriever can look at what was said then."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?|" \
         r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\.?,?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b{_MONTH}\.?,?\s+(\d{{4}})\b", re.IGNORECASE)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")


def _month(name: str) -> int:
    return next(i for i, m in enumerate(_MONTHS, 1) if m.startswith(name.lower()[:3]))


def _day(year: int, month: int, day: int) -> tuple[datetime, datetime] | None:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None
    return start, start + timedelta(days=1)


def date_windows(query: str) -> list[tuple[datetime, datetime]]:
    """[start, end) in UTC for each day or month the query names; days win over the month they are in."""
    windows: list[tuple[datetime, datetime]] = []
    spans: list[tuple[int, int]] = []
    for rx, order in ((_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy"), (_ISO, "iso")):
        for m in rx.finditer(query):
            if order == "dmy":
                window = _day(int(m[3]), _month(m[2]), int(m[1]))
            elif order == "mdy":
                window = _day(int(m[3]), _month(m[1]), int(m[2]))
            else:
                window = _day(int(m[1]), int(m[2]), int(m[3]))
            if window is not None:
                windows.append(window)
                spans.append(m.span())
    for m in _MONTH_YEAR.finditer(query):
        if any(a <= m.start() < b for a, b in spans):
            continue
        start = datetime(int(m[2]), _month(m[1]), 1, tzinfo=UTC)
        end = datetime(start.year + start.month // 12, start.month % 12 + 1, 1, tzinfo=UTC)
        windows.append((start, end))
    return list(dict.fromkeys(windows))
