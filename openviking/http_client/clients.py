"""The two clients, :class:`SyncHTTPClient` and :class:`AsyncHTTPClient`, and the async session handle.

Both hold the checked URL, the headers (the API key as ``Authorization: Bearer``, which httpx
masks in every repr; it appears in no repr, error or log line), the warning channel and the
request builders. Every operation the interface declares is theirs as it is declared
(:mod:`openviking.contract.operations`): a call of one hands its arguments to ``_perform``, which has
:class:`~.calls.Requests` build its :class:`~.calls.Call` and sends it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar
from urllib.parse import urlsplit

from openviking._version import __version__
from openviking.contract.hits import FindResult
from openviking.contract.interface import MessageContent, OpenVikingClient, Operations, Session
from openviking.contract.operations import Operation, Performs, PerformsAsync
from openviking.contract.results import MessageAdded, SessionDeleted, SessionInfo
from openviking.contract.warn import WarningCallback, python_warning
from openviking.errors import (
    InvalidArgumentError,
    NotFoundError,
    OpenVikingError,
    UnauthenticatedError,
    UnavailableError,
    error_from_dict,
)

from . import upstream
from .calls import Call, Requests, _text
from .transport import Files, Response, _after, _answered, sent, sent_async
from .upload import _refuses_paths, _upload_call

if TYPE_CHECKING:
    import httpx

DEFAULT_URL = "http://localhost:1933"
R = TypeVar("R")
P = ParamSpec("P")


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
        self._requests = Requests(loopback)
        self._upstream: bool | None = None  # whether upstream's server answers, once /health said

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self._shown_url!r}, user={self._user!r})"

    @property
    def _tls_verify(self) -> bool:
        # A plain http:// server has no certificate to check: loading the CA bundle anyway costs
        # a short-lived CLI process a sixth of its run. Redirects are not followed, so none leads to https.
        return self.url.startswith("https://")

    def _for_upstream(self, call: Call[Any]) -> None:
        """An add rewritten for upstream's server: a local path is always uploaded (it adds
        no path of its machine), and the body holds only the fields it takes."""
        assert call.upstream is not None
        call.upload = call.upload or call.fallback
        call.fallback = None
        call.body = call.upstream(call.body or {}, call.upload)

    def _with_upload(self, call: Call[Any], temp_file_id: Any, path: Path) -> None:
        """``call``'s body naming the upload of ``path`` instead of the path; for our server,
        with the client's path as the source (upstream's body names its own)."""
        call.body = {**(call.body or {}), "temp_file_id": temp_file_id}
        call.body.pop("path", None)
        if not self._upstream:
            call.body.setdefault("source_name", str(path))

    def _health_error(self, response: Response) -> OpenVikingError | None:
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if response.status_code == 200 and isinstance(payload, dict) and payload.get("status") == "ok":
            self._user = self._user or _health_user(payload)
            self._upstream = upstream.is_upstream(payload)
            return None
        if response.status_code == 401:  # upstream's server checks a key sent to /health
            error = payload.get("error") if isinstance(payload, dict) else None
            if isinstance(error, dict) and error.get("code") == "UNAUTHENTICATED":
                return error_from_dict(error)
            return UnauthenticatedError(
                f"{self._shown_url} refused the API key (GET /health: HTTP 401)",
                hint="Check the key (--api-key, OPENVIKING_API_KEY)",
                details={"url": self._shown_url, "status": 401},
            )
        return UnavailableError(
            f"{self._shown_url} is not an openviking server that is up (GET /health: HTTP {response.status_code})",
            hint="Check the URL (--url, OPENVIKING_URL)",
            details={"url": self._shown_url, "status": response.status_code},
        )


# ----------------------------------------------------------------------------- the sync client
class SyncHTTPClient(_Base, Performs, OpenVikingClient):
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

    def _sent(self, call: Call[Any], files: Files | None = None) -> Response:
        """The response to ``call``, tried again as its kind allows."""
        return sent(self._client(), call, files, self._shown_url, self.timeout)

    def _perform(self, operation: Operation[Any, Any], arguments: dict[str, Any]) -> Any:
        return self._run(self._requests.call(operation, arguments))

    def _run(self, call: Call[R]) -> R:
        if call.upstream is not None and self._is_upstream():
            self._for_upstream(call)
        if call.upload is not None:
            self._uploaded(call, call.upload)
        try:
            return _after(call, _answered(call, self._sent(call), self._warn))
        except OpenVikingError as exc:
            if call.fallback is None or not _refuses_paths(exc):
                raise
        self._uploaded(call, call.fallback)
        return _after(call, _answered(call, self._sent(call), self._warn))

    def _is_upstream(self) -> bool:
        """Whether upstream's server answers (asked of ``/health`` once; not when it fails)."""
        if self._upstream is None:
            try:
                self.initialize()
            except OpenVikingError:
                return False
        return bool(self._upstream)

    def _uploaded(self, call: Call[Any], path: Path) -> None:
        upload, file = _upload_call(path)
        self._with_upload(call, self._run_files(upload, file), path)

    def _run_files(self, call: Call[R], file: tuple[str, bytes]) -> R:
        return _answered(call, self._sent(call, {"file": file}), self._warn)

    def session(self, session_id: str | None = None) -> Session:
        """A :class:`~openviking.contract.interface.Session` handle (the session is created when needed)."""
        if session_id is None:
            return Session(self, self.create_session().session_id)
        try:
            return Session(self, self.get_session(session_id).session_id)
        except NotFoundError:
            return Session(self, self.create_session(session_id).session_id)


# ----------------------------------------------------------------------------- the async client
@dataclass
class AsyncSession:
    """:class:`~openviking.contract.interface.Session` for the async client: the same methods, awaited."""

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


class AsyncHTTPClient(_Base, PerformsAsync, Operations):
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

    async def _sent(self, call: Call[Any], files: Files | None = None) -> httpx.Response:
        return await sent_async(self._client(), call, files, self._shown_url, self.timeout)

    async def _perform(self, operation: Operation[Any, Any], arguments: dict[str, Any]) -> Any:
        return await self._run(self._requests.call(operation, arguments))

    async def _run(self, call: Call[R]) -> R:
        if call.upstream is not None and await self._is_upstream():
            self._for_upstream(call)
        if call.upload is not None:
            await self._uploaded(call, call.upload)
        try:
            return _after(call, _answered(call, await self._sent(call), self._warn))
        except OpenVikingError as exc:
            if call.fallback is None or not _refuses_paths(exc):
                raise
        await self._uploaded(call, call.fallback)
        return _after(call, _answered(call, await self._sent(call), self._warn))

    async def _is_upstream(self) -> bool:
        """Whether upstream's server answers (see :meth:`SyncHTTPClient._is_upstream`)."""
        if self._upstream is None:
            try:
                await self.initialize()
            except OpenVikingError:
                return False
        return bool(self._upstream)

    async def _uploaded(self, call: Call[Any], path: Path) -> None:
        upload, file = _upload_call(path)
        self._with_upload(call, _answered(upload, await self._sent(upload, {"file": file}), self._warn), path)

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
