"""The HTTP clients: :class:`SyncHTTPClient` and :class:`AsyncHTTPClient`, the interface over an openviking server.

Each method of :class:`~openviking.interface.OpenVikingClient` is one request (an add that
uploads is two) to the routes of ``openviking serve``, and returns what the embedded client
returns, rebuilt from the JSON with ``from_dict()``; the server's errors are raised as the
same :class:`~openviking.errors.OpenVikingError` subclasses, and the warnings it sends go to
the ``warn`` callback, as the embedded client's do.

Reads (every GET, and find, search, grep and glob) are tried up to three times, with a short
backoff, when the connection fails, times out or the server answers 503; a write is tried
again only when its request never left (the connection could not be made), so it never runs
twice. The API key travels as ``Authorization: Bearer`` (httpx masks that header in every
repr) and appears in no repr, error or log line.
"""

from __future__ import annotations

import functools
import io
import ipaddress
import os
import tarfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar
from urllib.parse import quote, urlsplit

from ._version import __version__
from .errors import (
    DeadlineExceededError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    OpenVikingError,
    PermissionDeniedError,
    UnauthenticatedError,
    UnavailableError,
    error_from_dict,
)
from .interface import FilterSpec, LevelSpec, MessageContent, ProgressCallback, Session, TagSpec, TelemetrySpec
from .message import TextPart
from .results import (
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
from .types import FindResult
from .warn import WarningCallback, python_warning

if TYPE_CHECKING:
    import httpx

__all__ = ["AsyncHTTPClient", "AsyncSession", "SyncHTTPClient"]

DEFAULT_URL = "http://localhost:1933"
TRIES = 3
BACKOFF = 0.2  # seconds before the second try; doubled before the third
TimeBound = str | datetime | date
R = TypeVar("R")
P = ParamSpec("P")


# ----------------------------------------------------------------------------- one request
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


def _session_path(session_id: str) -> str:
    from .session.sessions import validate_session_id

    return "/api/v1/sessions/" + quote(validate_session_id(session_id), safe="")


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
        from .retrieve.request import session_id_of

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
            uri=uri, pattern=pattern, case_insensitive=case_insensitive, exclude_uri=exclude_uri,
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
        return Call("GET", "/api/v1/fs/stat", _one(Stat.from_dict), params=_sent(uri=uri), read=True)

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
        body = _sent(to=to, parent=parent, tags=tags, include=include or None, exclude=exclude or None)
        upload, fallback = self._source(path, body)
        if source_name is not None:
            body["source_name"] = source_name
        return Call(
            "POST", "/api/v1/resources", _timed(AddResult.from_dict), body=body, upload=upload, progress=progress,
            fallback=fallback,
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
        body = _sent(name=name, tags=tags)
        upload, fallback = self._source(path, body)
        if source_name is not None:
            body["source_name"] = source_name
        return Call(
            "POST", "/api/v1/skills", _timed(AddResult.from_dict), body=body, upload=upload, progress=progress,
            fallback=fallback,
        )  # fmt: skip

    def mkdir(self, uri: str, description: str | None = None) -> Call[MkdirResult]:
        body = _sent(uri=uri, description=description)
        return Call("POST", "/api/v1/fs/mkdir", _one(MkdirResult.from_dict), body=body)

    def rm(self, uri: str, recursive: bool = False) -> Call[RemoveResult]:
        params = _sent(uri=uri, recursive=recursive)
        return Call("DELETE", "/api/v1/fs", _one(RemoveResult.from_dict), params=params)

    def mv(self, from_uri: str, to_uri: str) -> Call[MoveResult]:
        body = _sent(from_uri=from_uri, to_uri=to_uri)
        return Call("POST", "/api/v1/fs/mv", _one(MoveResult.from_dict), body=body)

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
        return Call("POST", "/api/v1/sessions", _one(SessionInfo.from_dict), body=body)

    def add_message(self, session_id: str, role: str, content: MessageContent) -> Call[MessageAdded]:
        path = _session_path(session_id) + "/messages"
        return Call("POST", path, _one(MessageAdded.from_dict), body=_message_body(role, content))

    def get_session(self, session_id: str) -> Call[SessionInfo]:
        return Call("GET", _session_path(session_id), _one(SessionInfo.from_dict), read=True)

    def list_sessions(self) -> Call[list[SessionInfo]]:
        return Call("GET", "/api/v1/sessions", _list(SessionInfo.from_dict), read=True)

    def delete_session(self, session_id: str) -> Call[SessionDeleted]:
        return Call("DELETE", _session_path(session_id), _one(SessionDeleted.from_dict))

    # ------------------------------------------------------------------ health
    def doctor(self) -> Call[DoctorReport]:
        return Call("GET", "/api/v1/doctor", _one(DoctorReport.from_dict), read=True)


# ----------------------------------------------------------------------------- what both clients share
def _checked_url(url: object) -> tuple[str, str, bool]:
    """The base URL, the same without any credentials (for messages), and whether it is loopback.

    Raises:
        InvalidArgumentError: not an http(s) URL with a host.
    """
    if not isinstance(url, str) or not url.strip():
        raise InvalidArgumentError(
            "url must be the server's address, e.g. http://localhost:1933", details={"url": repr(url)[:200]}
        )
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        shown = f"{parts.scheme}://{parts.hostname or ''}" if parts.scheme else url.strip().split("@")[-1]
        raise InvalidArgumentError(
            f"url must be an http:// or https:// address with a host (got {shown!r})",
            hint="For example http://localhost:1933",
        )
    host = parts.hostname
    port = f":{parts.port}" if parts.port else ""
    shown_host = f"[{host}]" if ":" in host else host
    base = f"{parts.scheme}://{shown_host}{port}{parts.path.rstrip('/')}"
    return base, base, _is_loopback(host)


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _headers(api_key: str | None, user: str | None) -> dict[str, str]:
    headers = {"User-Agent": f"openviking/{__version__}", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    if user:
        headers["X-OpenViking-User"] = user
    return headers


def _checked_timeout(timeout: object) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise InvalidArgumentError(f"timeout must be a number of seconds > 0 (got {timeout!r})")
    return float(timeout)


def _may_try_again(call: Call[Any], exc: Exception) -> bool:
    """A read may always be tried again; a write only when it never reached the server."""
    import httpx

    return call.read or isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)


def _transport_error(exc: Exception, url: str, timeout: float, call: Call[Any]) -> OpenVikingError:
    """What a failed connection means, in the interface's errors."""
    import httpx

    where = f"the openviking server at {url}"
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        reason = str(exc) or type(exc).__name__
        return UnavailableError(
            f"Cannot reach {where} ({reason})",
            hint="Start it with 'openviking serve', or check the URL (--url, OPENVIKING_URL)",
            details={"url": url},
        )
    if isinstance(exc, httpx.TimeoutException):
        hint = None if call.read else "The server may still finish the write: look before sending it again"
        return DeadlineExceededError(
            f"No answer from {where} within {timeout:g} s", hint=hint, details={"url": url, "timeout": timeout}
        )
    return UnavailableError(f"The connection to {where} failed ({type(exc).__name__}: {exc})", details={"url": url})


def _answered(call: Call[R], response: httpx.Response, warn: WarningCallback) -> R:
    """The return value of ``call`` from the server's answer; its error raised, its warnings said."""
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        for message in payload.get("warnings") or []:
            warn(str(message))
    if isinstance(payload, dict) and payload.get("status") == "error" and isinstance(payload.get("error"), dict):
        raise error_from_dict(payload["error"])
    status = response.status_code
    if status >= 400:
        raise _status_error(call, response)
    if not isinstance(payload, dict) or payload.get("status") != "ok" or "result" not in payload:
        raise InternalError(
            f"The answer to {call.method} {call.path} is not an openviking envelope (HTTP {status})",
            hint="Check that the URL names an openviking server",
        )
    seconds = payload.get("time")
    return call.decode(payload["result"], float(seconds) if isinstance(seconds, int | float) else 0.0)


def _status_error(call: Call[Any], response: httpx.Response) -> OpenVikingError:
    status, where = response.status_code, f"{call.method} {call.path}"
    text = response.text.strip().replace("\n", " ")[:200]
    kinds: dict[int, type[OpenVikingError]] = {
        401: UnauthenticatedError,
        403: PermissionDeniedError,
        404: NotFoundError,
        503: UnavailableError,
        504: DeadlineExceededError,
    }
    kind = kinds.get(status, InvalidArgumentError if 400 <= status < 500 else InternalError)
    return kind(f"HTTP {status} from {where}" + (f": {text}" if text else ""), details={"status": status})


def _archive(path: Path) -> tuple[str, bytes]:
    """A file as it is, or a folder as a tar.gz of what is in it: hidden files are left out
    (the add would leave them out), ``.gitignore`` files kept (they still apply), and links that
    lead out of the folder and what is neither a file nor a folder left out too, as the server
    would refuse the whole archive for them."""
    if path.is_file():
        return path.name, path.read_bytes()
    root = path.resolve()

    def kept(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        name = info.name.rsplit("/", 1)[-1]
        if name.startswith(".") and name != ".gitignore":
            return None
        if info.issym() or info.islnk():
            target = (path / info.name).resolve()
            return info if target == root or root in target.parents else None
        return info if info.isfile() or info.isdir() else None

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for child in sorted(path.iterdir()):
            tar.add(child, arcname=child.name, filter=kept)
    return f"{path.name or 'upload'}.tar.gz", buffer.getvalue()


def _upload_call(path: Path) -> tuple[Call[str], tuple[str, bytes]]:
    try:
        name, data = _archive(path)
    except OSError as exc:
        raise PermissionDeniedError(f"Cannot read {path}: {exc.strerror or exc}", details={"path": str(path)}) from exc
    call = Call("POST", "/api/v1/resources/temp_upload", lambda result, _t: str(result["temp_file_id"]))
    return call, (name, data)


def _refuses_paths(exc: OpenVikingError) -> bool:
    """The server would not add a path of its machine for this key: the add is uploaded instead."""
    return isinstance(exc, PermissionDeniedError) and "temp_upload" in (exc.hint or "")


def _after(call: Call[R], value: R) -> R:
    if call.progress is not None:
        call.progress(1, 1)  # a server reports no progress: one call, at the end
    return value


def _health_user(payload: Any) -> str | None:
    user = payload.get("user_id") if isinstance(payload, dict) else None
    return user if isinstance(user, str) and user else None


class _Base:
    """What both clients hold: the URL, the headers, the warning channel, the requests."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        user: str | None = None,
        warn: WarningCallback | None = None,
    ) -> None:
        self.url, self._shown_url, loopback = _checked_url(url)
        if api_key is not None and not isinstance(api_key, str):
            raise InvalidArgumentError(f"api_key must be a string (got {type(api_key).__name__})")
        if user is not None and (not isinstance(user, str) or not user.strip()):
            raise InvalidArgumentError("user must be a non-empty string", details={"user": repr(user)[:100]})
        self.timeout = _checked_timeout(timeout)
        self._headers = _headers(api_key or None, user)
        self._user = user
        self._warn: WarningCallback = warn if warn is not None else python_warning
        self._calls = _Calls(loopback)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self._shown_url!r}, user={self._user!r})"

    @property
    def _tls_verify(self) -> bool:
        # A plain http:// server has no certificate to check: loading the CA bundle anyway costs
        # a short-lived CLI process a sixth of its run. Redirects are not followed, so none leads to https.
        return self.url.startswith("https://")

    def _health_error(self, response: httpx.Response) -> OpenVikingError | None:
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if response.status_code == 200 and isinstance(payload, dict) and payload.get("status") == "ok":
            self._user = self._user or _health_user(payload)
            return None
        return UnavailableError(
            f"{self._shown_url} is not an openviking server that is up (GET /health: HTTP {response.status_code})",
            hint="Check the URL (--url, OPENVIKING_URL)",
            details={"url": self._shown_url, "status": response.status_code},
        )


F = TypeVar("F", bound=Callable[..., Any])


def _named_as(method: F, build: Callable[..., Any]) -> F:
    """``method`` with the name, the docstring and (for ``inspect.signature``) the parameters of ``build``."""
    functools.update_wrapper(method, build)
    return method


def _sync(build: Callable[Concatenate[_Calls, P], Call[R]]) -> Callable[Concatenate[SyncHTTPClient, P], R]:
    """The sync method that sends the request ``build`` makes."""

    def method(self: SyncHTTPClient, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._run(build(self._calls, *args, **kwargs))

    return _named_as(method, build)


def _async(build: Callable[Concatenate[_Calls, P], Call[R]]) -> Callable[Concatenate[AsyncHTTPClient, P], Any]:
    """The async method that sends the request ``build`` makes."""

    async def method(self: AsyncHTTPClient, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await self._run(build(self._calls, *args, **kwargs))

    return _named_as(method, build)


# ----------------------------------------------------------------------------- the sync client
class SyncHTTPClient(_Base):
    """The interface over an openviking server (``openviking serve``), as upstream's SDK opens it.

    Args:
        url: the server, e.g. ``http://localhost:1933``.
        api_key: the key the server wants (none when it runs without keys).
        timeout: seconds to wait for an answer.
        user: the user to act as (with the root key; a user key acts as its own user).
        warn: called with each warning the server sends; by default an ``OpenVikingWarning``.

    Example::

        import openviking as ov
        client = ov.SyncHTTPClient(url="http://localhost:1933", api_key="your-key")
        client.initialize()
        for ctx in client.find("how to authenticate users").resources:
            print(ctx.uri, ctx.score)
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        user: str | None = None,
        warn: WarningCallback | None = None,
    ) -> None:
        super().__init__(url, api_key, timeout=timeout, user=user, warn=warn)
        self._http: httpx.Client | None = None

    def _client(self) -> httpx.Client:
        if self._http is None:
            import httpx

            self._http = httpx.Client(
                base_url=self.url, headers=self._headers, timeout=self.timeout, verify=self._tls_verify
            )
        return self._http

    @property
    def user(self) -> str:
        """The user the server acts as for this client (asked of ``/health`` once)."""
        if self._user is None:
            try:
                self.initialize()
            except OpenVikingError:
                pass
        return self._user or "default"

    def initialize(self) -> None:
        """Check that the server answers ``GET /health``.

        Raises:
            UnavailableError: it does not answer, or is not an openviking server.
        """
        error = self._health_error(self._sent(Call("GET", "/health", _text, read=True)))
        if error is not None:
            raise error

    def close(self) -> None:
        """Close the connection."""
        if self._http is not None:
            self._http.close()
            self._http = None

    def __del__(self) -> None:
        # The brief's examples never close their client: its sockets still go when it does.
        http = getattr(self, "_http", None)
        if http is not None:
            try:
                http.close()
            except Exception:  # at interpreter exit its modules may be gone: nothing left to free
                pass

    def __enter__(self) -> SyncHTTPClient:
        self.initialize()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _sent(self, call: Call[Any], files: dict[str, tuple[str, bytes]] | None = None) -> httpx.Response:
        """The response to ``call``, tried again as its kind allows."""
        import httpx

        http = self._client()
        for attempt in range(TRIES):
            last = attempt + 1 == TRIES
            try:
                response = http.request(
                    call.method, call.path, params=call.params, json=call.body if files is None else None, files=files
                )
            except httpx.TransportError as exc:
                if last or not _may_try_again(call, exc):
                    raise _transport_error(exc, self._shown_url, self.timeout, call) from None
            else:
                if response.status_code != 503 or not call.read or last:
                    return response
            time.sleep(BACKOFF * 2**attempt)
        raise AssertionError("unreachable")

    def _run(self, call: Call[R]) -> R:
        if call.upload is not None:
            self._uploaded(call, call.upload)
        try:
            return _after(call, _answered(call, self._sent(call), self._warn))
        except OpenVikingError as exc:
            if call.fallback is None or not _refuses_paths(exc):
                raise
        self._uploaded(call, call.fallback)
        return _after(call, _answered(call, self._sent(call), self._warn))

    def _uploaded(self, call: Call[Any], path: Path) -> None:
        upload, file = _upload_call(path)
        call.body = {**(call.body or {}), "temp_file_id": self._run_files(upload, file)}
        call.body.pop("path", None)
        call.body.setdefault("source_name", str(path))

    def _run_files(self, call: Call[R], file: tuple[str, bytes]) -> R:
        return _answered(call, self._sent(call, {"file": file}), self._warn)

    def session(self, session_id: str | None = None) -> Session:
        """A :class:`~openviking.interface.Session` handle (the session is created when needed)."""
        if session_id is None:
            return Session(self, self.create_session().session_id)
        try:
            return Session(self, self.get_session(session_id).session_id)
        except NotFoundError:
            return Session(self, self.create_session(session_id).session_id)

    find = _sync(_Calls.find)
    search = _sync(_Calls.search)
    grep = _sync(_Calls.grep)
    glob = _sync(_Calls.glob)
    read = _sync(_Calls.read)
    abstract = _sync(_Calls.abstract)
    overview = _sync(_Calls.overview)
    ls = _sync(_Calls.ls)
    tree = _sync(_Calls.tree)
    stat = _sync(_Calls.stat)
    relations = _sync(_Calls.relations)
    add_resource = _sync(_Calls.add_resource)
    add_memory = _sync(_Calls.add_memory)
    add_skill = _sync(_Calls.add_skill)
    mkdir = _sync(_Calls.mkdir)
    rm = _sync(_Calls.rm)
    mv = _sync(_Calls.mv)
    link = _sync(_Calls.link)
    unlink = _sync(_Calls.unlink)
    reindex = _sync(_Calls.reindex)
    create_session = _sync(_Calls.create_session)
    add_message = _sync(_Calls.add_message)
    get_session = _sync(_Calls.get_session)
    list_sessions = _sync(_Calls.list_sessions)
    delete_session = _sync(_Calls.delete_session)
    doctor = _sync(_Calls.doctor)


# ----------------------------------------------------------------------------- the async client
@dataclass
class AsyncSession:
    """:class:`~openviking.interface.Session` for the async client: the same methods, awaited."""

    client: AsyncHTTPClient = field(repr=False)
    session_id: str

    async def add_message(self, role: str, content: MessageContent) -> MessageAdded:
        """Append a ``user``/``assistant`` message (text, a TextPart or a list of parts)."""
        result: MessageAdded = await self.client.add_message(self.session_id, role, content)
        return result

    async def get(self) -> SessionInfo:
        """The session with its messages."""
        result: SessionInfo = await self.client.get_session(self.session_id)
        return result

    async def search(self, query: str, **options: Any) -> FindResult:
        """``client.search(query, session_id=this session, **options)``."""
        result: FindResult = await self.client.search(query, session_id=self.session_id, **options)
        return result

    async def delete(self) -> SessionDeleted:
        """Delete the session and its messages."""
        result: SessionDeleted = await self.client.delete_session(self.session_id)
        return result


class AsyncHTTPClient(_Base):
    """:class:`SyncHTTPClient` for asyncio: the same methods and arguments, each awaited.

    Example::

        async with ov.AsyncHTTPClient(url="http://localhost:1933", api_key="your-key") as client:
            results = await client.find("how to authenticate users")
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        user: str | None = None,
        warn: WarningCallback | None = None,
    ) -> None:
        super().__init__(url, api_key, timeout=timeout, user=user, warn=warn)
        self._http: httpx.AsyncClient | None = None

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            import httpx

            self._http = httpx.AsyncClient(
                base_url=self.url, headers=self._headers, timeout=self.timeout, verify=self._tls_verify
            )
        return self._http

    @property
    def user(self) -> str:
        """The user the server acts as for this client, as ``initialize()`` learnt it (else ``default``)."""
        return self._user or "default"

    async def initialize(self) -> None:
        """Check that the server answers ``GET /health`` (see :meth:`SyncHTTPClient.initialize`)."""
        error = self._health_error(await self._sent(Call("GET", "/health", _text, read=True)))
        if error is not None:
            raise error

    async def close(self) -> None:
        """Close the connection."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def __aenter__(self) -> AsyncHTTPClient:
        await self.initialize()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _sent(self, call: Call[Any], files: dict[str, tuple[str, bytes]] | None = None) -> httpx.Response:
        import asyncio

        import httpx

        http = self._client()
        for attempt in range(TRIES):
            last = attempt + 1 == TRIES
            try:
                response = await http.request(
                    call.method, call.path, params=call.params, json=call.body if files is None else None, files=files
                )
            except httpx.TransportError as exc:
                if last or not _may_try_again(call, exc):
                    raise _transport_error(exc, self._shown_url, self.timeout, call) from None
            else:
                if response.status_code != 503 or not call.read or last:
                    return response
            await asyncio.sleep(BACKOFF * 2**attempt)
        raise AssertionError("unreachable")

    async def _run(self, call: Call[R]) -> R:
        if call.upload is not None:
            await self._uploaded(call, call.upload)
        try:
            return _after(call, _answered(call, await self._sent(call), self._warn))
        except OpenVikingError as exc:
            if call.fallback is None or not _refuses_paths(exc):
                raise
        await self._uploaded(call, call.fallback)
        return _after(call, _answered(call, await self._sent(call), self._warn))

    async def _uploaded(self, call: Call[Any], path: Path) -> None:
        upload, file = _upload_call(path)
        temp_id = _answered(upload, await self._sent(upload, {"file": file}), self._warn)
        call.body = {**(call.body or {}), "temp_file_id": temp_id}
        call.body.pop("path", None)
        call.body.setdefault("source_name", str(path))

    async def session(self, session_id: str | None = None) -> AsyncSession:
        """An :class:`AsyncSession` handle (the session is created when needed)."""
        if session_id is None:
            info: SessionInfo = await self.create_session()
            return AsyncSession(self, info.session_id)
        try:
            info = await self.get_session(session_id)
        except NotFoundError:
            info = await self.create_session(session_id)
        return AsyncSession(self, info.session_id)

    find = _async(_Calls.find)
    search = _async(_Calls.search)
    grep = _async(_Calls.grep)
    glob = _async(_Calls.glob)
    read = _async(_Calls.read)
    abstract = _async(_Calls.abstract)
    overview = _async(_Calls.overview)
    ls = _async(_Calls.ls)
    tree = _async(_Calls.tree)
    stat = _async(_Calls.stat)
    relations = _async(_Calls.relations)
    add_resource = _async(_Calls.add_resource)
    add_memory = _async(_Calls.add_memory)
    add_skill = _async(_Calls.add_skill)
    mkdir = _async(_Calls.mkdir)
    rm = _async(_Calls.rm)
    mv = _async(_Calls.mv)
    link = _async(_Calls.link)
    unlink = _async(_Calls.unlink)
    reindex = _async(_Calls.reindex)
    create_session = _async(_Calls.create_session)
    add_message = _async(_Calls.add_message)
    get_session = _async(_Calls.get_session)
    list_sessions = _async(_Calls.list_sessions)
    delete_session = _async(_Calls.delete_session)
    doctor = _async(_Calls.doctor)
