"""How a write makes generated text: the sizes of abstracts and overviews, and who writes
directories' summaries.

Every step of a write that generates text (files' summaries, directories' L0/L1, the LLM's
pass over directories) reads the same ``IngestLimits``, built once a write from the config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["DEFAULT_LIMITS", "IngestLimits", "SummaryQueue"]


class SummaryQueue(Protocol):
    """Where a write leaves the directories whose summaries an LLM writes after it
    (``llm_summary.DirectorySummaryWriter``)."""

    pending: set[str]


@dataclass(frozen=True, slots=True)
class IngestLimits:
    """How generated text is made: its sizes (``semantic.*`` in the config) and, with an LLM
    configured (``vlm``), the writer of directories' summaries."""

    abstract_max_chars: int = 256
    overview_max_chars: int = 4000
    summary_writer: SummaryQueue | None = field(default=None, compare=False)


DEFAULT_LIMITS = IngestLimits()
