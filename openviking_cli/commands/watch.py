"""``openviking watch``: keep local folders in step with the store, and list, pause, resume,
sync or stop the watched ones; ``add-resource --watch`` watches what it adds."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from openviking.errors import InvalidArgumentError
from openviking_cli.console import say
from openviking_cli.render import note
from openviking_cli.runtime import LISTING_FORMATS, CliContext, Output, OutputFormat, command, progress_bar

if TYPE_CHECKING:
    from openviking.contract.results import WatchReport

app = typer.Typer()

IntervalOption = Annotated[
    float | None,
    typer.Option(
        "--watch-interval",
        help="Check the whole source every this many minutes (0.05 is 3 s) instead of following file events: "
        "for network filesystems, which send none.",
        min=0,
        show_default=False,
    ),
]


@command(app, "watch", formats=LISTING_FORMATS)
def watch(
    ctx: CliContext,
    path: Annotated[
        str | None,
        typer.Argument(
            help="A local folder or file to add and keep in step (none: every watched one).", show_default=False
        ),
    ] = None,
    to: Annotated[str | None, typer.Option("--to", help="Exact URI of the resource.", show_default=False)] = None,
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
    watch_interval: IntervalOption = None,
    no_follow: Annotated[
        bool,
        typer.Option(
            "--no-follow", help="Record the watch and exit: a process watching the store (serve --watch) follows it."
        ),
    ] = False,
    list_: Annotated[bool, typer.Option("--list", help="List the watched sources.")] = False,
    active_only: Annotated[bool, typer.Option("--active-only", help="With --list: only those not paused.")] = False,
    stop: Annotated[
        str | None, typer.Option("--stop", help="Stop watching this URI (what it added stays).", show_default=False)
    ] = None,
    pause: Annotated[
        str | None, typer.Option("--pause", help="Pause the watch of this URI.", show_default=False)
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option("--resume", help="Resume the watch of this URI (catching up).", show_default=False),
    ] = None,
    trigger: Annotated[
        str | None, typer.Option("--trigger", help="Sync this watched URI now, in full.", show_default=False)
    ] = None,
) -> Output:
    """Keep local folders in step with the store: a saved file is searchable by its new text
    within seconds, a deleted one is gone, a renamed one is moved.

    With PATH, the folder is added (as add-resource does) and watched; without it, every
    watched source of the store is. It runs until Ctrl-C (over --url, the server watches: start
    it with serve --watch). The watched sources and their state are kept in the store, so a
    later openviking watch catches up with what changed meanwhile. --list, --stop, --pause,
    --resume and --trigger manage them.

    Example: openviking watch ./notes --to viking://resources/notes
    """
    actions = {"--list": list_, "--stop": stop, "--pause": pause, "--resume": resume, "--trigger": trigger}
    chosen = [name for name, value in actions.items() if value]
    adding = [name for name, value in (("PATH", path), ("--to", to), ("--parent", parent)) if value]
    if len(chosen) > 1 or (chosen and (adding or watch_interval is not None)):
        raise InvalidArgumentError(
            "Use one of PATH, --list, --stop, --pause, --resume or --trigger at a time "
            f"(got {', '.join(chosen + adding)})",
            hint="openviking watch --help",
        )
    client = ctx.client()
    if list_:
        listed = client.list_watches(active_only=active_only)
        return Output(listed, table=lambda console: _render(console, listed["tasks"]), items=listed["tasks"])
    managed = _manage(ctx, stop, pause, resume, trigger)
    if managed is not None:
        return managed
    if path is not None:
        return watch_path(ctx, path, to, parent, tag, include, exclude, watch_interval, follows=not no_follow)
    if no_follow or ctx.url:
        raise InvalidArgumentError(
            "Name the folder to watch" if no_follow else "A server watches its own store: start it with serve --watch",
            hint="openviking watch PATH --no-follow" if no_follow else "openviking watch --list",
        )
    return follow(ctx, [])


def watch_path(
    ctx: CliContext,
    path: str,
    to: str | None,
    parent: str | None,
    tags: list[str] | None,
    include: list[str] | None,
    exclude: list[str] | None,
    watch_interval: float | None,
    *,
    follows: bool,
) -> Output:
    """Add ``path`` and record it as watched, then (``follows``, and not over --url) watch it here."""
    with progress_bar("Indexing") as update:
        info = ctx.client().watch(
            path, to=to, parent=parent, tags=tags or [], include=include or [], exclude=exclude or [],
            watch_interval=watch_interval, progress=update,
        )  # fmt: skip
    say(f"Added {info['path']} -> {info['to_uri']}: {_counts(info['last_result'])}\n", stderr=True)
    if not follows or ctx.url:
        where = "the server watches it when started with serve --watch" if ctx.url else "openviking watch follows it"
        return Output(info, table=_line(f"Watching {info['to_uri']} is recorded: {where}"), items=[info])
    return follow(ctx, [info["to_uri"]])


def _manage(
    ctx: CliContext, stop: str | None, pause: str | None, resume: str | None, trigger: str | None
) -> Output | None:
    client = ctx.client()
    if stop:
        deleted = client.delete_watch(stop)
        return Output(deleted, table=_line(f"Stopped watching {deleted['to_uri']} (what it added stays)"))
    if pause or resume:
        info = client.update_watch(pause or resume or "", is_active=bool(resume))
        said = "Paused" if pause else "Resumed"
        return Output(info, table=_line(f"{said} the watch of {info['to_uri']}"), items=[info])
    if trigger:
        info = client.trigger_watch(trigger)
        return Output(info, table=_line(f"{info['to_uri']}: {_counts(info['last_result'])}"), items=[info])
    return None


def follow(ctx: CliContext, uris: Sequence[str]) -> Output:
    """Watch ``uris`` (none: every watched source of the store) in this process until Ctrl-C,
    saying each sync as it lands: a line each in the table, a JSON object each with -o jsonl."""
    from openviking.embedded.client import OpenViking

    client = ctx.client()
    assert isinstance(client, OpenViking)  # over --url the server watches
    which = ", ".join(uris) if uris else "every watched source of the store"
    say(f"Watching {which}; Ctrl-C stops.\n", stderr=True)
    sys.stderr.flush()
    try:
        client.keep_watching(uris, report=lambda report: _say(ctx, report))
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a watch ends: what it synced is stored
    watched = client.list_watches()
    say("Stopped watching.\n", stderr=True)
    return Output(watched, table=lambda console: None, items=[])


def _say(ctx: CliContext, report: WatchReport) -> None:
    if ctx.output is OutputFormat.json:
        return  # the one JSON document comes at the end
    if ctx.output is OutputFormat.jsonl:
        from openviking_cli.console import json_text

        say(json_text({"time": _now(), **report.to_dict()}, compact=True) + "\n")
    elif report.kind in ("synced", "error"):
        say(f"{_now()[11:19]} {report.uri}: {report.message}\n")
    else:
        say(f"{report.uri}: {report.message}\n", stderr=True)
    sys.stdout.flush()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())


def _counts(result: Mapping[str, Any] | None) -> str:
    if not result:
        return "not synced yet"
    return (
        f"added {result.get('added', 0)} · updated {result.get('updated', 0)} · removed {result.get('removed', 0)} · "
        f"moved {result.get('moved', 0)} · unchanged {result.get('unchanged', 0)}"
    )


def _line(text: str) -> Any:
    def render(_console: Any) -> None:
        say(text + "\n")

    return render


def _render(console: Any, watches: Sequence[Mapping[str, Any]]) -> None:
    if not watches:
        note("No watched sources.", "Watch a folder with: openviking watch PATH")
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    for column in ("uri", "path", "how", "state", "last sync", "watcher"):
        table.add_column(column, overflow="fold")
    for info in watches:
        interval = info.get("watch_interval")
        how = f"every {float(interval):g} min" if interval else "events"
        state = "active" if info.get("is_active", True) else "paused"
        if info.get("last_error"):
            state += " (error)"
        when = str(info.get("last_execution_time") or "-")[:19].replace("T", " ")
        table.add_row(
            Text(str(info["to_uri"]), style="cyan"), Text(str(info["path"])), Text(how), Text(state),
            Text(when), Text(str(info.get("watcher") or "-")),
        )  # fmt: skip
    console.print(table)
