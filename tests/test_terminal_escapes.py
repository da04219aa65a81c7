"""No control character from the data reaches the terminal: not from a file's text or name, a
tar member's name, a message, a link's reason, a golden query, a warning or an error.

A store is filled with text that would clear the screen, retitle the window, start a C1 CSI and
overwrite a line, through the CLI, and every command that shows it is run in its table form:
nothing it prints on stdout or stderr holds a raw control character (tabs and line ends
aside). JSON escapes them, CSV spells them out. And nothing in the CLI writes to stdout or
stderr except ``openviking_cli/console.py``, where the one escape happens.
"""

from __future__ import annotations

import ast
import io
import json
import re
import tarfile
from pathlib import Path

import httpx
import pytest
from helpers import HASH_CONF, REPO, Cli, CliResult, make_tree, with_store
from ovserver import handbook_store, process_server

# OSC 0 (the window's title) ended by BEL, "clear the screen", a C1 CSI (U+009B) setting red, DEL,
# and a carriage return that would hide what comes before it on the line.
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x9b31m\x7f\r"
RAW = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")


def _clean(result: CliResult, *argv: object) -> CliResult:
    raw = RAW.findall(result.out + result.err)
    assert not raw, (argv, raw, result.out[:800], result.err[:800])
    return result


@pytest.fixture
def hostile(cli: Cli, hash_conf: Path, tmp_path: Path) -> Cli:
    """A store holding HOSTILE in a folder's file names and text, a tar member's name, a
    message, a memory and a link's reason; its CLI (``--store``, ``--config``)."""
    ov = with_store(cli, tmp_path / "store", hash_conf)
    tree = make_tree(
        tmp_path / "esc",
        {f"note{HOSTILE}.md": f"# Title {HOSTILE} here\n\nbody {HOSTILE} text\n", "plain.md": "# Plain\n\nplain\n"},
    )
    archive = tmp_path / "bundle.tar"
    data = f"# Inner {HOSTILE}\n\ninner {HOSTILE} text\n".encode()
    with tarfile.open(archive, "w") as tar:
        member = tarfile.TarInfo(f"inner{HOSTILE}.md")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    warnings = ""
    for argv in (
        ("add-resource", tree, "--to", "viking://resources/esc"),
        ("add-resource", tree / f"note{HOSTILE}.md"),
        ("add-resource", archive, "--to", "viking://resources/bundle"),
        ("add-memory", f"I like {HOSTILE} tea"),
        ("session", "add-message", "s1", "--role", "user", "--content", f"hello {HOSTILE} there"),
        ("link", "viking://resources/esc/plain.md", "viking://resources/bundle", "--reason", f"why {HOSTILE}"),
        ("snapshot", "tag", "then"),
    ):
        done = _clean(ov(*argv), *argv)
        assert done.code == 0, (argv, done.err)
        warnings += done.err
    # the names each add renamed, said as they were given
    assert warnings.count("Warning:") >= 3 and warnings.count("\\x1b]0;pwned\\x07") >= 3, warnings
    return ov


def _one(ov: Cli, *argv: object) -> str:
    """The one URI the listing of ``argv`` holds whose name starts as given (its last word)."""
    uris = ov(*argv, "-o", "json").json()["result"]["matches"]
    return next(uri for uri in uris if "plain" not in uri and not uri.endswith("/"))


