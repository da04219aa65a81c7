"""Reading the store: ``read``, ``abstract``, ``overview``, ``ls``, ``tree``, ``stat``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import typer

from openviking.errors import InvalidArgumentError
from openviking_cli.console import say, say_bytes
from openviking_cli.runtime import LISTING_FORMATS, AsOfOption, CliContext, Output, command

app = typer.Typer()

UriArgument = Annotated[str, typer.Argument(help="A viking:// URI.", show_default=False)]
DirArgument = Annotated[str, typer.Argument(help="A viking:// URI.")]


def _raw_text(text: str) -> Any:
    # File content is printed as it is (its control characters shown): no rich, no wrapping, no markup.
    def render(_console: Any) -> None:
        say(text if not text or text.endswith("\n") else text + "\n")

    return render


@command(app, "read")
def read(
    ctx: CliContext,
    uri: UriArgument,
    offset: Annotated[int, typer.Option("--offset", help="First line to print (0-based).", min=0)] = 0,
    limit: Annotated[int, typer.Option("--limit", help="Number of lines (-1: all).", min=-1)] = -1,
    raw: Annotated[
        bool, typer.Option("--raw", help="The file's bytes as they were added (JSON: base64), not its text.")
    ] = False,
    as_of: AsOfOption = None,
) -> Output:
    """Print a file's full content (L2); a directory prints its overview.

    Example: openviking read viking://resources/docs/guides/04-authentication.md --limit 20
    """
    if raw:
        if as_of is not None:
            raise InvalidArgumentError(
                "read --raw gives the bytes as they are now; --as-of reads the text only",
                details={"as_of": as_of},
            )
        return _bytes_output(uri, ctx.client().download(uri))
    text = ctx.client().read(uri, offset=offset, limit=limit, as_of=as_of)
    return Output(text, table=_raw_text(text), items=[{"uri": uri, "content": text}])


def _bytes_output(uri: str, data: bytes) -> Output:
    import base64

    def render(_console: Any) -> None:
        say_bytes(data)

    as_json = {"uri": uri, "size": len(data), "content_base64": base64.b64encode(data).decode("ascii")}
    return Output(as_json, table=render, items=[as_json])


@command(app, "abstract")
def abstract(ctx: CliContext, uri: UriArgument, as_of: AsOfOption = None) -> Output:
    """Print a directory's L0 abstract (a file prints its summary)."""
    text = ctx.client().abstract(uri, as_of=as_of)
    return Output(text, table=_raw_text(text), items=[{"uri": uri, "abstract": text}])


@command(app, "overview")
def overview(ctx: CliContext, uri: UriArgument, as_of: AsOfOption = None) -> Output:
    """Print a directory's L1 overview (a file prints its directory's)."""
    text = ctx.client().overview(uri, as_of=as_of)
    return Output(text, table=_raw_text(text), items=[{"uri": uri, "overview": text}])


