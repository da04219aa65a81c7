"""grep: the semantics OpenViking's retrieval API documents, proven against ripgrep and Python's ``re``; bad input.

A store is built once per module with the hash embedder. The differential tests compare the
(path, line) pairs of ``openviking grep`` with ``rg -n`` on the same files, and the RE2
translation with Python's ``re`` line by line (hypothesis); property tests check that every
stored line holding a random substring is found by grep of its escaped form.
"""

from __future__ import annotations

import functools
import io
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import Cli, cli_unharmed, hash_config, make_tree, with_store, write_hash_config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openviking.embedded.client import OpenViking
from openviking.errors import InvalidArgumentError, InvalidURIError, NotFoundError
from openviking.retrieve import re2translate
from openviking.retrieve.charset import set_re2
from openviking.retrieve.grep import compile_pattern, search_content
from openviking.retrieve.lines import blocks_of, lines_of

R = "viking://resources"
FX = f"{R}/fixture"

# The differential fixture: no hidden files, no .gitignore, no CRLF, no characters whose
# case-insensitive match differs between Python and Rust (İ, ı, ſ, K), so rg and the ingest
# see the same files and both engines agree on what a match is.
FIXTURE: dict[str, str] = {
    "README.md": (
        "# Project handbook\n\nThis handbook explains authentication and deployment.\n"
        "TODO: write the FAQ\n\nSee also: docs/guide.md\n"
    ),
    "auth.md": (
        "# Authentication\n\nUsers authenticate with API keys.\nAuthorization: Bearer <token>\n"
        "    indented line with trailing spaces   \n\nFIXME rotate keys every 90 days\n"
        "Error codes: 401, 403 and 429.\n"
    ),
    "src/main.py": (
        "import os\nimport sys\n\n\ndef get_user(user_id):\n    return db.get(user_id)\n\n\n"
        "def set_user(user_id, value):\n    raise ValueError('bad user')  # TODO validate\n\n\n"
        "class UserError(Exception):\n    pass\n"
    ),
    "src/util/helpers.py": "def helper():\n    x = 1 + 2\n    return x\nprint(helper())\n",
    "docs/guide.md": (
        "# Guide\n\nStep 1: install.\nStep 2: configure.\nStep 10: done.\n\n"
        "The café serves naïve crème brûlée.\nÜber straße Größe.\nΣίσυφος and σοφία.\n"
        "Москва и Петербург.\nArabic digits: ٣٤٥ and ١٢.\n"
    ),
    "docs/中文.md": "# 用户认证\n\n用户使用 API 密钥进行身份认证。\n认证失败时返回 401。\n向量检索与全文检索。\n",
    "Upper/CaseFile.md": "Mixed CASE words: Error, ERROR, error, eRRoR.\n",
    "notes/todo.txt": "TODO buy milk\nFIXME fix the sink\nXXX nothing\ntodo lowercase\n",
    "notes/empty-lines.txt": "first\n\n\nfourth\n",
    "notes/no-newline.txt": "last line without newline",
    "data/numbers.csv": "id,value\n1,100\n2,2000\n3,30000\n",
    "deep/a/b/c/d.md": "deep needle here\n",
    # lines for the patterns RE2 cannot run (back-references, counts over 1000)
    "notes/repeats.txt": "x = x\nerror E\n" + "0" * 1001 + "\n",
}

RG_PATTERNS: list[tuple[str, list[str]]] = [
    ("authentication", []),
    ("TODO", []),
    ("user_id", []),
    (r"[A-Z][a-z]+Error", []),
    (r"\d{3}", []),
    (r"[0-9]+,[0-9]+", []),
    (r"^#", []),
    (r"\)$", []),
    (r"^$", []),
    (r"\s+$", []),
    (r"^    \w", []),
    ("TODO|FIXME|XXX", []),
    (r"(get|set)_\w+", []),
    (r"def \w+\(", []),
    ("error", ["-i"]),
    ("todo", ["-i"]),
    ("straße", ["-i"]),
    ("σοφία", ["-i"]),
    ("москва", ["-i"]),
    (r"\w+é\b", []),
    (r"[éèê]", []),
    (r"\bcafé\b", []),
    (r"\d+", []),
    ("认证", []),
    ("[一-龥]+检索", []),
    (r"用户\w*", []),
    (r"Step \d+:", []),
    (r"k.y", []),
    (r"\bStep\b", []),
    (r"\Bser", []),
    (r"[^\x00-\x7f]+", []),
    ("needle", []),
]

