"""Message parts, as upstream's SDK examples use them (``from openviking.message import TextPart``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["TextPart"]


@dataclass(frozen=True, slots=True)
class TextPart:
    """A piece of text in a session message."""

    text: str
    type: str = "text"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "text": self.text}
