"""The fetches a server makes for its callers (an add of an ``http(s)://`` URL): at most
:data:`FETCHES_PER_CALLER` at once for one caller and :data:`FETCHES_IN_ALL` in all.

A fetch holds a worker thread until its answer is read (at most ``OPENVIKING_FETCH_TIMEOUT``),
so slow servers could otherwise hold every thread the routes run in while no other caller got
an answer; one fetch more than the bounds is refused at once (503), costing nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from openviking.errors import UnavailableError

__all__ = ["FETCHES_IN_ALL", "FETCHES_PER_CALLER", "Fetches"]

FETCHES_PER_CALLER = 2
FETCHES_IN_ALL = 8  # of the 40 threads the routes run in


class Fetches:
    """The fetches under way, by caller."""

    def __init__(self, in_all: int = FETCHES_IN_ALL, per_caller: int = FETCHES_PER_CALLER) -> None:
        self.in_all = in_all
        self.per_caller = per_caller
        self._lock = threading.Lock()
        self._under_way: dict[str, int] = {}

    @contextmanager
    def slot(self, caller: str) -> Iterator[None]:
        """One fetch for ``caller`` (an upload owner's name), for as long as the block runs.

        Raises:
            UnavailableError: the caller, or the server, has as many fetches under way as it may.
        """
        with self._lock:
            mine = self._under_way.get(caller, 0)
            if mine >= self.per_caller:
                raise UnavailableError(
                    f"You have {mine} fetches under way already, as many as this server makes for one caller",
                    hint="Wait for one to end, then add the URL again",
                    details={"limit": self.per_caller},
                )
            if sum(self._under_way.values()) >= self.in_all:
                raise UnavailableError(
                    f"The server has {self.in_all} fetches under way already, as many as it makes at once",
                    hint="Add the URL again shortly",
                    details={"limit": self.in_all},
                )
            self._under_way[caller] = mine + 1
        try:
            yield
        finally:
            with self._lock:
                self._under_way[caller] -= 1
                if not self._under_way[caller]:
                    del self._under_way[caller]
