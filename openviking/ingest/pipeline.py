"""add-resource: walk a local tree, chunk and embed what changed, mirror it under a URI.

The pipeline is idempotent and resumable. A file whose bytes did not change is not read
twice nor embedded again; records are written before the node that carries the file's
content hash, so a crash or Ctrl-C between the two only makes the next run redo that file.
Directory L0/L1 are regenerated bottom-up at the end, under the write lock, from what the
store holds then, so two processes adding side by side both end up described.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openviking.errors import AlreadyExistsError, FailedPreconditionError
from openviking.oslocal import has_undecodable, utf8_text
from openviking.results import AddResult
from openviking.store.lance import LanceStore
from openviking.store.schema import NODE_COLUMNS, RECORDS
from openviking.uri import SCHEME, VikingURI, is_control_char, looks_like_a_drive

from .chunk import Chunk, chunk_text, text_lines
from .code import definitions, is_code
from .summary import (
    ChildSummary,
    directory_abstract,
    directory_overview,
    file_summary,
    file_title,
    navigation_text,
    truncate_generated,
)
from .walk import SourceFile, WalkResult, decode_text, looks_binary, walk

if TYPE_CHECKING:
    from openviking.models.embedder import Embedder

    from .llm_summary import DirectorySummaryWriter

__all__ = ["IngestLimits", "ingest_tree", "record_id", "refresh_directories", "write_llm_summaries"]

ProgressCallback = Callable[[int, int], None]
# Chunks embedded per commit: large enough to keep the model busy, small enough that an
# interrupted run keeps most of its work.
BATCH_CHUNKS = 192
SUMMARY_CHUNK = -1  # chunk number of a file's summary record
SUMMARY_WRITERS = 4  # directories whose summaries the LLM writes at once
LLM_WRITTEN = "llm:"  # content-hash prefix of a directory summary an LLM wrote
SNIFF_BYTES = 8192


@dataclass(frozen=True, slots=True)
class IngestLimits:
    """How generated text is made: its sizes (``semantic.*`` in the config) and, with an LLM
    configured (``vlm``), the writer of directories' summaries."""

    abstract_max_chars: int = 256
    overview_max_chars: int = 4000
    summary_writer: DirectorySummaryWriter | None = field(default=None, compare=False)


DEFAULT_LIMITS = IngestLimits()


@dataclass(slots=True)
class _Prepared:
    source: SourceFile
    uri: VikingURI
    text: str
    content_hash: str
    created_at: datetime
    chunks: list[Chunk] = field(default_factory=list)
    summary: str = ""
    title: str = ""
    source_label: str = ""
    tags: list[str] = field(default_factory=list)
    is_new: bool = False  # no node existed at its URI when the add began
    is_code: bool = False  # source code: chunks start at definitions, a first "#" line is a comment


class _Appender:
    """Lets the batches of one add append the records and nodes of new files instead of
    merging them: a merge scans every row written since the last ``optimize()``, so merging
    makes a large first add quadratic (163 ms a batch near 100k records against 30 ms at the
    start; bench/README.md).

    Appending is right only while no record or node exists at those URIs. That holds from
    ``start`` (under the write lock: the nodes were read, leftovers of a crashed add cleared)
    for as long as nobody else writes: each batch, under the lock, finds the tables at the
    versions its own last write left, or else merges from then on.
    """

    def __init__(self, store: LanceStore) -> None:
        self.store = store
        self.versions: tuple[int, int] | None = None

    def start(self, root: VikingURI, existing: dict[str, Any], new_uris: list[str]) -> None:
        """Clear records left at ``new_uris`` (a crash between a batch's records and its nodes)."""
        if not new_uris or not self.store.has_records:
            self.versions = self.store.table_versions()
            return
        if not existing:
            # Nothing is stored under the root: whatever records are there are leftovers.
            if self.store.count_records_below(root):
                self.store.delete_records_below(root)
        else:
            for start in range(0, len(new_uris), 500):
                batch = new_uris[start : start + 500]
                if self.store.count_records_by_uri(batch):
                    self.store.delete_records_by_uri(batch)
        self.versions = self.store.table_versions()

    @property
    def active(self) -> bool:
        return self.versions is not None

    def nobody_else_wrote(self) -> bool:
        """Under the write lock: the tables are as this add's last write left them."""
        if self.versions is not None and self.store.table_versions() != self.versions:
            self.versions = None
        return self.versions is not None

    def wrote(self) -> None:
        """Under the write lock, after this add's own write."""
        if self.versions is not None:
            self.versions = self.store.table_versions()


def record_id(uri: str, level: int, chunk: int = 0) -> str:
    """Deterministic id of a record: the same URI, level and chunk always get the same id."""
    return hashlib.md5(f"{uri}#{level}#{chunk}".encode()).hexdigest()


