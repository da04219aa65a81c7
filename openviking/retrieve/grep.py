"""``grep``: a regular expression, line by line, over the content (L2) of the files below a URI.

The pattern language and its meaning are Python's ``re`` (Unicode ``\\w``/``\\d``/``\\s``/``\\b``,
``-i`` with Python's case rules). The speed comes from RE2, through pyarrow's
``match_substring_regex``, run over whole Arrow columns at once:

1. Python's own parser reads the pattern; it is written out again in RE2 syntax, with every
   character class spelled out as the code point ranges Python itself gives it (RE2's ``\\w`` is
   ASCII; Python's is not). Constructs RE2 has no equivalent for (back-references, look-around,
   conditionals, atomic groups and possessive repeats, counts above 1000) become a looser RE2
   pattern that selects candidate lines, and Python's ``re`` decides on those lines only.
   Python's Unicode ``\\b``/``\\B`` equal RE2's on ASCII-only lines, so only the other lines of
   such a pattern go through Python.
2. Strings every match must contain (``TODO|FIXME`` -> ``TODO``, ``FIXME``), which RE2 finds
   at memchr speed, pick candidate files; the multi-line form of the pattern, run over blocks
   of 8 lines (zero-copy slices of the content), picks candidate blocks; only their lines are
   cut out (numpy over the Arrow buffers) and tested with the line pattern, in one call per
   array, on two threads for large inputs. Files, their line table and blocks are kept for the
   next call in the same process while the store's version is unchanged.

RE2 runs in linear time, so a pattern such as ``(a+)+$`` on a long line finishes in
milliseconds; Python's backtracking engine only ever sees lines RE2 already selected, and only
for the constructs listed in 1.

Lines: content is split at ``\\n``; a ``\\r`` just before it belongs to the terminator (as with
``rg --crlf``); a final ``\\n`` does not start another line. Line numbers start at 1.
Files: regular files below the URI (the URI itself when it is a file), never hidden ones
(a name, or a directory below the URI, starting with ``.``; the directories' ``.abstract.md``
and ``.overview.md`` are not files of the store at all), at most ``level_limit`` levels below
the URI (a file directly in it is at level 1; 0 or None: no limit), none equal to or below
``exclude_uri`` (segment-aware). Order: depth-first, directories before files, then names
case-insensitively, then as written; within a file, by line. ``node_limit`` keeps the first N
matching lines in that order (0 or None: no limit); ``files_scanned`` then counts the files
searched up to the one holding the last match kept.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from re import _constants as sre_constants
from typing import TYPE_CHECKING, Any

from openviking.errors import InvalidArgumentError
from openviking.store.fs import VikingFS, tree_key
from openviking.uri import SCHEME, VikingURI, parse
from openviking.values import optional_limit

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from openviking.store.lance import LanceStore

__all__ = [
    "Blocks",
    "Found",
    "LinePattern",
    "Lines",
    "blocks_of",
    "check_arguments",
    "compile_pattern",
    "complement",
    "grep",
    "lines_of",
    "normalize",
    "re2_escape",
    "search_content",
    "set_re2",
    "to_bool",
]

MAX_CODE = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)
RE2_MAX_REPEAT = 1000
# Required strings: at most this many are searched one by one (each is a fast plain-string
# scan in RE2; a pattern of several alternatives runs many times slower).
MAX_LITERALS = 8
MAX_LITERAL_SET = 64
# Snapshots of file content kept between calls in one process (a warm SDK client); keyed by
# the store and its nodes table version, so any write makes them stale.
CACHE_MAX_BYTES = 512 * 1024 * 1024
CACHE_MAX_ENTRIES = 4
# Below this many bytes one thread is faster than two.
PARALLEL_MIN_BYTES = 4 * 1024 * 1024
# Marks a match inside a line when RE2 reports where the matches are (private-use characters).
MARK_OPEN, MARK_CLOSE = "\ue000", "\ue001"


# ---------------------------------------------------------------------------------------------
# arguments


def check_arguments(
    pattern: Any,
    *,
    case_insensitive: bool = False,
    fixed_strings: bool = False,
    node_limit: Any = None,
    level_limit: Any = 5,
    count: bool = False,
    files_with_matches: bool = False,
) -> tuple[int | None, int | None]:
    """Validate grep's arguments with no store and no heavy import (the regex with Python's ``re``).

    Returns:
        The node and level limits as numbers (None: no limit).

    Raises:
        InvalidArgumentError: the first bad argument.
    """
    limit = optional_limit(node_limit, "node_limit", "-n/--node-limit")
    depth_limit = optional_limit(level_limit, "level_limit", "-L/--level-limit")
    if count and files_with_matches:
        raise InvalidArgumentError(
            "Use just one of --count or --files-with-matches", details={"count": True, "files_with_matches": True}
        )
    _python_pattern(_string(pattern), bool(case_insensitive), bool(fixed_strings))
    return limit, depth_limit


def _string(pattern: Any) -> str:
    if not isinstance(pattern, str):
        raise InvalidArgumentError(f"pattern must be a string (got {type(pattern).__name__})")
    return pattern


@functools.lru_cache(maxsize=64)
def _python_pattern(pattern: str, case_insensitive: bool, fixed_strings: bool) -> re.Pattern[str]:
    source = re.escape(pattern) if fixed_strings else pattern
    try:
        return re.compile(source, re.IGNORECASE if case_insensitive else 0)
    except re.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        raise InvalidArgumentError(
            f"Invalid regex pattern: {exc.msg}{where}",
            hint="Escape special characters with a backslash, or search for the text as it is with -F/--fixed-strings",
            details={"pattern": pattern, "position": exc.pos, "reason": exc.msg},
        ) from exc
    except (OverflowError, RecursionError, ValueError) as exc:
        raise InvalidArgumentError(f"Invalid regex pattern: {exc}", details={"pattern": pattern}) from exc


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
        literals: strings one of which every match contains (RE2 finds a plain string many
            times faster than it runs a pattern), or () when there are none worth it.
        empty_line: Python's answer for an empty line where RE2's may differ (``\\B``: Python
            before 3.14 finds no non-boundary in an empty string, RE2 does), else None.
    """

    python: re.Pattern[str]
    exact: str | None
    ascii: str | None
    candidates: str | None
    content: str | None
    empty_line: bool | None = None
    literals: tuple[str, ...] = ()


