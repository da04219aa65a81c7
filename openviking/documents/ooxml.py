"""The parts of an Office package that python-docx, python-pptx and calamine do not read, read from
their XML (with defusedxml): a chart as its title and a table of its values, a SmartArt diagram
as its text, and a workbook's cell comments and charts by sheet (an OpenDocument spreadsheet's
comments too, and its embedded charts counted)."""

from __future__ import annotations

import posixpath
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["chart_lines", "diagram_lines", "parse", "spreadsheet_extras", "workbook_extras"]

_C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_RELS = "{http://schemas.openxmlformats.org/package/2006/relationships}"


def parse(blob: bytes) -> Any:
    """A part's XML (no entities, no external references)."""
    from defusedxml import ElementTree

    return ElementTree.fromstring(blob)


def _words(texts: Iterable[str | None]) -> str:
    return " ".join("".join(text or "" for text in texts).split())


# ----------------------------------------------------------------------------- charts and diagrams
def chart_lines(space: Any) -> list[str]:
    """A chart (its ``c:chartSpace``) as ``### Chart: title`` and a table of its cached values: a
    row per category (or x value), a column per series."""
    from .office import markdown_table

    chart = space.find(f"{_C}chart")
    if chart is None:
        return []
    lines = []
    title = chart.find(f"{_C}title")
    if title is not None:
        text = _words(t.text for t in title.iter(f"{_A}t")) or _words(v.text for v in title.iter(f"{_C}v"))
        if text:
            lines.append(f"### Chart: {text}")
    series = list(chart.iter(f"{_C}ser"))
    if not series:
        return lines
    names = [_series_name(one) or f"Series {number}" for number, one in enumerate(series, start=1)]
    categories = _points(series[0], ("cat", "xVal"))
    columns = [_points(one, ("val", "yVal")) for one in series]
    count = max([len(categories), *(len(column) for column in columns)])
    if not count:  # no values kept with the chart (openpyxl writes none): say where they are
        cells = list(dict.fromkeys(f.text.strip() for one in series for f in one.iter(f"{_C}f") if f.text))
        return [*lines, "Data: " + ", ".join(cells)] if cells else lines
    rows = [[categories.get(i, ""), *[_number(column.get(i, "")) for column in columns]] for i in range(count)]
    return [*lines, markdown_table([["Category", *names], *rows])]


def _series_name(series: Any) -> str:
    label = series.find(f"{_C}tx")
    return _words(v.text for v in label.iter(f"{_C}v")) if label is not None else ""


def _points(series: Any, names: tuple[str, ...]) -> dict[int, str]:
    """A series' cached points (``c:pt``) under the first of ``names`` it has, by index."""
    for name in names:
        found = series.find(f"{_C}{name}")
        if found is not None:
            points: dict[int, str] = {}
            for point in found.iter(f"{_C}pt"):
                value = point.find(f"{_C}v")
                points.setdefault(int(point.get("idx", len(points))), (value.text or "") if value is not None else "")
            return points
    return {}


def _number(value: str) -> str:
    try:
        number = float(value)
    except ValueError:
        return value
    return str(int(number)) if number.is_integer() and "e" not in value.lower() else value


def diagram_lines(data: Any) -> list[str]:
    """A SmartArt diagram (its data part) as a list of its nodes' text."""
    lines = []
    for point in data.iter("{http://schemas.openxmlformats.org/drawingml/2006/diagram}pt"):
        text = _words(t.text for t in point.iter(f"{_A}t"))
        if text:
            lines.append(f"- {text}")
    return lines


# ----------------------------------------------------------------------------- workbooks
def workbook_extras(path: Path) -> dict[str, list[str]]:
    """What an Excel workbook's sheets hold besides their cells, by sheet name: each comment (a
    note) with its cell, and each chart as :func:`chart_lines`. Empty for a workbook that is not
    an OOXML package (an old .xls, an .ods)."""
    try:
        with zipfile.ZipFile(path) as package:
            return _workbook_extras(package)
    except (zipfile.BadZipFile, OSError, KeyError, ValueError, SyntaxError):
        return {}  # a damaged part: the cells calamine read are still the workbook