def node_row(uri: VikingURI, *, is_dir: bool, **fields: Any) -> dict[str, Any]:
    """A nodes row: the columns the URI decides, then ``fields``."""
    return {
        "uri": str(uri),
        "parent_uri": str(uri.parent) if uri.parent else None,
        "name": uri.name,
        "is_dir": is_dir,
        "context_type": uri.context_type,
        "depth": uri.depth,
        **fields,
    }


def record_row(uri: VikingURI, level: int, chunk: int, **fields: Any) -> dict[str, Any]:
    """A records row (without its vector): the columns the URI, level and chunk decide, then ``fields``."""
    return {
        "id": record_id(str(uri), level, chunk),
        "uri": str(uri),
        "depth": uri.depth,
        "level": level,
        "chunk": chunk,
        "context_type": uri.context_type,
        **fields,
    }


def ingest_tree(
    store: LanceStore,
    embedder: Embedder,
    source: Path,
    root: VikingURI,
    *,
    tags: Sequence[str] = (),
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    limits: IngestLimits = DEFAULT_LIMITS,
    progress: ProgressCallback | None = None,
    walked: WalkResult | None = None,
) -> AddResult:
    """Mirror ``source`` (a file or a folder) at ``root`` and index what changed.

    ``walked`` is the walk of ``source`` when the caller already made it (with the same
    include/exclude globs); otherwise it is made here.
    """
    started = time.monotonic()
    if walked is None:
        walked = walk(source, include, exclude)
    result = AddResult(root_uri=str(root))
    result.skipped_files = [{"path": rel, "reason": reason} for rel, reason in walked.skipped]
    result.skipped = len(result.skipped_files)
    single_file = source.is_file()
    targets = [(item, root if single_file else root.join(_safe_rel(item.rel))) for item in walked.files]
    targets = _without_name_clashes(targets, result)
    appender = _Appender(store)
    with store.write_lock():
        existing = {
            row["uri"]: row
            for row in store.nodes_below(
                root, columns=["uri", "is_dir", "content_hash", "created_at", "source", "tags", "size", "updated_at"]
            )
        }
        appender.start(root, existing, [str(uri) for _, uri in targets if str(uri) not in existing])
    check_parents_are_directories(store, root)
    root_node = existing.get(str(root))
    if root_node is not None and bool(root_node["is_dir"]) == single_file:
        kind = "directory" if root_node["is_dir"] else "file"
        raise AlreadyExistsError(
            f"{root} already exists as a {kind}",
            hint="Choose another target with --to, or remove it first with openviking rm",
            details={"uri": str(root)},
        )

    tag_list = list(tags)
    now = datetime.now(UTC)
    changed: list[tuple[SourceFile, VikingURI, bytes | None]] = []
    seen: set[str] = set()
    for item, uri in targets:
        seen.add(str(uri))
        node = existing.get(str(uri))
        if node is not None and _looks_unchanged(node, item, tag_list):
            result.unchanged += 1
            continue
        changed.append((item, uri, node))

    folders = _local_folders(targets, root)
    _placeholder_directories(store, root, [uri for _, uri, _ in changed], existing, folders, tag_list, now, appender)
    # A file stored before that cannot be added now (it became binary, or unreadable) no longer
    # mirrors its source: it goes, as a file that grew past the size limit or vanished does.
    dropped: list[str] = []
    if not single_file:
        result.warnings.extend(_renames(root, [(item, uri) for item, uri, node in changed if node is None]))
    prepared = (_prepare(item, uri, node, tag_list, now, limits, result, dropped) for item, uri, node in changed)
    total_bytes = sum(item.size for item, _, _ in changed)
    _flush_all(store, embedder, (p for p in prepared if p is not None), result, total_bytes, progress, appender)

    if single_file and not walked.files and result.skipped == 0:
        result.skipped += 1
    alive = {item.label for item, _ in targets}
    result.removed = _remove_vanished(store, existing, seen - set(dropped), alive - _sources(existing, dropped), source)
    result.directories = refresh_directories(
        store,
        embedder,
        root,
        tags=tag_list,
        source=source,
        folders=folders,
        limits=limits,
    )
    if result.added or result.updated or result.removed or result.directories:
        store.optimize()
    else:
        store.ensure_indexes()  # adding an unchanged tree again brings an older store's indexes up to date
    result.seconds = time.monotonic() - started
    return result


