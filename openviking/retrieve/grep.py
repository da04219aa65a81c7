"""``grep``: a regular expression, line by line, over the content (L2) of the files below a URI.

The pattern language and its meaning are Python's ``re`` (Unicode ``\\w``/``\\d``/``\\s``/``\\b``,
``-i`` with Python's case rules). The speed comes from RE2, through pyarrow's
``match_substring_regex``, run over whole Arrow columns at once:

1. The pattern is written out again in RE2 syntax (:mod:`.re2translate`, over the character
   sets of :mod:`.charset`). Constructs RE2 has no equivalent for (back-references,
   look-around, conditionals, atomic groups and possessive repeats, counts above 1000) become
   a looser RE2 pattern that selects candidate lines, and Python's ``re`` decides on those
   lines only (on every line, when this Python's ``re`` internals are not the ones the
   translator knows).
2. Strings every match must contain (``TODO|FIXME`` -> ``TODO``, ``FIXME``), which RE2 finds
   at memchr speed, pick candidate files; the multi-line form of the pattern, run over blocks
   of 8 lines (zero-copy slices of the content), picks candidate blocks; only their lines are
   cut out (:mod:`.lines`) and tested with the line pattern, in one call per array, on two
   threads for large inputs. Files, their line table and blocks are kept for the next call in
   the same process while the store's version is unchanged (:mod:`.cache`).

RE2 runs in linear time, so a pattern such as ``(a+)+$`` on a long line finishes in
milliseconds; Python's backtracking engine only ever sees lines RE2 already selected, and only
for the constructs listed in 1. Every run of a pattern is bounded (:mod:`.bounded`): by a
deadline (``DEADLINE_EXCEEDED`` past it), RE2 cut in chunks or run in a worker process
that is killed at the deadline, Python's ``re`` always in that worker and on at most 64 MiB
of lines. Patterns longer than :data:`MAX_PATTERN_CHARS` are refused.

Lines: content is split at ``\\n``; a ``\\r`` just before it belongs to the terminator (as with
``rg --crlf``); a final ``\\n`` does not start another line. Line numbers start at 1.
Files: regular files below the URI (the URI itself when it is a file), never hidden ones
(a name, or a directory below the URI, starting with ``.``; the directories' ``.abstract.md``
and ``.overview.md`` are not files of the store at all), at most ``level_limit`` levels below
the URI (a file directly in it is at level 1; 0 or None: no limit), none equal to or below
``exclude_uri`` (segment-aware). Order: depth-first, directories before files, then names
case-insensitively, then as written; within a file, by line. ``node_limit`` keeps the first N
matching lines in that order (0 or None: no limit); ``files_scanned`` then counts the files
searched up to the one holding the last match kept.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openviking.documents.places import MARKER_PATTERN, Places
from openviking.errors import InvalidArgumentError, InvalidURIError
from openviking.store.view import VikingFS, tree_key
from openviking.values.arguments import describe, flag, optional_limit
from openviking.values.uri import SCHEME, VikingURI, parse

from .arrays import string_offsets, take, to_bool
from .bounded import Deadline, python_search, python_spans, re2_mask, re2_replace
from .cache import CACHE
from .charset import re2_escape
from .lines import Blocks, Lines, blocks_of, lines_of
from .re2translate import LinePattern, line_pattern

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from openviking.store.lance import LanceStore

__all__ = [
    "Found",
    "LinePattern",
    "check_arguments",
    "compile_pattern",
    "excluded_uris",
    "grep",
    "no_matches",
    "search_content",
]

# Python compiles about 2 µs a character, and writing a pattern out for RE2 more.
MAX_PATTERN_CHARS = 100_000
# Marks a match inside a line when RE2 reports where the matches are (private-use characters).
MARK_OPEN, MARK_CLOSE = "\ue000", "\ue001"


# ---------------------------------------------------------------------------------------------
# arguments


def check_arguments(
    pattern: Any,
    *,
    case_insensitive: bool = False,
    fixed_strings: bool = False,
    node_limit: Any = None,
    level_limit: Any = 5,
    count: bool = False,
    files_with_matches: bool = False,
    spans: bool = False,
) -> tuple[int | None, int | None]:
    """Validate grep's arguments with no store and no heavy import (the regex with Python's ``re``).

    Returns:
        The node and level limits as numbers (None: no limit).

    Raises:
        InvalidArgumentError: the first bad argument.
    """
    limit = optional_limit(node_limit, "node_limit")
    depth_limit = optional_limit(level_limit, "level_limit")
    case_insensitive = flag(case_insensitive, "case_insensitive")
    fixed_strings = flag(fixed_strings, "fixed_strings")
    count = flag(count, "count")
    files_with_matches = flag(files_with_matches, "files_with_matches")
    flag(spans, "spans")
    if count and files_with_matches:
        raise InvalidArgumentError(
            "Use just one of --count or --files-with-matches", details={"count": True, "files_with_matches": True}
        )
    _python_pattern(_string(pattern), case_insensitive, fixed_strings)
    return limit, depth_limit


def _string(pattern: Any) -> str:
    if not isinstance(pattern, str):
        raise InvalidArgumentError(f"pattern must be a string (got {type(pattern).__name__})")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidArgumentError(
            f"pattern is {len(pattern):,} characters long, more than the {MAX_PATTERN_CHARS:,} grep takes",
            details={"pattern": describe(pattern), "length": len(pattern), "limit": MAX_PATTERN_CHARS},
        )
    return pattern


@functools.lru_cache(maxsize=64)
def _python_pattern(pattern: str, case_insensitive: bool, fixed_strings: bool) -> re.Pattern[str]:
    source = re.escape(pattern) if fixed_strings else pattern
    try:
        return re.compile(source, re.IGNORECASE if case_insensitive else 0)
    except re.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        raise InvalidArgumentError(
            f"Invalid regex pattern: {exc.msg}{where}",
            hint="Escape special characters with a backslash, or search for the text as it is with fixed_strings=True",
            details={"pattern": pattern, "position": exc.pos, "reason": exc.msg},
        ) from exc
    except (OverflowError, RecursionError, ValueError, MemoryError) as exc:
        reason = str(exc) or type(exc).__name__
        raise InvalidArgumentError(f"Invalid regex pattern: {reason}", details={"pattern": describe(pattern)}) from exc


# ---------------------------------------------------------------------------------------------
# the pattern


def compile_pattern(pattern: str, *, case_insensitive: bool = False, fixed_strings: bool = False) -> LinePattern:
    """Validate ``pattern`` with Python's ``re`` and translate it for RE2 (cached per process).

    Raises:
        InvalidArgumentError: not a string, or not a valid Python regular expression.
    """
    compiled = _python_pattern(
        _string(pattern), flag(case_insensitive, "case_insensitive"), flag(fixed_strings, "fixed_strings")
    )
    return line_pattern(compiled)


# ---------------------------------------------------------------------------------------------
# the files, cached per store version


@dataclass
class _Snapshot:
    """The files below ``scope`` (every depth, or at most ``max_depth``), in traversal order."""

    scope: VikingURI
    max_depth: int | None
    uris: pa.Array
    uri_list: list[str]
    depth: np.ndarray
    content: pa.LargeStringArray
    uses: int = 1
    _lines: Lines | None = field(default=None, repr=False)
    _blocks: Blocks | None = field(default=None, repr=False)
    _ascii: np.ndarray | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def covers(self, scope: VikingURI, max_depth: int | None) -> bool:
        """Whether it holds every file below ``scope`` down to depth ``max_depth`` (None: all)."""
        if not scope.is_within(self.scope):
            return False
        return self.max_depth is None or (max_depth is not None and max_depth <= self.max_depth)

    def lines(self) -> Lines:
        """Every line of every file (built once per snapshot, on its second search)."""
        with self._lock:
            if self._lines is None:
                self._lines = lines_of(self.content)
            return self._lines

    def blocks(self) -> Blocks:
        """The snapshot's lines grouped in blocks (built with the line table)."""
        table = self.lines()
        with self._lock:
            if self._blocks is None:
                self._blocks = blocks_of(self.content, table)
            return self._blocks

    def ascii_files(self) -> np.ndarray:
        """Which files hold only ASCII text."""
        import pyarrow.compute as pc

        with self._lock:
            if self._ascii is None:
                self._ascii = to_bool(pc.string_is_ascii(self.content))
            return self._ascii


