"""Word (python-docx), PowerPoint (python-pptx) and OpenDocument text (odfpy), as markdown: headings
as headings, lists as lists (nested by their level), tables as markdown tables, in the order the
document holds them. A slide begins with its marker and its title; its notes follow it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .converted import ConversionFailed, Converted
from .places import marker

__all__ = ["convert_docx", "convert_odt", "convert_pptx", "markdown_table"]

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)


def markdown_table(rows: Sequence[Sequence[str]]) -> str:
    """Rows as a markdown table, the first one its header (cells on one line, pipes escaped)."""
    cleaned = [[" ".join(str(cell).split()).replace("|", "\\|") for cell in row] for row in rows if any(row)]
    if not cleaned:
        return ""
    width = max(len(row) for row in cleaned)
    cleaned = [row + [""] * (width - len(row)) for row in cleaned]
    lines = ["| " + " | ".join(cleaned[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(row) + " |" for row in cleaned[1:]]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- Word
def convert_docx(path: Path) -> Converted:
    """A Word document's paragraphs and tables, in order.

    Raises:
        ConversionFailed: CORRUPT (not a Word document python-docx can open).
    """
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, KeyError, ValueError) as exc:
        raise ConversionFailed("CORRUPT", f"not a Word document that opens ({exc})") from None
    styles = {style.style_id: (style.name or "") for style in document.styles}
    blocks: list[str] = []
    for child in document.element.body.iterchildren():
        tag = child.tag.rsplit("}", 1)[-1]
        if tag == "p":
            line = _docx_paragraph(child, styles)
            if line:
                blocks.append(line)
            blocks.extend(_docx_graphics(document.part, child))
        elif tag == "tbl":
            blocks.append(markdown_table(_docx_rows(child)))
    blocks.extend(_docx_notes(document.part))
    blocks.extend(_docx_comments(document))
    blocks.extend(_docx_running(document.part))
    title = document.core_properties.title or None
    return Converted(_joined(blocks), title=title)


def _docx_graphics(part: Any, paragraph: Any) -> list[str]:
    """The charts (their values) and SmartArt diagrams (their text) a paragraph holds."""
    from .ooxml import chart_lines, diagram_lines, parse

    blocks: list[str] = []
    for reference in paragraph.iter(_CHART, _DIAGRAM):
        related = reference.get(_RELATION if reference.tag == _CHART else _RELATION_DATA, "")
        try:
            blob = part.related_parts[related].blob
        except KeyError:  # a chart whose part is missing is a picture without its data
            continue
        lines = chart_lines(parse(blob)) if reference.tag == _CHART else diagram_lines(parse(blob))
        blocks.extend(lines)
    return blocks


def _docx_notes(part: Any) -> list[str]:
    """The footnotes and endnotes, each as a markdown footnote (``[^1]: ...``, ``[^e1]: ...``)
    that its reference in the text (``[^1]``) points to."""
    from .ooxml import parse

    blocks: list[str] = []
    for kind, tag, label in (("footnotes", "footnote", ""), ("endnotes", "endnote", "e")):
        for rel in part.rels.values():
            if rel.is_external or not rel.reltype.endswith("/" + kind):
                continue
            for note in parse(rel.target_part.blob).iter(_w(tag)):
                text = " ".join(" ".join(_docx_text(p).split()) for p in note.iter(_w("p"))).strip()
                if text and note.get(_w("type")) in (None, "normal"):
                    blocks.append(f"[^{label}{note.get(_w('id'))}]: {text}")
    return blocks


def _docx_running(part: Any) -> list[str]:
    """The headers' and footers' text, each said once (a document's sections often share them)."""
    seen: set[str] = set()
    blocks = []
    for kind, label in (("header", "Header"), ("footer", "Footer")):
        for rel in part.rels.values():
            if rel.is_external or not rel.reltype.endswith("/" + kind):
                continue
            lines = [" ".join(_docx_text(p).split()) for p in rel.target_part.element.iter(_w("p"))]
            text = " ".join(line for line in lines if line)
            if text and text not in seen:
                seen.add(text)
                blocks.append(f"**{label}:** {text}")
    return blocks


def _docx_comments(document: Any) -> list[str]:
    """The document's comments, after its body: each with its author."""
    try:
        comments = list(document.comments)
    except Exception:  # a comments part python-docx cannot read is a document without comments
        return []
    lines = []
    for comment in comments:
        text = " ".join((comment.text or "").split())
        if text:
            author = " ".join((comment.author or "").split())
            lines.append(f"- {author}: {text}" if author else f"- {text}")
    return ["## Comments", *lines] if lines else []


def _w(name: str) -> str:
    return "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}" + name


_MATH = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
_CHART = "{http://schemas.openxmlformats.org/drawingml/2006/chart}chart"
_DIAGRAM = "{http://schemas.openxmlformats.org/drawingml/2006/diagram}relIds"
_RELATION = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_RELATION_DATA = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}dm"
_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_PICTURE = "{http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing}docPr"


