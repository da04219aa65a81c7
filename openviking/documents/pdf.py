"""PDF: each page's text (pypdfium2, PDFium's own extraction, which keeps a two-column page in
reading order), under a marker per page, without the page numbers and the furniture every page
repeats; the outline's entries become headings on their pages. A file PDFium cannot open (a
damaged cross-reference, a trailer pointing nowhere) is read by pdfminer.six, which rebuilds
what it can, before it is called damaged."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .converted import ConversionFailed, Converted
from .places import marker

__all__ = ["convert_pdf"]


def convert_pdf(path: Path) -> Converted:
    """The text of the PDF at ``path``, page by page.

    Raises:
        ConversionFailed: ENCRYPTED (a password is needed), CORRUPT (PDFium cannot load it).
    """
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        message = str(exc)
        if "password" in message.lower():
            raise ConversionFailed("ENCRYPTED", "protected by a password") from None
        pages = _pdfminer_pages(path)
        if pages is None:
            raise ConversionFailed("CORRUPT", f"damaged or cut short: PDFium cannot read it ({message})") from None
        return _second_reading(pages, message)
    try:
        headings = _outline(document)
        parts: list[str] = []
        for index, text in enumerate(without_running_lines([_page_text(document, i) for i in range(len(document))])):
            parts.append(marker("page", str(index + 1)))
            text = text.strip()
            for level, heading in headings.get(index, []):
                parts.append("#" * min(level + 1, 6) + " " + heading)
                if text.startswith(heading):  # the heading the page itself begins with, said once
                    text = text[len(heading) :].lstrip()
            parts.append(text)
        title = _title(document)
        return Converted("\n".join(parts) + "\n", title=title, places=len(document))
    finally:
        document.close()


def _pdfminer_pages(path: Path) -> list[str] | None:
    """Each page's text as pdfminer.six reads it, or None when it cannot read the file either."""
    try:
        from pdfminer.high_level import extract_pages
        from pdfminer.layout import LTTextContainer

        return [
            "".join(element.get_text() for element in page if isinstance(element, LTTextContainer))
            for page in extract_pages(str(path))
        ]
    except ImportError:
        raise
    except Exception:  # pdfminer raises its own errors, and what its parser meets, on a damaged file
        return None


def _second_reading(pages: list[str], why: str) -> Converted:
    parts: list[str] = []
    for index, text in enumerate(without_running_lines(pages)):
        parts.extend([marker("page", str(index + 1)), text.strip()])
    warning = f"PDFium cannot open it ({why}); its text was read by pdfminer.six, without its outline"
    return Converted("\n".join(parts) + "\n", places=len(pages), warnings=[warning])


def _page_text(document: Any, index: int) -> str:
    page = document[index]
    textpage = page.get_textpage()
    try:
        text = str(textpage.get_text_bounded())
        if _RIGHT_TO_LEFT.search(text):
            text = _right_to_left_text(textpage, turned=page.get_rotation() == 180)
        return text.replace("\r\n", "\n").replace("\r", "\n")
    finally:
        textpage.close()
        page.close()


# Hebrew, Arabic, Syriac, Thaana, N'Ko and their presentation forms.
_RIGHT_TO_LEFT = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")


def _right_to_left_text(textpage: Any, turned: bool) -> str:
    """A page holding right-to-left script, character by character, mended where PDFium's own
    ordering goes wrong: a glyph the PDF maps to no character (a shaper's extra glyph, a mark
    whose text went to its cluster's first glyph) shows as PDFium's stand-in for its code, and
    is dropped; a glyph that maps to several characters (a lam-alef ligature, a whole cluster)
    has them reversed with the line, and they are put back in the order the PDF gives. A page
    ``turned`` upside down is read from its other edge."""
    import pypdfium2.raw as raw

    lines: list[list[tuple[str, tuple[float, ...]]]] = [[]]
    for index in range(textpage.count_chars()):
        code = raw.FPDFText_GetUnicode(textpage, index)
        if code == 10 and raw.FPDFText_IsGenerated(textpage, index):
            lines.append([])
        elif code == 2:  # PDFium's mark for a hyphen that ends a line
            lines[-1].append(("-", ()))
        elif code >= 32 and code not in (0xFFFE, 0xFFFF) and not raw.FPDFText_HasUnicodeMapError(textpage, index):
            lines[-1].append((chr(code), tuple(textpage.get_charbox(index))))
    return "\r\n".join(_mended_line(line, turned) for line in lines)


def _mended_line(chars: list[tuple[str, tuple[float, ...]]], turned: bool) -> str:
    """A line's characters, each glyph's own (the characters one box holds) in the PDF's order:
    PDFium reverses a right-to-left line's runs, and a glyph's characters with them."""
    glyphs: list[list[str]] = []
    boxes: list[tuple[float, ...]] = []
    for char, box in chars:
        if glyphs and box and box == boxes[-1]:
            glyphs[-1].append(char)
        else:
            glyphs.append([char])
            boxes.append(box)
    placed = [box for box in boxes if box]
    backwards = len(placed) > 1 and (placed[0][0] > placed[-1][0]) != turned  # the line was read right to left
    return "".join(_glyph_text(glyph, backwards) if len(glyph) > 1 else glyph[0] for glyph in glyphs)


