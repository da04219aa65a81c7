"""Counted repeats in the terms RE2 takes them, and what a pattern costs RE2 to run.

RE2 refuses a count above 1,000, and nested counts whose product is above 1,000 (``(a{500}){3}``).
``x{m,n}`` is the same language as ``x{a1,b1}x{a2,b2}...`` whenever the ``a`` add up to ``m`` and
the ``b`` to ``n`` (any number of repeats from ``m`` to ``n`` can be cut so, and no other), so a
count RE2 refuses is written as several it takes: ``x{1,1001}`` is ``x{1,1000}x{0,1}``. Cut as
:func:`pieces` cuts it, each greedy piece taking as many as it can before the next, the first
match found repeats ``x`` the most times that lead to a match, as Python's greedy repeat does
(the fewest for a lazy one): for a body of fixed width the match is Python's exactly. For a
body of variable width (``(.*){1,1001}``) the lines that match are the same; where a match ends
may differ from Python's (it is still a match of the pattern).

A repeat of a repeat without an upper bound is folded first (:func:`fold`): ``(.*){1,1001}``
matches the same lines as ``.*``, ``(a+){3}`` as ``a{3,}``. RE2 would otherwise run a
thousand copies of ``.*`` side by side. And a line holds a match of ``XY`` where ``X`` can match
nothing exactly when it holds a match of ``Y``: to pick lines, what can match nothing at the
start and end of a pattern is left out (:func:`trimmed`: ``(a|a?){1001}b`` picks the lines of
``b``); where the matches are is still the whole pattern's.

RE2 runs in time linear in the text, times the number of positions of its automaton that can be
alive at once: at most :func:`positions`, the character tests of the pattern with every count
multiplied out. Mostly its DFA runs at a few nanoseconds a byte whatever that number is; on
patterns whose DFA would need too many states it falls back to simulating the automaton, which
measured up to about 40 ns per position per byte (``(?:\\w+\\s*){1000}c``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = [
    "MAX_POSITIONS",
    "RE2_MAX_REPEAT",
    "fold",
    "piece_count",
    "pieces",
    "positions",
    "quantifier",
    "trimmed",
]

RE2_MAX_REPEAT = 1000
# positions() stops counting here: a pattern that big is never run in this process anyway
MAX_POSITIONS = 10**9


def fold(low: int, high: int | None, sub: Any, lazy: bool, c: Any) -> tuple[int, int | None, Any, bool]:
    """``sub{low,high}`` (``high`` None: unbounded; ``lazy``: ``{}?``) with a body that is one
    unbounded repeat ``y{a,}`` written as a repeat of ``y`` that matches the same lines:
    ``y{low*a,}`` when ``low >= 1``, ``y*`` when ``low == 0`` and ``a <= 1``; else as it is.
    ``c`` is ``re._constants``; the body's own laziness is kept."""
    while high is None or high >= 1:
        inner = _single_repeat(sub, c)
        if inner is None:
            break
        op, least, body = inner
        if low >= 1:
            low = low * least
        elif least > 1:
            break
        high, sub, lazy = None, body, op is c.MIN_REPEAT
    return low, high, sub, lazy


def _single_repeat(nodes: Any, c: Any) -> tuple[Any, int, Any] | None:
    """``(op, low, body)`` when ``nodes`` is one greedy or lazy repeat without an upper bound,
    possibly inside groups that change no flag."""
    while len(nodes) == 1:
        op, av = nodes[0]
        if op is c.SUBPATTERN and not av[1] and not av[2]:
            nodes = av[3]
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[1] >= int(c.MAXREPEAT):
            return op, av[0], av[2]
        else:
            return None
    return None


