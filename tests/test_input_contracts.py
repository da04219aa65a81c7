"""Input contracts: any command line and any SDK call with values of every kind fails cleanly.

Property tests over every command and option of the CLI and every method of the SDK (the
strategies and checks are in ``contracts.py``; ``OPENVIKING_FUZZ_EXAMPLES`` sets how many
examples each runs, ``python -m bench reliability`` runs many more), and the bad inputs that
once ended in "This is a bug" or a raw Python exception, each with its code, message and exit
status, on a store they leave as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contracts import (
    SERVING,
    World,
    cli_argv,
    cli_commands,
    examples,
    leftover_processes,
    make_world,
    processes_naming,
    run_cli,
    run_sdk,
    sdk_call,
    sdk_methods,
)
from helpers import Cli, cli_unharmed, unharmed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openviking.errors import InvalidArgumentError, InvalidURIError, OpenVikingError

R = "viking://resources"
HANDBOOK = f"{R}/handbook"


def property_settings(count: int) -> settings:
    return settings(
        max_examples=examples(count),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
        database=None,
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The contracts' store, with a home, a working directory (for relative paths) and a short
    grep deadline of its own."""
    base = tmp_path_factory.mktemp("contracts")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(base / "home"))
        mp.setenv("OPENVIKING_HOME", str(base / "home" / ".openviking"))
        for name in ("OPENVIKING_STORE", "OPENVIKING_CONFIG_FILE", "OPENVIKING_DEBUG", "FORCE_COLOR"):
            mp.delenv(name, raising=False)
        mp.setenv("NO_COLOR", "1")
        mp.setenv("OPENVIKING_GREP_TIMEOUT", "2")
        mp.chdir(base)
        built = make_world(base)
        yield built
        built.close()
        assert leftover_processes(base, linger=0) == []  # (run_cli stopped any, and said so)


# ----------------------------------------------------------------------------- properties

COMMANDS = cli_commands()
METHODS = sdk_methods()


def test_the_strategies_reach_every_command_and_method() -> None:
    paths = {" ".join(c.path) for c in COMMANDS}
    assert {"find", "grep", "glob", "add-resource", "mv", "session add-message", "doctor"} <= paths
    assert {"find", "search", "grep", "glob", "ls", "add_resource", "add_message", "session", "doctor"} <= set(METHODS)


def test_no_command_drawn_starts_a_service_or_a_watch() -> None:
    # Each would leave a process serving the contracts' store (and answering every command
    # drawn after it) once the run is over.
    paths = {" ".join(c.path) for c in COMMANDS}
    assert {"start", "serve", "mcp", "watch"} <= SERVING
    assert not paths & {"start", "serve", "mcp", "watch"}, paths & SERVING
    options = {opt for c in COMMANDS for p in c.params for opt in p.opts}
    assert not options & {"--watch", "--watch-interval"}
    assert "--background" in options  # drawn: the index it starts ends by itself, and is waited for


def test_a_command_that_leaves_a_service_running_breaks_the_contract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENVIKING_HOME", str(tmp_path / "home" / ".openviking"))
    monkeypatch.delenv("OPENVIKING_NO_SERVICE", raising=False)
    world = make_world(tmp_path / "w", session=False)
    monkeypatch.chdir(world.base)
    try:
        outcome = run_cli(world, ["start"])
        assert outcome.problem is not None and outcome.problem.startswith("left 1 process(es) running: "), outcome
        assert " serve --local " in outcome.problem
        assert processes_naming(world.base) == {}  # stopped, not only counted
        # A background index is waited for: it ends by itself, and breaks nothing.
        (tmp_path / "w" / "late.md").write_text("# Late\n\nA page added last.\n", encoding="utf-8")
        added = run_cli(world, ["add-resource", "late.md", "--background", "-o", "json"])
        assert added.problem is None and added.details["exit"] == 0, added
        assert json.loads(added.details["stdout"])["result"]["background"]["pid"] > 0
        assert processes_naming(world.base) == {}
    finally:
        leftover_processes(world.base, linger=0)
        world.close()


@property_settings(120)
@given(data=st.data())
def test_the_command_line_exits_cleanly_on_any_input(world: World, data: st.DataObject) -> None:
    argv = data.draw(cli_argv(COMMANDS), label="argv")
    outcome = run_cli(world, argv)
    assert outcome.problem is None, (outcome.what, outcome.problem, outcome.details)


@property_settings(200)
@given(data=st.data())
def test_the_sdk_raises_only_its_errors_on_any_input(world: World, data: st.DataObject) -> None:
    call = data.draw(sdk_call(METHODS, world), label="call")
    outcome = run_sdk(world, call)
    assert outcome.problem is None, (outcome.what, outcome.problem)


