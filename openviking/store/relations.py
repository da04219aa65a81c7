"""Relations: directed links from one URI to others, each with a reason (upstream's
``client.relations(uri)`` and the ``relations`` of every find/search hit)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from openviking.contract.results import Relation
from openviking.store.filters import path_scope_sql, sql_in, sql_string
from openviking.store.lance import LanceStore
from openviking.store.schema import RELATIONS, relations_schema
from openviking.values.uri import VikingURI

__all__ = ["add_links", "links_from", "links_of_many", "move_links", "remove_links", "remove_links_within"]


def _link_id(source: str, target: str) -> str:
    return hashlib.md5(f"{source}\0{target}".encode()).hexdigest()


def add_links(store: LanceStore, source: str, targets: Sequence[str], reason: str) -> int:
    """Link ``source`` to each target (a repeated link only updates its reason)."""
    now = datetime.now(UTC)
    rows = [
        {"id": _link_id(source, target), "from_uri": source, "to_uri": target, "reason": reason, "created_at": now}
        for target in targets
    ]
    store._upsert_rows(RELATIONS, rows, "id", relations_schema())
    return len(rows)


def remove_links(store: LanceStore, source: str, target: str) -> int:
    """Remove the link from ``source`` to ``target``; returns how many were removed (0 or 1)."""
    where = f"id = {sql_string(_link_id(source, target))}"
    count = store._count_rows(RELATIONS, where)
    if count:
        store._delete_rows(RELATIONS, where)
    return count


def links_from(store: LanceStore, source: str) -> list[Relation]:
    """The links out of ``source``, oldest first."""
    return links_of_many(store, [source]).get(source, [])


def links_of_many(store: LanceStore, sources: Iterable[str]) -> dict[str, list[Relation]]:
    """Links out of each of ``sources`` in one query (for filling hits' ``relations``)."""
    wanted = sorted(set(sources))
    if not wanted:
        return {}
    where = sql_in("from_uri", wanted)
    out: dict[str, list[Relation]] = {}
    rows = store._query_rows(RELATIONS, where, ["from_uri", "to_uri", "reason", "created_at"])
    for row in sorted(rows, key=lambda r: (r["created_at"], r["to_uri"])):
        out.setdefault(row["from_uri"], []).append(Relation(row["to_uri"], row["reason"] or ""))
    return out


def remove_links_within(store: LanceStore, uri: VikingURI) -> None:
    """Drop every link from or to ``uri`` or anything below it."""
    scope_from = path_scope_sql(uri, column="from_uri")
    scope_to = path_scope_sql(uri, column="to_uri")
    store._delete_rows(RELATIONS, f"({scope_from}) OR ({scope_to})")


def move_links(store: LanceStore, old: VikingURI, new: VikingURI) -> None:
    """Rewrite links from or to ``old``'s subtree so that they follow it to ``new``."""
    scope = f"({path_scope_sql(old, column='from_uri')}) OR ({path_scope_sql(old, column='to_uri')})"
    rows = store._query_rows(RELATIONS, scope)
    if not rows:
        return
    prefix_old, prefix_new = str(old), str(new)

    def moved(uri: str) -> str:
        if uri == prefix_old or uri.startswith(prefix_old + "/"):
            return prefix_new + uri[len(prefix_old) :]
        return uri

    rewritten = []
    for row in rows:
        source, target = moved(row["from_uri"]), moved(row["to_uri"])
        rewritten.append({**row, "id": _link_id(source, target), "from_uri": source, "to_uri": target})
    with store.write_lock():
        # The new links first: a kill in between leaves both, and the move run again rewrites
        # the old ones once more (their new ids are the same), never neither.
        store._upsert_rows(RELATIONS, rewritten, "id", relations_schema())
        store._delete_rows(RELATIONS, scope)
