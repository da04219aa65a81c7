"""``openviking context``: the best context for a question within a budget of tokens, for a prompt."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from openviking_cli.commands.find import BatchOption, UriOption, one_of_query_or_batch
from openviking_cli.console import say
from openviking_cli.render import note, pending_note
from openviking_cli.runtime import CliContext, Output, command

app = typer.Typer()


@command(app, "context")
def context(
    ctx: CliContext,
    query: Annotated[
        str | None, typer.Argument(help="What the context is for: a question or a task.", show_default=False)
    ] = None,
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
    batch: BatchOption = None,
) -> Output:
    """Print the best memories, summaries and chunks for QUERY that fit in --budget tokens, as
    markdown for a prompt (-o json: each piece with its URI, tokens and why it was chosen).

    Pieces are packed breadth first: every hit briefly (a directory's abstract, a chunk's lines),
    then more of each while tokens are left (its overview, the lines around the chunk). Tokens are
    counted with the bundled model's tokenizer.

    With --batch, answer many questions in one process: the model loads once.

    Example: openviking context "how do I rotate API keys" --budget 1500 > prompt.md
    """
    options: dict[str, Any] = {"target_uri": uri or "", "session_id": session_id, "budget": budget, "limit": limit}
    single = one_of_query_or_batch(query, batch)
    client = ctx.client()
    if single is None:
        from openviking_cli.batch import CONTEXT_OPTIONS, run_batch

        return run_batch(ctx, batch or "-", CONTEXT_OPTIONS, options, lambda given: client.context(**given))
    result = client.context(single, **options)
    return Output(result, table=lambda console: _markdown(result), items=result["entries"])


def _markdown(result: Any) -> None:
    # The markdown as it is, for a prompt or a file: no rich markup, no wrapping; a note on stderr.
    say(result["rendered"] if result["rendered"] else "No context found.\n")
    if pending_note(result):
        note(pending_note(result))