def test_no_table_output_carries_a_control_character(hostile: Cli, tmp_path: Path) -> None:
    ov = hostile
    note = _one(ov, "glob", "esc/note*", "--uri", "viking://resources")
    inner = _one(ov, "glob", "**/inner*", "--uri", "viking://resources/bundle")
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"query": f"body {HOSTILE}", "relevant": [note]}) + "\n", encoding="utf-8")
    commands = [
        ("read", note),
        ("read", inner),
        ("abstract", note),
        ("overview", note),
        ("stat", note),
        ("ls", "viking://resources", "-r"),
        ("ls", "viking://resources", "-r", "-s"),
        ("ls", "viking://resources", "-r", "-o", "csv"),
        ("ls", "viking://resources", "-r", "-o", "tsv"),
        ("tree", "viking://resources"),
        ("find", "body text"),
        ("find", f"body {HOSTILE}"),
        ("search", "body text"),
        ("context", "body text"),
        ("grep", "text", "--uri", "viking://resources"),
        ("grep", "text", "--uri", "viking://resources", "-c"),
        ("glob", "**", "--uri", "viking://resources"),
        ("relations", "viking://resources/esc/plain.md"),
        ("session", "show", "s1"),
        ("session", "show", "s1", "-o", "csv"),
        ("session", "list"),
        ("session", "context", "s1"),
        ("eval", golden),
        ("snapshot", "list"),
        ("read", note, "--as-of", "then"),
        # errors that quote what they were given
        ("read", f"viking://resources/esc/gone{HOSTILE}"),
        ("read", f"viking://resources/missing-{HOSTILE[1:4]}x"),
        ("find", "x", "--as-of", f"never{HOSTILE}"),
        ("session", "show", f"s{HOSTILE}"),
    ]
    shown = {argv[:2] for argv in commands if "\\x1b]0;pwned" in "".join(_clean(ov(*argv), *argv)[1:])}
    spelled = {("read", note), ("read", inner), ("grep", "text"), ("relations", "viking://resources/esc/plain.md"),
               ("session", "show"), ("session", "context"), ("context", "body text"), ("eval", golden),
               ("read", f"viking://resources/esc/gone{HOSTILE}")}  # fmt: skip
    assert spelled <= shown, spelled - shown  # the text is there, spelled out


def test_json_escapes_every_control_character(hostile: Cli) -> None:
    note = _one(hostile, "glob", "esc/note*", "--uri", "viking://resources")
    read = _clean(hostile("read", note, "-o", "json"))
    assert HOSTILE in read.json()["result"] and "\\u009b" in read.out  # exact, once read as JSON
    shown = _clean(hostile("session", "show", "s1", "-o", "jsonl"))
    assert [HOSTILE in line["parts"][0]["text"] for line in shown.json_lines()] == [True]


def test_read_prints_the_text_with_its_control_characters_spelled_out(hostile: Cli) -> None:
    note = _one(hostile, "glob", "esc/note*", "--uri", "viking://resources")
    out = hostile("read", note).out
    spelled = "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\x7f\\x0d"
    assert out == f"# Title {spelled} here\n\nbody {spelled} text\n"
    assert hostile("read", note, "--raw").out.endswith(f"body {HOSTILE} text\n")  # the bytes asked for


def test_only_the_console_writes_to_stdout_and_stderr() -> None:
    # Every print of the CLI goes through openviking_cli/console.py, which shows control
    # characters: a write elsewhere would be a way round it.
    writers = []
    for path in sorted((REPO / "openviking_cli").rglob("*.py")):
        if path.name in ("console.py", "_docgen.py"):  # _docgen is run by developers on the repository
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            to_std = name.startswith(("sys.stdout.", "sys.stderr.")) and name.endswith((".write", ".writelines"))
            if name == "print" or to_std or name.startswith("traceback.print"):
                writers.append(f"{path.relative_to(REPO)}:{node.lineno}: {name}")
    assert writers == []


def test_the_servers_log_shows_control_characters_spelled_out(tmp_path: Path) -> None:
    # A request's path and the warnings of what it sent go to the terminal of whoever runs serve.
    with process_server(HASH_CONF, handbook_store(tmp_path), tmp_path) as running:
        assert httpx.get(running.url + "/api/v1/%1b]0;pwned%07%1b[2J").status_code == 404
        # a URI may hold a C1 control: the warning that it names nothing is logged
        target = "viking://resources/gone\x9b31m"
        found = httpx.post(running.url + "/api/v1/search/find", json={"query": "x", "target_uri": target})
        assert found.json()["warnings"] == [
            f"{target} does not exist, so nothing was searched there (see openviking ls viking://resources)"
        ]
        assert running.stop() == 0
    log = running.log()
    assert "/api/v1/\\x1b]0;pwned\\x07\\x1b[2J" in log and "gone\\x9b31m does not exist" in log, log
    assert not RAW.findall(log), log
