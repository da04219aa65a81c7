"""Memories and skills: ``add_memory`` / ``add-memory`` and ``add_skill`` / ``add-skill``.

Memories land under ``viking://user/{user}/memories/[category/]<name>.md`` and come back in
the ``memories`` group of find with their category; skills land under
``viking://agent/skills/{name}`` and come back in the ``skills`` group. Real LanceDB stores on
tmp_path, the hash embedder, no network, no mocks.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    EN_FILES,
    HASH_CONF,
    CliResult,
    cli_unharmed,
    everything,
    hash_config,
    make_tree,
    one_line,
    raw_uri,
)
from helpers import unharmed as _unharmed

from openviking.embedded.client import OpenViking
from openviking.errors import AlreadyExistsError, InvalidArgumentError, OpenVikingError, OpenVikingWarning
from openviking.ingest.naming import memory_name, skill_name

Cli = Callable[..., CliResult]
MEM = "viking://user/default/memories"
SKILLS = "viking://agent/skills"

DARK = "The user prefers dark mode in every editor and terminal"
TEA = "The user drinks green tea, never coffee"
SKILL_MD = (
    "---\nname: pdf-extract\ndescription: Pull text and tables out of PDF files\n---\n"
    "# PDF extraction\n\nExtract text and tables from PDF files with pdfplumber.\n"
)
RUN_MD = "# Running the extractor\n\nCall the extraction script on one file at a time.\n"
COMMIT_MD = "# Git commit\n\nWrite a conventional commit message for the staged changes.\n"


# ----------------------------------------------------------------------------- fixtures and helpers
# handbook_client and handbook_ov (conftest.py) hold the English handbook in tmp_path/"store".
@pytest.fixture
def skill_dir(tmp_path: Path) -> Path:
    """A skill folder whose SKILL.md names it ``pdf-extract`` in its front matter."""
    return make_tree(tmp_path / "pdf-tool", {"SKILL.md": SKILL_MD, "scripts/run.md": RUN_MD})


# ----------------------------------------------------------------------------- naming
def test_memory_name_is_stable_readable_and_safe() -> None:
    name = memory_name(DARK)
    assert name == memory_name(DARK)
    assert name == memory_name("  " + DARK + "\n")  # surrounding whitespace does not matter
    assert name != memory_name(TEA)
    assert name.endswith(".md")
    assert name.startswith("The-user-prefers-dark-mode-in")
    for text in ("../../etc/passwd is here", "a/b\\c?d#e", "..", "用户喜欢 深色 模式"):
        name = memory_name(text)
        assert "/" not in name and "\\" not in name and name not in (".", "..")
        assert name.endswith(".md")
    assert memory_name("用户喜欢 深色 模式").startswith("用户喜欢-深色-模式")


def unharmed(client: OpenViking, op: Callable[[], Any]) -> OpenVikingError:
    return _unharmed(client, op, "user prefers tea pdf")


def test_skill_name_from_front_matter_folder_and_file(tmp_path: Path, skill_dir: Path) -> None:
    assert skill_name(skill_dir) == "pdf-extract"
    plain = make_tree(tmp_path / "plain-skill", {"SKILL.md": "# Plain\n\nDo a plain thing.\n"})
    assert skill_name(plain) == "plain-skill"
    single = make_tree(tmp_path / "single", {"git-commit.md": COMMIT_MD}) / "git-commit.md"
    assert skill_name(single) == "git-commit"
    named_skill_md = make_tree(tmp_path / "deploy-helper", {"SKILL.md": COMMIT_MD}) / "SKILL.md"
    assert skill_name(named_skill_md) == "deploy-helper"
    quoted = make_tree(tmp_path / "q", {"SKILL.md": '---\nname: "web search"\n---\n# W\n\nSearch.\n'})
    assert skill_name(quoted) == "web_search"


# ----------------------------------------------------------------------------- add_memory (SDK)
def test_memory_lands_under_its_category(handbook_client: OpenViking) -> None:
    result = handbook_client.add_memory(DARK, "preferences")
    assert result == {
        "uri": f"{MEM}/preferences/{memory_name(DARK)}",
        "category": "preferences",
        "added": True,
        "tags_changed": False,
    }
    assert handbook_client.read(result["uri"]).strip() == DARK
    info = handbook_client.stat(result["uri"])
    assert info["isDir"] is False and info["context_type"] == "memory"
    assert handbook_client.stat(f"{MEM}/preferences")["isDir"] is True
    assert result["uri"] in handbook_client.ls(f"{MEM}/preferences", simple=True)


def test_memory_without_category_lands_in_memories(handbook_client: OpenViking) -> None:
    result = handbook_client.add_memory(TEA)
    assert result["uri"] == f"{MEM}/{memory_name(TEA)}"
    assert result["category"] == ""
    assert result["added"] is True
    assert handbook_client.read(result["uri"]).strip() == TEA


def test_memory_comes_back_in_the_memories_group_with_its_category(handbook_client: OpenViking) -> None:
    uri = handbook_client.add_memory(DARK, "preferences")["uri"]
    result = handbook_client.find("dark mode editor terminal", limit=50, score_threshold=-1)
    hits = {h.uri: h for h in result.memories}
    assert uri in hits
    assert hits[uri].category == "preferences"
    assert hits[uri].context_type == "memory"
    assert uri not in {h.uri for h in [*result.resources, *result.skills]}
    assert all(h.context_type == "memory" for h in result.memories)
    assert hits[uri].to_dict()["category"] == "preferences"


def test_same_memory_twice_is_one_memory(handbook_client: OpenViking) -> None:
    first = handbook_client.add_memory(DARK, "preferences")
    second = handbook_client.add_memory(DARK, "preferences")
    assert first["uri"] == second["uri"]
    assert first["added"] is True
    assert second["added"] is False
    assert handbook_client.ls(f"{MEM}/preferences", simple=True) == [first["uri"]]
    hits = [raw_uri(h.uri) for h in everything(handbook_client)]
    assert hits.count(first["uri"]) == 1


def test_the_same_memory_again_keeps_its_tags_unless_new_ones_are_given(handbook_client: OpenViking) -> None:
    uri = handbook_client.add_memory(DARK, tags=["env=prod"])["uri"]
    stored = handbook_client.stat(uri)
    again = handbook_client.add_memory(DARK)  # said again, without tags: nothing changes
    assert (again["added"], again["tags_changed"]) == (False, False)
    assert handbook_client.stat(uri) == stored  # not even updated_at: nothing was written
    assert [h.uri for h in handbook_client.find("dark mode", tags="env=prod", score_threshold=-1).memories] == [uri]
    moved = handbook_client.add_memory(DARK, tags=["env=staging"])
    assert (moved["added"], moved["tags_changed"]) == (False, True)
    assert handbook_client.stat(uri)["tags"] == ["env=staging"]
    assert handbook_client.find("dark mode", tags="env=prod", score_threshold=-1).memories == []
    cleared = handbook_client.add_memory(DARK, tags=[])  # the SDK can clear them
    assert cleared["tags_changed"] is True and handbook_client.stat(uri)["tags"] == []
    handbook_client.add_memory(DARK, tags=["a=1", "b=2"])
    stored = handbook_client.stat(uri)
    reordered = handbook_client.add_memory(DARK, tags=["B=2", "a=1", "a=1"])  # the same tags, said otherwise
    assert reordered["tags_changed"] is False and handbook_client.stat(uri) == stored


def test_a_memory_said_again_finishes_a_write_stopped_before_its_folder_was_refreshed(
    handbook_client: OpenViking,
) -> None:
    from openviking.ingest import pipeline

    handbook_client.add_memory("The user drinks coffee in the morning", "drinks")
    refresh = pipeline.refresh_directories

    def stopped(*args: object, **kwargs: object) -> int:
        raise KeyboardInterrupt  # Ctrl-C after the memory was written, before its folder was summed up

    pipeline.refresh_directories = stopped  # type: ignore[assignment]
    try:
        with pytest.raises(KeyboardInterrupt):
            handbook_client.add_memory(TEA, "drinks")
    finally:
        pipeline.refresh_directories = refresh  # type: ignore[assignment]
    assert "2 files" not in handbook_client.overview(f"{MEM}/drinks")  # the folder does not know it yet
    again = handbook_client.add_memory(TEA, "drinks")
    assert (again["added"], again["tags_changed"]) == (False, False)
    assert "2 files" in handbook_client.overview(f"{MEM}/drinks")


def test_different_memories_get_different_uris(handbook_client: OpenViking) -> None:
    a = handbook_client.add_memory(DARK, "preferences")["uri"]
    b = handbook_client.add_memory(TEA, "preferences")["uri"]
    assert a != b
    assert sorted(handbook_client.ls(f"{MEM}/preferences", simple=True)) == sorted([a, b])


@pytest.mark.parametrize("text", ["", "   ", "\n\t \n"], ids=["empty", "spaces", "whitespace"])
def test_empty_memory_is_invalid_and_store_unharmed(handbook_client: OpenViking, text: str) -> None:
    error = unharmed(handbook_client, lambda: handbook_client.add_memory(text, "preferences"))
    assert error.code == "INVALID_ARGUMENT"
    assert "must not be empty" in error.message


def test_empty_memory_on_a_missing_store_creates_nothing(tmp_path: Path) -> None:
    store = tmp_path / "nowhere"
    with OpenViking(path=store, config=hash_config()) as ov, pytest.raises(OpenVikingError) as info:
        ov.add_memory("  ")
    assert info.value.code == "INVALID_ARGUMENT"
    assert not store.exists()


BAD_CATEGORIES = ["../x", "..", "a/b", "has space", "x\\y", "-leading", "dots.in.it", "ümlaut", "a" * 65]


@pytest.mark.parametrize("category", BAD_CATEGORIES)
def test_bad_category_is_invalid_and_store_unharmed(handbook_client: OpenViking, category: str) -> None:
    error = unharmed(handbook_client, lambda: handbook_client.add_memory(DARK, category))
    assert error.code == "INVALID_ARGUMENT"
    assert "category" in error.message


def test_category_is_normalised_to_the_folder_it_lands_in(handbook_client: OpenViking) -> None:
    result = handbook_client.add_memory(DARK, "Preferences")
    assert result["uri"] == f"{MEM}/preferences/{memory_name(DARK)}"
    # The reported category is the folder the memory is in, as find reports it.
    assert result["category"] == "preferences"
    hits = {h.uri: h for h in handbook_client.find(DARK, limit=50, score_threshold=-1).memories}
    assert hits[result["uri"]].category == result["category"]


@pytest.mark.parametrize(
    "target", [MEM, "viking://~/memories", "viking://user/memories", "viking://user/default", "viking://~"]
)
def test_user_space_targets_reach_the_memory(handbook_client: OpenViking, target: str) -> None:
    uri = handbook_client.add_memory(DARK, "preferences")["uri"]
    result = handbook_client.find("dark mode editor", target_uri=target, limit=50, score_threshold=-1)
    assert uri in {h.uri for h in result.memories}
    assert result.skills == []
    if target.endswith("/memories"):
        assert result.resources == []
    else:  # the user's own folder is a resource; nothing from outside the user's space is
        assert {raw_uri(h.uri) for h in result.resources} <= {"viking://user/default"}


def test_another_users_space_is_not_searched(handbook_client: OpenViking, handbook_ov: Cli, tmp_path: Path) -> None:
    from openviking.config import config_from_dict

    mine = handbook_client.add_memory(DARK, "preferences")["uri"]
    with OpenViking(
        path=handbook_client.store_path, config=config_from_dict({**HASH_CONF, "default_user": "bob"})
    ) as bob:
        theirs = bob.add_memory("Bob prefers light mode in the editor", "preferences")["uri"]
        assert theirs.startswith("viking://user/bob/") and theirs in {
            h.uri for h in bob.find("light mode editor").memories
        }
    for target in ("viking://user", "viking://user/", ""):  # the user scope is the configured user's space
        found = {
            h.uri for h in handbook_client.find("light mode editor", target_uri=target, limit=50, score_threshold=-1)
        }
        assert mine in found and theirs not in found, target
    for target in ("viking://user/bob", "viking://user/bob/memories/preferences"):  # upstream: 403
        with pytest.raises(OpenVikingError) as caught:
            handbook_client.find("light mode editor", target_uri=[MEM, target])
        assert caught.value.code == "PERMISSION_DENIED"
        assert caught.value.message == f"Access denied: {target} is in another user's space"
    error, _ = cli_unharmed(
        handbook_ov,
        tmp_path / "store",
        ["search", "light mode", "-u", "viking://user/bob"],
        "PERMISSION_DENIED",
        2,
        "Access denied",
    )
    assert error["details"] == {"uri": "viking://user/bob", "user": "default"}


def test_resources_target_does_not_reach_the_memory(handbook_client: OpenViking) -> None:
    uri = handbook_client.add_memory(DARK, "preferences")["uri"]
    result = handbook_client.find("dark mode editor", target_uri="viking://resources", limit=50, score_threshold=-1)
    assert result.memories == []
    assert uri not in {raw_uri(h.uri) for h in result}


def test_context_type_memory_returns_only_memories(handbook_client: OpenViking) -> None:
    uri = handbook_client.add_memory(DARK, "preferences")["uri"]
    result = handbook_client.find("dark mode editor", context_type="memory", limit=50, score_threshold=-1)
    assert uri in {h.uri for h in result.memories}
    assert result.resources == [] and result.skills == []
    assert all(h.context_type == "memory" for h in result)


def test_memory_tags_are_kept_and_filter(handbook_client: OpenViking) -> None:
    tagged = handbook_client.add_memory(DARK, "preferences", tags=["source=chat"])["uri"]
    plain = handbook_client.add_memory(TEA, "preferences")["uri"]
    assert handbook_client.stat(tagged)["tags"] == ["source=chat"]
    result = handbook_client.find("user prefers", tags="source=chat", limit=50, score_threshold=-1)
    uris = {raw_uri(h.uri) for h in result}
    assert tagged in uris
    assert plain not in uris
    hit = next(h for h in result if h.uri == tagged)
    assert "source=chat" in hit.tags


def test_memory_where_a_category_folder_is_a_file_is_refused(handbook_client: OpenViking, tmp_path: Path) -> None:
    """A category path that is a file must not be turned into a directory (the file would be lost)."""
    note = make_tree(tmp_path / "src", {"prefs.md": "# Prefs file\n\nA file that sits where a category would.\n"})
    handbook_client.add_resource(note / "prefs.md", to=f"{MEM}/prefs")
    before = handbook_client.read(f"{MEM}/prefs")
    error = unharmed(handbook_client, lambda: handbook_client.add_memory(DARK, "prefs"))
    assert error.code == "FAILED_PRECONDITION"
    assert handbook_client.read(f"{MEM}/prefs") == before
    assert handbook_client.stat(f"{MEM}/prefs")["isDir"] is False


def test_memory_where_its_uri_is_a_directory_is_refused(handbook_client: OpenViking) -> None:
    taken = f"{MEM}/preferences/{memory_name(DARK)}"
    handbook_client.mkdir(taken)
    error = unharmed(handbook_client, lambda: handbook_client.add_memory(DARK, "preferences"))
    assert error.code == "ALREADY_EXISTS"


def test_memory_added_again_after_rm_is_added(handbook_client: OpenViking) -> None:
    uri = handbook_client.add_memory(DARK, "preferences")["uri"]
    assert handbook_client.rm(uri) == {"uri": uri, "removed": 1}
    assert uri not in {h.uri for h in handbook_client.find(DARK, limit=50, score_threshold=-1)}
    again = handbook_client.add_memory(DARK, "preferences")
    assert again == {"uri": uri, "category": "preferences", "added": True, "tags_changed": False}
    assert uri in {h.uri for h in handbook_client.find(DARK, limit=50, score_threshold=-1).memories}


def test_memory_hit_carries_its_relations(handbook_client: OpenViking) -> None:
    uri = handbook_client.add_memory(DARK, "preferences")["uri"]
    handbook_client.link(uri, ["viking://resources/handbook/README.md"], reason="where it came up")
    hit = next(h for h in handbook_client.find(DARK, limit=50, score_threshold=-1).memories if h.uri == uri)
    assert hit.to_dict()["relations"] == [
        {"uri": "viking://resources/handbook/README.md", "reason": "where it came up"}
    ]


def test_memories_folder_overview_lists_the_category(handbook_client: OpenViking) -> None:
    handbook_client.add_memory(DARK, "preferences")
    assert "preferences" in handbook_client.overview(MEM)


# ----------------------------------------------------------------------------- add-memory (CLI)
def test_cli_add_memory_table_one_line_and_idempotent(handbook_ov: Cli) -> None:
    first = one_line(handbook_ov("add-memory", DARK, "--category", "preferences"))
    uri = f"{MEM}/preferences/{memory_name(DARK)}"
    assert first == f"Remembered: {uri}"
    second = one_line(handbook_ov("add-memory", DARK, "--category", "preferences"))
    assert second == f"Already remembered: {uri}"


def test_cli_add_memory_json(handbook_ov: Cli) -> None:
    result = handbook_ov("add-memory", DARK, "--category", "preferences", "--tag", "source=chat", "-o", "json")
    assert result.code == 0, result.err
    assert result.err == ""
    envelope = result.json()
    assert envelope["status"] == "ok"
    assert envelope["result"] == {
        "uri": f"{MEM}/preferences/{memory_name(DARK)}",
        "category": "preferences",
        "added": True,
        "tags_changed": False,
    }
    again = handbook_ov("add-memory", DARK, "--category", "preferences", "--tag", "source=chat", "--json").json()
    assert (again["result"]["added"], again["result"]["tags_changed"]) == (False, False)
    assert again["result"]["uri"] == envelope["result"]["uri"]
    said = handbook_ov("add-memory", DARK, "--category", "preferences")  # no --tag: its tags are kept
    assert said.out == f"Already remembered: {again['result']['uri']}\n"
    assert handbook_ov("stat", again["result"]["uri"], "--json").json()["result"]["tags"] == ["source=chat"]
    retagged = handbook_ov("add-memory", DARK, "--category", "preferences", "--tag", "source=mail")
    assert retagged.out == f"Already remembered, with the new tags: {again['result']['uri']}\n"


@pytest.mark.parametrize("target", ["viking://~/memories", "viking://user/memories"])
def test_cli_find_reaches_memories(handbook_ov: Cli, target: str) -> None:
    added = handbook_ov("add-memory", DARK, "--category", "preferences", "--tag", "source=chat", "-o", "json")
    uri = added.json()["result"]["uri"]
    result = handbook_ov("find", "dark mode editor", "-u", target, "-t", "-1", "-n", "50", "-o", "json")
    assert result.code == 0, result.err
    found = result.json()["result"]
    hits = {h["uri"]: h for h in found["memories"]}
    assert uri in hits
    assert hits[uri]["category"] == "preferences"
    assert hits[uri]["context_type"] == "memory"
    assert "source=chat" in hits[uri]["tags"]
    assert found["resources"] == [] and found["skills"] == []


def test_cli_find_tags_reach_memories(handbook_ov: Cli) -> None:
    uri = handbook_ov("add-memory", DARK, "--tag", "source=chat", "-o", "json").json()["result"]["uri"]
    handbook_ov("add-memory", TEA, "-o", "json")
    result = handbook_ov("find", "user", "--tags", "source=chat", "-t", "-1", "-n", "50", "-o", "json")
    assert result.code == 0, result.err
    uris = {raw_uri(h["uri"]) for group in ("memories", "resources", "skills") for h in result.json()["result"][group]}
    assert uri in uris
    assert f"{MEM}/{memory_name(TEA)}" not in uris


@pytest.mark.parametrize("text", ["", "   "], ids=["empty", "spaces"])
def test_cli_add_memory_empty(handbook_ov: Cli, tmp_path: Path, text: str) -> None:
    cli_unharmed(handbook_ov, tmp_path / "store", ["add-memory", text], "INVALID_ARGUMENT", 2, "must not be empty")


class PipedStdin:
    """A process's stdin holding ``data``, the same bytes at each read (cli_unharmed runs twice)."""

    def __init__(self, data: bytes) -> None:
        self.buffer = self
        self.data = data

    def read(self) -> bytes:
        return self.data


