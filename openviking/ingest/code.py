"""What a source file defines, and what its opening comment says.

Read by line patterns, not parsed: a few patterns cover the function, class and type
definitions of the common languages, and indentation gives their nesting. That is enough to
cut a file where its definitions start (chunk.py) and to say what a file is about without an
LLM (summary.py); a file the patterns miss is cut at blank lines, as any text is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

__all__ = ["Definition", "definitions", "is_code", "leading_doc"]

_PYTHON_SUFFIXES = frozenset({".py", ".pyi", ".pyw"})
_OTHER_SUFFIXES = frozenset(
    ".js .mjs .cjs .jsx .ts .mts .cts .tsx .go .rs .java .kt .kts .scala .swift .cs .c .h .cc .cpp "
    ".cxx .hh .hpp .hxx .m .mm .rb .php .lua .dart .ex .exs .sh .bash .zsh".split()
)

# Python: only lines that are certainly definitions (a docstring may say "class of problems").
_PYTHON_DEFINITION = re.compile(r"(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)\s*[(:\[]")
_MODIFIERS = r"(?:(?:export|default|declare|public|private|protected|internal|static|final|abstract|sealed|"
_MODIFIERS += r"open|data|override|virtual|async|synchronized|native|inline|suspend|unsafe|const|partial|"
_MODIFIERS += r"extern\s+\"[^\"]*\"|pub(?:\([^)]*\))?)\s+)*"
_OTHER_DEFINITIONS = (
    re.compile(
        _MODIFIERS + r"(class|interface|struct|enum|trait|union|module|namespace|object|protocol"
        r"|extension)\s+([A-Za-z_$][\w$.:]*)"
    ),
    re.compile(_MODIFIERS + r"(function)\*?\s+([A-Za-z_$][\w$]*)"),
    re.compile(_MODIFIERS + r"(fn|fun|func|def|sub|proc)\s+(?:\([^)]*\)\s*)?(?:<[^>]*>\s*)?([A-Za-z_$][\w$.!?]*)"),
    re.compile(r"(impl)(?:\s*<[^>]*>)?\s+(?:[\w:<>, ]+\s+for\s+)?([A-Za-z_][\w:]*)"),
    re.compile(r"(type)\s+([A-Za-z_]\w*)\s+(?:struct|interface)\b"),
    # const handler = async (req) => …, let f = function (…)
    re.compile(
        _MODIFIERS + r"(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(?:async\s+)?"
        r"(function\b|\([^)]*\)\s*(?::[^=]+)?=>|[A-Za-z_$][\w$]*\s*=>)"
    ),
    # Java / C# / C++ methods: at least one modifier, a return type, a name and "(".
    re.compile(
        r"(?:(?:public|private|protected|internal|static|final|abstract|synchronized|native|override|"
        r"virtual|async|sealed)\s+)+(?:<[^>]+>\s+)?[\w<>\[\],.?]+\s+([A-Za-z_]\w*)\s*\("
    ),
)
_DECORATION = re.compile(r"@|#(?![!\[])|//|/\*|\*|--")
_LICENSE = re.compile(r"copyright|licen[cs]e|spdx|all rights reserved|\(c\)", re.I)


@dataclass(frozen=True, slots=True)
class Definition:
    """A function, class or type definition: where it starts, how deep it sits, what it is."""

    line: int  # 1-based: the definition's first line, its decorators and comments included
    depth: int  # 0 at the top of the file, 1 inside one definition, ...
    kind: str  # the keyword that defines it (def, class, fn, function, ...), "method" when none
    name: str

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}"


def is_code(name: str) -> bool:
    """True for the names of source files whose definitions ``definitions`` can find."""
    suffix = PurePosixPath(name).suffix.lower()
    return suffix in _PYTHON_SUFFIXES or suffix in _OTHER_SUFFIXES


def definitions(lines: list[str], name: str) -> list[Definition]:
    """The definitions of a source file, in order, each with its nesting depth."""
    python = PurePosixPath(name).suffix.lower() in _PYTHON_SUFFIXES
    found: list[Definition] = []
    open_blocks: list[int] = []  # the indents of the definitions the current line is inside
    for number, line in enumerate(lines, start=1):
        stripped = line.lstrip()
        if not stripped:
            continue
        indent = len(line) - len(stripped.lstrip("\ufeff"))
        while open_blocks and indent <= open_blocks[-1] and not _closes_only(stripped):
            open_blocks.pop()
        matched = _match(stripped, python)
        if matched is None:
            continue
        kind, definition_name = matched
        start = number
        while start > 1 and _is_decoration(lines[start - 2], indent):
            start -= 1
        found.append(Definition(start, len(open_blocks), kind, definition_name))
        open_blocks.append(indent)
    return found


def _closes_only(stripped: str) -> bool:
    # "}" or "end" at a definition's own indent still belongs to it.
    return stripped.startswith(("}", ")", "]")) or stripped in ("end", "end;", "fi", "esac")


def _match(stripped: str, python: bool) -> tuple[str, str] | None:
    if python:
        found = _PYTHON_DEFINITION.match(stripped)
        return (found.group(1), found.group(2)) if found else None
    if stripped.rstrip().endswith(";"):  # a declaration or a call, not a body
        return None
    for index, pattern in enumerate(_OTHER_DEFINITIONS):
        found = pattern.match(stripped)
        if found is None:
            continue
        if index == len(_OTHER_DEFINITIONS) - 2:  # const name = … =>
            return "function", found.group(1)
        if index == len(_OTHER_DEFINITIONS) - 1:
            return "method", found.group(1)
        return found.group(1), found.group(2)
    return None


def _is_decoration(line: str, indent: int) -> bool:
    stripped = line.lstrip()
    return bool(stripped) and len(line) - len(stripped) == indent and bool(_DECORATION.match(stripped))


def leading_doc(text: str, name: str) -> str:
    """The first paragraph of a file's opening docstring or comment, licence lines left out."""
    lines = text.splitlines()[:200]
    if PurePosixPath(name).suffix.lower() in _PYTHON_SUFFIXES:
        doc = _python_docstring(lines)
        if doc:
            return doc
    return _comment_paragraph(lines)


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
    return _first_paragraph(collected)


def _comment_paragraph(lines: list[str]) -> str:
    collected: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#!") or (not collected and not stripped):
            continue
        marker = re.match(r"(///?|/\*+|\*+/?|#+|--)", stripped)
        if marker is None:
            break
        collected.append(stripped[marker.end() :].rstrip("*/ ").strip())
    paragraphs = " ".join(line if line else "\n" for line in collected).split("\n")
    for paragraph in paragraphs:
        paragraph = " ".join(paragraph.split())
        if paragraph and not _LICENSE.search(paragraph):
            return paragraph
    return ""


def _first_paragraph(lines: list[str]) -> str:
    paragraph: list[str] = []
    for line in lines:
        if not line.strip():
            if paragraph:
                break
            continue
        paragraph.append(line.strip())
    text = " ".join(paragraph)
    return "" if _LICENSE.search(text) else text
