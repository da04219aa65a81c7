"""``openviking eval``: retrieval scored against a golden file, gated for CI."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from openviking.errors import AlreadyExistsError, InvalidArgumentError, NotFoundError
from openviking_cli.runtime import AsOfOption, CliContext, Output, command, progress_bar

app = typer.Typer()

GATES_PANEL = "Gates"


@command(app, "eval")
def eval_(
    ctx: CliContext,
    queries: Annotated[
        str,
        typer.Argument(
            help='A golden file, JSON lines: {"query": ..., "relevant": [uri, ...] or {uri: grade}} (- reads stdin).',
            show_default=False,
        ),
    ],
    k: Annotated[int, typer.Option("-k", help="The metrics' cut-off (a query's own k wins).", min=1, max=1000)] = 10,
    search: Annotated[bool, typer.Option("--search", help="Run each query through search instead of find.")] = False,
    session_id: Annotated[
        str | None,
        typer.Option(
            "--session-id", help="Search with this session's messages (implies --search).", show_default=False
        ),
    ] = None,
    as_of: AsOfOption = None,
    fail_under: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-under",
            help="Exit 1 when METRIC is under VALUE, e.g. ndcg@10=0.8 (repeatable).",
            rich_help_panel=GATES_PANEL,
            show_default=False,
        ),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            help="An earlier run's JSON (-o json): show each metric's change with its interval, and the worse queries.",
            rich_help_panel=GATES_PANEL,
            show_default=False,
        ),
    ] = None,
    fail_on_regress: Annotated[
        float | None,
        typer.Option(
            "--fail-on-regress",
            help="With --baseline: exit 1 when a metric fell by more than this, its whole interval below 0.",
            min=0.0,
            rich_help_panel=GATES_PANEL,
            show_default=False,
        ),
    ] = None,
    junit: Annotated[
        Path | None,
        typer.Option(
            "--junit",
            help="Also write the run as JUnit XML here, for CI.",
            rich_help_panel=GATES_PANEL,
            show_default=False,
        ),
    ] = None,
) -> Output:
    """Score retrieval against a golden file: each query's ranks, then nDCG@k, MRR@k, recall@k
    and hit@1 on average; exit 1 when a gate fails.

    Each line: {"query": "...", "relevant": ["viking://..."]} or graded {"relevant": {"viking://...": 2}},
    optional "id", "uri" (where to search), "mode", "after", "before", "k". A relevant URI the store
    does not hold is a warning naming it (a stale golden file).

    Example: openviking eval golden.jsonl --fail-under ndcg@10=0.8 --baseline main.json --junit eval.xml
    """
    from openviking.contract.evaluation import EvalResult, compare, failures, junit_xml

    floors = _floors(fail_under or [], k)
    if fail_on_regress is not None and baseline is None:
        raise InvalidArgumentError("--fail-on-regress needs --baseline: a regression is against an earlier run")
    earlier = EvalResult.from_dict(_baseline(baseline)) if baseline is not None else None
    golden = _golden(queries, k)
    with progress_bar("Evaluating", unit="items") as update:
        result = ctx.client().evaluate(golden, k, search=search, session_id=session_id, as_of=as_of, progress=update)
    comparison = compare(result, earlier) if earlier is not None else None
    failed = failures(result, fail_under=floors, comparison=comparison, fail_on_regress=fail_on_regress)
    if junit is not None:
        junit.write_text(junit_xml(result, failed, comparison), encoding="utf-8")
    data = {**result.to_dict(), "comparison": comparison.to_dict() if comparison else None, "failures": failed}
    return Output(
        data,
        table=lambda console: _render(console, data),
        items=data["queries"],
        exit_code=1 if failed else 0,
    )


def _floors(given: list[str], k: int) -> dict[str, float]:
    from openviking.contract.evaluation import metric_names

    floors = {}
    for item in given:
        name, _, value = item.partition("=")
        try:
            floors[name.strip()] = float(value)
        except ValueError:
            raise InvalidArgumentError(
                f"--fail-under takes METRIC=VALUE, e.g. ndcg@10=0.8 (got {item!r})", details={"fail_under": item}
            ) from None
        if name.strip() not in metric_names(k):
            raise InvalidArgumentError(
                f"--fail-under names {name.strip()!r}, which this run does not measure",
                hint=f"The metrics at -k {k}: {', '.join(metric_names(k))}",
                details={"fail_under": item},
            )
    return floors


def _golden(path: str, k: int) -> list[Any]:
    """The golden file's queries, one JSON object a line (blank lines skipped), checked here so
    that an error names the line it is on."""
    from openviking.contract.evaluation import check_queries

    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotFoundError(f"No golden file at {path}", details={"resource": path, "type": "file"}) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgumentError(f"Cannot read the golden file {path}: {exc}", details={"path": path}) from None
    queries = []
    numbers = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        numbers.append(number)
        try:
            queries.append(json.loads(line))
        except ValueError as exc:
            raise InvalidArgumentError(
                f"{path}:{number} is not JSON: {exc}",
                hint='Each line is one object: {"query": "...", "relevant": ["viking://..."]}',
                details={"path": path, "line": number},
            ) from None
    if not queries:
        raise InvalidArgumentError(f"{path} holds no query", details={"path": path})
    try:
        check_queries(queries, k)
    except (InvalidArgumentError, AlreadyExistsError) as exc:
        index = exc.details.get("index")
        if not isinstance(index, int):
            raise
        at = f"queries[{index}]"
        said = exc.message.replace(at + ".", "", 1).replace(at + " ", "", 1)
        raise type(exc)(
            f"{path}:{numbers[index]}: {said}", hint=exc.hint, details={"path": path, "line": numbers[index]}
        ) from None
    return queries


def _baseline(path: Path) -> dict[str, Any]:
    """An earlier run's result, from its ``-o json`` output (the envelope or the result alone)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotFoundError(f"No baseline at {path}", details={"resource": str(path), "type": "file"}) from None
    except (OSError, ValueError) as exc:
        raise InvalidArgumentError(f"The baseline {path} is not JSON: {exc}", details={"path": str(path)}) from None
    result = data.get("result", data) if isinstance(data, dict) else None
    if not isinstance(result, dict) or not isinstance(result.get("queries"), list) or "metrics" not in result:
        raise InvalidArgumentError(
            f"The baseline {path} is not the JSON of an eval",
            hint="Save a run with: openviking eval golden.jsonl -o json > baseline.json",
            details={"path": str(path)},
        )
    return result


