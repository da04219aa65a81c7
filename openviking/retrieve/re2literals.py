"""The strings every match of a pattern must contain, which RE2 finds at memchr speed.

``TODO|FIXME`` must contain ``TODO`` or ``FIXME``: grep looks for those first, to pick the
files and blocks worth running the pattern on. Read from the same parse tree as the RE2
translation (:mod:`.re2translate` mixes this in, and gives the character sets).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .charset import Ranges

__all__ = ["MAX_LITERALS", "MAX_LITERAL_SET", "RequiredLiterals", "combine_flags"]

# Required strings: at most this many are searched one by one (each is a fast plain-string
# scan in RE2; a pattern of several alternatives runs many times slower).
MAX_LITERALS = 8
MAX_LITERAL_SET = 64


def combine_flags(flags: int, add: int, delete: int) -> int:
    """The flags inside ``(?add-delete:...)``, as ``re._compiler._combine_flags`` makes them:
    a scoped ``(?a:...)`` or ``(?u:...)`` replaces the type flag."""
    type_flags = re.ASCII | re.UNICODE | re.LOCALE
    if add & type_flags:
        flags &= ~type_flags
    return (flags | add) & ~delete


class RequiredLiterals:
    """The required strings of a parsed pattern; the class using it gives ``c`` (re's constants),
    ``tree`` and ``flags``, and the character sets of a literal and of a class."""

    c: Any
    tree: Any
    flags: int

    def _literal_set(self, code: int, flags: int) -> Ranges:
        raise NotImplementedError

    def _class_set(self, items: Any, flags: int) -> Ranges:
        raise NotImplementedError

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
            if flags & c.SRE_FLAG_IGNORECASE and self._literal_set(av, flags) != [(av, av)]:
                return None, None  # a character with other cases is no plain string
            return frozenset({chr(av)}), frozenset({chr(av)})
        if op is c.IN and not flags & c.SRE_FLAG_IGNORECASE:
            ranges = self._class_set(av, flags)
            if sum(high - low + 1 for low, high in ranges) <= 4:
                chars = frozenset(chr(x) for low, high in ranges for x in range(low, high + 1))
                return chars, chars
            return None, None
        if op is c.SUBPATTERN:
            _group, add, delete, sub = av
            return self._literal_seq(sub, combine_flags(flags, add, delete))
        if op is c.BRANCH:
            parts = [self._literal_seq(alt, flags) for alt in av[1]]
            exacts = [p[0] for p in parts if p[0] is not None]
            requireds = [p[1] for p in parts if p[1]]
            exact = frozenset[str]().union(*exacts) if len(exacts) == len(parts) else None
            required = frozenset[str]().union(*requireds) if len(requireds) == len(parts) else None
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


def _literal_score(option: frozenset[str]) -> tuple[int, int]:
    if not option or len(option) > MAX_LITERALS:
        return (-1, 0)
    return (min(map(len, option)), -len(option))
