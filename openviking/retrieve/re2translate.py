"""Python ``re`` patterns written out in RE2 syntax: the only user of CPython's ``re`` internals.

grep's pattern language is Python's ``re``; its speed comes from RE2 (through pyarrow), whose
syntax and classes differ. Python's own parser reads the pattern, and it is written out again
in RE2 syntax, with every character class spelled out as the code point ranges Python itself
gives it (RE2's ``\\w`` is ASCII; Python's is not) and Python's case-insensitive rules applied
to each character. A count RE2 refuses (above 1,000, or nested counts multiplying past it)
is written as several it takes (:mod:`.re2repeat`). Constructs RE2 has no equivalent for
(back-references, look-around, conditionals, atomic groups and possessive repeats) become a
looser RE2 pattern that selects candidate lines, and Python's ``re`` decides on those lines
only (under grep's deadline: :mod:`.bounded`). Python's Unicode ``\\b``/``\\B`` equal RE2's on
ASCII-only lines, so only the other lines of such a pattern go through Python. The strings
every match must contain come from the same tree (:mod:`.re2literals`).

The parser (``re._parser``), its opcodes (``re._constants``), the case tables (``_sre``,
``re._casefix``) are CPython's private modules, and may change in any release: they are
imported here only, and :func:`internals_problem` checks them once, at the first pattern,
by parsing known patterns and asking known characters. When anything differs, no pattern is
translated and grep runs Python's ``re`` on every line: slower (and bounded by the same
deadline and input cap), never wrong.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .charset import MAX_CODE, Ranges, category_ranges, complement, minus_points, normalize, set_re2
from .re2literals import RequiredLiterals, combine_flags
from .re2repeat import RE2_MAX_REPEAT, fold, piece_count, pieces, positions, quantifier, trimmed

__all__ = ["LinePattern", "check_internals", "internals_problem", "line_pattern"]

# A repeat written out as pieces longer than this is left to Python's re instead (the nearest
# RE2 can say selects its candidate lines); no RE2 text longer than MAX_RE2_TEXT is compiled.
MAX_EXPANSION = 100_000
MAX_RE2_TEXT = 1_000_000
# RE2 compiles a count's pieces in time that grows with the square of their number (0.13 s at
# 10,000 positions, 13 s at 100,000): past this many positions only the cheap loose forms are
# compiled, and Python's re decides (under the deadline).
MAX_RE2_POSITIONS = 10_000
# Each case-insensitive class is checked against Python on every cased character (~3 ms): a
# pattern with more distinct ones than this is left to Python's re (bounding the translation).
MAX_CASED_CLASSES = 64


# ---------------------------------------------------------------------------------------------
# the guard: re's internals as the translator reads them

# The names of re._constants the translator reads: opcodes, position and class codes, flags.
CONSTANTS = tuple(
    """ANY ASSERT ASSERT_NOT AT ATOMIC_GROUP BRANCH CATEGORY GROUPREF GROUPREF_EXISTS IN LITERAL MAX_REPEAT
    MAXREPEAT MIN_REPEAT NEGATE NOT_LITERAL POSSESSIVE_REPEAT RANGE SUBPATTERN AT_BEGINNING AT_BEGINNING_STRING
    AT_BOUNDARY AT_END AT_END_STRING AT_NON_BOUNDARY CATEGORY_DIGIT CATEGORY_NOT_DIGIT CATEGORY_SPACE
    CATEGORY_NOT_SPACE CATEGORY_WORD CATEGORY_NOT_WORD SRE_FLAG_ASCII SRE_FLAG_DOTALL SRE_FLAG_IGNORECASE""".split()
)
SRE_FUNCTIONS = ("ascii_iscased", "ascii_tolower", "unicode_iscased", "unicode_tolower")
# Each construct the translator reads, and the tree the parser gives it (named constants by
# name): a parser that builds another tree is one the translator would misread.
PROBES: dict[str, tuple[Any, ...]] = {
    "ab|cd": (("BRANCH", (None, ((("LITERAL", 97), ("LITERAL", 98)), (("LITERAL", 99), ("LITERAL", 100))))),),
    "(?i:a)": (("SUBPATTERN", (None, 2, 0, (("LITERAL", 97),))),),
    r"(?a:\s)": (("SUBPATTERN", (None, 256, 0, (("IN", (("CATEGORY", "CATEGORY_SPACE"),)),))),),
    r"[^b-d\w]": (("IN", (("NEGATE", None), ("RANGE", (98, 100)), ("CATEGORY", "CATEGORY_WORD"))),),
    r"[\D\W]": (("IN", (("CATEGORY", "CATEGORY_NOT_DIGIT"), ("CATEGORY", "CATEGORY_NOT_WORD"))),),
    r"\S": (("IN", (("CATEGORY", "CATEGORY_NOT_SPACE"),)),),
    "[^v]": (("NOT_LITERAL", 118),),
    ".": (("ANY", None),),
    "x{2,3}?": (("MIN_REPEAT", (2, 3, (("LITERAL", 120),))),),
    r"\d*": (("MAX_REPEAT", (0, "MAXREPEAT", (("IN", (("CATEGORY", "CATEGORY_DIGIT"),)),))),),
    "r++": (("POSSESSIVE_REPEAT", (1, "MAXREPEAT", (("LITERAL", 114),))),),
    "(?>p)": (("ATOMIC_GROUP", (("LITERAL", 112),)),),
    "(?=y)": (("ASSERT", (1, (("LITERAL", 121),))),),
    "(?!z)": (("ASSERT_NOT", (1, (("LITERAL", 122),))),),
    "(?<=q)": (("ASSERT", (-1, (("LITERAL", 113),))),),
    r"(s)\1": (("SUBPATTERN", (1, 0, 0, (("LITERAL", 115),))), ("GROUPREF", 1)),
    "(s)(?(1)t|u)": (
        ("SUBPATTERN", (1, 0, 0, (("LITERAL", 115),))),
        ("GROUPREF_EXISTS", (1, (("LITERAL", 116),), (("LITERAL", 117),))),
    ),
    "^$": (("AT", "AT_BEGINNING"), ("AT", "AT_END")),
    r"\A\Z": (("AT", "AT_BEGINNING_STRING"), ("AT", "AT_END_STRING")),
    r"\b\B": (("AT", "AT_BOUNDARY"), ("AT", "AT_NON_BOUNDARY")),
}


class _Differs(Exception):
    """Something in re's internals is not as the translator reads it (the message says what)."""


