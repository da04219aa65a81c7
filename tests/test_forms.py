"""Each form the OpenAPI document and the MCP schemas state (openviking/contract/forms.py) is what the
check that decides takes: every value the form allows, the check takes (so a client that
follows the document is never refused), and a value the check refuses the form refuses too.
Values are drawn from each form's regular expression and at random; the form is read as both
JSON Schema validators read it (Python's, the MCP SDK's, and the Rust one schemathesis uses).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import jsonschema
import jsonschema_rs
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from openviking.contract import forms
from openviking.contract.evaluation import check_queries
from openviking.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    InvalidURIError,
    OpenVikingError,
    PermissionDeniedError,
)
from openviking.ingest.memories import memory_uri
from openviking.ingest.walk import looks_binary
from openviking.retrieve.glob import compile_glob
from openviking.session.sessions import validate_session_id
from openviking.store import filters, schema
from openviking.store.filters import check_filter, levels_from
from openviking.store.snapshots import check_name
from openviking.values.access import Access
from openviking.values.tags import normalize_tags
from openviking.values.timefilter import parse_time_range
from openviking.values.uri import parse, session_id_of

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Text that is near the forms: their own characters, and a few that break them.
NEAR = st.text(st.sampled_from("viking:/resourcesuserag~nt.@_-=,0129Tt:Z+ \t\n\x00\x7f\\?AaéL"), max_size=40)


def both_validators(form: dict[str, Any]) -> Callable[[Any], bool]:
    """Whether a value is valid to both validators (which must agree)."""
    python = jsonschema.Draft202012Validator(form)
    rust = jsonschema_rs.validator_for(form)

    def valid(value: Any) -> bool:
        verdicts = python.is_valid(value), rust.is_valid(value)
        assert verdicts[0] == verdicts[1], (form, value, verdicts)
        return verdicts[0]

    return valid


def matching(pattern: str) -> st.SearchStrategy[str]:
    return st.from_regex(re.compile(pattern), fullmatch=False).filter(both_validators(_string(pattern)))


def _string(pattern: str) -> dict[str, Any]:
    return {"type": "string", "pattern": pattern}


def takes(check: Callable[[], Any]) -> bool:
    try:
        check()
    except (InvalidArgumentError, InvalidURIError):
        return False
    return True


# ----------------------------------------------------------------------------- whitespace
def test_the_whitespace_class_is_what_strip_takes() -> None:
    blank = re.compile(f"[{forms.WHITESPACE}]")
    for code in range(0x110000):
        char = chr(code)
        assert bool(blank.fullmatch(char)) == char.isspace(), hex(code)


@SETTINGS
@given(st.text(max_size=5) | NEAR)
def test_not_blank_is_a_text_with_more_than_whitespace(text: str) -> None:
    assert both_validators(_string(forms.NOT_BLANK))(text) == bool(text.strip())
    assert both_validators(_string(forms.EMPTY_OR_NOT_BLANK))(text) == (text == "" or bool(text.strip()))


# ----------------------------------------------------------------------------- URIs
def read_check(uri: str) -> None:
    """What a read of ``uri`` checks before it looks anything up: the URI, and a session's id."""
    parsed = parse(uri, user="default")
    for user in ("default", parsed.segments[1] if parsed.segments[:1] == ("user",) and parsed.depth > 1 else ""):
        sid = session_id_of(parsed, user) if user else ""
        if sid:
            validate_session_id(sid)


@SETTINGS
@given(matching(forms.URI))
@example("viking://session/20261207-101010-abc")
@example("viking://user/alice/sessions/s.1")
def test_a_uri_the_form_allows_is_read(uri: str) -> None:
    try:
        read_check(uri)
    except PermissionDeniedError:  # pragma: no cover - the form leaves out what parse refuses
        pytest.fail(f"{uri!r} is refused")


@SETTINGS
@given(NEAR.map(lambda text: "viking://" + text) | NEAR)
def test_a_uri_a_read_refuses_the_form_refuses(uri: str) -> None:
    try:
        read_check(uri)
        taken = True
    except OpenVikingError:
        taken = False
    if not taken:
        assert not both_validators(_string(forms.URI))(uri), uri


