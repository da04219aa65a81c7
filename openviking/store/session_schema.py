"""Arrow schemas of the session tables: ``sessions``, ``messages`` and ``session_commits``.

Both live in the same LanceDB directory as the nodes and records, and are created on first
write. A session row is keyed by its URI (``viking://user/{user}/sessions/{id}``), so two
users' sessions never collide; a message row by its id (``msg_<32 hex>``). A message's
``parts`` are kept as JSON text (``[{"type": "text", "text": ...}]``) next to ``content``,
their joined text, which is what intent analysis reads (through ``SessionStore``). A session's
commits are one row of ``session_commits`` (keyed by the session's URI): how far its messages
were archived and how far memories were taken from them, so that a commit reads only what came
after, and an extraction that failed is tried again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "COMMITS",
    "COMMIT_COLUMNS",
    "MESSAGES",
    "MESSAGE_COLUMNS",
    "SESSIONS",
    "SESSION_COLUMNS",
    "commits_schema",
    "messages_schema",
    "sessions_schema",
]

SESSIONS = "sessions"
MESSAGES = "messages"
COMMITS = "session_commits"

SESSION_COLUMNS = ["uri", "session_id", "user_id", "summary", "created_at", "updated_at"]
MESSAGE_COLUMNS = ["id", "session_id", "user_id", "seq", "role", "parts", "content", "created_at"]
COMMIT_COLUMNS = [
    "uri", "session_id", "user_id", "commits", "archived_seq", "extracted_seq", "extraction_error", "updated_at"
]  # fmt: skip


def sessions_schema() -> pa.Schema:
    """One row per session: who owns it, when it started and changed, its summary."""
    import pyarrow as pa

    timestamp = pa.timestamp("ms", tz="UTC")
    return pa.schema(
        [
            pa.field("uri", pa.string(), nullable=False),
            pa.field("session_id", pa.string(), nullable=False),
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("summary", pa.large_string()),
            pa.field("created_at", timestamp),
            pa.field("updated_at", timestamp),
        ]
    )


def messages_schema() -> pa.Schema:
    """One row per message; ``seq`` (nanoseconds, strictly increasing) orders a session's messages."""
    import pyarrow as pa

    timestamp = pa.timestamp("ms", tz="UTC")
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("session_id", pa.string(), nullable=False),
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("seq", pa.int64()),
            pa.field("role", pa.string()),
            pa.field("parts", pa.large_string()),
            pa.field("content", pa.large_string()),
            pa.field("created_at", timestamp),
        ]
    )


def commits_schema() -> pa.Schema:
    """One row per committed session: its commits so far, the ``seq`` of the last message
    archived and of the last one memories were taken from, and why the last extraction failed."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("uri", pa.string(), nullable=False),
            pa.field("session_id", pa.string(), nullable=False),
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("commits", pa.int64()),
            pa.field("archived_seq", pa.int64()),
            pa.field("extracted_seq", pa.int64()),
            pa.field("extraction_error", pa.string()),
            pa.field("updated_at", pa.timestamp("ms", tz="UTC")),
        ]
    )
