"""Every regex in linear time or refused: counts RE2 refuses, written so it takes them, agree
with Python's ``re``; what only Python can run stops at the deadline; nothing runs unbounded.

The rewrites are checked against Python on the same pattern where Python's backtracking is
fast (bodies that cannot overlap), and against a pattern of the same language where it is not
(``(a|a?){1001}b`` takes Python minutes on a short line; it matches the lines holding a ``b``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from contracts import CATASTROPHIC_PATTERNS, HOSTILE_FILES, World, make_world
from helpers import Cli, cli_unharmed, unharmed, with_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openviking.errors import DeadlineExceededError, InvalidArgumentError
from openviking.retrieve import bounded
from openviking.retrieve.grep import MAX_PATTERN_CHARS, compile_pattern, search_content
from openviking.retrieve.lines import blocks_of, lines_of
from openviking.retrieve.re2repeat import fold, piece_count, pieces

R = "viking://resources"
HOSTILE = f"{R}/hostile"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    built = make_world(tmp_path_factory.mktemp("regex-bounds"), session=False)
    yield built
    built.close()


@pytest.fixture
def ov(cli: Cli, world: World) -> Cli:
    return with_store(cli, world.store, world.conf)


def engine(texts: list[str], pattern: str, *, warm: bool = False, spans: bool = False) -> Any:
    """The grep engine over in-memory files: the cold path, or the warm one (line table, blocks)."""
    import numpy as np
    import pyarrow as pa

    compiled = compile_pattern(pattern)
    content = pa.array(texts, pa.large_string())
    files = np.arange(len(texts))
    if not warm:
        return search_content(content, files, compiled, spans=spans)
    table = lines_of(content)
    return search_content(content, files, compiled, lines=table, blocks=blocks_of(content, table), spans=spans)


def python_answer(texts: list[str], pattern: str) -> list[tuple[int, int]]:
    compiled = re.compile(pattern)
    return [
        (f, n)
        for f, text in enumerate(texts)
        for n, line in enumerate(text.split("\n")[: -1 if text.endswith("\n") else None], 1)
        if compiled.search(line)
    ]


def pairs(found: Any) -> list[tuple[int, int]]:
    return list(zip(found.file, found.number, strict=True))


# ----------------------------------------------------------------------------- the pieces


@given(
    low=st.integers(0, 5000),
    extra=st.one_of(st.none(), st.integers(0, 5000)),
    limit=st.integers(1, 1000),
)
def test_pieces_add_up_to_the_count(low: int, extra: int | None, limit: int) -> None:
    high = None if extra is None else low + extra
    parts = pieces(low, high, limit)
    assert len(parts) == piece_count(low, high, limit)
    assert sum(least for least, _ in parts) == low
    assert all(0 <= least <= (most if most is not None else least) for least, most in parts)
    if high is None:
        assert parts[-1] == (0, None) and all(most is not None and most <= limit for _, most in parts[:-1])
    else:
        assert sum(most or 0 for _, most in parts) == high and all(
            most is not None and most <= limit for _, most in parts
        )


def test_a_repeat_of_an_unbounded_repeat_folds() -> None:
    import re._constants as c
    import re._parser as parser

    def folded(pattern: str) -> tuple[int, int | None]:
        (_op, (low, high, sub)), *_ = parser.parse(pattern).data
        least, most, _body, _lazy = fold(low, None if high >= c.MAXREPEAT else high, sub, False, c)
        return least, most

    assert folded("(.*){1,1001}") == (0, None)
    assert folded("(a+){3}") == (3, None)
    assert folded("(?:(a+)+)+") == (1, None)
    assert folded("(a{2,}){0,3}") == (0, 3)  # a{2,} repeated 0 or 1... times is not a{0,}: left alone
    assert folded("(a+){0}") == (0, 0)


# ----------------------------------------------------------------------------- counts over 1,000

BODIES = ["a", "[ab]", "ab", "(?:a|b)", "(?:ab|c)", "(a)"]
COUNTS = [(0, 1001), (1, 1001), (1000, 1001), (1001, 1001), (999, 1500), (1001, 2001), (1500, None), (2, None)]


@st.composite
def counted(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A pattern with a count RE2 refuses, and files of lines near its bounds."""
    body = draw(st.sampled_from(BODIES))
    low, high = draw(st.sampled_from(COUNTS))
    count = "{" + f"{low},{'' if high is None else high}" + "}"
    lazy = draw(st.sampled_from(["", "?"]))
    shape = draw(st.sampled_from(["^{}$", "x{}y", "{}y", "^{}", "{}"]))
    pattern = shape.replace("{}", body + count + lazy)
    unit = {"a": "a", "[ab]": "b", "ab": "ab", "(?:a|b)": "a", "(?:ab|c)": "c", "(a)": "a"}[body]
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        times = draw(st.sampled_from([0, 1, 999, 1000, 1001, 1002, 1499, 1500, 1501, 2000, 2001, 2002]))
        lines.append(draw(st.sampled_from(["", "x"])) + unit * times + draw(st.sampled_from(["", "y", "a", "zy"])))
    return pattern, ["\n".join(lines) + "\n"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=counted())
