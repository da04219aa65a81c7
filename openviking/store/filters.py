"""The upstream filter DSL, validated and turned into LanceDB SQL prefilters.

A filter is a JSON tree of nodes, each with an ``op``: ``and``/``or`` (``conds``: nodes),
``must``/``must_not`` (``field``, ``conds``: values; ``para: "-d=N"`` limits a ``uri`` scope to
N levels below each value), ``range``/``range_out`` (``gte``/``gt``/``lte``/``lt``),
``time_range`` (``field`` a time field, ``gte``/``lte`` ISO times), ``contains`` (``substring``)
and ``prefix`` (``prefix``). Unknown ops and fields are refused, so a typo never matches
nothing in silence.

Every value is checked before it reaches SQL: numbers are integers of at most 64 bits or finite
floats (never ``NaN``, ``Infinity`` or a 5,000-digit integer pasted in as a bare word), a
filter is at most :data:`MAX_DEPTH` nodes deep (a deeper one, or one that contains itself, is
refused rather than recursed into) and JSON text at most :data:`MAX_TEXT` characters; anything
else is ``INVALID_ARGUMENT`` naming the node.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from openviking.errors import InvalidArgumentError, OpenVikingError
from openviking.values.arguments import describe
from openviking.values.timefilter import TimeRange, parse_iso_datetime
from openviking.values.uri import VikingURI, parse

from .schema import FILTER_FIELDS

__all__ = [
    "OPS",
    "SCOPE_STAGES",
    "NodeLookup",
    "Scope",
    "ScopeStage",
    "check_filter",
    "levels_from",
    "parse_filter",
]

OPS = ("and", "or", "must", "must_not", "range", "range_out", "time_range", "contains", "prefix")
_DEPTH_PARA = re.compile(r"^-d=(-?\d{1,9})$")
_RANGE_KEYS = {"gte": ">=", "gt": ">", "lte": "<=", "lt": "<"}
# The integer fields' column types (store/schema.py): LanceDB refuses a literal the column cannot
# hold, so a bound outside is decided here, and a fractional one rounded to the integer it means.
_INT_RANGE = {"level": (-128, 127)}
# Far deeper than any filter a person or a program means; deep enough nesting would otherwise
# exhaust Python's recursion (json.loads and the compiler both recurse).
MAX_DEPTH = 64
MAX_TEXT = 1_000_000
_EXAMPLE = 'Example: filter={"op": "must", "field": "level", "conds": [2]}'


def sql_string(value: str) -> str:
    """A SQL string literal (single quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Iterable[str]) -> str:
    """``column IN ('a', 'b')`` for string values."""
    return f"{column} IN ({', '.join(map(sql_string, values))})"


def sql_timestamp(moment: datetime) -> str:
    """A UTC timestamp literal with millisecond precision (outside the years 1700-2200, which
    LanceDB's SQL reads through nanoseconds, a count of milliseconds since 1970)."""
    if not 1700 <= moment.year <= 2200:
        since = moment - datetime(1970, 1, 1, tzinfo=moment.tzinfo)
        milliseconds = since.days * 86_400_000 + since.seconds * 1000 + since.microseconds // 1000
        return f"to_timestamp_millis({milliseconds})"
    text = moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"
    return f"TIMESTAMP '{text}'"


def path_scope_sql(uri: VikingURI, *, max_depth: int | None = None, column: str = "uri") -> str:
    """``uri`` equal to ``uri`` or below it (segment-aware); ``max_depth`` levels at most."""
    parts: list[str] = []
    if not uri.is_root:
        text = str(uri)
        parts.append(f"({column} = {sql_string(text)} OR starts_with({column}, {sql_string(text + '/')}))")
    if max_depth is not None and max_depth >= 0:
        parts.append(f"depth <= {uri.depth + max_depth}")
    return " AND ".join(parts) if parts else "TRUE"


