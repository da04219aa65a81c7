"""Links in archives, on every way an archive comes in (the CLI, a user key's upload, a root
key's path inside ``server.path_roots``): the technique of CVE-2025-4517 (a chain of symlinked
folders whose names outgrow PATH_MAX, so that a check of paths on disk gives up) is refused
before anything is written, and nothing outside the unpack folder is written or read. A link
to a file of the archive is unpacked as a copy of it; any other link refuses the archive.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from helpers import CliResult, cli_unharmed, make_tree, snapshot
from ovserver import ALICE_KEY, ROOT_KEY, body_of, error_of, headers, keyed_config, thread_server

from openviking.errors import InvalidArgumentError
from openviking.origins.archives import TooLargeError, unpack

Cli = Callable[..., CliResult]
# A member: its name, its kind ("file", "folder", "symlink", "hardlink") and its bytes or link target.
Member = tuple[str, str, bytes | str]

STEPS = "abcdefghijklmnop"
LONG = "d" * 237
# Every way in unpacks three folders below the temporary folder, itself in tmp_path: four ".."
# from the unpack folder lead to tmp_path (see the ``outside`` fixture).
UP = 4
SECRET = "TOP SECRET: the server's own file\n"
KEPT = "an existing file, to be left as it is\n"
OLD = 1_500_000_000 * 10**9  # the outside files' mtime, in ns
REFUSED = "is refused: 'a' is a link that other members lie below"
TO_A_FOLDER = "is a link to a folder (a link may name a file only)"
DOCS: list[Member] = [("docs/a.md", "file", b"a")]


def technique(kind: str) -> bytes:
    """The technique of CVE-2025-4517 as a tar or a zip: sixteen folders of 237-character names
    each reached through a one-letter link, a 254-character link up sixteen levels, ``escape``
    leading through it to tmp_path/outside, then a file written through ``escape`` and ``leak.md``
    linked to the secret beside it (a hard link in a tar; a zip has only symbolic ones)."""
    members: list[Member] = []
    path = ""
    for step in STEPS:
        members += [(f"{path}{LONG}", "folder", b""), (f"{path}{step}", "symlink", LONG)]
        path += f"{LONG}/"
    climb = "/".join(STEPS) + "/" + "l" * 254
    members += [
        (climb, "symlink", "../" * len(STEPS)),
        ("escape", "symlink", climb + "/.." * UP + "/outside"),
        ("escape/x", "file", b"# written through the link\n"),
        ("leak.md", "hardlink" if kind == "tar" else "symlink", "escape/secret"),
    ]
    return archive_of(kind, members)


def archive_of(kind: str, members: list[Member]) -> bytes:
    """``members`` as a tar or a zip, in order."""
    buffer = io.BytesIO()
    if kind == "zip":
        modes = {"file": stat.S_IFREG | 0o644, "folder": stat.S_IFDIR | 0o755, "symlink": stat.S_IFLNK | 0o777}
        with zipfile.ZipFile(buffer, "w") as zipped:
            for name, what, data in members:
                entry = zipfile.ZipInfo(name + ("/" if what == "folder" else ""))
                entry.external_attr = modes[what] << 16
                zipped.writestr(entry, data.encode() if isinstance(data, str) else data)
        return buffer.getvalue()
    types = {"file": tarfile.REGTYPE, "folder": tarfile.DIRTYPE}
    types.update(symlink=tarfile.SYMTYPE, hardlink=tarfile.LNKTYPE)
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, what, data in members:
            info = tarfile.TarInfo(name)
            info.type = types[what]
            info.mtime = 1_600_000_000
            if isinstance(data, str):
                info.linkname = data
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@dataclass
class Outside:
    """A folder beside the unpack folder that an archive must never reach."""

    folder: Path

    def untouched(self) -> None:
        assert sorted(os.listdir(self.folder)) == ["secret", "x"], "a file was written outside"
        assert (self.folder / "secret").read_text() == SECRET
        assert (self.folder / "x").read_text() == KEPT, "an existing file outside was overwritten"
        assert [(self.folder / name).stat().st_mtime_ns for name in ("secret", "x")] == [OLD, OLD]
        assert (self.folder / "secret").stat().st_nlink == 1, "the secret was linked from inside"


@pytest.fixture
def outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Outside:
    """tmp_path/outside with a secret and an existing file; temporary folders in tmp_path/tmp,
    so that an unpack folder (tmp/openviking-source-*/unpacked/evil, or
    tmp/openviking-uploads-*/upload_*/content) is four levels below tmp_path."""
    folder = make_tree(tmp_path / "outside", {"secret": SECRET, "x": KEPT})
    for name in ("secret", "x"):
        os.utime(folder / name, ns=(OLD, OLD))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("TMPDIR", str(scratch))
    return Outside(folder)


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_the_technique_is_refused_by_the_cli(handbook_ov: Cli, tmp_path: Path, outside: Outside, kind: str) -> None:
    evil = tmp_path / f"evil.{kind}"
    evil.write_bytes(technique(kind))
    first = handbook_ov("add-resource", evil, "-o", "json")
    outside.untouched()
    assert first.code == 2, first
    error, _table = cli_unharmed(
        handbook_ov, tmp_path / "store", ["add-resource", evil], "INVALID_ARGUMENT", 2, f"The archive {evil} {REFUSED}"
    )
    assert error["details"] == {"member": "a", "reason": "is a link that other members lie below"}
    assert error["hint"].startswith("Make the archive with links followed")
    assert handbook_ov("ls", "viking://resources", "-o", "json").json()["result"][0]["uri"].endswith("handbook")
    outside.untouched()
    assert os.listdir(tmp_path / "tmp") == []  # nothing of the unpack left behind


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_the_technique_is_refused_as_a_user_keys_upload(tmp_path: Path, outside: Outside, kind: str) -> None:
    with thread_server(keyed_config(), tmp_path / "store") as url, httpx.Client(base_url=url, timeout=60) as http:
        before = snapshot(tmp_path / "store")
        files = {"file": (f"evil.{kind}", technique(kind))}
        response = http.post("/api/v1/resources/temp_upload", files=files, headers=headers(ALICE_KEY))
        outside.untouched()
        error = error_of(response, 400, "INVALID_ARGUMENT")
        assert error["message"] == f"The uploaded archive {REFUSED}"
        assert "openviking-uploads" not in response.text and str(tmp_path) not in response.text
        assert snapshot(tmp_path / "store") == before
        # Nothing of it is kept: the uploads folder is as empty as before.
        (uploads,) = (tmp_path / "tmp").iterdir()
        assert os.listdir(uploads) == []
    outside.untouched()


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_the_technique_is_refused_from_a_root_path_inside_path_roots(
    tmp_path: Path, outside: Outside, kind: str
) -> None:
    roots = tmp_path / "roots"
    roots.mkdir()
    evil = roots / f"evil.{kind}"
    evil.write_bytes(technique(kind))
    config = keyed_config(path_roots=[str(roots)])
    with thread_server(config, tmp_path / "store") as url, httpx.Client(base_url=url, timeout=60) as http:
        before = snapshot(tmp_path / "store")
        response = http.post("/api/v1/resources", json={"path": str(evil)}, headers=headers(ROOT_KEY))
        outside.untouched()
        error = error_of(response, 400, "INVALID_ARGUMENT")
        assert error["message"] == f"The archive {evil} {REFUSED}"
        assert snapshot(tmp_path / "store") == before
        listed = body_of(http.get("/api/v1/fs/ls", params={"uri": "viking://resources"}, headers=headers(ROOT_KEY)))
        assert listed == []
    outside.untouched()


# ----------------------------------------------------------------------------- the policy, member by member
def unpacked(tmp_path: Path, kind: str, members: list[Member], cap: int = 10**9) -> Path:
    archive = tmp_path / f"a.{kind}"
    archive.write_bytes(archive_of(kind, members))
    into = tmp_path / "into"
    unpack(archive, into, cap, zipped=kind == "zip")
    return into


def tree_of(folder: Path) -> dict[str, bytes | None]:
    """Every entry below ``folder``: a file's bytes, None for a folder; no link, no shared inode."""
    found: dict[str, bytes | None] = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        assert stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode), f"{path} is neither a file nor a folder"
        assert stat.S_ISDIR(info.st_mode) or info.st_nlink == 1, f"{path} is a hard link"
        found[path.relative_to(folder).as_posix()] = path.read_bytes() if stat.S_ISREG(info.st_mode) else None
    return found


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_a_link_to_a_file_of_the_archive_is_unpacked_as_a_copy(tmp_path: Path, kind: str) -> None:
    members: list[Member] = [
        ("docs/a.md", "file", b"# A\n\nalpha\n"),
        ("b.md", "symlink", "docs/a.md"),
        ("docs/c.md", "symlink", "../b.md"),  # a link to a link
        ("docs/sub/d.md", "symlink", "../../docs/./a.md"),
    ]
    if kind == "tar":
        members.append(("docs/hard.md", "hardlink", "docs/a.md"))
    tree = tree_of(unpacked(tmp_path, kind, members))
    copies = ["b.md", "docs/c.md", "docs/sub/d.md"] + (["docs/hard.md"] if kind == "tar" else [])
    assert {name: tree[name] for name in copies} == dict.fromkeys(copies, b"# A\n\nalpha\n")
    assert tree["docs/a.md"] == b"# A\n\nalpha\n" and set(tree) == {"docs", "docs/sub", "docs/a.md", *copies}


