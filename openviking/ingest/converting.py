"""Document files in an add: which files are documents (by their bytes), their conversion (in
the worker, ahead of the embedding), and what a document that cannot be read becomes: a skipped
file with its reason code, never an empty record.

A document is indexed as the markdown converted from it, chunked at its places
(``chunk.chunk_document``), its records marked ``form=document`` with each chunk's place, and its
node keeps the bytes it was converted from (``raw``), so that ``read --raw`` gives them back.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from openviking.config import env_number
from openviking.documents.converted import FAILURE_CODES, ConversionFailed, Converted
from openviking.documents.converter import DEFAULT_SECONDS, DocumentConverter
from openviking.documents.kinds import kind_of, kind_of_bytes
from openviking.documents.worker import memory_bytes

from .walk import SourceFile

__all__ = ["Documents", "document_kind", "skipped"]

# What each kind is named after in a skipped file's reason.
_NAMED = {
    "pdf": "PDF",
    "docx": "Word document",
    "pptx": "PowerPoint presentation",
    "xlsx": "Excel workbook",
    "xls": "Excel workbook",
    "ods": "OpenDocument spreadsheet",
    "odt": "OpenDocument text",
    "epub": "EPUB book",
    "rtf": "RTF document",
    "ipynb": "Jupyter notebook",
    "html": "web page",
    "feed": "RSS or Atom feed",
}
# Names that promise a zip package of one kind: a zip of anything else under them is no document.
_PACKAGE_SUFFIXES = (".docx", ".pptx", ".xlsx", ".odt", ".ods", ".epub")


def document_kind(data: bytes, item: SourceFile) -> str | None:
    """The document kind of a file whose bytes are ``data``, or None (text, or binary)."""
    return kind_of_bytes(data[:4096], item.path.name, item.path if data.startswith(b"PK\x03\x04") else None)


def skipped(item: SourceFile, code: str, reason: str) -> dict[str, str]:
    """A skipped file's entry: its path, what is wrong with it, and the code of that (one of
    ``FAILURE_CODES``)."""
    return {"path": item.rel, "reason": reason or FAILURE_CODES.get(code, code.lower()), "code": code}


class Documents:
    """The documents of one add: their kinds, their conversions asked for ahead, and the worker,
    started on the first one and stopped by :meth:`close`."""

    def __init__(self) -> None:
        self._seconds = env_number("OPENVIKING_CONVERT_TIMEOUT", DEFAULT_SECONDS, "seconds")
        memory_bytes()  # the worker reads it as it starts: a bad value is this add's error
        self._converter: DocumentConverter | None = None

    def _active(self) -> DocumentConverter:
        if self._converter is None:
            self._converter = DocumentConverter(self._seconds)
        return self._converter

    def prefetch(self, items: Iterable[tuple[SourceFile, str | None]]) -> None:
        """Convert the documents among ``items`` (each with the content hash stored for it, if
        any) in the background, in order, while the add goes on; an unchanged one is not converted."""
        ahead = []
        for item, stored_hash in items:
            kind = kind_of(item.path)
            if kind is not None:
                ahead.append((item.path, kind, stored_hash))
        if ahead:
            self._active().prefetch(ahead)

    def convert(self, item: SourceFile, kind: str, data: bytes) -> Converted:
        """The document ``item`` (whose bytes are ``data``) as text with its places.

        Raises:
            ConversionFailed: it cannot be read, or its name promises a kind its bytes are not.
        """
        return self._active().convert(item.path, kind)

    def close(self) -> None:
        if self._converter is not None:
            self._converter.close()
            self._converter = None


def false_package(data: bytes, item: SourceFile) -> ConversionFailed | None:
    """A file named like an Office, OpenDocument or EPUB package whose bytes are another zip (or
    no zip at all): the failure it is, or None."""
    if not item.path.name.lower().endswith(_PACKAGE_SUFFIXES):
        return None
    promised = _NAMED.get(Path(item.path.name).suffix.lower().lstrip("."), "document")
    return ConversionFailed("NOT_DOCUMENT", f"named as a {promised}, but its bytes are {_what(data)}")


def _what(data: bytes) -> str:
    if data.startswith(b"PK\x03\x04"):
        return "a zip archive of something else"
    return "not one"
