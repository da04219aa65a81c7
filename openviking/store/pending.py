"""Records that wait for their vectors: counted for every find, read in batches by whoever
embeds them, and given their vectors where their text is still the one embedded.

An add writes a record's text (and so its full-text index) before its vector: the vector is
null and ``vector_pending`` set, with the text to embed in ``embed_input``. Vector search and
its index pass over a null vector; keyword search reads the record as any other. The queue of
work is this flag in the table itself, so a kill loses nothing and a vector once written is
never made again: :func:`fill_vectors` writes a vector only to a record still waiting with the
text it was made from.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .filters import path_scope_sql, sql_in
from .schema import RECORDS, VECTOR_PENDING, records_schema
from .tables import _batches

if TYPE_CHECKING:
    from openviking.values.uri import VikingURI

    from .filters import Scope
    from .lance import LanceStore

__all__ = ["count_pending", "fill_vectors", "pending_batch", "pending_by_uri", "stored_vectors"]

# What the embedding phase reads of a waiting record.
BATCH_COLUMNS = ["id", "uri", "text_hash", "embed_input", "embed_tokens"]


def count_pending(store: LanceStore, scope: Scope | None = None, *, below: VikingURI | None = None) -> int:
    """How many records wait for their vectors (within ``scope``, or at and below ``below``).

    Every find asks, so the store's whole count is kept until the records table changes (the
    table's version, which any process's write moves); a scope is counted only when some
    record waits at all, which after the embedding is never."""
    if not _flagged(store):
        return 0
    table = store.records()
    version = (id(table), int(store.run(lambda: table.version)))
    seen = store._pending_seen
    if seen is None or seen[0] != version:
        seen = store._pending_seen = (version, {"": store._count_rows(store.records_table, VECTOR_PENDING)})
    where = scope.to_sql(store.node_uris_where) if scope is not None else None
    if below is not None and not below.is_root:
        where = path_scope_sql(below)
    if not where or seen[1][""] == 0:
        return seen[1][""]
    if where not in seen[1]:
        seen[1][where] = store._count_rows(store.records_table, f"{VECTOR_PENDING} AND ({where})")
    return seen[1][where]


def pending_batch(store: LanceStore, limit: int, *, below: VikingURI | None = None) -> list[dict[str, Any]]:
    """Up to ``limit`` records that wait for their vectors (at and below ``below``): their id,
    URI, text hash, the text to embed and how many of its tokens (None: the embedder's limit)."""
    if not _flagged(store):
        return []
    where = VECTOR_PENDING
    if below is not None and not below.is_root:
        where += f" AND ({path_scope_sql(below)})"
    query = store.records().search().where(where).select(BATCH_COLUMNS).limit(limit)
    rows: list[dict[str, Any]] = store.run(query.to_list)
    return rows


def fill_vectors(store: LanceStore, rows: Sequence[dict[str, Any]], dimension: int) -> int:
    """Write each row's ``vector`` to the record of its ``id``, in one commit, where that record
    still waits with the ``text_hash`` the vector was made from: a record rewritten meanwhile
    (an edit) waits on for its new text, and a removed one is not made again; nothing is written
    once the store uses another records table. Returns how many records got their vectors."""
    if not rows:
        return 0
    import numpy as np
    import pyarrow as pa

    full = records_schema(dimension)
    names = ("id", "text_hash", "vector", VECTOR_PENDING, "embed_input", "embed_tokens")
    fields = pa.schema([full.field(name) for name in names])
    count = len(rows)
    data = pa.table(
        {
            "id": [row["id"] for row in rows],
            "text_hash": [row["text_hash"] for row in rows],
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(np.asarray([row["vector"] for row in rows], dtype=np.float32).ravel()), dimension
            ),
            VECTOR_PENDING: [False] * count,
            "embed_input": [None] * count,
            "embed_tokens": [None] * count,
        },
        schema=fields,
    )
    with store.write_lock():
        # A reindex to another model (another process) may have switched the store to a table
        # of its own, made whole, and dropped this one while the batch was embedded.
        if (store.meta().get("records_table") or RECORDS) != store.records_table or not _flagged(store):
            return 0
        table = store.records()
        # Only the columns that change: a merge of whole rows would carry every text back.
        merge = table.merge_insert("id").when_matched_update_all(
            where=f"target.text_hash = source.text_hash AND target.{VECTOR_PENDING}"
        )
        done = store._commit(table, lambda: merge.execute(data))
        return int(done.num_updated_rows)


def stored_vectors(store: LanceStore, text_hashes: Iterable[str]) -> dict[str, Any]:
    """The vectors stored for any of ``text_hashes`` (a vector is what its text hash says it is
    made of, whichever record holds it), by text hash."""
    if not _flagged(store):
        return {}
    found: dict[str, Any] = {}
    for batch in _batches(sorted(set(text_hashes))):
        where = f"{sql_in('text_hash', batch)} AND NOT {VECTOR_PENDING}"
        query = store.records().search().where(where).select(["text_hash", "vector"])
        for row in store.run(query.limit(None).to_list):
            if row["vector"] is not None:
                found.setdefault(row["text_hash"], row["vector"])
    return found


def pending_by_uri(store: LanceStore, uris: Iterable[str]) -> dict[str, int]:
    """How many records of each of ``uris`` wait for their vectors (those with none left out)."""
    if not _flagged(store) or count_pending(store) == 0:
        return {}
    found: dict[str, int] = {}
    for batch in _batches(uris):
        query = store.records().search().where(f"{VECTOR_PENDING} AND {sql_in('uri', batch)}").select(["uri"])
        for row in store.run(query.limit(None).to_list):
            found[row["uri"]] = found.get(row["uri"], 0) + 1
    return found


def _flagged(store: LanceStore) -> bool:
    """True when the store's records table has the column that flags a waiting record (one an
    older version wrote has none until its next write, and nothing waits in it)."""
    return store.has_records and bool(store.record_columns([VECTOR_PENDING]))