def _workbook_extras(package: zipfile.ZipFile) -> dict[str, list[str]]:
    workbook = "xl/workbook.xml"
    sheets = _related(package, workbook)
    extras: dict[str, list[str]] = {}
    for sheet in parse(package.read(workbook)).iter(f"{_S}sheet"):
        found = sheets.get(sheet.get(f"{_R}id", ""))
        if found is None:
            continue
        lines: list[str] = []
        for kind, target in _related(package, found[1]).values():
            if kind == "comments":
                lines.extend(_comments(parse(package.read(target))))
            elif kind == "drawing":
                for chart_kind, chart in _related(package, target).values():
                    if chart_kind == "chart":
                        lines.extend(chart_lines(parse(package.read(chart))))
        if lines:
            extras[sheet.get("name", "")] = lines
    return extras


def _comments(part: Any) -> list[str]:
    authors = [_words(a.itertext()) for a in part.iter(f"{_S}author")]
    lines = []
    for comment in part.iter(f"{_S}comment"):
        text = _words(t.text for t in comment.iter(f"{_S}t"))
        if text:
            author = authors[int(comment.get("authorId", "0"))] if comment.get("authorId", "0").isdigit() else ""
            said = f"{author}: {text}" if author and not text.startswith(author) else text
            lines.append(f"- {comment.get('ref', '')}: {said}")
    return ["Comments:", *lines] if lines else []


def _related(package: zipfile.ZipFile, part: str) -> dict[str, tuple[str, str]]:
    """The relationships of ``part``: id -> (the type's last word, the target's path)."""
    folder, name = posixpath.split(part)
    rels = posixpath.join(folder, "_rels", name + ".rels")
    if rels not in package.namelist():
        return {}
    found = {}
    for rel in parse(package.read(rels)).iter(f"{_RELS}Relationship"):
        if rel.get("TargetMode") == "External":
            continue
        kind = rel.get("Type", "").rsplit("/", 1)[-1]
        target = rel.get("Target", "")
        path = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(folder, target))
        found[rel.get("Id", "")] = (kind, path)
    return found


# ----------------------------------------------------------------------------- OpenDocument spreadsheets
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
_MAX_REPEAT = 1_000_000  # a repeated empty row or column at the sheet's end counts no further


def spreadsheet_extras(path: Path) -> tuple[dict[str, list[str]], int]:
    """An OpenDocument spreadsheet's comments by sheet name (each with its cell) and how many
    embedded objects (charts) it holds; empty for what is not one."""
    from .sheets import column_name

    try:
        with zipfile.ZipFile(path) as package:
            blob = package.read("content.xml")
        if b"annotation" not in blob and b"draw:object" not in blob:
            return {}, 0  # most spreadsheets: no second reading of their cells
        content = parse(blob)
    except (zipfile.BadZipFile, OSError, KeyError, SyntaxError):
        return {}, 0
    extras: dict[str, list[str]] = {}
    for table in content.iter(f"{_TABLE}table"):
        lines = []
        row = 0
        for row_element in table.iter(f"{_TABLE}table-row"):
            column = 0
            for cell in row_element:
                for note in cell.iter(f"{_OFFICE}annotation"):
                    text = " ".join(_words(p.itertext()) for p in note.iter(f"{_TEXT}p"))
                    if text.strip():
                        lines.append(f"- {column_name(column)}{row + 1}: {text.strip()}")
                column += min(int(cell.get(f"{_TABLE}number-columns-repeated", "1")), _MAX_REPEAT)
            row += min(int(row_element.get(f"{_TABLE}number-rows-repeated", "1")), _MAX_REPEAT)
        if lines:
            extras[table.get(f"{_TABLE}name", "")] = ["Comments:", *lines]
    return extras, sum(1 for _ in content.iter(f"{_DRAW}object"))
