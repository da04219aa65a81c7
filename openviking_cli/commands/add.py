"""``openviking add-resource``: mirror a local file or folder into the store and index it."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from openviking_cli.runtime import CliContext, Output, command, progress_bar

app = typer.Typer()


def summary_line(data: dict[str, Any], seconds: float) -> str:
    """``Added 3 · updated 0 · unchanged 5 · removed 0 · skipped 1 -> viking://... (2.1 s)``."""
    return (
        f"Added {data['added']} · updated {data['updated']} · unchanged {data['unchanged']} · "
        f"removed {data['removed']} · skipped {data['skipped']} -> {data['root_uri']} ({seconds:.1f} s)"
    )


def render_add(console: Any, data: dict[str, Any], seconds: float) -> None:
    from rich.text import Text

    console.print(Text(summary_line(data, seconds)), soft_wrap=True)
    skipped = data.get("skipped_files") or []
    for item in skipped[:10]:
        console.print(Text(f"  skipped {item['path']}: {item['reason']}", style="dim"), soft_wrap=True)
    if len(skipped) > 10:
        console.print(Text(f"  ... and {len(skipped) - 10} more skipped", style="dim"))


def added(ctx: CliContext, result: Any) -> Output:
    """What an add-resource or add-skill did: the summary on stdout (each file's warning was
    a ``Warning:`` line on stderr already, through the client; JSON keeps them in ``warnings``)."""
    data = result.to_dict()
    data["seconds"] = round(result.seconds, 3)
    return Output(data, table=lambda console: render_add(console, data, result.seconds))


@command(app, "add-resource")
def add_resource(
    ctx: CliContext,
    path: Annotated[
        str,
        typer.Argument(help="A local file or folder, a .zip/.tar.gz archive, or an http(s) URL.", show_default=False),
    ],
    to: Annotated[str | None, typer.Option("--to", help="Exact URI of the new resource.", show_default=False)] = None,
    parent: Annotated[
        str | None, typer.Option("--parent", help="Put it in this directory, under its own name.", show_default=False)
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="A k=v retrieval tag (repeatable).", show_default=False)
    ] = None,
    include: Annotated[
        list[str] | None,
        typer.Option("--include", help="Only files matching this glob (repeatable).", show_default=False),
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option("--exclude", help="Leave out paths matching this glob (repeatable).", show_default=False),
    ] = None,
    watch: Annotated[
        bool,
        typer.Option("--watch", help="Then keep it in step with its files, until Ctrl-C (see openviking watch)."),
    ] = False,
    watch_interval: Annotated[
        float | None,
        typer.Option(
            "--watch-interval",
            help="With --watch: check it every this many minutes instead of following file events.",
            min=0,
            show_default=False,
        ),
    ] = None,
) -> Output:
    """Add a file or folder under viking://resources (or --to/--parent) and index it.

    Folders are mirrored one to one; hidden files, .gitignore'd paths and binary files are
    left out. Documents (PDF, Word, PowerPoint, Excel, OpenDocument, EPUB, RTF, HTML,
    notebooks, CSV) are converted to text with their pages, slides and sheets kept. An
    archive adds what is inside it; a URL adds the page or file it serves. Re-adding
    re-indexes only what changed.

    With --watch (a local folder or file), it then keeps following its changes in the
    foreground until Ctrl-C, as openviking watch does.

    Example: openviking add-resource ./docs --to viking://resources/docs --tag team=search
    """
    if watch or watch_interval is not None:
        from .watch import watch_path

        return watch_path(ctx, path, to, parent, tag, include, exclude, watch_interval, follows=True)
    client = ctx.client()
    with progress_bar("Indexing") as update:
        result = client.add_resource(
            path, to=to, parent=parent, tags=tag or [], include=include or [], exclude=exclude or [], progress=update
        )
    return added(ctx, result)