# ----------------------------------------------------------------------------- the filter DSL

NESTED_1000 = '{"op": "and", "conds": [' * 1000 + "]}" * 1000


@pytest.mark.parametrize(
    ("filter_", "needle"),
    [
        ('{"op": "range", "field": "level", "gte": 1' + "0" * 5000 + "}", "a number Python cannot read"),
        (NESTED_1000, "nested more than 64 levels deep"),
        ("[" * 100_000 + "]" * 100_000, "nested more than 64 levels deep"),
        ("[" * 600 + "]" * 600, "filter must be a JSON object with an 'op'"),
        ('{"op": "range", "field": "level", "gte": NaN}', "NaN is not a JSON number"),
        ('{"op": "range", "field": "level", "lte": Infinity}', "Infinity is not a JSON number"),
        ('{"op": "range", "field": "level", "gte": 1e400}', "'level' bounds must be finite numbers (got inf)"),
        ('{"op": "must", "field": ["level"], "conds": [1]}', "Unknown filter field '['level']'"),
        ('{"op": ["and"], "conds": []}', "Unknown filter op '['and']'"),
        ('{"op": "must", "field": "uri", "conds": ["viking://resources"], "para": "-d=99999999999"}', "-d=N"),
        ('{"op": "must", "field": "uri", "conds": ["viking://resources"], "para": 5}', "'para' must look like -d=N"),
    ],
)
def test_bad_filters_are_invalid_arguments(handbook_ov: Cli, tmp_path: Path, filter_: str, needle: str) -> None:
    error, _table = cli_unharmed(
        handbook_ov, tmp_path / "store", ["find", "docker", "--filter", filter_], "INVALID_ARGUMENT", 2, needle
    )
    assert len(json.dumps(error)) < 5000  # the error quotes the filter, cut short


@pytest.mark.parametrize(
    ("filter_", "expected"),
    [
        ({"op": "range", "field": "level", "gte": 1.5}, {2}),  # the integers it means
        ({"op": "range", "field": "level", "lt": 0.5}, {0}),
        ({"op": "range", "field": "level", "gt": 10**30}, set()),  # beyond what the column holds
        ({"op": "range", "field": "level", "lte": 2**63}, {0, 1, 2}),
        ({"op": "must", "field": "level", "conds": [300, 2]}, {2}),
        ({"op": "must", "field": "level", "conds": [10**5000]}, set()),
        ({"op": "time_range", "field": "updated_at", "gte": "0001-01-01", "lte": "9999-12-31"}, {0, 1, 2}),
        ({"op": "time_range", "field": "updated_at", "gte": "9000-01-01"}, set()),
    ],
)
def test_numbers_and_times_beyond_the_columns_mean_what_they_say(
    handbook_client: Any, filter_: dict[str, Any], expected: set[int]
) -> None:
    hits = handbook_client.find("deploy", filter=filter_, limit=1000, score_threshold=-1)
    assert {h.level for h in hits} == expected


def test_a_filter_that_contains_itself_is_refused(handbook_client: Any) -> None:
    node: dict[str, Any] = {"op": "or", "conds": []}
    node["conds"].append(node)
    error = unharmed(handbook_client, lambda: handbook_client.find("x", filter=node))
    assert error.code == "INVALID_ARGUMENT" and "nested more than 64 levels deep" in error.message


# ----------------------------------------------------------------------------- globs and limits


def test_a_glob_of_500_nested_braces_is_refused(handbook_ov: Cli, tmp_path: Path) -> None:
    pattern = "{" * 500 + "a" + "}" * 500
    _error, table = cli_unharmed(
        handbook_ov, tmp_path / "store", ["glob", pattern], "INVALID_ARGUMENT", 2, "braces are nested more than 32 deep"
    )
    assert "Hint: " in table.err


def test_a_glob_of_32_nested_braces_still_matches(handbook_ov: Cli) -> None:
    result = handbook_ov("glob", "{" * 32 + "auth.md" + "}" * 32, "-u", HANDBOOK, "-o", "json")
    assert result.code == 0 and result.json()["result"]["matches"] == [f"{HANDBOOK}/auth.md"]


def test_a_huge_glob_is_refused(handbook_ov: Cli, tmp_path: Path) -> None:
    cli_unharmed(handbook_ov, tmp_path / "store", ["glob", "*" * 20_000], "INVALID_ARGUMENT", 2, "more than the 10,000")


@pytest.mark.parametrize(
    "command", [["glob", "**"], ["grep", "x", "-u", HANDBOOK], ["ls", HANDBOOK], ["tree", HANDBOOK]]
)
def test_a_node_limit_beyond_32_bits_is_refused(handbook_ov: Cli, tmp_path: Path, command: list[str]) -> None:
    # The store's filters write counts as 32-bit literals: a larger one is refused, never a 500.
    for too_many in (2**31, 10**30):
        cli_unharmed(
            handbook_ov, tmp_path / "store", [*command, "-n", str(too_many)], "INVALID_ARGUMENT", 2,
            "node_limit must be at most 2,147,483,647",
        )  # fmt: skip


