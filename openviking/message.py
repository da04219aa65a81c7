"""Message parts, as the brief's SDK examples use them (``from openviking.message import TextPart``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["TextPart", "text_of"]


@dataclass(frozen=True, slots=True)
class TextPart:
    """A piece of text in a session message."""

    text: str
    type: str = "text"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "text": self.text}


def text_of(content: str | TextPart | list[Any] | tuple[Any, ...]) -> str:
    """The text of a message given as a string, a part, or a list of parts/strings/dicts."""
    if isinstance(content, str):
        return content
    if isinstance(content, TextPart):
        return content.text
    pieces: list[str] = []
    for part in content:
        if isinstance(part, str):
            pieces.append(part)
        elif isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            pieces.append(part["text"])
    return "\n".join(pieces)
