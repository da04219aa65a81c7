"""The results of everything but find and search: listings, grep, glob, writes, sessions, doctor.

Each is a dataclass whose ``to_dict()`` is its JSON (the CLI's ``-o json``, the HTTP API's
``result``) and whose ``from_dict()`` reads that JSON back (the HTTP client). They also read
like that dict (``results['count']``, ``rel['uri']``), as upstream's SDK returns dicts there:
a :class:`Record` is a read-only ``Mapping`` over its JSON, equal to a dict holding the same.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

__all__ = [
    "AddResult",
    "CommitResult",
    "CommittedMemory",
    "ContextEntry",
    "ContextResult",
    "DoctorReport",
    "Entry",
    "FileCount",
    "GlobResult",
    "GrepMatch",
    "GrepResult",
    "IndexResult",
    "LinkResult",
    "MemoryResult",
    "Message",
    "MessageAdded",
    "MkdirResult",
    "MoveResult",
    "Record",
    "ReindexResult",
    "Relation",
    "RemoveResult",
    "SessionContext",
    "Snapshot",
    "SessionDeleted",
    "SessionInfo",
    "Stat",
    "UnlinkResult",
    "WatchDeleted",
    "WatchInfo",
    "WatchList",
    "WatchReport",
    "WriteResult",
    "fields_schema",
    "schema_of",
]

R = TypeVar("R", bound="Record")


def _key(name: str) -> dict[str, Any]:
    """Field metadata: the field's JSON key when it is not the field's name."""
    return {"key": name}


def _omitted_when_none() -> dict[str, Any]:
    """Field metadata: the key is left out of the JSON when the value is None."""
    return {"optional": True}


def fields_schema(cls: type[Any]) -> dict[str, Any]:
    """The JSON Schema of a dataclass's JSON as ``Record.to_dict`` writes it: one key per field."""
    hints = typing.get_type_hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        key = f.metadata.get("key", f.name)
        properties[key] = schema_of(hints[f.name])
        if not f.metadata.get("optional"):
            required.append(key)
    doc = (cls.__doc__ or cls.__name__).strip().split("\n")[0]
    return {"title": cls.__name__, "description": doc, "type": "object", "properties": properties, "required": required}


def schema_of(annotation: Any) -> dict[str, Any]:
    """The JSON Schema of a value of type ``annotation`` as a result's JSON holds it."""
    if annotation is str:
        return {"type": "string"}
    if annotation is bool:
        return {"type": "boolean"}
    if annotation is int:
        return {"type": "integer"}
    if annotation is float:
        return {"type": "number"}
    if annotation is type(None):
        return {"type": "null"}
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [schema_of(member) for member in typing.get_args(annotation)]}
    if origin in (list, tuple):
        items = typing.get_args(annotation)
        return {"type": "array", "items": schema_of(items[0]) if items else {}}
    if origin is dict or annotation is dict:
        values = typing.get_args(annotation)
        return {"type": "object", "additionalProperties": schema_of(values[1]) if len(values) == 2 else {}}
    described = getattr(annotation, "json_schema", None)
    return described() if callable(described) else {}


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class Record(Mapping[str, Any]):
    """A result that is also the read-only mapping of its JSON.

    Subclasses are dataclasses; by default their JSON has one key per field, in field order
    (a field's ``metadata`` may rename it, or drop it when None), and ``from_dict`` reads
    nested records through ``ITEMS`` (field name -> record type of its items or value).
    """

    __slots__ = ()
    ITEMS: ClassVar[dict[str, type[Record]]] = {}

    def to_dict(self) -> dict[str, Any]:
        """The JSON object."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is None and f.metadata.get("optional"):
                continue
            out[f.metadata.get("key", f.name)] = _plain(value)
        return out

    @classmethod
    def _read(cls, data: Mapping[str, Any]) -> Mapping[str, Any]:
        """``data`` as ``from_dict`` reads it (a record whose JSON differs from its fields adjusts it)."""
        return data

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any]) -> R:
        """The record a ``to_dict()`` made (unknown keys are ignored)."""
        data = cls._read(data)
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            key = f.metadata.get("key", f.name)
            if key not in data:
                continue
            value = data[key]
            item = cls.ITEMS.get(f.name)
            if item is not None and isinstance(value, list):
                value = [item.from_dict(v) if isinstance(v, Mapping) else v for v in value]
            elif item is not None and isinstance(value, Mapping):
                value = item.from_dict(value)
            kwargs[f.name] = value
        return cls(**kwargs)

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON Schema of ``to_dict()``'s object (each field's key and type; a field left out
        when None is not required; keys a record adds beside its fields are allowed)."""
        return fields_schema(cls)

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())


