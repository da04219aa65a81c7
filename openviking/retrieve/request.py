"""A find or search request, checked: the query, its scope, how many hits, how to rank.

Every argument of find and search is validated here, before a store is opened or a model
loaded, so a bad one fails at once with an :class:`~openviking.errors.InvalidArgumentError`
naming it. What comes out is a :class:`FindRequest`, which the retriever, search and the
no-result diagnosis take as it is.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from openviking.config import RETRIEVAL_MODES
from openviking.contract.hits import FindResult
from openviking.errors import InvalidArgumentError, InvalidURIError
from openviking.store.filters import Scope, check_filter, levels_from, parse_filter
from openviking.system.ostext import require_utf8
from openviking.values.access import Access
from openviking.values.arguments import describe, flag, real_number, whole_number
from openviking.values.tags import normalize_tags
from openviking.values.timefilter import parse_time_range
from openviking.values.uri import CONTEXT_TYPES, VikingURI, default_targets, parse, sidecar_owner

__all__ = [
    "MAX_LIMIT",
    "FindArguments",
    "FindRequest",
    "Telemetry",
    "context_types_from",
    "find_request",
    "query_arguments",
]

MAX_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class FindRequest:
    """A validated find: the query, its scope, and how to rank."""

    query: str
    scope: Scope
    limit: int
    threshold: float
    mode: str
    translate: bool = True


UPSTREAM_DEFAULT_MODE = "list"


@dataclass(frozen=True, slots=True, kw_only=True)
class FindArguments:
    """What a caller of find, search or context asked for, unchecked: one field per parameter
    of theirs that the request is made of, each passed by its name (none has a default, so a
    field a caller leaves out is a type error, not a value lost on the way)."""

    query: object
    target_uri: str | Sequence[str] | None
    limit: object
    node_limit: object
    score_threshold: object
    filter: Mapping[str, object] | str | None  # noqa: A002 - upstream's name
    since: str | datetime | date | None
    until: str | datetime | date | None
    time_field: str | None
    level: int | str | Sequence[int | str] | None
    context_type: str | Sequence[str] | None
    tags: Iterable[str] | str | None
    mode: str | None


def query_arguments(query: object, target_uri: str | Sequence[str] | None, limit: object) -> FindArguments:
    """The arguments of a find that gives only a query, its targets and a count (context's)."""
    return FindArguments(
        query=query,
        target_uri=target_uri,
        limit=limit,
        node_limit=None,
        score_threshold=None,
        filter=None,
        since=None,
        until=None,
        time_field=None,
        level=None,
        context_type=None,
        tags=None,
        mode=None,
    )


def find_request(
    arguments: FindArguments,
    *,
    user: str,
    default_threshold: float,
    default_mode: str,
    translate: bool,
) -> FindRequest:
    """Check every argument of a find (or search) and build its request.

    Raises:
        InvalidArgumentError: the first bad argument.
        InvalidURIError, PermissionDeniedError: a bad target, or another user's space.
    """
    if not isinstance(arguments.query, str):
        raise InvalidArgumentError(
            f"Search query must be a string (got {type(arguments.query).__name__})",
            details={"query": describe(arguments.query)},
        )
    require_utf8(arguments.query, "Search query", "query")
    if not arguments.query.strip():
        raise InvalidArgumentError(
            "Search query must not be empty.",
            hint='Say what to look for in words, e.g. "how to authenticate users"',
            details={"query": arguments.query},
        )
    # any count above MAX_LIMIT asks for everything there is (it never reaches the store, so it
    # may be as large as a caller likes); node_limit, when given, wins
    hint = "Pass limit as a whole number, e.g. limit=10"
    effective = whole_number(arguments.limit, "limit", maximum=None, hint=hint)
    if arguments.node_limit is not None:
        effective = whole_number(arguments.node_limit, "node_limit", maximum=None, hint=hint)
    threshold = real_number(
        default_threshold if arguments.score_threshold is None else arguments.score_threshold,
        "score_threshold",
        hint="Pass score_threshold as a number, e.g. score_threshold=0.3 (-1 keeps everything)",
    )
    # upstream's search calls its default mode "list" (its other, "context", is context's own route)
    given_default = arguments.mode is None or arguments.mode in ("", UPSTREAM_DEFAULT_MODE)
    chosen_mode: object = default_mode if given_default else arguments.mode
    if not isinstance(chosen_mode, str) or chosen_mode not in RETRIEVAL_MODES:
        shown = chosen_mode if isinstance(chosen_mode, str) and len(chosen_mode) <= 60 else describe(chosen_mode)
        raise InvalidArgumentError(
            f"mode must be one of: {', '.join(RETRIEVAL_MODES)} (got '{shown}')",
            hint="Pass mode='hybrid', 'vector' or 'keyword'",
            details={"mode": shown},
        )
    time_range = parse_time_range(arguments.since, arguments.until, arguments.time_field)
    parsed_filter = parse_filter(arguments.filter)
    if parsed_filter:
        check_filter(parsed_filter, user=user)
    scope = Scope(
        targets=targets_of(arguments.target_uri, user),
        context_types=context_types_from(arguments.context_type),
        levels=levels_from(arguments.level),
        tags=normalize_tags(arguments.tags),
        time_range=time_range,
        filter=parsed_filter,
        user=user,
    )
    return FindRequest(
        arguments.query.strip(), scope, min(effective, MAX_LIMIT), float(threshold), chosen_mode, translate
    )


def targets_of(target_uri: str | Sequence[str] | None, user: str) -> tuple[VikingURI, ...]:
    """The URIs a find searches: the given ones (a level-0/1 hit's URI names its directory),
    or, when none is given, the defaults (resources, the user's space, agent skills).

    Raises:
        InvalidURIError: a target that is not a string or not a URI.
        PermissionDeniedError: another user's space.
    """
    if not isinstance(target_uri, str | list | tuple | type(None)):
        raise InvalidURIError(describe(target_uri), "target_uri must be a string or a list of strings")
    items = [target_uri] if isinstance(target_uri, str) or target_uri is None else list(target_uri)
    access = Access(user)
    targets: list[VikingURI] = []
    for item in items:
        if item is None:
            continue
        if not isinstance(item, str):
            raise InvalidURIError(describe(item), "target_uri must be a string or a list of strings")
        if item.strip() in ("", "/", "viking://"):
            continue  # no target: alone, every scope; in a list, nothing added to the others
        uri = sidecar_owner(parse(item, user=user, field="target_uri"))
        if uri.is_root:
            continue
        uri = access.searchable(uri)
        if uri not in targets:
            targets.append(uri)
    return tuple(targets) or default_targets(user)


def context_types_from(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"memory,skill"`` or a list -> a tuple of distinct, known context types.

    Raises:
        InvalidArgumentError: a type that is not one of memory, resource, skill.
    """
    if value is None:
        return ()
    if not isinstance(value, str | list | tuple | set | frozenset):
        raise InvalidArgumentError(
            f"context_type must be a string or a list of strings (got {type(value).__name__})",
            hint="Example: context_type=['memory', 'skill']",
        )
    items = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(item, str) for item in items):
        raise InvalidArgumentError(
            f"context_type must be a string or a list of strings (got {describe(value)})",
            hint="Example: context_type=['memory', 'skill']",
        )
    seen: list[str] = []
    for item in items:
        for part in item.split(","):
            text = part.strip().lower()
            if not text:
                continue
            if text not in CONTEXT_TYPES:
                shown = part.strip() if len(part) <= 60 else describe(part.strip())
                raise InvalidArgumentError(
                    f"context_type must be one or more of: {', '.join(CONTEXT_TYPES)} (got '{shown}')",
                    hint="Example: context_type=['memory', 'skill']",
                    details={"context_type": item if len(item) <= 200 else describe(item)},
                )
            if text not in seen:
                seen.append(text)
    return tuple(seen)


class Telemetry:
    """What ``include_provenance`` and ``telemetry`` asked a find or search to attach."""

    def __init__(self, telemetry: object, include_provenance: bool, operation: str) -> None:
        self.started = _telemetry_start(telemetry)
        self.include_provenance = flag(include_provenance, "include_provenance")
        self.operation = operation

    def attach(self, result: FindResult) -> FindResult:
        """``result`` with its provenance asked for, and its telemetry when any was."""
        result.include_provenance = self.include_provenance
        if self.started is not None:
            result.telemetry = {
                "id": f"tm_{uuid.uuid4().hex}",
                "summary": {
                    "operation": self.operation,
                    "duration_ms": round((time.perf_counter() - self.started) * 1000, 3),
                    "vector": {"returned": result.total},
                },
            }
        return result


def _telemetry_start(telemetry: object) -> float | None:
    """The start time when telemetry was asked for (``True`` or ``{"summary": True}``), else None.

    Raises:
        InvalidArgumentError: anything else.
    """
    if isinstance(telemetry, bool):
        return time.perf_counter() if telemetry else None
    if (
        isinstance(telemetry, dict)
        and set(telemetry) <= {"summary"}
        and all(isinstance(v, bool) for v in telemetry.values())
    ):
        return time.perf_counter() if telemetry.get("summary", False) else None
    raise InvalidArgumentError(
        f'telemetry must be true, false or {{"summary": true}} (got {describe(telemetry)})',
        details={"telemetry": describe(telemetry)},
    )


def session_id_of(session: object, session_id: str | None) -> str | None:
    """The id of the session a search reads: ``session_id``, or ``session`` as a Session
    handle (``client.session()``), ``create_session()``'s result, or the id itself.

    Raises:
        InvalidArgumentError: ``session`` is none of those, names another session than
            ``session_id``, or the id is empty.
    """
    if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
        raise InvalidArgumentError(
            "session_id must be a non-empty string", hint="Leave it out to search without a session"
        )
    if session is not None:
        named = session.get("session_id") if isinstance(session, Mapping) else getattr(session, "session_id", session)
        if not isinstance(named, str):
            raise InvalidArgumentError(
                f"session must be a Session, a session id or create_session()'s dict (got {type(session).__name__})",
                hint="Pass session=client.session(id), or session_id=id",
            )
        if session_id is not None and session_id != named:
            raise InvalidArgumentError(
                f"session names '{named}' and session_id '{session_id}': give one",
                details={"session": named, "session_id": session_id},
            )
        session_id = named
    if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
        raise InvalidArgumentError(
            "session_id must be a non-empty string", hint="Leave it out to search without a session"
        )
    return session_id