@pytest.mark.parametrize("kind", ["tar", "zip"])
@pytest.mark.parametrize(
    ("members", "refusal"),
    [
        ([*DOCS, ("d", "symlink", "docs")], f"'d' {TO_A_FOLDER}"),
        ([*DOCS, ("top", "symlink", ".")], f"'top' {TO_A_FOLDER}"),
        ([("n", "symlink", "missing.md")], "'n' is a link to nothing in the archive"),
        ([*DOCS, ("f", "symlink", "docs/a.md/x")], "'f' is a link to nothing in the archive"),
        ([("o", "symlink", "../outside/secret")], "'o' is a link leading out of the folder"),
        ([("docs/o", "symlink", "../../secret")], "'docs/o' is a link leading out of the folder"),
        ([("o", "symlink", "/etc/passwd")], "'o' is a link leading out of the folder"),
        ([("s", "symlink", "up/secret"), ("up", "symlink", "..")], "'s' is a link leading out of the folder"),
        ([("p", "symlink", "q"), ("q", "symlink", "p")], "'p' is a link in a loop (or a chain of more than 40 links)"),
        ([*DOCS, ("d", "symlink", "docs"), ("d/x.md", "file", b"x")], "'d' is a link that other members lie below"),
        ([*DOCS, ("docs/a.md/x.md", "file", b"x")], "'docs/a.md' is both a file and a folder"),
    ],
)
def test_any_other_link_refuses_the_archive_before_anything_is_written(
    tmp_path: Path, kind: str, members: list[Member], refusal: str
) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        unpacked(tmp_path, kind, members)
    assert info.value.message == f"The uploaded archive is refused: {refusal}"
    assert not (tmp_path / "into").exists()