def _snapshot(store: LanceStore, scope: VikingURI, max_depth: int | None) -> _Snapshot:
    """The files below ``scope``: from the cache while the store is unchanged, else read."""
    version = store.nodes_version()
    cached = CACHE.find(store.cache_key, version, _Snapshot, lambda snap: snap.covers(scope, max_depth))
    if cached is not None:
        cached.uses += 1
        return cached
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    below = None if max_depth is None else int(max_depth) - scope.depth
    table = store.scan_nodes_below(scope, columns=["uri", "content"], files_only=True, max_depth=below)
    uri_list = table.column("uri").to_pylist()
    order = sorted(range(len(uri_list)), key=lambda i: tree_key(uri_list[i], is_dir=False))
    indices = pa.array(order, pa.int64())
    uris = table.column("uri").take(indices).combine_chunks()
    content = pc.fill_null(table.column("content").take(indices).combine_chunks(), "")
    if content.type != pa.large_string():
        content = content.cast(pa.large_string())
    depth = np.asarray(pc.subtract(pc.count_substring(uris, "/"), 1), dtype=np.int64)
    snap = _Snapshot(scope, max_depth, uris, [uri_list[i] for i in order], depth, content)
    # the budget counts the line table too, which a second search of the snapshot builds
    CACHE.put(store.cache_key, version, snap, 2 * content.nbytes)
    return snap


