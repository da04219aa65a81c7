"""Whose space a client may reach: its own, and with ``isolated`` (a server's user keys) nothing else.

An embedded client may read what another user's space holds (it is the machine's owner);
an isolated one may not name it at all, and listings, grep and glob leave it out.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import hash_config, make_tree, snapshot

from openviking.embedded.client import OpenViking
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


NOTES = f"{BOB}/resources/notes"
ANOTHER_USERS_SPACE = "in another user's space"
ROOT_ONLY = "Only the root key may watch sources"
# Every operation that names a place, called by alice's isolated client on bob's space, and
# what its refusal says (watched sources are paths of the server's machine: the root key's).
NAMES_ANOTHER_USERS_SPACE: dict[str, tuple[Callable[[Any, Path], object], str]] = {
    "find": (lambda c, _: c.find("walrus", target_uri=BOB), ANOTHER_USERS_SPACE),
    "search": (lambda c, _: c.search("walrus", target_uri=BOB), ANOTHER_USERS_SPACE),
    "context": (lambda c, _: c.context("walrus", target_uri=BOB), ANOTHER_USERS_SPACE),
    "grep": (lambda c, _: c.grep(BOB, "walrus"), ANOTHER_USERS_SPACE),
    "glob": (lambda c, _: c.glob("**", BOB), ANOTHER_USERS_SPACE),
    "read": (lambda c, _: c.read(f"{NOTES}/notes.md"), ANOTHER_USERS_SPACE),
    "download": (lambda c, _: c.download(f"{NOTES}/notes.md"), ANOTHER_USERS_SPACE),
    "abstract": (lambda c, _: c.abstract(NOTES), ANOTHER_USERS_SPACE),
    "overview": (lambda c, _: c.overview(NOTES), ANOTHER_USERS_SPACE),
    "ls": (lambda c, _: c.ls(BOB), ANOTHER_USERS_SPACE),
    "tree": (lambda c, _: c.tree(BOB), ANOTHER_USERS_SPACE),
    "stat": (lambda c, _: c.stat(NOTES), ANOTHER_USERS_SPACE),
    "relations": (lambda c, _: c.relations(f"{NOTES}/notes.md"), ANOTHER_USERS_SPACE),
    "add_resource": (lambda c, src: c.add_resource(src, to=f"{BOB}/resources/x"), ANOTHER_USERS_SPACE),
    "write": (lambda c, _: c.write(f"{NOTES}/notes.md", "overwritten"), ANOTHER_USERS_SPACE),
    "mkdir": (lambda c, _: c.mkdir(f"{BOB}/resources/new"), ANOTHER_USERS_SPACE),
    "rm": (lambda c, _: c.rm(NOTES, recursive=True), ANOTHER_USERS_SPACE),
    "mv": (lambda c, _: c.mv(NOTES, "viking://user/alice/resources/stolen"), ANOTHER_USERS_SPACE),
    "link": (lambda c, _: c.link(f"{NOTES}/notes.md", ["viking://user/alice"]), ANOTHER_USERS_SPACE),
    "unlink": (lambda c, _: c.unlink(f"{NOTES}/notes.md", "viking://user/alice"), ANOTHER_USERS_SPACE),
    "reindex": (lambda c, _: c.reindex(NOTES), ANOTHER_USERS_SPACE),
    "index": (lambda c, _: c.index(NOTES), ANOTHER_USERS_SPACE),
    "watch": (lambda c, src: c.watch(src, to=f"{BOB}/resources/x"), ROOT_ONLY),
    "list_watches": (lambda c, _: c.list_watches(to_uri=f"{BOB}/resources/x"), ROOT_ONLY),
    "update_watch": (lambda c, _: c.update_watch(f"{BOB}/resources/x", is_active=False), ROOT_ONLY),
    "delete_watch": (lambda c, _: c.delete_watch(f"{BOB}/resources/x"), ROOT_ONLY),
    "trigger_watch": (lambda c, _: c.trigger_watch(f"{BOB}/resources/x"), ROOT_ONLY),
}
PLACE_PARAMETERS = {"uri", "uris", "target_uri", "to_uri", "from_uri", "to", "parent"}


def test_every_operation_that_names_a_place_is_tried() -> None:
    from openviking.contract.operations import OPERATIONS

    naming = {name for name, op in OPERATIONS.items() if PLACE_PARAMETERS & set(op.params)}
    assert sorted(naming) == sorted(NAMES_ANOTHER_USERS_SPACE)


@pytest.mark.parametrize("name", sorted(NAMES_ANOTHER_USERS_SPACE))
def test_an_isolated_client_cannot_name_another_users_space(owner: OpenViking, tmp_path: Path, name: str) -> None:
    call, refusal = NAMES_ANOTHER_USERS_SPACE[name]
    source = make_tree(tmp_path / "src", {"x.md": "# X\n\nA note of alice.\n"})
    alice = owner.as_user("alice", isolated=True)
    before = snapshot(Path(owner.store_path))
    with pytest.raises(PermissionDeniedError, match=refusal):
        call(alice, source)
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
