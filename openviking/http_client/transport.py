"""Sending a :class:`~.calls.Call` and reading its answer: retries with backoff, errors, warnings.

A call goes over a :class:`Connection`: an ``httpx.Client``, or the stdlib's connection of
``plain``; either one's failures become one :class:`Failure`, which decides the retry and the error.

Reads (every GET, and find, search, grep and glob) are tried up to three times, with a short
backoff, when the connection fails, times out or the server answers 503; a write is tried
again only when its request never left (the connection could not be made), so it never runs
twice. An answer's error envelope is raised as the same
:class:`~openviking.errors.OpenVikingError` the embedded client raises, its warnings go to the
``warn`` callback, and anything that is not an envelope is an error naming the HTTP status.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from openviking.contract.warn import WarningCallback
from openviking.errors import (
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

from . import upstream
from .calls import Call

if TYPE_CHECKING:
    import httpx

TRIES = 3
BACKOFF = 0.2  # seconds before the second try; doubled before the third
R = TypeVar("R")
Files = dict[str, tuple[str, bytes]]  # the multipart form of an upload: field -> (file name, bytes)


class Response(Protocol):
    """What is read of an answer, by either connection (httpx's or the stdlib's)."""

    @property
    def status_code(self) -> int: ...

    @property
    def text(self) -> str: ...

    @property
    def content(self) -> bytes: ...

    def json(self) -> Any: ...


class Connection(Protocol):
    """What sends one request: an ``httpx.Client``, or the stdlib's connection (``commandline.py``)."""

    def request(
        self, method: str, url: str, *, params: Any = None, json: Any = None, files: Files | None = None
    ) -> Response: ...


@dataclass(frozen=True)
class Failure:
    """A request that got no answer: how it failed, whether it surely never reached the server, and why."""

    kind: Literal["connect", "timeout", "other"]
    unsent: bool
    reason: str


class TransportFailed(Exception):
    """Raised by a connection of this package's own when a request gets no answer."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.reason)
        self.failure = failure


def _failure(exc: Exception) -> Failure | None:
    """What ``exc`` says of the request, or None when it is no transport failure."""
    if isinstance(exc, TransportFailed):
        return exc.failure
    httpx = sys.modules.get("httpx")  # an httpx error needs httpx loaded: never load it to ask
    if httpx is None or not isinstance(exc, httpx.TransportError):
        return None
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return Failure("connect", True, str(exc) or type(exc).__name__)
    if isinstance(exc, httpx.TimeoutException):
        return Failure("timeout", isinstance(exc, httpx.PoolTimeout), str(exc) or type(exc).__name__)
    return Failure("other", False, f"{type(exc).__name__}: {exc}")


def _settled(
    call: Call[Any], attempt: int, response: Response | None, failure: Failure | None, url: str, timeout: float
) -> Response | None:
    """What one try of ``call`` came to: the response to return, None to try again after the
    backoff, or (raised) the error of a transport failure that may not be tried again."""
    last = attempt + 1 == TRIES
    if failure is not None:
        if last or not (call.read or failure.unsent):  # a write only when it never reached the server
            raise _transport_error(failure, url, timeout, call) from None
        return None
    assert response is not None
    return response if response.status_code != 503 or not call.read or last else None


def sent(http: Connection, call: Call[Any], files: Files | None, url: str, timeout: float) -> Response:
    """The response to ``call``, tried again as its kind allows."""
    for attempt in range(TRIES):
        response, failure = None, None
        try:
            response = http.request(
                call.method, call.path, params=call.params, json=call.body if files is None else None, files=files
            )
        except Exception as exc:
            failure = _failure(exc)
            if failure is None:
                raise
        settled = _settled(call, attempt, response, failure, url, timeout)
        if settled is not None:
            return settled
        time.sleep(BACKOFF * 2**attempt)
    raise AssertionError("unreachable")


async def sent_async(
    http: httpx.AsyncClient, call: Call[Any], files: Files | None, url: str, timeout: float
) -> httpx.Response:
    """:func:`sent` for asyncio."""
    import asyncio

    import httpx

    for attempt in range(TRIES):
        response, failure = None, None
        try:
            response = await http.request(
                call.method, call.path, params=call.params, json=call.body if files is None else None, files=files
            )
        except httpx.TransportError as exc:
            failure = _failure(exc)
        settled = _settled(call, attempt, response, failure, url, timeout)
        if settled is not None:
            assert response is not None
            return response
        await asyncio.sleep(BACKOFF * 2**attempt)
    raise AssertionError("unreachable")


def _transport_error(failure: Failure, url: str, timeout: float, call: Call[Any]) -> OpenVikingError:
    """What a failed connection means, in the interface's errors."""
    where = f"the openviking server at {url}"
    if failure.kind == "connect":
        return UnavailableError(
            f"Cannot reach {where} ({failure.reason})",
            hint="Start it with 'openviking serve', or check the URL (--url, OPENVIKING_URL)",
            details={"url": url},
        )
    if failure.kind == "timeout":
        hint = None if call.read else "The server may still finish the write: look before sending it again"
        return DeadlineExceededError(
            f"No answer from {where} within {timeout:g} s", hint=hint, details={"url": url, "timeout": timeout}
        )
    return UnavailableError(f"The connection to {where} failed ({failure.reason})", details={"url": url})


def _answered(call: Call[R], response: Response, warn: WarningCallback) -> R:
    """The return value of ``call`` from the server's answer; its error raised, its warnings said."""
    if call.raw and 200 <= response.status_code < 300:
        return call.decode(response.content, 0.0)
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        for message in payload.get("warnings") or []:
            warn(str(message))
    status = response.status_code
    no_route = upstream.missing_route(call.method, call.path, status, payload)
    if no_route is not None:
        raise no_route
    if isinstance(payload, dict) and payload.get("status") == "error" and isinstance(payload.get("error"), dict):
        raise error_from_dict(payload["error"])
    if status >= 400:
        raise _status_error(call, response)
    if not isinstance(payload, dict) or payload.get("status") != "ok" or "result" not in payload:
        raise InternalError(
            f"The answer to {call.method} {call.path} is not an openviking envelope (HTTP {status})",
            hint="Check that the URL names an openviking server",
        )
    seconds = payload.get("time")
    return call.decode(payload["result"], float(seconds) if isinstance(seconds, int | float) else 0.0)


def _status_error(call: Call[Any], response: Response) -> OpenVikingError:
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


def _after(call: Call[R], value: R) -> R:
    if call.progress is not None:
        call.progress(1, 1)  # a server reports no progress: one call, at the end
    return value