def test_a_hard_link_out_of_the_archive_is_refused(tmp_path: Path) -> None:
    for members, refusal in [
        ([("h", "hardlink", "../secret")], "'h' is a link leading out of the folder"),
        ([*DOCS, ("h", "hardlink", "docs/../../secret")], "'h' is a link leading out of the folder"),
        ([("h", "hardlink", "nothing.md")], "'h' is a link to nothing in the archive"),
    ]:
        with pytest.raises(InvalidArgumentError) as info:
            unpacked(tmp_path, "tar", members)  # type: ignore[arg-type]
        assert info.value.message == f"The uploaded archive is refused: {refusal}"
        assert not (tmp_path / "into").exists()


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_copies_of_linked_files_count_toward_the_cap(tmp_path: Path, kind: str) -> None:
    members: list[Member] = [("big.md", "file", b"x" * 1000)]
    members += [(f"copy{n}.md", "symlink", "big.md") for n in range(20)]
    assert len(tree_of(unpacked(tmp_path, kind, members, cap=21_000))) == 21
    (tmp_path / "again").mkdir()
    with pytest.raises(TooLargeError) as info:
        unpacked(tmp_path / "again", kind, members, cap=20_999)
    assert info.value.message == "The uploaded archive unpacks to more than 20999 bytes"
    assert not (tmp_path / "again" / "into").exists()
