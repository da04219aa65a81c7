"""The rows of the sessions and messages tables of one user, read and written by name.

The session package shapes and validates sessions; this is where their rows are found
(by URI, by owner, by session id) in LanceDB, so that no other package writes a filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import session_schema as schema
from .filters import sql_string
from .lance import LanceStore

__all__ = ["SessionRows"]


class SessionRows:
    """The session and message rows of ``user`` in ``store``."""

    def __init__(self, store: LanceStore, user: str) -> None:
        self.store = store
        self._owner = f"user_id = {sql_string(user)}"

    def _of(self, session_id: str) -> str:
        return f"{self._owner} AND session_id = {sql_string(session_id)}"

    def session(self, uri: str, columns: Sequence[str] = schema.SESSION_COLUMNS) -> dict[str, Any] | None:
        """The session row at ``uri``, or None."""
        rows = self.store._query_rows(schema.SESSIONS, f"uri = {sql_string(uri)}", columns, limit=1)
        return rows[0] if rows else None

    def session_by_id(self, session_id: str, columns: Sequence[str] = schema.SESSION_COLUMNS) -> dict[str, Any] | None:
        """The user's session row with this id, or None."""
        rows = self.store._query_rows(schema.SESSIONS, self._of(session_id), columns, limit=1)
        return rows[0] if rows else None

    def sessions(self, columns: Sequence[str] = schema.SESSION_COLUMNS) -> list[dict[str, Any]]:
        """Every session row of the user."""
        return self.store._query_rows(schema.SESSIONS, self._owner, columns)

    def messages(
        self, session_id: str | None = None, columns: Sequence[str] = schema.MESSAGE_COLUMNS
    ) -> list[dict[str, Any]]:
        """The message rows of one session (of every session of the user with None), unordered."""
        where = self._owner if session_id is None else self._of(session_id)
        return self.store._query_rows(schema.MESSAGES, where, columns)

    def count_messages(self, session_id: str) -> int:
        """How many messages the session holds."""
        return self.store._count_rows(schema.MESSAGES, self._of(session_id))

    def write_session(self, row: dict[str, Any]) -> None:
        """Insert or replace a session row (keyed by its URI)."""
        self.store._upsert_rows(schema.SESSIONS, [row], "uri", schema.sessions_schema())

    def add_message(self, row: dict[str, Any]) -> None:
        """Append a new message row (its id is new: ``msg_<32 random hex>``)."""
        self.store._append_rows(schema.MESSAGES, [row], schema.messages_schema())

    def commits(self, uri: str) -> dict[str, Any] | None:
        """The commit row of the session at ``uri``, or None (never committed)."""
        rows = self.store._query_rows(schema.COMMITS, f"uri = {sql_string(uri)}", schema.COMMIT_COLUMNS, limit=1)
        return rows[0] if rows else None

    def write_commits(self, row: dict[str, Any]) -> None:
        """Insert or replace a session's commit row (keyed by the session's URI)."""
        self.store._upsert_rows(schema.COMMITS, [row], "uri", schema.commits_schema())

    def delete(self, session_id: str, uri: str) -> None:
        """Delete a session's messages, its commit row, then its row: a crash in between leaves
        a session without messages, never messages without a session."""
        self.store._delete_rows(schema.MESSAGES, self._of(session_id))
        self.store._delete_rows(schema.COMMITS, f"uri = {sql_string(uri)}")
        self.store._delete_rows(schema.SESSIONS, f"uri = {sql_string(uri)}")
