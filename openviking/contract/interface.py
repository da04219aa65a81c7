"""The typed contract of everything openviking does, which every client implements, and the session handle.

:class:`OpenVikingClient` is the one description of the tool: the embedded client
(:class:`openviking.OpenViking`, over a store opened in this process) and the HTTP clients
(:class:`openviking.SyncHTTPClient` and the async one, over a server) implement it, and the
command line, the HTTP server and the MCP tools call nothing else. Every method returns one
of the result types of :mod:`openviking.contract.hits` and :mod:`openviking.contract.results` (or text), and
raises :class:`openviking.errors.OpenVikingError` subclasses only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any, Protocol, runtime_checkable

from openviking.config import RETRIEVAL_MODES
from openviking.message import TextPart
from openviking.values.arguments import MAX_INT
from openviking.values.uri import sessions_folder

from . import forms
from .evaluation import EvalResult
from .hits import FindResult
from .operations import NoTool, Param, Route, Tool, declared, operation
from .results import (
    AddResult,
    CommitResult,
    ContextResult,
    DoctorReport,
    Entry,
    GlobResult,
    GrepResult,
    IndexResult,
    LinkResult,
    MemoryResult,
    Message,
    MessageAdded,
    MkdirResult,
    MoveResult,
    ReindexResult,
    Relation,
    RemoveResult,
    SessionContext,
    SessionDeleted,
    SessionInfo,
    Snapshot,
    Stat,
    UnlinkResult,
    WatchDeleted,
    WatchInfo,
    WatchList,
    WriteResult,
)

__all__ = [
    "FIND_PARAMS",
    "FilterSpec",
    "LevelSpec",
    "MessageContent",
    "OpenVikingClient",
    "Operations",
    "ProgressCallback",
    "Session",
    "TagSpec",
    "TelemetrySpec",
    "TimeBound",
]

ProgressCallback = Callable[[int, int], None]
"""Called with (done, total) while a write works: bytes written, then records embedded (from 0 again)."""
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


TIME_FORMS = "30m, 2h, 7d, 2w (back from now), YYYY-MM-DD (that whole UTC day) or ISO 8601"
URI = Param("A viking:// URI.", pattern=forms.URI)
ENTRY = Param("A viking:// URI below a scope root.", pattern=forms.ENTRY)
AS_OF = Param(
    "Answer from the store as it was then: a snapshot's name (see snapshot_tag), a version of the "
    f"store (digits), or a time ({TIME_FORMS}); default: as it is now.",
    pattern=forms.AS_OF,
)

FIND_PARAMS: dict[str, Param] = {
    "query": Param("What to look for, in plain words (a question or a description).", pattern=forms.NOT_BLANK),
    "target_uri": Param(
        "Search only below this URI (or each of these), e.g. viking://resources/docs or "
        "viking://user/memories (default: all resources, the user's space and the agent's skills).",
        pattern=forms.TARGET,
    ),
    "limit": Param("The most hits to return (at most 10,000 are returned).", ge=0),
    "node_limit": Param("Upstream's name for limit; it wins when given.", ge=0),
    "score_threshold": Param(
        "Keep hits scoring strictly above this, 0 to 1 (default: the configured threshold, 0.1); lower "
        "it when nothing comes back."
    ),
    "filter": Param(
        "Upstream's filter expression (in-process, its JSON text too).",
        schema=forms.FILTER,
        json_type=dict[str, Any] | None,
    ),
    "since": Param(f"Only what changed since then: {TIME_FORMS}.", pattern=forms.TIME_OR_BLANK),
    "until": Param(f"Only what changed until then: {TIME_FORMS}.", pattern=forms.TIME_OR_BLANK),
    "time_field": Param(
        "The time since and until look at (empty: updated_at).", choices=("updated_at", "created_at", "")
    ),
    "level": Param(
        "The levels to search: 0 (abstract), 1 (overview), 2 (content), e.g. 2, '0,2' or [0, 2].", schema=forms.LEVEL
    ),
    "context_type": Param(
        "Only this kind: memory, resource or skill (a list, or comma-separated, for several).",
        pattern=forms.CONTEXT_TYPES,
    ),
    "tags": Param("key=value tags every hit must carry (a list, or one comma-separated string).", schema=forms.TAGS),
    "include_provenance": Param("Add provenance to the JSON: a planned search's results query by query."),
    "telemetry": Param(
        'true or {"summary": true} attaches telemetry (an id, the duration, the count).', schema=forms.TELEMETRY
    ),
    "mode": Param(
        "hybrid (default, or empty: meaning and keywords), vector (meaning only) or keyword (BM25 only); "
        "upstream's name for the default, list, is taken too.",
        choices=(*RETRIEVAL_MODES, "list", ""),
    ),
    "explain": Param("Attach each score's parts to each hit; for no hits, what removed the candidates."),
    "as_of": AS_OF,
}
SEARCH_PARAMS: dict[str, Param] = {
    **FIND_PARAMS,
    "session": Param("The session (a handle, or its id) whose messages plan the queries.", local=True),
    "session_id": Param(
        "The session whose messages give the query its context (one there is not: the query alone, with a warning).",
        pattern=forms.NOT_BLANK,
    ),
}
FIND_RESULT = (
    "Result: JSON {memories, resources, skills, total}; each hit has uri, score, level (0: a "
    "directory's abstract, 1: its overview, both with a URI ending in /.abstract.md or "
    "/.overview.md; 2: a file's content), abstract, match_reason (for a file, the lines that "
    "matched), tags and relations (related URIs). Next, read a level-2 hit's uri, or overview a "
    "directory's."
)
# Why an agent's tools leave these parameters out (each tool takes every other one).
AS_OF_LEFT_OUT = "snapshots are a CI job's, pinned by whoever runs the queries"
FIND_LEFT_OUT = {
    "node_limit": "upstream's name for limit",
    "filter": "upstream's filter language: since, until and context_type say what an agent needs",
    "time_field": "since and until look at when a file last changed, which is what an agent means",
    "level": "every level is searched, and each hit says its level",
    "tags": "tags are set by whoever adds the files, which an agent does not know",
    "include_provenance": "a planned search's queries are in its query_plan already",
    "telemetry": "timing is the host's to measure",
    "explain": "an agent reads the hits, not how each score was made",
    "as_of": AS_OF_LEFT_OUT,
}
PROGRESS = Param(
    "Called with (done, total) while the write works: bytes read and written, then, from 0 again, "
    "records given their vectors.",
    local=True,
)
WAIT = Param(
    "Make the vectors before answering (false: answer once the text is written and searchable by "
    "its words; the vectors follow, made by the next write, a server or openviking index)."
)
# Where an add or a watch puts its source, and which of its files it takes.
PLACED_AND_FILTERED = {
    "parent": Param("A directory URI to put it in, under its own name.", pattern=forms.URI),
    "tags": Param("key=value retrieval tags for everything added.", schema=forms.TAGS),
    "include": Param("Only files matching one of these gitignore-style globs."),
    "exclude": Param("Leave out what matches these globs."),
}
WATCH_INTERVAL = Param(
    "Check the whole source every this many minutes (upstream's unit; 0.05 is 3 s) instead of "
    "following file events: for network filesystems, which send none (default: file events).",
    ge=0,
)
# Fields upstream's clients send that change nothing here, and why.
FIND_UPSTREAM = {
    "read_content": "every hit carries its abstract; read its uri for the whole text",
    "image_url": "find searches by text only",
    "events_time_decay_protection": "dates in a query weigh in on their own; nothing decays",
}
SEARCH_UPSTREAM = {**FIND_UPSTREAM, "search_type": "every search here is planned from its session the same way"}
TAG_FILTERS = {
    "tags": "grep and glob match text and paths; find takes tags",
    "include_tags": "grep and glob match text and paths; find takes tags",
}
LISTING_UPSTREAM = {
    "output": "a listing has one form here",
    "sort_by": "entries come directories first, by name",
    "sort_order": "entries come directories first, by name",
    "extra_fields": "every entry has the same fields",
    "tags": "a listing shows every entry",
    "include_tags": "a listing shows every entry",
    "include_abstract": "every entry carries its abstract",
    "include_overview": "read a directory's overview with overview",
    "overview_limit": "read a directory's overview with overview",
}
SESSION_OPTIONS = {
    "memory_policy": "memories come from commit",
    "auto_commit_policy": "a session is committed when its client asks",
    "memory_extraction_config": "extraction is configured in ov.conf (memory, vlm)",
    "telemetry": "sessions carry no telemetry",
}


class Operations(Protocol):
    """Every operation of the tool, each declared once (:mod:`openviking.contract.operations`)."""

    # ------------------------------------------------------------------ retrieval
    @operation(
        http=Route("POST", "/api/v1/search/find"),
        mcp=Tool(
            "Find by meaning",
            "Search the store by meaning (and keywords) for the files and directory summaries that "
            "best answer a query, grouped as memories, resources and skills. Use it first when you "
            "know what you need but not where it is; use grep for exact words or a regex, glob for "
            "file names, and search when a recorded conversation (a session) should shape the query. " + FIND_RESULT,
            '{"query": "how do users authenticate", "target_uri": ["viking://resources"], "limit": 5}',
            FIND_LEFT_OUT,
        ),
        command="find",
        upstream=FIND_UPSTREAM,
        params=FIND_PARAMS,
    )
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
        as_of: str | None = None,
    ) -> FindResult:
        """Search by meaning, without session context.

        Raises:
            InvalidArgumentError: a bad query, limit, threshold, time, filter, level, tag or mode.
            InvalidURIError, PermissionDeniedError: a bad target, or another user's space.
            NotFoundError: no store.
            FailedPreconditionError: the store was built with another embedder.
        """
        declared()

    @operation(
        http=Route("POST", "/api/v1/search/search", custom=True),
        mcp=Tool(
            "Find with a session's context",
            "Like find, but with a conversation's context: when session_id names a session with "
            "messages and an LLM is configured, an LLM plans up to five typed queries from the "
            "conversation and their hits are merged (each hit lists the queries that found it, and "
            "the result has query_plan); otherwise the query runs alone, exactly as find. Use it "
            "inside a conversation recorded as a session; otherwise use find. " + FIND_RESULT,
            '{"query": "write an RFC for it", "session_id": "design-review"}',
            FIND_LEFT_OUT,
        ),
        command="search",
        upstream=SEARCH_UPSTREAM,
        params=SEARCH_PARAMS,
    )
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
        as_of: str | None = None,
    ) -> FindResult:
        """Search with a session's context: an LLM plans up to five typed queries from it.

        Without a session that has messages, with intent analysis off, or with no LLM
        configured, the raw query runs alone (as find) and no ``query_plan`` is returned.
        ``session`` or ``session_id`` names the session; the other arguments are find's.
        """
        declared()

    @operation(
        http=Route("POST", "/api/v1/search/grep"),
        mcp=Tool(
            "Search text by regular expression",
            "Find the lines of file content below a URI that match a regular expression (Python re "
            "syntax): exact words, names, identifiers, error messages. Use it rather than find when "
            "you know the words; use glob to match file paths rather than content. Directory "
            "summaries are not searched. Result: JSON {matches: [{uri, line, content}], count, "
            "match_count, files_scanned}; line counts from 1, so read it with offset line - 1.",
            '{"uri": "viking://resources", "pattern": "auth(entication|orization)", "case_insensitive": true}',
            {
                "count": "grep answers matching lines, the form its text describes",
                "files_with_matches": "grep answers matching lines, the form its text describes",
                "spans": "a matching line is what an agent reads",
                "as_of": AS_OF_LEFT_OUT,
            },
        ),
        command="grep",
        upstream={
            **TAG_FILTERS,
            "before_context": "grep answers matching lines alone",
            "after_context": "grep answers matching lines alone",
        },
        params={
            "uri": Param(
                "A directory to search below (viking:// for everything, level_limit levels deep), or one file.",
                pattern=forms.URI,
            ),
            "pattern": Param("A regular expression in Python's re syntax (plain text with fixed_strings)."),
            "case_insensitive": Param("Ignore case."),
            "exclude_uri": Param("Skip this URI (or each of these) and everything below it.", pattern=forms.URI),
            "node_limit": Param("At most this many matching lines (0 or none: all).", ge=0, le=MAX_INT),
            "level_limit": Param("Only files at most this many levels below uri (0 or none: all).", ge=0, le=MAX_INT),
            "fixed_strings": Param("The pattern is plain text, not a regular expression."),
            "count": Param("Per-file counts (counts) instead of lines.", not_with=("files_with_matches",)),
            "files_with_matches": Param("The matching files (files) instead of lines."),
            "spans": Param("Add each match's character offsets to its line."),
            "as_of": AS_OF,
        },
    )
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
        as_of: str | None = None,
    ) -> GrepResult:
        """The lines of file content below ``uri`` that match a regular expression.

        Raises:
            InvalidArgumentError: a bad pattern or limit, or both ``count`` and ``files_with_matches``.
            NotFoundError: nothing is stored at ``uri``.
        """
        declared()

    @operation(
        http=Route("POST", "/api/v1/search/glob"),
        mcp=Tool(
            "Find files by path pattern",
            "List the files and directories whose path below uri matches a glob: * and ? within a "
            "name, [a-z], {a,b}, and ** for any number of directories. The whole path relative to "
            "uri must match, so *.md matches direct children only; use **/*.md for every depth. Use "
            "it to find files by name; grep searches their content, ls and tree browse. Result: JSON "
            "{matches: [uri, ...], count}, sorted by path.",
            '{"pattern": "**/*.md", "uri": "viking://resources"}',
            {"as_of": AS_OF_LEFT_OUT},
        ),
        command="glob",
        upstream={**TAG_FILTERS, "extra_fields": "a match is its URI"},
        params={
            "pattern": Param("The glob, matched against the path relative to uri.", pattern=forms.GLOB),
            "uri": Param("The directory the paths are relative to.", pattern=forms.URI),
            "node_limit": Param("At most this many URIs (0 or none: all).", ge=0, le=MAX_INT),
            "as_of": AS_OF,
        },
    )
    def glob(
        self, pattern: str, uri: str = "viking://", node_limit: int | None = None, *, as_of: str | None = None
    ) -> GlobResult:
        """Files and directories whose path below ``uri`` matches a glob (``*``, ``?``,
        ``[a-z]``, ``{a,b}``, ``**``), sorted by path.

        Raises:
            InvalidArgumentError: a bad pattern or limit.
            NotFoundError: nothing is stored at ``uri``.
            FailedPreconditionError: ``uri`` is a file.
        """
        declared()

    # ------------------------------------------------------------------ reading
    @operation(
        http=Route("GET", "/api/v1/content/read"),
        mcp=Tool(
            "Read a file",
            "Read a file's text (its full content, level 2), or a range of its lines: offset is the "
            "first line (counting from 0), limit the number of lines (-1: to the end). A directory "
            "reads as its overview. Use it once find, grep, glob or ls gave you a file's URI; for a "
            "directory's summaries use abstract or overview. Result: the text itself, not JSON.",
            '{"uri": "viking://resources/handbook/auth.md", "offset": 0, "limit": 40}',
            {"as_of": AS_OF_LEFT_OUT},
        ),
        command="read",
        upstream={"raw": "read gives the text as stored"},
        params={
            "uri": Param("The viking:// URI of a file.", pattern=forms.URI),
            "offset": Param("The first line to return, counting from 0.", ge=0, le=MAX_INT),
            "limit": Param("How many lines (-1: to the end).", ge=-1, le=MAX_INT),
            "as_of": AS_OF,
        },
    )
    def read(self, uri: str, offset: int = 0, limit: int = -1, *, as_of: str | None = None) -> str:
        """A file's content (L2), lines ``offset`` to ``offset + limit`` (-1: to the end); a
        directory (a session too) reads as its overview.

        Raises:
            NotFoundError: nothing is stored at ``uri``.
        """
        declared()

    @operation(
        http=Route("GET", "/api/v1/content/abstract"),
        mcp=Tool(
            "A directory's one-line summary",
            "The abstract (level 0: a sentence or two) of a directory, or a file's summary. Use it "
            "to judge cheaply whether a directory is worth exploring; overview says more, read "
            "gives a file's text. Result: the text itself, not JSON.",
            '{"uri": "viking://resources/handbook"}',
            {"as_of": AS_OF_LEFT_OUT},
        ),
        command="abstract",
        params={"uri": Param("The viking:// URI of a directory or file.", pattern=forms.URI), "as_of": AS_OF},
    )
    def abstract(self, uri: str, *, as_of: str | None = None) -> str:
        """A directory's L0 abstract, or a file's summary."""
        declared()

    @operation(
        http=Route("GET", "/api/v1/content/overview"),
        mcp=Tool(
            "A directory's overview",
            "The overview (level 1) of a directory: what it holds and what each of its files and "
            "subdirectories is about; a file gives its directory's overview, and a session lists "
            "its messages. Use it to choose which files to read, after abstract or a level-0/1 "
            "find hit. Result: the text itself, not JSON.",
            '{"uri": "viking://resources/handbook/deploy"}',
            {"as_of": AS_OF_LEFT_OUT},
        ),
        command="overview",
        params={"uri": Param("The viking:// URI of a directory.", pattern=forms.URI), "as_of": AS_OF},
    )
    def overview(self, uri: str, *, as_of: str | None = None) -> str:
        """A directory's L1 overview; a file's is its directory's; a session's lists its messages."""
        declared()

    @operation(
        http=Route("GET", "/api/v1/fs/ls", paged=True),
        mcp=Tool(
            "List a directory",
            "List a directory's entries, directories first; with recursive, everything below it. "
            "viking:// lists the scope roots: resources, user and agent. Use it to browse where "
            "you know to look; tree shows several levels with relative paths, glob matches names. "
            "Result: JSON list of {uri, size, isDir, modTime, abstract}; with simple, a list of URIs.",
            '{"uri": "viking://resources/handbook"}',
            {
                "show_hidden": "a directory's summaries are read with abstract and overview",
                "abs_limit": "each entry's abstract is cut to the length an agent needs",
                "offset": "node_limit bounds a listing; pages are for people",
                "as_of": AS_OF_LEFT_OUT,
            },
        ),
        command="ls",
        upstream=LISTING_UPSTREAM,
        params={
            "uri": Param("The directory to list.", pattern=forms.URI),
            "recursive": Param("Everything below the directory, not only its entries."),
            "simple": Param("Only the URIs."),
            "show_hidden": Param(
                "Also the hidden summary files .abstract.md and .overview.md.", wire="show_all_hidden"
            ),
            "node_limit": Param("At most this many entries (0 or none: all).", ge=0, le=MAX_INT),
            "abs_limit": Param("Cut abstracts to this many characters.", ge=0, le=MAX_INT),
            "offset": Param(
                "Skip this many entries first (a page: node_limit entries from here on).", ge=0, le=MAX_INT
            ),
            "as_of": AS_OF,
        },
    )
    def ls(
        self,
        uri: str = "viking://",
        *,
        recursive: bool = False,
        simple: bool = False,
        show_hidden: bool = False,
        node_limit: int | None = None,
        abs_limit: int = 256,
        offset: int = 0,
        as_of: str | None = None,
    ) -> list[Entry] | list[str]:
        """The entries of a directory (all below it with ``recursive``), directories first;
        only their URIs with ``simple``."""
        declared()

    @operation(
        http=Route("GET", "/api/v1/fs/tree", paged=True),
        mcp=Tool(
            "Show a directory tree",
            "Everything below a URI, depth first, down to level_limit levels (0: all). Use it to "
            "see the shape of a resource in one call; ls lists one directory. Result: JSON list of "
            "{uri, size, isDir, modTime, abstract, rel_path}.",
            '{"uri": "viking://resources/handbook", "level_limit": 2}',
            {
                "offset": "node_limit bounds a tree; pages are for people",
                "directories_only": "an agent reads the files a tree shows next",
                "as_of": AS_OF_LEFT_OUT,
            },
        ),
        command="tree",
        upstream=LISTING_UPSTREAM,
        params={
            "uri": Param("The directory at the top of the tree.", pattern=forms.URI),
            "level_limit": Param("How many levels deep (0: all).", ge=0, le=MAX_INT),
            "node_limit": Param("At most this many entries (0 or none: all).", ge=0, le=MAX_INT),
            "offset": Param(
                "Skip this many entries first (a page: node_limit entries from here on).", ge=0, le=MAX_INT
            ),
            "directories_only": Param("Only the directories."),
            "as_of": AS_OF,
        },
    )
    def tree(
        self,
        uri: str = "viking://",
        *,
        level_limit: int = 3,
        node_limit: int | None = None,
        offset: int = 0,
        directories_only: bool = False,
        as_of: str | None = None,
    ) -> list[Entry]:
        """Everything below ``uri``, depth first, at most ``level_limit`` levels deep (0: all)."""
        declared()

    @operation(
        http=Route("GET", "/api/v1/content/download", custom=True),
        mcp=NoTool("read gives an agent a file's text"),
        command="read",
        params={"uri": Param("The viking:// URI of a file.", pattern=forms.URI)},
    )
    def download(self, uri: str) -> bytes:
        """A file's bytes as they were added (a file added as text: its text as UTF-8).

        Raises:
            NotFoundError: nothing is stored at ``uri``.
            FailedPreconditionError: ``uri`` is a directory.
        """
        declared()

    @operation(
        http=Route("GET", "/api/v1/fs/stat"),
        mcp=NoTool("ls and tree show what an agent needs of an entry"),
        command="stat",
        params={"uri": URI, "as_of": AS_OF},
    )
    def stat(self, uri: str, *, as_of: str | None = None) -> Stat:
        """Everything known about one file, directory or session, without its content."""
        declared()

    @operation(
        http=Route("GET", "/api/v1/relations"),
        mcp=NoTool("every find and search hit carries its relations"),
        command="relations",
        params={"uri": URI},
    )
    def relations(self, uri: str) -> list[Relation]:
        """What ``uri`` was linked to, oldest first, with the reasons."""
        declared()

    # ------------------------------------------------------------------ writing
    @operation(
        http=Route("POST", "/api/v1/resources", custom=True),
        mcp=NoTool("it reads a path on the machine of whoever serves the tools"),
        command="add-resource",
        writes=True,
        params={
            "path": Param(
                "The file or folder (on the server's machine, for an HTTP client), a .zip or "
                ".tar.gz archive (what is inside it is added), or an http(s) URL (fetched).",
                pattern=forms.NOT_BLANK,
            ),
            "to": Param("The exact URI of the new resource.", pattern=forms.ENTRY),
            **PLACED_AND_FILTERED,
            "progress": PROGRESS,
            "source_name": Param(
                "The path the nodes record as their source instead of path: a server adding an "
                "upload records the client's own path, so the same folder uploaded again is unchanged."
            ),
            "wait": WAIT,
        },
    )
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
        wait: bool = True,
    ) -> AddResult:
        """Mirror a local file or folder under a ``viking://`` URI and index it; re-adding
        indexes only what changed. Documents are converted (their pages, slides and sheets
        kept), an archive adds what it holds, a URL what it serves. The text, its full-text
        index and the summaries are written first, so find answers from them at once; the
        vectors follow (before the call returns, unless ``wait`` is false).

        Raises:
            NotFoundError: ``path`` does not exist, or ``parent`` does not (or the URL answers 404).
            InvalidArgumentError: nothing to add, or both ``to`` and ``parent``.
            DeadlineExceededError, UnavailableError: a URL that does not answer in time, or cannot be fetched.
        """
        declared()

    @operation(
        http=Route("POST", "/api/v1/memories"),
        mcp=Tool(
            "Remember a fact about the user",
            "Remember a durable fact about the user (a preference, a decision, something about "
            "their people, projects or habits) so that a later find or search returns it among its "
            "memories. One fact per call, in a sentence that stands on its own. It is kept under "
            "viking://user/<user>/memories/[category/]; the same text again is the same memory, "
            "never a copy. Result: JSON {uri, category, added (false: it was already remembered), "
            "tags_changed}.",
            '{"text": "The user prefers dark mode in every editor", "category": "preferences"}',
            {"tags": "a memory is found by its text; tags are for whoever curates the store"},
        ),
        command="add-memory",
        writes=True,
        params={
            "text": Param("The fact, as a sentence that stands on its own.", pattern=forms.NOT_BLANK),
            "category": Param(
                "A folder for it: a lower-case name such as preferences, entities, events, cases or profile.",
                pattern=forms.CATEGORY,
            ),
            "tags": Param(
                "key=value tags; none keeps a known memory's tags, an empty list removes them.", schema=forms.TAGS
            ),
        },
    )
    def add_memory(self, text: str, category: str | None = None, *, tags: TagSpec | None = None) -> MemoryResult:
        """Remember something about the user, under ``viking://user/<user>/memories/[category/]``;
        the same text again is the same memory (``tags`` None keeps its tags)."""
        declared()

    @operation(
        http=Route("POST", "/api/v1/skills", custom=True),
        mcp=NoTool("it reads a path on the machine of whoever serves the tools"),
        command="add-skill",
        writes=True,
        params={
            "path": Param("A folder holding SKILL.md, or one file.", pattern=forms.NOT_BLANK),
            "name": Param("The skill's name (default: SKILL.md's, else the folder's or file's)."),
            "tags": Param("key=value retrieval tags.", schema=forms.TAGS),
            "progress": PROGRESS,
            "source_name": Param("The path the nodes record as their source instead of path (as add_resource)."),
            "wait": WAIT,
        },
    )
    def add_skill(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        *,
        tags: TagSpec | None = None,
        progress: ProgressCallback | None = None,
        source_name: str | None = None,
        wait: bool = True,
    ) -> AddResult:
        """Add an agent skill (a folder holding ``SKILL.md``, or one file) under
        ``viking://agent/skills/<name>``.

        Raises:
            AlreadyExistsError: another skill holds the name.
        """
        declared()

    # ------------------------------------------------------------------ watched sources
    @operation(
        http=Route("POST", "/api/v1/watches", custom=True),
        mcp=NoTool("it reads a path on the machine of whoever serves the tools"),
        command="watch",
        writes=True,
        params={
            "path": Param(
                "The local folder or file to keep in step (on the server's machine, for an HTTP client).",
                pattern=forms.NOT_BLANK,
            ),
            "to": Param("The exact URI of the resource.", pattern=forms.ENTRY),
            **PLACED_AND_FILTERED,
            "watch_interval": WATCH_INTERVAL,
            "progress": PROGRESS,
        },
    )
    def watch(
        self,
        path: str | os.PathLike[str],
        to: str | None = None,
        parent: str | None = None,
        *,
        tags: TagSpec | None = None,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        watch_interval: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> WatchInfo:
        """Add a local folder or file as add_resource does, and keep it in step with its files: a
        saved file is indexed again within seconds, a deleted one removed, a renamed one moved.
        The watch is kept in the store; a process watching the store (``openviking watch``,
        ``serve --watch``) follows it. Watching it again changes its globs, tags and interval.

        Raises:
            NotFoundError: ``path`` does not exist, or ``parent`` does not.
            InvalidArgumentError: a URL or an archive (only a local folder or file is watched), or
                nothing to add.
            AlreadyExistsError: the target is watched from another path.
        """
        declared()

    @operation(
        http=Route("GET", "/api/v1/watches"),
        mcp=Tool(
            "List watched sources",
            "The local folders and files kept in step with the store: each one's viking:// URI "
            "(to_uri), its local path, whether it is active, its last sync's time and counts, its "
            "last error, and which process watches it now (watcher, null when none). Use it to "
            "tell whether what find returns from a folder is current. Result: JSON {tasks, total}.",
            "{}",
        ),
        command="watch",
        params={
            "active_only": Param("Only the watches that are not paused."),
            "to_uri": Param("Only the watch of this URI (NOT_FOUND when it is not watched).", pattern=forms.URI),
        },
    )
    def list_watches(self, active_only: bool = False, to_uri: str | None = None) -> WatchList:
        """The watched sources, oldest first (upstream's ``{tasks, total}``).

        Raises:
            NotFoundError: ``to_uri`` is not watched.
        """
        declared()

    @operation(
        http=Route("PATCH", "/api/v1/watches", custom=True),
        mcp=NoTool("pausing and pacing a watch is its operator's choice"),
        command="watch",
        writes=True,
        params={
            "to_uri": Param("The watched URI.", pattern=forms.URI),
            "watch_interval": Param(
                "Check the whole source every this many minutes; 0 follows file events again; none leaves it as it is.",
                ge=0,
            ),
            "is_active": Param("false pauses the watch, true resumes it (catching up with what changed)."),
        },
    )
    def update_watch(
        self, to_uri: str, *, watch_interval: float | None = None, is_active: bool | None = None
    ) -> WatchInfo:
        """Pause or resume a watch, or change its interval (upstream's PATCH of a watch).

        Raises:
            NotFoundError: ``to_uri`` is not watched.
        """
        declared()

    @operation(
        http=Route("DELETE", "/api/v1/watches"),
        mcp=NoTool("stopping a watch is its operator's choice"),
        command="watch",
        writes=True,
        params={"to_uri": Param("The watched URI.", pattern=forms.URI)},
    )
    def delete_watch(self, to_uri: str) -> WatchDeleted:
        """Stop watching a source; what it added stays in the store. The process watching it
        stops within a few seconds.

        Raises:
            NotFoundError: ``to_uri`` is not watched.
        """
        declared()

    @operation(
        http=Route("POST", "/api/v1/watches/trigger", query=True),
        mcp=NoTool("a watched source is synced by its watcher; this is its operator's nudge"),
        command="watch",
        writes=True,
        params={"to_uri": Param("The watched URI.", pattern=forms.URI)},
    )
    def trigger_watch(self, to_uri: str) -> WatchInfo:
        """Bring a watched source in step now, in full (as its watcher does when it starts), and
        answer when it is done, with the sync's counts in ``last_result``.

        Raises:
            NotFoundError: ``to_uri`` is not watched, or its source is not there.
        """
        declared()

    @operation(
        http=Route("POST", "/api/v1/content/write"),
        mcp=NoTool("an agent's writes are its memories"),
        command="write",
        writes=True,
        params={
            "uri": Param("The file's viking:// URI.", pattern=forms.ENTRY),
            "content": Param("The text to write."),
            "mode": Param(
                "replace its text (the file must exist), append to it, or create: make it (or replace it).",
                choices=("replace", "append", "create"),
            ),
        },
        upstream={
            "wait": "a write is indexed when it answers",
            "telemetry": "a write reports what it did in its result",
            "processing_mode": "every write updates its summaries and its vectors",
            "edit_source": "a write is a write",
            "tags": "a written file keeps its tags; add it with tags to set them",
            "tag_mode": "a written file keeps its tags",
            "acl": "access follows the caller's key: a user's own space and the shared scopes",
        },
    )
    def write(self, uri: str, content: str, mode: str = "replace") -> WriteResult:
        """Write a file's text, then index it again (its directory's summaries follow).

        Raises:
            NotFoundError: ``replace`` or ``append`` of a file that does not exist.
            AlreadyExistsError: ``uri`` is a directory.
            PermissionDeniedError: another user's space.
        """
        declared()

    @operation(
        http=Route("POST", "/api/v1/fs/mkdir"),
        mcp=NoTool("an agent's writes are its memories"),
        command="mkdir",
        writes=True,
        upstream={"acl": "access follows the caller's key: a user's own space and the shared scopes"},
        params={"uri": ENTRY, "description": Param("Becomes the directory's abstract.")},
    )
    def mkdir(self, uri: str, description: str | None = None) -> MkdirResult:
        """Create a directory (parents too).

        Raises:
            AlreadyExistsError: something is stored at ``uri``.
        """
        declared()

    @operation(
        http=Route("DELETE", "/api/v1/fs"),
        mcp=NoTool("an agent's writes are its memories"),
        command="rm",
        writes=True,
        upstream={"wait": "a removal is done when it answers"},
        params={"uri": ENTRY, "recursive": Param("Remove a directory and everything below it.")},
    )
    def rm(self, uri: str, recursive: bool = False) -> RemoveResult:
        """Remove a file, or a directory with ``recursive``, with its records and relations;
        what does not exist removes nothing.

        Raises:
            FailedPreconditionError: a directory without ``recursive``.
        """
        declared()

    @operation(
        http=Route("POST", "/api/v1/fs/mv"),
        mcp=NoTool("an agent's writes are its memories"),
        command="mv",
        writes=True,
        params={
            "from_uri": Param("What to move.", pattern=forms.ENTRY),
            "to_uri": Param("Where it goes (nothing may be there).", pattern=forms.ENTRY),
        },
    )
    def mv(self, from_uri: str, to_uri: str) -> MoveResult:
        """Move a file or directory; records keep their vectors and relations follow.

        Raises:
            NotFoundError: nothing at ``from_uri``.
            AlreadyExistsError: something at ``to_uri``.
        """
        declared()

    @operation(
        http=Route("POST", "/api/v1/relations/link"),
        mcp=NoTool("an agent's writes are its memories"),
        command="link",
        writes=True,
        params={
            "from_uri": Param("The URI the relations go out of.", pattern=forms.URI),
            "uris": Param("The URI (or URIs) it relates to.", wire="to_uris", schema=forms.URIS),
            "reason": Param("Why they are related."),
        },
    )
    def link(self, from_uri: str, uris: str | Sequence[str], reason: str = "") -> LinkResult:
        """Relate ``from_uri`` to one or more URIs (every one must exist, none is its own relation)."""
        declared()

    @operation(
        http=Route("DELETE", "/api/v1/relations/link", query=False),
        mcp=NoTool("an agent's writes are its memories"),
        command="unlink",
        writes=True,
        params={
            "from_uri": Param("The URI the relation goes out of.", pattern=forms.URI),
            "uri": Param("Its target.", wire="to_uri", pattern=forms.URI),
        },
    )
    def unlink(self, from_uri: str, uri: str) -> UnlinkResult:
        """Remove the relation from ``from_uri`` to ``uri``."""
        declared()

    @operation(
        http=Route("POST", "/api/v1/reindex", custom=True),
        mcp=NoTool("it rewrites the whole store: an operator's task"),
        command="reindex",
        writes=True,
        params={
            "uri": Param("Only the files below this URI (default, or empty: the whole store).", pattern=forms.TARGET),
            "progress": PROGRESS,
        },
    )
    def reindex(self, uri: str | None = None, *, progress: ProgressCallback | None = None) -> ReindexResult:
        """Embed the store (or the files below ``uri``) again with the configured embedder;
        after a model change, into a new table (an interrupted run resumes)."""
        declared()

    @operation(
        http=Route("POST", "/api/v1/index"),
        mcp=NoTool("every write's vectors are made after it by themselves: an operator's task"),
        command="index",
        writes=True,
        params={
            "uri": Param(
                "Only the records at and below this URI (default, or empty: the whole store).", pattern=forms.TARGET
            ),
            "progress": Param("Called with (records done, records waiting).", local=True),
        },
    )
    def index(self, uri: str | None = None, *, progress: ProgressCallback | None = None) -> IndexResult:
        """Make the vectors of the records that wait for them (below ``uri``): what an add that
        did not wait, or was stopped, or whose embedder failed, left. Waits for another process
        that makes them to finish first; a record gets its vector once, however often this runs.

        Raises:
            FailedPreconditionError: the store was built with another embedder (see reindex).
        """
        declared()

    # ------------------------------------------------------------------ sessions
    @operation(
        http=Route("POST", "/api/v1/sessions"),
        mcp=NoTool("a session is recorded by the agent's host, not by the agent"),
        command="session new",
        writes=True,
        upstream=SESSION_OPTIONS,
        params={"session_id": Param("The new session's id (generated when absent).", pattern=forms.SESSION_ID)},
    )
    def create_session(self, session_id: str | None = None) -> SessionInfo:
        """Start a session (an id is generated when none is given).

        Raises:
            AlreadyExistsError: a session has that id.
        """
        declared()

    @operation(
        http=Route("POST", "/api/v1/sessions/{session_id}/messages", custom=True),
        mcp=NoTool("a session is recorded by the agent's host, not by the agent"),
        command="session add-message",
        writes=True,
        params={
            "session_id": Param("The session (created when needed).", pattern=forms.SESSION_ID),
            "role": Param("Who said it.", choices=("user", "assistant")),
            "content": Param("The text: a string, or text parts [{type: 'text', text}]."),
            "created_at": Param("When it was said (ISO 8601, or a datetime): default now.", pattern=forms.ISO_TIME),
        },
    )
    def add_message(
        self, session_id: str, role: str, content: MessageContent, *, created_at: TimeBound | None = None
    ) -> MessageAdded:
        """Append a ``user`` or ``assistant`` message; the session is created when needed."""
        declared()

    @operation(
        http=Route("GET", "/api/v1/sessions/{session_id}"),
        mcp=NoTool("overview of the session's URI shows its messages"),
        command="session show",
        params={
            "session_id": Param("The session.", pattern=forms.SESSION_ID),
            "auto_create": Param("Create the session when there is none with that id (upstream's option)."),
        },
    )
    def get_session(self, session_id: str, auto_create: bool = False) -> SessionInfo:
        """A session with its summary and its messages, oldest first.

        Raises:
            NotFoundError: no such session (and ``auto_create`` not given).
        """
        declared()

    @operation(
        http=Route("GET", "/api/v1/sessions"),
        mcp=NoTool("ls of viking://user/sessions lists them"),
        command="session list",
        params={},
    )
    def list_sessions(self) -> list[SessionInfo]:
        """Every session of the user, most recently changed first."""
        declared()

    @operation(
        http=Route("DELETE", "/api/v1/sessions/{session_id}"),
        mcp=NoTool("a session is recorded by the agent's host, not by the agent"),
        command="session delete",
        writes=True,
        params={"session_id": Param("The session.", pattern=forms.SESSION_ID)},
    )
    def delete_session(self, session_id: str) -> SessionDeleted:
        """Delete a session and its messages.

        Raises:
            NotFoundError: no such session.
        """
        declared()

    @operation(
        http=Route("POST", "/api/v1/sessions/{session_id}/commit"),
        mcp=Tool(
            "Commit a conversation to memory",
            "Archive a recorded conversation's messages since its last commit as a searchable "
            "transcript, and keep what they say about the user as memories (each dated to the day "
            "it tells of, merged with what is remembered already). Call it when a conversation, or "
            "a part of it worth keeping, has ended; committing again with no new messages changes "
            "nothing. dry_run shows what would be archived and remembered, writing nothing. "
            "Result: JSON {status, archived, archive_uri, messages_archived, extraction, "
            "extraction_error, memories: [{uri, category, text, day, action: "
            "created|merged|skipped|superseded|aged}], notes, summary}.",
            '{"session_id": "design-review"}',
        ),
        command="session commit",
        writes=True,
        upstream={
            "retention_mode": "the newest messages are kept live by keep_recent_count only",
            "keep_recent_turn_count": "the newest messages are kept live by keep_recent_count only",
            "retained_message_token_budget": "the newest messages are kept live by keep_recent_count only",
            "min_raw_tail_steps": "the newest messages are kept live by keep_recent_count only",
            "extraction_metadata": "memories carry no event tags here",
            "enable_working_memory": "a commit writes no working-memory summary",
            "telemetry": "commits carry no telemetry",
        },
        params={
            "session_id": Param("The session.", pattern=forms.SESSION_ID),
            "keep_recent_count": Param("Leave this many of the newest messages for the next commit.", ge=0, le=10_000),
            "dry_run": Param("Say what would be archived and remembered, and write nothing."),
        },
    )
    def commit_session(self, session_id: str, keep_recent_count: int = 0, *, dry_run: bool = False) -> CommitResult:
        """Archive the session's messages since the last commit as a transcript under
        ``viking://user/<user>/history/<session>/``, and keep what they say about the user as
        memories, by the LLM when one is configured (``memory.llm``, else ``vlm``), else
        extractively. Again with no new message: ``status`` ``skipped``, nothing changes.

        Raises:
            NotFoundError: no such session.
        """
        declared()

    @operation(
        http=Route("GET", "/api/v1/sessions/{session_id}/context"),
        mcp=NoTool("an agent's host holds its conversation; context gives an agent what it needs"),
        command="session context",
        params={
            "session_id": Param("The session.", pattern=forms.SESSION_ID),
            "token_budget": Param("The most tokens the messages and the archive's overview may take.", ge=0),
        },
    )
    def get_session_context(self, session_id: str, token_budget: int = 128_000) -> SessionContext:
        """What a session gives a prompt within ``token_budget`` tokens, as upstream's: its
        messages since the last commit, newest kept first, and the latest archive's overview
        when it fits too.

        Raises:
            NotFoundError: no such session.
            InvalidArgumentError: a negative budget.
        """
        declared()

    @operation(
        http=Route("POST", "/api/v1/search/context"),
        mcp=Tool(
            "Context for a prompt, within a budget of tokens",
            "The best context for a question that fits in a budget of tokens: memories about the "
            "user, directory summaries and the chunks of files that answer it (several of one "
            "file: each record is ranked, not each file), packed best first, then widened while "
            "tokens are left, each line once, each with its URI and why it was chosen. Use it to "
            "fill a prompt; use "
            "find for a list of hits to explore. Result: JSON {entries: [{uri, category, score, "
            "detail, text, tokens, reason}], rendered (markdown), budget, used_tokens, tokenizer}.",
            '{"query": "how do I rotate the API keys", "budget": 1500}',
            {"limit": "the budget bounds a context; how many hits its pieces come from is the server's tuning"},
        ),
        command="context",
        params={
            "query": Param("What the context is for: a question or a task.", pattern=forms.NOT_BLANK),
            "target_uri": Param("Only what is below this URI, or these (default: every scope).", pattern=forms.TARGET),
            "session_id": Param(
                "A session whose recent messages shape the search (search's planning).",
                pattern=forms.EMPTY_OR_NOT_BLANK,
            ),
            "budget": Param("The most tokens the context may take (upstream's max_tokens).", ge=1, le=1_000_000),
            "limit": Param(
                "How many hits to choose the pieces from: the best 10 x limit records (a search's "
                "limit files with session_id).",
                ge=1,
                le=200,
            ),
        },
    )
    def context(
        self,
        query: str,
        target_uri: str | Sequence[str] = "",
        session_id: str | None = None,
        budget: int = 2000,
        limit: int = 20,
    ) -> ContextResult:
        """The best memories, summaries and chunks for ``query`` that fit in ``budget`` tokens
        (counted with the bundled model's tokenizer), each with its URI and why it was chosen,
        rendered as markdown too.

        Raises:
            InvalidArgumentError: an empty query, or a budget or limit out of range.
        """
        declared()

    # ------------------------------------------------------------------ evaluation and snapshots
    @operation(
        http=Route("POST", "/api/v1/eval"),
        mcp=NoTool("an evaluation is a check a CI job runs on retrieval, not a step of an agent's"),
        command="eval",
        params={
            "queries": Param(
                "The golden queries: each {query, relevant: [uri, ...] or {uri: grade}} with optional id, uri "
                "(where to search), mode, after, before and k.",
                schema=forms.golden_queries(FIND_PARAMS["mode"].choices),
            ),
            "k": Param("The cut-off of the metrics (a query's own k cuts its ranking).", ge=1, le=1000),
            "search": Param("Run each query through search (with session_id's session) instead of find."),
            "session_id": Param("The session search plans the queries from (implies search).", pattern=forms.NOT_BLANK),
            "as_of": AS_OF,
            "progress": Param("Called with (queries done, queries in all).", local=True),
        },
    )
    def evaluate(
        self,
        queries: Sequence[Mapping[str, Any]],
        k: int = 10,
        *,
        search: bool = False,
        session_id: str | None = None,
        as_of: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> EvalResult:
        """Each golden query through find (or search), scored against its relevant URIs:
        nDCG@k, MRR@k, recall@k and hit@1, per query and on average (see
        :mod:`openviking.contract.evaluation`). A relevant URI the store does not hold is a warning.

        Raises:
            InvalidArgumentError: a malformed query (the message names it) or k out of range.
        """
        declared()

    @operation(
        http=Route("POST", "/api/v1/snapshots"),
        mcp=NoTool("snapshots are a CI job's, pinned by whoever runs the queries"),
        command="snapshot tag",
        writes=True,
        params={
            "name": Param(
                "The snapshot's name: a letter, then letters, digits, '.', '-' or '_'.", pattern=forms.SNAPSHOT_NAME
            )
        },
    )
    def snapshot_tag(self, name: str) -> Snapshot:
        """Name the store's state now: as_of=name reads it back exactly, whatever is written
        after, until the snapshot is deleted (its versions are kept until then).

        Raises:
            AlreadyExistsError: a snapshot has that name.
            InvalidArgumentError: a name that cannot be one.
        """
        declared()

    @operation(
        http=Route("GET", "/api/v1/snapshots"),
        mcp=NoTool("snapshots are a CI job's, pinned by whoever runs the queries"),
        command="snapshot list",
        params={},
    )
    def list_snapshots(self) -> list[Snapshot]:
        """Every snapshot of the store, oldest first."""
        declared()

    @operation(
        http=Route("DELETE", "/api/v1/snapshots/{name}"),
        mcp=NoTool("snapshots are a CI job's, pinned by whoever runs the queries"),
        command="snapshot delete",
        writes=True,
        params={"name": Param("The snapshot.", pattern=forms.SNAPSHOT_NAME)},
    )
    def delete_snapshot(self, name: str) -> Snapshot:
        """Forget a snapshot; its versions are cleaned up like any others from then on.

        Raises:
            NotFoundError: no snapshot has that name.
        """
        declared()

    # ------------------------------------------------------------------ health
    @operation(
        http=Route("GET", "/api/v1/doctor", custom=True),
        mcp=NoTool("the health of the store is an operator's concern"),
        command="doctor",
        params={"repair": Param("Mend what a crash or a damaged file left first (POST /api/v1/doctor/repair).")},
    )
    def doctor(self, *, repair: bool = False) -> DoctorReport:
        """What is installed and configured, what the store holds, and every problem found.

        With ``repair``, what a crash or a damaged file left in the store is mended first
        (summaries refreshed, orphans dropped, an interrupted reindex or move finished or
        dropped, a damaged table restored to its last readable version); ``repaired`` says
        what was done, and ``problems`` what is still wrong."""
        declared()


@runtime_checkable
class OpenVikingClient(Operations, Protocol):
    """Everything openviking does, whichever side of a network the store is on: every
    operation, and what a client is besides (its user, its lifetime, session handles)."""

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

    def session(self, session_id: str | None = None) -> Session:
        """A handle on a session (created when needed), for ``search(session=...)``."""
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

    def commit(self, keep_recent_count: int = 0, *, dry_run: bool = False) -> CommitResult:
        """Archive the messages since the last commit and keep what they say as memories."""
        return self._client.commit_session(self.session_id, keep_recent_count, dry_run=dry_run)

    def get_session_context(self, token_budget: int = 128_000) -> SessionContext:
        """The messages since the last commit (and the latest archive's overview) within a budget."""
        return self._client.get_session_context(self.session_id, token_budget)

    def context(self, query: str, *, budget: int = 2000, **options: Any) -> ContextResult:
        """``client.context(query, session_id=this session, budget=budget, **options)``."""
        return self._client.context(query, session_id=self.session_id, budget=budget, **options)
