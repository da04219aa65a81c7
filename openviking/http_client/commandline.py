"""The stdlib's ``http.client`` as a connection, and the client that sends a short process's calls over it.

A command line run over a server sends one or two JSON requests and exits, and loading httpx
(with httpcore, h11 and their imports) takes longer than the request itself. Over plain
``http://``, with no proxy in the environment, :class:`CommandLineHTTPClient` sends its JSON
calls through :class:`PlainConnection`, which loads only ``http.client``; uploads, ``https://``
and proxies go through httpx as :class:`~.clients.SyncHTTPClient` sends them, so TLS, proxy and
multipart handling stay httpx's alone.
"""

from __future__ import annotations

import functools
import http.client
import json as jsonlib
import os
import select
import socket
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from .calls import Call
from .clients import SyncHTTPClient
from .transport import Failure, Files, Response, TransportFailed, sent

# The variables by which httpx would send a request through a proxy (httpx reads them in either case).
_PROXY_VARIABLES = ("http_proxy", "all_proxy")


class PlainResponse:
    """An answer read whole: its status, its headers (names in lower case) and its body."""

    def __init__(self, status_code: int, content: bytes, headers: dict[str, str] | None = None) -> None:
        self.status_code = status_code
        self.content = content
        self.headers = headers or {}

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return jsonlib.loads(self.content)


def _query_value(value: Any) -> str:
    """One query value written as httpx writes it (``true``/``false`` for booleans)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "" if value is None else str(value)


def query_string(params: dict[str, Any] | None) -> str:
    """``params`` as a query string, lists as repeated keys, encoded as httpx encodes them."""
    if not params:
        return ""
    pairs = [
        (key, _query_value(item))
        for key, value in params.items()
        for item in (value if isinstance(value, list | tuple) else [value])
    ]
    return "?" + urlencode(pairs, quote_via=quote, safe="")


class UnixConnection(http.client.HTTPConnection):
    """``http.client``'s connection to a server on a unix socket (its Host is ``localhost``)."""

    def __init__(self, path: str, timeout: float | None) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class PlainConnection:
    """One HTTP/1.1 connection to a plain ``http://`` server (or one on the unix socket
    ``unix_socket``), kept open between requests."""

    def __init__(
        self, base_url: str, headers: dict[str, str], timeout: float | None, *, unix_socket: str | None = None
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or parts.hostname is None:
            raise ValueError(f"a plain connection needs an http:// URL, not {parts.scheme}://")
        self._prefix = parts.path.rstrip("/")
        self._headers = headers
        self._connection = (
            UnixConnection(unix_socket, timeout)
            if unix_socket is not None
            else http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
        )

    def set_timeout(self, timeout: float | None) -> None:
        """Seconds to wait for the next answer (None: as long as it takes)."""
        self._connection.timeout = timeout
        if self._connection.sock is not None:
            self._connection.sock.settimeout(timeout)

    def request(
        self, method: str, url: str, *, params: Any = None, json: Any = None, files: Files | None = None
    ) -> PlainResponse:
        """Send one request and read its answer whole.

        Raises:
            TransportFailed: no answer came (the connection could not be made, broke or timed out).
        """
        if files is not None:
            raise TypeError("a plain connection sends no uploads: httpx does")
        headers = dict(self._headers)
        body = None
        if json is not None:
            body = jsonlib.dumps(json, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self._connection.sock is not None and _closed_by_peer(self._connection.sock):
            self._connection.close()  # an idle connection the server let go: a new one, as httpx would
        if self._connection.sock is None:
            try:
                self._connection.connect()
            except OSError as exc:
                self._connection.close()
                raise TransportFailed(Failure("connect", True, _reason(exc))) from None
        try:
            self._connection.request(method, self._prefix + url + query_string(params), body=body, headers=headers)
            answer = self._connection.getresponse()
            content = answer.read()
        except (OSError, http.client.HTTPException) as exc:
            self._connection.close()
            if isinstance(exc, TimeoutError):
                raise TransportFailed(Failure("timeout", False, _reason(exc))) from None
            raise TransportFailed(Failure("other", False, f"{type(exc).__name__}: {exc}")) from None
        if answer.will_close:
            self._connection.close()
        return PlainResponse(answer.status, content, {k.lower(): v for k, v in answer.getheaders()})

    def close(self) -> None:
        self._connection.close()


def _reason(exc: OSError) -> str:
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve the host: {exc.strerror or exc}"
    return str(exc) or ("timed out" if isinstance(exc, TimeoutError) else type(exc).__name__)


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether a kept connection can be read with no request sent: the server closed it."""
    try:
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def _proxied() -> bool:
    return any(os.environ.get(name) or os.environ.get(name.upper()) for name in _PROXY_VARIABLES)


class CommandLineHTTPClient(SyncHTTPClient):
    """:class:`~.clients.SyncHTTPClient` for a process that makes a call or two and exits: its
    JSON calls to a plain ``http://`` server go over the stdlib (see the module's docstring)."""

    _plain: PlainConnection | None = None

    @functools.cached_property
    def _plain_carries(self) -> bool:
        """Whether the stdlib may carry this client's JSON calls (decided at the first)."""
        return self.url.startswith("http://") and not _proxied()

    def _sent(self, call: Call[Any], files: Files | None = None) -> Response:
        if files is not None or not self._plain_carries:
            return super()._sent(call, files)
        if self._plain is None:
            self._plain = PlainConnection(self.url, self._headers, self.timeout)
        return sent(self._plain, call, None, self._shown_url, self.timeout)

    def close(self) -> None:
        """Close the connections."""
        if self._plain is not None:
            self._plain.close()
            self._plain = None
        super().close()

    def __del__(self) -> None:
        plain = self.__dict__.get("_plain")
        if plain is not None:
            plain.close()
        super().__del__()
