"""Sending a :class:`~.calls.Call` and reading its answer: retries with backoff, errors, warnings.

Reads (every GET, and find, search, grep and glob) are tried up to three times, with a short
backoff, when the connection fails, times out or the server answers 503; a write is tried
again only when its request never left (the connection could not be made), so it never runs
twice. An answer's error envelope is raised as the same
:class:`~openviking.errors.OpenVikingError` the embedded client raises, its warnings go to the
``warn`` callback, and anything that is not an envelope is an error naming the HTTP status.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, TypeVar

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
from openviking.warn import WarningCallback

from . import upstream
from .calls import Call

if TYPE_CHECKING:
    import httpx

TRIES = 3
BACKOFF = 0.2  # seconds before the second try; doubled before the third
R = TypeVar("R")
Files = dict[str, tuple[str, bytes]]  # the multipart form of an upload: field -> (file name, bytes)


def _settled(
    call: Call[Any], attempt: int, response: httpx.Response | None, error: Exception | None, url: str, timeout: float
) -> httpx.Response | None:
    """What one try of ``call`` came to: the response to return, None to try again after the
    backoff, or (raised) the error of a transport failure that may not be tried again."""
    last = attempt + 1 == TRIES
    if error is not None:
        if last or not _may_try_again(call, error):
            raise _transport_error(error, url, timeout, call) from None
        return None
    assert response is not None
    return response if response.status_code != 503 or not call.read or last else None


def sent(http: httpx.Client, call: Call[Any], files: Files | None, url: str, timeout: float) -> httpx.Response:
    """The response to ``call``, tried again as its kind allows."""
    import httpx

    for attempt in range(TRIES):
        response, error = None, None
        try:
            response = http.request(
                call.method, call.path, params=call.params, json=call.body if files is None else None, files=files
            )
        except httpx.TransportError as exc:
            error = exc
        settled = _settled(call, attempt, response, error, url, timeout)
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
        response, error = None, None
        try:
            response = await http.request(
                call.method, call.path, params=call.params, json=call.body if files is None else None, files=files
            )
        except httpx.TransportError as exc:
            error = exc
        settled = _settled(call, attempt, response, error, url, timeout)
        if settled is not None:
            return settled
        await asyncio.sleep(BACKOFF * 2**attempt)
    raise AssertionError("unreachable")


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


def _after(call: Call[R], value: R) -> R:
    if call.progress is not None:
        call.progress(1, 1)  # a server reports no progress: one call, at the end
    return value