# Patterns RE2 cannot run as they are: Python decides (on the lines RE2 selects).
PYTHON_ONLY = [
    r"(\w+) = \1",
    r"(?<=user_)id",
    r"(?<!get_)user",
    r"user(?=_id)",
    r"user(?!_id)",
    "0{1001}",
    "0{2,1500}",
    r"(?>de)f",
    r"de++f",
    r"(a)?(?(1)b|c)",
    r"(?i)(E)rror \1",
    r"\b\w+\b",
    r"(?i:é)\B",
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OpenViking, Path, Path]]:
    """(client, fixture tree on disk, hash ov.conf), the tree ingested at viking://resources/fixture."""
    base = tmp_path_factory.mktemp("grep")
    tree = make_tree(base / "fixture", FIXTURE)
    extra = make_tree(
        base / "extra",
        {
            "crlf.txt": b"alpha\r\nbeta\r\n\r\ngamma\rdelta\nlast\r",
            "order/Zeta.md": "mark\n",
            "order/alpha.md": "mark\n",
            "order/_under.md": "mark\n",
            "order/beta/x.md": "mark\n",
            "order/Gamma/y.md": "mark\n",
            "exclude/group_a/cache/a.md": "mark\n",
            "exclude/group_a/cache2/b.md": "mark\n",
            "exclude/group_b/cache/c.md": "mark\n",
            "level-limit/root_level.md/root_level.md": "level marker\n",
            "level-limit/nested/deeper/deep_level.md/deep_level.md": "level marker\n",
            "limit/a1.md": "hit one\nmiss\nhit two\n",
            "limit/a2.md": "hit three\n",
            "limit/a3.md": "hit four\n",
            "markup/[bold]x.md": "[red]alarm[/red] and [bold]bold[/bold]\n",
            "long/aaa.txt": "a" * 30000 + "b\n" + "a" * 20 + "\n",
        },
    )
    client = OpenViking(path=base / "store", config=hash_config())
    client.add_resource(tree, to=FX)
    client.add_resource(extra, to=f"{R}/extra")
    client.add_resource(make_tree(base / "deepest", {"a/b/c/d.md": "root depth needle\n"}), to=f"{R}/x")
    yield client, tree, write_hash_config(base / "ov.conf")
    client.close()


@pytest.fixture
def ov(cli: Cli, world: tuple[OpenViking, Path, Path]) -> Cli:
    """``cli`` with ``--store`` and ``--config`` of the module's store appended."""
    client, _tree, conf = world
    return with_store(cli, client.store_path, conf)


@pytest.fixture
def client(world: tuple[OpenViking, Path, Path]) -> OpenViking:
    return world[0]


def pairs(result: dict[str, Any]) -> list[tuple[str, int]]:
    return [(m["uri"], m["line"]) for m in result["matches"]]


def split_lines(text: str) -> list[str]:
    """The lines grep sees: split at \\n, a \\r before it dropped, no line after a final \\n."""
    pieces = text.split("\n")
    last = pieces.pop()
    lines = [p[:-1] if p.endswith("\r") else p for p in pieces]
    return [*lines, last] if last else lines


# ----------------------------------------------------------------------------- the result


def test_result_shape_as_in_the_brief(client: OpenViking) -> None:
    """``{matches: [{uri, line, content}], count, match_count, files_scanned}``, as upstream returns it."""
    result = client.grep(FX, "authentication", case_insensitive=True)
    assert list(result) == ["matches", "count", "match_count", "files_scanned"]
    assert result["count"] == result["match_count"] == len(result["matches"]) == 2
    assert result["matches"][0] == {
        "uri": f"{FX}/auth.md",
        "line": 1,
        "content": "# Authentication",
    }
    assert all(list(m) == ["uri", "line", "content"] for m in result["matches"])
    assert result["files_scanned"] == len(FIXTURE)


def test_line_numbers_start_at_1_and_content_has_no_terminator(client: OpenViking) -> None:
    result = client.grep(f"{R}/extra/crlf.txt", ".*")
    assert [(m["line"], m["content"]) for m in result["matches"]] == [
        (1, "alpha"),
        (2, "beta"),
        (3, ""),
        (4, "gamma\rdelta"),  # a lone \r is content; only \r\n and \n end a line
        (5, "last\r"),  # no \n after it: the \r stays
    ]
    assert [m["line"] for m in client.grep(f"{R}/extra/crlf.txt", "a$")["matches"]] == [1, 2, 4]
    assert [m["line"] for m in client.grep(f"{R}/extra/crlf.txt", "\r$")["matches"]] == [5]
    assert [m["line"] for m in client.grep(f"{FX}/notes/empty-lines.txt", "^$")["matches"]] == [2, 3]
    assert client.grep(f"{FX}/notes/no-newline.txt", "newline$")["count"] == 1