def parse_filter(value: str | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Accept a filter as JSON text or a dict; ``{}`` and empty text mean no filter."""
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        value = _loads(value)
    if not isinstance(value, dict):
        raise InvalidArgumentError("filter must be a JSON object with an 'op'", details={"filter": _jsonable(value)})
    return value or None


def _loads(text: str) -> Any:
    """A filter's JSON text, parsed.

    Raises:
        InvalidArgumentError: not JSON (``NaN`` and ``Infinity`` are not), too long, too deep,
            or an integer of more digits than Python reads.
    """
    if len(text) > MAX_TEXT:
        raise InvalidArgumentError(
            f"--filter is {len(text):,} characters long, more than the {MAX_TEXT:,} it may be",
            details={"length": len(text), "limit": MAX_TEXT},
        )

    def no_constant(name: str) -> Any:
        raise InvalidArgumentError(
            f"--filter is not valid JSON: {name} is not a JSON number", hint=_EXAMPLE, details={"value": name}
        )

    try:
        return json.loads(text, parse_constant=no_constant)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(
            f"--filter is not valid JSON: {exc.msg} at column {exc.colno}",
            hint=_EXAMPLE,
            details={"filter": describe(text) if len(text) > 200 else text},
        ) from exc
    except RecursionError as exc:
        raise _too_deep(text) from exc
    except ValueError as exc:  # an integer of more digits than int() reads (sys.get_int_max_str_digits)
        raise InvalidArgumentError(f"--filter holds a number Python cannot read: {exc}", details={}) from exc


def check_filter(node: dict[str, Any], *, user: str = "default") -> None:
    """Validate a DSL tree before anything is opened.

    Raises:
        InvalidArgumentError: unknown op or field, or a value of the wrong kind.
    """
    filter_to_sql(node, user=user)


def filter_to_sql(node: dict[str, Any], *, user: str = "default", depth: int = 1) -> str:
    """Validate one DSL node (recursively, ``depth`` levels down) and return its SQL predicate.

    Raises:
        InvalidArgumentError: unknown op or field, a value of the wrong kind, or nodes nested
            deeper than :data:`MAX_DEPTH`.
    """
    if depth > MAX_DEPTH:
        raise _too_deep(node)
    if not isinstance(node, dict):
        raise _bad("each filter node must be a JSON object", node)
    op = node.get("op")
    if not isinstance(op, str) or op not in OPS:
        raise InvalidArgumentError(
            f"Unknown filter op '{_name(op)}'",
            hint=f"Known ops: {', '.join(OPS)}",
            details={"op": _jsonable(op), "known_ops": list(OPS)},
        )
    if op in ("and", "or"):
        conds = node.get("conds")
        if not isinstance(conds, list):
            raise _bad(f"'{op}' needs a list 'conds'", node)
        if not conds:
            return "TRUE" if op == "and" else "FALSE"
        joined = f" {op.upper()} ".join(f"({filter_to_sql(c, user=user, depth=depth + 1)})" for c in conds)
        return joined
    name, kind = _field(node)
    if op in ("must", "must_not"):
        sql = _must(node, name, kind, user)
        return sql if op == "must" else f"NOT ({sql})"
    if op in ("range", "range_out", "time_range"):
        if op == "time_range" and kind != "time":
            raise _bad("'time_range' needs a time field (updated_at or created_at)", node)
        sql = _range(node, name, kind)
        return sql if op != "range_out" else f"NOT ({sql})"
    if op == "contains":
        substring = node.get("substring")
        if not isinstance(substring, str):
            raise _bad("'contains' needs a string 'substring'", node)
        if kind == "tags":
            # a tag never holds a newline, so joining on one cannot create a false match
            return f"strpos(array_to_string({name}, chr(10)), {sql_string(substring)}) > 0"
        if kind not in ("string", "path"):
            raise _bad(f"'contains' does not apply to field '{name}'", node)
        return f"strpos({name}, {sql_string(substring)}) > 0"
    # prefix
    prefix = node.get("prefix", node.get("value"))
    if not isinstance(prefix, str) or kind not in ("string", "path"):
        raise _bad("'prefix' needs a string field and a string 'prefix'", node)
    return f"starts_with({name}, {sql_string(prefix)})"


NodeLookup = Callable[[str], Sequence[str]]
"""The URIs of the nodes a predicate over the nodes table keeps: the store's
:meth:`~openviking.store.lance.LanceStore.node_uris_where`."""


@dataclass(frozen=True, slots=True)
class Scope:
    """Everything that narrows a retrieval, before any score is computed."""

    targets: tuple[VikingURI, ...] = ()
    context_types: tuple[str, ...] = ()
    levels: tuple[int, ...] = ()
    tags: tuple[str, ...] = ()
    time_range: TimeRange | None = None
    filter: dict[str, Any] | None = None
    user: str = "default"

    def stage_predicates(self, node_uris: NodeLookup) -> list[tuple[str, str]]:
        """``(stage name, SQL over the records)`` for every active restriction, in the order they
        apply; a stage over the nodes keeps the records of the nodes ``node_uris`` finds for it."""
        predicates = []
        for stage in SCOPE_STAGES:
            if not stage.active(self):
                continue
            sql = stage.sql(self)
            if stage.over_nodes:
                uris = node_uris(sql)
                sql = sql_in("uri", uris) if uris else "FALSE"
            predicates.append((stage.name, sql))
        return predicates

    def loosening(self, stage_name: str) -> str:
        """What to loosen when the stage ``stage_name`` left no record."""
        return next(stage.loosen for stage in SCOPE_STAGES if stage.name == stage_name)

    def to_sql(self, node_uris: NodeLookup) -> str | None:
        """All restrictions ANDed, as a prefilter of the records, or None when nothing restricts."""
        stages = self.stage_predicates(node_uris)
        if not stages:
            return None
        return " AND ".join(f"({sql})" for _, sql in stages)


@dataclass(frozen=True, slots=True)
class ScopeStage:
    """One restriction of a :class:`Scope`: whether a scope has it, its SQL, and the advice when
    it alone leaves nothing (what a find that returned nothing says to loosen)."""

    name: str
    active: Callable[[Scope], bool]
    sql: Callable[[Scope], str]
    loosen: str
    over_nodes: bool = False
    """``sql`` is a predicate over the nodes table (a file's size, say), whose fields the records
    do not carry: the records kept are those of the nodes it keeps."""


def _time_sql(scope: Scope) -> str:
    assert scope.time_range is not None  # active only with one
    return _range(scope.time_range.to_filter(), scope.time_range.field, "time")


SCOPE_STAGES = (
    ScopeStage(
        "scope",
        lambda scope: bool(scope.targets) and not any(t.is_root for t in scope.targets),
        lambda scope: _any(path_scope_sql(t) for t in scope.targets),
        "search a wider --uri (or none)",
    ),
    ScopeStage(
        "context_type",
        lambda scope: bool(scope.context_types),
        lambda scope: sql_in("context_type", scope.context_types),
        "drop --context-type",
    ),
    ScopeStage(
        "level",
        lambda scope: bool(scope.levels),
        lambda scope: f"level IN ({', '.join(str(int(v)) for v in scope.levels)})",
        "drop --level",
    ),
    ScopeStage(
        "tags",
        lambda scope: bool(scope.tags),
        lambda scope: " AND ".join(f"array_has(tags, {sql_string(t)})" for t in scope.tags),
        "drop or change --tags",
    ),
    ScopeStage(
        "time",
        lambda scope: scope.time_range is not None,
        _time_sql,
        "widen --after/--before, or use --time-field created_at",
    ),
    ScopeStage(
        "filter",
        lambda scope: bool(scope.filter),
        lambda scope: filter_to_sql(scope.filter or {}, user=scope.user),
        "loosen --filter",
    ),
)
"""Every restriction a scope can hold, in the order they apply: the one definition the store's
SQL, the count per stage and a diagnosis's advice are all made from."""


def _any(parts: Iterable[str]) -> str:
    items = list(parts)
    return items[0] if len(items) == 1 else " OR ".join(f"({p})" for p in items)


def _field(node: dict[str, Any]) -> tuple[str, str]:
    name = node.get("field")
    if not isinstance(name, str) or name not in FILTER_FIELDS:
        raise InvalidArgumentError(
            f"Unknown filter field '{_name(name)}'",
            hint=f"Known fields: {', '.join(FILTER_FIELDS)}",
            details={"field": _jsonable(name), "known_fields": list(FILTER_FIELDS)},
        )
    kind = FILTER_FIELDS[name]
    column = "tags" if kind == "tags" else name
    return column, kind


def _must(node: dict[str, Any], name: str, kind: str, user: str) -> str:
    conds = node.get("conds")
    if not isinstance(conds, list) or not conds:
        raise _bad(f"'{node['op']}' needs a non-empty list 'conds'", node)
    if kind == "path":
        depth = _depth_para(node)
        scopes = []
        for value in conds:
            if not isinstance(value, str):
                raise _bad("uri conds must be viking:// strings", node)
            try:
                uri = parse(value, user=user, field="filter uri")
            except OpenVikingError as exc:
                raise InvalidArgumentError(f"Invalid URI in filter: {exc.message}", details=exc.details) from exc
            scopes.append(path_scope_sql(uri, max_depth=depth))
        return _any(scopes)
    if kind == "int":
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in conds):
            raise _bad(f"'{name}' conds must be integers", node)
        low, high = _INT_RANGE[name]
        held = sorted({int(v) for v in conds if low <= v <= high})  # nothing stored is outside
        return f"{name} IN ({', '.join(map(str, held))})" if held else "FALSE"
    if not all(isinstance(v, str) for v in conds):
        raise _bad(f"'{name}' conds must be strings", node)
    if kind == "tags":
        values = [v.strip().lower() for v in conds]
        return f"array_has_any(tags, [{', '.join(map(sql_string, values))}])"
    if kind == "time":
        return _any(f"{name} = {sql_timestamp(_time(v, node))}" for v in conds)
    return sql_in(name, conds)


def _range(node: dict[str, Any], name: str, kind: str) -> str:
    bounds = [(key, node[key]) for key in _RANGE_KEYS if node.get(key) is not None]
    if not bounds:
        raise _bad(f"'{node.get('op')}' needs at least one of gte, gt, lte, lt", node)
    parts = []
    for key, value in bounds:
        if kind == "time":
            literal = sql_timestamp(_time(value, node))
        elif kind == "int":
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise _bad(f"'{name}' bounds must be numbers", node)
            parts.append(_int_bound(name, key, value, node))
            continue
        elif kind in ("string", "path"):
            if not isinstance(value, str):
                raise _bad(f"'{name}' bounds must be strings", node)
            literal = sql_string(value)
        else:
            raise _bad(f"'range' does not apply to field '{name}'", node)
        parts.append(f"{name} {_RANGE_KEYS[key]} {literal}")
    return " AND ".join(parts)


def _time(value: Any, node: dict[str, Any]) -> datetime:
    if not isinstance(value, str):
        raise _bad("time bounds must be ISO 8601 strings", node)
    try:
        return parse_iso_datetime(value)
    except ValueError as exc:
        raise _bad(f"'{value}' is not an ISO 8601 time", node) from exc


def _int_bound(name: str, key: str, value: float, node: Any) -> str:
    """``name KEY value`` for an integer column: a fractional bound as the integer it means
    (``>= 1.5`` is ``>= 2``), a bound the column cannot reach as TRUE or FALSE."""
    if not math.isfinite(value):
        raise _bad(f"'{name}' bounds must be finite numbers (got {value!r})", node)
    whole = math.ceil(value) if key in ("gte", "lt") else math.floor(value)
    low, high = _INT_RANGE[name]
    above = key in ("gte", "gt")  # the values kept are above the bound
    if whole > high or (whole == high and key == "gt"):
        return "FALSE" if above else "TRUE"
    if whole < low or (whole == low and key == "lt"):
        return "TRUE" if above else "FALSE"
    return f"{name} {_RANGE_KEYS[key]} {whole}"


def _depth_para(node: dict[str, Any]) -> int | None:
    para = node.get("para")
    if para is None:
        return None
    match = _DEPTH_PARA.match(para) if isinstance(para, str) else None
    if not match:
        raise _bad("'para' must look like -d=N", node)
    depth = int(match.group(1))
    return None if depth < 0 else depth


def _bad(reason: str, node: Any) -> InvalidArgumentError:
    return InvalidArgumentError(f"Invalid filter: {reason}", details={"node": _jsonable(node)})


def _too_deep(node: Any) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"Invalid filter: nodes are nested more than {MAX_DEPTH} levels deep",
        hint="Join the conditions in one 'and' or 'or' instead of nesting them",
        details={"node": describe(node), "limit": MAX_DEPTH},
    )