def write_document(
    store: LanceStore,
    embedder: Embedder,
    uri: VikingURI,
    text: str,
    *,
    tags: Sequence[str] | None = None,
    limits: IngestLimits = DEFAULT_LIMITS,
) -> AddResult:
    """Store and index one document given as text (a memory, a note), then refresh its parents.

    ``tags`` None keeps the stored document's tags. The same text with the same tags again
    writes nothing (``unchanged``).
    """
    started = time.monotonic()
    data = text.encode("utf-8")
    now = datetime.now(UTC)
    node = store.get_node(str(uri), columns=["uri", "is_dir", "created_at", "content_hash", "tags"])
    if node is not None and node["is_dir"]:
        raise AlreadyExistsError(f"{uri} already exists as a directory", details={"uri": str(uri)})
    check_parents_are_directories(store, uri)
    result = AddResult(root_uri=str(uri))
    content_hash = hashlib.sha256(data).hexdigest()
    stored_tags = list((node or {}).get("tags") or [])
    tags = stored_tags if tags is None else list(tags)
    if node is not None and node.get("content_hash") == content_hash and sorted(stored_tags) == sorted(tags):
        result.unchanged = 1
    else:
        item = SourceFile(Path(uri.name), uri.name, len(data), now.timestamp())
        created = node["created_at"] if node is not None and node.get("created_at") else now
        prepared = _analysed(item, uri, text, content_hash, created, limits, tags=tags)
        if node is None:
            result.added = 1
        else:
            result.updated = 1
        _flush(store, embedder, [prepared], result)
    # Also when unchanged: a write stopped before its folders were refreshed is finished by the
    # same call again (refreshing writes only what is out of date).
    result.directories = refresh_directories(store, embedder, uri, limits=limits)
    if result.added or result.updated or result.directories:
        store.optimize()
    result.seconds = time.monotonic() - started
    return result


def reembed_files(
    store: LanceStore,
    embedder: Embedder,
    nodes: list[dict[str, Any]],
    *,
    limits: IngestLimits = DEFAULT_LIMITS,
    progress: ProgressCallback | None = None,
) -> AddResult:
    """Chunk and embed stored files again from their stored content (``reindex``)."""
    result = AddResult(root_uri="")

    def prepared() -> Iterator[_Prepared]:
        for node in nodes:
            uri = _from_text(node["uri"])
            updated = node.get("updated_at") or datetime.now(UTC)
            item = SourceFile(Path(uri.name), uri.name, int(node.get("size") or 0), updated.timestamp())
            result.updated += 1
            yield _analysed(
                item, uri, node.get("content") or "", node.get("content_hash") or "", node.get("created_at") or updated,
                limits, source_label=node.get("source") or "", tags=node.get("tags") or [],
            )  # fmt: skip

    _flush_all(store, embedder, prepared(), result, sum(int(n.get("size") or 0) for n in nodes), progress)
    return result


def check_parents_are_directories(store: LanceStore, uri: VikingURI) -> None:
    """Refuse to write below a file: a stored file never silently becomes a directory.

    Raises:
        FailedPreconditionError: a parent of ``uri`` is a file.
    """
    cursor = uri.parent
    while cursor is not None and cursor.depth >= 2:
        node = store.get_node(str(cursor), columns=["uri", "is_dir"])
        if node is not None and not node["is_dir"]:
            raise FailedPreconditionError(
                f"{cursor} is a file, not a directory",
                hint="Choose a target that is not inside a file",
                details={"uri": str(cursor)},
            )
        cursor = cursor.parent


def _placeholder_directories(
    store: LanceStore,
    root: VikingURI,
    files: list[VikingURI],
    existing: dict[str, Any],
    folders: dict[str, str],
    tags: list[str],
    now: datetime,
    appender: _Appender,
) -> None:
    """Nodes for the new folders above ``files``, written before any file: an add stopped
    midway (Ctrl-C, a crash) leaves files that ``ls`` and ``glob`` reach, not only ``find``.
    Their abstract and overview are written with the rest at the end (refresh_directories).
    ``folders`` maps each folder's URI to its local path (``_local_folders``)."""
    wanted: dict[str, VikingURI] = {}
    for uri in files:
        for parent in _parents(uri):
            if parent.is_container or str(parent) in wanted:
                break
            wanted[str(parent)] = parent
    missing = [uri for key, uri in wanted.items() if key not in existing]
    if not missing:
        return
    with store.write_lock():  # another add may have made some of them since ``existing`` was read
        stored = store.stored_uris([str(uri) for uri in missing])
        rows = [
            node_row(
                uri,
                is_dir=True,
                abstract="",
                overview="",
                size=0,
                created_at=now,
                updated_at=now,
                tags=tags if uri.is_within(root) else [],
                source=folders.get(str(uri), ""),
            )
            for uri in missing
            if str(uri) not in stored
        ]
        if rows:
            appender.nobody_else_wrote()  # a foreign write before this one still counts
            store.upsert_nodes(rows)
            appender.wrote()


