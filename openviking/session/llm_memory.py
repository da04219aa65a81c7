"""Memories taken from a conversation by an LLM, and its decision for each one against what is
remembered already: the prompts, and their answers read strictly.

Two calls per commit at most. The first gives the conversation, each message numbered with its
role and time, and asks for typed memories: a short statement that stands on its own, its
category, the day it tells of (relative days resolved from when they were said), and the
numbers of the messages it comes from. The second, made only when a memory has neighbours
among the stored ones, gives each with its nearest memories and asks: new, merge into one of
them (rewritten to hold both), or skip as known. An answer that does not parse, or names what
was not offered, is :class:`MemoryReplyError`: the caller keeps the archive and tries again at
the next commit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from openviking.models.llm import json_in_reply

from .extracting import Candidate, Said

__all__ = ["CATEGORIES", "Decision", "MemoryReplyError", "decision_prompt", "extraction_prompt",
           "read_decisions", "read_memories"]  # fmt: skip

# Upstream's categories of what is learned about a user and their work.
CATEGORIES = {
    "profile": "who the user is: work, home, background, what stays true for a long time",
    "preferences": "what the user likes, dislikes, wants, eats, uses, and how they like things done",
    "entities": "the people, pets, places, projects and things in the user's life, and facts about them",
    "events": "what happened to the user or is planned, on a day",
    "cases": "a problem the user had and how it was solved, worth knowing next time",
}
ACTIONS = ("new", "merge", "skip")


class MemoryReplyError(ValueError):
    """The LLM's answer cannot be used (it does not parse, or names what was not offered)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do with one memory: ``new``, ``merge`` into ``target`` as ``text``, or ``skip``."""

    action: str
    target: str | None = None
    text: str | None = None
    reason: str = ""


def extraction_prompt(conversation: Sequence[Said]) -> list[dict[str, str]]:
    """The messages asking for the memories of ``conversation``."""
    categories = "\n".join(f"- {name}: {about}" for name, about in CATEGORIES.items())
    system = (
        "You keep an assistant's long-term memory of its user. From a conversation, write down "
        "what is worth remembering about the user in later conversations: facts about them, their "
        "preferences, the people and things in their life, what happened to them and what they "
        "plan. Leave out small talk, what the assistant said of itself, and anything true only "
        "for this conversation.\n\n"
        f"Categories:\n{categories}\n\n"
        "Each memory is one short statement that makes sense on its own, written about the user "
        '("The user is vegetarian.", "The user moved to Lisbon in April 2023."). Give the day it '
        "tells of as YYYY-MM-DD: work out relative days (yesterday, last Friday, two weeks ago) "
        "from the time the message was said, never from today; use the day it was said when the "
        "statement names no other. List the numbers of the messages it comes from.\n\n"
        'Answer with JSON only: {"memories": [{"category": "...", "text": "...", "day": '
        '"YYYY-MM-DD", "messages": [1, 2]}]}. An empty list is a fine answer.'
    )
    lines = [
        f"[{number}] {message.role} at {message.at.strftime('%Y-%m-%d %H:%M %A')}: " + " ".join(message.text.split())
        for number, message in enumerate(conversation, start=1)
    ]
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)}]


