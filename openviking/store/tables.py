"""The tables of a store: the connection, open table handles, the write lock, commits, errors.

:class:`Tables` is what :class:`~openviking.store.lance.LanceStore` is built on: it connects
(to a directory, or to a bucket with its storage options), keeps one handle per table and
brings them up to date with other processes' writes (``storage.read_consistency_seconds``),
holds the write lock (``locking.py``), makes each commit (a retryable commit conflict again,
with backoff; each counted for the crash tests' fault point), restores a damaged table to its
last readable version, and words LanceDB's errors as OpenVikingErrors with no credential in them
(a missing or damaged file as ``StoreDamagedError``).
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
from typing import TYPE_CHECKING, Any, Self

from openviking.errors import (
    FailedPreconditionError,
    InternalError,
    NotFoundError,
    OpenVikingError,
    StoreDamagedError,
    StoreNotWritableError,
    UnavailableError,
)

from . import schema
from .locking import EMBEDDING_LEASE_KEY, EMBEDDING_LOCK_FILE, FileLock, Lease, WriteLock
from .objectstore import Location, is_remote, storage_error

if TYPE_CHECKING:
    import pyarrow as pa

    from openviking.config import StorageConfig

__all__ = ["Tables", "run", "store_exists", "store_writable"]

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
# The fault point of the crash tests (tests/test_crash_points.py): with this variable set to k,
# the process ends at once, as a kill -9 would, right after its k-th durable write (a commit of
# any table, a table made or dropped, the reindex marker). Unset, it costs one lookup a commit.
FAULT_AFTER_COMMITS = "OPENVIKING_FAULT_AFTER_COMMITS"
FAULT_EXIT_STATUS = 86  # what the process exits with at the fault point
_commits_made = 0


def committed() -> None:
    """Count one durable write of this process; at the fault point, end it (see FAULT_AFTER_COMMITS)."""
    global _commits_made
    _commits_made += 1
    after = os.environ.get(FAULT_AFTER_COMMITS)
    if after and after.isdigit() and _commits_made >= int(after):
        os._exit(FAULT_EXIT_STATUS)


def store_exists(path: str) -> bool:
    """True when ``path`` holds an openviking store (cheap check, no lancedb import; object
    storage is only known by opening it: :meth:`LanceStore.open_existing`)."""
    if is_remote(path):
        return True
    return (Path(path) / f"{schema.NODES}.lance").is_dir()


def store_writable(path: str) -> bool:
    """True when this process may write the store (for object storage, doctor's probe tells)."""
    return is_remote(path) or os.access(path, os.W_OK)


class Tables:
    """The connection and table handles of one store (see the module docstring)."""

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
        self.lease_seconds = lease_seconds
        self.lock: WriteLock = Lease(location, lease_seconds) if location is not None else FileLock(path)
        # 0: LanceDB looks for other processes' writes at every query. Above 0 this store
        # looks itself, at most that often, and for every open table at once, the nodes
        # before the records: a file's node then never shows without its records (they are
        # written first), and find drops records whose node it does not see yet.
        self.consistency = consistency
        self._looked_at = time.monotonic()
        self._missing: dict[str, float] = {}  # tables found missing, and when
        # The records table in use: `reindex` builds a new one and then points the store at it.
        self.records_table = schema.RECORDS
        # A store read as of a snapshot: each table's version (a table not named did not exist
        # then), and what the snapshot was called (for messages). None: the latest versions.
        self.pinned: dict[str, int] | None = None
        self.pinned_as = ""

    @classmethod
    def _connect(cls, path: str, *, create: bool, storage: StorageConfig | None) -> Self:
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
        from ._fastimport import import_lancedb

        lancedb = import_lancedb()

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

    def __enter__(self) -> Self:
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
        # A pinned store never moves.
        if self.pinned is not None or self.consistency <= 0 or self._lock_depth:
            return
        if time.monotonic() - self._looked_at >= self.consistency:
            self._look_for_writes()

    def _has_table(self, name: str) -> bool:
        self._fresh()
        if name in self._tables:
            return True
        if self.pinned is not None:
            return self._open_pinned(name)
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

    def _open_pinned(self, name: str) -> bool:
        """Open table ``name`` at its pinned version (False: it did not exist then)."""
        assert self.pinned is not None
        if name not in self.pinned:
            return False
        try:
            table = self._db.open_table(name)
        except Exception as exc:
            raise FailedPreconditionError(
                f"{self.pinned_as} cannot be read: its table {name} is gone (a reindex to another model "
                "replaces the records table)",
                hint="Tag a new snapshot of the store as it is now",
                details={"as_of": self.pinned_as, "table": name},
            ) from _cause(exc, self.location)
        try:
            table.checkout(self.pinned[name])
        except Exception as exc:
            if self._version_kept(table, self.pinned[name]):  # kept, so the store could not be read
                raise _translate(exc, f"Reading {self.pinned_as} failed", self.location) from _cause(exc, self.location)
            raise NotFoundError(
                f"{self.pinned_as} is no longer kept: version {self.pinned[name]} of table {name} was cleaned up",
                hint="Old versions are kept only while a snapshot tag points at them; see openviking snapshot list",
                details={"as_of": self.pinned_as, "table": name, "version": self.pinned[name]},
            ) from _cause(exc, self.location)
        self._tables[name] = table
        return True

    @staticmethod
    def _version_kept(table: Any, version: int) -> bool:
        """Whether ``table`` still keeps ``version`` (False too when that cannot be told)."""
        try:
            return any(int(v["version"]) == version for v in table.list_versions())
        except Exception:
            return False

    def table_names(self) -> list[str]:
        """The names of the tables the store holds (held, when pinned to a snapshot)."""
        if self.pinned is not None:
            return sorted(self.pinned)
        return list(self.run(self._db.list_tables).tables)

    def unreadable_tables(self) -> dict[str, str]:
        """``{table: why}`` for each table that cannot be read through (a data file deleted or
        damaged). Counting rows reads only the manifest, so one column of every row is read here."""
        problems = {}
        for name in self.table_names():
            try:
                table = self._table(name)
                column = table.schema.names[0]
                self.run(lambda table=table, column=column: table.search().select([column]).limit(None).to_arrow())
            except OpenVikingError as exc:
                problems[name] = exc.message
        return problems

    def restore_readable(self, name: str) -> dict[str, Any]:
        """Bring table ``name`` back to its newest version that reads through, and say what that lost.

        A manifest that cannot be parsed is set aside (into ``_damaged/`` beside the table's
        versions) until the table opens; then each version, newest first, is read whole, and
        the first that reads becomes the latest again (LanceDB's restore: a new version with
        that one's rows). Only a store on a local disk can be mended so.

        Raises:
            FailedPreconditionError: the store is on object storage, or no version reads.
        """
        if self.location is not None:
            raise FailedPreconditionError(
                f"Table {name} of {self.path} is damaged; a store on object storage is not mended in place",
                hint="Restore the bucket's objects from a copy",
                details={"table": name},
            )
        with self.write_lock():
            set_aside = self._open_setting_aside(name)
            table = self._tables[name]
            versions = sorted(int(v["version"]) for v in self.run(table.list_versions))
            latest = versions[-1]
            try:
                rows_before: int | None = int(table.count_rows())
            except Exception:  # the manifest reads no better than the data: nothing to say
                rows_before = None
            for version in reversed(versions):
                try:
                    table.checkout(version)
                    rows_after = table.to_arrow().num_rows
                except Exception:
                    continue
                if version != latest:
                    table.checkout_latest()
                    self.run(lambda version=version: table.restore(version))
                    committed()
                else:
                    table.checkout_latest()
                return {
                    "table": name,
                    "version": version,
                    "latest": latest,
                    "rows_before": rows_before,
                    "rows_after": rows_after,
                    "manifests_set_aside": set_aside,
                }
        raise FailedPreconditionError(f"No version of table {name} of {self.path} can be read", details={"table": name})

    def _open_setting_aside(self, name: str) -> list[str]:
        """Open table ``name``, setting aside its newest manifests while they cannot be parsed."""
        versions_dir = Path(self.path, f"{name}.lance", "_versions")
        set_aside: list[str] = []
        while True:
            self._tables.pop(name, None)
            self._missing.pop(name, None)
            try:
                self._tables[name] = self._db.open_table(name)
                self._tables[name].count_rows()
                return set_aside
            except Exception as exc:
                manifests = sorted(versions_dir.glob("*.manifest"), key=_manifest_version)
                if len(manifests) < 2:
                    raise _translate(exc, f"Cannot open table {name}") from exc
                newest = manifests[-1]
                aside = versions_dir.parent / "_damaged"
                aside.mkdir(exist_ok=True)
                newest.rename(aside / newest.name)
                (versions_dir / "latest_version_hint.json").unlink(missing_ok=True)
                set_aside.append(newest.name)

    def _table(self, name: str) -> Any:
        if not self._has_table(name):
            raise NotFoundError(f"The store at {self.path} has no {name} table", details={"table": name})
        return self._tables[name]

    # ------------------------------------------------------------------ locking
    @contextlib.contextmanager
    def write_lock(self) -> Iterator[None]:
        """Hold the store's write lock (re-entrant): a file lock on disk, a lease in the bucket.

        Raises:
            FailedPreconditionError: the store is pinned to a snapshot, which is read-only.
        """
        if self.pinned is not None:
            raise FailedPreconditionError(
                f"{self.pinned_as} is read-only",
                hint="Write to the store as it is now, without as_of",
                details={"as_of": self.pinned_as},
            )
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
                self._wrote()
                self._lock_depth -= 1
                if self._lock_depth == 0:
                    self._released()
                    self.lock.release()

    @contextlib.contextmanager
    def embedding_lock(self, *, wait: bool) -> Iterator[bool]:
        """Hold the lock of whoever embeds the records that wait for their vectors (a lock apart
        from the write lock, which the embedding takes only to commit). Yields True once held;
        with ``wait`` false, False at once when another process (or thread) holds it.

        Raises:
            FailedPreconditionError: the store is pinned to a snapshot, which is read-only.
        """
        if self.pinned is not None:
            raise FailedPreconditionError(f"{self.pinned_as} is read-only", details={"as_of": self.pinned_as})
        lock: FileLock | Lease
        if self.location is not None:
            lock = Lease(self.location, self.lease_seconds, EMBEDDING_LEASE_KEY)
        else:
            lock = FileLock(self.path, EMBEDDING_LOCK_FILE)
        try:
            held = True
            if wait:
                lock.acquire()
            else:
                held = lock.try_acquire()
        except OSError as exc:
            raise _translate(exc, f"Cannot write to the store {self.path}") from exc
        try:
            yield held
        finally:
            if held:
                lock.release()

    def _wrote(self) -> None:
        """After each write (for caches of what it may have changed)."""

    def _released(self) -> None:
        """After the last write under one take of the lock."""

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
                done = call()
                committed()
                return done
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
                self._tables[name] = self.create_table(name, table_schema)
            table = self._tables[name]
            self._commit(
                table,
                lambda: table.merge_insert(key).when_matched_update_all().when_not_matched_insert_all().execute(data),
            )
            self._rows_written(name)

    def _append_rows(self, name: str, rows: list[dict[str, Any]], table_schema: pa.Schema) -> None:
        """Append rows known to be new to table ``name`` (made on first use): no merge, which
        would read every row of the table to look for their keys."""
        if not rows:
            return
        import pyarrow as pa

        data = pa.Table.from_pylist(rows, schema=table_schema)
        with self.write_lock():
            if not self._has_table(name):
                self._tables[name] = self.create_table(name, table_schema)
            table = self._tables[name]
            self._commit(table, lambda: table.add(data))
            self._rows_written(name)

    def _rows_written(self, name: str) -> None:
        """After rows of table ``name`` were written, under the write lock (to keep it compact)."""

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

    def create_table(self, name: str, table_schema: pa.Schema, *, exist_ok: bool = True) -> Any:
        """Make table ``name`` (under the write lock) and return its handle."""
        with self.write_lock():
            table = self.run(lambda: self._db.create_table(name, schema=table_schema, exist_ok=exist_ok))
            committed()
            self._tables[name] = table
            self._missing.pop(name, None)
            return table

    def drop_table(self, name: str) -> None:
        """Remove table ``name`` and its files (nothing happens when it does not exist)."""
        with self.write_lock():
            self._tables.pop(name, None)
            try:
                self._db.drop_table(name)
            except (FileNotFoundError, ValueError):
                return
            committed()

    def _delete_rows(self, name: str, where: str) -> None:
        """Delete the rows of table ``name`` matching ``where``."""
        if not self._has_table(name):
            return
        with self.write_lock():
            self._commit(self._tables[name], lambda: self._tables[name].delete(where))
            self._rows_written(name)


def _manifest_version(path: Path) -> int:
    # Lance names manifests by version, or (its newer scheme) by u64::MAX minus the version,
    # so that the newest sorts first in a listing.
    number = int(path.stem) if path.stem.isdigit() else 0
    return 2**64 - 1 - number if number >= 2**63 else number


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
# What Lance says of a data file or manifest that is missing or damaged (and a panic, which
# is how it meets a manifest it cannot parse).
_DAMAGE = re.compile(
    r"not found: \S+\.lance\b|corrupt|failed to fill whole buffer|invalid range|panicked|"
    r"unexpected eof|too small|LanceError\(IO\)",
    re.IGNORECASE,
)
DAMAGE_HINT = "Run openviking doctor to see what is damaged, and openviking doctor --repair to mend it"


def _translate(exc: Exception, context: str, location: Location | None = None) -> OpenVikingError:
    if location is not None:
        return storage_error(exc, location, context)
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    message = _RUST_LOCATION.sub("", message)
    if isinstance(exc, FileNotFoundError):
        return NotFoundError(f"{context}: {message}")
    if type(exc).__name__ == "RustPanic" or not isinstance(exc, OSError) and _DAMAGE.search(message):
        return StoreDamagedError(f"{context}: {message}", hint=DAMAGE_HINT, details={"error": type(exc).__name__})
    if isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return StoreNotWritableError(
            f"{context}: {exc.strerror or message}",
            hint="The store is read-only here; reads still work. Name a writable directory as the store to change it.",
            details={"error": type(exc).__name__, "errno": exc.errno},
        )
    return InternalError(f"{context}: {message}", details={"error": type(exc).__name__})
