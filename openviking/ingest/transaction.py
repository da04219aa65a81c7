"""One write to the store: its embedder, bound to the store, the LLM summaries and the vectors
after it.

A store remembers the embedder its vectors came from. Every write checks, each time it takes
the store's lock (before anything is written, and again at each batch), that the store is
still bound to the configured embedder (another process may have bound it meanwhile) and
that no unfinished move touches what it writes. Once the write is complete, the configured
LLM writes the summaries of the directories it changed, outside the lock; then the records
that wait for their vectors get them (``vectors.py``): all of them, waiting for another
embedder to finish first (``WAIT``); unless another process embeds already (``IF_FREE``, what
small writes do); or not yet (``LATER``: an add told not to wait).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from openviking.errors import FailedPreconditionError, OpenVikingError

if TYPE_CHECKING:
    from openviking.config import Config
    from openviking.models.embedder import Embedder
    from openviking.store.lance import LanceStore
    from openviking.values.uri import VikingURI

    from .limits import IngestLimits
    from .vectors import Embedding

__all__ = ["IF_FREE", "LATER", "WAIT", "Write", "check_embedder", "limits_of", "writing"]

Warn = Callable[[str], None]
Vectors = Literal["wait", "if_free", "later"]
WAIT: Vectors = "wait"
IF_FREE: Vectors = "if_free"
LATER: Vectors = "later"


@dataclass(slots=True)
class Write:
    """What one write needs: the embedder the store is bound to, and how to make summaries;
    once it is over, what its embedding phase did (None: it had none)."""

    embedder: Embedder
    limits: IngestLimits
    embedding: Embedding | None = None


def check_embedder(store: LanceStore, embedder: Embedder, meta: dict[str, str] | None = None) -> None:
    """Refuse ``embedder`` for a store whose records another embedder made.

    Raises:
        FailedPreconditionError: the store was built with another embedder.
    """
    built_with = (store.meta() if meta is None else meta).get("embedder")
    if built_with and built_with != embedder.identity and store.has_records:
        raise FailedPreconditionError(
            f"This store was built with the embedder '{built_with}'; the configured one is '{embedder.identity}'",
            hint="Configure the original embedder again, or re-embed everything with: openviking reindex",
            details={"store_embedder": built_with, "configured_embedder": embedder.identity},
        )


def _bind(store: LanceStore, embedder: Embedder, touching: Sequence[VikingURI | None]) -> None:
    """Under the write lock: refuse a store bound to another embedder, or a write touching an
    unfinished move (None: the whole store); bind a store that holds no records yet to
    ``embedder``. A store is bound by its records: a write that failed before any record was
    stored (an unreachable embedding server) binds it to nothing."""
    meta = store.meta()
    check_embedder(store, embedder, meta)
    stored_width = store.records_dimension()
    if stored_width is not None and stored_width != embedder.dimension:  # records of an unknown embedder
        raise FailedPreconditionError(
            f"The store holds {stored_width}-dimensional vectors; the embedder makes {embedder.dimension}",
            hint="Configure the embedder the store was built with, or re-embed everything with: openviking reindex",
            details={"store_dimension": stored_width, "configured_dimension": embedder.dimension},
        )
    if touching:
        from .writes import refuse_while_a_move_is_unfinished

        refuse_while_a_move_is_unfinished(store, touching, meta)
    if meta.get("embedder") != embedder.identity:
        store.set_meta({"embedder": embedder.identity, "dimension": str(embedder.dimension)})


def limits_of(config: Config, warn: Warn) -> IngestLimits:
    """How one write makes generated text: the ``semantic.*`` sizes, and the LLM (``vlm``)
    that writes directories' summaries when one is configured."""
    from .limits import IngestLimits

    writer = None
    if config.vlm.is_configured:
        from openviking.models.llm import make_chat

        from .llm_summary import DirectorySummaryWriter

        chat = make_chat(config.vlm, purpose="summary LLM")
        writer = DirectorySummaryWriter(chat, warn) if chat is not None else None
    return IngestLimits(config.abstract_max_chars, config.overview_max_chars, writer)


@contextlib.contextmanager
def writing(
    store: LanceStore,
    embedder: Embedder,
    limits: IngestLimits,
    warn: Warn,
    touching: Sequence[VikingURI | None] = (),
    *,
    guard: bool = True,
    vectors: Vectors = IF_FREE,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[Write]:
    """One write of ``store`` with ``embedder``: the checks at each lock (``guard``; a reindex
    changes the binding itself), then, once the write succeeded, the LLM's summaries and the
    vectors (``vectors``: when; ``progress`` counts the records embedded)."""
    from .llm_summary import write_llm_summaries

    checks = [functools.partial(_bind, store, embedder, touching)] if guard else []
    store.write_checks.extend(checks)
    write = Write(embedder, limits)
    try:
        if checks:
            with store.write_lock():
                pass  # the checks, before any work: a store bound elsewhere refuses before embedding
        yield write
    finally:
        for check in checks:
            store.write_checks.remove(check)
    if limits.summary_writer is not None:
        # The write is complete and consistent by now: whatever stops the LLM's part leaves
        # extractive summaries, which the next write asks the LLM for again.
        try:
            write_llm_summaries(store, embedder, limits)
        except OpenVikingError as exc:
            warn(f"The LLM's directory summaries were not all stored ({exc.message}); the next write asks again")
        except KeyboardInterrupt:
            warn(
                "Interrupted while the LLM wrote directory summaries: the write itself is complete, and the "
                "folders left keep their extractive summaries until the next write"
            )
    if vectors != LATER:
        write.embedding = embed_after(store, embedder, warn, wait=vectors == WAIT, progress=progress)


def embed_after(
    store: LanceStore,
    embedder: Embedder,
    warn: Warn,
    *,
    wait: bool,
    progress: Callable[[int, int], None] | None = None,
) -> Embedding:
    """A write's embedding phase (``vectors.embed_pending``). What was written is complete and
    found by its words whatever stops this: a Ctrl-C or an embedder that fails is said with
    what still waits and how to finish; a failure is raised again only when the caller waited."""
    from .vectors import Embedding, embed_pending, waiting

    def left(what: str) -> str:
        return (
            f"{what}: what was written is found by its words and summaries now; {waiting(store, embedder):,} "
            "record(s) wait for their vectors, which openviking index makes (so does the next write)"
        )

    try:
        return embed_pending(store, embedder, wait=wait, progress=progress)
    except KeyboardInterrupt:
        warn(left("Interrupted while embedding"))
        raise
    except OpenVikingError as exc:
        warn(left(f"The vectors were not made ({exc.message})"))
        if wait:
            raise
        return Embedding(pending=waiting(store, embedder))
