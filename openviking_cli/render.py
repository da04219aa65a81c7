"""Table-mode renderers shared by several commands (result cards, listings)."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["hit_cards", "note", "text_width"]


def text_width(console: Console) -> int:
    """Card text width: the terminal minus an indent, between 32 and 96 columns."""
    if not console.is_terminal:
        return 96
    return max(32, min(96, console.width - 3))


def note(*lines: str) -> None:
    """Notes such as "No results found." go to stderr, so stdout holds results only."""
    from .runtime import make_console

    console = make_console(stderr=True)
    for line in lines:
        console.print(line, soft_wrap=True)


def hits_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    """A find/search result's hits as one list: memories, then resources, then skills."""
    return [*result.get("memories", []), *result.get("resources", []), *result.get("skills", [])]


def hit_cards(console: Console, result: dict[str, Any], header: str, subheader: str) -> None:
    """Ranked cards: ``N. type · Level L · score S``, the URI, two lines of abstract."""
    from rich.text import Text

    # Best first across the groups (the JSON keeps the brief's grouping); ties keep group order.
    hits = sorted(hits_of(result), key=lambda hit: -float(hit.get("score") or 0.0))
    width = text_width(console)
    console.print(Text(header, style="bold"), soft_wrap=True)
    console.print(Text(subheader, style="dim"), soft_wrap=True)
    for rank, hit in enumerate(hits, start=1):
        console.print()
        title = Text(f"{rank}. ", style="bold")
        title.append(str(hit.get("context_type") or "result"), style="magenta")
        title.append(f" · Level {hit.get('level')}")
        score = hit.get("score")
        if isinstance(score, int | float):
            title.append(" · score ")
            title.append(f"{score:.3f}", style="green")
        console.print(title, soft_wrap=True)
        for line in textwrap.wrap(str(hit.get("uri", "")), width, break_on_hyphens=False)[:2]:
            console.print(Text("   " + line, style="cyan"), soft_wrap=True)
        reason = hit.get("match_reason")
        if reason:
            console.print(Text("   " + str(reason), style="dim"), soft_wrap=True)
        text = " ".join(str(hit.get("abstract") or "").split()) or "No abstract available."
        lines = textwrap.wrap(text, width)
        if len(lines) > 2:
            lines = [lines[0], textwrap.shorten(lines[1] + " " + lines[2], width, placeholder="...")]
        for line in lines:
            console.print(Text("   " + line), soft_wrap=True)
        if hit.get("explain"):
            console.print(Text("   " + explain_line(hit["explain"]), style="dim"), soft_wrap=True)


def explain_line(parts: dict[str, Any]) -> str:
    """``vector 0.861 (#2) · keyword 7.31 (#1)`` for one hit."""
    pieces = []
    for side in ("vector", "keyword", "summary", "rerank"):
        info = parts.get(side)
        if info:
            pieces.append(
                f"{side} {info['score']:.3f} (#{info['rank']})" if "rank" in info else f"{side} {info['score']:.3f}"
            )
        elif side != "rerank":
            pieces.append(f"{side} -")
    if parts.get("keyword_translation"):
        glosses = textwrap.shorten(str(parts["keyword_translation"]), 60, placeholder="...")
        pieces.append(f"keyword also matched in English: {glosses}")
    return " · ".join(pieces)
