"""``openviking grep``: regular expressions over file content."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from openviking.errors import InvalidArgumentError
from openviking_cli.console import say
from openviking_cli.render import note
from openviking_cli.runtime import LISTING_FORMATS, AsOfOption, CliContext, Output, command, make_console

app = typer.Typer()

SCOPE_PANEL = "Scope"
OUTPUT_PANEL = "What to print"


@command(app, "grep", formats=LISTING_FORMATS)
def grep(
    ctx: CliContext,
    args: Annotated[
        list[str],
        typer.Argument(
            help="[URI] PATTERN: a directory or file to search (default viking://), then a Python regular expression.",
            metavar="[URI] PATTERN",
            show_default=False,
        ),
    ],
    uri: Annotated[
        str | None,
        typer.Option("-u", "--uri", help="Search here (instead of a URI argument).", rich_help_panel=SCOPE_PANEL),
    ] = None,
    ignore_case: Annotated[bool, typer.Option("-i", "--ignore-case", help="Ignore case.")] = False,
    fixed_strings: Annotated[
        bool, typer.Option("-F", "--fixed-strings", help="PATTERN is plain text, not a regular expression.")
    ] = False,
    exclude_uri: Annotated[
        list[str] | None,
        typer.Option(
            "-x",
            "--exclude-uri",
            help="Skip this URI and everything below it (repeatable).",
            rich_help_panel=SCOPE_PANEL,
            show_default=False,
        ),
    ] = None,
    node_limit: Annotated[
        int | None,
        typer.Option(
            "-n",
            "--node-limit",
            help="At most N matching lines (0: all).",
            rich_help_panel=SCOPE_PANEL,
            show_default=False,
        ),
    ] = None,
    level_limit: Annotated[
        int,
        typer.Option(
            "-L",
            "--level-limit",
            help="Search files at most N levels below the URI (0: all).",
            rich_help_panel=SCOPE_PANEL,
        ),
    ] = 5,
    count: Annotated[
        bool,
        typer.Option(
            "-c", "--count", help="Print the number of matching lines per file.", rich_help_panel=OUTPUT_PANEL
        ),
    ] = False,
    files_with_matches: Annotated[
        bool,
        typer.Option(
            "-l",
            "--files-with-matches",
            help="Print only the URIs of files with a match.",
            rich_help_panel=OUTPUT_PANEL,
        ),
    ] = False,
    as_of: AsOfOption = None,
) -> Output:
    """Search file content line by line for a regular expression (Python's re syntax).

    Prints uri:line:content per matching line. Hidden files (.abstract.md, .overview.md) are
    never searched; files come depth first, directories before files, by name.

    Example: openviking grep viking://resources/docs "auth(entication|orization)" -i
    """
    if len(args) > 2:
        raise InvalidArgumentError(
            f"grep takes [URI] PATTERN, got {len(args)} arguments",
            hint='Quote a pattern that holds spaces: openviking grep viking://resources "two words"',
            details={"arguments": args},
        )
    if len(args) == 2 and uri is not None:
        raise InvalidArgumentError(
            "Give the URI once: as the first argument or with -u/--uri",
            details={"uri": uri, "argument": args[0]},
        )
    target = args[0] if len(args) == 2 else (uri if uri is not None else "viking://")
    pattern = args[-1]
    highlight = not ctx.machine and not count and not files_with_matches and make_console().is_terminal
    result = ctx.client().grep(
        target,
        pattern,
        case_insensitive=ignore_case,
        exclude_uri=exclude_uri,
        node_limit=node_limit,
        level_limit=level_limit,
        fixed_strings=fixed_strings,
        count=count,
        files_with_matches=files_with_matches,
        spans=highlight,
        as_of=as_of,
    )
    if count:
        items: list[Any] = result["counts"]
        lines = [f"{item['uri']}:{item['count']}" for item in items]
    elif files_with_matches:
        items = [{"uri": u} for u in result["files"]]
        lines = list(result["files"])
    else:
        items = result["matches"]
        lines = [f"{m['uri']}:{m['line']}:{m['content']}" for m in items]

    def render(console: Any) -> None:
        if not lines:
            note("No matches.")
        elif highlight:
            _highlighted(console, result["matches"])
        else:
            _write_lines(lines)

    return Output(result, table=render, items=items)


def _highlighted(console: Any, matches: list[dict[str, Any]]) -> None:
    """``uri:line:content`` with the URI, the line number and each match in color (rg's colors),
    and a converted document's place (``(page 2)``) before the content."""
    from rich.text import Text

    for match in matches:
        line = Text()
        line.append(match["uri"], style="magenta")
        line.append(":")
        line.append(str(match["line"]), style="green")
        line.append(":")
        if match.get("place"):
            line.append(f"({match['place']}) ", style="dim")
        body = Text(match["content"])
        for start, end in match.get("spans") or []:
            body.stylize("bold red", start, end)
        line.append_text(body)
        console.print(line, soft_wrap=True, no_wrap=True, overflow="ignore", crop=False)


def _write_lines(lines: list[str]) -> None:
    # Not a terminal: the lines as they are, no rich (fast, and no markup or wrapping).
    say("\n".join(lines) + "\n")
