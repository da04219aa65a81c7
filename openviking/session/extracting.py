"""Memories taken from a conversation without an LLM: what the user says of themselves, kept in
their own words, with the day it tells of.

Only the user's own messages are read, sentence by sentence, and a sentence that joins two
statements about the user ("I'm vegetarian and I moved to Lisbon last month") is cut in two.
A statement is kept when it is about the user (it starts with I, I'm, my, we...), says
something (not "I think so", not a question, nothing about "you"), and is short enough to be
one fact. Each gets:

* a **category** in upstream's names: ``preferences`` (likes, dislikes, diet), ``events``
  (what happened or is planned, with a day), ``entities`` (the user's people, pets, things),
  ``profile`` (who the user is: work, home, origin, the rest);
* a **topic** heading from a small lexicon ("Where the user lives", "What the user eats"), so
  that a question in other words ("where does the user live" for "I moved to Lisbon") finds it;
* the **day it tells of**: the message's day, moved by what the statement says ("yesterday",
  "last Friday", "two weeks ago", "last month", "next year", "on 9 June").

What only an LLM does: statements spread over several turns, facts the user implies rather than
says, what the assistant learned about the user, and rewriting a fact in other words.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from openviking.dates import query_periods

__all__ = ["Candidate", "Said", "extract", "memory_statement", "memory_text", "told_day"]

MAX_WORDS = 60
MIN_WORDS = 2


@dataclass(frozen=True, slots=True)
class Said:
    """One message of the conversation: who said it, what, and when."""

    id: str
    role: str
    text: str
    at: datetime


@dataclass(slots=True)
class Candidate:
    """A memory to be: the statement, its category and topic, the day it tells of (with the
    precision the statement gives it: ``day``, ``month`` or ``year``), and the messages it
    came from."""

    statement: str
    category: str
    topic: str
    day: date
    precision: str
    said_at: datetime
    message_ids: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return memory_text(self)


_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_JOIN = re.compile(
    r"\s*(?:,|;)?\s+(?:and|but|so|also)\s+(?=(?:I|I'm|I've|I'd|I'll|I am|my|we|we're|we've|our)\b)"
    r"|\s*;\s*(?=(?:I|I'm|I've|I'd|I'll|my|we|our)\b)",
    re.IGNORECASE,
)
_ABOUT_SELF = re.compile(
    r"^(?:(?:oh|well|also|and|but|so|actually|honestly|yeah|yes|no|anyway|btw|by the way|ok|okay|recently|"
    r"lately|yesterday|today|tonight|tomorrow|(?:last|this|next|on|in|every) \w+(?: \d{4})?|"
    r"(?:a|two|three|a few|several) \w+ ago),?\s+)*"
    r"(?P<subject>I|I'm|I am|I've|I'd|I'll|I was|My|We|We're|We've|We'll|Our|Me and)\b",
    re.IGNORECASE,
)
# What says nothing about the user: agreeing, hedging, thanking, feeling about the talk itself.
_EMPTY = re.compile(
    r"^(?:I|we)\s*(?:'m|am|'d|would|do|don't|really|just|totally|kind of)?\s*"
    r"(?:think|guess|see|know|mean|agree|suppose|hope|understand|wonder|bet|believe|feel like|get it|"
    r"appreciate|am glad|'m glad|glad|am sorry|'m sorry|sorry|thank|can't wait|cannot wait|love that|"
    r"like that|love this|like this|love it|like it|hear you|got it|see what)\b",
    re.IGNORECASE,
)
_ABOUT_YOU = re.compile(r"\b(?:you|your|yours|you're|you've|you'll)\b", re.IGNORECASE)

_PREFERENCE = re.compile(
    r"\b(?:like|likes|love|loves|enjoy|enjoys|prefer|prefers|hate|hates|dislike|dislikes|can't stand|"
    r"favou?rite|into|fan of|allergic|vegetarian|vegan|pescatarian|gluten|lactose|don't eat|do not eat|"
    r"never eat|don't drink|can't eat|addicted)\b",
    re.IGNORECASE,
)
_PLAN = re.compile(
    r"\b(?:going to|gonna|will|'ll|plan|plans|planning|want to|would like to|'d like to|hope to|intend|"
    r"about to|next|tomorrow|soon|upcoming)\b",
    re.IGNORECASE,
)
_PAST_VERB = re.compile(
    r"^(?:I|we)\s+(?:just\s+|recently\s+|finally\s+|also\s+|actually\s+)?"
    r"(?:\w+ed|went|got|bought|met|won|lost|made|took|saw|ran|began|came|left|found|gave|had|did|wrote|"
    r"read|sold|built|flew|drove|ate|taught|caught|spent|broke|became|won|fell|felt|heard|kept|paid|"
    r"sent|told|threw|chose|drew|grew|hid|rode|sang|swam|wore|woke|was|were)\b",
    re.IGNORECASE,
)
_ENTITY = re.compile(
    r"^(?:my|our)\s+(?:\w+\s+){0,2}(?:wife|husband|partner|son|daughter|kids?|children|mother|mom|mum|"
    r"father|dad|sister|brother|parents?|family|friend|friends|boss|colleague|dog|cat|pets?|car|house|"
    r"apartment|team|company|grand\w+|aunt|uncle|cousin|niece|nephew|girlfriend|boyfriend|fianc\w*)\b",
    re.IGNORECASE,
)
# Topic headings: the first whose words the statement holds.
_TOPICS: list[tuple[str, re.Pattern[str]]] = [
    (
        "What the user eats and drinks",
        re.compile(
            r"\b(?:eat|eats|ate|food|foods|vegetarian|vegan|pescatarian|meat|fish|diet|cook|cooking|cooks|"
            r"bake|baking|meal|meals|dinner|lunch|breakfast|coffee|tea|wine|beer|drink|drinks|allergic|"
            r"gluten|lactose|spicy|sweet|dessert|restaurant|pizza|sushi)\b",
            re.I,
        ),
    ),
    (
        "Where the user lives",
        re.compile(
            r"\b(?:live|lives|living|lived|moved|move|moving|relocated|relocating|home|house|apartment|flat|"
            r"neighbou?rhood|city|town|country|from|based in|grew up)\b",
            re.I,
        ),
    ),
    (
        "The user's work",
        re.compile(
            r"\b(?:work|works|working|worked|job|jobs|career|office|boss|colleague|colleagues|company|employer|"
            r"hired|promoted|promotion|salary|profession|business|startup|client|clients|project|projects|"
            r"engineer|nurse|teacher|doctor|developer|designer|manager|lawyer|student|studying|study|"
            r"school|university|college|degree|retired)\b",
            re.I,
        ),
    ),
    (
        "The user's family and friends",
        re.compile(
            r"\b(?:wife|husband|partner|son|daughter|kids?|children|mother|mom|mum|father|dad|sister|brother|"
            r"parents?|family|friend|friends|grand\w+|aunt|uncle|cousin|niece|nephew|girlfriend|boyfriend|"
            r"fianc\w*|married|wedding|baby)\b",
            re.I,
        ),
    ),
    ("The user's pets", re.compile(r"\b(?:dog|dogs|cat|cats|puppy|kitten|pet|pets|horse|parrot)\b", re.I)),
    (
        "The user's health",
        re.compile(
            r"\b(?:health|sick|ill|doctor|hospital|injury|injured|surgery|pain|therapy|medication|"
            r"diagnosed|pregnant|sleep|gym|exercise|workout|run|running|yoga|diet)\b",
            re.I,
        ),
    ),
    (
        "The user's travel",
        re.compile(
            r"\b(?:travel|travelled|traveled|trip|trips|vacation|holiday|holidays|flight|flew|visit|visited|"
            r"visiting|abroad|tour|camping|beach)\b",
            re.I,
        ),
    ),
    (
        "What the user does for fun",
        re.compile(
            r"\b(?:hobby|hobbies|play|plays|playing|played|music|guitar|piano|paint|painting|painted|draw|"
            r"drawing|read|reading|books?|movies?|films?|games?|gaming|hike|hiking|hiked|swim|swimming|"
            r"garden|gardening|photography|dance|dancing|sing|singing|sport|sports|football|soccer|"
            r"tennis|basketball|climbing|ski|skiing|surf|surfing|knit|knitting|pottery)\b",
            re.I,
        ),
    ),
]
_CATEGORY_TOPIC = {
    "preferences": "What the user likes",
    "events": "Something in the user's life",
    "entities": "The user's people and things",
    "profile": "About the user",
}

_HEADINGS = [heading for heading, _ in _TOPICS] + list(_CATEGORY_TOPIC.values())

_WEEKDAYS = {name.lower(): number for number, name in enumerate(calendar.day_name)}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3, "several": 3}  # fmt: skip
_AGO = re.compile(
    r"\b(?P<count>\d+|a couple of|a few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten)\s+"
    r"(?P<unit>day|week|month|year)s?\s+ago\b",
    re.IGNORECASE,
)
_RELATIVE = re.compile(
    r"\b(?:(?P<simple>the day before yesterday|yesterday|today|tonight|this morning|this afternoon|"
    r"this evening|tomorrow|last night)|(?P<which>last|next|this|on|past)\s+(?P<unit>week|weekend|month|year|"
    + "|".join(_WEEKDAYS)
    + r"))\b",
    re.IGNORECASE,
)


def extract(conversation: list[Said]) -> list[Candidate]:
    """The memories the user's messages hold, in the order they were said, each statement once."""
    found: list[Candidate] = []
    seen: set[str] = set()
    for message in conversation:
        if message.role != "user":
            continue
        for statement in _statements(message.text):
            key = " ".join(statement.lower().split())
            if key in seen:
                continue
            seen.add(key)
            day, precision = told_day(statement, message.at)
            category = _category(statement)
            found.append(
                Candidate(
                    statement=statement,
                    category=category,
                    topic=_topic(statement, category),
                    day=day,
                    precision=precision,
                    said_at=message.at,
                    message_ids=[message.id],
                )
            )
    return found


