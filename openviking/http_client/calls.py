"""The requests of the interface: :class:`Call`, and ``_Calls`` with one request builder per method.

Each method of ``_Calls`` has the exact signature of the interface method it stands for and only
builds the request: method, path, query or body, whether it is a read (and may be tried again),
and how the envelope's ``result`` becomes the return value with ``from_dict()``. Both clients
take these methods as they are, so neither can drift from the interface in its parameters.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from openviking.hits import FindResult
from openviking.interface import (
    FilterSpec,
    LevelSpec,
    MessageContent,
    ProgressCallback,
    Session,
    TagSpec,
    TelemetrySpec,
)
from openviking.message import TextPart
from openviking.results import (
    AddResult,
    DoctorReport,
    Entry,
    GlobResult,
    GrepResult,
    LinkResult,
    MemoryResult,
    MessageAdded,
    MkdirResult,
    MoveResult,
    ReindexResult,
    Relation,
    RemoveResult,
    SessionDeleted,
    SessionInfo,
    Stat,
    UnlinkResult,
)

from . import upstream

TimeBound = str | datetime | date
R = TypeVar("R")


@dataclass
class Call(Generic[R]):
    """One call of the interface as a request: where it goes, what it sends, whether it may be
    tried again, and how its ``result`` becomes the interface's return value."""

    method: str
    path: str
    decode: Callable[[Any, float], R]
    params: dict[str, Any] | None = None
    body: dict[str, Any] | None = None
    read: bool = False
    upload: Path | None = None  # sent to temp_upload first; its temp_file_id goes into the body
    progress: ProgressCallback | None = None
    fallback: Path | None = None  # a path the server may refuse (a user key): then uploaded instead
    # An add's body as upstream's server takes it (given the path uploaded), should /health say it is that one.
    upstream: Callable[[dict[str, Any], Path | None], dict[str, Any]] | None = None


def _plain(value: Any) -> Any:
    """``value`` as JSON values: tuples as lists, dates as ISO 8601, numpy numbers as numbers."""
    if isinstance(value, TextPart):
        return value.to_dict()
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    item = getattr(value, "item", None)  # a numpy scalar
    if callable(item):
        return item()
    return value


def _sent(**fields: Any) -> dict[str, Any]:
    """A body or query of the fields that say something (None and False are the defaults)."""
    return {k: _plain(v) for k, v in fields.items() if v is not None and v is not False}


def _list(decode: Callable[[Mapping[str, Any]], R]) -> Callable[[Any, float], list[R]]:
    return lambda result, _time: [decode(item) for item in result or []]


def _one(decode: Callable[[Mapping[str, Any]], R]) -> Callable[[Any, float], R]:
    return lambda result, _time: decode(result)


def _text(result: Any, _time: float) -> str:
    return str(result)


def _timed(decode: Callable[[Mapping[str, Any]], AddResult]) -> Callable[[Any, float], AddResult]:
    def timed(result: Any, seconds: float) -> AddResult:
        added = decode(result)
        added.seconds = seconds  # the envelope's time is how long the add took
        return added

    return timed


def _entries(simple: bool) -> Callable[[Any, float], list[Entry] | list[str]]:
    def decode(result: Any, _time: float) -> list[Entry] | list[str]:
        if simple:
            return [str(uri) for uri in result or []]
        return [Entry.from_dict(item) for item in result or []]

    return decode


def _globs(patterns: Sequence[str]) -> Any:
    """Globs as upstream takes them, comma-separated; a list when one holds a comma itself."""
    if not patterns:
        return None
    items = [patterns] if isinstance(patterns, str) else patterns
    if not isinstance(items, list | tuple | set | frozenset) or not all(isinstance(item, str) for item in items):
        return _plain(patterns)  # the server says what is wrong with it
    return list(items) if any("," in item for item in items) else ",".join(items)


def _one_or_many(uris: str | Sequence[str] | None) -> Any:
    """One URI as a string (all upstream takes), several as a list."""
    if isinstance(uris, list | tuple) and len(uris) == 1:
        return _plain(uris[0])
    return _plain(uris)


