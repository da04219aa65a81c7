"""Whose space a client may reach: its own, and with ``isolated`` (a server's user keys) nothing else.

An embedded client may read what another user's space holds (it is the machine's owner);
an isolated one may not name it at all, and listings, grep and glob leave it out.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import hash_config, make_tree, snapshot

from openviking.embedded import OpenViking
from openviking.errors import PermissionDeniedError

BOB = "viking://user/bob"


@pytest.fixture(scope="module")
def owner(tmp_path_factory: pytest.TempPathFactory) -> OpenViking:
    """A store holding alice's and bob's notes, and a shared resource."""
    base = tmp_path_factory.mktemp("access")
    root = OpenViking(path=base / "store", config=hash_config())
    for user in ("alice", "bob"):
        tree = make_tree(base / user, {"notes.md": f"# Notes of {user}\n\nThe secret word of {user} is walrus.\n"})
        root.as_user(user).add_resource(tree, to=f"viking://user/{user}/resources/notes")
    root.add_resource(make_tree(base / "shared", {"readme.md": "# Shared\n\nEveryone sees the walrus.\n"}))
    return root


def test_an_embedded_client_reads_another_users_space(owner: OpenViking) -> None:
    alice = owner.as_user("alice")
    assert "walrus" in alice.read(f"{BOB}/resources/notes/notes.md")


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.read(f"{BOB}/resources/notes/notes.md"),
        lambda c: c.abstract(f"{BOB}/resources/notes"),
        lambda c: c.ls(BOB),
        lambda c: c.tree(BOB),
        lambda c: c.stat(f"{BOB}/resources/notes"),
        lambda c: c.grep(BOB, "walrus"),
        lambda c: c.glob("**", BOB),
        lambda c: c.relations(f"{BOB}/resources/notes/notes.md"),
        lambda c: c.rm(f"{BOB}/resources/notes", recursive=True),
        lambda c: c.mv(f"{BOB}/resources/notes", "viking://user/alice/resources/stolen"),
        lambda c: c.find("walrus", target_uri=BOB),
    ],
    ids=["read", "abstract", "ls", "tree", "stat", "grep", "glob", "relations", "rm", "mv", "find"],
)
def test_an_isolated_client_cannot_name_another_users_space(owner: OpenViking, call: object) -> None:
    alice = owner.as_user("alice", isolated=True)
    before = snapshot(Path(owner.store_path))
    with pytest.raises(PermissionDeniedError, match="in another user's space"):
        call(alice)  # type: ignore[operator]
    assert snapshot(Path(owner.store_path)) == before


def test_listings_grep_and_glob_leave_other_users_out(owner: OpenViking) -> None:
    alice = owner.as_user("alice", isolated=True)
    listed = alice.ls("viking://user", simple=True)
    assert "viking://user/alice" in listed and BOB not in listed
    assert not [e for e in alice.ls("viking://", recursive=True, simple=True) if str(e).startswith(BOB)]
    assert not [e.uri for e in alice.tree("viking://", level_limit=0) if e.uri.startswith(BOB)]
    files = {m["uri"] for m in alice.grep("viking://", "walrus")["matches"]}
    assert files == {"viking://user/alice/resources/notes/notes.md", "viking://resources/shared/readme.md"}
    assert not [m for m in alice.glob("**/*.md")["matches"] if m.startswith(BOB)]
    assert alice.glob("**/*.md", node_limit=1)["count"] == 1
    everyone = owner.as_user("alice")
    assert {m["uri"] for m in everyone.grep("viking://", "walrus")["matches"]} >= {f"{BOB}/resources/notes/notes.md"}