def _name(value: Any) -> str:
    """An op or field as a message quotes it: a short string as it is, anything else described."""
    return value if isinstance(value, str) and len(value) <= 60 else describe(value)


def _jsonable(node: Any) -> Any:
    """``node`` for an error's details: itself when it is small JSON, else a short description."""
    try:
        text = json.dumps(node, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return describe(node)
    return node if len(text) <= 2000 else describe(node)


def levels_from(value: int | str | Sequence[int | str] | None) -> tuple[int, ...]:
    """Parse ``level`` given as ``2``, ``"0,2"`` or ``[0, "1"]`` into a sorted tuple.

    Raises:
        InvalidArgumentError: a part that is not 0, 1 or 2.
    """
    if value is None:
        return ()
    items: list[Any] = [value] if isinstance(value, int | str) else list(value) if _listed(value) else [None]
    if not all(isinstance(item, int | str) for item in items):
        raise InvalidArgumentError(
            f"level must be 0, 1, 2, a string such as '0,2' or a list of them (got {describe(value)})",
            hint="Example: level=[0, 1]",
            details={"level": describe(value)},
        )
    levels: set[int] = set()
    for item in items:
        text_of_item = item if isinstance(item, str) else str(item) if abs(item) < 10**6 else describe(item)
        for part in text_of_item.split(","):
            text = part.strip()
            if not text:
                continue
            if text.upper().startswith("L"):
                text = text[1:]
            if text not in ("0", "1", "2"):
                raise InvalidArgumentError(
                    f"Invalid level '{_name(part.strip())}': levels are 0 (abstract), 1 (overview) and 2 (content)",
                    hint="Example: level=[0, 1]",
                    details={"level": _name(text_of_item)},
                )
            levels.add(int(text))
    return tuple(sorted(levels))


def _listed(value: Any) -> bool:
    return isinstance(value, list | tuple | set | frozenset)
