"""LanceStore: the one place that talks to LanceDB.

A store is one LanceDB directory (or prefix of a bucket) holding three tables: ``nodes`` (the
virtual filesystem, content included), ``records`` (what retrieval scores: vectors plus a
full-text index on their text) and ``meta`` (format version and embedder identity). Every
write goes through :meth:`LanceStore.write_lock` (``locking.py``: a file lock on disk, a lease
in the bucket), because LanceDB's concurrent ``merge_insert`` on the same keys duplicates rows.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openviking.errors import (
    FailedPreconditionError,
    InternalError,
    NotFoundError,
    OpenVikingError,
    StoreNotWritableError,
    UnavailableError,
)

from . import schema
from .filters import Scope, path_scope_sql, sql_in, sql_string
from .locking import LOCK_FILE, FileLock, Lease, WriteLock
from .objectstore import Location, is_remote, storage_error

if TYPE_CHECKING:
    import pyarrow as pa

    from openviking.config import StorageConfig
    from openviking.uri import VikingURI

__all__ = ["LOCK_FILE", "LanceStore", "store_exists"]

# Names the records table an unfinished model-change reindex is filling (a file, not a meta row:
# every records write checks it, and reading it once per take of the lock is cheaper than a query).
PENDING_RECORDS_FILE = ".openviking.reindex"
# Old versions are cleaned up once they are this old, not at once: a reader in another
# process may still be using one (LanceDB warns that 0 breaks concurrent readers).
CLEANUP_AFTER = timedelta(minutes=10)
FTS_TOKENIZER = "icu/split"
# The records' text, and their summaries (a file's title and first sentences, on each of its
# records): find adds a little of a page's summary match to its best chunk's (retriever.py).
FTS_COLUMNS = ("text", "abstract")
# Vector index by size (measured in bench/: see bench/README.md). Below ANN_MIN_ROWS a flat
# scan is exact and fast enough; above it IVF_FLAT: e5 vectors all sit in a narrow cone, where
# product quantisation lost half the true neighbours (recall@10 0.57 at 100k, 0.39 at 1M with
# IVF_PQ, refine 10) while IVF_FLAT keeps exact distances (recall 1.0, 20 ms at 1M, built in
# 16 s against 94 s). How the index is searched is decided in search.py.
ANN_MIN_ROWS = 50_000
# LanceDB's metadata cache (manifests, file footers) defaults to 1 GiB and keeps the manifest
# of every version a long add writes, each one fragment longer than the last: 234 MB of it
# by the end of a 100k-record add, most of the growth in RSS through the batches. A compacted
# store's metadata is a few MB, so reads lose nothing (bench/README.md, ingest-scale).
METADATA_CACHE_BYTES = 64 * 2**20
# On object storage a reader looks for other processes' writes at most once a second by
# default: each look is a LIST request per table, and LanceDB's own strong consistency made
# five of them per query (bench/README.md, storage).
REMOTE_CONSISTENCY_SECONDS = 1.0
# A commit that lost a race LanceDB cannot resolve ("Retryable commit conflict") is made again
# on the latest version, after 0.05, 0.1, 0.2... seconds (with jitter); under the write lock
# only a writer whose lease was taken over can race, so a few tries are plenty.
COMMIT_TRIES = 6


def store_exists(path: str) -> bool:
    """True when ``path`` holds an openviking store (cheap check, no lancedb import; object
    storage is only known by opening it: :meth:`LanceStore.open_existing`)."""
    if is_remote(path):
        return True
    return (Path(path) / f"{schema.NODES}.lance").is_dir()


def store_writable(path: str) -> bool:
    """True when this process may write the store (for object storage, doctor's probe tells)."""
    return is_remote(path) or os.access(path, os.W_OK)


class LanceStore:
    """An open store. Create with :meth:`open`; close with :meth:`close` or ``with``."""

    def __init__(
        self,
        path: str,
        db: Any,
        *,
        location: Location | None = None,
        consistency: float = 0.0,
        lease_seconds: float = 15.0,
    ) -> None:
        self.path = path
        self.location = location
        self._db = db
        self._tables: dict[str, Any] = {}
        self._thread_lock = threading.RLock()
        self._lock_depth = 0
        # Run each time this store takes the write lock (not when it takes it again inside):
        # a write in progress checks that the store is still as it found it.
        self.write_checks: list[Callable[[], None]] = []
        self.lock: WriteLock = Lease(location, lease_seconds) if location is not None else FileLock(path)
        # 0: LanceDB looks for other processes' writes at every query. Above 0 this store
        # looks itself, at most that often, and for every open table at once, the nodes
        # before the records: a file's node then never shows without its records (they are
        # written first), and find drops records whose node it does not see yet.
        self.consistency = consistency
        self._looked_at = time.monotonic()
        self._missing: dict[str, float] = {}  # tables found missing, and when
        self._pending: tuple[str | None] | None = None  # the reindex marker, read once per take of the lock
        # The records table in use: `reindex` builds a new one and then points the store at it.
        self.records_table = schema.RECORDS
        self._indexed: dict[tuple[str, str], bool] = {}  # (table, column): has an index
        self._counts: dict[tuple[str, str], int] = {}

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def open(cls, path: str, *, create: bool = False, storage: StorageConfig | None = None) -> LanceStore:
        """Open the store at ``path``; with ``create`` make it when missing. ``storage`` holds
        the options and settings of a store on object storage.

        Raises:
            NotFoundError: no store at ``path`` and ``create`` is false (or no such bucket).
            UnavailableError: the object store cannot be reached.
            PermissionDeniedError: the object store refused the credentials.
        """
        store = cls._connect(path, create=create, storage=storage)
        if create:
            with store.write_lock():
                store._create_base_tables()
        elif not store._has_table(schema.NODES):
            raise NotFoundError(
                f"No store at {path}",
                hint="Add something first: openviking add-resource PATH",
                details={"store": path},
            )
        store.records_table = store.meta().get("records_table") or schema.RECORDS
        return store

    @classmethod
    def open_existing(cls, path: str, *, storage: StorageConfig | None = None) -> LanceStore | None:
        """The store at ``path``, or None when there is none (errors reaching it are raised)."""
        if not store_exists(path):
            return None
        store = cls._connect(path, create=False, storage=storage)
        if not store._has_table(schema.NODES):
            return None
        store.records_table = store.meta().get("records_table") or schema.RECORDS
        return store

    @classmethod
    def _connect(cls, path: str, *, create: bool, storage: StorageConfig | None) -> LanceStore:
        location = Location(path, dict(storage.options) if storage else {}) if is_remote(path) else None
        if not create and location is None and not store_exists(path):
            raise NotFoundError(
                f"No store at {path}",
                hint="Add something first with add_resource(PATH) (or name another store: path=, OPENVIKING_STORE)",
                details={"store": path},
            )
        if create and location is None:
            try:
                Path(path).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise FailedPreconditionError(
                    f"Cannot create the store directory {path}: {exc.strerror}", details={"store": path}
                ) from exc
        from ._fastimport import defer_namespace_client

        defer_namespace_client()
        import lancedb

        chosen = storage.read_consistency_seconds if storage else None
        consistency = chosen if chosen is not None else (REMOTE_CONSISTENCY_SECONDS if location else 0.0)
        try:
            session = lancedb.Session(metadata_cache_size_bytes=METADATA_CACHE_BYTES)
            db = lancedb.connect(
                path,
                read_consistency_interval=timedelta(0) if consistency == 0 else None,
                session=session,
                storage_options=dict(location.options) if location and location.options else None,
            )
        except Exception as exc:  # lancedb raises plain ValueError/OSError/RuntimeError
            raise _translate(exc, f"Cannot open the store at {path}", location) from _cause(exc, location)
        return cls(
            path,
            db,
            location=location,
            consistency=consistency,
            lease_seconds=storage.lease_seconds if storage else 15.0,
        )

    def close(self) -> None:
        """Forget open table handles (LanceDB holds no other resource)."""
        self._tables.clear()

    def __enter__(self) -> LanceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, call: Any) -> Any:
        """Call LanceDB, with its errors as OpenVikingErrors (worded for this store's location)."""
        return run(call, self.location)

    # ------------------------------------------------------------------ seeing other writers
    def _look_for_writes(self) -> None:
        """Bring every open table to its latest version, the nodes first (see ``consistency``)."""
        order = sorted(self._tables, key=lambda name: (name != schema.NODES, name != self.records_table, name))
        for name in order:
            self.run(self._tables[name].checkout_latest)
        self._missing.clear()
        self._looked_at = time.monotonic()

    def _fresh(self) -> None:
        # Inside the write lock this process is the only writer: what it read at the take stays true.
        if self.consistency > 0 and not self._lock_depth and time.monotonic() - self._looked_at >= self.consistency:
            self._look_for_writes()

    def _has_table(self, name: str) -> bool:
        self._fresh()
        if name in self._tables:
            return True
        missing_since = self._missing.get(name)
        if missing_since is not None and not self._lock_depth and time.monotonic() - missing_since < self.consistency:
            return False  # looked for a moment ago: on object storage each look is a request
        try:
            self._tables[name] = self._db.open_table(name)
        except (FileNotFoundError, ValueError) as exc:
            if self.location is not None and _is_storage_failure(exc):
                raise _translate(exc, f"Cannot open table {name}", self.location) from _cause(exc, self.location)
            self._missing[name] = time.monotonic()
            return False
        except Exception as exc:
            if "not found" in str(exc).lower() or "does not exist" in str(exc).lower():
                self._missing[name] = time.monotonic()
                return False
            raise _translate(exc, f"Cannot open table {name}", self.location) from _cause(exc, self.location)
        self._missing.pop(name, None)
        return True

    def read_problems(self) -> list[str]:
        """Why each table that cannot be read fails (a data file deleted or damaged), for doctor.

        Counting rows reads only the manifest, so one column of every row is read here."""
        problems = []
        for name in self.run(self._db.list_tables).tables:
            try:
                table = self._table(name)
                column = table.schema.names[0]
                self.run(lambda table=table, column=column: table.search().select([column]).limit(None).to_arrow())
            except OpenVikingError as exc:
                problems.append(f"table {name}: {exc.message}")
        return problems

    def _table(self, name: str) -> Any:
        if not self._has_table(name):
            raise NotFoundError(f"The store at {self.path} has no {name} table", details={"table": name})
        return self._tables[name]

    def _create_base_tables(self) -> None:
        for name, table_schema in ((schema.NODES, schema.nodes_schema()), (schema.META, schema.meta_schema())):
            if not self._has_table(name):
                self._tables[name] = self.run(
                    lambda name=name, table_schema=table_schema: self._db.create_table(
                        name, schema=table_schema, exist_ok=True
                    )
                )
        meta = self.meta()
        if "format_version" not in meta:
            self.set_meta({"format_version": schema.FORMAT_VERSION})

    # ------------------------------------------------------------------ locking
    @contextlib.contextmanager
    def write_lock(self) -> Iterator[None]:
        """Hold the store's write lock (re-entrant): a file lock on disk, a lease in the bucket."""
        with self._thread_lock:
            if self._lock_depth == 0:
                self._take_lock()
            else:
                self.lock.check()  # every write inside checks that the lease is still this process's
            self._lock_depth += 1
            try:
                if self._lock_depth == 1:
                    for check in self.write_checks:
                        check()  # what another process did while the lock was free may forbid this write
                yield
            finally:
                self._counts.clear()
                self._lock_depth -= 1
                if self._lock_depth == 0:
                    self._pending = None
                    self.lock.release()

    def _take_lock(self) -> None:
        try:
            self.lock.acquire()
        except OSError as exc:
            raise _translate(exc, f"Cannot write to the store {self.path}") from exc
        try:
            if self.consistency > 0:
                self._look_for_writes()  # what this write reads must be what the last writer left
            self._missing.clear()
        except BaseException:
            self.lock.release()
            raise

    def _commit(self, table: Any, call: Any) -> Any:
        """A write to ``table``. A retryable commit conflict (another commit won the race, and
        LanceDB could not rebase this one on it) is made again on the latest version, with
        backoff, and never shown; after ``COMMIT_TRIES`` the store is called busy."""
        for attempt in range(COMMIT_TRIES):
            try:
                return call()
            except (OpenVikingError, KeyboardInterrupt):
                raise
            except Exception as exc:
                if not _retryable(exc):
                    raise _translate(exc, "Store operation failed", self.location) from _cause(exc, self.location)
            time.sleep(0.05 * 2**attempt * (0.5 + random.random()))
            self.lock.check()
            self.run(table.checkout_latest)
        raise UnavailableError(
            f"The store at {self.path} is busy: other writes kept winning the race to commit",
            hint="Try again in a moment",
            details={"store": self.path, "tries": COMMIT_TRIES},
        )

    # ------------------------------------------------------------------ meta
    def meta(self) -> dict[str, str]:
        """All key/value facts of the store."""
        rows = self._table(schema.META).search().select(["key", "value"]).limit(None).to_list()
        return {row["key"]: row["value"] for row in rows}

    def set_meta(self, values: dict[str, str]) -> None:
        """Upsert key/value facts."""
        with self.write_lock():
            rows = [{"key": k, "value": v} for k, v in values.items()]
            table = self._table(schema.META)
            table.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(rows)

    # ------------------------------------------------------------------ nodes
    def get_node(self, uri: str, columns: Sequence[str] | None = None) -> dict[str, Any] | None:
        """The node at ``uri``, or None."""
        rows = self._query_nodes(f"uri = {sql_string(uri)}", columns=columns, limit=1)
        return rows[0] if rows else None

    def stored_uris(self, uris: Sequence[str]) -> set[str]:
        """Which of ``uris`` have a node."""
        return {row["uri"] for row in self.nodes_by_uri(uris, columns=["uri"])}

    def nodes_by_uri(self, uris: Iterable[str], columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The nodes at ``uris`` (looked up 500 at a time; missing ones are left out)."""
        found: list[dict[str, Any]] = []
        for batch in _batches(uris):
            found += self._query_nodes(sql_in("uri", batch), columns=columns)
        return found

    def nodes_below(
        self,
        uri: VikingURI,
        columns: Sequence[str] | None = None,
        *,
        files_only: bool = False,
        max_depth: int | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """The node at ``uri`` and every node below it (``max_depth`` levels at most; files
        only with ``files_only``)."""
        table = self.scan_nodes_below(uri, columns, files_only=files_only, max_depth=max_depth, limit=limit)
        rows: list[dict[str, Any]] = table.to_pylist()
        return rows

    def scan_nodes_below(
        self,
        uri: VikingURI,
        columns: Sequence[str] | None = None,
        *,
        files_only: bool = False,
        max_depth: int | None = None,
        limit: int | None = None,
    ) -> pa.Table:
        """:meth:`nodes_below` as an Arrow table (for vectorised work over a whole subtree)."""
        where = path_scope_sql(uri, max_depth=max_depth)
        return self._scan_nodes(f"NOT is_dir AND ({where})" if files_only else where, columns, limit)

    def children_of(self, uri: str, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The nodes whose parent is ``uri``."""
        return self._query_nodes(f"parent_uri = {sql_string(uri)}", columns=columns)

    def count_children(self, uri: str) -> int:
        """How many nodes have ``uri`` as their parent."""
        return self._count_nodes(f"parent_uri = {sql_string(uri)}")

    def nodes_with_children(self, uris: Sequence[str], columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The nodes at ``uris`` and the nodes whose parent is one of them."""
        if not uris:
            return []
        return self._query_nodes(f"{sql_in('parent_uri', uris)} OR {sql_in('uri', uris)}", columns=columns)

    def directory_descriptions(self, top: VikingURI, around: Sequence[str] = ()) -> dict[str, str]:
        """``{uri: description}`` of the described directories at or below ``top``, at
        ``around`` and among the children of ``around`` (a directory's description is the
        text ``mkdir --description`` gave it, kept in its content column)."""
        scope = path_scope_sql(top)
        if around:
            scope = f"({scope}) OR {sql_in('parent_uri', around)} OR {sql_in('uri', around)}"
        rows = self._query_nodes(f"is_dir AND content IS NOT NULL AND ({scope})", columns=["uri", "content"])
        return {row["uri"]: row["content"] for row in rows}

    def count_nodes(self, below: VikingURI | None = None) -> int:
        """How many nodes there are (at and below ``below`` when given)."""
        return self._count_nodes(None if below is None else path_scope_sql(below))

    def delete_nodes_below(self, uri: VikingURI) -> None:
        """Delete the node at ``uri`` and every node below it."""
        self._delete_nodes(path_scope_sql(uri))

    def delete_nodes_by_uri(self, uris: Iterable[str]) -> None:
        """Delete the nodes at ``uris``."""
        for batch in _batches(uris):
            self._delete_nodes(sql_in("uri", batch))

    def _query_nodes(
        self,
        where: str | None,
        columns: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self._scan_nodes(where, columns, limit).to_pylist()
        return rows

    def _scan_nodes(
        self,
        where: str | None,
        columns: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> pa.Table:
        query = self._table(schema.NODES).search()
        if where and where != "TRUE":
            query = query.where(where)
        query = query.select(list(columns or schema.NODE_COLUMNS)).limit(limit)
        return self.run(query.to_arrow)

    def _count_nodes(self, where: str | None = None) -> int:
        return int(self.run(lambda: self._table(schema.NODES).count_rows(where if where != "TRUE" else None)))

    def upsert_nodes(self, rows: list[dict[str, Any]]) -> None:
        """Insert or replace nodes keyed by ``uri``."""
        if not rows:
            return
        import pyarrow as pa

        data = pa.Table.from_pylist(_dedupe(rows, "uri"), schema=schema.nodes_schema())
        with self.write_lock():
            table = self._table(schema.NODES)
            self._commit(
                table,
                lambda: table.merge_insert("uri").when_matched_update_all().when_not_matched_insert_all().execute(data),
            )

    def insert_nodes(self, rows: list[dict[str, Any]]) -> None:
        """Append nodes known to be new (no merge: it scans every row written since the last
        ``optimize()``, which makes a large first add quadratic). The caller makes sure no node
        with these URIs exists, under the write lock."""
        if not rows:
            return
        import pyarrow as pa

        data = pa.Table.from_pylist(_dedupe(rows, "uri"), schema=schema.nodes_schema())
        with self.write_lock():
            table = self._table(schema.NODES)
            self._commit(table, lambda: table.add(data))

    def table_versions(self) -> tuple[int, int]:
        """The nodes and records tables' current versions on disk (-1: no records table yet).

        Any write by any process changes them: a writer that saw them unchanged since its own
        last write knows that nobody else wrote in between."""

        def version(name: str) -> int:
            return int(self.run(lambda: self._table(name).version)) if self._has_table(name) else -1

        return version(schema.NODES), version(self.records_table)

    def _delete_nodes(self, where: str) -> None:
        with self.write_lock():
            self._commit(self._table(schema.NODES), lambda: self._table(schema.NODES).delete(where))

    # ------------------------------------------------------------------ records
    @property
    def has_records(self) -> bool:
        """True once any record was written."""
        return self._has_table(self.records_table)

    def replace_records(self, uris: Sequence[str], rows: list[dict[str, Any]], dimension: int) -> None:
        """Make ``rows`` the complete set of records of ``uris``, in one commit.

        Records of those URIs that are not in ``rows`` are deleted by the same merge, so a
        crash leaves either the old or the new set, never a mix.
        """
        if not uris and not rows:
            return
        import pyarrow as pa

        data = pa.Table.from_pylist(_dedupe(rows, "id"), schema=schema.records_schema(dimension))
        with self.write_lock():
            table = self._ensure_records(dimension)
            merge = table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
            if uris:
                merge = merge.when_not_matched_by_source_delete(sql_in("uri", uris))
            self._commit(table, lambda: merge.execute(data))
            self._outdate_pending(lambda: sql_in("uri", sorted({*uris, *(row["uri"] for row in rows)})))

    def append_records(self, data: pa.Table | list[dict[str, Any]], dimension: int) -> None:
        """Append records (an Arrow table in the records schema, or rows) with no upsert: bulk
        loads, and the records of new files (see ``insert_nodes``)."""
        if isinstance(data, list):
            import pyarrow as pa

            data = pa.Table.from_pylist(_dedupe(data, "id"), schema=schema.records_schema(dimension))
        if not data.num_rows:
            return
        with self.write_lock():
            table = self._ensure_records(dimension)
            self._commit(table, lambda: table.add(data))
            self._outdate_pending(lambda: sql_in("uri", sorted(set(data.column("uri").to_pylist()))))

    def delete_records_below(self, uri: VikingURI) -> None:
        """Delete the records of ``uri`` and of everything below it."""
        self._delete_records(path_scope_sql(uri))

    def delete_records_by_uri(self, uris: Iterable[str]) -> None:
        """Delete the records of ``uris``."""
        for batch in _batches(uris):
            self._delete_records(sql_in("uri", batch))

    def _delete_records(self, where: str) -> None:
        with self.write_lock():
            self._delete_rows(self.records_table, where)
            self._outdate_pending(lambda: where)

    # A model-change reindex fills a new records table while finds read the old one; an
    # interrupted one resumes with the files it finished. A file written, moved or removed in
    # between loses its records there too, so the resumed run embeds what is there now rather
    # than keeping records of files that moved, vanished or changed.
    def pending_records_table(self) -> str | None:
        """The records table an unfinished model-change reindex is filling, if any."""
        if self._pending is None or not self._lock_depth:
            self._pending = (self._read_marker(),)
        name = self._pending[0]
        return name if name and name != self.records_table and self._has_table(name) else None

    def set_pending_records_table(self, name: str | None) -> None:
        """Name the table a model-change reindex is filling, or (None) say it is done."""
        self._pending = (name or None,)
        if self.location is not None:
            import obstore

            client = self.location.object_store()
            self.run(
                lambda: (
                    obstore.put(client, PENDING_RECORDS_FILE, (name + "\n").encode())
                    if name
                    else obstore.delete(client, PENDING_RECORDS_FILE)
                )
            )
            return
        marker = Path(self.path, PENDING_RECORDS_FILE)
        if name:
            marker.write_text(name + "\n", encoding="utf-8")
        else:
            marker.unlink(missing_ok=True)

    def _read_marker(self) -> str | None:
        if self.location is not None:
            import obstore

            client = self.location.object_store()

            def read() -> str | None:
                try:
                    return bytes(obstore.get(client, PENDING_RECORDS_FILE).bytes()).decode("utf-8").strip()
                except FileNotFoundError:
                    return None

            return self.run(read)  # type: ignore[no-any-return]
        try:
            return Path(self.path, PENDING_RECORDS_FILE).read_text(encoding="utf-8").strip() or None
        except OSError:
            return None

    def _outdate_pending(self, where: Callable[[], str]) -> None:
        pending = self.pending_records_table()
        if pending:
            self._delete_rows(pending, where())

    def all_records(self, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Every record, as dicts (every column by default)."""
        return self._query_rows(self.records_table, None, columns)

    def records_by_id(self, ids: Iterable[str], columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The records with these ids."""
        return [
            row for batch in _batches(ids) for row in self._query_rows(self.records_table, sql_in("id", batch), columns)
        ]

    def records_by_uri(self, uris: Iterable[str], columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The records of ``uris`` (every column by default)."""
        return [
            row
            for batch in _batches(uris)
            for row in self._query_rows(self.records_table, sql_in("uri", batch), columns)
        ]

    def records_below(self, uri: VikingURI, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The records of ``uri`` and of everything below it."""
        return self._query_rows(self.records_table, path_scope_sql(uri), columns)

    def count_records(self, at: str | None = None) -> int:
        """How many records there are (of the URI ``at`` when given)."""
        return self._count_rows(self.records_table, None if at is None else f"uri = {sql_string(at)}")

    def count_records_below(self, uri: VikingURI) -> int:
        """How many records ``uri`` and everything below it have."""
        return self._count_rows(self.records_table, path_scope_sql(uri))

    def count_records_by_uri(self, uris: Iterable[str]) -> int:
        """How many records ``uris`` have."""
        return sum(self._count_rows(self.records_table, sql_in("uri", batch)) for batch in _batches(uris))

    def count_records_by_stage(self, scope: Scope) -> list[tuple[str, int]]:
        """``(stage, records left)`` after each restriction of ``scope``, cumulatively, in the
        order they apply (what a find that returned nothing lost at each stage)."""
        clauses: list[str] = []
        counts = []
        for name, sql in scope.stage_predicates():
            clauses.append(f"({sql})")
            counts.append((name, self._count_rows(self.records_table, " AND ".join(clauses))))
        return counts

    def records_dimension(self) -> int | None:
        """The vector width of the records table, or None before any record exists."""
        if not self.has_records:
            return None
        return int(self._table(self.records_table).schema.field("vector").type.list_size)

    def _ensure_records(self, dimension: int) -> Any:
        if self._has_table(self.records_table):
            table = self._tables[self.records_table]
            width = table.schema.field("vector").type.list_size
            if width != dimension:
                raise FailedPreconditionError(
                    f"The store holds {width}-dimensional vectors; the embedder makes {dimension}",
                    hint="Re-embed everything with: openviking reindex",
                )
            return table
        name, dimension_schema = self.records_table, schema.records_schema(dimension)
        table = self.run(lambda: self._db.create_table(name, schema=dimension_schema, exist_ok=True))
        self._tables[self.records_table] = table
        return table

    # ------------------------------------------------------------------ indexes
    def records(self) -> Any:
        """The LanceDB table of the records in use (for the scoring queries of ``search.py``)."""
        return self._table(self.records_table)

    def filtered_count(self, where: str) -> int:
        """How many records a compiled scope leaves, cached until this process writes.

        It only chooses exact or indexed search, so a count made before another process
        wrote is good enough."""
        key = (self.records_table, where)
        if key not in self._counts:
            self._counts[key] = self._count_rows(self.records_table, where)
        return self._counts[key]

    def has_vector_index(self) -> bool:
        """True when the records table has an ANN index on its vectors (checked once per open)."""
        return self._has_index("vector")

    def has_text_index(self, column: str) -> bool:
        """True when the records' ``column`` has a full-text index (checked once per open).

        A store written before the summaries were indexed gets that index at its next write."""
        return self._has_index(column)

    def _has_index(self, column: str) -> bool:
        key = (self.records_table, column)
        if key not in self._indexed:
            self._indexed[key] = self._has_table(key[0]) and any(
                tuple(ix.columns) == (column,) for ix in self.run(self._tables[key[0]].list_indices)
            )
        return self._indexed[key]

    def _forget_indexes(self, name: str) -> None:
        """After indexes of table ``name`` were made (or the table was), look again."""
        self._indexed = {key: known for key, known in self._indexed.items() if key[0] != name}

    # ------------------------------------------------------------------ other tables
    def has_table(self, name: str) -> bool:
        """True when the store holds table ``name``."""
        return self._has_table(name)

    def _upsert_rows(self, name: str, rows: list[dict[str, Any]], key: str, table_schema: pa.Schema) -> None:
        """Insert or replace rows of table ``name`` keyed by ``key`` (the table is made on first use)."""
        if not rows:
            return
        import pyarrow as pa

        data = pa.Table.from_pylist(_dedupe(rows, key), schema=table_schema)
        with self.write_lock():
            if not self._has_table(name):
                self._tables[name] = self.run(lambda: self._db.create_table(name, schema=table_schema, exist_ok=True))
            table = self._tables[name]
            self._commit(
                table,
                lambda: table.merge_insert(key).when_matched_update_all().when_not_matched_insert_all().execute(data),
            )

    def _query_rows(
        self,
        name: str,
        where: str | None = None,
        columns: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Rows of table ``name`` matching ``where`` (none when the table does not exist yet)."""
        if not self._has_table(name):
            return []
        query = self._tables[name].search()
        if where:
            query = query.where(where)
        if columns:
            query = query.select(list(columns))
        rows: list[dict[str, Any]] = self.run(query.limit(limit).to_list)
        return rows

    def _count_rows(self, name: str, where: str | None = None) -> int:
        """How many rows of table ``name`` match ``where``."""
        if not self._has_table(name):
            return 0
        return int(self.run(lambda: self._tables[name].count_rows(where)))

    def drop_table(self, name: str) -> None:
        """Remove table ``name`` and its files (nothing happens when it does not exist)."""
        with self.write_lock():
            self._tables.pop(name, None)
            try:
                self._db.drop_table(name)
            except (FileNotFoundError, ValueError):
                pass

    def create_records_table(self, name: str, dimension: int) -> None:
        """Create an empty records table ``name`` (dropping a leftover one of that name)."""
        with self.write_lock():
            self.drop_table(name)
            self._tables[name] = self.run(lambda: self._db.create_table(name, schema=schema.records_schema(dimension)))
            self._forget_indexes(name)

    def _delete_rows(self, name: str, where: str) -> None:
        """Delete the rows of table ``name`` matching ``where``."""
        if not self._has_table(name):
            return
        with self.write_lock():
            self._commit(self._tables[name], lambda: self._tables[name].delete(where))

    # ------------------------------------------------------------------ maintenance
    def optimize(self) -> None:
        """Compact small fragments, fold new rows into the indexes, create missing indexes."""
        with self.write_lock():
            for name in (schema.NODES, self.records_table):
                if not self._has_table(name):
                    continue
                table = self._tables[name]
                self._ensure_indexes(name, table)
                self._commit(table, lambda t=table: t.optimize(cleanup_older_than=CLEANUP_AFTER))

    def ensure_indexes(self) -> None:
        """Create the indexes a store written by an older version lacks (cheap when none is missing)."""
        if self.has_records and not all(self.has_text_index(column) for column in FTS_COLUMNS):
            with self.write_lock():
                self._ensure_indexes(self.records_table, self._tables[self.records_table])

    def _ensure_indexes(self, name: str, table: Any) -> None:
        existing = {tuple(ix.columns) for ix in table.list_indices()}
        rows = table.count_rows()
        if name == self.records_table and ("vector",) not in existing and rows >= ANN_MIN_ROWS:
            from lancedb.index import IvfFlat

            # Built once; later optimize() calls fold new rows into it without retraining.
            self._commit(table, lambda: table.create_index("vector", config=IvfFlat(distance_type="cosine")))
            self._forget_indexes(name)
        for column in FTS_COLUMNS if name == self.records_table and rows > 0 else ():
            if (column,) not in existing:
                from lancedb.index import FTS

                config = FTS(base_tokenizer=FTS_TOKENIZER, language="English", stem=True, remove_stop_words=True)
                self._commit(table, lambda c=column, f=config: table.create_index(c, config=f))
                self._forget_indexes(name)
        if ("uri",) not in existing and rows > 0:
            from lancedb.index import BTree

            self._commit(table, lambda: table.create_index("uri", config=BTree()))

    # ------------------------------------------------------------------ read caches
    def nodes_version(self) -> int:
        """The nodes table's version: every write changes it, so it keys read caches (grep, glob)."""
        return int(self.run(lambda: self._table(schema.NODES).version))


def _batches(values: Iterable[str], size: int = 500) -> Iterator[list[str]]:
    """``values`` in lists of at most ``size``: an IN list of thousands of literals is slow to plan."""
    batch: list[str] = []
    for value in values:
        batch.append(value)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _dedupe(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    # merge_insert refuses two source rows for one target row; the last one wins.
    latest: dict[Any, dict[str, Any]] = {}
    for row in rows:
        latest[row[key]] = row
    return list(latest.values())


def run(call: Any, location: Location | None = None) -> Any:
    """Call LanceDB, with its errors as OpenVikingErrors."""
    try:
        return call()
    except OpenVikingError:
        raise
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        raise _translate(exc, "Store operation failed", location) from _cause(exc, location)


def _cause(exc: BaseException, location: Location | None) -> BaseException | None:
    # An object store's reply may quote the access key it refused: the error raised for it
    # carries its own words, not the reply, even in a --debug traceback.
    return None if location is not None else exc


def _retryable(exc: BaseException) -> bool:
    return "retryable commit conflict" in str(exc).lower()


def _is_storage_failure(exc: BaseException) -> bool:
    # A missing table is "not found"; a bucket that is missing, refusing or unreachable is not.
    text = str(exc)
    return "RetryError" in text or "Generic" in text and "store" in text or "status code" in text


# Lance's errors end with where in its Rust source they were raised: no use to a user.
_RUST_LOCATION = re.compile(r",?\s*/\S+\.rs:\d+:\d+")


def _translate(exc: Exception, context: str, location: Location | None = None) -> OpenVikingError:
    if location is not None:
        return storage_error(exc, location, context)
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    message = _RUST_LOCATION.sub("", message)
    if isinstance(exc, FileNotFoundError):
        return NotFoundError(f"{context}: {message}")
    if isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return StoreNotWritableError(
            f"{context}: {exc.strerror or message}",
            hint="The store is read-only here; reads still work. Name a writable directory as the store to change it.",
            details={"error": type(exc).__name__, "errno": exc.errno},
        )
    return InternalError(f"{context}: {message}", details={"error": type(exc).__name__})
