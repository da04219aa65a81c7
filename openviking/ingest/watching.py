"""Watched sources kept in step with their files: each change added again through the add of
the folder it is in, a rename moved, the sources watched by a thread each.

A sync is the add itself (:func:`~openviking.ingest.pipeline.ingest_tree`), run on the deepest
folder that holds every changed path, with the walk of the whole source cut to that folder (so
the source's ``.gitignore`` files and globs apply as they do to the whole add): it re-reads
only files whose size or time changed, removes those that left the folder, and refreshes the
summaries of the folders above. It is idempotent, so a watcher killed at any point is finished
by the next sync, and a file deleted while it is read is skipped, then removed. Before it, a
file (or a folder of files) that left one path and holds the same bytes at a new one is moved,
so a rename keeps its vectors rather than being embedded again.

Changes come from the OS (inotify, FSEvents, ReadDirectoryChangesW through ``watchfiles``, the
Rust ``notify`` crate), debounced: a burst (an editor's atomic save, a ``git checkout``) is one
sync. With an interval (upstream's ``watch_interval``, in minutes), or where the OS cannot watch,
the whole source is checked at that interval instead, as on network filesystems that send no
events. Each watcher catches up in full when it starts, so changes made while nobody watched are
found.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openviking.contract.results import AddResult, WatchReport
from openviking.errors import NotFoundError, OpenVikingError
from openviking.store.schema import NODE_ALL_COLUMNS
from openviking.system.ostext import utf8_text
from openviking.values.timefilter import format_iso8601
from openviking.values.uri import VikingURI, parse

from .limits import IngestLimits
from .pipeline import ingest_tree, safe_rel
from .walk import WalkResult, walk
from .writes import interrupted_move, move, refuse_while_a_move_is_unfinished

if TYPE_CHECKING:
    from openviking.models.embedder import Embedder
    from openviking.store.lance import LanceStore

__all__ = ["DEFAULT_POLL_MINUTES", "Synced", "Watcher", "new_watch", "outcome", "sync_source"]

log = logging.getLogger("openviking.watch")

# Where the OS cannot watch a source, it is checked this often (minutes).
DEFAULT_POLL_MINUTES = 0.05
# A burst of changes is gathered until none came for STEP_MS, for at most DEBOUNCE_MS.
DEBOUNCE_MS = 800
STEP_MS = 100
# How often a watcher reads its source's state again (paused, resumed, removed, its interval).
STATE_SECONDS = 1.0
# How often a process looks for sources it does not watch yet, and for a claim another let go.
RESCAN_SECONDS = 2.0
# A sync that failed is tried again (in full) after this long.
RETRY_SECONDS = 5.0
# At most this many renames of one sync are moves; past them, the files are added again.
MAX_MOVES = 64


@dataclass(slots=True)
class Synced:
    """What one sync did: the add's counts, and the renames carried out as moves."""

    result: AddResult
    moved: int = 0
    full: bool = True

    def counts(self) -> dict[str, Any]:
        """The counts a watch records of its last sync."""
        r = self.result
        return {
            "added": r.added, "updated": r.updated, "removed": r.removed, "moved": self.moved,
            "unchanged": r.unchanged, "skipped": r.skipped, "seconds": round(r.seconds, 3),
        }  # fmt: skip

    @property
    def changed(self) -> bool:
        r = self.result
        return bool(r.added or r.updated or r.removed or self.moved)


