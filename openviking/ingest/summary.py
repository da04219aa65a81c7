"""Extractive L0/L1 text: file summaries, directory abstracts and overviews, without an LLM.

A file's summary is its title and first sentences. A directory's L1 overview is a title, a
brief paragraph and a navigation list of its children; its L0 abstract is the brief
paragraph. Lengths follow upstream's rule: cut at the last sentence end within the limit,
keep a first sentence whole, or cut at a word and add ``...``.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from .chunk import text_lines
from .code import Definition, definitions, is_code, leading_doc

__all__ = [
    "ChildSummary",
    "directory_abstract",
    "directory_overview",
    "file_summary",
    "file_title",
    "truncate_generated",
]

_FRONTMATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*(\n|\Z)", re.S)
_TITLE_LINE = re.compile(r"^title:\s*['\"]?(.+?)['\"]?\s*$", re.M)
_DESCRIPTION_LINE = re.compile(r"^description:\s*['\"]?(.+?)['\"]?\s*$", re.M)
# The content hash that names a memory file (``the-user-prefers-tabs-cc73927f.md``).
_NAME_HASH = re.compile(r"[-_][0-9a-f]{8}$")
_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.M)
_ANY_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"(\.(?!\d)(?=\s|$)|[!?](?=\s|$)|[。？！])")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_INLINE = re.compile(r"(\*\*|__|\*|_|`)(?=\S)(.+?)(?<=\S)\1")
_HTML = re.compile(r"<[^>]+>")
_ESCAPE_SEQUENCE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|.)")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
README_NAMES = ("readme", "index", "overview", "_index", "skill")


@dataclass(frozen=True, slots=True)
class ChildSummary:
    """What a directory's overview says about one child."""

    name: str
    is_dir: bool
    summary: str


def truncate_generated(text: str, limit: int) -> str:
    """Shorten ``text`` to ``limit`` characters, preferring whole sentences; terminal control
    sequences in the source (``\\x1b[2J``) do not reach a summary, which tables print."""
    text = _CONTROL.sub("", _ESCAPE_SEQUENCE.sub("", text)).strip()
    if len(text) <= limit:
        return text
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    within = [end for end in ends if end <= limit]
    if within:
        return text[: within[-1]].strip()
    cut = text[: max(limit - 3, 1)]  # a first sentence longer than the limit: cut at a word
    space = cut.rfind(" ")
    if space > 0:
        cut = cut[:space]
    return cut.rstrip() + "..."


def file_title(text: str, name: str) -> str:
    """Front matter ``title``, else the first ``# `` heading, else the file name without suffix.

    A name with no letter in it (``0042.txt``) says nothing: the title is then empty. Source
    code is titled by its file name (its ``#`` lines are comments).
    """
    if is_code(name):
        return PurePosixPath(name).name
    front = _FRONTMATTER.match(text)
    if front:
        title = _TITLE_LINE.search(front.group(1))
        if title:
            return _clean(title.group(1))
    heading = _H1.search(text[:20000])
    if heading:
        return _clean(heading.group(1))
    stem = PurePosixPath(name).stem or name
    return stem if any(ch.isalpha() for ch in stem) else ""


def first_prose(text: str, max_chars: int) -> str:
    """The first paragraphs of running text (no headings, code, tables or lists), cleaned."""
    body = _FRONTMATTER.sub("", text, count=1)
    paragraphs: list[str] = []
    current: list[str] = []
    in_fence = False
    size = 0
    for raw in body.splitlines():
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            in_fence = not in_fence
            _flush(current, paragraphs)
            continue
        if in_fence:
            continue
        if not line or _ANY_HEADING.match(line) or line.startswith(("|", ">", "<!--", "---", "===")):
            _flush(current, paragraphs)
            size = sum(len(p) for p in paragraphs)
            if size >= max_chars:
                break
            continue
        if re.match(r"^([-*+]|\d+[.)])\s", line):
            _flush(current, paragraphs)
            continue
        current.append(_clean(line))
    _flush(current, paragraphs)
    return " ".join(paragraphs)


def file_summary(
    text: str, name: str, limit: int = 256, *, title: str | None = None, defined: list[Definition] | None = None
) -> str:
    """``Title: first sentences``, at most ``limit`` characters (``title``: ``file_title``'s, when known)."""
    title = file_title(text, name) if title is None else title
    if is_code(name):
        if defined is None:
            defined = definitions(text_lines(text), name)
        return _code_summary(text, name, title, limit, defined)
    front = _FRONTMATTER.match(text)
    described = _DESCRIPTION_LINE.search(front.group(1)) if front else None
    prose = _clean(described.group(1)) if described else first_prose(text, limit * 2)  # a SKILL.md's description
    if not prose:
        return truncate_generated(title or name, limit)
    if not title or _says_first(prose, title):
        return truncate_generated(prose, limit)
    return truncate_generated(f"{title}: {prose}", limit)


