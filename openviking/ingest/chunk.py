"""Split file text into chunks that keep their line span and their heading path.

Markdown is cut at headings (never inside a code fence), source code where its top-level
definitions and their members start (``code.definitions``: a chunk's heading is then the path
of definitions it sits in, ``class Store > def lock``); sections smaller than ``MIN_CHARS`` are
merged with the next, sections larger than ``MAX_CHARS`` are cut at blank lines. A transcript
(``dialogue.dialogue_turns``) is cut at its turns, a few to a chunk, each chunk headed by what
the transcript says before its first turn. Other text is cut at blank lines. Line numbers are
1-based and inclusive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .code import CONTAINER_KINDS, Definition, definitions, is_code
from .dialogue import Turn, dialogue_turns, preamble_heading

__all__ = ["Chunk", "chunk_text", "is_markdown", "text_lines"]

MAX_CHARS = 1800
MIN_CHARS = 400
# A transcript's chunk: a turn and the one before it (more turns only while they are short), so
# a question and its answer meet, and a chunk says one thing, not six turns of talk. Against
# 600 characters, LoCoMo-dev hit@1 0.750 -> 0.771, at about twice the embedding (bench/README.md).
DIALOGUE_CHARS = 300
DIALOGUE_OVERLAP = 1
LABEL_CHARS = 60  # a generated 100 KB function name is not a heading
HEADING_NAMES_CHARS = 160  # a packed chunk's heading stops naming its definitions here: the model reads ~80 tokens
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx", ".rst", ".txt")


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a file: its text, where it sits and the headings above it."""

    index: int
    line_start: int
    line_end: int
    heading: str
    text: str
    dialogue: bool = False  # turns of a transcript
    place: str | None = None  # a document's page, slide, sheet and cells, chapter or cell


@dataclass(slots=True)
class _Block:
    line_start: int
    lines: list[str]
    heading: str
    part: bool = False  # a piece of one long line: never merged with another piece of it

    @property
    def size(self) -> int:
        return sum(len(line) + 1 for line in self.lines)


def is_markdown(name: str) -> bool:
    """True for names whose text is cut at markdown headings."""
    return name.lower().endswith(_MARKDOWN_SUFFIXES)


def chunk_text(
    text: str,
    name: str,
    *,
    max_chars: int = MAX_CHARS,
    min_chars: int = MIN_CHARS,
    defined: list[Definition] | None = None,
) -> list[Chunk]:
    """Cut ``text`` (of the file called ``name``) into chunks of at most about ``max_chars``
    characters (``defined``: a code file's ``definitions``, when the caller has them already)."""
    lines = text_lines(text)
    if not lines:
        return []
    markdown, code = is_markdown(name), is_code(name)
    turns = [] if code else dialogue_turns(lines)
    if turns:
        return _dialogue_chunks(lines, turns, max_chars)
    if markdown:
        blocks = _sections(lines)
    elif code:
        blocks = _code_sections(lines, definitions(lines, name) if defined is None else defined)
    else:
        blocks = [_Block(1, lines, "")]
    pieces: list[_Block] = []
    for block in blocks:
        pieces.extend(_split_large(block, max_chars, fences=markdown))
    merged = _pack(pieces, max_chars, min_chars) if code else _merge_small(pieces, min_chars, max_chars)
    chunks: list[Chunk] = []
    for block in merged:
        lead, trail = _leading_blank(block.lines), _leading_blank(list(reversed(block.lines)))
        body = "\n".join(block.lines[lead : len(block.lines) - trail])  # the lines its span names, no more
        if not body.strip():
            continue
        first = block.line_start + lead
        last = block.line_start + len(block.lines) - 1 - trail
        chunks.append(Chunk(len(chunks), first, last, block.heading, body))
    return chunks


