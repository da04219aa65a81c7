"""Every regex run of a grep or glob under one deadline: nothing a pattern does can run unbounded.

A search gets a :class:`Deadline` (:data:`DEFAULT_SECONDS`, or ``OPENVIKING_GREP_TIMEOUT``
seconds), and each run of a pattern goes where it can be stopped in time:

* **RE2** (pyarrow's ``match_substring_regex``) is linear in the text, and at worst costs
  about :data:`NS_PER_POSITION_BYTE` per byte per position of the pattern
  (:func:`.re2repeat.positions`; mostly its DFA runs at a few nanoseconds a byte whatever the
  pattern). Work whose worst case is under :data:`INLINE_SECONDS` runs here in one call; more
  is cut into chunks of at most :data:`CHUNK_SECONDS` of worst case (two threads at a time,
  the deadline checked as each ends); what cannot be cut so small (a line longer than a
  chunk, a pattern with too many positions for chunks of :data:`MIN_CHUNK_BYTES`) runs in the
  worker process. A native call cannot be stopped, so the worst overshoot of the deadline
  here is one chunk's worst case.
* **Python's** ``re`` (back-references, look-around, atomic groups and possessive repeats;
  Unicode ``\\b`` on non-ASCII lines; everything when the translator is off) backtracks, and
  one line can take exponential time, so it always runs in the worker process
  (:mod:`.regex_worker`), on at most :data:`MAX_PYTHON_BYTES` of candidate lines per search,
  sent :data:`BATCH_BYTES` at a time.
* The worker is killed when the deadline passes (and a new one started for the next search).

Past the deadline, or over the input cap, the search fails with ``DEADLINE_EXCEEDED``.
"""

from __future__ import annotations

import atexit
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openviking.config import env_number
from openviking.errors import DeadlineExceededError, InternalError
from openviking.system.workers import WorkerProcess

from .arrays import take, to_bool

if TYPE_CHECKING:
    import re

    import numpy as np
    import pyarrow as pa

__all__ = [
    "DEFAULT_SECONDS",
    "MAX_PYTHON_BYTES",
    "Deadline",
    "python_search",
    "python_spans",
    "re2_mask",
    "re2_replace",
]

DEFAULT_SECONDS = 5.0
TIMEOUT_ENV = "OPENVIKING_GREP_TIMEOUT"
# RE2's worst case, measured on this project's catastrophic patterns (the highest was ~40 ns).
NS_PER_POSITION_BYTE = 50
INLINE_SECONDS = 0.5
CHUNK_SECONDS = 2.0
# RE2 compiles the pattern at each call, in time that grows with it too: a pattern that would
# need smaller chunks than this runs whole in the worker.
MIN_CHUNK_BYTES = 1024 * 1024
# Below this many bytes one thread is faster than two.
PARALLEL_MIN_BYTES = 4 * 1024 * 1024
MAX_PYTHON_BYTES = 64 * 1024 * 1024
BATCH_BYTES = 4 * 1024 * 1024
HINT = (
    "Search fewer files (a narrower uri, a smaller level_limit), or write the pattern without "
    "back-references, look-around or huge counts, which RE2 runs in linear time"
)


class Deadline:
    """When a search's regex work must be over."""

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = default_seconds() if seconds is None else seconds
        self.ends = time.monotonic() + self.seconds

    def left(self) -> float:
        """Seconds left (negative once past)."""
        return self.ends - time.monotonic()

    def check(self, what: str) -> None:
        """Raises:
        DeadlineExceededError: the deadline has passed."""
        if self.left() <= 0:
            raise self.exceeded(what)

    def exceeded(self, what: str, **details: Any) -> DeadlineExceededError:
        """The error for a search stopped at the deadline while ``what`` ran."""
        return DeadlineExceededError(
            f"The search took longer than {self.seconds:g} s ({what}), and was stopped",
            hint=HINT + f"; {TIMEOUT_ENV}=SECONDS allows more time",
            details={"seconds": self.seconds, "stage": what, **details},
        )


def default_seconds() -> float:
    """:data:`DEFAULT_SECONDS`, or ``OPENVIKING_GREP_TIMEOUT`` when it holds a positive number.

    Raises:
        InvalidArgumentError: the variable holds something else.
    """
    return env_number(TIMEOUT_ENV, DEFAULT_SECONDS, "seconds")


