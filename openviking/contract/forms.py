"""What the values an operation takes look like, as JSON Schema: a viking:// URI, a time, a
session id, a snapshot's name, tags, levels, context types, telemetry and the filter DSL.

The declarations (``interface.py``) give them to their parameters (``Param.pattern``,
``Param.schema``), and the OpenAPI document and the MCP tools' schemas state them, so a client
can check a value before it sends it. Each describes a value's canonical form, all of which the
check that decides (``uri.parse``, the time bounds, ``tags.normalize_tags``...) takes; those
checks also take it with whitespace around it, and a choice in any case. Regular expressions are
written in the part of the syntax Python's ``re``, ECMA-262 (JSON Schema's dialect) and Rust's
``regex`` read alike, and anchored (a JSON Schema ``pattern`` matches anywhere in a string).
``tests/test_forms.py`` holds each to its check.
"""

from __future__ import annotations

from typing import Any

from openviking.values.uri import SCOPES

__all__ = [
    "AS_OF",
    "CATEGORY",
    "CONTEXT_TYPES",
    "EMPTY_OR_NOT_BLANK",
    "ENTRY",
    "FILTER",
    "FILTER_FIELDS",
    "FILTER_OPS",
    "GLOB",
    "ISO_TIME",
    "LEVEL",
    "LEVELS",
    "NOT_BLANK",
    "SESSION_ID",
    "SKILL_DATA",
    "SNAPSHOT_NAME",
    "SNAPSHOT_NAME_FORM",
    "TAG",
    "TAGS",
    "TAG_LIST",
    "TARGET",
    "TELEMETRY",
    "TIME",
    "TIME_OR_BLANK",
    "URI",
    "URIS",
    "WHITESPACE",
    "golden_queries",
]

# The end of the text (Python reads $ as before a last newline too; JSON Schema's dialect does not).
_END = "(?![\\s\\S])"
# The characters str.strip() and str.isspace() take for whitespace (more than ECMA-262's \s).
WHITESPACE = "\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
NOT_BLANK = f"[^{WHITESPACE}]"
"""Holds something besides whitespace (a query, a memory's text)."""
EMPTY_OR_NOT_BLANK = f"^(?![\\s\\S])|{NOT_BLANK}"
"""Nothing at all, or something besides whitespace."""

# ----------------------------------------------------------------------------- URIs
# A segment: no control character, no separator, no backslash; not '.' or '..', and not a
# Windows drive ('C:'), which uri.parse refuses (403) wherever they are.
_SEGMENT = f"(?!\\.\\.?(?:/|{_END})|[A-Za-z]:)[^\\x00-\\x1f\\x7f/?\\\\]+"
_REST = f"(?:/{_SEGMENT})*"
# A session's id, as a segment of the sessions folder (a read of one looks the session up).
_SESSION_ID = "[A-Za-z0-9](?:[A-Za-z0-9_-]|\\.(?!\\.)){0,127}"
_SESSIONS = f"sessions(?:/{_SESSION_ID}(?=/|{_END}){_REST})?"
_NOT_SESSIONS = f"(?!sessions(?:/|{_END}))"
_USER_ID = f"{_NOT_SESSIONS}(?!\\.\\.?(?:/|{_END}))(?=[A-Za-z0-9_.@-])[A-Za-z0-9_.-]*(?:@[A-Za-z0-9_.-]*)?"
# Inside a user's space: the sessions folder, or anything else.
_SPACE = f"(?:/{_SESSIONS}|/{_NOT_SESSIONS}{_SEGMENT}{_REST})?"
# The scopes whose paths hold nothing but segments (user's hold a user's space, session's ids).
_PLAIN_SCOPES = "|".join(scope for scope in SCOPES if scope not in ("user", "session"))
_URI = f"viking://(?:(?:{_PLAIN_SCOPES}){_REST}|session(?:/{_SESSION_ID}(?=/|{_END}){_REST})?|~{_SPACE}|user(?:/{_SESSIONS}|/{_USER_ID}{_SPACE})?)?/?"
# A URI is read with the whitespace around it stripped, which would take a last segment of it.
_TRIMMED = f"(?![\\s\\S]*[{WHITESPACE}]{_END})"
URI = f"^{_TRIMMED}{_URI}{_END}"
"""``viking://``, a scope (resources, user, agent, session, ``~``) and the path below it; a
session's id below the sessions folder."""
TARGET = f"^{_TRIMMED}(?:{_URI})?{_END}"
"""A URI, or nothing (``""``: every scope, or the whole store)."""
# A segment a new file or folder may have: not a name a directory's summary reads as.
_SUMMARY = f"(?!(?:\\.abstract\\.md|\\.overview\\.md)(?:/|{_END}))"
_NEW = f"{_SUMMARY}{_SEGMENT}"
_NEW_REST = f"(?:/{_NEW})*"
_OWN = f"(?:/{_NOT_SESSIONS}{_NEW}{_NEW_REST})?"
_ENTRY = f"viking://(?:(?:{_PLAIN_SCOPES})/{_NEW}{_NEW_REST}|~{_OWN}|user/{_SUMMARY}{_USER_ID}{_OWN})/?"
ENTRY = f"^{_TRIMMED}{_ENTRY}{_END}"
"""A URI below a scope root and outside the sessions folder, no part of it named as a
directory's summary: what may be written, made, moved or removed."""