def chunk_document(text: str, *, max_chars: int = MAX_CHARS, min_chars: int = MIN_CHARS) -> list[Chunk]:
    """Cut the text converted from a document at its place markers (see
    ``openviking.documents.places``), then each place as markdown: no chunk crosses a page, a
    slide or a sheet's block of rows, and each knows its place. Line numbers are the text's."""
    from openviking.documents.places import place_of_marker

    lines = text_lines(text)
    segments: list[tuple[str | None, int, list[str]]] = []  # (place, first line, lines)
    place: str | None = None
    start, body = 1, []
    for number, line in enumerate(lines, start=1):
        found = place_of_marker(line) if line.startswith("<!-- ") else None
        if found is None:
            body.append(line)
            continue
        if any(part.strip() for part in body):
            segments.append((place, start, body))
        place, start, body = found, number + 1, []
    if any(part.strip() for part in body):
        segments.append((place, start, body))
    chunks: list[Chunk] = []
    for where, first, segment in segments:
        blocks: list[_Block] = []
        for section in _sections(segment):
            blocks.extend(
                _split_large(
                    _Block(section.line_start + first - 1, section.lines, section.heading), max_chars, fences=True
                )
            )
        for block in _merge_small(blocks, min_chars, max_chars):
            lead, trail = _leading_blank(block.lines), _leading_blank(list(reversed(block.lines)))
            body_text = "\n".join(block.lines[lead : len(block.lines) - trail])
            if body_text.strip():
                last = block.line_start + len(block.lines) - 1 - trail
                chunks.append(Chunk(len(chunks), block.line_start + lead, last, block.heading, body_text, place=where))
    return chunks


def _dialogue_chunks(lines: list[str], turns: list[Turn], max_chars: int) -> list[Chunk]:
    """Consecutive turns up to ``DIALOGUE_CHARS`` a chunk (a longer turn alone, cut as other
    text is), each headed by the preamble; the first chunk holds the preamble's lines too."""
    heading = preamble_heading(lines[: turns[0].first])
    groups: list[list[Turn]] = []
    size = 0
    for turn in turns:
        turn_size = sum(len(line) + 1 for line in lines[turn.first : turn.last + 1])
        if groups and size + turn_size <= DIALOGUE_CHARS:
            groups[-1].append(turn)
            size += turn_size
            continue
        carried = groups[-1][-DIALOGUE_OVERLAP:] if groups and DIALOGUE_OVERLAP else []
        groups.append([*carried, turn])
        size = turn_size + sum(sum(len(x) + 1 for x in lines[t.first : t.last + 1]) for t in carried)
    chunks: list[Chunk] = []
    for number, group in enumerate(groups):
        first = 0 if number == 0 else group[0].first
        block = _Block(first + 1, lines[first : group[-1].last + 1], heading)
        for piece in _split_large(block, max_chars, fences=False):
            lead, trail = _leading_blank(piece.lines), _leading_blank(list(reversed(piece.lines)))
            body = "\n".join(piece.lines[lead : len(piece.lines) - trail])
            if body.strip():
                start, end = piece.line_start + lead, piece.line_start + len(piece.lines) - 1 - trail
                chunks.append(Chunk(len(chunks), start, end, heading, body, dialogue=True))
    return chunks


