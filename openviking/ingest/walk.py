"""Walk a local folder the way git would see it: hidden files, ``.gitignore`` and symlinks.

``.gitignore`` files at any level apply to the paths below them (through pathspec's
``GitIgnoreSpec``); names starting with ``.`` are skipped; a symlink is followed only when
it points inside the folder being added, and a symlinked directory is never entered (it
could loop, or pull in a second copy of the tree).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from openviking.errors import InvalidArgumentError
from openviking.system.ostext import utf8_text

__all__ = ["SourceFile", "WalkResult", "decode_text", "looks_binary", "recorded_under", "unpack_nested", "walk"]

MAX_FILE_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file to import: where it is, and its path relative to the folder being added."""

    path: Path
    rel: str  # valid UTF-8 (``ostext.utf8_text``): URIs and messages are made from it
    size: int
    mtime: float
    # The path recorded instead of ``path``: a server adding an upload records the client's own,
    # an archive's file its path below the archive, a fetched page its URL.
    origin: PurePath | None = None

    @property
    def shown(self) -> PurePath:
        """The path the store records for the file."""
        return self.path if self.origin is None else self.origin

    @property
    def label(self) -> str:
        """The local path as the store records it (the ``source`` of its node)."""
        return utf8_text(str(self.shown))


@dataclass(slots=True)
class WalkResult:
    """Files to import, and what was passed over and why."""

    files: list[SourceFile] = field(default_factory=list)
    skipped: list[tuple[str, str, str]] = field(default_factory=list)  # (path, why, its code)


class _Ignores:
    """The ``.gitignore`` rules that apply at one point of the walk."""

    def __init__(self, rules: tuple[tuple[str, object], ...] = ()) -> None:
        self.rules = rules

    def extended(self, directory: Path, rel_dir: str) -> _Ignores:
        ignore_file = directory / ".gitignore"
        try:  # is_file() too: it raises on a folder the user may not look into (EACCES)
            if not ignore_file.is_file():
                return self
            lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return self
        import pathspec

        spec = pathspec.GitIgnoreSpec.from_lines(lines)
        return _Ignores((*self.rules, (rel_dir, spec)))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        # As git does: the deepest .gitignore with a matching pattern decides, so a nested
        # `!keep.log` re-includes what the root's `*.log` left out.
        for base, spec in reversed(self.rules):
            local = rel[len(base) + 1 :] if base else rel
            verdict = spec.check_file(local + "/" if is_dir else local).include  # type: ignore[attr-defined]
            if verdict is not None:
                return bool(verdict)
        return False


def walk(
    root: Path, include: Sequence[str] = (), exclude: Sequence[str] = (), *, store: Path | None = None
) -> WalkResult:
    """Everything under ``root`` (a folder, or a single file) that should be imported; never
    the files of ``store``, the store being written (``add-resource .`` run where it lives)."""
    include_spec = _user_spec(include, "--include")
    exclude_spec = _user_spec(exclude, "--exclude")
    result = WalkResult()
    if root.is_file():
        stat = root.stat()
        if stat.st_size > MAX_FILE_BYTES:
            result.skipped.append((utf8_text(root.name), _TOO_LARGE, "TOO_LARGE"))
        else:
            result.files.append(SourceFile(root, utf8_text(root.name), stat.st_size, stat.st_mtime))
        return result
    real_root = root.resolve()
    skip = None
    if store is not None:
        with contextlib.suppress(OSError):  # no store yet: nothing of it to leave out
            found = store.stat()
            skip = (found.st_dev, found.st_ino)
    _walk_dir(root, real_root, "", _Ignores(), include_spec, exclude_spec, result, skip)
    return result


def recorded_under(walked: WalkResult, root: Path, origin: PurePath) -> WalkResult:
    """``walked``, a walk of ``root``, with every file recorded below ``origin`` instead: the
    same files uploaded again then match what the first upload stored."""
    files = [dataclasses.replace(f, origin=origin / f.shown.relative_to(root)) for f in walked.files]
    return WalkResult(files, list(walked.skipped))


MAX_ARCHIVE_DEPTH = 3  # an archive in an archive in an archive is unpacked; one more level is not


