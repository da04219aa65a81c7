"""Arrow schemas of the two session tables: ``sessions`` and ``messages``.

Both live in the same LanceDB directory as the nodes and records, and are created on first
write. A session row is keyed by its URI (``viking://user/{user}/sessions/{id}``), so two
users' sessions never collide; a message row by its id (``msg_<32 hex>``). A message's
``parts`` are kept as JSON text (``[{"type": "text", "text": ...}]``) next to ``content``,
their joined text, which is what intent analysis reads (through ``SessionStore``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "MESSAGES",
    "MESSAGE_COLUMNS",
    "SESSIONS",
    "SESSION_COLUMNS",
    "messages_schema",
    "sessions_schema",
]

SESSIONS = "sessions"
MESSAGES = "messages"

SESSION_COLUMNS = ["uri", "session_id", "user_id", "summary", "created_at", "updated_at"]
MESSAGE_COLUMNS = ["id", "session_id", "user_id", "seq", "role", "parts", "content", "created_at"]


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
