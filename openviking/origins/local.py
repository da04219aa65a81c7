"""What an add reads when its source is not a plain local file or folder: a URL is fetched
(:mod:`.fetch`), an archive (``.zip``, ``.tar.gz``, ``.tgz``, ``.tar``) is unpacked safely
(:mod:`.archives`) into a folder named after it, each into a temporary folder that
is deleted when the add ends.

The nodes record where their files really came from: below the archive's own path
(``/home/me/docs.zip/guide/intro.md``) or the URL, so that adding the same archive or URL
again updates what it added, and removes what it no longer holds.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePath

from openviking.config import env_number
from openviking.errors import InvalidArgumentError, NotFoundError, OpenVikingError
from openviking.values.arguments import describe

from .archives import archive_suffix, is_archive, unpack
from .fetch import Address, fetch, is_url, shown_url

__all__ = ["LocalSource", "existing_path", "local_source", "recorded_source", "unpack_cap", "watchable_path"]

# An archive added from a path unpacks to at most this much (OPENVIKING_UNPACK_MAX_MB).
DEFAULT_UNPACKED_MB = 2048
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class LocalSource:
    """The local file or folder an add reads, what its nodes record as their source instead
    (None: its own path), and the temporary path to spell as ``shown`` in what the add says."""

    path: Path
    recorded_as: PurePath | None
    shown: str
    temporary: str | None = None
    scratch: Path | None = None  # a folder of the add's own, deleted when it ends (archives inside unpack there)


@contextmanager
def local_source(
    path: str | os.PathLike[str], source_name: str | None = None, *, public_only: bool = False
) -> Iterator[LocalSource]:
    """``path`` as something local to read: itself, or a URL's fetched file, or an archive's
    unpacked folder (``source_name``: what to record instead, as an upload's client path).

    An error raised inside names the URL or the archive, not the temporary copy.

    Raises:
        NotFoundError: ``path`` is no URL and does not exist.
        OpenVikingError: the URL cannot be fetched, or the archive cannot be unpacked.
    """
    recorded: PurePath | None = recorded_source(source_name)
    scratch = Path(tempfile.mkdtemp(prefix="openviking-source-"))
    try:
        if not is_url(path) and not _is_local_archive(path):
            yield LocalSource(existing_path(path), recorded, str(path), scratch=scratch / "nested")
            return
        if is_url(path):
            assert isinstance(path, str)
            shown = shown_url(path)
            recorded = recorded or Address(shown)
            local = fetch(path, scratch, public_only=public_only)
        else:
            local = existing_path(path)
            shown = str(path)
            recorded = recorded or local
        if is_archive(local):
            local = _unpacked(local, scratch, shown)
        try:
            yield LocalSource(local, recorded, shown, temporary=str(local), scratch=scratch / "nested")
        except OpenVikingError as exc:
            exc.message = exc.message.replace(str(local), shown)
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def watchable_path(path: str | os.PathLike[str]) -> Path:
    """``path`` made absolute, when it is a local folder or file that can be watched.

    Raises:
        InvalidArgumentError: a URL or an archive (a copy is added, which does not change), or an
            empty path.
        NotFoundError: nothing is there.
    """
    if isinstance(path, str | os.PathLike) and (is_url(path) or _is_local_archive(path)):
        raise InvalidArgumentError(
            f"Only a local folder or file can be watched, not {'a URL' if is_url(path) else 'an archive'}: {path}",
            hint="Add it with add-resource, and again when it changes",
            details={"path": str(path)},
        )
    return existing_path(path)


def existing_path(path: str | os.PathLike[str]) -> Path:
    """``path`` made absolute (``~`` expanded).

    Raises:
        InvalidArgumentError: an empty path.
        NotFoundError: nothing is there.
    """
    if not isinstance(path, str | os.PathLike):
        raise InvalidArgumentError(
            f"path must be a string or a path (got {type(path).__name__})", details={"path": describe(path)}
        )
    if not os.fspath(path).strip():  # Path("") is the working directory: never added by accident
        raise InvalidArgumentError(
            "path must not be empty", hint="Name the file or folder to add", details={"path": ""}
        )
    try:
        source = Path(path).expanduser()
        found = source.exists()
    except (OSError, TypeError, ValueError, RuntimeError):  # a NUL byte, a name too long, no home for ~
        found = False
    if not found:
        shown = str(path)
        shown = shown if len(shown) <= 4096 else describe(shown)
        raise NotFoundError(f"Path not found: {shown}", details={"path": shown})
    return source.absolute()


def recorded_source(source_name: str | None) -> PurePath | None:
    """What the nodes record as their source for ``source_name``: a URL (without credentials),
    an address of another scheme (a server's ``upload://<user>/...``) or a path; None for none."""
    if not source_name:
        return None
    if is_url(source_name):
        return Address(shown_url(source_name))
    return Address(source_name) if _SCHEME.match(source_name) else Path(source_name)


def _is_local_archive(path: str | os.PathLike[str]) -> bool:
    try:
        return archive_suffix(os.fspath(path)) is not None and is_archive(Path(path).expanduser())
    except (TypeError, ValueError, OSError):
        return False


def unpack_cap() -> int:
    """The bytes an add may unpack from archives, all of them together (OPENVIKING_UNPACK_MAX_MB)."""
    return int(env_number("OPENVIKING_UNPACK_MAX_MB", DEFAULT_UNPACKED_MB, "MiB") * 1024 * 1024)


def _unpacked(archive: Path, scratch: Path, shown: str) -> Path:
    """The archive unpacked into a folder named after it (``docs.tar.gz``: ``docs``); an archive
    that holds just one folder (``tar -czf docs.tar.gz docs``) is that folder."""
    suffix = archive_suffix(archive.name) or ""
    name = archive.name[: -len(suffix)] or "archive"
    folder = scratch / "unpacked" / name
    folder.parent.mkdir()
    unpack(archive, folder, unpack_cap(), zipped=suffix == ".zip", what=f"The archive {shown}")
    inner = os.listdir(folder)
    if inner == [name] and (folder / name).is_dir() and not (folder / name).is_symlink():
        return folder / name
    return folder
