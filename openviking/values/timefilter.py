"""``since``/``until`` (CLI ``--after``/``--before``) parsing, as upstream OpenViking does it.

Accepted forms, first match wins:

* relative ``^\\d+[smhdw]$`` (``m`` is minutes), counted back from now for both bounds;
* ``YYYY-MM-DD``: the whole UTC day (from 00:00:00.000 for ``since``, to 23:59:59.999 for ``until``);
* ISO 8601; without a zone it is UTC, any other zone is converted to UTC.

Unlike upstream, which refuses it, ``since`` later than ``until`` is a window nothing is in: the
API's document can say what each bound may be, not that one comes before the other. A bound
before year 1 or after 9999 in UTC is the first or the last moment there is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from openviking.errors import InvalidArgumentError

from .arguments import describe

__all__ = [
    "TIME_FIELDS",
    "TimeRange",
    "format_iso8601",
    "parse_iso_datetime",
    "parse_time_range",
]

TIME_FIELDS = ("updated_at", "created_at")
_RELATIVE = re.compile(r"^(\d+)([smhdw])$")
_DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_FRACTION = re.compile(r"(\.\d{6})\d+")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_FORMS = "since and until take 30m, 2h, 7d, 2w, YYYY-MM-DD or ISO 8601 such as 2026-03-11T15:18:00Z"


@dataclass(frozen=True, slots=True)
class TimeRange:
    """An inclusive window on ``updated_at`` or ``created_at``; a missing bound is open."""

    field: str
    gte: datetime | None
    lte: datetime | None

    def to_filter(self) -> dict[str, Any]:
        """The upstream ``time_range`` filter node, bounds serialised with ms and ``Z``."""
        node: dict[str, Any] = {"op": "time_range", "field": self.field}
        if self.gte is not None:
            node["gte"] = format_iso8601(self.gte)
        if self.lte is not None:
            node["lte"] = format_iso8601(self.lte)
        return node

    @property
    def empty(self) -> bool:
        """True when ``gte`` is later than ``lte``: no moment is inside."""
        return self.gte is not None and self.lte is not None and self.gte > self.lte


EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)


def parse_iso_datetime(value: str) -> datetime:
    """Parse ISO 8601 with a trailing ``Z`` allowed and extra fraction digits truncated.

    A value without a zone is taken as UTC; the result is always an aware UTC datetime. A moment
    outside the years 1-9999 in UTC (``0001-01-01T00:00+01:00``) is the first or the last one
    there is: nothing stored is older or newer.

    Raises:
        ValueError: not ISO 8601.
    """
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    text = _FRACTION.sub(r"\1", text)
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        return EARLIEST if moment.year == 1 else LATEST


def format_iso8601(moment: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS.mmmZ`` in UTC; a naive value counts as UTC; sub-ms digits are cut."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    # Four digits of year, also before 1000 (strftime's %Y writes year 1 as "1" on Linux).
    return f"{moment.year:04d}-" + moment.strftime("%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_time_range(
    since: str | date | None = None,
    until: str | date | None = None,
    time_field: str | None = None,
    *,
    now: datetime | None = None,
) -> TimeRange | None:
    """Turn the user's bounds into a :class:`TimeRange`, or None when both are absent.

    Raises:
        InvalidArgumentError: an unreadable bound or an unknown ``time_field`` (``since`` later
            than ``until`` is an :attr:`TimeRange.empty` window).
    """
    field = (time_field.strip() if isinstance(time_field, str) else time_field) or "updated_at"
    if field not in TIME_FIELDS:
        shown = time_field if isinstance(time_field, str) and len(time_field) <= 60 else describe(time_field)
        raise InvalidArgumentError(
            f"time_field must be one of: {', '.join(TIME_FIELDS)} (got '{shown}')",
            hint="Pass time_field='updated_at' (when the source last changed) or 'created_at' (when first added)",
            details={"time_field": shown},
        )
    since = _bound_text(since, "since")
    until = _bound_text(until, "until")
    if since is None and until is None:
        return None
    current = now if now is not None else datetime.now(UTC)
    if current.tzinfo is None:
        current = current.replace(tzinfo=UTC)
    lower = _parse_bound(since, "since", upper=False, now=current) if since else None
    upper = _parse_bound(until, "until", upper=True, now=current) if until else None
    return TimeRange(field, lower, upper)


def _bound_text(value: object, label: str) -> str | None:
    """A bound as text: a string as given, a ``datetime`` or ``date`` in ISO 8601 (a date
    covers its whole day, a datetime without a zone is UTC, as their text forms are)."""
    if value is None:
        return None
    if isinstance(value, date):  # datetime is a date too
        return value.isoformat()
    if not isinstance(value, str):
        raise InvalidArgumentError(
            f"{label} must be a string, a date or a datetime (got {type(value).__name__})",
            hint="Examples: '2h', '7d', '2026-01-31', '2026-01-31T12:00:00Z'",
            details={label: describe(value)},
        )
    return value.strip() or None


def _parse_bound(value: str, label: str, *, upper: bool, now: datetime) -> datetime:
    relative = _RELATIVE.match(value)
    if relative:
        digits, unit = relative.group(1), relative.group(2)
        amount = int(digits) if len(digits) <= 18 else 10**18  # so many units back is past year 1 anyway
        try:
            return now - timedelta(**{_UNITS[unit]: amount})
        except OverflowError:  # further back than year 1: the first moment there is
            return EARLIEST
    if _DATE_ONLY.match(value):
        try:
            day = datetime.strptime(value, "%Y-%m-%d").date()
        except ValueError as exc:
            raise InvalidArgumentError(
                f"Invalid {label} value '{_short(value)}': {exc}", details={label: _short(value)}, hint=_FORMS
            ) from exc
        clock = time(23, 59, 59, 999999) if upper else time(0, 0, 0)
        return datetime.combine(day, clock, tzinfo=now.tzinfo or UTC).astimezone(UTC)
    try:
        return parse_iso_datetime(value)
    except ValueError as exc:
        raise InvalidArgumentError(
            f"Invalid {label} value '{_short(value)}': not a relative time, a date or an ISO 8601 time",
            details={label: _short(value)},
            hint=_FORMS,
        ) from exc


def _short(text: str) -> str:
    """A bound as a message quotes it (a long one cut short)."""
    return text if len(text) <= 80 else describe(text)
