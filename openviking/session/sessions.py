"""Sessions: a conversation's messages, kept in the store so that ``search`` can read them.

A session belongs to the configured user and is named ``viking://user/{user}/sessions/{id}``
(``viking://session/{id}`` for short). Its id is given by the caller or generated as
upstream does (``YYYYMMDD-HHMMSS-<16 hex>``, UTC). Messages are ``user`` or ``assistant``
turns made of text parts; adding one to a session that does not exist creates it.

Every change happens under the store's write lock, so two processes adding messages to the
same session both land, in the order they were written.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from openviking.errors import AlreadyExistsError, InvalidArgumentError, NotFoundError
from openviking.message import TextPart
from openviking.oslocal import require_utf8
from openviking.store.filters import sql_string
from openviking.timefilter import format_iso8601
from openviking.uri import sessions_folder

from . import schema

if TYPE_CHECKING:
    from openviking.store.lance import LanceStore

__all__ = [
    "ROLES",
    "Session",
    "SessionStore",
    "check_message",
    "message_parts",
    "new_session_id",
    "validate_role",
    "validate_session_id",
]

ROLES = ("user", "assistant")
MAX_SESSION_ID = 128
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_seq_lock = threading.Lock()
_last_seq = 0


def new_session_id(now: datetime | None = None) -> str:
    """``YYYYMMDD-HHMMSS-<16 hex>`` in UTC, as upstream names sessions."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"{moment:%Y%m%d-%H%M%S}-{secrets.token_hex(8)}"


def validate_session_id(value: Any) -> str:
    """Return ``value`` stripped, or raise when it cannot be a session id.

    A session id becomes a URI segment, so it is kept to letters, digits, ``.``, ``_`` and
    ``-`` (starting with a letter or digit, at most 128 characters): no path separators, no
    ``..``, no whitespace.

    Raises:
        InvalidArgumentError: the id is empty or holds other characters.
    """
    text = value.strip() if isinstance(value, str) else ""
    if not text or len(text) > MAX_SESSION_ID or not _SESSION_ID.match(text) or ".." in text:
        raise InvalidArgumentError(
            f"Invalid session id '{value}': use letters, digits, '.', '_' and '-', starting with a letter "
            f"or digit, at most {MAX_SESSION_ID} characters",
            hint="Leave it out to get a generated id: openviking session new",
            details={"session_id": value},
        )
    return text


def validate_role(role: Any) -> str:
    """``user`` or ``assistant`` (case-insensitive), or :class:`InvalidArgumentError`."""
    text = role.strip().lower() if isinstance(role, str) else ""
    if text not in ROLES:
        raise InvalidArgumentError(
            f"Invalid role '{role}': a message's role must be 'user' or 'assistant'",
            hint="Use --role user or --role assistant",
            details={"role": role, "allowed": list(ROLES)},
        )
    return text


def message_parts(content: Any) -> list[dict[str, str]]:
    """The text parts of a message given as a string, a TextPart, a part dict, or a list of them.

    Empty parts are dropped.

    Raises:
        InvalidArgumentError: no text at all, or a part that is not text.
    """
    items = list(content) if isinstance(content, list | tuple) else [content]
    parts: list[dict[str, str]] = []
    for item in items:
        if isinstance(item, str):
            text = item
        elif isinstance(item, TextPart):
            text = item.text
        elif isinstance(item, dict) and isinstance(item.get("text"), str) and item.get("type", "text") == "text":
            text = item["text"]
        else:
            raise InvalidArgumentError(
                f"Message content must be text, a TextPart or a list of them (got {type(item).__name__})",
                details={"type": type(item).__name__},
            )
        require_utf8(text, "Message text", "message")
        if text.strip():
            parts.append({"type": "text", "text": text})
    if not parts:
        raise InvalidArgumentError(
            "Message content must not be empty.",
            hint='Give the message text, e.g. --content "We are designing the OAuth login flow."',
            details={"content": content if isinstance(content, str) else ""},
        )
    return parts


def check_message(session_id: Any, role: Any, content: Any) -> tuple[str, str, list[dict[str, str]]]:
    """Validate a message before anything is opened or written: ``(id, role, parts)``."""
    return validate_session_id(session_id), validate_role(role), message_parts(content)


def _next_seq() -> int:
    # Nanoseconds since the epoch, strictly increasing within a process: orders messages.
    global _last_seq
    with _seq_lock:
        _last_seq = max(time.time_ns(), _last_seq + 1)
        return _last_seq


def _iso(value: Any) -> str | None:
    return format_iso8601(value) if isinstance(value, datetime) else None


