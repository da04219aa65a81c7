"""PDF: each page's text (pypdfium2, PDFium's own extraction, which keeps a two-column page in
reading order), under a marker per page, without the running heads and feet every page repeats;
the outline's entries become headings on their pages."""

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
        raise ConversionFailed("CORRUPT", f"damaged or cut short: PDFium cannot read it ({message})") from None
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


def _page_text(document: Any, index: int) -> str:
    page = document[index]
    textpage = page.get_textpage()
    try:
        return str(textpage.get_text_bounded()).replace("\r\n", "\n").replace("\r", "\n")
    finally:
        textpage.close()
        page.close()


def without_running_lines(pages: list[str]) -> list[str]:
    """The pages without their running heads and feet: a line found on at least half the pages
    (and on three) is the document's furniture (its title, a copyright notice, "Page 3 of 9"),
    not what a page says, and it would make every page look alike to a search. Short lines are
    compared with their numbers masked, so that page numbers do not keep them apart."""
    if len(pages) < 3:
        return pages
    keyed = [[(_line_key(line), line) for line in page.split("\n")] for page in pages]
    seen: dict[str, int] = {}
    for lines in keyed:
        for key in {key for key, _ in lines if key}:
            seen[key] = seen.get(key, 0) + 1
    cutoff = max(3, (len(pages) + 1) // 2)
    running = {key for key, count in seen.items() if count >= cutoff}
    if not running:
        return pages
    return ["\n".join(line for key, line in lines if key not in running) for lines in keyed]


def _line_key(line: str) -> str:
    text = " ".join(line.split()).lower()
    return re.sub(r"\d+", "#", text) if len(text) < 80 else text


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
