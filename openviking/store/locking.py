"""The store's write lock: an OS file lock on a local disk, a lease in the bucket on object storage.

Writers must take turns: LanceDB's commits never lose one another (on S3 each manifest is put
with ``If-None-Match: *``), but two concurrent ``merge_insert`` of the same new keys both insert
them (measured: 8 writers x 10 rounds of 50 shared keys left 150 duplicate rows on a local S3
server, 50 on disk; bench/README.md), and every write here reads the store, decides, then
writes (which files are new, which folders exist) and is only right if nobody wrote in between.

:class:`FileLock` is ``flock`` on ``.openviking.lock``: the kernel hands it over at once and
frees it when its holder dies. :class:`Lease` does the same across machines with one object,
``.openviking.lease``, next to the tables: taken with a conditional put (``If-None-Match: *``
when there is none, ``If-Match`` on the version seen when it is free or expired), renewed by a
thread every third of its term while the write runs, and released by marking it free. A waiter
that sees the same version for a whole term takes it over: its holder stopped renewing (it
died, or lost the network). The term is timed on each machine's own monotonic clock from what
it saw, so no two clocks need agree; a holder stops writing when two thirds of the term have
passed since its last renewal was sent, before any waiter can have taken over.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import socket
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any, Protocol

from openviking.errors import UnavailableError

if TYPE_CHECKING:
    from .objectstore import Location

__all__ = ["EMBEDDING_LEASE_KEY", "EMBEDDING_LOCK_FILE", "LEASE_KEY", "LOCK_FILE", "FileLock", "Lease", "WriteLock"]

LOCK_FILE = ".openviking.lock"
LEASE_KEY = ".openviking.lease"
# Held by whoever embeds the records that wait for their vectors (a lock of its own: the
# embedding runs outside the write lock, and two embedders must never take the same records).
EMBEDDING_LOCK_FILE = ".openviking.embedding.lock"
EMBEDDING_LEASE_KEY = ".openviking.embedding.lease"
# How often a waiter looks at the lease: each look is one GET. Short at first (a batch's
# commits take tens of milliseconds), then every 0.1 s: 8 writers of 100 files each took
# 16.2 s against 19.8 s with looks every 0.5 s (bench/README.md, object storage).
POLL_FIRST = 0.02
POLL_MAX = 0.1
# A request to the bucket that fails for a reason other than a lost race (the network) is
# tried this many times before the write gives up.
REQUEST_TRIES = 4


class WriteLock(Protocol):
    """What the store needs of its write lock."""

    def acquire(self) -> None:
        """Block until this process holds the lock."""

    def release(self) -> None:
        """Let the next writer in (never raises)."""

    def check(self) -> None:
        """Raise when the lock is no longer surely held (a lease that may have expired)."""


class FileLock:
    """``flock`` on ``.openviking.lock`` (or ``name``) in the store's directory."""

    def __init__(self, directory: str, name: str = LOCK_FILE) -> None:
        self.path = os.path.join(directory, name)
        self._fd: int | None = None

    def acquire(self) -> None:
        self._take(blocking=True)

    def try_acquire(self) -> bool:
        """Take the lock if no one holds it; False at once if someone does."""
        return self._take(blocking=False)

    def _take(self, *, blocking: bool) -> bool:
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)  # OSError: the caller words it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing releases the flock
            self._fd = None

    def check(self) -> None:
        return None