def compile_pattern(pattern: str, *, case_insensitive: bool = False, fixed_strings: bool = False) -> LinePattern:
    """Validate ``pattern`` with Python's ``re`` and translate it for RE2 (cached per process).

    Raises:
        InvalidArgumentError: not a string, or not a valid Python regular expression.
    """
    return _compile_pattern(_string(pattern), bool(case_insensitive), bool(fixed_strings))


@functools.lru_cache(maxsize=64)
def _compile_pattern(pattern: str, case_insensitive: bool, fixed_strings: bool) -> LinePattern:
    compiled = _python_pattern(pattern, case_insensitive, fixed_strings)
    source = compiled.pattern
    exact = ascii_ = candidates = content = None
    empty_line = compiled.search("") is not None if re.search(r"\\B", source) else None
    try:
        translator = _Translator(source, compiled.flags)
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
    return LinePattern(compiled, exact, ascii_, candidates, content, empty_line, literals)


class _Untranslatable(Exception):
    """A construct the translator does not know: RE2 cannot help with this pattern."""


def _re2_or_none(text: str) -> str | None:
    """``text`` when RE2 (as pyarrow builds it) accepts it, else None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        pc.match_substring_regex(pa.array([""], pa.large_string()), text)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return text


class _Translator:
    """Writes a parsed Python pattern out as RE2 text, in one of four modes.

    ``line``: exact on any line, except where it reports ``inexact`` (no RE2 equivalent) or a
    Unicode ``boundary`` (``\\b``/``\\B``, written as RE2's ASCII ones).
    ``ascii``: exact on ASCII-only lines (every character set cut down to ASCII).
    ``loose``: matches a superset of the lines (what has no equivalent is widened or dropped).
    ``content``: a superset for a whole file: anchors match at line ends, where a ``\\r`` may
    precede the ``\\n``.
    """

    def __init__(self, source: str, flags: int) -> None:
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

    def emit(self, mode: str, *, crude: bool = False) -> tuple[str, bool, bool]:
        """``(RE2 text, inexact, Unicode boundary)`` of the whole pattern in ``mode``."""
        self.mode, self.crude, self.inexact, self.boundary = mode, crude, False, False
        text = self._seq(self.tree.data, self.flags)
        return text, self.inexact, self.boundary

    def _collect_groups(self, nodes: Iterable[Any], flags: int) -> None:
        c = self.c
        for op, av in nodes:
            if op is c.SUBPATTERN:
                group, add, delete, sub = av
                inner = _combine_flags(flags, add, delete)
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
            return self._set(_literal_set(av, flags))
        if op is c.NOT_LITERAL:
            return self._set(complement(_literal_set(av, flags)))
        if op is c.ANY:
            return self._set([(0, MAX_CODE)] if flags & c.SRE_FLAG_DOTALL else [(0, 9), (11, MAX_CODE)])
        if op is c.IN:
            return self._set(_class_set(av, flags))
        if op is c.CATEGORY:
            return self._set(_class_set([(op, av)], flags))
        if op is c.BRANCH:
            return "(?:" + "|".join(self._seq(alt, flags) for alt in av[1]) + ")"
        if op is c.SUBPATTERN:
            _group, add, delete, sub = av
            return "(?:" + self._seq(sub, _combine_flags(flags, add, delete)) + ")"
        if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            if op is c.POSSESSIVE_REPEAT:
                self.inexact = True  # a possessive match is also a match of the greedy form
            low, high, sub = av
            body = "(?:" + self._seq(sub, flags) + ")"
            return body + self._quantifier(low, high) + ("?" if op is c.MIN_REPEAT else "")
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

    def _quantifier(self, low: int, high: int) -> str:
        unbounded = high >= int(self.c.MAXREPEAT)
        if self.crude:
            return "*" if low == 0 else "+"
        if low > RE2_MAX_REPEAT or (not unbounded and high > RE2_MAX_REPEAT):
            self.inexact = True  # RE2 counts to 1000: {n,} with n <= 1000 is the nearest it can say
            return _count(min(low, RE2_MAX_REPEAT), None)
        if unbounded:
            return {0: "*", 1: "+"}.get(low) or _count(low, None)
        if low == high:
            return _count(low, low)
        return "?" if (low, high) == (0, 1) else _count(low, high)

    # ------------------------------------------------------------------ required literals

    def literals(self) -> tuple[str, ...]:
        """Plain strings one of which every match contains (at least 2 characters each, at most 8)."""
        required = self._literal_seq(self.tree.data, self.flags)[1]
        if not required or len(required) > MAX_LITERALS or min(map(len, required)) < 2:
            return ()
        return tuple(sorted(required))

    def _literal_seq(self, nodes: Iterable[Any], flags: int) -> tuple[frozenset[str] | None, frozenset[str] | None]:
        """``(exact, required)`` of a sequence: every string it matches when they are few; strings
        one of which each match contains. Runs of exact parts are joined; the best run or
        part's required set wins."""
        options: list[frozenset[str]] = []
        whole: frozenset[str] | None = frozenset({""})
        run: frozenset[str] = frozenset({""})
        for op, av in nodes:
            exact, required = self._literal_node(op, av, flags)
            if exact is not None and len(run) * len(exact) <= MAX_LITERAL_SET:
                run = frozenset(a + b for a in run for b in exact)
            else:
                options.append(run)
                run = exact if exact is not None else frozenset({""})
                if required:
                    options.append(required)
            if whole is not None:
                whole = (
                    frozenset(a + b for a in whole for b in exact)
                    if exact is not None and len(whole) * len(exact) <= MAX_LITERAL_SET
                    else None
                )
        options.append(run)
        return whole, max(options, key=_literal_score)

    def _literal_node(self, op: Any, av: Any, flags: int) -> tuple[frozenset[str] | None, frozenset[str] | None]:
        c = self.c
        if op is c.LITERAL:
            if flags & c.SRE_FLAG_IGNORECASE and _literal_set(av, flags) != [(av, av)]:
                return None, None  # a character with other cases is no plain string
            return frozenset({chr(av)}), frozenset({chr(av)})
        if op is c.IN and not flags & c.SRE_FLAG_IGNORECASE:
            ranges = _class_set(av, flags)
            if sum(high - low + 1 for low, high in ranges) <= 4:
                chars = frozenset(chr(x) for low, high in ranges for x in range(low, high + 1))
                return chars, chars
            return None, None
        if op is c.SUBPATTERN:
            _group, add, delete, sub = av
            return self._literal_seq(sub, _combine_flags(flags, add, delete))
        if op is c.BRANCH:
            parts = [self._literal_seq(alt, flags) for alt in av[1]]
            exact = frozenset().union(*(p[0] for p in parts)) if all(p[0] is not None for p in parts) else None
            required = frozenset().union(*(p[1] for p in parts)) if all(p[1] for p in parts) else None
            if exact is not None and len(exact) > MAX_LITERAL_SET:
                exact = None
            return exact, required
        if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            low, high, sub = av
            if low == 0:
                return None, None
            exact, required = self._literal_seq(sub, flags)
            return (exact if low == high == 1 else None), required
        if op is c.ATOMIC_GROUP:
            return self._literal_seq(av, flags)
        if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
            return frozenset({""}), None  # zero width
        return None, None

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


def _literal_score(option: frozenset[str]) -> tuple[int, int]:
    if not option or len(option) > MAX_LITERALS:
        return (-1, 0)
    return (min(map(len, option)), -len(option))


def _count(low: int, high: int | None) -> str:
    """An RE2 counted repeat: ``{low}``, ``{low,}`` or ``{low,high}``."""
    if high is None:
        return "{" + str(low) + ",}"
    return "{" + str(low) + "}" if low == high else "{" + str(low) + "," + str(high) + "}"


def _hex(code: int) -> str:
    return "\\x{" + format(code, "X") + "}"


def _combine_flags(flags: int, add: int, delete: int) -> int:
    # As re._compiler._combine_flags: a scoped (?a:...) or (?u:...) replaces the type flag.
    type_flags = re.ASCII | re.UNICODE | re.LOCALE
    if add & type_flags:
        flags &= ~type_flags
    return (flags | add) & ~delete


# ----------------------------------------------------------------------- character sets
# A set of characters is a sorted list of disjoint, non-adjacent (low, high) code point ranges.

Ranges = list[tuple[int, int]]


def normalize(ranges: Iterable[tuple[int, int]]) -> Ranges:
    out: Ranges = []
    for low, high in sorted(ranges):
        if out and low <= out[-1][1] + 1:
            if high > out[-1][1]:
                out[-1] = (out[-1][0], high)
        else:
            out.append((low, high))
    return out


def complement(ranges: Ranges) -> Ranges:
    out: Ranges = []
    start = 0
    for low, high in ranges:
        if low > start:
            out.append((start, low - 1))
        start = high + 1
    if start <= MAX_CODE:
        out.append((start, MAX_CODE))
    return out


def _minus_points(ranges: Ranges, points: Sequence[int]) -> Ranges:
    """``ranges`` without the sorted code points ``points``."""
    import bisect

    out: Ranges = []
    for low, high in ranges:
        start = low
        index = bisect.bisect_left(points, low)
        while index < len(points) and points[index] <= high:
            point = points[index]
            if point > start:
                out.append((start, point - 1))
            start = point + 1
            index += 1
        if start <= high:
            out.append((start, high))
    return out


def _char_re2(code: int) -> str:
    if SURROGATES[0] <= code <= SURROGATES[1]:
        return r"[^\x{0}-\x{10FFFF}]"  # text never holds a lone surrogate
    char = chr(code)
    if char.isascii() and (char.isalnum() or char == "_"):
        return char
    return _hex(code)


def set_re2(ranges: Ranges) -> str:
    ranges = _minus_surrogates(ranges)
    if not ranges:
        return r"[^\x{0}-\x{10FFFF}]"
    if ranges == [(0, SURROGATES[0] - 1), (SURROGATES[1] + 1, MAX_CODE)]:
        return r"(?s:.)"
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _char_re2(ranges[0][0])
    parts = []
    for low, high in ranges:
        parts.append(_hex(low) if low == high else _hex(low) + "-" + _hex(high))
    return "[" + "".join(parts) + "]"


def _minus_surrogates(ranges: Ranges) -> Ranges:
    out: Ranges = []
    for low, high in ranges:
        if high < SURROGATES[0] or low > SURROGATES[1]:
            out.append((low, high))
            continue
        if low < SURROGATES[0]:
            out.append((low, SURROGATES[0] - 1))
        if high > SURROGATES[1]:
            out.append((SURROGATES[1] + 1, high))
    return out


@functools.cache
def _all_characters() -> str:
    """Every code point, in order, as one string (index == code point)."""
    import array

    return array.array("I", range(MAX_CODE + 1)).tobytes().decode("utf-32-le", "surrogatepass")


@functools.cache
def _category_ranges(category: str, ascii_only: bool) -> tuple[tuple[int, int], ...]:
    """Python's own ``\\w``, ``\\d`` or ``\\s`` as code point ranges (asked of ``re`` itself)."""
    if ascii_only:
        fixed = {
            "word": ((48, 57), (65, 90), (95, 95), (97, 122)),
            "digit": ((48, 57),),
            "space": ((9, 13), (32, 32)),
        }
        return fixed[category]
    regex = {"word": r"\w+", "digit": r"\d+", "space": r"\s+"}[category]
    return tuple((m.start(), m.end() - 1) for m in re.finditer(regex, _all_characters()))


# The class escapes the parser emits (it never emits the CATEGORY_UNI_* forms: the compiler
# adds those; anything else is left to Python's re).
_CATEGORIES = {
    sre_constants.CATEGORY_DIGIT: ("digit", False),
    sre_constants.CATEGORY_NOT_DIGIT: ("digit", True),
    sre_constants.CATEGORY_SPACE: ("space", False),
    sre_constants.CATEGORY_NOT_SPACE: ("space", True),
    sre_constants.CATEGORY_WORD: ("word", False),
    sre_constants.CATEGORY_NOT_WORD: ("word", True),
}


def _category_set(code: Any, flags: int) -> Ranges:
    ascii_only = bool(flags & sre_constants.SRE_FLAG_ASCII)
    if code not in _CATEGORIES:
        raise _Untranslatable(str(code))
    name, negated = _CATEGORIES[code]
    ranges = list(_category_ranges(name, ascii_only))
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
        ranges = normalize([*_minus_points(ranges, candidates), *((x, x) for x in accepted)])
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


# ---------------------------------------------------------------------------------------------
# files, lines and the snapshot cache


@dataclass(frozen=True)
class Lines:
    """All lines of some files, without their terminators, as one Arrow string array.

    ``file[i]`` is the index of line ``i``'s file (in the content array it was cut from),
    ``number[i]`` its 1-based number there, ``start[i]`` the byte offset where it starts in that
    content, ``first[f]`` the index of file ``f``'s first line (``first[f + 1]`` is one past
    its last).
    """

    text: pa.LargeStringArray
    file: np.ndarray
    number: np.ndarray
    start: np.ndarray
    first: np.ndarray


@dataclass(frozen=True)
class Blocks:
    """Runs of up to ``BLOCK_LINES`` lines of one file, as zero-copy slices of the content.

    A pattern's multi-line form over blocks skips most lines of a file that matches a few
    times: only the lines of the blocks it matches are tested one by one. ``file[b]`` and
    ``first_number[b]`` are block ``b``'s file and the number of its first line; ``of_line``
    (with a line table) gives each line's block.
    """

    text: pa.LargeStringArray
    file: np.ndarray
    first_number: np.ndarray
    of_line: np.ndarray | None = None


BLOCK_LINES = 8


def blocks_of(content: pa.LargeStringArray, lines: Lines | None = None) -> Blocks:
    """Group the lines of ``content`` into blocks (the content's own buffer, re-cut)."""
    import numpy as np
    import pyarrow as pa

    if lines is not None:
        start, file, number = lines.start, lines.file, lines.number
    else:
        cut = _line_starts(content)
        start, file, number = cut.starts, cut.file, cut.number
    heads = (number - 1) % BLOCK_LINES == 0
    first_lines = np.flatnonzero(heads)
    offsets = _offsets(content)
    base, end = int(offsets[0]), int(offsets[-1])
    cuts = np.append(start[first_lines], end - base) + base
    if len(first_lines):
        cuts[0] = base
    text = pa.LargeStringArray.from_buffers(len(first_lines), pa.py_buffer(cuts.astype(np.int64)), content.buffers()[2])
    of_line = np.cumsum(heads) - 1 if lines is not None else None
    return Blocks(text, file[first_lines], number[first_lines], of_line)


@dataclass(frozen=True)
class _Cut:
    """Where the lines of a content array start (byte offsets relative to its first string)."""

    buf: np.ndarray
    offsets: np.ndarray
    newlines: np.ndarray
    starts: np.ndarray
    file: np.ndarray
    number: np.ndarray
    first: np.ndarray


def _offsets(content: pa.LargeStringArray) -> np.ndarray:
    import numpy as np

    return np.frombuffer(content.buffers()[1], dtype=np.int64, count=len(content) + 1, offset=content.offset * 8)


def _line_starts(content: pa.LargeStringArray) -> _Cut:
    import numpy as np

    offsets = _offsets(content)
    base, end = int(offsets[0]), int(offsets[-1])
    data = content.buffers()[2]
    buf = np.frombuffer(data, dtype=np.uint8, count=end - base, offset=base) if end > base else np.zeros(0, np.uint8)
    offsets = offsets - base
    file_start, file_end = offsets[:-1], offsets[1:]
    nonempty = file_end > file_start
    newlines = np.flatnonzero(buf == 10)
    after = newlines + 1
    file_of_newline = np.searchsorted(offsets, newlines, side="right") - 1
    starts = np.concatenate([file_start[nonempty], after[after < file_end[file_of_newline]]])
    starts.sort(kind="stable")
    file_of_line = np.searchsorted(offsets, starts, side="right") - 1
    first = np.searchsorted(starts, offsets)
    first[-1] = len(starts)
    number = np.arange(len(starts), dtype=np.int64) - first[file_of_line] + 1
    return _Cut(buf, offsets, newlines, starts, file_of_line, number, first)


def lines_of(content: pa.LargeStringArray) -> Lines:
    """Cut every string of ``content`` into lines (``\\n`` or ``\\r\\n`` ends a line), in numpy."""
    import numpy as np
    import pyarrow as pa

    cut = _line_starts(content)
    buf, offsets, newlines, starts = cut.buf, cut.offsets, cut.newlines, cut.starts
    file_start, file_end = offsets[:-1], offsets[1:]
    nonempty = file_end > file_start
    open_end = nonempty.copy()
    open_end[nonempty] = buf[file_end[nonempty] - 1] != 10
    ends = np.concatenate([newlines, file_end[open_end]])
    ends.sort(kind="stable")
    # a "\r" just before the "\n" belongs to the terminator
    at_newline = ends < len(buf)
    at_newline[at_newline] = buf[ends[at_newline]] == 10
    carriage = at_newline & (ends > starts)
    carriage[carriage] = buf[ends[carriage] - 1] == 13
    ends = ends - carriage
    new_offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(ends - starts, out=new_offsets[1:])
    # every byte is either in a line or in a terminator ("\n", or the "\r" of "\r\n")
    keep = buf != 10
    keep[ends[carriage]] = False
    text = pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(new_offsets), pa.py_buffer(buf[keep]))
    return Lines(text, cut.file, cut.number, starts, cut.first)