def test_a_file_target_searches_that_file(client: OpenViking) -> None:
    result = client.grep(f"{FX}/src/main.py", "user")
    assert {m["uri"] for m in result["matches"]} == {f"{FX}/src/main.py"}
    assert result["files_scanned"] == 1
    assert client.grep(f"{FX}/src/main.py", "user", level_limit=1)["count"] == result["count"]


def test_hidden_sidecars_are_never_searched(client: OpenViking) -> None:
    # The overview of fixture/notes lists its files; their names appear in no file's content.
    assert "todo.txt" in client.overview(f"{FX}/notes")
    result = client.grep(FX, r"todo\.txt|empty-lines\.txt", level_limit=0)
    assert result["count"] == 0
    everything = client.grep(R, ".", level_limit=0)
    assert not [m for m in everything["matches"] if m["uri"].rsplit("/", 1)[1].startswith(".")]


def test_hidden_files_and_directories_are_skipped(tmp_path: Path) -> None:
    from openviking.store.lance import LanceStore

    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        client.add_resource(make_tree(tmp_path / "t", {"seen.md": "secret word\n"}), to=f"{R}/t")
        store = LanceStore.open(client.store_path)
        base = {"is_dir": False, "context_type": "resource", "content": "secret word\n", "tags": []}
        store.upsert_nodes(
            [
                {**base, "uri": f"{R}/t/.hidden.md", "parent_uri": f"{R}/t", "name": ".hidden.md", "depth": 3},
                {**base, "uri": f"{R}/t/.cache/in.md", "parent_uri": f"{R}/t/.cache", "name": "in.md", "depth": 4},
            ]
        )
        assert pairs(client.grep(f"{R}/t", "secret")) == [(f"{R}/t/seen.md", 1)]
        # named explicitly, a hidden file or directory is searched
        assert pairs(client.grep(f"{R}/t/.hidden.md", "secret")) == [(f"{R}/t/.hidden.md", 1)]


def test_order_is_depth_first_directories_first_then_names_case_insensitively(client: OpenViking) -> None:
    uris = [m["uri"] for m in client.grep(f"{R}/extra/order", "mark")["matches"]]
    names = [u.split("/order/", 1)[1] for u in uris]
    assert names == ["beta/x.md", "Gamma/y.md", "_under.md", "alpha.md", "Zeta.md"]
    tree_files = [e["uri"] for e in client.tree(f"{R}/extra/order", level_limit=0) if not e["isDir"]]
    assert uris == tree_files  # the same order as `openviking tree`


def test_exclude_uri_is_segment_aware(client: OpenViking) -> None:
    base = f"{R}/extra/exclude"
    result = client.grep(base, "mark", exclude_uri=f"{base}/group_a/cache")
    assert [m["uri"] for m in result["matches"]] == [f"{base}/group_a/cache2/b.md", f"{base}/group_b/cache/c.md"]
    assert client.grep(base, "mark", exclude_uri=f"{base}/group_a/cache/")["count"] == 2  # trailing slash
    assert client.grep(base, "mark", exclude_uri=base)["count"] == 0  # the root itself
    assert client.grep(base, "mark", exclude_uri="viking://")["count"] == 0
    assert client.grep(base, "mark", exclude_uri=f"{R}/elsewhere")["count"] == 3
    both = client.grep(base, "mark", exclude_uri=[f"{base}/group_a/cache", f"{base}/group_b"])
    assert [m["uri"] for m in both["matches"]] == [f"{base}/group_a/cache2/b.md"]
    assert client.grep(base, "mark", exclude_uri=[])["count"] == 3


def test_level_limit_is_the_depth_of_the_file_below_the_uri(client: OpenViking) -> None:
    base = f"{R}/extra/level-limit"
    found = [m["uri"] for m in client.grep(base, "level marker", level_limit=2)["matches"]]
    assert found == [f"{base}/root_level.md/root_level.md"]
    assert client.grep(base, "level marker", level_limit=3)["count"] == 1
    assert client.grep(base, "level marker", level_limit=4)["count"] == 2
    assert client.grep(base, "level marker")["count"] == 2  # default 5
    assert client.grep(base, "level marker", level_limit=0)["count"] == 2  # 0: no limit
    assert client.grep(base, "level marker", level_limit=None)["count"] == 2
    assert client.grep(base, "level marker", level_limit=1)["count"] == 0


def test_node_limit_keeps_the_first_matches_and_counts_files_scanned(client: OpenViking) -> None:
    base = f"{R}/extra/limit"
    result = client.grep(base, "hit", node_limit=3)
    assert [(m["uri"].rsplit("/", 1)[1], m["line"]) for m in result["matches"]] == [
        ("a1.md", 1),
        ("a1.md", 3),
        ("a2.md", 1),
    ]
    assert result["count"] == result["match_count"] == 3
    assert result["files_scanned"] == 2
    assert client.grep(base, "hit", node_limit=0)["count"] == 4  # 0: no limit
    assert client.grep(base, "hit", node_limit=10)["files_scanned"] == 3
    assert client.grep(base, "hit", node_limit=1)["files_scanned"] == 1


