"""Printing results: a plain-text table of rows, and a titled list of key/value pairs."""

from __future__ import annotations

from typing import Any


def print_table(rows: list[dict[str, Any]], columns: list[str], title: str | None = None) -> None:
    """``columns`` of ``rows``, left-aligned, under an optional title."""
    if title:
        print(f"\n{title}")
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for row in rows:
        print("  ".join(str(row.get(c, "")).ljust(widths[c]) for c in columns))


def print_pairs(title: str, values: dict[str, Any]) -> None:
    print(f"\n{title}")
    for key, value in values.items():
        print(f"  {key:<28} {value}")
