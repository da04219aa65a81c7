"""Retrieval measured against a golden file: the queries, the metrics, a baseline, the gates.

A golden file is JSON lines, one query each: ``{"query": ..., "relevant": [uri, ...]}``, or
graded ``{"relevant": {uri: grade}}`` (grade > 0; a list gives each URI grade 1), with an
optional ``id`` (default: its line number), ``uri`` (where to search: one URI or a list),
``mode``, ``after`` / ``before`` (find's since / until) and ``k`` (its own cut-off). A hit of a
directory's summary (``dir/.abstract.md``) counts as the directory.

Metrics, each the mean over the queries: nDCG@k with gains ``2^grade - 1``, MRR@k, recall@k
and hit@1. A query's own ``k`` cuts its ranking; the totals are named by the run's ``k``.
Against a baseline (an earlier run's JSON) each metric's change gets a 95 % paired bootstrap
interval over the queries both runs asked (matched by id; 10,000 resamples, fixed seed), and
the queries whose nDCG fell are named, worst first.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from openviking.errors import AlreadyExistsError, InvalidArgumentError

from .results import Record

__all__ = [
    "Comparison",
    "EvalQuery",
    "EvalResult",
    "MetricChange",
    "WorseQuery",
    "check_queries",
    "compare",
    "failures",
    "hit_at_1",
    "junit_xml",
    "metric_names",
    "mrr_at_k",
    "ndcg_at_k",
    "recall_at_k",
    "run",
]

QUERY_KEYS = ("id", "query", "relevant", "uri", "mode", "after", "before", "k")
MAX_K = 1000
RESAMPLES = 10_000
SEED = 20_261_204


@dataclass(slots=True, eq=False)
class EvalQuery(Record):
    """One query of a run: what it found (its top ``k``, directories for their summaries),
    where each relevant URI ranked (None: not in the top ``k``), its metrics, the relevant URIs
    that are not in the store, and its seconds."""

    id: str
    query: str
    k: int
    relevant: dict[str, float]
    found: list[str]
    ranks: dict[str, int | None]
    metrics: dict[str, float]
    missing: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(slots=True, eq=False)
class EvalResult(Record):
    """A run over a golden file: the mean of each metric, each query, and the warnings (a
    relevant URI the store does not hold, for one)."""

    ITEMS: ClassVar[dict[str, type[Record]]] = {"queries": EvalQuery}

    metrics: dict[str, float]
    count: int
    k: int
    searched_with: str
    queries: list[EvalQuery]
    warnings: list[str] = field(default_factory=list)
    as_of: str | None = None


@dataclass(slots=True, eq=False)
class MetricChange(Record):
    """One metric against the baseline: both means, the difference, and its 95 % interval."""

    metric: str
    current: float
    baseline: float
    difference: float
    low: float
    high: float


@dataclass(slots=True, eq=False)
class WorseQuery(Record):
    """A query whose nDCG fell against the baseline."""

    id: str
    query: str
    current: float
    baseline: float


@dataclass(slots=True, eq=False)
class Comparison(Record):
    """A run against a baseline: each metric's change, the queries that got worse (worst first),
    how many got better, and the ids only one run asked."""

    ITEMS: ClassVar[dict[str, type[Record]]] = {"metrics": MetricChange, "worse": WorseQuery}

    metrics: list[MetricChange]
    worse: list[WorseQuery]
    better: int
    paired: int
    unpaired: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- metrics
def ndcg_at_k(ranked: Sequence[str], grades: Mapping[str, float], k: int = 10) -> float:
    """Normalised DCG with gains ``2^grade - 1``; 0 when nothing is relevant."""
    dcg = sum((2 ** grades.get(doc, 0) - 1) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(grades.values(), reverse=True)[:k]
    best = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / best if best > 0 else 0.0


def recall_at_k(ranked: Sequence[str], relevant: set[str] | Mapping[str, float], k: int = 10) -> float:
    """The share of the relevant found in the top ``k``."""
    if not relevant:
        return 0.0
    return len(set(ranked[:k]) & set(relevant)) / len(relevant)


def hit_at_1(ranked: Sequence[str], relevant: set[str] | Mapping[str, float]) -> float:
    """1 when the first is relevant."""
    return 1.0 if ranked and ranked[0] in relevant else 0.0


def mrr_at_k(ranked: Sequence[str], relevant: set[str] | Mapping[str, float], k: int = 10) -> float:
    """1 / the rank of the first relevant in the top ``k`` (0: none)."""
    for i, doc in enumerate(ranked[:k]):
        if doc in relevant:
            return 1.0 / (i + 1)
    return 0.0


def metric_names(k: int) -> tuple[str, ...]:
    """The metrics of a run at ``k``, as its totals name them."""
    return (f"ndcg@{k}", f"mrr@{k}", f"recall@{k}", "hit@1")


def scored(ranked: Sequence[str], grades: Mapping[str, float], k: int, run_k: int) -> dict[str, float]:
    """One query's metrics at its ``k``, named by the run's."""
    values = (ndcg_at_k(ranked, grades, k), mrr_at_k(ranked, grades, k), recall_at_k(ranked, grades, k))
    names = metric_names(run_k)
    return {names[0]: values[0], names[1]: values[1], names[2]: values[2], names[3]: hit_at_1(ranked, grades)}


# ----------------------------------------------------------------------------- the golden file
def check_queries(queries: Any, k: int) -> list[dict[str, Any]]:
    """The golden queries, checked and made plain: ``id`` (text), ``query``, ``relevant``
    (uri -> grade), ``uri``, ``mode``, ``after``, ``before``, ``k``.

    Raises:
        InvalidArgumentError: not a list of objects, no query, an empty or badly graded
            ``relevant``, an unknown key, or a ``k`` out of range.
        AlreadyExistsError: two queries with one id.
    """
    if isinstance(queries, str | bytes) or not isinstance(queries, Sequence) or not queries:
        raise InvalidArgumentError(
            "queries must be a non-empty list of objects, each {query, relevant}",
            hint='For example: [{"query": "how do I rotate API keys", "relevant": ["viking://resources/docs/keys.md"]}]',
        )
    checked: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, raw in enumerate(queries):
        where = f"queries[{index}]"
        if not isinstance(raw, Mapping):
            raise _bad(where, f"{where} must be an object {{query, relevant}}")
        unknown = sorted(set(raw) - set(QUERY_KEYS))
        if unknown:
            raise _bad(where, f"{where} has unknown key {unknown[0]!r} (known: {', '.join(QUERY_KEYS)})")
        text = raw.get("query")
        if not isinstance(text, str) or not text.strip():
            raise _bad(where, f"{where}.query must be a non-empty string")
        ident = raw.get("id", index + 1)
        if isinstance(ident, bool) or not isinstance(ident, str | int) or not str(ident).strip():
            raise _bad(where, f"{where}.id must be a string or a number")
        ident = str(ident)
        if ident in seen:  # a key taken already (no schema of a list can say each item's id is its own)
            raise AlreadyExistsError(
                f"{where}.id {ident!r} is the id of an earlier query",
                hint="Each line of a golden file is {query, relevant}, with an id of its own",
                details={"at": where, "index": index, "resource": ident, "type": "query id"},
            )
        seen.add(ident)
        own_k = raw.get("k", k)
        if isinstance(own_k, bool) or not isinstance(own_k, int) or not 1 <= own_k <= MAX_K:
            raise _bad(where, f"{where}.k must be a whole number from 1 to {MAX_K}")
        checked.append(
            {
                "id": ident,
                "query": text,
                "relevant": _grades(raw.get("relevant"), where),
                "uri": _text_or_list(raw.get("uri"), f"{where}.uri"),
                "mode": _text_or_list(raw.get("mode"), f"{where}.mode", one=True),
                "after": _text_or_list(raw.get("after"), f"{where}.after", one=True),
                "before": _text_or_list(raw.get("before"), f"{where}.before", one=True),
                "k": own_k,
            }
        )
    return checked


def _grades(relevant: Any, where: str) -> dict[str, float]:
    if isinstance(relevant, str):
        relevant = [relevant]
    if isinstance(relevant, Sequence) and relevant and all(isinstance(uri, str) and uri for uri in relevant):
        return dict.fromkeys(relevant, 1.0)
    if isinstance(relevant, Mapping) and relevant:
        grades = {}
        for uri, grade in relevant.items():
            if isinstance(grade, bool) or not isinstance(grade, int | float) or not 0 < grade <= 10:
                raise _bad(where, f"{where}.relevant[{uri!r}] must be a grade above 0 and at most 10")
            grades[str(uri)] = float(grade)
        return grades
    raise _bad(where, f"{where}.relevant must be a non-empty list of URIs, or an object of URI: grade")


def _text_or_list(value: Any, where: str, *, one: bool = False) -> Any:
    if value is None or isinstance(value, str):
        return value
    if not one and isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        return list(value)
    raise _bad(where, f"{where} must be {'a string' if one else 'a string or a list of strings'}")


def _bad(where: str, message: str) -> InvalidArgumentError:
    """The error of query ``where`` (``queries[N]...``): ``details.index`` is N, for a caller
    that read the queries from a file to name the line instead."""
    index = int(where[len("queries[") : where.index("]")])
    return InvalidArgumentError(
        message, hint="Each line of a golden file is {query, relevant}", details={"at": where, "index": index}
    )


def run(
    queries: list[dict[str, Any]],
    k: int,
    search: Callable[[dict[str, Any]], list[str]],
    stored: Callable[[list[str]], set[str]],
    *,
    warn: Callable[[str], None],
    progress: Callable[[int, int], None] | None = None,
    searched_with: str = "find",
    as_of: str | None = None,
) -> EvalResult:
    """Each checked query through ``search`` (its ranked URIs, directories for their summaries),
    scored. A relevant URI that ``stored`` does not know is said through ``warn`` (a stale golden
    file scores 0 for a reason that is not retrieval's)."""
    wanted = sorted({uri for query in queries for uri in query["relevant"]})
    known = stored(wanted)
    warnings = []
    asked = []
    for done, query in enumerate(queries, start=1):
        started = time.monotonic()
        found = list(dict.fromkeys(search(query)))[: query["k"]]
        seconds = time.monotonic() - started
        missing = [uri for uri in query["relevant"] if uri not in known]
        for uri in missing:
            message = f"query {query['id']}: {uri} is not in the store (a stale golden file?)"
            warnings.append(message)
            warn(message)
        asked.append(
            EvalQuery(
                id=query["id"],
                query=query["query"],
                k=query["k"],
                relevant=query["relevant"],
                found=found,
                ranks={uri: found.index(uri) + 1 if uri in found else None for uri in query["relevant"]},
                metrics=scored(found, query["relevant"], query["k"], k),
                missing=missing,
                seconds=seconds,
            )
        )
        if progress is not None:
            progress(done, len(queries))
    totals = {name: sum(q.metrics[name] for q in asked) / len(asked) for name in metric_names(k)}
    return EvalResult(
        metrics=totals, count=len(asked), k=k, searched_with=searched_with, queries=asked, warnings=warnings,
        as_of=as_of,
    )  # fmt: skip


# ----------------------------------------------------------------------------- against a baseline
def compare(current: EvalResult, baseline: EvalResult) -> Comparison:
    """``current`` against ``baseline``, query by query (see the module)."""
    before = {query.id: query for query in baseline.queries}
    now = {query.id: query for query in current.queries}
    paired = [ident for ident in now if ident in before]
    unpaired = sorted(set(now) ^ set(before))
    changes = []
    for name in metric_names(current.k):
        old_name = name if name in baseline.metrics else _same_metric(name, baseline)
        differences = [now[i].metrics.get(name, 0.0) - before[i].metrics.get(old_name, 0.0) for i in paired]
        low, high = _interval(differences)
        changes.append(
            MetricChange(
                metric=name,
                current=current.metrics.get(name, 0.0),
                baseline=baseline.metrics.get(old_name, 0.0),
                difference=sum(differences) / len(differences) if differences else 0.0,
                low=low,
                high=high,
            )
        )
    ndcg = metric_names(current.k)[0]
    old_ndcg = _same_metric(ndcg, baseline)
    falls = [
        WorseQuery(ident, now[ident].query, now[ident].metrics.get(ndcg, 0.0), before[ident].metrics.get(old_ndcg, 0.0))
        for ident in paired
    ]
    worse = sorted((q for q in falls if q.current < q.baseline - 1e-9), key=lambda q: (q.current - q.baseline, q.id))
    better = sum(q.current > q.baseline + 1e-9 for q in falls)
    return Comparison(metrics=changes, worse=worse, better=better, paired=len(paired), unpaired=unpaired)


def _same_metric(name: str, baseline: EvalResult) -> str:
    """The baseline's name for metric ``name`` (a baseline run at another k names it so)."""
    stem = name.split("@")[0]
    return next((key for key in baseline.metrics if key.split("@")[0] == stem), name)


def _interval(differences: list[float]) -> tuple[float, float]:
    """The 95 % bootstrap interval of the mean of paired differences (fixed seed)."""
    if not differences:
        return 0.0, 0.0
    import numpy as np

    values = np.asarray(differences, dtype=np.float64)
    draws = np.random.default_rng(SEED).integers(0, len(values), size=(RESAMPLES, len(values)))
    means = values[draws].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


# ----------------------------------------------------------------------------- the gates
def failures(
    result: EvalResult,
    *,
    fail_under: Mapping[str, float] | None = None,
    comparison: Comparison | None = None,
    fail_on_regress: float | None = None,
) -> list[str]:
    """Why the run fails its gates, one sentence each (none: it passes): a metric under its
    floor, or one that fell by more than ``fail_on_regress`` with its whole interval below 0.

    Raises:
        InvalidArgumentError: a floor names a metric the run does not have.
    """
    said = []
    for name, floor in (fail_under or {}).items():
        if name not in result.metrics:
            raise InvalidArgumentError(
                f"fail_under names {name!r}, which this run does not measure",
                hint=f"The metrics of this run: {', '.join(result.metrics)}",
                details={"metric": name},
            )
        if result.metrics[name] < floor:
            said.append(f"{name} is {result.metrics[name]:.4f}, under {floor:g}")
    if comparison is not None and fail_on_regress is not None:
        for change in comparison.metrics:
            if change.difference < -fail_on_regress and change.high < 0:
                said.append(
                    f"{change.metric} fell by {-change.difference:.4f} ({change.baseline:.4f} -> {change.current:.4f}; "
                    f"95% interval {change.low:+.4f} to {change.high:+.4f}), more than {fail_on_regress:g}"
                )
    return said


def junit_xml(result: EvalResult, failed: Sequence[str], comparison: Comparison | None = None) -> str:
    """The run as JUnit XML, as CI systems show tests: one test case per gate (failed as the
    run's exit status says) and one per query (failed when it got worse against the baseline
    and the run failed on a regression), each query's ranks in its output."""
    import xml.etree.ElementTree as ET  # only a CI run asks for JUnit XML

    worse = {query.id: query for query in (comparison.worse if comparison else [])}
    regressed = any(" fell by " in reason for reason in failed)
    suite = ET.Element("testsuite", name="openviking eval", tests=str(1 + len(result.queries)), time=_seconds(result))
    gates = ET.SubElement(suite, "testcase", classname="openviking.eval", name="gates")
    if failed:
        failure = ET.SubElement(gates, "failure", message="; ".join(failed))
        failure.text = "\n".join(failed)
    ET.SubElement(gates, "system-out").text = "\n".join(f"{k} = {v:.4f}" for k, v in result.metrics.items())
    failures_count = 1 if failed else 0
    for query in result.queries:
        case = ET.SubElement(
            suite, "testcase", classname="openviking.eval.queries", name=f"{query.id}: {query.query}",
            time=f"{query.seconds:.3f}",
        )  # fmt: skip
        if regressed and query.id in worse:
            fell = worse[query.id]
            ET.SubElement(case, "failure", message=f"nDCG {fell.baseline:.4f} -> {fell.current:.4f}")
            failures_count += 1
        ranks = ", ".join(
            f"{uri} #{rank}" if rank else f"{uri} not in the top {query.k}" for uri, rank in query.ranks.items()
        )
        ET.SubElement(case, "system-out").text = ranks
    suite.set("failures", str(failures_count))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def _seconds(result: EvalResult) -> str:
    return f"{sum(query.seconds for query in result.queries):.3f}"
