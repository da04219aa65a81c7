"""Files: read and chunk each file, and write its node and records (their vectors follow).

A file whose bytes did not change is not analysed again, and a record whose text did not
change keeps its stored vector; the others wait for theirs (``vectors.py``), or, for a
reindex, get them before they are written. A batch's records are written before the nodes that
carry its files' content hashes, so a crash or Ctrl-C between the two only makes the next run
redo those files.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openviking.contract.results import AddResult
from openviking.documents.converted import ConversionFailed
from openviking.documents.places import place_of_marker
from openviking.origins.archives import archive_suffix
from openviking.store.lance import LanceStore
from openviking.values.uri import VikingURI

from .chunk import Chunk, chunk_document, chunk_text, text_lines
from .code import definitions, is_code
from .converting import Documents, document_kind, false_package, skipped
from .limits import DEFAULT_LIMITS, IngestLimits
from .rows import file_node, file_records, pend_rows, stored_uri
from .summary import file_summary, file_title
from .walk import SourceFile, decode_text, looks_binary

if TYPE_CHECKING:
    from openviking.models.embedder import Embedder

__all__ = [
    "Appender",
    "PreparedFile",
    "ProgressCallback",
    "looks_unchanged",
    "prepare_file",
    "prepare_text",
    "reembed_files",
    "write_batch",
    "write_files",
]

ProgressCallback = Callable[[int, int], None]
# Chunks written (embedded, for a reindex) per commit: large enough to keep the model busy, small
# enough that an interrupted run keeps most of its work.
BATCH_CHUNKS = 192
SNIFF_BYTES = 8192  # what is read of a file to tell whether it is binary


@dataclass(slots=True)
class PreparedFile:
    """A file read and analysed, ready to embed: what its node and records are made of."""

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
    document: str | None = None  # the kind of document its text was converted from
    raw: bytes | None = None  # a document's own bytes, kept with its node

    @property
    def updated_at(self) -> datetime:
        """The source's modification time, stored as the file's."""
        return datetime.fromtimestamp(self.source.mtime, UTC)


class Appender:
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

    def start(self, root: VikingURI, existing: dict[str, Any]) -> None:
        """Clear records under ``root`` that have no node: what a crash between a batch's records
        and its nodes leaves, or between a vanished file's node and its records (so also at the
        URIs of new files, which this add then appends to)."""
        if not self.store.has_records:
            self.versions = self.store.table_versions()
            return
        if not existing:
            # Nothing is stored under the root: whatever records are there are leftovers.
            if self.store.count_records_below(root):
                self.store.delete_records_below(root)
        else:
            leftovers = {row["uri"] for row in self.store.records_below(root, ["uri"])} - existing.keys()
            if leftovers:
                self.store.delete_records_by_uri(sorted(leftovers))
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


def looks_unchanged(node: dict[str, Any], item: SourceFile, tags: list[str]) -> bool:
    """True when the stored ``node`` came from ``item`` as it is now (same source, tags, size
    and modification time): the file is not even read."""
    if node.get("is_dir") or node.get("source") != item.label:
        return False
    if sorted(node.get("tags") or []) != sorted(tags) or node.get("size") != item.size:
        return False
    stored = node.get("updated_at")
    return stored is not None and abs(stored.timestamp() - item.mtime) < 0.002


def prepare_file(
    item: SourceFile,
    uri: VikingURI,
    node: dict[str, Any] | None,
    tags: list[str],
    now: datetime,
    limits: IngestLimits,
    result: AddResult,
    dropped: list[str],
    documents: Documents | None = None,
) -> PreparedFile | None:
    """Read ``item`` (stored as ``node``, None when new) and analyse it, a document converted
    (by ``documents``); None when it is skipped (binary, unreadable, a document that cannot be
    read: its URI goes into ``dropped`` if it was stored) or its bytes did not change.
    ``result`` counts it either way."""

    def skip(entry: dict[str, str]) -> None:
        result.skipped += 1
        result.skipped_files.append(entry)
        if node is not None:
            dropped.append(str(uri))

    def unreadable(failure: ConversionFailed) -> None:
        entry = skipped(item, failure.code, failure.reason)
        skip(entry)
        # A document that cannot be read is news (a binary file is not): it is said too.
        result.warnings.append({"path": item.rel, "warning": f"not added: {entry['reason']}", "code": failure.code})

    data, reason = _read(item)
    if reason:
        skip({"path": item.rel, "reason": reason, "code": "UNREADABLE"})
        return None
    kind = document_kind(data, item)
    if kind is None:
        false = false_package(data, item)
        if false is not None:
            unreadable(false)
            return None
        if looks_binary(data[:SNIFF_BYTES]):
            archive = archive_suffix(item.path.name) is not None
            reason = "an archive: add it on its own to add what it holds" if archive else "binary"
            skip({"path": item.rel, "reason": reason, "code": "ARCHIVE" if archive else "BINARY"})
            return None
    content_hash = hashlib.sha256(data).hexdigest()
    if (
        node is not None
        and node.get("content_hash") == content_hash
        and sorted(node.get("tags") or []) == sorted(tags)
        and node.get("source") == item.label
    ):
        result.unchanged += 1
        return None
    created = node["created_at"] if node is not None and node.get("created_at") else now
    if kind is not None:
        try:
            converted = (documents or Documents()).convert(item, kind, data)
        except ConversionFailed as exc:
            unreadable(exc)
            return None
        result.warnings.extend({"path": item.rel, "warning": warning} for warning in converted.warnings)
        document = prepare_text(
            item, uri, converted.text, content_hash, created, limits, source_label=item.label, tags=tags,
            document=kind, title=converted.title,
        )  # fmt: skip
        document.raw = data
        document.is_new = node is None
        _count(result, node)
        return document
    text, encoding = decode_text(data)
    if encoding is not None:
        result.warnings.append({"path": item.rel, "warning": f"not UTF-8: read as {encoding}"})
    elif "\ufffd" in text and "\ufffd".encode() not in data:
        bad = text.count("\ufffd")
        result.warnings.append(
            {
                "path": item.rel,
                "warning": f"not UTF-8: {bad} undecodable byte sequence(s) replaced by U+FFFD "
                "(convert it first, e.g. iconv -f ENCODING -t utf-8)",
            }
        )
    prepared = prepare_text(item, uri, text, content_hash, created, limits, source_label=item.label, tags=tags)
    prepared.is_new = node is None
    _count(result, node)
    return prepared


def _count(result: AddResult, node: dict[str, Any] | None) -> None:
    if node is None:
        result.added += 1
    else:
        result.updated += 1


def _read(item: SourceFile) -> tuple[bytes, str]:
    """The bytes of ``item``, and why it cannot be read ("" when it can)."""
    try:
        return item.path.read_bytes(), ""
    except OSError as exc:
        return b"", f"cannot read: {exc.strerror}"


def prepare_text(
    item: SourceFile,
    uri: VikingURI,
    text: str,
    content_hash: str,
    created: datetime,
    limits: IngestLimits,
    *,
    source_label: str = "",
    tags: Sequence[str] = (),
    document: str | None = None,
    title: str | None = None,
) -> PreparedFile:
    """A file ready to embed: its title, summary and chunks. ``document``: the kind of document
    ``text`` was converted from (then it is chunked at its places), and ``title`` the one it names."""
    prepared = PreparedFile(item, uri, text, content_hash, created, source_label=source_label, tags=list(tags))
    prepared.document = document
    if document is not None:
        plain = without_markers(text)
        prepared.title = title or file_title(plain, uri.name)
        prepared.summary = file_summary(plain, uri.name, limits.abstract_max_chars, title=prepared.title)
        prepared.chunks = chunk_document(text)
        return prepared
    prepared.is_code = is_code(uri.name)  # its first line may be a comment, not a heading
    defined = definitions(text_lines(text), uri.name) if prepared.is_code else None  # read once, used twice
    prepared.title = file_title(text, uri.name)
    prepared.summary = file_summary(text, uri.name, limits.abstract_max_chars, title=prepared.title, defined=defined)
    prepared.chunks = chunk_text(text, uri.name, defined=defined)
    return prepared


def without_markers(text: str) -> str:
    """A converted document's text without its place markers (what its summary reads)."""
    return "\n".join(line for line in text.split("\n") if place_of_marker(line) is None)