def check_internals() -> str | None:
    """What in Python's ``re`` internals differs from what the translator reads, or None.

    Checks that the private modules import, hold the constants and functions it uses, that the
    parser builds the expected trees for :data:`PROBES`, and that the case functions and tables
    answer as expected for a few characters. Never raises: a surprise is a difference.
    """
    try:
        _check()
    except _Differs as exc:
        return str(exc)
    except Exception as exc:  # an internal that fails in a new way is as unusable as a missing one
        return f"checking re's internals raised {type(exc).__name__}: {exc}"
    return None


@functools.cache
def internals_problem() -> str | None:
    """:func:`check_internals`, asked once per process (at the first pattern translated)."""
    return check_internals()


def _check() -> None:
    try:
        import _sre
        import re._casefix as casefix
        import re._constants as constants
        import re._parser as parser
    except ImportError as exc:
        raise _Differs(f"cannot import {exc.name or exc}") from exc
    missing = [name for name in CONSTANTS if not hasattr(constants, name)]
    missing += [f"_sre.{name}" for name in SRE_FUNCTIONS if not callable(getattr(_sre, name, None))]
    if not callable(getattr(parser, "parse", None)):
        missing.append("re._parser.parse")
    if not isinstance(getattr(casefix, "_EXTRA_CASES", None), dict):
        missing.append("re._casefix._EXTRA_CASES")
    if missing:
        raise _Differs("re's internals lack " + ", ".join(missing))
    flags = {"SRE_FLAG_ASCII": re.ASCII, "SRE_FLAG_DOTALL": re.DOTALL, "SRE_FLAG_IGNORECASE": re.IGNORECASE}
    for name, flag in flags.items():
        if getattr(constants, name) != flag:
            raise _Differs(f"re._constants.{name} is {getattr(constants, name)}, not re's flag {int(flag)}")
    if int(constants.MAXREPEAT) <= RE2_MAX_REPEAT:
        raise _Differs(f"re._constants.MAXREPEAT is {int(constants.MAXREPEAT)}, not above RE2's {RE2_MAX_REPEAT}")
    for probe, expected in PROBES.items():
        tree = _plain(parser.parse(probe, 0), constants)
        if tree != expected:
            raise _Differs(f"re._parser.parse({probe!r}) gives {tree}, expected {expected}")
    if not parser.parse("(?s)a", 0).state.flags & constants.SRE_FLAG_DOTALL:
        raise _Differs("re._parser.parse('(?s)a').state.flags lacks SRE_FLAG_DOTALL")
    answers: dict[str, tuple[object, object]] = {
        "_sre.unicode_tolower(ord('Σ'))": (_sre.unicode_tolower(0x3A3), 0x3C3),
        "_sre.unicode_iscased(ord('a'))": (bool(_sre.unicode_iscased(0x61)), True),
        "_sre.unicode_iscased(ord('1'))": (bool(_sre.unicode_iscased(0x31)), False),
        "_sre.ascii_tolower(ord('A'))": (_sre.ascii_tolower(0x41), 0x61),
        "_sre.ascii_iscased(ord('é'))": (bool(_sre.ascii_iscased(0xE9)), False),
        "re._casefix._EXTRA_CASES[ord('s')]": (casefix._EXTRA_CASES.get(0x73), (0x17F,)),
    }
    for asked, (got, answer) in answers.items():
        if got != answer:
            raise _Differs(f"{asked} is {got!r}, expected {answer!r}")