class SessionStore:
    """The sessions of one user in one store.

    Args:
        store: an open store (created when writing).
        user: the configured user; sessions of other users are invisible.
    """

    def __init__(self, store: LanceStore, user: str) -> None:
        self.store = store
        self.user = user

    # ------------------------------------------------------------------ helpers
    def uri(self, session_id: str) -> str:
        """``viking://user/{user}/sessions/{id}``."""
        return f"{sessions_folder(self.user)}/{session_id}"

    def _owner_sql(self) -> str:
        return f"user_id = {sql_string(self.user)}"

    def _session_sql(self, session_id: str) -> str:
        return f"{self._owner_sql()} AND session_id = {sql_string(session_id)}"

    def _row(self, session_id: str) -> dict[str, Any] | None:
        rows = self.store.query_rows(
            schema.SESSIONS, f"uri = {sql_string(self.uri(session_id))}", schema.SESSION_COLUMNS, limit=1
        )
        return rows[0] if rows else None

    def _require(self, session_id: str) -> dict[str, Any]:
        row = self._row(session_id)
        if row is None:
            raise NotFoundError(
                f"Session not found: {session_id}",
                hint="List the sessions with: openviking session list",
                details={"session_id": session_id},
            )
        return row

    def _write_session(self, row: dict[str, Any]) -> None:
        self.store.upsert_rows(schema.SESSIONS, [row], "uri", schema.sessions_schema())

    def _info(self, row: dict[str, Any], message_count: int) -> dict[str, Any]:
        return {
            "session_id": row["session_id"],
            "uri": row["uri"],
            "user": row["user_id"],
            "created_at": _iso(row.get("created_at")),
            "updated_at": _iso(row.get("updated_at")),
            "message_count": message_count,
        }

    def _new_row(self, session_id: str) -> dict[str, Any]:
        now = datetime.now(UTC)
        return {
            "uri": self.uri(session_id),
            "session_id": session_id,
            "user_id": self.user,
            "summary": "",
            "created_at": now,
            "updated_at": now,
        }

    # ------------------------------------------------------------------ sessions
    def create(self, session_id: str | None = None) -> dict[str, Any]:
        """Start a new session (an id is generated when none is given).

        Raises:
            InvalidArgumentError: ``session_id`` is not a valid id.
            AlreadyExistsError: a session with that id exists.
        """
        sid = new_session_id() if session_id is None else validate_session_id(session_id)
        with self.store.write_lock():
            if self._row(sid) is not None:
                raise AlreadyExistsError(
                    f"Session already exists: {sid}",
                    hint=f"Add to it with: openviking session add-message {sid} --role user --content TEXT",
                    details={"session_id": sid},
                )
            row = self._new_row(sid)
            self._write_session(row)
        return self._info(row, 0)

    def ensure(self, session_id: str) -> dict[str, Any]:
        """The session ``session_id``, created when it does not exist yet."""
        sid = validate_session_id(session_id)
        with self.store.write_lock():
            row = self._row(sid)
            if row is None:
                row = self._new_row(sid)
                self._write_session(row)
                return self._info(row, 0)
        return self._info(row, self._count(sid))

    def get(self, session_id: str) -> dict[str, Any]:
        """A session with its summary and all its messages, oldest first.

        Raises:
            NotFoundError: no such session.
        """
        sid = validate_session_id(session_id)
        row = self._require(sid)
        messages = self.messages(sid)
        info = self._info(row, len(messages))
        info["summary"] = row.get("summary") or ""
        info["messages"] = messages
        return info

    def list(self) -> list[dict[str, Any]]:
        """Every session of the user, most recently changed first."""
        rows = self.store.query_rows(schema.SESSIONS, self._owner_sql(), schema.SESSION_COLUMNS)
        counts = Counter(
            r["session_id"] for r in self.store.query_rows(schema.MESSAGES, self._owner_sql(), ["session_id"])
        )
        rows.sort(key=lambda r: (r.get("updated_at") or datetime.min.replace(tzinfo=UTC), r["session_id"]))
        return [self._info(r, counts.get(r["session_id"], 0)) for r in reversed(rows)]

    def uris(self) -> list[str]:
        """The URI of every session of the user (one query; no message is read)."""
        return [row["uri"] for row in self.store.query_rows(schema.SESSIONS, self._owner_sql(), ["uri"])]

    def delete(self, session_id: str) -> dict[str, Any]:
        """Delete a session and all its messages.

        Raises:
            NotFoundError: no such session.
        """
        sid = validate_session_id(session_id)
        with self.store.write_lock():
            row = self._require(sid)
            count = self._count(sid)
            # Messages first: a crash in between leaves a session without messages, never orphans.
            self.store.delete_rows(schema.MESSAGES, self._session_sql(sid))
            self.store.delete_rows(schema.SESSIONS, f"uri = {sql_string(row['uri'])}")
        return {"session_id": sid, "uri": row["uri"], "deleted": True, "messages_deleted": count}

    def set_summary(self, session_id: str, summary: str) -> dict[str, Any]:
        """Set the session's summary (what intent analysis reads besides the last messages)."""
        if not isinstance(summary, str):
            raise InvalidArgumentError("summary must be a string")
        sid = validate_session_id(session_id)
        with self.store.write_lock():
            row = self._row(sid) or self._new_row(sid)
            row.update(summary=summary, updated_at=datetime.now(UTC))
            self._write_session(row)
        return self._info(row, self._count(sid))

    # ------------------------------------------------------------------ messages
    def add_message(self, session_id: str, role: str, content: Any) -> dict[str, Any]:
        """Append a message; the session is created when it does not exist.

        Args:
            session_id: the session.
            role: ``user`` or ``assistant``.
            content: text, a :class:`~openviking.message.TextPart`, or a list of parts.

        Returns:
            ``{"session_id", "uri", "message": {id, role, parts, created_at}, "message_count"}``.

        Raises:
            InvalidArgumentError: bad id, role or empty content (nothing is written).
        """
        sid, checked_role, parts = check_message(session_id, role, content)
        now = datetime.now(UTC)
        message = {
            "id": f"msg_{secrets.token_hex(16)}",
            "session_id": sid,
            "user_id": self.user,
            "seq": _next_seq(),
            "role": checked_role,
            "parts": json.dumps(parts, ensure_ascii=False),
            "content": "\n".join(p["text"] for p in parts),
            "created_at": now,
        }
        with self.store.write_lock():
            row = self._row(sid) or self._new_row(sid)
            self.store.upsert_rows(schema.MESSAGES, [message], "id", schema.messages_schema())
            row["updated_at"] = now
            self._write_session(row)
            count = self._count(sid)
        return {"session_id": sid, "uri": row["uri"], "message": _message(message), "message_count": count}

    def messages(self, session_id: str, last: int | None = None) -> list[dict[str, Any]]:
        """The session's messages, oldest first (only the ``last`` N when given)."""
        sid = validate_session_id(session_id)
        rows = self.store.query_rows(schema.MESSAGES, self._session_sql(sid), schema.MESSAGE_COLUMNS)
        rows.sort(key=lambda r: (r.get("seq") or 0, r["id"]))
        if last is not None:
            rows = rows[-last:] if last > 0 else []
        return [_message(r) for r in rows]

    def recent(self, session_id: str, last: int) -> tuple[str, list[tuple[str, str]]] | None:
        """The summary and the last ``last`` messages with text (``(role, content)``), or None.

        Search reads a session through this: an id that names no session (or could not
        name one) is not an error there, so it is not validated here.
        """
        sql = self._session_sql(session_id)
        rows = self.store.query_rows(schema.SESSIONS, sql, ["summary"], limit=1)
        if not rows:
            return None
        messages = self.store.query_rows(schema.MESSAGES, sql, ["id", "seq", "role", "content"])
        messages.sort(key=lambda r: (r.get("seq") or 0, r.get("id") or ""))
        texts = [
            (str(r.get("role") or "user"), str(r.get("content") or ""))
            for r in messages
            if str(r.get("content") or "").strip()
        ]
        return str(rows[0].get("summary") or ""), texts[-last:] if last > 0 else []

    def _count(self, session_id: str) -> int:
        return self.store.count_rows(schema.MESSAGES, self._session_sql(session_id))


