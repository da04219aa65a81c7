"""Unpacking a zip or tar archive safely, whatever sent it (an upload, a local add of a
``.zip``/``.tar.gz``).

Only regular files and folders are ever made on disk. A symbolic or hard link is unpacked as
a copy of the file it names, when that file is a member of the same archive: where a link
leads is worked out over the archive's own list of members, never on disk, so no chain of
links, however long its names, can lead a write or a read out of the folder. The archive is
refused whole, before anything is written, when a member has an absolute path or a ``..``
segment, lies below a link, is a link to a folder, to nothing in the archive or out of it, is
encrypted or a device, or when the archive holds too many members or unpacks (copies of linked
files included) to more than a cap. Each file is then made new (``O_EXCL``) inside folders
opened one by one without following links (``O_NOFOLLOW``), and its bytes are counted as they
are written, since a zip's sizes are the sender's word.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tarfile
import zipfile
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from openviking.errors import InvalidArgumentError, OpenVikingError

__all__ = ["ARCHIVE_SUFFIXES", "MAX_MEMBERS", "TooLargeError", "archive_suffix", "is_archive", "unpack"]

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
MAX_MEMBERS = 100_000
MAX_LINK_HOPS = 40  # as the kernel's own limit on links followed in one path
_MAX_LINK_TARGET = 4096  # a zip keeps a link's target as the member's bytes
_CHUNK = 1024 * 1024
_LINK_HINT = "Make the archive with links followed (tar -h, or zip without -y), or leave the links out"
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class TooLargeError(InvalidArgumentError):
    """More bytes than a cap allows: INVALID_ARGUMENT, answered 413 (``http_status``)."""

    http_status = 413

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message, details={"limit_bytes": limit})


def archive_suffix(name: str) -> str | None:
    """The archive suffix ``name`` ends with (``.tar.gz``...), or None."""
    lower = name.lower()
    return next((suffix for suffix in ARCHIVE_SUFFIXES if lower.endswith(suffix)), None)


def is_archive(path: Path) -> bool:
    """True for a file named as an archive whose bytes are one (a zip, or a tar, compressed or
    not); a ``.docx`` is a zip too, but not named as an archive."""
    suffix = archive_suffix(path.name)
    if suffix is None or not path.is_file():
        return False
    if suffix == ".zip":
        return zipfile.is_zipfile(path)
    try:
        return tarfile.is_tarfile(path)
    except OSError:
        return False


def unpack(archive: Path, into: Path, max_bytes: int, *, zipped: bool, what: str = "The uploaded archive") -> None:
    """Unpack a zip or tar archive into the new folder ``into``, refusing it whole when a member
    is unsafe (``what`` names the archive in messages, which name no path of this machine).

    Raises:
        InvalidArgumentError: not an archive, an unsafe member, too many members, or too big unpacked.
    """
    census = _Census(max_bytes, what)
    try:
        with _zip_members(archive) if zipped else _tar_members(archive) as (members, read):
            planned = _Plan(census, [census.admitted(member) for member in members])
            _write(planned, into, read, census)
    except OpenVikingError:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError) as exc:
        raise _unreadable(what, str(exc)) from exc
    except (OSError, ValueError) as exc:  # said without the file name: it is a path of this machine
        raise _unreadable(what, getattr(exc, "strerror", None) or type(exc).__name__) from exc


def _unreadable(what: str, reason: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"{what} cannot be unpacked: {reason}", hint="Send a folder as a .zip, .tar or .tar.gz, a single file as it is"
    )


@dataclass(frozen=True, slots=True)
class _Member:
    """One member of an archive, whatever its kind: its name split at ``/``, what it is
    (``file``, ``folder``, ``symlink``, ``hardlink`` or ``other``), its size, a link's target,
    and the archive's own record of it (to read its bytes)."""

    name: str
    parts: tuple[str, ...]
    kind: str
    size: int
    link: str
    record: Any
    mtime: float | None = None
    refusal: str = ""  # why it may not be unpacked whatever else the archive holds


Reader = Callable[[Any], IO[bytes]]


@contextlib.contextmanager
def _tar_members(archive: Path) -> Iterator[tuple[list[_Member], Reader]]:
    with tarfile.open(archive, "r:*") as tar:
        members = [_tar_member(info) for info in tar]

        def read(record: Any) -> IO[bytes]:
            data = tar.extractfile(record)
            if data is None:
                raise tarfile.ReadError(f"no data for {record.name!r}")
            return data

        yield members, read


