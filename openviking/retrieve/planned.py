"""search: find, plus a session, LLM intent analysis and rerank.

1. **Plan.** With a ``session_id``, ``retrieval.enable_intent`` on, a session holding a
   summary or messages, and an LLM configured (``query_planner``, else ``vlm``), the LLM
   plans 0 to 5 typed queries (:mod:`openviking.retrieve.intent`). Otherwise the raw query
   runs alone, untyped, and no ``query_plan`` is returned. An unknown session id is not an
   error (the raw query runs, with a warning), and neither is a failed or unparseable plan
   (the raw query runs, with a warning). A plan of zero queries returns an empty result
   with its ``query_plan`` and searches nothing.
2. **Context types.** A typed query searches its own context type only. When the caller
   also gave ``context_type``, planned queries of other types are dropped (the LLM is told
   the allowed types up front); if that leaves none of a non-empty plan, the raw query runs
   over the caller's types instead and is the plan's one query.
3. **Each pass** scores candidates as ``find`` does (same mode, scope, levels, tags, time
   range and filter). With a usable reranker the ``2 x limit`` best candidates are reranked
   once, on each record's ``text`` (what was embedded: a directory's L0 or L1 text, a file's
   chunk), or its ``abstract`` when the text is empty; a candidate with neither keeps its
   score. The rerank score replaces the retrieval score. Any rerank failure (unreachable,
   HTTP error, timeout, a malformed reply, a NaN score) keeps the retrieval scores of that
   batch, with one warning per search. Without a reranker the pool is ``limit`` candidates.
   Then the threshold (strict ``>``), dedupe, sort and the cut to ``limit``, as in find.
   The queries are embedded in turn, then their passes run in parallel threads.
4. **Merge** in query order: a record URI found by several passes appears once, with its
   best-scoring hit; the hit lists every query that found it, in query order (``queries``
   in its JSON, and ``match_reason``). Each group is sorted by score (ties keep query
   order); ``total`` may exceed ``limit``, which is per pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from openviking.contract.hits import FindResult, MatchedContext, QueryPlan, QueryResult, SearchHit, TypedQuery
from openviking.errors import OpenVikingError
from openviking.session.sessions import SessionStore
from openviking.values.uri import default_targets

from .intent import RECENT_MESSAGES, PlanError, SessionContext, analyze
from .retriever import Candidate, attach_relations, embed_query, found, mark_pending, retrieve, to_matched

if TYPE_CHECKING:
    from openviking.config import Config
    from openviking.models.embedder import Embedder
    from openviking.models.rerank import Reranker
    from openviking.store.lance import LanceStore

    from .request import FindRequest

__all__ = ["load_session_context", "rerank", "rerank_text", "search"]

MAX_PARALLEL_PASSES = 5

Warn = Callable[[str], None]


def load_session_context(store: LanceStore, user: str, session_id: str) -> SessionContext | None:
    """The summary and the recent messages of a session, or None when it does not exist."""
    found = SessionStore(store, user).recent(session_id, RECENT_MESSAGES)
    if found is None:
        return None
    summary, messages = found
    return SessionContext(summary=summary, messages=tuple(messages))


class _Warnings:
    """Each kind of warning once per search (the passes of a plan often fail alike)."""

    def __init__(self, warn: Warn | None) -> None:
        self._warn = warn
        self._seen: set[str] = set()

    def __call__(self, message: str, *, kind: str | None = None) -> None:
        key = kind or message
        if key not in self._seen:
            self._seen.add(key)
            if self._warn is not None:
                self._warn(message)


def search(
    store: LanceStore,
    embedder: Embedder | None,
    request: FindRequest,
    config: Config,
    *,
    session_id: str | None = None,
    user: str = "default",
    explain: bool = False,
    warn: Warn | None = None,
) -> FindResult:
    """Upstream's ``search()`` over an open store (see the module docstring).

    Args:
        store: the open store.
        embedder: the checked embedder (None in keyword mode).
        request: a validated FindRequest (``query``, ``scope``, ``limit``, ``threshold``, ``mode``).
        config: for ``retrieval.enable_intent``, the planner LLM and the reranker.
        session_id: the session whose summary and messages inform the plan.
        user: whose sessions to read.
        explain: attach each score's parts (rerank included) to each hit.
        warn: called with one line for each degradation (never for errors).
    """
    warnings = _Warnings(warn)
    plan = _plan(store, request, config, session_id, user, warnings)
    if plan is None:
        queries: tuple[TypedQuery, ...] = (TypedQuery(request.query, None, "", 1),)
    else:
        plan = _within_types(plan, request)
        queries = plan.queries
        if not queries:
            return FindResult(query_plan=plan)
    reranker = _reranker(config, warnings)
    passes = _run_all(store, embedder, request, queries, reranker, warnings)
    if plan is None:
        return found(store, embedder, request, passes[0], explain=explain)
    return _merge(store, queries, passes, plan, explain=explain, targets=[str(t) for t in request.scope.targets])


# ---------------------------------------------------------------------------- planning
def _plan(
    store: LanceStore,
    request: FindRequest,
    config: Config,
    session_id: str | None,
    user: str,
    warn: _Warnings,
) -> QueryPlan | None:
    if not session_id or not config.retrieval.enable_intent:
        return None
    context = load_session_context(store, user, session_id)
    if context is None:
        warn(f"no session '{session_id}'; searching with the query alone")
        return None
    if context.is_empty:
        return None
    from openviking.models.llm import make_chat

    chat = make_chat(config.planner, purpose="query planner")
    if chat is None:
        warn(
            "no LLM is configured (vlm or query_planner in ov.conf), so no intent analysis; "
            "searching with the query alone"
        )
        return None
    targets = [str(t) for t in request.scope.targets] if _explicit_targets(request.scope, user) else []
    try:
        return analyze(
            chat, request.query, context, context_types=request.scope.context_types, targets=targets, warn=warn
        )
    except (OpenVikingError, PlanError) as exc:
        reason = exc.message if isinstance(exc, OpenVikingError) else str(exc)
        warn(f"intent analysis failed ({reason}); searching with the query alone")
        return None


def _explicit_targets(scope: Any, user: str) -> bool:
    return set(scope.targets) != set(default_targets(user))


def _within_types(plan: QueryPlan, request: FindRequest) -> QueryPlan:
    """Drop planned queries outside the caller's ``context_type``; fall back to the raw query."""
    allowed = request.scope.context_types
    if not allowed or not plan.queries:
        return plan
    kept = tuple(q for q in plan.queries if q.context_type in allowed)
    if kept:
        return replace(plan, queries=kept)
    raw = TypedQuery(
        request.query,
        allowed[0] if len(allowed) == 1 else None,
        "the query as given: every planned query was outside --context-type",
        1,
    )
    return replace(plan, queries=(raw,))