def _session_path(session_id: str) -> str:
    from openviking.session.sessions import validate_session_id

    return "/api/v1/sessions/" + quote(validate_session_id(session_id), safe="")


def _sent_parts(body: Mapping[str, Any]) -> list[dict[str, str]]:
    """The parts of a message body, for a server that does not answer with the message."""
    if isinstance(body.get("content"), str):
        return [{"type": "text", "text": body["content"]}]
    parts = body.get("parts")
    return [dict(part) for part in parts if isinstance(part, Mapping)] if isinstance(parts, list) else []


def _message_body(role: str, content: Any) -> dict[str, Any]:
    """``content`` as the route takes it: a string as ``content``, parts as ``parts``."""
    if isinstance(content, str):
        return {"role": role, "content": content}
    items: Iterable[Any] = [content] if isinstance(content, TextPart | Mapping) else content
    if not isinstance(content, TextPart | Mapping | list | tuple):
        return {"role": role, "content": _plain(content)}  # the server says what is wrong with it
    parts = [{"type": "text", "text": item} if isinstance(item, str) else _plain(item) for item in items]
    return {"role": role, "parts": parts}


class _Calls:
    """The requests of every interface method (the same for the sync and the async client)."""

    def __init__(self, loopback: bool) -> None:
        self.loopback = loopback

    # ------------------------------------------------------------------ retrieval
    def find(
        self,
        query: str,
        target_uri: str | Sequence[str] = "",
        limit: int = 10,
        node_limit: int | None = None,
        score_threshold: float | None = None,
        filter: FilterSpec | None = None,  # noqa: A002 - upstream's name
        since: TimeBound | None = None,
        until: TimeBound | None = None,
        time_field: str | None = None,
        level: LevelSpec | None = None,
        context_type: str | Sequence[str] | None = None,
        tags: TagSpec | None = None,
        include_provenance: bool = False,
        telemetry: TelemetrySpec = False,
        *,
        mode: str | None = None,
        explain: bool = False,
    ) -> Call[FindResult]:
        body = _sent(
            query=query, target_uri=target_uri or None, limit=limit, node_limit=node_limit,
            score_threshold=score_threshold, filter=filter, since=since, until=until, time_field=time_field,
            level=level, context_type=context_type, tags=tags, include_provenance=include_provenance,
            telemetry=telemetry, mode=mode, explain=explain,
        )  # fmt: skip
        return Call("POST", "/api/v1/search/find", _one(FindResult.from_dict), body=body, read=True)

    def search(
        self,
        query: str,
        target_uri: str | Sequence[str] = "",
        session: Session | SessionInfo | str | None = None,
        session_id: str | None = None,
        limit: int = 10,
        node_limit: int | None = None,
        score_threshold: float | None = None,
        filter: FilterSpec | None = None,  # noqa: A002 - upstream's name
        since: TimeBound | None = None,
        until: TimeBound | None = None,
        time_field: str | None = None,
        level: LevelSpec | None = None,
        context_type: str | Sequence[str] | None = None,
        tags: TagSpec | None = None,
        include_provenance: bool = False,
        telemetry: TelemetrySpec = False,
        *,
        mode: str | None = None,
        explain: bool = False,
    ) -> Call[FindResult]:
        from openviking.retrieve.request import session_id_of

        body = _sent(
            query=query, target_uri=target_uri or None, session_id=session_id_of(session, session_id), limit=limit,
            node_limit=node_limit, score_threshold=score_threshold, filter=filter, since=since, until=until,
            time_field=time_field, level=level, context_type=context_type, tags=tags,
            include_provenance=include_provenance, telemetry=telemetry, mode=mode, explain=explain,
        )  # fmt: skip
        return Call("POST", "/api/v1/search/search", _one(FindResult.from_dict), body=body, read=True)

    def grep(
        self,
        uri: str,
        pattern: str,
        case_insensitive: bool = False,
        exclude_uri: str | Sequence[str] | None = None,
        node_limit: int | None = None,
        level_limit: int | None = 5,
        *,
        fixed_strings: bool = False,
        count: bool = False,
        files_with_matches: bool = False,
        spans: bool = False,
    ) -> Call[GrepResult]:
        body = _sent(
            uri=uri, pattern=pattern, case_insensitive=case_insensitive, exclude_uri=_one_or_many(exclude_uri),
            node_limit=node_limit, fixed_strings=fixed_strings, count=count,
            files_with_matches=files_with_matches, spans=spans,
        )  # fmt: skip
        body["level_limit"] = _plain(level_limit)  # None means every level: it is sent
        return Call("POST", "/api/v1/search/grep", _one(GrepResult.from_dict), body=body, read=True)

    def glob(self, pattern: str, uri: str = "viking://", node_limit: int | None = None) -> Call[GlobResult]:
        body = _sent(pattern=pattern, uri=uri, node_limit=node_limit)
        return Call("POST", "/api/v1/search/glob", _one(GlobResult.from_dict), body=body, read=True)

    # ------------------------------------------------------------------ reading
    def read(self, uri: str, offset: int = 0, limit: int = -1) -> Call[str]:
        params = _sent(uri=uri, offset=offset, limit=limit)
        return Call("GET", "/api/v1/content/read", _text, params=params, read=True)

    def abstract(self, uri: str) -> Call[str]:
        return Call("GET", "/api/v1/content/abstract", _text, params=_sent(uri=uri), read=True)

    def overview(self, uri: str) -> Call[str]:
        return Call("GET", "/api/v1/content/overview", _text, params=_sent(uri=uri), read=True)

    def ls(
        self,
        uri: str = "viking://",
        *,
        recursive: bool = False,
        simple: bool = False,
        show_hidden: bool = False,
        node_limit: int | None = None,
        abs_limit: int = 256,
    ) -> Call[list[Entry] | list[str]]:
        params = _sent(
            uri=uri, recursive=recursive, simple=simple, show_all_hidden=show_hidden, node_limit=node_limit,
            abs_limit=abs_limit,
        )  # fmt: skip
        return Call("GET", "/api/v1/fs/ls", _entries(simple is True), params=params, read=True)

    def tree(self, uri: str = "viking://", *, level_limit: int = 3, node_limit: int | None = None) -> Call[list[Entry]]:
        params = _sent(uri=uri, level_limit=level_limit, node_limit=node_limit)
        return Call("GET", "/api/v1/fs/tree", _list(Entry.from_dict), params=params, read=True)

    def stat(self, uri: str) -> Call[Stat]:
        return Call("GET", "/api/v1/fs/stat", _one(upstream.stat), params=_sent(uri=uri), read=True)

    def relations(self, uri: str) -> Call[list[Relation]]:
        return Call("GET", "/api/v1/relations", _list(Relation.from_dict), params=_sent(uri=uri), read=True)

    # ------------------------------------------------------------------ writing
    def _source(self, path: object, body: dict[str, Any]) -> tuple[Path | None, Path | None]:
        """Put in ``body`` what names ``path`` for the server; returns what to upload first,
        and what to upload should the server refuse a path of its machine."""
        if not isinstance(path, str | os.PathLike):
            body["path"] = _plain(path)  # the server says what is wrong with it
            return None, None
        local = Path(path).expanduser()
        try:
            here = local.exists()
        except (OSError, ValueError):
            here = False
        if not here:
            body["path"] = os.fspath(path)  # a path of the server's machine, or nothing at all
            return None, None
        local = local.absolute()
        if self.loopback:
            body["path"] = str(local)
            return None, local
        body["source_name"] = str(local)
        return local, None

    def add_resource(
        self,
        path: str | os.PathLike[str],
        to: str | None = None,
        parent: str | None = None,
        *,
        tags: TagSpec | None = None,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        progress: ProgressCallback | None = None,
        source_name: str | None = None,
    ) -> Call[AddResult]:
        # wait: upstream's server answers before it has indexed unless told to wait (ours always waits).
        body = _sent(to=to, parent=parent, tags=tags, include=_globs(include), exclude=_globs(exclude), wait=True)
        upload, fallback = self._source(path, body)
        if source_name is not None:
            body["source_name"] = source_name
        return Call(
            "POST", "/api/v1/resources", _timed(upstream.added), body=body, upload=upload, progress=progress,
            fallback=fallback, upstream=upstream.resource_body,
        )  # fmt: skip

    def add_memory(self, text: str, category: str | None = None, *, tags: TagSpec | None = None) -> Call[MemoryResult]:
        body = _sent(text=text, category=category, tags=tags)
        if tags is not None and not tags:
            body["tags"] = []  # no tags at all: the memory's are removed, where None keeps them
        return Call("POST", "/api/v1/memories", _one(MemoryResult.from_dict), body=body)

    def add_skill(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        *,
        tags: TagSpec | None = None,
        progress: ProgressCallback | None = None,
        source_name: str | None = None,
    ) -> Call[AddResult]:
        body = _sent(name=name, tags=tags, wait=True)
        upload, fallback = self._source(path, body)
        if source_name is not None:
            body["source_name"] = source_name
        return Call(
            "POST", "/api/v1/skills", _timed(upstream.added), body=body, upload=upload, progress=progress,
            fallback=fallback, upstream=upstream.skill_body,
        )  # fmt: skip

    def mkdir(self, uri: str, description: str | None = None) -> Call[MkdirResult]:
        body = _sent(uri=uri, description=description)
        return Call("POST", "/api/v1/fs/mkdir", _one(MkdirResult.from_dict), body=body)

    def rm(self, uri: str, recursive: bool = False) -> Call[RemoveResult]:
        params = _sent(uri=uri, recursive=recursive)
        return Call("DELETE", "/api/v1/fs", _one(upstream.removed), params=params)

    def mv(self, from_uri: str, to_uri: str) -> Call[MoveResult]:
        body = _sent(from_uri=from_uri, to_uri=to_uri)
        return Call("POST", "/api/v1/fs/mv", _one(upstream.moved), body=body)

    def link(self, from_uri: str, uris: str | Sequence[str], reason: str = "") -> Call[LinkResult]:
        body = _sent(from_uri=from_uri, to_uris=uris, reason=reason or None)
        return Call("POST", "/api/v1/relations/link", _one(LinkResult.from_dict), body=body)

    def unlink(self, from_uri: str, uri: str) -> Call[UnlinkResult]:
        body = _sent(from_uri=from_uri, to_uri=uri)
        return Call("DELETE", "/api/v1/relations/link", _one(UnlinkResult.from_dict), body=body)

    def reindex(self, uri: str | None = None, *, progress: ProgressCallback | None = None) -> Call[ReindexResult]:
        body = _sent(uri=uri or None)
        return Call("POST", "/api/v1/reindex", _one(ReindexResult.from_dict), body=body, progress=progress)

    # ------------------------------------------------------------------ sessions
    def create_session(self, session_id: str | None = None) -> Call[SessionInfo]:
        body = _sent(session_id=session_id)
        return Call("POST", "/api/v1/sessions", _one(upstream.session_info), body=body)

    def add_message(self, session_id: str, role: str, content: MessageContent) -> Call[MessageAdded]:
        path = _session_path(session_id) + "/messages"
        body = _message_body(role, content)
        return Call("POST", path, _one(upstream.message_added(role, _sent_parts(body))), body=body)

    def get_session(self, session_id: str) -> Call[SessionInfo]:
        return Call("GET", _session_path(session_id), _one(upstream.session_info), read=True)

    def list_sessions(self) -> Call[list[SessionInfo]]:
        return Call("GET", "/api/v1/sessions", _list(upstream.session_info), read=True)

    def delete_session(self, session_id: str) -> Call[SessionDeleted]:
        return Call("DELETE", _session_path(session_id), _one(upstream.session_deleted))

    # ------------------------------------------------------------------ health
    def doctor(self, *, repair: bool = False) -> Call[DoctorReport]:
        from openviking.arguments import flag

        if flag(repair, "repair"):  # mends the server's store: a write, with the root key
            return Call("POST", "/api/v1/doctor/repair", _one(DoctorReport.from_dict))
        return Call("GET", "/api/v1/doctor", _one(DoctorReport.from_dict), read=True)
