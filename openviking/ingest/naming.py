"""Names of new resources, sanitised as upstream does for generated URI segments."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["resource_name", "sanitize_segment"]

# Word characters, '-', '.', and the scripts upstream keeps (Latin-1 and Extended, Cyrillic,
# Arabic, CJK, kana, Hangul); everything else becomes '_'.
_UNSAFE = re.compile(
    r"[^\w\-.\u00c0-\u024f\u0400-\u04ff\u0600-\u06ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]"
)


def sanitize_segment(name: str, max_length: int = 50) -> str:
    """A URI segment made from a local name: unsafe characters to ``_``, trimmed, 50 chars."""
    cleaned = _UNSAFE.sub("_", name)
    cleaned = re.sub(r"_+", "_", cleaned).strip("_.")
    return cleaned[:max_length] or "unnamed"


def resource_name(source: Path) -> str:
    """The default name of a resource added from ``source`` (a file keeps its suffix)."""
    return sanitize_segment(source.name or source.resolve().name)
