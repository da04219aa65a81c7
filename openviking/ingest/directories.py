"""Directory summaries: each directory's L0 abstract and L1 overview, refreshed bottom-up.

A directory's summaries are made from its entries' abstracts and its description (``mkdir
--description``), deepest directory first, so that each reads its subdirectories' fresh
text. A refresh runs under the write lock, from what the store holds then, so two processes
writing side by side both end up described; it rewrites only the directories whose entries,
tags or times changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from openviking.store.lance import LanceStore
from openviking.system.ostext import utf8_text
from openviking.values.access import USERS_ABSTRACT, USERS_OVERVIEW, USERS_ROOT
from openviking.values.uri import SCHEME, VikingURI

from .limits import DEFAULT_LIMITS, IngestLimits
from .rows import directory_records, node_row, pend_rows, stored_uri
from .summary import ChildSummary, directory_abstract, directory_overview, truncate_generated

if TYPE_CHECKING:
    from openviking.models.embedder import Embedder

__all__ = ["LLM_WRITTEN", "DirectoryDraft", "refresh_directories", "store_directories"]

LLM_WRITTEN = "llm:"  # content-hash prefix of a directory summary an LLM wrote

# What a refresh reads of each node: never the content, which for a file is its whole text.
_COLUMNS = [
    "uri",
    "parent_uri",
    "name",
    "is_dir",
    "abstract",
    "overview",
    "created_at",
    "updated_at",
    "tags",
    "content_hash",
    "source",
]


@dataclass(slots=True)
class DirectoryDraft:
    """A directory's summary as it is being made: from what, and what it says."""

    uri: VikingURI
    node: dict[str, Any] | None
    kids: list[dict[str, Any]]
    summaries: list[ChildSummary]
    description: str
    abstract: str
    overview: str
    digest: str
    same_entries: bool

    @classmethod
    def of(
        cls, uri: VikingURI, node: dict[str, Any] | None, kids: list[dict[str, Any]], limits: IngestLimits
    ) -> DirectoryDraft:
        """The extractive summary; the one the directory has when its entries did not change."""
        summaries = [ChildSummary(k["name"], bool(k["is_dir"]), k.get("abstract") or "") for k in kids]
        # A directory's content is the description it was made with (mkdir --description).
        description = (node or {}).get("content") or ""
        abstract = (
            truncate_generated(description, limits.abstract_max_chars)
            if description
            else directory_abstract(uri.name, summaries, limits.abstract_max_chars)
        )
        overview = directory_overview(uri.name, abstract, summaries, limits.overview_max_chars)
        if str(uri) == USERS_ROOT:  # a summary above the users' spaces names none of them
            abstract, overview = USERS_ABSTRACT, USERS_OVERVIEW
        # The digest of the extractive text stands for what the summary is made from (the
        # entries' summaries and the description), whoever writes the summary; an LLM's text
        # is stored with the digest it was made from, marked LLM_WRITTEN.
        digest = hashlib.sha256((abstract + "\0" + overview).encode("utf-8")).hexdigest()
        stored = (node or {}).get("content_hash")
        same_entries = node is not None and stored in (digest, LLM_WRITTEN + digest)
        if same_entries and node is not None and node.get("abstract") and node.get("overview"):
            abstract, overview = node["abstract"], node["overview"]  # kept, perhaps as the LLM wrote it
        return cls(uri, node, kids, summaries, description, abstract, overview, digest, same_entries)

    @property
    def stored_hash(self) -> str:
        """The content hash to store with this text."""
        return str((self.node or {}).get("content_hash")) if self.same_entries else self.digest

    @property
    def llm_written(self) -> bool:
        return self.same_entries and self.stored_hash.startswith(LLM_WRITTEN)

    @property
    def wants_writer(self) -> bool:
        """True when an LLM should (re)write this summary: not a scope root, and not yet
        written by one for these entries (a text that an earlier failure left extractive too)."""
        return self.uri.depth >= 2 and bool(self.kids) and not self.llm_written