def _code_summary(text: str, name: str, title: str, limit: int, defined: list[Definition]) -> str:
    """``name.py: what its opening docstring or comment says. Defines A, B, ...``: the names of
    its top-level definitions fill what the doc leaves of ``limit``."""
    head = f"{title}: " if title else ""
    doc = leading_doc(text, name)
    if doc:
        head += truncate_generated(" ".join(doc.split()), max(limit * 3 // 5 - len(head), 40))  # code, not markdown
        head = head if head.endswith((".", "!", "?", "...")) else head + "."
    names = list(dict.fromkeys(_defined_names(defined)))
    if not names:
        return truncate_generated(head.rstrip(": ") or title or name, limit)
    listing = (" " if doc else "") + "Defines " + ", ".join(names) + "."
    if len(head) + len(listing) > limit:
        room = limit - len(head) - 3
        listing = listing[:room].rsplit(",", 1)[0] + "..." if room > 20 else ""
    return truncate_generated((head + listing).strip(), limit)


def _defined_names(defined: list[Definition]) -> Iterator[str]:
    """The file's top-level definitions; inside a namespace or module (C#, C++, Ruby), its members."""
    wrapper = False
    for definition in defined:
        if definition.depth == 0:
            wrapper = definition.kind in ("namespace", "module", "mod", "defmodule")
            if not wrapper:
                yield definition.name
        elif definition.depth == 1 and wrapper:
            yield definition.name


def _says_first(prose: str, title: str) -> bool:
    """True when the prose begins with the title's words, so the title adds nothing (a memory
    file named after its own first words and a hash: ``The-user-prefers-tabs-cc73927f``)."""
    # Compared word by word, letters and digits only: a name's '_' and '-' stand for the spaces
    # and the punctuation (，、[]) of the text it was made from, in any script. A memory's name is
    # cut at 40 characters, so its last word may be the start of the text's.
    memory_name = bool(_NAME_HASH.search(title))
    said = re.findall(r"[^\W_]+", _NAME_HASH.sub("", title).lower())
    text = re.findall(r"[^\W_]+", prose.lower())[: len(said)]
    if not said or len(text) < len(said) or text[:-1] != said[:-1]:
        return False
    return text[-1] == said[-1] or (memory_name and text[-1].startswith(said[-1]))


def directory_abstract(name: str, children: list[ChildSummary], limit: int = 256) -> str:
    """The brief paragraph: a README's summary when there is one, else what the folder holds."""
    for child in children:
        if not child.is_dir and PurePosixPath(child.name).stem.lower() in README_NAMES and child.summary:
            return truncate_generated(child.summary, limit)
    files = [c for c in children if not c.is_dir]
    dirs = [c for c in children if c.is_dir]
    counts = []
    if files:
        counts.append(f"{len(files)} file{'s' if len(files) != 1 else ''}")
    if dirs:
        counts.append(f"{len(dirs)} folder{'s' if len(dirs) != 1 else ''}")
    head = f"{name} holds {' and '.join(counts) or 'nothing yet'}"
    topics = [_topic(c).rstrip(".。 ") for c in children]
    topics = [t for t in topics if t]
    text = head + (": " + "; ".join(topics) if topics else "") + "."
    if len(text) > limit:
        text = head + ": " + "; ".join(topics)
        text = text[: limit - 3].rsplit(";", 1)[0].rstrip() + "..."
    return text


def directory_overview(name: str, abstract: str, children: list[ChildSummary], limit: int = 4000) -> str:
    """``# name``, the brief paragraph, then ``## Contents`` with one line per child."""
    head = f"# {name}\n\n{abstract}\n\n## Contents\n"
    lines: list[str] = []
    budget = limit - len(head) - 40
    for index, child in enumerate(children):
        label = child.name + ("/" if child.is_dir else "")
        summary = truncate_generated(child.summary, 160) if child.summary else ""
        line = f"- {label}: {summary}" if summary else f"- {label}"
        if budget - len(line) - 1 < 0:
            lines.append(f"- ... and {len(children) - index} more")
            break
        budget -= len(line) + 1
        lines.append(line)
    return head + "\n".join(lines) + "\n"


def navigation_text(name: str, children: Sequence[ChildSummary]) -> str:
    """What a directory's L1 record embeds: its name and the titles of its children."""
    titles = [_topic(child) for child in children]
    return f"{name}: " + "; ".join(t for t in titles if t)


def _topic(child: ChildSummary) -> str:
    # A folder is best named by its name; a file by the title its summary starts with.
    if child.is_dir or not child.summary:
        return child.name if child.is_dir else PurePosixPath(child.name).stem
    if ":" in child.summary[:80]:
        return child.summary.split(":", 1)[0].strip()
    return textwrap.shorten(child.summary, 60, placeholder="...")


def _flush(current: list[str], paragraphs: list[str]) -> None:
    if current:
        paragraphs.append(" ".join(current))
        current.clear()


def _clean(line: str) -> str:
    line = _LINK.sub(r"\1", line)
    line = _HTML.sub("", line)
    line = _INLINE.sub(r"\2", line)
    return re.sub(r"\s+", " ", line).strip()