def _local_folders(targets: list[tuple[SourceFile, VikingURI]], root: VikingURI) -> dict[str, str]:
    """The local path of each folder the files of ``targets`` are in, by the folder's URI: read
    from the files' own paths, since a URI may spell a folder's name differently (``d#x`` is
    ``d_x``)."""
    folders: dict[str, str] = {}
    for item, uri in targets:
        local, folder = item.path.parent, uri.parent
        while folder is not None and folder.is_within(root) and str(folder) not in folders:
            folders[str(folder)] = utf8_text(str(local))
            local, folder = local.parent, folder.parent
    return folders


def _without_name_clashes(
    targets: list[tuple[SourceFile, VikingURI]], result: AddResult
) -> list[tuple[SourceFile, VikingURI]]:
    """Files whose names map to one URI (``a#b.md``, ``a?b.md`` and ``a_b.md`` are all
    ``a_b.md``), or to a folder's URI, would overwrite each other on every add: the file whose
    name needed no change (else the first by path) keeps the URI; the others are skipped."""
    order = sorted(targets, key=lambda target: (_safe_rel(target[0].rel) != target[0].rel, target[0].rel))
    folders = {str(parent) for _, uri in targets for parent in _parents(uri)}
    taken: dict[str, str] = {}
    kept: set[str] = set()
    for item, uri in order:
        key = str(uri)
        if key in taken:
            reason = f"its name maps to the same URI as {taken[key]} ({key})"
        elif key in folders:
            reason = f"its name maps to the URI of a folder ({key})"
        else:
            taken[key] = item.rel
            kept.add(item.rel)
            continue
        result.skipped_files.append({"path": item.rel, "reason": reason})
        result.skipped += 1
    return [(item, uri) for item, uri in targets if item.rel in kept]


def _parents(uri: VikingURI) -> Iterator[VikingURI]:
    parent = uri.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def _safe_rel(rel: str) -> str:
    # A local name may hold characters a URI segment cannot (`\`, `?`, `#`).
    return "/".join(_safe_name(part) for part in rel.split("/"))


def _renames(root: VikingURI, new: list[tuple[SourceFile, VikingURI]]) -> list[dict[str, str]]:
    """A warning for each new file, or folder of new files, whose URI spells its local name
    otherwise (``a#b.md`` is ``a_b.md``): once for a folder, not for each file in it."""
    said: dict[str, dict[str, str]] = {}
    for item, uri in new:
        local = item.path.parts[-(item.rel.count("/") + 1) :]
        segments = uri.segments[-len(local) :]
        for depth, (name, segment) in enumerate(zip(local, segments, strict=True), start=1):
            if has_undecodable(name):
                reason = "its name is not UTF-8 (each such byte is spelled out, as \\xe9)"
            elif segment != name:
                reason = "a URI segment cannot hold \\, ? or #, control characters, or start like a drive (C:)"
            else:
                continue
            path, named = "/".join(item.rel.split("/")[:depth]), root.join("/".join(segments[:depth]))
            said.setdefault(path, {"path": path, "warning": f"stored as {named}: {reason}"})
            break
    return list(said.values())


def _safe_name(name: str) -> str:
    cleaned = "".join("_" if ch in "\\?#" or is_control_char(ch) else ch for ch in name)
    if cleaned in (".", ".."):
        cleaned = cleaned.replace(".", "_")
    if looks_like_a_drive(cleaned):  # C:notes.md is C_notes.md: a URI never starts a segment like a drive
        cleaned = f"{cleaned[0]}_{cleaned[2:]}"
    return cleaned


def _looks_unchanged(node: dict[str, Any], item: SourceFile, tags: list[str]) -> bool:
    if node.get("is_dir") or node.get("source") != item.label:
        return False
    if sorted(node.get("tags") or []) != sorted(tags) or node.get("size") != item.size:
        return False
    stored = node.get("updated_at")
    return stored is not None and abs(stored.timestamp() - item.mtime) < 0.002


def _prepare(
    item: SourceFile,
    uri: VikingURI,
    node: dict[str, Any] | None,
    tags: list[str],
    now: datetime,
    limits: IngestLimits,
    result: AddResult,
    dropped: list[str],
) -> _Prepared | None:
    try:
        data = item.path.read_bytes()
    except OSError as exc:
        reason = f"cannot read: {exc.strerror}"
    else:
        reason = "binary" if looks_binary(data[:SNIFF_BYTES]) else ""
    if reason:
        result.skipped += 1
        result.skipped_files.append({"path": item.rel, "reason": reason})
        if node is not None:
            dropped.append(str(uri))
        return None
    content_hash = hashlib.sha256(data).hexdigest()
    if node is not None and node.get("content_hash") == content_hash and sorted(node.get("tags") or []) == sorted(tags):
        if node.get("source") == item.label:
            result.unchanged += 1
            return None
    text = decode_text(data)
    if "\ufffd" in text and "\ufffd".encode() not in data:
        bad = text.count("\ufffd")
        result.warnings.append(
            {
                "path": item.rel,
                "warning": f"not UTF-8: {bad} undecodable byte sequence(s) replaced by U+FFFD "
                "(convert it first, e.g. iconv -f latin1 -t utf-8)",
            }
        )
    created = node["created_at"] if node is not None and node.get("created_at") else now
    prepared = _analysed(item, uri, text, content_hash, created, limits, source_label=item.label, tags=tags)
    prepared.is_new = node is None
    if node is None:
        result.added += 1
    else:
        result.updated += 1
    return prepared


