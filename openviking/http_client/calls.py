"""The requests of the interface: :class:`Call`, and :class:`Requests`, which makes one of each call.

A call of a declared operation (:mod:`openviking.contract.operations`) becomes its request from the
declaration alone: the route's method and path, the arguments in its query or body under
their wire names, whether it is a read (and may be tried again), and how the envelope's
``result`` becomes the return value (``from_dict()`` of the declared result type). The few
operations that need more (an add that uploads, a message's parts, find's one-or-many
targets as upstream takes them, the answers upstream's server gives) have a builder of their
own on :class:`Requests`, named after the operation.
"""

from __future__ import annotations

import contextlib
import os
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from openviking.contract.interface import ProgressCallback
from openviking.contract.operations import OPERATIONS, Operation
from openviking.contract.results import AddResult, DoctorReport, Entry, WatchInfo
from openviking.errors import InvalidArgumentError
from openviking.message import TextPart
from openviking.values.arguments import describe

from . import upstream

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
    raw: bool = False  # the answer is the bytes themselves, not an envelope (an error still is one)


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


def _bytes(result: Any, _time: float) -> bytes:
    return bytes(result)


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


class Requests:
    """The request of each operation's call (the same for the sync and the async client)."""

    def __init__(self, loopback: bool) -> None:
        self.loopback = loopback

    def call(self, operation: Operation[Any, Any], arguments: dict[str, Any]) -> Call[Any]:
        """The request of ``operation`` called with ``arguments`` (every parameter, by name)."""
        builder: Callable[[dict[str, Any]], Call[Any]] | None = getattr(self, f"_{operation.name}", None)
        return builder(arguments) if builder is not None else declared_call(operation, arguments)

    # ------------------------------------------------------------------ retrieval
    def _find(self, arguments: dict[str, Any]) -> Call[Any]:
        arguments = {**arguments, "filter": _filter_object(arguments["filter"])}
        return _with(declared_call(OPERATIONS["find"], arguments), target_uri=_one_or_many(arguments["target_uri"]))

    def _search(self, arguments: dict[str, Any]) -> Call[Any]:
        from openviking.retrieve.request import session_id_of

        chosen = session_id_of(arguments["session"], arguments["session_id"])
        arguments = {**arguments, "session_id": chosen, "filter": _filter_object(arguments["filter"])}
        return _with(declared_call(OPERATIONS["search"], arguments), target_uri=_one_or_many(arguments["target_uri"]))

    def _context(self, arguments: dict[str, Any]) -> Call[Any]:
        return _with(declared_call(OPERATIONS["context"], arguments), target_uri=_one_or_many(arguments["target_uri"]))

    def _grep(self, arguments: dict[str, Any]) -> Call[Any]:
        return _with(declared_call(OPERATIONS["grep"], arguments), exclude_uri=_one_or_many(arguments["exclude_uri"]))

    def _ls(self, arguments: dict[str, Any]) -> Call[Any]:
        return declared_call(OPERATIONS["ls"], arguments, _entries(arguments["simple"] is True))

    def _stat(self, arguments: dict[str, Any]) -> Call[Any]:
        return declared_call(OPERATIONS["stat"], arguments, _one(upstream.stat))

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

    def _add_resource(self, arguments: dict[str, Any]) -> Call[Any]:
        a = arguments
        # wait: sent either way, as upstream's server answers before it has indexed unless told to wait.
        body = _sent(
            to=a["to"], parent=a["parent"], tags=a["tags"], include=_globs(a["include"]),
            exclude=_globs(a["exclude"]),
        )  # fmt: skip
        body["wait"] = a["wait"]
        upload, fallback = self._source(a["path"], body)
        if a["source_name"] is not None:
            body["source_name"] = a["source_name"]
        return Call(
            "POST", "/api/v1/resources", _timed(upstream.added), body=body, upload=upload, progress=a["progress"],
            fallback=fallback, upstream=upstream.resource_body,
        )  # fmt: skip

    def _add_skill(self, arguments: dict[str, Any]) -> Call[Any]:
        a = arguments
        body = {**_sent(name=a["name"], tags=a["tags"]), "wait": a["wait"]}
        upload, fallback = self._source(a["path"], body)
        if a["source_name"] is not None:
            body["source_name"] = a["source_name"]
        return Call(
            "POST", "/api/v1/skills", _timed(upstream.added), body=body, upload=upload, progress=a["progress"],
            fallback=fallback, upstream=upstream.skill_body,
        )  # fmt: skip

    def _watch(self, arguments: dict[str, Any]) -> Call[Any]:
        path = arguments["path"]
        if isinstance(path, str | os.PathLike) and self.loopback:
            local = Path(path).expanduser()
            with contextlib.suppress(OSError, ValueError):
                if local.exists():  # the same machine: its absolute path names it there too
                    arguments = {**arguments, "path": str(local.absolute())}
        return declared_call(OPERATIONS["watch"], arguments)

    def _update_watch(self, arguments: dict[str, Any]) -> Call[Any]:
        # upstream's PATCH: the watch's URI in the query, the fields that change in the body
        body = {k: _plain(v) for k in ("watch_interval", "is_active") if (v := arguments[k]) is not None}
        return Call(
            "PATCH", "/api/v1/watches", _decoder(WatchInfo), params={"to_uri": arguments["to_uri"]}, body=body,
            read=False,
        )  # fmt: skip

    def _add_memory(self, arguments: dict[str, Any]) -> Call[Any]:
        call = declared_call(OPERATIONS["add_memory"], arguments)
        tags = arguments["tags"]
        if tags is not None and not tags:
            # no tags at all: the memory's are removed, where None keeps them
            call.body = {**(call.body or {}), "tags": []}
        return call

    def _rm(self, arguments: dict[str, Any]) -> Call[Any]:
        return declared_call(OPERATIONS["rm"], arguments, _one(upstream.removed))

    def _mv(self, arguments: dict[str, Any]) -> Call[Any]:
        return declared_call(OPERATIONS["mv"], arguments, _one(upstream.moved))

    # ------------------------------------------------------------------ sessions
    def _create_session(self, arguments: dict[str, Any]) -> Call[Any]:
        return declared_call(OPERATIONS["create_session"], arguments, _one(upstream.session_info))

    def _add_message(self, arguments: dict[str, Any]) -> Call[Any]:
        path = _session_path(arguments["session_id"]) + "/messages"
        role = arguments["role"]
        body = _message_body(role, arguments["content"])
        if arguments["created_at"] is not None:
            body["created_at"] = _plain(arguments["created_at"])
        return Call("POST", path, _one(upstream.message_added(role, _sent_parts(body))), body=body)

    def _get_session(self, arguments: dict[str, Any]) -> Call[Any]:
        return declared_call(OPERATIONS["get_session"], arguments, _one(upstream.session_info))

    def _list_sessions(self, arguments: dict[str, Any]) -> Call[Any]:
        return declared_call(OPERATIONS["list_sessions"], arguments, _list(upstream.session_info))

    def _delete_session(self, arguments: dict[str, Any]) -> Call[Any]:
        return declared_call(OPERATIONS["delete_session"], arguments, _one(upstream.session_deleted))

    # ------------------------------------------------------------------ health
    def _doctor(self, arguments: dict[str, Any]) -> Call[Any]:
        from openviking.values.arguments import flag

        if flag(arguments["repair"], "repair"):  # mends the server's store: a write, with the root key
            return Call("POST", "/api/v1/doctor/repair", _one(DoctorReport.from_dict))
        return Call("GET", "/api/v1/doctor", _one(DoctorReport.from_dict), read=True)