# ---------------------------------------------------------------------------------------------
# grep


def grep(
    store: LanceStore,
    uri: str,
    pattern: str,
    *,
    user: str = "default",
    case_insensitive: bool = False,
    exclude_uri: str | Sequence[str] | None = None,
    node_limit: int | None = None,
    level_limit: int | None = 5,
    fixed_strings: bool = False,
    count: bool = False,
    files_with_matches: bool = False,
    spans: bool = False,
) -> dict[str, Any]:
    """Search the content of the files at or below ``uri`` for ``pattern``, line by line.

    Args:
        store: the open store.
        uri: a directory (searched ``level_limit`` levels deep) or a file.
        pattern: a Python regular expression (``re`` syntax), or text with ``fixed_strings``.
        user: whose space ``viking://~`` names.
        case_insensitive: ignore case (Python's ``re.IGNORECASE``).
        exclude_uri: skip this URI (or each of these URIs) and everything below it (segment-aware).
        node_limit: at most this many matching lines (0 or None: all).
        level_limit: only files at most this many levels below ``uri`` (0 or None: all).
        fixed_strings: ``pattern`` is plain text, not a regular expression.
        count: return ``counts`` (``[{uri, count}]``, files with a match) instead of ``matches``.
        files_with_matches: return ``files`` (URIs of the files with a match) instead of ``matches``.
        spans: add ``spans`` (``[[start, end], ...]``, character offsets) to each match.

    Returns:
        ``{"matches": [{"uri", "line", "content"}], "count", "match_count", "files_scanned"}``
        (``matches`` replaced by ``counts`` or ``files`` with those options); ``count`` and
        ``match_count`` are the number of matching lines returned.

    Raises:
        InvalidArgumentError: bad pattern, bad limit, or both ``count`` and ``files_with_matches``.
        InvalidURIError, PermissionDeniedError: a malformed ``uri`` or ``exclude_uri``.
        NotFoundError: nothing is stored at ``uri``.
    """
    limit, depth_limit = check_arguments(
        pattern,
        case_insensitive=case_insensitive,
        fixed_strings=fixed_strings,
        node_limit=node_limit,
        level_limit=level_limit,
        count=count,
        files_with_matches=files_with_matches,
        spans=spans,
    )
    deadline = Deadline()
    compiled = compile_pattern(pattern, case_insensitive=case_insensitive, fixed_strings=fixed_strings)
    target = parse(uri, user=user, field="uri")
    excluded = [parse(item, user=user, field="exclude_uri") for item in excluded_uris(exclude_uri)]
    is_file = not VikingFS(store).node(target, columns=["uri", "is_dir"])["is_dir"]
    max_depth = None if is_file or depth_limit is None else target.depth + depth_limit
    snap = _snapshot(store, target, max_depth)
    selected = _select(snap, target, is_file, max_depth, excluded)
    found = _search(snap, selected, compiled, spans=bool(spans), deadline=deadline)
    return _result(snap, selected, found, limit, count=count, files_with_matches=files_with_matches)


