"""Memories taken from a conversation without an LLM: every statement in which the user tells
something about themselves, their people, work, tools, health, tastes, habits or plans, told
of the user in a short sentence with the day it tells of.

Only the user's own messages are read, sentence by sentence, each cut into its clauses at
", and", ", but", ", so", ";" and dashes. A clause is a statement about the user when it names
the user (I, my, me, we, our...) anywhere, says something (not "I think so", not a question,
two words at least besides the user and the little words) and is not about the assistant.
What comes before it ("Quick background before we start:", "By the way,", "Heads up:") and
after it ("so if you ever suggest first aid, keep that in mind", "in case the commands
differ") is left out. A standing instruction to the assistant about the user ("When you
write SQL for me, always use uppercase keywords") is kept as a preference, "you" being the
assistant. Each statement is reworded (:mod:`.rewording`): "I'm allergic to penicillin"
becomes "The user is allergic to penicillin", "last week" the week it was.

Its topic and category (:mod:`.topics`) are told by the bundled model from its meaning; a
statement that tells of a day other than the one it was said on ("two weeks ago I ran my first
half marathon") is an event whatever its topic. :func:`change` tells what a statement
says is no longer true ("we moved from Berlin to Lisbon", "I don't drink coffee anymore").

What only an LLM does: statements spread over several turns, facts the user implies rather than
says, what the assistant learned about the user, and who "it" or "that" is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from .rewording import Told, reworded, shown_day, third_person_verb, told_day

__all__ = [
    "Candidate",
    "Change",
    "Said",
    "Statement",
    "change",
    "content_stems",
    "extract",
    "memory_statement",
    "memory_text",
    "statements",
]

MAX_WORDS = 60
MIN_CONTENT_WORDS = 2


@dataclass(frozen=True, slots=True)
class Said:
    """One message of the conversation: who said it, what, and when."""

    id: str
    role: str
    text: str
    at: datetime


@dataclass(frozen=True, slots=True)
class Statement:
    """A statement about the user: the user's own words, the same told of the user, the day it
    tells of, and the message it is in."""

    words: str
    about: str
    told: Told
    said: Said


@dataclass(slots=True)
class Candidate:
    """A memory to be: the statement, its category and topic, the day it tells of (with the
    precision the statement gives it: ``day``, ``week``, ``month``, ``season`` or ``year``),
    and the messages it came from; ``extraction`` says who found it (``extractive``, ``llm``)."""

    statement: str
    category: str
    topic: str
    day: date
    precision: str
    said_at: datetime
    message_ids: list[str] = field(default_factory=list)
    extraction: str = "extractive"

    @property
    def text(self) -> str:
        return memory_text(self)


# One category for a batch of statements each: what :mod:`.topics` decides, given to extract.
Classify = Callable[[Sequence[str]], Sequence[tuple[str, str]]]

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
# Where one statement ends and the next begins inside a sentence.
_CLAUSE = re.compile(r"\s*(?:;|:\s|\s[-–—]\s|,\s*(?=(?:and|but|so|which|though|although|in case)\b))\s*", re.I)
# "..., and I moved", "... but my wife": a second statement about the user in the same clause.
_JOIN = re.compile(r"\s+(?:and|but|so|also)\s+(?=(?:I|I'm|I've|I'd|I'll|my|we|we're|we've|our)\b)", re.I)
_LEAD_IN = re.compile(
    r"^(?:(?:oh|ah|ha|haha|hah|lol|well|also|and|but|so|plus|anyway|anyways|actually|honestly|btw|fyi|ok|okay|"
    r"yeah|yes|yep|no|nope|hey|hi|hello|wow|ugh|phew|hmm|thanks|thank god|great|perfect|nice|cool|right|sure|"
    r"fine|good|sorry(?: (?:for|about) [^,.!]{1,40})?|by the way|just so you know|for context|for the record|"
    r"fun fact(?: about me)?|side note|quick background|heads up|one more thing|before i forget|as you know|"
    r"to be honest|in fact|here you go|here it is|before we (?:start|begin|go on|continue))"
    r"\b[\s,!.:-]*)+",
    re.IGNORECASE,
)
_CONNECTOR = re.compile(r"^(?:and|but|so|also|then|though|although|plus)\b\s*,?\s*", re.IGNORECASE)
_IS_A = re.compile(r"^(?:I'm|I am|we're|we are)\s+(?:a\s+|an\s+)?[\w-]+[.!]?$", re.I)  # "I'm vegetarian."
_ABOUT_YOU = re.compile(r"\b(?:you|your|yours|you're|you've|you'll|you'd|yourself)\b", re.IGNORECASE)
_USER = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself|we|we're|we've|we'll|we'd|us|our|ours)\b", re.I)
# A hedge said after a statement ("Filter, I think."), or a lead-in of a few words before a colon.
_HEDGE = re.compile(r",?\s*\b(?:I|we)\s+(?:think|guess|suppose|believe|mean|reckon)\s*[.!]*$", re.I)
_BEFORE_COLON = re.compile(r"^[^:]{1,60}:\s+(?=\S)")
# What says nothing about the user: agreeing, hedging, thanking, feeling about the talk itself.
_EMPTY = re.compile(
    r"^(?:I|we)\s*(?:'m|am|'d|would|do|don't|really|just|totally|kind of|also|too)?\s*"
    r"(?:think|guess|see|know|mean|agree|suppose|hope|understand|wonder|bet|believe|feel like|get it|"
    r"appreciate|am glad|'m glad|glad|am sorry|'m sorry|sorry|thank|can't wait|cannot wait|love that|"
    r"like that|love this|like this|love it|like it|hear you|got it|see what|will do|'ll do|'ll try|will try|"
    r"need help|want help|have a question|was wondering|'m wondering|am wondering)\b",
    re.IGNORECASE,
)
# A standing instruction to the assistant that says how the user wants things.
_INSTRUCTION = re.compile(
    r"\b(?:always|never|from now on|in future|in the future|whenever|every time|please (?:always|never|use|keep|"
    r"write|give|answer|reply|avoid))\b",
    re.IGNORECASE,
)
_LITTLE = frozenset(
    "a an the and or but so to of in on at for with from by as is are was were be been am it its it's this that "
    "these those there here i i'm i've i'd i'll me my mine myself we we're we've we'll we'd us our ours "
    "he she him her his hers they them their it's that's already still now later soon today minute second "
    "one thing things stuff haha lol "
    "very really so just too also quite pretty such much many lot lots bit kind sort of not no yes oh well "
    "have has had do does did get got go going gonna will would can could should might may must about "
    "all some any more most what when where how why who which if then than".split()
)
# What a statement says is no longer so: "from Berlin (to Lisbon)", "quit the cafe", "doesn't
# drink coffee anymore", "used to smoke", "Ana and I broke up".
_FROM = re.compile(
    r"\b(?:moved|switched|changed|converted|migrated|went|relocated|upgraded|downgraded)\b[^.;]*?"
    r"\bfrom\s+(?:the\s+|their\s+|a\s+|an\s+)?(?P<what>[^,.;]{1,40}?)\s+(?:to|for|into|over to)\b",
    re.I,
)
_ENDED = re.compile(
    r"\b(?:quit|left|stopped|gave up|sold|broke up with|divorced|no longer \w+|used to \w+)\s+"
    r"(?:the\s+|their\s+|his\s+|her\s+|a\s+|an\s+|at\s+|with\s+)?(?P<what>[^,.;]{1,40})",
    re.I,
)
_NOT_ANYMORE = re.compile(
    r"\b(?:doesn't|don't|does not|do not|isn't|is not|aren't|are not|can't|cannot|won't)\s+"
    r"(?:\w+\s+)?(?P<what>[^,.;]{1,60}?)\s+(?:any ?more|these days)\b",
    re.I,
)
_CLAUSE_END = re.compile(r"\s+(?:and|but|because|so|since|as|after|when|while|to|for|in|on|at)\b.*$", re.I)
_NEGATED = re.compile(r"\b(?:not|never|won't|don't|doesn't|didn't|can't|cannot|wouldn't)\s+(?:\w+\s+)?$", re.I)
_BROKE_UP = re.compile(r"\b(?P<what>\w+) and the user (?:broke up|split up|separated|divorced)\b", re.I)
_NOW = re.compile(r"\bnow\b(?![^.;]*\balso\b)|\bthese days\b", re.I)
_TEMPORARY = re.compile(
    r"\bfor (?:a|the|one|two|three|a few) (?:day|days|night|nights|weekend|week|weeks|holiday|holidays)\b", re.I
)


@dataclass(frozen=True, slots=True)
class Change:
    """What a statement says is no longer so: the stems of its words, or none when it only
    says "now" ("I'm vegan now"), which only the nearest memory of its topic can be."""

    stems: frozenset[str]


_THE_USER = frozenset(("user", "user's", "users", "their", "they", "them", "themselves", "theirs", "others"))


def statements(conversation: Sequence[Said]) -> list[Statement]:
    """Every statement about the user in the user's messages, in order, each once."""
    found: list[Statement] = []
    seen: set[str] = set()
    for message in conversation:
        if message.role != "user":
            continue
        for words in _statements(message.text):
            key = " ".join(words.lower().split())
            if key in seen:
                continue
            seen.add(key)
            told = told_day(words, message.at)
            found.append(Statement(words, reworded(words, told), told, message))
    return found