def read_memories(reply: str, conversation: Sequence[Said]) -> list[Candidate]:
    """The memories an extraction answer lists.

    Raises:
        MemoryReplyError: no ``{"memories": [...]}`` in it, or an entry without its text, with
            an unknown category, a day that is no date, or a message number not offered.
    """
    found = json_in_reply(reply, lambda v: isinstance(v, dict) and isinstance(v.get("memories"), list))
    if found is None:
        raise MemoryReplyError(f"the answer holds no memories list: {_shown(reply)}")
    out = []
    for entry in found["memories"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str) or not entry["text"].strip():
            raise MemoryReplyError(f"a memory without its text: {_shown(json.dumps(entry))}")
        category = str(entry.get("category") or "").strip().lower()
        if category not in CATEGORIES:
            raise MemoryReplyError(f"a memory of an unknown category {category!r}")
        numbers = entry.get("messages") or []
        if not isinstance(numbers, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= len(conversation) for n in numbers
        ):
            raise MemoryReplyError(f"a memory names messages that were not given: {numbers!r}")
        sources = [conversation[n - 1] for n in numbers] or list(conversation[-1:])
        said_at = sources[0].at
        try:
            day = date.fromisoformat(str(entry.get("day") or said_at.date().isoformat()))
        except ValueError:
            raise MemoryReplyError(f"a memory's day is not a date: {entry.get('day')!r}") from None
        text = " ".join(entry["text"].split())
        out.append(
            Candidate(
                statement=text, category=category, topic="", day=day, precision="day", said_at=said_at,
                message_ids=[message.id for message in sources],
            )
        )  # fmt: skip
    return out


def decision_prompt(
    candidates: Sequence[Candidate], neighbours: Sequence[Sequence[tuple[str, str]]]
) -> list[dict[str, str]]:
    """The messages asking what to do with each candidate, given its nearest stored memories
    (``(uri, text)``)."""
    system = (
        "You keep an assistant's long-term memory of its user. New memories were found; each is "
        "shown with the stored memories nearest to it. For each new memory decide:\n"
        '- "new": it says something none of them says;\n'
        '- "merge": it is about the same thing as one of them: give that one\'s uri as "target" '
        'and, as "text", one statement that holds both (the newer wins where they disagree);\n'
        '- "skip": one of them says it already.\n'
        'Answer with JSON only: {"decisions": [{"memory": 1, "decision": "new|merge|skip", '
        '"target": "uri or null", "text": "only for merge", "reason": "a few words"}]}, one per new memory.'
    )
    parts = []
    for number, (candidate, near) in enumerate(zip(candidates, neighbours, strict=True), start=1):
        stored = "\n".join(f"  - {uri}: {' '.join(text.split())}" for uri, text in near) or "  (none)"
        parts.append(f"New memory {number} ({candidate.category}, {candidate.day}): {candidate.statement}\n{stored}")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def read_decisions(
    reply: str, candidates: Sequence[Candidate], neighbours: Sequence[Sequence[tuple[str, str]]]
) -> list[Decision]:
    """One decision per candidate, as the answer gives it.

    Raises:
        MemoryReplyError: no ``{"decisions": [...]}``, a decision missing or given twice, an
            unknown one, or a merge into a memory that was not offered, or without its text.
    """
    found = json_in_reply(reply, lambda v: isinstance(v, dict) and isinstance(v.get("decisions"), list))
    if found is None:
        raise MemoryReplyError(f"the answer holds no decisions list: {_shown(reply)}")
    decided: dict[int, Decision] = {}
    for entry in found["decisions"]:
        number = entry.get("memory") if isinstance(entry, dict) else None
        if not isinstance(number, int) or not 1 <= number <= len(candidates) or number in decided:
            raise MemoryReplyError(f"a decision for no memory offered, or for one twice: {_shown(json.dumps(entry))}")
        action = str(entry.get("decision") or "").strip().lower()
        if action not in ACTIONS:
            raise MemoryReplyError(f"an unknown decision {action!r}")
        target = entry.get("target") or None
        text = entry.get("text") if isinstance(entry.get("text"), str) else None
        offered = {uri for uri, _ in neighbours[number - 1]}
        if action == "merge" and (target not in offered or not (text or "").strip()):
            raise MemoryReplyError(f"a merge into {target!r}, which was not offered, or without its text")
        decided[number] = Decision(action, target if action == "merge" else None, text, str(entry.get("reason") or ""))
    if len(decided) != len(candidates):
        missing = sorted(set(range(1, len(candidates) + 1)) - set(decided))
        raise MemoryReplyError(f"no decision for memories {missing}")
    return [decided[number] for number in range(1, len(candidates) + 1)]


def _shown(text: str) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= 120 else flat[:117] + "..."
