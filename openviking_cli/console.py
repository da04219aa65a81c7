"""Writing to stdout and stderr: the output formats, rich consoles, JSON text and a closed pipe.

Both what a command prints (runtime.py) and what an error prints (boundary.py) go through
these, so the two agree on how JSON looks and on when a console colors or wraps.
"""

from __future__ import annotations

import enum
import functools
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


class OutputFormat(enum.StrEnum):
    """``-o/--output`` values: the table for people, the others for programs."""

    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    tsv = "tsv"

    @property
    def machine(self) -> bool:
        """Whether a program reads it: then an error is a JSON object on stderr too."""
        return self is not OutputFormat.table


STANDARD_FORMATS = (OutputFormat.table, OutputFormat.json, OutputFormat.jsonl)
"""What every command prints."""
LISTING_FORMATS = (*STANDARD_FORMATS, OutputFormat.csv, OutputFormat.tsv)
"""What a command that lists items prints: also one row per item, as CSV or TSV with a header."""


PIPE_WIDTH = 4096


def make_console(stderr: bool = False) -> Console:
    """A rich console that never reads data as markup and colors only a terminal.

    Made anew each time: rich reads NO_COLOR and the terminal when a console is built.
    Into a pipe or a file it does not wrap at 80 columns (rich's default there): a script
    reading ``ls`` or ``tree`` line by line gets one entry per line. ``COLUMNS`` still wins.
    """
    console = _console_class()(stderr=stderr, highlight=False, markup=False, emoji=False, soft_wrap=False)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console.width = PIPE_WIDTH
    return console


@functools.cache
def _console_class() -> type[Console]:
    from rich.console import Console

    class PipeAwareConsole(Console):
        def on_broken_pipe(self) -> None:
            # rich exits 1 on EPIPE; a reader that stopped early (`| head -1`) is no failure.
            self.quiet = True
            raise BrokenPipeError

    return PipeAwareConsole


def silence_stdout() -> None:
    """After EPIPE: point stdout at /dev/null so the interpreter's final flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def json_text(value: Any, *, compact: bool = False) -> str:
    """``value`` as one JSON document; ``compact`` for a jsonl line, as ``jq -c`` prints it."""
    return json.dumps(value, **(_COMPACT if compact else _DOCUMENT))


def _json_default(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "isoformat"):
        from openviking.timefilter import format_iso8601

        return format_iso8601(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


_DOCUMENT: dict[str, Any] = {"ensure_ascii": False, "default": _json_default}
_COMPACT: dict[str, Any] = {**_DOCUMENT, "separators": (",", ":")}