def test_grep_on_the_root_is_allowed_and_bounded_by_the_level_limit(client: OpenViking) -> None:
    # viking://resources/x/a/b/c/d.md is 6 levels below viking://
    assert client.grep("viking://", "root depth needle")["count"] == 0
    assert client.grep("viking://", "root depth needle", level_limit=6)["count"] == 1
    assert client.grep("viking://", "root depth needle", level_limit=0)["count"] == 1
    assert client.grep(R, "root depth needle")["count"] == 1


def test_case_insensitive_fixed_strings_count_and_files_with_matches(client: OpenViking) -> None:
    target = f"{FX}/Upper/CaseFile.md"
    assert client.grep(target, "error")["count"] == 1
    assert client.grep(target, "ERROR", case_insensitive=True)["count"] == 1
    assert client.grep(FX, "1 + 2")["count"] == 0  # a regex: "1 +" is one or more "1 "
    assert client.grep(FX, "1 + 2", fixed_strings=True)["count"] == 1
    assert client.grep(FX, "<token>", fixed_strings=True)["count"] == 1
    counted = client.grep(FX, "TODO|FIXME", count=True)
    assert counted["counts"] == [  # depth first, directories first: notes/ and src/ before auth.md
        {"uri": f"{FX}/notes/todo.txt", "count": 2},
        {"uri": f"{FX}/src/main.py", "count": 1},
        {"uri": f"{FX}/auth.md", "count": 1},
        {"uri": f"{FX}/README.md", "count": 1},
    ]
    # count is the length of the list, as glob's is (`grep -l | wc -l`); match_count the lines
    assert (counted["count"], counted["match_count"]) == (4, 5)
    files = client.grep(FX, "TODO|FIXME", files_with_matches=True)
    assert files["files"] == [c["uri"] for c in counted["counts"]]
    assert (files["count"], files["match_count"], files["files_scanned"]) == (4, 5, len(FIXTURE))


def test_spans_mark_each_match(client: OpenViking) -> None:
    result = client.grep(f"{FX}/Upper/CaseFile.md", "error", case_insensitive=True, spans=True)
    match = result["matches"][0]
    assert [match["content"][a:b] for a, b in match["spans"]] == ["Error", "ERROR", "error", "eRRoR"]
    unicode = client.grep(f"{FX}/docs/guide.md", r"\bcafé\b", spans=True)["matches"][0]
    assert [unicode["content"][a:b] for a, b in unicode["spans"]] == ["café"]
    backref = client.grep(f"{FX}/data/numbers.csv", r"(0)\1", spans=True)["matches"]
    assert [[m["content"][a:b] for a, b in m["spans"]] for m in backref] == [["00"], ["00"], ["00", "00"]]


def test_results_follow_writes_to_the_store(tmp_path: Path) -> None:
    path = tmp_path / "store"
    first = OpenViking(path=path, config=hash_config())
    second = OpenViking(path=path, config=hash_config())
    first.add_resource(make_tree(tmp_path / "a", {"one.md": "needle one\n"}), to=f"{R}/a")
    for _ in range(3):  # warm: the second search and later ones use the cached snapshot
        assert first.grep(R, "needle")["count"] == 1
    second.add_resource(make_tree(tmp_path / "b", {"two.md": "needle two\n"}), to=f"{R}/b")
    assert first.grep(R, "needle")["count"] == 2
    assert first.glob("**/*.md", R)["count"] == 2
    first.close()
    second.close()


# ----------------------------------------------------------------------------- the command line


def test_cli_both_forms_and_every_format(ov: Cli) -> None:
    brief = ov("grep", FX, "TODO", "--json")
    upstream = ov("grep", "TODO", "-u", FX, "--json")
    assert brief.code == upstream.code == 0, brief.err + upstream.err
    assert brief.json()["result"] == upstream.json()["result"]
    envelope = brief.json()
    assert list(envelope) == ["status", "result", "time"] and envelope["status"] == "ok"
    table = ov("grep", FX, "TODO")
    assert table.code == 0 and table.err == ""
    expected = [f"{m['uri']}:{m['line']}:{m['content']}" for m in envelope["result"]["matches"]]
    assert table.out.splitlines() == expected
    jsonl = ov("grep", FX, "TODO", "-o", "jsonl")
    assert jsonl.json_lines() == envelope["result"]["matches"]