@SETTINGS
@given(matching(forms.ENTRY))
@example("viking://~/notes/a.md")
def test_an_entry_the_form_allows_may_be_written(uri: str) -> None:
    parsed = parse(uri, user="default")
    assert parsed.depth >= 2
    owner = parsed.segments[1] if parsed.segments[0] == "user" else "default"
    Access(owner).writable(parsed)


@SETTINGS
@given(matching(forms.TARGET) | NEAR)
def test_a_target_is_a_uri_or_nothing(text: str) -> None:
    valid = both_validators(_string(forms.TARGET))
    if valid(text):
        assert text == "" or both_validators(_string(forms.URI))(text)


def test_a_list_of_uris_holds_one_at_least() -> None:
    valid = both_validators(forms.URIS)
    assert valid("viking://resources/a") and valid(["viking://resources/a"])
    assert not valid([]) and not valid(["viking://nowhere"])


# ----------------------------------------------------------------------------- times
@SETTINGS
@given(matching(forms.TIME))
@example("0001-01-01T00:00+01:00")
@example("9999-12-31T23:59-23:59")
@example("99999999999999999999999w")
@example("2024-02-29")
def test_a_time_the_form_allows_is_taken(text: str) -> None:
    parse_time_range(since=text, now=datetime(2026, 3, 11, 16, tzinfo=UTC))
    parse_time_range(until=text, now=datetime(2026, 3, 11, 16, tzinfo=UTC))


@SETTINGS
@given(NEAR | st.text(st.sampled_from("0123456789-T:Z+.smhdw"), max_size=30))
@example("2023-02-29")
@example("0000-01-01")
def test_a_time_refused_is_refused_by_the_form(text: str) -> None:
    if not takes(lambda: parse_time_range(since=text)):
        assert not both_validators(_string(forms.TIME_OR_BLANK))(text), text


def test_since_later_than_until_is_an_empty_window() -> None:
    window = parse_time_range(since="2026-03-02", until="2026-03-01")
    assert window is not None and window.empty


# ----------------------------------------------------------------------------- names
@SETTINGS
@given(st.text(st.sampled_from("aZ09._-^ "), max_size=140) | matching(forms.SESSION_ID))
def test_a_session_id_is_what_sessions_take(text: str) -> None:
    if text == text.strip():
        assert both_validators(_string(forms.SESSION_ID))(text) == takes(lambda: validate_session_id(text))


@SETTINGS
@given(st.text(st.sampled_from("aZ09._-^ lock"), max_size=70) | matching(forms.SNAPSHOT_NAME))
@example("a.lock")
@example("a..b")
@example("release.")
def test_a_snapshot_name_is_what_snapshots_take(text: str) -> None:
    assert both_validators(_string(forms.SNAPSHOT_NAME))(text) == takes(lambda: check_name(text))


@SETTINGS
@given(st.text(st.sampled_from("aZ09_-^ "), max_size=70) | matching(forms.CATEGORY))
def test_a_category_is_what_memories_take(text: str) -> None:
    if text == text.strip():
        valid = both_validators(_string(forms.CATEGORY))(text)
        assert valid == takes(lambda: memory_uri("a fact", text or None, "default")), text


# ----------------------------------------------------------------------------- lists in a string
@SETTINGS
@given(st.text(st.sampled_from("ab=, \t"), max_size=12) | matching(forms.TAG_LIST))
@example(",\t,")  # an item of whitespace alone, which find leaves out
def test_tags_in_a_string_are_what_find_takes(text: str) -> None:
    if both_validators(_string(forms.TAG_LIST))(text):
        normalize_tags(text)
    elif text == text.strip() and "  " not in text and ", " not in text and " ," not in text:
        assert not takes(lambda: normalize_tags(text)), text


@SETTINGS
@given(st.lists(st.text(st.sampled_from("ab=, \t"), max_size=6), max_size=3))
def test_tags_in_a_list_are_what_find_takes(items: list[str]) -> None:
    valid = both_validators(forms.TAGS)(items)
    if valid:
        normalize_tags(items)
    elif all(item == item.strip() for item in items):
        assert not takes(lambda: normalize_tags(items)), items