def _message(row: dict[str, Any]) -> dict[str, Any]:
    try:
        parts = json.loads(row.get("parts") or "[]")
    except json.JSONDecodeError:
        parts = [{"type": "text", "text": row.get("content") or ""}]
    created = row.get("created_at")
    return {
        "id": row["id"],
        "role": row["role"],
        "parts": parts,
        "created_at": format_iso8601(created) if isinstance(created, datetime) else created,
    }


class Session:
    """A handle on one session, in the brief's SDK style.

    Example::

        session = client.session()
        session.add_message("user", [TextPart(text="I'm building a login page with OAuth")])
        results = client.search("best practices", session=session)
    """

    def __init__(self, client: Any, session_id: str) -> None:
        self._client = client
        self.session_id = session_id

    def __repr__(self) -> str:
        return f"Session(session_id={self.session_id!r})"

    @property
    def uri(self) -> str:
        """``viking://user/{user}/sessions/{id}``."""
        return f"{sessions_folder(self._client.user)}/{self.session_id}"

    def add_message(self, role: str, content: str | TextPart | Sequence[Any]) -> dict[str, Any]:
        """Append a ``user``/``assistant`` message (text, a TextPart or a list of parts)."""
        return dict(self._client.add_message(self.session_id, role, content))

    def get(self) -> dict[str, Any]:
        """The session with its messages."""
        return dict(self._client.get_session(self.session_id))

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The messages, oldest first."""
        return list(self.get()["messages"])

    def search(self, query: str, **options: Any) -> Any:
        """``client.search(query, session_id=this session, **options)``."""
        return self._client.search(query, session_id=self.session_id, **options)

    def delete(self) -> dict[str, Any]:
        """Delete the session and its messages."""
        return dict(self._client.delete_session(self.session_id))