def _analysed(
    item: SourceFile,
    uri: VikingURI,
    text: str,
    content_hash: str,
    created: datetime,
    limits: IngestLimits,
    *,
    source_label: str = "",
    tags: Sequence[str] = (),
) -> _Prepared:
    """A file ready to embed: its title, summary and chunks."""
    prepared = _Prepared(item, uri, text, content_hash, created, source_label=source_label, tags=list(tags))
    prepared.is_code = is_code(uri.name)  # its first line may be a comment, not a heading
    defined = definitions(text_lines(text), uri.name) if prepared.is_code else None  # read once, used twice
    prepared.title = file_title(text, uri.name)
    prepared.summary = file_summary(text, uri.name, limits.abstract_max_chars, title=prepared.title, defined=defined)
    prepared.chunks = chunk_text(text, uri.name, defined=defined)
    return prepared


def _flush_all(
    store: LanceStore,
    embedder: Embedder,
    files: Iterable[_Prepared],
    result: AddResult,
    total_bytes: int,
    progress: ProgressCallback | None,
    appender: _Appender | None = None,
) -> None:
    """Embed and write ``files`` in batches of about ``BATCH_CHUNKS`` chunks, reporting progress."""
    total = total_bytes or 1
    done = 0
    if progress:
        progress(0, total)
    batch: list[_Prepared] = []
    chunks = 0
    for prepared in files:
        batch.append(prepared)
        chunks += len(prepared.chunks)
        if chunks >= BATCH_CHUNKS:
            done += _flush(store, embedder, batch, result, appender)
            if progress:
                progress(done, total)
            batch, chunks = [], 0
    if batch:
        _flush(store, embedder, batch, result, appender)
    if progress:
        progress(total, total)


def _flush(
    store: LanceStore, embedder: Embedder, batch: list[_Prepared], result: AddResult, appender: _Appender | None = None
) -> int:
    """Embed and write one batch of files; returns the bytes it covered."""
    uris = [str(p.uri) for p in batch]
    rows: list[dict[str, Any]] = []
    inputs: list[str] = []
    for prepared in batch:
        updated = datetime.fromtimestamp(prepared.source.mtime, UTC)
        pieces = list(prepared.chunks) or [Chunk(0, 1, 1, "", prepared.summary or prepared.title)]
        if len(pieces) > 1 and prepared.summary:
            # A file of several chunks also gets a record of its title and first sentences: the
            # vector that best says what the whole page is about (and the one a question in
            # another language meets best). A one-chunk file's chunk already starts that way.
            pieces.insert(0, Chunk(SUMMARY_CHUNK, 0, 0, "", prepared.summary))
        for chunk in pieces:
            heading = _chunk_heading(prepared.title, chunk.heading)
            body = chunk.text.strip() if prepared.is_code else _without_heading_line(chunk.text)
            if chunk.index == SUMMARY_CHUNK:
                embed_input = chunk.text
            else:
                embed_input = "\n".join(part for part in (heading, body) if part)
            inputs.append(embed_input)
            rows.append(
                record_row(
                    prepared.uri,
                    2,
                    chunk.index,
                    line_start=chunk.line_start,
                    line_end=chunk.line_end,
                    text=chunk.text if chunk.index == SUMMARY_CHUNK or not heading else heading + "\n" + chunk.text,
                    abstract=prepared.summary,
                    created_at=prepared.created_at,
                    updated_at=updated,
                    tags=list(prepared.tags),
                )
            )
    # New files have no stored vectors to reuse: no lookup (it too scans the unoptimized rows).
    all_new = appender is not None and appender.active and all(p.is_new for p in batch)
    result.records_embedded += _embed_rows(store, embedder, rows, inputs, [] if all_new else uris)
    nodes = [
        node_row(
            p.uri,
            is_dir=False,
            content=p.text,
            abstract=p.summary,
            overview=None,
            size=p.source.size,
            created_at=p.created_at,
            updated_at=datetime.fromtimestamp(p.source.mtime, UTC),
            tags=list(p.tags),
            content_hash=p.content_hash,
            source=p.source_label,
        )
        for p in batch
    ]
    with store.write_lock():  # records, then nodes: a crash in between leaves records that start() clears
        undisturbed = appender is not None and appender.nobody_else_wrote()
        if all_new and undisturbed:
            store.append_records(rows, embedder.dimension)
            store.insert_nodes(nodes)
        else:
            store.replace_records(uris, rows, embedder.dimension)
            store.upsert_nodes(nodes)
        if appender is not None:
            appender.wrote()
    return sum(p.source.size for p in batch)


