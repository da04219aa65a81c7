"""Transcripts: telling a conversation from other text, and cutting it at its turns.

A transcript is text whose lines are mostly turns, ``Speaker: what they said`` (maybe after a
bracketed id or a time, ``[D1:3] Caroline: ...``, ``**User:** ...``, ``- Bob: ...``), with at
least two speakers who speak more than once. What comes before the first turn (its heading,
the date of the conversation) is its preamble, and heads every chunk: a chunk from the middle
of a session still says who talks and when.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

__all__ = ["Turn", "dialogue_turns", "embedded_turns", "preamble_heading"]

# A speaker's name: up to four words, starting with a letter.
_TURN = re.compile(
    r"^(?:[-*>]\s+)?"  # a list item or a quote; not indented (a parameter, a setting)
    r"(?:\[[^\]\n]{1,40}\]\s*|\(?\d{1,2}:\d{2}(?::\d{2})?(?:\s?[AaPp][Mm])?\)?\s+)?"  # an id or a time
    r"(?:\*\*|__)?(?P<speaker>[^\W\d_][\w.'-]*(?: [\w.'-]+){0,3}?)(?:\*\*|__)?\s*:(?:\*\*|__)?\s+\S"
)
_HEADER_NAME = re.compile(r"^[A-Z][a-z]*(?:-[A-Za-z][a-z]*)+$")  # Content-Type, Requires-Dist
_ID_PREFIX = re.compile(r"^\s*(?:\[[^\]\n]{1,40}\]\s*)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
MIN_TURNS = 4
TURN_SHARE = 0.6  # of the non-blank lines after the preamble
# What people say runs longer than a header's or a setting's value (``To: bob@example.com``,
# ``name: x``: the median turn), speakers take turns (a package's ``Classifier:`` lines do not),
# and a conversation has fewer speakers than an e-mail's headers have names.
MIN_SAID_CHARS = 20
MIN_CHANGES = 1 / 3


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn: its 0-based first and last line, and who speaks."""

    first: int
    last: int
    speaker: str


def dialogue_turns(lines: list[str]) -> list[Turn]:
    """The turns of ``lines`` when they are a transcript, else ``[]``.

    A line that starts no turn belongs to the turn above it (a turn of several lines); lines
    inside a code fence never start one.
    """
    starts: list[tuple[int, str]] = []
    said: list[int] = []
    in_fence = False
    for number, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else _TURN.match(line)
        if match:
            starts.append((number, match.group("speaker").strip()))
            said.append(len(line) - match.end("speaker"))
    if len(starts) < MIN_TURNS or sorted(said)[len(said) // 2] < MIN_SAID_CHARS:
        return []
    spoken = Counter(speaker for _, speaker in starts)
    if sum(1 for count in spoken.values() if count >= 2) < 2 or len(spoken) > 1 + len(starts) // 3:
        return []
    if sum(1 for name in spoken if _HEADER_NAME.match(name)) * 4 >= len(spoken):
        return []  # an e-mail's or a package's headers
    changes = sum(a[1] != b[1] for a, b in zip(starts, starts[1:], strict=False))
    if changes < MIN_CHANGES * (len(starts) - 1):
        return []
    body = [line for line in lines[starts[0][0] :] if line.strip()]
    if len(starts) < TURN_SHARE * len(body):
        return []
    turns = []
    for index, (first, speaker) in enumerate(starts):
        end = starts[index + 1][0] - 1 if index + 1 < len(starts) else len(lines) - 1
        while end > first and not lines[end].strip():
            end -= 1
        turns.append(Turn(first, end, speaker))
    return turns


def preamble_heading(lines: list[str]) -> str:
    """What the lines before the first turn say, as one heading: ``Title > 8 May, 2023``."""
    parts = []
    for line in lines:
        text = line.strip()
        if not text or _FENCE.match(text) or text in ("---", "***"):
            continue
        heading = _HEADING.match(text)
        parts.append((heading.group(1) if heading else text).strip())
    return " > ".join(parts)[:200]


def embedded_turns(text: str) -> str:
    """The turns as the model reads them: without the ids in front (``[D1:3]``), which only
    cost tokens."""
    return "\n".join(_ID_PREFIX.sub("", line) for line in text.split("\n"))
