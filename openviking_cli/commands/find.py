"""``openviking find``: semantic search without session context."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from openviking.errors import InvalidArgumentError
from openviking_cli.render import hit_cards, hits_of, note, pending_note
from openviking_cli.runtime import LISTING_FORMATS, AsOfOption, CliContext, Output, OutputFormat, command

app = typer.Typer()

RETRIEVAL_PANEL = "Scope and ranking"

UriOption = Annotated[
    list[str] | None,
    typer.Option(
        "-u", "--uri", help="Search under this URI (repeatable).", rich_help_panel=RETRIEVAL_PANEL, show_default=False
    ),
]
LimitOption = Annotated[
    int,
    typer.Option("-n", "--limit", "--node-limit", help="Maximum number of results.", rich_help_panel=RETRIEVAL_PANEL),
]
ThresholdOption = Annotated[
    float | None,
    typer.Option(
        "-t",
        "--threshold",
        help="Keep results scoring above this (default: rerank.threshold, 0.1).",
        rich_help_panel=RETRIEVAL_PANEL,
        show_default=False,
    ),
]
AfterOption = Annotated[
    str | None,
    typer.Option(
        "--after",
        help="Changed since: 30m, 2h, 7d, 2w, YYYY-MM-DD or ISO 8601.",
        rich_help_panel=RETRIEVAL_PANEL,
        show_default=False,
    ),
]
BeforeOption = Annotated[
    str | None,
    typer.Option(
        "--before", help="Changed until: same forms as --after.", rich_help_panel=RETRIEVAL_PANEL, show_default=False
    ),
]
TimeFieldOption = Annotated[
    str | None,
    typer.Option(
        "--time-field", help="updated_at (default) or created_at.", rich_help_panel=RETRIEVAL_PANEL, show_default=False
    ),
]
LevelOption = Annotated[
    str | None,
    typer.Option(
        "-L",
        "--level",
        help="Levels to search: 0 abstract, 1 overview, 2 content (e.g. 0,1).",
        rich_help_panel=RETRIEVAL_PANEL,
        show_default=False,
    ),
]
ContextTypeOption = Annotated[
    str | None,
    typer.Option(
        "--context-type",
        help="memory, resource and/or skill (comma-separated).",
        rich_help_panel=RETRIEVAL_PANEL,
        show_default=False,
    ),
]
TagsOption = Annotated[
    str | None,
    typer.Option("--tags", help="Required tags: k=v,k2=v2.", rich_help_panel=RETRIEVAL_PANEL, show_default=False),
]
FilterOption = Annotated[
    str | None,
    typer.Option(
        "--filter",
        help='Filter DSL as JSON, e.g. \'{"op": "must", "field": "level", "conds": [2]}\'.',
        rich_help_panel=RETRIEVAL_PANEL,
        show_default=False,
    ),
]
ModeOption = Annotated[
    str | None,
    typer.Option(
        "--mode", help="hybrid (default), vector or keyword.", rich_help_panel=RETRIEVAL_PANEL, show_default=False
    ),
]
ExplainOption = Annotated[
    bool,
    typer.Option(
        "--explain",
        help="Show each score's parts; for no results, what removed the candidates.",
        rich_help_panel=RETRIEVAL_PANEL,
    ),
]


BatchOption = Annotated[
    str | None,
    typer.Option(
        "--batch",
        help='Answer every question of this JSONL file (- for stdin), one {"id", "query", ...options} a line, '
        'with one {"id", "result"} or {"id", "error"} line each; the flags given are every line\'s defaults.',
        show_default=False,
    ),
]


@command(app, "find", formats=LISTING_FORMATS)
def find(
    ctx: CliContext,
    query: Annotated[str | None, typer.Argument(help="What to look for.", show_default=False)] = None,
    uri: UriOption = None,
    limit: LimitOption = 10,
    threshold: ThresholdOption = None,
    after: AfterOption = None,
    before: BeforeOption = None,
    time_field: TimeFieldOption = None,
    level: LevelOption = None,
    context_type: ContextTypeOption = None,
    tags: TagsOption = None,
    filter_: FilterOption = None,
    mode: ModeOption = None,
    explain: ExplainOption = False,
    as_of: AsOfOption = None,
    batch: BatchOption = None,
) -> Output:
    """Find context semantically similar to QUERY (no session, no LLM).

    With --batch, answer many questions in one process: the model loads once.

    Example: openviking find "how do I authenticate users" --uri viking://resources/docs -n 5
    """
    options: dict[str, Any] = {
        "target_uri": uri or "", "limit": limit, "score_threshold": threshold, "filter": filter_, "since": after,
        "until": before, "time_field": time_field, "level": level, "context_type": context_type, "tags": tags,
        "mode": mode, "explain": explain, "as_of": as_of,
    }  # fmt: skip
    single = one_of_query_or_batch(query, batch)
    client = ctx.client()
    if single is None:
        from openviking_cli.batch import FIND_OPTIONS, run_batch

        return run_batch(ctx, batch or "-", FIND_OPTIONS, options, lambda given: client.find(**given).to_dict())
    result = client.find(single, **options)
    return hits_output(ctx, result.to_dict(), lambda console, data: render_result(console, data, limit))


def one_of_query_or_batch(query: str | None, batch: str | None) -> str | None:
    """The query, or None for a batch; exactly one of them must be given.

    Raises:
        InvalidArgumentError: both or neither.
    """
    if (query is None) == (batch is None):
        raise InvalidArgumentError(
            "Missing argument 'query': give a QUERY, or --batch FILE with one question a line" if query is None else
            "Give a QUERY or --batch FILE, not both"
        )  # fmt: skip
    return query


def hits_output(ctx: CliContext, data: dict[str, Any], render: Callable[[Any, dict[str, Any]], None]) -> Output:
    """find's and search's output. jsonl holds hits only, so an --explain of no results (what
    removed the candidates, which json keeps in ``diagnostics``) goes to stderr, as in a table."""
    if ctx.output is OutputFormat.jsonl and data["total"] == 0 and data.get("diagnostics"):
        note(*no_result_lines(data))
    return Output(data, table=lambda console: render(console, data), items=hits_of(data))


def no_result_lines(data: dict[str, Any]) -> list[str]:
    """The note for no results, with what removed the candidates when --explain asked."""
    lines = ["No results found.", "Try a broader query, lower --threshold, or search a wider --uri."]
    diagnostics = data.get("diagnostics")
    if diagnostics:
        for stage in diagnostics.get("stages", []):
            lines.append(f"  {stage['stage']}: removed {stage['removed']}, {stage['remaining']} left")
        if diagnostics.get("threshold"):
            info = diagnostics["threshold"]
            lines.append(f"  threshold {info['threshold']}: best score {info['best_score']:.3f}")
        if diagnostics.get("advice"):
            lines.append(f"Suggestion: {diagnostics['advice']}")
    if pending_note(data):
        lines.append(pending_note(data))
    return lines


def render_result(console: object, data: dict[str, Any], limit: int, passes: int = 1) -> None:
    """The ranked cards of a find or search result (or the no-result note)."""
    total = data["total"]
    if total == 0:
        note(*no_result_lines(data))
        return
    noun = "result" if total == 1 else "results"
    if passes > 1:
        header = f"{total} {noun} from {passes} search passes"
        sub = f"Ranked by relevance · limit {limit} per pass"
    else:
        header = f"{total} {noun}"
        sub = (
            f"Ranked by relevance · limit {limit} final result{'s' if limit != 1 else ''}"
            if limit
            else "Ranked by relevance"
        )
    hit_cards(console, data, header, sub)  # type: ignore[arg-type]
