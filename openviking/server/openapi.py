"""The OpenAPI document as the server answers: each operation's 200 is the envelope holding its
declared result's schema, every status an error can have is the error envelope, and there is
no 422 (a request the models refuse is 400 ``INVALID_ARGUMENT`` here).

FastAPI writes the paths, parameters and request bodies (with each parameter's doc and range,
from the declarations); this module puts the true responses on them.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from openviking.contract.hits import FindResult
from openviking.contract.operations import OPERATIONS
from openviking.contract.results import ContextResult, DoctorReport, schema_of

__all__ = ["ERROR_STATUSES", "install_openapi"]

# Every status an error may answer with, on any route (a Host or Origin check, a key, a body's
# cap and time come before the route itself).
ERROR_STATUSES = {
    400: "INVALID_ARGUMENT or INVALID_URI: a bad parameter or body",
    401: "UNAUTHENTICATED: a missing or unknown API key",
    403: "PERMISSION_DENIED: another user's space, a user key doing the root's work, or a foreign Origin",
    404: "NOT_FOUND: nothing at that URI, session or upload (details.resource names it)",
    408: "DEADLINE_EXCEEDED: the body did not arrive in time",
    409: "ALREADY_EXISTS: something is there already",
    412: "FAILED_PRECONDITION: the store's state does not allow it (another embedder, a directory...)",
    413: "The body is over the server's cap",
    421: "PERMISSION_DENIED: a Host this server does not answer to",
    500: "INTERNAL: a bug; details.request_id is in the server's log",
    503: "UNAVAILABLE: not ready yet, or a model server unreachable",
    504: "DEADLINE_EXCEEDED: a model server or a search ran past its deadline",
}

_ERROR = {
    "title": "Error",
    "type": "object",
    "properties": {
        "status": {"const": "error"},
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "details": {"type": "object"},
                "hint": {"type": "string"},
            },
            "required": ["code", "message", "details"],
        },
        "time": {"type": "number"},
        "warnings": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["status", "error"],
}

# Results of the routes that are not declared operations, and of those that answer more than
# their operation: upstream's search route answers a context when its body says mode "context".
_OTHER_RESULTS: dict[str, dict[str, Any]] = {
    "temp_upload": {"type": "object", "properties": {"temp_file_id": {"type": "string"}}, "required": ["temp_file_id"]},
    "doctor_repair": DoctorReport.json_schema(),
    "search": schema_of(FindResult | ContextResult),
}


def _envelope(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "status": {"const": "ok"},
            "result": result,
            "time": {"type": "number"},
            "warnings": {"type": "array", "items": {"type": "string"}},
            "has_more": {"type": "boolean"},
        },
        "required": ["status", "result", "time"],
    }


# The probes answer without the envelope, as upstream's do.
_PROBES: dict[str, dict[str, Any]] = {
    "health": {
        "200": {
            "type": "object",
            "properties": {
                "status": {"const": "ok"},
                "healthy": {"type": "boolean"},
                "version": {"type": "string"},
                "auth": {"type": "string"},
                "user_id": {"type": "string"},
            },
            "required": ["status", "healthy", "version"],
        }
    },
    "ready": {
        "200": {"type": "object", "properties": {"status": {"const": "ready"}}, "required": ["status"]},
        "503": {
            "type": "object",
            "properties": {"status": {"const": "not_ready"}, "reason": {"type": "string"}},
            "required": ["status", "reason"],
        },
    },
}


def _responses(operation_id: str | None, summary: str) -> dict[str, Any]:
    operation = OPERATIONS.get(operation_id or "")
    if operation is not None and operation.result is bytes:
        operation = None  # the bytes themselves, as the route says
    result = _OTHER_RESULTS.get(operation_id or "")
    if result is None and operation is not None:
        result = schema_of(operation.result)
    answers: dict[str, Any] = {}
    if result is not None:
        answers["200"] = {"description": summary, "content": {"application/json": {"schema": _envelope(result)}}}
    for status, why in ERROR_STATUSES.items():
        error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
        answers[str(status)] = {"description": why, "content": error}
    for code, probe in _PROBES.get(operation_id or "", {}).items():
        answers[code] = {"description": summary, "content": {"application/json": {"schema": probe}}}
    return answers


def document(app: FastAPI) -> dict[str, Any]:
    """The app's OpenAPI document with its true responses."""
    schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        components.pop(unused, None)
    components["Error"] = _ERROR
    keyed = app.state.openviking.server.has_keys
    if not keyed:  # a server without keys takes every request on loopback: no key is asked for
        schema["components"].pop("securitySchemes", None)
    for methods in schema["paths"].values():
        for described in methods.values():
            if not keyed:
                described.pop("security", None)
            described["responses"].pop("422", None)
            given = described["responses"].get("200", {})
            answers = _responses(described.get("operationId"), given.get("description", ""))
            if "200" not in answers and given:  # a route with its own answer (health, download)
                answers["200"] = given
            described["responses"] = answers
    return schema


def install_openapi(app: FastAPI) -> None:
    """Serve :func:`document` at ``/openapi.json`` (made once, on first request)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
