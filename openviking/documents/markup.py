"""HTML pages as a reader sees them, and EPUB books chapter by chapter, as markdown.

A page's main content is what readability-lxml keeps (navigation, scripts, styles, cookie
banners, asides and footers left out), written as markdown by markdownify with its links; its
title is the page's ``<title>``. An EPUB's chapters are its spine's documents in order (the OPF
read with defusedxml), each after its marker, converted whole (a book's chapter has no chrome).
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from pathlib import Path
from typing import Any

from .converted import ConversionFailed, Converted
from .places import marker

__all__ = ["convert_epub", "convert_html", "html_markdown"]

_DROPPED = ["script", "style", "noscript", "template", "svg", "iframe", "form", "button", "nav", "footer", "aside"]
_BLANKS = re.compile(r"\n{3,}")
MAX_LINK_CHARS = 200
# The main content readability finds is trusted while it holds at least this share of the
# page's words; below it (a list of search results, a page of short items) readability picked
# one block among many alike, and the whole page, without its chrome, says more.
MAIN_SHARE = 0.2
_CONSENT = re.compile(r"cookie|consent|gdpr|banner|newsletter|subscribe", re.IGNORECASE)


def html_markdown(html: str) -> str:
    """An HTML fragment as markdown (headings as ``#``, links kept; scripts, styles, forms and
    navigation dropped with what they hold). A picture inlined as a ``data:`` URI keeps only
    its alt text, and a link to script, to inlined data or to a target longer than
    ``MAX_LINK_CHARS`` (a tracker's redirect, not a place to read) only its words."""
    from lxml import html as lxml_html
    from markdownify import markdownify

    if html.strip():
        tree = lxml_html.fromstring(html)
        for element in tree.xpath("|".join(f"//{tag}" for tag in _DROPPED)):
            if element.getparent() is not None:
                element.drop_tree()
        for image in tree.xpath("//img[starts-with(normalize-space(@src), 'data:')]"):
            alt = image.get("alt", "")
            image.attrib.clear()
            image.tag, image.text = "span", alt
        for link in tree.xpath("//a[@href]"):
            target = link.get("href", "").strip()
            if len(target) > MAX_LINK_CHARS or target.lower().startswith(("javascript:", "data:")):
                del link.attrib["href"]
        html = lxml_html.tostring(tree, encoding="unicode")
    text = markdownify(html, heading_style="ATX", bullets="-")
    return _BLANKS.sub("\n\n", text).strip() + "\n"


def _decoded(data: bytes) -> str:
    for encoding in ("utf-8-sig", "utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ("utf-8-sig",):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    found = re.search(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_-]+)""", data[:4096], re.IGNORECASE)
    try:
        return data.decode(found.group(1).decode("ascii") if found else "cp1252", errors="replace")
    except LookupError:
        return data.decode("cp1252", errors="replace")


def convert_html(path: Path) -> Converted:
    """A web page's main content, its title the page's ``<title>``.

    Raises:
        ConversionFailed: NO_TEXT (nothing readable is left of it).
    """
    from readability import Document

    source = _decoded(path.read_bytes())
    try:
        document = Document(source)
        title = " ".join((document.short_title() or "").split()) or None
        main = document.summary(html_partial=True)
    except Exception:  # readability gives up on what it cannot parse: then the whole page, cleaned
        title, main = None, source
    text = html_markdown(_without_banners(main))
    if main is not source:
        whole = html_markdown(_without_banners(_body(source)))
        if _words(text) < MAIN_SHARE * _words(whole):
            text = whole
    if title and not text.lstrip().startswith("# "):
        text = f"# {title}\n\n{text}"
    return Converted(text, title=title)


def _without_banners(html: str) -> str:
    """``html`` without the elements whose id or class names a cookie banner or a newsletter box."""
    from lxml import html as lxml_html

    if not html.strip():
        return html
    tree = lxml_html.fromstring(html)
    for element in tree.xpath("//*[@id or @class]"):
        names = f"{element.get('id', '')} {element.get('class', '')}"
        if _CONSENT.search(names) and element.getparent() is not None:
            element.getparent().remove(element)
    return str(lxml_html.tostring(tree, encoding="unicode"))


def _words(markdown: str) -> int:
    """The words a reader sees in ``markdown``: link targets are not read."""
    return len(_LINK_TARGET.sub("]", markdown).split())


_LINK_TARGET = re.compile(r"\]\([^)]*\)")


def convert_epub(path: Path) -> Converted:
    """A book's chapters in reading order, each after its marker; its title from its metadata.

    Raises:
        ConversionFailed: CORRUPT (no readable container or package document).
    """
    from defusedxml import ElementTree

    try:
        with zipfile.ZipFile(path) as book:
            container = ElementTree.fromstring(book.read("META-INF/container.xml"))
            rootfile = container.find(".//{*}rootfile")
            if rootfile is None:
                raise ConversionFailed("CORRUPT", "the book names no package document")
            opf_path = rootfile.get("full-path", "")
            package = ElementTree.fromstring(book.read(opf_path))
            chapters = _spine(package, posixpath.dirname(opf_path))
            parts: list[str] = []
            for number, name in enumerate(chapters, start=1):
                body = _body(book.read(name).decode("utf-8", errors="replace"))
                parts.append(marker("chapter", str(number)))
                parts.append(html_markdown(body))
    except (KeyError, zipfile.BadZipFile, ElementTree.ParseError) as exc:
        raise ConversionFailed("CORRUPT", f"the book cannot be read ({type(exc).__name__})") from None
    title_element = package.find(".//{*}metadata/{*}title")
    title = " ".join((title_element.text or "").split()) if title_element is not None else None
    about = _book_metadata(package)
    return Converted("\n".join([*about, *parts]), title=title or None, places=len(chapters))


# What a book's metadata says of it, kept above its first chapter (Dublin Core's names).
_BOOK_FIELDS = (
    ("creator", "Authors"),
    ("description", "Description"),
    ("publisher", "Publisher"),
    ("date", "Date"),
    ("subject", "Subjects"),
)


def _book_metadata(package: Any) -> list[str]:
    """The book's authors, description, publisher, date and subjects as ``**Authors:** ...``
    lines (a description's HTML as its text)."""
    lines = []
    for name, label in _BOOK_FIELDS:
        values = [" ".join("".join(e.itertext()).split()) for e in package.findall(f".//{{*}}metadata/{{*}}{name}")]
        values = [_plain_html(v) for v in values if v]
        if values:
            lines.append(f"**{label}:** {', '.join(values)}")
    return [*lines, ""] if lines else []


def _plain_html(text: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", text).split()) if "<" in text else text


def _spine(package: Any, base: str) -> list[str]:
    manifest = {
        item.get("id"): posixpath.normpath(posixpath.join(base, item.get("href", "")))
        for item in package.findall(".//{*}item")
        if "html" in (item.get("media-type") or "")
    }
    return [manifest[ref.get("idref")] for ref in package.findall(".//{*}itemref") if ref.get("idref") in manifest]


def _body(xhtml: str) -> str:
    found = re.search(r"<body[^>]*>(.*)</body>", xhtml, re.DOTALL | re.IGNORECASE)
    return found.group(1) if found else xhtml