_URI_STRING = {"type": "string", "pattern": URI}
URIS: dict[str, Any] = {"anyOf": [_URI_STRING, {"type": "array", "items": _URI_STRING, "minItems": 1}]}
"""A URI, or a list of them (one at least)."""

# ----------------------------------------------------------------------------- times
_YEAR = "(?!0000)[0-9]{4}"
_MONTH_DAY = "(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)"
_LEAP_DAY = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29"
_DATE = f"(?!0000)(?:{_YEAR}-{_MONTH_DAY}|{_LEAP_DAY})"
_CLOCK = "(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\\.[0-9]+)?)?"
_ZONE = "(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
_ISO = f"{_DATE}T{_CLOCK}{_ZONE}?"
_TIME = f"[0-9]+[smhdw]|{_DATE}|{_ISO}"
ISO_TIME = f"^{_ISO}{_END}"
"""An ISO 8601 time: ``2026-03-11T15:18:00Z`` (no zone: UTC)."""
TIME = f"^(?:{_TIME}){_END}"
"""``30m``, ``2h``, ``7d``, ``2w`` back from now (``s`` too); a day ``2026-03-11``; or an ISO 8601 time."""
TIME_OR_BLANK = f"^(?:{_TIME})?{_END}"
"""A time, or nothing (``""``: no bound)."""

# ----------------------------------------------------------------------------- names
SESSION_ID = f"^{_SESSION_ID}{_END}"
"""Letters, digits, '.', '_' and '-' (no '..'), starting with a letter or digit, 128 at most."""
# A name LanceDB takes for a tag, too: no '..', no '.' or '.lock' at the end.
SNAPSHOT_NAME_FORM = f"(?![\\s\\S]*(?:\\.|\\.lock){_END})[A-Za-z](?:[A-Za-z0-9_-]|\\.(?!\\.)){{0,63}}"
SNAPSHOT_NAME = f"^{SNAPSHOT_NAME_FORM}{_END}"
"""A letter, then letters, digits, '.', '-' or '_' (no '..', not ending in '.' or '.lock'), 64 at most."""
AS_OF = f"^(?:[0-9]+|{SNAPSHOT_NAME_FORM}|{_TIME}){_END}"
"""A snapshot's name, a version of the store (digits) or a time."""

# ----------------------------------------------------------------------------- lists in a string
# Each side of a tag holds something besides whitespace: what comes first is whitespace, then
# not (a pattern with one way to match each text: no backtracking to speak of).
_TAG_SIDE = f"[{WHITESPACE}]*[^={WHITESPACE}][^=]*"
TAG = f"^{_TAG_SIDE}={_TAG_SIDE}{_END}"
"""One ``key=value`` tag (a list's item: it may hold a comma)."""
_LISTED_SIDE = f"[{WHITESPACE}]*[^=,{WHITESPACE}][^=,]*"
_TAG = f"{_LISTED_SIDE}={_LISTED_SIDE}"
TAG_LIST = f"^(?:{_TAG}|[{WHITESPACE}]*)(?:,(?:{_TAG}|[{WHITESPACE}]*))*{_END}"
"""``key=value`` tags, comma-separated (an item of whitespace alone, or none, is left out)."""