def _docx_text(element: Any) -> str:
    """The text of a paragraph or cell in reading order: its runs, its equations as LaTeX
    (``$...$`` in a line, ``$$...$$`` on their own), its pictures' alt text (``![alt](name)``),
    text boxes once (not again from their fallback copy)."""
    parts: list[str] = []
    _docx_inline(element, parts)
    return "".join(parts)


def _docx_inline(element: Any, parts: list[str]) -> None:
    for child in element:
        tag = child.tag if isinstance(child.tag, str) else ""
        if tag == _w("t"):
            parts.append(child.text or "")
        elif tag in (_w("tab"), _w("br"), _w("cr")):
            parts.append(" ")
        elif tag == _MATH + "oMathPara":
            from .omml import latex

            parts.append(" ".join(f"$${latex(math)}$$" for math in child.iter(_MATH + "oMath")))
        elif tag == _MATH + "oMath":
            from .omml import latex

            parts.append(f"${latex(child)}$")
        elif tag == _w("footnoteReference"):
            parts.append(f"[^{child.get(_w('id'))}]")
        elif tag == _w("endnoteReference"):
            parts.append(f"[^e{child.get(_w('id'))}]")
        elif tag == _PICTURE:
            alt = " ".join((child.get("descr") or child.get("title") or "").split())
            if alt:
                parts.append(f" ![{alt}]({child.get('name') or 'picture'}) ")
        elif tag != _FALLBACK and tag != _w("delText"):
            _docx_inline(child, parts)


def _docx_paragraph(paragraph: Any, styles: dict[str, str]) -> str:
    text = " ".join(_docx_text(paragraph).split())
    if not text:
        return ""
    properties = paragraph.find(_w("pPr"))
    style_id = ""
    level: int | None = None
    if properties is not None:
        style = properties.find(_w("pStyle"))
        style_id = style.get(_w("val"), "") if style is not None else ""
        numbering = properties.find(_w("numPr"))
        if numbering is not None:
            depth = numbering.find(_w("ilvl"))
            level = int(depth.get(_w("val"), "0")) if depth is not None else 0
    name = styles.get(style_id, style_id).lower()
    heading = _HEADING_STYLE.match(name)
    if name == "title":
        return "# " + text
    if heading:
        return "#" * min(int(heading.group(1)) + 1, 6) + " " + text
    if level is not None or name.startswith(("list bullet", "list number", "list paragraph")):
        depth = level if level is not None else _trailing_number(name) - 1
        bullet = "1." if "number" in name else "-"
        return "  " * max(depth, 0) + f"{bullet} {text}"
    return text


def _trailing_number(name: str) -> int:
    found = re.search(r"(\d+)$", name)
    return int(found.group(1)) if found else 1


def _docx_rows(table: Any) -> list[list[str]]:
    rows = []
    for row in table.iter(_w("tr")):
        rows.append([" ".join(_docx_text(cell).split()) for cell in row.iter(_w("tc"))])
    return rows


# ----------------------------------------------------------------------------- PowerPoint
def convert_pptx(path: Path) -> Converted:
    """A presentation, slide by slide: its title, its text (bullets by level), tables, notes.

    Raises:
        ConversionFailed: CORRUPT (not a presentation python-pptx can open).
    """
    from pptx import Presentation
    from pptx.exc import PackageNotFoundError

    try:
        presentation = Presentation(str(path))
    except (PackageNotFoundError, KeyError, ValueError) as exc:
        raise ConversionFailed("CORRUPT", f"not a presentation that opens ({exc})") from None
    parts: list[str] = []
    count = 0
    for number, slide in enumerate(presentation.slides, start=1):
        count = number
        parts.append(marker("slide", str(number)))
        title_shape = slide.shapes.title
        if title_shape is not None and title_shape.has_text_frame and title_shape.text_frame.text.strip():
            parts.append("## " + " ".join(title_shape.text_frame.text.split()))
        title_id = title_shape.shape_id if title_shape is not None else None
        for shape in _shapes(slide.shapes):
            if title_id is not None and shape.shape_id == title_id:
                continue
            parts.extend(_shape_text(shape))
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                parts.append("Notes: " + " ".join(notes.text.split()))
        parts.extend(_slide_comments(slide))
    title = presentation.core_properties.title or None
    return Converted(_joined(parts), title=title, places=count)


