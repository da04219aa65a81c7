"""``openviking session``: the conversations that ``search --session-id`` plans its queries from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import typer

from openviking_cli.console import say
from openviking_cli.render import note, text_width, wrap_cells, wrap_indented
from openviking_cli.runtime import LISTING_FORMATS, CliContext, Output, command, command_group, text_argument

app = typer.Typer()
session_app = command_group(app, "session", "Create, list, show and delete sessions, and add messages to them.")

SessionIdArgument = Annotated[str, typer.Argument(help="The session id.", show_default=False)]


def _line(text: str) -> Any:
    def render(_console: Any) -> None:
        say(text + "\n")

    return render


@command(session_app, "new")
def new(
    ctx: CliContext,
    session_id: Annotated[
        str | None,
        typer.Option("--session-id", help="Use this id instead of a generated one.", show_default=False),
    ] = None,
) -> Output:
    """Start a session and print its id.

    Ids are generated as YYYYMMDD-HHMMSS-<16 hex> (UTC) unless --session-id is given.

    Example: SID=$(openviking session new)
    """
    info = ctx.client().create_session(session_id)
    return Output(info, table=_line(info["session_id"]))


@command(session_app, "list", formats=LISTING_FORMATS)
def list_(ctx: CliContext) -> Output:
    """List the sessions, most recently changed first.

    Example: openviking session list -o jsonl | jq -r .session_id
    """
    sessions = ctx.client().list_sessions()
    return Output(sessions, table=lambda console: _render_list(console, sessions), items=sessions)


def _render_list(console: Any, sessions: Sequence[Mapping[str, Any]]) -> None:
    if not sessions:
        note("No sessions yet.", "Start one with: openviking session new")
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    table.add_column("session_id", no_wrap=True, style="cyan")
    table.add_column("messages", justify="right", no_wrap=True)
    table.add_column("created", no_wrap=True)
    table.add_column("updated", no_wrap=True)
    for item in sessions:
        table.add_row(
            Text(item["session_id"]),
            str(item["message_count"]),
            _short_time(item.get("created_at")),
            _short_time(item.get("updated_at")),
        )
    console.print(table)


def _short_time(value: Any) -> str:
    return str(value or "")[:16].replace("T", " ")


@command(session_app, "show", formats=LISTING_FORMATS)
def show(ctx: CliContext, session_id: SessionIdArgument) -> Output:
    """Show a session and its messages, oldest first.

    Example: openviking session show 20260101-120000-0123456789abcdef
    """
    info = ctx.client().get_session(session_id)
    return Output(info, table=lambda console: _render_session(console, info), items=info["messages"])


def _render_session(console: Any, info: Mapping[str, Any]) -> None:
    from rich.text import Text

    count = info["message_count"]
    header = Text(info["session_id"], style="bold")
    header.append(f" · {count} message{'s' if count != 1 else ''}", style="dim")
    header.append(f" · updated {_short_time(info.get('updated_at'))}", style="dim")
    console.print(header, soft_wrap=True)
    width = text_width(console)
    if info.get("summary"):
        console.print(Text("Summary", style="bold"))
        for line in wrap_cells(" ".join(info["summary"].split()), width):
            console.print(Text("   " + line), soft_wrap=True)
    _render_messages(console, info["messages"], width)


def _render_messages(console: Any, messages: Sequence[Mapping[str, Any]], width: int) -> None:
    from rich.text import Text

    for message in messages:
        console.print()
        title = Text(f"[{message['role']}]", style="magenta" if message["role"] == "user" else "green")
        title.append(f" {_short_time(message.get('created_at'))}", style="dim")
        console.print(title, soft_wrap=True)
        text = "\n".join(str(p.get("text", "")) for p in message.get("parts", []))
        for paragraph in text.splitlines() or [""]:
            for line in wrap_indented(paragraph, width) or [""]:
                console.print(Text("   " + line), soft_wrap=True)


@command(session_app, "add-message")
def add_message(
    ctx: CliContext,
    session_id: SessionIdArgument,
    role: Annotated[
        str,
        typer.Option("--role", help="Who said it: user or assistant.", show_default=False),
    ],
    content: Annotated[
        str,
        typer.Option(
            "--content",
            help="The message text ('-' reads it from stdin, without the last newline).",
            show_default=False,
        ),
    ],
) -> Output:
    """Add a message to a session (the session is created when it does not exist).

    Example: openviking session add-message $SID --role user --content "We are designing the OAuth login flow."
    """
    info = ctx.client().add_message(session_id, role, text_argument(content, "message"))
    message = info["message"]
    count = info["message_count"]
    line = f"Added {message['id']} ({message['role']}) to {info['session_id']} · {count} message{'s' * (count != 1)}"
    return Output(info, table=_line(line))


@command(session_app, "delete")
def delete(ctx: CliContext, session_id: SessionIdArgument) -> Output:
    """Delete a session and all its messages.

    Example: openviking session delete 20260101-120000-0123456789abcdef
    """
    info = ctx.client().delete_session(session_id)
    count = info["messages_deleted"]
    line = f"Deleted session {info['session_id']} and its {count} message{'s' * (count != 1)}"
    return Output(info, table=_line(line))


@command(session_app, "commit")
def commit(
    ctx: CliContext,
    session_id: SessionIdArgument,
    keep_recent: Annotated[
        int,
        typer.Option("--keep-recent", help="Leave the N newest messages for the next commit.", min=0, max=10_000),
    ] = 0,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would be archived and remembered; write nothing.")
    ] = False,
) -> Output:
    """Archive a session's messages since its last commit, and keep what they say as memories.

    The messages become a searchable transcript under viking://user/<user>/history/<session>/;
    what the user says of themselves (preferences, plans, events, people) becomes memories,
    each dated to the day it tells of, merged with what is remembered already. With vlm (or
    memory.llm) configured an LLM takes the memories; without one they are taken in the
    user's own words. Committing again with no new message changes nothing.

    Example: openviking session commit $SID --dry-run
    """
    result = ctx.client().commit_session(session_id, keep_recent, dry_run=dry_run)
    return Output(result, table=lambda console: _render_commit(console, result), items=result["memories"])


def _render_commit(console: Any, result: Mapping[str, Any]) -> None:
    from rich.text import Text

    would = "Would archive" if result["dry_run"] else "Archived"
    if result["status"] == "skipped":
        note(f"Nothing to commit in {result['session_id']}: no message since the last commit.")
        return
    if result["archived"]:
        count = result["messages_archived"]
        console.print(Text(f"{would} {count} message{'s' * (count != 1)} as {result['archive_uri']}"), soft_wrap=True)
    if result.get("extraction_error"):
        console.print(Text(f"Memories: {result['extraction_error']}", style="yellow"), soft_wrap=True)
        return
    counts = result["memories_extracted"]
    changed = "".join(f", {counts[key]} {key}" for key in ("superseded", "aged") if counts.get(key))
    console.print(
        Text(
            f"Memories ({result['extraction']}): {counts.get('created', 0)} new, {counts.get('merged', 0)} merged, "
            f"{counts.get('skipped', 0)} known{changed}" + (" (dry run: nothing written)" if result["dry_run"] else "")
        ),
        soft_wrap=True,
    )
    for memory in result["memories"]:
        line = Text(f"  {memory['action']:<7} ", style="dim")
        line.append(f"{memory['category']} {memory['day']} ", style="cyan")
        line.append(" ".join(memory["text"].split()))
        if memory.get("superseded_by"):
            line.append(f" (kept as history in {memory['superseded_by']})", style="dim")
        console.print(line, soft_wrap=True)
    for said in result.get("notes") or []:
        console.print(Text(f"Note: {said}", style="yellow"), soft_wrap=True)


@command(session_app, "context")
def context(
    ctx: CliContext,
    session_id: SessionIdArgument,
    budget: Annotated[
        int, typer.Option("--budget", help="The most tokens the messages and the archive may take.", min=0)
    ] = 128_000,
) -> Output:
    """Show what a session gives a prompt within a budget: its messages since the last commit,
    newest kept first, and its latest archive's summary when it fits.

    Example: openviking session context $SID --budget 4000
    """
    result = ctx.client().get_session_context(session_id, budget)
    return Output(result, table=lambda console: _render_context(console, result), items=result["messages"])


def _render_context(console: Any, result: Mapping[str, Any]) -> None:
    from rich.text import Text

    console.print(Text(f"{result['estimatedTokens']} tokens", style="dim"))
    if result["latest_archive_overview"]:
        console.print(Text("Earlier (the latest archive)", style="bold"))
        for line in wrap_cells(" ".join(result["latest_archive_overview"].split()), text_width(console)):
            console.print(Text("   " + line), soft_wrap=True)
    count = len(result["messages"])
    console.print(Text(f"Since the last commit: {count} message{'s' * (count != 1)}", style="bold"))
    _render_messages(console, result["messages"], text_width(console))
