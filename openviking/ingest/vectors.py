"""The embedding phase: vectors for the records that wait for them, made outside the write lock.

A write commits its records before their vectors (``rows.pend_rows``), so what it wrote is
found by its words and summaries at once. Whoever embeds next (the add itself in the
foreground, ``openviking index``, a server's worker, the next write) takes the store's
embedding lock, reads the waiting records in batches, embeds each batch (one vector for
identical texts, none for a text whose vector is stored already) with no lock held, and
commits its vectors under the write lock to the records that still wait with the text they were
made from (``store/pending.fill_vectors``): a record edited meanwhile waits on for its new text.
A kill at any point loses at most the batch being embedded, and a committed vector is never
made again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openviking.errors import UnavailableError
from openviking.store.pending import count_pending, fill_vectors, pending_batch, stored_vectors
from openviking.store.schema import RECORDS

if TYPE_CHECKING:
    from openviking.models.embedder import Embedder
    from openviking.store.lance import LanceStore
    from openviking.values.uri import VikingURI

__all__ = ["Embedding", "embed_inputs", "embed_pending", "waiting"]

ProgressCallback = Callable[[int, int], None]
# Records embedded per commit: as many as a batch of an add writes (files.BATCH_CHUNKS).
BATCH_RECORDS = 192
# A long embedding folds what it committed into the indexes this often (records), so that
# keyword search does not scan more and more rows outside its index while it runs.
OPTIMIZE_EVERY = 20_000


@dataclass(slots=True)
class Embedding:
    """What one embedding phase did: texts the embedder read, records given their vectors, and
    records still waiting when it ended (in its scope; another process's to embed, when it held
    the embedding lock)."""

    embedded: int = 0
    filled: int = 0
    pending: int = 0
    seconds: float = 0.0


def embed_pending(
    store: LanceStore,
    embedder: Embedder,
    *,
    below: VikingURI | None = None,
    wait: bool = True,
    progress: ProgressCallback | None = None,
) -> Embedding:
    """Embed the records that wait for their vectors (at and below ``below``), batch by batch.

    ``wait``: take the embedding lock when another holds it, once it is free (a foreground add,
    ``index``); else leave the records to the holder, who embeds every record waiting when it
    is done. ``progress`` is called with (records done, records waiting).
    """
    started = time.monotonic()
    result = Embedding()
    progressed = False
    # What every write asks: no lock is taken for nothing.
    if not _bound(store, embedder) or not count_pending(store, below=below):
        return result
    while True:
        with store.embedding_lock(wait=wait) as held:
            if held:
                embedded_before = result.filled
                _drain(store, embedder, below, progress, result)
                progressed = result.filled > embedded_before
        # A writer that found the lock held while this run finished left its records to it:
        # whoever lets go looks once more, so no record is left with no one to embed it.
        result.pending = waiting(store, embedder, below)
        if not held or not result.pending or not progressed:
            break
    result.seconds = time.monotonic() - started
    return result


def _drain(
    store: LanceStore,
    embedder: Embedder,
    below: VikingURI | None,
    progress: ProgressCallback | None,
    result: Embedding,
) -> None:
    """Under the embedding lock: every waiting record, batch by batch."""
    total = count_pending(store, below=below)
    if not total:
        return
    done = 0
    since_optimized = 0
    tried: set[int] = set()  # (id, text_hash) of what was committed: a record still waiting so is stuck
    if progress:
        progress(0, total)
    while _bound(store, embedder):
        batch = [row for row in pending_batch(store, BATCH_RECORDS, below=below) if _key(row) not in tried]
        if not batch:
            break
        # A text stored already (another copy of a file, a boilerplate paragraph) is not embedded again.
        vectors = stored_vectors(store, (row["text_hash"] for row in batch))
        made, embedded = embed_inputs(
            embedder,
            [
                (row["text_hash"], row["embed_input"], row["embed_tokens"])
                for row in batch
                if row["text_hash"] not in vectors
            ],
        )
        vectors.update(made)
        filled = fill_vectors(
            store,
            [{"id": row["id"], "text_hash": row["text_hash"], "vector": vectors[row["text_hash"]]} for row in batch],
            embedder.dimension,
        )
        tried.update(_key(row) for row in batch)
        result.embedded += embedded
        result.filled += filled
        since_optimized += filled
        done += len(batch)
        if progress:
            progress(done, max(total, done))
        if since_optimized >= OPTIMIZE_EVERY:
            store.optimize()
            since_optimized = 0
    if result.filled:
        store.optimize()  # the rows rewritten with their vectors go into the indexes


def waiting(store: LanceStore, embedder: Embedder, below: VikingURI | None = None) -> int:
    """How many records (at and below ``below``) wait for vectors of ``embedder``: none once a
    reindex to another model has taken the store over."""
    return count_pending(store, below=below) if _bound(store, embedder) else 0


def _bound(store: LanceStore, embedder: Embedder) -> bool:
    """True while the records this process reads are the store's, made by ``embedder``: a
    reindex to another model in another process takes the store to a table of its own, made
    whole before it switches, and this embedding has nothing more to do."""
    meta = store.meta()
    in_use = meta.get("records_table") or RECORDS
    return in_use == store.records_table and meta.get("embedder") in (None, "", embedder.identity)


def _key(row: dict[str, Any]) -> int:
    return hash((row["id"], row["text_hash"]))


def embed_inputs(embedder: Embedder, items: Sequence[tuple[str, str, int | None]]) -> tuple[dict[str, Any], int]:
    """The vectors of ``(text_hash, text, tokens)`` items by text hash, each text cut to its
    tokens (None: as it is) and embedded once however often it comes; and how many texts the
    embedder read.

    Raises:
        UnavailableError: the embedder gave a vector that is not finite (stored, it would never
            be found, and never be made again).
    """
    import numpy as np

    texts: dict[str, str] = {}
    for text_hash, text, tokens in items:
        if text_hash not in texts:
            texts[text_hash] = embedder.truncate(text, tokens) if tokens else text
    if not texts:
        return {}, 0
    matrix = embedder.embed_documents(list(texts.values()))
    if not np.isfinite(matrix).all():
        raise UnavailableError(
            f"The embedder {embedder.identity} returned a vector that is not finite",
            hint="Check the embedding server; the records keep waiting for their vectors",
        )
    return dict(zip(texts, matrix, strict=True)), len(texts)
