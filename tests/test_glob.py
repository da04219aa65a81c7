"""glob: globset's rules (as upstream's ragfs uses them), proven against Python's glob.glob; bad input."""

from __future__ import annotations

import glob as pyglob
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Cli, cli_unharmed, hash_config, make_tree, with_store, write_hash_config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openviking.embedded.client import OpenViking
from openviking.errors import FailedPreconditionError, InvalidArgumentError, NotFoundError
from openviking.retrieve.glob import compile_glob, glob_match

R = "viking://resources"
T = f"{R}/tree"

TREE: dict[str, str] = {
    "README.md": "readme\n",
    "top.py": "print(1)\n",
    "a-b.md": "x\n",
    "a.b": "x\n",
    "a/b": "x\n",
    "a/x.md": "x\n",
    "a/b2/y.md": "x\n",
    "a/b2/deep/z.md": "x\n",
    "src/main.py": "x\n",
    "src/util/helpers.py": "x\n",
    "src/util/test_helpers.py": "x\n",
    "docs/guide.md": "x\n",
    "docs/API.md": "x\n",
    "docs/中文.md": "x\n",
    "docs/café.md": "x\n",
    "Upper/File.MD": "x\n",
    "foo/bar.rs": "x\n",
    "sub/resource_a": "x\n",
    "resource_b": "x\n",
}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OpenViking, Path, Path]]:
    """(client, the tree on disk, hash ov.conf), the tree ingested at viking://resources/tree."""
    base = tmp_path_factory.mktemp("glob")
    tree = make_tree(base / "tree", TREE)
    client = OpenViking(path=base / "store", config=hash_config())
    client.add_resource(tree, to=T)
    yield client, tree, write_hash_config(base / "ov.conf")
    client.close()


@pytest.fixture
def client(world: tuple[OpenViking, Path, Path]) -> OpenViking:
    return world[0]


@pytest.fixture
def ov(cli: Cli, world: tuple[OpenViking, Path, Path]) -> Cli:
    """``cli`` with ``--store`` and ``--config`` of the module's store appended."""
    client, _tree, conf = world
    return with_store(cli, client.store_path, conf)


def rel(matches: list[str], base: str = T) -> list[str]:
    return [m[len(base) + 1 :] for m in matches]


# ----------------------------------------------------------------------------- the pattern language

TRUTH_TABLE = [
    # upstream's crates/ragfs/src/core/glob.rs and globset's rules
    ("foo/bar.rs", "*.rs", False),
    ("a/b/c.md", "a/**/*.md", True),
    ("foo/bar", "foo/**", True),
    ("foo/bar/baz", "foo/**", True),
    ("foo", "foo/**", False),
    ("foo", "**/foo", True),
    ("a.md", "**/*.md", True),
    ("x/a.md", "**/*.md", True),
    ("a/c.md", "*/c.md", True),
    ("a/b/c.md", "*/c.md", False),
    ("sub/resource_a", "resource_*", False),
    ("a/b.md", "a/./b.md", True),
    ("./a/b.md", "a/b.md", True),
    ("a/b.md", "./b.md", False),
    ("a", "/", False),
    ("a", "///", False),
    # globset's own tests (literal_separator on)
    ("some/needle.txt", "some/**/needle.txt", True),
    ("some/one/two/needle.txt", "some/**/needle.txt", True),
    ("some/other/notthis.txt", "some/**/needle.txt", False),
    ("abcde", "**", True),
    (".asdf", "**", True),
    ("one/two/test", "**/test", True),
    ("foofoo", "**/foo", False),
    ("foofoo/bar", "**/foo/bar", False),
    ("abc/.abc", "**/.*", True),
    ("abc/ab.c", "**/.*", False),
    ("test/one/two", "test/**", True),
    ("some/one/needle.txt", "some/*/needle.txt", True),
    ("some/needle.txt", "some/*/needle.txt", False),
    ("some/one/two/needle.txt", "some/*/needle.txt", False),
    ("mozilla-sha1/sha1.c", "*.c", False),
    ("a0b", "a[0-9]b", True),
    ("a_b", "a[!0-9]b", True),
    ("a0b", "a[!0-9]b", False),
    ("a_b", "a[^0-9]b", True),
    ("-", "[!-]", False),
    ("-", "[-]", True),
    ("]", "[]]", True),
    ("b", "[-a-c]", True),
    ("_[_]_?_*_!_", "_[[]_[]]_[?]_[*]_!_", True),
    ("a,b", "a,b", True),
    ("a", "{a,b}", True),
    ("b", "{a,b}", True),
    ("c", "{a,b}", False),
    ("bc", "{a,b{c,d}}", True),
    ("bd", "{a,b{c,d}}", True),
    ("abc/src/bar", "{**/src/**,foo}", True),
    ("foo", "{**/src/**,foo}", True),
    ("}", "{[}],foo}", True),
    ("test.bar", "{*.foo,*.bar,*.wat}", True),
    ("foo.txt", "foo{,.txt}", True),
    ("foo", "foo{,.txt}", False),
    ("a_b", "a*b", True),
    ("a/b", "a*b", False),
    ("a/b", "a?b", False),
    ("a/b", "a[/]b", False),  # a class never matches "/" (globset's would)
    ("a/b", "a[!x]b", False),
    ("é", "?", True),  # one character, not one byte
    ("é", "[é]", True),
    ("*", "\\*", True),
    ("a", "\\*", False),
    ("abc", "a**c", True),
    ("a/bc", "a**c", False),
    ("A.md", "*.md", True),
    ("A.MD", "*.md", False),  # case-sensitive
    (".hidden", "*", True),  # * matches a leading dot
]


