"""Input contracts as hypothesis strategies and checks, shared by the property tests and the benchmark.

The contracts (``tests/test_contracts.py`` runs them in CI, ``python -m bench reliability``
longer):

* the command line, given any command, any of its options and values of every kind, exits 0,
  1, 2 or 130, never says "This is a bug" or prints a traceback, prints nothing on stdout when
  it fails, leaves the store as it was when it fails, and leaves no process running (a command
  that starts a service is not drawn; a process left anyway is stopped and counted);
* every public method of the SDK, given arguments of every type, returns or raises an
  ``OpenVikingError`` (never another exception, never ``INTERNAL``), one of the bad-input codes
  when an argument is of a type the method does not take, and leaves the store as it was
  when it raises;
* every pattern of :data:`CATASTROPHIC_PATTERNS` finishes, with Python's answer or
  ``DEADLINE_EXCEEDED``.

:func:`run_cli` and :func:`run_sdk` run one input and return an :class:`Outcome` with what broke
(``problem``) and how long it took; the tests assert, the benchmark counts.
"""

from __future__ import annotations

import io
import numbers
import os
import sys
import time
import typing
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from helpers import EN_FILES, hash_config, make_tree, snapshot, write_hash_config
from hypothesis import strategies as st

R = "viking://resources"
HANDBOOK = f"{R}/handbook"
# How many examples each property test runs (the benchmark passes a larger number).
EXAMPLES_ENV = "OPENVIKING_FUZZ_EXAMPLES"
CLI_EXIT_CODES = {0, 1, 2, 130}
# The codes bad input of any kind may get (exit 2, or exit 1 for what is not there).
INPUT_CODES = {"INVALID_ARGUMENT", "INVALID_URI", "PERMISSION_DENIED", "NOT_FOUND", "ALREADY_EXISTS"}
ANY_CODES = INPUT_CODES | {"FAILED_PRECONDITION", "DEADLINE_EXCEEDED", "UNAVAILABLE", "CANCELLED"}
WRONG_TYPE_CODES = {"INVALID_ARGUMENT", "INVALID_URI", "PERMISSION_DENIED"}
GLOBAL_OPTIONS = {"store", "config", "output", "json_", "debug"}
# Adversarial content for the regexes: long runs that backtracking engines choke on.
HOSTILE_FILES: dict[str, str] = {
    "long.txt": "a" * 30000 + "b\n" + "a" * 40 + "\n" + "ab" * 5000 + "\n",
    "mixed.txt": "x = x\nuser = user\n" + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\n" * 20 + "<a><b></b></a>\n",
    "ab.txt": "".join(("ab" * (7 + i % 13) + "a" * (i % 7) + "\n") for i in range(300)),
    "unicode.md": "naïve café CAFÉ Σίσυφος σοφία\n" * 10 + "ünïcödé " * 500 + "\n",
}