def _embed_rows(
    store: LanceStore,
    embedder: Embedder,
    rows: list[dict[str, Any]],
    inputs: list[str],
    uris: Iterable[str],
) -> int:
    """Fill ``vector``/``text_hash`` on each row, reusing stored vectors of identical inputs."""
    limit = embedder.max_tokens
    texts = [embedder.truncate(text, limit) if limit else text for text in inputs]
    hashes = [hashlib.sha1(text.encode("utf-8")).hexdigest() for text in texts]
    reusable: dict[str, Any] = {}
    uri_list = list(uris)
    if uri_list and store.has_records:
        for old in store.records_by_uri(uri_list, ["text_hash", "vector"]):
            reusable[old["text_hash"]] = old["vector"]
    missing = [i for i, h in enumerate(hashes) if h not in reusable]
    if missing:
        vectors = embedder.embed_documents([texts[i] for i in missing])
        for i, vector in zip(missing, vectors, strict=True):
            reusable[hashes[i]] = vector
    for row, text_hash in zip(rows, hashes, strict=True):
        row["text_hash"] = text_hash
        row["vector"] = [float(x) for x in reusable[text_hash]]
    return len(missing)


def _chunk_heading(title: str, heading: str) -> str:
    if not title:
        return heading
    if not heading or heading == title:
        return title
    if heading.startswith(title + " > "):
        return heading
    return f"{title} > {heading}"


def _without_heading_line(text: str) -> str:
    first, _, rest = text.partition("\n")
    return rest.strip() if first.lstrip().startswith("#") else text.strip()


def _remove_vanished(
    store: LanceStore,
    existing: dict[str, dict[str, Any]],
    seen: set[str],
    alive: set[str],
    source: Path,
) -> int:
    """Delete files that were imported from the folder ``source`` before and are gone from it
    now (or can no longer be added).

    ``alive`` holds the source paths this add mirrors: a node below the target whose source
    file is one of them is another copy of it (added before with a deeper ``--to``), not a
    file that vanished."""
    prefix = utf8_text(str(source)) + os.sep
    vanished = []
    for uri, node in existing.items():
        origin = str(node.get("source") or "")
        if not node["is_dir"] and uri not in seen and origin.startswith(prefix) and origin not in alive:
            vanished.append(uri)
    _delete_files(store, vanished)
    return len(vanished)


def _sources(existing: dict[str, dict[str, Any]], uris: list[str]) -> set[str]:
    return {str(existing[uri].get("source") or "") for uri in uris if uri in existing}


def _delete_files(store: LanceStore, uris: list[str]) -> None:
    store.delete_records_by_uri(uris)
    store.delete_nodes_by_uri(uris)