def excluded_uris(exclude_uri: str | Sequence[str] | None) -> list[str]:
    """``exclude_uri`` as a list: one URI, several (``-x A -x B``), or none.

    Raises:
        InvalidURIError: neither a string nor a list or tuple of them.
    """
    if exclude_uri is None:
        return []
    if isinstance(exclude_uri, str):
        return [exclude_uri]
    if isinstance(exclude_uri, list | tuple) and all(isinstance(item, str) for item in exclude_uri):
        return list(exclude_uri)
    raise InvalidURIError(describe(exclude_uri), "exclude_uri must be a string or a list of strings")


def _select(
    snap: _Snapshot, target: VikingURI, is_file: bool, max_depth: int | None, excluded: list[VikingURI]
) -> np.ndarray:
    """Indices (into the snapshot, in traversal order) of the files to search."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    uris = snap.uris
    keep = np.ones(len(uris), dtype=bool)
    if is_file:
        keep &= to_bool(pc.equal(uris, pa.scalar(str(target), uris.type)))
    else:
        prefix = SCHEME if target.is_root else str(target) + "/"
        if snap.scope != target:
            keep &= to_bool(pc.starts_with(uris, prefix))
        if max_depth is not None and (snap.max_depth is None or max_depth < snap.max_depth):
            keep &= snap.depth <= max_depth
        # hidden: a name below the target that starts with "."
        keep &= ~to_bool(pc.match_substring_regex(uris, "^" + re2_escape(prefix) + r"(?:\.|.*/\.)"))
    for skipped in excluded:
        if skipped.is_root:
            keep[:] = False
        else:
            text = str(skipped)
            keep &= ~(to_bool(pc.equal(uris, pa.scalar(text, uris.type))) | to_bool(pc.starts_with(uris, text + "/")))
    return np.flatnonzero(keep)


@dataclass
class Found:
    """Matching lines in traversal order: snapshot file index, line number, text (and spans)."""

    file: list[int]
    number: list[int]
    text: list[str]
    spans: list[list[list[int]]] | None = None


def _search(snap: _Snapshot, selected: np.ndarray, compiled: LinePattern, *, spans: bool, deadline: Deadline) -> Found:
    warm = snap._lines is not None or snap.uses > 1
    return search_content(
        snap.content,
        selected,
        compiled,
        lines=snap.lines() if warm else None,
        blocks=snap.blocks() if warm else None,
        ascii_files=snap.ascii_files,
        spans=spans,
        deadline=deadline,
    )


def search_content(
    content: pa.LargeStringArray,
    files: np.ndarray,
    compiled: LinePattern,
    *,
    lines: Lines | None = None,
    blocks: Blocks | None = None,
    ascii_files: Callable[[], np.ndarray] | None = None,
    spans: bool = False,
    deadline: Deadline | None = None,
) -> Found:
    """The lines of files ``files`` (sorted indices into ``content``) in which ``compiled`` matches.

    Without ``lines``/``blocks`` (the line table and blocks of the whole ``content``), the
    candidate files are cut into lines here; with them, only the lines of matching blocks are
    tested. ``ascii_files`` gives which files are pure ASCII (computed here when None).

    Raises:
        DeadlineExceededError: the pattern's runs took longer than ``deadline`` (by default a
            new :class:`.bounded.Deadline`) allows, or need Python's re on too much text.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not len(files):
        return Found([], [], [])
    deadline = deadline or Deadline()
    restrict = None
    if lines is not None and blocks is not None:
        chosen = np.zeros(len(content), dtype=bool)
        chosen[files] = True
        block_index = _keep_matching(blocks.text, np.flatnonzero(chosen[blocks.file]), compiled, deadline)
        in_block = np.zeros(len(blocks.file), dtype=bool)
        in_block[block_index] = True
        assert blocks.of_line is not None
        line_mask = in_block[blocks.of_line]
        if line_mask.sum() * 2 > len(line_mask):  # most lines: test them all rather than copy most
            text, line_file, line_number, restrict = lines.text, lines.file, lines.number, line_mask
        else:
            line_index = np.flatnonzero(line_mask)
            text, line_file, line_number = (
                take(lines.text, line_index),
                lines.file[line_index],
                lines.number[line_index],
            )
    else:
        # the candidate files, cut into blocks of lines; only the lines of matching blocks are cut
        files = _keep_matching(content, files, compiled, deadline, regex=False)
        blocks = blocks_of(take(content, files))
        chosen = _keep_matching(blocks.text, np.arange(len(blocks.file)), compiled, deadline)
        part = lines_of(take(blocks.text, chosen))
        owner = chosen[part.file]
        text, line_file, line_number = (
            part.text,
            files[blocks.file[owner]],
            blocks.first_number[owner] + part.number - 1,
        )

    def ascii_lines() -> np.ndarray:
        per_file = ascii_files() if ascii_files is not None else to_bool(pc.string_is_ascii(content))
        flags: np.ndarray = per_file[line_file]
        other = np.flatnonzero(~flags)
        if len(other):
            flags[other] = to_bool(pc.string_is_ascii(take(text, other)))
        return flags

    hit, by_re2 = _decide(text, compiled, ascii_lines, deadline, restrict)
    if compiled.empty_line is not None and len(text):
        empty = np.diff(string_offsets(text)) == 0
        if empty.any():  # Python's answer for an empty line, where RE2's may differ
            hit[empty] = python_search(compiled.python, pa.array([""], pa.large_string()), deadline)[0]
    hits = np.flatnonzero(hit)
    if not len(hits):
        return Found([], [], [])
    hit_text = take(text, hits)
    found = Found(line_file[hits].tolist(), line_number[hits].tolist(), hit_text.to_pylist())
    if spans:
        found.spans = _spans(found.text, hit_text, compiled, by_re2[hits], deadline)
    return found


