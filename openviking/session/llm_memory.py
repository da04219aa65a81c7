"""Memories taken from a conversation by an LLM, and its decision for each one against what is
remembered already: the prompts, their JSON schemas, and their answers read leniently.

Two calls per commit at most. The first gives the conversation, each message numbered with its
role and time, and asks for typed memories (a short statement that stands on its own, its
category, the day it tells of, the numbers of the messages it comes from) and a summary of the
conversation. The second, made only when a memory has neighbours among the stored ones, gives
each with its nearest memories and asks: new, merge into one of them (rewritten to hold both),
supersede one (it is no longer true: kept as history), or skip as known.

Answers are read as small models write them (:func:`openviking.models.llm.json_items`): what
parses is kept, and every item that cannot be used is said in ``problems`` (no text, a
category or a day that is none, messages that were not given) rather than failing the answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from openviking.models.llm import json_items

from .extracting import Candidate, Said, content_stems

__all__ = ["ACTIONS", "CATEGORIES", "DECISIONS_SCHEMA", "Decision", "MEMORIES_SCHEMA", "Reading", "again_prompt",
           "decision_prompt", "extraction_prompt", "read_decisions", "read_memories"]  # fmt: skip

# Upstream's categories of what is learned about a user and their work.
CATEGORIES = {
    "profile": "who the user is: work, home, background, health, what stays true for a long time",
    "preferences": "what the user likes, dislikes, wants, eats, uses, and how they like things done",
    "entities": "the people, pets, places, projects and things in the user's life, and facts about them",
    "events": "what happened to the user or is planned, on a day",
    "cases": "a problem the user had and how it was solved, worth knowing next time",
}
ACTIONS = ("new", "merge", "supersede", "skip")

MEMORIES_SCHEMA: dict[str, Any] = {
    "name": "memories",
    "schema": {
        "type": "object",
        "properties": {
            "memories": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "category": {"type": "string", "enum": list(CATEGORIES)},
                        "text": {"type": "string"},
                        "day": {"type": "string"},
                        "messages": {"type": "array", "items": {"type": "integer"}},
                    },
                    "required": ["category", "text", "day", "messages"],
                    "additionalProperties": False,
                },
            },
            "summary": {"type": "string"},
        },
        "required": ["memories", "summary"],
        "additionalProperties": False,
    },
}
DECISIONS_SCHEMA: dict[str, Any] = {
    "name": "decisions",
    "schema": {
        "type": "object",
        "properties": {
            "decisions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "memory": {"type": "integer"},
                        "decision": {"type": "string", "enum": list(ACTIONS)},
                        "target": {"type": ["string", "null"]},
                        "text": {"type": ["string", "null"]},
                        "reason": {"type": "string"},
                    },
                    "required": ["memory", "decision", "target", "text", "reason"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["decisions"],
        "additionalProperties": False,
    },
}
_SUMMARY = re.compile(r'"summary"\s*:\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do with one memory: ``new``, ``merge`` into ``target`` as ``text``,
    ``supersede`` ``target`` (kept as history), or ``skip``."""

    action: str
    target: str | None = None
    text: str | None = None
    reason: str = ""


@dataclass(slots=True)
class Reading:
    """What an extraction answer gave: the memories (a category of ``""`` is for the caller to
    decide), the summary, what could not be used, and whether the list was read to its end."""

    candidates: list[Candidate] = field(default_factory=list)
    summary: str = ""
    problems: list[str] = field(default_factory=list)
    whole: bool = False


def extraction_prompt(conversation: Sequence[Said]) -> list[dict[str, str]]:
    """The messages asking for the memories of ``conversation``, and its summary."""
    categories = "\n".join(f"- {name}: {about}" for name, about in CATEGORIES.items())
    system = (
        "You keep an assistant's long-term memory of its user. From a conversation, write down "
        "what is worth remembering about the user in later conversations: facts about them, their "
        "preferences, the people and things in their life, what happened to them and what they "
        "plan, including what they mention in passing. Leave out small talk, what the assistant "
        "said of itself, and anything true only for this conversation.\n\n"
        f"Categories:\n{categories}\n\n"
        "Each memory is one short statement that makes sense on its own, written about the user "
        '("The user is vegetarian.", "The user moved to Lisbon in April 2023."). Give the day it '
        "tells of as YYYY-MM-DD: work out relative days (yesterday, last Friday, two weeks ago) "
        "from the time the message was said, never from today; use the day it was said when the "
        "statement names no other. List the numbers of the messages it comes from. Then write a "
        "summary of the conversation in two or three sentences.\n\n"
        'Answer with JSON only: {"memories": [{"category": "...", "text": "...", "day": '
        '"YYYY-MM-DD", "messages": [1, 2]}], "summary": "..."}. An empty list is a fine answer.'
    )
    lines = [
        f"[{number}] {message.role} at {message.at.strftime('%Y-%m-%d %H:%M %A')}: " + " ".join(message.text.split())
        for number, message in enumerate(conversation, start=1)
    ]
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)}]


def again_prompt(messages: list[dict[str, str]], reply: str, problems: Sequence[str]) -> list[dict[str, str]]:
    """``messages`` asked again, with the answer that could not all be read and why."""
    said = "; ".join(problems)
    return [
        *messages,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": f"Part of that answer could not be read: {said}. Answer again, with the "
                                    "whole JSON object only: no prose, no code fence, no trailing commas."},
    ]  # fmt: skip


