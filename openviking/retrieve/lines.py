"""The Arrow line index: the lines of many files as one string array, and blocks of them.

grep tests a pattern line by line, but calling RE2 once per line would be slow: the lines of
every file are cut out in numpy over the content's Arrow buffers (a ``\\n`` ends a line, and a
``\\r`` just before it belongs to the terminator) into one array that RE2 runs over in one
call, with each line's file and number beside it. Blocks of ``BLOCK_LINES`` lines are
zero-copy slices of the content, for skipping most lines of a file that matches a few times.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .arrays import string_offsets

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = ["BLOCK_LINES", "Blocks", "Lines", "blocks_of", "lines_of"]


@dataclass(frozen=True)
class Lines:
    """All lines of some files, without their terminators, as one Arrow string array.

    ``file[i]`` is the index of line ``i``'s file (in the content array it was cut from),
    ``number[i]`` its 1-based number there, ``start[i]`` the byte offset where it starts in that
    content, ``first[f]`` the index of file ``f``'s first line (``first[f + 1]`` is one past
    its last).
    """

    text: pa.LargeStringArray
    file: np.ndarray
    number: np.ndarray
    start: np.ndarray
    first: np.ndarray


@dataclass(frozen=True)
class Blocks:
    """Runs of up to ``BLOCK_LINES`` lines of one file, as zero-copy slices of the content.

    A pattern's multi-line form over blocks skips most lines of a file that matches a few
    times: only the lines of the blocks it matches are tested one by one. ``file[b]`` and
    ``first_number[b]`` are block ``b``'s file and the number of its first line; ``of_line``
    (with a line table) gives each line's block.
    """

    text: pa.LargeStringArray
    file: np.ndarray
    first_number: np.ndarray
    of_line: np.ndarray | None = None


BLOCK_LINES = 8


def blocks_of(content: pa.LargeStringArray, lines: Lines | None = None) -> Blocks:
    """Group the lines of ``content`` into blocks (the content's own buffer, re-cut)."""
    import numpy as np
    import pyarrow as pa

    if lines is not None:
        start, file, number = lines.start, lines.file, lines.number
    else:
        cut = _line_starts(content)
        start, file, number = cut.starts, cut.file, cut.number
    heads = (number - 1) % BLOCK_LINES == 0
    first_lines = np.flatnonzero(heads)
    offsets = string_offsets(content)
    base, end = int(offsets[0]), int(offsets[-1])
    cuts = np.append(start[first_lines], end - base) + base
    if len(first_lines):
        cuts[0] = base
    text = pa.LargeStringArray.from_buffers(len(first_lines), pa.py_buffer(cuts.astype(np.int64)), content.buffers()[2])
    of_line = np.cumsum(heads) - 1 if lines is not None else None
    return Blocks(text, file[first_lines], number[first_lines], of_line)


@dataclass(frozen=True)
class _Cut:
    """Where the lines of a content array start (byte offsets relative to its first string)."""

    buf: np.ndarray
    offsets: np.ndarray
    newlines: np.ndarray
    starts: np.ndarray
    file: np.ndarray
    number: np.ndarray
    first: np.ndarray


def _line_starts(content: pa.LargeStringArray) -> _Cut:
    import numpy as np

    offsets = string_offsets(content)
    base, end = int(offsets[0]), int(offsets[-1])
    data = content.buffers()[2]
    buf = np.frombuffer(data, dtype=np.uint8, count=end - base, offset=base) if end > base else np.zeros(0, np.uint8)
    offsets = offsets - base
    file_start, file_end = offsets[:-1], offsets[1:]
    nonempty = file_end > file_start
    newlines = np.flatnonzero(buf == 10)
    after = newlines + 1
    file_of_newline = np.searchsorted(offsets, newlines, side="right") - 1
    starts = np.concatenate([file_start[nonempty], after[after < file_end[file_of_newline]]])
    starts.sort(kind="stable")
    file_of_line = np.searchsorted(offsets, starts, side="right") - 1
    first = np.searchsorted(starts, offsets)
    first[-1] = len(starts)
    number = np.arange(len(starts), dtype=np.int64) - first[file_of_line] + 1
    return _Cut(buf, offsets, newlines, starts, file_of_line, number, first)


def lines_of(content: pa.LargeStringArray) -> Lines:
    """Cut every string of ``content`` into lines (``\\n`` or ``\\r\\n`` ends a line), in numpy."""
    import numpy as np
    import pyarrow as pa

    cut = _line_starts(content)
    buf, offsets, newlines, starts = cut.buf, cut.offsets, cut.newlines, cut.starts
    file_start, file_end = offsets[:-1], offsets[1:]
    nonempty = file_end > file_start
    open_end = nonempty.copy()
    open_end[nonempty] = buf[file_end[nonempty] - 1] != 10
    ends = np.concatenate([newlines, file_end[open_end]])
    ends.sort(kind="stable")
    # a "\r" just before the "\n" belongs to the terminator
    at_newline = ends < len(buf)
    at_newline[at_newline] = buf[ends[at_newline]] == 10
    carriage = at_newline & (ends > starts)
    carriage[carriage] = buf[ends[carriage] - 1] == 13
    ends = ends - carriage
    new_offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(ends - starts, out=new_offsets[1:])
    # every byte is either in a line or in a terminator ("\n", or the "\r" of "\r\n")
    keep = buf != 10
    keep[ends[carriage]] = False
    text = pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(new_offsets), pa.py_buffer(buf[keep]))
    return Lines(text, cut.file, cut.number, starts, cut.first)
