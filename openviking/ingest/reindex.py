"""reindex: embed everything again with the configured embedder (after a model change).

With another embedder than the store's, the new vectors go into a new records table; the
store switches to it only when every file and directory is done, so finds keep answering
from the old table meanwhile, and an interrupted run resumes where it stopped (files whose
records are already in the new table are skipped). With the same embedder (say, after
changing ``embedding.max_input_tokens``), records are refreshed in place, optionally under
one URI only.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from openviking.contract.results import ReindexResult
from openviking.errors import FailedPreconditionError
from openviking.ingest.directories import refresh_directories
from openviking.ingest.files import ProgressCallback, reembed_files
from openviking.ingest.limits import DEFAULT_LIMITS, IngestLimits
from openviking.store.lance import LanceStore
from openviking.store.schema import RECORDS
from openviking.values.uri import VikingURI

if TYPE_CHECKING:
    from openviking.models.embedder import Embedder

__all__ = ["abandon_switch", "reindex"]

FILE_COLUMNS = ["uri", "content", "content_hash", "created_at", "updated_at", "tags", "source", "size"]


def reindex(
    store: LanceStore,
    embedder: Embedder,
    root: VikingURI | None = None,
    *,
    limits: IngestLimits = DEFAULT_LIMITS,
    progress: ProgressCallback | None = None,
) -> ReindexResult:
    """Re-embed the files and directories below ``root`` (everything when None)."""
    started = time.monotonic()
    meta = store.meta()
    built_with = meta.get("embedder")
    scope = VikingURI(()) if root is None else root
    if built_with in (None, "", embedder.identity):
        with store.write_lock():
            abandon_switch(store)
            result = _reembed(store, embedder, scope, set(), limits, progress)
            store.set_meta({"embedder": embedder.identity, "dimension": str(embedder.dimension)})
        store.optimize()
        return _summary(embedder, built_with, result, started, switched=False)
    if root is not None and not root.is_root:
        raise FailedPreconditionError(
            f"The store was built with '{built_with}'; switching to '{embedder.identity}' re-embeds everything",
            hint="Run openviking reindex without a URI",
        )
    target = meta.get("reindex_table") if meta.get("reindex_embedder") == embedder.identity else None
    with store.write_lock():
        if not target or not store.has_table(target):
            # Tables an earlier run left (killed before it named its table, or a switch to
            # another embedder) go first, so that a run again fills the table a first run would.
            stale = {*store.leftover_records_tables(), meta.get("reindex_table") or ""} - {"", store.records_table}
            for name in sorted(stale):
                store.drop_table(name)
            target = _new_table_name(store)
            store.create_records_table(target, embedder.dimension)
            store.set_meta({"reindex_table": target, "reindex_embedder": embedder.identity})
        # Writes until the switch also drop what they change from the new table, so a resumed
        # run re-embeds those files (see LanceStore.pending_records_table).
        store.set_pending_records_table(target)
        original = store.records_table
        store.records_table = target
        try:
            done = {row["uri"] for row in store.all_records(["uri"])}
            result = _reembed(store, embedder, scope, done, limits, progress)
            store.optimize()
            store.set_meta(
                {
                    "records_table": target,
                    "embedder": embedder.identity,
                    "dimension": str(embedder.dimension),
                    "reindex_table": "",
                    "reindex_embedder": "",
                }
            )
        except BaseException:
            store.records_table = original
            raise
        store.set_pending_records_table(None)
        if original != target:
            store.drop_table(original)
    return _summary(embedder, built_with, result, started, switched=True)


def abandon_switch(store: LanceStore) -> str | None:
    """Drop what an interrupted switch to another embedder left (its table, its meta keys, the
    marker): with the store's own embedder configured again, the store stays with it. Returns
    the embedder that switch was to, if there was one."""
    meta = store.meta()
    target, switching_to = meta.get("reindex_table") or "", meta.get("reindex_embedder") or ""
    marker = store.pending_records_table()
    leftovers = store.leftover_records_tables()
    if not target and not marker and not leftovers and not store.has_marker():
        return None
    with store.write_lock():
        for name in sorted({target, marker or "", *leftovers} - {"", store.records_table}):
            store.drop_table(name)
        if target or switching_to:
            store.set_meta({"reindex_table": "", "reindex_embedder": ""})
        if store.has_marker():
            store.set_pending_records_table(None)
    return switching_to or None


def _reembed(
    store: LanceStore,
    embedder: Embedder,
    scope: VikingURI,
    done: set[str],
    limits: IngestLimits,
    progress: ProgressCallback | None,
) -> Any:
    files = [n for n in store.nodes_below(scope, columns=FILE_COLUMNS, files_only=True) if n["uri"] not in done]
    files.sort(key=lambda n: n["uri"])
    result = reembed_files(store, embedder, files, limits=limits, progress=progress)
    result.directories = refresh_directories(
        store, embedder, scope, tags=None, limits=limits, force=True, embed_now=True
    )
    return result


def _new_table_name(store: LanceStore) -> str:
    for number in range(2, 10_000):
        name = f"{RECORDS}_{number}"
        if name != store.records_table and not store.has_table(name):
            return name
    raise FailedPreconditionError("Too many leftover records tables in the store")


def _summary(embedder: Embedder, before: str | None, result: Any, started: float, *, switched: bool) -> ReindexResult:
    return ReindexResult(
        embedder=embedder.identity,
        previous_embedder=before or "",
        switched_table=switched,
        files=result.updated,
        directories=result.directories,
        records_embedded=result.records_embedded,
        seconds=round(time.monotonic() - started, 3),
    )
