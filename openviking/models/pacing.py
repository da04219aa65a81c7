"""Requests to a model server: several in flight at once, each tried again with backoff when its
failure may pass, and all of them held back while the server says it is rate limited.

A request that fails with what may pass (HTTP 429, 408, 409, 5xx, a timeout, no connection)
raises :class:`Transient`; it is tried again after the server's ``Retry-After`` (or
``retry-after-ms``) when it gave one, else after an exponential backoff from 0.5 s capped at
8 s (upstream's), jittered so that the requests in flight do not all come back at once. A 429
holds back every request of the :class:`Pacer` until its wait is over, not only the one that
got it: the server's limit is for all of them.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from email.utils import parsedate_to_datetime
from typing import TypeVar

from openviking.errors import OpenVikingError

__all__ = ["Pacer", "Transient", "retry_after"]

T = TypeVar("T")
X = TypeVar("X")

FIRST_BACKOFF = 0.5
MAX_BACKOFF = 8.0
# The longest Retry-After obeyed as it is: a server asking for more is waited for this long.
MAX_RETRY_AFTER = 300.0
TRANSIENT_STATUSES = frozenset({408, 409, 429})


def transient_status(status: int) -> bool:
    """Whether an answer with HTTP ``status`` may pass if the request is sent again."""
    return status in TRANSIENT_STATUSES or status >= 500


class Transient(Exception):
    """A request's failure that may pass: ``error`` is raised once the tries run out."""

    def __init__(self, error: OpenVikingError, *, wait: float | None = None, rate_limited: bool = False) -> None:
        super().__init__(error.message)
        self.error = error
        self.wait = wait
        self.rate_limited = rate_limited


def retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The seconds a server asks for in ``retry-after-ms`` or ``Retry-After`` (seconds or an
    HTTP date), or None."""
    lowered = {k.lower(): v for k, v in headers.items()}
    try:
        if "retry-after-ms" in lowered:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        if "retry-after" in lowered:
            value = lowered["retry-after"].strip()
            if value.replace(".", "", 1).isdigit():
                return float(value)
            moment = parsedate_to_datetime(value).timestamp()
            return max(0.0, moment - (time.time() if now is None else now))
    except (ValueError, TypeError, OverflowError):
        return None
    return None


class _NotSent(Exception):
    """A request of a map left unsent because another failed."""


class Pacer:
    """At most ``concurrency`` requests in flight, each tried up to ``retries`` times more."""

    def __init__(self, concurrency: int = 1, retries: int = 0) -> None:
        self.concurrency = max(1, concurrency)
        self.retries = max(0, retries)
        self._lock = threading.Lock()
        self._held_until = 0.0  # monotonic time before which no request is sent

    def call(self, request: Callable[[], T]) -> T:
        """``request()``, tried again while it raises :class:`Transient` and tries are left.

        Raises:
            OpenVikingError: its error, once no try is left (or at once when it is not transient).
        """
        for attempt in range(self.retries + 1):
            self._wait_turn()
            try:
                return request()
            except Transient as failed:
                if attempt == self.retries:
                    raise failed.error from None
                pause = failed.wait if failed.wait is not None else self._backoff(attempt)
                pause = min(pause, MAX_RETRY_AFTER)
                if failed.rate_limited:
                    self._hold(pause)
                else:
                    time.sleep(pause)
        raise AssertionError("unreachable")

    def map(self, request: Callable[[X], T], items: Sequence[X]) -> list[T]:
        """``[call(lambda: request(item)) for item in items]``, up to ``concurrency`` at once, in
        order; after the first error no request is sent, and it is raised once those under way
        have ended."""
        calls = [functools.partial(request, item) for item in items]
        if self.concurrency == 1 or len(calls) < 2:
            return [self.call(one) for one in calls]
        failed = threading.Event()

        def guarded(one: Callable[[], T]) -> T:
            if failed.is_set():
                raise _NotSent
            try:
                return self.call(one)
            except BaseException:
                failed.set()
                raise

        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(calls))) as pool:
            futures = [pool.submit(guarded, one) for one in calls]
            try:
                wait(futures, return_when=FIRST_EXCEPTION)
            finally:
                for future in futures:
                    future.cancel()
        errors = [f.exception() for f in futures if not f.cancelled() and f.exception() is not None]
        first = next((e for e in errors if not isinstance(e, _NotSent)), None)
        if first is not None:
            raise first
        return [future.result() for future in futures]

    def _backoff(self, attempt: int) -> float:
        return float(min(MAX_BACKOFF, FIRST_BACKOFF * 2**attempt) * random.uniform(0.5, 1.0))

    def _hold(self, seconds: float) -> None:
        """Hold every request back for ``seconds`` from now (a 429)."""
        with self._lock:
            self._held_until = max(self._held_until, time.monotonic() + seconds)

    def _wait_turn(self) -> None:
        while True:
            with self._lock:
                left = self._held_until - time.monotonic()
            if left <= 0:
                return
            time.sleep(left)
