"""Dates a query names ("on 1 May, 2022", "in July 2023", "2023-05-08"), as periods of time, and
how near a file's own time is to them.

A question about what was said on a day is best answered by the conversation of that day, or of
the days after it ("yesterday I..."): ``nearness`` is 1 inside the period and for a few days
after it, and falls off with the days beyond. A bare year counts only after a preposition
("in 2023"), so that a port or a version number (``localhost:1933``) is no date.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime, timedelta

__all__ = ["nearness", "query_periods"]

_MONTHS = {
    name: number
    for number in range(1, 13)
    for name in {calendar.month_name[number].lower(), calendar.month_abbr[number].lower()}
}
_MONTHS["sept"] = 9
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_PATTERNS = [
    re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)\b"),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I),
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I),
    re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.I),
    re.compile(rf"\b(?:in|during|of|since|before|after|until|throughout)\s+{_YEAR}\b", re.I),
]
# Inside the period and this many days after it, a file is as near as can be.
GRACE_DAYS = 3
# Beyond that, its nearness halves every this many days.
HALF_LIFE_DAYS = 7.0


def query_periods(text: str) -> list[tuple[datetime, datetime]]:
    """The periods ``text`` names, each as its first and last instant (UTC), in order."""
    found: list[tuple[int, tuple[datetime, datetime]]] = []
    taken: list[tuple[int, int]] = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue  # "1 May, 2022" is not also "May, 2022"
            period = _period(match.groupdict())
            if period is not None:
                taken.append((match.start(), match.end()))
                found.append((match.start(), period))
    return [period for _, period in sorted(found, key=lambda item: item[0])]


def _period(parts: dict[str, str | None]) -> tuple[datetime, datetime] | None:
    year = int(parts["year"] or 0)
    month_text = parts.get("month")
    if month_text is None:
        return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC) - timedelta(microseconds=1)
    month = int(month_text) if month_text.isdigit() else _MONTHS[month_text.lower()]
    if not 1 <= month <= 12:
        return None
    last_day = calendar.monthrange(year, month)[1]
    day_text = parts.get("day")
    if day_text is None:
        first = datetime(year, month, 1, tzinfo=UTC)
        return first, first + timedelta(days=last_day) - timedelta(microseconds=1)
    day = int(day_text)
    if not 1 <= day <= last_day:
        return None
    first = datetime(year, month, day, tzinfo=UTC)
    return first, first + timedelta(days=1) - timedelta(microseconds=1)


def nearness(periods: list[tuple[datetime, datetime]], when: datetime | None) -> float:
    """1.0 when ``when`` falls in one of ``periods`` (or up to ``GRACE_DAYS`` after it), less
    with each day further, 0.0 without a time."""
    if when is None or not periods:
        return 0.0
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    best = 0.0
    for first, last in periods:
        if when < first:
            days = (first - when).total_seconds() / 86400
        else:
            days = max(0.0, (when - last).total_seconds() / 86400 - GRACE_DAYS)
        best = max(best, 0.5 ** (days / HALF_LIFE_DAYS))
    return best