def _render(console: Any, data: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    k = data["k"]
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    for column, justify in (("id", "left"), ("first", "right"), (f"nDCG@{k}", "right"), ("query", "left")):
        table.add_column(column, justify=justify, no_wrap=column != "query", overflow="fold")  # type: ignore[arg-type]
    for query in data["queries"]:
        ranks = [rank for rank in query["ranks"].values() if rank]
        first = f"#{min(ranks)}" if ranks else "-"
        ndcg = query["metrics"][f"ndcg@{k}"]
        style = "green" if ranks and min(ranks) == 1 else "red" if not ranks else "yellow"
        table.add_row(Text(query["id"]), Text(first, style=style), Text(f"{ndcg:.3f}"), Text(query["query"]))
    console.print(table)
    console.print()
    totals = " · ".join(f"{name} {value:.4f}" for name, value in data["metrics"].items())
    console.print(Text(f"{totals}  ({data['count']} queries, {data['searched_with']})", style="bold"))
    comparison = data.get("comparison")
    if comparison:
        console.print(Text(f"Against the baseline ({comparison['paired']} queries in both):", style="bold"))
        for change in comparison["metrics"]:
            style = "red" if change["high"] < 0 else "green" if change["low"] > 0 else "dim"
            console.print(
                Text(
                    f"  {change['metric']:<10} {change['baseline']:.4f} -> {change['current']:.4f}  "
                    f"{change['difference']:+.4f} (95% {change['low']:+.4f} .. {change['high']:+.4f})",
                    style=style,
                )
            )
        for worse in comparison["worse"][:10]:
            console.print(
                Text(f"  worse: {worse['id']} {worse['baseline']:.3f} -> {worse['current']:.3f}  {worse['query']}"),
                soft_wrap=True,
            )
    if data["failures"]:
        for reason in data["failures"]:
            console.print(Text(f"FAILED: {reason}", style="bold red"), soft_wrap=True)
    else:
        console.print(Text("Passed.", style="green"))