def _listing(console: Any, entries: Sequence[Mapping[str, Any]]) -> None:
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    if not entries:
        return
    rows = [
        (
            "dir" if entry["isDir"] else "file",
            "-" if entry["isDir"] else str(entry["size"]),
            (entry.get("modTime") or "")[:16].replace("T", " "),
            entry["uri"],
            " ".join((entry.get("abstract") or "").split()),
        )
        for entry in entries
    ]
    # Fixed columns and whole URIs first; the abstract gets what is left, if it is enough.
    widths = [max(len(h), *(cell_len(r[i]) for r in rows)) for i, h in enumerate(("type", "size", "modified", "uri"))]
    if not console.is_terminal:
        # A pipe is not a screen, whatever COLUMNS says: one entry per line, nothing wrapped or cut
        # (a URI folded to a narrow width and then cropped would lose characters).
        console.width = sum(widths) + 2 * 4 + max(20, *(cell_len(r[4]) for r in rows)) + 1
    fixed = widths[0] + widths[1] + widths[2] + 2 * 3
    left = console.width - fixed - widths[3] - 2
    show_abstract = left >= 20
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False, collapse_padding=True)
    table.add_column("type", no_wrap=True, min_width=widths[0])
    table.add_column("size", justify="right", no_wrap=True, min_width=widths[1])
    table.add_column("modified", no_wrap=True, min_width=widths[2])
    # On a narrow screen a URI folds onto more lines, in whatever room is left, rather than
    # being cropped at the screen's edge.
    table.add_column("uri", overflow="fold", style="cyan", min_width=min(widths[3], max(console.width - fixed, 8)))
    if show_abstract:
        table.add_column("abstract", overflow="ellipsis", no_wrap=True, max_width=left, style="dim")
    for row in rows:
        table.add_row(*(Text(cell) for cell in (row if show_abstract else row[:4])))
    if console.is_terminal:
        console.print(table, crop=False)
        return
    with console.capture() as captured:  # without the trailing padding
        console.print(table, crop=False)
    say("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


@command(app, "ls", formats=LISTING_FORMATS)
def ls(
    ctx: CliContext,
    uri: DirArgument = "viking://",
    recursive: Annotated[bool, typer.Option("-r", "--recursive", help="List everything below.")] = False,
    simple: Annotated[bool, typer.Option("-s", "--simple", help="URIs only, one per line.")] = False,
    all_: Annotated[bool, typer.Option("-a", "--all", help="Show the hidden .abstract.md/.overview.md.")] = False,
    node_limit: Annotated[
        int | None, typer.Option("-n", "--node-limit", help="At most N entries.", min=0, show_default=False)
    ] = None,
    abs_limit: Annotated[int, typer.Option("-l", "--abs-limit", help="Cut abstracts to N characters.", min=0)] = 256,
    as_of: AsOfOption = None,
) -> Output:
    """List a directory: type, size, modification time, URI and abstract."""
    entries = ctx.client().ls(
        uri, recursive=recursive, simple=simple, show_hidden=all_, node_limit=node_limit, abs_limit=abs_limit,
        as_of=as_of,
    )  # fmt: skip
    listed = [e for e in entries if isinstance(e, Mapping)]
    if simple:
        uris = [str(e) for e in entries]

        def render(_console: Any) -> None:
            say("".join(f"{item}\n" for item in uris))

        return Output(uris, table=render, items=[{"uri": u} for u in uris])
    return Output(listed, table=lambda console: _listing(console, listed), items=listed)


@command(app, "tree", formats=LISTING_FORMATS)
def tree(
    ctx: CliContext,
    uri: DirArgument = "viking://",
    level_limit: Annotated[int, typer.Option("-L", "--level-limit", help="Depth to show (0: all).", min=0)] = 3,
    node_limit: Annotated[
        int | None, typer.Option("-n", "--node-limit", help="At most N entries.", min=0, show_default=False)
    ] = None,
    as_of: AsOfOption = None,
) -> Output:
    """Show everything below a URI as a tree, directories first."""
    entries = ctx.client().tree(uri, level_limit=level_limit, node_limit=node_limit, as_of=as_of)

    def render(console: Any) -> None:
        from rich.text import Text

        console.print(Text(uri, style="bold cyan"))
        below = [entry for entry in entries if entry["rel_path"]]  # a file's tree is the file alone
        last = _last_children([entry["rel_path"] for entry in below])
        for entry in below:
            parts = entry["rel_path"].split("/")
            ancestors = ("/".join(parts[: depth + 1]) for depth in range(len(parts) - 1))
            rails = "".join("   " if ancestor in last else "│  " for ancestor in ancestors)
            name = parts[-1] + ("/" if entry["isDir"] else "")
            line = Text(rails + ("└─ " if entry["rel_path"] in last else "├─ "))
            line.append(name, style="bold" if entry["isDir"] else "")
            abstract = " ".join((entry.get("abstract") or "").split())
            if abstract and entry["isDir"]:
                line.append("  " + abstract[:80], style="dim")
            console.print(line, soft_wrap=True, overflow="ellipsis", no_wrap=True)

    return Output(entries, table=render, items=entries)


def _last_children(paths: list[str]) -> set[str]:
    """The paths that are the last listed child of their folder (drawn with ``└─``)."""
    last: set[str] = set()
    folders_seen: set[str] = set()
    for path in reversed(paths):
        folder = path.rpartition("/")[0]
        if folder not in folders_seen:
            folders_seen.add(folder)
            last.add(path)
    return last


@command(app, "stat")
def stat(ctx: CliContext, uri: UriArgument, as_of: AsOfOption = None) -> Output:
    """Show what is known about one file or directory."""
    info = ctx.client().stat(uri, as_of=as_of)

    def render(console: Any) -> None:
        from rich.text import Text

        width = max(map(len, info)) + 1
        for key, value in info.items():
            shown = ", ".join(value) if isinstance(value, list) else ("" if value is None else str(value))
            line = Text(f"{key:<{width}}", style="bold")
            line.append(" ".join(shown.split()) if key == "abstract" else shown)
            console.print(line, soft_wrap=True)

    return Output(info, table=render)