def refresh_directories(
    store: LanceStore,
    embedder: Embedder,
    top: VikingURI,
    *,
    tags: Sequence[str] | None = (),
    source: PurePath | None = None,
    folders: dict[str, str] | None = None,
    limits: IngestLimits = DEFAULT_LIMITS,
    force: bool = False,
    dry_run: list[str] | None = None,
    embed_now: bool = False,
) -> int:
    """Regenerate L0/L1 of every directory in ``top``'s subtree (``top`` may be a file) and above it.

    Directories that hold files but have no node yet get one; directories left empty by
    removed files are deleted (when they came from ``source``). A directory without a
    ``source`` gets its local folder from ``folders`` (local paths by URI, as the add read
    them from its files' paths). ``tags`` None keeps each directory's stored tags. With a
    ``dry_run`` list nothing is written: the URIs of the directories a refresh would write or
    delete are put in it. Returns how many directories were (re)written.
    """
    with store.write_lock():
        ancestors = _ancestors(top)
        nodes = _read_nodes(store, top, ancestors)
        directories = _directories_to_refresh(nodes, top, ancestors)
        if dry_run is None:
            _delete_scheme_node(store, top, nodes)
        refresh = _Refresh(top, tags, source, folders or {}, limits, force, nodes)
        for uri_text in sorted(directories, key=lambda u: -u.count("/")):
            refresh.summarise(uri_text)  # deepest first: a directory's summary reads its children's
        if dry_run is not None:
            dry_run += [row["uri"] for row in refresh.rows] + refresh.emptied
            return len(refresh.rows)
        _delete_directories(store, refresh.emptied)
        store_directories(store, embedder, refresh.rows, refresh.records, refresh.inputs, embed_now=embed_now)
        return len(refresh.rows)


def _ancestors(top: VikingURI) -> list[VikingURI]:
    """The directories above ``top``, nearest first, up to its scope (``viking://`` excluded)."""
    ancestors: list[VikingURI] = []
    cursor = top.parent
    while cursor is not None and not cursor.is_root:
        ancestors.append(cursor)
        cursor = cursor.parent
    return ancestors


def _read_nodes(store: LanceStore, top: VikingURI, ancestors: list[VikingURI]) -> dict[str, dict[str, Any]]:
    """The nodes a refresh reads, by URI: ``top``'s subtree, and each of ``ancestors`` with
    its entries (an ancestor's overview lists them), directories with their descriptions."""
    names = [str(a) for a in ancestors]
    subtree = store.nodes_below(top, columns=_COLUMNS) + store.nodes_with_children(names, columns=_COLUMNS)
    nodes = {row["uri"]: row for row in subtree}
    # Descriptions live in the content column of directories: fetch only those, never the
    # content of files.
    for uri, description in store.directory_descriptions(top, names).items():
        if uri in nodes:
            nodes[uri]["content"] = description
    return nodes


def _directories_to_refresh(nodes: dict[str, dict[str, Any]], top: VikingURI, ancestors: list[VikingURI]) -> set[str]:
    """The URIs of ``ancestors``, of the directories in ``top``'s subtree, and of the folders
    its files are in, stored or not."""
    directories: set[str] = {str(a) for a in ancestors}
    for uri_text, row in nodes.items():
        uri = stored_uri(uri_text)
        if not uri.is_within(top):
            continue  # a sibling listed only for an ancestor's overview
        if row["is_dir"]:
            directories.add(uri_text)
        parent = uri.parent
        while parent is not None and parent.is_within(top):
            directories.add(str(parent))
            parent = parent.parent
    # viking:// holds the scopes; it is no directory of the store.
    directories.discard(SCHEME)
    return directories


def _delete_scheme_node(store: LanceStore, top: VikingURI, nodes: dict[str, dict[str, Any]]) -> None:
    """Delete a node stored at ``viking://`` when refreshing the whole store: it is no
    directory, and glob and ls would list it as one."""
    if top.is_root and SCHEME in nodes:
        store.delete_nodes_by_uri([SCHEME])
        store.delete_records_by_uri([SCHEME])  # nodes first, as everywhere


def _delete_directories(store: LanceStore, uris: list[str]) -> None:
    """Delete the directories at ``uris`` with their records."""
    if uris:
        store.delete_nodes_by_uri(uris)
        store.delete_records_by_uri(uris)


