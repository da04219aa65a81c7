"""The upstream filter DSL, validated and turned into LanceDB SQL prefilters.

A filter is a JSON tree of nodes, each with an ``op``: ``and``/``or`` (``conds``: nodes),
``must``/``must_not`` (``field``, ``conds``: values; ``para: "-d=N"`` limits a ``uri`` scope to
N levels below each value), ``range``/``range_out`` (``gte``/``gt``/``lte``/``lt``),
``time_range`` (``field`` a time field, ``gte``/``lte`` ISO times), ``contains`` (``substring``)
and ``prefix`` (``prefix``). Unknown ops and fields are refused, so a typo never matches
nothing in silence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from openviking.errors import InvalidArgumentError, OpenVikingError
from openviking.timefilter import TimeRange, parse_iso_datetime
from openviking.uri import VikingURI, parse

from .schema import FILTER_FIELDS

__all__ = [
    "OPS",
    "Scope",
    "check_filter",
    "levels_from",
    "parse_filter",
]

OPS = ("and", "or", "must", "must_not", "range", "range_out", "time_range", "contains", "prefix")
_DEPTH_PARA = re.compile(r"^-d=(-?\d+)$")
_RANGE_KEYS = {"gte": ">=", "gt": ">", "lte": "<=", "lt": "<"}


def sql_string(value: str) -> str:
    """A SQL string literal (single quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Iterable[str]) -> str:
    """``column IN ('a', 'b')`` for string values."""
    return f"{column} IN ({', '.join(map(sql_string, values))})"


def sql_timestamp(moment: datetime) -> str:
    """A UTC timestamp literal with millisecond precision."""
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
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(
                f"--filter is not valid JSON: {exc.msg} at column {exc.colno}",
                hint='Example: filter={"op": "must", "field": "level", "conds": [2]}',
                details={"filter": value},
            ) from exc
    if not isinstance(value, dict):
        raise InvalidArgumentError("filter must be a JSON object with an 'op'", details={"filter": value})
    return value or None


def check_filter(node: dict[str, Any], *, user: str = "default") -> None:
    """Validate a DSL tree before anything is opened.

    Raises:
        InvalidArgumentError: unknown op or field, or a value of the wrong kind.
    """
    filter_to_sql(node, user=user)


def filter_to_sql(node: dict[str, Any], *, user: str = "default") -> str:
    """Validate one DSL node (recursively) and return its SQL predicate.

    Raises:
        InvalidArgumentError: unknown op or field, or a value of the wrong kind.
    """
    if not isinstance(node, dict):
        raise _bad("each filter node must be a JSON object", node)
    op = node.get("op")
    if op not in OPS:
        raise InvalidArgumentError(
            f"Unknown filter op '{op}'",
            hint=f"Known ops: {', '.join(OPS)}",
            details={"op": op, "known_ops": list(OPS)},
        )
    if op in ("and", "or"):
        conds = node.get("conds")
        if not isinstance(conds, list):
            raise _bad(f"'{op}' needs a list 'conds'", node)
        if not conds:
            return "TRUE" if op == "and" else "FALSE"
        joined = f" {op.upper()} ".join(f"({filter_to_sql(c, user=user)})" for c in conds)
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

    def stage_predicates(self) -> list[tuple[str, str]]:
        """``(stage name, SQL)`` for every active restriction, in the order they apply."""
        stages: list[tuple[str, str]] = []
        if self.targets and not any(t.is_root for t in self.targets):
            stages.append(("scope", _any(path_scope_sql(t) for t in self.targets)))
        if self.context_types:
            stages.append(("context_type", sql_in("context_type", self.context_types)))
        if self.levels:
            stages.append(("level", f"level IN ({', '.join(str(int(v)) for v in self.levels)})"))
        if self.tags:
            stages.append(("tags", " AND ".join(f"array_has(tags, {sql_string(t)})" for t in self.tags)))
        if self.time_range is not None:
            stages.append(("time", _range(self.time_range.to_filter(), self.time_range.field, "time")))
        if self.filter:
            stages.append(("filter", filter_to_sql(self.filter, user=self.user)))
        return stages

    def to_sql(self) -> str | None:
        """All restrictions ANDed, or None when nothing restricts."""
        stages = self.stage_predicates()
        if not stages:
            return None
        return " AND ".join(f"({sql})" for _, sql in stages)


def _any(parts: Iterable[str]) -> str:
    items = list(parts)
    return items[0] if len(items) == 1 else " OR ".join(f"({p})" for p in items)


def _field(node: dict[str, Any]) -> tuple[str, str]:
    name = node.get("field")
    if name not in FILTER_FIELDS:
        raise InvalidArgumentError(
            f"Unknown filter field '{name}'",
            hint=f"Known fields: {', '.join(FILTER_FIELDS)}",
            details={"field": name, "known_fields": list(FILTER_FIELDS)},
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
        return f"{name} IN ({', '.join(str(v) for v in conds)})"
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
            literal = repr(value)
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


def _depth_para(node: dict[str, Any]) -> int | None:
    para = node.get("para")
    if para is None:
        return None
    match = _DEPTH_PARA.match(str(para))
    if not match:
        raise _bad("'para' must look like -d=N", node)
    depth = int(match.group(1))
    return None if depth < 0 else depth


def _bad(reason: str, node: Any) -> InvalidArgumentError:
    return InvalidArgumentError(f"Invalid filter: {reason}", details={"node": _jsonable(node)})


def _jsonable(node: Any) -> Any:
    try:
        json.dumps(node)
    except (TypeError, ValueError):
        return repr(node)
    return node


def levels_from(value: int | str | Sequence[int | str] | None) -> tuple[int, ...]:
    """Parse ``level`` given as ``2``, ``"0,2"`` or ``[0, "1"]`` into a sorted tuple.

    Raises:
        InvalidArgumentError: a part that is not 0, 1 or 2.
    """
    if value is None:
        return ()
    items: list[int | str] = [value] if isinstance(value, int | str) else list(value)
    levels: set[int] = set()
    for item in items:
        for part in str(item).split(","):
            text = part.strip()
            if not text:
                continue
            if text.upper().startswith("L"):
                text = text[1:]
            if text not in ("0", "1", "2"):
                raise InvalidArgumentError(
                    f"Invalid level '{part.strip()}': levels are 0 (abstract), 1 (overview) and 2 (content)",
                    hint="Example: level=[0, 1]",
                    details={"level": str(item)},
                )
            levels.add(int(text))
    return tuple(sorted(levels))