def test_cli_flags(ov: Cli) -> None:
    assert (
        ov("grep", FX, "error", "-i", "--json").json()["result"]["count"]
        == ov("grep", FX, "error", "--ignore-case", "--json").json()["result"]["count"]
    )
    assert ov("grep", FX, "1 + 2", "-F").out.strip() == f"{FX}/src/util/helpers.py:2:    x = 1 + 2"
    counted = ov("grep", FX, "TODO|FIXME", "-c")
    assert counted.out.splitlines()[0] == f"{FX}/notes/todo.txt:2"
    assert ov("grep", FX, "TODO|FIXME", "-c", "-o", "jsonl").json_lines()[0] == {
        "uri": f"{FX}/notes/todo.txt",
        "count": 2,
    }
    listed = ov("grep", FX, "TODO|FIXME", "-l")
    assert listed.out.splitlines()[:2] == [f"{FX}/notes/todo.txt", f"{FX}/src/main.py"]
    assert ov("grep", f"{R}/extra/limit", "hit", "-n", "3", "--json").json()["result"]["files_scanned"] == 2
    assert ov("grep", f"{R}/extra/level-limit", "level", "-L", "2", "--json").json()["result"]["count"] == 1
    excluded = ov("grep", f"{R}/extra/exclude", "mark", "-x", f"{R}/extra/exclude/group_a", "--json")
    assert excluded.json()["result"]["count"] == 1
    every_x = ov(
        "grep", f"{R}/extra/exclude", "mark", "-x", f"{R}/extra/exclude/group_a", "-x", f"{R}/extra/exclude/group_b"
    )
    assert (every_x.code, every_x.out) == (0, "")  # each -x counts, not only the last


def test_cli_no_match_exits_0_with_a_note_on_stderr(ov: Cli) -> None:
    result = ov("grep", FX, "no such text anywhere")
    assert (result.code, result.out) == (0, "")
    assert "No matches" in result.err
    assert ov("grep", FX, "no such text anywhere", "--json").json()["result"]["matches"] == []


def test_cli_prints_data_as_it_is(ov: Cli) -> None:
    result = ov("grep", f"{R}/extra/markup", "alarm")
    assert result.out == f"{R}/extra/markup/[bold]x.md:1:[red]alarm[/red] and [bold]bold[/bold]\n"


def test_terminal_output_highlights_matches_and_never_reads_markup(monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    monkeypatch.delenv("NO_COLOR")
    from openviking_cli.commands.grep import _highlighted

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, color_system="standard", width=80)
    match = {"uri": f"{R}/[bold]x.md", "line": 3, "content": "[red]alarm[/red] here", "spans": [[5, 10]]}
    _highlighted(console, [match])
    text = buffer.getvalue()
    assert "\x1b[1;31malarm" in text  # the match, bold red
    assert text.count("\x1b[35m") == 1 and "\x1b[32m3" in text  # the URI magenta, the line green, no more
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    assert plain == f"{R}/[bold]x.md:3:[red]alarm[/red] here\n"


# ----------------------------------------------------------------------------- against ripgrep

RG = shutil.which("rg")


def rg_pairs(tree: Path, pattern: str, flags: list[str]) -> set[tuple[str, int]]:
    args = [RG, "--no-config", "-n", "--with-filename", "--null", "--no-heading", "--no-ignore", "--hidden"]
    proc = subprocess.run([*args, *flags, "-e", pattern, "."], cwd=tree, capture_output=True, timeout=60)
    assert proc.returncode in (0, 1), proc.stderr.decode()
    found = set()
    for line in proc.stdout.decode("utf-8").splitlines():
        path, rest = line.split("\0", 1)
        found.add((f"{FX}/{path.removeprefix('./')}", int(rest.split(":", 1)[0])))
    return found


@pytest.mark.skipif(RG is None, reason="ripgrep (rg) is not installed; CI installs it from Debian's packages")
@pytest.mark.parametrize(("pattern", "flags"), RG_PATTERNS, ids=[p + "".join(f) for p, f in RG_PATTERNS])
def test_same_lines_as_ripgrep(ov: Cli, world: tuple[OpenViking, Path, Path], pattern: str, flags: list[str]) -> None:
    _client, tree, _conf = world
    result = ov("grep", FX, pattern, *flags, "-L", "0", "--json")
    assert result.code == 0, result.err
    ours = {(m["uri"], m["line"]) for m in result.json()["result"]["matches"]}
    assert ours == rg_pairs(tree, pattern, flags)
    assert ours, pattern  # every pattern of the list matches something


# ----------------------------------------------------------------------------- against Python's re

