"""Watched sources: each one's state, kept in the store's meta, and the claim of the process
that watches it.

A watched source is a row of ``meta`` (``watch:<uri>``, JSON: the local path, the target URI,
the globs and tags of its add, the polling interval, whether it is paused, and its last sync),
so it survives restarts and every process that opens the store sees it. Only one process
watches a source at a time: the watcher holds an ``flock`` on a file of its own, named from the
source's URI, next to the tables (in ``$OPENVIKING_HOME`` for a store in a bucket, where a
local path can only be watched from this machine anyway). The kernel frees it when its holder
dies, so a watcher killed with kill -9 is replaced by the next one at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .lance import LanceStore

__all__ = [
    "WatchClaim",
    "change_watch",
    "claim_watch",
    "forget_watch",
    "save_watch",
    "watch_holder",
    "watch_state",
    "watch_states",
]

KEY_PREFIX = "watch:"


def save_watch(store: LanceStore, state: dict[str, Any]) -> None:
    """Store the state of the watched source ``state["to_uri"]`` (replacing the one stored)."""
    store.set_meta({KEY_PREFIX + state["to_uri"]: json.dumps(state, sort_keys=True)})


def watch_states(store: LanceStore) -> list[dict[str, Any]]:
    """Every watched source's state, oldest first."""
    states = []
    for key, value in store.meta().items():
        if key.startswith(KEY_PREFIX) and value:
            state = _parsed(value)
            if state is not None:
                states.append(state)
    return sorted(states, key=lambda s: (str(s.get("created_at", "")), str(s.get("to_uri", ""))))


def watch_state(store: LanceStore, uri: str) -> dict[str, Any] | None:
    """The state of the source watched at ``uri``, or None."""
    return _parsed(store.meta().get(KEY_PREFIX + uri) or "")


def change_watch(store: LanceStore, uri: str, fields: dict[str, Any]) -> dict[str, Any] | None:
    """Set ``fields`` of the state of ``uri`` as it is stored now (under the write lock, so a
    sync recording its outcome and a pause from another process both land); None, and nothing
    written, when ``uri`` is no longer watched."""
    with store.write_lock():
        state = watch_state(store, uri)
        if state is None:
            return None
        state.update(fields)
        save_watch(store, state)
        return state


def forget_watch(store: LanceStore, uri: str) -> None:
    """Stop recording ``uri`` as watched (what it added stays)."""
    store.delete_meta([KEY_PREFIX + uri])


def _parsed(value: str) -> dict[str, Any] | None:
    try:
        state = json.loads(value)
    except ValueError:
        return None
    return state if isinstance(state, dict) and isinstance(state.get("to_uri"), str) else None


class WatchClaim:
    """This process's claim on watching one source: an ``flock`` held until :meth:`release`."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing releases the flock
            self._fd = None


def claim_watch(store_path: str, uri: str) -> WatchClaim | None:
    """This process's claim on watching ``uri`` of the store at ``store_path``, or None when
    another process holds it."""
    import fcntl

    path = _claim_file(store_path, uri)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    holder = f"pid {os.getpid()} on {socket.gethostname()}".encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, holder, 0)
    return WatchClaim(path, fd)


def watch_holder(store_path: str, uri: str) -> str | None:
    """Who watches ``uri`` now (``pid 123 on host``), or None when no process does."""
    import fcntl

    path = _claim_file(store_path, uri)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
        return None
    finally:
        os.close(fd)  # a shared lock taken only to look is released with it


def _claim_file(store_path: str, uri: str) -> Path:
    name = f".openviking.watch-{hashlib.sha256(uri.encode()).hexdigest()[:16]}.lock"
    if "://" not in store_path:
        return Path(store_path) / name
    from openviking.config import config_home

    where = hashlib.sha256(store_path.encode()).hexdigest()[:16]
    return config_home() / "watching" / where / name
