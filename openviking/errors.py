"""Errors raised on purpose by openviking, with upstream OpenViking's codes.

* OpenVikingError                                   INTERNAL
  x InvalidArgumentError(..., ValueError)           INVALID_ARGUMENT   bad query, limit, time, filter, regex...
  x InvalidURIError(..., ValueError)                INVALID_URI        bad scheme or scope
  x UnauthenticatedError                            UNAUTHENTICATED    no API key, or one the server does not know
  x PermissionDeniedError                           PERMISSION_DENIED  `.`/`..`/backslash segments, another user's space
    + StoreNotWritableError                         PERMISSION_DENIED  a read-only store (the machine's state: exit 1)
  x NotFoundError(..., LookupError)                 NOT_FOUND          missing store, URI, session, path
  x AlreadyExistsError                              ALREADY_EXISTS     mv/mkdir onto an existing URI
  x FailedPreconditionError                         FAILED_PRECONDITION store/embedder mismatch, rm dir without -r
    + ConfigError                                   FAILED_PRECONDITION unreadable or invalid config file
      + ConfigFileNotFoundError (also NotFoundError) NOT_FOUND          the config file named does not exist
  x CancelledError                                  CANCELLED          the user pressed Ctrl-C
  x UnavailableError                                UNAVAILABLE        a model server or a URL could not be reached
  x DeadlineExceededError                           DEADLINE_EXCEEDED  a model server or URL too slow, a regex too long
  x UnimplementedError                              UNIMPLEMENTED      an upstream route this tool does not have
  x InternalError                                   INTERNAL

Every error carries a one-line ``message``, an optional ``hint`` (what to do next) and a
``details`` dict that goes into the JSON error object unchanged. A NOT_FOUND or ALREADY_EXISTS
error's details also name the thing as upstream's do (``resource``, and its ``type``), since
upstream's clients rebuild the message from them.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AlreadyExistsError",
    "CancelledError",
    "ConfigError",
    "ConfigFileNotFoundError",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "InternalError",
    "InvalidArgumentError",
    "InvalidURIError",
    "NotFoundError",
    "OpenVikingError",
    "OpenVikingWarning",
    "PermissionDeniedError",
    "StoreDamagedError",
    "StoreNotWritableError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError",
    "error_from_dict",
]


class OpenVikingWarning(UserWarning):
    """Something degraded but the call still answered (a model server was unreachable, a
    target names nothing stored, ...): the SDK's default way of saying so, where the CLI
    prints ``Warning:`` lines. ``warnings.filterwarnings("ignore", category=OpenVikingWarning)``
    silences it; ``OpenViking(warn=...)`` takes the messages instead."""


class OpenVikingError(Exception):
    """Base class of every error openviking raises on purpose."""

    code: str = "INTERNAL"

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details: dict[str, Any] = dict(details or {})

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from what it says, not from its constructor's arguments (InvalidURIError
        # takes a uri and a reason): an error raised in a process pool's worker reaches the
        # parent instead of breaking the pool.
        return (_rebuilt, (type(self), self.message, self.hint, self.details))

    def to_dict(self) -> dict[str, Any]:
        """The JSON error object: ``{"code", "message", "details"}`` (plus ``hint`` when set)."""
        payload: dict[str, Any] = {"code": self.code, "message": self.message, "details": self.details}
        if self.hint:
            payload["hint"] = self.hint
        return payload


def _rebuilt(kind: type[OpenVikingError], message: str, hint: str | None, details: dict[str, Any]) -> OpenVikingError:
    error = kind.__new__(kind)
    OpenVikingError.__init__(error, message, hint=hint, details=details)
    return error


class InvalidArgumentError(OpenVikingError, ValueError):
    """A parameter has a value that can never work (empty query, bad time, bad filter...)."""

    code = "INVALID_ARGUMENT"


class InvalidURIError(OpenVikingError, ValueError):
    """A URI is not a valid ``viking://`` URI."""

    code = "INVALID_URI"

    def __init__(self, uri: str, reason: str, *, hint: str | None = None) -> None:
        super().__init__(f"Invalid URI: {uri} ({reason})", hint=hint, details={"uri": uri, "reason": reason})


class UnauthenticatedError(OpenVikingError):
    """A server was called without an API key, or with one it does not know."""

    code = "UNAUTHENTICATED"