def _shapes(shapes: Iterable[Any]) -> Iterator[Any]:
    """Every shape, the members of a group in place of the group."""
    for shape in shapes:
        members = getattr(shape, "shapes", None)
        if members is not None and shape.shape_type is not None and "GROUP" in str(shape.shape_type):
            yield from _shapes(members)
        else:
            yield shape


def _shape_text(shape: Any) -> list[str]:
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
        return [markdown_table(rows)]
    if getattr(shape, "has_chart", False) and shape.has_chart:
        from .ooxml import chart_lines, parse

        return chart_lines(parse(shape.chart_part.blob))
    diagram = shape._element.find(f".//{_DIAGRAM}")
    if diagram is not None:
        from .ooxml import diagram_lines, parse

        try:
            return diagram_lines(parse(shape.part.related_part(diagram.get(_RELATION_DATA, "")).blob))
        except KeyError:  # a diagram whose data part is missing shows only its drawing
            return []
    alt = _alt_text(shape)
    if alt is not None:
        return [alt]
    if not getattr(shape, "has_text_frame", False) or not shape.has_text_frame:
        return []
    lines = []
    for paragraph in shape.text_frame.paragraphs:
        text = " ".join("".join(run.text for run in paragraph.runs).split())
        if text:
            lines.append("  " * paragraph.level + "- " + text)
    return lines


def _slide_comments(slide: Any) -> list[str]:
    """A slide's comments (the legacy ``p:cm`` and the modern threaded ones), each with its text."""
    from .ooxml import parse

    lines = []
    for rel in slide.part.rels.values():
        if rel.is_external or not rel.reltype.endswith("/comments"):
            continue
        for comment in parse(rel.target_part.blob):
            text = " ".join("".join(comment.itertext()).split())
            if text:
                lines.append(f"- {text}")
    return ["Comments:", *lines] if lines else []


def _alt_text(shape: Any) -> str | None:
    """A picture's alt text as markdown's image (``![alt](Picture4.jpg)``), or None for a shape
    that is no picture or a picture nobody described."""
    if "PICTURE" not in str(shape.shape_type or ""):
        return None
    found = shape._element.xpath("./*[1]/p:cNvPr")
    described = " ".join((found[0].get("descr") or found[0].get("title") or "").split()) if found else ""
    if not described:
        return None
    try:
        extension = shape.image.ext
    except Exception:  # a linked or damaged picture: its name is enough
        extension = "jpg"
    name = re.sub(r"\W", "", shape.name) or "picture"
    return f"![{described}]({name}.{extension})"


# ----------------------------------------------------------------------------- OpenDocument
def convert_odt(path: Path) -> Converted:
    """An OpenDocument text: headings, paragraphs, lists and tables, in order; its notes as
    markdown footnotes, its comments, headers and footers after it; a picture as its title and
    description. An embedded object (a chart, a formula) is named in a warning.

    Raises:
        ConversionFailed: CORRUPT (not an OpenDocument text odfpy can open).
    """
    from odf import opendocument
    from odf.namespaces import TABLENS, TEXTNS

    try:
        document = opendocument.load(str(path))
    except Exception as exc:  # odfpy raises whatever its XML parser met, external entities included
        raise ConversionFailed("CORRUPT", f"not an OpenDocument text that opens ({type(exc).__name__})") from None
    blocks: list[str] = []
    extras = _OdfExtras()

    def walk(element: Any, depth: int) -> None:
        for child in element.childNodes:
            qname = getattr(child, "qname", None)
            if qname == (TEXTNS, "h"):
                level = int(child.attributes.get((TEXTNS, "outline-level")) or 1)
                blocks.append("#" * min(level + 1, 6) + " " + extras.text_of(child))
            elif qname == (TEXTNS, "p"):
                line = extras.text_of(child)
                if line:
                    blocks.append(("  " * (depth - 1) + "- " + line) if depth else line)
            elif qname == (TEXTNS, "list"):
                walk(child, depth + 1)
            elif qname == (TEXTNS, "list-item"):
                walk(child, depth)
            elif qname == (TABLENS, "table"):
                rows = [
                    [
                        extras.text_of(cell)
                        for cell in row.childNodes
                        if getattr(cell, "qname", None) == (TABLENS, "table-cell")
                    ]
                    for row in child.getElementsByType(_table_row())
                ]
                blocks.append(markdown_table(rows))
            elif getattr(child, "childNodes", None):
                walk(child, depth)

    walk(document.text, 0)
    blocks.extend(extras.notes)
    if extras.comments:
        blocks.extend(["## Comments", *extras.comments])
    blocks.extend(_odf_running(document, extras))
    warnings = [f"{extras.objects} embedded object(s) (a chart, a formula) not kept"] if extras.objects else []
    return Converted(_joined(blocks), warnings=warnings)


