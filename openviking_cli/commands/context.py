"""``openviking context``: the best context for a question within a budget of tokens, for a prompt."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from openviking_cli.commands.find import UriOption
from openviking_cli.console import say
from openviking_cli.runtime import CliContext, Output, command

app = typer.Typer()


@command(app, "context")
def context(
    ctx: CliContext,
    query: Annotated[str, typer.Argument(help="What the context is for: a question or a task.", show_default=False)],
    uri: UriOption = None,
    session_id: Annotated[
        str | None,
        typer.Option("--session-id", help="Plan the search from this session's messages.", show_default=False),
    ] = None,
    budget: Annotated[int, typer.Option("--budget", help="The most tokens the context may take.", min=1)] = 2000,
    limit: Annotated[
        int,
        typer.Option(
            "-n",
            "--limit",
            help="How many hits to choose the pieces from: the best 10 x N records (N files with --session-id).",
            min=1,
            max=200,
        ),
    ] = 20,
) -> Output:
    """Print the best memories, summaries and chunks for QUERY that fit in --budget tokens, as
    markdown for a prompt (-o json: each piece with its URI, tokens and why it was chosen).

    Pieces are packed breadth first: every hit briefly (a directory's abstract, a chunk's lines),
    then more of each while tokens are left (its overview, the lines around the chunk). Tokens are
    counted with the bundled model's tokenizer.

    Example: openviking context "how do I rotate API keys" --budget 1500 > prompt.md
    """
    result = ctx.client().context(query, uri or "", session_id, budget, limit)
    return Output(result, table=lambda console: _markdown(result), items=result["entries"])


def _markdown(result: Any) -> None:
    # The markdown as it is, for a prompt or a file: no rich markup, no wrapping.
    say(result["rendered"] if result["rendered"] else "No context found.\n")