def _glyph_text(chars: list[str], backwards: bool) -> str:
    """One glyph's characters as the PDF maps them: PDFium reversed the whole glyph on a line read
    right to left (its left-to-right runs kept), and only its right-to-left runs on a line read
    left to right."""
    runs: list[list[str]] = []
    for char in chars:
        if runs and _direction(char) == _direction(runs[-1][0]):
            runs[-1].append(char)
        else:
            runs.append([char])
    if backwards:
        return "".join("".join(run if _direction(run[0]) == "ltr" else reversed(run)) for run in reversed(runs))
    return "".join("".join(reversed(run) if _direction(run[0]) == "rtl" else run) for run in runs)


def _direction(char: str) -> str:
    import unicodedata

    direction = unicodedata.bidirectional(char)
    return "rtl" if direction in ("R", "AL") else "ltr" if direction in ("L", "EN", "AN") else "neutral"


def without_running_lines(pages: list[str]) -> list[str]:
    """The pages without their running heads and feet, losing nothing a page says: a line that
    is only a page number ("3", "Page 3 of 9", "- 3 -") whose number follows the pages goes;
    a line repeated word for word among the first or last lines of at least half the pages (and
    three) stays on the first page that has it and goes from the others, unless it holds a digit
    (a date, an amount, a count: the page's data, not its furniture). Repeated furniture would
    make every page look alike to a search."""
    if len(pages) < 3:
        return pages
    split = [page.split("\n") for page in pages]
    edges = [_edge_lines(lines) for lines in split]
    cutoff = max(3, (len(pages) + 1) // 2)
    seen: dict[str, int] = {}
    for lines, page_edges in zip(split, edges, strict=True):
        for key in {_line_key(lines[number]) for number in page_edges}:
            seen[key] = seen.get(key, 0) + 1
    repeated = {key for key, count in seen.items() if count >= cutoff and key and not _DIGIT.search(key)}
    numbered = _page_number_lines(split, edges, cutoff)
    kept: list[str] = []
    first_seen: set[str] = set()
    for index, lines in enumerate(split):
        dropped = set(numbered.get(index, ()))
        for number in edges[index]:
            key = _line_key(lines[number])
            if key in repeated:
                if key in first_seen:
                    dropped.add(number)
                first_seen.add(key)
        kept.append("\n".join(line for number, line in enumerate(lines) if number not in dropped))
    return kept


EDGE_LINES = 3  # a running head or foot is among a page's first or last non-blank lines
_DIGIT = re.compile(r"\d")
_PAGE_NUMBER = re.compile(
    r"(?:page|p\.|pg\.?|seite|página|pagina)?\s*(\d{1,4})(?:\s*(?:of|/|de|von|sur)\s*\d{1,4})?"
    r"|[-–—]\s*(\d{1,4})\s*[-–—]",
    re.IGNORECASE,
)


def _edge_lines(lines: list[str]) -> list[int]:
    """The indexes of a page's first and last ``EDGE_LINES`` non-blank lines."""
    filled = [number for number, line in enumerate(lines) if line.strip()]
    return sorted(set(filled[:EDGE_LINES] + filled[-EDGE_LINES:]))


def _page_number_lines(split: list[list[str]], edges: list[list[int]], cutoff: int) -> dict[int, list[int]]:
    """The page-number lines of each page: an edge line that is only a number (or "Page N of M")
    where N minus the page's index is the same on at least ``cutoff`` pages (a table's last cell
    is a number too, but it does not count the pages)."""
    found: dict[int, list[tuple[int, int]]] = {}  # offset -> (page, line)
    for index, (lines, page_edges) in enumerate(zip(split, edges, strict=True)):
        for number in page_edges:
            match = _PAGE_NUMBER.fullmatch(" ".join(lines[number].split()))
            if match:
                offset = int(match.group(1) or match.group(2)) - index
                found.setdefault(offset, []).append((index, number))
    lines_of: dict[int, list[int]] = {}
    for places in found.values():
        if len({page for page, _ in places}) >= cutoff:
            for page, number in places:
                lines_of.setdefault(page, []).append(number)
    return lines_of


def _line_key(line: str) -> str:
    return " ".join(line.split()).lower()


def _outline(document: Any) -> dict[int, list[tuple[int, str]]]:
    """The outline's entries by the page they point to: (level, title)."""
    found: dict[int, list[tuple[int, str]]] = {}
    try:
        for item in document.get_toc(max_depth=6):
            destination = item.get_dest()
            index = destination.get_index() if destination is not None else None
            title = " ".join((item.get_title() or "").split())
            if index is not None and title:
                found.setdefault(index, []).append((item.level, title))
    except Exception:  # a damaged outline is only a document without headings
        return {}
    return found


def _title(document: Any) -> str | None:
    try:
        title = document.get_metadata_value("Title")
    except Exception:
        return None
    shown = " ".join(str(title or "").split())
    return shown or None