def unpack_nested(walked: WalkResult, scratch: Path, max_bytes: int, depth: int = 1) -> WalkResult:
    """``walked`` with each archive among its files (``.zip``, ``.tar``, ``.tar.gz``, ``.tgz``)
    replaced by what it holds, unpacked safely (``archives.unpack``) into ``scratch``, up to
    ``MAX_ARCHIVE_DEPTH`` archives deep and ``max_bytes`` unpacked in all; a file inside is
    named below the archive (``docs/data.zip/notes.md``) and recorded below the archive's path.
    An archive that cannot be unpacked (unsafe, too big, too deep) is skipped as ``ARCHIVE``
    with the reason."""
    from openviking.errors import OpenVikingError
    from openviking.origins.archives import archive_suffix, is_archive, unpack

    result = WalkResult(skipped=list(walked.skipped))
    budget = max_bytes
    for item in walked.files:
        suffix = archive_suffix(item.path.name)
        if suffix is None or not is_archive(item.path):
            result.files.append(item)
            continue
        if depth > MAX_ARCHIVE_DEPTH:
            result.skipped.append((item.rel, f"an archive nested more than {MAX_ARCHIVE_DEPTH} deep", "ARCHIVE"))
            continue
        into = scratch / str(depth) / str(len(result.files) + len(result.skipped))
        into.parent.mkdir(parents=True, exist_ok=True)
        try:
            unpack(item.path, into, budget, zipped=suffix == ".zip", what=f"The archive {item.rel}")
        except OpenVikingError as exc:
            result.skipped.append((item.rel, f"an archive that cannot be unpacked: {exc.message}", "ARCHIVE"))
            continue
        inner = unpack_nested(walk(into), scratch, budget, depth + 1)
        budget -= sum(f.size for f in inner.files)
        for found in inner.files:
            rel = found.shown.relative_to(into).as_posix()
            origin = item.shown / rel
            result.files.append(SourceFile(found.path, f"{item.rel}/{rel}", found.size, found.mtime, origin))
        result.skipped.extend((f"{item.rel}/{rel}", why, code) for rel, why, code in inner.skipped)
    return result


def _user_spec(patterns: Sequence[str], flag: str) -> object | None:
    """The gitignore-style patterns a user gave; one that can never match (``[``) is an error,
    not a silent empty result."""
    if not patterns:
        return None
    import pathspec

    for line in patterns:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            valid = pathspec.GitIgnoreSpec.from_lines([line]).patterns[0].regex is not None
        except ValueError:  # pathspec's GitIgnorePatternError, e.g. a trailing backslash
            valid = False
        if not valid:
            raise InvalidArgumentError(
                f"Invalid {flag} pattern: {line!r}",
                hint="Patterns follow .gitignore rules, e.g. '*.md', 'docs/**', '!keep.md'",
                details={"pattern": line, "option": flag},
            )
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _same_file(entry: os.DirEntry[str], store: tuple[int, int]) -> bool:
    """True when ``entry`` is the folder of the store being written (device, inode)."""
    try:
        return entry.inode() == store[1] and entry.stat().st_dev == store[0]
    except OSError:
        return False


