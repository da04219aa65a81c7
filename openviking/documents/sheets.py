"""Spreadsheets (Excel's .xlsx and .xls, OpenDocument's .ods, with python-calamine) as markdown
tables: a marker per sheet, and a marker per block of rows with the block's cell range
(``<!-- sheet Budget A1:D40 -->``), so that a chunk names the cells it holds. A sheet's comments
and (in .xlsx) charts follow its cells (:mod:`.ooxml`).

A CSV or TSV file is not converted: it is text, stored and grepped as it is, its chunks named
by their lines (its rows)."""

from __future__ import annotations

from datetime import date, datetime, time
from pathlib import Path
from typing import Any

from .converted import ConversionFailed, Converted
from .office import markdown_table
from .ooxml import spreadsheet_extras, workbook_extras
from .places import marker

__all__ = ["ROWS_PER_BLOCK", "convert_sheets"]

ROWS_PER_BLOCK = 40
MAX_ROWS = 100_000  # of a sheet, or of a CSV file: the rest is left out, with a warning


def column_name(index: int) -> str:
    """``0`` is ``A``, ``25`` is ``Z``, ``26`` is ``AA``, as a spreadsheet names its columns."""
    name = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        name = chr(65 + rest) + name
    return name


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # calamine reads every number as a float
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return str(value)


def _blocks(label: str, rows: list[list[str]], first_row: int, first_column: int) -> list[str]:
    """The rows as tables of ROWS_PER_BLOCK rows each, the header row repeated in every one, each
    after the marker of its cell range."""
    if not rows:
        return []
    header, body = rows[0], rows[1:] or [[]]
    width = max(len(row) for row in rows)
    parts = []
    for start in range(0, len(body), ROWS_PER_BLOCK):
        block = body[start : start + ROWS_PER_BLOCK]
        top = first_row + (1 if start else 0) + start
        bottom = first_row + start + len(block)
        cells = f"{column_name(first_column)}{top}:{column_name(first_column + width - 1)}{bottom}"
        parts.append(marker("sheet", f"{label} {cells}"))
        parts.append(markdown_table([header, *block]))
    return parts


def _is_opendocument(path: Path) -> bool:
    with path.open("rb") as handle:
        return b"opendocument" in handle.read(100)


def convert_sheets(path: Path) -> Converted:
    """Every sheet of a workbook, with its cached values (formulas as last computed).

    Raises:
        ConversionFailed: ENCRYPTED, CORRUPT.
    """
    from python_calamine import CalamineWorkbook

    try:
        workbook = CalamineWorkbook.from_path(str(path))
    except Exception as exc:  # calamine raises its own errors, and ValueError for what is no workbook
        kind = type(exc).__name__
        if "Password" in kind or "password" in str(exc).lower():
            raise ConversionFailed("ENCRYPTED", "the workbook is protected by a password") from None
        raise ConversionFailed("CORRUPT", f"not a workbook that opens ({kind})") from None
    parts: list[str] = []
    warnings: list[str] = []
    extras, objects = spreadsheet_extras(path) if _is_opendocument(path) else (workbook_extras(path), 0)
    if objects:
        warnings.append(f"{objects} embedded object(s) (a chart) not kept")
    for name in workbook.sheet_names:
        sheet = workbook.get_sheet_by_name(name)
        rows = [[_cell(v) for v in row] for row in sheet.to_python(skip_empty_area=True, nrows=MAX_ROWS + 1)]
        if len(rows) > MAX_ROWS:
            rows = rows[:MAX_ROWS]
            warnings.append(f"sheet {name}: only its first {MAX_ROWS:,} rows are kept")
        start = sheet.start or (0, 0)
        blocks = _blocks(name, rows, start[0] + 1, start[1])
        if name in extras:  # its comments and charts, under its last block's marker or its own
            blocks.extend([] if blocks else [marker("sheet", name)])
            blocks.append("\n\n".join(extras[name]))
        parts.extend(blocks)
    return Converted("\n\n".join(parts) + "\n" if parts else "", places=len(workbook.sheet_names), warnings=warnings)
