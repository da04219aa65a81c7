"""``python -m bench reliability``: the input contracts run long, and the catastrophic patterns.

Each suite of :data:`SUITES` gets a folder of its own under ``--work`` (a fresh store each:
the fuzzed writes of one never reach another's), runs, and returns rows for one table; a suite
of another kind (crash injection, say) is one more entry.

* ``cli``: ``--examples`` command lines drawn from every command and option of the app with
  values of every kind (``tests/contracts.py``), run in this process on a small store; counted:
  tracebacks and "This is a bug" reports, exit statuses other than 0, 1, 2 and 130, stdout
  written on an error, a store changed by a rejected command, and the slowest input.
* ``sdk``: ``--examples`` calls of every public method with arguments of every type; counted:
  exceptions that are not ``OpenVikingError``, ``INTERNAL`` errors, a code other than a
  bad-input one for an argument of the wrong type, a store changed by a rejected call.
* ``regex``: every pattern of ``CATASTROPHIC_PATTERNS`` grepped over adversarial files with the
  default deadline: finished or ``DEADLINE_EXCEEDED``, never another error; where Python's
  ``re`` finishes in ``--python-seconds`` (in a child process), the lines must be its lines.
* ``glob``: globs built to hurt (500 nested braces, hundreds of stars, DFA-hostile classes).
* ``crash``: every write of ``tests/test_crash_points.py`` killed at each of its commits (the
  fault point), run again, compared with a clean run: kill points tried and converged, per command.
* ``repair``: stores damaged for real (a killed write, a data file deleted or cut short, a
  manifest overwritten or emptied, a store killed after its first table): doctor must name the
  damage, and ``doctor(repair=True)`` leave a store doctor finds nothing wrong with.
* ``server``: ``openviking serve`` killed (SIGKILL) at ``--kills`` points of an add by path,
  restarted, the add sent again, compared with a clean run; and ``--clients`` clients hanging up on
  find, grep and add-memory after 1-50 ms: the server must still answer, log no traceback and hold
  each memory once or not at all.

No suite draws a command that starts a service or a watch; a command line that leaves a process
running anyway is a broken contract (counted in "other"), and whatever still runs below
``--work`` once the suites are over is stopped, listed, and fails the run.

    python -m bench reliability --examples 2000
    python -m bench reliability --suites regex,glob
    python -m bench reliability --suites server --work /tmp/ov-rel-server
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from contracts import (  # noqa: E402
    CATASTROPHIC_PATTERNS,
    HOSTILE_FILES,
    World,
    cli_argv,
    cli_commands,
    leftover_processes,
    make_world,
    python_lines,
    run_cli,
    run_sdk,
    sdk_call,
    sdk_methods,
)

from .report import print_table  # noqa: E402

COLUMNS = [
    "suite",
    "inputs",
    "tracebacks",
    "wrong codes",
    "non-typed",
    "other",
    "over 10 s",
    "slowest s",
    "slowest input",
    "converged",
    "repaired",
    "cut mid-add",
    "left partial",
    "requests cut",
    "still serving",
    "duplicates",
]
CATASTROPHIC_GLOBS = [
    "{" * 500 + "a" + "}" * 500,
    "{" * 32 + "auth.md" + "}" * 32,
    "*" * 5000,
    "*a" + "?" * 40,
    "**/" * 300 + "*.md",
    "{a,b,c,d,e,f,g,h}" * 200,
    "[!a]" * 1000,
    "*{a,*{b,*{c,*{d,*}}}}" * 50,
    "?" * 9000,
    "**/*" * 1000,
]


@contextlib.contextmanager
def isolated(work: Path) -> Iterator[None]:
    """A home of its own, no store or config from outside, and ``work`` as the working directory."""
    saved, cwd = dict(os.environ), os.getcwd()
    os.environ.update({"HOME": str(work / "home"), "OPENVIKING_HOME": str(work / "home" / ".openviking")})
    os.environ["NO_COLOR"] = "1"
    for name in ("OPENVIKING_STORE", "OPENVIKING_CONFIG_FILE", "OPENVIKING_DEBUG", "FORCE_COLOR"):
        os.environ.pop(name, None)
    os.chdir(work)
    try:
        yield
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(saved)


def _fuzz(examples: int, seed: int, draw: Callable[[Any], Any], run: Callable[[Any], Any]) -> list[Any]:
    """``run`` on ``examples`` inputs drawn by ``draw`` (from hypothesis's data), every outcome kept."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seeded
    from hypothesis import strategies as st

    outcomes: list[Any] = []

    @seeded(seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def body(data: Any) -> None:
        outcomes.append(run(draw(data)))

    body()
    return outcomes


def _row(suite: str, outcomes: list[Any], kinds: dict[str, Callable[[str], bool]]) -> dict[str, Any]:
    problems = [o for o in outcomes if o.problem]
    row: dict[str, Any] = {"suite": suite, "inputs": len(outcomes)}
    counted: set[int] = set()
    for column, test in kinds.items():
        hits = [o for o in problems if test(o.problem)]
        counted |= {id(o) for o in hits}
        row[column] = len(hits)
    row["other"] = len([o for o in problems if id(o) not in counted])
    slowest = max(outcomes, key=lambda o: o.seconds) if outcomes else None
    row["over 10 s"] = len([o for o in outcomes if o.seconds > 10])
    row["slowest s"] = round(slowest.seconds, 2) if slowest else ""
    row["slowest input"] = slowest.what[:70] if slowest else ""
    row["problems"] = [{"input": o.what[:300], "problem": o.problem[:300]} for o in problems[:50]]
    return row


def run_cli_suite(world: World, examples: int, seed: int) -> list[dict[str, Any]]:
    commands = cli_commands()
    outcomes = _fuzz(examples, seed, lambda data: data.draw(cli_argv(commands)), lambda argv: run_cli(world, argv))
    kinds = {
        "tracebacks": lambda p: p.startswith(("a bug report", "main() raised")),
        "wrong codes": lambda p: p.startswith("exit status"),
    }
    return [_row("cli: every command and option", outcomes, kinds)]


def run_sdk_suite(world: World, examples: int, seed: int) -> list[dict[str, Any]]:
    methods = sdk_methods()
    outcomes = _fuzz(
        examples, seed, lambda data: data.draw(sdk_call(methods, world)), lambda call: run_sdk(world, call)
    )
    kinds = {
        "tracebacks": lambda p: p.startswith("INTERNAL"),
        "wrong codes": lambda p: "of a type it does not take" in p,
        "non-typed": lambda p: not p.split(":", 1)[0].isupper(),
    }
    return [_row("sdk: every public method", outcomes, kinds)]


class _Timed:
    def __init__(self, what: str, seconds: float, problem: str | None = None, result: str = "") -> None:
        self.what, self.seconds, self.problem, self.result = what, seconds, problem, result


def run_regex_suite(world: World, python_seconds: float) -> list[dict[str, Any]]:
    from openviking.errors import OpenVikingError

    target = "viking://resources/hostile"
    outcomes: list[_Timed] = []
    agree = disagree = python_slow = stopped = 0
    for pattern in CATASTROPHIC_PATTERNS:
        started = time.perf_counter()
        found: set[tuple[str, int]] | None = None
        problem = None
        try:
            result = world.client.grep(target, pattern, level_limit=0)
            found = {(m["uri"].rsplit("/", 1)[1], m["line"]) for m in result["matches"]}
            outcome = f"{len(found)} lines"
        except OpenVikingError as exc:
            outcome = exc.code
            if exc.code == "DEADLINE_EXCEEDED":
                stopped += 1
            else:
                problem = f"{exc.code}: {exc.message[:200]}"
        seconds = time.perf_counter() - started
        expected = python_lines(pattern, HOSTILE_FILES, python_seconds)
        if expected is None:
            python_slow += 1
        elif found is not None:
            if found == expected:
                agree += 1
            else:
                disagree += 1
                problem = f"lines differ from Python's: {sorted(found ^ expected)[:5]}"
        outcomes.append(_Timed(pattern, seconds, problem, outcome))
        print(f"  {seconds:6.2f} s  {outcome:<18} {pattern[:70]}", file=sys.stderr)
    row = _row(f"regex: {len(CATASTROPHIC_PATTERNS)} catastrophic patterns", outcomes, {})
    row.update(
        {
            "tracebacks": 0,
            "wrong codes": len([o for o in outcomes if o.problem and not o.problem.startswith("lines differ")]),
            "non-typed": 0,
            "other": disagree,
            "deadline": stopped,
            "agree with Python": agree,
            "Python over limit": python_slow,
            "outcomes": {o.what: [round(o.seconds, 2), o.result] for o in outcomes},
        }
    )
    return [row]


def run_glob_suite(world: World) -> list[dict[str, Any]]:
    from openviking.errors import OpenVikingError

    outcomes: list[_Timed] = []
    for pattern in CATASTROPHIC_GLOBS:
        started = time.perf_counter()
        problem = None
        try:
            outcome = f"{world.client.glob(pattern)['count']} paths"
        except OpenVikingError as exc:
            outcome = exc.code
            if exc.code not in ("INVALID_ARGUMENT", "DEADLINE_EXCEEDED"):
                problem = f"{exc.code}: {exc.message[:200]}"
        except Exception as exc:  # counted, not raised: the table says what broke
            outcome, problem = type(exc).__name__, f"{type(exc).__name__}: {exc}"
        outcomes.append(_Timed(pattern, time.perf_counter() - started, problem, outcome))
    row = _row(f"glob: {len(CATASTROPHIC_GLOBS)} hostile globs", outcomes, {"non-typed": lambda p: not p.isupper()})
    row["outcomes"] = {o.what[:60]: [round(o.seconds, 2), o.result] for o in outcomes}
    return [row]


def run_crash_suite(folder: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    from servers import ChatServer
    from test_crash_points import CASES, Embeddings, Runner, run_case, summary_reply

    rows = []
    runner = Runner()
    try:
        with ChatServer(summary_reply) as chat, Embeddings() as embeddings:
            for number, case in enumerate(CASES):
                started = time.perf_counter()
                problem = ""
                try:
                    tried, converged = run_case(case, folder / f"case{number}", chat, runner, embeddings)
                except AssertionError as exc:  # counted, and said, in the table
                    tried, converged, problem = 0, 0, str(exc)[:300]
                seconds = time.perf_counter() - started
                print(f"  {seconds:6.1f} s  {case.name}: {converged} of {tried}", file=sys.stderr)
                rows.append(
                    {
                        "suite": f"crash: {case.name}",
                        "inputs": tried,
                        "converged": converged,
                        "other": tried - converged + (1 if problem else 0),
                        "slowest s": round(seconds, 1),
                        "problems": [{"input": case.name, "problem": problem}] if problem else [],
                    }
                )
    finally:
        runner.close()
    return rows


def _damage_cases() -> list[tuple[str, Callable[[Path, Any], None]]]:
    """(what, damage(store, client)) for the repair suite; each starts from a store of a small tree."""
    from openviking.store.tables import FAULT_AFTER_COMMITS

    def newest(store: Path, table: str, kind: str) -> Path:
        if kind == "manifest":
            return sorted((store / f"{table}.lance" / "_versions").glob("*.manifest"))[0]
        return max((store / f"{table}.lance" / "data").iterdir(), key=lambda p: p.stat().st_mtime_ns)

    def killed(*argv: str, k: int, conf_name: str = "hash") -> Callable[[Path, Any], None]:
        def damage(store: Path, client: Any) -> None:
            import subprocess

            conf = store.parent / f"{conf_name}.conf"
            env = {**os.environ, FAULT_AFTER_COMMITS: str(k)}
            args = [sys.executable, "-m", "openviking_cli", *argv, "--store", str(store), "--config", str(conf)]
            subprocess.run(args, env=env, capture_output=True, cwd=str(REPO), timeout=300)

        return damage

    def records_gone(store: Path, client: Any) -> None:
        from openviking.store.lance import LanceStore

        with LanceStore.open(str(store)) as opened:
            opened.delete_records_by_uri(["viking://resources/src/a.md"])

    return [
        ("rm -r killed at its 1st commit", killed("rm", "-r", "viking://resources/src/d1", k=1)),
        ("mv killed at its 3rd commit", killed("mv", "viking://resources/src/d1", "viking://resources/m", k=3)),
        ("reindex to another model killed", killed("reindex", k=3, conf_name="hash64")),
        ("a file's records deleted", records_gone),
        ("records data files deleted", lambda s, c: [p.unlink() for p in (s / "records.lance" / "data").iterdir()]),
        ("newest nodes data file cut short", lambda s, c: os.truncate(newest(s, "nodes", "data"), 64)),
        ("newest nodes manifest overwritten", lambda s, c: newest(s, "nodes", "manifest").write_bytes(b"x" * 300)),
        ("newest records manifest emptied", lambda s, c: newest(s, "records", "manifest").write_bytes(b"")),
    ]


def run_repair_suite(folder: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    from helpers import HASH64_CONF, HASH_CONF, make_tree, write_config

    from openviking import OpenViking
    from openviking.config import load_config

    outcomes: list[_Timed] = []
    named = 0
    for number, (what, damage) in enumerate(_damage_cases()):
        work = folder / f"case{number}"
        conf = write_config(work / "hash.conf", HASH_CONF)
        write_config(work / "hash64.conf", HASH64_CONF)  # what the killed reindex is configured with
        src = make_tree(work / "src", {"a.md": "# A\n\nAlpha.\n", "d1/b.md": "# B\n\nBeta.\n", "d2/c.md": "# C\n"})
        store = work / "store"
        with OpenViking(path=store, config=load_config(conf)) as client:
            client.add_resource(src)
            (src / "d2" / "new.md").write_text("# New\n\nA new page.\n")
            client.add_resource(src)
        damage(store, None)
        started = time.perf_counter()
        problem = None
        result = ""
        try:
            with OpenViking(path=store, config=load_config(conf)) as client:
                found = client.doctor()["problems"]
                named += bool(found)
                report = client.doctor(repair=True)
                left = client.doctor()["problems"]
            result = "; ".join(report["repaired"])[:200]
            if not found:
                problem = "doctor found nothing"
            elif left:
                problem = f"left after repair: {left[0][:200]}"
        except Exception as exc:  # counted, not raised: the table says what broke
            problem = f"{type(exc).__name__}: {str(exc)[:200]}"
        outcomes.append(_Timed(what, time.perf_counter() - started, problem, result))
        print(f"  {what}: {problem or 'repaired'} ({result[:120]})", file=sys.stderr)
    row = _row(f"repair: {len(outcomes)} damaged stores", outcomes, {})
    row["repaired"] = len([o for o in outcomes if not o.problem])
    row["named by doctor"] = named
    row["outcomes"] = {o.what: o.problem or o.result for o in outcomes}
    return [row]


def _server_source(folder: Path) -> Path:
    """A small folder to add: enough files that an add over HTTP takes a while to kill in."""
    from helpers import make_tree

    files = {
        f"d{i % 6}/page{i:02d}.md": f"# Page {i}\n\nPage {i} tells of kettle {i} and teapot {i * 7}.\n" * 8
        for i in range(60)
    }
    return make_tree(folder / "src", files)


def _add(url: str, source: Path, timeout: float = 300) -> Any:
    import httpx

    return httpx.post(url + "/api/v1/resources", json={"path": str(source)}, timeout=timeout)


def _add_into(answers: list[Any], url: str, source: Path) -> None:
    with contextlib.suppress(Exception):  # the kill cuts it: no answer is what is expected
        answers.append(_add(url, source))


def run_server_killed(folder: Path, kills: int) -> dict[str, Any]:
    """``openviking serve`` killed (SIGKILL) at ``kills`` delays spread over an add, restarted on
    the same store, the add sent again: the store must be the clean run's, no URI twice."""
    import threading

    from helpers import HASH_CONF
    from ovserver import process_server
    from test_crash_points import _diff, state

    source = _server_source(folder)
    clean = folder / "clean"
    with process_server(HASH_CONF, clean / "store", clean) as server:
        started = time.perf_counter()
        response = _add(server.url, source)
        duration = time.perf_counter() - started
        assert response.status_code == 200, response.text
        server.stop()
    expected = state(clean / "store")
    print(f"  a clean add over HTTP: {duration:.2f} s", file=sys.stderr)
    outcomes: list[_Timed] = []
    cut = partial = 0
    for k in range(kills):
        delay = duration * (k + 0.5) / kills
        work = folder / f"kill{k}"
        store = work / "store"
        problem = None
        whole = False
        answered: list[Any] = []
        started = time.perf_counter()
        try:
            with process_server(HASH_CONF, store, work / "first") as server:
                sender = threading.Thread(target=_add_into, args=(answered, server.url, source))
                sender.start()
                time.sleep(delay)
                server.proc.kill()
                server.proc.wait(timeout=30)
                sender.join(timeout=60)
            cut += not answered
            if (store / "nodes.lance").exists():
                with contextlib.suppress(Exception):  # a store too damaged to read counts as partial too
                    whole = state(store) == expected
                partial += not whole
            with process_server(HASH_CONF, store, work / "again") as server:
                again = _add(server.url, source)
                if again.status_code != 200:
                    problem = f"the add again: HTTP {again.status_code}: {again.text[:200]}"
                if "Traceback" in server.log():
                    problem = f"a traceback in the restarted server's log: {server.log()[-300:]}"
                server.stop()
            got = state(store)
            if problem is None and got != expected:
                problem = f"differs from a clean run: {json.dumps(_diff(got, expected), default=str)[:300]}"
        except Exception as exc:  # counted, not raised: the table says what broke
            problem = f"{type(exc).__name__}: {str(exc)[:300]}"
        seconds = time.perf_counter() - started
        what = f"killed after {delay:.2f} s ({'mid-add' if not answered else 'after the answer'})"
        outcomes.append(_Timed(what, seconds, problem))
        print(f"  {what}: {problem or 'converged'}", file=sys.stderr)
    row = _row("server: killed mid-add", outcomes, {})
    row.update({"converged": len([o for o in outcomes if not o.problem]), "cut mid-add": cut, "left partial": partial})
    row["add s"] = round(duration, 2)
    return row


def run_server_disconnects(folder: Path, clients: int, rounds: int) -> dict[str, Any]:
    """``clients`` threads opening find, grep and add_memory requests and hanging up after 1-50 ms,
    ``rounds`` times each: the server must still answer, log no traceback, and hold each memory
    once or not at all."""
    import random
    import re
    import threading

    import httpx
    from helpers import HASH_CONF
    from ovserver import process_server
    from test_crash_points import state

    from openviking import OpenViking
    from openviking.config import config_from_dict

    source = _server_source(folder)
    store = folder / "store"
    cut = answered = 0
    acked: set[str] = set()
    lock = threading.Lock()
    problems: list[str] = []
    started = time.perf_counter()
    with process_server(HASH_CONF, store, folder) as server:
        assert _add(server.url, source).status_code == 200

        def client(number: int) -> None:
            nonlocal cut, answered
            rng = random.Random(number)
            for step in range(rounds):
                kind = ("find", "grep", "memory")[step % 3]
                mark = f"cutmark-{number}-{step}"
                path, body = {
                    "find": ("/api/v1/search/find", {"query": f"kettle {step}", "limit": 20}),
                    "grep": ("/api/v1/search/grep", {"uri": "viking://resources", "pattern": r"teapot \d+"}),
                    "memory": ("/api/v1/memories", {"text": f"The user keeps note {mark} about tea."}),
                }[kind]
                try:
                    response = httpx.post(server.url + path, json=body, timeout=rng.uniform(0.001, 0.05))
                except httpx.TimeoutException:
                    with lock:
                        cut += 1
                    continue
                with lock:
                    answered += 1
                    if response.status_code != 200:
                        problems.append(f"{kind}: HTTP {response.status_code}: {response.text[:200]}")
                    elif kind == "memory":
                        acked.add(mark)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # A cut request still runs to its end on the server; /health answers meanwhile, while a
        # find waits in the thread pool behind those left.
        cuts_done = time.perf_counter()
        health = None
        while health is None and time.perf_counter() - cuts_done < 180:
            with contextlib.suppress(httpx.TimeoutException):
                health = httpx.get(server.url + "/health", timeout=5)
        recovered = time.perf_counter() - cuts_done
        if health is None:
            raise AssertionError("/health did not answer in 180 s after the cut requests")
        found = httpx.post(server.url + "/api/v1/search/find", json={"query": "kettle"}, timeout=180)
        serving = health.status_code == 200 and found.status_code == 200 and bool(found.json()["result"])
        server.stop()  # waits for the cut requests still running: then every memory is in
        log = server.log()
    with OpenViking(path=store, config=config_from_dict(HASH_CONF)) as reader:
        grep = reader.grep("viking://user", r"cutmark-\d+-\d+", level_limit=0)
    where: dict[str, set[str]] = {}
    for match in grep["matches"]:
        for mark in re.findall(r"cutmark-\d+-\d+", match["content"]):
            where.setdefault(mark, set()).add(match["uri"])
    duplicates = len([m for m, uris in where.items() if len(uris) > 1])
    lost = len(acked - set(where))
    if not serving:
        problems.append(f"not serving after: /health {health.status_code}, find {found.status_code}")
    if "Traceback" in log:
        problems.append(f"a traceback in the server's log: {log[log.index('Traceback') :][:300]}")
    if duplicates:
        problems.append(f"{duplicates} memories stored at more than one URI")
    if lost:
        problems.append(f"{lost} acknowledged memories not stored")
    try:
        state(store)  # asserts no URI and no record id twice
    except AssertionError as exc:
        problems.append(f"store: {exc}")
    seconds = time.perf_counter() - started
    print(f"  {cut} cut, {answered} answered, {len(where)} memories stored, {len(acked)} acknowledged", file=sys.stderr)
    return {
        "suite": "server: clients disconnecting",
        "inputs": cut + answered,
        "requests cut": cut,
        "still serving": "yes" if serving else "no",
        "duplicates": duplicates,
        "memories stored": len(where),
        "health answered after s": round(recovered, 1),
        "acknowledged": len(acked),
        "other": len(problems),
        "slowest s": round(seconds, 1),
        "problems": [{"input": "disconnecting clients", "problem": p[:300]} for p in problems[:50]],
    }


def run_server_suite(folder: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    folder.mkdir(parents=True, exist_ok=True)
    return [
        run_server_killed(folder / "killed", args.kills),
        run_server_disconnects(folder / "disconnects", args.clients, args.rounds),
    ]


# A suite: its own folder and the arguments in, rows for the table out.
Suite = Callable[[Path, argparse.Namespace], list[dict[str, Any]]]


@contextlib.contextmanager
def world_in(folder: Path) -> Iterator[World]:
    """A fresh contracts store in ``folder``, the working directory while it is used (the
    command lines' relative paths name its files)."""
    world = make_world(folder)
    os.chdir(world.base)
    try:
        yield world
    finally:
        world.close()


def _on_world(run: Callable[[World, argparse.Namespace], list[dict[str, Any]]]) -> Suite:
    def suite(folder: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
        with world_in(folder) as world:
            return run(world, args)

    return suite


SUITES: dict[str, Suite] = {
    "cli": _on_world(lambda world, args: run_cli_suite(world, args.examples, args.seed)),
    "sdk": _on_world(lambda world, args: run_sdk_suite(world, args.examples, args.seed)),
    "regex": _on_world(lambda world, args: run_regex_suite(world, args.python_seconds)),
    "glob": _on_world(lambda world, args: run_glob_suite(world)),
    "crash": run_crash_suite,
    "repair": run_repair_suite,
    "server": run_server_suite,
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench reliability", description=__doc__)
    parser.add_argument("--examples", type=int, default=1000, help="cli, sdk: inputs each")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--suites", default=",".join(SUITES), help=f"comma-separated, of {', '.join(SUITES)}")
    parser.add_argument("--python-seconds", type=float, default=10.0, help="regex: how long Python's re may take")
    parser.add_argument("--kills", type=int, default=10, help="server: kills of a server mid-add")
    parser.add_argument("--clients", type=int, default=8, help="server: clients hanging up at once")
    parser.add_argument("--rounds", type=int, default=15, help="server: requests each client cuts")
    parser.add_argument("--work", type=Path, help="work directory (default: a new temp dir)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "reliability.json")
    args = parser.parse_args(argv)
    chosen = [s for s in args.suites.split(",") if s]
    unknown = [s for s in chosen if s not in SUITES]
    if unknown:
        parser.error(f"unknown suites: {', '.join(unknown)}")
    work = args.work or Path(tempfile.mkdtemp(prefix="openviking-reliability-"))
    work.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with isolated(work):
        for name in chosen:
            print(f"{name}...", file=sys.stderr)
            suite_started = time.perf_counter()
            for row in SUITES[name](work / name, args):
                row["seconds"] = round(time.perf_counter() - suite_started, 1)
                rows.append(row)
        left = leftover_processes(work)  # a service or a watcher no suite stopped: stopped now, and counted
    print_table(rows, COLUMNS, title="reliability: inputs tried and what broke")
    for line in left:
        print(f"  left running after the suites (stopped now): {line[:200]}")
    for row in rows:
        for problem in row.get("problems", [])[:5]:
            print(f"  {row['suite']}: {problem['problem'][:160]}\n    <- {problem['input'][:160]}")
        if "agree with Python" in row:
            print(
                f"  regex: {row['deadline']} stopped at the deadline, {row['agree with Python']} agree with "
                f"Python's re, {row['Python over limit']} that Python's re did not finish in {args.python_seconds:g} s"
            )
    command = "python -m bench reliability " + " ".join(argv)
    report = {
        "command": command.strip(),
        "seconds": round(time.perf_counter() - started, 1),
        "rows": rows,
        "processes_left": left,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=True, default=str) + "\n", encoding="utf-8")
    print(f"\nwritten: {args.out}", file=sys.stderr)
    broken = sum(
        r.get("tracebacks", 0) + r.get("wrong codes", 0) + r.get("non-typed", 0) + r.get("other", 0) for r in rows
    )
    return 1 if broken or left or any(r.get("over 10 s") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