# ----------------------------------------------------------------------------- relations
@dataclass(slots=True, eq=False)
class Relation(Record):
    """A link from one URI to another, with the reason it was made (``rel['uri']``)."""

    uri: str
    reason: str = ""


@dataclass(slots=True, eq=False)
class LinkResult(Record):
    """What ``link`` did: the relations from ``from_uri`` to each of ``to`` (``linked`` new)."""

    from_uri: str = field(metadata=_key("from"))
    to: list[str]
    reason: str
    linked: int


@dataclass(slots=True, eq=False)
class UnlinkResult(Record):
    """What ``unlink`` did (``removed``: how many relations went)."""

    from_uri: str = field(metadata=_key("from"))
    to: str
    removed: int


# ----------------------------------------------------------------------------- listings
@dataclass(slots=True, eq=False)
class Entry(Record):
    """One line of ``ls`` or ``tree``: a file or directory (``rel_path`` in a tree only)."""

    uri: str
    size: int = 0
    is_dir: bool = field(default=False, metadata=_key("isDir"))
    mod_time: str | None = field(default=None, metadata=_key("modTime"))
    abstract: str = ""
    rel_path: str | None = field(default=None, metadata=_omitted_when_none())


@dataclass(slots=True, eq=False)
class WriteResult(Record):
    """What ``write`` did to a file: its ``mode``, the bytes written, whether the content changed
    (and whether the file was new), as upstream's content write answers."""

    uri: str
    context_type: str
    mode: str
    written_bytes: int
    content_updated: bool
    created: bool = False


@dataclass(slots=True, eq=False)
class Stat(Record):
    """Everything known about one file, directory, hidden summary file or session.

    ``kind`` says which, and which keys its JSON holds: a node has its times, tags, abstract
    and (below the root) its hash, source and record count, a directory its children; a
    hidden ``.abstract.md``/``.overview.md`` only its size; a session its message count.
    """

    uri: str
    name: str
    is_dir: bool
    size: int
    context_type: str
    kind: str = "node"  # "node", "sidecar" or "session"
    created_at: str | None = None
    updated_at: str | None = None
    tags: list[str] = field(default_factory=list)
    abstract: str = ""
    content_hash: str | None = None
    source: str | None = None
    records: int | None = None
    children: int | None = None
    message_count: int | None = None

    def to_dict(self) -> dict[str, Any]:
        head = {
            "uri": self.uri,
            "name": self.name,
            "isDir": self.is_dir,
            "size": self.size,
            "context_type": self.context_type,
        }
        if self.kind == "sidecar":
            return {**head, "hidden": True}
        times = {"created_at": self.created_at, "updated_at": self.updated_at, "modTime": self.updated_at}
        if self.kind == "session":
            return {**head, **times, "message_count": self.message_count, "abstract": self.abstract}
        data = {**head, **times, "tags": list(self.tags), "abstract": self.abstract}
        if self.records is not None:
            data.update(content_hash=self.content_hash or "", source=self.source or "", records=self.records)
        if self.children is not None:
            data["children"] = self.children
        return data

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        schema = fields_schema(cls)
        properties = schema["properties"]
        properties["isDir"] = properties.pop("is_dir")
        properties.pop("kind")
        properties.update(modTime={"anyOf": [{"type": "string"}, {"type": "null"}]}, hidden={"type": "boolean"})
        schema["required"] = ["uri", "name", "isDir", "size", "context_type"]  # the rest by kind
        return schema

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Stat:
        kind = "sidecar" if data.get("hidden") else "session" if "message_count" in data else "node"
        return cls(
            uri=data["uri"],
            name=data.get("name", ""),
            is_dir=bool(data.get("isDir")),
            size=int(data.get("size") or 0),
            context_type=data.get("context_type", "resource"),
            kind=kind,
            created_at=data.get("created_at"),
            updated_at=data.get("updated_at"),
            tags=list(data.get("tags") or []),
            abstract=data.get("abstract", ""),
            content_hash=data.get("content_hash"),
            source=data.get("source"),
            records=data.get("records"),
            children=data.get("children"),
            message_count=data.get("message_count"),
        )


