"""Uploaded files and folders: kept in a temporary folder until a POST /resources or /skills
adds them, under the name of the client's own path, then deleted.

A folder comes as a ``.zip`` (as upstream's server takes it), a ``.tar`` or a ``.tar.gz``
(``.tgz``) and is unpacked at once, safely (:mod:`openviking.origins.archives`), within the upload cap.

An upload belongs to the caller that sent it and is used once. What one caller's uploads not
yet added hold in all (unpacked) is capped (``server.upload_quota_bytes``), and an upload nobody
added is deleted after ``server.upload_unused_seconds`` (ten minutes), by a sweep that runs
whether or not other uploads come. A skill given as text (upstream's ``data``) is written to a
temporary SKILL.md here too (:func:`skill_text`).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from openviking.errors import InvalidArgumentError, NotFoundError, UnimplementedError
from openviking.origins.archives import TooLargeError, archive_suffix, unpack

__all__ = ["UPLOADED", "Uploads", "local_name", "replaced", "skill_text"]

UPLOADED = "upload://"  # what a user key's uploads are recorded below, with its user's name

_CHUNK = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Upload:
    """One upload: who sent it, where it is, and the name it came with."""

    owner: str
    folder: Path
    name: str
    is_archive: bool
    created: float
    size: int  # the bytes it holds (an archive's unpacked files)


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
    """The uploads of one server, under ``root``: each at most ``max_bytes`` (unpacked too), one
    caller's not yet added at most ``quota`` in all, and an upload unused for ``unused_seconds``
    deleted."""

    def __init__(self, root: Path, max_bytes: int, *, quota: int | None = None, unused_seconds: float = 600.0) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.quota = quota or max_bytes
        self.unused_seconds = unused_seconds
        self._lock = threading.Lock()
        self._uploads: dict[str, Upload] = {}
        self._receiving: dict[str, int] = {}  # bytes set aside, by owner, for the uploads being received
        self._closed = threading.Event()

    def sweep(self) -> None:
        """Delete unused uploads from now on, whether or not others come (a daemon thread)."""
        interval = min(60.0, self.unused_seconds / 4)

        def run() -> None:
            while not self._closed.wait(interval):
                self._forget_unused()

        threading.Thread(target=run, name="openviking-upload-sweep", daemon=True).start()

    def close(self) -> None:
        """Stop the sweep and delete every upload."""
        self._closed.set()
        shutil.rmtree(self.root, ignore_errors=True)

    def save(self, stream: BinaryIO, filename: str, owner: str) -> str:
        """Keep ``stream`` (unpacked when ``filename`` names an archive); returns its id.

        Raises:
            InvalidArgumentError: no usable file name, or an archive that is not one, is unsafe or too big.
            TooLargeError: more than the cap, or than what is left of the caller's quota.
        """
        self._forget_unused()
        name = local_name(filename)
        if not name:
            raise InvalidArgumentError(
                f"The uploaded file needs a name (got {filename!r})", hint="Send the file's name in the multipart part"
            )
        allowed = self._set_aside(owner)
        upload_id = f"upload_{secrets.token_hex(16)}"
        folder = self.root / upload_id
        try:
            folder.mkdir()
            is_archive = archive_suffix(name) is not None
            received = folder / ("archive" if is_archive else "content")
            with open(received, "wb") as out:
                size = _copied(stream, out, allowed)
            if is_archive:
                unpack(received, folder / "content", allowed, zipped=name.lower().endswith(".zip"))
                received.unlink()
                size = _size_of(folder / "content")
        except BaseException as exc:
            shutil.rmtree(folder, ignore_errors=True)
            self._given_back(owner, allowed)
            if isinstance(exc, TooLargeError) and allowed < self.max_bytes:
                raise self._over_quota(owner) from exc
            raise
        with self._lock:
            self._receiving[owner] -= allowed
            self._uploads[upload_id] = Upload(owner, folder, name, is_archive, time.monotonic(), size)
        return upload_id

    @contextmanager
    def taken(self, upload_id: str, owner: str, source_name: str | None) -> Iterator[tuple[Path, str]]:
        """The upload as a local file or folder named as the client's path (``source_name``'s
        last segment, else the uploaded name), and what messages should call it; it is
        deleted afterwards, whatever happens.

        Raises:
            NotFoundError: no such upload for this caller (or it was used already, or expired).
        """
        self._forget_unused()
        with self._lock:
            upload = self._uploads.get(upload_id)
            if upload is None or upload.owner != owner:
                raise NotFoundError(
                    f"Upload not found: {upload_id}",
                    hint=(
                        "Upload with POST /api/v1/resources/temp_upload first; an upload is used once, "
                        f"and deleted when unused for {self.unused_seconds:g} s"
                    ),
                    details={"temp_file_id": upload_id},
                )
            del self._uploads[upload_id]
        try:
            name = local_name(source_name or "") or _stem(upload)
            yield _named(upload, name), source_name or name
        finally:
            shutil.rmtree(upload.folder, ignore_errors=True)

    def _held(self, owner: str) -> int:
        """Bytes the owner's uploads hold, and those set aside for the ones being received (under the lock)."""
        kept = sum(upload.size for upload in self._uploads.values() if upload.owner == owner)
        return kept + self._receiving.get(owner, 0)

    def _set_aside(self, owner: str) -> int:
        """Room for one more upload of ``owner``: what is left of its quota, at most the cap.

        Raises:
            TooLargeError: nothing is left.
        """
        with self._lock:
            allowed = min(self.max_bytes, self.quota - self._held(owner))
            if allowed > 0:
                self._receiving[owner] = self._receiving.get(owner, 0) + allowed
                return allowed
        raise self._over_quota(owner)

    def _given_back(self, owner: str, allowed: int) -> None:
        with self._lock:
            self._receiving[owner] -= allowed

    def _over_quota(self, owner: str) -> TooLargeError:
        with self._lock:
            held = sum(upload.size for upload in self._uploads.values() if upload.owner == owner)
        error = TooLargeError(
            f"Your uploads not yet added hold {held:,} bytes: with this one they would hold more than "
            f"{self.quota:,}, the most one caller may",
            self.quota,
        )
        error.hint = (
            "Add what you uploaded (POST /api/v1/resources with its temp_file_id) before uploading more; "
            f"an upload nobody adds is deleted after {self.unused_seconds:g} s"
        )
        return error

    def _forget_unused(self) -> None:
        cutoff = time.monotonic() - self.unused_seconds
        with self._lock:
            stale = [key for key, upload in self._uploads.items() if upload.created < cutoff]
            folders = [self._uploads.pop(key).folder for key in stale]
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


def _copied(stream: BinaryIO, out: BinaryIO, limit: int) -> int:
    """Copy ``stream`` into ``out``; the bytes copied.

    Raises:
        TooLargeError: more than ``limit`` bytes.
    """
    size = 0
    while chunk := stream.read(_CHUNK):
        size += len(chunk)
        if size > limit:
            raise TooLargeError(f"The upload is more than {limit} bytes", limit)
        out.write(chunk)
    return size


def _size_of(folder: Path) -> int:
    return sum(os.lstat(os.path.join(top, name)).st_size for top, _, names in os.walk(folder) for name in names)


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
    suffix = archive_suffix(upload.name) or ""
    return upload.name[: -len(suffix)] or "upload"


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
