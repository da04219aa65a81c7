"""Writing to stdout and stderr: the output formats, rich consoles, JSON text and a closed pipe.

Both what a command prints (runtime.py) and what an error prints (boundary.py) go through
these, so the two agree on how JSON looks and on when a console colors or wraps. Nothing else
in the CLI writes to stdout or stderr, and nothing written here carries a control character
from the data: stored text, file names, messages, warnings and errors can hold escape
sequences, which a terminal would act on (clear the screen, retitle the window, hide a line),
so ``ostext.printable`` spells them out in every console, every plain line (:func:`say`) and
every CSV cell, and JSON escapes them.
"""

from __future__ import annotations

import enum
import functools
import json
import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openviking.system.ostext import printable

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.segment import Segment

# What json.dumps(ensure_ascii=False) leaves as it is of the controls printable() shows: DEL and
# the C1 controls (it escapes the C0 ones).
_UNESCAPED_BY_JSON = re.compile(r"[\x7f-\x9f]")


def say(text: str, *, stderr: bool = False) -> None:
    """Write ``text`` for people (a file's text, a line of a listing, a warning, an error) on
    stdout, or stderr, with its control characters shown (:func:`printable`)."""
    (sys.stderr if stderr else sys.stdout).write(printable(text))


def say_bytes(data: bytes) -> None:
    """Write ``data`` on stdout as it is: the bytes a user asked for (``read --raw``)."""
    sys.stdout.flush()
    sys.stdout.buffer.write(data)


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
    from rich.segment import Segment

    class PipeAwareConsole(Console):
        def on_broken_pipe(self) -> None:
            # rich exits 1 on EPIPE; a reader that stopped early (`| head -1`) is no failure.
            self.quiet = True
            raise BrokenPipeError

        def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
            # Every text, table cell and card is rendered through here (a table's cells too,
            # before it lays them out); rich's own control segments (a progress bar's cursor) pass.
            for segment in super().render(renderable, options):
                shown = segment.text if segment.control else printable(segment.text)
                yield segment if shown == segment.text else Segment(shown, segment.style)

    return PipeAwareConsole


def silence_stdout() -> None:
    """After EPIPE: point stdout at /dev/null so the interpreter's final flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def json_text(value: Any, *, compact: bool = False) -> str:
    """``value`` as one JSON document; ``compact`` for a jsonl line, as ``jq -c`` prints it.
    Every control character is escaped (``\\u009b``), as JSON allows in any string."""
    text = json.dumps(value, **(_COMPACT if compact else _DOCUMENT))
    return _UNESCAPED_BY_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _json_default(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "isoformat"):
        from openviking.values.timefilter import format_iso8601

        return format_iso8601(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


_DOCUMENT: dict[str, Any] = {"ensure_ascii": False, "default": _json_default}
_COMPACT: dict[str, Any] = {**_DOCUMENT, "separators": (",", ":")}
