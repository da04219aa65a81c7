"""Writing the store: ``add-memory``, ``add-skill``, ``write``, ``mkdir``, ``rm``, ``mv`` and relations."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from openviking_cli.commands.add import added
from openviking_cli.runtime import LISTING_FORMATS, CliContext, Output, command, progress_bar, text_argument

app = typer.Typer()

UriArgument = Annotated[str, typer.Argument(help="A viking:// URI.", show_default=False)]


def _line(text: str) -> Any:
    def render(console: Any) -> None:
        from rich.text import Text

        console.print(Text(text), soft_wrap=True)

    return render


@command(app, "add-memory")
def add_memory(
    ctx: CliContext,
    text: Annotated[
        str,
        typer.Argument(
            help="What to remember about the user ('-' reads it from stdin, without the last newline).",
            show_default=False,
        ),
    ],
    category: Annotated[
        str | None,
        typer.Option("--category", help="preferences, entities, events, cases, profile...", show_default=False),
    ] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A k=v tag (repeatable).", show_default=False)] = None,
) -> Output:
    """Remember something about the user (under viking://user/<user>/memories).

    Example: openviking add-memory "Prefers answers in Chinese" --category preferences

    From a pipe: git log -1 --format=%B | openviking add-memory - --category events
    """
    result = ctx.client().add_memory(text_argument(text, "memory"), category, tags=tag)  # no --tag: keep its tags
    if result["added"]:
        verb = "Remembered"
    else:
        verb = "Already remembered, with the new tags" if result["tags_changed"] else "Already remembered"
    return Output(result, table=_line(f"{verb}: {result['uri']}"))


@command(app, "add-skill")
def add_skill(
    ctx: CliContext,
    path: Annotated[Path, typer.Argument(help="A folder with SKILL.md, or one markdown file.", show_default=False)],
    name: Annotated[
        str | None, typer.Option("--name", help="Skill name (default: from SKILL.md or the path).", show_default=False)
    ] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A k=v tag (repeatable).", show_default=False)] = None,
) -> Output:
    """Add an agent skill under viking://agent/skills/<name> and index it."""
    client = ctx.client()
    with progress_bar("Indexing", then="Embedding") as update:
        result = client.add_skill(path, name, tags=tag or [], progress=update)
    return added(ctx, result)


@command(app, "reindex")
def reindex(
    ctx: CliContext,
    uri: Annotated[
        str | None, typer.Argument(help="Only below this URI (same embedder only).", show_default=False)
    ] = None,
) -> Output:
    """Bring every record to the configured embedder: after a model change everything is
    embedded again, into a new table; with the same embedder only text whose vector is out of
    date is (after a change of embedding.max_input_tokens, say).

    Resumable: after Ctrl-C, run it again and it continues where it stopped.
    """
    client = ctx.client()
    with progress_bar("Re-embedding") as update:
        result = client.reindex(uri, progress=update)
    files, directories, records = result["files"], result["directories"], result["records_embedded"]
    text = (
        f"Reindexed {files} file{'' if files == 1 else 's'} and {directories} "
        f"director{'y' if directories == 1 else 'ies'} with {result['embedder']}: "
        f"{records} record{'' if records == 1 else 's'} embedded ({result['seconds']:.1f} s)"
    )
    return Output(result, table=_line(text))


@command(app, "doctor")
def doctor(
    ctx: CliContext,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Mend what a crash or a damaged file left in the store first, and say what was done.",
        ),
    ] = False,
) -> Output:
    """Check the installation, the configuration and the store (exit 1 when a problem is found).

    It reads every table of the store, looks for what a stopped write can leave (summaries out
    of date, records without nodes or nodes without records, an interrupted reindex or move, a
    missing table) and opens a connection to each model server the configuration names. With
    --repair it mends those first (a damaged table goes back to its last readable version, and
    the report says what that lost); it exits 0 once nothing is wrong. With -o json or jsonl a
    problem is an error object on stderr whose details hold the whole report.
    """
    report = ctx.client().doctor(repair=repair)
    problems = report["problems"]
    if problems and ctx.machine:  # "status": "ok" with exit 1 would tell a script two things
        from openviking.errors import FailedPreconditionError

        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise FailedPreconditionError(
            f"doctor found a problem: {problems[0]}{more}",
            hint="The report is in details; fix the problems and run it again",
            details=report.to_dict(),
        )

    def render(console: Any) -> None:
        from rich.text import Text

        store = report["store"]
        lines = [
            f"openviking {report['openviking']} · Python {report['python']}",
            "packages: " + ", ".join(f"{k} {v or '-'}" for k, v in report["packages"].items()),
            f"config: {report['config'] or '(defaults)'} · user {report['user']}",
            f"embedder: {report['embedder']['configured']} ({report['embedder']['dimension']}-d)",
            f"llm: {report['llm']['model'] or 'not configured'} · rerank: {report['rerank']['provider'] or 'off'}",
            "Chinese query translation: "
            + {True: "on (CC-CEDICT)", False: "dictionary missing", None: "off"}[
                report["query_translation"]["dictionary"]
            ],
            f"store: {store['path']}" + ("" if store["exists"] else " (not created yet)"),
        ]
        if store.get("object_storage"):
            remote = store["object_storage"]
            lines.append(
                f"  bucket {remote['bucket']} at {remote['endpoint'] or 'the default endpoint'}"
                + (f" ({remote['region']})" if remote["region"] else "")
                + (" · writable" if store.get("writable") else "")
            )
        if store["exists"] and not store["readable"]:
            lines.append("  cannot be read (see the problems below)")
        elif store["exists"]:
            lines.append(
                f"  {store['nodes']} nodes, {store['records']} records, built with {store['embedder'] or '-'}, "
                f"vector index {'yes' if store['vector_index'] else 'no (exact search)'}"
            )
            if store.get("pending_vectors"):
                lines.append(
                    f"  {store['pending_vectors']} records wait for their vectors: openviking index makes them"
                )
        for line in lines:
            console.print(Text(line), soft_wrap=True)
        for done in report["repaired"]:
            console.print(Text("repaired: " + done, style="green"), soft_wrap=True)
        for problem in report["problems"]:
            console.print(Text("problem: " + problem, style="red"), soft_wrap=True)

    return Output(report, table=render, exit_code=1 if report["problems"] else 0)


