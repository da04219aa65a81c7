"""Names of new resources, sanitised as upstream does for generated URI segments."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["KEPT_CHARS", "SKILL_FILES", "resource_name", "sanitize_segment"]

# The file that makes a folder a skill, in the spellings accepted.
SKILL_FILES = ("SKILL.md", "skill.md", "Skill.md")

# Word characters, '-', '.', and the scripts upstream keeps (Latin-1 and Extended, Cyrillic,
# Arabic, CJK, kana, Hangul); everything else becomes '_'.
_UNSAFE = re.compile(
    r"[^\w\-.\u00c0-\u024f\u0400-\u04ff\u0600-\u06ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]"
)


# What sanitize_segment keeps, for the warning given when it had to change a name.
KEPT_CHARS = "letters, digits, '-', '_' and '.', up to 50 characters"


def sanitize_segment(name: str, max_length: int = 50) -> str:
    """A URI segment made from a local name: unsafe characters to ``_``, trimmed, 50 chars."""
    cleaned = _UNSAFE.sub("_", name)
    cleaned = re.sub(r"_+", "_", cleaned).strip("_.")
    return cleaned[:max_length] or "unnamed"


def resource_name(source: Path) -> str:
    """The default name of a resource added from ``source`` (a file keeps its suffix)."""
    from openviking.system.ostext import utf8_text

    return sanitize_segment(utf8_text(source.name or source.resolve().name))


def memory_name(text: str) -> str:
    """``first-words-<hash>.md``: readable, and the same text always lands on the same name."""
    import hashlib

    words = "-".join(text.split()[:6])
    stem = sanitize_segment(words, max_length=40) if words else "memory"
    return f"{stem}-{hashlib.sha1(text.strip().encode('utf-8')).hexdigest()[:8]}.md"


def skill_name(source: Path) -> str:
    """A skill's name: ``name:`` in its SKILL.md front matter, else the folder or file name."""
    skill_file = source
    if source.is_dir():
        for candidate in SKILL_FILES:
            if (source / candidate).is_file():
                skill_file = source / candidate
                break
    if skill_file.is_file():
        head = skill_file.read_text(encoding="utf-8", errors="replace")[:4000]
        match = re.match(r"\A---\s*\n(.*?)\n---", head, re.S)
        if match:
            name = re.search(r"^name:\s*['\"]?(.+?)['\"]?\s*$", match.group(1), re.M)
            if name:
                return sanitize_segment(name.group(1))
    if source.is_dir():
        return sanitize_segment(source.name)
    stem = source.stem
    return sanitize_segment(source.parent.name if stem.lower() == "skill" else stem)