# ----------------------------------------------------------------------------- grep and glob
@dataclass(slots=True, eq=False)
class GrepMatch(Record):
    """A matching line: ``uri:line:content`` (``spans``: the matches' character offsets;
    ``place``: where in a converted document the line is, ``page 2``)."""

    uri: str
    line: int
    content: str
    spans: list[list[int]] | None = field(default=None, metadata=_omitted_when_none())
    place: str | None = field(default=None, metadata=_omitted_when_none())


@dataclass(slots=True, eq=False)
class FileCount(Record):
    """``grep -c``: how many lines of one file match."""

    uri: str
    count: int


@dataclass(slots=True, eq=False)
class GrepResult(Record):
    """grep's answer: the matching lines (or, with ``count``, per-file counts; with
    ``files_with_matches``, the files). ``count`` is the length of the list returned,
    ``match_count`` the matching lines, ``files_scanned`` the files read."""

    ITEMS: ClassVar[dict[str, type[Record]]] = {"matches": GrepMatch, "counts": FileCount}

    matches: list[GrepMatch] | None = None
    counts: list[FileCount] | None = None
    files: list[str] | None = None
    count: int = 0
    match_count: int = 0
    files_scanned: int = 0

    def to_dict(self) -> dict[str, Any]:
        if self.counts is not None:
            listed: dict[str, Any] = {"counts": [c.to_dict() for c in self.counts]}
        elif self.files is not None:
            listed = {"files": list(self.files)}
        else:
            listed = {"matches": [m.to_dict() for m in self.matches or []]}
        return {**listed, "count": self.count, "match_count": self.match_count, "files_scanned": self.files_scanned}

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        schema = fields_schema(cls)
        for listed in ("matches", "counts", "files"):  # one of them, by what was asked
            schema["properties"][listed] = schema["properties"][listed]["anyOf"][0]
            schema["required"].remove(listed)
        return schema


@dataclass(slots=True, eq=False)
class GlobResult(Record):
    """glob's answer: the matching URIs, sorted by path, and how many."""

    matches: list[str] = field(default_factory=list)
    count: int = 0


# ----------------------------------------------------------------------------- writes
@dataclass(slots=True, eq=False)
class AddResult(Record):
    """What an ``add-resource`` (or ``add-skill``) run did."""

    root_uri: str
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: int = 0
    directories: int = 0
    records_embedded: int = 0
    # Records of the add's tree still waiting for their vectors when it returned (found by
    # their words and summaries meanwhile): an add told not to wait, or one another process embeds.
    pending_vectors: int = 0
    skipped_files: list[dict[str, str]] = field(default_factory=list)
    # Files added with a caveat (bytes that are not UTF-8 were replaced): ``{path, warning}``.
    warnings: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        data = Record.to_dict(self)
        del data["seconds"]  # the envelope's "time" says how long it took
        return data

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        schema = fields_schema(cls)
        del schema["properties"]["seconds"]
        schema["required"].remove("seconds")
        return schema


@dataclass(slots=True, eq=False)
class MemoryResult(Record):
    """What ``add_memory`` did: the memory's URI, and whether it was new or its tags changed."""

    uri: str
    category: str
    added: bool
    tags_changed: bool


@dataclass(slots=True, eq=False)
class MkdirResult(Record):
    """A directory made by ``mkdir``."""

    uri: str
    created: bool = True


@dataclass(slots=True, eq=False)
class Snapshot(Record):
    """A named state of the store: its name, when it was tagged, the store's version then (the
    nodes table's), and each table's version."""

    name: str
    created_at: str
    version: int
    tables: dict[str, int]


@dataclass(slots=True, eq=False)
class WatchInfo(Record):
    """A watched source (upstream's watch task): the local ``path`` kept in step at ``to_uri``,
    by file events or, with ``watch_interval`` (minutes), checked at that interval; whether it is
    active (not paused), its last sync's time and counts (``last_result``: added, updated,
    removed, moved, unchanged, skipped, seconds), its last error, and who watches it now
    (``watcher``: ``pid N on HOST``, or None when no process does)."""

    task_id: str
    to_uri: str
    path: str
    watch_interval: float | None = None
    is_active: bool = True
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    created_at: str = ""
    last_execution_time: str | None = None
    last_result: dict[str, float] | None = None
    last_error: str | None = None
    watcher: str | None = None


@dataclass(slots=True, eq=False)
class WatchList(Record):
    """The watched sources, oldest first (upstream's ``{tasks, total}``)."""

    ITEMS: ClassVar[dict[str, type[Record]]] = {"tasks": WatchInfo}

    tasks: list[WatchInfo] = field(default_factory=list)
    total: int = 0


