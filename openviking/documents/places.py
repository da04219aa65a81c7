"""Where a line of a converted document came from: the marker lines that begin each page, slide,
sheet, chapter, notebook cell or feed item, written and read back.

A marker is a line of its own, an HTML comment, so that the text still reads as markdown:
``<!-- page 2 -->``, ``<!-- slide 3 -->``, ``<!-- sheet Budget A1:D20 -->``,
``<!-- chapter 2 -->``, ``<!-- cell 4 (code) -->``, ``<!-- item 7 -->``. The place of a line is the last marker above
it; chunks never cross one, so every chunk and every grep line has exactly one place.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

__all__ = ["MARKER_PATTERN", "PLACE_KINDS", "Places", "marker", "place_of_marker"]

PLACE_KINDS = ("page", "slide", "sheet", "chapter", "cell", "item")
# A text holding a marker line (an RE2 pattern too: Arrow's compute functions search with it).
MARKER_PATTERN = r"(?m)^<!-- (page|slide|sheet|chapter|cell|item) "
_MARKER = re.compile(r"^<!-- (page|slide|sheet|chapter|cell|item) ([^\n]*?) -->$")


def marker(kind: str, label: str) -> str:
    """The marker line of a place (``label``: its number, or a sheet's name and cell range)."""
    return f"<!-- {kind} {' '.join(label.split())} -->"


def place_of_marker(line: str) -> str | None:
    """``"page 2"`` for the marker line ``<!-- page 2 -->``; None for any other line."""
    found = _MARKER.match(line.strip())
    return f"{found.group(1)} {found.group(2)}" if found else None


class Places:
    """The places of a converted text's lines (1-based, as chunks and grep count them)."""

    def __init__(self, lines: Sequence[str]) -> None:
        self._starts: list[int] = []
        self._names: list[str] = []
        for number, line in enumerate(lines, start=1):
            if line.startswith("<!-- "):
                name = place_of_marker(line)
                if name is not None:
                    self._starts.append(number)
                    self._names.append(name)

    @classmethod
    def of(cls, text: str) -> Places:
        return cls(text.split("\n"))

    def __bool__(self) -> bool:
        return bool(self._starts)

    def at(self, line: int) -> str | None:
        """The place of line ``line``: that of the last marker at or above it."""
        index = bisect.bisect_right(self._starts, line) - 1
        return self._names[index] if index >= 0 else None

    def span(self, first: int, last: int) -> str | None:
        """The place of lines ``first`` to ``last``: one place, or ``page 2-3`` for several of a kind."""
        start, end = self.at(first), self.at(last)
        if start is None or end is None or start == end:
            return start or end
        kind, _, first_label = start.partition(" ")
        end_kind, _, last_label = end.partition(" ")
        if kind == end_kind and first_label.isdigit() and last_label.isdigit():
            return f"{kind} {first_label}-{last_label}"
        return f"{start} to {end}"
