"""LanceStore: an open store's tables and the named reads and writes of them.

A store is one LanceDB directory (or prefix of a bucket) holding ``nodes`` (the virtual
filesystem, content included), ``records`` (what retrieval scores: vectors plus a full-text
index on their text) and ``meta`` (format version and embedder identity), with the
``relations`` table (relations.py) and the session tables (session_rows.py) beside them;
search.py runs the scoring queries on ``records``. The connection, the table handles, the write
lock and the commits are ``tables.py``'s; every write goes through
:meth:`~openviking.store.tables.Tables.write_lock` (``locking.py``: a file lock on disk, a lease
in the bucket), because LanceDB's concurrent ``merge_insert`` on the same keys duplicates rows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openviking.errors import (
    FailedPreconditionError,
    NotFoundError,
)

from . import schema, session_schema
from .filters import Scope, path_scope_sql, sql_in, sql_string
from .locking import LOCK_FILE
from .tables import COMMIT_TRIES, Tables, _batches, _dedupe, committed, run, store_exists, store_writable
from .tables import _translate as _translate  # where the tests word LanceDB's errors

if TYPE_CHECKING:
    import pyarrow as pa

    from openviking.config import StorageConfig
    from openviking.values.uri import VikingURI

__all__ = ["COMMIT_TRIES", "LOCK_FILE", "LanceStore", "run", "store_exists", "store_writable"]

# Names the records table an unfinished model-change reindex is filling (a file, not a meta row:
# every records write checks it, and reading it once per take of the lock is cheaper than a query).
PENDING_RECORDS_FILE = ".openviking.reindex"
# Old versions are cleaned up once they are this old, not at once: a reader in another
# process may still be using one (LanceDB warns that 0 breaks concurrent readers).
CLEANUP_AFTER = timedelta(minutes=10)
FTS_TOKENIZER = "icu/split"
PINNED_STORES_KEPT = 8  # states read as_of kept open: a CI job's few snapshots, a server's readers
# The records' text, and their summaries (a file's title and first sentences, on each of its
# records): find adds a little of a page's summary match to its best chunk's (retriever.py).
FTS_COLUMNS = ("text", "abstract")
# Vector index by size (measured in bench/: see bench/README.md). Below ANN_MIN_ROWS a flat
# scan is exact and fast enough; above it IVF_FLAT: e5 vectors all sit in a narrow cone, where
# product quantisation loses half the true neighbours (recall@10 0.57 at 100k, 0.39 at 1M with
# IVF_PQ, refine 10) while IVF_FLAT keeps exact distances (recall 1.0, 20 ms at 1M, built in
# 16 s against 94 s). How the index is searched is decided in search.py.
ANN_MIN_ROWS = 50_000
# A record that waits for its vector has none: LanceDB calls a null vector bad, and is told to
# keep it (a vector that is not finite never gets this far: the embedding phase refuses it).
NULL_VECTORS = "null"
# The tables a write adds a row or two to (a message, a session's row, a link, a meta fact) get a
# file per write, and every read of them opens each file: a 2,000-message session was 2,000 files
# and a count of its messages 0.4 s. ``optimize()`` compacts the nodes and records at the end of
# each write; these are compacted when they pass this many files (60 ms for 2,000 messages).
ROW_TABLES = (schema.META, schema.RELATIONS, session_schema.SESSIONS, session_schema.MESSAGES, session_schema.COMMITS)
COMPACT_AFTER_FILES = 32


class LanceStore(Tables):
    """An open store. Create with :meth:`open`; close with :meth:`close` or ``with``."""

    def __init__(self, path: str, db: Any, **settings: Any) -> None:
        super().__init__(path, db, **settings)
        self._pending: tuple[str | None] | None = None  # the reindex marker, read once per take of the lock
        self._indexed: dict[tuple[str, str], bool] = {}  # (table, column): has an index
        self._counts: dict[tuple[str, str], int] = {}
        self._columns_seen: dict[str, set[str]] = {}  # table: the columns it was last seen with
        self._meta_seen: tuple[tuple[int, int], dict[str, str]] | None = None  # ((handle, version), meta)
        # The stores ``at()`` made, by where they point: opening tables at a version costs more
        # than the read that follows (a round trip per table in a bucket), and a pinned state never changes.
        self._pinned_stores: dict[tuple[str, tuple[tuple[str, int], ...]], LanceStore] = {}
        self._pinned_lock = threading.Lock()
        # How many records wait for their vectors, by scope ("" the whole store), as of a
        # version of the records table (pending.count_pending).
        self._pending_seen: tuple[tuple[int, int], dict[str, int]] | None = None

    def _wrote(self) -> None:
        self._counts.clear()
        self._meta_seen = None

    def _released(self) -> None:
        self._pending = None

    def _rows_written(self, name: str) -> None:
        """Compact row table ``name`` (and clean up its old versions, as ``optimize`` does) once
        it holds more than ``COMPACT_AFTER_FILES`` files; reading its statistics costs a tenth
        of a millisecond."""
        if name not in ROW_TABLES:
            return
        table = self._tables[name]
        files = self.run(table.stats)["fragment_stats"]["num_fragments"]
        if files > COMPACT_AFTER_FILES:
            from .snapshots import cleanup_after

            older_than = cleanup_after(self, name, CLEANUP_AFTER)
            self._commit(table, lambda: _optimized(table, older_than))

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
    def open_damaged(cls, path: str, *, storage: StorageConfig | None = None) -> LanceStore:
        """The store at ``path`` with no table opened yet: for doctor, when one of them fails to."""
        return cls._connect(path, create=False, storage=storage)

    def at(self, as_of: str) -> LanceStore:
        """This store as it was at ``as_of`` (a snapshot's name, a version of the store, or a
        time; see ``snapshots.py``): read-only, fixed while writers go on.

        Raises:
            NotFoundError: no such snapshot or version, or one no longer kept.
            InvalidArgumentError: ``as_of`` names nothing readable, or a time before the store.
        """
        from .snapshots import resolve

        pin = resolve(self, as_of)
        key = (pin.label, tuple(sorted(pin.versions.items())))
        known = self._pinned_stores.get(key)
        if known is not None:
            return known
        pinned = type(self)(
            self.path, self._db, location=self.location, consistency=0.0, lease_seconds=self.lease_seconds
        )
        pinned.pinned, pinned.pinned_as = pin.versions, pin.label
        pinned.records_table = pinned.meta().get("records_table") or schema.RECORDS
        if not pinned._has_table(schema.NODES):
            raise NotFoundError(f"There was no store yet at {as_of}", details={"as_of": as_of})
        with self._pinned_lock:
            while len(self._pinned_stores) >= PINNED_STORES_KEPT:
                self._pinned_stores.pop(next(iter(self._pinned_stores))).close()
            self._pinned_stores[key] = pinned
        return pinned

    def close(self) -> None:
        """Forget open table handles, this store's and those of the states read as of."""
        with self._pinned_lock:
            for pinned in self._pinned_stores.values():
                pinned.close()
            self._pinned_stores.clear()
        super().close()

    @property
    def cache_key(self) -> str:
        """What read caches know this store by: its place, and its snapshot when pinned."""
        if self.pinned is None:
            return self.path
        return self.path + "@" + ",".join(f"{name}={version}" for name, version in sorted(self.pinned.items()))

    def create_missing_tables(self) -> None:
        """Make the base tables a store killed while it was made lacks (doctor --repair)."""
        with self.write_lock():
            self._create_base_tables()

    def _create_base_tables(self) -> None:
        for name, table_schema in ((schema.NODES, schema.nodes_schema()), (schema.META, schema.meta_schema())):
            if not self._has_table(name):
                self.create_table(name, table_schema)
        meta = self.meta()
        if "format_version" not in meta:
            self.set_meta({"format_version": schema.FORMAT_VERSION})

    # ------------------------------------------------------------------ meta
    def meta(self) -> dict[str, str]:
        """All key/value facts of the store (none when a kill left it without its meta table)."""
        if not self._has_table(schema.META):
            return {}
        table = self._table(schema.META)
        # Every find asks (the embedder check): the table's version, a tenth of a read, says
        # whether anyone wrote since, and any write by any process moves it.
        seen = (id(table), int(self.run(lambda: table.version)))
        if self._meta_seen is None or self._meta_seen[0] != seen:
            rows = table.search().select(["key", "value"]).limit(None).to_list()
            self._meta_seen = (seen, {row["key"]: row["value"] for row in rows})
        return dict(self._meta_seen[1])

    def delete_meta(self, keys: Sequence[str]) -> None:
        """Remove key/value facts (keys not there are ignored)."""
        if keys:
            with self.write_lock():
                self._delete_rows(schema.META, sql_in("key", keys))

    def set_meta(self, values: dict[str, str]) -> None:
        """Upsert key/value facts."""
        with self.write_lock():
            rows = [{"key": k, "value": v} for k, v in values.items()]
            table = self._table(schema.META)
            self._commit(
                table,
                lambda: table.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(rows),
            )
            self._rows_written(schema.META)

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
        wanted = list(columns or schema.NODE_COLUMNS)
        present = self._present(schema.NODES, wanted)  # a table an older version wrote lacks the newer ones
        query = query.select([column for column in wanted if column in present]).limit(limit)
        return self.run(query.to_arrow)

    def node_uris_where(self, where: str) -> list[str]:
        """The URIs of the nodes an SQL predicate over the nodes table keeps: what a scope's
        restriction on a node field (a file's size, say) compiles to for the records."""
        return [str(uri) for uri in self._scan_nodes(where, ["uri"]).column("uri").to_pylist()]

    def _count_nodes(self, where: str | None = None) -> int:
        return int(self.run(lambda: self._table(schema.NODES).count_rows(where if where != "TRUE" else None)))

    def upsert_nodes(self, rows: list[dict[str, Any]]) -> None:
        """Insert or replace nodes keyed by ``uri``."""
        if not rows:
            return
        import pyarrow as pa

        data = pa.Table.from_pylist(_dedupe(rows, "uri"), schema=schema.nodes_schema())
        with self.write_lock():
            table = self._ensure_nodes()
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
            table = self._ensure_nodes()
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
            self._commit(table, lambda: merge.execute(data, on_bad_vectors=NULL_VECTORS))
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
            self._commit(table, lambda: table.add(data, on_bad_vectors=NULL_VECTORS))
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
        else:
            marker = Path(self.path, PENDING_RECORDS_FILE)
            if name:
                marker.write_text(name + "\n", encoding="utf-8")
            else:
                marker.unlink(missing_ok=True)
        committed()

    def leftover_records_tables(self) -> list[str]:
        """Records tables that are neither in use nor being filled by a reindex (what a reindex
        killed after its switch, before it dropped the old table, leaves)."""
        keep = {self.records_table, self.meta().get("reindex_table") or ""}
        return sorted(
            name
            for name in self.table_names()
            if (name == schema.RECORDS or name.startswith(schema.RECORDS + "_") and name[8:].isdigit())
            and name not in keep
        )

    def has_marker(self) -> bool:
        """True when the reindex marker exists (even one naming no table that is left)."""
        return self._read_marker() is not None

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

    def count_records_by_stage(self, scope: Scope) -> list[tuple[str, int]]:
        """``(stage, records left)`` after each restriction of ``scope``, cumulatively, in the
        order they apply (what a find that returned nothing lost at each stage)."""
        clauses: list[str] = []
        counts = []
        for name, sql in scope.stage_predicates(self.node_uris_where):
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
            # A table an older version wrote lacks the newer columns: they are added empty (a
            # change of the table's metadata only) before rows that carry them are written.
            fields = schema.records_schema(dimension)
            present = self._records_columns(fields.names)
            missing = [field for field in fields if field.name not in present]
            if missing:
                self._commit(table, lambda: table.add_columns(missing))
            return table
        return self.create_table(self.records_table, schema.records_schema(dimension))

    # ------------------------------------------------------------------ indexes
    def records(self) -> Any:
        """The LanceDB table of the records in use (for the scoring queries of ``search.py``)."""
        return self._table(self.records_table)

    def record_columns(self, columns: Sequence[str]) -> list[str]:
        """``columns`` less those the records table lacks (one an older version wrote lacks the
        newer ones until its next write): what a search of it may select."""
        if not self.has_records:
            return list(columns)
        present = self._records_columns(columns)
        return [column for column in columns if column in present]

    def _records_columns(self, wanted: Sequence[str]) -> set[str]:
        return self._present(self.records_table, wanted)

    def _present(self, name: str, wanted: Sequence[str]) -> set[str]:
        """A table's columns, looked up again only while one of ``wanted`` is missing: columns
        are only ever added, so a table once seen with all of them keeps them, and each search
        and each batch of an add spares object storage a request."""
        known = self._columns_seen.get(name, set())
        if not known.issuperset(wanted):
            known = self._columns_seen[name] = set(self.run(lambda: self._table(name).schema.names))
        return known

    def _ensure_nodes(self) -> Any:
        """The nodes table, with the columns a newer version added to its schema (added empty, a
        change of the table's metadata only, before rows that carry them are written)."""
        table = self._table(schema.NODES)
        fields = schema.nodes_schema()
        present = self._present(schema.NODES, fields.names)
        missing = [field for field in fields if field.name not in present]
        if missing:
            self._commit(table, lambda: table.add_columns(missing))
            self._columns_seen.pop(schema.NODES, None)
        return table

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

        A store an older version wrote without the summaries' index gets it at its next write."""
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
    def create_records_table(self, name: str, dimension: int) -> None:
        """Create an empty records table ``name`` (dropping a leftover one of that name)."""
        with self.write_lock():
            self.drop_table(name)
            self.create_table(name, schema.records_schema(dimension), exist_ok=False)
            self._forget_indexes(name)

    # ------------------------------------------------------------------ maintenance
    def optimize(self) -> None:
        """Compact small fragments, fold new rows into the indexes, create missing indexes."""
        from .snapshots import cleanup_after

        with self.write_lock():
            for name in (schema.NODES, self.records_table):
                if not self._has_table(name):
                    continue
                table = self._tables[name]
                self._ensure_indexes(name, table)
                older_than = cleanup_after(self, name, CLEANUP_AFTER)
                self._commit(table, lambda t=table, o=older_than: _optimized(t, o))

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


def _optimized(table: Any, older_than: timedelta) -> Any:
    """Compact ``table`` and clean up its versions older than ``older_than``. LanceDB refuses the
    cleanup when it would reach a tagged version (a snapshot's, by another machine's clock, or a
    tag made with LanceDB's own tools): the table is then compacted and nothing is cleaned up."""
    try:
        return table.optimize(cleanup_older_than=older_than)
    except Exception as exc:
        if "tagged version" not in str(exc):
            raise
        return table.optimize()