class PermissionDeniedError(OpenVikingError):
    """A URI tries to leave its space (``.``, ``..`` or a backslash in a segment), or (the
    subclass below) the store cannot be written."""

    code = "PERMISSION_DENIED"


class StoreNotWritableError(PermissionDeniedError):
    """The store cannot be written here (a read-only directory or file system): the
    machine's state, not bad input (the CLI exits 1, not 2)."""


# Which detail names the thing an error is about, and what kind of thing that is, in order.
_NAMED_BY = (
    ("uri", "file"),
    ("session_id", "session"),
    ("path", "path"),
    ("temp_file_id", "upload"),
    ("store", "store"),
)


def _named(details: dict[str, Any]) -> dict[str, Any]:
    """``details`` with ``resource`` and ``type`` as upstream names the missing or existing thing."""
    for key, kind in _NAMED_BY:
        if "resource" not in details and isinstance(details.get(key), str):
            details["resource"] = details[key]
            details.setdefault("type", kind)
    details.setdefault("type", "resource")
    return details


class NotFoundError(OpenVikingError, LookupError):
    """A store, URI, session or local path does not exist."""

    code = "NOT_FOUND"

    def __init__(self, message: str, *, hint: str | None = None, details: dict[str, Any] | None = None) -> None:
        super().__init__(message, hint=hint, details=_named(dict(details or {})))


class AlreadyExistsError(OpenVikingError):
    """The destination of a write already exists."""

    code = "ALREADY_EXISTS"

    def __init__(self, message: str, *, hint: str | None = None, details: dict[str, Any] | None = None) -> None:
        super().__init__(message, hint=hint, details=_named(dict(details or {})))


class FailedPreconditionError(OpenVikingError):
    """The request is valid, but the state of the store does not allow it."""

    code = "FAILED_PRECONDITION"


class ConfigError(FailedPreconditionError):
    """The config file cannot be read or holds a value that can never work."""


class ConfigFileNotFoundError(NotFoundError, ConfigError):
    """The config file named by ``--config`` or ``OPENVIKING_CONFIG_FILE`` does not exist:
    NOT_FOUND, and a config load failure (``except ConfigError`` catches it), which the command
    line reports as bad usage (exit 2), as upstream's does."""


class StoreDamagedError(FailedPreconditionError):
    """A file of the store is missing or damaged (a bad copy, a full disk, a kill while a file
    was written): the store's state, which ``doctor --repair`` mends, not a bug."""


class CancelledError(OpenVikingError):
    """The user stopped the operation (Ctrl-C)."""

    code = "CANCELLED"


class UnavailableError(OpenVikingError):
    """A model server (embeddings, LLM, rerank) could not be reached or failed."""

    code = "UNAVAILABLE"


class DeadlineExceededError(OpenVikingError):
    """A model server did not answer in time, or a grep's regex work passed its deadline."""

    code = "DEADLINE_EXCEEDED"


class UnimplementedError(OpenVikingError):
    """Something upstream OpenViking offers that this tool does not (its admin, ACL or task
    routes, say): asked of a server, it answers upstream's own code for it."""

    code = "UNIMPLEMENTED"


class InternalError(OpenVikingError):
    """Something that should not happen; please report it."""

    code = "INTERNAL"


def error_from_dict(payload: dict[str, Any]) -> OpenVikingError:
    """The error a ``to_dict()`` describes (the HTTP client rebuilds a server's errors so):
    the class of its code, its message, hint and details; an unknown code is an
    :class:`OpenVikingError` that keeps the code."""
    code = str(payload.get("code") or "INTERNAL")
    kind = _BY_CODE.get(code, OpenVikingError)
    error = _rebuilt(kind, str(payload.get("message") or code), payload.get("hint"), dict(payload.get("details") or {}))
    if kind is OpenVikingError:
        error.code = code
    return error


_BY_CODE: dict[str, type[OpenVikingError]] = {
    kind.code: kind
    for kind in (
        InvalidArgumentError,
        InvalidURIError,
        UnauthenticatedError,
        PermissionDeniedError,
        NotFoundError,
        AlreadyExistsError,
        FailedPreconditionError,
        CancelledError,
        UnavailableError,
        DeadlineExceededError,
        UnimplementedError,
        InternalError,
    )
}
