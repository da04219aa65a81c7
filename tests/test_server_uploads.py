"""Uploads: a file, or a folder as a .tar/.tar.gz, sent to POST /api/v1/resources/temp_upload
and added by its temp_file_id, reads as an embedded add of the client's own path
(``source_name``): the same URI, messages naming that path, nodes recording it as their
source, so the same folder uploaded again is unchanged. Unsafe archives are refused whole,
an upload belongs to its caller and is used once, and every cap holds.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import HASH_CONF, make_tree, snapshot
from ovserver import ALICE_KEY, BOB_KEY, ROOT_KEY, body_of, error_of, headers, keyed_config, thread_server

CLIENT_PATH = "/home/alice/projects/handbook"  # where the folder is on the client's machine
FILES = {
    "README.md": "# Handbook\n\nHow the service is run.\n",
    "guide/setup.md": "# Setup\n\nInstall the server with pip.\n",
    "guide/logo.png": "\x89PNG binary".encode("latin-1") + bytes(range(32)) * 8,
}


@pytest.fixture
def http(tmp_path: Path) -> Iterator[httpx.Client]:
    """A root-key client of a server on an empty store (uploads capped at 64 KiB)."""
    with thread_server(keyed_config(max_upload_bytes=64 * 1024), tmp_path / "store") as url:
        with httpx.Client(base_url=url, headers=headers(ROOT_KEY), timeout=60) as client:
            yield client


def tar_of(folder: Path, *, arcname: str | None = None, gz: bool = True) -> bytes:
    """``folder`` as a tar archive, its members under ``arcname`` (default: the folder's contents)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if gz else "w") as tar:
        if arcname is None:
            for child in sorted(folder.iterdir()):
                tar.add(child, arcname=child.name)
        else:
            tar.add(folder, arcname=arcname)
    return buffer.getvalue()


def upload(http: httpx.Client, name: str, data: bytes, key: str = ROOT_KEY) -> str:
    response = http.post("/api/v1/resources/temp_upload", files={"file": (name, data)}, headers=headers(key))
    result = body_of(response)
    assert set(result) == {"temp_file_id"} and result["temp_file_id"].startswith("upload_")
    return str(result["temp_file_id"])


def added(http: httpx.Client, body: dict[str, Any], path: str = "/api/v1/resources", key: str = ROOT_KEY) -> Any:
    response = http.post(path, json=body, headers=headers(key))
    assert "openviking-uploads" not in response.text, response.text  # the server's temp path never shows
    return body_of(response)


@pytest.mark.parametrize(("arcname", "gz"), [(None, True), ("handbook", True), (None, False)])
def test_a_folder_upload_adds_as_the_clients_folder(
    http: httpx.Client, tmp_path: Path, arcname: str | None, gz: bool
) -> None:
    folder = make_tree(tmp_path / "handbook", FILES)
    upload_id = upload(http, "handbook.tar.gz" if gz else "handbook.tar", tar_of(folder, arcname=arcname, gz=gz))
    result = added(http, {"temp_file_id": upload_id, "source_name": CLIENT_PATH})
    assert result["root_uri"] == "viking://resources/handbook"
    assert (result["added"], result["skipped"]) == (2, 1)
    assert result["skipped_files"] == [{"path": "guide/logo.png", "reason": "binary", "code": "BINARY"}]
    stat = body_of(http.get("/api/v1/fs/stat", params={"uri": "viking://resources/handbook/guide/setup.md"}))
    assert stat["source"] == f"{CLIENT_PATH}/guide/setup.md"
    assert (
        body_of(http.get("/api/v1/content/read", params={"uri": "viking://resources/handbook/README.md"}))
        == (FILES["README.md"])
    )
    # The same folder again is unchanged; a file gone from it goes from the store too.
    again = added(http, {"temp_file_id": upload(http, "h.tgz", tar_of(folder, arcname=arcname)),
                         "source_name": CLIENT_PATH})  # fmt: skip
    assert (again["added"], again["updated"], again["unchanged"], again["removed"]) == (0, 0, 2, 0)
    (folder / "guide" / "setup.md").unlink()
    fewer = added(http, {"temp_file_id": upload(http, "h.tgz", tar_of(folder, arcname=arcname)),
                         "source_name": CLIENT_PATH})  # fmt: skip
    assert (fewer["unchanged"], fewer["removed"]) == (1, 1)
    # The server kept nothing of the uploads.
    error_of(http.post("/api/v1/resources", json={"temp_file_id": upload_id}), 404, "NOT_FOUND")


def test_a_file_upload_adds_as_the_clients_file(http: httpx.Client, tmp_path: Path) -> None:
    data = b"# Todo\n\nShip the server.\n"
    result = added(http, {"temp_file_id": upload(http, "todo.md", data), "source_name": "/home/alice/todo.md",
                          "parent": "viking://resources", "tags": ["team=search"]})  # fmt: skip
    assert result["root_uri"] == "viking://resources/todo.md" and result["added"] == 1
    stat = body_of(http.get("/api/v1/fs/stat", params={"uri": "viking://resources/todo.md"}))
    assert stat["source"] == "/home/alice/todo.md" and stat["tags"] == ["team=search"]
    again = added(http, {"temp_file_id": upload(http, "todo.md", data), "source_name": "/home/alice/todo.md",
                         "parent": "viking://resources", "tags": ["team=search"]})  # fmt: skip
    assert again["unchanged"] == 1
    # Without source_name the upload's own name is what it is added as.
    plain = added(http, {"temp_file_id": upload(http, "notes.md", b"# Notes\n\nn\n"), "to": "viking://resources/n.md"})
    assert plain["root_uri"] == "viking://resources/n.md"
    assert body_of(http.get("/api/v1/fs/stat", params={"uri": "viking://resources/n.md"}))["source"] == "notes.md"


def test_messages_name_the_clients_path(http: httpx.Client, tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "my notes", {"a.md": "# A\n\nalpha\n"})
    result = added(http, {"temp_file_id": upload(http, "my notes.tar.gz", tar_of(folder)),
                          "source_name": "/home/alice/my notes"})  # fmt: skip
    assert result["root_uri"] == "viking://resources/my_notes"
    assert result["warnings"][0]["path"] == "/home/alice/my notes", result["warnings"]
    # An error too: a folder without text files.
    empty = make_tree(tmp_path / "images", {"x.png": FILES["guide/logo.png"]})
    response = http.post("/api/v1/resources", json={"temp_file_id": upload(http, "images.tgz", tar_of(empty)),
                                                    "source_name": "/home/alice/images"})  # fmt: skip
    error = error_of(response, 400, "INVALID_ARGUMENT")
    assert error["message"].startswith("Nothing to add: /home/alice/images holds no text files"), error
    assert "openviking-uploads" not in response.text


def test_a_skill_uploaded_twice_updates_itself(http: httpx.Client, tmp_path: Path) -> None:
    skill = make_tree(tmp_path / "write-rfc", {"SKILL.md": "---\nname: write-rfc\n---\n# Write an RFC\n"})
    body = {"source_name": "/home/alice/skills/write-rfc"}
    first = added(http, {**body, "temp_file_id": upload(http, "write-rfc.tar.gz", tar_of(skill))}, "/api/v1/skills")
    assert first["root_uri"] == "viking://agent/skills/write-rfc" and first["added"] == 1
    (skill / "SKILL.md").write_text("---\nname: write-rfc\n---\n# Write an RFC, better\n")
    second = added(http, {**body, "temp_file_id": upload(http, "write-rfc.tar.gz", tar_of(skill))}, "/api/v1/skills")
    assert second["updated"] == 1
    # Another source under the same name is still another skill.
    other = {"source_name": "/home/bob/write-rfc", "temp_file_id": upload(http, "write-rfc.tar.gz", tar_of(skill))}
    error_of(http.post("/api/v1/skills", json=other), 409, "ALREADY_EXISTS")


def _archive(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"# x\n", link: str = "") -> Any:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data if kind == tarfile.REGTYPE else None


@pytest.mark.parametrize(
    ("members", "reason"),
    [
        ([_member("/etc/cron.d/x.md")], "leaves the folder"),
        ([_member("../outside.md")], "leaves the folder"),
        ([_member("a/../../outside.md")], "leaves the folder"),
        ([_member("a/../b.md")], "leaves the folder"),
        ([_member("ok.md"), _member("passwd", tarfile.SYMTYPE, link="/etc/passwd")], "link leading out"),
        ([_member("a/up", tarfile.SYMTYPE, link="../../etc")], "link leading out"),
        ([_member("hard", tarfile.LNKTYPE, link="../../etc/passwd")], "link leading out"),
        ([_member("dev", tarfile.CHRTYPE)], "not a file, a folder or a link"),
        ([_member("fifo", tarfile.FIFOTYPE)], "not a file, a folder or a link"),
    ],
)
def test_an_unsafe_archive_is_refused_whole(
    http: httpx.Client, tmp_path: Path, members: list[Any], reason: str
) -> None:
    before = snapshot(tmp_path / "store")
    response = http.post("/api/v1/resources/temp_upload", files={"file": ("evil.tar.gz", _archive(*members))})
    error = error_of(response, 400, "INVALID_ARGUMENT")
    assert reason in error["message"], error
    assert snapshot(tmp_path / "store") == before
    assert not (tmp_path / "outside.md").exists()


def test_links_inside_the_folder_are_kept(http: httpx.Client) -> None:
    archive = _archive(_member("docs/a.md", data=b"# A\n\nalpha\n"), _member("b.md", tarfile.SYMTYPE, link="docs/a.md"))
    result = added(http, {"temp_file_id": upload(http, "linked.tar.gz", archive), "source_name": "/c/linked"})
    assert result["added"] == 2


def test_uploads_are_capped(http: httpx.Client) -> None:
    limit = 64 * 1024
    response = http.post("/api/v1/resources/temp_upload", files={"file": ("big.md", b"x" * (limit + 1))})
    error = error_of(response, 413, "INVALID_ARGUMENT")
    assert error["details"] == {"limit_bytes": limit}
    # An archive that is small but unpacks to more than the cap.
    bomb = _archive(_member("zeros.md", data=b"\n" * (limit * 4)))
    assert len(bomb) < limit
    response = http.post("/api/v1/resources/temp_upload", files={"file": ("bomb.tar.gz", bomb)})
    error = error_of(response, 413, "INVALID_ARGUMENT")
    assert error["details"] == {"limit_bytes": limit} and "unpacks to more than" in error["message"]
    # Not an archive at all.
    response = http.post("/api/v1/resources/temp_upload", files={"file": ("fake.tar.gz", b"plain text")})
    assert "cannot be unpacked" in error_of(response, 400, "INVALID_ARGUMENT")["message"]
    # Not a multipart body, or no file in it.
    error_of(http.post("/api/v1/resources/temp_upload", json={"file": "x"}), 400, "INVALID_ARGUMENT")
    error_of(http.post("/api/v1/resources/temp_upload", files={"other": ("a.md", b"x")}), 400, "INVALID_ARGUMENT")


def test_an_upload_belongs_to_its_caller_and_is_used_once(tmp_path: Path) -> None:
    with thread_server(keyed_config(), tmp_path / "store") as url:
        with httpx.Client(base_url=url, timeout=60) as http:
            upload_id = upload(http, "a.md", b"# A\n\nalpha\n", key=ALICE_KEY)
            body = {"temp_file_id": upload_id, "source_name": "/home/alice/a.md"}
            error_of(http.post("/api/v1/resources", json=body, headers=headers(BOB_KEY)), 404, "NOT_FOUND")
            error_of(http.post("/api/v1/resources", json=body, headers=headers(ROOT_KEY)), 404, "NOT_FOUND")
            result = added(http, {**body, "to": "viking://user/alice/resources/a.md"}, key=ALICE_KEY)
            assert result["added"] == 1
            error_of(http.post("/api/v1/resources", json=body, headers=headers(ALICE_KEY)), 404, "NOT_FOUND")
            # A user key adds only into spaces it may write.
            other = {"temp_file_id": upload(http, "b.md", b"# B\n", key=ALICE_KEY), "to": "viking://user/bob/b.md"}
            error_of(http.post("/api/v1/resources", json=other, headers=headers(ALICE_KEY)), 403, "PERMISSION_DENIED")
            error_of(http.post("/api/v1/resources/temp_upload", files={"file": ("a.md", b"x")}), 401, "UNAUTHENTICATED")


def test_an_upload_without_keys(tmp_path: Path) -> None:
    with thread_server(HASH_CONF, tmp_path / "store") as url:
        with httpx.Client(base_url=url, timeout=60) as http:
            result = added(http, {"temp_file_id": upload(http, "a.md", b"# A\n\nalpha\n", key=""),
                                  "source_name": "/tmp/a.md"}, key="")  # fmt: skip
            assert result["root_uri"] == "viking://resources/a.md"


def test_a_source_name_that_cannot_name_a_file_is_400(http: httpx.Client) -> None:
    body = {"temp_file_id": upload(http, "a.md", b"# A\n"), "source_name": "/home/alice/" + "n" * 300}
    error = error_of(http.post("/api/v1/resources", json=body), 400, "INVALID_ARGUMENT")
    assert "Cannot add the upload as" in error["message"]
    error_of(http.post("/api/v1/resources", json=body), 404, "NOT_FOUND")  # used, and gone


# ----------------------------------------------------------------------------- zip, as upstream's client sends
def zip_of(folder: Path) -> bytes:
    """``folder``'s contents as a zip (what the HTTP client sends for a folder)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


def _zipped(*members: tuple[str, bytes, int, int]) -> bytes:
    """A zip of (name, data, unix mode, flag bits) members, written as given."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data, mode, _flags in members:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            archive.writestr(info, data)
    data = bytearray(buffer.getvalue())
    # zipfile writes no flag bits of its own choosing: set them in each local and central header.
    for index, (_name, _data, _mode, flags) in enumerate(members):
        for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
            at = -1
            for _ in range(index + 1):
                at = data.index(signature, at + 1)
            data[at + offset] |= flags
    return bytes(data)


def _file(name: str, data: bytes = b"# x\n", mode: int = stat.S_IFREG | 0o644, flags: int = 0) -> Any:
    return name, data, mode, flags


def test_a_folder_zip_adds_as_the_clients_folder(http: httpx.Client, tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "handbook", FILES)
    result = added(http, {"temp_file_id": upload(http, "handbook.zip", zip_of(folder)), "source_name": CLIENT_PATH})
    assert (result["root_uri"], result["added"], result["skipped"]) == ("viking://resources/handbook", 2, 1)
    stat_ = body_of(http.get("/api/v1/fs/stat", params={"uri": "viking://resources/handbook/guide/setup.md"}))
    assert stat_["source"] == f"{CLIENT_PATH}/guide/setup.md"
    again = added(http, {"temp_file_id": upload(http, "handbook.zip", zip_of(folder)), "source_name": CLIENT_PATH})
    assert (again["added"], again["unchanged"]) == (0, 2)


def test_globs_may_come_comma_separated_and_wait_is_taken(http: httpx.Client, tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "mixed", {"a.md": "# A\n", "b.txt": "bee\n", "c.rst": "see\n", "d.md": "# D\n"})
    body = {"temp_file_id": upload(http, "mixed.zip", zip_of(folder)), "source_name": "/c/mixed", "wait": True,
            "include": "*.md, *.txt", "exclude": "d.md"}  # fmt: skip
    assert added(http, body)["added"] == 2
    listed = body_of(http.get("/api/v1/fs/ls", params={"uri": "viking://resources/mixed", "simple": "true"}))
    assert sorted(uri.rsplit("/", 1)[1] for uri in listed) == ["a.md", "b.txt"]


@pytest.mark.parametrize(
    ("members", "reason"),
    [
        ([_file("/etc/cron.d/x.md")], "leaves the folder"),
        ([_file("ok.md"), _file("../outside.md")], "leaves the folder"),
        ([_file("a/../../outside.md")], "leaves the folder"),
        ([_file("C:/outside.md")], "leaves the folder"),
        ([_file("ok.md"), _file("passwd", b"/etc/passwd", stat.S_IFLNK | 0o777)], "is a link"),
        ([_file("inside", b"ok.md", stat.S_IFLNK | 0o777)], "is a link"),
        ([_file("secret.md", b"\x00" * 12 + b"ciphertext", flags=0x1)], "is encrypted"),
        ([_file("dev", b"", stat.S_IFCHR | 0o600)], "is not a file or a folder"),
        ([_file("fifo", b"", stat.S_IFIFO | 0o600)], "is not a file or a folder"),
    ],
)
def test_an_unsafe_zip_is_refused_whole(http: httpx.Client, tmp_path: Path, members: list[Any], reason: str) -> None:
    added(http, {"temp_file_id": upload(http, "a.md", b"# A\n\nalpha\n"), "to": "viking://resources/a.md"})
    before = snapshot(tmp_path / "store")
    response = http.post("/api/v1/resources/temp_upload", files={"file": ("evil.zip", _zipped(*members))})
    error = error_of(response, 400, "INVALID_ARGUMENT")
    assert error["message"].startswith("The uploaded archive is refused: ") and reason in error["message"], error
    assert error["details"]["reason"].startswith(reason.split(" (")[0]), error
    assert snapshot(tmp_path / "store") == before
    assert not (tmp_path / "outside.md").exists()


def test_zips_are_capped(http: httpx.Client, tmp_path: Path) -> None:
    limit = 64 * 1024
    added(http, {"temp_file_id": upload(http, "a.md", b"# A\n\nalpha\n"), "to": "viking://resources/a.md"})
    before = snapshot(tmp_path / "store")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("zeros.md", b"\n" * (limit * 4))
    assert len(buffer.getvalue()) < limit  # small, but unpacks to more than the cap
    response = http.post("/api/v1/resources/temp_upload", files={"file": ("bomb.zip", buffer.getvalue())})
    error = error_of(response, 413, "INVALID_ARGUMENT")
    assert error["details"] == {"limit_bytes": limit} and "unpacks to more than" in error["message"]
    # Not a zip at all.
    response = http.post("/api/v1/resources/temp_upload", files={"file": ("fake.zip", b"plain text")})
    error = error_of(response, 400, "INVALID_ARGUMENT")
    assert error["message"].startswith("The uploaded archive cannot be unpacked: "), error
    assert snapshot(tmp_path / "store") == before


def test_a_user_keys_source_name_names_its_upload_never_a_file_of_the_server(tmp_path: Path) -> None:
    with thread_server(keyed_config(), tmp_path / "store") as url, httpx.Client(base_url=url, timeout=60) as http:
        data = b"# Not the server's\n\nalice's own notes\n"

        def stat_of(uri: str, key: str) -> Any:
            return body_of(http.get("/api/v1/fs/stat", params={"uri": uri}, headers=headers(key)))

        uri = "viking://user/alice/resources/passwd.md"
        body = {"source_name": "/etc/passwd", "to": uri}
        result = added(http, {**body, "temp_file_id": upload(http, "passwd", data, key=ALICE_KEY)}, key=ALICE_KEY)
        assert result["added"] == 1 and stat_of(uri, ALICE_KEY)["source"] == "upload://alice/etc/passwd"
        again = added(http, {**body, "temp_file_id": upload(http, "passwd", data, key=ALICE_KEY)}, key=ALICE_KEY)
        assert again["unchanged"] == 1  # the same source, as uploading the same file again should be
        # A folder: its files are recorded below it, and a file gone from it goes from the store too.
        folder = make_tree(tmp_path / "etc", {"hosts.md": "# Hosts\n", "motd.md": "# Motd\n"})
        tree = {"source_name": "/etc", "to": "viking://user/alice/resources/etc"}
        added(http, {**tree, "temp_file_id": upload(http, "etc.tgz", tar_of(folder), key=ALICE_KEY)}, key=ALICE_KEY)
        hosts = stat_of("viking://user/alice/resources/etc/hosts.md", ALICE_KEY)
        assert hosts["source"] == "upload://alice/etc/hosts.md"
        (folder / "motd.md").unlink()
        fewer = added(
            http, {**tree, "temp_file_id": upload(http, "etc.tgz", tar_of(folder), key=ALICE_KEY)}, key=ALICE_KEY
        )
        assert (fewer["unchanged"], fewer["removed"]) == (1, 1)
        # A bare name names no place, and the root key's word is the server's own.
        bare = {"source_name": "passwd", "to": "viking://user/alice/resources/bare.md"}
        added(http, {**bare, "temp_file_id": upload(http, "passwd", data, key=ALICE_KEY)}, key=ALICE_KEY)
        assert stat_of("viking://user/alice/resources/bare.md", ALICE_KEY)["source"] == "passwd"
        root = {"source_name": "/etc/passwd", "to": "viking://resources/passwd.md"}
        added(http, {**root, "temp_file_id": upload(http, "passwd", data)})
        assert stat_of("viking://resources/passwd.md", ROOT_KEY)["source"] == "/etc/passwd"


def test_an_error_to_a_user_key_names_no_path_of_the_server(tmp_path: Path) -> None:
    with thread_server(keyed_config(), tmp_path / "store") as url, httpx.Client(base_url=url, timeout=60) as http:
        long_name = _archive(_member("n" * 300 + ".md"))  # no file system takes a name this long
        response = http.post(
            "/api/v1/resources/temp_upload", files={"file": ("long.tar.gz", long_name)}, headers=headers(ALICE_KEY)
        )
        error = error_of(response, 400, "INVALID_ARGUMENT")
        assert error["message"] == "The uploaded archive cannot be unpacked: File name too long", error
        assert "openviking-uploads" not in response.text and "/tmp" not in response.text


# ----------------------------------------------------------------------------- what one caller may hold
def _zip_of_zeros(size: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("zeros.md", b"\n" * size)
    return buffer.getvalue()


def test_uploads_not_yet_added_are_held_to_a_quota_per_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    config = keyed_config(max_upload_bytes=64 * 1024, upload_quota_bytes=100 * 1024)
    bomb = _zip_of_zeros(60 * 1024)  # small, and unpacks to 60 KiB
    with thread_server(config, tmp_path / "store") as url, httpx.Client(base_url=url, timeout=60) as http:
        (uploads,) = (tmp_path / "tmp").iterdir()
        first = upload(http, "a.zip", bomb, key=ALICE_KEY)
        response = http.post(
            "/api/v1/resources/temp_upload", files={"file": ("b.zip", bomb)}, headers=headers(ALICE_KEY)
        )
        error = error_of(response, 413, "INVALID_ARGUMENT")
        assert error["message"] == (
            "Your uploads not yet added hold 61,440 bytes: with this one they would hold more than 102,400, "
            "the most one caller may"
        )
        assert error["details"] == {"limit_bytes": 100 * 1024} and error["hint"].startswith("Add what you uploaded")
        assert sorted(os.listdir(uploads)) == [first]  # the refused one left nothing behind
        # The quota is each caller's own.
        upload(http, "b.zip", bomb, key=BOB_KEY)
        # Once alice adds what she uploaded, she may upload again.
        added(http, {"temp_file_id": first, "to": "viking://user/alice/resources/a"}, key=ALICE_KEY)
        upload(http, "b.zip", bomb, key=ALICE_KEY)


def test_an_upload_nobody_adds_is_deleted_though_no_other_comes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    config = keyed_config(upload_unused_seconds=1)
    with thread_server(config, tmp_path / "store") as url, httpx.Client(base_url=url, timeout=60) as http:
        (uploads,) = (tmp_path / "tmp").iterdir()
        unused = upload(http, "a.zip", _zip_of_zeros(1024), key=ALICE_KEY)
        assert os.listdir(uploads) == [unused]
        deadline = time.monotonic() + 60
        while os.listdir(uploads):  # no request comes meanwhile
            assert time.monotonic() < deadline, "the unused upload was never deleted"
            time.sleep(0.1)
        error = error_of(http.post("/api/v1/resources", json={"temp_file_id": unused}, headers=headers(ALICE_KEY)),
                         404, "NOT_FOUND")  # fmt: skip
        assert error["hint"].endswith("and deleted when unused for 1 s")


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ({"upload_quota_bytes": 0}, "'server.upload_quota_bytes' must be a positive integer"),
        ({"upload_quota_bytes": "1GB"}, "'server.upload_quota_bytes' must be an integer"),
        ({"upload_unused_seconds": 0}, "'server.upload_unused_seconds' must be a positive number of seconds"),
    ],
)
def test_the_upload_settings_are_checked(server: dict[str, Any], message: str) -> None:
    from openviking.config import config_from_dict
    from openviking.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        _ = config_from_dict(keyed_config(**server)).server
