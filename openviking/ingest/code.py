"""What a source file defines, and what its opening comment says.

Read by line patterns, not parsed: a few patterns per language family cover the function,
class and type definitions, and indentation gives their nesting (lines inside strings and
comments, and braces on lines of their own, are not code that closes a definition). That is
enough to cut a file where its definitions start (chunk.py) and to say what a file is about
without an LLM (summary.py); what the patterns miss is cut at blank lines, as any text is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

__all__ = ["CONTAINER_KINDS", "Definition", "definitions", "is_code", "leading_doc"]

_FAMILIES = {
    "python": ".py .pyi .pyw",
    "c": ".c .h .cc .cpp .cxx .hh .hpp .hxx .m .mm",
    "shell": ".sh .bash .zsh",
    "ruby": ".rb .ex .exs .lua",
    "brace": ".js .mjs .cjs .jsx .ts .mts .cts .tsx .go .rs .java .kt .kts .scala .swift .cs .php .dart",
}
_FAMILY_OF = {suffix: family for family, suffixes in _FAMILIES.items() for suffix in suffixes.split()}
# Definitions whose members are definitions too: each starts a chunk of its own (chunk.py).
CONTAINER_KINDS = frozenset(
    "class interface struct enum trait union module namespace object protocol extension impl type".split()
)

_NAME = r"([A-Za-z_$~][\w$.:!?~]*)"
_MODIFIERS = (
    r"(?:(?:export|default|declare|public|private|protected|internal|static|final|abstract|sealed|open|data|"
    r"override|virtual|async|synchronized|native|inline|suspend|unsafe|const|partial|readonly|local|"
    r"extern\s+\"[^\"]*\"|pub(?:\([^)]*\))?)\s+)*"
)
_CONTROL = (
    r"(?:if|for|while|switch|catch|return|else|do|case|goto|sizeof|typedef|using|new|throw|await|with|foreach|lock)"
)
_PATTERNS: dict[str, tuple[tuple[str, re.Pattern[str]], ...]] = {
    "python": (("", re.compile(r"(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)\s*[(:\[]")),),
    "c": (
        (
            "",
            re.compile(
                r"(?:typedef\s+)?(class|struct|union|enum(?:\s+class)?|namespace)\s+([A-Za-z_]\w*)\s*(?:[:{]|final\b|$)"
            ),
        ),
        # int main(void) {   static char *f(void)   T X::m() const {
        ("function", re.compile(rf"(?!{_CONTROL}\b)[A-Za-z_][\w\s*&:<>,~]*?[\s*&]([A-Za-z_~][\w:~]*)\s*\([^;=]*$")),
    ),
    "shell": (
        ("function", re.compile(r"function\s+([A-Za-z_][\w:.-]*)")),
        ("function", re.compile(r"([A-Za-z_][\w:.-]*)\s*\(\)\s*\{?\s*$")),
    ),
    "ruby": (
        ("", re.compile(r"(def|defp|defmodule|class|module)\s+(?:self\.)?([A-Za-z_][\w.:!?=]*)")),
        ("function", re.compile(r"(?:local\s+)?function\s+([A-Za-z_][\w.:]*)\s*\(")),
    ),
    "brace": (
        (
            "",
            re.compile(
                _MODIFIERS + r"(class|interface|struct|enum|trait|union|module|namespace|object|protocol|extension)"
                r"(?:\s+(?!extends\b|implements\b)" + _NAME + r")?\s*(?:[:<({=]|extends\b|implements\b|where\b|$)"
            ),
        ),
        ("", re.compile(_MODIFIERS + r"(function)\*?\s+" + _NAME + r"\s*[(<]")),
        ("", re.compile(_MODIFIERS + r"(fn|fun|func|def|sub|proc)\s+(?:\([^)]*\)\s*)?(?:<[^>]*>\s*)?" + _NAME)),
        ("", re.compile(r"(impl)(?:\s*<[^>]*>)?\s+(?:[\w:<>, ]+\s+for\s+)?([A-Za-z_][\w:]*)")),
        ("", re.compile(r"(type)\s+([A-Za-z_]\w*)\s+(?:struct|interface)\b")),
        ("", re.compile(r"(mod)\s+([A-Za-z_]\w*)\s*\{")),
        # const handler = async (req) => …, let f = function (…)
        (
            "function",
            re.compile(
                _MODIFIERS + r"(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(?:async\s+)?"
                r"(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|[A-Za-z_$][\w$]*\s*=>)"
            ),
        ),
        # methods and constructors: render() {   public Map<K, V> m(int a) throws E {   async load(): Promise<X> {
        (
            "method",
            # (the brace may be on the next line: _opens_a_body)
            re.compile(
                # not a member call (app.get(...)) and no callback in the parentheses: a call, not a head
                rf"(?!{_CONTROL}\b|function\b)[^=;(){{}}.]*?\b([A-Za-z_$][\w$]*)\s*"
                rf"\((?![^;]*(?:\bfunction\b|=>))[^;]*\)[^;{{}}=]*(?:\{{\s*)?$"
            ),
        ),
    ),
}
# What a Python line holds that can open or hide a triple quote: one, an ordinary string, a comment.
_PY_TOKENS = re.compile(r'"""|\'\'\'|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|#')
_ACCESS_LABEL = re.compile(r"(?:public|private|protected|internal|signals|(?:public|private|protected)\s+slots)\s*:")
_GNU_HEAD = re.compile(rf"(?!{_CONTROL}\b)([A-Za-z_]\w*)\s*\([^;=]*$")
_TYPE_LINE = re.compile(r"[A-Za-z_][\w\s*&]*$")  # one flat class: nested repeats backtrack exponentially
_DECORATION = {
    "python": re.compile(r"@|#"),
    "c": re.compile(r"//|/\*|\*|template\s*<"),
    "shell": re.compile(r"#(?!!)"),
    "ruby": re.compile(r"#|--"),
    "brace": re.compile(r"@|#\[|//|/\*|\*|\[[^\]]*\]\s*$"),
}
_COMMENT_LINE = {
    "python": ("#",),
    "c": ("//", "/*", "*"),
    "shell": ("#",),
    "ruby": ("#", "--"),
    "brace": ("//", "/*", "*", "#"),
}
_NOT_NAMES = frozenset({"extends", "implements", "default"})
_RULE = re.compile(r"[=~\-^*#_`+]{3,}$")
_LICENSE = re.compile(r"copyright|licen[cs]e|spdx|all rights reserved|\(c\)", re.I)
# An opening comment's lines that are for tools, not readers: editor modes, linters, rules.
_PRAGMA = re.compile(
    r"-\*-.*-\*-|@ts-|eslint|flake8|noqa|pylint|type:\s*ignore|prettier|jshint|istanbul|tslint|clang-format|"
    r"nolint|vim?:|^[\W_]{3,}$|^[^\w.]*[\w.]+\s*[~=\-]{3,}|^[=~\-*#/]{3,}.*[=~\-*#/]{3,}$",
    re.I,
)