# Python's case rules differ from simple case folding on ſ, K (Kelvin), İ and ı: all included;
# Ā and ā are neighbours (one code point range).
ALPHABET = (
    "aAbBkKsS1\u0663 _-.\u00e9\u00c9\u00df\u1e9e\u017f\u212a\u0130iI\u0131"
    "\u03c3\u03c2\u03a3\u00b5\u03bc\u4e2d\u0100\u0101\t"
)
ATOMS = [
    "a",
    "\u0100b",  # Ā: its other case, ā, is its neighbour
    "ab",
    "b",
    "k",
    "s",
    "i",
    "é",
    "ß",
    "σ",
    "中",
    ".",
    r"\w",
    r"\W",
    r"\d",
    r"\D",
    r"\s",
    r"\S",
    "[a-c]",
    "[^a]",
    r"[\w-]",
    r"[^\W\d]",
    "[A-Z]",
    "[Σσ]",
    r"\b",
    r"\B",
    "^",
    "$",
    r"\.",
    "[ß-ſ]",
]


@st.composite
def regexes(draw: st.DrawFn, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 9 if depth < 2 else 5))
        if kind <= 5:
            atom = draw(st.sampled_from(ATOMS))
        elif kind == 6:
            atom = "(" + draw(regexes(depth + 1)) + ")"
        elif kind == 7:
            atom = "(?:" + draw(regexes(depth + 1)) + "|" + draw(regexes(depth + 1)) + ")"
        elif kind == 8:
            atom = "(" + draw(regexes(depth + 1)) + r")\1"  # a back-reference: Python decides
        else:
            atom = draw(st.sampled_from(["(?=a)", "(?!b)", "(?<=a)", "(?>a+)", "(?i:k)"])) + draw(regexes(depth + 1))
        if atom not in ("^", "$", r"\b", r"\B") and not atom.startswith("(?="):
            atom += draw(st.sampled_from(["", "", "*", "+", "?", "{1,2}", "*?", "{2}"]))
        parts.append(atom)
    return "".join(parts)


def reference(lines_by_file: list[list[str]], pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    return [(f, n) for f, lines in enumerate(lines_by_file) for n, line in enumerate(lines, 1) if pattern.search(line)]


def engine(texts: list[str], pattern: str, ignore_case: bool) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(cold path, warm path) matches of the grep engine over in-memory file contents."""
    import numpy as np
    import pyarrow as pa

    compiled = compile_pattern(pattern, case_insensitive=ignore_case)
    content = pa.array(texts, pa.large_string())
    files = np.arange(len(texts))
    cold = search_content(content, files, compiled)
    table = lines_of(content)
    warm = search_content(content, files, compiled, lines=table, blocks=blocks_of(content, table))
    return list(zip(cold.file, cold.number, strict=True)), list(zip(warm.file, warm.number, strict=True))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pattern=regexes(),
    files=st.lists(st.lists(st.text(ALPHABET, max_size=12), min_size=1, max_size=6), min_size=1, max_size=4),
    ignore_case=st.booleans(),
)
def test_the_engine_agrees_with_python_re(pattern: str, files: list[list[str]], ignore_case: bool) -> None:
    try:
        python = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error:
        return
    texts = ["\n".join(lines) + ("\n" if i % 2 else "") for i, lines in enumerate(files)]
    expected = reference([split_lines(t) for t in texts], python)
    cold, warm = engine(texts, pattern, ignore_case)
    assert cold == expected
    assert warm == expected


@pytest.mark.parametrize(
    ("pattern", "ignore_case"),
    [
        ("k", True),
        ("s", True),
        ("i", True),
        ("σ", True),
        ("ß", True),
        ("µ", True),
        ("ǅ", True),
        ("θ", True),
        ("[a-zß]", True),
        ("[^k]", True),
        (r"\w", True),
        (r"[\W]", True),
        (r"\w", False),
        (r"\d", False),
        (r"\s", False),
        (r"[^\W\d_]", False),
        (r"(?a)\w", False),
        (r"(?a)\s", True),
    ],
)
def test_character_sets_agree_with_python_on_every_code_point(pattern: str, ignore_case: bool) -> None:
    """RE2 reads our spelled-out sets as Python's re reads the pattern, for all of Unicode."""
    import numpy as np
    import pyarrow.compute as pc

    points, everything, column = every_character()
    compiled = compile_pattern(pattern, case_insensitive=ignore_case)
    assert compiled.exact is not None
    ours = pc.match_substring_regex(column, compiled.exact)
    ours_set = set(points[np.asarray(ours.to_numpy(zero_copy_only=False), dtype=bool)].tolist())
    flags = re.IGNORECASE if ignore_case else 0
    theirs = {points[m.start()] for m in re.finditer(pattern, everything, flags)}
    assert ours_set == theirs


@functools.cache
def every_character() -> tuple[Any, str, Any]:
    """(code points, the same as one string, as an Arrow column of one-character lines): no surrogates, no \\n."""
    import array

    import numpy as np
    import pyarrow as pa

    points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and c != 10]
    everything = array.array("I", points).tobytes().decode("utf-32-le")
    return np.asarray(points), everything, pa.array(list(everything), pa.large_string())


