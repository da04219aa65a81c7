"""What a conversion gives (:class:`Converted`), and why one failed (:class:`ConversionFailed`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["FAILURE_CODES", "ConversionFailed", "Converted", "has_text", "shown_title"]

FAILURE_CODES = {
    "CORRUPT": "damaged or cut short",
    "ENCRYPTED": "protected by a password",
    "NO_TEXT": "holds no text (a scan, or only images)",
    "BOMB": "unpacks to far more than it holds",
    "TIMEOUT": "took too long to convert",
    "TOO_LARGE": "too large to convert",
    "NOT_DOCUMENT": "named like a document but is not one",
    "MISSING_LIBRARY": "needs a converter that is not installed",
}


@dataclass
class Converted:
    """A document's text as markdown, with a marker line at each place (see :mod:`.places`),
    its title when it names one, and how many places (pages, slides...) it has."""

    text: str
    title: str | None = None
    places: int = 0
    warnings: list[str] = field(default_factory=list)


class ConversionFailed(Exception):
    """A document that cannot be read: ``code`` is one of :data:`FAILURE_CODES`."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason


def has_text(text: str) -> bool:
    """True when ``text`` holds words: markdown's own marks (a table's ``|`` and ``|---|``, a
    list's ``-``, a heading's ``#``) and the place markers are neither words nor noise, so a
    table of numbers and one-word cells, or "Hello, World!", has text. What has none is
    whitespace and glyph debris: a PDF whose fonts map to no characters gives long runs of
    nothing readable, and most of its tokens then hold no letter or digit."""
    words = [
        word
        for line in text.split("\n")
        if not line.startswith("<!-- ")
        for word in line.split()
        if not _MARKUP.fullmatch(word)
    ]
    readable = [w for w in words if any(c.isalnum() for c in w) and len(w) < 40]
    return len(readable) >= 1 and len(readable) >= 0.5 * len(words)


# A token that is only markdown: a table's pipes and rule, a list's bullet, a heading's hashes,
# emphasis marks, a block quote.
_MARKUP = re.compile(r"[|:\-]*|[-*+>#=_~`]+|\d+\.")

# Titles that tools write when nobody named the document: shown as its title, they would say
# nothing and make every such document look alike.
_PLACEHOLDER_TITLES = re.compile(
    r"\(?(anonymous|untitled(\s+document)?|no title|none|null|unknown|document\d*|"
    r"presentation\d*|powerpoint presentation|book\d*|workbook\d*|slide \d+)\)?",
    re.IGNORECASE,
)


def shown_title(title: str | None) -> str | None:
    """``title`` with its whitespace made single, or None when it is empty or a placeholder a tool
    wrote ("(anonymous)", "untitled", "Presentation1")."""
    shown = " ".join(str(title or "").split())
    if not shown or _PLACEHOLDER_TITLES.fullmatch(shown):
        return None
    return shown