def _keep_matching(
    texts: pa.Array, index: np.ndarray, compiled: LinePattern, deadline: Deadline, *, regex: bool = True
) -> np.ndarray:
    """The entries of ``index`` whose text (a file or a block of lines) can hold a match: one
    of the pattern's required strings, then (with ``regex``) its multi-line form."""
    import numpy as np

    if compiled.literals and len(index):
        found = np.zeros(len(index), dtype=bool)
        for literal in compiled.literals:
            # a plain string: RE2's automaton for it has one state per character, never more
            found |= _mask_of(texts, index, re2_escape(literal), 1, deadline)
        index = index[found]
    if regex and compiled.content is not None and len(index):
        index = index[_mask_of(texts, index, compiled.content, compiled.positions, deadline)]
    return index


def _mask_of(texts: pa.Array, index: np.ndarray, regex: str, positions: int, deadline: Deadline) -> np.ndarray:
    """Which of the strings ``texts[index]`` RE2 finds a match in (all of them are tested when
    that is cheaper than copying most of them)."""
    if len(index) * 2 > len(texts):
        kept: np.ndarray = re2_mask(texts, regex, positions, deadline)[index]
        return kept
    return re2_mask(take(texts, index), regex, positions, deadline)


def _decide(
    text: pa.Array,
    compiled: LinePattern,
    ascii_lines: Callable[[], np.ndarray],
    deadline: Deadline,
    restrict: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(matches, decided by RE2)`` for every line of ``text`` (or those ``restrict`` keeps)."""
    import numpy as np

    count = len(text)
    cost = compiled.positions
    if compiled.exact is not None:
        hit = re2_mask(text, compiled.exact, cost, deadline)
        return (hit & restrict if restrict is not None else hit), np.ones(count, dtype=bool)
    hit = np.zeros(count, dtype=bool)
    by_re2 = np.zeros(count, dtype=bool)
    rest = np.arange(count) if restrict is None else np.flatnonzero(restrict)
    if compiled.ascii is not None:
        by_re2 = ascii_lines()
        hit = re2_mask(text, compiled.ascii, cost, deadline) & by_re2  # RE2 over every line: no copy to make
        if restrict is not None:
            hit &= restrict
        rest = rest[~by_re2[rest]]
    if len(rest) and compiled.candidates is not None:
        rest = rest[_mask_of(text, rest, compiled.candidates, cost, deadline)]
    if len(rest):
        hit[rest] = python_search(compiled.python, take(text, rest), deadline)
    return hit, by_re2


def _spans(
    lines: list[str], hit_text: pa.Array, compiled: LinePattern, by_re2: np.ndarray, deadline: Deadline
) -> list[list[list[int]]]:
    """Where the pattern matches in each matching line (character offsets), to highlight them."""
    import numpy as np

    marked: list[str | None] = [None] * len(lines)
    regex, cost = compiled.span_regex()
    if regex is not None and by_re2.any():
        replacement = MARK_OPEN + "\\0" + MARK_CLOSE
        rewritten = re2_replace(hit_text, regex, replacement, cost, deadline)
        for i, line in enumerate(lines):
            if by_re2[i] and MARK_OPEN not in line and MARK_CLOSE not in line:
                marked[i] = rewritten[i]
    by_python = [i for i, text in enumerate(marked) if text is None]
    from_python = iter(python_spans(compiled.python, take(hit_text, np.asarray(by_python, dtype=np.int64)), deadline))
    out: list[list[list[int]]] = []
    for text in marked:
        if text is None:
            out.append(next(from_python))
            continue
        spans: list[list[int]] = []
        position, start = 0, -1
        for char in text:
            if char == MARK_OPEN:
                start = position
            elif char == MARK_CLOSE:
                if position > start >= 0:
                    spans.append([start, position])
                start = -1
            else:
                position += 1
        out.append(spans)
    return out


def _name_places(snap: _Snapshot, files: Sequence[int], matches: list[dict[str, Any]]) -> None:
    """Add its ``place`` (``page 2``) to each match in a converted document: only the files with
    a match are looked at, and only those holding a place marker are read line by line."""
    import pyarrow as pa
    import pyarrow.compute as pc

    distinct = list(dict.fromkeys(files))
    if not distinct:
        return
    texts = snap.content.take(pa.array(distinct, pa.int64()))
    marked = pc.match_substring_regex(texts, MARKER_PATTERN).to_pylist()
    places = {f: Places.of(texts[i].as_py()) for i, f in enumerate(distinct) if marked[i]}
    if not places:
        return
    for f, match in zip(files, matches, strict=False):
        place = places[f].at(match["line"]) if f in places else None
        if place is not None:
            match["place"] = place


def no_matches(*, count: bool = False, files_with_matches: bool = False, **_: Any) -> dict[str, Any]:
    """The result of a grep that had no file to search (a session's folder holds messages, not files)."""
    key = "counts" if count else "files" if files_with_matches else "matches"
    return {key: [], "count": 0, "match_count": 0, "files_scanned": 0}


def _result(
    snap: _Snapshot,
    selected: np.ndarray,
    found: Found,
    limit: int | None,
    *,
    count: bool,
    files_with_matches: bool,
) -> dict[str, Any]:
    import numpy as np

    total = len(found.file)
    kept = total if limit is None else min(total, limit)
    if kept < total:
        files_scanned = int(np.searchsorted(selected, found.file[kept - 1])) + 1
    else:
        files_scanned = len(selected)
    uris = snap.uri_list
    result: dict[str, Any]
    if count:
        counts: dict[int, int] = {}
        for f in found.file[:kept]:
            counts[f] = counts.get(f, 0) + 1
        result = {"counts": [{"uri": uris[f], "count": n} for f, n in counts.items()]}
    elif files_with_matches:
        result = {"files": [uris[f] for f in dict.fromkeys(found.file[:kept])]}
    elif found.spans is not None:
        result = {
            "matches": [
                {"uri": uris[f], "line": n, "content": t, "spans": s}
                for f, n, t, s in zip(found.file[:kept], found.number, found.text, found.spans, strict=False)
            ]
        }
    else:
        owners = [uris[f] for f in found.file[:kept]]
        result = {
            "matches": [
                {"uri": u, "line": n, "content": t} for u, n, t in zip(owners, found.number, found.text, strict=False)
            ]
        }
    if not count and not files_with_matches:
        _name_places(snap, found.file[:kept], result["matches"])
    # count is the length of the list returned (files with -l, files counted with -c), as glob's
    # is; match_count is the matching lines in every mode
    listed = next(iter(result.values()))
    result.update({"count": len(listed), "match_count": kept, "files_scanned": files_scanned})
    return result