@dataclass(frozen=True, slots=True)
class Definition:
    """A function, class or type definition: where it starts, how deep it sits, what it is."""

    line: int  # 1-based: the definition's first line, its decorators and comments included
    depth: int  # 0 at the top of the file, 1 inside one definition, ...
    kind: str  # the keyword that defines it (def, class, fn, function, ...); "method"/"function" when none
    name: str

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}"


def _family(name: str) -> str | None:
    return _FAMILY_OF.get(PurePosixPath(name).suffix.lower())


def is_code(name: str) -> bool:
    """True for the names of source files whose definitions ``definitions`` can find."""
    return _family(name) is not None


def definitions(lines: list[str], name: str) -> list[Definition]:
    """The definitions of a source file, in order, each with its nesting depth."""
    family = _family(name)
    if family is None:
        return []
    found: list[Definition] = []
    open_blocks: list[int] = []  # the indents of the definitions the current line is inside
    for number, line, stripped in _code_lines(lines, family):
        indent = len(line) - len(line.lstrip())
        while open_blocks and indent <= open_blocks[-1] and not _continues_block(stripped):
            open_blocks.pop()
        matched = _match(stripped, family, lines, number)
        if matched is None:
            continue
        kind, definition_name = matched
        found.append(Definition(_first_line(lines, number, indent, family), len(open_blocks), kind, definition_name))
        open_blocks.append(indent)
    return found


def _code_lines(lines: list[str], family: str) -> list[tuple[int, str, str]]:
    """(number, line, stripped) of the lines that are code: not blank, not a comment, not inside
    a Python triple-quoted string or a /* block comment */."""
    out = []
    open_quote = ""  # the triple quote of the string the line is in
    in_block_comment = False
    for number, line in enumerate(lines, start=1):
        stripped = line.strip().lstrip("\ufeff")
        if family == "python":
            was_open = bool(open_quote)
            open_quote = _after_triple_quotes(stripped, open_quote)
            if was_open:
                continue
        elif family in ("c", "brace"):
            if in_block_comment:
                in_block_comment = "*/" not in stripped
                continue
            if stripped.startswith("/*") and "*/" not in stripped:
                in_block_comment = True
                continue
        if not stripped or stripped.startswith(_COMMENT_LINE[family]):
            continue
        out.append((number, line, stripped))
    return out


def _after_triple_quotes(stripped: str, open_quote: str) -> str:
    """Which triple-quoted string is still open after this line (``""`` for none). Ordinary
    strings are read past (``QUOTES = ('\"\"\"', ...)`` opens nothing), and so is a comment."""
    if open_quote:
        end = stripped.find(open_quote)
        if end < 0:
            return open_quote
        stripped = stripped[end + 3 :]
    if '"' not in stripped and "'" not in stripped:
        return ""
    for token in _PY_TOKENS.finditer(stripped):
        text = token.group()
        if text.startswith("#"):
            return ""
        if text in ('"""', "'''"):
            end = stripped.find(text, token.end())
            if end < 0:
                return text
            return _after_triple_quotes(stripped[end + 3 :], "")
    return ""


