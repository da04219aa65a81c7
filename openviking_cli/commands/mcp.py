"""``openviking mcp``: the MCP tools over stdio, for an agent that starts openviking itself."""

from __future__ import annotations

import typer

from openviking_cli.runtime import CliContext, Output, command

app = typer.Typer()

# The tools the operations declare (``operations.tool_names()``), written out so that --help
# need not load the interface; tests/test_mcp.py fails when they differ.
TOOLS = (
    "find", "search", "grep", "glob", "read", "abstract", "overview", "ls", "tree", "add_memory", "list_watches",
    "commit_session", "context",
)  # fmt: skip
HELP = "\n\n".join(
    [
        "Serve the store to an MCP client over stdin and stdout, until stdin closes.",
        f"The {len(TOOLS)} tools: {', '.join(TOOLS)}; each result is the JSON of the same command's -o json "
        "result (file text as it is). Only the protocol is written to stdout; warnings and logs go to stderr.",
        "Register it with an MCP client as the command openviking with the arguments mcp --store PATH (and "
        "--config FILE).",
        "Example: openviking mcp --store ~/.openviking/data",
    ]
)


@command(app, "mcp", help=HELP)
def mcp(ctx: CliContext) -> Output:
    """Serve the MCP tools over stdio (HELP says which)."""
    import logging

    import anyio

    # The SDK's package, imported only here: --help and usage errors stay light.
    from openviking.server.mcp import serve_stdio

    logging.basicConfig(
        level=logging.INFO if ctx.debug else logging.WARNING,
        format="openviking mcp: %(levelname)s %(name)s: %(message)s",
    )
    client = ctx.client()
    client.initialize()  # a bad --config fails now, as one line, rather than in every call
    anyio.run(serve_stdio, lambda: client)
    # stdout belongs to the protocol: no result follows it, whatever -o asked for.
    raise typer.Exit(0)