def extract(conversation: Sequence[Said], classify: Classify) -> list[Candidate]:
    """The memories the user's messages hold, in the order they were said; ``classify`` gives
    each statement's (topic, category) from its meaning."""
    found = statements(conversation)
    kinds = classify([statement.about for statement in found]) if found else []
    out = []
    for statement, (topic, category) in zip(found, kinds, strict=True):
        if statement.told.span is not None:
            category = "events"  # it tells of a day: what happened, or is planned, then
        out.append(
            Candidate(
                statement=statement.about,
                category=category,
                topic=topic,
                day=statement.told.day,
                precision=statement.told.precision,
                said_at=statement.said.at,
                message_ids=[statement.said.id],
            )
        )
    return out


def change(statement: str) -> Change | None:
    """What ``statement`` (told of the user) says is no longer so, or None when it changes
    nothing: a move, a switch, a habit or a job given up, something not done any more."""
    if _TEMPORARY.search(statement):
        return None  # "left Utrecht for a weekend" changes nothing that lasts
    stems: set[str] = set()
    for pattern in (_FROM, _ENDED, _NOT_ANYMORE, _BROKE_UP):
        for found in pattern.finditer(statement):
            if pattern is _ENDED and _NEGATED.search(statement[: found.start()]):
                continue  # "won't quit on their dreams" ends nothing
            stems |= content_stems(_CLAUSE_END.sub("", found.group("what")))
    if stems:
        return Change(frozenset(stems))
    return Change(frozenset()) if _NOW.search(statement) else None