@dataclass(slots=True, eq=False)
class WatchDeleted(Record):
    """A source no longer watched (what it added stays in the store)."""

    task_id: str
    to_uri: str
    deleted: bool = True


@dataclass(frozen=True, slots=True)
class WatchReport:
    """What a watcher tells as it goes (``keep_watching``'s report): ``kind`` is watching, waiting,
    synced (with the sync's counts in ``result``), error or stopped."""

    uri: str
    kind: str
    message: str
    result: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"uri": self.uri, "event": self.kind, "message": self.message}
        if self.result is not None:
            data["result"] = self.result
        return data


@dataclass(slots=True, eq=False)
class SessionDeleted(Record):
    """A session deleted, with how many messages went with it."""

    session_id: str
    uri: str
    deleted: bool = True
    messages_deleted: int = 0


@dataclass(slots=True, eq=False)
class RemoveResult(Record):
    """What ``rm`` removed: how many nodes (a session counts as one), and the sessions that
    went with a folder above them (``sessions``) or the session removed itself (``session``)."""

    ITEMS: ClassVar[dict[str, type[Record]]] = {"session": SessionDeleted}

    uri: str
    removed: int = 0
    session: SessionDeleted | None = field(default=None, metadata=_omitted_when_none())
    sessions: int | None = field(default=None, metadata=_omitted_when_none())


@dataclass(slots=True, eq=False)
class MoveResult(Record):
    """What ``mv`` moved (``resumed``: it finished a move that had been interrupted)."""

    from_uri: str = field(metadata=_key("from"))
    to: str
    moved: int = 0
    resumed: bool | None = field(default=None, metadata=_omitted_when_none())


@dataclass(slots=True, eq=False)
class ReindexResult(Record):
    """What ``reindex`` embedded, with which embedder, and whether it switched tables."""

    embedder: str
    previous_embedder: str = ""
    switched_table: bool = False
    files: int = 0
    directories: int = 0
    records_embedded: int = 0
    seconds: float = 0.0


@dataclass(slots=True, eq=False)
class IndexResult(Record):
    """What ``index`` did: the records below ``uri`` that got their vectors, the texts the
    embedder read for them (identical texts once), and the records still waiting (another
    write's, come in meanwhile)."""

    uri: str
    records_embedded: int = 0
    texts_embedded: int = 0
    pending_vectors: int = 0
    seconds: float = 0.0


# ----------------------------------------------------------------------------- sessions
@dataclass(slots=True, eq=False)
class Message(Record):
    """One turn of a session: its role and its text parts (``[{"type": "text", "text"}]``)."""

    id: str
    role: str
    parts: list[dict[str, str]] = field(default_factory=list)
    created_at: str | None = None

    @property
    def text(self) -> str:
        """The parts' text, one part per line."""
        return "\n".join(str(part.get("text", "")) for part in self.parts)


@dataclass(slots=True, eq=False)
class SessionInfo(Record):
    """A session; with ``summary`` and ``messages`` when it was read whole."""

    ITEMS: ClassVar[dict[str, type[Record]]] = {"messages": Message}

    session_id: str
    uri: str
    user: str
    created_at: str | None = None
    updated_at: str | None = None
    message_count: int = 0
    summary: str | None = field(default=None, metadata=_omitted_when_none())
    messages: list[Message] | None = field(default=None, metadata=_omitted_when_none())

    def to_dict(self) -> dict[str, Any]:
        """Its JSON, as upstream's: ``user`` is ``{account_id, user_id}``, and a session lists as
        a folder (``is_dir``, ``mod_time``)."""
        data = Record.to_dict(self)
        data["user"] = {"account_id": "default", "user_id": self.user}
        data.update(is_dir=True, mod_time=self.updated_at)
        return data

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        schema = fields_schema(cls)
        user = {"account_id": {"type": "string"}, "user_id": {"type": "string"}}
        schema["properties"]["user"] = {"type": "object", "properties": user, "required": ["account_id", "user_id"]}
        schema["properties"].update(is_dir={"type": "boolean"}, mod_time=schema["properties"]["updated_at"])
        return schema

    @classmethod
    def _read(cls, data: Mapping[str, Any]) -> Mapping[str, Any]:
        user = data.get("user")
        if isinstance(user, Mapping):
            user = user.get("user_id")
        return {**data, "user": user if isinstance(user, str) else ""}


@dataclass(slots=True, eq=False)
class MessageAdded(Record):
    """A message appended to a session, and the session's message count after it."""

    ITEMS: ClassVar[dict[str, type[Record]]] = {"message": Message}

    session_id: str
    uri: str
    message: Message
    message_count: int


