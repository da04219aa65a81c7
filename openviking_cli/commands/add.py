"""``openviking add-resource``: mirror a local file or folder into the store and index it;
``openviking index``: make the vectors an add left waiting (in the background, for
``add-resource --background``)."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from openviking_cli.runtime import CliContext, Output, command, progress_bar, spawn_detached

app = typer.Typer()

# Where a background ``openviking index`` writes what it says: beside the store's own files.
INDEX_LOG = ".openviking.index.log"
BACKGROUND_NICENESS = 10


def summary_line(data: dict[str, Any], seconds: float) -> str:
    """``Added 3 · updated 0 · unchanged 5 · removed 0 · skipped 1 -> viking://... (2.1 s)``."""
    return (
        f"Added {data['added']} · updated {data['updated']} · unchanged {data['unchanged']} · "
        f"removed {data['removed']} · skipped {data['skipped']} -> {data['root_uri']} ({seconds:.1f} s)"
    )


def pending_line(data: dict[str, Any]) -> str:
    """What of an add still waits for its vectors, and who makes them; "" when nothing does."""
    waiting = int(data.get("pending_vectors") or 0)
    if not waiting:
        return ""
    background = data.get("background") or {}
    if "pid" in background:
        who = f"openviking index makes them in the background (pid {background['pid']}, log {background['log']})"
    elif background:
        who = "the server makes them in the background"
    else:
        who = "openviking index makes them (so does the next write)"
    return (
        f"{waiting:,} record{'' if waiting == 1 else 's'} wait for their vectors, found by their words meanwhile: {who}"
    )


def render_add(console: Any, data: dict[str, Any], seconds: float) -> None:
    from rich.text import Text

    console.print(Text(summary_line(data, seconds)), soft_wrap=True)
    if pending_line(data):
        console.print(Text(pending_line(data), style="dim"), soft_wrap=True)
    skipped = data.get("skipped_files") or []
    for item in skipped[:10]:
        console.print(Text(f"  skipped {item['path']}: {item['reason']}", style="dim"), soft_wrap=True)
    if len(skipped) > 10:
        console.print(Text(f"  ... and {len(skipped) - 10} more skipped", style="dim"))


def added(ctx: CliContext, result: Any, background: dict[str, Any] | None = None) -> Output:
    """What an add-resource or add-skill did: the summary on stdout (each file's warning was
    a ``Warning:`` line on stderr already, through the client; JSON keeps them in ``warnings``),
    and the ``background`` indexer making its vectors."""
    data = result.to_dict()
    data["seconds"] = round(result.seconds, 3)
    if background is not None:
        data["background"] = background
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
    background: Annotated[
        bool,
        typer.Option(
            "--background",
            help="Return once the text is searchable by its words; the vectors follow in the background.",
        ),
    ] = False,
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

    The text, its full-text index and the summaries are written first, so find answers
    from them at once; then the vectors are made, with a progress bar. After Ctrl-C there,
    the add is done and found by its words: openviking index makes the rest.

    With --watch (a local folder or file), it then keeps following its changes in the
    foreground until Ctrl-C, as openviking watch does.

    Example: openviking add-resource ./docs --to viking://resources/docs --tag team=search
    """
    if watch or watch_interval is not None:
        from .watch import watch_path

        return watch_path(ctx, path, to, parent, tag, include, exclude, watch_interval, follows=True)
    client = ctx.client()
    with progress_bar("Indexing", then="Embedding") as update:
        result = client.add_resource(
            path, to=to, parent=parent, tags=tag or [], include=include or [], exclude=exclude or [],
            progress=update, wait=not background,
        )  # fmt: skip
    started = None
    if background and result["pending_vectors"]:
        started = index_in_background(ctx)
    return added(ctx, result, started)


@command(app, "index")
def index(
    ctx: CliContext,
    uri: Annotated[
        str | None, typer.Argument(help="Only the records at and below this URI.", show_default=False)
    ] = None,
) -> Output:
    """Make the vectors of the records that wait for them: what an add with --background,
    a Ctrl-C while an add embedded, or an embedder that did not answer left. Until then they
    are found by their words and summaries.

    Waits for another process that makes them (a background index, a server) to finish first;
    no record is embedded twice. After Ctrl-C, run it again to go on.
    """
    client = ctx.client()
    with progress_bar("Embedding", unit="items") as update:
        result = client.index(uri, progress=update)
    records, waiting = result["records_embedded"], result["pending_vectors"]
    where = "" if result["uri"] == "viking://" else f" below {result['uri']}"
    text = f"Embedded {records:,} record{'' if records == 1 else 's'}{where} ({result['seconds']:.1f} s)"
    if waiting:
        text += f"; {waiting:,} came in meanwhile and wait"
    return Output(result, table=lambda console: console.print(text, soft_wrap=True, markup=False))


def index_in_background(ctx: CliContext) -> dict[str, Any]:
    """Start ``openviking index`` for this invocation's store in a process of its own, which
    goes on after this one exits (and after a Ctrl-C in its terminal): its pid and log; when
    the client talks to a server, which makes the vectors itself, that it does."""
    store = getattr(ctx.client(), "store_path", None)
    if not isinstance(store, str):
        return {"by": "server"}
    # -P: the openviking this one is, never an openviking_cli folder where the user stands.
    argv = [sys.executable, "-P", "-m", "openviking_cli", "index", "--store", store]
    if ctx.config is not None:
        argv += ["--config", str(ctx.config)]
    log = _log_path(store)
    pid = spawn_detached(argv, log)
    # Behind whatever the user runs next (a find, on the same cores): the embedding is the
    # work that may wait.
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, pid, BACKGROUND_NICENESS)
    return {"pid": pid, "log": str(log)}


def _log_path(store: str) -> Path:
    """The background index's log: in the store's directory, or (a store in a bucket) in
    openviking's home."""
    if "://" not in store:
        return Path(store) / INDEX_LOG
    from openviking.config import config_home

    home = config_home()
    os.makedirs(home, exist_ok=True)
    return home / INDEX_LOG.lstrip(".")
