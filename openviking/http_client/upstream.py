"""Upstream OpenViking's server as the client meets it: its answers as our results, its refusals, its bodies.

Upstream's server (``openviking-server``, measured against 0.5.2) shares most routes with
``openviking serve`` but answers with fewer keys: a session's ``user`` is an object or absent,
an added message is a count, a deletion or a move names only its URIs, ``stat`` is a file
system's. Each reader here takes either server's ``result`` and fills in what upstream leaves
out, so a key this server always sends is read as it is. The bodies of adds differ too
(upstream's ``/skills`` takes ``data`` or ``temp_file_id`` and nothing else, and reads
``source_name`` as the name of the folder to make): :func:`resource_body` and
:func:`skill_body` rewrite ours for it, once ``/health`` has said which server answers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import Any

from openviking.contract.results import (
    AddResult,
    Message,
    MessageAdded,
    MoveResult,
    RemoveResult,
    SessionDeleted,
    SessionInfo,
    Stat,
)
from openviking.errors import InvalidArgumentError, NotFoundError, OpenVikingError, PermissionDeniedError
from openviking.values.uri import context_type_of

__all__ = [
    "added",
    "is_upstream",
    "message_added",
    "missing_route",
    "moved",
    "refuses_paths",
    "removed",
    "resource_body",
    "session_deleted",
    "session_info",
    "skill_body",
    "stat",
]


def is_upstream(health: Any) -> bool:
    """Whether a ``/health`` answer is upstream's: it says ``auth_mode`` where ours says ``auth``."""
    return isinstance(health, Mapping) and "auth_mode" in health and "auth" not in health


def refuses_paths(exc: OpenVikingError) -> bool:
    """Upstream's refusal of a path of its machine (it takes remote URLs and uploads only)."""
    return isinstance(exc, PermissionDeniedError) and "temp-uploaded" in exc.message


def missing_route(method: str, path: str, status: int, payload: Any) -> OpenVikingError | None:
    """The error for a route the server does not have, or None when the 404 is about an item.

    A framework's own 404 is bare (``{"detail": "Not Found"}``) or, on upstream's server, an
    envelope reading just ``Not Found`` with no details; a missing item always names itself.
    """
    if status != 404:
        return None
    error = payload.get("error") if isinstance(payload, Mapping) else None
    if isinstance(error, Mapping):
        if error.get("message") != "Not Found" or error.get("details"):
            return None
    elif isinstance(payload, Mapping) and payload.get("status") == "error":
        return None
    return NotFoundError(
        f"The server has no route {method} {path}",
        hint="It may be another openviking server (upstream's lacks some of this tool's routes)",
        details={"status": 404, "route": f"{method} {path}"},
    )


def _user(result: Mapping[str, Any]) -> str:
    user = result.get("user")
    if isinstance(user, Mapping):
        user = user.get("user_id")
    if not isinstance(user, str):
        user = result.get("created_by_user_id")
    return user if isinstance(user, str) else ""


def session_info(result: Mapping[str, Any]) -> SessionInfo:
    """A session from either server (upstream's ``user`` is ``{account_id, user_id}``, or absent in a list)."""
    data = {**result, "user": _user(result)}
    if "updated_at" not in data and isinstance(result.get("mod_time"), str):
        data["updated_at"] = result["mod_time"]
    return SessionInfo.from_dict(data)


def message_added(role: str, parts: list[dict[str, str]]) -> Callable[[Mapping[str, Any]], MessageAdded]:
    """How an added message reads: upstream answers only the session and its count, so the
    message is the one sent."""

    def read(result: Mapping[str, Any]) -> MessageAdded:
        if "message" in result:
            return MessageAdded.from_dict(result)
        return MessageAdded(
            session_id=str(result.get("session_id", "")),
            uri=str(result.get("uri", "")),
            message=Message(id="", role=role, parts=parts),
            message_count=int(result.get("message_count") or 0),
        )

    return read