@dataclass
class _Snapshot:
    """The files below ``scope`` (every depth, or at most ``max_depth``), in traversal order."""

    path: str
    version: int
    scope: VikingURI
    max_depth: int | None
    uris: pa.Array
    uri_list: list[str]
    depth: np.ndarray
    content: pa.LargeStringArray
    nbytes: int
    uses: int = 1
    _lines: Lines | None = field(default=None, repr=False)
    _blocks: Blocks | None = field(default=None, repr=False)
    _ascii: np.ndarray | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def covers(self, path: str, version: int, scope: VikingURI, max_depth: int | None) -> bool:
        if path != self.path or version != self.version or not scope.is_within(self.scope):
            return False
        return self.max_depth is None or (max_depth is not None and max_depth <= self.max_depth)

    def lines(self) -> Lines:
        """Every line of every file (built once per snapshot, on its second search)."""
        with self._lock:
            if self._lines is None:
                self._lines = lines_of(self.content)
            return self._lines

    def blocks(self) -> Blocks:
        """The snapshot's lines grouped in blocks (built with the line table)."""
        table = self.lines()
        with self._lock:
            if self._blocks is None:
                self._blocks = blocks_of(self.content, table)
            return self._blocks

    def ascii_files(self) -> np.ndarray:
        """Which files hold only ASCII text."""
        import pyarrow.compute as pc

        with self._lock:
            if self._ascii is None:
                self._ascii = to_bool(pc.string_is_ascii(self.content))
            return self._ascii