def test_find_still_takes_any_limit(handbook_ov: Cli) -> None:
    result = handbook_ov("find", "docker", "-n", str(10**30), "-o", "json")
    assert result.code == 0, result.err


# ----------------------------------------------------------------------------- the SDK


def _deep(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


SDK_CASES: list[tuple[str, dict[str, Any], type[OpenVikingError], str]] = [
    ("read", {"uri": _deep(5000)}, InvalidURIError, "uri must be a string"),
    ("stat", {"uri": _deep(5000)}, InvalidURIError, "uri must be a string"),
    (
        "find",
        {"query": "x", "limit": _deep(5000)},
        InvalidArgumentError,
        "limit must be an integer >= 0 (got [[[[...]]]])",
    ),
    (
        "find",
        {"query": "x", "time_field": True},
        InvalidArgumentError,
        "time_field must be one of: updated_at, created_at",
    ),
    ("find", {"query": "x", "explain": "yes"}, InvalidArgumentError, "explain must be True or False (got 'yes')"),
    ("find", {"query": "x", "level": 2.5}, InvalidArgumentError, "level must be 0, 1, 2"),
    ("find", {"query": "x", "mode": ["hybrid"]}, InvalidArgumentError, "mode must be one of"),
    ("ls", {"uri": HANDBOOK, "abs_limit": "x"}, InvalidArgumentError, "abs_limit must be an integer >= 0 (got 'x')"),
    ("grep", {"uri": HANDBOOK, "pattern": "x", "exclude_uri": 5}, InvalidURIError, "exclude_uri must be a string"),
    ("glob", {"pattern": "**", "node_limit": 10**30}, InvalidArgumentError, "node_limit must be at most"),
    ("rm", {"uri": f"{HANDBOOK}/auth.md", "recursive": "np"}, InvalidArgumentError, "recursive must be True or False"),
    ("add_memory", {"text": "x", "category": type}, InvalidArgumentError, "Memory category must be a string"),
    ("add_resource", {"path": 5}, InvalidArgumentError, "path must be a string or a path (got int)"),
    ("add_resource", {"path": "x" * 5000}, OpenVikingError, "Path not found"),
    ("link", {"from_uri": HANDBOOK, "uris": 5}, InvalidURIError, "to_uri must be a string"),
    ("add_resource", {"path": __file__, "source_name": True}, InvalidArgumentError, "source_name must be a string"),
    ("add_skill", {"path": __file__, "source_name": 5}, InvalidArgumentError, "source_name must be a string (got int)"),
    ("session", {"session_id": _deep(5000)}, InvalidArgumentError, "Invalid session id '[[[[...]]]]'"),
    ("context", {"query": "auth", "session_id": ()}, InvalidArgumentError, "session_id must be a string (got tuple)"),
]


@pytest.mark.parametrize(("method", "kwargs", "kind", "needle"), SDK_CASES, ids=[c[0] for c in SDK_CASES])
def test_sdk_calls_of_the_wrong_type_raise_its_errors(
    handbook_client: Any, method: str, kwargs: dict[str, Any], kind: type[OpenVikingError], needle: str
) -> None:
    error = unharmed(handbook_client, lambda: getattr(handbook_client, method)(**kwargs))
    assert isinstance(error, kind) and needle in error.message, (type(error), error.message)


def test_a_numpy_array_as_a_flag_is_an_invalid_argument(handbook_client: Any) -> None:
    import numpy as np

    for method, kwargs in [
        ("grep", {"uri": HANDBOOK, "pattern": "x", "case_insensitive": np.array([1, 2])}),
        ("ls", {"uri": HANDBOOK, "recursive": np.array([True, False])}),
        ("find", {"query": "x", "include_provenance": np.array([1])}),
    ]:
        error = unharmed(handbook_client, lambda m=method, k=kwargs: getattr(handbook_client, m)(**k))
        assert error.code == "INVALID_ARGUMENT" and "must be True or False" in error.message


def test_numpy_booleans_and_0_1_still_work_as_flags(handbook_client: Any) -> None:
    import numpy as np

    assert handbook_client.grep(HANDBOOK, "DOCKER", case_insensitive=np.bool_(True))["count"] >= 1
    assert handbook_client.grep(HANDBOOK, "DOCKER", case_insensitive=1)["count"] >= 1
    assert handbook_client.grep(HANDBOOK, "DOCKER", case_insensitive=0)["count"] == 0