def write_files(
    store: LanceStore,
    embedder: Embedder,
    files: Iterable[PreparedFile],
    result: AddResult,
    total_bytes: int,
    progress: ProgressCallback | None,
    appender: Appender | None = None,
    *,
    embed_now: bool = False,
) -> None:
    """Write ``files`` in batches of about ``BATCH_CHUNKS`` chunks, reporting progress (in
    bytes); ``embed_now``: with their vectors (see ``write_batch``)."""
    total = total_bytes or 1
    done = 0
    if progress:
        progress(0, total)
    batch: list[PreparedFile] = []
    chunks = 0
    for prepared in files:
        batch.append(prepared)
        chunks += len(prepared.chunks)
        if chunks >= BATCH_CHUNKS:
            done += write_batch(store, embedder, batch, result, appender, embed_now=embed_now)
            if progress:
                progress(done, total)
            batch, chunks = [], 0
    if batch:
        write_batch(store, embedder, batch, result, appender, embed_now=embed_now)
    if progress:
        progress(total, total)


def write_batch(
    store: LanceStore,
    embedder: Embedder,
    batch: list[PreparedFile],
    result: AddResult,
    appender: Appender | None = None,
    *,
    embed_now: bool = False,
) -> int:
    """Write one batch of files, their records waiting for the vectors that are not stored
    already (``embed_now``: embedded first, as a reindex does); returns the bytes it covered."""
    uris = [str(p.uri) for p in batch]
    rows: list[dict[str, Any]] = []
    inputs: list[str] = []
    windows: list[int | None] = []
    for p in batch:
        records, embedded, spans = file_records(
            p.uri,
            p.chunks,
            title=p.title,
            summary=p.summary,
            is_code=p.is_code,
            created_at=p.created_at,
            updated_at=p.updated_at,
            tags=p.tags,
            document=p.document is not None,
        )
        rows.extend(records)
        inputs.extend(embedded)
        windows.extend(spans)
    # New files have no stored vectors to reuse: no lookup (it too scans the unoptimized rows).
    all_new = appender is not None and appender.active and all(p.is_new for p in batch)
    written = pend_rows(store, embedder, rows, inputs, [] if all_new else uris, windows, embed_now=embed_now)
    if embed_now:
        result.records_embedded += written
    nodes = [
        file_node(
            p.uri,
            text=p.text,
            summary=p.summary,
            size=p.source.size,
            created_at=p.created_at,
            updated_at=p.updated_at,
            tags=p.tags,
            content_hash=p.content_hash,
            source=p.source_label,
            raw=p.raw,
        )
        for p in batch
    ]
    covered = sum(p.source.size for p in batch)
    with store.write_lock():  # records, then nodes: a crash in between leaves records that start() clears
        undisturbed = appender is not None and appender.nobody_else_wrote()
        if appender is not None and not undisturbed:
            # Another writer wrote since this add read the store: files it already wrote as
            # this add would are not written again, and are reported as unchanged.
            batch = _not_written_meanwhile(store, batch, result)
            kept = {str(p.uri) for p in batch}
            uris = [uri for uri in uris if uri in kept]
            rows = [row for row in rows if row["uri"] in kept]
            nodes = [node for node in nodes if node["uri"] in kept]
            all_new = False
        if all_new and undisturbed:
            store.append_records(rows, embedder.dimension)
            store.insert_nodes(nodes)
        else:
            store.replace_records(uris, rows, embedder.dimension)
            store.upsert_nodes(nodes)
        if appender is not None:
            appender.wrote()
    return covered


