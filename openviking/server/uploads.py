"""Uploaded files and folders: kept in a temporary folder until a POST /resources or /skills
adds them, under the name of the client's own path, then deleted.

A folder comes as a ``.zip`` (as upstream's server takes it), a ``.tar`` or a ``.tar.gz``
(``.tgz``) and is unpacked at once, safely: a member with an absolute path, a ``..`` segment,
a link leading out of the folder (in a zip, any link), an encrypted member, or a device is
refused with the whole archive, and so is an archive that unpacks to more than the upload cap
or holds too many members. Both kinds go through the same checks (:class:`_Census`).

An upload belongs to the caller that sent it, is used once, and is deleted after an hour
when nobody used it. A skill given as text (upstream's ``data``) is written to a temporary
SKILL.md here too (:func:`skill_text`).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import secrets
import shutil
import stat
import tarfile
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, TypeVar

from openviking.errors import InvalidArgumentError, NotFoundError, OpenVikingError, UnimplementedError

__all__ = ["ARCHIVE_SUFFIXES", "TooLargeError", "Uploads", "local_name", "replaced", "skill_text"]

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
UNUSED_SECONDS = 3600
MAX_MEMBERS = 100_000
_CHUNK = 1024 * 1024


class TooLargeError(InvalidArgumentError):
    """More bytes than a cap allows: INVALID_ARGUMENT, answered 413 (``http_status``)."""

    http_status = 413

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message, details={"limit_bytes": limit})


@dataclass(frozen=True, slots=True)
class Upload:
    """One upload: who sent it, where it is, and the name it came with."""

    owner: str
    folder: Path
    name: str
    is_archive: bool
    created: float


def local_name(path: str) -> str:
    """The last segment of a path as a client wrote it (``/`` or ``\\``), or ""."""
    name = PurePosixPath(path.replace("\\", "/").rstrip("/")).name
    return "" if name in (".", "..") or any(ord(c) < 32 for c in name) else name


def replaced(value: Any, old: str, new: str) -> Any:
    """``value`` (JSON-like) with every ``old`` in its strings spelled ``new``."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {k: replaced(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [replaced(v, old, new) for v in value]
    return value