@pytest.mark.parametrize(("path", "pattern", "expected"), TRUTH_TABLE, ids=[f"{p}|{q}" for p, q, _ in TRUTH_TABLE])
def test_truth_table(path: str, pattern: str, expected: bool) -> None:
    assert glob_match(pattern, path) is expected


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("", "Glob pattern must not be empty"),
        (".", "names no path"),
        ("./", "names no path"),
        ("././", "names no path"),
        ("[", "a '[' without its ']'"),
        ("foo[bar", "a '[' without its ']'"),
        ("[]", "a '[' without its ']'"),
        ("[!]", "a '[' without its ']'"),
        ("[z-a]", "the range z-a is reversed"),
        ("{a,b", "a '{' without its '}'"),
        ("{a,{b,c}", "a '{' without its '}'"),
        ("a,b}", "a '}' without its '{'"),
        ("x\\", "a '\\' at the end escapes nothing"),
    ],
)
def test_invalid_patterns(pattern: str, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=None) as caught:
        compile_glob(pattern)
    assert message in caught.value.message
    assert caught.value.code == "INVALID_ARGUMENT"


def test_separator_only_patterns_are_valid_and_match_nothing(client: OpenViking) -> None:
    assert client.glob("/", T) == {"matches": [], "count": 0}
    assert client.glob("///", T) == {"matches": [], "count": 0}
    assert compile_glob("a/./b").normalized == "a/b"


# ----------------------------------------------------------------------------- against the store


def test_result_shape_and_brief_examples(client: OpenViking) -> None:
    """``{matches, count}``, and the patterns of OpenViking's retrieval API examples (``**/*.md``, ``**/*.py``)."""
    result = client.glob("**/*.md", T)
    assert list(result) == ["matches", "count"]
    assert result["count"] == len(result["matches"])
    assert rel(result["matches"]) == [
        "README.md",
        "a/b2/deep/z.md",
        "a/b2/y.md",
        "a/x.md",
        "a-b.md",
        "docs/API.md",
        "docs/café.md",
        "docs/guide.md",
        "docs/中文.md",
    ]
    assert rel(client.glob("**/*.py", T)["matches"]) == [
        "src/main.py",
        "src/util/helpers.py",
        "src/util/test_helpers.py",
        "top.py",
    ]


def test_sorted_by_path_segments(client: OpenViking) -> None:
    # by segments "a/..." comes before "a-b.md" and "a.b"; as plain strings it would not ("/" > "-" > ".")
    assert rel(client.glob("a*", T)["matches"]) == ["a", "a-b.md", "a.b"]
    everything = rel(client.glob("**", T)["matches"])
    assert everything.index("a/x.md") < everything.index("a-b.md") < everything.index("a.b")
    assert everything == sorted(everything, key=lambda path: path.split("/"))
    assert rel(client.glob("{a,a-b.md,a.b}{,/**}", T)["matches"]) == [  # "{," drops the empty alternative
        "a/b",
        "a/b2",
        "a/b2/deep",
        "a/b2/deep/z.md",
        "a/b2/y.md",
        "a/x.md",
    ]