def _listed(item: str) -> str:
    """Comma-separated items, each ``item`` or nothing."""
    return f"^(?:{item})?(?:,(?:{item})?)*{_END}"


CATEGORY = f"^(?:[A-Za-z0-9][A-Za-z0-9_-]{{0,63}})?{_END}"
"""A memory's folder: a letter or digit, then letters, digits, '_' or '-' (64 at most; kept in lower case)."""
LEVELS = _listed("[012]")
"""Levels, comma-separated: ``0,2``."""
CONTEXT_TYPES = _listed("memory|resource|skill")
"""Context types, comma-separated: ``memory,skill``."""

# ----------------------------------------------------------------------------- globs
# A glob's pieces: a character (a special one escaped), * or ?, a class without ranges or escapes
# ([abc], [!abc]), and {a,b} alternatives nested two deep; not only '.' and '/' (no path).
_GLOB_CHAR = "[^\\\\\\[\\]{},?*/]|\\\\[\\s\\S]|[?*]|\\[[!^]?[^\\]\\-\\\\/]+\\]"
_INNER = f"\\{{(?:{_GLOB_CHAR})*(?:,(?:{_GLOB_CHAR})*)*\\}}"
_BRACES = f"\\{{(?:{_GLOB_CHAR}|{_INNER})*(?:,(?:{_GLOB_CHAR}|{_INNER})*)*\\}}"
GLOB = f"^(?![\\s\\S]{{10001}})(?![/.]*{_END})(?:{_GLOB_CHAR}|{_BRACES}|[,/])+{_END}"
"""A glob: ``*`` and ``?`` within a name, ``**`` across directories, ``[abc]``, ``{a,b}``, a
special character escaped with a backslash; 10,000 characters at most."""

# ----------------------------------------------------------------------------- several forms
# Text that is a text file's (no NUL, which makes a file binary), with something besides whitespace.
_TEXT = f"(?![\\s\\S]*\\x00)[\\s\\S]*{NOT_BLANK}"
SKILL_DATA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "pattern": f"^(?![{WHITESPACE}]*(?:(?:https?|git|ssh)://|git@)){_TEXT}"},
        {
            "type": "object",
            "properties": {"content": {"type": "string", "pattern": f"^{_TEXT}"}},
            "required": ["content"],
        },
    ]
}
"""A skill given as data: a SKILL.md's text (not a URL: that is not fetched), or an object with
its ``content`` (and front matter: ``name``, ``description``...)."""
TAGS: dict[str, Any] = {
    "anyOf": [{"type": "array", "items": {"type": "string", "pattern": TAG}}, {"type": "string", "pattern": TAG_LIST}]
}
"""``key=value`` tags: a list, or one comma-separated string."""
_LEVEL = [{"type": "integer", "minimum": 0, "maximum": 2}, {"type": "string", "pattern": LEVELS}]
LEVEL: dict[str, Any] = {"anyOf": [*_LEVEL, {"type": "array", "items": {"anyOf": _LEVEL}}]}
"""Levels: ``2``, ``"0,2"`` or ``[0, 2]``."""
TELEMETRY: dict[str, Any] = {
    "anyOf": [
        {"type": "boolean"},
        {"type": "object", "properties": {"summary": {"type": "boolean"}}, "additionalProperties": False},
    ]
}
"""``true``, ``false`` or ``{"summary": true}``."""


def golden_queries(modes: tuple[str, ...]) -> dict[str, Any]:
    """Golden queries: each {query, relevant} with an optional id, uri (where to search), mode
    (one of ``modes``), after, before and k; a query's id is its own (a number: its place)."""
    not_blank = {"type": "string", "pattern": NOT_BLANK}
    uri = {"type": "string", "pattern": TARGET}
    time = {"anyOf": [{"type": "string", "pattern": TIME_OR_BLANK}, {"type": "null"}]}
    relevant = {
        "anyOf": [
            _URI_STRING,
            {"type": "array", "items": _URI_STRING, "minItems": 1},
            {
                "type": "object",
                "propertyNames": {"pattern": URI},
                "additionalProperties": {"type": "number", "exclusiveMinimum": 0, "maximum": 10},
                "minProperties": 1,
            },
        ]
    }
    query = {
        "type": "object",
        "properties": {
            "id": {"anyOf": [not_blank, {"type": "integer"}]},
            "query": not_blank,
            "relevant": relevant,
            "uri": {"anyOf": [uri, {"type": "array", "items": uri}, {"type": "null"}]},
            "mode": {"anyOf": [{"type": "string", "enum": list(modes)}, {"type": "null"}]},
            "after": time,
            "before": time,
            "k": {"type": "integer", "minimum": 1, "maximum": 1000},
        },
        "required": ["query", "relevant"],
        "additionalProperties": False,
    }
    return {"type": "array", "items": query, "minItems": 1}