@dataclass(slots=True, eq=False)
class CommittedMemory(Record):
    """A memory a commit found or changed: where it is (or would be), what it says, its category
    and topic, the day it tells of, the messages it came from, who found it (``extraction``:
    ``extractive`` or ``llm``), and what the commit did with it: ``created``, ``merged`` (into
    ``uri``, an existing memory, rewritten when ``text`` differs) or ``skipped`` (known already);
    a stored memory it changed is ``superseded`` (no longer true: its text is kept as history in
    ``superseded_by``) or ``aged`` (a plan whose day has passed), with the text it had in
    ``previous``."""

    uri: str
    category: str
    text: str
    day: str
    action: str
    reason: str = ""
    source: list[str] = field(default_factory=list)
    topic: str = ""
    extraction: str = ""
    previous: str | None = field(default=None, metadata=_omitted_when_none())
    superseded_by: str | None = field(default=None, metadata=_omitted_when_none())


@dataclass(slots=True, eq=False)
class CommitResult(Record):
    """What ``commit_session`` did, in upstream's keys (``status`` ``accepted`` or ``skipped``
    with its ``reason``; ``task_id`` is always null: the work is done when it answers) and ours:
    the messages archived, how memories were taken (``llm``, ``extractive``, or ``none``) and
    why that failed, each memory with what became of it, ``notes`` (what an LLM's answer gave
    that could not be used, and what was done instead), and the session's ``summary`` as the
    commit wrote it. ``dry_run``: nothing was written."""

    ITEMS: ClassVar[dict[str, type[Record]]] = {"memories": CommittedMemory}

    session_id: str
    status: str
    archived: bool
    archive_uri: str | None = None
    task_id: str | None = None
    reason: str | None = None
    messages_archived: int = 0
    extraction: str = "none"
    extraction_error: str | None = None
    memories: list[CommittedMemory] = field(default_factory=list)
    memories_extracted: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False
    estimated_active_tokens: int = 0
    budget_exceeded: bool = False
    notes: list[str] = field(default_factory=list)
    summary: str | None = field(default=None, metadata=_omitted_when_none())


@dataclass(slots=True, eq=False)
class ContextEntry(Record):
    """One piece of a packed context: its URI, its kind (``category``: memory, resource, skill),
    its score, how much of it is given (``detail``: ``abstract``, ``overview``, ``chunk`` or
    ``full``), the text, its tokens, why it was chosen, and the lines of its file it holds."""

    uri: str
    category: str
    score: float
    detail: str
    text: str
    tokens: int
    reason: str
    lines: list[int] | None = field(default=None, metadata=_omitted_when_none())


@dataclass(slots=True, eq=False)
class ContextResult(Record):
    """The best context that fits in a budget of tokens, as upstream's ``search_context`` gives
    it: the ``entries``, ``rendered`` (markdown, for a prompt), ``digest`` (always empty: no
    rewriting) and ``stats``; plus the budget, the tokens used and the tokenizer that counted."""

    ITEMS: ClassVar[dict[str, type[Record]]] = {"entries": ContextEntry}

    entries: list[ContextEntry]
    rendered: str
    budget: int
    used_tokens: int
    tokenizer: str
    digest: str = ""
    stats: dict[str, Any] = field(default_factory=dict)
    # Records within the query's scope that wait for their vectors (found by their words only).
    pending_vectors: int = 0


@dataclass(slots=True, eq=False)
class SessionContext(Record):
    """What a session gives a prompt within ``token_budget`` (upstream's ``get_session_context``):
    its latest archive's overview when it fits, and its messages since, newest kept first."""

    ITEMS: ClassVar[dict[str, type[Record]]] = {"messages": Message}

    latest_archive_overview: str
    pre_archive_abstracts: list[str]
    messages: list[Message]
    estimated_tokens: int = field(metadata=_key("estimatedTokens"))
    stats: dict[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------------------- doctor
@dataclass(slots=True, eq=False)
class DoctorReport(Record):
    """What is installed and configured, what the store holds, and every problem found.

    ``store`` holds ``path`` and ``exists``; for a store that exists ``readable``, and for
    one that reads its counts, embedder, index and state. ``problems`` are one-line
    sentences, each saying what to do."""

    openviking: str
    python: str
    packages: dict[str, str | None]
    config: str | None
    user: str
    embedder: dict[str, Any]
    llm: dict[str, Any]
    rerank: dict[str, Any]
    query_translation: dict[str, Any]
    store: dict[str, Any]
    problems: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