class _SnapshotCache:
    """The last few snapshots read, newest last, within a byte budget."""

    def __init__(self, max_bytes: int, max_entries: int) -> None:
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._items: OrderedDict[int, _Snapshot] = OrderedDict()
        self._lock = threading.Lock()

    def find(self, path: str, version: int, scope: VikingURI, max_depth: int | None) -> _Snapshot | None:
        with self._lock:
            for key, snap in reversed(self._items.items()):
                if snap.covers(path, version, scope, max_depth):
                    self._items.move_to_end(key)
                    return snap
            return None

    def put(self, snap: _Snapshot) -> None:
        with self._lock:
            for key in [k for k, s in self._items.items() if s.path == snap.path and s.version != snap.version]:
                del self._items[key]  # an older version of the same store is dead
            if snap.nbytes > self.max_bytes:
                return
            self._items[id(snap)] = snap
            while len(self._items) > self.max_entries or sum(s.nbytes for s in self._items.values()) > self.max_bytes:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


_CACHE = _SnapshotCache(CACHE_MAX_BYTES, CACHE_MAX_ENTRIES)


def _snapshot(store: LanceStore, scope: VikingURI, max_depth: int | None) -> _Snapshot:
    """The files below ``scope``: from the cache while the store is unchanged, else read."""
    version = store.nodes_version()
    cached = _CACHE.find(store.path, version, scope, max_depth)
    if cached is not None:
        cached.uses += 1
        return cached
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    below = None if max_depth is None else int(max_depth) - scope.depth
    table = store.scan_nodes_below(scope, columns=["uri", "content"], files_only=True, max_depth=below)
    uri_list = table.column("uri").to_pylist()
    order = sorted(range(len(uri_list)), key=lambda i: tree_key(uri_list[i], is_dir=False))
    indices = pa.array(order, pa.int64())
    uris = table.column("uri").take(indices).combine_chunks()
    content = pc.fill_null(table.column("content").take(indices).combine_chunks(), "")
    if content.type != pa.large_string():
        content = content.cast(pa.large_string())
    depth = np.asarray(pc.subtract(pc.count_substring(uris, "/"), 1), dtype=np.int64)
    # the budget counts the line table too, which a second search of the snapshot builds
    snap = _Snapshot(
        store.path, version, scope, max_depth, uris, [uri_list[i] for i in order], depth, content, 2 * content.nbytes
    )
    _CACHE.put(snap)
    return snap


