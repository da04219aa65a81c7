"""``openviking glob``: files and directories by path pattern."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from openviking_cli.console import say
from openviking_cli.render import note
from openviking_cli.runtime import LISTING_FORMATS, AsOfOption, CliContext, Output, command

app = typer.Typer()


@command(app, "glob", formats=LISTING_FORMATS)
def glob(
    ctx: CliContext,
    pattern: Annotated[
        str,
        typer.Argument(help="A glob: *, ?, \\[abc], [!a], {a,b}; ** is any number of directories.", show_default=False),
    ],
    uri: Annotated[str, typer.Option("-u", "--uri", help="Match paths relative to this directory.")] = "viking://",
    node_limit: Annotated[
        int | None,
        typer.Option("-n", "--node-limit", help="At most N URIs (0: all).", show_default=False),
    ] = None,
    as_of: AsOfOption = None,
) -> Output:
    """List the files and directories whose path below --uri matches PATTERN, one URI per line.

    The whole relative path must match: "*.md" matches only direct children; use "**/*.md".

    Example: openviking glob "**/*.md" --uri viking://resources
    """
    result = ctx.client().glob(pattern, uri=uri, node_limit=node_limit, as_of=as_of)

    def render(_console: Any) -> None:
        if not result["matches"]:
            note("No matches.")
            return
        say("\n".join(result["matches"]) + "\n")  # one URI a line, as fd prints paths

    return Output(result, table=render, items=[{"uri": u} for u in result["matches"]])