def piece_count(low: int, high: int | None, limit: int) -> int:
    """``len(pieces(low, high, limit))``, without making them."""
    if high is None:
        return low // limit + (1 if low % limit else 0) + 1
    return max(1, -(-high // limit))


def pieces(low: int, high: int | None, limit: int) -> list[tuple[int, int | None]]:
    """``x{low,high}`` (``high`` None: no upper bound) as consecutive counts of at most ``limit``
    each (``(0, None)`` is ``x*``), largest first, so that greedy pieces try the most repeats first.

    >>> pieces(1, 1001, 1000)
    [(1, 1000), (0, 1)]
    >>> pieces(2500, None, 1000)
    [(1000, 1000), (1000, 1000), (500, 500), (0, None)]
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if high is None:
        whole, rest = divmod(low, limit)
        return [(limit, limit)] * whole + ([(rest, rest)] if rest else []) + [(0, None)]
    out: list[tuple[int, int | None]] = []
    wanted, left = low, high
    while left > 0:
        most = min(limit, left)
        least = min(most, wanted)
        out.append((least, most))
        wanted -= least
        left -= most
    return out or [(0, 0)]


def quantifier(low: int, high: int | None) -> str:
    """The RE2 quantifier of ``{low,high}``: ``*``, ``+``, ``?``, ``{n}``, ``{n,}`` or ``{n,m}``."""
    if high is None:
        return {0: "*", 1: "+"}.get(low) or "{" + str(low) + ",}"
    if (low, high) == (0, 1):
        return "?"
    return "{" + str(low) + "}" if low == high else "{" + str(low) + "," + str(high) + "}"


def positions(nodes: Iterable[tuple[Any, Any]], c: Any, groups: dict[int, tuple[Any, int]]) -> int:
    """The character tests of a parsed Python pattern (``re._parser`` nodes, ``c`` its constants
    module), every count multiplied out (``{n,}`` counts ``n``, at least once), a back-reference
    as its group; capped at :data:`MAX_POSITIONS`."""
    total = 0
    for op, av in nodes:
        if op in (c.LITERAL, c.NOT_LITERAL, c.ANY, c.IN, c.CATEGORY):
            size = 1
        elif op is c.BRANCH:
            size = sum(positions(alt, c, groups) for alt in av[1])
        elif op is c.SUBPATTERN:
            size = positions(av[3], c, groups)
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            low, most, sub = av
            high = None if most >= int(c.MAXREPEAT) else most
            if op is not c.POSSESSIVE_REPEAT:
                low, high, sub, _lazy = fold(low, high, sub, op is c.MIN_REPEAT, c)
            size = positions(sub, c, groups) * max(low if high is None else high, 1)
        elif op is c.ATOMIC_GROUP:
            size = positions(av, c, groups)
        elif op in (c.ASSERT, c.ASSERT_NOT):
            size = positions(av[1], c, groups)
        elif op is c.GROUPREF:
            size = positions(groups[av][0], c, groups) if av in groups else 1
        elif op is c.GROUPREF_EXISTS:
            size = positions(av[1], c, groups) + (positions(av[2], c, groups) if av[2] else 0)
        else:  # AT and anything zero-width
            size = 0
        total = min(total + size, MAX_POSITIONS)
    return total


def trimmed(nodes: list[tuple[Any, Any]], c: Any) -> list[tuple[Any, Any]]:
    """``nodes`` (a whole pattern) without the parts at its start and end that can match the
    empty string: the same lines hold a match (not the same matches). ``nodes`` itself when
    nothing can go, or the pattern refers to a group (a group left out would change it)."""
    if _holds(nodes, c, (c.GROUPREF, c.GROUPREF_EXISTS)):
        return nodes
    start, end = 0, len(nodes)
    while start < end and _droppable(nodes[start], c):
        start += 1
    while end > start and _droppable(nodes[end - 1], c):
        end -= 1
    return nodes if (start, end) == (0, len(nodes)) else list(nodes[start:end])


def _droppable(node: tuple[Any, Any], c: Any) -> bool:
    """Whether ``node`` can match the empty string and tests no position (no anchor, no look-around)."""
    zero_width = (c.AT, c.ASSERT, c.ASSERT_NOT, c.ATOMIC_GROUP, c.POSSESSIVE_REPEAT)
    return not _holds([node], c, zero_width) and _min_width([node], c) == 0


def _holds(nodes: Iterable[tuple[Any, Any]], c: Any, ops: tuple[Any, ...]) -> bool:
    """Whether any of ``ops`` occurs in ``nodes``, at any depth."""
    for op, av in nodes:
        if op in ops:
            return True
        if op is c.BRANCH and any(_holds(alt, c, ops) for alt in av[1]):
            return True
        if op is c.SUBPATTERN and _holds(av[3], c, ops):
            return True
        if op in (c.MAX_REPEAT, c.MIN_REPEAT) and _holds(av[2], c, ops):
            return True
    return False


def _min_width(nodes: Iterable[tuple[Any, Any]], c: Any) -> int:
    """The fewest characters ``nodes`` match (of the nodes :func:`_droppable` lets through)."""
    total = 0
    for op, av in nodes:
        if op in (c.LITERAL, c.NOT_LITERAL, c.ANY, c.IN, c.CATEGORY):
            total += 1
        elif op is c.BRANCH:
            total += min(_min_width(alt, c) for alt in av[1])
        elif op is c.SUBPATTERN:
            total += _min_width(av[3], c)
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT):
            total += av[0] and av[0] * _min_width(av[2], c)
        else:
            total += 1  # anything else: not left out
        if total:
            return total
    return total