# ---------------------------------------------------------------------------- one pass
def _reranker(config: Config, warn: _Warnings) -> Reranker | None:
    if not config.rerank.is_available:
        return None
    from openviking.models.rerank import make_reranker

    try:
        return make_reranker(config.rerank)
    except OpenVikingError as exc:
        warn(f"rerank is off ({exc.message})")
        return None


@dataclass(slots=True)
class _Pass:
    """One typed query's outcome: its ranked candidates, and why rerank failed (if it did)."""

    candidates: list[Candidate]
    rerank_failure: str | None = None


def _run_all(
    store: LanceStore,
    embedder: Embedder | None,
    request: FindRequest,
    queries: tuple[TypedQuery, ...],
    reranker: Reranker | None,
    warn: _Warnings,
) -> list[list[Candidate]]:
    """Every pass, in query order.

    The queries are embedded one after another here (a local model may not be thread-safe),
    then searched and reranked in parallel threads: with remote rerank (or a remote
    embedder) a plan of 5 queries costs about one round trip, not five.
    """
    if request.limit <= 0 or not store.has_records:
        return [[] for _ in queries]
    vectors: list[Any] = [
        embed_query(embedder, typed.query) if embedder is not None and request.mode != "keyword" else None
        for typed in queries
    ]
    jobs = list(zip(queries, vectors, strict=True))
    if len(jobs) == 1:
        typed, vector = jobs[0]
        outcomes = [_run(store, embedder, request, typed, vector, reranker)]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(len(jobs), MAX_PARALLEL_PASSES)) as executor:
            outcomes = list(executor.map(lambda job: _run(store, embedder, request, job[0], job[1], reranker), jobs))
    for outcome in outcomes:
        if outcome.rerank_failure is not None:
            warn(f"rerank failed ({outcome.rerank_failure}); keeping the retrieval scores", kind="rerank")
    return [outcome.candidates for outcome in outcomes]