def _node(op: str | list[str], required: list[str], **properties: Any) -> dict[str, Any]:
    ops = [op] if isinstance(op, str) else op
    return {
        "type": "object",
        "properties": {"op": {"enum": ops}, **properties},
        "required": ["op", *required],
    }


def _bounded(bound: dict[str, Any]) -> dict[str, Any]:
    """Range bounds: at least one of gte, gt, lte, lt given (not null)."""
    keys = ("gte", "gt", "lte", "lt")
    return {
        "properties": {key: {"anyOf": [bound, {"type": "null"}]} for key in keys},
        "anyOf": [{"required": [key], "properties": {key: bound}} for key in keys],
    }


_ISO_STRING = {"type": "string", "pattern": ISO_TIME}
_TEXT_FIELDS = {"context_type": "string", "search_tags": "tags", "tags": "tags"}
_TIME_FIELDS = ["created_at", "updated_at"]
FILTER_FIELDS = {"uri": "path", "level": "int", **_TEXT_FIELDS, **dict.fromkeys(_TIME_FIELDS, "time")}
"""The fields a filter may name, and their kind (as the store's FILTER_FIELDS)."""
FILTER_OPS = ("and", "or", "must", "must_not", "range", "range_out", "time_range", "contains", "prefix")


def _conds(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items, "minItems": 1}


def _filter_leaves() -> list[dict[str, Any]]:
    uri = {"type": "string", "pattern": URI}
    integer = {"type": "integer"}
    number = {"type": "number"}
    text = {"type": "string"}
    depth = {"type": "string", "pattern": f"^-d=-?[0-9]{{1,9}}{_END}"}
    match = ["must", "must_not"]
    ranges = ["range", "range_out"]
    return [
        _node(match, ["field", "conds"], field={"const": "uri"}, conds=_conds(uri), para=depth),
        _node(match, ["field", "conds"], field={"const": "level"}, conds=_conds(integer)),
        _node(match, ["field", "conds"], field={"enum": list(_TEXT_FIELDS)}, conds=_conds(text)),
        _node(match, ["field", "conds"], field={"enum": _TIME_FIELDS}, conds=_conds(_ISO_STRING)),
        {**_node(ranges, ["field"], field={"const": "level"}), "allOf": [_bounded(number)]},
        {**_node(ranges, ["field"], field={"enum": ["uri", "context_type"]}), "allOf": [_bounded(text)]},
        {**_node([*ranges, "time_range"], ["field"], field={"enum": _TIME_FIELDS}), "allOf": [_bounded(_ISO_STRING)]},
        _node("contains", ["field", "substring"], field={"enum": ["uri", *_TEXT_FIELDS]}, substring=text),
        _node("prefix", ["field", "prefix"], field={"enum": ["uri", "context_type"]}, prefix=text),
    ]


def _filter_node(depth: int) -> dict[str, Any]:
    """A node, with ``and`` and ``or`` holding nodes ``depth`` levels deep."""
    leaves = _filter_leaves()
    if depth <= 1:
        return {"oneOf": leaves}
    joined = _node(["and", "or"], ["conds"], conds={"type": "array", "items": _filter_node(depth - 1)})
    return {"oneOf": [joined, *leaves]}


# How deep the document spells and/or: a schema has no recursion a generator of requests follows
# everywhere; the server takes filters 64 levels deep.
FILTER_DEPTH = 3
FILTER: dict[str, Any] = {"title": "FilterNode", **_filter_node(FILTER_DEPTH)}
"""Upstream's filter DSL: a tree of nodes, each with its ``op`` (extra keys are ignored), and/or
spelled :data:`FILTER_DEPTH` levels deep."""