def refresh_directories(
    store: LanceStore,
    embedder: Embedder,
    top: VikingURI,
    *,
    tags: Sequence[str] = (),
    source: Path | None = None,
    folders: dict[str, str] | None = None,
    limits: IngestLimits = DEFAULT_LIMITS,
    force: bool = False,
) -> int:
    """Regenerate L0/L1 of every directory in ``top``'s subtree (``top`` may be a file) and above it.

    Directories that hold files but have no node yet get one; directories left empty by
    removed files are deleted (when they came from ``source``). A directory without a
    ``source`` gets its local folder from ``folders`` (``_local_folders``). Returns how many
    directories were (re)written.
    """
    with store.write_lock():
        columns = [
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
        subtree = store.nodes_below(top, columns=columns)
        ancestors = []
        cursor = top.parent
        while cursor is not None and not cursor.is_root:
            ancestors.append(cursor)
            cursor = cursor.parent
        names = [str(a) for a in ancestors]
        subtree.extend(store.nodes_with_children(names, columns=columns))
        nodes = {row["uri"]: row for row in subtree}
        # Descriptions live in the content column of directories: fetch only those, never
        # the content of files.
        # Descriptions of the subtree and of the ancestors and their children read above.
        for uri_text, description in store.directory_descriptions(top, names).items():
            if uri_text in nodes:
                nodes[uri_text]["content"] = description
        directories: set[str] = {str(a) for a in ancestors}
        for uri_text, row in nodes.items():
            uri = _from_text(uri_text)
            if not uri.is_within(top):
                continue  # a sibling listed only for an ancestor's overview
            if row["is_dir"]:
                directories.add(uri_text)
            parent = uri.parent
            while parent is not None and parent.is_within(top):
                directories.add(str(parent))
                parent = parent.parent
        # viking:// holds the scopes; it is no directory of the store (an earlier full reindex
        # stored one, which glob and ls then listed: it goes at the next one)
        directories.discard(SCHEME)
        if top.is_root and SCHEME in nodes:
            store.delete_nodes_by_uri([SCHEME])
            store.delete_records_by_uri([SCHEME])
        children: dict[str, list[dict[str, Any]]] = {}
        for row in nodes.values():
            if row.get("parent_uri"):
                children.setdefault(row["parent_uri"], []).append(row)
        now = datetime.now(UTC)
        ordered = sorted(directories, key=lambda u: -u.count("/"))
        new_nodes: list[dict[str, Any]] = []
        new_records: list[dict[str, Any]] = []
        inputs: list[str] = []
        to_delete: list[str] = []
        source_prefix = utf8_text(str(source)) if source is not None else None
        # Deepest first: a directory's summary reads its children's.
        writer = limits.summary_writer
        for uri_text in ordered:
            uri = _from_text(uri_text)
            kids = sorted(children.get(uri_text, []), key=lambda r: (not r["is_dir"], r["name"]))
            node = nodes.get(uri_text)
            if not kids and node is not None and source_prefix and uri.depth >= 2:
                if str(node.get("source") or "").startswith(source_prefix):
                    to_delete.append(uri_text)  # emptied by files that vanished from the source
                    parent_key = node.get("parent_uri")
                    if parent_key:
                        children[parent_key] = [s for s in children.get(parent_key, []) if s["uri"] != uri_text]
                    continue
            draft = _DirectoryDraft.of(uri, node, kids, limits)
            if writer is not None and draft.wants_writer:
                writer.pending.add(uri_text)  # written by the LLM once the write lock is released
            within = uri.is_within(top)
            dir_tags = list(tags) if within else list((node or {}).get("tags") or [])
            latest = max((k["updated_at"] for k in kids if k.get("updated_at")), default=None)
            changed = (
                force
                or not draft.same_entries
                or sorted((node or {}).get("tags") or []) != sorted(dir_tags)
                or (latest is not None and (node or {}).get("updated_at") != latest)
            )
            row = node_row(
                uri,
                is_dir=True,
                content=draft.description or None,
                abstract=draft.abstract,
                overview=draft.overview,
                size=0,
                created_at=(node or {}).get("created_at") or now,
                updated_at=latest or (node or {}).get("updated_at") or now,
                tags=dir_tags,
                content_hash=draft.stored_hash,
                source=(node or {}).get("source")
                or ((folders or {}).get(uri_text) or _dir_source(source, top, uri) if within else ""),
            )
            # Keep this directory's fresh summary for its parent's overview.
            nodes[uri_text] = row
            parent_key = row["parent_uri"]
            if parent_key:
                siblings = children.setdefault(parent_key, [])
                children[parent_key] = [s for s in siblings if s["uri"] != uri_text] + [row]
            if not changed:
                continue
            new_nodes.append(row)
            if uri.depth >= 2:  # scope roots contain everything: a hit on them tells nothing
                for record, embed in _directory_records(draft, row):
                    new_records.append(record)
                    inputs.append(embed)
        if to_delete:
            store.delete_records_by_uri(to_delete)
            store.delete_nodes_by_uri(to_delete)
        _store_directories(store, embedder, new_nodes, new_records, inputs)
        return len(new_nodes)


def _store_directories(
    store: LanceStore,
    embedder: Embedder,
    nodes: list[dict[str, Any]],
    records: list[dict[str, Any]],
    inputs: list[str],
) -> None:
    """Write directories' nodes and their L0/L1 records, embedding ``inputs`` (one a record)."""
    if records:
        refreshed = sorted({r["uri"] for r in records})
        _embed_rows(store, embedder, records, inputs, refreshed)
        store.replace_records(refreshed, records, embedder.dimension)
    if nodes:
        store.upsert_nodes(nodes)


@dataclass(slots=True)
class _DirectoryDraft:
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
    ) -> _DirectoryDraft:
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