def sync_source(
    store: LanceStore,
    embedder: Embedder,
    state: Mapping[str, Any],
    changed: Collection[Path] | None,
    *,
    limits: IngestLimits,
    store_dir: Path | None = None,
) -> Synced:
    """Bring the source of ``state`` (a watched source's stored state) into the store: in full
    (``changed`` None), or the folder that holds every path of ``changed``.

    Raises:
        NotFoundError: the source is not there (unmounted, or deleted): nothing is removed.
        FailedPreconditionError: an unfinished move outside the source touches it.
    """
    started = time.monotonic()
    source, root = Path(state["path"]), parse(state["to_uri"])
    tags = list(state.get("tags") or [])
    moved = _finish_interrupted_move(store, embedder, root, limits)
    if not source.exists():
        raise NotFoundError(
            f"The watched source {source} is not there: nothing was removed from {root}",
            hint=f"Mount or restore it, or stop watching it with delete_watch('{root}')",
            details={"path": str(source), "uri": str(root)},
        )
    if source.is_file():
        result = ingest_tree(store, embedder, source, root, tags=tags, limits=limits)
        return Synced(result, moved)
    walked = walk(source, state.get("include") or (), state.get("exclude") or (), store=store_dir)
    folder = source if changed is None else changed_folder(source, changed)
    rel = "/".join(utf8_text(part) for part in folder.relative_to(source).parts)
    below = _below(walked, rel) if rel else walked
    top = root.join(safe_rel(rel)) if rel else root
    moved += _move_renamed(store, embedder, top, below, limits)
    result = ingest_tree(store, embedder, folder, top, tags=tags, limits=limits, walked=below)
    result.root_uri = str(root)
    result.seconds = time.monotonic() - started
    return Synced(result, moved, full=not rel)