def _plain(value: Any, constants: Any) -> Any:
    """A parse tree as nested tuples, each named constant by its name (it must be the module's own:
    the translator compares them with ``is``)."""
    if isinstance(value, int) and type(value) is not int:
        name = str(value)
        if getattr(constants, name, None) is not value:
            raise _Differs(f"the parser's {name} is not re._constants.{name}")
        return name
    data = getattr(value, "data", None)
    if isinstance(data, list):
        return _plain(data, constants)
    if isinstance(value, list | tuple):
        return tuple(_plain(item, constants) for item in value)
    return value


# ---------------------------------------------------------------------------------------------
# the pattern: Python's re, written out as RE2


@dataclass(frozen=True)
class LinePattern:
    """A grep pattern compiled for Python and, as far as it can be, for RE2.

    Attributes:
        python: the pattern compiled by Python's ``re``: the reference semantics.
        exact: RE2 text matching exactly the lines ``python`` matches, or None.
        ascii: RE2 text matching exactly the ASCII-only lines ``python`` matches, or None
            (differs from ``exact`` for Unicode ``\\b``/``\\B``, which RE2 only has for ASCII).
        candidates: RE2 text matching at least every line ``python`` matches, or None (then
            every line is a candidate).
        content: RE2 text that matches a file's whole content when one of its lines matches,
            or None (every file is a candidate).
        empty_line: True when Python must be asked about an empty line, as RE2's answer may
            differ (``\\B``: Python before 3.14 finds no non-boundary in an empty string, RE2
            does), else None. It is asked at search time, under the search's deadline (on the
            empty string alone a pattern can still take exponential time).
        literals: strings one of which every match contains (RE2 finds a plain string many
            times faster than it runs a pattern), or () when there are none worth it.
        positions: the character tests of the RE2 forms with their counts multiplied out
            (:func:`.re2repeat.positions`): what one byte can cost RE2 at worst.
        marks: when the forms above were made from the pattern without what can match nothing
            at its start and end (:func:`.re2repeat.trimmed`: the same lines, other matches),
            the RE2 text of the whole pattern, or None (Python's re says where the matches are);
            ``mark_positions`` is its cost.

    Otherwise ``exact`` and ``ascii`` also give where the matches are (spans): Python's, except
    after a count over 1,000 of a group of variable width, where a match may end elsewhere.
    """

    python: re.Pattern[str]
    exact: str | None
    ascii: str | None
    candidates: str | None
    content: str | None
    empty_line: bool | None = None
    literals: tuple[str, ...] = ()
    positions: int = 1
    trimmed: bool = False
    marks: str | None = None
    mark_positions: int = 1

    def span_regex(self) -> tuple[str | None, int]:
        """The RE2 text that says where the matches are on the lines RE2 decided, and its cost."""
        if self.trimmed:
            return self.marks, self.mark_positions
        return self.exact or self.ascii, self.positions


