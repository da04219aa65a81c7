"""``openviking search``: find, plus session context, LLM intent analysis and rerank."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from openviking_cli.commands.find import (
    RETRIEVAL_PANEL,
    AfterOption,
    BeforeOption,
    ContextTypeOption,
    ExplainOption,
    FilterOption,
    LevelOption,
    LimitOption,
    ModeOption,
    TagsOption,
    ThresholdOption,
    TimeFieldOption,
    UriOption,
    hits_output,
    render_result,
)
from openviking_cli.render import note
from openviking_cli.runtime import LISTING_FORMATS, AsOfOption, CliContext, Output, command, make_console

app = typer.Typer()

SessionIdOption = Annotated[
    str | None,
    typer.Option(
        "--session-id",
        help="A session whose summary and last messages the LLM plans the queries from.",
        rich_help_panel=RETRIEVAL_PANEL,
        show_default=False,
    ),
]


@command(app, "search", formats=LISTING_FORMATS)
def search(
    ctx: CliContext,
    query: Annotated[str, typer.Argument(help="What to look for.", show_default=False)],
    session_id: SessionIdOption = None,
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
) -> Output:
    """Search with session context: an LLM plans typed queries, a reranker re-scores.

    With --session-id, retrieval.enable_intent on and an LLM configured (vlm or
    query_planner), the LLM turns the session and QUERY into up to 5 queries for skills,
    resources and memories; each runs like find with --limit results, and a URI found twice
    appears once, with its best score. Without them QUERY runs alone. With a rerank model
    configured, twice --limit candidates are re-scored by it. -o json adds the query_plan.

    Example: openviking search "help me write an RFC for it" --session-id $SID -o json
    """
    result = ctx.client().search(
        query,
        target_uri=uri or "",
        session_id=session_id,
        limit=limit,
        score_threshold=threshold,
        filter=filter_,
        since=after,
        until=before,
        time_field=time_field,
        level=level,
        context_type=context_type,
        tags=tags,
        mode=mode,
        explain=explain,
        as_of=as_of,
    )
    data = result.to_dict()
    return hits_output(ctx, data, lambda console, data: render_search(console, data, limit))


def render_search(console: Any, data: dict[str, Any], limit: int) -> None:
    """The ranked cards ("N results from K search passes"), then the plan that made them."""
    plan = data.get("query_plan")
    if plan is not None and not plan["queries"]:
        lines = ["No search needed: the query planner planned no queries."]
        if plan.get("reasoning"):
            lines.append(f"Reasoning: {plan['reasoning']}")
        note(*lines)
        return
    passes = len(plan["queries"]) if plan is not None else 1
    render_result(console, data, limit, passes=passes)
    if plan is None:
        return
    from rich.text import Text

    target = console if data["total"] else make_console(stderr=True)
    target.print()
    target.print(Text("Query plan", style="bold"), soft_wrap=True)
    if plan.get("reasoning"):
        target.print(Text("   " + " ".join(str(plan["reasoning"]).split()), style="dim"), soft_wrap=True)
    for index, typed in enumerate(plan["queries"], start=1):
        line = Text(f"   {index}. ")
        line.append(str(typed.get("context_type") or "any"), style="magenta")
        line.append(f" · priority {typed.get('priority')} · ")
        line.append(str(typed.get("query")), style="bold")
        target.print(line, soft_wrap=True)
