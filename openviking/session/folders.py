"""Sessions seen as folders: ``viking://user/<u>/sessions/<id>`` in listings, reads and stat.

A session is not a node of the store: its messages live in their own tables. Listings show
each session as a folder where its URI points, a read or overview of one shows its messages,
its abstract and stat count them, and removing it (``rm -r``) deletes it. Everything else
that lists, reads or removes consults this module rather than knowing about sessions.
"""

from __future__ import annotations

from openviking.contract.results import Entry, SessionInfo, Stat
from openviking.errors import NotFoundError
from openviking.values.uri import VikingURI, session_id_of, sessions_folder

from .sessions import SessionStore

__all__ = ["SessionFolders", "session_abstract", "session_overview"]


class SessionFolders:
    """The sessions of one user, where a listing or a read meets them."""

    def __init__(self, sessions: SessionStore) -> None:
        self.sessions = sessions
        self.folder = sessions_folder(sessions.user)

    def at(self, target: VikingURI) -> SessionInfo | None:
        """The session (with its messages) that ``target`` names, else None.

        Raises:
            NotFoundError: ``target`` is in the sessions folder but no session has that id.
        """
        session_id = session_id_of(target, self.sessions.user)
        return self.sessions.get(session_id) if session_id else None

    def names_a_session(self, target: VikingURI) -> bool:
        """True when ``target`` is a URI of the sessions folder's children (stored or not)."""
        return bool(session_id_of(target, self.sessions.user))

    def existing_at(self, target: VikingURI) -> SessionInfo | None:
        """The session ``target`` names, or None when it names none (a missing id included)."""
        try:
            return self.at(target)
        except NotFoundError:
            return None

    def listed_within(self, target: VikingURI, depth: int | None) -> bool:
        """True when the sessions are at most ``depth`` levels below ``target`` (any depth when None)."""
        return self.folder.is_within(target) and (depth is None or self.folder.depth + 1 - target.depth <= depth)

    def entries_below(self, target: VikingURI, depth: int | None) -> list[Entry]:
        """The sessions at most ``depth`` levels below ``target`` (all when None), as folders."""
        if not self.listed_within(target, depth):
            return []
        return sorted((entry_of(info) for info in self.sessions.all()), key=lambda e: e.uri)

    def uris_below(self, target: VikingURI) -> list[str]:
        """The URIs of the sessions below ``target`` (for glob to match as folders)."""
        return self.sessions.uris() if self.listed_within(target, None) else []

    def within(self, target: VikingURI) -> list[SessionInfo]:
        """The sessions that removing ``target`` (a folder above the sessions folder) takes."""
        return self.sessions.all() if self.listed_within(target, None) and target.depth >= 2 else []

    def count_in(self, target: VikingURI) -> int:
        """How many sessions are children of ``target`` (the sessions folder's are; others none)."""
        return len(self.sessions.all()) if target == self.folder else 0

    def with_entries(self, entries: list[Entry], sessions: list[Entry]) -> list[Entry]:
        """``entries`` with ``sessions`` right after their folder's entry (and its hidden
        files), or at the end when the listing is of the folder itself."""
        if not sessions:
            return entries
        inside = str(self.folder) + "/"
        at = next((i for i, e in enumerate(entries) if e.uri == str(self.folder)), None)
        if at is None:
            return entries + sessions
        at += 1
        while at < len(entries) and entries[at].uri.startswith(inside) and not entries[at].is_dir:
            at += 1  # the folder's .abstract.md / .overview.md under ls -a
        return entries[:at] + sessions + entries[at:]


def entry_of(info: SessionInfo) -> Entry:
    """A session as a listing entry: a folder of messages."""
    return Entry(uri=info.uri, size=0, is_dir=True, mod_time=info.updated_at, abstract=session_abstract(info))


def stat_of(info: SessionInfo) -> Stat:
    """A session's stat: its id, times and message count."""
    return Stat(
        uri=info.uri,
        name=info.session_id,
        is_dir=True,
        size=0,
        context_type="session",
        kind="session",
        created_at=info.created_at,
        updated_at=info.updated_at,
        message_count=info.message_count,
        abstract=session_abstract(info),
    )


def session_abstract(info: SessionInfo) -> str:
    """``session, N messages``."""
    count = info.message_count
    return f"session, {count} message{'s' if count != 1 else ''}"


def session_overview(info: SessionInfo) -> str:
    """A session read as a folder: its summary and its messages, oldest first."""
    lines = [f"# Session {info.session_id}", "", f"{session_abstract(info)}, updated {info.updated_at}"]
    if info.summary:
        lines += ["", "## Summary", "", info.summary]
    for message in info.messages or []:
        lines += ["", f"[{message.role}] {message.created_at or ''}".rstrip(), message.text]
    return "\n".join(lines) + "\n"
