"""Uploads: a local file, or a folder as a zip, sent to ``temp_upload`` ahead of the add.

An add of a local path sends the path itself to a loopback server; to any other server (or to a
loopback one that refuses paths of its machine for this key) the path is uploaded and the add
names the upload's ``temp_file_id``, the client's path kept as the source.
"""

from __future__ import annotations

import io
from pathlib import Path

from openviking.errors import OpenVikingError, PermissionDeniedError

from . import upstream
from .calls import Call


def _archive(path: Path) -> tuple[str, bytes]:
    """A file as it is, or a folder as a zip of what is in it (upstream's server unpacks a
    zip and keeps a tar.gz as one file of gzip bytes; ours unpacks both).

    Hidden files are left out (the add would leave them out), ``.gitignore`` files kept (they
    still apply); a link to a file inside the folder is sent as that file's bytes (a zip holds
    no links the servers accept), and links leading out of it, links to folders (which could
    loop) and what is neither a file nor a folder are left out.
    """
    if path.is_file():
        return path.name, path.read_bytes()
    import zipfile  # only an upload of a folder needs it

    root = path.resolve()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, strict_timestamps=False) as archive:
        for item, name in _members(path, root):
            if item.is_dir():
                archive.writestr(zipfile.ZipInfo(name + "/"), b"")
            else:
                archive.write(item, name)
    return f"{path.name or 'upload'}.zip", buffer.getvalue()


def _members(folder: Path, root: Path, prefix: str = "") -> list[tuple[Path, str]]:
    """What a folder's zip holds, in order: (the local path, its name in the zip)."""
    members: list[tuple[Path, str]] = []
    for child in sorted(folder.iterdir()):
        name = prefix + child.name
        if child.name.startswith(".") and child.name != ".gitignore":
            continue
        if child.is_symlink():
            target = child.resolve()
            if target.is_file() and root in target.parents:
                members.append((target, name))
        elif child.is_dir():
            members.append((child, name))
            members.extend(_members(child, root, name + "/"))
        elif child.is_file():
            members.append((child, name))
    return members


def _upload_call(path: Path) -> tuple[Call[str], tuple[str, bytes]]:
    try:
        name, data = _archive(path)
    except OSError as exc:
        raise PermissionDeniedError(f"Cannot read {path}: {exc.strerror or exc}", details={"path": str(path)}) from exc
    call = Call("POST", "/api/v1/resources/temp_upload", lambda result, _t: str(result["temp_file_id"]))
    return call, (name, data)


def _refuses_paths(exc: OpenVikingError) -> bool:
    """The server would not add a path of its machine for this key: the add is uploaded instead."""
    ours = isinstance(exc, PermissionDeniedError) and "temp_upload" in (exc.hint or "")
    return ours or upstream.refuses_paths(exc)