def _tar_member(info: tarfile.TarInfo) -> _Member:
    if info.isfile():
        kind = "file"
    elif info.isdir():
        kind = "folder"
    elif info.issym():
        kind = "symlink"
    elif info.islnk():
        kind = "hardlink"
    else:
        kind = "other"
    size = info.size if kind == "file" else 0
    refusal = "is not a file, a folder or a link" if kind == "other" else ""
    return _Member(info.name, _parts(info.name), kind, size, info.linkname, info, info.mtime, refusal)


@contextlib.contextmanager
def _zip_members(archive: Path) -> Iterator[tuple[list[_Member], Reader]]:
    with zipfile.ZipFile(archive) as zipped:
        yield [_zip_member(zipped, info) for info in zipped.infolist()], zipped.open


def _zip_member(zipped: zipfile.ZipFile, info: zipfile.ZipInfo) -> _Member:
    """A zip member; a zip made on Windows has no modes, so its kind is told by its name."""
    mode = info.external_attr >> 16
    name, parts = info.filename, _parts(info.filename)
    if info.flag_bits & 0x1:
        return _Member(name, parts, "other", 0, "", info, refusal="is encrypted")
    if stat.S_ISLNK(mode):
        with zipped.open(info) as data:
            target = data.read(_MAX_LINK_TARGET + 1)
        if len(target) > _MAX_LINK_TARGET:
            return _Member(name, parts, "other", 0, "", info, refusal="is a link whose target is too long")
        return _Member(name, parts, "symlink", 0, target.decode("utf-8", "replace"), info)
    if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return _Member(name, parts, "other", 0, "", info, refusal="is not a file or a folder")
    return _Member(name, parts, "folder" if info.is_dir() else "file", info.file_size, "", info)


def _parts(name: str) -> tuple[str, ...]:
    return tuple(part for part in name.split("/") if part not in ("", "."))


class _Census:
    """The checks every member passes on its own, and the caps on members and on bytes."""

    def __init__(self, max_bytes: int, what: str) -> None:
        self.max_bytes = max_bytes
        self.what = what
        self.members = 0
        self.total = 0

    def admitted(self, member: _Member) -> _Member:
        """``member`` once it passes: a safe name, a kind that may be unpacked, within the caps.

        Raises:
            InvalidArgumentError: too many members, an unsafe one, or more bytes than the cap.
        """
        self.members += 1
        if self.members > MAX_MEMBERS:
            raise InvalidArgumentError(f"{self.what} holds more than {MAX_MEMBERS} entries")
        if not _inside(member.name) or ".." in member.name.replace("\\", "/").split("/"):
            self.refuse(member, "leaves the folder (an absolute path or '..')")
        if member.refusal:
            self.refuse(member, member.refusal)
        self.counted(member.size)
        return member

    def refuse(self, member: _Member, reason: str, hint: str | None = None) -> None:
        """Raises:
        InvalidArgumentError: always, naming ``member`` and ``reason``."""
        raise InvalidArgumentError(
            f"{self.what} is refused: {member.name!r} {reason}",
            hint=hint,
            details={"member": member.name, "reason": reason},
        )

    def counted(self, size: int) -> None:
        """``size`` more bytes unpacked.

        Raises:
            TooLargeError: more than the cap in all.
        """
        self.total += size
        if self.total > self.max_bytes:
            raise TooLargeError(f"{self.what} unpacks to more than {self.max_bytes} bytes", self.max_bytes)


