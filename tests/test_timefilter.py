"""since/until parsing: every rule of upstream's ``search_filters.py`` and every example its tests pin.

``now`` is pinned to 2026-03-11T18:00Z as in upstream's tests/unit/test_search_filters.py.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from openviking.errors import InvalidArgumentError
from openviking.values.timefilter import format_iso8601, parse_iso_datetime, parse_time_range

NOW = datetime(2026, 3, 11, 18, 0, tzinfo=UTC)


def bounds(since: str | None = None, until: str | None = None, time_field: str | None = None) -> dict:
    window = parse_time_range(since, until, time_field, now=NOW)
    assert window is not None
    return window.to_filter()


# ----------------------------------------------------------------------------- pinned examples
def test_pinned_since_2h() -> None:
    assert bounds(since="2h") == {"op": "time_range", "field": "updated_at", "gte": "2026-03-11T16:00:00.000Z"}


def test_pinned_dates_on_created_at() -> None:
    assert bounds(since="2026-03-10", until="2026-03-11", time_field="created_at") == {
        "op": "time_range",
        "field": "created_at",
        "gte": "2026-03-10T00:00:00.000Z",
        "lte": "2026-03-11T23:59:59.999Z",
    }


def test_pinned_absolute_until() -> None:
    assert bounds(until="2026-03-11T15:18:00Z") == {
        "op": "time_range",
        "field": "updated_at",
        "lte": "2026-03-11T15:18:00.000Z",
    }


def test_pinned_mixed_relative_and_date_is_fine() -> None:
    assert bounds(since="2h", until="2099-01-01") == {
        "op": "time_range",
        "field": "updated_at",
        "gte": "2026-03-11T16:00:00.000Z",
        "lte": "2099-01-01T23:59:59.999Z",
    }


def test_pinned_mixed_inverted_is_an_empty_window() -> None:
    # Upstream refuses it (400); here nothing is in it, which no request can make a mistake of.
    window = parse_time_range("2099-01-01", "2h", now=NOW)
    assert window is not None and window.empty
    node = window.to_filter()
    assert node["gte"] > node["lte"]  # no moment is both after the first and before the last


def test_pinned_until_date_on_created_at() -> None:
    assert bounds(until="2026-03-11", time_field="created_at")["lte"] == "2026-03-11T23:59:59.999Z"


# ----------------------------------------------------------------------------- relative forms
@pytest.mark.parametrize(
    ("value", "delta"),
    [
        ("45s", timedelta(seconds=45)),
        ("30m", timedelta(minutes=30)),  # m is minutes, not months
        ("1m", timedelta(minutes=1)),
        ("2h", timedelta(hours=2)),
        ("7d", timedelta(days=7)),
        ("2w", timedelta(weeks=2)),
        ("0h", timedelta(0)),
        ("120m", timedelta(hours=2)),
    ],
)
def test_relative_units_count_back_from_now(value: str, delta: timedelta) -> None:
    window = parse_time_range(value, None, now=NOW)
    assert window is not None
    assert window.gte == NOW - delta
    assert window.lte is None


def test_relative_until_also_counts_back() -> None:
    window = parse_time_range(None, "30m", now=NOW)
    assert window is not None
    assert window.gte is None
    assert window.lte == NOW - timedelta(minutes=30)
    assert window.to_filter()["lte"] == "2026-03-11T17:30:00.000Z"


@pytest.mark.parametrize("value", ["2H", "1.5h", "2 h", "1mo", "1y", "h", "-2h", "2hours"])
def test_not_relative_forms_are_errors(value: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        parse_time_range(value, None, now=NOW)
    assert info.value.code == "INVALID_ARGUMENT"
    assert value in info.value.message
    assert "since" in info.value.message


# ----------------------------------------------------------------------------- date-only bounds
def test_date_only_lower_bound_is_start_of_day() -> None:
    window = parse_time_range("2026-03-10", None, now=NOW)
    assert window is not None
    assert window.gte == datetime(2026, 3, 10, tzinfo=UTC)
    assert window.to_filter()["gte"].endswith("T00:00:00.000Z")


def test_date_only_upper_bound_is_end_of_day() -> None:
    window = parse_time_range(None, "2026-03-10", now=NOW)
    assert window is not None
    assert window.lte == datetime(2026, 3, 10, 23, 59, 59, 999999, tzinfo=UTC)
    assert window.to_filter()["lte"] == "2026-03-10T23:59:59.999Z"


def test_same_day_both_bounds_covers_the_whole_day() -> None:
    window = parse_time_range("2026-03-10", "2026-03-10", now=NOW)
    assert window is not None
    assert window.gte == datetime(2026, 3, 10, 0, 0, tzinfo=UTC)
    assert window.lte == datetime(2026, 3, 10, 23, 59, 59, 999999, tzinfo=UTC)
    assert window.to_filter() == {
        "op": "time_range",
        "field": "updated_at",
        "gte": "2026-03-10T00:00:00.000Z",
        "lte": "2026-03-10T23:59:59.999Z",
    }


def test_impossible_date_is_an_error() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        parse_time_range("2026-02-30", None, now=NOW)
    assert info.value.code == "INVALID_ARGUMENT"
    assert "2026-02-30" in info.value.message
    assert "since" in info.value.message


# ----------------------------------------------------------------------------- ISO 8601
def test_naive_iso_is_utc() -> None:
    assert bounds(since="2026-03-11T10:00:00")["gte"] == "2026-03-11T10:00:00.000Z"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-03-11T10:00:00Z", "2026-03-11T10:00:00.000Z"),
        ("2026-03-11T10:00:00+00:00", "2026-03-11T10:00:00.000Z"),
        ("2026-03-11T10:00:00-00:00", "2026-03-11T10:00:00.000Z"),
        ("2026-03-11T18:00:00+08:00", "2026-03-11T10:00:00.000Z"),
        ("2026-03-11T02:30:00-05:00", "2026-03-11T07:30:00.000Z"),
        ("2026-03-11T00:30:00+08:00", "2026-03-10T16:30:00.000Z"),  # crosses the date line back
    ],
)
def test_zones_are_converted_to_utc(value: str, expected: str) -> None:
    assert bounds(since=value)["gte"] == expected
    assert format_iso8601(parse_iso_datetime(value)) == expected


def test_more_than_six_fraction_digits_are_truncated() -> None:
    moment = parse_iso_datetime("2026-03-11T10:00:00.1470042Z")
    assert moment.microsecond == 147004
    assert moment.tzinfo is not None and moment.utcoffset() == timedelta(0)


def test_parse_iso_always_gives_aware_utc() -> None:
    naive = parse_iso_datetime("2026-03-11T10:00:00")
    assert naive.utcoffset() == timedelta(0)
    shifted = parse_iso_datetime("2026-03-11T18:00:00+08:00")
    assert shifted.utcoffset() == timedelta(0)
    assert shifted == datetime(2026, 3, 11, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        (datetime(2026, 3, 11, 15, 18, tzinfo=UTC), "2026-03-11T15:18:00.000Z"),
        (datetime(2026, 3, 11, 15, 18, 0, 123456, tzinfo=UTC), "2026-03-11T15:18:00.123Z"),
        (datetime(2026, 3, 11, 15, 18, 0, 999999, tzinfo=UTC), "2026-03-11T15:18:00.999Z"),  # cut, not rounded
        (datetime(2026, 3, 11, 15, 18), "2026-03-11T15:18:00.000Z"),  # naive = UTC
        (datetime(2026, 3, 11, 23, 18, tzinfo=timezone(timedelta(hours=8))), "2026-03-11T15:18:00.000Z"),
    ],
)
def test_format_is_24_chars_utc_milliseconds(moment: datetime, text: str) -> None:
    assert format_iso8601(moment) == text  # every expected text is 24 characters, UTC, ending in Z


def test_serialised_bounds_are_24_chars_and_end_in_z() -> None:
    node = bounds(since="7d", until="2026-03-11T17:59:59.5+01:00")
    for key in ("gte", "lte"):
        assert len(node[key]) == 24
        assert node[key].endswith("Z")


# ----------------------------------------------------------------------------- ordering
def test_an_inverted_range_is_empty() -> None:
    window = parse_time_range("2026-03-11", "2026-03-10", now=NOW)
    assert window is not None and window.empty
    assert window.to_filter() == {
        "op": "time_range",
        "field": "updated_at",
        "gte": "2026-03-11T00:00:00.000Z",
        "lte": "2026-03-10T23:59:59.999Z",
    }


def test_an_inverted_relative_range_is_empty() -> None:
    # since 1h ago is later than until 2h ago
    window = parse_time_range("1h", "2h", now=NOW)
    assert window is not None and window.empty


def test_a_time_outside_the_years_1_to_9999_is_the_first_or_last_moment() -> None:
    first = parse_time_range("0001-01-01T00:00+01:00", "9999-12-31T23:59-01:00", now=NOW)
    assert first is not None and first.gte == datetime.min.replace(tzinfo=UTC)
    assert first.lte == datetime.max.replace(tzinfo=UTC)
    back = parse_time_range("99999999999999999999999w", None, now=NOW)
    assert back is not None and back.gte == datetime.min.replace(tzinfo=UTC)
    assert back.to_filter()["gte"] == "0001-01-01T00:00:00.000Z"  # four digits of year, as ISO 8601 has


def test_equal_bounds_are_allowed() -> None:
    window = parse_time_range("2026-03-11T10:00:00Z", "2026-03-11T10:00:00Z", now=NOW)
    assert window is not None
    assert window.gte == window.lte == datetime(2026, 3, 11, 10, tzinfo=UTC)


# ----------------------------------------------------------------------------- time_field
@pytest.mark.parametrize("field", ["mtime", "published_at", "UPDATED_AT"])
def test_bad_time_field(field: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        parse_time_range("2h", None, field, now=NOW)
    assert info.value.code == "INVALID_ARGUMENT"
    assert "time_field must be one of: updated_at, created_at" in info.value.message


@pytest.mark.parametrize("field", [None, "", "  ", "updated_at", " updated_at "])
def test_time_field_defaults_to_updated_at(field: str | None) -> None:
    assert bounds(since="2h", time_field=field)["field"] == "updated_at"


def test_created_at_is_accepted() -> None:
    assert bounds(since="2h", time_field="created_at")["field"] == "created_at"


# ----------------------------------------------------------------------------- absent and bad values
@pytest.mark.parametrize(("since", "until"), [(None, None), ("", ""), ("  ", None), (None, "\t")])
def test_absent_bounds_give_no_filter(since: str | None, until: str | None) -> None:
    assert parse_time_range(since, until, now=NOW) is None


def test_values_are_stripped() -> None:
    assert bounds(since="  2h  ")["gte"] == "2026-03-11T16:00:00.000Z"


@pytest.mark.parametrize("value", ["not-a-time", "yesterdayish", "yesterday", "2026-13-01", "2026-03-11T25:00:00"])
def test_unreadable_values(value: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        parse_time_range(value, None, now=NOW)
    assert info.value.code == "INVALID_ARGUMENT"
    assert f"'{value}'" in info.value.message
    assert info.value.hint  # says which forms work


def test_unreadable_until_is_labelled_until() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        parse_time_range(None, "not-a-time", now=NOW)
    assert "until" in info.value.message
    assert info.value.details == {"until": "not-a-time"}


def test_default_now_is_the_current_time() -> None:
    before = datetime.now(UTC)
    window = parse_time_range("0s", None)
    after = datetime.now(UTC)
    assert window is not None and window.gte is not None
    assert before <= window.gte <= after
