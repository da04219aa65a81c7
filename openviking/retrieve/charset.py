"""Character sets as code point ranges: their algebra, and their spelling in RE2 syntax.

A set of characters is a sorted list of disjoint, non-adjacent ``(low, high)`` code point
ranges. grep's regex translator and glob's classes both build their sets here and write them
out with :func:`set_re2`, so that RE2 (which pyarrow runs) matches exactly the characters
Python would, whatever RE2's own idea of a class is. Only Python's public ``re`` is used.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Sequence

__all__ = [
    "MAX_CODE",
    "SURROGATES",
    "Ranges",
    "category_ranges",
    "char_re2",
    "complement",
    "minus_points",
    "normalize",
    "re2_escape",
    "set_re2",
]

MAX_CODE = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)
# RE2 text that matches no character (RE2 has no empty class); a lone surrogate is spelled so
# too, since text never holds one.
NOTHING = r"[^\x{0}-\x{10FFFF}]"

Ranges = list[tuple[int, int]]


def normalize(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Any ranges, sorted and merged into a set (overlapping or adjacent ones become one)."""
    out: Ranges = []
    for low, high in sorted(ranges):
        if out and low <= out[-1][1] + 1:
            if high > out[-1][1]:
                out[-1] = (out[-1][0], high)
        else:
            out.append((low, high))
    return out


def complement(ranges: Ranges) -> Ranges:
    """Every code point not in the set ``ranges``."""
    out: Ranges = []
    start = 0
    for low, high in ranges:
        if low > start:
            out.append((start, low - 1))
        start = high + 1
    if start <= MAX_CODE:
        out.append((start, MAX_CODE))
    return out


def minus_points(ranges: Ranges, points: Sequence[int]) -> Ranges:
    """``ranges`` without the sorted code points ``points``."""
    out: Ranges = []
    for low, high in ranges:
        start = low
        index = bisect.bisect_left(points, low)
        while index < len(points) and points[index] <= high:
            point = points[index]
            if point > start:
                out.append((start, point - 1))
            start = point + 1
            index += 1
        if start <= high:
            out.append((start, high))
    return out


def _hex(code: int) -> str:
    return "\\x{" + format(code, "X") + "}"


def char_re2(code: int) -> str:
    """RE2 text matching exactly the character ``code`` (nothing, for a surrogate)."""
    if SURROGATES[0] <= code <= SURROGATES[1]:
        return NOTHING
    char = chr(code)
    if char.isascii() and (char.isalnum() or char == "_"):
        return char
    return _hex(code)


def re2_escape(text: str) -> str:
    """RE2 text matching exactly ``text``."""
    return "".join(char_re2(ord(char)) for char in text)


def set_re2(ranges: Ranges) -> str:
    """RE2 text matching one character of the set ``ranges``."""
    ranges = _minus_surrogates(ranges)
    if not ranges:
        return NOTHING
    if ranges == [(0, SURROGATES[0] - 1), (SURROGATES[1] + 1, MAX_CODE)]:
        return r"(?s:.)"
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return char_re2(ranges[0][0])
    parts = []
    for low, high in ranges:
        parts.append(_hex(low) if low == high else _hex(low) + "-" + _hex(high))
    return "[" + "".join(parts) + "]"


def _minus_surrogates(ranges: Ranges) -> Ranges:
    out: Ranges = []
    for low, high in ranges:
        if high < SURROGATES[0] or low > SURROGATES[1]:
            out.append((low, high))
            continue
        if low < SURROGATES[0]:
            out.append((low, SURROGATES[0] - 1))
        if high > SURROGATES[1]:
            out.append((SURROGATES[1] + 1, high))
    return out


@functools.cache
def _all_characters() -> str:
    """Every code point, in order, as one string (index == code point)."""
    import array

    return array.array("I", range(MAX_CODE + 1)).tobytes().decode("utf-32-le", "surrogatepass")


@functools.cache
def category_ranges(category: str, ascii_only: bool) -> tuple[tuple[int, int], ...]:
    """Python's own ``\\w``, ``\\d`` or ``\\s`` (``"word"``, ``"digit"``, ``"space"``) as code
    point ranges, asked of ``re`` itself so that they are this Python's Unicode tables."""
    if ascii_only:
        fixed = {
            "word": ((48, 57), (65, 90), (95, 95), (97, 122)),
            "digit": ((48, 57),),
            "space": ((9, 13), (32, 32)),
        }
        return fixed[category]
    regex = {"word": r"\w+", "digit": r"\d+", "space": r"\s+"}[category]
    return tuple((m.start(), m.end() - 1) for m in re.finditer(regex, _all_characters()))
