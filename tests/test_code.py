"""Source code: cut where definitions start, headed by them, summarised by its docstring and names."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from openviking.ingest.chunk import chunk_text
from openviking.ingest.code import definitions, is_code, leading_doc
from openviking.ingest.summary import file_summary, file_title

PYTHON = textwrap.dedent(
    '''\
    # Copyright 2020 Example Corp. All rights reserved.
    # Licensed under the MIT licence.
    """Rotate log files once they grow past a size.

    More words that are not the first paragraph.
    """
    import os


    class RotatingLog:
        """A class of handlers: this docstring line starts with 'class of' and defines nothing."""

        def __init__(self, path):
            self.path = path

        @property
        def size(self):
            return os.path.getsize(self.path)

        async def rotate(self):
            def helper():
                return 1
            return helper()


    # The module's one function.
    def open_log(path):
        return RotatingLog(path)
    '''
)


def _names(source: str, name: str) -> list[tuple[int, int, str]]:
    return [(d.line, d.depth, d.label) for d in definitions(source.splitlines(), name)]


def test_python_definitions_with_depth_decorators_and_comments() -> None:
    assert _names(PYTHON, "log.py") == [
        (10, 0, "class RotatingLog"),
        (13, 1, "def __init__"),
        (16, 1, "def size"),  # from its decorator's line
        (20, 1, "def rotate"),
        (21, 2, "def helper"),
        (26, 0, "def open_log"),  # from the comment above it
    ]


@pytest.mark.parametrize(
    ("name", "source", "expected"),
    [
        (
            "app.ts",
            "export class Server {\n  start() {}\n}\nexport async function handle(req) {\n  return 1;\n}\n"
            "const route = async (req) => {\n  return 2;\n};\nexport interface Options {\n  port: number;\n}\n"
            "function declared(a: number): void;\n",
            [(1, 0, "class Server"), (4, 0, "function handle"), (7, 0, "function route"), (10, 0, "interface Options")],
        ),
        (
            "main.go",
            "package main\n\ntype Server struct {\n\tport int\n}\n\nfunc (s *Server) Start() error {\n\treturn nil\n}\n"
            "\nfunc main() {\n}\n",
            [(3, 0, "type Server"), (7, 0, "func Start"), (11, 0, "func main")],
        ),
        (
            "lib.rs",
            "pub struct Store {\n    path: String,\n}\n\nimpl Store {\n    pub fn open(path: &str) -> Self {\n"
            "        todo!()\n    }\n}\n\n/// Finds things.\npub(crate) async fn find() {}\n",
            [(1, 0, "struct Store"), (5, 0, "impl Store"), (6, 1, "fn open"), (11, 0, "fn find")],
        ),
        (
            "Store.java",
            "public class Store {\n    private final int size;\n\n    public static Store open(String path) {\n"
            "        return new Store();\n    }\n\n    abstract void close();\n}\n",
            [(1, 0, "class Store"), (4, 1, "method open")],
        ),
    ],
)
def test_definitions_of_other_languages(name: str, source: str, expected: list[tuple[int, int, str]]) -> None:
    assert _names(source, name) == expected


def test_what_counts_as_code() -> None:
    assert is_code("a/b/client.py") and is_code("App.TSX") and is_code("main.go")
    assert not is_code("README.md") and not is_code("notes.txt") and not is_code("Makefile")


def test_leading_doc_skips_licences_and_shebangs() -> None:
    assert leading_doc(PYTHON, "log.py") == "Rotate log files once they grow past a size."
    c_source = "/*\n * Copyright (c) 2019 Someone\n * SPDX-License-Identifier: MIT\n *\n * A tiny ring buffer.\n */\n"
    assert leading_doc(c_source, "ring.c") == "A tiny ring buffer."
    assert leading_doc("#!/bin/sh\n# Back up the database every night.\nset -e\n", "backup.sh") == (
        "Back up the database every night."
    )
    assert leading_doc("import os\n", "bare.py") == ""


def test_code_is_titled_by_its_name_and_summarised_by_doc_and_names() -> None:
    assert file_title(PYTHON, "log.py") == "log.py"  # not its first "# " comment
    summary = file_summary(PYTHON, "log.py", 256)
    assert summary == "log.py: Rotate log files once they grow past a size. Defines RotatingLog, open_log."
    undocumented = "\n".join(f"def function_number_{i}():\n    pass\n" for i in range(40))
    listed = file_summary(undocumented, "many.py", 120)
    assert listed.startswith("many.py: Defines function_number_0, function_number_1")
    assert listed.endswith("...") and len(listed) <= 120


def test_chunks_start_at_definitions_and_carry_their_path() -> None:
    methods = "\n".join(
        f"    def method_{i}(self):\n" + "".join(f"        value_{j} = {j}  # filler line\n" for j in range(12))
        for i in range(8)
    )
    source = f'"""Module doc."""\n\n\nclass Big:\n    """A big class."""\n\n{methods}\n\ndef after():\n    return 1\n'
    chunks = chunk_text(source, "big.py")
    lines = source.splitlines()
    starts = {d.line for d in definitions(lines, "big.py")} | {1}
    assert len(chunks) > 2
    for chunk in chunks:
        assert chunk.line_start in starts, (chunk.line_start, chunk.heading)
        assert len(chunk.text) <= 1800
    members = [c for c in chunks if c.heading.startswith("class Big > ")]
    assert members and all(c.heading.split(" > ")[1].startswith("def method_") for c in members)
    assert chunks[-1].heading.endswith("def after")
    covered = [n for c in chunks for n in range(c.line_start, c.line_end + 1)]
    assert covered == sorted(set(covered))  # no line in two chunks


def test_markdown_and_text_are_not_cut_as_code() -> None:
    text = "def looks_like_code():\n    pass\n"
    assert [c.heading for c in chunk_text(text, "notes.txt")] == [""]
    assert [c.heading for c in chunk_text("# Title\n\n" + text, "notes.md")] == ["Title"]


def test_find_points_at_the_definition(hash_client: Any, tmp_path: Path) -> None:
    fillers = "\n\n".join(
        f"def unrelated_{i}(rows):\n"
        + "".join(f"    total_{j} = sum(r * {j} for r in rows)\n" for j in range(10))
        + "    return rows\n"
        for i in range(6)
    )
    source = (
        f'"""Storage helpers."""\n\n{fillers}\n\n\n'
        "def rotate_backups(folder, keep):\n"
        '    """Delete the oldest backup archives, keeping the newest ones."""\n'
        "    archives = sorted(folder.glob('*.tar'))\n"
        "    for archive in archives[:-keep]:\n"
        "        archive.unlink()\n"
    )
    tree = tmp_path / "src"
    tree.mkdir()
    (tree / "storage.py").write_text(source, encoding="utf-8")
    hash_client.add_resource(tree)
    start = source.splitlines().index("def rotate_backups(folder, keep):") + 1
    hits = list(hash_client.find("delete the oldest backup archives", mode="keyword", limit=3))
    assert hits[0].uri == "viking://resources/src/storage.py"
    first, last = (int(n) for n in hits[0].match_reason.removeprefix("lines ").split("-"))
    assert first <= start <= last  # the chunk holding the function, cut where a definition starts
    assert first in {d.line for d in definitions(source.split("\n"), "storage.py")}
    listed = hash_client.abstract("viking://resources/src/storage.py")
    assert listed.startswith("storage.py: Storage helpers. Defines unrelated_0")


def test_a_packed_heading_names_each_definition_once_even_when_one_name_starts_another() -> None:
    source = "class A:\n    def getheader(self):\n        return 1\n\n    def get(self):\n        return 2\n"
    assert [c.heading for c in chunk_text(source, "a.py")] == ["class A, def getheader, def get"]


def test_form_feeds_do_not_shift_line_numbers_between_find_grep_and_read(hash_client: Any, tmp_path: Path) -> None:
    # GNU C and old Python files hold form feeds (^L); grep and editors do not count them as lines.
    filler = "".join(f"int filler_{i} = {i};\n" for i in range(60))
    source = f"/* Paging. */\n\f\n{filler}\f\nint rotate_backups(int keep) {{\n    return keep;\n}}\n"
    tree = tmp_path / "csrc"
    tree.mkdir()
    (tree / "backup.c").write_text(source, encoding="utf-8")
    hash_client.add_resource(tree)
    uri = "viking://resources/csrc/backup.c"
    line = hash_client.grep(uri, "rotate_backups")["matches"][0]["line"]
    assert line == source.split("\n").index("int rotate_backups(int keep) {") + 1
    assert hash_client.read(uri, offset=line - 1, limit=1) == "int rotate_backups(int keep) {\n"
    hit = next(iter(hash_client.find("rotate_backups keep", mode="keyword", limit=1)))
    first, last = (int(n) for n in hit.match_reason.removeprefix("lines ").split("-"))
    assert first <= line <= last and last == len(source.split("\n")) - 1


# ----------------------------------------------------------------------------- real code's awkward cases
@pytest.mark.parametrize(
    ("name", "source", "expected"),
    [
        (  # a string's lines at column 0 inside a class do not close the class
            "store.py",
            'class Store:\n    def a(self):\n        s = """\nSELECT 1\n"""\n# a comment at column 0\n'
            "    def b(self):\n        pass\n",
            [(1, 0, "class Store"), (2, 1, "def a"), (7, 1, "def b")],
        ),
        (  # example code in a docstring is not a definition
            "doc.py",
            'class Store:\n    """Use it so:\n\n    class Custom(Store):\n        def run(self): ...\n    """\n'
            "    def get(self):\n        return 1\n",
            [(1, 0, "class Store"), (7, 1, "def get")],
        ),
        (  # a decorator written over several lines belongs to its function
            "route.py",
            "@app.route(\n    '/items',\n    methods=['GET'],\n)\ndef items():\n    return []\n",
            [(1, 0, "def items")],
        ),
        (  # JSDoc, Allman braces and methods without a keyword
            "view.ts",
            "/**\n * A view.\n */\nexport class View\n{\n  constructor(private el: Element) {\n  }\n\n"
            "  /** Draws it. */\n  async render(): Promise<void> {\n    if (this.el) {\n    }\n  }\n}\n",
            [(1, 0, "class View"), (6, 1, "method constructor"), (9, 1, "method render")],
        ),
        (  # Rust attributes and doc comments, impl blocks, where clauses
            "lib.rs",
            "/// A point.\n#[derive(Debug)]\npub struct Point {\n    x: i32,\n}\n\nimpl<T> Show for Wrap<T>\nwhere\n"
            "    T: Show,\n{\n    #[inline]\n    fn show(&self) {}\n}\n",
            [(1, 0, "struct Point"), (7, 0, "impl Wrap"), (11, 1, "fn show")],
        ),
        (  # C: function heads with their types, structs; an initialiser and a comment are not heads
            "util.c",
            "#include <stdio.h>\n\n/* The function of the parser. */\nstruct point {\n    int x;\n};\n\n"
            "static struct ops fops = {\n    .open = f,\n};\n\nstatic char *\nname_of(int id)\n{\n    return 0;\n}\n\n"
            "int main(void) {\n    return name_of(1) != 0;\n}\n",
            [(3, 0, "struct point"), (13, 0, "function name_of"), (18, 0, "function main")],  # its comment above
        ),
        (
            "shape.cpp",
            "enum class Color { Red };\nenum class Mode {\n  A,\n};\nclass Derived : public Base {\n"
            "  int area() const;\n};\nint Derived::area() const {\n  return 1;\n}\n",
            [(2, 0, "enum Mode"), (5, 0, "class Derived"), (8, 0, "function Derived::area")],
        ),
        (
            "build.sh",
            "#!/bin/sh\nbuild() {\n  make\n}\nfunction deploy {\n  true\n}\n",
            [(2, 0, "function build"), (5, 0, "function deploy")],
        ),
        (
            "api.cs",
            'public class Api\n{\n    [HttpGet]\n    public string Get()\n    {\n        return "";\n    }\n}\n',
            [(1, 0, "class Api"), (3, 1, "method Get")],
        ),
        (
            "shapes.swift",
            "extension Circle: Shape {\n  func area() -> Double {\n    return 0\n  }\n}\n",
            [(1, 0, "extension Circle"), (2, 1, "func area")],
        ),
        (
            "default.js",
            "export default class extends Base {\n  run() {\n  }\n}\n",
            [(1, 0, "class default"), (2, 1, "method run")],
        ),
        ("mod.lua", "local M = {}\nfunction M.greet(name)\n  return name\nend\n", [(2, 0, "function M.greet")]),
    ],
)
def test_definitions_found_in_real_code_shapes(name: str, source: str, expected: list[tuple[int, int, str]]) -> None:
    assert _names(source, name) == expected


@pytest.mark.parametrize(
    ("name", "source", "summary"),
    [
        (
            "pycore.h",
            "#ifndef PY_CORE_H\n#define PY_CORE_H\n#include <stdio.h>\nint run(void) {\n}\n",
            "pycore.h: Defines run.",
        ),
        (
            "mode.py",
            "# -*- coding: utf-8 -*-\n# flake8: noqa\n# Parses __init__ files.\nimport os\n",
            "mode.py: Parses __init__ files.",
        ),
        (
            "lib.rs",
            "//! Points and their distances.\n\npub fn dist() {}\n",
            "lib.rs: Points and their distances. Defines dist.",
        ),
        (
            "c.py",
            '"""Copyright 2020 Example.\n\nParses config files.\n"""\n',
            "c.py: Parses config files.",  # the licence paragraph is passed over, not the whole docstring
        ),
        (
            "rule.py",
            '"""\nparsers.cmdline\n~~~~~~~~~~~~~~~\n\nCommand line parsing.\n"""\n',
            "rule.py: Command line parsing.",
        ),
    ],
)
def test_code_summaries_say_what_the_file_is(name: str, source: str, summary: str) -> None:
    assert file_summary(source, name, 256) == summary


def test_a_long_code_file_name_keeps_the_summary_within_its_limit() -> None:
    name = "x" * 240 + ".py"
    assert len(file_summary('"""A module that does a great many things."""\ndef f():\n    pass\n', name, 256)) <= 256


def test_many_small_functions_are_packed_like_text() -> None:
    source = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(3000))
    as_code, as_text = chunk_text(source, "tiny.py"), chunk_text(source, "tiny.txt")
    assert len(as_code) <= 1.2 * len(as_text)  # each chunk costs an embedding
    starts = {d.line for d in definitions(source.split("\n"), "tiny.py")}
    assert all(chunk.line_start in starts for chunk in as_code)


def test_a_long_parameter_line_above_a_c_function_does_not_hang_the_patterns() -> None:
    # A pattern with nested repeats would take minutes on one header line of this shape
    # (exponential backtracking): run it in a child process that must end, however slowly.
    import subprocess
    import sys

    # The line above a column-0 head is read as a possible return type (GNU style). A
    # backtracking pattern takes seconds for a 22-letter type there and hours for this one's 44.
    source = (
        "int first(\n        " + "Interpreter" * 4 + " *interp, int b);\nAPI(int) second(\n    int x);\n"
        "static int\nmain(void)\n{\n}\n"
    )
    script = (
        "import sys\nfrom openviking.ingest.code import definitions\n"
        "print([d.label for d in definitions(sys.stdin.read().split(chr(10)), 'big.h')])"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=source, capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "['function main']"


# ----------------------------------------------------------------------------- more awkward cases
@pytest.mark.parametrize(
    ("name", "source", "expected"),
    [
        ("q.py", "QUOTES = ('\"\"\"', \"'''\")\ndef f():\n    pass\n", [(2, 0, "def f")]),  # quotes in a string
        (  # calls that take a callback are not definitions
            "cb.js",
            "app.get('/', function (req, res) {\n});\nitems.forEach(function (x) {\n});\n"
            "fetch(u).then(r => r.json())\n",
            [],
        ),
        (  # one-line functions
            "t.php",
            "function f() { return 1; }\nclass A {\n  private static function helper() {}\n}\n",
            [(1, 0, "function f"), (2, 0, "class A"), (3, 1, "function helper")],
        ),
        (  # C++ access labels do not end the class
            "s.cpp",
            "class Stack {\npublic:\n    void push(int v) {\n    }\nprivate:\n    int n;\n};\n",
            [(1, 0, "class Stack"), (3, 1, "function push")],
        ),
    ],
)
def test_definitions_after_the_second_qa_pass(name: str, source: str, expected: list[tuple[int, int, str]]) -> None:
    """Quotes inside strings, callbacks, one-line functions and C++ access labels read as they are."""
    assert _names(source, name) == expected


def test_a_namespace_summary_lists_its_members() -> None:
    source = "namespace App\n{\n    public class Config\n    {\n    }\n    public class Loader\n    {\n    }\n}\n"
    assert file_summary(source, "c.cs", 256) == "c.cs: Defines Config, Loader."


def test_a_banner_line_is_not_a_summary() -> None:
    source = "//===- llvm/Support/Error.h ------------*- C++ -*-===//\n//\n// Helpers for testing errors.\n//\n"
    assert file_summary(source, "Error.h", 256) == "Error.h: Helpers for testing errors."


def test_a_chunk_text_holds_exactly_the_lines_its_span_names() -> None:
    (chunk,) = chunk_text("def f():\n    pass\n    \n", "w.py")
    assert (chunk.line_start, chunk.line_end, chunk.text) == (1, 2, "def f():\n    pass")


def test_a_huge_generated_name_does_not_make_a_huge_heading() -> None:
    chunks = chunk_text("def " + "x" * 100_000 + "():\n    pass\n", "gen.py")
    assert all(len(chunk.heading) <= 160 for chunk in chunks)


def test_a_hybrid_hit_in_one_file_cites_the_lines_its_meaning_matched(tmp_path: Path) -> None:
    # In a search of one file both sides rank it first; the hit must show the vector side's best
    # chunk (_read_chunked), not the keyword side's (_send_output, which sends a request).
    import ast
    import http.client

    from openviking.config import Config
    from openviking.embedded.client import OpenViking

    source = Path(http.client.__file__).read_text(encoding="utf-8")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "client.py").write_text(source, encoding="utf-8")
    response = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "HTTPResponse")
    method = next(n for n in response.body if isinstance(n, ast.FunctionDef) and n.name == "_read_chunked")
    with OpenViking(path=tmp_path / "store", config=Config()) as client:  # the local model
        client.add_resource(tmp_path / "src", to="viking://resources/py")
        (hit,) = client.find(
            "where is the HTTP chunked response body read", target_uri="viking://resources/py", limit=1
        )
    first, last = (int(n) for n in hit.match_reason.removeprefix("lines ").split("-"))
    assert first <= method.end_lineno and method.lineno <= last, (hit.match_reason, method.lineno)


def test_a_markdown_heading_with_no_text_of_its_own_goes_with_the_section_below() -> None:
    # "## How It Works" right above a full "### Write Flow" would be a chunk of its own: three
    # words, the shortest document in the index, first in keyword searches for "work"
    write_flow = "### Write Flow\n\n" + "".join(f"Step {i}: the client encrypts block {i}.\n" for i in range(60))
    intro = "Keys are kept apart from the data they protect, each in a store of its own. " * 8
    text = f"# Encryption\n\n{intro}\n\n## How It Works\n\n" + write_flow
    chunks = chunk_text(text, "encryption.md")
    assert [(c.line_start, c.heading) for c in chunks] == [
        (1, "Encryption"),
        (5, "Encryption > How It Works > Write Flow"),
    ]
    assert chunks[1].text.startswith("## How It Works\n\n### Write Flow")
    lines = text.split("\n")
    for chunk in chunks:  # the spans still hold exactly their text
        assert chunk.text == "\n".join(lines[chunk.line_start - 1 : chunk.line_end]).strip("\n")