def text_lines(text: str) -> list[str]:
    """The lines of ``text`` as grep and editors number them: cut at ``\\n`` (a ``\\r`` before it
    goes with it), not at the form feeds and other separators ``str.splitlines`` also cuts at."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return lines[:-1] if lines and lines[-1] == "" else lines


def _sections(lines: list[str]) -> list[_Block]:
    blocks: list[_Block] = []
    path: list[tuple[int, str]] = []
    current = _Block(1, [], "")
    in_fence = False
    for number, line in enumerate(lines, start=1):
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match:
            if current.lines:
                blocks.append(current)
            level = len(match.group(1))
            path = [(lv, title) for lv, title in path if lv < level]
            path.append((level, match.group(2).strip()))
            current = _Block(number, [line], " > ".join(title for _, title in path))
        else:
            current.lines.append(line)
    if current.lines:
        blocks.append(current)
    return blocks


def _code_sections(lines: list[str], defined: list[Definition]) -> list[_Block]:
    """One block per top-level definition or member of one (deeper ones stay in theirs)."""
    blocks: list[_Block] = []
    path: list[tuple[int, str]] = []  # (depth, label) of the definitions around the current line
    start = 1
    heading = ""
    for definition in defined:
        path = [(depth, label) for depth, label in path if depth < definition.depth]
        path.append((definition.depth, definition.label[:LABEL_CHARS]))
        if definition.depth > 1:
            continue
        if definition.line > start:
            blocks.append(_Block(start, lines[start - 1 : definition.line - 1], heading))
        start, heading = definition.line, " > ".join(label for _, label in path)[:HEADING_NAMES_CHARS]
    blocks.append(_Block(start, lines[start - 1 :], heading))
    return blocks


def _pack(blocks: list[_Block], max_chars: int, min_chars: int) -> list[_Block]:
    """Consecutive definitions share a chunk while they fit, so that each chunk starts where a
    definition does; a class (struct, impl...) starts a chunk of its own unless the chunk before
    is small. The heading names them all (``class A > def f, def g``), which is what the model
    reads first."""
    packed: list[_Block] = []
    for block in blocks:
        previous = packed[-1] if packed else None
        # a class, struct, impl... (not a function) starts its own chunk, with its members after it
        top_level = " > " not in block.heading and block.heading.split(" ", 1)[0] in CONTAINER_KINDS
        if (
            previous is not None
            and previous.size + block.size <= max_chars
            and not (top_level and previous.size >= min_chars)
            and not _same_line(previous, block)
        ):
            previous.lines.extend(block.lines)
            previous.part = block.part
            label = block.heading.rsplit(" > ", 1)[-1]
            named = re.split(r", | > ", previous.heading)
            if label and label not in named and len(previous.heading) + len(label) + 2 <= HEADING_NAMES_CHARS:
                previous.heading = f"{previous.heading}, {label}" if previous.heading else label
            continue
        packed.append(_Block(block.line_start, list(block.lines), block.heading, part=block.part))
    return packed


def _split_large(block: _Block, max_chars: int, *, fences: bool = True) -> list[_Block]:
    if block.size <= max_chars:
        return [block]
    if any(len(line) > max_chars for line in block.lines):
        return [part for piece in _split_lines(block, max_chars, fences) for part in _cut_long_line(piece, max_chars)]
    return _split_lines(block, max_chars, fences)


def _cut_long_line(block: _Block, max_chars: int) -> list[_Block]:
    """A block that is one line longer than ``max_chars`` (a feed, a minified file, a text with no
    line breaks) cut into pieces of that line, each of about ``max_chars`` and ending at a space
    where there is one, so that every part of the line is a record of its own; each piece names
    the line it is part of."""
    if len(block.lines) != 1 or len(block.lines[0]) <= max_chars:
        return [block]
    line = block.lines[0]
    pieces: list[_Block] = []
    start = 0
    while start < len(line):
        end = min(start + max_chars, len(line))
        if end < len(line):
            space = line.rfind(" ", start + max_chars // 2, end)
            end = space + 1 if space > 0 else end
        pieces.append(_Block(block.line_start, [line[start:end]], block.heading, part=True))
        start = end
    return pieces


def _split_lines(block: _Block, max_chars: int, fences: bool) -> list[_Block]:
    pieces: list[_Block] = []
    current: list[str] = []
    start = block.line_start
    size = 0
    in_fence = False
    for offset, line in enumerate(block.lines):
        if fences and _FENCE.match(line):
            in_fence = not in_fence
        boundary = not in_fence and not line.strip()
        long_line = len(line) > max_chars  # alone in its piece, which _cut_long_line then cuts
        if current and (long_line or ((size + len(line) + 1 > max_chars) and (boundary or size > 2 * max_chars))):
            pieces.append(_Block(start, current, block.heading))
            current, size, start = [], 0, block.line_start + offset
        current.append(line)
        size += len(line) + 1
        if long_line:
            pieces.append(_Block(start, current, block.heading))
            current, size, start = [], 0, block.line_start + offset + 1
    if current:
        pieces.append(_Block(start, current, block.heading))
    return pieces


def _merge_small(blocks: list[_Block], min_chars: int, max_chars: int) -> list[_Block]:
    merged: list[_Block] = []
    for block in blocks:
        previous = merged[-1] if merged else None
        if previous is not None and _only_a_heading(previous):
            # A heading with no text of its own ("## How It Works" right above "### Write Flow")
            # goes with the section below, whatever its size: alone it would be a chunk of two or
            # three words that wins keyword searches for them. The section's path names it.
            merged[-1] = _Block(previous.line_start, previous.lines + block.lines, block.heading)
            continue
        if (
            previous is not None
            and previous.size < min_chars
            and previous.size + block.size <= max_chars
            and not _same_line(previous, block)
        ):
            previous.lines.extend(block.lines)
            previous.part = block.part
            continue
        merged.append(_Block(block.line_start, list(block.lines), block.heading, part=block.part))
    return merged


def _same_line(previous: _Block, block: _Block) -> bool:
    """True when ``previous`` ends with a piece of the line ``block`` starts with a piece of:
    joined, the two would read as two lines."""
    return previous.part and block.part and previous.line_start + len(previous.lines) - 1 == block.line_start


def _only_a_heading(block: _Block) -> bool:
    return (
        bool(block.lines)
        and _HEADING.match(block.lines[0]) is not None
        and not any(line.strip() for line in block.lines[1:])
    )


def _leading_blank(lines: list[str]) -> int:
    count = 0
    for line in lines:
        if line.strip():
            break
        count += 1
    return count