def _not_written_meanwhile(store: LanceStore, batch: list[PreparedFile], result: AddResult) -> list[PreparedFile]:
    """The files of ``batch`` whose stored node is not already what this add would write;
    ``result`` counts the others as unchanged (and a file new to this add that another writer
    stored otherwise as updated)."""
    stored = {
        node["uri"]: node
        for node in store.nodes_by_uri([str(p.uri) for p in batch], ["uri", "content_hash", "tags", "source"])
    }
    left = []
    for p in batch:
        node = stored.get(str(p.uri))
        same = (
            node is not None
            and node["content_hash"] == p.content_hash
            and sorted(node.get("tags") or []) == sorted(p.tags)
            and (node.get("source") or "") == p.source_label
        )
        if same:
            result.unchanged += 1
        if same or node is not None and p.is_new:
            if p.is_new:
                result.added -= 1
            else:
                result.updated -= 1
        if not same:
            if node is not None and p.is_new:
                result.updated += 1
            left.append(p)
    return left


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

    def prepared() -> Iterator[PreparedFile]:
        for node in nodes:
            uri = stored_uri(node["uri"])
            updated = node.get("updated_at") or datetime.now(UTC)
            item = SourceFile(Path(uri.name), uri.name, int(node.get("size") or 0), updated.timestamp())
            result.updated += 1
            yield prepare_text(
                item, uri, node.get("content") or "", node.get("content_hash") or "", node.get("created_at") or updated,
                limits, source_label=node.get("source") or "", tags=node.get("tags") or [],
            )  # fmt: skip

    total = sum(int(n.get("size") or 0) for n in nodes)
    write_files(store, embedder, prepared(), result, total, progress, embed_now=True)
    return result