class _Plan:
    """What an archive unpacks to, worked out over its list of members alone: the folders, and
    each file with the member whose bytes it gets (itself, or the file a link names).

    Raises (on construction):
        InvalidArgumentError: a member below a link or a file, or a link that names no file of
            the archive.
        TooLargeError: the files, copies of linked ones included, exceed the cap.
    """

    def __init__(self, census: _Census, members: list[_Member]) -> None:
        self.census = census
        self.named: dict[tuple[str, ...], _Member] = {}  # the last member of each name wins, as in tar
        self.folders: set[tuple[str, ...]] = {()}
        for member in members:
            self.named[member.parts] = member
            self.folders.update(member.parts[:depth] for depth in range(len(member.parts)))
            if member.kind == "folder":
                self.folders.add(member.parts)
        self.files: list[tuple[_Member, _Member]] = []
        for member in members:
            if self.named[member.parts] is not member or not member.parts:
                continue
            self._check_place(member)
            if member.kind == "file":
                self.files.append((member, member))
            elif member.kind != "folder":
                content = self._linked(member)
                census.counted(content.size)
                self.files.append((member, content))

    def _check_place(self, member: _Member) -> None:
        for depth in range(1, len(member.parts)):
            above = self.named.get(member.parts[:depth])
            if above is not None and above.kind != "folder":
                what = "a link" if above.kind in ("symlink", "hardlink") else "a file"
                self.census.refuse(member, f"lies below {what} ({above.name!r})", _LINK_HINT)
        if member.kind in ("symlink", "hardlink") and member.parts in self.folders:
            self.census.refuse(member, "is a link that other members lie below", _LINK_HINT)
        if member.kind != "folder" and member.parts in self.folders:
            self.census.refuse(member, "is both a file and a folder")

    def _linked(self, link: _Member) -> _Member:
        """The file member a link names (a symlink from its own folder, a hard link from the top).

        Raises:
            InvalidArgumentError: it leads out of the folder, to a folder, to nothing, or in a loop.
        """
        found = self._resolved(link.parts[:-1] if link.kind == "symlink" else (), link.link, 0)
        if isinstance(found, str):
            self.census.refuse(link, f"is a link {found}", _LINK_HINT)
        assert isinstance(found, _Member)
        return found

    def _resolved(self, start: tuple[str, ...], target: str, hops: int) -> _Member | str:
        """Follow ``target`` from the folder ``start`` through the archive's members, as the
        kernel would through the unpacked tree: the file member it ends on, or why none."""
        if not target or target.startswith(("/", "\\")) or (len(target) > 1 and target[1] == ":"):
            return "leading out of the folder" if target else "to nothing"
        done = list(start)
        pending = deque(target.split("/"))
        while pending:
            part = pending.popleft()
            if part in ("", "."):
                continue
            if part == "..":
                if not done:
                    return "leading out of the folder"
                done.pop()
                continue
            done.append(part)
            member = self.named.get(tuple(done))
            if member is None or member.kind == "folder":
                if tuple(done) in self.folders:
                    continue
                return "to nothing in the archive"
            hops += 1
            if hops > MAX_LINK_HOPS:
                return "in a loop (or a chain of more than 40 links)"
            if member.kind == "symlink":
                if member.link.startswith(("/", "\\")):
                    return "leading out of the folder"
                done.pop()
                pending.extendleft(reversed(member.link.split("/")))
                continue
            if any(rest not in ("", ".") for rest in pending):
                return "to nothing in the archive"  # a file taken for a folder
            if member.kind == "hardlink":
                return self._resolved((), member.link, hops)
            return member if member.kind == "file" else "to nothing in the archive"
        return "to a folder (a link may name a file only)"


def _write(planned: _Plan, into: Path, read: Reader, census: _Census) -> None:
    """Make the planned folders and files in the new folder ``into``, each checked as made."""
    census.total = 0  # counted again from the bytes themselves
    into.mkdir()
    top = os.open(into, _FOLDER_FLAGS)
    try:
        for parts in sorted(planned.folders):
            os.close(_folder(top, parts))
        for member, content in planned.files:
            _write_file(top, member, content, read, census)
    finally:
        os.close(top)


def _folder(top: int, parts: tuple[str, ...]) -> int:
    """The folder ``parts`` below ``top``, made where missing, opened one level at a time
    without following a link (a descriptor to close)."""
    current = os.dup(top)
    try:
        for part in parts:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=current)
            below = os.open(part, _FOLDER_FLAGS, dir_fd=current)
            os.close(current)
            current = below
    except BaseException:
        os.close(current)
        raise
    return current


def _write_file(top: int, member: _Member, content: _Member, read: Reader, census: _Census) -> None:
    folder = _folder(top, member.parts[:-1])
    try:
        handle = os.open(member.parts[-1], _FILE_FLAGS, 0o644, dir_fd=folder)
    finally:
        os.close(folder)
    with os.fdopen(handle, "wb") as out:
        made = os.fstat(handle)
        if not stat.S_ISREG(made.st_mode) or made.st_nlink != 1:
            census.refuse(member, "cannot be unpacked as a new file")
        with read(content.record) as data:
            while chunk := data.read(_CHUNK):
                census.counted(len(chunk))
                out.write(chunk)
        out.flush()
        if content.mtime is not None:
            with contextlib.suppress(OSError, OverflowError, ValueError):
                os.utime(handle, (content.mtime, content.mtime))


def _inside(path: str) -> bool:
    if not path or path.startswith(("/", "\\")) or (len(path) > 1 and path[1] == ":"):
        return False
    depth = 0
    for part in path.replace("\\", "/").split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return False
        elif part not in ("", "."):
            depth += 1
    return True