def _continues_block(stripped: str) -> bool:
    # A brace, a bracket or "end" on its own line, at a definition's indent, still belongs to it
    # (Allman braces, closing lines, Rust's where clause).
    if _ACCESS_LABEL.match(stripped):  # C++ public: at the class's own indent
        return True
    return stripped.startswith(("{", "}", ")", "]", "where ", "where\t")) or stripped in (
        "end", "end;", "fi", "esac", "where",
    )  # fmt: skip


def _match(stripped: str, family: str, lines: list[str], number: int) -> tuple[str, str] | None:
    if family != "python" and stripped.endswith(";"):  # a declaration or a call, not a body
        return None
    for kind, pattern in _PATTERNS[family]:
        found = pattern.match(stripped)
        if found is None:
            continue
        if kind:
            name = found.group(1)
        else:
            kind, name = found.group(1), found.group(2)
        kind = "enum" if kind.startswith("enum") else kind
        name = (name or "").rstrip(":.")
        if name in _NOT_NAMES or not name:
            name = "default"
        needs_body = kind == "method" or (kind == "function" and family == "c")
        if needs_body and not _opens_a_body(stripped, lines, number):
            continue
        return kind, name
    if family == "c" and number > 1:  # GNU style: the type on the line above, the name at column 0
        head = _GNU_HEAD.match(lines[number - 1])
        above = lines[number - 2].strip()
        if head and above and _TYPE_LINE.match(above) and _opens_a_body(stripped, lines, number):
            return "function", head.group(1)
    return None


def _opens_a_body(stripped: str, lines: list[str], number: int) -> bool:
    """A function head opens a body on its line or, Allman style, on the next one."""
    if stripped.endswith("{"):
        return True
    following = next((line.strip() for line in lines[number : number + 3] if line.strip()), "")
    return following.startswith("{") or (stripped.endswith((")", "const")) and following.startswith(("{", ":")))


def _first_line(lines: list[str], number: int, indent: int, family: str) -> int:
    """Where a definition starts: its decorators, attributes and doc comment belong to it,
    a decorator over several lines included."""
    decoration = _DECORATION[family]
    start = number
    probe = number - 1  # 1-based number of the line above
    while probe >= 1:
        above = lines[probe - 1]
        text = above.strip()
        depth = len(above) - len(above.lstrip())
        if not text:
            break
        if decoration.match(text) and indent <= depth <= indent + 1:
            start, probe = probe, probe - 1
            continue
        if family != "python":
            break
        # A decorator's own continuation lines: deeper, or its closing bracket, under an "@"
        top = probe
        while (
            top >= 1
            and lines[top - 1].strip()
            and (len(lines[top - 1]) - len(lines[top - 1].lstrip()) > indent or lines[top - 1].strip()[:1] in ")]}")
        ):
            top -= 1
        if top < probe and top >= 1 and lines[top - 1].strip().startswith("@"):
            start, probe = top, top - 1
            continue
        break
    return start


def leading_doc(text: str, name: str) -> str:
    """The first paragraph of a file's opening docstring or comment that says what it is:
    licences, editor modes and linter pragmas left out."""
    lines = text.split("\n")[:200]
    family = _family(name) or "brace"
    if family == "python":
        doc = _python_docstring(lines)
        if doc:
            return doc
    return _comment_paragraph(lines, family)


def _python_docstring(lines: list[str]) -> str:
    index = 0
    while index < len(lines) and (not lines[index].strip() or lines[index].lstrip().startswith("#")):
        index += 1
    if index == len(lines):
        return ""
    opening = re.match(r'\s*[rRuUbB]?("""|\'\'\'|"|\')', lines[index])
    if opening is None:
        return ""
    quote = opening.group(1)
    body = lines[index][opening.end() :]
    collected: list[str] = []
    while True:
        end = body.find(quote)
        if end >= 0:
            collected.append(body[:end])
            break
        collected.append(body)
        index += 1
        if index == len(lines) or len(quote) == 1:
            break
        body = lines[index]
    return _first_telling_paragraph(collected)


def _comment_paragraph(lines: list[str], family: str) -> str:
    markers = r"(//[/!]?|/\*+!?|\*+/?|#+|--)" if family != "c" else r"(//[/!]?|/\*+!?|\*+/?)"
    collected: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#!") or (not collected and not stripped):
            continue
        marker = re.match(markers, stripped)
        if marker is None:
            break
        collected.append(stripped[marker.end() :].rstrip("*/ ").strip())
    return _first_telling_paragraph(collected)


def _first_telling_paragraph(lines: list[str]) -> str:
    paragraphs: list[list[str]] = [[]]
    for line in _without_titles(lines):
        text = line.strip()
        if not text or _PRAGMA.search(text):
            if paragraphs[-1]:
                paragraphs.append([])
            continue
        paragraphs[-1].append(text)
    for paragraph in paragraphs:
        text = " ".join(paragraph)
        if text and not _LICENSE.search(text):
            return text
    return ""


def _without_titles(lines: list[str]) -> list[str]:
    """A docstring's underlined title (``module.name`` over ``~~~~``) names the file again."""
    out: list[str] = []
    for line in lines:
        if _RULE.match(line.strip()) and out and out[-1].strip():
            out.pop()
            continue
        out.append(line)
    return out
