"""Filesystem writes: mkdir, rm, mv, and a file's text written. Each keeps nodes, records and
relations consistent and regenerates the L0/L1 of the directories it touched."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from openviking.contract.results import MkdirResult, MoveResult, RemoveResult, WriteResult
from openviking.errors import (
    AlreadyExistsError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
)
from openviking.store import relations
from openviking.store.lance import LanceStore
from openviking.store.schema import NODE_ALL_COLUMNS
from openviking.values.arguments import describe
from openviking.values.uri import VikingURI, context_type_of, shell_word

from .directories import refresh_directories
from .limits import DEFAULT_LIMITS, IngestLimits
from .pipeline import check_parents_are_directories, write_document
from .rows import node_row, record_id

if TYPE_CHECKING:
    from openviking.models.embedder import Embedder

__all__ = [
    "MOVE_IN_PROGRESS",
    "interrupted_move",
    "make_directory",
    "move",
    "refuse_while_a_move_is_unfinished",
    "remove",
]

MOVE_IN_PROGRESS = "move_in_progress"  # meta key: [source, target] of a move being written
LAST_MOVE = "last_move"  # meta key: [source, target] of the last move finished


def make_directory(
    store: LanceStore,
    embedder: Embedder,
    uri: VikingURI,
    description: str | None = None,
    *,
    limits: IngestLimits = DEFAULT_LIMITS,
) -> MkdirResult:
    """Create an empty directory (and its parents); a description becomes its L0 abstract.

    Raises:
        InvalidArgumentError: the root or a scope root.
        AlreadyExistsError: something is stored at ``uri`` already.
        FailedPreconditionError: a parent is a file.
    """
    if uri.depth < 2:
        raise InvalidArgumentError(
            f"Cannot create {uri}: scope roots exist already",
            hint="Name a directory below it, e.g. viking://resources/notes",
        )
    with store.write_lock():
        existing = store.get_node(str(uri), columns=["uri", "is_dir"])
        if existing is not None:
            if existing["is_dir"]:  # a mkdir killed before its parents' summaries were written
                refresh_directories(store, embedder, uri, limits=limits)
            kind = "directory" if existing["is_dir"] else "file"
            raise AlreadyExistsError(f"{uri} already exists (a {kind})", details={"uri": str(uri)})
        check_parents_are_directories(store, uri)
        now = datetime.now(UTC)
        store.upsert_nodes(
            [
                node_row(
                    uri,
                    is_dir=True,
                    content=(description or "").strip() or None,
                    abstract=None,
                    overview=None,
                    size=0,
                    created_at=now,
                    updated_at=now,
                    tags=[],
                    content_hash="",
                    source="",
                )
            ]
        )
        refresh_directories(store, embedder, uri, limits=limits)
    return MkdirResult(uri=str(uri), created=True)


def remove(
    store: LanceStore,
    embedder: Embedder,
    uri: VikingURI,
    *,
    recursive: bool = False,
    limits: IngestLimits = DEFAULT_LIMITS,
) -> RemoveResult:
    """Delete a file, or a directory with ``recursive``, with its records and relations.

    Removing what does not exist succeeds and reports 0 (it also clears any record left
    behind at that URI), as upstream's ``rm`` does.

    Raises:
        InvalidArgumentError: the root or a scope root.
        FailedPreconditionError: a directory without ``recursive``.
    """
    if uri.is_root:
        raise InvalidArgumentError("Refusing to remove viking:// (everything)", hint="Remove a directory below a scope")
    if uri.depth == 1:
        raise InvalidArgumentError(
            f"Refusing to remove the scope root {uri}",
            hint=f"Remove what is below it, e.g. openviking rm -r {uri}/<name> (see openviking ls {shell_word(uri)})",
            details={"uri": str(uri)},
        )
    with store.write_lock():
        node = store.get_node(str(uri), columns=["uri", "is_dir"])
        if node is not None and node["is_dir"] and not recursive:
            raise FailedPreconditionError(
                f"Cannot remove directory without --recursive: {uri}",
                hint=f"openviking rm -r {uri}",
                details={"uri": str(uri)},
            )
        count = store.count_nodes(below=uri)
        # Nodes, then records: a kill in between leaves records without a node, which readers
        # never show and the next write or doctor --repair clears, never a node without records.
        store.delete_nodes_below(uri)
        store.delete_records_below(uri)
        relations.remove_links_within(store, uri)
        parent = uri.parent
        # Also when nothing was left at ``uri``: an rm killed after its deletes left the
        # parent's summary naming what went, and the same rm again refreshes it.
        above = None if parent is None or parent.is_root else store.get_node(str(parent), columns=["uri", "is_dir"])
        if above is not None and above["is_dir"]:
            refresh_directories(store, embedder, uri, limits=limits)
    if count:
        store.optimize()
    return RemoveResult(uri=str(uri), removed=count)


def move(
    store: LanceStore,
    embedder: Embedder,
    source: VikingURI,
    target: VikingURI,
    *,
    limits: IngestLimits = DEFAULT_LIMITS,
) -> MoveResult:
    """Move a file or a directory tree to ``target``; records keep their vectors.

    The move is written down in the store's meta before it starts and crossed out when it is
    done. One that was interrupted (Ctrl-C, kill -9) is finished by the next write, or by the
    same mv run again, so the store never stays with both trees, or with records of a tree
    that has no nodes.

    The same mv run again once it finished (the store's last move, nothing at ``source``
    and something at ``target``) moves nothing and reports 0, as ``rm`` of what is gone does.

    Raises:
        NotFoundError: nothing at ``source`` nor at ``target``.
        AlreadyExistsError: something at ``target``.
        InvalidArgumentError: a scope root.
        FailedPreconditionError: a parent of ``target`` is a file, or ``target`` is inside ``source``.
    """
    if source.depth < 2 or target.depth < 2:
        raise InvalidArgumentError("Scope roots and the root cannot be moved or replaced")
    if target.is_within(source):  # the tree holds the target below the source: no move can do that
        raise FailedPreconditionError(f"Cannot move {source} into itself ({target})", details={"uri": str(target)})
    with store.write_lock():
        meta = store.meta()
        if interrupted_move(store, meta) == (source, target):  # the same mv, run again to finish it
            moved = _finish_move(store, embedder, source, target, limits)
            return MoveResult(from_uri=str(source), to=str(target), moved=moved, resumed=True)
        refuse_while_a_move_is_unfinished(store, [None], meta)  # the store remembers one move at a time
        if store.get_node(str(source), columns=["uri"]) is None:
            done = meta.get(LAST_MOVE) == json.dumps([str(source), str(target)])
            if done and store.get_node(str(target), columns=["uri"]) is not None:
                # The same mv run again after it finished: nothing is left to do, as for rm.
                return MoveResult(from_uri=str(source), to=str(target), moved=0)
            raise NotFoundError(f"File not found: {source}", details={"uri": str(source)})
        if store.get_node(str(target), columns=["uri"]) is not None:
            raise AlreadyExistsError(
                f"{target} already exists",
                hint="Remove it first, or choose another target",
                details={"uri": str(target)},
            )
        check_parents_are_directories(store, target)
        store.set_meta({MOVE_IN_PROGRESS: json.dumps([str(source), str(target)])})
        moved = _finish_move(store, embedder, source, target, limits)
    store.optimize()
    return MoveResult(from_uri=str(source), to=str(target), moved=moved)


def interrupted_move(store: LanceStore, meta: dict[str, str] | None = None) -> tuple[VikingURI, VikingURI] | None:
    """(source, target) of a move that was started and not finished, else None (``meta``:
    the store's, when the caller has just read it)."""
    from openviking.values.uri import parse

    written = (store.meta() if meta is None else meta).get(MOVE_IN_PROGRESS) or ""
    if not written:
        return None
    source, target = json.loads(written)
    return parse(source), parse(target)


def refuse_while_a_move_is_unfinished(
    store: LanceStore, touching: Sequence[VikingURI | None], meta: dict[str, str] | None = None
) -> None:
    """Refuse a write to or around the source or target of an interrupted move (None: the
    whole store). Finishing the move for it could carry out a move the user meant to stop,
    and removing its half-made copy would then take the original with it.

    Raises:
        FailedPreconditionError: such a move is pending; its hint is the mv that finishes it.
    """
    pending = interrupted_move(store, meta)
    if pending is None:
        return
    source, target = pending
    if any(uri is None or _overlap(uri, source) or _overlap(uri, target) for uri in touching):
        raise FailedPreconditionError(
            f"A move from {source} to {target} was interrupted; finish it before changing what it touches",
            hint=f"openviking mv {shell_word(source)} {shell_word(target)}",
            details={"from": str(source), "to": str(target)},
        )


def _overlap(a: VikingURI, b: VikingURI) -> bool:
    return a.is_within(b) or b.is_within(a)


def _finish_move(
    store: LanceStore, embedder: Embedder, source: VikingURI, target: VikingURI, limits: IngestLimits
) -> int:
    """Move what is still at ``source`` to ``target`` and cross the move out. Each step can be
    done again: copies are upserts keyed by URI, and the old rows go only after the copies."""
    nodes = store.nodes_below(source, columns=NODE_ALL_COLUMNS)
    records = store.records_below(source)
    for row in nodes:
        new = _moved(row["uri"], source, target)
        row.update(
            uri=str(new),
            parent_uri=str(new.parent) if new.parent else None,
            name=new.name,
            depth=new.depth,
            context_type=new.context_type,
        )
    for row in records:
        new = _moved(row["uri"], source, target)
        row.update(
            id=record_id(str(new), int(row["level"]), int(row["chunk"])),
            uri=str(new),
            depth=new.depth,
            context_type=new.context_type,
        )
    # Records before nodes when copying, nodes before records when deleting: at every point
    # each file node has its records (see remove).
    if records:
        dimension = store.records_dimension()
        assert dimension is not None  # the records just read are in a records table
        store.replace_records(sorted({r["uri"] for r in records}), records, dimension)
    if nodes:
        store.upsert_nodes(nodes)
    store.delete_nodes_below(source)
    store.delete_records_below(source)
    relations.move_links(store, source, target)
    refresh_directories(store, embedder, source, limits=limits)
    refresh_directories(store, embedder, target, limits=limits)
    store.set_meta({MOVE_IN_PROGRESS: "", LAST_MOVE: json.dumps([str(source), str(target)])})
    return len(nodes)


def _moved(uri: str, source: VikingURI, target: VikingURI) -> VikingURI:
    rest = uri[len(str(source)) :].strip("/")
    return target.join(rest) if rest else target


WRITE_MODES = ("replace", "append", "create")


def write_file(
    store: LanceStore, embedder: Embedder, uri: VikingURI, text: str, mode: str, *, limits: IngestLimits
) -> WriteResult:
    """Replace a file's text, append to it, or create it (or replace it); it is indexed again and
    its directories' summaries follow.

    Raises:
        InvalidArgumentError: an unknown mode, or a scope root.
        NotFoundError: ``replace`` or ``append`` of a file that does not exist.
        AlreadyExistsError: ``uri`` is a directory.
    """
    if mode not in WRITE_MODES:
        raise InvalidArgumentError(
            f"mode must be one of: {', '.join(WRITE_MODES)} (got {describe(mode)})", details={"mode": describe(mode)}
        )
    if uri.depth < 2:
        raise InvalidArgumentError(f"{uri} is a scope root, not a file", hint="Name a file below it")
    node = store.get_node(str(uri), columns=["uri", "is_dir", "content"])
    if node is not None and node["is_dir"]:
        raise AlreadyExistsError(f"{uri} is a directory, not a file", details={"uri": str(uri), "type": "directory"})
    if node is None and mode != "create":
        raise NotFoundError(
            f"File not found: {uri}",
            hint="Write it with mode='create' to make it",
            details={"uri": str(uri), "type": "file"},
        )
    stored = str((node or {}).get("content") or "")
    written = stored + text if mode == "append" else text
    result = write_document(store, embedder, uri, written, tags=None, limits=limits)
    return WriteResult(
        uri=str(uri),
        context_type=context_type_of(str(uri)),
        mode=mode,
        written_bytes=len(text.encode("utf-8")),
        content_updated=bool(result.added or result.updated),
        created=bool(result.added),
    )
