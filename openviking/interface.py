"""The typed contract of everything openviking does, which every client implements, and the session handle.

:class:`OpenVikingClient` is the one description of the tool: the embedded client
(:class:`openviking.OpenViking`, over a store opened in this process) and the HTTP clients
(:class:`openviking.SyncHTTPClient` and the async one, over a server) implement it, and the
command line, the HTTP server and the MCP tools call nothing else. Every method returns one
of the result types of :mod:`openviking.hits` and :mod:`openviking.results` (or text), and
raises :class:`openviking.errors.OpenVikingError` subclasses only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any, Protocol, runtime_checkable

from .hits import FindResult
from .message import TextPart
from .results import (
    AddResult,
    DoctorReport,
    Entry,
    GlobResult,
    GrepResult,
    LinkResult,
    MemoryResult,
    Message,
    MessageAdded,
    MkdirResult,
    MoveResult,
    ReindexResult,
    Relation,
    RemoveResult,
    SessionDeleted,
    SessionInfo,
    Stat,
    UnlinkResult,
)
from .uri import sessions_folder

__all__ = [
    "FilterSpec",
    "LevelSpec",
    "MessageContent",
    "OpenVikingClient",
    "ProgressCallback",
    "Session",
    "TagSpec",
    "TelemetrySpec",
    "TimeBound",
]

ProgressCallback = Callable[[int, int], None]
"""Called with (bytes done, bytes total) while a write embeds."""
TimeBound = str | datetime | date
"""``30m``, ``2h``, ``7d``, ``2w`` back from now; ``YYYY-MM-DD`` (that whole UTC day); ISO 8601."""
TagSpec = Iterable[str] | str
"""``key=value`` tags: a list, or one string of comma-separated tags."""
FilterSpec = Mapping[str, object] | str
"""The filter DSL as a dict, or as its JSON text."""
LevelSpec = int | str | Sequence[int | str]
"""Levels 0 (abstract), 1 (overview), 2 (content): ``2``, ``"0,2"`` or ``[0, 2]``."""
TelemetrySpec = bool | Mapping[str, bool]
"""``True`` or ``{"summary": True}`` attaches telemetry (an id, the duration, the count)."""
MessageContent = str | TextPart | Mapping[str, str] | Sequence[str | TextPart | Mapping[str, str]]
"""A message's text: a string, a TextPart, a ``{"type": "text", "text"}`` part, or a list of them."""