def _regex_mask(values: pa.Array, regex: str) -> np.ndarray:
    """Which strings RE2 ``regex`` finds a match in (two threads on large inputs)."""
    import numpy as np
    import pyarrow.compute as pc

    if not len(values):
        return np.zeros(0, dtype=bool)
    if values.nbytes >= PARALLEL_MIN_BYTES and len(values) > 1:
        from concurrent.futures import ThreadPoolExecutor

        half = len(values) // 2
        with ThreadPoolExecutor(max_workers=2) as pool:
            parts = list(
                pool.map(
                    lambda part: to_bool(pc.match_substring_regex(part, regex)),
                    [values.slice(0, half), values.slice(half)],
                )
            )
        return np.concatenate(parts)
    return to_bool(pc.match_substring_regex(values, regex))


def to_bool(mask: Any) -> np.ndarray:
    import numpy as np
    import pyarrow as pa

    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    return np.asarray(mask.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


def _take(values: pa.Array, index: np.ndarray) -> pa.Array:
    import pyarrow as pa

    return values if len(index) == len(values) else values.take(pa.array(index, pa.int64()))


def re2_escape(text: str) -> str:
    """RE2 text matching exactly ``text``."""
    return "".join(_char_re2(ord(char)) for char in text)


# ---------------------------------------------------------------------------------------------
# grep


def grep(
    store: LanceStore,
    uri: str,
    pattern: str,
    *,
    user: str = "default",
    case_insensitive: bool = False,
    exclude_uri: str | Sequence[str] | None = None,
    node_limit: int | None = None,
    level_limit: int | None = 5,
    fixed_strings: bool = False,
    count: bool = False,
    files_with_matches: bool = False,
    spans: bool = False,
) -> dict[str, Any]:
    """Search the content of the files at or below ``uri`` for ``pattern``, line by line.

    Args:
        store: the open store.
        uri: a directory (searched ``level_limit`` levels deep) or a file.
        pattern: a Python regular expression (``re`` syntax), or text with ``fixed_strings``.
        user: whose space ``viking://~`` names.
        case_insensitive: ignore case (Python's ``re.IGNORECASE``).
        exclude_uri: skip this URI (or each of these URIs) and everything below it (segment-aware).
        node_limit: at most this many matching lines (0 or None: all).
        level_limit: only files at most this many levels below ``uri`` (0 or None: all).
        fixed_strings: ``pattern`` is plain text, not a regular expression.
        count: return ``counts`` (``[{uri, count}]``, files with a match) instead of ``matches``.
        files_with_matches: return ``files`` (URIs of the files with a match) instead of ``matches``.
        spans: add ``spans`` (``[[start, end], ...]``, character offsets) to each match.

    Returns:
        ``{"matches": [{"uri", "line", "content"}], "count", "match_count", "files_scanned"}``
        (``matches`` replaced by ``counts`` or ``files`` with those options); ``count`` and
        ``match_count`` are the number of matching lines returned.

    Raises:
        InvalidArgumentError: bad pattern, bad limit, or both ``count`` and ``files_with_matches``.
        InvalidURIError, PermissionDeniedError: a malformed ``uri`` or ``exclude_uri``.
        NotFoundError: nothing is stored at ``uri``.
    """
    limit, depth_limit = check_arguments(
        pattern,
        case_insensitive=case_insensitive,
        fixed_strings=fixed_strings,
        node_limit=node_limit,
        level_limit=level_limit,
        count=count,
        files_with_matches=files_with_matches,
    )
    compiled = compile_pattern(pattern, case_insensitive=case_insensitive, fixed_strings=fixed_strings)
    target = parse(uri, user=user, field="uri")
    excluded = [parse(item, user=user, field="exclude_uri") for item in excluded_uris(exclude_uri)]
    is_file = not VikingFS(store).node(target, columns=["uri", "is_dir"])["is_dir"]
    max_depth = None if is_file or depth_limit is None else target.depth + depth_limit
    snap = _snapshot(store, target, max_depth)
    selected = _select(snap, target, is_file, max_depth, excluded)
    found = _search(snap, selected, compiled, spans=spans)
    return _result(snap, selected, found, limit, count=count, files_with_matches=files_with_matches)


def excluded_uris(exclude_uri: str | Sequence[str] | None) -> list[str]:
    """``exclude_uri`` as a list: one URI, several (``-x A -x B``), or none."""
    if exclude_uri is None:
        return []
    return [exclude_uri] if isinstance(exclude_uri, str) else list(exclude_uri)


def _select(
    snap: _Snapshot, target: VikingURI, is_file: bool, max_depth: int | None, excluded: list[VikingURI]
) -> np.ndarray:
    """Indices (into the snapshot, in traversal order) of the files to search."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    uris = snap.uris
    keep = np.ones(len(uris), dtype=bool)
    if is_file:
        keep &= to_bool(pc.equal(uris, pa.scalar(str(target), uris.type)))
    else:
        prefix = SCHEME if target.is_root else str(target) + "/"
        if snap.scope != target:
            keep &= to_bool(pc.starts_with(uris, prefix))
        if max_depth is not None and (snap.max_depth is None or max_depth < snap.max_depth):
            keep &= snap.depth <= max_depth
        # hidden: a name below the target that starts with "."
        keep &= ~to_bool(pc.match_substring_regex(uris, "^" + re2_escape(prefix) + r"(?:\.|.*/\.)"))
    for skipped in excluded:
        if skipped.is_root:
            keep[:] = False
        else:
            text = str(skipped)
            keep &= ~(to_bool(pc.equal(uris, pa.scalar(text, uris.type))) | to_bool(pc.starts_with(uris, text + "/")))
    return np.flatnonzero(keep)


@dataclass
class Found:
    """Matching lines in traversal order: snapshot file index, line number, text (and spans)."""

    file: list[int]
    number: list[int]
    text: list[str]
    spans: list[list[list[int]]] | None = None


def _search(snap: _Snapshot, selected: np.ndarray, compiled: LinePattern, *, spans: bool) -> Found:
    warm = snap._lines is not None or snap.uses > 1
    return search_content(
        snap.content,
        selected,
        compiled,
        lines=snap.lines() if warm else None,
        blocks=snap.blocks() if warm else None,
        ascii_files=snap.ascii_files,
        spans=spans,
    )


def search_content(
    content: pa.LargeStringArray,
    files: np.ndarray,
    compiled: LinePattern,
    *,
    lines: Lines | None = None,
    blocks: Blocks | None = None,
    ascii_files: Callable[[], np.ndarray] | None = None,
    spans: bool = False,
) -> Found:
    """The lines of files ``files`` (sorted indices into ``content``) in which ``compiled`` matches.

    Without ``lines``/``blocks`` (the line table and blocks of the whole ``content``), the
    candidate files are cut into lines here; with them, only the lines of matching blocks are
    tested. ``ascii_files`` gives which files are pure ASCII (computed here when None).
    """
    import numpy as np
    import pyarrow.compute as pc

    if not len(files):
        return Found([], [], [])
    restrict = None
    if lines is not None and blocks is not None:
        chosen = np.zeros(len(content), dtype=bool)
        chosen[files] = True
        block_index = _keep_matching(blocks.text, np.flatnonzero(chosen[blocks.file]), compiled)
        in_block = np.zeros(len(blocks.file), dtype=bool)
        in_block[block_index] = True
        assert blocks.of_line is not None
        line_mask = in_block[blocks.of_line]
        if line_mask.sum() * 2 > len(line_mask):  # most lines: test them all rather than copy most
            text, line_file, line_number, restrict = lines.text, lines.file, lines.number, line_mask
        else:
            line_index = np.flatnonzero(line_mask)
            text, line_file, line_number = (
                _take(lines.text, line_index),
                lines.file[line_index],
                lines.number[line_index],
            )
    else:
        # the candidate files, cut into blocks of lines; only the lines of matching blocks are cut
        files = _keep_matching(content, files, compiled, regex=False)
        blocks = blocks_of(_take(content, files))
        chosen = _keep_matching(blocks.text, np.arange(len(blocks.file)), compiled)
        part = lines_of(_take(blocks.text, chosen))
        owner = chosen[part.file]
        text, line_file, line_number = (
            part.text,
            files[blocks.file[owner]],
            blocks.first_number[owner] + part.number - 1,
        )

    def ascii_lines() -> np.ndarray:
        per_file = ascii_files() if ascii_files is not None else to_bool(pc.string_is_ascii(content))
        flags = per_file[line_file]
        other = np.flatnonzero(~flags)
        if len(other):
            flags[other] = to_bool(pc.string_is_ascii(_take(text, other)))
        return flags

    hit, by_re2 = _decide(text, compiled, ascii_lines, restrict)
    if compiled.empty_line is not None and len(text):
        hit[np.diff(_offsets(text)) == 0] = compiled.empty_line
    hits = np.flatnonzero(hit)
    if not len(hits):
        return Found([], [], [])
    hit_text = _take(text, hits)
    found = Found(line_file[hits].tolist(), line_number[hits].tolist(), hit_text.to_pylist())
    if spans:
        found.spans = _spans(found.text, hit_text, compiled, by_re2[hits])
    return found


def _keep_matching(texts: pa.Array, index: np.ndarray, compiled: LinePattern, *, regex: bool = True) -> np.ndarray:
    """The entries of ``index`` whose text (a file or a block of lines) can hold a match: one
    of the pattern's required strings, then (with ``regex``) its multi-line form."""
    import numpy as np

    if compiled.literals and len(index):
        found = np.zeros(len(index), dtype=bool)
        for literal in compiled.literals:
            found |= _mask_of(texts, index, re2_escape(literal))
        index = index[found]
    if regex and compiled.content is not None and len(index):
        index = index[_mask_of(texts, index, compiled.content)]
    return index


def _mask_of(texts: pa.Array, index: np.ndarray, regex: str) -> np.ndarray:
    """Which of the strings ``texts[index]`` RE2 finds a match in (all of them are tested when
    that is cheaper than copying most of them)."""
    if len(index) * 2 > len(texts):
        return _regex_mask(texts, regex)[index]
    return _regex_mask(_take(texts, index), regex)


def _decide(
    text: pa.Array,
    compiled: LinePattern,
    ascii_lines: Callable[[], np.ndarray],
    restrict: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(matches, decided by RE2)`` for every line of ``text`` (or those ``restrict`` keeps)."""
    import numpy as np

    count = len(text)
    if compiled.exact is not None:
        hit = _regex_mask(text, compiled.exact)
        return (hit & restrict if restrict is not None else hit), np.ones(count, dtype=bool)
    hit = np.zeros(count, dtype=bool)
    by_re2 = np.zeros(count, dtype=bool)
    rest = np.arange(count) if restrict is None else np.flatnonzero(restrict)
    if compiled.ascii is not None:
        by_re2 = ascii_lines()
        hit = _regex_mask(text, compiled.ascii) & by_re2  # RE2 over every line: no copy to make
        if restrict is not None:
            hit &= restrict
        rest = rest[~by_re2[rest]]
    if len(rest):
        if compiled.candidates is not None:
            rest = rest[_mask_of(text, rest, compiled.candidates)]
        search = compiled.python.search
        strings = _take(text, rest).to_pylist()
        hit[rest] = np.fromiter((search(line) is not None for line in strings), dtype=bool, count=len(strings))
    return hit, by_re2


def _spans(lines: list[str], hit_text: pa.Array, compiled: LinePattern, by_re2: np.ndarray) -> list[list[list[int]]]:
    """Where the pattern matches in each matching line (character offsets), to highlight them."""
    import pyarrow.compute as pc

    marked: list[str | None] = [None] * len(lines)
    regex = compiled.exact or compiled.ascii
    if regex is not None and by_re2.any():
        rewritten = pc.replace_substring_regex(hit_text, regex, MARK_OPEN + "\\0" + MARK_CLOSE).to_pylist()
        for i, line in enumerate(lines):
            if by_re2[i] and MARK_OPEN not in line and MARK_CLOSE not in line:
                marked[i] = rewritten[i]
    out: list[list[list[int]]] = []
    for line, text in zip(lines, marked, strict=True):
        if text is None:
            out.append([[m.start(), m.end()] for m in compiled.python.finditer(line) if m.end() > m.start()])
            continue
        spans: list[list[int]] = []
        position, start = 0, -1
        for char in text:
            if char == MARK_OPEN:
                start = position
            elif char == MARK_CLOSE:
                if position > start >= 0:
                    spans.append([start, position])
                start = -1
            else:
                position += 1
        out.append(spans)
    return out


def no_matches(*, count: bool = False, files_with_matches: bool = False, **_: Any) -> dict[str, Any]:
    """The result of a grep that had no file to search (a session's folder holds messages, not files)."""
    key = "counts" if count else "files" if files_with_matches else "matches"
    return {key: [], "count": 0, "match_count": 0, "files_scanned": 0}


def _result(
    snap: _Snapshot,
    selected: np.ndarray,
    found: Found,
    limit: int | None,
    *,
    count: bool,
    files_with_matches: bool,
) -> dict[str, Any]:
    import numpy as np

    total = len(found.file)
    kept = total if limit is None else min(total, limit)
    if kept < total:
        files_scanned = int(np.searchsorted(selected, found.file[kept - 1])) + 1
    else:
        files_scanned = len(selected)
    uris = snap.uri_list
    result: dict[str, Any]
    if count:
        counts: dict[int, int] = {}
        for f in found.file[:kept]:
            counts[f] = counts.get(f, 0) + 1
        result = {"counts": [{"uri": uris[f], "count": n} for f, n in counts.items()]}
    elif files_with_matches:
        result = {"files": [uris[f] for f in dict.fromkeys(found.file[:kept])]}
    elif found.spans is not None:
        result = {
            "matches": [
                {"uri": uris[f], "line": n, "content": t, "spans": s}
                for f, n, t, s in zip(found.file[:kept], found.number, found.text, found.spans, strict=False)
            ]
        }
    else:
        owners = [uris[f] for f in found.file[:kept]]
        result = {
            "matches": [
                {"uri": u, "line": n, "content": t} for u, n, t in zip(owners, found.number, found.text, strict=False)
            ]
        }
    # count is the length of the list returned (files with -l, files counted with -c), as glob's
    # is; match_count is the matching lines in every mode
    listed = next(iter(result.values()))
    result.update({"count": len(listed), "match_count": kept, "files_scanned": files_scanned})
    return result
