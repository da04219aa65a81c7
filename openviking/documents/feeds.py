"""RSS and Atom feeds as markdown: the channel's title and description, then each item after its
marker (``<!-- item 3 -->``) with its title as a heading, its author, date and link, and its
content (HTML written as markdown). A feed's XML is read with defusedxml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .converted import ConversionFailed, Converted
from .places import marker

__all__ = ["convert_feed"]

_ATOM = "{http://www.w3.org/2005/Atom}"
_RSS1 = "{http://purl.org/rss/1.0/}"
_CONTENT = "{http://purl.org/rss/1.0/modules/content/}encoded"
_CREATOR = "{http://purl.org/dc/elements/1.1/}creator"
_DATE = "{http://purl.org/dc/elements/1.1/}date"


def convert_feed(path: Path) -> Converted:
    """The feed at ``path`` (RSS 0.9x/2.0, RSS 1.0 or Atom), item by item.

    Raises:
        ConversionFailed: CORRUPT (XML that does not parse, or no channel or feed in it).
    """
    from defusedxml import DefusedXmlException, ElementTree

    try:
        root = ElementTree.fromstring(path.read_bytes())
    except (ElementTree.ParseError, DefusedXmlException) as exc:
        raise ConversionFailed("CORRUPT", f"a feed whose XML does not parse ({type(exc).__name__})") from None
    if root.tag == f"{_ATOM}feed":
        channel, items, ns = root, root.findall(f"{_ATOM}entry"), _ATOM
    else:
        channel = root.find("channel")
        ns = ""
        if channel is None:
            channel, ns = root.find(f"{_RSS1}channel"), _RSS1
        if channel is None:
            raise ConversionFailed("CORRUPT", "XML that names itself a feed but holds no channel")
        items = channel.findall("item") or root.findall(f"{ns}item")
    title = _text(channel.find(f"{ns}title"))
    about = _text(channel.find(f"{ns}subtitle" if ns == _ATOM else f"{ns}description"))
    parts = [f"# {title}" if title else "", _markdown(about)]
    for number, item in enumerate(items, start=1):
        parts.append(marker("item", str(number)))
        parts.extend(_item(item, ns))
    text = "\n\n".join(part for part in parts if part) + "\n"
    return Converted(text, title=title or None, places=len(items))


def _item(item: Any, ns: str) -> list[str]:
    """An item (or Atom entry) as its heading, a line of who, when and where, and its content."""
    title = _text(item.find(f"{ns}title"))
    author = _text(item.find(_CREATOR)) or _text(item.find(f"{_ATOM}author/{_ATOM}name"))
    when = _text(item.find("pubDate")) or _text(item.find(f"{_ATOM}updated")) or _text(item.find(_DATE))
    link = item.find(f"{ns}link")
    where = (link.get("href") or "") if ns == _ATOM and link is not None else _text(link)
    body = _text(item.find(_CONTENT)) or _text(item.find(f"{ns}description"))
    if ns == _ATOM:
        body = _text(item.find(f"{_ATOM}content")) or _text(item.find(f"{_ATOM}summary"))
    about = " · ".join(part for part in (author, when, where) if part)
    return [f"## {title}" if title else "", about, _markdown(body)]


def _text(element: Any) -> str:
    return "".join(element.itertext()).strip() if element is not None else ""


def _markdown(html: str) -> str:
    """An item's content: HTML as markdown, plain text as it is."""
    if "<" not in html:
        return html
    from .markup import html_markdown

    return html_markdown(html).strip()
