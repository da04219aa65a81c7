"""Unpacking a zip or tar archive safely, whatever sent it (an upload, a local add of a
``.zip``/``.tar.gz``): a member with an absolute path, a ``..`` segment, a link leading out of
the folder (in a zip, any link), an encrypted member, or a device is refused with the whole
archive, and so is an archive that unpacks to more than a cap or holds too many members. Both
kinds go through the same checks (:class:`_Census`), and a zip's bytes are counted as they are
written, since its sizes are the sender's word.
"""

from __future__ import annotations

import posixpath
import stat
import tarfile
import zipfile
from pathlib import Path
from typing import TypeVar

from .errors import InvalidArgumentError, OpenVikingError

__all__ = ["ARCHIVE_SUFFIXES", "MAX_MEMBERS", "TooLargeError", "archive_suffix", "is_archive", "unpack"]

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
MAX_MEMBERS = 100_000
_CHUNK = 1024 * 1024


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
    """Unpack a zip or tar archive into ``into``, refusing it whole when a member is unsafe
    (``what`` names the archive in messages).

    Raises:
        InvalidArgumentError: not an archive, an unsafe member, too many members, or too big unpacked.
    """
    try:
        if zipped:
            _unzip(archive, into, _Census(max_bytes, what))
            return
        with tarfile.open(archive, "r:*") as tar:
            census = _Census(max_bytes, what)
            members = [census.admitted(m, m.name, _tar_refusal(m), m.size if m.isfile() else 0) for m in tar]
            into.mkdir()
            # The "data" filter checks every member again as it is written (and drops modes
            # such as setuid): a second guard, should the check above miss a case.
            tar.extractall(into, members=members, filter="data")
    except OpenVikingError:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, OSError, EOFError) as exc:
        raise InvalidArgumentError(
            f"{what} cannot be unpacked: {exc}",
            hint="Send a folder as a .zip, .tar or .tar.gz, a single file as it is",
        ) from exc


M = TypeVar("M")


class _Census:
    """The checks every member of an archive passes, whatever its kind: a safe name, a kind
    that may be unpacked, and the caps on members and on bytes unpacked."""

    def __init__(self, max_bytes: int, what: str) -> None:
        self.max_bytes = max_bytes
        self.what = what
        self.members = 0
        self.total = 0

    def admitted(self, member: M, name: str, refusal: str, size: int) -> M:
        """``member`` once it passes (``refusal``: why its kind may not be unpacked, or "").

        Raises:
            InvalidArgumentError: too many members, an unsafe one, or more bytes than the cap.
        """
        self.members += 1
        if self.members > MAX_MEMBERS:
            raise InvalidArgumentError(f"{self.what} holds more than {MAX_MEMBERS} entries")
        if not _inside(name) or ".." in name.replace("\\", "/").split("/"):
            refusal = "leaves the folder (an absolute path or '..')"
        if refusal:
            raise InvalidArgumentError(
                f"{self.what} is refused: {name!r} {refusal}", details={"member": name, "reason": refusal}
            )
        self.counted(size)
        return member

    def counted(self, size: int) -> None:
        """``size`` more bytes unpacked.

        Raises:
            TooLargeError: more than the cap in all.
        """
        self.total += size
        if self.total > self.max_bytes:
            raise TooLargeError(f"{self.what} unpacks to more than {self.max_bytes} bytes", self.max_bytes)


def _tar_refusal(member: tarfile.TarInfo) -> str:
    """Why a tar member's kind may not be unpacked ("" when it may): links inside the folder may."""
    if member.issym():
        target = (
            member.linkname
            if member.linkname.startswith("/")
            else posixpath.join(posixpath.dirname(member.name), member.linkname)
        )
        return "" if _inside(target) else "is a link leading out of the folder"
    if member.islnk():
        return "" if _inside(member.linkname) else "is a link leading out of the folder"
    if not (member.isfile() or member.isdir()):
        return "is not a file, a folder or a link"
    return ""


def _zip_refusal(info: zipfile.ZipInfo) -> str:
    """Why a zip member may not be unpacked ("" when it may): a zip made on Windows has no modes."""
    mode = info.external_attr >> 16
    if info.flag_bits & 0x1:
        return "is encrypted"
    if stat.S_ISLNK(mode):
        return "is a link (a zip may hold files and folders only)"
    if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "is not a file or a folder"
    return ""


def _unzip(archive: Path, into: Path, census: _Census) -> None:
    """Unpack a zip member by member, each checked before anything is written, the bytes
    counted as they are written (a zip's sizes are the sender's word)."""
    with zipfile.ZipFile(archive) as zipped:
        infos = [census.admitted(info, info.filename, _zip_refusal(info), info.file_size) for info in zipped.infolist()]
        census.total = 0  # counted again below, from the bytes themselves
        into.mkdir()
        root = into.resolve()
        for info in infos:
            target = into.joinpath(*[part for part in info.filename.split("/") if part not in ("", ".")])
            if root not in target.resolve().parents and target.resolve() != root:
                raise InvalidArgumentError(f"{census.what} is refused: {info.filename!r} leaves the folder")
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zipped.open(info) as source, open(target, "wb") as out:
                while chunk := source.read(_CHUNK):
                    census.counted(len(chunk))
                    out.write(chunk)


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
