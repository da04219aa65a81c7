"""What a conversion gives (:class:`Converted`), and why one failed (:class:`ConversionFailed`)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["FAILURE_CODES", "ConversionFailed", "Converted", "has_text"]

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
    """True when ``text`` holds words, not only markers, whitespace and glyph debris (a PDF whose
    fonts map to no characters gives long runs of nothing readable)."""
    words = [w for line in text.split("\n") if not line.startswith("<!-- ") for w in line.split()]
    readable = [w for w in words if any(c.isalnum() for c in w) and len(w) < 40]
    return len(readable) >= 3 and len(readable) >= 0.5 * len(words)
