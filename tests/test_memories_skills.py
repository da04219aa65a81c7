"""Memories and skills (issue 4): ``add_memory`` / ``add-memory`` and ``add_skill`` / ``add-skill``.

Memories land under ``viking://user/{user}/memories/[category/]<name>.md`` and come back in
the ``memories`` group of find with their category; skills land under
``viking://agent/skills/{name}`` and come back in the ``skills`` group. Real LanceDB stores on
tmp_path, the hash embedder, no network, no mocks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    EN_FILES,
    CliResult,
    cli_error,
    everything,
    hash_config,
    make_tree,
    one_line,
    raw_uri,
    snapshot,
    store_state,
)
from helpers import unharmed as _unharmed

from openviking.client import OpenViking
from openviking.errors import OpenVikingError
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
@pytest.fixture
def client(tmp_path: Path, en_tree: Path) -> Iterator[OpenViking]:
    """A store holding the English handbook (viking://resources/handbook), hash embedder."""
    with OpenViking(path=tmp_path / "store", config=hash_config()) as ov:
        ov.add_resource(en_tree)
        yield ov


@pytest.fixture
def skill_dir(tmp_path: Path) -> Path:
    """A skill folder whose SKILL.md names it ``pdf-extract`` in its front matter."""
    return make_tree(tmp_path / "pdf-tool", {"SKILL.md": SKILL_MD, "scripts/run.md": RUN_MD})


@pytest.fixture
def ov(cli: Cli, tmp_path: Path, hash_conf: Path, en_tree: Path) -> Cli:
    """``cli`` on a store holding the handbook, with ``--store`` and ``--config`` appended."""
    store = tmp_path / "store"
    with OpenViking(path=store, config=hash_config()) as client:
        client.add_resource(en_tree)

    def run(*argv: Any) -> CliResult:
        return cli(*argv, "--store", store, "--config", hash_conf)

    return run


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


def state(client: OpenViking) -> tuple[Any, Any, Any]:
    return store_state(client, "user prefers tea pdf")


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
def test_memory_lands_under_its_category(client: OpenViking) -> None:
    result = client.add_memory(DARK, "preferences")
    assert result == {"uri": f"{MEM}/preferences/{memory_name(DARK)}", "category": "preferences", "added": True}
    assert client.read(result["uri"]).strip() == DARK
    info = client.stat(result["uri"])
    assert info["isDir"] is False and info["context_type"] == "memory"
    assert client.stat(f"{MEM}/preferences")["isDir"] is True
    assert result["uri"] in client.ls(f"{MEM}/preferences", simple=True)


def test_memory_without_category_lands_in_memories(client: OpenViking) -> None:
    result = client.add_memory(TEA)
    assert result["uri"] == f"{MEM}/{memory_name(TEA)}"
    assert result["category"] == ""
    assert result["added"] is True
    assert client.read(result["uri"]).strip() == TEA


def test_memory_comes_back_in_the_memories_group_with_its_category(client: OpenViking) -> None:
    uri = client.add_memory(DARK, "preferences")["uri"]
    result = client.find("dark mode editor terminal", limit=50, score_threshold=-1)
    hits = {h.uri: h for h in result.memories}
    assert uri in hits
    assert hits[uri].category == "preferences"
    assert hits[uri].context_type == "memory"
    assert uri not in {h.uri for h in [*result.resources, *result.skills]}
    assert all(h.context_type == "memory" for h in result.memories)
    assert hits[uri].to_dict()["category"] == "preferences"


def test_same_memory_twice_is_one_memory(client: OpenViking) -> None:
    first = client.add_memory(DARK, "preferences")
    second = client.add_memory(DARK, "preferences")
    assert first["uri"] == second["uri"]
    assert first["added"] is True
    assert second["added"] is False
    assert client.ls(f"{MEM}/preferences", simple=True) == [first["uri"]]
    hits = [raw_uri(h.uri) for h in everything(client)]
    assert hits.count(first["uri"]) == 1


def test_different_memories_get_different_uris(client: OpenViking) -> None:
    a = client.add_memory(DARK, "preferences")["uri"]
    b = client.add_memory(TEA, "preferences")["uri"]
    assert a != b
    assert sorted(client.ls(f"{MEM}/preferences", simple=True)) == sorted([a, b])


@pytest.mark.parametrize("text", ["", "   ", "\n\t \n"], ids=["empty", "spaces", "whitespace"])
def test_empty_memory_is_invalid_and_store_unharmed(client: OpenViking, text: str) -> None:
    error = unharmed(client, lambda: client.add_memory(text, "preferences"))
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
def test_bad_category_is_invalid_and_store_unharmed(client: OpenViking, category: str) -> None:
    error = unharmed(client, lambda: client.add_memory(DARK, category))
    assert error.code == "INVALID_ARGUMENT"
    assert "category" in error.message


def test_category_is_normalised_to_the_folder_it_lands_in(client: OpenViking) -> None:
    result = client.add_memory(DARK, "Preferences")
    assert result["uri"] == f"{MEM}/preferences/{memory_name(DARK)}"
    # The reported category is the folder the memory is in, as find reports it.
    assert result["category"] == "preferences"
    hits = {h.uri: h for h in client.find(DARK, limit=50, score_threshold=-1).memories}
    assert hits[result["uri"]].category == result["category"]


@pytest.mark.parametrize(
    "target", [MEM, "viking://~/memories", "viking://user/memories", "viking://user/default", "viking://~"]
)
def test_user_space_targets_reach_the_memory(client: OpenViking, target: str) -> None:
    uri = client.add_memory(DARK, "preferences")["uri"]
    result = client.find("dark mode editor", target_uri=target, limit=50, score_threshold=-1)
    assert uri in {h.uri for h in result.memories}
    assert result.skills == []
    if target.endswith("/memories"):
        assert result.resources == []
    else:  # the user's own folder is a resource; nothing from outside the user's space is
        assert {raw_uri(h.uri) for h in result.resources} <= {"viking://user/default"}


def test_resources_target_does_not_reach_the_memory(client: OpenViking) -> None:
    uri = client.add_memory(DARK, "preferences")["uri"]
    result = client.find("dark mode editor", target_uri="viking://resources", limit=50, score_threshold=-1)
    assert result.memories == []
    assert uri not in {raw_uri(h.uri) for h in result}


def test_context_type_memory_returns_only_memories(client: OpenViking) -> None:
    uri = client.add_memory(DARK, "preferences")["uri"]
    result = client.find("dark mode editor", context_type="memory", limit=50, score_threshold=-1)
    assert uri in {h.uri for h in result.memories}
    assert result.resources == [] and result.skills == []
    assert all(h.context_type == "memory" for h in result)


def test_memory_tags_are_kept_and_filter(client: OpenViking) -> None:
    tagged = client.add_memory(DARK, "preferences", tags=["source=chat"])["uri"]
    plain = client.add_memory(TEA, "preferences")["uri"]
    assert client.stat(tagged)["tags"] == ["source=chat"]
    result = client.find("user prefers", tags="source=chat", limit=50, score_threshold=-1)
    uris = {raw_uri(h.uri) for h in result}
    assert tagged in uris
    assert plain not in uris
    hit = next(h for h in result if h.uri == tagged)
    assert "source=chat" in hit.tags


def test_memory_where_a_category_folder_is_a_file_is_refused(client: OpenViking, tmp_path: Path) -> None:
    """A category path that is a file must not be turned into a directory (the file would be lost)."""
    note = make_tree(tmp_path / "src", {"prefs.md": "# Prefs file\n\nA file that sits where a category would.\n"})
    client.add_resource(note / "prefs.md", to=f"{MEM}/prefs")
    before = client.read(f"{MEM}/prefs")
    error = unharmed(client, lambda: client.add_memory(DARK, "prefs"))
    assert error.code == "FAILED_PRECONDITION"
    assert client.read(f"{MEM}/prefs") == before
    assert client.stat(f"{MEM}/prefs")["isDir"] is False


def test_memory_where_its_uri_is_a_directory_is_refused(client: OpenViking) -> None:
    taken = f"{MEM}/preferences/{memory_name(DARK)}"
    client.mkdir(taken)
    error = unharmed(client, lambda: client.add_memory(DARK, "preferences"))
    assert error.code == "ALREADY_EXISTS"


def test_memory_added_again_after_rm_is_added(client: OpenViking) -> None:
    uri = client.add_memory(DARK, "preferences")["uri"]
    assert client.rm(uri) == {"uri": uri, "removed": 1}
    assert uri not in {h.uri for h in client.find(DARK, limit=50, score_threshold=-1)}
    again = client.add_memory(DARK, "preferences")
    assert again == {"uri": uri, "category": "preferences", "added": True}
    assert uri in {h.uri for h in client.find(DARK, limit=50, score_threshold=-1).memories}


def test_memory_hit_carries_its_relations(client: OpenViking) -> None:
    uri = client.add_memory(DARK, "preferences")["uri"]
    client.link(uri, ["viking://resources/handbook/README.md"], reason="where it came up")
    hit = next(h for h in client.find(DARK, limit=50, score_threshold=-1).memories if h.uri == uri)
    assert hit.to_dict()["relations"] == [
        {"uri": "viking://resources/handbook/README.md", "reason": "where it came up"}
    ]


def test_memories_folder_overview_lists_the_category(client: OpenViking) -> None:
    client.add_memory(DARK, "preferences")
    assert "preferences" in client.overview(MEM)


# ----------------------------------------------------------------------------- add-memory (CLI)
def test_cli_add_memory_table_one_line_and_idempotent(ov: Cli) -> None:
    first = one_line(ov("add-memory", DARK, "--category", "preferences"))
    uri = f"{MEM}/preferences/{memory_name(DARK)}"
    assert first == f"Remembered: {uri}"
    second = one_line(ov("add-memory", DARK, "--category", "preferences"))
    assert second == f"Already remembered: {uri}"


def test_cli_add_memory_json(ov: Cli) -> None:
    result = ov("add-memory", DARK, "--category", "preferences", "--tag", "source=chat", "-o", "json")
    assert result.code == 0, result.err
    assert result.err == ""
    envelope = result.json()
    assert envelope["status"] == "ok"
    assert envelope["result"] == {
        "uri": f"{MEM}/preferences/{memory_name(DARK)}",
        "category": "preferences",
        "added": True,
    }
    again = ov("add-memory", DARK, "--category", "preferences", "--tag", "source=chat", "--json").json()
    assert again["result"]["added"] is False
    assert again["result"]["uri"] == envelope["result"]["uri"]


@pytest.mark.parametrize("target", ["viking://~/memories", "viking://user/memories"])
def test_cli_find_reaches_memories(ov: Cli, target: str) -> None:
    added = ov("add-memory", DARK, "--category", "preferences", "--tag", "source=chat", "-o", "json")
    uri = added.json()["result"]["uri"]
    result = ov("find", "dark mode editor", "-u", target, "-t", "-1", "-n", "50", "-o", "json")
    assert result.code == 0, result.err
    found = result.json()["result"]
    hits = {h["uri"]: h for h in found["memories"]}
    assert uri in hits
    assert hits[uri]["category"] == "preferences"
    assert hits[uri]["context_type"] == "memory"
    assert "source=chat" in hits[uri]["tags"]
    assert found["resources"] == [] and found["skills"] == []


def test_cli_find_tags_reach_memories(ov: Cli) -> None:
    uri = ov("add-memory", DARK, "--tag", "source=chat", "-o", "json").json()["result"]["uri"]
    ov("add-memory", TEA, "-o", "json")
    result = ov("find", "user", "--tags", "source=chat", "-t", "-1", "-n", "50", "-o", "json")
    assert result.code == 0, result.err
    uris = {raw_uri(h["uri"]) for group in ("memories", "resources", "skills") for h in result.json()["result"][group]}
    assert uri in uris
    assert f"{MEM}/{memory_name(TEA)}" not in uris


@pytest.mark.parametrize("text", ["", "   "], ids=["empty", "spaces"])
def test_cli_add_memory_empty_json(ov: Cli, tmp_path: Path, text: str) -> None:
    before = snapshot(tmp_path / "store")
    error = cli_error(ov("add-memory", text, "-o", "json"), "INVALID_ARGUMENT", 2)
    assert "must not be empty" in error["message"]
    assert snapshot(tmp_path / "store") == before


@pytest.mark.parametrize("category", ["../x", "a/b", "has space"])
def test_cli_add_memory_bad_category(ov: Cli, tmp_path: Path, category: str) -> None:
    before_ls = ov("ls", "viking://", "-r", "-s").out
    before = snapshot(tmp_path / "store")
    error = cli_error(ov("add-memory", DARK, "--category", category, "-o", "json"), "INVALID_ARGUMENT", 2)
    assert "Invalid memory category" in error["message"]
    assert error["details"] == {"category": category}
    table = ov("add-memory", DARK, "--category", category)
    assert table.code == 2 and table.out == ""
    assert table.err.startswith("Error: Invalid memory category")
    assert snapshot(tmp_path / "store") == before
    assert ov("ls", "viking://", "-r", "-s").out == before_ls


# ----------------------------------------------------------------------------- add_skill (SDK)
def test_skill_folder_named_by_front_matter(client: OpenViking, skill_dir: Path) -> None:
    result = client.add_skill(skill_dir)
    assert result.root_uri == f"{SKILLS}/pdf-extract"
    assert result.added == 2
    assert sorted(client.ls(f"{SKILLS}/pdf-extract", recursive=True, simple=True)) == [
        f"{SKILLS}/pdf-extract/SKILL.md",
        f"{SKILLS}/pdf-extract/scripts",
        f"{SKILLS}/pdf-extract/scripts/run.md",
    ]
    assert client.read(f"{SKILLS}/pdf-extract/SKILL.md") == SKILL_MD
    for uri in (f"{SKILLS}/pdf-extract", f"{SKILLS}/pdf-extract/SKILL.md", f"{SKILLS}/pdf-extract/scripts/run.md"):
        assert client.stat(uri)["context_type"] == "skill"


def test_skill_folder_without_front_matter_uses_the_folder_name(client: OpenViking, tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "web-search", {"SKILL.md": "# Web search\n\nSearch the web for a query.\n"})
    assert client.add_skill(folder).root_uri == f"{SKILLS}/web-search"
    assert client.stat(f"{SKILLS}/web-search/SKILL.md")["isDir"] is False


def test_skill_single_file(client: OpenViking, tmp_path: Path) -> None:
    path = make_tree(tmp_path / "single", {"git-commit.md": COMMIT_MD}) / "git-commit.md"
    result = client.add_skill(path)
    assert result.root_uri == f"{SKILLS}/git-commit/SKILL.md"
    assert client.read(f"{SKILLS}/git-commit/SKILL.md") == COMMIT_MD
    assert client.stat(f"{SKILLS}/git-commit")["isDir"] is True
    assert client.ls(f"{SKILLS}/git-commit", simple=True) == [f"{SKILLS}/git-commit/SKILL.md"]


def test_skill_name_option(client: OpenViking, skill_dir: Path, tmp_path: Path) -> None:
    assert client.add_skill(skill_dir, name="pdf-tools").root_uri == f"{SKILLS}/pdf-tools"
    path = make_tree(tmp_path / "single", {"git-commit.md": COMMIT_MD}) / "git-commit.md"
    assert client.add_skill(path, name="committer").root_uri == f"{SKILLS}/committer/SKILL.md"
    # A name is one URI segment: it cannot climb out of viking://agent/skills.
    root = client.add_skill(skill_dir, name="../../resources/evil").root_uri
    assert root.startswith(f"{SKILLS}/") and root.count("/") == SKILLS.count("/") + 1
    assert ".." not in root.split("/")


def test_skill_folder_without_skill_md_is_invalid(client: OpenViking, tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "not-a-skill", {"README.md": "# Readme\n\nNot a skill.\n"})
    error = unharmed(client, lambda: client.add_skill(folder))
    assert error.code == "INVALID_ARGUMENT"
    assert "SKILL.md" in error.message


def test_skill_missing_path_is_not_found(client: OpenViking, tmp_path: Path) -> None:
    error = unharmed(client, lambda: client.add_skill(tmp_path / "no-such-skill"))
    assert error.code == "NOT_FOUND"
    assert "no-such-skill" in error.message


def test_skill_comes_back_in_the_skills_group(client: OpenViking, skill_dir: Path) -> None:
    client.add_skill(skill_dir)
    result = client.find("extract text and tables from pdf files", limit=50, score_threshold=-1)
    skill_hits = {raw_uri(h.uri) for h in result.skills}
    assert f"{SKILLS}/pdf-extract/SKILL.md" in skill_hits
    assert all(h.context_type == "skill" for h in result.skills)
    assert not any(raw_uri(h.uri).startswith(SKILLS) for h in [*result.resources, *result.memories])


def test_skill_via_context_type_and_target(client: OpenViking, skill_dir: Path) -> None:
    client.add_skill(skill_dir)
    client.add_memory(DARK)
    by_type = client.find("extract pdf", context_type="skill", limit=50, score_threshold=-1)
    assert f"{SKILLS}/pdf-extract/SKILL.md" in {h.uri for h in by_type.skills}
    assert by_type.resources == [] and by_type.memories == []
    by_target = client.find("extract pdf", target_uri=SKILLS, limit=50, score_threshold=-1)
    assert {raw_uri(h.uri) for h in by_target} == {raw_uri(h.uri) for h in by_type}


def test_skill_directory_abstract_is_the_skill_md_summary(client: OpenViking, skill_dir: Path, tmp_path: Path) -> None:
    client.add_skill(skill_dir)
    summary = client.stat(f"{SKILLS}/pdf-extract/SKILL.md")["abstract"]
    assert "Extract text and tables from PDF files" in summary
    assert client.abstract(f"{SKILLS}/pdf-extract") == summary
    # The same for a skill made from one file.
    path = make_tree(tmp_path / "single", {"git-commit.md": COMMIT_MD}) / "git-commit.md"
    client.add_skill(path)
    commit_summary = client.stat(f"{SKILLS}/git-commit/SKILL.md")["abstract"]
    assert "conventional commit message" in commit_summary
    assert client.abstract(f"{SKILLS}/git-commit") == commit_summary


def test_skill_readded_unchanged_does_no_work(client: OpenViking, skill_dir: Path) -> None:
    client.add_skill(skill_dir)
    again = client.add_skill(skill_dir)
    assert again.added == 0 and again.updated == 0 and again.unchanged == 2
    assert again.records_embedded == 0


def test_skill_with_tags(client: OpenViking, skill_dir: Path) -> None:
    client.add_skill(skill_dir, tags=["team=docs"])
    result = client.find("extract pdf", tags="team=docs", limit=50, score_threshold=-1)
    assert f"{SKILLS}/pdf-extract/SKILL.md" in {h.uri for h in result.skills}
    assert result.resources == [] and result.memories == []


# ----------------------------------------------------------------------------- add-skill (CLI)
def test_cli_add_skill_json_and_table(ov: Cli, skill_dir: Path, tmp_path: Path) -> None:
    result = ov("add-skill", skill_dir, "-o", "json")
    assert result.code == 0, result.err
    data = result.json()["result"]
    assert data["root_uri"] == f"{SKILLS}/pdf-extract"
    assert data["added"] == 2
    path = make_tree(tmp_path / "single", {"git-commit.md": COMMIT_MD}) / "git-commit.md"
    line = one_line(ov("add-skill", path, "--name", "committer"))
    assert f"{SKILLS}/committer/SKILL.md" in line
    listing = ov("ls", SKILLS, "-s")
    assert listing.code == 0
    assert f"{SKILLS}/pdf-extract" in listing.out and f"{SKILLS}/committer" in listing.out


def test_cli_add_skill_missing_path(ov: Cli, tmp_path: Path) -> None:
    before = snapshot(tmp_path / "store")
    error = cli_error(ov("add-skill", tmp_path / "missing-skill", "-o", "json"), "NOT_FOUND", 1)
    assert "missing-skill" in error["message"]
    table = ov("add-skill", tmp_path / "missing-skill")
    assert table.code == 1 and table.out == "" and table.err.startswith("Error: Path not found")
    assert snapshot(tmp_path / "store") == before


def test_cli_add_skill_folder_without_skill_md(ov: Cli, tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "docs-only", EN_FILES)
    before = snapshot(tmp_path / "store")
    error = cli_error(ov("add-skill", folder, "-o", "json"), "INVALID_ARGUMENT", 2)
    assert "SKILL.md" in error["message"]
    assert snapshot(tmp_path / "store") == before


def test_cli_find_context_type_skill(ov: Cli, skill_dir: Path) -> None:
    assert ov("add-skill", skill_dir).code == 0
    assert ov("add-memory", DARK).code == 0
    result = ov("find", "extract pdf tables", "--context-type", "skill", "-t", "-1", "-n", "50", "-o", "json")
    assert result.code == 0, result.err
    found = result.json()["result"]
    assert found["resources"] == [] and found["memories"] == []
    assert f"{SKILLS}/pdf-extract/SKILL.md" in {h["uri"] for h in found["skills"]}
    assert all(h["context_type"] == "skill" for h in found["skills"])
    assert found["total"] == len(found["skills"])
    lines = ov("find", "extract pdf tables", "--context-type", "skill", "-t", "-1", "-n", "50", "-o", "jsonl")
    assert lines.code == 0
    assert all(item["context_type"] == "skill" for item in lines.json_lines())