class _OdfExtras:
    """The text of OpenDocument elements, and what it sets aside while reading them: notes (kept
    as ``[^1]`` in the text and ``[^1]: ...`` after it), comments, and embedded objects counted."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.comments: list[str] = []
        self.objects = 0

    def text_of(self, element: Any) -> str:
        parts: list[str] = []
        self._collect(element, parts)
        return " ".join("".join(parts).split())

    def _collect(self, element: Any, parts: list[str]) -> None:
        from odf.namespaces import DRAWNS, OFFICENS, SVGNS, TEXTNS

        for child in element.childNodes:
            if child.nodeType == child.TEXT_NODE:
                parts.append(child.data)
                continue
            qname = getattr(child, "qname", None)
            if qname in ((TEXTNS, "s"), (TEXTNS, "tab"), (TEXTNS, "line-break")):
                parts.append(" ")
            elif qname == (TEXTNS, "note"):
                label = f"{'e' if child.getAttribute('noteclass') == 'endnote' else ''}{len(self.notes) + 1}"
                body = [self.text_of(part) for part in child.childNodes if _qname(part) == (TEXTNS, "note-body")]
                self.notes.append(f"[^{label}]: {' '.join(body)}")
                parts.append(f"[^{label}]")
            elif qname == (OFFICENS, "annotation"):
                said = [self.text_of(part) for part in child.childNodes if _qname(part) == (TEXTNS, "p")]
                author = [self.text_of(part) for part in child.childNodes if _qname(part)[1] == "creator"]
                text = " ".join(line for line in said if line)
                if text:
                    self.comments.append(f"- {author[0]}: {text}" if author and author[0] else f"- {text}")
            elif qname == (OFFICENS, "annotation-end"):
                continue
            elif qname == (DRAWNS, "frame"):
                described = [
                    self.text_of(part)
                    for part in child.childNodes
                    if _qname(part) in ((SVGNS, "title"), (SVGNS, "desc"))
                ]
                alt = " ".join(dict.fromkeys(line for line in described if line))
                if alt:
                    parts.append(f" ![{alt}]({child.getAttribute('name') or 'picture'}) ")
                self.objects += sum(1 for part in child.childNodes if _qname(part) == (DRAWNS, "object"))
                for part in child.childNodes:
                    if _qname(part) == (DRAWNS, "text-box"):
                        self._collect(part, parts)
            elif getattr(child, "childNodes", None):
                self._collect(child, parts)


def _qname(node: Any) -> tuple[str, str]:
    return getattr(node, "qname", None) or ("", "")


def _odf_running(document: Any, extras: _OdfExtras) -> list[str]:
    """The master pages' headers and footers, each said once."""
    from odf.namespaces import STYLENS

    kinds = {"header": "Header", "header-left": "Header", "footer": "Footer", "footer-left": "Footer"}
    seen: set[str] = set()
    blocks = []
    for page in document.masterstyles.childNodes:
        for part in page.childNodes:
            label = kinds.get(_qname(part)[1]) if _qname(part)[0] == STYLENS else None
            text = extras.text_of(part) if label else ""
            if label and text and text not in seen:
                seen.add(text)
                blocks.append(f"**{label}:** {text}")
    return blocks


def _table_row() -> Any:
    from odf.table import TableRow

    return TableRow


def _joined(blocks: Iterable[str]) -> str:
    """Blocks of markdown, a blank line between two unless both are items of one list."""
    out: list[str] = []
    previous = ""
    for block in blocks:
        if not block:
            continue
        listed = block.lstrip().startswith(("- ", "1. "))
        if out and not (listed and previous.lstrip().startswith(("- ", "1. "))):
            out.append("")
        out.append(block)
        previous = block
    return "\n".join(out) + "\n" if out else ""
