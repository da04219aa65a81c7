"""Why a find returned nothing: how many candidates each stage of the scope removed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from openviking.store.lance import LanceStore

    from .request import FindRequest


class Scored(Protocol):
    """A candidate the retriever scored."""

    score: float


__all__ = ["diagnose"]


def diagnose(store: LanceStore, request: FindRequest, best: Callable[[int], Sequence[Scored]]) -> dict[str, Any]:
    """Count the records left after each restriction, in order, and say what to loosen.

    The counts are cumulative: ``remaining`` after a stage is what survived it and every
    stage before it. When all of them leave records, the threshold removed the rest, and
    ``best(n)`` (the request's best ``n`` candidates, scored) says how high the scores went.
    """
    stages: list[dict[str, Any]] = []
    total = store.count_records()
    remaining = total
    blocking: str | None = None
    for name, left in store.count_records_by_stage(request.scope):
        stages.append({"stage": name, "removed": remaining - left, "remaining": left})
        if left == 0 and blocking is None:
            blocking = name
        remaining = left
    advice = None
    threshold_info: dict[str, Any] | None = None
    if blocking is not None:
        advice = request.scope.loosening(blocking)
    elif remaining > 0:
        scored = best(20)
        top = max((c.score for c in scored), default=0.0)
        threshold_info = {"threshold": request.threshold, "best_score": top, "candidates": len(scored)}
        if scored:
            advice = f"lower --threshold below {top:.3f}"
        else:
            advice = "no record matches the query's words; try --mode vector or other words"
    return {
        "records": total,
        "stages": stages,
        "threshold": threshold_info,
        "blocking_stage": blocking or ("threshold" if threshold_info and threshold_info["candidates"] else None),
        "advice": advice,
    }