def new_watch(
    root: VikingURI,
    source: Path,
    *,
    include: Sequence[str],
    exclude: Sequence[str],
    tags: Sequence[str],
    interval: float | None,
    previous: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The state of ``source`` watched at ``root`` (``previous``: the one stored, whose creation
    time and pause it keeps)."""
    uri = str(root)
    return {
        "task_id": hashlib.sha256(uri.encode()).hexdigest()[:16],
        "to_uri": uri,
        "path": str(source),
        "watch_interval": interval,
        "is_active": bool((previous or {}).get("is_active", True)),
        "include": list(include),
        "exclude": list(exclude),
        "tags": list(tags),
        "created_at": (previous or {}).get("created_at") or format_iso8601(datetime.now(UTC)),
        "last_execution_time": None,
        "last_result": None,
        "last_error": None,
    }


def outcome(synced: Synced | None, error: OpenVikingError | None = None) -> dict[str, Any]:
    """The fields a watch records of a sync that ended now, with ``synced`` or with ``error``."""
    fields: dict[str, Any] = {"last_execution_time": format_iso8601(datetime.now(UTC))}
    if synced is not None:
        fields.update(last_result=synced.counts(), last_error=None)
    if error is not None:
        fields["last_error"] = f"{error.code}: {error.message}"
    return fields


def changed_folder(source: Path, changed: Iterable[Path]) -> Path:
    """The deepest folder of ``source`` that exists and holds every path of ``changed``."""
    folders = [path.parent for path in changed if path != source and path.is_relative_to(source)]
    if not folders or any(path == source for path in changed):
        return source
    common = Path(os.path.commonpath(folders))
    while common != source and not common.is_dir():
        common = common.parent
    return common if common.is_relative_to(source) else source


def _below(walked: WalkResult, rel: str) -> WalkResult:
    """The part of ``walked`` below the folder ``rel``, with paths relative to it."""
    prefix = rel + "/"
    files = [dataclasses.replace(f, rel=f.rel[len(prefix) :]) for f in walked.files if f.rel.startswith(prefix)]
    skipped = [(path[len(prefix) :], why, code) for path, why, code in walked.skipped if path.startswith(prefix)]
    return WalkResult(files, skipped)


def _finish_interrupted_move(store: LanceStore, embedder: Embedder, root: VikingURI, limits: IngestLimits) -> int:
    """Finish a move a killed sync left inside ``root``; refuse one outside it that touches it."""
    pending = interrupted_move(store)
    if pending is None:
        return 0
    if pending[0].is_within(root) and pending[1].is_within(root):
        return move(store, embedder, pending[0], pending[1], limits=limits).moved
    refuse_while_a_move_is_unfinished(store, [root])
    return 0


def _move_renamed(
    store: LanceStore, embedder: Embedder, top: VikingURI, walked: WalkResult, limits: IngestLimits
) -> int:
    """Move each stored file below ``top`` whose source path is gone and whose bytes are now at
    a path with no node (a folder of them as one move); how many moves were made."""
    nodes = store.nodes_below(top, columns=["uri", "is_dir", "source", "content_hash", "size"])
    stored = {row["uri"]: row for row in nodes}
    gone: dict[int, list[dict[str, Any]]] = {}
    for row in nodes:
        if not row["is_dir"] and row.get("source") and not os.path.lexists(row["source"]):
            gone.setdefault(int(row.get("size") or 0), []).append(row)
    if not gone:
        return 0
    pairs: list[tuple[dict[str, Any], VikingURI, Path]] = []
    taken: set[str] = set()
    for item in walked.files:
        uri = top.join(safe_rel(item.rel))
        candidates = gone.get(item.size)
        if not candidates or str(uri) in stored:
            continue
        digest = _digest(item.path)
        for row in candidates:
            if row["uri"] not in taken and row.get("content_hash") == digest:
                taken.add(row["uri"])
                pairs.append((row, uri, item.path))
                break
    moves = _as_moves(pairs, stored, nodes)
    for old, new, old_path, new_path in moves[:MAX_MOVES]:
        try:
            move(store, embedder, old, new, limits=limits)
        except OpenVikingError as exc:  # what moved meanwhile, or a target taken: added again instead
            log.info("rename of %s to %s is added again instead: %s", old, new, exc.message)
            continue
        _moved_sources(store, new, old_path, new_path)
    return min(len(moves), MAX_MOVES)


def _as_moves(
    pairs: list[tuple[dict[str, Any], VikingURI, Path]], stored: dict[str, dict[str, Any]], nodes: list[dict[str, Any]]
) -> list[tuple[VikingURI, VikingURI, str, str]]:
    """The moves that carry out ``pairs`` (a stored file, the URI and path its bytes are at now):
    one of a folder when every file stored below it went to one new folder under the same
    names, else one per file. Each is (from, to, the old local path, the new one)."""
    folders: dict[tuple[VikingURI, VikingURI], list[tuple[dict[str, Any], VikingURI, Path, int]]] = {}
    single: list[tuple[VikingURI, VikingURI, str, str]] = []
    for row, new, path in pairs:
        old = parse(row["uri"])
        tail = _common_tail(old.segments, new.segments)
        old_dir, new_dir = VikingURI(old.segments[: -tail or None]), VikingURI(new.segments[: -tail or None])
        if tail == 0 or min(old_dir.depth, new_dir.depth) < 2:
            single.append((old, new, row["source"], utf8_text(str(path))))
            continue
        folders.setdefault((old_dir, new_dir), []).append((row, new, path, tail))
    moves: list[tuple[VikingURI, VikingURI, str, str]] = []
    for (old_dir, new_dir), members in folders.items():
        row, _, path, tail = members[0]
        old_local, new_local = str(Path(row["source"]).parents[tail - 1]), str(path.parents[tail - 1])
        below = {n["uri"] for n in nodes if not n["is_dir"] and parse(n["uri"]).is_within(old_dir)}
        whole = below == {m[0]["uri"] for m in members} and str(new_dir) not in stored
        if whole and not os.path.lexists(old_local):
            moves.append((old_dir, new_dir, old_local, utf8_text(new_local)))
        else:
            single += [(parse(r["uri"]), n, r["source"], utf8_text(str(p))) for r, n, p, _ in members]
    return moves + single


def _common_tail(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """How many last segments ``a`` and ``b`` share."""
    count = 0
    while count < min(len(a), len(b)) and a[-1 - count] == b[-1 - count]:
        count += 1
    return count


def _moved_sources(store: LanceStore, top: VikingURI, old: str, new: str) -> None:
    """Record the new local path as the source of what a move put at ``top`` (else the next
    sync would take the moved files for other ones and embed them again)."""
    with store.write_lock():
        rows = store.nodes_below(top, columns=NODE_ALL_COLUMNS)
        changed = []
        for row in rows:
            source = str(row.get("source") or "")
            if source == old or source.startswith(old + os.sep):
                row["source"] = new + source[len(old) :]
                changed.append(row)
        store.upsert_nodes(changed)


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


# ----------------------------------------------------------------------------- the watchers


Sync = Callable[[Mapping[str, Any], "Collection[Path] | None"], Synced]
Report = Callable[[WatchReport], None]
# Makes the vectors that wait, calling its argument with (records done, records waiting) after
# each batch: the point where it may be stopped.
Embed = Callable[[Callable[[int, int], None]], object]


class Watcher:
    """Keeps the watched sources of one store in step: a thread each, one sync at a time.

    ``states`` reads every watched source's state from the store; ``sync`` brings one in (in
    full, or the folder of the changed paths) and records its outcome; ``claim`` takes this
    process's claim on watching a URI (None: another process holds it); ``only`` limits it to
    those URIs. It runs until ``stop`` is set.

    A sync commits the text and leaves the vectors waiting, so that a save is found by its words
    at once and the next sync never waits for an embedding: ``embed`` makes them in a thread of
    the watcher's own, woken after each sync that changed something (and once at start: what a
    watcher killed before it left); or, with ``wake`` instead, whoever ``wake`` wakes (a
    server's background indexer) makes them.
    """

    def __init__(
        self,
        states: Callable[[], list[dict[str, Any]]],
        sync: Sync,
        claim: Callable[[str], Any | None],
        report: Report,
        stop: threading.Event,
        *,
        embed: Embed | None = None,
        wake: Callable[[], None] | None = None,
        only: Collection[str] = (),
        store_dir: Path | None = None,
    ) -> None:
        self.states = states
        self.sync = sync
        self.claim = claim
        self.report = report
        self.stop = stop
        self.only = set(only)
        self.store_dir = store_dir
        self.syncing = threading.Lock()
        self._vectors = _VectorsBehind(embed, stop) if embed is not None and wake is None else None
        self.wake = wake or (self._vectors.woken.set if self._vectors is not None else _nothing)
        self._threads: dict[str, _SourceWatch] = {}
        self._seen: dict[str, dict[str, Any]] = {}
        self._read_at = 0.0

    def run(self) -> None:
        """Watch until ``stop`` is set (``only``: until none of those sources is watched)."""
        if self._vectors is not None:
            self._vectors.start()
        try:
            while not self.stop.is_set():
                states = {s["to_uri"]: s for s in self.current(force=True) if not self.only or s["to_uri"] in self.only}
                for uri, state in states.items():
                    thread = self._threads.get(uri)
                    if thread is None or not thread.is_alive():
                        self._threads[uri] = _SourceWatch(self, state)
                        self._threads[uri].start()
                if self.only and not states:
                    return
                self.stop.wait(RESCAN_SECONDS)
        finally:
            self.stop.set()
            for thread in self._threads.values():
                thread.join()
            if self._vectors is not None:
                self._vectors.woken.set()
                self._vectors.join()

    def current(self, *, force: bool = False) -> list[dict[str, Any]]:
        """The watched sources' states, read again at most every STATE_SECONDS."""
        now = time.monotonic()
        if force or now - self._read_at >= STATE_SECONDS:
            try:
                self._seen = {s["to_uri"]: s for s in self.states()}
                self._read_at = now
            except OpenVikingError as exc:  # the store busy: the states read last stand
                log.warning("cannot read the watched sources: %s", exc.message)
        return list(self._seen.values())

    def state_of(self, uri: str) -> dict[str, Any] | None:
        for state in self.current():
            if state["to_uri"] == uri:
                return state
        return None


class _SourceWatch(threading.Thread):
    """The thread that watches one source, while this process holds its claim."""

    def __init__(self, watcher: Watcher, state: dict[str, Any]) -> None:
        super().__init__(name=f"openviking-watch {state['to_uri']}", daemon=True)
        self.watcher = watcher
        self.uri = state["to_uri"]
        self.state = state
        self.retry_at: float | None = None  # a failed sync, tried again (in full) then
        self.missed = False  # changes came while paused: a full sync at resume
        self.last_error = ""

    # ------------------------------------------------------------------ the thread
    def run(self) -> None:
        w = self.watcher
        claim = None
        said_waiting = False
        while not w.stop.is_set() and not self._gone():
            claim = w.claim(self.uri)
            if claim is not None:
                break
            if not said_waiting:
                w.report(WatchReport(self.uri, "waiting", "another process watches it; taking over when it stops"))
                said_waiting = True
            w.stop.wait(RESCAN_SECONDS)
        if claim is None:
            return
        try:
            while not w.stop.is_set() and not self._gone():
                interval = self.state.get("watch_interval")
                mode = f"checked every {_every(interval)}" if interval else "file events"
                w.report(WatchReport(self.uri, "watching", f"watching {self.state['path']} ({mode})"))
                if interval:
                    self._poll(float(interval) * 60, interval)
                elif not self._events():
                    self._poll(DEFAULT_POLL_MINUTES * 60, None)
        finally:
            claim.release()
            w.report(WatchReport(self.uri, "stopped", "stopped watching"))

    # ------------------------------------------------------------------ the state
    def _gone(self) -> bool:
        return self.watcher.state_of(self.uri) is None

    def _restart(self, interval: Any) -> bool:
        """True when the source is no longer watched, or its interval is no longer ``interval``
        (the thread starts over in the new way); ``self.state`` is its state read again."""
        state = self.watcher.state_of(self.uri)
        if state is None:
            return True
        self.state = state
        return bool(state.get("watch_interval") != interval)

    @property
    def active(self) -> bool:
        return bool(self.state.get("is_active", True))

    # ------------------------------------------------------------------ the two ways
    def _events(self) -> bool:
        """Sync each burst of changes the OS tells of; False when the OS cannot watch the source."""
        import watchfiles

        w = self.watcher
        source = Path(self.state["path"])
        watched = source if source.is_dir() else source.parent  # a file replaced by a rename is a new inode
        caught_up = False
        try:
            for changes in watchfiles.watch(
                watched,
                watch_filter=_Wanted(source, w.store_dir),
                debounce=DEBOUNCE_MS,
                step=STEP_MS,
                stop_event=w.stop,
                rust_timeout=int(STATE_SECONDS * 1000),
                yield_on_timeout=True,
                raise_interrupt=False,
                ignore_permission_denied=True,
                recursive=watched == source,  # a file's folder: only the file, not the tree beside it
            ):
                if self._restart(None):
                    return True
                if not caught_up:
                    # The OS watches from before this sync on: nothing changed meanwhile is missed.
                    caught_up = True
                    self._catch_up()  # what changed while nobody watched, and this batch too
                elif not self.active:
                    self.missed = self.missed or bool(changes)
                elif self.missed or self._retry_due():
                    self.missed = False
                    self._sync(None)
                elif changes:
                    self._sync({Path(path) for _, path in changes})
        except (OSError, RuntimeError) as exc:  # no OS watch: a watch limit, a filesystem without events
            w.report(WatchReport(self.uri, "error", f"the OS cannot watch it ({exc}); checking it by polling"))
            return False
        return True

    def _poll(self, seconds: float, interval: Any) -> None:
        """Sync the whole source every ``seconds`` (and at resume, and after a failure)."""
        w = self.watcher
        self._catch_up()
        due = time.monotonic() + seconds
        while not w.stop.wait(min(STATE_SECONDS, max(0.0, due - time.monotonic()))):
            if self._restart(interval):
                return
            if not self.active:
                self.missed = True
            elif self.missed or self._retry_due() or time.monotonic() >= due:
                self.missed = False
                self._sync(None)
                due = time.monotonic() + seconds

    def _catch_up(self) -> None:
        """Sync in full what changed while nobody watched (at resume, when paused now)."""
        if self.active:
            self._sync(None)
        else:
            self.missed = True

    def _retry_due(self) -> bool:
        return self.retry_at is not None and time.monotonic() >= self.retry_at

    # ------------------------------------------------------------------ one sync
    def _sync(self, changed: Collection[Path] | None) -> None:
        w = self.watcher
        with w.syncing:
            try:
                synced = w.sync(self.state, changed)
            except OpenVikingError as exc:
                self._failed(f"{exc.code}: {exc.message}")
                return
            except Exception as exc:  # a bug must not end the watch silently: it is said, and retried
                log.exception("sync of %s failed", self.uri)
                self._failed(f"INTERNAL: {type(exc).__name__}: {exc}")
                return
        self.retry_at, self.last_error = None, ""
        if synced.changed:
            w.wake()
        if synced.changed or changed is None:
            w.report(WatchReport(self.uri, "synced", _said(synced), synced.counts()))

    def _failed(self, message: str) -> None:
        self.retry_at = time.monotonic() + RETRY_SECONDS
        if message != self.last_error:  # said once, not at every retry
            self.watcher.report(WatchReport(self.uri, "error", message))
        self.last_error = message


class _Stopping(Exception):
    """Raised between two batches of an embedding once the watcher stops."""


class _VectorsBehind(threading.Thread):
    """The thread that makes the vectors a watcher's syncs leave waiting: once at start, and
    whenever a sync wakes it. Another process embedding already (a background index, a server)
    takes them over; an embedder that fails is tried again after RETRY_SECONDS. It stops
    between two batches when the watcher stops: what is left waits for the next writer."""

    def __init__(self, embed: Embed, stop: threading.Event) -> None:
        super().__init__(name="openviking-watch-vectors", daemon=True)
        self.embed = embed
        self.stop = stop
        self.woken = threading.Event()
        self.woken.set()

    def run(self) -> None:
        while not self.stop.is_set():
            self.woken.wait()
            self.woken.clear()
            if self.stop.is_set():
                return
            try:
                self.embed(self._go_on)
                continue
            except _Stopping:
                return
            except OpenVikingError as exc:
                log.warning("making the vectors failed (%s); trying again in %.0f s", exc.message, RETRY_SECONDS)
            except Exception:  # a bug must not end the vectors silently: it is said, and retried
                log.exception("making the vectors failed")
            if self.stop.wait(RETRY_SECONDS):
                return
            self.woken.set()

    def _go_on(self, done: int, total: int) -> None:
        del done, total
        if self.stop.is_set():
            raise _Stopping


def _nothing() -> None:
    """No one to wake: each sync makes its own vectors (a sync given neither embed nor wake)."""


def _said(synced: Synced) -> str:
    c = synced.counts()
    return (
        f"added {c['added']} · updated {c['updated']} · removed {c['removed']} · moved {c['moved']} · "
        f"unchanged {c['unchanged']} ({c['seconds']:.1f} s)"
    )


def _every(interval: Any) -> str:
    seconds = float(interval) * 60
    return f"{seconds:g} s" if seconds < 120 else f"{float(interval):g} min"


class _Wanted:
    """The changes a sync may care about: below the source (that file, for a file), not in a
    hidden folder or of a hidden file (as the walk leaves them out; a ``.gitignore`` is kept),
    nor of the store itself when it lives inside the source."""

    def __init__(self, source: Path, store_dir: Path | None) -> None:
        self.source = source
        self.single = source.is_file()
        self.store_dir = store_dir

    def __call__(self, change: Any, path: str) -> bool:
        del change
        changed = Path(path)
        if self.single:
            return changed == self.source
        if not changed.is_relative_to(self.source):
            return False
        if self.store_dir is not None and changed.is_relative_to(self.store_dir):
            return False
        parts = changed.relative_to(self.source).parts
        return not any(part.startswith(".") for part in parts[:-1]) and (
            not parts or not parts[-1].startswith(".") or parts[-1] == ".gitignore"
        )