@runtime_checkable
class OpenVikingClient(Protocol):
    """Everything openviking does, whichever side of a network the store is on."""

    @property
    def user(self) -> str:
        """The user whose space ``viking://~`` and ``viking://user/memories`` name."""
        ...

    def initialize(self) -> None:
        """Get ready now (load the configuration; over HTTP, check that the server answers)."""
        ...

    def close(self) -> None:
        """Release the store or the connection."""
        ...

    # ------------------------------------------------------------------ retrieval
    def find(
        self,
        query: str,
        target_uri: str | Sequence[str] = "",
        limit: int = 10,
        node_limit: int | None = None,
        score_threshold: float | None = None,
        filter: FilterSpec | None = None,  # noqa: A002 - upstream's name
        since: TimeBound | None = None,
        until: TimeBound | None = None,
        time_field: str | None = None,
        level: LevelSpec | None = None,
        context_type: str | Sequence[str] | None = None,
        tags: TagSpec | None = None,
        include_provenance: bool = False,
        telemetry: TelemetrySpec = False,
        *,
        mode: str | None = None,
        explain: bool = False,
    ) -> FindResult:
        """Search by meaning, without session context.

        Args:
            query: what to look for.
            target_uri: a URI or a list of URIs to search under; default: resources, the
                user's space and agent skills.
            limit: the most hits to return (``node_limit`` overrides it).
            node_limit: upstream's HTTP name for ``limit``.
            score_threshold: keep hits scoring strictly above this (default
                ``rerank.threshold``, 0.1).
            filter: the filter DSL.
            since: lower time bound.
            until: upper time bound.
            time_field: ``updated_at`` (default) or ``created_at``.
            level: the levels to search.
            context_type: ``memory``, ``resource`` and/or ``skill``.
            tags: ``key=value`` tags every hit must carry.
            include_provenance: add ``provenance`` to the JSON (only a planned search has any).
            telemetry: attach telemetry.
            mode: ``hybrid`` (default), ``vector`` or ``keyword``.
            explain: attach each score's parts to each hit; for no hits, what removed them.

        Raises:
            InvalidArgumentError: a bad query, limit, threshold, time, filter, level, tag or mode.
            InvalidURIError, PermissionDeniedError: a bad target, or another user's space.
            NotFoundError: no store.
            FailedPreconditionError: the store was built with another embedder.
        """
        ...

    def search(
        self,
        query: str,
        target_uri: str | Sequence[str] = "",
        session: Session | SessionInfo | str | None = None,
        session_id: str | None = None,
        limit: int = 10,
        node_limit: int | None = None,
        score_threshold: float | None = None,
        filter: FilterSpec | None = None,  # noqa: A002 - upstream's name
        since: TimeBound | None = None,
        until: TimeBound | None = None,
        time_field: str | None = None,
        level: LevelSpec | None = None,
        context_type: str | Sequence[str] | None = None,
        tags: TagSpec | None = None,
        include_provenance: bool = False,
        telemetry: TelemetrySpec = False,
        *,
        mode: str | None = None,
        explain: bool = False,
    ) -> FindResult:
        """Search with a session's context: an LLM plans up to five typed queries from it.

        Without a session that has messages, with intent analysis off, or with no LLM
        configured, the raw query runs alone (as find) and no ``query_plan`` is returned.
        ``session`` or ``session_id`` names the session; the other arguments are find's.
        """
        ...

    def grep(
        self,
        uri: str,
        pattern: str,
        case_insensitive: bool = False,
        exclude_uri: str | Sequence[str] | None = None,
        node_limit: int | None = None,
        level_limit: int | None = 5,
        *,
        fixed_strings: bool = False,
        count: bool = False,
        files_with_matches: bool = False,
        spans: bool = False,
    ) -> GrepResult:
        """The lines of file content below ``uri`` that match a regular expression.

        Args:
            uri: a directory (searched ``level_limit`` levels deep) or a file.
            pattern: a regular expression in Python's ``re`` syntax (text with ``fixed_strings``).
            case_insensitive: ignore case.
            exclude_uri: skip this URI (or each of these) and everything below it.
            node_limit: at most this many matching lines (None or 0: all).
            level_limit: only files at most this many levels below ``uri`` (None or 0: all).
            fixed_strings: ``pattern`` is plain text.
            count: per-file counts (``counts``) instead of lines.
            files_with_matches: the matching files (``files``) instead of lines.
            spans: add each match's character offsets to its line.

        Raises:
            InvalidArgumentError: a bad pattern or limit, or both ``count`` and ``files_with_matches``.
            NotFoundError: nothing is stored at ``uri``.
        """
        ...

    def glob(self, pattern: str, uri: str = "viking://", node_limit: int | None = None) -> GlobResult:
        """Files and directories whose path below ``uri`` matches a glob (``*``, ``?``,
        ``[a-z]``, ``{a,b}``, ``**``), sorted by path.

        Raises:
            InvalidArgumentError: a bad pattern or limit.
            NotFoundError: nothing is stored at ``uri``.
            FailedPreconditionError: ``uri`` is a file.
        """
        ...

    # ------------------------------------------------------------------ reading
    def read(self, uri: str, offset: int = 0, limit: int = -1) -> str:
        """A file's content (L2), lines ``offset`` to ``offset + limit`` (-1: to the end); a
        directory (a session too) reads as its overview.

        Raises:
            NotFoundError: nothing is stored at ``uri``.
        """
        ...

    def abstract(self, uri: str) -> str:
        """A directory's L0 abstract, or a file's summary."""
        ...

    def overview(self, uri: str) -> str:
        """A directory's L1 overview; a file's is its directory's; a session's lists its messages."""
        ...

    def ls(
        self,
        uri: str = "viking://",
        *,
        recursive: bool = False,
        simple: bool = False,
        show_hidden: bool = False,
        node_limit: int | None = None,
        abs_limit: int = 256,
    ) -> list[Entry] | list[str]:
        """The entries of a directory (all below it with ``recursive``), directories first;
        only their URIs with ``simple``; the hidden summary files with ``show_hidden``;
        abstracts cut to ``abs_limit`` characters."""
        ...

    def tree(self, uri: str = "viking://", *, level_limit: int = 3, node_limit: int | None = None) -> list[Entry]:
        """Everything below ``uri``, depth first, at most ``level_limit`` levels deep (0: all)."""
        ...

    def stat(self, uri: str) -> Stat:
        """Everything known about one file, directory or session, without its content."""
        ...

    def relations(self, uri: str) -> list[Relation]:
        """What ``uri`` was linked to, oldest first, with the reasons."""
        ...

    # ------------------------------------------------------------------ writing
    def add_resource(
        self,
        path: str | os.PathLike[str],
        to: str | None = None,
        parent: str | None = None,
        *,
        tags: TagSpec | None = None,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        progress: ProgressCallback | None = None,
        source_name: str | None = None,
    ) -> AddResult:
        """Mirror a local file or folder under a ``viking://`` URI and index it; re-adding
        indexes only what changed.

        Args:
            path: the file or folder (on the server's machine, for an HTTP client).
            to: the exact URI of the new resource.
            parent: a directory URI to put it in, under its own name.
            tags: ``key=value`` retrieval tags for everything added.
            include: only files matching one of these gitignore-style globs.
            exclude: leave out what matches these globs.
            progress: called while embedding.
            source_name: the path the nodes record as their source instead of ``path``: a
                server adding an upload records the client's own path, so the same folder
                uploaded again is unchanged.

        Raises:
            NotFoundError: ``path`` does not exist, or ``parent`` does not.
            InvalidArgumentError: nothing to add, or both ``to`` and ``parent``.
        """
        ...

    def add_memory(self, text: str, category: str | None = None, *, tags: TagSpec | None = None) -> MemoryResult:
        """Remember something about the user, under ``viking://user/<user>/memories/[category/]``;
        the same text again is the same memory (``tags`` None keeps its tags)."""
        ...

    def add_skill(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        *,
        tags: TagSpec | None = None,
        progress: ProgressCallback | None = None,
        source_name: str | None = None,
    ) -> AddResult:
        """Add an agent skill (a folder holding ``SKILL.md``, or one file) under
        ``viking://agent/skills/<name>`` (``source_name`` as in :meth:`add_resource`).

        Raises:
            AlreadyExistsError: another skill holds the name.
        """
        ...

    def mkdir(self, uri: str, description: str | None = None) -> MkdirResult:
        """Create a directory (parents too); ``description`` becomes its abstract.

        Raises:
            AlreadyExistsError: something is stored at ``uri``.
        """
        ...

    def rm(self, uri: str, recursive: bool = False) -> RemoveResult:
        """Remove a file, or a directory with ``recursive``, with its records and relations;
        what does not exist removes nothing.

        Raises:
            FailedPreconditionError: a directory without ``recursive``.
        """
        ...

    def mv(self, from_uri: str, to_uri: str) -> MoveResult:
        """Move a file or directory; records keep their vectors and relations follow.

        Raises:
            NotFoundError: nothing at ``from_uri``.
            AlreadyExistsError: something at ``to_uri``.
        """
        ...

    def link(self, from_uri: str, uris: str | Sequence[str], reason: str = "") -> LinkResult:
        """Relate ``from_uri`` to one or more URIs (every one must exist, none is its own relation)."""
        ...

    def unlink(self, from_uri: str, uri: str) -> UnlinkResult:
        """Remove the relation from ``from_uri`` to ``uri``."""
        ...

    def reindex(self, uri: str | None = None, *, progress: ProgressCallback | None = None) -> ReindexResult:
        """Embed the store (or the files below ``uri``) again with the configured embedder;
        after a model change, into a new table (an interrupted run resumes)."""
        ...

    # ------------------------------------------------------------------ sessions
    def create_session(self, session_id: str | None = None) -> SessionInfo:
        """Start a session (an id is generated when none is given).

        Raises:
            AlreadyExistsError: a session has that id.
        """
        ...

    def add_message(self, session_id: str, role: str, content: MessageContent) -> MessageAdded:
        """Append a ``user`` or ``assistant`` message; the session is created when needed."""
        ...

    def get_session(self, session_id: str) -> SessionInfo:
        """A session with its summary and its messages, oldest first.

        Raises:
            NotFoundError: no such session.
        """
        ...

    def list_sessions(self) -> list[SessionInfo]:
        """Every session of the user, most recently changed first."""
        ...

    def delete_session(self, session_id: str) -> SessionDeleted:
        """Delete a session and its messages.

        Raises:
            NotFoundError: no such session.
        """
        ...

    def session(self, session_id: str | None = None) -> Session:
        """A handle on a session (created when needed), for ``search(session=...)``."""
        ...

    # ------------------------------------------------------------------ health
    def doctor(self, *, repair: bool = False) -> DoctorReport:
        """What is installed and configured, what the store holds, and every problem found.

        With ``repair``, what a crash or a damaged file left in the store is mended first
        (summaries refreshed, orphans dropped, an interrupted reindex or move finished or
        dropped, a damaged table restored to its last readable version); ``repaired`` says
        what was done, and ``problems`` what is still wrong."""
        ...