def test_counts_over_1000_match_what_python_matches(case: tuple[str, list[str]]) -> None:
    pattern, texts = case
    compiled = compile_pattern(pattern)
    assert compiled.exact is not None, pattern  # RE2 runs it whole: no Python at all
    expected = python_answer(texts, pattern)
    assert pairs(engine(texts, pattern)) == expected
    assert pairs(engine(texts, pattern, warm=True)) == expected
    # a body of fixed width: the matches are Python's exactly, where they start and end (but
    # for a pattern that matches the empty string: after an empty match Python's finditer
    # tries a longer one at the same place, RE2's replace moves on, as before the counts)
    python = re.compile(pattern)
    if python.fullmatch(""):
        return
    found = engine(texts, pattern, spans=True)
    assert (found.spans or []) == [
        [[m.start(), m.end()] for m in python.finditer(t) if m.end() > m.start()] for t in found.text
    ]


@pytest.mark.parametrize(
    "pattern",
    ["(?:a{500}){3}", "(?:(?:ab){40}){30}b", "(?:a{1001}){2}", "^(?:[ab]{1000}){2}$", "(?:x(?:a{600}){2})"],
)
def test_nested_counts_multiplying_past_1000_match_what_python_matches(pattern: str) -> None:
    texts = ["a" * 1499 + "\n" + "a" * 1500 + "\n" + "ab" * 1200 + "\n" + "a" * 2002 + "\nxx" + "a" * 1200 + "\n"]
    assert compile_pattern(pattern).exact is not None, pattern
    assert pairs(engine(texts, pattern)) == python_answer(texts, pattern)


