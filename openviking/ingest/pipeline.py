"""The add flow: mirror a local tree, or one document given as text, under a URI and index
what changed.

The flow is idempotent and resumable. It gives each walked file its URI, passes over files
that look unchanged, writes the nodes of new folders first (so an add stopped midway leaves
files that ls and glob reach), has ``files`` read, embed and write the rest in batches,
removes what vanished from the source, and at the end has ``directories`` regenerate the
L0/L1 of every directory it touched, bottom-up.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from openviking.contract.results import AddResult
from openviking.errors import AlreadyExistsError, FailedPreconditionError
from openviking.store.lance import LanceStore
from openviking.system.ostext import has_undecodable, utf8_text
from openviking.values.uri import VikingURI, is_control_char, looks_like_a_drive, parse

from .converting import Documents
from .directories import refresh_directories
from .files import Appender, ProgressCallback, looks_unchanged, prepare_file, prepare_text, write_batch, write_files
from .limits import DEFAULT_LIMITS, IngestLimits
from .rows import node_row
from .walk import SourceFile, WalkResult, recorded_under, walk

if TYPE_CHECKING:
    from openviking.models.embedder import Embedder

__all__ = ["check_parents_are_directories", "ingest_tree", "safe_rel", "write_document"]

# A file to add, where it goes, and its stored node (None: new).
_Target = tuple[SourceFile, VikingURI, dict[str, Any] | None]


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
    recorded_as: PurePath | None = None,
) -> AddResult:
    """Mirror ``source`` (a file or a folder) at ``root`` and index what changed.

    ``walked`` is the walk of ``source`` when the caller already made it (with the same
    include/exclude globs); otherwise it is made here. ``recorded_as`` is the path the nodes
    record as their source instead of ``source`` (an upload's path on the client's machine).
    Files that vanished from the source are removed only when it is named by an absolute path:
    a bare name (upstream's client uploads a folder as just ``kb``) is no source's identity,
    since an unrelated upload may share it, so such an add only adds and updates.
    """
    started = time.monotonic()
    documents = Documents()  # before anything is written: it checks the conversion's settings
    if walked is None:
        walked = walk(source, include, exclude)
    origin: PurePath = source
    if recorded_as is not None:
        walked, origin = recorded_under(walked, source, recorded_as), recorded_as
    result = AddResult(root_uri=str(root))
    result.skipped_files = [{"path": rel, "reason": reason, "code": code} for rel, reason, code in walked.skipped]
    result.skipped = len(result.skipped_files)
    single_file = source.is_file()
    targets = [(item, root if single_file else root.join(safe_rel(item.rel))) for item in walked.files]
    targets = _without_name_clashes(targets, result)
    appender = Appender(store)
    existing = _stored_nodes(store, root, targets, appender)
    check_parents_are_directories(store, root)
    _refuse_another_kind(existing.get(str(root)), root, single_file)

    tag_list = list(tags)
    now = datetime.now(UTC)
    changed = _changed_targets(targets, existing, tag_list, result)
    folders = _local_folders(targets, root)
    _placeholder_directories(store, root, [uri for _, uri, _ in changed], existing, folders, tag_list, now, appender)
    # A file stored before that cannot be added now (it became binary, or unreadable) no longer
    # mirrors its source: it goes, as a file that grew past the size limit or vanished does.
    dropped: list[str] = []
    if not single_file:
        result.warnings.extend(_renames(root, [(item, uri) for item, uri, node in changed if node is None]))
    try:
        # Documents convert in a worker process while this one embeds what came before them.
        documents.prefetch((item, node.get("content_hash") if node else None) for item, _, node in changed)
        prepared = (
            prepare_file(item, uri, node, tag_list, now, limits, result, dropped, documents)
            for item, uri, node in changed
        )
        total_bytes = sum(item.size for item, _, _ in changed)
        write_files(store, embedder, (p for p in prepared if p is not None), result, total_bytes, progress, appender)
    finally:
        documents.close()

    if single_file and not walked.files and result.skipped == 0:
        result.skipped += 1
    seen = {str(uri) for _, uri in targets}
    alive = {item.label for item, _ in targets}
    if origin.is_absolute():
        result.removed = _remove_vanished(
            store, existing, seen - set(dropped), alive - _sources(existing, dropped), origin
        )
    result.directories = refresh_directories(
        store,
        embedder,
        root,
        tags=tag_list,
        source=origin,
        folders=folders,
        limits=limits,
    )
    if result.added or result.updated or result.removed or result.directories:
        store.optimize()
    else:
        store.ensure_indexes()  # adding an unchanged tree again brings an older store's indexes up to date
    result.seconds = time.monotonic() - started
    return result


@dataclass(frozen=True, slots=True)
class TextDocument:
    """A document given as text: where it goes, its text, its tags (None: the stored ones), the
    time it is of (None: now; a memory's is the day it tells of), and what it came from."""

    uri: VikingURI
    text: str
    tags: Sequence[str] | None = None
    told_at: datetime | None = None
    source: str = ""


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
    return write_documents(store, embedder, [TextDocument(uri, text, tags)], limits=limits)


def write_documents(
    store: LanceStore, embedder: Embedder, documents: Sequence[TextDocument], *, limits: IngestLimits = DEFAULT_LIMITS
) -> AddResult:
    """Store and index documents given as text in one batch, then refresh their parents once.

    A document whose text and tags are the ones stored is left as it is (``unchanged``).
    """
    started = time.monotonic()
    now = datetime.now(UTC)
    result = AddResult(root_uri=str(documents[0].uri) if documents else "")
    prepared = []
    for document in documents:
        uri = document.uri
        data = document.text.encode("utf-8")
        node = store.get_node(str(uri), columns=["uri", "is_dir", "created_at", "content_hash", "tags"])
        if node is not None and node["is_dir"]:
            raise AlreadyExistsError(f"{uri} already exists as a directory", details={"uri": str(uri)})
        check_parents_are_directories(store, uri)
        content_hash = hashlib.sha256(data).hexdigest()
        stored_tags = list((node or {}).get("tags") or [])
        tags = stored_tags if document.tags is None else list(document.tags)
        if node is not None and node.get("content_hash") == content_hash and sorted(stored_tags) == sorted(tags):
            result.unchanged += 1
            continue
        told = (document.told_at or now).timestamp()
        item = SourceFile(Path(uri.name), uri.name, len(data), told)
        created = node["created_at"] if node is not None and node.get("created_at") else now
        text, label = document.text, document.source
        prepared.append(prepare_text(item, uri, text, content_hash, created, limits, source_label=label, tags=tags))
        if node is None:
            result.added += 1
        else:
            result.updated += 1
    if prepared:
        write_batch(store, embedder, prepared, result)
    # Also when unchanged: a write stopped before its folders were refreshed is finished by the
    # same call again (refreshing writes only what is out of date).
    tops = {str(documents[0].uri)} if len(documents) == 1 else {str(d.uri.parent or d.uri) for d in documents}
    for top in sorted(tops):
        result.directories += refresh_directories(store, embedder, parse(top), limits=limits)
    if result.added or result.updated or result.directories:
        store.optimize()
    result.seconds = time.monotonic() - started
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


def _stored_nodes(
    store: LanceStore, root: VikingURI, targets: list[tuple[SourceFile, VikingURI]], appender: Appender
) -> dict[str, dict[str, Any]]:
    """The nodes stored under ``root``, by URI, read under the write lock, where ``appender``
    starts: the targets without a node are the add's new files."""
    with store.write_lock():
        existing = {
            row["uri"]: row
            for row in store.nodes_below(
                root, columns=["uri", "is_dir", "content_hash", "created_at", "source", "tags", "size", "updated_at"]
            )
        }
        appender.start(root, existing)
    return existing


def _refuse_another_kind(root_node: dict[str, Any] | None, root: VikingURI, single_file: bool) -> None:
    """Refuse to add a folder where a file is stored, or a file where a directory is.

    Raises:
        AlreadyExistsError: ``root`` is stored as the other kind.
    """
    if root_node is not None and bool(root_node["is_dir"]) == single_file:
        kind = "directory" if root_node["is_dir"] else "file"
        raise AlreadyExistsError(
            f"{root} already exists as a {kind}",
            hint="Choose another target with to=, or remove it first with rm",
            details={"uri": str(root)},
        )


def _changed_targets(
    targets: list[tuple[SourceFile, VikingURI]], existing: dict[str, Any], tags: list[str], result: AddResult
) -> list[_Target]:
    """The targets that are new or may have changed, each with its stored node; ``result``
    counts the others as unchanged."""
    changed: list[_Target] = []
    for item, uri in targets:
        node = existing.get(str(uri))
        if node is not None and looks_unchanged(node, item, tags):
            result.unchanged += 1
            continue
        changed.append((item, uri, node))
    return changed


def _placeholder_directories(
    store: LanceStore,
    root: VikingURI,
    files: list[VikingURI],
    existing: dict[str, Any],
    folders: dict[str, str],
    tags: list[str],
    now: datetime,
    appender: Appender,
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
        local, folder = item.shown.parent, uri.parent
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
    order = sorted(targets, key=lambda target: (safe_rel(target[0].rel) != target[0].rel, target[0].rel))
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
        result.skipped_files.append({"path": item.rel, "reason": reason, "code": "NAME_CLASH"})
        result.skipped += 1
    return [(item, uri) for item, uri in targets if item.rel in kept]


def _parents(uri: VikingURI) -> Iterator[VikingURI]:
    parent = uri.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def safe_rel(rel: str) -> str:
    """The URI path of a file's local path ``rel`` below the folder added: a local name may hold
    characters a URI segment cannot (``\\``, ``?``, ``#``)."""
    return "/".join(_safe_name(part) for part in rel.split("/"))


def _renames(root: VikingURI, new: list[tuple[SourceFile, VikingURI]]) -> list[dict[str, str]]:
    """A warning for each new file, or folder of new files, whose URI spells its local name
    otherwise (``a#b.md`` is ``a_b.md``): once for a folder, not for each file in it."""
    said: dict[str, dict[str, str]] = {}
    for item, uri in new:
        local = item.shown.parts[-(item.rel.count("/") + 1) :]  # an archive's file: its name inside
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


def _remove_vanished(
    store: LanceStore,
    existing: dict[str, dict[str, Any]],
    seen: set[str],
    alive: set[str],
    source: PurePath,
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
    store.delete_nodes_by_uri(uris)  # nodes first: a node never stays without its records
    store.delete_records_by_uri(uris)