def declared_call(
    operation: Operation[Any, Any],
    arguments: Mapping[str, Any],
    decode: Callable[[Any, float], Any] | None = None,
) -> Call[Any]:
    """The request of a call of ``operation`` as its declaration says: the path with its
    parameters filled in, the rest in the query or the body under their wire names (an
    argument left at a default that says nothing, None, False or "", is not sent), a read
    unless it writes, and the ``result`` decoded as the declared result type (or by ``decode``)."""
    route = operation.http
    path = route.path
    for name in route.path_params:
        path = path.replace("{" + name + "}", _path_value(name, arguments[name]))
    fields: dict[str, Any] = {}
    for name, value in arguments.items():
        if operation.params[name].local or name in route.path_params:
            continue
        default = operation.default(name)
        if _same(value, default) and default in (None, False, ""):
            continue
        fields[operation.wire_name(name)] = _plain(value)
    decode = decode or _decoder(operation.result)
    raw = operation.result is bytes
    if route.in_query:
        return Call(route.method, path, decode, params=fields, read=not operation.writes, raw=raw)
    return Call(route.method, path, decode, body=fields, read=not operation.writes, raw=raw)


def _filter_object(value: Any) -> Any:
    """A filter as it travels: an object (its JSON text read here, as the embedded client reads
    it, with the same errors); anything else as it is, for the server to refuse."""
    if not isinstance(value, str):
        return value
    from openviking.store.filters import parse_filter  # the DSL's reader: no LanceDB, no Arrow

    return parse_filter(value)


def _same(value: Any, default: Any) -> bool:
    return value is default or (type(value) is type(default) and value == default)


def _path_value(name: str, value: Any) -> str:
    if name == "session_id":
        return _session_path(value).rsplit("/", 1)[1]
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"{name} must be a non-empty string (got {describe(value)})")
    return quote(value, safe="")


def _decoder(result: Any) -> Callable[[Any, float], Any]:
    """How the envelope's ``result`` becomes a value of the declared type ``result``."""
    if result is str:
        return _text
    if result is bytes:
        return _bytes
    if result in (int, float, bool):  # a count, a score, a yes or no: the JSON value itself
        return lambda value, _time: result(value)
    if typing.get_origin(result) is list:
        (item,) = typing.get_args(result)
        return _list(item.from_dict)
    return _one(result.from_dict)


def _with(call: Call[R], **fields: Any) -> Call[R]:
    """``call`` with these fields of its body replaced (dropped when None)."""
    body = dict(call.body or {})
    for key, value in fields.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    call.body = body
    return call