def test_directories_match_and_the_uri_itself_does_not(client: OpenViking) -> None:
    assert rel(client.glob("*", T)["matches"]) == [
        "README.md",
        "Upper",
        "a",
        "a-b.md",
        "a.b",
        "docs",
        "foo",
        "resource_b",
        "src",
        "sub",
        "top.py",
    ]
    assert T not in client.glob("**", T)["matches"]
    assert rel(client.glob("**/util", T)["matches"]) == ["src/util"]


def test_the_default_uri_is_the_root(client: OpenViking) -> None:
    assert client.glob("*.md")["count"] == 0  # paths below viking:// start with resources/...
    assert client.glob("resources/tree/*.md")["matches"] == [f"{T}/README.md", f"{T}/a-b.md"]
    # the layout's folders match whether stored or not, as ls lists them
    assert client.glob("*") == {"matches": ["viking://agent", R, "viking://user"], "count": 3}
    assert client.glob("*")["matches"] == client.ls("viking://", simple=True)
    assert client.glob("user/*/*")["matches"] == client.ls("viking://user/default", simple=True)
    assert client.glob("**/skills")["matches"] == ["viking://agent/skills", "viking://user/default/skills"]
    assert client.glob("*", uri="viking://user/someone")["matches"] == []  # only the configured user's


def test_hidden_files_are_left_out_hidden_directories_are_not(tmp_path: Path) -> None:
    from openviking.store.lance import LanceStore

    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        client.add_resource(make_tree(tmp_path / "h", {"seen.md": "x\n"}), to=f"{R}/h")
        node = {"context_type": "resource", "tags": [], "content": "x\n"}
        LanceStore.open(client.store_path).upsert_nodes(
            [
                {**node, "uri": f"{R}/h/.hidden.md", "name": ".hidden.md", "is_dir": False, "depth": 3},
                {**node, "uri": f"{R}/h/.cache", "name": ".cache", "is_dir": True, "depth": 3, "content": None},
                {**node, "uri": f"{R}/h/.cache/in.md", "name": "in.md", "is_dir": False, "depth": 4},
            ]
        )
        assert rel(client.glob("**", f"{R}/h")["matches"], f"{R}/h") == [".cache", ".cache/in.md", "seen.md"]


def test_node_limit(client: OpenViking) -> None:
    everything = client.glob("**", T)["matches"]
    assert client.glob("**", T, node_limit=3) == {"matches": everything[:3], "count": 3}
    assert client.glob("**", T, node_limit=0)["matches"] == everything
    assert client.glob("**", T, node_limit=None)["matches"] == everything
    with pytest.raises(InvalidArgumentError, match="node_limit must be an integer >= 0"):
        client.glob("**", T, node_limit=-1)


def test_missing_uri_file_uri_and_sessions(client: OpenViking) -> None:
    with pytest.raises(NotFoundError, match=f"Directory not found: {R}/nope"):
        client.glob("*", f"{R}/nope")
    with pytest.raises(FailedPreconditionError, match="Not a directory"):
        client.glob("*", f"{T}/README.md")
    assert client.glob("*", "viking://session") == {"matches": [], "count": 0}


def test_every_uri_glob_returns_is_stored(client: OpenViking) -> None:
    stored = set(client.ls(T, recursive=True, simple=True))
    assert set(client.glob("**", T)["matches"]) == stored
    for uri in client.glob("**", "viking://")["matches"]:
        assert client.stat(uri)["uri"] == uri


def test_results_follow_writes(tmp_path: Path) -> None:
    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        client.add_resource(make_tree(tmp_path / "a", {"one.md": "x\n"}), to=f"{R}/a")
        assert client.glob("**/*.md", R)["count"] == 1
        assert client.glob("**/*.md", R)["count"] == 1
        client.add_resource(make_tree(tmp_path / "b", {"two.md": "x\n"}), to=f"{R}/b")
        assert client.glob("**/*.md", R)["count"] == 2


# ----------------------------------------------------------------------------- against Python's glob