def content_stems(text: str) -> set[str]:
    """The stems of the words of ``text`` that say something (not the user, not the little words)."""
    words = re.findall(r"[\w'’+#.-]+", text.lower())
    return {_stem(w.strip(".")) for w in words if w.strip(".") and w.strip(".") not in _LITTLE and w not in _THE_USER}


def _stem(word: str) -> str:
    for suffix in ("ing", "ers", "er", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def memory_text(candidate: Candidate) -> str:
    """The memory as it is kept: the statement, and the day it was said (and the day it tells
    of, when another: ``planned for`` one after it)."""
    said = candidate.said_at.astimezone(UTC).date() if candidate.said_at.tzinfo else candidate.said_at.date()
    when = f"said on {said.isoformat()}"
    day = candidate.day.isoformat() if candidate.precision == "day" else shown_day(candidate.day, candidate.precision)
    if candidate.day > said:
        when += f", planned for {day}"
    elif (candidate.day, candidate.precision) != (said, "day"):
        when += f", of {day}"
    return f"{candidate.statement}\n\n({when})\n"


def memory_statement(text: str) -> str:
    """What a memory says now: its first paragraph, without the line that dates it nor the
    history kept below it, which two memories are compared by."""
    kept = []
    for part in text.strip().split("\n\n"):
        if part.startswith(("(said on ", "Before, ")):
            break
        kept.append(part)
    return " ".join(" ".join(kept).split())


def _statements(text: str) -> list[str]:
    out = []
    for sentence in _SENTENCE.split(text):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?"):
            continue
        lead = _BEFORE_COLON.match(sentence)
        if lead and len(lead.group(0).split()) <= 6 and _USER.search(sentence[lead.end() :]):
            sentence = sentence[lead.end() :]  # "Quick background before we start: ..."
        instruction = _instruction(sentence)
        if instruction:
            out.append(instruction)
            continue
        for clause in _joined(_CLAUSE.split(sentence)):
            statement = _cleaned(clause)
            if statement and _about_the_user(statement):
                out.append(statement)
    return out


def _joined(clauses: list[str]) -> list[str]:
    """Each clause cut where a second statement about the user begins, unless what comes before
    is a few words without a subject of its own ("My wife and I moved" is one statement)."""
    out = []
    for clause in clauses:
        start = 0
        for found in _JOIN.finditer(clause):
            before = clause[start : found.start()]
            if len(before.split()) >= 4 or re.search(r"\b(?:I|I'm|I've|I'd|I'll|we|we're|we've)\b", before, re.I):
                out.append(clause[start : found.start()])
                start = found.end()
        out.append(clause[start:])
    return out


def _instruction(sentence: str) -> str:
    """A standing instruction about the user, the assistant named: or "" when it is none."""
    if not (_ABOUT_YOU.search(sentence) or sentence.lower().startswith("please")) or not _INSTRUCTION.search(sentence):
        return ""
    if not _USER.search(sentence):
        return ""
    text = _cleaned(_LEAD_IN.sub("", sentence))
    text = re.sub(r"\byour\b", "the assistant's", text, flags=re.I)
    text = re.sub(r"\byou(?:'re| are)\b", "the assistant is", text, flags=re.I)
    text = re.sub(r"\byou\s+(\w+)", lambda m: "the assistant " + third_person_verb(m.group(1)), text, flags=re.I)
    text = re.sub(r"\byou\b", "the assistant", text, flags=re.I)
    text = re.sub(r"^please\s+", "", text, flags=re.I)
    return "The user asks: " + text[:1].lower() + text[1:]


def _cleaned(clause: str) -> str:
    text = " ".join(clause.split()).strip(" ,;:-–—")
    text = _LEAD_IN.sub("", text)
    text = _CONNECTOR.sub("", text).strip(" ,;:-–—")
    text = _HEDGE.sub("", text).strip(" ,;:-–—")
    if not text:
        return ""
    text = text[0].upper() + text[1:] if not text.startswith(("i ", "i'")) else "I" + text[1:]
    return text if text[-1] in ".!?。！？" else text + "."


def _about_the_user(statement: str) -> bool:
    if statement.startswith("The user asks: "):
        return True
    words = statement.split()
    if len(words) > MAX_WORDS or statement.endswith("?"):
        return False
    if not _USER.search(statement) or _ABOUT_YOU.search(statement) or _EMPTY.match(statement):
        return False
    if re.match(r"^(?:which|who|that|because|if|when|as)\b", statement, re.I):
        return False  # a clause that leans on the one before it
    content = [w for w in re.findall(r"[\w'’-]+", statement.lower()) if w not in _LITTLE and not w.isdigit()]
    return len(content) >= MIN_CONTENT_WORDS or (len(content) == 1 and bool(_IS_A.match(statement)))
