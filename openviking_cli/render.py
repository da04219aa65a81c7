"""Table-mode rendering shared by several commands: result cards, wrapped text, notes."""

from __future__ import annotations

import functools
import re
import textwrap
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["hit_cards", "note", "shorten_cells", "text_width", "wrap_cells", "wrap_indented"]


def text_width(console: Console) -> int:
    """Card text width: the terminal minus an indent, between 32 and 96 columns."""
    if not console.is_terminal:
        return 96
    return max(32, min(96, console.width - 3))


# Characters that take two columns and may end a line anywhere: CJK ideographs and punctuation,
# kana, hangul, full-width forms. Other text breaks at spaces only.
_WIDE_CHAR = "\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6"


@functools.cache
def _tokens() -> re.Pattern[str]:
    # Compiled on first use: a JSON answer never wraps text, and the ranges take milliseconds.
    return re.compile(rf"\s+|[{_WIDE_CHAR}]|[^\s{_WIDE_CHAR}]+")


def wrap_cells(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` terminal columns: a wide (CJK) character counts
    two and a line may break after any of them; other words break at spaces, and a word
    longer than a line is cut."""
    from rich.cells import cell_len

    width = max(width, 2)  # a wide character needs two columns
    lines: list[str] = []
    line, used = "", 0
    for token in _tokens().findall(text):
        if token.isspace():
            if line:
                line, used = line + " ", used + 1
            continue
        size = cell_len(token)
        if used + size > width and line.strip():
            lines.append(line.rstrip())
            line, used = "", 0
        while size > width:  # a word wider than a line: cut it where the line is full
            room, cut = width - used, 0
            while cut < len(token) and cell_len(token[: cut + 1]) <= room:
                cut += 1
            lines.append(line + token[:cut])
            token, line, used = token[cut:], "", 0
            size = cell_len(token)
        line, used = line + token, used + size
    if line.strip():
        lines.append(line.rstrip())
    return lines


def wrap_indented(text: str, width: int) -> list[str]:
    """``wrap_cells`` for a line of a message: its indentation (code, a nested list) stays on
    each of its lines."""
    body = text.lstrip(" ")
    indent = " " * min(len(text) - len(body), width // 2)
    return [indent + line for line in wrap_cells(body, width - len(indent))]


def shorten_cells(text: str, width: int, placeholder: str = "...") -> str:
    """``text`` on one line of ``width`` columns, cut at a word (or any wide character) and
    ended with ``placeholder`` when it does not fit."""
    lines = wrap_cells(text, width)
    if len(lines) <= 1:
        return lines[0] if lines else ""
    return wrap_cells(text, width - len(placeholder))[0] + placeholder


def note(*lines: str) -> None:
    """Notes such as "No results found." go to stderr, so stdout holds results only."""
    from .runtime import make_console

    console = make_console(stderr=True)
    for line in lines:
        console.print(line, soft_wrap=True)


def hits_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    """A find/search result's hits as one list, best first across the groups (the JSON keeps
    upstream's grouping): the cards' order, and jsonl's, so ``| head -1`` is the top hit.
    Ties keep the group order: memories, resources, skills."""
    grouped = [*result.get("memories", []), *result.get("resources", []), *result.get("skills", [])]
    return sorted(grouped, key=lambda hit: -float(hit.get("score") or 0.0))


def hit_cards(console: Console, result: dict[str, Any], header: str, subheader: str) -> None:
    """Ranked cards: ``N. type · Level L · score S``, the URI, two lines of abstract."""
    from rich.text import Text

    hits = hits_of(result)
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
        # A URI is never cut: it is what the reader opens next, and what a pipe's grep finds.
        uri = str(hit.get("uri", ""))
        for line in wrap_cells(uri, width) if console.is_terminal else [uri]:
            console.print(Text("   " + line, style="cyan"), soft_wrap=True)
        reason = hit.get("match_reason")
        if reason:
            console.print(Text("   " + str(reason), style="dim"), soft_wrap=True)
        text = " ".join(str(hit.get("abstract") or "").split()) or "No abstract available."
        lines = wrap_cells(text, width)
        if len(lines) > 2:
            rest = text[len(lines[0]) :].strip()  # the first line is the start of the text
            lines = [lines[0], shorten_cells(rest, width)]
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
    if (parts.get("record") or {}).get("form") == "dialogue":
        pieces.append("transcript")  # the file's form: a hybrid score weighs its vector side more
    if parts.get("keyword_translation"):
        glosses = textwrap.shorten(str(parts["keyword_translation"]), 60, placeholder="...")
        pieces.append(f"keyword also matched in English: {glosses}")
    return " · ".join(pieces)
