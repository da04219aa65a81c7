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
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from openviking.contract.results import Message, MessageAdded, SessionDeleted, SessionInfo
from openviking.errors import AlreadyExistsError, InvalidArgumentError, NotFoundError
from openviking.message import TextPart
from openviking.store.session_rows import SessionRows
from openviking.system.ostext import require_utf8
from openviking.values.arguments import describe
from openviking.values.timefilter import format_iso8601, parse_iso_datetime
from openviking.values.uri import sessions_folder

from .extracting import Said

if TYPE_CHECKING:
    from openviking.store.lance import LanceStore

__all__ = [
    "ROLES",
    "CommitState",
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
        shown = value if isinstance(value, str) and len(value) <= 2 * MAX_SESSION_ID else describe(value)
        raise InvalidArgumentError(
            f"Invalid session id '{shown}': use letters, digits, '.', '_' and '-', starting with a letter "
            f"or digit, at most {MAX_SESSION_ID} characters",
            hint="Leave it out to get a generated id: openviking session new",
            details={"session_id": shown},
        )
    return text


def validate_role(role: Any) -> str:
    """``user`` or ``assistant`` (case-insensitive), or :class:`InvalidArgumentError`."""
    text = role.strip().lower() if isinstance(role, str) else ""
    if text not in ROLES:
        raise InvalidArgumentError(
            f"Invalid role '{role}': a message's role must be 'user' or 'assistant'",
            hint="Pass role='user' or role='assistant'",
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
            hint='Give the message text, e.g. "We are designing the OAuth login flow."',
            details={"content": content if isinstance(content, str) else ""},
        )
    return parts


def message_time(value: Any) -> datetime | None:
    """When a message was said: a datetime (naive is UTC), or ISO 8601 text; None is now.

    Raises:
        InvalidArgumentError: anything else.
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        try:
            return parse_iso_datetime(value)
        except ValueError:
            pass
    raise InvalidArgumentError(
        f"created_at must be an ISO 8601 time, e.g. 2023-05-08T13:56:00Z (got {describe(value)})",
        details={"created_at": describe(value)},
    )


def check_message(session_id: Any, role: Any, content: Any) -> tuple[str, str, list[dict[str, str]]]:
    """Validate a message before anything is opened or written: ``(id, role, parts)``."""
    return validate_session_id(session_id), validate_role(role), message_parts(content)


@dataclass(slots=True)
class CommitState:
    """How far a session was committed: its commits, the ``seq`` of the last message archived,
    of the last one memories were taken from, and why the last extraction failed ("" if not)."""

    commits: int = 0
    archived_seq: int = 0
    extracted_seq: int = 0
    extraction_error: str = ""


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
        self.rows = SessionRows(store, user)

    # ------------------------------------------------------------------ helpers
    def uri(self, session_id: str) -> str:
        """``viking://user/{user}/sessions/{id}``."""
        return f"{sessions_folder(self.user)}/{session_id}"

    def _row(self, session_id: str) -> dict[str, Any] | None:
        return self.rows.session(self.uri(session_id))

    def _require(self, session_id: str) -> dict[str, Any]:
        row = self._row(session_id)
        if row is None:
            raise NotFoundError(
                f"Session not found: {session_id}",
                hint="List the sessions with: openviking session list",
                details={"session_id": session_id},
            )
        return row

    def _info(self, row: dict[str, Any], message_count: int) -> SessionInfo:
        return SessionInfo(
            session_id=row["session_id"],
            uri=row["uri"],
            user=row["user_id"],
            created_at=_iso(row.get("created_at")),
            updated_at=_iso(row.get("updated_at")),
            message_count=message_count,
        )

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
    def create(self, session_id: str | None = None) -> SessionInfo:
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
                    hint=f"Add to it with add_message('{sid}', 'user', TEXT)",
                    details={"session_id": sid},
                )
            row = self._new_row(sid)
            self.rows.write_session(row)
        return self._info(row, 0)

    def ensure(self, session_id: str) -> SessionInfo:
        """The session ``session_id``, created when it does not exist yet."""
        sid = validate_session_id(session_id)
        with self.store.write_lock():
            row = self._row(sid)
            if row is None:
                row = self._new_row(sid)
                self.rows.write_session(row)
                return self._info(row, 0)
        return self._info(row, self.rows.count_messages(sid))

    def get(self, session_id: str) -> SessionInfo:
        """A session with its summary and all its messages, oldest first.

        Raises:
            NotFoundError: no such session.
        """
        sid = validate_session_id(session_id)
        row = self._require(sid)
        messages = self.messages(sid)
        info = self._info(row, len(messages))
        info.summary = row.get("summary") or ""
        info.messages = messages
        return info

    def all(self) -> list[SessionInfo]:
        """Every session of the user, most recently changed first."""
        rows = self.rows.sessions()
        counts = Counter(r["session_id"] for r in self.rows.messages(columns=["session_id"]))
        rows.sort(key=lambda r: (r.get("updated_at") or datetime.min.replace(tzinfo=UTC), r["session_id"]))
        return [self._info(r, counts.get(r["session_id"], 0)) for r in reversed(rows)]

    def uris(self) -> list[str]:
        """The URI of every session of the user (one query; no message is read)."""
        return [row["uri"] for row in self.rows.sessions(columns=["uri"])]

    def delete(self, session_id: str) -> SessionDeleted:
        """Delete a session and all its messages.

        Raises:
            NotFoundError: no such session.
        """
        sid = validate_session_id(session_id)
        with self.store.write_lock():
            row = self._require(sid)
            count = self.rows.count_messages(sid)
            self.rows.delete(sid, row["uri"])
        return SessionDeleted(session_id=sid, uri=row["uri"], deleted=True, messages_deleted=count)

    def set_summary(self, session_id: str, summary: str) -> SessionInfo:
        """Set the session's summary (what intent analysis reads besides the last messages)."""
        if not isinstance(summary, str):
            raise InvalidArgumentError("summary must be a string")
        sid = validate_session_id(session_id)
        with self.store.write_lock():
            row = self._row(sid) or self._new_row(sid)
            row.update(summary=summary, updated_at=datetime.now(UTC))
            self.rows.write_session(row)
        return self._info(row, self.rows.count_messages(sid))

    # ------------------------------------------------------------------ messages
    def add_message(
        self, session_id: str, role: str, content: Any, *, created_at: datetime | None = None
    ) -> MessageAdded:
        """Append a message; the session is created when it does not exist.

        Args:
            session_id: the session.
            role: ``user`` or ``assistant``.
            content: text, a :class:`~openviking.message.TextPart`, or a list of parts.
            created_at: when it was said (default: now).

        Raises:
            InvalidArgumentError: bad id, role or empty content (nothing is written).
        """
        sid, checked_role, parts = check_message(session_id, role, content)
        now = datetime.now(UTC)
        said_at = created_at or now
        message = {
            "id": f"msg_{secrets.token_hex(16)}",
            "session_id": sid,
            "user_id": self.user,
            "seq": _next_seq(),
            "role": checked_role,
            "parts": json.dumps(parts, ensure_ascii=False),
            "content": "\n".join(p["text"] for p in parts),
            "created_at": said_at,
        }
        with self.store.write_lock():
            # The session's row, then the message: a kill in between leaves a session without
            # the message, never a message without its session (as delete does).
            row = self._row(sid) or self._new_row(sid)
            row["updated_at"] = now
            self.rows.write_session(row)
            self.rows.add_message(message)
            count = self.rows.count_messages(sid)
        return MessageAdded(session_id=sid, uri=row["uri"], message=_message(message), message_count=count)

    def messages(self, session_id: str, last: int | None = None) -> list[Message]:
        """The session's messages, oldest first (only the ``last`` N when given)."""
        sid = validate_session_id(session_id)
        rows = self.rows.messages(sid)
        rows.sort(key=lambda r: (r.get("seq") or 0, r["id"]))
        if last is not None:
            rows = rows[-last:] if last > 0 else []
        return [_message(r) for r in rows]

    def conversation(self, session_id: str) -> list[tuple[int, Said]]:
        """Every message of the session with its ``seq``, oldest first, as what was said."""
        rows = self.rows.messages(validate_session_id(session_id), ["id", "seq", "role", "content", "created_at"])
        rows.sort(key=lambda r: (r.get("seq") or 0, r["id"]))
        out = []
        for row in rows:
            at = row.get("created_at")
            when = at if isinstance(at, datetime) else datetime.now(UTC)
            said = Said(row["id"], str(row.get("role") or "user"), str(row.get("content") or ""), when)
            out.append((int(row.get("seq") or 0), said))
        return out

    def commit_state(self, session_id: str) -> CommitState:
        """How far the session was committed (never: all zero).

        Raises:
            NotFoundError: no such session.
        """
        sid = validate_session_id(session_id)
        self._require(sid)
        row = self.rows.commits(self.uri(sid))
        if row is None:
            return CommitState()
        return CommitState(
            commits=int(row.get("commits") or 0),
            archived_seq=int(row.get("archived_seq") or 0),
            extracted_seq=int(row.get("extracted_seq") or 0),
            extraction_error=str(row.get("extraction_error") or ""),
        )

    def save_commit_state(self, session_id: str, state: CommitState) -> None:
        """Record how far the session is committed now."""
        sid = validate_session_id(session_id)
        self.rows.write_commits(
            {
                "uri": self.uri(sid),
                "session_id": sid,
                "user_id": self.user,
                "commits": state.commits,
                "archived_seq": state.archived_seq,
                "extracted_seq": state.extracted_seq,
                "extraction_error": state.extraction_error,
                "updated_at": datetime.now(UTC),
            }
        )

    def recent(self, session_id: str, last: int) -> tuple[str, list[tuple[str, str]]] | None:
        """The summary and the last ``last`` messages with text (``(role, content)``), or None.

        Search reads a session through this: an id that names no session (or could not
        name one) is not an error there, so it is not validated here.
        """
        row = self.rows.session_by_id(session_id, ["summary"])
        if row is None:
            return None
        messages = self.rows.messages(session_id, ["id", "seq", "role", "content"])
        messages.sort(key=lambda r: (r.get("seq") or 0, r.get("id") or ""))
        texts = [
            (str(r.get("role") or "user"), str(r.get("content") or ""))
            for r in messages
            if str(r.get("content") or "").strip()
        ]
        return str(row.get("summary") or ""), texts[-last:] if last > 0 else []


def _message(row: dict[str, Any]) -> Message:
    try:
        parts = json.loads(row.get("parts") or "[]")
    except json.JSONDecodeError:
        parts = [{"type": "text", "text": row.get("content") or ""}]
    created = row.get("created_at")
    return Message(
        id=row["id"],
        role=row["role"],
        parts=parts,
        created_at=format_iso8601(created) if isinstance(created, datetime) else created,
    )
