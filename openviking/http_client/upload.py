"""Uploads: a local file, or a folder as a tar.gz, sent to ``temp_upload`` ahead of the add.

An add of a local path sends the path itself to a loopback server; to any other server (or to a
loopback one that refuses paths of its machine for this key) the path is uploaded and the add
names the upload's ``temp_file_id``, the client's path kept as the source.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from openviking.errors import OpenVikingError, PermissionDeniedError

from .calls import Call

if TYPE_CHECKING:
    import tarfile


def _archive(path: Path) -> tuple[str, bytes]:
    """A file as it is, or a folder as a tar.gz of what is in it: hidden files are left out
    (the add would leave them out), ``.gitignore`` files kept (they still apply), and links that
    lead out of the folder and what is neither a file nor a folder left out too, as the server
    would refuse the whole archive for them."""
    if path.is_file():
        return path.name, path.read_bytes()
    import tarfile  # only an upload of a folder needs it

    root = path.resolve()

    def kept(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        name = info.name.rsplit("/", 1)[-1]
        if name.startswith(".") and name != ".gitignore":
            return None
        if info.issym() or info.islnk():
            target = (path / info.name).resolve()
            return info if target == root or root in target.parents else None
        return info if info.isfile() or info.isdir() else None

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for child in sorted(path.iterdir()):
            tar.add(child, arcname=child.name, filter=kept)
    return f"{path.name or 'upload'}.tar.gz", buffer.getvalue()


def _upload_call(path: Path) -> tuple[Call[str], tuple[str, bytes]]:
    try:
        name, data = _archive(path)
    except OSError as exc:
        raise PermissionDeniedError(f"Cannot read {path}: {exc.strerror or exc}", details={"path": str(path)}) from exc
    call = Call("POST", "/api/v1/resources/temp_upload", lambda result, _t: str(result["temp_file_id"]))
    return call, (name, data)


def _refuses_paths(exc: OpenVikingError) -> bool:
    """The server would not add a path of its machine for this key: the add is uploaded instead."""
    return isinstance(exc, PermissionDeniedError) and "temp_upload" in (exc.hint or "")
