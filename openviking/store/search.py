"""Scoring queries over the records table: nearest vectors and best BM25 matches.

Both take the find's :class:`~openviking.store.filters.Scope` and compile it to LanceDB's
prefilter here, so no caller writes a filter. Which vector search runs is decided here too:
a flat scan below the index's size, the IVF index above it, and an exact scan of a filter
that leaves few records (an index probed under a narrow prefilter misses neighbours).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .filters import Scope
    from .lance import LanceStore

__all__ = ["keyword_search", "vector_search"]

# A filter that leaves at most this many records is searched exactly: an index probed under a
# narrow prefilter misses neighbours in the partitions it does not probe.
EXACT_MAX_ROWS = 20_000
ANN_NPROBES = 50


def vector_search(
    store: LanceStore,
    vector: Sequence[float],
    scope: Scope | None,
    limit: int,
    columns: Sequence[str],
    *,
    exact: bool = False,
) -> list[dict[str, Any]]:
    """Nearest records within ``scope`` by cosine distance, with ``_distance`` on each row.

    ``exact``: compare with every record even where an index exists (the reference the
    index's recall is measured against).
    """
    if not store.has_records or limit <= 0:
        return []
    where = scope.to_sql(store.node_uris_where) if scope is not None else None
    query = store.records().search(list(vector), vector_column_name="vector").distance_type("cosine")
    if where:
        query = query.where(where, prefilter=True)
    if exact:
        query = query.bypass_vector_index()
    elif store.has_vector_index():
        if where and store.filtered_count(where) <= EXACT_MAX_ROWS:
            query = query.bypass_vector_index()
        else:
            query = query.nprobes(ANN_NPROBES)
    query = query.select([*columns, "_distance"]).limit(limit)
    return list(store.run(query.to_list))


def keyword_search(
    store: LanceStore,
    text: str,
    scope: Scope | None,
    limit: int,
    columns: Sequence[str],
    *,
    expansion: str = "",
    expansion_weight: float = 1.0,
    column: str = "text",
) -> list[dict[str, Any]]:
    """Best BM25 matches of ``text`` within ``scope`` on the records' ``column`` (``text``,
    or ``abstract`` where the store says it is indexed), with ``_score`` on each row.

    ``expansion``: more words that may match (e.g. a query's translation), whose BM25
    counts ``expansion_weight`` times. It is a second search whose scores are added to the
    first's by record: one boolean query of both clauses takes 10-30 times as long on a
    large store (209 against 19 ms at 1M records), as it scores every record matching any
    word. A record outside one search's top ``limit`` gets nothing from it.
    """
    if not store.has_records or limit <= 0 or not text.strip():
        return []
    where = scope.to_sql(store.node_uris_where) if scope is not None else None
    rows = _match(store, text, where, limit, columns, column)
    if not expansion.strip():
        return rows
    merged = {row["id"]: row for row in rows}
    for row in _match(store, expansion, where, limit, columns, column):
        extra = expansion_weight * float(row["_score"])
        kept = merged.get(row["id"])
        if kept is None:
            row["_score"] = extra
            merged[row["id"]] = row
        else:
            kept["_score"] = float(kept["_score"]) + extra
    return sorted(merged.values(), key=lambda row: -float(row["_score"]))[:limit]


def _match(
    store: LanceStore, text: str, where: str | None, limit: int, columns: Sequence[str], column: str
) -> list[dict[str, Any]]:
    from lancedb.query import MatchQuery

    # Its fields after the first two have defaults, which mypy does not see on a pydantic dataclass.
    match: Any = MatchQuery
    query = store.records().search(match(text, column), query_type="fts")
    if where:
        query = query.where(where, prefilter=True)
    # Rows not yet in the full-text index (written before optimize()) are scanned as well.
    wanted = list(dict.fromkeys([*columns, "id", "_score"]))
    return list(store.run(query.select(wanted).limit(limit).to_list))
