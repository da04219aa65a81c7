"""Jupyter notebooks (.ipynb, read as the JSON they are) and RTF (striprtf): a notebook's markdown
and code cells in order, each after its marker (``<!-- cell 3 (code) -->``), a code cell fenced in
its language and its outputs left out; an RTF file's plain text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .converted import ConversionFailed, Converted
from .places import marker

__all__ = ["convert_notebook", "convert_rtf"]


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def convert_notebook(path: Path) -> Converted:
    """A notebook's cells, markdown as it is and code fenced; outputs are not kept.

    Raises:
        ConversionFailed: CORRUPT (not the JSON of a notebook).
    """
    try:
        notebook = json.loads(path.read_text(encoding="utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConversionFailed("CORRUPT", f"not a notebook's JSON ({type(exc).__name__})") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise ConversionFailed("CORRUPT", "the notebook has no cells")
    language = str(((notebook.get("metadata") or {}).get("language_info") or {}).get("name") or "python")
    parts = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            continue
        kind = str(cell.get("cell_type") or "raw")
        text = _source(cell).strip("\n")
        if not text.strip():
            continue
        parts.append(marker("cell", f"{number} ({kind})"))
        parts.append(f"```{language}\n{text}\n```" if kind == "code" else text)
    return Converted("\n\n".join(parts) + "\n" if parts else "", places=len(cells))


def convert_rtf(path: Path) -> Converted:
    """An RTF file's text (its paragraphs; RTF's formatting is left out)."""
    from striprtf.striprtf import rtf_to_text

    raw = path.read_bytes().decode("latin-1")  # RTF is 7-bit with escapes; \\'xx bytes are cp1252
    text: str = rtf_to_text(raw, errors="ignore")  # type: ignore[no-untyped-call]
    return Converted(text.strip() + "\n")