@SETTINGS
@given(st.text(st.sampled_from("012L3, -"), max_size=8) | st.integers(-3, 5))
def test_levels_are_what_find_takes(value: str | int) -> None:
    valid = both_validators(forms.LEVEL)(value)
    if valid:
        levels_from(value)
    elif not isinstance(value, str) or ("L" not in value and " " not in value):
        assert not takes(lambda: levels_from(value)), value


@SETTINGS
@given(st.lists(st.sampled_from(["memory", "skill", "resource", ",", "x", " "]), max_size=4).map("".join))
def test_context_types_are_what_find_takes(value: str) -> None:
    from openviking.retrieve.request import context_types_from

    if both_validators(_string(forms.CONTEXT_TYPES))(value):
        context_types_from(value)
    elif " " not in value:
        assert not takes(lambda: context_types_from(value)), value


def test_telemetry_is_what_find_takes() -> None:
    from openviking.retrieve.request import Telemetry

    valid = both_validators(forms.TELEMETRY)
    for value in (True, False, {}, {"summary": True}, {"summary": 1}, {"other": True}, "yes", None):
        assert valid(value) == takes(lambda value=value: Telemetry(value, False, "find")), value


# ----------------------------------------------------------------------------- the filter DSL
def test_the_filter_form_names_the_stores_fields_and_ops() -> None:
    assert forms.FILTER_FIELDS == schema.FILTER_FIELDS
    assert forms.FILTER_OPS == filters.OPS


VALID_FILTERS: list[dict[str, Any]] = [
    {"op": "must", "field": "level", "conds": [2]},
    {"op": "must_not", "field": "uri", "conds": ["viking://resources/a"], "para": "-d=1"},
    {"op": "must", "field": "tags", "conds": ["env=prod"]},
    {"op": "must", "field": "created_at", "conds": ["2026-01-01T00:00:00Z"]},
    {"op": "range", "field": "level", "gte": 0.5, "lt": None},
    {"op": "range_out", "field": "uri", "gt": "viking://resources/m"},
    {"op": "time_range", "field": "updated_at", "gte": "2026-01-01T00:00Z", "lte": "2026-02-01T00:00Z"},
    {"op": "contains", "field": "search_tags", "substring": "prod"},
    {"op": "prefix", "field": "context_type", "prefix": "res", "extra": "kept"},
    {"op": "and", "conds": []},
    {"op": "or", "conds": [{"op": "and", "conds": [{"op": "must", "field": "level", "conds": [0]}]}]},
]
INVALID_FILTERS: list[Any] = [
    {},
    {"op": "must", "field": "color", "conds": ["red"]},
    {"op": "must", "field": "level", "conds": []},
    {"op": "must", "field": "level", "conds": ["2"]},
    {"op": "must", "field": "uri", "conds": ["resources/a"]},
    {"op": "range", "field": "level"},
    {"op": "range", "field": "level", "gte": None},
    {"op": "range", "field": "tags", "gte": "a"},
    {"op": "time_range", "field": "level", "gte": 1},
    {"op": "time_range", "field": "created_at", "gte": "yesterday"},
    {"op": "contains", "field": "level", "substring": "1"},
    {"op": "prefix", "field": "tags", "prefix": "a"},
    {"op": "must_not", "field": "uri", "conds": ["viking://resources"], "para": "d=1"},
    {"op": "and"},
    {"op": "xor", "conds": []},
    [],
]


@pytest.mark.parametrize("node", VALID_FILTERS)
def test_a_filter_the_form_allows_is_taken(node: dict[str, Any]) -> None:
    assert both_validators(forms.FILTER)(node)
    check_filter(node)


@pytest.mark.parametrize("node", INVALID_FILTERS)
def test_a_filter_refused_is_refused_by_the_form(node: Any) -> None:
    assert not takes(lambda: check_filter(node) if isinstance(node, dict) and node else check_filter({"op": None}))
    assert not both_validators(forms.FILTER)(node)


# ----------------------------------------------------------------------------- globs
# Text near globs: their special characters, and a few that break them.
NEAR_GLOBS = st.text(st.sampled_from("ab.*?[]!^{},/\\-é \x00"), max_size=16)