def test_case_tables_cover_every_cased_character() -> None:
    import _sre

    assert not [c for c in range(0x20000, 0x110000) if _sre.unicode_iscased(c)]


def test_empty_and_full_sets() -> None:
    assert set_re2([]) == r"[^\x{0}-\x{10FFFF}]"
    assert set_re2([(0, 0x10FFFF)]) == "(?s:.)"


# ----------------------------------------------------------------------------- Python's re internals


def test_the_translator_knows_this_pythons_re_internals() -> None:
    """Fails when this Python's ``re`` internals are not those the RE2 translator reads: grep
    would still be right, through Python's ``re`` alone, but slow on large stores."""
    problem = re2translate.check_internals()
    assert problem is None, f"Python {sys.version.split()[0]}: grep's RE2 translation is off: {problem}"
    assert re2translate.internals_problem() is None


def test_the_guard_says_what_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(re2translate, "CONSTANTS", (*re2translate.CONSTANTS, "NO_SUCH_OPCODE"))
        assert re2translate.check_internals() == "re's internals lack NO_SUCH_OPCODE"
    with monkeypatch.context() as patch:
        patch.setitem(re2translate.PROBES, "(?>p)", (("LITERAL", 112),))
        assert re2translate.check_internals() == (
            "re._parser.parse('(?>p)') gives (('ATOMIC_GROUP', (('LITERAL', 112),)),), expected (('LITERAL', 112),)"
        )


def test_only_the_translator_imports_re_internals() -> None:
    import ast

    private = {"_sre", "sre_compile", "sre_constants", "sre_parse"}
    private |= {"re._casefix", "re._compiler", "re._constants", "re._parser"}
    root = Path(re2translate.__file__).parents[1]
    found = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            if private & set(names):
                found.add(path.relative_to(root.parent).as_posix())
    assert found == {"openviking/retrieve/re2translate.py"}


GUARD_CASES = [(p, "-i" in f) for p, f in RG_PATTERNS] + [(p, False) for p in PYTHON_ONLY]