def memory_text(candidate: Candidate) -> str:
    """The memory as it is kept: its topic, the statement in the user's words, and its day."""
    said = candidate.said_at.date()
    when = f"said on {said.isoformat()}"
    if (candidate.day, candidate.precision) != (said, "day"):
        when += f", of {_shown_day(candidate.day, candidate.precision)}"
    heading = f"{candidate.topic}: " if candidate.topic else ""
    return f"{heading}{candidate.statement}\n\n({when})\n"


def memory_statement(text: str) -> str:
    """What a memory says: its text without its topic heading and the line that dates it, which
    two memories are compared by (a shared heading would make any two of a topic look alike)."""
    kept = [part for part in text.strip().split("\n\n") if not part.startswith("(said on ")]
    said = " ".join(" ".join(kept).split())
    for heading in _HEADINGS:
        if said.startswith(heading + ": "):
            return said[len(heading) + 2 :]
    return said


def told_day(statement: str, said_at: datetime) -> tuple[date, str]:
    """The day ``statement`` tells of, said at ``said_at``, and how precisely it says it."""
    said = said_at.astimezone(UTC).date() if said_at.tzinfo else said_at.date()
    ago = _AGO.search(statement)
    if ago:
        count = _NUMBERS.get(ago.group("count").lower()) or int(ago.group("count"))
        unit = ago.group("unit").lower()
        return _moved(said, unit, -count)
    relative = _RELATIVE.search(statement)
    if relative:
        return _relative_day(relative, said)
    periods = query_periods(statement)
    if periods:
        start, end = periods[0]
        span = (end - start).days
        return start.date(), "day" if span <= 1 else "month" if span <= 31 else "year"
    named = _month_day(statement, said)
    if named is not None:
        return named, "day"
    return said, "day"


