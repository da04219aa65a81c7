"""What kind of document a file is, told from its bytes (its extension only breaks a tie), and
whether a zipped one may be opened at all.

``kind_of`` reads a file's first bytes: ``%PDF-`` is a PDF whatever its name, an OOXML or
OpenDocument or EPUB package is known by its members, ``{\\rtf`` is RTF, an OLE2 file is an old
Excel workbook, XML whose root is ``<rss>``, an Atom ``<feed>`` or an RSS 1.0 ``<rdf:RDF>`` is a
feed. A notebook (JSON with ``cells``) and an HTML page are text files known by their
extension and, for HTML, by their first tag. None means: not a document (a text
file like any other, or a binary one).
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DOCUMENT_KINDS",
    "MAX_UNPACKED_BYTES",
    "PackageRefused",
    "kind_of",
    "kind_of_bytes",
    "package_problem",
]

DOCUMENT_KINDS = ("pdf", "docx", "pptx", "xlsx", "xls", "ods", "odt", "epub", "rtf", "ipynb", "html", "feed")
# A package's members may unpack to at most this much, and none may have been squeezed more
# than MAX_RATIO times (a zip bomb is refused before any parser opens it).
MAX_UNPACKED_BYTES = 256 * 1024 * 1024
MAX_RATIO = 200
MAX_MEMBERS = 20_000
SNIFF = 4096

_OPENDOCUMENT = {
    "application/vnd.oasis.opendocument.text": "odt",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/epub+zip": "epub",
}
_OOXML = {"word/document.xml": "docx", "ppt/presentation.xml": "pptx", "xl/workbook.xml": "xlsx"}
_HTML_SUFFIXES = (".html", ".htm", ".xhtml")


@dataclass(frozen=True)
class PackageRefused(Exception):
    """Why a zipped document is not opened: a code (``BOMB``, ``CORRUPT``) and a sentence."""

    code: str
    reason: str


def kind_of(path: Path) -> str | None:
    """The document kind of the file at ``path`` (see the module docstring), or None."""
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF)
    except OSError:
        return None
    return kind_of_bytes(head, path.name, path if head.startswith(b"PK\x03\x04") else None)


def kind_of_bytes(head: bytes, name: str, package: Path | None = None) -> str | None:
    """The document kind of a file whose first bytes are ``head`` (``package``: where to read its
    members when it is a zip file)."""
    lower = name.lower()
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.startswith(b"{\\rtf"):
        return "rtf"
    if head.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        return "xls" if lower.endswith((".xls", ".xlt")) else None  # an old .doc or .ppt is not read
    if head.startswith(b"PK\x03\x04") and package is not None:
        return _package_kind(package)
    if lower.endswith(".ipynb") and head.lstrip()[:1] == b"{":
        return "ipynb"
    if _is_feed(head):
        return "feed"
    if lower.endswith(_HTML_SUFFIXES) or _starts_like_html(head):
        return "html"
    return None


_XML_PROLOGUE = re.compile(rb"(?:\s+|<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>]*>)*", re.DOTALL)


def _is_feed(head: bytes) -> bool:
    """XML whose root element is a feed's: ``<rss``, Atom's ``<feed``, RSS 1.0's ``<rdf:RDF``."""
    start = head.removeprefix(b"\xef\xbb\xbf")
    start = start[_XML_PROLOGUE.match(start).end() :]  # type: ignore[union-attr]
    if start.startswith((b"<rss ", b"<rss>")):
        return True
    if start.startswith((b"<feed ", b"<feed>")):
        return b"http://www.w3.org/2005/Atom" in head
    return start.startswith(b"<rdf:RDF") and b"http://purl.org/rss/1.0/" in head


def _starts_like_html(head: bytes) -> bool:
    start = head.lstrip()[:64].lower()
    return start.startswith((b"<!doctype html", b"<html"))


def _package_kind(path: Path) -> str | None:
    """The kind of a zip package by its members: OOXML by its main part, OpenDocument and EPUB by
    their ``mimetype`` member; a zip of anything else is None (an archive)."""
    try:
        with zipfile.ZipFile(path) as package:
            names = set(package.namelist())
            if "mimetype" in names:
                declared = package.read("mimetype")[:100].decode("ascii", "replace").strip()
                if declared in _OPENDOCUMENT:
                    return _OPENDOCUMENT[declared]
            if "[Content_Types].xml" in names:
                for part, kind in _OOXML.items():
                    if part in names:
                        return kind
    except (zipfile.BadZipFile, OSError, KeyError, RuntimeError, ValueError):
        return None
    return None


def package_problem(path: Path) -> PackageRefused | None:
    """Why the zip package at ``path`` must not be opened (too big unpacked, squeezed like a zip
    bomb, too many members, not a zip at all), or None when it may be."""
    try:
        with zipfile.ZipFile(path) as package:
            members = package.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        return PackageRefused("CORRUPT", f"not a readable zip package ({exc})")
    if len(members) > MAX_MEMBERS:
        return PackageRefused("BOMB", f"a decompression bomb: {len(members):,} members, more than {MAX_MEMBERS:,}")
    total = 0
    for member in members:
        total += member.file_size
        squeezed = member.file_size / max(member.compress_size, 1)
        if member.file_size > 1024 * 1024 and squeezed > MAX_RATIO:
            return PackageRefused(
                "BOMB", f"a decompression bomb: {member.filename} unpacks to {squeezed:,.0f} times its size"
            )
    if total > MAX_UNPACKED_BYTES:
        size, cap = total // 1024 // 1024, MAX_UNPACKED_BYTES // 1024 // 1024
        return PackageRefused("BOMB", f"a decompression bomb: unpacks to {size:,} MiB, more than {cap} MiB")
    return None