def line_pattern(compiled: re.Pattern[str]) -> LinePattern:
    """``compiled`` with its RE2 forms (cached per process); with none while :func:`internals_problem`
    reports one, so that Python's ``re`` decides every line."""
    if internals_problem() is not None:
        return LinePattern(compiled, None, None, None, None, _empty_line(compiled))
    return _translated(compiled)


def _empty_line(compiled: re.Pattern[str]) -> bool | None:
    """True when the pattern holds ``\\B`` (RE2's answer for an empty line may differ), else None."""
    return True if re.search(r"\\B", compiled.pattern) else None


@functools.lru_cache(maxsize=64)
def _translated(compiled: re.Pattern[str]) -> LinePattern:
    source = compiled.pattern
    exact = ascii_ = candidates = content = None
    empty_line = _empty_line(compiled)
    cost = mark_cost = 1
    marks, trim = None, False
    try:
        translator = _Translator(source, compiled.flags)
        whole, c = translator.tree.data, translator.c
        mark_cost = cost = max(1, positions(whole, c, translator.groups))
        translator.large = cost > MAX_RE2_POSITIONS
        selected = trimmed(whole, c)
        if selected is not whole:  # the whole pattern for the matches, the rest for the lines
            trim = True
            text, inexact, boundary = translator.emit("line")
            marks = None if inexact or boundary else _re2_or_none(text)
            translator.nodes = selected
            cost = max(1, positions(selected, c, translator.groups))
            translator.large = cost > MAX_RE2_POSITIONS
        line, inexact, boundary = translator.emit("line")
        if not inexact and not boundary:
            exact = _re2_or_none(line)
        ascii_text, inexact, _ = translator.emit("ascii")
        if not inexact:
            ascii_ = _re2_or_none(ascii_text)
        candidates = exact or _re2_or_none(translator.emit("loose")[0])
        candidates = candidates or _re2_or_none(translator.emit("loose", crude=True)[0])
        content = _re2_or_none(translator.emit("content")[0]) or _re2_or_none(translator.emit("content", crude=True)[0])
        literals = translator.literals()
    except (_Untranslatable, RecursionError):
        literals = ()
    return LinePattern(compiled, exact, ascii_, candidates, content, empty_line, literals, cost, trim, marks, mark_cost)


class _Untranslatable(Exception):
    """A construct the translator does not know: RE2 cannot help with this pattern."""