PY_PATTERNS = [
    "**",
    "*",
    "*/*",
    "*/*/*",
    "**/*.md",
    "**/*.py",
    "a/**",
    "a/**/*.md",
    "src/**/*.py",
    "src/*.py",
    "**/util/*",
    "**/b2",
    "**/**",
    "?/*.md",
    "[ab]/**/*",
    "[!a]*",
    "*.md",
    "docs/*",
    "**/[A-Z]*",
    "**/*_*",
    "*/[!x]*",
    "a?b*",
    "**/*.[mM][dD]",
    "docs/[c-g]*",
    "**/中文.md",
    "**/caf?.md",
]


def python_glob(tree: Path, pattern: str) -> set[str]:
    """Python's answer, without its quirks: trailing-slash duplicates, and the directory "a/" that
    "a/**" adds for the empty match (globset's "a/**" matches only what is below "a")."""
    found = pyglob.glob(pattern, root_dir=tree, recursive=True)
    plain = {f for f in found if not f.endswith("/")}
    return plain | {f.rstrip("/") for f in found if f.endswith("/") and f.rstrip("/") in plain}


@pytest.mark.parametrize("pattern", PY_PATTERNS)
def test_same_paths_as_python_glob(client: OpenViking, world: tuple[OpenViking, Path, Path], pattern: str) -> None:
    _client, tree, _conf = world
    ours = set(rel(client.glob(pattern, T)["matches"]))
    assert ours == python_glob(tree, pattern)
    assert ours, pattern


SEGMENTS = ["*", "?", "**", "*.md", "*.py", "[a-d]*", "[!s]*", "src", "docs", "util", "a", "b2", "?*", "*a*", "[A-Z]*"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4))
def test_random_patterns_agree_with_python_glob(world: tuple[OpenViking, Path, Path], parts: list[str]) -> None:
    client, tree, _conf = world
    pattern = "/".join(parts)
    assert set(rel(client.glob(pattern, T)["matches"])) == python_glob(tree, pattern)


# ----------------------------------------------------------------------------- the command line


def test_cli_forms_and_formats(ov: Cli) -> None:
    table = ov("glob", "**/*.py", "--uri", T)
    assert table.code == 0 and table.err == ""
    assert table.out.splitlines() == [
        f"{T}/src/main.py",
        f"{T}/src/util/helpers.py",
        f"{T}/src/util/test_helpers.py",
        f"{T}/top.py",
    ]
    envelope = ov("glob", "**/*.py", "-u", T, "--json").json()
    assert envelope["status"] == "ok"
    assert envelope["result"] == {"matches": table.out.splitlines(), "count": 4}
    assert ov("glob", "**/*.py", "-u", T, "-o", "jsonl").json_lines() == [{"uri": u} for u in table.out.splitlines()]
    assert ov("glob", "**/*.py", "-u", T, "-n", "2").out.splitlines() == table.out.splitlines()[:2]
    assert ov("glob", "resources/tree/*.py").out.splitlines() == [f"{T}/top.py"]  # default --uri viking://


def test_cli_no_match(ov: Cli) -> None:
    result = ov("glob", "**/*.nothing", "-u", T)
    assert (result.code, result.out) == (0, "")
    assert "No matches" in result.err


@pytest.mark.parametrize(
    ("args", "code", "exit_code", "message"),
    [
        (("[",), "INVALID_ARGUMENT", 2, "Invalid glob pattern '[': a '[' without its ']'"),
        (("",), "INVALID_ARGUMENT", 2, "Glob pattern must not be empty"),
        ((".",), "INVALID_ARGUMENT", 2, "Glob pattern '.' names no path"),
        (("{a,b",), "INVALID_ARGUMENT", 2, "Invalid glob pattern '{a,b'"),
        (("*", "-n", "-1"), "INVALID_ARGUMENT", 2, "node_limit must be an integer >= 0 (got -1)"),
        (("*", "-u", "resources"), "INVALID_URI", 2, "Invalid URI: resources"),
        (("*", "-u", f"{R}/nope"), "NOT_FOUND", 1, f"Directory not found: {R}/nope"),
        (("*", "-u", f"{T}/README.md"), "FAILED_PRECONDITION", 1, f"Not a directory: {T}/README.md"),
    ],
)
def test_bad_input(
    ov: Cli, world: tuple[OpenViking, Path, Path], args: tuple[str, ...], code: str, exit_code: int, message: str
) -> None:
    error, table = cli_unharmed(ov, Path(world[0].store_path), ["glob", *args], code, exit_code, message)
    assert error["message"].startswith(message), error
    assert "Hint: " in table.err
