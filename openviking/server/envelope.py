"""What every response carries: the ok/error envelope, the HTTP status of an error code, the
request id, and the one place an error becomes a response.

Success is ``{"status": "ok", "result", "time"}``, failure ``{"status": "error", "error",
"time"}`` with the error's ``to_dict()``; what the library said degraded while answering (the
CLI's ``Warning:`` lines) is added as ``"warnings": [...]`` when there is any. An exception
nothing handled is logged with its traceback under the request's id and answered 500
INTERNAL naming that id, never with the traceback itself.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
import time
import uuid
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from openviking.errors import InternalError, InvalidArgumentError, NotFoundError, OpenVikingError

__all__ = [
    "EnvelopeResponse",
    "Refused",
    "RequestContext",
    "allowed_methods",
    "failure",
    "install_handlers",
    "ok",
    "rewrite_warnings",
    "said",
    "status_of",
]

log = logging.getLogger("openviking.server")

STATUS_BY_CODE = {
    "INVALID_ARGUMENT": 400,
    "INVALID_URI": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "FAILED_PRECONDITION": 412,
    "CANCELLED": 499,
    "INTERNAL": 500,
    "UNIMPLEMENTED": 501,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}
REQUEST_ID_HEADER = "x-request-id"
_VALID_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def status_of(code: str) -> int:
    """The HTTP status of an error code (500 for a code this table does not know)."""
    return STATUS_BY_CODE.get(code, 500)


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """The request being answered: its id, when it arrived, and the warnings said meanwhile."""

    id: str
    started: float
    warnings: list[str] = field(default_factory=list)


# Set by RequestContext for the whole request; FastAPI's thread pool copies it into sync routes.
_current: ContextVar[RequestInfo | None] = ContextVar("openviking_request", default=None)


def _elapsed() -> float:
    info = _current.get()
    return round(time.perf_counter() - info.started, 4) if info is not None else 0.0


class EnvelopeResponse(Response):
    """JSON, UTF-8 as it is; a NaN or infinite number becomes 0.0 (as upstream), since JSON has none."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        try:
            text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except ValueError:
            text = json.dumps(_finite(content), ensure_ascii=False, separators=(",", ":"))
        return text.encode("utf-8")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return 0.0
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def said(message: str) -> None:
    """Keep a warning for the answer of the request being served (outside one, nothing)."""
    info = _current.get()
    if info is not None and message not in info.warnings:
        info.warnings.append(message)


def rewrite_warnings(change: Callable[[str], str]) -> None:
    """Reword the warnings kept so far (an upload's temporary path becomes the client's)."""
    info = _current.get()
    if info is not None:
        info.warnings[:] = [change(w) for w in info.warnings]


def _with_warnings(body: dict[str, Any]) -> dict[str, Any]:
    info = _current.get()
    if info is not None and info.warnings:
        body["warnings"] = list(info.warnings)
    return body


def _plain(value: Any) -> Any:
    """A result as JSON values: its ``to_dict()``; lists item by item."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def ok(value: Any, **beside: Any) -> EnvelopeResponse:
    """The success envelope of a result (with ``beside`` its result, as upstream's listings say ``has_more``)."""
    return EnvelopeResponse(_with_warnings({"status": "ok", "result": _plain(value), **beside, "time": _elapsed()}))


def failure(error: OpenVikingError, status: int | None = None, headers: Mapping[str, str] | None = None) -> Response:
    """The error envelope of ``error``, with the status of its code unless ``status`` is given."""
    body = _with_warnings({"status": "error", "error": error.to_dict(), "time": _elapsed()})
    return EnvelopeResponse(body, status_code=status or status_of(error.code), headers=headers)


class Refused(HTTPException):
    """A request refused before a route saw it (its body too large or too slow): FastAPI lets an
    HTTPException raised while it reads a body through, where any other would become a 400."""

    def __init__(self, status: int, error: OpenVikingError, headers: dict[str, str] | None = None) -> None:
        super().__init__(status, error.message, headers=headers)
        self.error = error


# ----------------------------------------------------------------------------- handlers
async def _openviking_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, OpenVikingError)
    status = getattr(exc, "http_status", None) or status_of(exc.code)  # an error may know better than its code
    if status == 500:  # the server's own fault (not a model server's): the log gets the traceback, the answer its id
        info = _current.get()
        request_id = info.id if info is not None else "-"
        log.error("request %s failed: %s %s", request_id, request.method, request.url.path, exc_info=exc)
        exc = _rebuilt_with(exc, request_id=request_id)
    return failure(exc, status)