# ---------------------------------------------------------------------------------------------
# RE2


def worst_seconds(size: int, positions: int) -> float:
    """What ``size`` bytes can cost RE2 at worst, for a pattern of ``positions`` positions."""
    return size * max(positions, 1) * NS_PER_POSITION_BYTE * 1e-9


def re2_mask(values: pa.Array, regex: str, positions: int, deadline: Deadline) -> np.ndarray:
    """Which strings of ``values`` RE2 ``regex`` finds a match in.

    Raises:
        DeadlineExceededError: the deadline passed first.
    """
    import numpy as np
    import pyarrow.compute as pc

    def here(part: pa.Array) -> np.ndarray:
        return to_bool(pc.match_substring_regex(part, regex))

    def there(part: pa.Array) -> np.ndarray:
        found = _in_worker("re2", (regex, part.to_pylist()), deadline, "RE2 on long lines")
        return np.frombuffer(found, dtype=np.uint8).astype(bool)

    mask: np.ndarray = _run_re2(values, positions, deadline, here, there, np.zeros(len(values), dtype=bool))
    return mask


def re2_replace(values: pa.Array, regex: str, replacement: str, positions: int, deadline: Deadline) -> list[str]:
    """``values`` with every match of RE2 ``regex`` replaced (``\\0`` is the match).

    Raises:
        DeadlineExceededError: the deadline passed first.
    """
    import pyarrow.compute as pc

    out: list[Any] = [None] * len(values)

    def here(part: pa.Array) -> list[str]:
        listed: list[str] = pc.replace_substring_regex(part, regex, replacement).to_pylist()
        return listed

    def there(part: pa.Array) -> list[str]:
        listed: list[str] = _in_worker(
            "re2_replace", (regex, part.to_pylist(), replacement), deadline, "RE2 on long lines"
        )
        return listed

    return list(_run_re2(values, positions, deadline, here, there, out))