class Lease:
    """The write lease of a store on object storage (see the module docstring)."""

    def __init__(self, location: Location, seconds: float, key: str = LEASE_KEY) -> None:
        self.location = location
        self.key = key
        self.seconds = float(seconds)
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._store: Any = None
        self._etag: str | None = None  # the version this process put last, while it holds the lease
        self._free_etag: str | None = None  # the version it put when it last let go
        self._renewed_at = 0.0  # monotonic time the last successful put was sent
        self._renewals = 0
        self._lost = False
        self._io = threading.Lock()  # the renewing thread and release() never put at once
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ the protocol
    def acquire(self) -> None:
        started = time.monotonic()
        self._lost = False
        if self._free_etag is not None and self._put(self._body("held"), self._free_etag):
            self._held(started)
            return
        seen: tuple[str, float] | None = None  # a holder's version, and when it was first seen
        delay = POLL_FIRST
        while True:
            current = self._get()
            sent = time.monotonic()
            if current is None:
                if self._put(self._body("held"), None):
                    self._held(sent)
                    return
                continue  # another writer created it first
            body, etag = current
            if body.get("state") == "free" and self._put(self._body("held"), etag):
                self._held(sent)
                return
            if body.get("state") != "free":
                if seen is None or seen[0] != etag:
                    seen = (etag, sent)
                elif sent - seen[1] >= _term(body, self.seconds) and self._put(self._body("held"), etag):
                    self._held(sent)  # its holder stopped renewing: it is gone
                    return
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, POLL_MAX)

    def try_acquire(self) -> bool:
        """Take the lease if it is free (or there is none); False at once if it is held, however
        long ago its holder last renewed it: only :meth:`acquire`, which watches it for a term,
        takes over from a holder that is gone."""
        self._lost = False
        current = self._get()
        sent = time.monotonic()
        if current is None:
            taken = self._put(self._body("held"), None)
        else:
            body, etag = current
            taken = body.get("state") == "free" and self._put(self._body("held"), etag)
        if taken:
            self._held(sent)
        return taken

    def release(self) -> None:
        self._stop_renewing()
        with self._io:
            etag, self._etag = self._etag, None
            if etag is None or self._lost:
                return
            with contextlib.suppress(Exception):  # unreleased, it expires after its term
                self._free_etag = self._put_or_none(self._body("free"), etag)

    def check(self) -> None:
        if self._lost or time.monotonic() - self._renewed_at > self.seconds * 2 / 3:
            raise UnavailableError(
                "This write lost the store's write lease (it could not renew it in time, and another "
                "writer may have taken it over); nothing more was written",
                hint="Run the same command again: it picks up where it stopped",
                details={"store": self.location.url, "lease_seconds": self.seconds},
            )

    # ------------------------------------------------------------------ holding
    def _held(self, sent: float) -> None:
        self._renewed_at = sent
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._renew_loop, args=(self._stop,), name="openviking-lease", daemon=True
        )
        self._thread.start()

    def _renew_loop(self, stop: threading.Event) -> None:
        while not stop.wait(self.seconds / 3):
            with self._io:
                if stop.is_set() or self._etag is None:
                    return
                sent = time.monotonic()
                try:
                    etag = self._put_or_none(self._body("held"), self._etag)
                except Exception:  # the network: try again at the next tick; check() sees the age
                    continue
                if etag is None:
                    self._lost = True  # another writer took it over
                    return
                self._etag, self._renewed_at = etag, sent

    def _stop_renewing(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.seconds)
        self._stop = self._thread = None

    def _body(self, state: str) -> bytes:
        self._renewals += 1
        from datetime import UTC, datetime

        return json.dumps(
            {
                "state": state,
                "holder": self.holder,
                "seconds": self.seconds,
                "renewal": self._renewals,  # every body differs, so every put makes a new version
                "at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
        ).encode()

    # ------------------------------------------------------------------ requests
    def _client(self) -> Any:
        if self._store is None:
            self._store = self.location.object_store()
        return self._store

    def _get(self) -> tuple[dict[str, Any], str] | None:
        import obstore

        def get() -> tuple[dict[str, Any], str] | None:
            try:
                result = obstore.get(self._client(), self.key)
                data = bytes(result.bytes())
            except FileNotFoundError:
                return None
            try:
                body = json.loads(data)
            except ValueError:
                body = {}
            return (body if isinstance(body, dict) else {}), str(result.meta["e_tag"])

        found: tuple[dict[str, Any], str] | None = self._retrying(get)
        return found

    def _put(self, body: bytes, etag: str | None) -> bool:
        """Put ``body`` if the lease is still at version ``etag`` (None: if there is none);
        on success this process holds it."""
        new = self._put_or_none(body, etag)
        if new is None:
            return False
        self._etag = new
        return True

    def _put_or_none(self, body: bytes, etag: str | None) -> str | None:
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        def put() -> str | None:
            try:
                mode: Any = "create" if etag is None else {"e_tag": etag}
                result = obstore.put(self._client(), self.key, body, mode=mode)
            except (AlreadyExistsError, PreconditionError, FileExistsError):
                return None  # another writer's put came first
            return str(result["e_tag"])

        new: str | None = self._retrying(put)
        return new

    def _retrying(self, call: Any) -> Any:
        from .objectstore import storage_error

        for attempt in range(REQUEST_TRIES):
            try:
                return call()
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # obstore's errors, and a panic of its Rust side
                error = storage_error(exc, self.location, "Cannot take the store's write lease")
                if error.code != "UNAVAILABLE" or attempt == REQUEST_TRIES - 1:
                    raise error from None
                time.sleep(0.2 * 2**attempt)
        raise AssertionError("unreachable")


def _term(body: dict[str, Any], default: float) -> float:
    """The term its holder declared (a writer with another setting is waited for as it asked)."""
    seconds = body.get("seconds")
    return float(seconds) if isinstance(seconds, int | float) and 0 < seconds < 3600 else default