# Patterns Python's re takes seconds to years on, with a pattern of the same language it runs at once.
EQUIVALENTS = [
    ("(.*){1,1001}[bc]", "[bc]"),
    ("(a|a?){1001}b", "b"),
    ("(a+)+$", "a$"),
    ("(a*)*b", "b"),
    ("(x+x+)+y", "xxy"),
    ("((a+)+)+b", "ab"),
    ("(a|aa)+$", "a$"),
    ("(a+){1001}$", "a{1001}$"),
    ("(.*a){20}", "(?:[^a]*a){20}"),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.sampled_from(EQUIVALENTS),
    lines=st.lists(
        st.builds(
            lambda a, b, c: a * 30 + b + c,
            st.sampled_from(["a", "x", "ab"]),
            st.text("abxy", max_size=8),
            st.text("a", max_size=1100),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_patterns_python_cannot_finish_match_their_equivalents(case: tuple[str, str], lines: list[str]) -> None:
    pattern, same = case
    texts = ["\n".join(lines) + "\n"]
    started = time.perf_counter()
    assert pairs(engine(texts, pattern)) == python_answer(texts, same)
    assert time.perf_counter() - started < 10


def test_the_issues_patterns_finish_with_the_right_lines(ov: Cli) -> None:
    """``(.*){1,1001}[bc]`` folds to ``[bc]``; ``(a|a?){1001}b`` picks the lines of ``b`` (what
    comes before it can match nothing), and RE2 says where its matches are on those lines only."""
    for pattern, same in [("(.*){1,1001}[bc]", "[bc]"), ("(a|a?){1001}b", "b")]:
        started = time.perf_counter()
        result = ov("grep", pattern, "-u", HOSTILE, "-o", "json")
        assert time.perf_counter() - started < 10
        assert result.code == 0, result.err
        expected = {
            (f"{HOSTILE}/{name}", n)
            for name, text in HOSTILE_FILES.items()
            for n, line in enumerate(text.split("\n")[:-1], 1)
            if re.search(same, line)
        }
        assert {(m["uri"], m["line"]) for m in result.json()["result"]["matches"]} == expected


def test_a_nullable_start_picks_lines_and_the_whole_pattern_marks_them() -> None:
    texts = ["aab\nb\nxyz\n"]
    found = engine(texts, "(a|a?){3}b", spans=True)
    assert pairs(found) == [(0, 1), (0, 2)]
    assert found.spans == [[[0, 3]], [[0, 1]]]  # Python's matches: "aab" and "b"
    assert found.spans == [[[m.start(), m.end()] for m in re.finditer("(a|a?){3}b", t)] for t in found.text]


# ----------------------------------------------------------------------------- the deadline

# A look-ahead: only Python's re can say, and on a line of 40 a's it backtracks for hours.
RUNAWAY = "(a|aa)+(?=b)"


def test_a_runaway_pattern_stops_at_the_deadline(world: World, ov: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENVIKING_GREP_TIMEOUT", "1")
    started = time.perf_counter()
    error = unharmed(world.client, lambda: world.client.grep(HOSTILE, RUNAWAY, level_limit=0))
    assert isinstance(error, DeadlineExceededError) and error.code == "DEADLINE_EXCEEDED"
    assert time.perf_counter() - started < 8
    assert "took longer than 1 s (Python's re)" in error.message
    assert error.hint and "OPENVIKING_GREP_TIMEOUT" in error.hint
    _json, table = cli_unharmed(
        ov, world.store, ["grep", RUNAWAY, "-u", HOSTILE], "DEADLINE_EXCEEDED", 1, "took longer"
    )
    assert "Hint: Search fewer files" in table.err
    # the worker it killed is replaced: the next search answers
    assert world.client.grep(HOSTILE, r"(x) = \1")["count"] == 1


def test_more_lines_for_python_than_the_cap_are_refused_at_once(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded, "MAX_PYTHON_BYTES", 1000)
    started = time.perf_counter()
    error = unharmed(world.client, lambda: world.client.grep(HOSTILE, r"(a)\1", level_limit=0))
    assert error.code == "DEADLINE_EXCEEDED" and "more than the 0 MiB it may search" in error.message
    assert error.details["limit"] == 1000 and error.details["bytes"] > 1000
    assert time.perf_counter() - started < 5


def test_a_bad_timeout_in_the_environment_is_an_invalid_argument(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("soon", "0", "-3", "nan", "inf"):
        monkeypatch.setenv("OPENVIKING_GREP_TIMEOUT", value)
        with pytest.raises(InvalidArgumentError, match="OPENVIKING_GREP_TIMEOUT must be a number of seconds"):
            world.client.grep(HOSTILE, "a")


def test_a_pattern_longer_than_the_limit_is_refused(ov: Cli, world: World) -> None:
    # (the command line's own argument limit is about 128 KiB, so the SDK says it)
    error = unharmed(world.client, lambda: world.client.grep(HOSTILE, "a" * (MAX_PATTERN_CHARS + 1)))
    assert error.code == "INVALID_ARGUMENT" and "more than the 100,000 grep takes" in error.message


# ----------------------------------------------------------------------------- where RE2 runs

WHERE_PATTERNS = ["a{3}b", r"\bab\b", "(a|b)+$", "[ab]*a[ab]{20}$", r"(\w+) = \1", "é", "^$", "zzz"]


def test_re2_in_chunks_and_in_the_worker_finds_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [text for _name, text in sorted(HOSTILE_FILES.items())]
    here = {p: (pairs(engine(texts, p)), engine(texts, p, warm=True, spans=True).spans) for p in WHERE_PATTERNS}
    # every scan in chunks of one line or so, on two threads
    monkeypatch.setattr(bounded, "INLINE_SECONDS", 0.0)
    monkeypatch.setattr(bounded, "MIN_CHUNK_BYTES", 1)
    monkeypatch.setattr(bounded, "CHUNK_SECONDS", 2e-5)
    monkeypatch.setattr(bounded, "PARALLEL_MIN_BYTES", 1)
    for pattern, (lines, spans) in here.items():
        assert (pairs(engine(texts, pattern)), engine(texts, pattern, warm=True, spans=True).spans) == (lines, spans)
    # every scan in the worker process
    monkeypatch.setattr(bounded, "MIN_CHUNK_BYTES", 10**12)
    for pattern, (lines, spans) in here.items():
        assert (pairs(engine(texts, pattern)), engine(texts, pattern, warm=True, spans=True).spans) == (lines, spans)


def test_many_case_insensitive_classes_are_left_to_python(world: World) -> None:
    pattern = "".join(f"[{chr(0x3B1 + i % 17)}{chr(0x430 + i)}]" for i in range(80))
    compiled = compile_pattern(pattern, case_insensitive=True)
    assert compiled.exact is None  # past the translator's budget: Python's re decides
    line = "".join(chr(0x391 + i % 17) for i in range(80))
    texts = [line + "\n" + line[1:] + "\n"]
    found = search_content(*_args(texts, pattern, ignore_case=True))
    assert pairs(found) == [(0, 1)]


def _args(texts: list[str], pattern: str, *, ignore_case: bool) -> tuple[Any, Any, Any]:
    import numpy as np
    import pyarrow as pa

    return (
        pa.array(texts, pa.large_string()),
        np.arange(len(texts)),
        compile_pattern(pattern, case_insensitive=ignore_case),
    )


# ----------------------------------------------------------------------------- the catastrophic list


@pytest.mark.parametrize("pattern", CATASTROPHIC_PATTERNS[::5])
def test_catastrophic_patterns_finish_or_stop_at_the_deadline(
    world: World, monkeypatch: pytest.MonkeyPatch, pattern: str
) -> None:
    """A sample of the benchmark's list (``python -m bench reliability`` runs all of it)."""
    monkeypatch.setenv("OPENVIKING_GREP_TIMEOUT", "2")
    started = time.perf_counter()
    try:
        world.client.grep(HOSTILE, pattern, level_limit=0)
    except DeadlineExceededError:
        pass
    assert time.perf_counter() - started < 10