def examples(default: int) -> int:
    """The number of examples a property test runs: ``OPENVIKING_FUZZ_EXAMPLES``, else ``default``."""
    text = os.environ.get(EXAMPLES_ENV, "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else default


# ----------------------------------------------------------------------------- the world


@dataclass
class World:
    """A small store to call: the handbook, a hostile folder, a local tree to add, a config."""

    base: Path
    store: Path
    conf: Path
    tree: Path
    client: Any

    def close(self) -> None:
        self.client.close()


def make_world(base: Path, *, session: bool = True) -> World:
    """A store under ``base`` holding the English handbook, :data:`HOSTILE_FILES`, a memory, a
    relation and (with ``session``) a session ``s1`` with a message."""
    from openviking.embedded.client import OpenViking

    base.mkdir(parents=True, exist_ok=True)
    tree = make_tree(base / "handbook", EN_FILES)
    hostile = make_tree(base / "hostile", HOSTILE_FILES)
    make_tree(base / "skill", {"SKILL.md": "# A skill\n\nDoes one thing.\n"})
    client = OpenViking(path=base / "store", config=hash_config())
    client.add_resource(tree)
    client.add_resource(hostile, to=f"{R}/hostile")
    client.add_memory("The user prefers dark mode.")
    if session:  # (helpers.unharmed lists relations of everything ls shows, which a session has none of)
        client.create_session("s1")
        client.add_message("s1", "user", "hello there")
    client.link(f"{HANDBOOK}/auth.md", [f"{HANDBOOK}/README.md"], "see also")
    return World(base, base / "store", write_hash_config(base / "ov.conf"), tree, client)


# ----------------------------------------------------------------------------- values of every kind


def _deep(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


class _Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __str__ = __repr__


def _odd_values() -> list[Any]:
    import numpy as np

    cyclic: list[Any] = []
    cyclic.append(cyclic)
    return [
        None, True, False, 0, 1, -1, 7, 2**63, -(2**63) - 1, 10**30, 10**5000, 0.5, -0.0, 1e400, float("nan"),
        float("-inf"), 1e-300, 3 + 4j, "", " ", "x", "\x00", "\udcff", "😀", "a" * 100_000, b"bytes", bytearray(b"x"),
        [], [None], [1, 2], ["a", 3], (), ("x",), {}, {"a": 1}, {1, 2}, frozenset(), _deep(5000), cyclic,
        np.int64(3), np.float32(0.5), np.bool_(True), np.array([1, 2]), np.array([]), np.float64("nan"),
        datetime(2024, 1, 1, tzinfo=UTC), date(2024, 1, 1), Path("/nonexistent/x"), object(), _Unprintable(),
        print, type, Ellipsis, NotImplemented, range(3), iter([1, 2]), io.BytesIO(b"x"),
    ]  # fmt: skip


def anything() -> st.SearchStrategy[Any]:
    """A value of any kind: odd values, numbers, text, containers of them."""
    odd = _odd_values()
    scalars = st.one_of(
        st.integers(0, len(odd) - 1).map(lambda i: odd[i]),  # (sampled_from would repr them)
        st.integers(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=40),
        st.binary(max_size=10),
    )
    containers = st.lists(scalars, max_size=3) | st.dictionaries(st.text(max_size=5), scalars, max_size=3)
    return st.one_of(scalars, containers, st.lists(containers, max_size=2))


URIS = [
    "viking://", HANDBOOK, f"{HANDBOOK}/auth.md", f"{HANDBOOK}/deploy", f"{R}/hostile", f"{R}/hostile/long.txt",
    f"{R}/missing", f"{R}/new/dir", "viking://user/memories", "viking://user/default/sessions/s1",
    "viking://agent/skills", "viking://user/other/memories", "viking://~", f"{HANDBOOK}/../x", f"{HANDBOOK}/.",
    "viking://nowhere", "resources/handbook", "", " ", "viking://resources/a\\b", f"{HANDBOOK}/auth.md/.abstract.md",
    f"{HANDBOOK}/.overview.md", "viking://resources/" + "d/" * 300, "viking://resources/" + "x" * 5000,
]  # fmt: skip
REGEXES = [
    "auth", "TODO|FIXME", r"\bkeys?\b", "(", "a{2,1}", r"(\w+) = \1", "(?<=user_)id", "(a+)+$", "(.*){1,1001}[bc]",
    "(a|a?){1001}b", "x{1,4294967295}", "[", "\\", "", "(?i)straße", "(?P<x>a)(?P=x)", "a++b", "(?>a+)b", "é\\B",
    "(?" * 50 + "a" + ")" * 50, "a" * 1000, "[^\\x00-\\x7f]+", "(" * 200 + ")" * 200,
]  # fmt: skip
GLOBS = ["**/*.md", "*", "**", "{a,b}", "[", "{" * 500 + "}" * 500, "a/**/b", "[z-a]", "\\", "", ".", "/", "*" * 300]
FILTERS = [
    '{"op": "must", "field": "level", "conds": [2]}', '{"op": "range", "field": "level", "gte": NaN}',
    '{"op": "range", "field": "level", "gte": 1e400}', '{"op": "range", "field": "level", "gte": 1' + "0" * 5000 + "}",
    "[" * 1000 + "]" * 1000, '{"op": "and", "conds": [' * 600 + "]}" * 600,
    '{"op": "must", "field": "x", "conds": [[]]}',
    '{"op": "time_range", "field": "updated_at", "gte": "0001-01-01"}', '{"op": "range", "field": "level", "lt": 1.5}',
    "not json", "{}", "", '{"op": "must", "field": "uri", "conds": ["viking://resources"], "para": "-d=99999999999"}',
]  # fmt: skip
TIMES = ["2h", "7d", "2024-01-01", "2024-13-01", "9" * 30 + "d", "1" * 5000 + "s", "0001-01-01T00:00:00+14:00", "x", ""]
NUMBERS = ["0", "1", "-1", "10", "3", "1" + "0" * 30, "9" * 5000, "1.5", "nan", "inf", "1e400", "-0", "x", ""]


def text() -> st.SearchStrategy[str]:
    """Text of every kind a shell can pass: words, URIs, patterns, JSON, numbers, long and odd text."""
    return st.one_of(
        st.sampled_from(URIS + REGEXES + GLOBS + FILTERS + TIMES + NUMBERS),
        # what argv can hold: no NUL, and the lone surrogates Python decodes bytes that are not UTF-8 to
        st.text(st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), max_size=30),
        st.text(st.sampled_from(["a", "/", "\udcff", "\udce9", "é"]), max_size=6),
        st.just("a" * 20_000),
    )


def _pool(name: str) -> list[Any]:
    """Plausible values for a parameter or option called ``name``."""
    if "uri" in name or name in ("source", "target", "targets", "to", "parent", "uris"):
        return URIS
    if name == "pattern":
        return REGEXES + GLOBS
    if name in ("filter", "filter_"):
        return FILTERS
    if name in ("since", "until", "after", "before"):
        return TIMES
    if "limit" in name or name in ("offset",):
        return [0, 1, 3, -1, 10**30, None]
    if name in ("threshold", "score_threshold"):
        return [0.0, 0.5, -1.0, float("nan"), None]
    if name in ("tags", "tag"):
        return ["env=prod", ["a=b", "c=d"], "bad", "", None]
    if name == "level":
        return [0, 2, "0,2", [0, 1], "L3", None]
    if name == "context_type":
        return ["resource", "memory,skill", "robot", None]
    if name == "mode":
        return ["hybrid", "keyword", "vector", "semantic", None]
    if name == "time_field":
        return ["updated_at", "created_at", "mtime", None]
    if name in ("session_id",):
        return ["s1", "new-session", "../x", "", None]
    if name == "role":
        return ["user", "assistant", "robot"]
    if name == "queries":
        return [[{"query": "auth", "relevant": ["viking://resources/handbook/auth.md"]}], [{"query": "auth"}], [], None]
    if name in ("k", "budget", "token_budget", "keep_recent_count"):
        return [0, 1, 10, 4000, -1, None]
    if name == "as_of":
        return ["nightly", "1", "2020-01-01", "yesterday", "", None]
    return ["auth", "deploy", "", "x" * 300, None]


# ----------------------------------------------------------------------------- the command line


@dataclass(frozen=True)
class Param:
    """One option or argument of a command, as the strategy needs it."""

    name: str
    opts: tuple[str, ...]
    flag: bool
    multiple: bool
    argument: bool
    nargs: int
    required: bool


@dataclass(frozen=True)
class Command:
    path: tuple[str, ...]
    params: tuple[Param, ...]


# Commands that serve until stopped: valid input starts a server, so their bad input is tested
# by the server's own tests (test_server_lifecycle.py, test_server_mcp.py) instead; so do watch
# and add-resource --watch, which watch until Ctrl-C (their bad input: test_watch.py), and start,
# whose service outlives the command and every command after it (test_local_service.py).
SERVING = frozenset({"serve", "mcp", "watch", "start"})
SERVING_OPTIONS = frozenset({"watch", "watch_interval"})
# How long a process a command started and left behind (add-resource --background's index) may
# take to end by itself before run_cli stops it and says so.
LINGER_SECONDS = 120.0


def cli_commands() -> list[Command]:
    """Every command of the app (session's subcommands too), with its options and arguments."""
    import typer

    from openviking_cli.main import build_app

    found: list[Command] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                if name not in SERVING:
                    walk(sub, (*path, name))
            return
        params = tuple(
            Param(
                p.name, tuple(p.opts), bool(getattr(p, "is_flag", False)), bool(getattr(p, "multiple", False)),
                p.param_type_name == "argument", p.nargs, bool(p.required),
            )
            for p in command.params
            if p.name not in GLOBAL_OPTIONS and p.name not in SERVING_OPTIONS
        )  # fmt: skip
        found.append(Command(path, params))

    walk(typer.main.get_command(build_app()), ())
    return found


def _cli_value(name: str) -> st.SearchStrategy[str]:
    plausible = [str(v) for v in _pool(name) if v is not None and not isinstance(v, list)]
    if name == "path":
        # Not "/": adding the whole machine is a real job that runs for hours, not bad input;
        # /proc/1/fdinfo is a small folder whose entries refuse a stat, even to root.
        plausible = ["handbook", "handbook/auth.md", "skill", "missing", "", "/proc/1/fdinfo", "hostile/long.txt"]
    if not plausible:  # a value the command line takes as a file (the golden queries, say)
        plausible = ["handbook/auth.md", "missing", ""]
    return st.one_of(st.sampled_from(plausible), text())


@st.composite
def cli_argv(draw: st.DrawFn, commands: Sequence[Command]) -> list[str]:
    """One invocation: a command (now and then a misspelt one), options drawn from its own
    (values of every kind), its arguments (sometimes missing or extra), an output format."""
    command = draw(st.sampled_from(commands))
    argv = list(command.path)
    if draw(st.integers(0, 40)) == 0:
        argv = [draw(st.sampled_from(["fnd", "--bogus", "session", "-h"]))]
    for param in command.params:
        if param.argument:
            count = draw(st.integers(0, 3)) if param.nargs == -1 else (1 if draw(st.integers(0, 12)) else 0)
            argv += [draw(_cli_value(param.name)) for _ in range(count)]
        elif draw(st.booleans()):
            opt = draw(st.sampled_from(param.opts))
            for _ in range(draw(st.integers(1, 2)) if param.multiple else 1):
                argv += [opt] if param.flag else [opt, draw(_cli_value(param.name))]
    if draw(st.integers(0, 8)) == 0:
        argv.append(draw(st.sampled_from(["--nope", "extra", "-z"])))
    argv += draw(st.sampled_from([[], [], ["-o", "json"], ["-o", "jsonl"], ["--json"], ["-o", "yaml"]]))
    return argv


@dataclass
class Outcome:
    """What one input did: its description, how long it took, and what broke (None: nothing)."""

    what: str
    seconds: float
    problem: str | None = None
    code: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def run_cli(world: World, argv: list[str], *, stdin: bytes = b"remember this\n") -> Outcome:
    """``openviking ARGV --store S --config C`` in this process, checked against the contract."""
    import contextlib

    from openviking_cli.main import main

    full = [*argv, "--store", str(world.store), "--config", str(world.conf)]
    before = snapshot(world.store)
    out, err = io.StringIO(), io.StringIO()
    stdin_stream = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    started = time.perf_counter()
    saved_stdin = sys.stdin
    sys.stdin = stdin_stream
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(full)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # an escape from main() is itself a broken contract
        return Outcome(_shown(argv), time.perf_counter() - started, f"main() raised {type(exc).__name__}: {exc}")
    finally:
        sys.stdin = saved_stdin
    seconds = time.perf_counter() - started
    stdout, stderr = out.getvalue(), err.getvalue()
    left = leftover_processes(world.base)
    problem = None
    if left:
        problem = f"left {len(left)} process(es) running: {left[0][:200]}"
    elif code not in CLI_EXIT_CODES:
        problem = f"exit status {code}"
    elif "This is a bug" in stderr or "Traceback (most recent call last)" in stderr:
        problem = "a bug report: " + stderr.strip()[-300:]
    elif code != 0 and stdout and argv[:1] != ["doctor"]:
        problem = f"exit {code} with stdout: {stdout[:200]!r}"
    elif code != 0 and snapshot(world.store) != before:
        problem = f"exit {code} changed the store"
    details = {"exit": code, "stderr": stderr[-300:], "stdout": stdout[:2000]}
    return Outcome(_shown(argv), seconds, problem, details=details)


def processes_naming(path: Path) -> dict[int, str]:
    """What a command given ``--store`` below ``path`` started and left running, with their
    command lines: the processes that name ``path`` (or a path below it) and descend from this
    one, or were left to init by a parent that ended (an openviking of their own). Never this
    process, nor one it runs under (a shell or a ``timeout`` given ``--work``)."""
    needle = str(path.resolve())
    table = _process_table()
    ours, ancestors = os.getpid(), set()
    pid = ours
    while pid in table and pid not in ancestors:
        ancestors.add(pid)
        pid = table[pid][0]

    def descends(pid: int) -> bool:
        seen: set[int] = set()
        while pid in table and pid not in seen:
            seen.add(pid)
            pid = table[pid][0]
            if pid == ours:
                return True
        return False

    return {
        pid: line
        for pid, (parent, line) in table.items()
        if needle in line  # (a zombie's command line is empty: it runs no more)
        and pid not in ancestors
        and (descends(pid) or (parent == 1 and "openviking" in line))
    }


def _process_table() -> dict[int, tuple[int, str]]:
    """Every process: ``{pid: (parent pid, command line)}``."""
    table: dict[int, tuple[int, str]] = {}
    if not Path("/proc/self").exists():  # no procfs: ps, asked for the whole command lines
        import subprocess

        listed = subprocess.run(["ps", "-ww", "-eo", "pid=,ppid=,args="], capture_output=True, text=True, check=True)
        for row in listed.stdout.splitlines():
            pid, parent, line = (row.split(None, 2) + [""])[:3]
            table[int(pid)] = (int(parent), line)
        return table
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(errors="replace")
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # ended meanwhile, or another user's
            continue
        parent = int(stat.rpartition(")")[2].split()[1])
        table[int(entry.name)] = (parent, " ".join(a.decode("utf-8", "replace") for a in args if a))
    return table


def leftover_processes(base: Path, linger: float = LINGER_SECONDS) -> list[str]:
    """The command lines of the processes naming ``base`` that were still running: a local
    service at once, any other after ``linger`` seconds (a background index ends by itself).
    Each is stopped (SIGTERM, then SIGKILL) before this returns."""
    import signal

    deadline = time.monotonic() + linger
    while True:
        found = processes_naming(base)
        if not found:
            return []
        serving = [line for line in found.values() if " serve " in f"{line} "]
        if serving or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for pid in found:
        _signal(pid, signal.SIGTERM)
    stop_by = time.monotonic() + 30
    while (alive := set(found) & set(processes_naming(base))) and time.monotonic() < stop_by:
        time.sleep(0.1)
    for pid in alive:
        _signal(pid, signal.SIGKILL)
    for pid in found:  # this process's own children would stay as zombies
        try:
            os.waitpid(pid, 0 if pid in alive else os.WNOHANG)
        except ChildProcessError:
            pass
    return list(found.values())


def _signal(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except ProcessLookupError:
        pass


# ----------------------------------------------------------------------------- the SDK


def sdk_methods() -> dict[str, dict[str, Any]]:
    """Every operation of the interface, and the session handle's: ``{name: {parameter: annotation}}``."""
    from openviking.contract.interface import OpenVikingClient
    from openviking.contract.operations import OPERATIONS

    methods: dict[str, dict[str, Any]] = {}
    for name, op in OPERATIONS.items():
        hints = dict(op.hints)
        hints.pop("return", None)
        methods[name] = hints
    hints = typing.get_type_hints(OpenVikingClient.session)
    hints.pop("return", None)
    methods["session"] = hints
    return methods


@dataclass
class Call:
    """One SDK call: the method, its keyword arguments, and the one argument given a value of a
    type it does not take (None: every argument is of its type)."""

    method: str
    kwargs: dict[str, Any]
    wrong: str | None


@st.composite
def sdk_call(draw: st.DrawFn, methods: Mapping[str, Mapping[str, Any]], world: World) -> Call:
    """A call of any method: plausible values for its parameters, and now and then one (or
    several) of any kind at all."""
    name = draw(st.sampled_from(sorted(methods)))
    hints = methods[name]
    kwargs: dict[str, Any] = {}
    for param, annotation in hints.items():
        pool = [v for v in _pool(param) if fits(v, annotation)]
        if param in ("path",):
            pool = [world.tree, world.tree / "auth.md", world.base / "skill", world.base / "missing", str(world.tree)]
        if param == "content":
            pool = ["hello", [{"type": "text", "text": "hi"}], ""]
        if param == "session":
            pool = ["s1", None]
        if param in ("progress",):
            pool = [None, lambda done, total: None]
        required = param in _required(name)
        if (required or draw(st.booleans())) and pool:
            kwargs[param] = draw(st.sampled_from(pool))
    mutated = [p for p in hints if draw(st.integers(0, 2)) == 0]
    for param in mutated[: draw(st.integers(1, 2))]:
        kwargs[param] = draw(anything())
    empty = _empty_defaults(name)
    wrong = [p for p, v in kwargs.items() if not fits(v, hints[p]) and not (v is None and p in empty)]
    return Call(name, kwargs, wrong[0] if len(wrong) == 1 else None)


def _empty_defaults(method: str) -> set[str]:
    """The parameters whose default is ``""`` or ``()``, for which None also means "none"."""
    import inspect

    from openviking.contract.interface import OpenVikingClient

    signature = inspect.signature(getattr(OpenVikingClient, method))
    return {p.name for p in signature.parameters.values() if isinstance(p.default, str | tuple) and not p.default}


def _required(method: str) -> set[str]:
    import inspect

    from openviking.contract.interface import OpenVikingClient

    signature = inspect.signature(getattr(OpenVikingClient, method))
    return {p.name for p in signature.parameters.values() if p.default is inspect.Parameter.empty and p.name != "self"}


def run_sdk(world: World, call: Call) -> Outcome:
    """``client.METHOD(**kwargs)``, checked against the contract."""
    from openviking.errors import OpenVikingError, OpenVikingWarning

    what = f"{call.method}({', '.join(f'{k}={_short(v)}' for k, v in call.kwargs.items())})"
    before = snapshot(world.store)
    started = time.perf_counter()
    try:
        with warnings.catch_warnings():  # a warning says something degraded; it breaks no contract
            warnings.simplefilter("ignore", OpenVikingWarning)
            getattr(world.client, call.method)(**call.kwargs)
    except OpenVikingError as exc:
        seconds = time.perf_counter() - started
        problem = None
        if exc.code not in ANY_CODES:
            problem = f"{exc.code}: {exc.message[:200]}"
        elif call.wrong is not None and not _checked_first(exc):
            problem = f"{exc.code} for {call.wrong} of a type it does not take: {exc.message[:200]}"
        elif snapshot(world.store) != before:
            problem = f"{exc.code}, and the store changed"
        return Outcome(what, seconds, problem, exc.code)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return Outcome(what, time.perf_counter() - started, f"{type(exc).__name__}: {_short(exc)}")
    seconds = time.perf_counter() - started
    if call.wrong is not None:
        return Outcome(what, seconds, f"took {call.wrong} of a type it does not take")
    return Outcome(what, seconds)


def _checked_first(exc: Any) -> bool:
    """Whether ``exc`` is an error of the argument checks, which a call makes before it opens
    the store (a value of the wrong type, a malformed or forbidden URI, a local path that is
    not there): what a call with an argument of the wrong type must fail with."""
    return exc.code in WRONG_TYPE_CODES or (exc.code == "NOT_FOUND" and exc.message.startswith("Path not found"))


def fits(value: Any, annotation: Any) -> bool:
    """Whether ``value`` is of the type ``annotation`` says (as the SDK reads its types: numpy's
    numbers are numbers, a bool is no integer, 0 and 1 are flags)."""
    if annotation is Any or annotation is object:
        return True
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return any(fits(value, a) for a in args)
    if annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, bool) or _numpy_bool(value) or (type(value) is int and value in (0, 1))
    if annotation is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool) and not _numpy_bool(value)
    if annotation is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool) and not _numpy_bool(value)
    if annotation is str:
        return isinstance(value, str)
    if origin is os.PathLike or annotation is os.PathLike:
        return isinstance(value, os.PathLike)
    if origin in (Sequence, list, tuple):
        return isinstance(value, list | tuple) and all(fits(v, args[0]) for v in value) if args else True
    if origin is Iterable:  # a dict is its keys; an iterator cannot be looked into without using it up
        items = list(value) if isinstance(value, list | tuple | set | frozenset | dict) else None
        return items is not None and all(fits(v, args[0]) for v in items)
    if origin in (Mapping, dict):
        return isinstance(value, Mapping) and all(fits(k, args[0]) and fits(v, args[1]) for k, v in value.items())
    if origin is Callable or annotation is Callable:
        return callable(value)
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    return True