def _statements(text: str) -> list[str]:
    out = []
    for sentence in _SENTENCE.split(text):
        for clause in _JOIN.split(sentence.strip()):
            statement = _cleaned(clause)
            if statement and _about_the_user(statement):
                out.append(statement)
    return out


def _cleaned(clause: str) -> str:
    text = " ".join(clause.split()).strip(" ,;:-")
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?。！？" else text + "."


def _about_the_user(statement: str) -> bool:
    words = statement.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or statement.endswith("?"):
        return False
    found = _ABOUT_SELF.match(statement)
    if found is None:
        return False
    rest = statement[found.start("subject") :]
    return not _EMPTY.match(rest) and not _ABOUT_YOU.search(statement)


def _category(statement: str) -> str:
    subject = _ABOUT_SELF.match(statement)
    rest = statement[subject.start("subject") :] if subject else statement
    if _PREFERENCE.search(statement):
        return "preferences"
    if _RELATIVE.search(statement) or _AGO.search(statement) or query_periods(statement):
        return "events"
    if _PAST_VERB.match(rest) and not re.match(r"^(?:I|we)\s+(?:was|were)\b", rest, re.I):
        return "events"
    if _PLAN.search(statement) and re.match(r"^(?:I|we)\b", rest, re.I):
        return "events"
    if _ENTITY.match(rest):
        return "entities"
    return "profile"