@command(app, "write")
def write(
    ctx: CliContext,
    uri: UriArgument,
    content: Annotated[
        str, typer.Option("--content", help="The text to write; - reads it from stdin.", show_default=False)
    ],
    mode: Annotated[
        str,
        typer.Option(
            "--mode",
            help="replace (the file must exist), append, or create (make it, or replace it).",
            show_default=True,
        ),
    ] = "replace",
) -> Output:
    """Write a file's text, then index it again (its directory's summaries follow).

    Example: echo "Deploy on Fridays." | openviking write viking://resources/notes/deploy.md --content - --mode create
    """
    result = ctx.client().write(uri, text_argument(content, "content"), mode)
    verb = "Created" if result["created"] else "Wrote" if result["content_updated"] else "Unchanged:"
    return Output(result, table=_line(f"{verb} {result['uri']} ({result['written_bytes']} bytes, {result['mode']})"))


@command(app, "mkdir")
def mkdir(
    ctx: CliContext,
    uri: UriArgument,
    description: Annotated[
        str | None,
        typer.Option("--description", help="What the directory holds (its L0 abstract).", show_default=False),
    ] = None,
) -> Output:
    """Create a directory (and its parents)."""
    result = ctx.client().mkdir(uri, description)
    return Output(result, table=_line(f"Created {result['uri']}"))


@command(app, "rm")
def rm(
    ctx: CliContext,
    uri: UriArgument,
    recursive: Annotated[bool, typer.Option("-r", "--recursive", help="Remove a directory and all below it.")] = False,
) -> Output:
    """Remove a file or (with -r) a directory, with its index records and relations."""
    result = ctx.client().rm(uri, recursive=recursive)
    count = result["removed"]
    text = f"Removed {count} node{'s' if count != 1 else ''} at {result['uri']}" if count else f"Nothing at {uri}"
    return Output(result, table=_line(text))


@command(app, "mv")
def mv(
    ctx: CliContext,
    source: Annotated[str, typer.Argument(metavar="FROM", help="The URI to move.", show_default=False)],
    target: Annotated[str, typer.Argument(metavar="TO", help="Its new URI (must not exist).", show_default=False)],
) -> Output:
    """Move (rename) a file or directory; its index and relations follow."""
    result = ctx.client().mv(source, target)
    if not result["moved"] and not result.get("resumed"):
        text = f"Nothing to move: {result['from']} is gone and {result['to']} exists (moved already)"
    else:
        text = f"Moved {result['from']} -> {result['to']}"
    return Output(result, table=_line(text))


@command(app, "link")
def link(
    ctx: CliContext,
    source: Annotated[str, typer.Argument(metavar="FROM", help="The URI to relate from.", show_default=False)],
    targets: Annotated[
        list[str], typer.Argument(metavar="TO...", help="One or more related URIs.", show_default=False)
    ],
    reason: Annotated[str, typer.Option("--reason", help="Why they are related.")] = "",
) -> Output:
    """Relate a URI to others (shown as `relations` of search results)."""
    result = ctx.client().link(source, targets, reason)
    return Output(result, table=_line(f"Linked {result['from']} -> {', '.join(result['to'])}"))


@command(app, "unlink")
def unlink(
    ctx: CliContext,
    source: Annotated[str, typer.Argument(metavar="FROM", help="The URI the relation starts at.", show_default=False)],
    target: Annotated[str, typer.Argument(metavar="TO", help="The related URI.", show_default=False)],
) -> Output:
    """Remove the relation FROM -> TO."""
    result = ctx.client().unlink(source, target)
    text = f"Unlinked {result['from']} -> {result['to']}" if result["removed"] else "No such relation"
    return Output(result, table=_line(text))


@command(app, "relations", formats=LISTING_FORMATS)
def relations(ctx: CliContext, uri: UriArgument) -> Output:
    """List what a URI is related to, with the reasons."""
    links = ctx.client().relations(uri)

    def render(console: Any) -> None:
        from rich.text import Text

        for item in links:
            line = Text(item["uri"], style="cyan")
            if item["reason"]:
                line.append("  " + item["reason"], style="dim")
            console.print(line, soft_wrap=True)

    return Output(links, table=render, items=links)