def _run_re2(
    values: pa.Array,
    positions: int,
    deadline: Deadline,
    here: Callable[[pa.Array], Any],
    there: Callable[[pa.Array], Any],
    out: Any,
) -> Any:
    """``here`` over the parts of ``values`` cheap enough to run in this process, ``there`` over
    the rest, their answers put in ``out`` (an array or list, one entry per value)."""
    import numpy as np

    count = len(values)
    if not count:
        return out
    total = values.nbytes
    parallel = total >= PARALLEL_MIN_BYTES and count > 1
    if worst_seconds(total, positions) <= INLINE_SECONDS and not parallel:
        return _put(out, np.arange(count), here(values))
    deadline.check("RE2")
    chunk = int(CHUNK_SECONDS / worst_seconds(1, positions))
    if chunk < MIN_CHUNK_BYTES:
        return _put(out, np.arange(count), there(values))
    sizes = _byte_sizes(values)
    long = sizes > chunk
    if long.any():
        index = np.flatnonzero(long)
        _put(out, index, there(take(values, index)))
    short = np.flatnonzero(~long)
    # two threads get two halves at least; consecutive values are zero-copy slices
    groups = _chunks(sizes[short], min(chunk, total // 2 + 1) if parallel else chunk)
    contiguous = not long.any()

    def part(group: np.ndarray) -> pa.Array:
        if contiguous:
            return values.slice(int(group[0]), len(group))
        return take(values, short[group])

    if not parallel or len(groups) == 1:
        for group in groups:
            _put(out, short[group], here(part(group)))
            deadline.check("RE2")
        return out
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    with ThreadPoolExecutor(max_workers=2) as pool:
        pending = {pool.submit(here, part(g)): short[g] for g in groups}
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    _put(out, pending.pop(future), future.result())
                deadline.check("RE2")
        finally:
            for future in pending:
                future.cancel()
    return out


def _chunks(sizes: np.ndarray, limit: int) -> list[np.ndarray]:
    """Consecutive index ranges of ``sizes`` whose sums stay within ``limit`` (one at least)."""
    import numpy as np

    if not len(sizes):
        return []
    ends = np.cumsum(sizes)
    groups: list[np.ndarray] = []
    start, base = 0, 0
    while start < len(sizes):
        stop = int(np.searchsorted(ends, base + limit, side="right"))
        stop = max(stop, start + 1)
        groups.append(np.arange(start, stop))
        base = int(ends[stop - 1])
        start = stop
    return groups


def _byte_sizes(values: pa.Array) -> np.ndarray:
    """The UTF-8 length of each string (null: 0)."""
    import numpy as np
    import pyarrow.compute as pc

    return np.asarray(pc.binary_length(values).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)


def _put(out: Any, index: np.ndarray, values: Any) -> Any:
    if isinstance(out, list):
        for i, value in zip(index.tolist(), values, strict=True):
            out[i] = value
    else:
        out[index] = values
    return out


# ---------------------------------------------------------------------------------------------
# Python's re


def python_search(pattern: re.Pattern[str], lines: pa.Array, deadline: Deadline) -> np.ndarray:
    """Which of ``lines`` Python's ``re`` ``pattern`` finds a match in (in the worker).

    Raises:
        DeadlineExceededError: the deadline passed first, or the lines are over the cap.
    """
    import numpy as np

    found = bytearray()
    for part in _batches(lines, deadline):
        found += _in_worker("search", (pattern.pattern, pattern.flags, part), deadline, "Python's re")
    return np.frombuffer(bytes(found), dtype=np.uint8).astype(bool)


def python_spans(pattern: re.Pattern[str], lines: pa.Array, deadline: Deadline) -> list[list[list[int]]]:
    """Each line's ``[[start, end], ...]`` of non-empty matches of Python's ``re`` (in the worker).

    Raises:
        DeadlineExceededError: the deadline passed first, or the lines are over the cap.
    """
    spans: list[list[list[int]]] = []
    for part in _batches(lines, deadline):
        spans += _in_worker("spans", (pattern.pattern, pattern.flags, part), deadline, "Python's re")
    return spans


def _batches(lines: pa.Array, deadline: Deadline) -> list[list[str]]:
    """``lines`` as lists of strings of at most :data:`BATCH_BYTES` each (one line at least).

    Raises:
        DeadlineExceededError: more than :data:`MAX_PYTHON_BYTES` in all.
    """
    if not len(lines):
        return []
    if lines.nbytes > MAX_PYTHON_BYTES:
        raise DeadlineExceededError(
            f"The pattern needs Python's backtracking re on {lines.nbytes / 2**20:.0f} MiB of lines, "
            f"more than the {MAX_PYTHON_BYTES // 2**20} MiB it may search",
            hint=HINT,
            details={"bytes": int(lines.nbytes), "limit": MAX_PYTHON_BYTES, "stage": "Python's re"},
        )
    return [take(lines, group).to_pylist() for group in _chunks(_byte_sizes(lines), BATCH_BYTES)]


# ---------------------------------------------------------------------------------------------
# the worker processes

WORKER = Path(__file__).with_name("regex_worker.py")


_idle: list[WorkerProcess] = []
_lock = threading.Lock()


def _in_worker(op: str, args: tuple[Any, ...], deadline: Deadline, what: str) -> Any:
    """The answer of an idle (or new) worker to ``(op, args)``, or DEADLINE_EXCEEDED.

    Raises:
        DeadlineExceededError: no answer before the deadline (the worker is killed).
        InternalError: the worker failed.
    """
    deadline.check(what)
    with _lock:
        worker = _idle.pop() if _idle else None
    if worker is None or worker.process.poll() is not None:
        worker = WorkerProcess.start([sys.executable, "-I", str(WORKER)])
    keep = False
    try:
        left = deadline.left()
        answered, reply = worker.ask((op, args, max(left, 0.0)), left)
        if not answered:
            raise deadline.exceeded(what)
        if reply is None:
            raise InternalError("grep's regex worker process ended unexpectedly", details={"stage": what})
        status, value = reply
        if status != "ok":
            raise InternalError(f"grep's regex worker failed: {value}", details={"stage": what})
        keep = True
        return value
    finally:
        if keep:
            with _lock:
                _idle.append(worker)
        else:
            worker.stop()


def shutdown() -> None:
    """End every idle worker (at exit; the next search starts a new one)."""
    with _lock:
        workers, _idle[:] = list(_idle), []
    for worker in workers:
        worker.close()


atexit.register(shutdown)
