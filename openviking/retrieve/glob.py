"""``glob``: the files and directories below a URI whose path matches a glob pattern.

The pattern language is Rust globset's with ``literal_separator`` (what ripgrep and upstream
OpenViking use), matched against the whole path relative to the URI:

* ``*`` matches any run of characters except ``/``; ``?`` one character except ``/``;
* ``**`` as a whole path component matches zero or more directories (``**/x``, ``a/**/x``,
  ``a/**``); elsewhere it is ``*``; ``**`` alone matches every path;
* ``[abc]``, ``[a-z]``, ``[!a]`` / ``[^a]`` match one character, never ``/`` (globset lets a
  class match ``/``; we do not: nothing in a pattern but ``/`` and ``**`` crosses a separator);
  a ``]`` first in a class is literal, and so is a ``-`` first or last;
* ``{a,b}`` is alternation and nests; an empty alternative is dropped (``foo{,.txt}`` does not
  match ``foo``); a ``,`` outside braces is literal; ``\\`` escapes the next character;
* matching is case-sensitive, and ``*`` matches a leading dot too.

Before parsing, empty and ``.`` path segments are removed (``a/./b.md`` is ``a/b.md``); a
pattern of ``.`` segments only is an error, one of ``/`` only matches nothing. Characters are
Unicode code points (globset matches bytes: its ``?`` does not match ``é``).

Hidden files (a name starting with ``.``) are left out; directories match like files, hidden
ones included. Results are ordered by path segments (code point order), cut to ``node_limit``
(0 or None: all). The match runs as one RE2 pattern over the store's ``uri`` column, under a
deadline like grep's (:mod:`.bounded`). A pattern is at most :data:`MAX_GLOB_CHARS` long, with
braces nested at most :data:`MAX_BRACE_DEPTH` deep.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openviking.errors import FailedPreconditionError, InvalidArgumentError, NotFoundError
from openviking.store.view import VikingFS
from openviking.values.arguments import describe, optional_limit
from openviking.values.uri import SCHEME, VikingURI, fixed_descendants, parse, shell_word

from .arrays import to_bool
from .bounded import Deadline, re2_mask
from .cache import CACHE
from .charset import complement, minus_points, normalize, re2_escape, set_re2

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from openviking.store.lance import LanceStore

__all__ = ["GlobPattern", "compile_glob", "glob", "glob_match"]

HINT = "Quote the pattern so the shell leaves it alone; match a literal [, ], {, } or , with a backslash before it"
MAX_GLOB_CHARS = 10_000
MAX_BRACE_DEPTH = 32


# ---------------------------------------------------------------------------------------------
# the pattern


@dataclass(frozen=True)
class GlobPattern:
    """A compiled glob: ``regex`` (RE2, anchored) matches a relative path, or None: nothing matches."""

    pattern: str
    normalized: str
    regex: str | None

    def full(self, base: VikingURI) -> str | None:
        """RE2 text matching the URIs below ``base`` whose relative path matches."""
        if self.regex is None:
            return None
        prefix = SCHEME if base.is_root else str(base) + "/"
        return "(?s)^" + re2_escape(prefix) + "(?:" + self.regex + ")$"


def compile_glob(pattern: str) -> GlobPattern:
    """Validate and translate a glob pattern.

    Raises:
        InvalidArgumentError: empty, only ``.`` segments, or malformed (unclosed ``[`` or ``{``,
            a ``}`` with no ``{``, a reversed range, a trailing ``\\``).
    """
    if not isinstance(pattern, str):
        raise InvalidArgumentError(f"glob pattern must be a string (got {type(pattern).__name__})")
    if len(pattern) > MAX_GLOB_CHARS:
        raise InvalidArgumentError(
            f"Glob pattern is {len(pattern):,} characters long, more than the {MAX_GLOB_CHARS:,} glob takes",
            details={"length": len(pattern), "limit": MAX_GLOB_CHARS},
        )
    if not pattern:
        raise InvalidArgumentError(
            "Glob pattern must not be empty",
            hint='Example: openviking glob "**/*.md"',
            details={"pattern": pattern},
        )
    segments = _segments(pattern)
    kept = [s for s in segments if s not in ("", ".")]
    if not kept:
        if any(s == "." for s in segments):
            raise InvalidArgumentError(
                f"Glob pattern {pattern!r} names no path: '.' segments are removed and nothing is left",
                hint='Match everything below the URI with "**", or its children with "*"',
                details={"pattern": pattern},
            )
        return GlobPattern(pattern, "", None)  # only separators: valid, matches nothing
    normalized = "/".join(kept)
    tokens = _Parser(pattern, normalized).parse()
    if len(tokens) == 1 and tokens[0] == ("recursive_prefix",):
        return GlobPattern(pattern, normalized, ".*")
    return GlobPattern(pattern, normalized, _regex(tokens))


def glob_match(pattern: str, rel_path: str) -> bool:
    """Whether ``rel_path`` (``a/b/c.md``) matches ``pattern`` (for tests and callers without a store)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    compiled = compile_glob(pattern)
    if compiled.regex is None:
        return False
    path = "/".join(part for part in rel_path.split("/") if part not in ("", "."))
    regex = "(?s)^(?:" + compiled.regex + ")$"
    return bool(pc.match_substring_regex(pa.array([path], pa.large_string()), regex)[0].as_py())


def _segments(pattern: str) -> list[str]:
    """Split at the ``/`` that are outside classes and braces (an escaped character stays put)."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            current.append(pattern[i : i + 2])
            i += 2
            continue
        if char == "[":
            end = _class_end(pattern, i)
            if end is None:  # unclosed: the parser reports it
                current.append(pattern[i:])
                break
            current.append(pattern[i : end + 1])
            i = end + 1
            continue
        if char == "{":
            depth += 1
        elif char == "}" and depth:
            depth -= 1
        if char == "/" and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    parts.append("".join(current))
    return parts


def _class_end(pattern: str, start: int) -> int | None:
    """Index of the ``]`` closing the class opened at ``start`` (globset's rules), or None."""
    i = start + 1
    if i < len(pattern) and pattern[i] in "!^":
        i += 1
    first = True
    while i < len(pattern):
        if pattern[i] == "]" and not first:
            return i
        first = False
        i += 1
    return None


class _Parser:
    """A port of globset's parser (``crates/globset/src/glob.rs``), with its tokens as tuples.

    Tokens: ``("literal", char)``, ``("any",)``, ``("zero_or_more",)``,
    ``("recursive_prefix",)``, ``("recursive_suffix",)``, ``("recursive_zero_or_more",)``,
    ``("class", negated, ((low, high), ...))``, ``("alternates", (tokens, ...))``.
    """

    def __init__(self, original: str, pattern: str) -> None:
        self.original = original
        self.chars = pattern
        self.pos = 0
        self.prev: str | None = None
        self.cur: str | None = None
        self.stack: list[int] = []
        self.branches: list[list[tuple[Any, ...]]] = [[]]

    def error(self, reason: str) -> InvalidArgumentError:
        return InvalidArgumentError(
            f"Invalid glob pattern {self.original!r}: {reason}", hint=HINT, details={"pattern": self.original}
        )

    def bump(self) -> str | None:
        self.prev = self.cur
        self.cur = self.chars[self.pos] if self.pos < len(self.chars) else None
        if self.cur is not None:
            self.pos += 1
        return self.cur

    def peek(self) -> str | None:
        return self.chars[self.pos] if self.pos < len(self.chars) else None

    def parse(self) -> list[tuple[Any, ...]]:
        while (char := self.bump()) is not None:
            if char == "?":
                self.push(("any",))
            elif char == "*":
                self.star()
            elif char == "[":
                self.char_class()
            elif char == "{":
                if len(self.stack) >= MAX_BRACE_DEPTH:
                    raise self.error(f"braces are nested more than {MAX_BRACE_DEPTH} deep")
                self.stack.append(len(self.branches))
                self.branches.append([])
            elif char == "}":
                if not self.stack:
                    raise self.error("a '}' without its '{'")
                start = self.stack.pop()
                alternates = tuple(tuple(b) for b in self.branches[start:])
                del self.branches[start:]
                self.push(("alternates", alternates))
            elif char == ",":
                if self.stack:
                    self.branches.append([])
                else:
                    self.push(("literal", ","))
            elif char == "\\":
                escaped = self.bump()
                if escaped is None:
                    raise self.error("a '\\' at the end escapes nothing")
                self.push(("literal", escaped))
            else:
                self.push(("literal", char))
        if len(self.branches) > 1:
            raise self.error("a '{' without its '}'")
        return self.branches[0]

    def push(self, token: tuple[Any, ...]) -> None:
        self.branches[-1].append(token)

    def star(self) -> None:
        prev = self.prev
        if self.peek() != "*":
            self.push(("zero_or_more",))
            return
        self.bump()
        if not self.branches[-1]:
            if self.peek() not in (None, "/"):
                self.push(("zero_or_more",))
                self.push(("zero_or_more",))
            else:
                self.push(("recursive_prefix",))
                self.bump()
            return
        if prev != "/" and (len(self.branches) <= 1 or prev not in (",", "{")):
            self.push(("zero_or_more",))
            self.push(("zero_or_more",))
            return
        following = self.peek()
        if following is None:
            self.bump()
            is_suffix = True
        elif following in (",", "}") and len(self.branches) >= 2:
            is_suffix = True
        elif following == "/":
            self.bump()
            is_suffix = False
        else:
            self.push(("zero_or_more",))
            self.push(("zero_or_more",))
            return
        last = self.branches[-1].pop()
        if last[0] in ("recursive_prefix", "recursive_suffix"):
            self.push(last)
        elif is_suffix:
            self.push(("recursive_suffix",))
        else:
            self.push(("recursive_zero_or_more",))

    def char_class(self) -> None:
        ranges: list[tuple[int, int]] = []
        negated = self.peek() in ("!", "^")
        if negated:
            self.bump()
        first = True
        in_range = False
        while True:
            char = self.bump()
            if char is None:
                raise self.error("a '[' without its ']'")
            if char == "]":
                if first:
                    ranges.append((ord("]"), ord("]")))
                else:
                    break
            elif char == "-":
                if first:
                    ranges.append((ord("-"), ord("-")))
                elif in_range:
                    self._extend(ranges, "-")
                    in_range = False
                else:
                    in_range = True
            else:
                if in_range:
                    self._extend(ranges, char)
                else:
                    ranges.append((ord(char), ord(char)))
                in_range = False
            first = False
        if in_range:
            ranges.append((ord("-"), ord("-")))
        self.push(("class", negated, tuple(ranges)))

    def _extend(self, ranges: list[tuple[int, int]], char: str) -> None:
        low = ranges[-1][0]
        if ord(char) < low:
            raise self.error(f"the range {chr(low)}-{char} is reversed")
        ranges[-1] = (low, ord(char))


def _regex(tokens: list[tuple[Any, ...]] | tuple[tuple[Any, ...], ...]) -> str:
    """RE2 text for a token list (globset's ``tokens_to_regex``, code points instead of bytes)."""
    out: list[str] = []
    slash = ord("/")
    for token in tokens:
        kind = token[0]
        if kind == "literal":
            out.append(re2_escape(token[1]))
        elif kind == "any":
            out.append("[^/]")
        elif kind == "zero_or_more":
            out.append("[^/]*")
        elif kind == "recursive_prefix":
            out.append("(?:/?|.*/)")
        elif kind == "recursive_suffix":
            out.append("/.*")
        elif kind == "recursive_zero_or_more":
            out.append("(?:/|/.*/)")
        elif kind == "class":
            ranges = normalize(token[2])
            chosen = complement(ranges) if token[1] else ranges
            out.append(set_re2(minus_points(chosen, [slash])))
        else:  # alternates
            parts = [_regex(alt) for alt in token[1]]
            parts = [p for p in parts if p]
            if parts:
                out.append("(?:" + "|".join(parts) + ")")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# the listing, cached per store version


@dataclass
class _Listing:
    """The URIs below ``base`` (as ``user`` sees them), with which are directories and hidden files."""

    base: str
    user: str
    uris: pa.Array
    is_dir: np.ndarray
    hidden_file: np.ndarray


def _listing(store: LanceStore, base: VikingURI, user: str) -> _Listing:
    """The listing below ``base``: from the cache while the store is unchanged, else read."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    version = store.nodes_version()
    found = CACHE.find(
        store.cache_key, version, _Listing, lambda listing: (listing.base, listing.user) == (str(base), user)
    )
    if found is not None:
        return found
    table = store.scan_nodes_below(base, columns=["uri", "is_dir", "name"])
    uris = table.column("uri").combine_chunks()
    is_dir = to_bool(table.column("is_dir"))
    hidden = to_bool(pc.starts_with(table.column("name"), ".")) & ~is_dir
    # The layout's folders (a user's memories, skills, sessions...) match whether stored or not, as ls lists them.
    layout = pa.array([str(folder) for folder in fixed_descendants(base, user)], uris.type)
    layout = layout.filter(pc.invert(pc.is_in(layout, value_set=uris)))
    if len(layout):
        uris = pa.concat_arrays([uris, layout])
        is_dir = np.concatenate([is_dir, np.ones(len(layout), dtype=bool)])
        hidden = np.concatenate([hidden, np.zeros(len(layout), dtype=bool)])
    listing = _Listing(str(base), user, uris, is_dir, hidden)
    CACHE.put(store.cache_key, version, listing, uris.nbytes + is_dir.nbytes + hidden.nbytes)
    return listing


# ---------------------------------------------------------------------------------------------
# glob


def glob(
    store: LanceStore,
    pattern: str,
    uri: str = "viking://",
    *,
    user: str = "default",
    node_limit: int | None = None,
    extra_folders: Sequence[str] = (),
) -> dict[str, Any]:
    """URIs below ``uri`` whose relative path matches ``pattern``: ``{"matches": [...], "count": N}``.

    ``extra_folders`` are folders that are not nodes (the user's sessions), matched like them.

    Raises:
        InvalidArgumentError: a bad pattern or a negative ``node_limit``.
        InvalidURIError, PermissionDeniedError: a malformed ``uri``.
        NotFoundError: nothing is stored at ``uri`` (the layout's fixed folders are empty, not missing).
        FailedPreconditionError: ``uri`` is a file.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    limit = optional_limit(node_limit, "node_limit")
    compiled = compile_glob(pattern)
    base = parse(uri, user=user, field="uri")
    if not base.is_root:
        try:
            node = VikingFS(store).node(base, columns=["uri", "is_dir"])
        except NotFoundError as exc:
            raise NotFoundError(
                f"Directory not found: {base}",
                hint=f"List what exists with: openviking ls {shell_word(base.parent or 'viking://')}",
                details={"uri": str(base)},
            ) from exc
        if not node["is_dir"]:
            raise FailedPreconditionError(
                f"Not a directory: {base}",
                hint=f"glob matches paths below a directory, e.g. uri='{base.parent or 'viking://'}'",
                details={"uri": str(base)},
            )
    regex = compiled.full(base)
    if regex is None:
        return {"matches": [], "count": 0}
    _check_re2(compiled, regex)
    listing = _listing(store, base, user)
    deadline = Deadline()
    cost = max(1, len(compiled.normalized))  # a token of the pattern is one character of it at least
    keep = re2_mask(listing.uris, regex, cost, deadline) & ~listing.hidden_file
    matched = listing.uris.take(pa.array(np.flatnonzero(keep), pa.int64()))
    if extra_folders:
        extra = pa.array(list(extra_folders), matched.type)
        chosen = pa.array(re2_mask(extra, regex, cost, deadline))
        matched = pa.concat_arrays([matched, extra.filter(chosen)])
    # path-segment order: "/" sorts before every character of a name
    order = pc.sort_indices(pc.replace_substring(matched, "/", "\x00"))
    if limit is not None:
        order = order.slice(0, limit)
    matches = matched.take(order).to_pylist()
    return {"matches": matches, "count": len(matches)}


def _check_re2(compiled: GlobPattern, regex: str) -> None:
    """Raises:
    InvalidArgumentError: RE2 cannot compile the pattern (too big for it)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        pc.match_substring_regex(pa.array([""], pa.large_string()), regex)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InvalidArgumentError(
            f"Glob pattern {describe(compiled.pattern)} is too big to run: {exc}",
            hint=HINT,
            details={"pattern": describe(compiled.pattern)},
        ) from exc