def _run(
    store: LanceStore,
    embedder: Embedder | None,
    request: FindRequest,
    typed: TypedQuery,
    vector: Any,
    reranker: Reranker | None,
) -> _Pass:
    scope = request.scope
    if typed.context_type is not None:
        scope = replace(scope, context_types=(typed.context_type,))
    failures: list[str] = []

    def reranked(pool: list[Candidate]) -> None:
        assert reranker is not None
        failure = rerank(reranker, typed.query, pool)
        if failure is not None:
            failures.append(failure)

    hits = retrieve(
        store,
        embedder,
        typed.query,
        scope,
        limit=request.limit,
        threshold=request.threshold,
        mode=request.mode,
        query_vector=vector,
        translate=request.translate,
        rerank=reranked if reranker is not None else None,
    )
    return _Pass(hits, failures[0] if failures else None)


def rerank_text(candidate: Candidate) -> str:
    """What the reranker reads for a candidate: its record's text, else its abstract."""
    text = str(candidate.row.get("text") or "")
    return text if text.strip() else str(candidate.row.get("abstract") or "")


def rerank(reranker: Reranker, query: str, pool: list[Candidate]) -> str | None:
    """Rerank ``pool`` in place, once; returns why it failed (then no score changed), else None.

    Candidates with no text to read are not sent and keep their retrieval score.
    """
    sent = [(c, rerank_text(c)) for c in pool]
    sent = [(c, text) for c, text in sent if text.strip()]
    if not sent:
        return None
    try:
        scores = reranker.rerank(query, [text for _, text in sent])
    except OpenVikingError as exc:
        return exc.message
    if len(scores) != len(sent) or not all(
        isinstance(s, int | float) and not isinstance(s, bool) and math.isfinite(s) for s in scores
    ):
        return "the reranker returned an unusable score list"
    for (candidate, _), score in zip(sent, scores, strict=True):
        candidate.extra["retrieval_score"] = candidate.score
        candidate.extra["rerank"] = {"score": float(score)}
        candidate.score = float(score)
    return None


# ---------------------------------------------------------------------------- merge
def _merge(
    store: LanceStore,
    queries: tuple[TypedQuery, ...],
    passes: list[list[Candidate]],
    plan: QueryPlan,
    *,
    explain: bool,
    targets: list[str],
) -> FindResult:
    best: dict[str, Candidate] = {}
    found_by: dict[str, list[str]] = {}
    for typed, candidates in zip(queries, passes, strict=True):
        for candidate in candidates:
            names = found_by.setdefault(candidate.uri, [])
            if typed.query not in names:
                names.append(typed.query)
            kept = best.get(candidate.uri)
            if kept is None or candidate.score > kept.score:
                best[candidate.uri] = candidate
    if explain:
        mark_pending(store, list(best.values()))
    hits: list[MatchedContext] = []
    for uri, candidate in best.items():
        base = to_matched(candidate, explain=explain)
        names = found_by[uri]
        label = ("query " if len(names) == 1 else "queries ") + ", ".join(f'"{n}"' for n in names)
        reason = f"{label} · {base.match_reason}" if base.match_reason else label
        fields = {name: getattr(base, name) for name in MatchedContext.__dataclass_fields__}
        fields["match_reason"] = reason
        hits.append(SearchHit(**fields, queries=list(names)))
    result = FindResult.from_hits(attach_relations(store, hits), query_plan=plan)
    result.query_results = [
        QueryResult(typed, [to_matched(c, explain=explain) for c in candidates], list(targets))
        for typed, candidates in zip(queries, passes, strict=True)
    ]
    for group in (result.memories, result.resources, result.skills):
        group.sort(key=lambda h: -h.score)  # stable: equal scores keep query order
    return result
