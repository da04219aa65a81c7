"""viking:// URIs: parsing, canonical form, aliases, errors and context types, as upstream's URI tests pin them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openviking.errors import InvalidURIError, PermissionDeniedError
from openviking.values.uri import VikingURI, context_type_of, parse


# ----------------------------------------------------------------------------- canonical form
@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("viking://resources/docs", "viking://resources/docs"),
        ("viking://resources/docs/", "viking://resources/docs"),
        ("viking://resources/", "viking://resources"),
        ("viking://resources//docs///guides//", "viking://resources/docs/guides"),
        ("  viking://resources/docs  ", "viking://resources/docs"),
        ("viking://resources/docs?version=2", "viking://resources/docs"),
        ("viking://", "viking://"),
        ("viking:///", "viking://"),
        ("viking://agent/skills", "viking://agent/skills"),
        ("viking://resources/~/x", "viking://resources/~/x"),  # `~` only counts as the first segment
    ],
)
def test_canonical_form(text: str, canonical: str) -> None:
    uri = parse(text)
    assert str(uri) == canonical
    assert parse(str(uri)) == uri


def test_trailing_slash_and_empty_segments_give_equal_uris() -> None:
    assert parse("viking://resources/a/b/") == parse("viking://resources//a//b") == parse("viking://resources/a/b")
    assert parse("viking://resources/a/b").segments == ("resources", "a", "b")


def test_root() -> None:
    root = parse("viking://")
    assert root.is_root
    assert root.scope == ""
    assert root.depth == 0
    assert root.parent is None


def test_parts_of_a_uri() -> None:
    uri = parse("viking://resources/docs/guides/auth.md")
    assert uri.scope == "resources"
    assert uri.name == "auth.md"
    assert uri.depth == 4
    assert str(uri.parent) == "viking://resources/docs/guides"
    assert uri.is_within(parse("viking://resources/docs"))
    assert not parse("viking://resources/docsx").is_within(parse("viking://resources/docs"))  # segment-aware
    assert uri.relative_to(parse("viking://resources/docs")) == "guides/auth.md"
    assert str(parse("viking://resources/docs").join("a/b.md")) == "viking://resources/docs/a/b.md"


# ----------------------------------------------------------------------------- aliases
@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("viking://~", "viking://user/default"),
        ("viking://~/", "viking://user/default"),
        ("viking://~/x", "viking://user/default/x"),
        ("viking://~/memories/prefs.md", "viking://user/default/memories/prefs.md"),
        ("viking://user/memories", "viking://user/default/memories"),
        ("viking://user/memories/prefs", "viking://user/default/memories/prefs"),
        ("viking://user/skills/demo", "viking://user/default/skills/demo"),
        ("viking://user/resources/x", "viking://user/default/resources/x"),
        ("viking://user", "viking://user"),  # bare user scope: the container of all user spaces
        ("viking://user/default/memories", "viking://user/default/memories"),
        ("viking://user/alice/memories", "viking://user/alice/memories"),
        ("viking://session/s1", "viking://user/default/sessions/s1"),
        ("viking://session/s1/messages.jsonl", "viking://user/default/sessions/s1/messages.jsonl"),
    ],
)
def test_aliases_expand_to_the_default_user(text: str, canonical: str) -> None:
    assert str(parse(text)) == canonical


def test_aliases_follow_the_configured_user() -> None:
    assert str(parse("viking://~/x", user="alice")) == "viking://user/alice/x"
    assert str(parse("viking://user/memories", user="alice")) == "viking://user/alice/memories"
    assert str(parse("viking://session/s9", user="alice")) == "viking://user/alice/sessions/s9"


# ----------------------------------------------------------------------------- INVALID_URI
@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("viking:/x", "viking://"),
        ("resources/docs", "viking://"),
        ("/resources/docs", "viking://"),
        ("s3://bucket/x", "viking://"),
        ("https://example.com/x", "viking://"),
        ("VIKING://resources/x", "viking://"),  # the scheme is case-sensitive
        ("viking://unsupported/x", "Invalid scope 'unsupported'"),
        ("viking://temp/x", "Invalid scope 'temp'"),
        ("viking://queue/x", "Invalid scope 'queue'"),
        ("viking://upload/x", "Invalid scope 'upload'"),
        ("viking://Resources/x", "Invalid scope 'Resources'"),
    ],
)
def test_invalid_uri(text: str, reason: str) -> None:
    with pytest.raises(InvalidURIError) as info:
        parse(text)
    error = info.value
    assert error.code == "INVALID_URI"
    assert reason in error.message
    assert error.message.startswith("Invalid URI: ")
    assert error.details["uri"] == text
    assert reason in error.details["reason"]


def test_scope_error_lists_the_public_scopes_only() -> None:
    with pytest.raises(InvalidURIError) as info:
        parse("viking://temp/x")
    listed = info.value.message.split("Must be one of:", 1)[1]
    assert [s.strip(" )") for s in listed.split(",")] == ["agent", "resources", "session", "user"]
    for internal in ("queue", "upload", "~"):
        assert internal not in listed


def test_missing_scheme_error_suggests_the_right_spelling() -> None:
    with pytest.raises(InvalidURIError) as info:
        parse("resources/docs")
    assert info.value.hint is not None and "viking://resources/docs" in info.value.hint


def test_invalid_user_id() -> None:
    with pytest.raises(InvalidURIError) as info:
        parse("viking://user/bad id/memories")
    assert info.value.code == "INVALID_URI"
    assert "bad id" in info.value.message


def test_the_empty_field_is_named() -> None:
    with pytest.raises(InvalidURIError) as info:
        parse("", field="target_uri")
    assert "target_uri must not be empty" in info.value.message


def test_non_string_is_invalid() -> None:
    with pytest.raises(InvalidURIError):
        parse(None)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- PERMISSION_DENIED
@pytest.mark.parametrize(
    ("text", "segment"),
    [
        ("viking://resources/./x", "."),
        ("viking://resources/../x", ".."),
        ("viking://resources/docs/..", ".."),
        ("viking://../resources", ".."),
        ("viking://~/../bob", ".."),
        ("viking://resources/a\\b", "a\\b"),
        ("viking://resources/..\\..\\etc", "..\\..\\etc"),
        ("viking://resources/C:x", "C:x"),
    ],
)
def test_traversal_is_permission_denied(text: str, segment: str) -> None:
    with pytest.raises(PermissionDeniedError) as info:
        parse(text)
    error = info.value
    assert error.code == "PERMISSION_DENIED"
    assert "Access denied" in error.message
    assert text in error.message
    assert error.details["segment"] == segment


def test_join_rejects_traversal() -> None:
    with pytest.raises(PermissionDeniedError):
        parse("viking://resources/docs").join("../secrets")


def test_dots_inside_a_name_are_fine() -> None:
    assert str(parse("viking://resources/a..b/.hidden/x.md")) == "viking://resources/a..b/.hidden/x.md"


# ----------------------------------------------------------------------------- context types
@pytest.mark.parametrize(
    ("text", "context_type"),
    [
        ("viking://user/default/memories", "memory"),
        ("viking://user/default/memories/preferences/x.md", "memory"),
        ("viking://user/default/skills/demo", "skill"),
        ("viking://user/default/skills/demo/SKILL.md", "skill"),
        ("viking://user/default/resources/proj/a.md", "resource"),
        ("viking://user/default/peers/p1/memories/x.md", "memory"),
        ("viking://user/default/peers/p1/resources/x.md", "resource"),
        ("viking://agent/skills", "skill"),
        ("viking://agent/skills/deploy/SKILL.md", "skill"),
        ("viking://agent/a1/memories/x.md", "memory"),
        ("viking://agent/a1/skills/x", "skill"),
        ("viking://agent/a1/resources/x.md", "resource"),
        ("viking://resources/docs/a.md", "resource"),
        ("viking://resources/memories-report.md", "resource"),  # never from substrings
        ("viking://resources/memories/x.md", "resource"),
        ("viking://resources/skills/x.md", "resource"),
        ("viking://user/default/profile.md", "resource"),
        ("viking://user/default", "resource"),
        ("viking://user", "resource"),
        ("viking://", "resource"),
        # the retrieval docs' shorthand, read as the configured user's memories (upstream rejects it)
        ("viking://user/memories/x.md", "memory"),
        ("viking://~/memories/x.md", "memory"),
    ],
)
def test_context_type_table(text: str, context_type: str) -> None:
    uri = parse(text)
    assert uri.context_type == context_type
    assert context_type_of(str(uri)) == context_type


def test_context_type_of_a_non_viking_string_is_resource() -> None:
    assert context_type_of("/tmp/x") == "resource"


# ----------------------------------------------------------------------------- property
_SEGMENT = (
    st.text(
        alphabet=st.characters(
            blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"),
            blacklist_characters="/\\?",
        ),
        min_size=1,
        max_size=12,
    )
    .filter(lambda s: s not in (".", ".."))
    .filter(lambda s: not re.match(r"^[A-Za-z]:", s))
)


@given(st.lists(_SEGMENT, min_size=0, max_size=6))
def test_parse_of_str_round_trips_resources(segments: list[str]) -> None:
    uri = VikingURI(("resources", *segments))
    assert parse(str(uri)) == uri


@given(st.sampled_from(["resources", "user", "agent", "session", "~"]), st.lists(_SEGMENT, min_size=0, max_size=5))
def test_parse_is_idempotent(scope: str, segments: list[str]) -> None:
    text = "viking://" + "/".join([scope, *segments])
    try:
        first = parse(text)
    except InvalidURIError:
        return  # e.g. a user id with characters a user id may not hold
    assert parse(str(first)) == first
    assert not str(first).endswith("/") or first.is_root
    assert "//" not in str(first)[len("viking://") :]


@pytest.mark.parametrize(
    "text", ["viking://resources/a\nb", "viking://resources/tab\there", "viking://resources/x\x7f"]
)
def test_control_characters_are_invalid(text: str) -> None:
    with pytest.raises(InvalidURIError) as info:
        parse(text)
    assert info.value.code == "INVALID_URI"
    assert "control characters" in info.value.message
    assert "\n" not in info.value.message and "\t" not in info.value.message  # one line, escaped