class Uploads:
    """The uploads of one server, under ``root``, each at most ``max_bytes`` (unpacked too)."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._uploads: dict[str, Upload] = {}

    def save(self, stream: BinaryIO, filename: str, owner: str) -> str:
        """Keep ``stream`` (unpacked when ``filename`` names an archive); returns its id.

        Raises:
            InvalidArgumentError: no usable file name, or an archive that is not one, is unsafe or too big.
        """
        self._forget_unused()
        name = local_name(filename)
        if not name:
            raise InvalidArgumentError(
                f"The uploaded file needs a name (got {filename!r})", hint="Send the file's name in the multipart part"
            )
        upload_id = f"upload_{secrets.token_hex(16)}"
        folder = self.root / upload_id
        folder.mkdir()
        try:
            is_archive = name.lower().endswith(ARCHIVE_SUFFIXES)
            received = folder / ("archive" if is_archive else "content")
            with open(received, "wb") as out:
                shutil.copyfileobj(stream, out, _CHUNK)
            if is_archive:
                _unpack(received, folder / "content", self.max_bytes, zipped=name.lower().endswith(".zip"))
                received.unlink()
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        with self._lock:
            self._uploads[upload_id] = Upload(owner, folder, name, is_archive, time.monotonic())
        return upload_id

    @contextmanager
    def taken(self, upload_id: str, owner: str, source_name: str | None) -> Iterator[tuple[Path, str]]:
        """The upload as a local file or folder named as the client's path (``source_name``'s
        last segment, else the uploaded name), and what messages should call it; it is
        deleted afterwards, whatever happens.

        Raises:
            NotFoundError: no such upload for this caller (or it was used already).
        """
        with self._lock:
            upload = self._uploads.get(upload_id)
            if upload is None or upload.owner != owner:
                raise NotFoundError(
                    f"Upload not found: {upload_id}",
                    hint="Upload with POST /api/v1/resources/temp_upload first; an upload is used once",
                    details={"temp_file_id": upload_id},
                )
            del self._uploads[upload_id]
        try:
            name = local_name(source_name or "") or _stem(upload)
            yield _named(upload, name), source_name or name
        finally:
            shutil.rmtree(upload.folder, ignore_errors=True)

    def _forget_unused(self) -> None:
        cutoff = time.monotonic() - UNUSED_SECONDS
        with self._lock:
            stale = [key for key, upload in self._uploads.items() if upload.created < cutoff]
            folders = [self._uploads.pop(key).folder for key in stale]
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


def _named(upload: Upload, name: str) -> Path:
    """The upload's file or folder, renamed ``name`` (a resource is named after its local name).

    Raises:
        InvalidArgumentError: ``name`` cannot name a file here (too long, say).
    """
    target = upload.folder / "named" / name
    content = upload.folder / "content"
    try:
        # A folder archived with its own name (tar -czf docs.tar.gz docs) holds just that folder.
        inner = content / name
        if upload.is_archive and os.listdir(content) == [name] and inner.is_dir() and not inner.is_symlink():
            content = inner
        target.parent.mkdir()
        content.rename(target)
    except OSError as exc:
        raise InvalidArgumentError(
            f"Cannot add the upload as {name!r}: {exc.strerror or exc}", hint="Send a shorter source_name"
        ) from exc
    return target


def _stem(upload: Upload) -> str:
    if not upload.is_archive:
        return upload.name
    lower = upload.name.lower()
    suffix = next(s for s in ARCHIVE_SUFFIXES if lower.endswith(s))
    return upload.name[: -len(suffix)] or "upload"


def _unpack(archive: Path, into: Path, max_bytes: int, *, zipped: bool) -> None:
    """Unpack a zip or tar archive into ``into``, refusing it whole when a member is unsafe.

    Raises:
        InvalidArgumentError: not an archive, an unsafe member, too many members, or too big unpacked.
    """
    try:
        if zipped:
            _unzip(archive, into, _Census(max_bytes))
            return
        with tarfile.open(archive, "r:*") as tar:
            census = _Census(max_bytes)
            members = [census.admitted(m, m.name, _tar_refusal(m), m.size if m.isfile() else 0) for m in tar]
            into.mkdir()
            # The "data" filter checks every member again as it is written (and drops modes
            # such as setuid): a second guard, should the check above miss a case.
            tar.extractall(into, members=members, filter="data")
    except OpenVikingError:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, OSError, EOFError) as exc:
        raise InvalidArgumentError(
            f"The uploaded archive cannot be unpacked: {exc}",
            hint="Send a folder as a .zip, .tar or .tar.gz, a single file as it is",
        ) from exc


M = TypeVar("M")


class _Census:
    """The checks every member of an archive passes, whatever its kind: a safe name, a kind
    that may be unpacked, and the caps on members and on bytes unpacked."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.members = 0
        self.total = 0

    def admitted(self, member: M, name: str, refusal: str, size: int) -> M:
        """``member`` once it passes (``refusal``: why its kind may not be unpacked, or "").

        Raises:
            InvalidArgumentError: too many members, an unsafe one, or more bytes than the cap.
        """
        self.members += 1
        if self.members > MAX_MEMBERS:
            raise InvalidArgumentError(f"The uploaded archive holds more than {MAX_MEMBERS} entries")
        if not _inside(name) or ".." in name.replace("\\", "/").split("/"):
            refusal = "leaves the folder (an absolute path or '..')"
        if refusal:
            raise InvalidArgumentError(
                f"The uploaded archive is refused: {name!r} {refusal}", details={"member": name, "reason": refusal}
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
            raise TooLargeError(f"The uploaded archive unpacks to more than {self.max_bytes} bytes", self.max_bytes)


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
                raise InvalidArgumentError(f"The uploaded archive is refused: {info.filename!r} leaves the folder")
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


@contextmanager
def skill_text(data: str | Mapping[str, Any]) -> Iterator[tuple[Path, str]]:
    """A skill given as upstream's ``data`` (a SKILL.md's text, or an object with ``name``,
    ``description``, ``content``...) as a SKILL.md in a temporary folder, and what to call it.

    Raises:
        UnimplementedError: a URL (a skill is not fetched from the network here).
        InvalidArgumentError: empty text, or an object without content.
    """
    if isinstance(data, str) and re.match(r"^(https?|git|ssh)://|^git@", data.strip()):
        raise UnimplementedError(
            "A skill at a URL is not fetched here",
            hint="Clone or download it, then add its folder (or upload it as a zip)",
            details={"data": data.strip()[:200]},
        )
    text = data if isinstance(data, str) else _skill_markdown(data)
    if not text.strip():
        raise InvalidArgumentError("data holds no SKILL.md text", details={"data": ""})
    folder = Path(tempfile.mkdtemp(prefix="openviking-skill-"))
    try:
        (folder / "SKILL.md").write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        yield folder / "SKILL.md", "SKILL.md"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _skill_markdown(skill: Mapping[str, Any]) -> str:
    """A SKILL.md of a skill given as an object: its other keys as front matter, then its content."""
    content = skill.get("content")
    if not isinstance(content, str) or not content.strip():
        raise InvalidArgumentError(
            "A skill given as an object needs its content (the text of the skill)", details={"keys": sorted(skill)}
        )
    header = [f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in skill.items() if key != "content"]
    return "---\n" + "\n".join(header) + "\n---\n\n" + content
