"""How a write makes generated text: the sizes of abstracts and overviews, and who writes
directories' summaries.

Every step of a write that generates text (files' summaries, directories' L0/L1, the LLM's
pass over directories) reads the same ``IngestLimits``, built once a write from the config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .llm_summary import DirectorySummaryWriter

__all__ = ["DEFAULT_LIMITS", "IngestLimits"]


@dataclass(frozen=True, slots=True)
class IngestLimits:
    """How generated text is made: its sizes (``semantic.*`` in the config) and, with an LLM
    configured (``vlm``), the writer of directories' summaries."""

    abstract_max_chars: int = 256
    overview_max_chars: int = 4000
    summary_writer: DirectorySummaryWriter | None = field(default=None, compare=False)


DEFAULT_LIMITS = IngestLimits()
