"""Uploaded files and folders: kept in a temporary folder until a POST /resources or /skills
adds them, under the name of the client's own path, then deleted.

A folder comes as a ``.zip`` (as upstream's server takes it), a ``.tar`` or a ``.tar.gz``
(``.tgz``) and is unpacked at once, safely (:mod:`openviking.archives`), within the upload cap.

An upload belongs to the caller that sent it, is used once, and is deleted after an hour
when nobody used it. A skill given as text (upstream's ``data``) is written to a temporary
SKILL.md here too (:func:`skill_text`).
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

from openviking.archives import archive_suffix, unpack
from openviking.errors import InvalidArgumentError, NotFoundError, UnimplementedError

__all__ = ["UPLOADED", "Uploads", "local_name", "replaced", "skill_text"]

UPLOADED = "upload://"  # what a user key's uploads are recorded below, with its user's name

UNUSED_SECONDS = 3600
_CHUNK = 1024 * 1024


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
            is_archive = archive_suffix(name) is not None
            received = folder / ("archive" if is_archive else "content")
            with open(received, "wb") as out:
                shutil.copyfileobj(stream, out, _CHUNK)
            if is_archive:
                unpack(received, folder / "content", self.max_bytes, zipped=name.lower().endswith(".zip"))
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