def _numpy_bool(value: Any) -> bool:
    return type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_")


def _short(value: Any) -> str:
    from openviking.values.arguments import describe

    return describe(value)


def _shown(argv: list[str]) -> str:
    return "openviking " + " ".join(_short(a) if len(a) > 60 else a for a in argv)


# ----------------------------------------------------------------------------- catastrophic patterns

# Nested quantifiers, overlapping alternatives, big counts, back-references, look-arounds,
# possessive and atomic forms: each has blown up a backtracking engine somewhere.
CATASTROPHIC_PATTERNS = [
    "(a+)+$", "(a+)+b", "(a*)*b", "(a|a)*b", "(a|aa)+$", "(a|a?)+$", "^(a|a?)+$", "(a?){30}a{30}", "(.*a){20}",
    "(.*){1,1001}[bc]", "(a|a?){1001}b", "(.*.*)*x", "(x+x+)+y", "(\\w+\\s?)+$", "^(\\w+\\s?)*$", "(a|b|ab)*c",
    "([ab]*a[ab]{20})+c", "[ab]*a[ab]{1000}c", "(?:[ab]*a[ab]{1000})+c", "a{1,100000}", "(a{1,1000}){1,1000}b",
    "(?:a{1001}){1001}", "x{0,4294967294}y", "(\\w+\\s*){1000}c", "(a{2,}){1000}b", "((a+)+)+b", "(a+){1001}$",
    "(\\w+) = \\1", "(a+)\\1+b", "(a*)*\\1c", "(.+)+\\1z", "^(a+)\\1*$", "(?P<x>a+)(?P=x)+b",
    "(?=(a+))\\1b", "(?=a+b)(a+)+c", "(?!b)(a+)+c", "(?<=a)(a+)+b", "(?<!b)(a|aa)+c", "a(?=a*z)",
    "(a++)+b", "(?>a+)+b", "(a*+)*b", "(?>(a|aa)+)c", "(a)?(?(1)a+|b)+c",
    "(?i)(A+)+b", "(?i)(straße|strasse)+x", "\\b(\\w+\\b\\s*)+$", "(é+)+\\B", "([^!]*)*!?z", "(<a>|<b>|</b>)*</c>",
]  # fmt: skip


def python_lines(pattern: str, texts: Mapping[str, str], seconds: float) -> set[tuple[str, int]] | None:
    """The ``(file, line)`` pairs Python's ``re`` matches in ``texts``, or None when it takes
    more than ``seconds`` (it runs in a child process, killed then)."""
    import json
    import subprocess

    code = (
        "import json, re, sys\n"
        "pattern, texts = json.load(sys.stdin)\n"
        "search = re.compile(pattern).search\n"
        "found = [[name, n] for name, text in texts.items()"
        " for n, line in enumerate(text.split('\\n')[: -1 if text.endswith('\\n') else None], 1) if search(line)]\n"
        "json.dump(found, sys.stdout)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", code],
            input=json.dumps([pattern, dict(texts)]),
            capture_output=True,
            text=True,
            timeout=seconds,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return None
    return {(name, number) for name, number in json.loads(done.stdout)}