def _rebuilt_with(exc: OpenVikingError, **details: Any) -> OpenVikingError:
    """A copy of ``exc`` with more ``details`` (the raised one may be raised again elsewhere)."""
    copy = InternalError(exc.message, hint=exc.hint, details={**exc.details, **details})
    copy.code = exc.code
    return copy


def validation_details(errors: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The message and ``validation_errors`` of pydantic errors (never the input: it may hold a secret)."""
    items = []
    for error in errors:
        message = str(error.get("msg", "")).removeprefix("Value error, ")
        reason = (error.get("ctx") or {}).get("error")
        if error.get("type") == "json_invalid" and reason:
            message = f"{message} ({reason})"
        loc = [str(part) for part in error.get("loc", ())]
        items.append({"loc": loc, "message": message, "type": error.get("type")})
    first: dict[str, Any] = items[0] if items else {"loc": [], "message": "invalid"}
    where = ".".join(first["loc"])
    return f"Invalid request: {where}: {first['message']}" if where else f"Invalid request: {first['message']}", items


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    message, items = validation_details(list(exc.errors()))
    return failure(InvalidArgumentError(message, details={"validation_errors": items}))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if isinstance(exc, Refused):
        return failure(exc.error, exc.status_code, exc.headers)
    where = f"{request.method} {request.url.path}"
    if exc.status_code == 404:
        error: OpenVikingError = NotFoundError(f"No such route: {where}", hint="GET /openapi.json lists the routes")
    elif exc.status_code == 405:
        allowed = allowed_methods(request, (exc.headers or {}).get("Allow", ""))
        error = InvalidArgumentError(f"Method not allowed: {where}", details={"allowed": allowed})
        return failure(error, 405, {**(exc.headers or {}), "Allow": ", ".join(allowed)})
    elif exc.status_code >= 500:
        error = InternalError(str(exc.detail))
    else:
        error = InvalidArgumentError(str(exc.detail))
    return failure(error, exc.status_code, exc.headers)


def allowed_methods(request: Request, given: str = "") -> list[str]:
    """The methods the request's path takes: those the OpenAPI document lists at it (the
    router's own 405 names only its first route's), else ``given`` (an Allow header)."""
    for template, methods in request.app.openapi()["paths"].items():
        if _path_pattern(template).fullmatch(request.url.path):
            return sorted(method.upper() for method in methods)
    return [method for method in given.split(", ") if method]


@functools.lru_cache(maxsize=256)
def _path_pattern(template: str) -> re.Pattern[str]:
    """``/a/{b}/c`` as a pattern its paths match (a parameter is one segment)."""
    return re.compile(re.sub(r"\\{[^/]+?\\}", "[^/]+", re.escape(template)))


def install_handlers(app: FastAPI) -> None:
    """Route every error the app raises on purpose through :func:`failure`."""
    app.add_exception_handler(OpenVikingError, _openviking_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)


# ----------------------------------------------------------------------------- the outermost middleware
class RequestContext:
    """Outermost middleware: gives each request its id (the client's ``X-Request-ID`` when
    valid) and start time, puts the id on every response, logs one line per request, and
    answers any exception nothing else handled with 500 INTERNAL and the id."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(REQUEST_ID_HEADER.encode(), b"").decode("latin-1")
        request_id = given if _VALID_REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        info = RequestInfo(request_id, time.perf_counter())
        token = _current.set(info)
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [*message.get("headers", []), (REQUEST_ID_HEADER.encode(), request_id.encode())]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            log.exception("request %s failed: %s %s", request_id, scope["method"], scope["path"])
            if not status:
                error = InternalError(f"Internal error (id {request_id})", details={"request_id": request_id})
                await failure(error)(scope, receive, send_with_id)
        finally:
            log.info("%s %s %s %s %.3fs", request_id, scope["method"], scope["path"], status or "-", _elapsed())
            _current.reset(token)