class Session:
    """A handle on one session of ``client``'s user, in upstream's SDK style; every method
    calls the client that made it.

    Example::

        session = client.session()
        session.add_message("user", [TextPart(text="I'm building a login page with OAuth")])
        results = client.search("best practices", session=session)
    """

    def __init__(self, client: OpenVikingClient, session_id: str) -> None:
        self._client = client
        self.session_id = session_id

    def __repr__(self) -> str:
        return f"Session(session_id={self.session_id!r})"

    @property
    def uri(self) -> str:
        """``viking://user/{user}/sessions/{id}``."""
        return f"{sessions_folder(self._client.user)}/{self.session_id}"

    def add_message(self, role: str, content: MessageContent) -> MessageAdded:
        """Append a ``user``/``assistant`` message (text, a TextPart or a list of parts)."""
        return self._client.add_message(self.session_id, role, content)

    def get(self) -> SessionInfo:
        """The session with its messages."""
        return self._client.get_session(self.session_id)

    @property
    def messages(self) -> list[Message]:
        """The messages, oldest first."""
        return list(self.get().messages or [])

    def search(self, query: str, **options: Any) -> FindResult:
        """``client.search(query, session=this session, **options)`` (find's options)."""
        return self._client.search(query, session_id=self.session_id, **options)

    def delete(self) -> SessionDeleted:
        """Delete the session and its messages."""
        return self._client.delete_session(self.session_id)
