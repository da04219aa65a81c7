"""The server's one background embedder: it makes the vectors that writes leave waiting.

An add told not to wait (``wait: false``) answers once its text is written and found by its
words; this thread then makes its vectors, a batch at a time, with no lock held while it
embeds, so requests go on being answered meanwhile. It runs once at start-up (what a stopped
add or a killed process left), whenever a write wakes it, and every ``POLL_SECONDS`` (what
another process's add left), each time through the interface's ``index``; it stops between
two batches when the server stops.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from openviking.errors import OpenVikingError

if TYPE_CHECKING:
    from openviking.contract.interface import OpenVikingClient

__all__ = ["Indexer"]

log = logging.getLogger("openviking.server")

POLL_SECONDS = 30.0
STOP_SECONDS = 10.0  # how long stopping waits for the batch being embedded


class _Stopping(Exception):
    """Raised between two batches once the server stops."""


class Indexer:
    """A thread that calls ``client.index()`` when woken, at start and every ``poll`` seconds."""

    def __init__(self, client: OpenVikingClient, poll: float = POLL_SECONDS) -> None:
        self.client = client
        self.poll = poll
        self._woken = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="openviking-indexer", daemon=True)

    def start(self) -> None:
        self._woken.set()
        self._thread.start()

    def wake(self) -> None:
        """Make the waiting vectors now (an add that did not wait just answered)."""
        self._woken.set()

    def stop(self) -> None:
        """Stop after the batch being embedded (waiting at most ``STOP_SECONDS``)."""
        self._stopping.set()
        self._woken.set()
        if self._thread.is_alive():
            self._thread.join(timeout=STOP_SECONDS)

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._woken.wait(self.poll)
            self._woken.clear()
            if self._stopping.is_set():
                return
            try:
                done = self.client.index(progress=self._go_on)
            except _Stopping:
                return
            except OpenVikingError as exc:
                log.warning("making the waiting vectors failed (%s); trying again in %.0f s", exc.message, self.poll)
                continue
            if done.records_embedded:
                log.info("made the vectors of %d record(s) in %.1f s", done.records_embedded, done.seconds)

    def _go_on(self, done: int, total: int) -> None:
        if self._stopping.is_set():
            raise _Stopping
