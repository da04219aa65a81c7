"""What a request must pass before a route reads it: a Host and an Origin this server answers
to (421, 403: a web page elsewhere must not reach it, DNS rebinding), an API key (401 before a
byte of the body is read), a body within its cap (413), and a client that sends it in time (408).

Both are plain ASGI middleware around the app; a refusal is the usual error envelope.
"""

from __future__ import annotations

import ipaddress
import time
from urllib.parse import urlsplit

import anyio
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from openviking.config import ServerConfig
from openviking.errors import DeadlineExceededError, OpenVikingError, PermissionDeniedError
from openviking.origins.archives import TooLargeError

from .auth import Keys
from .envelope import Refused, failure
from .state import CALLER_KEY

__all__ = ["OPEN_PATHS", "UPLOAD_PATHS", "BodyLimits", "KeyCheck", "SiteCheck"]

# No key is needed for these: liveness and readiness probes, and the API's own description.
OPEN_PATHS = frozenset({"/health", "/ready", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})
UPLOAD_PATHS = frozenset({"/api/v1/resources/temp_upload"})


LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def _host_name(value: str) -> str:
    """The name of a ``Host`` header or of a URL's authority, without its port, lower case."""
    value = value.strip().lower()
    if value.startswith("["):  # [::1]:1933
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _is_loopback(name: str) -> bool:
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class SiteCheck:
    """Only requests addressed to this server, from no web page elsewhere: the ``Host`` must be a
    loopback name, the address it listens on, or one of ``server.allowed_hosts`` (else 421),
    and an ``Origin``, when a browser sends one, such a host or one of ``server.allowed_origins``
    (else 403). A page that rebinds its own name to 127.0.0.1 sends its own name in both."""

    def __init__(self, app: ASGIApp, server: ServerConfig, bound: str) -> None:
        self.app = app
        bound = _host_name(bound)
        named = {bound} if bound not in ("0.0.0.0", "::", "") else set()
        self.hosts = frozenset(named | {_host_name(h) for h in server.allowed_hosts})
        self.origins = frozenset(server.allowed_origins)

    def _host_ok(self, name: str) -> bool:
        return _is_loopback(name) or name in self.hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = Headers(scope=scope)
        host = _host_name(sent.get("host", ""))
        error: OpenVikingError | None = None
        status = 403
        if not self._host_ok(host):
            error = PermissionDeniedError(
                f"Host '{host}' is not a name this server answers to",
                hint="Reach it by a loopback address, or add the name to server.allowed_hosts",
                details={"host": host},
            )
            status = 421
        origin = sent.get("origin")
        if error is None and origin is not None and origin.rstrip("/").lower() not in self.origins:
            if not self._host_ok(_host_name(urlsplit(origin).netloc)):
                error = PermissionDeniedError(
                    f"Origin '{origin}' is not a site this server answers",
                    hint="A web page elsewhere may not call it; add the site to server.allowed_origins",
                    details={"origin": origin},
                )
        if error is not None:
            await failure(error, status)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class KeyCheck:
    """Who each request acts as, from its key (see :mod:`openviking.server.auth`), left in the
    scope for the routes; a request without a valid key ends here."""

    def __init__(self, app: ASGIApp, keys: Keys) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in OPEN_PATHS:
            try:
                scope[CALLER_KEY] = self.keys.caller(Headers(scope=scope))
            except OpenVikingError as exc:
                challenge = {"WWW-Authenticate": "Bearer"} if exc.code == "UNAUTHENTICATED" else None
                await failure(exc, headers=challenge)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def too_large(limit: int) -> Refused:
    """The 413 of a body over ``limit`` bytes."""
    error = TooLargeError(f"Request body too large: the limit is {limit} bytes", limit)
    error.hint = "Uploads have their own limit, server.max_upload_bytes"
    return Refused(413, error, headers={"Connection": "close"})


class BodyLimits:
    """Caps every request body at ``max_body`` bytes (uploads at ``max_upload``), and the time
    its client may take to send it at ``timeout`` seconds (an upload: between two chunks)."""

    def __init__(self, app: ASGIApp, *, max_body: int, max_upload: int, timeout: float) -> None:
        self.app = app
        self.max_body = max_body
        self.max_upload = max_upload
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        upload = scope["path"] in UPLOAD_PATHS
        limit = self.max_upload if upload else self.max_body
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limit:  # said up front: refused before it is sent
            refusal = too_large(limit)
            await failure(refusal.error, refusal.status_code, refusal.headers)(scope, receive, send)
            return
        deadline = time.monotonic() + self.timeout
        received = 0
        complete = False

        async def limited() -> Message:
            nonlocal received, complete
            if complete:  # after the body: waiting for a disconnect takes as long as it takes
                return await receive()
            wait = self.timeout if upload else max(0.0, deadline - time.monotonic())
            try:
                with anyio.fail_after(wait):
                    message = await receive()
            except TimeoutError:
                error = DeadlineExceededError(
                    f"The request body did not arrive within {self.timeout:g} s",
                    hint="server.request_timeout sets how long a client may take",
                    details={"timeout_seconds": self.timeout},
                )
                raise Refused(408, error, headers={"Connection": "close"}) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise too_large(limit)
                complete = not message.get("more_body", False)
            else:
                complete = True
            return message

        await self.app(scope, limited, send)
