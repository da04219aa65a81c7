"""The CLI over a server (``--url``, ``OPENVIKING_URL``): every command prints what it prints
embedded and exits with the same status, errors included, and the remote path loads neither
LanceDB, pyarrow nor the model (nor httpx, for the calls that upload nothing).

Two stores are built alike from one tree; each command line runs on one embedded (``--store``)
and on the other through a server on 127.0.0.1 (``--url``), in the same order, so writes
leave both stores alike too. Outputs are compared with times and message ids masked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import EN_FILES, HASH_CONF, Cli, CliResult, heavy, loaded_modules, make_tree, write_hash_config
from ovserver import ROOT_KEY, keyed_config, thread_server
from servers import free_port

import openviking as ov

H = "viking://resources/handbook"
_TIMES = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?Z?)?")
_SECONDS = re.compile(r"\d+\.\d+ s\b")
_MESSAGE_IDS = re.compile(r"\bmsg_[0-9a-f]+")


def _masked_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: None if k in ("time", "seconds", "id", "created_at", "updated_at", "modTime") else _masked_json(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_masked_json(v) for v in value]
    if isinstance(value, str):
        return _TIMES.sub("<time>", value)
    return value


def _masked(text: str) -> Any:
    """Output with what differs between two runs (times, durations, message ids) masked."""
    try:
        return [_masked_json(json.loads(line)) for line in text.splitlines() if line.strip()]
    except ValueError:
        return _MESSAGE_IDS.sub("msg_<id>", _SECONDS.sub("<s>", _TIMES.sub("<time>", text)))


class Both:
    """One command line run embedded and over the server: their results."""

    def __init__(self, cli: Cli, store: Path, conf: Path, url: str) -> None:
        self.cli, self.store, self.conf, self.url = cli, store, conf, url

    def __call__(self, *argv: Any) -> tuple[CliResult, CliResult]:
        here = self.cli(*argv, "--store", self.store, "--config", self.conf)
        there = self.cli("--url", self.url, *argv)
        return here, there

    def same(self, *argv: Any) -> CliResult:
        here, there = self(*argv)
        assert there.code == here.code, (argv, here, there)
        assert _masked(there.out) == _masked(here.out), argv
        assert _masked(there.err) == _masked(here.err), argv
        return there


def _build(store: Path, tree: Path) -> None:
    with ov.OpenViking(path=store, config=dict(HASH_CONF)) as client:
        client.add_resource(tree)
        client.link(f"{H}/auth.md", f"{H}/deploy/docker.md", reason="both about running it")
        client.add_message("s1", "user", "We are designing the OAuth login flow.")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path, str]]:
    base = tmp_path_factory.mktemp("remote")
    tree = make_tree(base / "handbook", EN_FILES)
    _build(base / "embedded", tree)
    _build(base / "served", tree)
    conf = write_hash_config(base / "conf" / "ov.conf")
    with thread_server(HASH_CONF, base / "served") as url:
        yield base, base / "embedded", conf, url


@pytest.fixture
def both(cli: Cli, served: tuple[Path, Path, Path, str]) -> Both:
    _, store, conf, url = served
    return Both(cli, store, conf, url)


READS = [
    ("find", "how do users authenticate", "-n", "3"),
    ("find", "docker", "-u", f"{H}/deploy", "-L", "2", "-t", "0"),
    ("find", "kubernetes helm", "--mode", "keyword", "--explain"),
    ("find", "deploy", "--after", "2000-01-01", "--before", "2999-12-31", "--time-field", "created_at"),
    ("find", "nothing of the kind", "-u", f"{H}/missing"),
    ("search", "best practices", "--session-id", "s1"),
    ("grep", H, "docker", "-i"),
    ("grep", H, "the", "-L", "0", "-x", f"{H}/notes", "-n", "4"),
    ("grep", H, "e", "-c"),
    ("grep", "a", "-u", H, "-l", "-F"),
    ("glob", "**/*.md", "--uri", H),
    ("glob", "*", "-n", "2"),
    ("read", f"{H}/auth.md"),
    ("read", f"{H}/auth.md", "--offset", "2", "--limit", "1"),
    ("abstract", H),
    ("overview", f"{H}/deploy"),
    ("ls", H),
    ("ls", H, "-r", "-a"),
    ("ls", "viking://", "-s"),
    ("tree", H, "-L", "2"),
    ("stat", f"{H}/auth.md"),
    ("stat", "viking://user/default/sessions/s1"),
    ("relations", f"{H}/auth.md"),
    ("session", "list"),
    ("session", "show", "s1"),
    ("session", "context", "s1", "--budget", "200"),
    ("context", "how do users authenticate", "--budget", "300"),
    ("snapshot", "list"),
    ("watch", "--list"),
]
# Read commands compared by a test of their own below, and why.
COMPARED_APART = {
    "eval": "reads a golden file the test writes",
    "doctor": "reports the store and config of the process that runs it (the server's: its own test)",
}


def test_every_read_command_is_compared() -> None:
    from openviking.contract.operations import OPERATIONS

    tried = {" ".join(argv[:2]) for argv in READS} | {argv[0] for argv in READS} | set(COMPARED_APART)
    reads = sorted({op.command for op in OPERATIONS.values() if not op.writes})
    assert [command for command in reads if command not in tried] == []


def test_eval_prints_the_same_over_a_server(both: Both, served: tuple[Path, Path, Path, str]) -> None:
    golden = served[0] / "golden.jsonl"
    golden.write_text(json.dumps({"query": "run it in containers", "relevant": [f"{H}/deploy/docker.md"]}) + "\n")
    for fmt in ((), ("-o", "json")):
        assert both.same("eval", golden, "-k", "5", *fmt).code == 0


@pytest.mark.parametrize("fmt", [(), ("-o", "json"), ("-o", "jsonl")], ids=["table", "json", "jsonl"])
@pytest.mark.parametrize("argv", READS, ids=[" ".join(a[:2]) for a in READS])
def test_a_read_prints_the_same_over_a_server(both: Both, argv: tuple[str, ...], fmt: tuple[str, ...]) -> None:
    result = both.same(*argv, *fmt)
    assert result.code == 0, result


ERRORS = [
    (("read", f"{H}/nope.md"), 1, "NOT_FOUND"),
    (("ls", "http://example.com"), 2, "INVALID_URI"),
    (("stat", f"{H}/../x"), 2, "PERMISSION_DENIED"),
    (("find", "x", "--uri", "viking://user/bob"), 2, "PERMISSION_DENIED"),
    (("grep", H, "(unclosed"), 2, "INVALID_ARGUMENT"),
    (("find", "x", "--after", "yesterday-ish"), 2, "INVALID_ARGUMENT"),
    (("find", "x", "--filter", '{"op": "nope"}'), 2, "INVALID_ARGUMENT"),
    (("rm", H), 1, "FAILED_PRECONDITION"),
    (("mkdir", H), 1, "ALREADY_EXISTS"),
    (("mv", f"{H}/nope.md", f"{H}/nope2.md"), 1, "NOT_FOUND"),
    (("session", "show", "never-made"), 1, "NOT_FOUND"),
    (("session", "add-message", "s1", "--role", "robot", "--content", "hi"), 2, "INVALID_ARGUMENT"),
    (("add-resource", "/no/such/path/here"), 1, "NOT_FOUND"),
    (("glob", "*", "--uri", f"{H}/auth.md"), 1, "FAILED_PRECONDITION"),
    (("mv", H, f"{H}/inner"), 1, "FAILED_PRECONDITION"),
    (("relations", f"{H}/nope.md"), 1, "NOT_FOUND"),
    (("reindex", f"{H}/nope.md"), 1, "NOT_FOUND"),
]


@pytest.mark.parametrize(("argv", "status", "code"), ERRORS, ids=[" ".join(a[:2]) for a, _, _ in ERRORS])
def test_an_error_is_the_same_over_a_server(both: Both, argv: tuple[str, ...], status: int, code: str) -> None:
    table = both.same(*argv)
    assert table.code == status and table.out == "" and table.err.startswith("Error: "), table
    machine = both.same(*argv, "-o", "json")
    assert machine.code == status and json.loads(machine.err)["error"]["code"] == code, machine


def test_writes_print_the_same_over_a_server(both: Both, served: tuple[Path, Path, Path, str]) -> None:
    base = served[0]
    extra = make_tree(base / "extra", {"a.md": "# Alpha\n\nAlpha text.\n", "b/c.md": "# Gamma\n\nGamma text.\n"})
    odd = make_tree(base / "my notes", {"n.md": "# Notes\n\nSome notes.\n"})
    skill = make_tree(base / "skill", {"SKILL.md": "---\nname: write-rfc\n---\n# Write an RFC\n\nSteps.\n"})
    steps: list[tuple[Any, ...]] = [
        ("add-resource", extra, "--to", "viking://resources/extra", "--tag", "team=search"),
        ("add-resource", extra, "--to", "viking://resources/extra", "-o", "json"),
        ("add-resource", odd),  # renamed, with a warning that names the path
        ("add-resource", extra / "a.md", "--parent", "viking://resources/extra/b", "--include", "*.md"),
        ("add-skill", skill, "--tag", "kind=writing"),
        ("add-skill", skill, "-o", "json"),
        ("add-memory", "The user deploys on Fridays", "--category", "habits", "--tag", "k=v"),
        ("add-memory", "The user deploys on Fridays", "--category", "habits", "-o", "json"),
        ("mkdir", "viking://resources/empty", "--description", "Nothing yet"),
        ("mv", "viking://resources/empty", "viking://resources/still-empty"),
        ("link", f"{H}/README.md", f"{H}/auth.md", f"{H}/notes/cooking.md", "--reason", "see also"),
        ("unlink", f"{H}/README.md", f"{H}/notes/cooking.md", "-o", "json"),
        ("rm", "viking://resources/extra/b", "-r"),
        ("rm", "viking://resources/never-there", "-o", "json"),
        ("session", "new", "--session-id", "s2"),
        ("session", "add-message", "s2", "--role", "user", "--content", "first"),
        ("session", "add-message", "s3", "--role", "assistant", "--content", "makes s3", "-o", "json"),
        ("session", "show", "s2", "-o", "json"),
        ("session", "delete", "s2"),
        ("reindex", H),
        ("ls", "viking://resources", "-r", "-o", "json"),
        ("tree", "viking://", "-L", "0"),
    ]
    for argv in steps:
        assert both.same(*argv).code == 0, argv


def test_doctor_over_a_server_reports_the_servers_store(both: Both) -> None:
    here, there = both("doctor", "-o", "json")
    assert there.code == here.code == 0, there
    local, remote = here.json()["result"], there.json()["result"]
    assert set(remote) == set(local) and remote["problems"] == local["problems"] == []
    assert remote["store"]["path"] != local["store"]["path"]  # the server's, not a local one


def test_the_remote_path_loads_no_store_and_no_model(served: tuple[Path, Path, Path, str]) -> None:
    url = served[3]
    code = (
        "from openviking_cli.main import main\n"
        f"assert main(['--url', {url!r}, 'find', 'how do users authenticate', '-o', 'json']) == 0\n"
        f"assert main(['--url', {url!r}, 'add-memory', 'loads nothing', '-o', 'json']) == 0\n"
        f"assert main(['--url', {url!r}, 'grep', {H!r}, 'docker']) == 0"
    )
    loaded = loaded_modules(code)
    assert heavy(loaded) == []
    assert not [m for m in loaded if m.startswith(("openviking.store", "openviking.embedded", "openviking.models"))]
    assert not [m for m in loaded if m.split(".")[0] in ("httpx", "httpcore")]  # JSON calls go over the stdlib


def test_the_url_and_key_may_come_from_the_environment(
    cli: Cli, served: tuple[Path, Path, Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENVIKING_URL", served[3])
    result = cli("ls", H, "-s")
    assert result.code == 0 and f"{H}/auth.md" in result.out.splitlines(), result
    base = tmp_path / "keyed"
    base.mkdir()
    store = base / "store"
    with ov.OpenViking(path=store, config=dict(HASH_CONF)) as client:
        client.add_memory("keys work")
    with thread_server(keyed_config(), store) as url:
        monkeypatch.setenv("OPENVIKING_URL", url)
        missing = cli("find", "keys")
        assert (missing.code, missing.out) == (1, "") and missing.err.startswith("Error: Missing API key\n"), missing
        monkeypatch.setenv("OPENVIKING_API_KEY", ROOT_KEY)
        found = cli("find", "keys", "-o", "json")
        assert found.code == 0 and [m["uri"] for m in found.json()["result"]["memories"]], found
        wrong = cli("find", "keys", "--api-key", ROOT_KEY[::-1], "-o", "json")
        assert wrong.code == 1 and json.loads(wrong.err)["error"]["code"] == "UNAUTHENTICATED", wrong
        assert ROOT_KEY not in wrong.err + wrong.out and ROOT_KEY[::-1] not in wrong.err + wrong.out


def test_a_server_that_is_down_is_one_error_line_and_exit_1(cli: Cli) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = cli("--url", url, "find", "x")
    assert (result.code, result.out) == (1, ""), result
    first = result.err.splitlines()[0]
    assert first.startswith(f"Error: Cannot reach the openviking server at {url} ("), result.err
    assert "Traceback" not in result.err
    machine = cli("--url", url, "ls", "-o", "json")
    assert machine.code == 1 and json.loads(machine.err)["error"]["code"] == "UNAVAILABLE"
    bad = cli("--url", "localhost:1933", "ls")
    assert bad.code == 2 and bad.err.startswith("Error: url must be an http:// or https:// address"), bad
