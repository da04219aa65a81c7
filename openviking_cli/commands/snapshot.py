"""``openviking snapshot``: name the store's state, so that ``--as-of NAME`` reads it back exactly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import typer

from openviking_cli.console import say
from openviking_cli.render import note
from openviking_cli.runtime import LISTING_FORMATS, CliContext, Output, command, command_group

app = typer.Typer()
snapshot_app = command_group(app, "snapshot", "Tag, list and delete snapshots: named states of the store.")

NameArgument = Annotated[
    str,
    typer.Argument(help="The snapshot's name: a letter, then letters, digits, '.', '-' or '_'.", show_default=False),
]


def _line(text: str) -> Any:
    def render(_console: Any) -> None:
        say(text + "\n")

    return render


@command(snapshot_app, "tag")
def tag(ctx: CliContext, name: NameArgument) -> Output:
    """Name the store's state now. --as-of NAME on find, search, grep, glob, ls, tree, read,
    stat and eval then answers from exactly that state, whatever is written after; its versions
    are kept until the snapshot is deleted.

    Example: openviking snapshot tag release-2026-12 && openviking find "auth" --as-of release-2026-12
    """
    snapshot = ctx.client().snapshot_tag(name)
    return Output(snapshot, table=_line(f"Tagged {snapshot['name']}: the store at version {snapshot['version']}"))


@command(snapshot_app, "list", formats=LISTING_FORMATS)
def list_(ctx: CliContext) -> Output:
    """List the snapshots, oldest first.

    Example: openviking snapshot list -o jsonl | jq -r .name
    """
    snapshots = ctx.client().list_snapshots()
    return Output(snapshots, table=lambda console: _render(console, snapshots), items=snapshots)


def _render(console: Any, snapshots: Sequence[Mapping[str, Any]]) -> None:
    if not snapshots:
        note("No snapshots yet.", "Tag one with: openviking snapshot tag NAME")
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    for column in ("name", "tagged", "version"):
        table.add_column(column, no_wrap=True, justify="right" if column == "version" else "left")
    for snapshot in snapshots:
        when = str(snapshot["created_at"])[:16].replace("T", " ")
        table.add_row(Text(snapshot["name"], style="cyan"), Text(when), Text(str(snapshot["version"])))
    console.print(table)


@command(snapshot_app, "delete")
def delete(ctx: CliContext, name: NameArgument) -> Output:
    """Delete a snapshot: its versions are cleaned up like any others from then on.

    Example: openviking snapshot delete release-2026-11
    """
    snapshot = ctx.client().delete_snapshot(name)
    return Output(snapshot, table=_line(f"Deleted snapshot {snapshot['name']}"))
