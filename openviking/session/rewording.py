"""A user's own statement told of the user: in the third person, with its days made absolute.

"I keep bees on my roof" said by the user becomes "The user keeps bees on their roof"; "last
week I switched my team to trunk-based development", said on 12 May 2023, becomes "In the week
of 1 May 2023 the user switched their team to trunk-based development". A memory read months
later then says who and when without the conversation around it.

The first mention of the user is "the user" (its verb made third person: keeps, is, has,
doesn't), later ones "they", "their", "them"; "we" is the user with their family, their team
or others, by the words around it. Days: :func:`told_day` finds the first time the statement
names (yesterday, last Friday, two weeks ago, last month, next year, on 9 June), resolved from
the day it was said, and :func:`reworded` writes it as a date.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from openviking.values.dates import query_periods

__all__ = ["Told", "last_day", "reworded", "shown_day", "third_person_verb", "told_day"]


@dataclass(frozen=True, slots=True)
class Told:
    """The day a statement tells of, how precisely (``day``, ``week``, ``month``, ``season`` or ``year``),
    and where in the statement it says so (``span``; None when it names no time)."""

    day: date
    precision: str
    span: tuple[int, int] | None = None


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
    r"spring|summer|autumn|fall|winter|" + "|".join(_WEEKDAYS) + r"))\b",
    re.IGNORECASE,
)
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_MONTH_NAMES = "|".join(calendar.month_name[1:])
_MONTH_DAY = re.compile(
    rf"\b(?:(?P<d1>[0-3]?\d)(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m1>{_MONTH_NAMES})|(?P<m2>{_MONTH_NAMES})\s+"
    r"(?P<d2>[0-3]?\d)(?:st|nd|rd|th)?)\b(?!,?\s+(?:19|20)\d\d)",
    re.IGNORECASE,
)


_MONTH_ALONE = re.compile(
    rf"\b(?P<which>in|this|next|last|by|until|since|early|late|mid|of)\s+(?P<month>{_MONTH_NAMES})\b(?!,?\s*\d)", re.I
)
_FUTURE = re.compile(
    r"\b(?:will|'ll|going to|gonna|plan|plans|planning|hope to|want to|wants to|intend|intends|"
    r"(?:am|'m|are|'re|is|'s)\s+\w+ing)\b",
    re.IGNORECASE,
)


def told_day(statement: str, said_at: datetime) -> Told:
    """The day ``statement`` tells of, said at ``said_at`` (the day it was said when it names none)."""
    said = said_at.astimezone(UTC).date() if said_at.tzinfo else said_at.date()
    ago = _AGO.search(statement)
    if ago:
        count = _NUMBERS.get(ago.group("count").lower()) or int(ago.group("count"))
        day, precision = _moved(said, ago.group("unit").lower(), -count)
        return Told(day, precision, ago.span())
    relative = _RELATIVE.search(statement)
    if relative:
        day, precision = _relative_day(relative, said)
        return Told(day, precision, relative.span())
    periods = query_periods(statement)
    if periods:
        start, end = periods[0]
        span = (end - start).days
        return Told(start.date(), "day" if span <= 1 else "month" if span <= 31 else "year")
    named = _MONTH_DAY.search(statement)
    if named is not None:
        day_of = _month_day(named, said)
        if day_of is not None:
            return Told(day_of, "day")
    month = _MONTH_ALONE.search(statement)
    if month is not None:
        return Told(_month_alone(month, statement, said), "month", month.span("month"))
    return Told(said, "day")


def last_day(told: Told) -> date:
    """The last day of the period ``told`` names."""
    day = told.day
    if told.precision == "week":
        return day + timedelta(days=6)
    if told.precision in ("month", "season"):
        months = 3 if told.precision == "season" else 1
        month = day.month - 1 + months
        return date(day.year + month // 12, month % 12 + 1, 1) - timedelta(days=1)
    if told.precision == "year":
        return date(day.year, 12, 31)
    return day


def shown_day(day: date, precision: str) -> str:
    """``9 June 2023``, ``the week of 5 June 2023``, ``June 2023`` or ``2023``."""
    if precision == "year":
        return str(day.year)
    if precision == "month":
        return f"{calendar.month_name[day.month]} {day.year}"
    if precision == "season":
        return f"{next(name for name, month in _SEASONS.items() if month == day.month)} {day.year}"
    named = f"{day.day} {calendar.month_name[day.month]} {day.year}"
    return f"the week of {named}" if precision == "week" else named


def reworded(statement: str, told: Told) -> str:
    """``statement`` (the user's words) about the user in the third person, its time as a date."""
    text = _absolute(statement, told)
    text = _third_person(text)
    return text[:1].upper() + text[1:]


# ------------------------------------------------------------------------------- days
def _absolute(statement: str, told: Told) -> str:
    if told.span is None:
        return statement
    start, end = told.span
    phrase = statement[start:end].lower()
    if phrase in _MONTH_NAMES.lower().split("|"):  # "in October": the year added
        return statement[:end] + f" {told.day.year}" + statement[end:]
    if phrase in ("today", "tonight", "this morning", "this afternoon", "this evening", "last night"):
        when = {"tonight": "on the evening of ", "this morning": "on the morning of ",
                "this afternoon": "on the afternoon of ", "this evening": "on the evening of ",
                "last night": "on the night of "}.get(phrase, "on ") + shown_day(told.day, "day")  # fmt: skip
    elif phrase.endswith("weekend"):
        when = "on the weekend of " + shown_day(told.day, "day")
    elif told.precision == "week":
        when = "in " + shown_day(told.day, "week")
    elif told.precision == "day":
        weekday = next((name for name in _WEEKDAYS if name in phrase), "")
        ago = "ago" in phrase and "day" not in phrase
        when = ("around " if ago else "on ") + (weekday.title() + " " if weekday else "") + shown_day(told.day, "day")
    else:
        when = "in " + shown_day(told.day, told.precision)
    before = statement[:start]
    if not before.strip() and re.match(r"\s+(?:was|is|will be)\b", statement[end:]):  # "Yesterday was..."
        when = when.removeprefix("on ").removeprefix("in ")
    if re.search(r"\b(?:on|in|at|during)\s*$", before, re.I):  # "on Friday" was "on" already
        before = re.sub(r"\b(?:on|in|at|during)\s*$", "", before, flags=re.I)
    return before + when + statement[end:]


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
    if unit == "weekend":
        saturday = said + timedelta(days=(5 - said.weekday()) % 7)
        return saturday + timedelta(days=7 * step if step > 0 else -7 if step else 0), "day"
    if unit in _SEASONS:
        first = date(said.year, _SEASONS[unit], 1)
        if step > 0 and first <= said:
            first = first.replace(year=first.year + 1)
        elif step < 0 and first >= said:
            first = first.replace(year=first.year - 1)
        return first, "season"
    if unit == "week":
        monday = said - timedelta(days=said.weekday())
        return monday + timedelta(days=7 * step), "week"
    return _moved(said, unit, step) if step else (said.replace(day=1) if unit == "month" else date(said.year, 1, 1),
                                                     unit)  # fmt: skip


def _month_alone(found: re.Match[str], statement: str, said: date) -> date:
    """ "in October": the next October when the statement tells of a plan, else the latest."""
    month = [m.lower() for m in calendar.month_name].index(found.group("month").lower())
    which = found.group("which").lower()
    ahead = which == "next" or (which not in ("last", "since") and bool(_FUTURE.search(statement)))
    if ahead:
        return date(said.year + (month < said.month), month, 1)
    return date(said.year - (month > said.month or which == "last" and month == said.month), month, 1)


def _month_day(found: re.Match[str], said: date) -> date | None:
    """``9 June`` or ``June 9th`` without a year: the latest such day up to a month after ``said``."""
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


# ------------------------------------------------------------------------------- persons
_FIRST_PERSON = re.compile(
    r"\b(?:(?P<i_contracted>I['’](?:m|ve|d|ll))|(?P<i>I|i)(?=[\s,.;:!?)]|$)|(?P<me>me)|(?P<my>my)|(?P<mine>mine)|"
    r"(?P<myself>myself)|(?P<we_contracted>we['’](?:re|ve|d|ll))|(?P<we>we)|(?P<us>us)|(?P<our>our)|"
    r"(?P<ours>ours)|(?P<ourselves>ourselves))\b",
    re.IGNORECASE,
)
_ADVERBS = frozenset(
    "just also really usually still never always recently finally actually often only even sometimes mostly "
    "currently now already totally definitely honestly basically generally normally rarely seldom truly "
    "absolutely literally simply mainly kind sort of too then".split()
)
_MODALS_AND_PAST = frozenset(
    "can could will would should shall may might must did was had used ought went got saw made took came gave "
    "found left felt kept held brought bought thought taught caught fought told sold said paid laid met ran began "
    "swam sang rang drank sank wrote rode drove rose chose spoke broke woke froze stole ate fell knew grew threw "
    "flew drew blew wore tore swore forgot shot lost meant spent sent lent built bent dealt slept swept wept crept "
    "leapt hid bit lit fed led sped fled bled stood understood won spun hung stuck struck dug sat spat became "
    "overcame forgave heard read put cut hit set let shut quit cost hurt split spread burst cast beat bet "
    "didn't couldn't wouldn't shouldn't wasn't can't cannot won't mustn't hadn't".split()
)
_NOT_PAST = frozenset("need feed bleed breed speed seed proceed succeed exceed heed weed shed embed wed bed".split())
_IRREGULAR = {"am": "is", "have": "has", "do": "does", "don't": "doesn't", "haven't": "hasn't", "go": "goes",
              "be": "is", "'m": "is", "'ve": "has", "'ll": "will"}  # fmt: skip
_FAMILY = re.compile(
    r"\b(?:kids?|children|son|daughter|wife|husband|partner|family|house|home|garden|baby|wedding|parents|"
    r"mom|mum|dad|dog|cat|flat|apartment|holiday|vacation|moved)\b",
    re.IGNORECASE,
)
_TEAM = re.compile(
    r"\b(?:team|company|startup|production|deploy\w*|ci|build|builds|tests?|code|codebase|backend|frontend|"
    r"server|servers|app|api|database|release|sprint|customers?|clients?|product|office|project|repo|stack)\b",
    re.IGNORECASE,
)


def _third_person(text: str) -> str:
    out: list[str] = []
    position = 0
    named = False  # the user has been named once: the rest is they, their, them
    group = _group(text)
    for found in _FIRST_PERSON.finditer(text):
        kind = found.lastgroup or ""
        word = found.group(0)
        if kind == "i" and word == "i" and not _standalone_i(text, found):
            continue
        if kind == "us" and word == "US":
            continue  # the country
        out.append(text[position : found.start()])
        position = found.end()
        # "my wife and I": a subject of a few words joined with the user's; not "..., and I"
        clause = re.split(r"[,.;:!?]", text[: found.start()])[-1].lower().split()
        joined = bool(clause) and clause[-1] == "and" and len(clause) <= 5
        if kind in ("i", "i_contracted"):
            suffix = word[1:].replace("’", "'").lower()
            if joined:  # "my wife and I moved": they moved together
                out.append("the user" + _plural_suffix(suffix))
            elif not named:
                out.append("the user")
                rest, taken = _conjugated(text[position:], suffix)
                out.append(rest)
                position += taken
            else:
                out.append("they" + _plural_suffix(suffix))
                following = re.match(r"(\s+)(was|am)\b", text[position:], re.I)
                if following and not suffix:  # "they were", "they are"
                    out.append(following.group(1) + {"was": "were", "am": "are"}[following.group(2).lower()])
                    position += following.end()
            named = True
        elif kind == "me":
            out.append("the user" if not named or text[position:].lower().startswith(" and") else "them")
            named = True
        elif kind in ("my", "mine"):
            out.append(("their" if kind == "my" else "theirs") if named else "the user's")
            named = True
        elif kind == "myself":
            out.append("themselves")
        elif kind in ("we", "we_contracted"):
            suffix = word[2:].replace("’", "'").lower()
            out.append(("they" if named else group) + _plural_suffix(suffix))
            named = True
        elif kind == "us":
            out.append("them" if named else group)
            named = True
        elif kind in ("our", "ours"):
            out.append(("their" if kind == "our" else "theirs") if named else "the user's")
            named = True
        else:  # ourselves
            out.append("themselves")
    out.append(text[position:])
    return "".join(out)


def _standalone_i(text: str, found: re.Match[str]) -> bool:
    """A lower-case ``i`` is the user only as a word of its own between words ("then i went")."""
    after = text[found.end() : found.end() + 1]
    return after in ("", " ", ",", ".", "!", "?", ";", ":")


def _group(text: str) -> str:
    """Who "we" are: the user's team, the user and their family, or the user and others."""
    if _TEAM.search(text):
        return "the user's team"
    if _FAMILY.search(text):
        return "the user and their family"
    return "the user and others"


def _plural_suffix(suffix: str) -> str:
    return {"'m": " are", "'re": " are", "'ve": " have", "'d": " would", "'ll": " will"}.get(suffix, "")


def _conjugated(rest: str, suffix: str) -> tuple[str, int]:
    """The verb after "the user" made third person: the words written and how many characters
    of ``rest`` they replace."""
    if suffix:
        if suffix == "'d":
            following = re.match(r"\s+(\w+)", rest)
            past = following is not None and (following.group(1).lower().endswith("ed") or following.group(1).lower()
                                              in ("been", "had", "gone", "done", "seen", "got", "made"))  # fmt: skip
            return (" had" if past else " would"), 0
        return " " + _IRREGULAR[suffix], 0
    words = re.match(r"((?:\s+(?:" + "|".join(sorted(_ADVERBS)) + r")\b)*)\s+([A-Za-z'’]+)", rest, re.IGNORECASE)
    if words is None:
        return "", 0
    adverbs, verb = words.group(1), words.group(2)
    return adverbs + " " + third_person_verb(verb), words.end()


def third_person_verb(verb: str) -> str:
    """``verb`` as said of one other than the speaker: keeps, goes, tries, is, has, doesn't."""
    lower = verb.lower().replace("’", "'")
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    if lower in _MODALS_AND_PAST or (lower.endswith("ed") and lower not in _NOT_PAST) or not lower.isalpha():
        return verb
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(lower) > 1 and lower.endswith("y") and lower[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"