def _topic(statement: str, category: str) -> str:
    for heading, words in _TOPICS:
        if words.search(statement):
            return heading
    return _CATEGORY_TOPIC[category]


def _moved(said: date, unit: str, count: int) -> tuple[date, str]:
    if unit == "day":
        return said + timedelta(days=count), "day"
    if unit in ("week", "weekend"):
        return said + timedelta(days=7 * count), "day"
    if unit == "month":
        month = said.month - 1 + count
        year, month = said.year + month // 12, month % 12 + 1
        return date(year, month, 1), "month"
    return date(said.year + count, 1, 1), "year"


def _relative_day(found: re.Match[str], said: date) -> tuple[date, str]:
    simple = (found.group("simple") or "").lower()
    if simple:
        offset = {"the day before yesterday": -2, "yesterday": -1, "last night": -1, "tomorrow": 1}.get(simple, 0)
        return said + timedelta(days=offset), "day"
    which, unit = found.group("which").lower(), found.group("unit").lower()
    if unit in _WEEKDAYS:
        weekday = _WEEKDAYS[unit]
        if which == "next":
            return said + timedelta(days=(weekday - said.weekday()) % 7 or 7), "day"
        if which == "this":
            return said + timedelta(days=weekday - said.weekday()), "day"
        # "last Friday", "on Friday": the latest such day before the one it was said on
        return said - timedelta(days=(said.weekday() - weekday) % 7 or 7), "day"
    step = {"last": -1, "past": -1, "next": 1}.get(which, 0)
    if unit == "weekend" and step == 0:
        return said + timedelta(days=(5 - said.weekday()) % 7), "day"
    return _moved(said, unit, step) if step else (said, "day" if unit in ("week", "weekend") else unit)


def _month_day(statement: str, said: date) -> date | None:
    """``on 9 June`` or ``June 9th`` without a year: the latest such day up to a month after ``said``."""
    months = "|".join(name for name in (m.lower() for m in calendar.month_name[1:]))
    found = re.search(
        rf"\b(?:(?P<d1>[0-3]?\d)(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m1>{months})|(?P<m2>{months})\s+(?P<d2>[0-3]?\d)"
        r"(?:st|nd|rd|th)?)\b",
        statement,
        re.IGNORECASE,
    )
    if not found:
        return None
    month_name = (found.group("m1") or found.group("m2")).lower()
    month = [m.lower() for m in calendar.month_name].index(month_name)
    day = int(found.group("d1") or found.group("d2"))
    for year in (said.year, said.year - 1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            return None
        if candidate <= said + timedelta(days=31):
            return candidate
    return None


def _shown_day(day: date, precision: str) -> str:
    if precision == "year":
        return str(day.year)
    if precision == "month":
        return f"{calendar.month_name[day.month]} {day.year}"
    return day.isoformat()