def _re2_or_none(text: str) -> str | None:
    """``text`` when RE2 (as pyarrow builds it) accepts it, else None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(text) > MAX_RE2_TEXT:
        return None
    try:
        pc.match_substring_regex(pa.array([""], pa.large_string()), text)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return text


class _Translator(RequiredLiterals):
    """Writes a parsed Python pattern out as RE2 text, in one of four modes.

    ``line``: exact on any line, except where it reports ``inexact`` (no RE2 equivalent) or a
    Unicode ``boundary`` (``\\b``/``\\B``, written as RE2's ASCII ones).
    ``ascii``: exact on ASCII-only lines (every character set cut down to ASCII).
    ``loose``: matches a superset of the lines (what has no equivalent is widened or dropped).
    ``content``: a superset for a whole file: anchors match at line ends, where a ``\\r`` may
    precede the ``\\n``.

    ``weight`` is the largest product of nested RE2 counts in what was written so far (RE2
    refuses one above 1,000), which sets how big the pieces of an enclosing count may be.
    """

    def __init__(self, source: str, flags: int) -> None:
        import re._constants as sre_constants
        import re._parser as sre_parse

        self.c = sre_constants
        self.tree = sre_parse.parse(source, flags)
        self.flags = self.tree.state.flags | flags
        self.groups: dict[int, tuple[Any, int]] = {}
        self._collect_groups(self.tree.data, self.flags)
        self.inexact = False
        self.boundary = False
        self.mode = "line"
        self.crude = False
        self.in_reference = False
        self.weight = 1
        self.large = False  # too many positions to compile exactly: counts are left loose
        self.nodes: list[Any] = self.tree.data  # what emit() writes out
        self._classes: dict[tuple[Any, int], Ranges] = {}

    def emit(self, mode: str, *, crude: bool = False) -> tuple[str, bool, bool]:
        """``(RE2 text, inexact, Unicode boundary)`` of the whole pattern in ``mode``."""
        self.mode, self.crude, self.inexact, self.boundary, self.weight = mode, crude, False, False, 1
        text = self._seq(self.nodes, self.flags)
        return text, self.inexact, self.boundary

    def _collect_groups(self, nodes: Iterable[Any], flags: int) -> None:
        c = self.c
        for op, av in nodes:
            if op is c.SUBPATTERN:
                group, add, delete, sub = av
                inner = combine_flags(flags, add, delete)
                if group:
                    self.groups[group] = (sub, inner)
                self._collect_groups(sub, inner)
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
                self._collect_groups(av[2], flags)
            elif op is c.BRANCH:
                for alt in av[1]:
                    self._collect_groups(alt, flags)
            elif op is c.ATOMIC_GROUP:
                self._collect_groups(av, flags)
            elif op in (c.ASSERT, c.ASSERT_NOT):
                self._collect_groups(av[1], flags)
            elif op is c.GROUPREF_EXISTS:
                self._collect_groups(av[1], flags)
                if av[2]:
                    self._collect_groups(av[2], flags)

    def _seq(self, nodes: Iterable[Any], flags: int) -> str:
        return "".join(self._node(op, av, flags) for op, av in nodes)

    def _set(self, ranges: Ranges) -> str:
        if self.mode == "ascii":
            ranges = [(low, min(high, 0x7F)) for low, high in ranges if low <= 0x7F]
        return set_re2(ranges)

    def _node(self, op: Any, av: Any, flags: int) -> str:
        c = self.c
        if op is c.LITERAL:
            return self._set(self._literal_set(av, flags))
        if op is c.NOT_LITERAL:
            return self._set(complement(self._literal_set(av, flags)))
        if op is c.ANY:
            return self._set([(0, MAX_CODE)] if flags & c.SRE_FLAG_DOTALL else [(0, 9), (11, MAX_CODE)])
        if op is c.IN:
            return self._set(self._class_set(av, flags))
        if op is c.CATEGORY:
            return self._set(self._class_set([(op, av)], flags))
        if op is c.BRANCH:
            return "(?:" + "|".join(self._seq(alt, flags) for alt in av[1]) + ")"
        if op is c.SUBPATTERN:
            _group, add, delete, sub = av
            return "(?:" + self._seq(sub, combine_flags(flags, add, delete)) + ")"
        if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            if op is c.POSSESSIVE_REPEAT:
                self.inexact = True  # a possessive match is also a match of the greedy form
            low, high, sub = av
            bound = None if high >= int(c.MAXREPEAT) else high
            lazy = op is c.MIN_REPEAT
            if op is not c.POSSESSIVE_REPEAT:
                low, bound, sub, lazy = fold(low, bound, sub, lazy, c)
            outer, self.weight = self.weight, 1
            body = "(?:" + self._seq(sub, flags) + ")"
            inner, self.weight = self.weight, outer
            return self._repeat(body, low, bound, inner, "?" if lazy else "")
        if op is c.ATOMIC_GROUP:
            self.inexact = True  # likewise: an atomic match is a match of the plain group
            return "(?:" + self._seq(av, flags) + ")"
        if op is c.AT:
            return self._at(av, flags)
        if op is c.GROUPREF:
            self.inexact = True
            sub, group_flags = self.groups.get(av, (None, flags))
            if sub is None:
                return r"(?s:.*)"
            # The reference matches the text the group matched (ignoring case if the reference
            # does): the group's pattern without its zero-width tests, which held where the
            # group matched, not necessarily here.
            saved, self.in_reference = self.in_reference, True
            try:
                return "(?:" + self._seq(sub, group_flags | (flags & c.SRE_FLAG_IGNORECASE)) + ")"
            finally:
                self.in_reference = saved
        if op is c.GROUPREF_EXISTS:
            self.inexact = True
            _group, yes, no = av
            return "(?:" + self._seq(yes, flags) + "|" + (self._seq(no, flags) if no else "") + ")"
        if op in (c.ASSERT, c.ASSERT_NOT):
            self.inexact = True  # a look-around only removes matches: without it, more match
            return ""
        raise _Untranslatable(str(op))

    def _repeat(self, body: str, low: int, high: int | None, inner: int, lazy: str) -> str:
        """``body{low,high}`` (``high`` None: unbounded) in RE2 terms; ``inner`` is the body's
        weight; ``lazy`` is ``"?"`` for a lazy repeat."""
        if self.crude:
            return body + ("*" if low == 0 else "+") + lazy
        count = low if high is None else high
        if self.large and count > 1:
            self.inexact = True  # {1,} is the loosest a count can be written: x{n,m} matches within x+
            return body + ("*" if low == 0 else "+") + lazy
        if count <= 1 or count * inner <= RE2_MAX_REPEAT:
            self.weight = max(self.weight, max(count, 1) * inner)
            return body + quantifier(low, high) + lazy
        limit = RE2_MAX_REPEAT // inner  # >= 1: the body's own counts were cut to fit
        if piece_count(low, high, limit) * len(body) > MAX_EXPANSION:
            # too long to write out: {n,} with the most n RE2 takes here is the nearest superset
            self.inexact = True
            self.weight = max(self.weight, min(low, limit) * inner)
            return body + quantifier(min(low, limit), None) + lazy
        parts = pieces(low, high, limit)
        self.weight = max(self.weight, max(most or least for least, most in parts) * inner)
        return "".join(body + quantifier(least, most) + lazy for least, most in parts)

    def _literal_set(self, code: int, flags: int) -> Ranges:
        return _literal_set(code, flags)

    def _class_set(self, items: Any, flags: int) -> Ranges:
        """:func:`_class_set`, once per distinct class; a case-insensitive one costs a check of
        every cased character, so past :data:`MAX_CASED_CLASSES` of them Python's re decides."""
        key = (tuple(items), flags)
        found = self._classes.get(key)
        if found is None:
            cased = sum(1 for (_items, f) in self._classes if f & self.c.SRE_FLAG_IGNORECASE)
            if flags & self.c.SRE_FLAG_IGNORECASE and cased >= MAX_CASED_CLASSES:
                raise _Untranslatable("too many case-insensitive classes")
            found = self._classes[key] = _class_set(items, flags)
        return found

    def _at(self, code: Any, flags: int) -> str:
        c = self.c
        if self.in_reference:
            return ""
        if code in (c.AT_BEGINNING, c.AT_BEGINNING_STRING):
            return r"(?m:^)" if self.mode == "content" else "^"
        if code in (c.AT_END, c.AT_END_STRING):
            return r"(?:\r?(?m:$))" if self.mode == "content" else "$"
        if code in (c.AT_BOUNDARY, c.AT_NON_BOUNDARY):
            if self.mode in ("loose", "content"):
                return ""  # a zero-width test only removes matches
            if not flags & c.SRE_FLAG_ASCII:
                self.boundary = True
            return r"\b" if code == c.AT_BOUNDARY else r"\B"
        raise _Untranslatable(str(code))


# ---------------------------------------------------------------------------------------------
# classes and cases, as Python's re reads them


@functools.cache
def _categories() -> dict[Any, tuple[str, bool]]:
    """The class escapes the parser emits, as ``(category, negated)`` (it never emits the
    CATEGORY_UNI_* forms: the compiler adds those; anything else is left to Python's re)."""
    import re._constants as sre

    return {
        sre.CATEGORY_DIGIT: ("digit", False),
        sre.CATEGORY_NOT_DIGIT: ("digit", True),
        sre.CATEGORY_SPACE: ("space", False),
        sre.CATEGORY_NOT_SPACE: ("space", True),
        sre.CATEGORY_WORD: ("word", False),
        sre.CATEGORY_NOT_WORD: ("word", True),
    }


def _category_set(code: Any, flags: int) -> Ranges:
    ascii_only = bool(flags & re.ASCII)
    categories = _categories()
    if code not in categories:
        raise _Untranslatable(str(code))
    name, negated = categories[code]
    ranges = list(category_ranges(name, ascii_only))
    return complement(ranges) if negated else ranges


@dataclass(frozen=True)
class _CaseTables:
    """What Python's case-insensitive matching needs: which characters take part, and how."""

    candidates: tuple[int, ...]  # every character whose case-insensitive set may differ from itself
    by_lower: dict[int, tuple[int, ...]]  # lower-case form -> characters that lower to it
    extra: dict[int, tuple[int, ...]]  # re's _EXTRA_CASES (e.g. s <-> long s)


@functools.cache
def _case_tables() -> _CaseTables:
    import _sre
    from re._casefix import _EXTRA_CASES

    # Cased characters end below U+20000 (the last are Adlam, U+1E900..1E943); a test checks it.
    cased = [x for x in range(0x20000) if _sre.unicode_iscased(x)]
    points = set(cased)
    points.update(_sre.unicode_tolower(x) for x in cased)
    for key, values in _EXTRA_CASES.items():
        points.add(key)
        points.update(values)
    by_lower: dict[int, list[int]] = {}
    for x in points:
        by_lower.setdefault(_sre.unicode_tolower(x), []).append(x)
    return _CaseTables(tuple(sorted(points)), {k: tuple(sorted(v)) for k, v in by_lower.items()}, dict(_EXTRA_CASES))


def _literal_set(code: int, flags: int) -> Ranges:
    """The characters one pattern character matches (re._compiler's rules for IGNORECASE)."""
    import _sre

    if not flags & re.IGNORECASE:
        return [(code, code)]
    if flags & re.ASCII:
        if not _sre.ascii_iscased(code):
            return [(code, code)]
        low = _sre.ascii_tolower(code)
        return normalize([(low, low), (low - 32, low - 32)])
    if not _sre.unicode_iscased(code):
        return [(code, code)]
    tables = _case_tables()
    low = _sre.unicode_tolower(code)
    targets = (low, *tables.extra.get(low, ()))
    points = {x for t in targets for x in tables.by_lower.get(t, ())}
    points.update(t for t in targets if _sre.unicode_tolower(t) == t)
    return normalize((p, p) for p in points)


def _class_set(items: Sequence[tuple[Any, Any]], flags: int) -> Ranges:
    """The characters a ``[...]`` class (or ``\\w``-like escape) matches under ``flags``."""
    import re._constants as sre

    negated = bool(items) and items[0][0] is sre.NEGATE
    positive = list(items[1:] if negated else items)
    ranges: Ranges = []
    for op, av in positive:
        if op is sre.LITERAL:
            ranges.append((av, av))
        elif op is sre.RANGE:
            ranges.append((av[0], av[1]))
        elif op is sre.CATEGORY:
            ranges.extend(_category_set(av, flags))
        else:
            raise _Untranslatable(str(op))
    ranges = normalize(ranges)
    if flags & re.IGNORECASE and positive:
        # Under IGNORECASE Python tests the lower-cased character against a case-folded set.
        # Characters outside the case tables are unaffected; those inside are asked directly.
        if flags & re.ASCII:
            candidates: Sequence[int] = sorted([*range(65, 91), *range(97, 123)])
        else:
            candidates = _case_tables().candidates
        probe = re.compile(_python_class(positive), flags & (re.IGNORECASE | re.ASCII | re.UNICODE))
        accepted = [x for x in candidates if probe.fullmatch(chr(x))]
        ranges = normalize([*minus_points(ranges, candidates), *((x, x) for x in accepted)])
    return complement(ranges) if negated else ranges


def _python_class(items: Sequence[tuple[Any, Any]]) -> str:
    import re._constants as sre

    escapes = {
        sre.CATEGORY_DIGIT: r"\d",
        sre.CATEGORY_NOT_DIGIT: r"\D",
        sre.CATEGORY_SPACE: r"\s",
        sre.CATEGORY_NOT_SPACE: r"\S",
        sre.CATEGORY_WORD: r"\w",
        sre.CATEGORY_NOT_WORD: r"\W",
    }
    parts = []
    for op, av in items:
        if op is sre.LITERAL:
            parts.append(f"\\U{av:08x}")
        elif op is sre.RANGE:
            parts.append(f"\\U{av[0]:08x}-\\U{av[1]:08x}")
        else:
            parts.append(escapes[av])
    return "[" + "".join(parts) + "]"
