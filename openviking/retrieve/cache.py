"""One cache for grep and glob: what they read of a store, kept while its nodes table is unchanged.

A warm SDK client asks the same store again and again: grep keeps the files it read (their
content and the line index it builds on them), glob the URIs below a directory. Every write
to a store changes its nodes table's version (``LanceStore.nodes_version``), so an entry is
found only under the store and version it was read at, and putting one drops every entry of
another version of the same store. One bound covers both commands' entries: a byte budget and
a number of entries, the least recently used going first.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["CACHE", "CACHE_MAX_BYTES", "CACHE_MAX_ENTRIES", "VersionCache"]

CACHE_MAX_BYTES = 512 * 1024 * 1024
CACHE_MAX_ENTRIES = 8

T = TypeVar("T")


@dataclass(frozen=True)
class _Entry:
    store: str
    version: int
    value: Any
    nbytes: int


class VersionCache:
    """Values read from stores, keyed by the store's path and its nodes table version."""

    def __init__(self, max_bytes: int, max_entries: int) -> None:
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._items: OrderedDict[int, _Entry] = OrderedDict()
        self._keys = itertools.count()
        self._lock = threading.Lock()

    def find(self, store: str, version: int, kind: type[T], accept: Callable[[T], bool]) -> T | None:
        """The most recently used value of ``store`` at ``version`` that is a ``kind`` and that
        ``accept`` takes, or None."""
        with self._lock:
            for key, entry in reversed(self._items.items()):
                if (
                    entry.store == store
                    and entry.version == version
                    and isinstance(entry.value, kind)
                    and accept(entry.value)
                ):
                    self._items.move_to_end(key)
                    return entry.value
            return None

    def put(self, store: str, version: int, value: object, nbytes: int) -> None:
        """Keep ``value`` (about ``nbytes`` of memory) as read from ``store`` at ``version``."""
        with self._lock:
            for key in [k for k, e in self._items.items() if e.store == store and e.version != version]:
                del self._items[key]  # another version of the same store is dead
            if nbytes > self.max_bytes:
                return
            self._items[next(self._keys)] = _Entry(store, version, value, nbytes)
            while len(self._items) > self.max_entries or sum(e.nbytes for e in self._items.values()) > self.max_bytes:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


# The process's one cache, shared by grep and glob.
CACHE = VersionCache(CACHE_MAX_BYTES, CACHE_MAX_ENTRIES)