def session_deleted(result: Mapping[str, Any]) -> SessionDeleted:
    """A deleted session (upstream names only its id)."""
    return SessionDeleted.from_dict({"uri": "", **result})


def moved(result: Mapping[str, Any]) -> MoveResult:
    """A move: upstream answers ``{from, to}`` once it moved, so the one URI it names moved."""
    return MoveResult.from_dict(result if "moved" in result else {**result, "moved": 1})


def removed(result: Mapping[str, Any]) -> RemoveResult:
    """A removal: upstream counts what went as ``estimated_deleted_count``."""
    if "removed" in result or "estimated_deleted_count" not in result:
        return RemoveResult.from_dict(result)
    return RemoveResult.from_dict({**result, "removed": int(result["estimated_deleted_count"] or 0)})


def stat(result: Mapping[str, Any]) -> Stat:
    """A stat: upstream's is a file system's (``name``, ``size``, ``isDir``, ``modTime``)."""
    if "context_type" in result or "modTime" not in result:
        return Stat.from_dict(result)
    uri = str(result.get("uri", ""))
    data = {
        **result,
        "name": result.get("name") or PurePosixPath(uri.removeprefix("viking://")).name,
        "context_type": context_type_of(uri),
        "updated_at": result["modTime"],
    }
    return Stat.from_dict(data)


def added(result: Mapping[str, Any]) -> AddResult:
    """An add: upstream reports its parser's files (``meta.processed_files``...) and ``errors``;
    a single file's ``meta`` is empty, and a skill counts its files besides SKILL.md."""
    if "added" in result or "status" not in result:
        return AddResult.from_dict(result)
    meta = result.get("meta") or {}
    skipped = [*(meta.get("skipped_files") or []), *(meta.get("unsupported_files") or [])]
    failed = [*(meta.get("failed_files") or []), *(result.get("errors") or [])]
    if "processed_files" in meta:
        count = len(meta["processed_files"] or [])
    elif "auxiliary_files" in result:
        count = 1 + int(result["auxiliary_files"] or 0)
    else:
        count = 0 if failed or result.get("status") != "success" else 1
    return AddResult(
        root_uri=str(result.get("root_uri") or result.get("uri") or ""),
        added=count,
        skipped=len(skipped),
        skipped_files=[_named_file(item) for item in skipped],
        warnings=[_named_file(item) for item in failed],
    )


def _named_file(item: Any) -> dict[str, str]:
    if isinstance(item, Mapping):
        return {str(k): str(v) for k, v in item.items()}
    return {"path": str(item), "reason": ""}


def resource_body(body: dict[str, Any], path: os.PathLike[str] | None) -> dict[str, Any]:
    """An add's body as upstream takes it: ``source_name`` is the name of what it makes, not
    the client's path (a whole path would become folders); a ``path`` that is not uploaded (a
    URL, say) stays, for upstream to fetch or refuse."""
    if path is None:
        return dict(body)
    named = body.get("source_name")
    shown = named if isinstance(named, str) and named else os.fspath(path)
    return {**body, "source_name": PurePosixPath(shown.replace("\\", "/").rstrip("/")).name}


def skill_body(body: dict[str, Any], path: os.PathLike[str] | None) -> dict[str, Any]:
    """A skill's body as upstream takes it: the upload (or, not uploaded, the ``path`` as its
    ``data``: a Git URL) and ``wait``, nothing else.

    Raises:
        InvalidArgumentError: a name or tags were given (upstream names a skill by its SKILL.md).
    """
    given = sorted(k for k in ("name", "tags") if body.get(k) not in (None, [], ""))
    if given:
        raise InvalidArgumentError(
            f"Upstream's server takes no {' or '.join(given)} for a skill",
            hint="Name the skill in its SKILL.md, or leave the option out",
            details={"fields": given},
        )
    out = {k: v for k, v in body.items() if k in ("temp_file_id", "wait")}
    if path is None and "path" in body:
        out["data"] = body["path"]
    return out