def read_memories(reply: str, conversation: Sequence[Said]) -> Reading:
    """The memories an extraction answer lists, as many as can be used; each that cannot be is
    said in ``problems``."""
    found = json_items(reply, "memories")
    reading = Reading(problems=list(found.problems), whole=found.whole)
    summary = _SUMMARY.search(reply)
    if summary:
        reading.summary = " ".join(_unescaped(summary.group(1)).split())
    for entry in found.items:
        text = entry.get("text") if isinstance(entry, dict) else None
        if not isinstance(text, str) or not text.strip():
            reading.problems.append(f"a memory without its text: {_shown(str(entry))}")
            continue
        text = " ".join(text.split())
        category = str(entry.get("category") or "").strip().lower()
        if category not in CATEGORIES:
            reading.problems.append(f"{_shown(text)!r} has no category of ours ({category!r}): the classifier decides")
            category = ""
        numbers = entry.get("messages") if isinstance(entry.get("messages"), list) else []
        given = [n for n in numbers if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= len(conversation)]
        if len(given) != len(numbers):
            reading.problems.append(f"{_shown(text)!r} names messages that were not given: {numbers!r}")
        sources = [conversation[n - 1] for n in given] or [_nearest_message(text, conversation)]
        said_at = sources[0].at
        try:
            day = date.fromisoformat(str(entry.get("day") or said_at.date().isoformat()))
        except ValueError:
            reading.problems.append(f"{_shown(text)!r} has a day that is no date ({entry.get('day')!r}): the day "
                                    "it was said is kept")  # fmt: skip
            day = said_at.date()
        reading.candidates.append(
            Candidate(statement=text, category=category, topic="", day=day, precision="day", said_at=said_at,
                      message_ids=[message.id for message in sources], extraction="llm")
        )  # fmt: skip
    return reading


def decision_prompt(
    candidates: Sequence[Candidate], neighbours: Sequence[Sequence[tuple[str, str]]]
) -> list[dict[str, str]]:
    """The messages asking what to do with each candidate, given its nearest stored memories
    (``(uri, text)``)."""
    system = (
        "You keep an assistant's long-term memory of its user. New memories were found; each is "
        "shown with the stored memories nearest to it. For each new memory decide:\n"
        '- "new": it says something none of them says;\n'
        '- "merge": it is about the same thing as one of them and both stay true: give that one\'s '
        'uri as "target" and, as "text", one statement that holds both;\n'
        '- "supersede": it makes one of them no longer true (the user moved, switched, stopped): '
        'give that one\'s uri as "target"; it is kept as history;\n'
        '- "skip": one of them says it already.\n'
        'Answer with JSON only: {"decisions": [{"memory": 1, "decision": "new|merge|supersede|skip", '
        '"target": "uri or null", "text": "only for merge, else null", "reason": "a few words"}]}, '
        "one per new memory."
    )
    parts = []
    for number, (candidate, near) in enumerate(zip(candidates, neighbours, strict=True), start=1):
        stored = "\n".join(f"  - {uri}: {' '.join(text.split())}" for uri, text in near) or "  (none)"
        parts.append(f"New memory {number} ({candidate.category}, {candidate.day}): {candidate.statement}\n{stored}")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def read_decisions(
    reply: str, candidates: Sequence[Candidate], neighbours: Sequence[Sequence[tuple[str, str]]]
) -> tuple[list[Decision], list[str]]:
    """One decision per candidate, as the answer gives it, and what could not be used: a memory
    it decides nothing for (or a decision that names what was not offered) is new."""
    found = json_items(reply, "decisions")
    problems = list(found.problems)
    decided: dict[int, Decision] = {}
    for entry in found.items:
        number = entry.get("memory") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or not isinstance(number, int) or not 1 <= number <= len(candidates):
            problems.append(f"a decision for no memory offered: {_shown(str(entry))}")
            continue
        if number in decided:
            problems.append(f"memory {number} decided twice: the first is kept")
            continue
        action = str(entry.get("decision") or "").strip().lower()
        target = entry.get("target") or None
        text = entry.get("text") if isinstance(entry.get("text"), str) else None
        offered = {uri for uri, _ in neighbours[number - 1]}
        if action not in ACTIONS:
            problems.append(f"memory {number}: an unknown decision {action!r}, kept as new")
            action = "new"
        elif action in ("merge", "supersede") and target not in offered:
            problems.append(f"memory {number}: a {action} into {target!r}, which was not offered, kept as new")
            action = "new"
        elif action == "merge" and not (text or "").strip():
            problems.append(f"memory {number}: a merge without its text, kept as new")
            action = "new"
        decided[number] = Decision(action, target if action in ("merge", "supersede") else None, text,
                                   str(entry.get("reason") or ""))  # fmt: skip
    missing = [number for number in range(1, len(candidates) + 1) if number not in decided]
    if missing:
        problems.append(f"no decision for memories {missing}: kept as new")
    return [decided.get(number, Decision("new")) for number in range(1, len(candidates) + 1)], problems


def _nearest_message(text: str, conversation: Sequence[Said]) -> Said:
    """The user's message sharing the most words with ``text`` (the last one on a tie)."""
    wanted = content_stems(text)
    users = [message for message in conversation if message.role == "user"] or list(conversation)
    return max(reversed(users), key=lambda message: len(wanted & content_stems(message.text)))


def _unescaped(text: str) -> str:
    import json

    try:
        value = json.loads(f'"{text}"')
    except ValueError:
        return text
    return value if isinstance(value, str) else text


def _shown(text: str) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= 80 else flat[:77] + "..."