def _walk_dir(
    directory: Path,
    real_root: Path,
    rel_dir: str,
    ignores: _Ignores,
    include_spec: object,
    exclude_spec: object,
    result: WalkResult,
    store: tuple[int, int] | None = None,
) -> None:
    ignores = ignores.extended(directory, rel_dir)
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        result.skipped.append((rel_dir or ".", f"cannot list: {exc.strerror}", "UNREADABLE"))
        return
    for entry in entries:
        name = entry.name
        rel = f"{rel_dir}/{utf8_text(name)}" if rel_dir else utf8_text(name)
        if name.startswith("."):
            if name.lower().endswith(_DOCUMENT_SUFFIXES) and _is_file(entry):
                # A document named like one (..md, .notes.md) is said to be skipped; dotfiles
                # of tools (.gitignore, .env) and hidden folders pass unsaid, as git's do.
                result.skipped.append((rel, "hidden: its name starts with a dot", "HIDDEN"))
            continue
        try:
            is_link = entry.is_symlink()
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if is_dir:
            if ignores.ignored(rel, True) or (exclude_spec and exclude_spec.match_file(rel + "/")):  # type: ignore[attr-defined]
                continue
            if store is not None and _same_file(entry, store):
                result.skipped.append((rel, "the store being written", "STORE"))
                continue
            _walk_dir(Path(entry.path), real_root, rel, ignores, include_spec, exclude_spec, result, store)
            continue
        if ignores.ignored(rel, False) or (exclude_spec and exclude_spec.match_file(rel)):  # type: ignore[attr-defined]
            continue
        if include_spec and not include_spec.match_file(rel):  # type: ignore[attr-defined]
            continue
        path = Path(entry.path)
        if is_link:
            try:
                target = path.resolve()
            except RuntimeError:  # Python 3.11's report of a loop
                result.skipped.append((rel, "symlink loop", "SYMLINK"))
                continue
            except OSError as exc:
                result.skipped.append((rel, f"cannot resolve the symlink: {exc.strerror or exc}", "SYMLINK"))
                continue
            try:
                exists, target_is_dir = target.exists(), target.is_dir()
            except OSError as exc:  # a target the user may not look at
                result.skipped.append((rel, f"cannot resolve the symlink: {exc.strerror or exc}", "SYMLINK"))
                continue
            if not exists:
                result.skipped.append((rel, "broken symlink", "SYMLINK"))
                continue
            if target_is_dir:
                result.skipped.append((rel, "symlinked directory (not followed)", "SYMLINK"))
                continue
            if not target.is_relative_to(real_root):
                result.skipped.append((rel, "symlink points outside the folder (not followed)", "SYMLINK"))
                continue
        try:
            stat = path.stat()
        except OSError as exc:
            result.skipped.append((rel, f"cannot read: {exc.strerror}", "UNREADABLE"))
            continue
        if not _is_regular(stat.st_mode):
            result.skipped.append((rel, "not a regular file", "NOT_A_FILE"))
            continue
        if stat.st_size > MAX_FILE_BYTES:
            result.skipped.append((rel, _TOO_LARGE, "TOO_LARGE"))
            continue
        result.files.append(SourceFile(path, rel, stat.st_size, stat.st_mtime))


_DOCUMENT_SUFFIXES = (".md", ".markdown", ".mdx", ".txt", ".rst")
_TOO_LARGE = f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB"

# UTF-16 text is full of NUL bytes; its byte-order mark says it is text all the same.
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def looks_binary(head: bytes) -> bool:
    """True for content that is not text: a NUL byte in its first bytes, unless UTF-16 with a BOM."""
    return b"\x00" in head and not head.startswith(_UTF16_BOMS)


def decode_text(data: bytes) -> tuple[str, str | None]:
    """The text of ``data`` and the legacy encoding it was read in (None: UTF-8, or UTF-16 with
    its byte-order mark; a byte-order mark is an encoding detail, not text: ripgrep and editors
    drop it too). Bytes that are not UTF-8 are read in the encoding charset-normalizer finds
    (Shift-JIS, cp1252...) when it finds one that reads them all; otherwise the bytes that are
    not UTF-8 become U+FFFD, and the encoding is None."""
    if data.startswith(_UTF16_BOMS):
        return data.decode("utf-16", errors="replace"), None
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        pass
    encoding = _legacy_encoding(data[:MAX_SNIFFED_BYTES])
    if encoding is not None:
        try:
            return data.decode(encoding), encoding
        except (UnicodeDecodeError, LookupError):  # the sample's encoding does not read the rest
            pass
    return data.decode("utf-8-sig", errors="replace"), None


def _legacy_encoding(sample: bytes) -> str | None:
    """The encoding charset-normalizer reads ``sample`` in with the least chaos; among several
    that read it equally well (a short text of accented letters reads alike in most Western
    code pages), Windows' Western one, the most common."""
    from charset_normalizer import from_bytes

    matches = list(from_bytes(sample))
    if not matches:
        return None
    least = min(match.chaos for match in matches)
    alike = [match.encoding for match in matches if match.chaos <= least + 0.01]
    if "cp1252" in alike or ("latin_1" in alike and _reads(sample, "cp1252")):
        return "cp1252"
    return None if alike[0] in ("utf_8", "utf_8_sig") else alike[0]


def _reads(sample: bytes, encoding: str) -> bool:
    try:
        sample.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True


MAX_SNIFFED_BYTES = 256 * 1024  # what charset-normalizer reads of a file to name its encoding


def _is_regular(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)