def test_with_the_guard_off_grep_finds_the_same_through_python_re(
    client: OpenViking, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run(pattern: str, ignore_case: bool) -> list[dict[str, Any]]:
        return [client.grep(FX, pattern, case_insensitive=ignore_case, level_limit=0, spans=s) for s in (False, True)]

    translated = {case: run(*case) for case in GUARD_CASES}
    texts = [text for _rel, text in sorted(FIXTURE.items())]
    in_memory = {case: engine(texts, *case) for case in GUARD_CASES}
    assert compile_pattern("TODO|FIXME").literals  # translated while the guard lets it
    monkeypatch.setattr(re2translate, "internals_problem", lambda: "turned off by a test")
    for case in GUARD_CASES:
        compiled = compile_pattern(case[0], case_insensitive=case[1])
        assert compiled == re2translate.LinePattern(compiled.python, None, None, None, None, compiled.empty_line)
        assert run(*case) == translated[case], case
        assert engine(texts, *case) == in_memory[case], case


# ----------------------------------------------------------------------------- property tests

SUBSTRING_FILES = {
    "a.md": "alpha (beta) [gamma] {delta}\n$dollar ^caret *star* +plus+ ?query?\nback\\slash | pipe\n",
    "b.md": "中文 检索 认证\nnaïve café CAFÉ\n\ttab\tseparated\t\nemoji 😀 here\n",
    "sub/c.txt": "line one\nline two\n\nline four (again)\n. dots ... here\n",
}


@pytest.fixture(scope="module")
def substring_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OpenViking, dict[str, list[str]]]]:
    base = tmp_path_factory.mktemp("substrings")
    client = OpenViking(path=base / "store", config=hash_config())
    client.add_resource(make_tree(base / "s", SUBSTRING_FILES), to=f"{R}/s")
    lines = {f"{R}/s/{rel}": text.split("\n")[:-1] for rel, text in SUBSTRING_FILES.items()}
    yield client, lines
    client.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_line_holding_a_substring_is_found(
    substring_store: tuple[OpenViking, dict[str, list[str]]], data: st.DataObject
) -> None:
    client, lines = substring_store
    uri = data.draw(st.sampled_from(sorted(lines)))
    line = data.draw(st.sampled_from([x for x in lines[uri] if x]))
    start = data.draw(st.integers(0, len(line) - 1))
    end = data.draw(st.integers(start + 1, len(line)))
    needle = line[start:end]
    expected = {(u, n) for u, ls in lines.items() for n, text in enumerate(ls, 1) if needle in text}
    assert set(pairs(client.grep(f"{R}/s", re.escape(needle)))) == expected
    assert set(pairs(client.grep(f"{R}/s", needle, fixed_strings=True))) == expected


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(st.characters(blacklist_categories=["Cs"]), max_size=40), min_size=1, max_size=3))
def test_random_content_round_trips_through_the_store(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str]
) -> None:
    base = tmp_path_factory.mktemp("random")
    files = {f"f{i}.txt": text.replace("\x00", " ") + "\nmarker\n" for i, text in enumerate(texts)}
    with OpenViking(path=base / "store", config=hash_config()) as client:
        client.add_resource(make_tree(base / "r", files), to=f"{R}/r")
        for rel, text in files.items():
            uri = f"{R}/r/{rel}"
            for number, line in enumerate(split_lines(text), 1):
                if not line:
                    continue
                found = client.grep(uri, line, fixed_strings=True)
                assert (uri, number) in set(pairs(found)), (line, found)


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("args", "code", "exit_code", "message"),
    [
        ((FX, "("), "INVALID_ARGUMENT", 2, "Invalid regex pattern: missing ), unterminated subpattern at position 0"),
        ((FX, "a{2,1}"), "INVALID_ARGUMENT", 2, "Invalid regex pattern"),
        ((FX, "x", "-n", "-1"), "INVALID_ARGUMENT", 2, "node_limit must be an integer >= 0 (got -1)"),
        ((FX, "x", "-L", "-2"), "INVALID_ARGUMENT", 2, "level_limit must be an integer >= 0 (got -2)"),
        ((FX, "x", "-c", "-l"), "INVALID_ARGUMENT", 2, "Use just one of --count or --files-with-matches"),
        ((FX, "x", "y"), "INVALID_ARGUMENT", 2, "grep takes [URI] PATTERN, got 3 arguments"),
        ((FX, "x", "-u", FX), "INVALID_ARGUMENT", 2, "Give the URI once"),
        (("resources/fixture", "x"), "INVALID_URI", 2, "URI must start with 'viking://'"),
        ((FX, "x", "-x", "nope"), "INVALID_URI", 2, "URI must start with 'viking://'"),
        ((f"{FX}/../x", "x"), "PERMISSION_DENIED", 2, "Access denied"),
        ((f"{R}/missing", "x"), "NOT_FOUND", 1, f"File not found: {R}/missing"),
        ((f"{FX}/README.md/x", "x"), "NOT_FOUND", 1, "File not found"),
    ],
)
def test_bad_input(
    ov: Cli,
    world: tuple[OpenViking, Path, Path],
    args: tuple[str, ...],
    code: str,
    exit_code: int,
    message: str,
) -> None:
    _error, table = cli_unharmed(ov, Path(world[0].store_path), ["grep", *args], code, exit_code, message)
    assert "Hint: " in table.err


def test_bad_input_in_the_sdk(client: OpenViking) -> None:
    with pytest.raises(InvalidArgumentError, match="Invalid regex pattern"):
        client.grep(FX, "(")
    with pytest.raises(InvalidArgumentError, match="node_limit"):
        client.grep(FX, "x", node_limit=-1)
    with pytest.raises(InvalidArgumentError, match="level_limit"):
        client.grep(FX, "x", level_limit=-1)
    with pytest.raises(InvalidArgumentError, match="node_limit"):
        client.grep(FX, "x", node_limit=True)
    with pytest.raises(InvalidArgumentError, match="pattern must be a string"):
        client.grep(FX, None)  # type: ignore[arg-type]
    with pytest.raises(InvalidURIError):
        client.grep("resources", "x")
    with pytest.raises(NotFoundError, match="File not found"):
        client.grep(f"{R}/missing", "x")


@pytest.mark.parametrize("pattern", PYTHON_ONLY)
def test_patterns_re2_cannot_run_give_pythons_answer(client: OpenViking, pattern: str) -> None:
    python = re.compile(pattern)
    expected = {
        (f"{FX}/{rel}", n)
        for rel, text in FIXTURE.items()
        for n, line in enumerate(split_lines(text), 1)
        if python.search(line)
    }
    assert expected, pattern
    assert set(pairs(client.grep(FX, pattern, level_limit=0))) == expected


def test_a_catastrophic_pattern_finishes_in_bounded_time(client: OpenViking) -> None:
    target = f"{R}/extra/long/aaa.txt"
    started = time.perf_counter()
    result = client.grep(target, "(a+)+$")
    assert time.perf_counter() - started < 5
    assert [m["line"] for m in result["matches"]] == [2]  # line 1 ends in "b"
    started = time.perf_counter()
    assert client.grep(target, r"^(a|aa)+$", spans=True)["count"] == 1
    assert client.grep(target, r"(a*)*b")["count"] == 1
    assert time.perf_counter() - started < 5