def _directory_records(draft: _DirectoryDraft, row: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """The L0 and L1 records of a directory (``row`` is its node), each with the text embedded."""
    uri = draft.uri
    return [
        (
            record_row(
                uri,
                level,
                0,
                line_start=0,
                line_end=0,
                text=text,
                abstract=row["abstract"],
                created_at=row["created_at"],
                updated_at=row["updated_at"],
                tags=list(row.get("tags") or []),
            ),
            embed,
        )
        for level, text, embed in (
            (0, row["abstract"], f"{uri.name}\n{row['abstract']}"),
            (1, row["overview"], navigation_text(uri.name, draft.summaries)),
        )
    ]


def write_llm_summaries(store: LanceStore, embedder: Embedder, limits: IngestLimits) -> int:
    """Have the configured LLM write the summaries of the directories the write left to it
    (``limits.summary_writer.pending``); how many it wrote.

    It runs after the write, with the store's lock released while the model thinks: deepest
    first, the directories of one depth side by side. Under the lock again, a text is stored
    only if the directory's entries are still those it was made from (another process may
    have changed them meanwhile: then its own write asks again). Each directory the model
    wrote makes its parent's summary stale, so the parent is written next.
    """
    writer = limits.summary_writer
    if writer is None:
        return 0
    written = 0
    scope_roots: set[str] = set()
    while writer.pending and not writer.failed:
        depth = max(uri.count("/") for uri in writer.pending)
        level = sorted(uri for uri in writer.pending if uri.count("/") == depth)
        writer.pending.difference_update(level)
        drafts = [d for d in (_read_draft(store, uri, limits) for uri in level) if d is not None and d.wants_writer]
        texts = _ask_writer(writer, drafts, limits)
        with store.write_lock():
            meta = store.meta()
            if (
                meta.get("embedder") != embedder.identity
                or (meta.get("records_table") or RECORDS) != store.records_table
            ):
                break  # a reindex in another process moved the records meanwhile: the next write asks again
            rows, records, inputs = [], [], []
            for draft, text in zip(drafts, texts, strict=True):
                now = _read_draft(store, str(draft.uri), limits)
                if text is None or now is None or now.node is None or now.digest != draft.digest:
                    continue
                # The node as it is now (another write may have changed its tags or times): only the texts are new.
                row = {**now.node, "abstract": text[0], "overview": text[1], "content_hash": LLM_WRITTEN + now.digest}
                rows.append(row)
                for record, embed in _directory_records(now, row):
                    records.append(record)
                    inputs.append(embed)
                parent = draft.uri.parent
                if parent is not None and parent.depth >= 2:
                    writer.pending.add(str(parent))
                elif parent is not None and not parent.is_root:
                    scope_roots.add(str(parent))
            _store_directories(store, embedder, rows, records, inputs)
            written += len(rows)
    if scope_roots:
        _refresh_scope_roots(store, sorted(scope_roots), limits)
    return written


def _refresh_scope_roots(store: LanceStore, uris: list[str], limits: IngestLimits) -> None:
    """The extractive summaries of scope roots whose folders the LLM just summed up anew (a
    scope root's overview lists its folders' abstracts; it has no records)."""
    with store.write_lock():
        roots = [draft for draft in (_read_draft(store, uri, limits) for uri in uris) if draft is not None]
        store.upsert_nodes(
            [
                {**root.node, "abstract": root.abstract, "overview": root.overview, "content_hash": root.digest}
                for root in roots
                if root.node is not None and not root.same_entries
            ]
        )


def _read_draft(store: LanceStore, uri: str, limits: IngestLimits) -> _DirectoryDraft | None:
    """The summary draft of the directory at ``uri`` as the store holds it now (None: not a directory)."""
    node = store.get_node(uri, columns=NODE_COLUMNS)
    if node is None or not node["is_dir"]:
        return None
    kids = store.children_of(uri, columns=["uri", "name", "is_dir", "abstract"])
    kids.sort(key=lambda r: (not r["is_dir"], r["name"]))
    return _DirectoryDraft.of(_from_text(uri), node, kids, limits)


def _ask_writer(
    writer: DirectorySummaryWriter, drafts: list[_DirectoryDraft], limits: IngestLimits
) -> list[tuple[str, str] | None]:
    """The LLM's (abstract, overview) of each draft, None where it failed; several at a time."""
    if not drafts:
        return []

    def write(draft: _DirectoryDraft) -> tuple[str, str] | None:
        return writer.write(
            str(draft.uri),
            draft.uri.name,
            draft.description,
            draft.summaries,
            draft.abstract if draft.description else "",
            (limits.abstract_max_chars, limits.overview_max_chars),
        )

    answers: list[tuple[str, str] | None] = [None] * len(drafts)

    def answer(index: int) -> None:
        try:
            answers[index] = write(drafts[index])
        except Exception as exc:  # noqa: BLE001 - in a thread it would only be printed, as a traceback
            writer.give_up(f"unexpected {type(exc).__name__}")

    # Daemon threads, SUMMARY_WRITERS at a time: after Ctrl-C the process ends at once instead
    # of waiting for the answers still on their way (a pool's threads are joined at exit).
    for start in range(0, len(drafts), SUMMARY_WRITERS):
        threads = [
            threading.Thread(target=answer, args=(index,), daemon=True)
            for index in range(start, min(start + SUMMARY_WRITERS, len(drafts)))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return answers


def _from_text(uri: str) -> VikingURI:
    return VikingURI(tuple(part for part in uri[len("viking://") :].split("/") if part))


def _dir_source(source: Path | None, top: VikingURI, uri: VikingURI) -> str:
    if source is None or source.is_file():
        return ""
    rel = uri.relative_to(top)
    return utf8_text(str(source / rel) if rel else str(source))