@SETTINGS
@given(NEAR_GLOBS)
def test_a_glob_the_form_allows_is_compiled(pattern: str) -> None:
    if both_validators(_string(forms.GLOB))(pattern):
        compile_glob(pattern)


@pytest.mark.parametrize("pattern", ["**/*.md", "*.{md,txt}", "[!a]*", "{a,{b,c}}", "a\\*b", "[,]", "docs/**", "?"])
def test_the_globs_of_every_day_are_in_the_form(pattern: str) -> None:
    assert both_validators(_string(forms.GLOB))(pattern)
    compile_glob(pattern)


@pytest.mark.parametrize("pattern", ["", "[abc", "[]", "{a,b", "a}", "\\", ".", "x" * 10_001])
def test_a_glob_refused_is_refused_by_the_form(pattern: str) -> None:
    assert not both_validators(_string(forms.GLOB))(pattern)
    assert not takes(lambda: compile_glob(pattern))


# ----------------------------------------------------------------------------- skills as data
@SETTINGS
@given(st.text(max_size=12) | NEAR)
@example("# Skill\n")
@example("a\x00")
def test_a_skills_text_the_form_allows_is_a_text_file(text: str) -> None:
    valid = both_validators(forms.SKILL_DATA)
    if valid(text) or valid({"content": text}):
        assert text.strip() and not looks_binary(text.encode("utf-8", "surrogatepass"))
    assert valid({"content": text}) == (bool(text.strip()) and "\x00" not in text)


# ----------------------------------------------------------------------------- golden queries
QUERIES = forms.golden_queries(("hybrid", "vector", "keyword", "list", ""))


@pytest.mark.parametrize(
    "queries",
    [
        [{"query": "q", "relevant": "viking://resources/a.md"}],
        [{"query": "q", "relevant": ["viking://resources/a.md"], "id": 7, "k": 5, "uri": ["viking://resources"]}],
        [{"query": "q", "relevant": {"viking://resources/a.md": 2.5}, "mode": "keyword", "after": "7d"}],
    ],
)
def test_golden_queries_the_form_allows_are_taken(queries: list[dict[str, Any]]) -> None:
    assert both_validators(QUERIES)(queries)
    check_queries(queries, 10)


@pytest.mark.parametrize(
    "queries",
    [
        [],
        [{"query": " ", "relevant": "viking://resources/a.md"}],
        [{"query": "q", "relevant": []}],
        [{"query": "q", "relevant": {"viking://resources/a.md": 0}}],
        [{"query": "q", "relevant": "viking://resources/a.md", "k": 0}],
        [{"query": "q", "relevant": "viking://resources/a.md", "colour": "red"}],
        [{"query": "q", "relevant": "viking://resources/a.md", "id": True}],
    ],
)
def test_golden_queries_refused_are_refused_by_the_form(queries: list[dict[str, Any]]) -> None:
    assert not both_validators(QUERIES)(queries)
    assert not takes(lambda: check_queries(queries, 10))


def test_two_queries_with_one_id_are_a_conflict_no_form_can_state() -> None:
    # The form allows them (no schema says each item's id is its own): 409, as a name taken, not 400.
    queries = [
        {"id": 7, "query": "a", "relevant": "viking://resources/a"},
        {"id": "7", "query": "b", "relevant": "viking://resources/b"},
    ]
    assert both_validators(QUERIES)(queries)
    with pytest.raises(AlreadyExistsError) as info:
        check_queries(queries, 10)
    assert info.value.message == "queries[1].id '7' is the id of an earlier query"
    assert info.value.details == {"at": "queries[1]", "index": 1, "resource": "7", "type": "query id"}


def test_every_parameter_that_names_a_place_states_its_form() -> None:
    # A URI parameter without a form lets the document allow what the server refuses.
    import openviking.contract.interface  # noqa: F401 - declares the operations
    from openviking.contract.operations import OPERATIONS

    assert "find" in OPERATIONS
    places = {"uri", "uris", "target_uri", "to_uri", "from_uri", "to", "parent", "exclude_uri"}
    unstated = [
        (name, key)
        for name, op in OPERATIONS.items()
        for key, param in op.params.items()
        if key in places and not param.local and param.pattern is None and param.schema is None
    ]
    assert unstated == []