class _Refresh:
    """One refresh's pass over its directories: the rows and records it will write, and the
    directories it will delete.

    ``nodes`` and the entries of each directory are kept up to date as the pass goes, so a
    directory summarised after its subdirectories reads their fresh summaries.
    """

    def __init__(
        self,
        top: VikingURI,
        tags: Sequence[str] | None,
        source: PurePath | None,
        folders: dict[str, str],
        limits: IngestLimits,
        force: bool,
        nodes: dict[str, dict[str, Any]],
    ) -> None:
        self.top = top
        self.tags = tags
        self.source = source
        self.folders = folders
        self.limits = limits
        self.force = force
        self.nodes = nodes
        self.children: dict[str, list[dict[str, Any]]] = {}
        for row in nodes.values():
            if row.get("parent_uri"):
                self.children.setdefault(row["parent_uri"], []).append(row)
        self.now = datetime.now(UTC)
        self.source_prefix = utf8_text(str(source)) if source is not None else None
        self.rows: list[dict[str, Any]] = []
        self.records: list[dict[str, Any]] = []
        self.inputs: list[str] = []  # the text each of ``records`` embeds
        self.emptied: list[str] = []

    def summarise(self, uri_text: str) -> None:
        """Make the summary of the directory at ``uri_text`` from its entries as they are now,
        and queue its row and records if anything changed (or its deletion if it was emptied)."""
        uri = stored_uri(uri_text)
        kids = sorted(self.children.get(uri_text, []), key=lambda r: (not r["is_dir"], r["name"]))
        node = self.nodes.get(uri_text)
        if not kids and node is not None and self._emptied_by_vanished_files(uri, node):
            self.emptied.append(uri_text)
            self._set_entry(node.get("parent_uri"), uri_text, None)
            return
        draft = DirectoryDraft.of(uri, node, kids, self.limits)
        writer = self.limits.summary_writer
        if writer is not None and draft.wants_writer:
            writer.pending.add(uri_text)  # written by the LLM once the write lock is released
        latest = max((k["updated_at"] for k in kids if k.get("updated_at")), default=None)
        row = self._row(draft, latest)
        # Keep this directory's fresh summary for its parent's overview.
        self.nodes[uri_text] = row
        self._set_entry(row["parent_uri"], uri_text, row)
        if not self._changed(draft, row, latest):
            return
        self.rows.append(row)
        if uri.depth >= 2:  # scope roots contain everything: a hit on them tells nothing
            for record, embed in directory_records(uri, draft.summaries, row):
                self.records.append(record)
                self.inputs.append(embed)

    def _emptied_by_vanished_files(self, uri: VikingURI, node: dict[str, Any]) -> bool:
        """True for an empty directory that came from the source being added: the files that
        were in it vanished from the source."""
        if not self.source_prefix or uri.depth < 2:
            return False
        return str(node.get("source") or "").startswith(self.source_prefix)

    def _set_entry(self, parent_key: str | None, uri_text: str, row: dict[str, Any] | None) -> None:
        """Make ``row`` the entry at ``uri_text`` among its parent's (None: remove it)."""
        if not parent_key:
            return
        siblings = [s for s in self.children.get(parent_key, []) if s["uri"] != uri_text]
        self.children[parent_key] = siblings + [row] if row is not None else siblings

    def _row(self, draft: DirectoryDraft, latest: datetime | None) -> dict[str, Any]:
        """The node of the directory with the summary of ``draft``; ``latest`` is the newest
        modification time among its entries."""
        uri, stored = draft.uri, draft.node or {}
        within = uri.is_within(self.top)
        return node_row(
            uri,
            is_dir=True,
            content=draft.description or None,
            abstract=draft.abstract,
            overview=draft.overview,
            size=0,
            created_at=stored.get("created_at") or self.now,
            updated_at=latest or stored.get("updated_at") or self.now,
            tags=list(self.tags) if within and self.tags is not None else list(stored.get("tags") or []),
            content_hash=draft.stored_hash,
            source=stored.get("source") or (self._local_folder(uri) if within else ""),
        )

    def _local_folder(self, uri: VikingURI) -> str:
        """The local folder of a directory in ``top``'s subtree ("" when the source is a file)."""
        known = self.folders.get(str(uri))
        if known:
            return known
        if not isinstance(self.source, Path) or self.source.is_file():  # a file, or a URL
            return ""
        rel = uri.relative_to(self.top)
        return utf8_text(str(self.source / rel) if rel else str(self.source))

    def _changed(self, draft: DirectoryDraft, row: dict[str, Any], latest: datetime | None) -> bool:
        """True when the directory's ``row`` differs from its stored node (or ``force``)."""
        stored = draft.node or {}
        return (
            self.force
            or not draft.same_entries
            or sorted(stored.get("tags") or []) != sorted(row["tags"])
            or (latest is not None and stored.get("updated_at") != latest)
        )


def store_directories(
    store: LanceStore,
    embedder: Embedder,
    nodes: list[dict[str, Any]],
    records: list[dict[str, Any]],
    inputs: list[str],
    *,
    embed_now: bool = False,
) -> None:
    """Write directories' nodes and their L0/L1 records, which embed ``inputs`` (one a record):
    later, or with ``embed_now`` before they are written."""
    if records:
        refreshed = sorted({r["uri"] for r in records})
        pend_rows(store, embedder, records, inputs, refreshed, embed_now=embed_now)
        store.replace_records(refreshed, records, embedder.dimension)
    if nodes:
        store.upsert_nodes(nodes)