def test_cli_add_memory_reads_dash_from_stdin(handbook_ov: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", PipedStdin(f"{DARK}\n".encode()))
    added = handbook_ov("add-memory", "-", "--category", "preferences", "-o", "json")
    assert added.code == 0, added.err
    uri = added.json()["result"]["uri"]
    assert uri == f"{MEM}/preferences/{memory_name(DARK)}"  # the text without its newline, not "-"
    assert handbook_ov("read", uri).out.rstrip("\n") == DARK


@pytest.mark.parametrize(
    "argv", [["add-memory", "-"], ["session", "add-message", "s1", "--role", "user", "--content", "-"]]
)
def test_cli_text_on_stdin_must_be_utf8(
    handbook_ov: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", PipedStdin(b"Prefers caf\xe9 au lait"))
    error, _ = cli_unharmed(handbook_ov, tmp_path / "store", argv, "INVALID_ARGUMENT", 2, "on stdin is not UTF-8")
    assert error["message"].endswith("is not UTF-8 (byte 12)")
    assert handbook_ov("session", "list", "-o", "json").json()["result"] == []


@pytest.mark.parametrize("category", ["../x", "a/b", "has space"])
def test_cli_add_memory_bad_category(handbook_ov: Cli, tmp_path: Path, category: str) -> None:
    argv = ["add-memory", DARK, "--category", category]
    error, table = cli_unharmed(handbook_ov, tmp_path / "store", argv, "INVALID_ARGUMENT", 2, "Invalid memory category")
    assert error["details"] == {"category": category}
    assert table.err.startswith("Error: Invalid memory category")


# ----------------------------------------------------------------------------- add_skill (SDK)
def test_skill_folder_named_by_front_matter(handbook_client: OpenViking, skill_dir: Path) -> None:
    result = handbook_client.add_skill(skill_dir)
    assert result.root_uri == f"{SKILLS}/pdf-extract"
    assert result.added == 2
    assert sorted(handbook_client.ls(f"{SKILLS}/pdf-extract", recursive=True, simple=True)) == [
        f"{SKILLS}/pdf-extract/SKILL.md",
        f"{SKILLS}/pdf-extract/scripts",
        f"{SKILLS}/pdf-extract/scripts/run.md",
    ]
    assert handbook_client.read(f"{SKILLS}/pdf-extract/SKILL.md") == SKILL_MD
    for uri in (f"{SKILLS}/pdf-extract", f"{SKILLS}/pdf-extract/SKILL.md", f"{SKILLS}/pdf-extract/scripts/run.md"):
        assert handbook_client.stat(uri)["context_type"] == "skill"


def test_skill_folder_without_front_matter_uses_the_folder_name(handbook_client: OpenViking, tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "web-search", {"SKILL.md": "# Web search\n\nSearch the web for a query.\n"})
    assert handbook_client.add_skill(folder).root_uri == f"{SKILLS}/web-search"
    assert handbook_client.stat(f"{SKILLS}/web-search/SKILL.md")["isDir"] is False


def test_skill_single_file(handbook_client: OpenViking, tmp_path: Path) -> None:
    path = make_tree(tmp_path / "single", {"git-commit.md": COMMIT_MD}) / "git-commit.md"
    result = handbook_client.add_skill(path)
    assert result.root_uri == f"{SKILLS}/git-commit/SKILL.md"
    assert handbook_client.read(f"{SKILLS}/git-commit/SKILL.md") == COMMIT_MD
    assert handbook_client.stat(f"{SKILLS}/git-commit")["isDir"] is True
    assert handbook_client.ls(f"{SKILLS}/git-commit", simple=True) == [f"{SKILLS}/git-commit/SKILL.md"]


def test_skill_name_option(handbook_client: OpenViking, skill_dir: Path, tmp_path: Path) -> None:
    assert handbook_client.add_skill(skill_dir, name="pdf-tools").root_uri == f"{SKILLS}/pdf-tools"
    path = make_tree(tmp_path / "single", {"git-commit.md": COMMIT_MD}) / "git-commit.md"
    assert handbook_client.add_skill(path, name="committer").root_uri == f"{SKILLS}/committer/SKILL.md"
    # A name is one URI segment: it cannot climb out of viking://agent/skills (and says so).
    with pytest.warns(OpenVikingWarning, match=f"^../../resources/evil: stored as {SKILLS}/resources_evil: "):
        root = handbook_client.add_skill(skill_dir, name="../../resources/evil").root_uri
    assert root.startswith(f"{SKILLS}/") and root.count("/") == SKILLS.count("/") + 1
    assert ".." not in root.split("/")
    with pytest.raises(InvalidArgumentError, match="A skill's name must not be empty"):
        handbook_client.add_skill(skill_dir, name=" ")


def test_a_skill_name_taken_by_another_skill_is_refused(handbook_client: OpenViking, tmp_path: Path) -> None:
    # the second "report" must not land in the first one's folder: its SKILL.md beside the
    # first one's template, under the first one's source
    one = make_tree(
        tmp_path / "one", {"SKILL.md": "---\nname: report\ndescription: Weekly report\n---\n# R\n", "t.md": "A\n"}
    )
    two = make_tree(tmp_path / "two", {"SKILL.md": "---\nname: report\ndescription: Invoices\n---\n# I\n"})
    assert handbook_client.add_skill(one).added == 2
    listed = handbook_client.ls(f"{SKILLS}/report", simple=True)
    with pytest.raises(AlreadyExistsError) as info:
        handbook_client.add_skill(two)
    assert info.value.message == f"A skill named 'report' already exists, with files from elsewhere ({one}/SKILL.md)"
    assert (
        info.value.hint
        == f"Give this one another name with name=, or remove the other: rm('{SKILLS}/report', recursive=True)"
    )
    assert handbook_client.ls(f"{SKILLS}/report", simple=True) == listed  # nothing of the second one went in
    assert handbook_client.add_skill(one).unchanged == 2  # the same source again is an update, not a clash
    assert handbook_client.add_skill(two, name="invoice").root_uri == f"{SKILLS}/invoice"


def test_skill_folder_without_skill_md_is_invalid(handbook_client: OpenViking, tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "not-a-skill", {"README.md": "# Readme\n\nNot a skill.\n"})
    error = unharmed(handbook_client, lambda: handbook_client.add_skill(folder))
    assert error.code == "INVALID_ARGUMENT"
    assert "SKILL.md" in error.message


def test_skill_missing_path_is_not_found(handbook_client: OpenViking, tmp_path: Path) -> None:
    error = unharmed(handbook_client, lambda: handbook_client.add_skill(tmp_path / "no-such-skill"))
    assert error.code == "NOT_FOUND"
    assert "no-such-skill" in error.message


def test_skill_comes_back_in_the_skills_group(handbook_client: OpenViking, skill_dir: Path) -> None:
    handbook_client.add_skill(skill_dir)
    result = handbook_client.find("extract text and tables from pdf files", limit=50, score_threshold=-1)
    skill_hits = {raw_uri(h.uri) for h in result.skills}
    assert f"{SKILLS}/pdf-extract/SKILL.md" in skill_hits
    assert all(h.context_type == "skill" for h in result.skills)
    assert not any(raw_uri(h.uri).startswith(SKILLS) for h in [*result.resources, *result.memories])


def test_skill_via_context_type_and_target(handbook_client: OpenViking, skill_dir: Path) -> None:
    handbook_client.add_skill(skill_dir)
    handbook_client.add_memory(DARK)
    by_type = handbook_client.find("extract pdf", context_type="skill", limit=50, score_threshold=-1)
    assert f"{SKILLS}/pdf-extract/SKILL.md" in {h.uri for h in by_type.skills}
    assert by_type.resources == [] and by_type.memories == []
    by_target = handbook_client.find("extract pdf", target_uri=SKILLS, limit=50, score_threshold=-1)
    assert {raw_uri(h.uri) for h in by_target} == {raw_uri(h.uri) for h in by_type}


def test_skill_directory_abstract_is_the_skill_md_summary(
    handbook_client: OpenViking, skill_dir: Path, tmp_path: Path
) -> None:
    handbook_client.add_skill(skill_dir)
    summary = handbook_client.stat(f"{SKILLS}/pdf-extract/SKILL.md")["abstract"]
    # The front matter's description is the author's own summary: it wins over the first prose.
    assert summary == "PDF extraction: Pull text and tables out of PDF files"
    assert handbook_client.abstract(f"{SKILLS}/pdf-extract") == summary
    # The same for a skill made from one file.
    path = make_tree(tmp_path / "single", {"git-commit.md": COMMIT_MD}) / "git-commit.md"
    handbook_client.add_skill(path)
    commit_summary = handbook_client.stat(f"{SKILLS}/git-commit/SKILL.md")["abstract"]
    assert "conventional commit message" in commit_summary
    assert handbook_client.abstract(f"{SKILLS}/git-commit") == commit_summary


def test_a_memory_abstract_is_its_text_not_its_file_name(handbook_client: OpenViking) -> None:
    uri = handbook_client.add_memory(DARK)["uri"]
    assert uri.rsplit("/", 1)[-1].startswith("The-user-prefers-dark-mode")
    assert handbook_client.stat(uri)["abstract"] == DARK


@pytest.mark.parametrize(
    "text",
    [
        "用户喜欢简洁的代码风格，偏好中文注释",
        "The user's editor is [Neovim], with 2-space tabs.",
        "Uses vim; hates emacs!",
        "Documentation-everywhere enthusiasm characterises the user",  # its name is cut mid-word
    ],
)
def test_a_memory_abstract_has_no_file_name_in_any_script(handbook_client: OpenViking, text: str) -> None:
    uri = handbook_client.add_memory(text)["uri"]
    assert handbook_client.stat(uri)["abstract"] == text


def test_skill_readded_unchanged_does_no_work(handbook_client: OpenViking, skill_dir: Path) -> None:
    handbook_client.add_skill(skill_dir)
    again = handbook_client.add_skill(skill_dir)
    assert again.added == 0 and again.updated == 0 and again.unchanged == 2
    assert again.records_embedded == 0


def test_skill_with_tags(handbook_client: OpenViking, skill_dir: Path) -> None:
    handbook_client.add_skill(skill_dir, tags=["team=docs"])
    result = handbook_client.find("extract pdf", tags="team=docs", limit=50, score_threshold=-1)
    assert f"{SKILLS}/pdf-extract/SKILL.md" in {h.uri for h in result.skills}
    assert result.resources == [] and result.memories == []


# ----------------------------------------------------------------------------- add-skill (CLI)
def test_cli_add_skill_json_and_table(handbook_ov: Cli, skill_dir: Path, tmp_path: Path) -> None:
    result = handbook_ov("add-skill", skill_dir, "-o", "json")
    assert result.code == 0, result.err
    data = result.json()["result"]
    assert data["root_uri"] == f"{SKILLS}/pdf-extract"
    assert data["added"] == 2
    path = make_tree(tmp_path / "single", {"git-commit.md": COMMIT_MD}) / "git-commit.md"
    line = one_line(handbook_ov("add-skill", path, "--name", "committer"))
    assert f"{SKILLS}/committer/SKILL.md" in line
    listing = handbook_ov("ls", SKILLS, "-s")
    assert listing.code == 0
    assert f"{SKILLS}/pdf-extract" in listing.out and f"{SKILLS}/committer" in listing.out


def test_cli_add_skill_missing_path(handbook_ov: Cli, tmp_path: Path) -> None:
    argv = ["add-skill", tmp_path / "missing-skill"]
    _error, table = cli_unharmed(handbook_ov, tmp_path / "store", argv, "NOT_FOUND", 1, "missing-skill")
    assert table.err.startswith("Error: Path not found")


def test_cli_add_skill_folder_without_skill_md(handbook_ov: Cli, tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "docs-only", EN_FILES)
    cli_unharmed(handbook_ov, tmp_path / "store", ["add-skill", folder], "INVALID_ARGUMENT", 2, "SKILL.md")


def test_cli_find_context_type_skill(handbook_ov: Cli, skill_dir: Path) -> None:
    assert handbook_ov("add-skill", skill_dir).code == 0
    assert handbook_ov("add-memory", DARK).code == 0
    result = handbook_ov("find", "extract pdf tables", "--context-type", "skill", "-t", "-1", "-n", "50", "-o", "json")
    assert result.code == 0, result.err
    found = result.json()["result"]
    assert found["resources"] == [] and found["memories"] == []
    assert f"{SKILLS}/pdf-extract/SKILL.md" in {h["uri"] for h in found["skills"]}
    assert all(h["context_type"] == "skill" for h in found["skills"])
    assert found["total"] == len(found["skills"])
    lines = handbook_ov("find", "extract pdf tables", "--context-type", "skill", "-t", "-1", "-n", "50", "-o", "jsonl")
    assert lines.code == 0, lines.err
    items = lines.json_lines()
    assert items and all(item["context_type"] == "skill" for item in items)
    assert [item["uri"] for item in items] == [h["uri"] for h in found["skills"]]
