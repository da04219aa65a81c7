"""add_resource at the library level: what is walked, what is stored, what a re-add does.

Hash embedder everywhere except the Ctrl-C test, which needs ingestion slow enough to
interrupt (the real local model).
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from helpers import EN_FILES, ZH_FILES, make_tree, run_module, set_mtime, snapshot, start_module, unharmed
from hypothesis import given, settings
from hypothesis import strategies as st

from openviking.embedded.client import OpenViking
from openviking.errors import (
    AlreadyExistsError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    OpenVikingWarning,
)
from openviking.store.lance import LanceStore
from openviking.values.timefilter import format_iso8601
from openviking.values.uri import parse

R = "viking://resources"


def files_under(client: OpenViking, uri: str) -> set[str]:
    return {e["uri"] for e in client.ls(uri, recursive=True) if not e["isDir"]}


# ----------------------------------------------------------------------------- a tree
def test_add_a_tree_mirrors_it_one_to_one(hash_client: OpenViking, en_tree: Path) -> None:
    result = hash_client.add_resource(en_tree)
    assert result.root_uri == f"{R}/handbook"
    assert result.added == len(EN_FILES)
    assert (result.updated, result.unchanged, result.removed, result.skipped) == (0, 0, 0, 0)
    assert result.records_embedded > 0
    assert files_under(hash_client, f"{R}/handbook") == {f"{R}/handbook/{rel}" for rel in EN_FILES}
    dirs = {e["uri"] for e in hash_client.ls(f"{R}/handbook", recursive=True) if e["isDir"]}
    assert dirs == {f"{R}/handbook/deploy", f"{R}/handbook/notes"}
    for rel, text in EN_FILES.items():
        assert hash_client.read(f"{R}/handbook/{rel}") == text


def test_add_a_chinese_tree(hash_client: OpenViking, zh_tree: Path) -> None:
    result = hash_client.add_resource(zh_tree)
    assert result.root_uri == f"{R}/手册"
    assert result.added == len(ZH_FILES)
    assert files_under(hash_client, f"{R}/手册") == {f"{R}/手册/{rel}" for rel in ZH_FILES}
    assert hash_client.read(f"{R}/手册/部署/容器.md") == ZH_FILES["部署/容器.md"]
    top = hash_client.find("身份认证 密钥", target_uri=f"{R}/手册", level=2)
    assert top.resources[0].uri == f"{R}/手册/认证.md"


def test_hidden_files_and_folders_are_skipped(hash_client: OpenViking, tmp_path: Path) -> None:
    tree = make_tree(
        tmp_path / "t",
        {
            "visible.md": "# Visible\n\nShown.\n",
            ".secret.md": "# Secret\n\nHidden file.\n",
            ".git/config": "[core]\n",
            ".cache/notes.md": "# Cache\n\nHidden folder.\n",
            "sub/.env": "TOKEN=x\n",
            "sub/ok.md": "# Ok\n\nShown too.\n",
        },
    )
    added = hash_client.add_resource(tree)
    assert files_under(hash_client, f"{R}/t") == {f"{R}/t/visible.md", f"{R}/t/sub/ok.md"}
    # A hidden document is listed as skipped; a tool's dotfiles and hidden folders are not.
    assert added["skipped_files"] == [
        {"path": ".secret.md", "reason": "hidden: its name starts with a dot", "code": "HIDDEN"}
    ]


def test_dot_named_documents_are_listed_as_skipped(hash_client: OpenViking, tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "dots", {"..md": "# Dots\n", "...md": "# More\n", "ok.md": "# Ok\n\nShown.\n"})
    added = hash_client.add_resource(tree)
    assert added["added"] == 1 and added["skipped"] == 2
    assert sorted(f["path"] for f in added["skipped_files"]) == ["...md", "..md"]


def test_gitignore_is_honoured_including_nested_ones(hash_client: OpenViking, tmp_path: Path) -> None:
    tree = make_tree(
        tmp_path / "repo",
        {
            ".gitignore": "*.log\nbuild/\n/top-only.md\n",
            "keep.md": "# Keep\n\nKept.\n",
            "debug.log": "log line\n",
            "top-only.md": "# Top\n\nIgnored at the root only.\n",
            "build/out.md": "# Out\n\nBuild output.\n",
            "private.md": "# Root private\n\nNot matched by the nested rule.\n",
            "src/.gitignore": "private.md\n",
            "src/private.md": "# Private\n\nIgnored by the nested .gitignore.\n",
            "src/code.md": "# Code\n\nKept.\n",
            "src/top-only.md": "# Top\n\nAnchored rule does not apply here.\n",
            "src/deep/trace.log": "ignored by the root rule\n",
            "src/deep/private.md": "# Deep private\n\nThe nested rule applies below its folder too.\n",
            "src/deep/build/x.md": "# X\n\nIgnored: build/ matches at any depth.\n",
        },
    )
    hash_client.add_resource(tree)
    assert files_under(hash_client, f"{R}/repo") == {
        f"{R}/repo/keep.md",
        f"{R}/repo/private.md",
        f"{R}/repo/src/code.md",
        f"{R}/repo/src/top-only.md",
    }


def test_nested_gitignore_negation_re_includes(hash_client: OpenViking, tmp_path: Path) -> None:
    # git: patterns of a deeper .gitignore take precedence over those of the folders above it
    tree = make_tree(
        tmp_path / "repo",
        {
            ".gitignore": "*.log\n",
            "debug.log": "ignored\n",
            "src/.gitignore": "!important.log\n",
            "src/important.log": "re-included by the nested negation\n",
            "src/other.log": "still ignored\n",
        },
    )
    hash_client.add_resource(tree)
    assert files_under(hash_client, f"{R}/repo") == {f"{R}/repo/src/important.log"}


def test_include_and_exclude(hash_client: OpenViking, tmp_path: Path) -> None:
    tree = make_tree(
        tmp_path / "mix",
        {
            "a.md": "# A\n\nMarkdown.\n",
            "b.txt": "plain text\n",
            "drafts/c.md": "# C\n\nDraft.\n",
            "docs/d.md": "# D\n\nDoc.\n",
            "docs/e.rst": "E\n=\n\nRst.\n",
        },
    )
    hash_client.add_resource(tree, to=f"{R}/inc", include=["*.md"])
    assert files_under(hash_client, f"{R}/inc") == {f"{R}/inc/a.md", f"{R}/inc/drafts/c.md", f"{R}/inc/docs/d.md"}
    hash_client.add_resource(tree, to=f"{R}/exc", exclude=["drafts/", "*.txt"])
    assert files_under(hash_client, f"{R}/exc") == {f"{R}/exc/a.md", f"{R}/exc/docs/d.md", f"{R}/exc/docs/e.rst"}
    hash_client.add_resource(tree, to=f"{R}/both", include=["*.md"], exclude=["docs/"])
    assert files_under(hash_client, f"{R}/both") == {f"{R}/both/a.md", f"{R}/both/drafts/c.md"}


def test_binary_file_is_skipped_and_counted(hash_client: OpenViking, tmp_path: Path) -> None:
    tree = make_tree(
        tmp_path / "bin",
        {
            "a.md": "# A\n\nText.\n",
            "image.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),
        },
    )
    result = hash_client.add_resource(tree)
    assert result.added == 1
    assert result.skipped == 1
    assert {"path": "image.png", "reason": "binary", "code": "BINARY"} in result.skipped_files
    assert files_under(hash_client, f"{R}/bin") == {f"{R}/bin/a.md"}


def test_non_utf8_file_is_read_in_the_encoding_found(hash_client: OpenViking, tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "enc", {"latin.md": "# Café\n\nCrème brûlée recipe.\n".encode("latin-1")})
    with pytest.warns(OpenVikingWarning, match="not UTF-8"):  # the SDK says so too, as the CLI does
        result = hash_client.add_resource(tree)
    assert result.added == 1 and result.skipped == 0
    text = hash_client.read(f"{R}/enc/latin.md")
    assert text == "# Café\n\nCrème brûlée recipe.\n"  # no byte lost to U+FFFD
    # ... and says which encoding it was read in.
    assert len(result.warnings) == 1
    assert result.warnings[0]["path"] == "latin.md"
    assert result.warnings[0]["warning"] == "not UTF-8: read as cp1252"
    assert result.to_dict()["warnings"] == result.warnings


def test_utf8_with_a_literal_replacement_character_is_no_warning(hash_client: OpenViking, tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "fffd", {"a.md": "# A\n\nThe replacement character \ufffd, on purpose.\n"})
    result = hash_client.add_resource(tree)
    assert result.added == 1 and result.warnings == []


def test_utf16_with_a_byte_order_mark_is_text(hash_client: OpenViking, tmp_path: Path) -> None:
    text = "# UTF-16 页面\n\nCrème brûlée and 崩溃恢复.\n"
    tree = make_tree(
        tmp_path / "u16",
        {"le.md": b"\xff\xfe" + text.encode("utf-16-le"), "be.md": b"\xfe\xff" + text.encode("utf-16-be")},
    )
    result = hash_client.add_resource(tree)
    assert result.added == 2 and result.skipped == 0 and result.warnings == []
    assert hash_client.read(f"{R}/u16/le.md") == text
    assert hash_client.read(f"{R}/u16/be.md") == text
    found = hash_client.grep(f"{R}/u16", "brûlée")
    assert sorted(m["uri"] for m in found["matches"]) == [f"{R}/u16/be.md", f"{R}/u16/le.md"]


def test_skipped_counts_every_listed_file(hash_client: OpenViking, tmp_path: Path) -> None:
    outside = make_tree(tmp_path / "elsewhere", {"x.md": "# X\n\nx.\n"})
    tree = make_tree(tmp_path / "count", {"ok.md": "# Ok\n\nText.\n", "blob.bin": b"\x00\x01binary"})
    (tree / "dangling.md").symlink_to(tmp_path / "missing.md")
    (tree / "linked").symlink_to(outside, target_is_directory=True)
    result = hash_client.add_resource(tree)
    assert result.added == 1
    assert {item["path"] for item in result.skipped_files} == {"dangling.md", "linked", "blob.bin"}
    assert result.skipped == len(result.skipped_files) == 3


@pytest.mark.parametrize(("option", "pattern"), [("include", "["), ("include", "docs/[ab"), ("exclude", "trailing\\")])
def test_a_pattern_that_cannot_match_is_an_error(
    hash_client: OpenViking, tmp_path: Path, option: str, pattern: str
) -> None:
    tree = make_tree(tmp_path / "pat", {"a.md": "# A\n\nText.\n"})
    hash_client.add_resource(tree, to=f"{R}/kept")
    flag = f"--{option}"
    error = unharmed(hash_client, lambda: hash_client.add_resource(tree, to=f"{R}/pat", **{option: ["*.md", pattern]}))
    assert isinstance(error, InvalidArgumentError)
    assert error.message == f"Invalid {flag} pattern: {pattern!r}"
    assert error.details == {"pattern": pattern, "option": flag}
    assert ".gitignore rules" in (error.hint or "")


def test_a_symlink_loop_is_skipped_and_the_rest_is_added(hash_client: OpenViking, tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "loop", {"a.md": "# A\n\nText.\n"})
    (tree / "b").symlink_to(tree / "c")
    (tree / "c").symlink_to(tree / "b")
    result = hash_client.add_resource(tree)
    assert result.added == 1
    assert {item["path"]: item["reason"] for item in result.skipped_files} == {"b": "symlink loop", "c": "symlink loop"}


def test_files_whose_names_map_to_one_uri_are_not_overwritten_in_turn(hash_client: OpenViking, tmp_path: Path) -> None:
    tree = make_tree(
        tmp_path / "clash",
        {
            "c#d.md": "# Hash\n\nHASH\n",
            "c_d.md": "# Under\n\nUNDER\n",
            "c?d.md": "# Question\n\nQUESTION\n",
            "x#y/inner.md": "# Inner\n\nINNER\n",
            "x_y": "a file where a folder's URI is\n",
        },
    )
    with pytest.warns(OpenVikingWarning, match="x#y: stored as"):
        first = hash_client.add_resource(tree)
    assert files_under(hash_client, f"{R}/clash") == {f"{R}/clash/c_d.md", f"{R}/clash/x_y/inner.md"}
    assert hash_client.read(f"{R}/clash/c_d.md") == "# Under\n\nUNDER\n"  # the name that needed no change
    reasons = {item["path"]: item["reason"] for item in first.skipped_files}
    assert reasons["c#d.md"] == reasons["c?d.md"] == f"its name maps to the same URI as c_d.md ({R}/clash/c_d.md)"
    assert reasons["x_y"] == f"its name maps to the URI of a folder ({R}/clash/x_y)"
    assert first.added == 2 and first.skipped == 3
    again = hash_client.add_resource(tree)
    assert (again.added, again.updated, again.unchanged, again.removed) == (0, 0, 2, 0)
    assert hash_client.read(f"{R}/clash/c_d.md") == "# Under\n\nUNDER\n"


def test_names_that_start_like_a_drive_are_added_not_refused(hash_client: OpenViking, tmp_path: Path) -> None:
    tree = make_tree(
        tmp_path / "drives",
        {"ok.md": "# Ok\n\nok\n", "C:notes.md": "# C\n\nC\n", "D:dir/x.md": "# X\n\nx\n", "e:f:g.md": "# E\n\ne\n"},
    )
    with pytest.warns(OpenVikingWarning, match="stored as"):  # the SDK says so too, as the CLI does
        result = hash_client.add_resource(tree)  # one such name does not refuse the whole folder
    assert (result.added, result.skipped) == (4, 0)
    assert files_under(hash_client, f"{R}/drives") == {
        f"{R}/drives/{name}" for name in ("ok.md", "C_notes.md", "D_dir/x.md", "e_f:g.md")
    }
    assert hash_client.read(f"{R}/drives/C_notes.md") == "# C\n\nC\n"
    drive = "a URI segment cannot hold \\, ? or #, control characters, or start like a drive (C:)"
    assert sorted(result.warnings, key=lambda w: w["path"]) == [  # a changed name is said, once
        {"path": "C:notes.md", "warning": f"stored as {R}/drives/C_notes.md: {drive}"},
        {"path": "D:dir", "warning": f"stored as {R}/drives/D_dir: {drive}"},  # a folder once, not per file
        {"path": "e:f:g.md", "warning": f"stored as {R}/drives/e_f:g.md: {drive}"},
    ]
    assert hash_client.stat(f"{R}/drives/D_dir")["source"] == str(tree / "D:dir")  # the folder it mirrors
    (tree / "C:notes.md").write_text("# C\n\nC again\n")
    assert hash_client.add_resource(tree).warnings == []  # updated, not new: said already
    single = hash_client.add_resource(tree / "C:notes.md", to=f"{R}/single")
    assert single.root_uri == f"{R}/single" and single.added == 1 and single.warnings == []  # the name asked for
    rule = "a name made from a path keeps letters, digits, '-', '_' and '.', up to 50 characters (--to names it)"
    with pytest.warns(OpenVikingWarning, match="a name made from a path"):  # the SDK says so too, as the CLI does
        named = hash_client.add_resource(tree / "C:notes.md")  # no --to: the name comes from the path
    assert named.warnings == [{"path": str(tree / "C:notes.md"), "warning": f"stored as {R}/C_notes.md: {rule}"}]
    assert hash_client.add_resource(tree / "C:notes.md").warnings == []  # said once
    (tmp_path / "n#1").mkdir()
    (tmp_path / "n#1" / "in.md").write_text("# In\n\nin\n")
    with pytest.warns(OpenVikingWarning, match="a name made from a path"):  # the SDK says so too, as the CLI does
        folder = hash_client.add_resource(tmp_path / "n#1", parent=R)
    assert folder.warnings == [{"path": str(tmp_path / "n#1"), "warning": f"stored as {R}/n_1: {rule}"}]


def test_a_made_folder_takes_the_local_folder_it_then_mirrors_as_its_source(
    hash_client: OpenViking, tmp_path: Path
) -> None:
    hash_client.mkdir(f"{R}/made/d_x")  # made by hand first: it has no source of its own
    tree = make_tree(tmp_path / "n", {"d#x/in.md": "# In\n\nin\n"})
    with pytest.warns(OpenVikingWarning, match="d#x: stored as"):
        hash_client.add_resource(tree, to=f"{R}/made")
    assert hash_client.stat(f"{R}/made/d_x")["source"] == str(tree / "d#x")  # not d_x spelled back from the URI


def test_names_that_are_not_utf8_are_added_with_their_bytes_spelled_out(
    hash_client: OpenViking, tmp_path: Path
) -> None:
    # Bytes a Latin-1 machine wrote (0xE9 is é there), which Python holds as lone surrogates:
    # one such name must not stop the whole add with "this is a bug".
    base = tmp_path / "latin"
    (base / os.fsdecode(b"d\xe9")).mkdir(parents=True)
    (base / "ok.md").write_text("# Ok\n\nok\n", encoding="utf-8")
    (base / os.fsdecode(b"caf\xe9.md")).write_text("# Cafe\n\nespresso\n", encoding="utf-8")
    (base / os.fsdecode(b"d\xe9") / "in.md").write_text("# In\n\ninside\n", encoding="utf-8")
    with pytest.warns(OpenVikingWarning, match="not UTF-8"):  # the SDK says so too, as the CLI does
        result = hash_client.add_resource(base)
    assert (result.added, result.skipped) == (3, 0)
    assert files_under(hash_client, f"{R}/latin") == {f"{R}/latin/{n}" for n in ("ok.md", "caf_xe9.md", "d_xe9/in.md")}
    spelled = "its name is not UTF-8 (each such byte is spelled out, as \\xe9)"
    assert sorted(result.warnings, key=lambda w: w["path"]) == [
        {"path": "caf\\xe9.md", "warning": f"stored as {R}/latin/caf_xe9.md: {spelled}"},
        {"path": "d\\xe9", "warning": f"stored as {R}/latin/d_xe9: {spelled}"},
    ]
    assert hash_client.read(f"{R}/latin/caf_xe9.md") == "# Cafe\n\nespresso\n"
    assert hash_client.stat(f"{R}/latin/d_xe9/in.md")["source"] == str(base) + "/d\\xe9/in.md"
    assert hash_client.stat(f"{R}/latin/d_xe9")["source"] == str(base) + "/d\\xe9"
    again = hash_client.add_resource(base)
    assert (again.added, again.updated, again.unchanged, again.removed) == (0, 0, 3, 0)
    (base / os.fsdecode(b"caf\xe9.md")).unlink()
    gone = hash_client.add_resource(base)
    assert (gone.unchanged, gone.removed) == (2, 1)
    with pytest.warns(OpenVikingWarning, match="a name made from a path"):
        folder = hash_client.add_resource(base / os.fsdecode(b"d\xe9"))
    assert folder.root_uri == f"{R}/d_xe9" and folder.added == 1
    assert hash_client.add_resource(base / os.fsdecode(b"d\xe9")).unchanged == 1


def test_symlink_outside_is_not_followed_inside_is(hash_client: OpenViking, tmp_path: Path) -> None:
    outside = make_tree(tmp_path / "outside", {"secret.md": "# Secret\n\nOutside the folder.\n"})
    tree = make_tree(tmp_path / "links", {"real.md": "# Real\n\nInside.\n", "dir/x.md": "# X\n\nx.\n"})
    (tree / "escape.md").symlink_to(outside / "secret.md")
    (tree / "alias.md").symlink_to(tree / "real.md")
    (tree / "outdir").symlink_to(outside, target_is_directory=True)
    result = hash_client.add_resource(tree)
    assert files_under(hash_client, f"{R}/links") == {
        f"{R}/links/real.md",
        f"{R}/links/alias.md",
        f"{R}/links/dir/x.md",
    }
    assert hash_client.read(f"{R}/links/alias.md") == "# Real\n\nInside.\n"
    reasons = {item["path"]: item["reason"] for item in result.skipped_files}
    assert "escape.md" in reasons and "outside" in reasons["escape.md"]
    assert "outdir" in reasons
    secret_hits = hash_client.find("Outside the folder secret", target_uri=f"{R}/links", score_threshold=0)
    assert all("secret" not in hit.uri for hit in secret_hits)


def test_unreadable_file_is_skipped_and_counted(hash_client: OpenViking, tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "perm", {"ok.md": "# Ok\n\nReadable.\n", "locked.md": "# Locked\n\nNo.\n"})
    locked = tree / "locked.md"
    locked.chmod(0)
    try:
        if os.access(locked, os.R_OK):
            pytest.skip("running with privileges that can read a chmod 000 file (root)")
        result = hash_client.add_resource(tree)
    finally:
        locked.chmod(0o644)
    assert result.added == 1
    assert result.skipped == 1
    assert any(item["path"] == "locked.md" and "cannot read" in item["reason"] for item in result.skipped_files)
    assert files_under(hash_client, f"{R}/perm") == {f"{R}/perm/ok.md"}


# ----------------------------------------------------------------------------- re-adding
def test_created_at_kept_updated_at_is_the_mtime(hash_client: OpenViking, en_tree: Path) -> None:
    first_mtime = datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    set_mtime(en_tree / "auth.md", first_mtime)
    hash_client.add_resource(en_tree)
    first = hash_client.stat(f"{R}/handbook/auth.md")
    assert first["updated_at"] == "2025-01-02T03:04:05.678Z"
    created = datetime.fromisoformat(first["created_at"].replace("Z", "+00:00"))
    assert abs((datetime.now(UTC) - created).total_seconds()) < 3600  # "when it was first added", not the mtime

    (en_tree / "auth.md").write_text(EN_FILES["auth.md"] + "\nA new paragraph.\n", encoding="utf-8")
    second_mtime = datetime(2025, 6, 7, 8, 9, 10, tzinfo=UTC)
    set_mtime(en_tree / "auth.md", second_mtime)
    result = hash_client.add_resource(en_tree)
    assert result.updated == 1
    second = hash_client.stat(f"{R}/handbook/auth.md")
    assert second["created_at"] == first["created_at"]
    assert second["updated_at"] == format_iso8601(second_mtime)
    by_time = hash_client.find(
        "authenticate", target_uri=f"{R}/handbook", level=2, since="2025-06-07", until="2025-06-07", score_threshold=0
    )
    assert [hit.uri for hit in by_time] == [f"{R}/handbook/auth.md"]


def test_re_adding_an_unchanged_tree_embeds_nothing(hash_client: OpenViking, en_tree: Path) -> None:
    first = hash_client.add_resource(en_tree)
    before = hash_client.ls(f"{R}/handbook", recursive=True)
    again = hash_client.add_resource(en_tree)
    assert again.unchanged == len(EN_FILES)
    assert (again.added, again.updated, again.removed, again.skipped) == (0, 0, 0, 0)
    assert again.records_embedded == 0
    assert again.root_uri == first.root_uri
    assert hash_client.ls(f"{R}/handbook", recursive=True) == before


def test_touched_but_identical_file_embeds_nothing(hash_client: OpenViking, en_tree: Path) -> None:
    hash_client.add_resource(en_tree)
    set_mtime(en_tree / "auth.md", datetime(2030, 1, 1, tzinfo=UTC))
    again = hash_client.add_resource(en_tree)
    assert again.records_embedded == 0
    assert again.added == 0


def test_changing_one_file_re_embeds_only_its_chunks(hash_client: OpenViking, tmp_path: Path) -> None:
    sections = "".join(
        f"## Part {i}\n\n" + f"Paragraph {i} talks about subject number {i}. " * 12 + "\n\n" for i in range(8)
    )
    tree = make_tree(
        tmp_path / "big",
        {
            "long.md": "# Long\n\nA long document with several parts.\n\n" + sections,
            "other.md": "# Other\n\nSomething else entirely.\n",
            "third.md": "# Third\n\nA third file.\n",
        },
    )
    hash_client.add_resource(tree)
    chunks = hash_client.stat(f"{R}/big/long.md")["records"]
    assert chunks >= 4
    # change the last part only: the summary (title + first sentences) stays the same
    (tree / "long.md").write_text((tree / "long.md").read_text() + "An extra closing sentence.\n")
    again = hash_client.add_resource(tree)
    assert again.updated == 1
    assert again.unchanged == 2
    assert 1 <= again.records_embedded < chunks
    assert hash_client.stat(f"{R}/big/long.md")["records"] == chunks


def test_a_new_file_embeds_only_itself_and_its_directories(hash_client: OpenViking, en_tree: Path) -> None:
    hash_client.add_resource(en_tree)
    (en_tree / "deploy" / "helm.md").write_text("# Helm\n\nHelm charts for the cluster.\n")
    again = hash_client.add_resource(en_tree)
    assert (again.added, again.updated, again.unchanged) == (1, 0, len(EN_FILES))
    # the file's chunk plus the L0/L1 of deploy/ and of the root (whose overviews list it)
    assert 1 <= again.records_embedded <= 1 + 2 * 2


def test_a_file_deleted_from_the_source_is_removed(hash_client: OpenViking, en_tree: Path) -> None:
    hash_client.add_resource(en_tree)
    gone = f"{R}/handbook/notes/cooking.md"
    assert gone in [hit.uri for hit in hash_client.find("pancakes flour eggs", target_uri=f"{R}/handbook")]
    (en_tree / "notes" / "cooking.md").unlink()
    result = hash_client.add_resource(en_tree)
    assert result.removed == 1
    assert gone not in files_under(hash_client, f"{R}/handbook")
    with pytest.raises(NotFoundError):
        hash_client.read(gone)
    hits = hash_client.find("pancakes flour eggs", target_uri=f"{R}/handbook", score_threshold=0, limit=100)
    assert all(not hit.uri.startswith(gone) for hit in hits)
    # the emptied folder goes too
    assert f"{R}/handbook/notes" not in {e["uri"] for e in hash_client.ls(f"{R}/handbook", recursive=True)}


def test_copies_of_the_source_added_deeper_are_not_taken_for_vanished_files(
    hash_client: OpenViking, tmp_path: Path
) -> None:
    small = make_tree(tmp_path / "small", {"a.md": "# A\n\nAlpha.\n", "b.md": "# B\n\nBeta.\n"})
    hash_client.add_resource(small, to=f"{R}/p/copy1")
    hash_client.add_resource(small / "a.md", to=f"{R}/p/inner/a-copy.md")
    result = hash_client.add_resource(small, to=f"{R}/p")
    assert result.removed == 0
    assert files_under(hash_client, f"{R}/p") == {
        f"{R}/p/a.md",
        f"{R}/p/b.md",
        f"{R}/p/copy1/a.md",
        f"{R}/p/copy1/b.md",
        f"{R}/p/inner/a-copy.md",
    }
    # a file that does leave the source still goes, from where this add put it
    (small / "b.md").unlink()
    assert hash_client.add_resource(small, to=f"{R}/p").removed == 2  # p/b.md and the copy1 copy
    assert f"{R}/p/b.md" not in files_under(hash_client, f"{R}/p")


# ----------------------------------------------------------------------------- targets
def test_to_target(hash_client: OpenViking, en_tree: Path) -> None:
    result = hash_client.add_resource(en_tree, to=f"{R}/docs/v1")
    assert result.root_uri == f"{R}/docs/v1"
    assert f"{R}/docs/v1/auth.md" in files_under(hash_client, f"{R}/docs")


def test_to_a_scope_root_puts_the_resource_under_its_name(hash_client: OpenViking, en_tree: Path) -> None:
    assert hash_client.add_resource(en_tree, to=R).root_uri == f"{R}/handbook"
    assert hash_client.add_resource(en_tree, to="viking://resources/").root_uri == f"{R}/handbook"


def test_parent_target(hash_client: OpenViking, en_tree: Path, zh_tree: Path) -> None:
    hash_client.add_resource(zh_tree, to=f"{R}/lib")
    result = hash_client.add_resource(en_tree, parent=f"{R}/lib")
    assert result.root_uri == f"{R}/lib/handbook"
    assert f"{R}/lib/handbook/auth.md" in files_under(hash_client, f"{R}/lib")
    assert f"{R}/lib/认证.md" in files_under(hash_client, f"{R}/lib")


def test_parent_must_exist(hash_client: OpenViking, en_tree: Path, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError) as info:
        hash_client.add_resource(en_tree, parent=f"{R}/nowhere")
    assert "Parent not found" in info.value.message
    assert info.value.hint
    assert snapshot(tmp_path / "store") is None


def test_parent_must_be_a_directory(hash_client: OpenViking, en_tree: Path) -> None:
    hash_client.add_resource(en_tree)
    with pytest.raises(FailedPreconditionError):
        hash_client.add_resource(en_tree, parent=f"{R}/handbook/auth.md")


def test_to_and_parent_together_are_refused(hash_client: OpenViking, en_tree: Path, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        hash_client.add_resource(en_tree, to=f"{R}/a", parent=f"{R}/b")
    assert "--to" in info.value.message and "--parent" in info.value.message
    assert snapshot(tmp_path / "store") is None


def test_user_scope_target_is_the_users_resources(hash_client: OpenViking, en_tree: Path) -> None:
    assert hash_client.add_resource(en_tree, to="viking://user").root_uri == "viking://user/default/resources/handbook"


def test_single_file(hash_client: OpenViking, en_tree: Path) -> None:
    result = hash_client.add_resource(en_tree / "auth.md")
    assert result.root_uri == f"{R}/auth.md"
    assert result.added == 1
    assert hash_client.read(f"{R}/auth.md") == EN_FILES["auth.md"]
    info = hash_client.stat(f"{R}/auth.md")
    assert info["isDir"] is False
    assert info["source"] == str(en_tree / "auth.md")
    exact = hash_client.add_resource(en_tree / "deploy" / "docker.md", to=f"{R}/ops/docker-guide.md")
    assert exact.root_uri == f"{R}/ops/docker-guide.md"
    assert hash_client.read(f"{R}/ops/docker-guide.md") == EN_FILES["deploy/docker.md"]
    assert hash_client.abstract(f"{R}/ops")  # its new directory is described
    again = hash_client.add_resource(en_tree / "auth.md")
    assert (again.unchanged, again.records_embedded) == (1, 0)


def test_file_onto_a_directory_is_refused(hash_client: OpenViking, en_tree: Path) -> None:
    hash_client.add_resource(en_tree)
    before = hash_client.ls(f"{R}/handbook", recursive=True)
    with pytest.raises(AlreadyExistsError) as info:
        hash_client.add_resource(en_tree / "auth.md", to=f"{R}/handbook")
    assert info.value.code == "ALREADY_EXISTS"
    assert hash_client.ls(f"{R}/handbook", recursive=True) == before


# ----------------------------------------------------------------------------- L0 / L1
@settings(max_examples=300, deadline=None)
@given(text=st.text(st.sampled_from("ab .!?。\n"), max_size=700), limit=st.integers(8, 300))
def test_generated_text_never_exceeds_its_limit(text: str, limit: int) -> None:
    from openviking.ingest.summary import file_summary, truncate_generated

    cut = truncate_generated(text, limit)
    assert len(cut) <= limit and cut == cut.strip()
    assert len(file_summary(text, "name.md", limit)) <= limit


def test_a_long_first_sentence_is_cut_at_a_word() -> None:
    from openviking.ingest.summary import file_summary

    sentence = "OpenViking keeps " + "the context of an agent " * 20 + "in one store. Then more."
    summary = file_summary(f"# Guide\n\n{sentence}\n", "guide.md")
    assert len(summary) <= 256 and summary.startswith("Guide: OpenViking keeps the context") and summary.endswith("...")


def test_directories_get_l0_and_l1(hash_client: OpenViking, en_tree: Path) -> None:
    hash_client.add_resource(en_tree)
    for directory in (f"{R}/handbook", f"{R}/handbook/deploy"):
        abstract = hash_client.abstract(directory)
        overview = hash_client.overview(directory)
        assert abstract.strip() and "not ready" not in abstract
        assert overview.strip() and "not ready" not in overview
        assert len(abstract) <= 256
        assert len(overview) <= 4000
        assert hash_client.read(f"{directory}/.abstract.md") == abstract
        assert hash_client.read(f"{directory}/.overview.md") == overview
    deploy_overview = hash_client.overview(f"{R}/handbook/deploy")
    assert "docker.md" in deploy_overview and "kubernetes.md" in deploy_overview
    # a README's summary is the folder's brief paragraph
    assert "handbook explains how the service is run" in hash_client.abstract(f"{R}/handbook")
    # a file: abstract is its summary, overview falls back to its directory
    assert hash_client.abstract(f"{R}/handbook/deploy/docker.md").startswith("Docker deployment")
    assert hash_client.overview(f"{R}/handbook/deploy/docker.md") == deploy_overview


def test_sidecars_listed_with_their_real_size(hash_client: OpenViking, en_tree: Path) -> None:
    hash_client.add_resource(en_tree)
    entries = {e["uri"]: e for e in hash_client.ls(f"{R}/handbook", show_hidden=True)}
    for name, text in (
        (".abstract.md", hash_client.abstract(f"{R}/handbook")),
        (".overview.md", hash_client.overview(f"{R}/handbook")),
    ):
        uri = f"{R}/handbook/{name}"
        assert uri in entries
        assert entries[uri]["size"] == len(text.encode("utf-8")) == hash_client.stat(uri)["size"]
    assert f"{R}/handbook/.abstract.md" not in {e["uri"] for e in hash_client.ls(f"{R}/handbook")}


def test_a_level_0_or_1_hits_uri_reads_as_its_directory(hash_client: OpenViking, en_tree: Path) -> None:
    # find returns <dir>/.abstract.md and <dir>/.overview.md for directory hits; the loops of
    # OpenViking's retrieval API examples call overview() and relations() on them.
    hash_client.add_resource(en_tree)
    hash_client.link(f"{R}/handbook", f"{R}/handbook/auth.md", "start here")
    for name in (".abstract.md", ".overview.md"):
        hit = f"{R}/handbook/{name}"
        assert hash_client.overview(hit) == hash_client.overview(f"{R}/handbook")
        assert hash_client.abstract(hit) == hash_client.abstract(f"{R}/handbook")
        assert hash_client.relations(hit) == [{"uri": f"{R}/handbook/auth.md", "reason": "start here"}]
    with pytest.raises(NotFoundError):
        hash_client.overview(f"{R}/nowhere/.overview.md")


def test_a_title_that_only_starts_the_first_word_is_kept(hash_client: OpenViking, tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "titles", {"auth.md": "# Auth\n\nAuthentication uses API keys.\n"})
    hash_client.add_resource(tree)
    assert hash_client.abstract(f"{R}/titles/auth.md") == "Auth: Authentication uses API keys."


def test_a_file_name_with_a_control_character_is_added_under_a_clean_name(
    hash_client: OpenViking, tmp_path: Path
) -> None:
    tree = make_tree(tmp_path / "ctl", {"ok.md": "# Ok\n\nText.\n"})
    (tree / "a\x7fb.md").write_text("# Del\n\nA name with DEL.\n")
    with pytest.warns(OpenVikingWarning, match="stored as"):
        result = hash_client.add_resource(tree)
    assert result.added == 2
    assert files_under(hash_client, f"{R}/ctl") == {f"{R}/ctl/ok.md", f"{R}/ctl/a_b.md"}
    assert [w["path"] for w in result.warnings] == ["a\x7fb.md"]


def test_generated_abstracts_have_no_doubled_full_stop(hash_client: OpenViking, tmp_path: Path) -> None:
    # files whose first sentence starts with their title: their summary is that sentence alone
    tree = make_tree(
        tmp_path / "t1",
        {
            "a.md": "# Alpha\n\nAlpha talks about authentication tokens.\n",
            "sub/b.md": "# Beta\n\nBeta covers deployment with docker.\n",
        },
    )
    hash_client.add_resource(tree)
    for directory in (f"{R}/t1", f"{R}/t1/sub"):
        abstract = hash_client.abstract(directory)
        assert not re.search(r"(?<!\.)\.\.(?!\.)", abstract), abstract


# ----------------------------------------------------------------------------- tags
def test_tags_are_stored_normalised_and_filterable(hash_client: OpenViking, en_tree: Path, zh_tree: Path) -> None:
    hash_client.add_resource(en_tree, tags=["Env=Prod", " team=Search "])
    hash_client.add_resource(zh_tree, tags="env=dev")
    assert hash_client.stat(f"{R}/handbook/auth.md")["tags"] == ["env=prod", "team=search"]
    assert hash_client.stat(f"{R}/handbook")["tags"] == ["env=prod", "team=search"]
    assert hash_client.stat(f"{R}/手册/认证.md")["tags"] == ["env=dev"]
    prod = hash_client.find("authentication", tags="env=prod", score_threshold=0, limit=100)
    assert prod.total > 0
    assert all(hit.uri.startswith(f"{R}/handbook") for hit in prod)
    assert all("env=prod" in hit.tags for hit in prod)
    dev = hash_client.find("认证", tags=["ENV=dev"], score_threshold=0, limit=100)
    assert dev.total > 0 and all(hit.uri.startswith(f"{R}/手册") for hit in dev)


def test_retagging_updates_without_new_content(hash_client: OpenViking, en_tree: Path) -> None:
    hash_client.add_resource(en_tree, tags=["env=prod"])
    again = hash_client.add_resource(en_tree, tags=["env=staging"])
    assert again.unchanged == 0  # the tags changed, so every file is rewritten
    assert hash_client.stat(f"{R}/handbook/auth.md")["tags"] == ["env=staging"]
    assert hash_client.find("auth", tags="env=prod", score_threshold=0).total == 0
    hash_client.add_resource(en_tree, tags=["env=staging", "team=search"])
    reordered = hash_client.add_resource(en_tree, tags=["team=search", "ENV=staging"])  # the same tags
    assert (reordered.updated, reordered.directories) == (0, 0) and reordered.unchanged > 0


@pytest.mark.parametrize("bad", [["env"], ["=prod"], ["env="], ["a=b=c"]])
def test_bad_tags_are_refused_before_anything_is_written(
    hash_client: OpenViking, en_tree: Path, tmp_path: Path, bad: list[str]
) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        hash_client.add_resource(en_tree, tags=bad)
    assert "key=value" in info.value.message
    assert snapshot(tmp_path / "store") is None


# ----------------------------------------------------------------------------- bad sources
def test_missing_path(hash_client: OpenViking, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError) as info:
        hash_client.add_resource(tmp_path / "nope")
    assert "Path not found" in info.value.message
    assert snapshot(tmp_path / "store") is None


def test_empty_directory(hash_client: OpenViking, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidArgumentError) as info:
        hash_client.add_resource(tmp_path / "empty")
    assert "Nothing to add" in info.value.message
    assert snapshot(tmp_path / "store") is None


def test_binary_file_alone(hash_client: OpenViking, tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    with pytest.raises(InvalidArgumentError) as info:
        hash_client.add_resource(tmp_path / "blob.bin")
    assert "binary" in info.value.message
    assert snapshot(tmp_path / "store") is None


# ----------------------------------------------------------------------------- processes
def _all_records(store_path: Path | str) -> list[dict[str, Any]]:
    store = LanceStore.open(str(store_path))
    try:
        return store.all_records(["id", "uri", "level", "chunk", "text"])
    finally:
        store.close()


def test_two_processes_adding_the_same_target_at_once(tmp_path: Path, en_tree: Path, hash_conf: Path) -> None:
    more = {f"extra/file{i:02d}.md": f"# File {i}\n\nContent number {i} about topic {i}.\n" for i in range(30)}
    make_tree(en_tree, more)
    store = tmp_path / "store"
    args = [
        "add-resource",
        str(en_tree),
        "--to",
        f"{R}/same",
        "--store",
        str(store),
        "--config",
        str(hash_conf),
        "-o",
        "json",
    ]
    procs = [start_module(args) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert '"status": "ok"' in out
    listing = run_module(["ls", f"{R}/same", "-r", "-s", "--store", str(store), "--config", str(hash_conf)])
    assert listing.returncode == 0, listing.stderr
    uris = listing.stdout.split()
    duplicates = [u for u, n in Counter(uris).items() if n > 1]
    assert duplicates == []
    expected_files = {f"{R}/same/{rel}" for rel in [*EN_FILES, *more]}
    assert expected_files <= set(uris)
    records = _all_records(store)
    assert [i for i, n in Counter(r["id"] for r in records).items() if n > 1] == []
    keys = Counter((r["uri"], r["level"], r["chunk"]) for r in records)
    assert [k for k, n in keys.items() if n > 1] == []


def test_four_writers_of_one_folder_report_what_each_did(tmp_path: Path, hash_conf: Path) -> None:
    files = {
        f"part{i % 4}/note{i:03d}.md": f"# Note {i}\n\nNote number {i} of the shared folder.\n" for i in range(600)
    }
    tree = make_tree(tmp_path / "shared", files)
    args = ["add-resource", str(tree), "--store", str(tmp_path / "store"), "--config", str(hash_conf), "-o", "json"]
    procs = [start_module(args) for _ in range(4)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        results.append(json.loads(out)["result"])
    # Each file was written by one writer: the others found it written and say so.
    assert sum(r["added"] for r in results) == len(files)
    assert all(r["added"] + r["unchanged"] == len(files) and r["updated"] == 0 for r in results), results
    records = _all_records(tmp_path / "store")
    assert [i for i, n in Counter(r["id"] for r in records).items() if n > 1] == []


def test_two_processes_adding_different_trees_both_land(
    tmp_path: Path, en_tree: Path, zh_tree: Path, hash_conf: Path
) -> None:
    store = tmp_path / "store"
    procs = [
        start_module(["add-resource", str(tree), "--store", str(store), "--config", str(hash_conf)])
        for tree in (en_tree, zh_tree)
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    client = OpenViking(path=store, config_file=hash_conf)
    try:
        assert files_under(client, f"{R}/handbook") == {f"{R}/handbook/{rel}" for rel in EN_FILES}
        assert files_under(client, f"{R}/手册") == {f"{R}/手册/{rel}" for rel in ZH_FILES}
        top = {e["uri"] for e in client.ls(R)}
        assert top == {f"{R}/handbook", f"{R}/手册"}
        assert "handbook" in client.overview(R) and "手册" in client.overview(R)
    finally:
        client.close()


def test_an_add_stopped_midway_leaves_its_files_listable(
    hash_client: OpenViking, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openviking.ingest import files as ingest_files

    files = {f"deep/er/f{n:03d}.md": f"# Page {n}\n\nText of page {n}.\n" for n in range(400)}
    tree = make_tree(tmp_path / "stopped", files)
    real_write_batch, calls = ingest_files.write_batch, []

    def write_batch_then_stop(*args: Any, **kwargs: Any) -> int:
        if calls:
            raise KeyboardInterrupt  # Ctrl-C after the first batch
        calls.append(1)
        return real_write_batch(*args, **kwargs)

    monkeypatch.setattr(ingest_files, "write_batch", write_batch_then_stop)
    with pytest.raises(KeyboardInterrupt):
        hash_client.add_resource(tree, to=f"{R}/a/b/stopped")
    stored = files_under(hash_client, f"{R}/a")
    assert 0 < len(stored) < len(files)
    for folder in (f"{R}/a", f"{R}/a/b", f"{R}/a/b/stopped", f"{R}/a/b/stopped/deep", f"{R}/a/b/stopped/deep/er"):
        assert hash_client.stat(folder)["isDir"]
    assert {e["uri"] for e in hash_client.ls(f"{R}/a/b/stopped/deep/er")} == stored
    assert set(hash_client.glob("**/*.md", uri=f"{R}/a")["matches"]) == stored
    monkeypatch.setattr(ingest_files, "write_batch", real_write_batch)
    hash_client.add_resource(tree, to=f"{R}/a/b/stopped")
    assert len(files_under(hash_client, f"{R}/a")) == len(files)
    assert "f000.md" in hash_client.overview(f"{R}/a/b/stopped/deep/er")


@pytest.mark.slow
def test_ctrl_c_during_add_resource_then_a_rerun_completes(tmp_path: Path) -> None:
    topics = ["rivers", "mountains", "compilers", "gardens", "telescopes", "bridges", "violins", "glaciers"]
    files = {}
    for i in range(40):
        parts = [f"# Document {i} about {topics[i % len(topics)]}\n"]
        for j in range(8):
            parts.append(
                f"\n## Section {j}\n\n"
                + " ".join(
                    f"Sentence {k} of section {j} in document {i} describes {topics[(i + j + k) % 8]} in plain words."
                    for k in range(8)
                )
                + "\n"
            )
        files[f"folder{i % 4}/doc{i:02d}.md"] = "".join(parts)
    tree = make_tree(tmp_path / "corpus", files)
    store = tmp_path / "store"
    args = ["add-resource", str(tree), "--to", f"{R}/corpus", "--store", str(store)]
    proc = start_module(args)  # the default (real local) embedder: slow enough to interrupt
    time.sleep(3)
    assert proc.poll() is None, "add-resource finished before it could be interrupted; make the corpus bigger"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err
    assert "Interrupted. What was written is kept; run the same command again to finish." in err

    rerun = run_module([*args, "-o", "json"], timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    listing = run_module(["ls", f"{R}/corpus", "-r", "-s", "--store", str(store)])
    assert listing.returncode == 0, listing.stderr
    stored = {u for u in listing.stdout.split() if u.endswith(".md")}
    assert stored == {f"{R}/corpus/{rel}" for rel in files}
    again = run_module(["add-resource", str(tree), "--to", f"{R}/corpus", "--store", str(store), "-o", "json"])
    assert again.returncode == 0, again.stderr
    assert '"unchanged": 40' in again.stdout and '"records_embedded": 0' in again.stdout
    found = run_module(["find", "document 17 about bridges", "-u", f"{R}/corpus", "--store", str(store), "-o", "json"])
    assert found.returncode == 0, found.stderr
    assert f"{R}/corpus/folder1/doc17.md" in found.stdout


# ----------------------------------------------------------------------------- new files are appended
def _page_tree(root: Path, count: int) -> Path:
    """``count`` one-chunk pages: several write batches (a batch is about 192 chunks)."""
    return make_tree(root, {f"p{n:03d}.md": f"# Page {n}\n\nText of page {n}.\n" for n in range(count)})


def test_a_first_add_appends_instead_of_merging(
    hash_client: OpenViking, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    merged: list[list[str]] = []
    real_merge = LanceStore.replace_records

    def counting_merge(self: LanceStore, uris: Any, rows: Any, dimension: int) -> None:
        merged.append(list(uris))
        real_merge(self, uris, rows, dimension)

    monkeypatch.setattr(LanceStore, "replace_records", counting_merge)
    tree = _page_tree(tmp_path / "pages", 450)
    result = hash_client.add_resource(tree)
    assert result.added == 450
    file_merges = [uris for uris in merged if any(u.endswith(".md") for u in uris)]
    assert file_merges == []  # only the directories' L0/L1 went through a merge
    records = _all_records(hash_client.store_path)
    assert len({r["id"] for r in records}) == len(records)
    assert len([r for r in records if r["uri"].endswith(".md")]) == 450
    # Changed files still merge: one file edited, re-added.
    (tree / "p007.md").write_text("# Page 7\n\nNew text of page seven.\n", encoding="utf-8")
    assert hash_client.add_resource(tree).updated == 1
    assert [uris for uris in merged if any(u.endswith(".md") for u in uris)] == [[f"{R}/pages/p007.md"]]
    assert "New text of page seven" in hash_client.read(f"{R}/pages/p007.md")


@pytest.mark.parametrize("lost", ["one file's node", "every node under the root"])
def test_records_left_by_a_crashed_add_are_replaced_not_duplicated(
    hash_client: OpenViking, tmp_path: Path, lost: str
) -> None:
    tree = _page_tree(tmp_path / "pages", 30)
    hash_client.add_resource(tree)
    before = sorted((r["id"], r["text"]) for r in _all_records(hash_client.store_path))
    store = LanceStore.open(hash_client.store_path)
    # A crash between a batch's records and its nodes leaves records with no node.
    if lost == "one file's node":
        store.delete_nodes_by_uri([f"{R}/pages/p003.md"])
    else:
        store.delete_nodes_below(parse(f"{R}/pages"))
    assert any(r["uri"] == f"{R}/pages/p003.md" for r in _all_records(hash_client.store_path))
    hash_client.add_resource(tree)
    after = sorted((r["id"], r["text"]) for r in _all_records(hash_client.store_path))
    assert after == before
    assert hash_client.read(f"{R}/pages/p003.md") == "# Page 3\n\nText of page 3.\n"


def test_a_write_by_someone_else_between_batches_switches_back_to_merging(
    hash_client: OpenViking, tmp_path: Path
) -> None:
    tree = _page_tree(tmp_path / "pages", 600)
    late = f"{R}/pages/p590.md"  # written by the add's last batch
    other = OpenViking(path=hash_client.store_path, config=hash_client.config)
    calls: list[int] = []

    def progress(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 2:  # after the first batch: another client adds a file the add has not reached
            other.add_resource(tree / "p590.md", to=late)

    result = hash_client.add_resource(tree, progress=progress)
    other.close()
    # The other client stored p590.md as this add would have: this add says so, and leaves it.
    assert (result.added, result.unchanged) == (599, 1) and len(calls) >= 4
    records = _all_records(hash_client.store_path)
    assert len({r["id"] for r in records}) == len(records), "a record was written twice"
    assert [r["uri"] for r in records].count(late) == 1
    assert files_under(hash_client, f"{R}/pages") == {f"{R}/pages/p{n:03d}.md" for n in range(600)}
    assert hash_client.stat(late)["records"] == 1


def test_a_write_whose_embedder_does_not_answer_is_stored_and_found_by_its_words(tmp_path: Path) -> None:
    from helpers import hash_config
    from servers import StubServer, free_port, random_embeddings

    from openviking.config import config_from_dict
    from openviking.errors import UnavailableError

    def conf(api_base: str) -> Any:
        dense = {"provider": "openai", "api_base": api_base, "model": "m", "dimension": 8, "max_retries": 0}
        return config_from_dict({"embedding": {"dense": dense}})

    said: list[str] = []
    down = conf(f"http://127.0.0.1:{free_port()}/v1")
    with OpenViking(path=tmp_path / "store", config=down, warn=said.append) as client:
        added = client.add_memory("The user prefers tea")  # the text is written before its vectors
        assert added["added"] is True
        assert "The vectors were not made (Cannot reach the embedding server" in said[0]
        assert "record(s) wait for their vectors, which openviking index makes" in said[0]
        found = client.find("prefers tea", mode="keyword")
        assert found.memories[0].uri == added["uri"] and found.pending_vectors > 0
        report = client.doctor()  # the server that does not answer, and no damage
        assert [p for p in report["problems"] if "embedding server" not in p] == []
        assert report["store"]["pending_vectors"] == found.pending_vectors
        with pytest.raises(UnavailableError, match="Cannot reach the embedding server"):
            client.index()
        tree = make_tree(tmp_path / "t", {"a.md": "# A\n\nAbout green tea.\n"})
        with pytest.raises(UnavailableError):  # an add that waits for its vectors says they failed
            client.add_resource(tree)
        assert client.find("green tea", mode="keyword").resources  # written all the same
    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:  # bound to the one it waits for
        with pytest.raises(FailedPreconditionError, match="built with the embedder 'openai:m'"):
            client.add_memory("The user prefers coffee")
    with StubServer(random_embeddings(8)) as server:
        with OpenViking(path=tmp_path / "store", config=conf(f"{server.url}/v1")) as client:
            done = client.index()
            assert done.records_embedded > 0 and done.pending_vectors == 0
            assert client.find("prefers tea", mode="vector").memories[0].uri == added["uri"]


def test_a_file_that_can_no_longer_be_added_goes_like_one_that_vanished(
    hash_client: OpenViking, tmp_path: Path
) -> None:
    from openviking.ingest.walk import MAX_FILE_BYTES

    tree = make_tree(tmp_path / "t", {"one.md": "apples text\n", "two.md": "pears\n", "three.md": "keep\n"})
    assert hash_client.add_resource(tree).added == 3
    (tree / "one.md").write_bytes(b"\x00\x01binary now" * 100)
    (tree / "two.md").write_bytes(b"y" * (MAX_FILE_BYTES + 1))
    again = hash_client.add_resource(tree)
    assert (again.unchanged, again.removed, again.skipped) == (1, 2, 2)
    assert {f["path"]: f["reason"] for f in again.skipped_files} == {"one.md": "binary", "two.md": "larger than 10 MB"}
    assert files_under(hash_client, f"{R}/t") == {f"{R}/t/three.md"}  # neither keeps its old text
    found = hash_client.find("apples text", target_uri=f"{R}/t", score_threshold=-1)
    assert {h.uri for h in found.resources} <= {f"{R}/t/three.md", f"{R}/t/.abstract.md", f"{R}/t/.overview.md"}
    assert not any("apples" in (h.abstract or "") for h in found)  # no record of the old text is left


def test_the_size_limit_holds_for_a_single_file_too(hash_client: OpenViking, tmp_path: Path) -> None:
    from openviking.ingest.walk import MAX_FILE_BYTES

    hash_client.add_resource(make_tree(tmp_path / "small", {"a.md": "# A\n\nsmall\n"}))
    big = tmp_path / "big.md"
    big.write_bytes(b"word " * (MAX_FILE_BYTES // 5 + 1))
    error = unharmed(hash_client, lambda: hash_client.add_resource(big))
    assert (error.code, error.message) == ("INVALID_ARGUMENT", f"Cannot add {big}: larger than 10 MB")


def test_adding_the_folder_that_holds_the_store_leaves_the_store_out(tmp_path: Path) -> None:
    from helpers import hash_config

    folder = make_tree(tmp_path / "project", {"a.md": "# A\n\nhi\n"})
    with OpenViking(path=folder / "st", config=hash_config()) as client:
        first = client.add_resource(folder)
        second = client.add_resource(folder)  # the store has files now
        assert (second.added, second.updated, second.unchanged) == (0, 0, 1)
        assert {"path": "st", "reason": "the store being written", "code": "STORE"} in second.skipped_files
        assert client.glob("**", uri=f"{R}/project")["matches"] == [f"{R}/project/a.md"]
        assert first.added == 1
        for inside in (folder / "st", folder / "st" / "nodes.lance"):  # the store itself, or a part of it
            error = unharmed(client, lambda inside=inside: client.add_resource(inside))
            assert (error.code, error.message) == (
                "INVALID_ARGUMENT",
                f"Cannot add {inside}: it is the store's own folder ({folder / 'st'})",
            )


def test_a_layout_folder_is_a_parent_before_anything_is_in_it(hash_client: OpenViking, tmp_path: Path) -> None:
    note = make_tree(tmp_path / "n", {"tea.md": "# Tea\n\nThe user drinks green tea.\n"}) / "tea.md"
    result = hash_client.add_resource(note, parent="viking://user/memories")
    assert result.root_uri == "viking://user/default/memories/tea.md"
    skill = make_tree(tmp_path / "s", {"SKILL.md": "# Brew\n\nBrew tea.\n"}) / "SKILL.md"
    assert hash_client.add_resource(skill, parent="viking://agent/skills").root_uri == "viking://agent/skills/SKILL.md"
    error = unharmed(hash_client, lambda: hash_client.add_resource(note, parent=f"{R}/nowhere"))
    assert (error.code, error.message) == ("NOT_FOUND", f"Parent not found: {R}/nowhere")


def test_source_name_records_another_path_as_the_source(hash_client: OpenViking, tmp_path: Path) -> None:
    # What a server does with an upload: each copy sits in a new temporary folder, and is
    # recorded as the client's own path, so the next copy of the same folder matches it.
    shown = "/home/alice/handbook"
    first = make_tree(tmp_path / "copy1" / "handbook", EN_FILES)
    result = hash_client.add_resource(first, source_name=shown)
    assert result.added == len(EN_FILES)
    stat = hash_client.stat("viking://resources/handbook/deploy/docker.md")
    assert stat.source == f"{shown}/deploy/docker.md"
    assert hash_client.stat("viking://resources/handbook/deploy").source == f"{shown}/deploy"
    second = make_tree(tmp_path / "copy2" / "handbook", {k: v for k, v in EN_FILES.items() if k != "README.md"})
    again = hash_client.add_resource(second, source_name=shown)
    assert (again.added, again.updated, again.unchanged, again.removed) == (0, 0, len(EN_FILES) - 1, 1)
    skill = make_tree(tmp_path / "s1" / "write-rfc", {"SKILL.md": "# Write an RFC\n"})
    hash_client.add_skill(skill, source_name="/home/alice/write-rfc")
    other_copy = make_tree(tmp_path / "s2" / "write-rfc", {"SKILL.md": "# Write an RFC, better\n"})
    assert hash_client.add_skill(other_copy, source_name="/home/alice/write-rfc").updated == 1


LOCKED = Path("/proc/1/fdinfo")  # a folder whose entries even root may not stat (ptrace rules)


def _locked_for_stat() -> bool:
    try:
        (LOCKED / ".gitignore").is_file()
    except PermissionError:
        return True
    except OSError:
        return False
    return False


@pytest.mark.skipif(not _locked_for_stat(), reason="no folder here refuses a stat of its entries")
def test_a_folder_whose_entries_cannot_be_looked_at_is_walked_not_a_bug() -> None:
    from openviking.ingest.walk import walk

    result = walk(LOCKED)  # stat of a path in it raises EACCES, even the check for a .gitignore
    assert all(not reason.startswith("Unexpected") for _path, reason, _code in result.skipped)
