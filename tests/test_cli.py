"""The command-line contract on every command (formats, error objects, exit 0/1/2/130), and bad input.

Most tests run ``openviking_cli.main.main`` in-process against a store built once per module
with the hash embedder; the pipe and import tests run real subprocesses.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    EN_FILES,
    HASH_CONF,
    HEAVY,
    MATCHED_CONTEXT_KEYS,
    Cli,
    cli_error,
    cli_unharmed,
    hash_config,
    heavy,
    loaded_modules,
    make_tree,
    run_module,
    snapshot,
    start_module,
    with_store,
    write_config,
    write_hash_config,
)

from openviking.embedded.client import OpenViking

R = "viking://resources"
H = f"{R}/handbook"
MARKUP_NAME = "[bold]x.md"  # a file name cannot hold "/", so "[/bold]" is out
MARKUP_TEXT = "# [red]Alarm[/red] notes\n\n[red]Markup words[/red] stay literal [bold]always[/bold] in alarm notes.\n"
ITEM_KEYS = MATCHED_CONTEXT_KEYS
ANSI = re.compile(r"\x1b\[")


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(store, hash ov.conf): the English handbook plus a file whose name and text look like rich markup."""
    base = tmp_path_factory.mktemp("cli")
    tree = make_tree(base / "handbook", {**EN_FILES, f"alerts/{MARKUP_NAME}": MARKUP_TEXT})
    with OpenViking(path=base / "store", config=hash_config()) as client:
        client.add_resource(tree, tags=["env=prod"])
    yield base / "store", write_hash_config(base / "ov.conf")


@pytest.fixture
def ov(cli: Cli, shared: tuple[Path, Path]) -> Cli:
    """``cli`` with ``--store`` and ``--config`` of the shared store appended."""
    store, conf = shared
    return with_store(cli, store, conf)


# ----------------------------------------------------------------------------- every command, every format
READ_COMMANDS = [
    ("find", "docker deployment"),
    ("read", f"{H}/auth.md"),
    ("abstract", H),
    ("overview", H),
    ("ls", H),
    ("tree", H),
    ("stat", f"{H}/auth.md"),
]


@pytest.mark.parametrize("command", READ_COMMANDS, ids=[c[0] for c in READ_COMMANDS])
@pytest.mark.parametrize("json_flag", [["-o", "json"], ["--output", "json"], ["--json"], ["-o", "JSON"]])
def test_json_envelope(ov: Cli, command: tuple[str, str], json_flag: list[str]) -> None:
    result = ov(*command, *json_flag)
    assert result.code == 0, result.err
    assert result.err == ""
    assert result.out.endswith("\n") and result.out.count("\n") == 1  # exactly one JSON document
    envelope = result.json()
    assert list(envelope) == ["status", "result", "time"]
    assert envelope["status"] == "ok"
    assert isinstance(envelope["time"], int | float) and not isinstance(envelope["time"], bool)
    assert envelope["time"] >= 0


def test_json_and_another_output_format_together_are_a_usage_error(ov: Cli) -> None:
    # one of them winning unseen would hand a script a document where it reads lines
    for argv, other in ((["--json", "-o", "jsonl"], "jsonl"), (["-o", "table", "--json"], "table")):
        result = ov("find", "docker", *argv)
        error = cli_error(result, "INVALID_ARGUMENT", 2)
        assert error["message"] == f"--json and -o {other} ask for different formats: give one of them"
        assert error["hint"] == "Try 'openviking find --help'."
    grouped = ov("session", "list", "-o", "jsonl", "--json")  # a group's command too
    assert (grouped.code, grouped.out) == (2, "")
    assert ov("ls", "viking://resources", "--json", "-o", "json").json()["status"] == "ok"  # the same format twice


LISTING = [
    ("ls", "viking://resources/handbook", "-r"),
    ("tree", "viking://resources/handbook"),
    ("glob", "**/*.md", "-u", "viking://resources/handbook"),
    ("grep", "viking://resources/handbook", "docker", "-i"),
    ("find", "docker"),
    ("relations", "viking://resources/handbook/auth.md"),
    ("session", "list"),
]


@pytest.mark.parametrize("delimiter", [",", "\t"], ids=["csv", "tsv"])
@pytest.mark.parametrize("command", LISTING, ids=[" ".join(c[:2]) for c in LISTING])
def test_a_listing_prints_one_row_per_jsonl_item(ov: Cli, command: tuple[str, ...], delimiter: str) -> None:
    import csv
    import io

    fmt = "csv" if delimiter == "," else "tsv"
    result = ov(*command, "-o", fmt)
    assert result.code == 0 and result.err == "", result.err
    items = [json.loads(line) for line in ov(*command, "-o", "jsonl").out.splitlines()]
    rows = list(csv.reader(io.StringIO(result.out), delimiter=delimiter))
    if not items:
        assert rows == []
        return
    header, *body = rows
    assert header == list(dict.fromkeys(key for item in items for key in item))
    assert len(body) == len(items)

    def cell(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if value is None:
            return ""
        if isinstance(value, list | dict):
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return str(value)

    for row, item in zip(body, items, strict=True):
        assert row == [cell(item.get(key)) for key in header]


@pytest.mark.parametrize(
    ("argv", "fmt", "path"),
    [
        (["read", "viking://resources/handbook/auth.md"], "csv", "openviking read"),
        (["stat", "viking://resources/handbook"], "tsv", "openviking stat"),
        (["session", "new"], "csv", "openviking session new"),
    ],
)
def test_a_format_a_command_does_not_print_is_a_usage_error(
    ov: Cli, shared: tuple[Path, Path], argv: list[str], fmt: str, path: str
) -> None:
    store, _ = shared
    before = snapshot(store)
    error = cli_error(ov(*argv, "-o", fmt), "INVALID_ARGUMENT", 2)  # csv is for a program: a JSON error
    assert error["message"] == f"{path} does not print {fmt}: -o takes table, json, jsonl"
    assert error["hint"] == f"Try '{path} --help'."
    table = ov(*argv, "--output", fmt.upper(), "--json")  # and with --json naming another format
    assert table.code == 2 and table.out == ""
    assert snapshot(store) == before


def test_a_listing_says_in_its_help_that_it_prints_csv(ov: Cli) -> None:
    assert "Output format: table, json, jsonl, csv, tsv" in " ".join(ov("ls", "--help").out.split())
    assert "Output format: table, json, jsonl (default" in " ".join(ov("read", "--help").out.split())


@pytest.mark.parametrize("command", READ_COMMANDS, ids=[c[0] for c in READ_COMMANDS])
def test_jsonl_is_one_object_per_line(ov: Cli, command: tuple[str, str]) -> None:
    result = ov(*command, "-o", "jsonl")
    assert result.code == 0, result.err
    lines = [line for line in result.out.split("\n") if line]
    assert lines
    for line in lines:
        item = json.loads(line)
        assert isinstance(item, dict)
        assert "status" not in item  # items, not envelopes
        assert "\n" not in line
        assert line == json.dumps(item, ensure_ascii=False, separators=(",", ":"))  # as `jq -c` prints it


@pytest.mark.parametrize("command", READ_COMMANDS, ids=[c[0] for c in READ_COMMANDS])
def test_table_output(ov: Cli, command: tuple[str, str]) -> None:
    result = ov(*command)
    assert result.code == 0, result.err
    assert result.out.strip()
    assert not result.out.lstrip().startswith("{")
    assert not ANSI.search(result.out + result.err)


def test_json_results_match_the_library(ov: Cli, shared: tuple[Path, Path]) -> None:
    store, _ = shared
    with OpenViking(path=store, config=hash_config()) as client:
        assert ov("read", f"{H}/auth.md", "--json").json()["result"] == EN_FILES["auth.md"]
        assert ov("abstract", H, "--json").json()["result"] == client.abstract(H)
        assert ov("overview", H, "--json").json()["result"] == client.overview(H)
        assert ov("ls", H, "--json").json()["result"] == client.ls(H)
        assert ov("tree", H, "--json").json()["result"] == client.tree(H)
        assert ov("stat", f"{H}/auth.md", "--json").json()["result"] == client.stat(f"{H}/auth.md")
        found = ov("find", "docker deployment", "--json").json()["result"]
        assert found == client.find("docker deployment").to_dict()


def test_find_json_result_shape(ov: Cli) -> None:
    data = ov("find", "docker deployment", "-o", "json").json()["result"]
    assert list(data) == ["memories", "resources", "skills", "total", "pending_vectors"]
    assert data["total"] == len(data["memories"]) + len(data["resources"]) + len(data["skills"]) > 0
    for item in data["resources"]:
        assert list(item) == ITEM_KEYS
    jsonl = ov("find", "docker deployment", "-o", "jsonl").json_lines()
    grouped = [*data["memories"], *data["resources"], *data["skills"]]
    assert jsonl == sorted(grouped, key=lambda hit: -hit["score"])  # best first, as the cards are


def test_jsonl_ranks_across_groups_as_the_cards_do(cli: Cli, en_tree: Path, hash_conf: Path, tmp_path: Path) -> None:
    # memories are the first group, yet a memory scoring below a resource must not come first:
    # `| head -1` is the top hit
    ov = with_store(cli, tmp_path / "store", hash_conf)
    assert ov("add-resource", en_tree).code == 0
    assert ov("add-memory", "The user keeps a cat called Docker, unrelated to deployment").code == 0
    query = ("find", "docker deployment", "-n", "5", "-t", "-1")
    jsonl = ov(*query, "-o", "jsonl").json_lines()
    assert {hit["context_type"] for hit in jsonl} == {"memory", "resource"}
    scores = [hit["score"] for hit in jsonl]
    assert scores == sorted(scores, reverse=True) and jsonl[0]["context_type"] == "resource"
    cards = re.findall(r"^\d+\. (\w+) · Level \d · score (\S+)$", ov(*query).out, re.M)
    assert cards == [(hit["context_type"], f"{hit['score']:.3f}") for hit in jsonl]


def test_find_table_shows_rank_type_level_score_uri(ov: Cli) -> None:
    result = ov("find", "docker deployment", "-n", "3")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == "3 results"
    assert lines[1] == "Ranked by relevance · limit 3 final results"
    cards = [line for line in lines if re.match(r"^\d+\. ", line)]
    assert len(cards) == 3
    for rank, card in enumerate(cards, start=1):
        assert re.fullmatch(rf"{rank}\. resource · Level [012] · score [01]\.\d{{3}}", card), card
    uris = [line.strip() for line in lines if line.startswith("   viking://")]
    assert len(uris) == 3
    expected = [h["uri"] for h in ov("find", "docker deployment", "-n", "3", "--json").json()["result"]["resources"]]
    assert uris == expected
    assert all(len(line) < 140 for line in lines)


def test_find_with_no_result_exits_0(ov: Cli) -> None:
    table = ov("find", "qqxzv wqpzz", "--mode", "keyword")
    assert table.code == 0
    assert table.out == ""
    assert "No results found." in table.err
    as_json = ov("find", "qqxzv wqpzz", "--mode", "keyword", "--json")
    assert as_json.code == 0
    assert as_json.json()["result"] == {"memories": [], "resources": [], "skills": [], "total": 0, "pending_vectors": 0}
    assert ov("find", "qqxzv wqpzz", "--mode", "keyword", "-o", "jsonl").out == ""


def test_find_flags_reach_the_library(ov: Cli, shared: tuple[Path, Path]) -> None:
    store, _ = shared
    argv = [
        "find",
        "docker",
        "-u",
        f"{H}/deploy",
        "-u",
        f"{H}/notes",
        "-n",
        "4",
        "-t",
        "0",
        "--after",
        "30d",
        "--time-field",
        "created_at",
        "-L",
        "0,2",
        "--context-type",
        "resource",
        "--tags",
        "env=prod",
        "--filter",
        '{"op": "must", "field": "level", "conds": [2]}',
        "--mode",
        "vector",
        "--json",
    ]
    result = ov(*argv)
    assert result.code == 0, result.err
    with OpenViking(path=store, config=hash_config()) as client:
        expected = client.find(
            "docker",
            target_uri=[f"{H}/deploy", f"{H}/notes"],
            limit=4,
            score_threshold=0,
            since="30d",
            time_field="created_at",
            level="0,2",
            context_type="resource",
            tags="env=prod",
            filter={"op": "must", "field": "level", "conds": [2]},
            mode="vector",
        )
    assert result.json()["result"] == expected.to_dict()
    assert {h["uri"] for h in result.json()["result"]["resources"]} == {
        f"{H}/deploy/docker.md",
        f"{H}/deploy/kubernetes.md",
        f"{H}/notes/cooking.md",
    }
    assert ov("find", "docker", "--node-limit", "1", "--json").json()["result"]["total"] == 1


def test_read_offset_and_limit(ov: Cli) -> None:
    lines = EN_FILES["auth.md"].splitlines(keepends=True)
    assert ov("read", f"{H}/auth.md", "--offset", "2", "--limit", "1").out == lines[2]
    assert ov("read", f"{H}/auth.md", "--offset", "4", "--json").json()["result"] == "".join(lines[4:])


def test_ls_tree_options(ov: Cli) -> None:
    simple = ov("ls", H, "-s").out.split()
    assert simple == [f"{H}/alerts", f"{H}/deploy", f"{H}/notes", f"{H}/auth.md", f"{H}/README.md"]  # dirs first
    recursive = set(ov("ls", H, "-r", "-s").out.split())
    assert {f"{H}/{rel}" for rel in EN_FILES} <= recursive
    hidden = set(ov("ls", H, "-a", "-s").out.split())
    assert {f"{H}/.abstract.md", f"{H}/.overview.md"} <= hidden
    assert f"{H}/deploy/.abstract.md" not in hidden  # a subfolder's sidecars are one level down
    assert f"{H}/deploy/.abstract.md" in set(ov("ls", H, "-a", "-r", "-s").out.split())
    listed = {e["uri"]: e for e in ov("ls", H, "-a", "--json").json()["result"]}
    for name in (".abstract.md", ".overview.md"):  # a hidden file lists as itself, like any file
        assert ov("ls", f"{H}/{name}", "--json").json()["result"] == [listed[f"{H}/{name}"]]
    assert len(ov("ls", H, "-s", "-n", "2").out.split()) == 2
    shallow = ov("tree", R, "-L", "1", "--json").json()["result"]
    assert [e["uri"] for e in shallow] == [H]
    deep = ov("tree", R, "-L", "0", "--json").json()["result"]
    assert f"{H}/deploy/docker.md" in [e["uri"] for e in deep]


def test_add_resource_outputs(cli: Cli, tmp_path: Path, en_tree: Path, hash_conf: Path) -> None:
    store = tmp_path / "store"
    table = cli("add-resource", en_tree, "--store", store, "--config", hash_conf)
    assert table.code == 0, table.err
    assert table.out.startswith(f"Added {len(EN_FILES)} · updated 0 · unchanged 0 · removed 0 · skipped 0 -> {H}")
    assert table.out.count("\n") == 1
    again = cli("add-resource", en_tree, "--store", store, "--config", hash_conf, "-o", "json")
    assert again.code == 0, again.err
    data = again.json()
    assert list(data) == ["status", "result", "time"]
    result = data["result"]
    assert result["root_uri"] == H
    assert (result["added"], result["updated"], result["unchanged"], result["removed"], result["skipped"]) == (
        0,
        0,
        len(EN_FILES),
        0,
        0,
    )
    assert result["records_embedded"] == 0
    jsonl = cli("add-resource", en_tree, "--store", store, "--config", hash_conf, "-o", "jsonl")
    assert jsonl.code == 0 and len(jsonl.json_lines()) == 1
    assert jsonl.json_lines()[0]["root_uri"] == H
    flagged = cli(
        "add-resource",
        en_tree,
        "--to",
        f"{R}/v2",
        "--tag",
        "env=dev",
        "--tag",
        "team=docs",
        "--include",
        "*.md",
        "--exclude",
        "notes/",
        "--store",
        store,
        "--config",
        hash_conf,
        "--json",
    )
    assert flagged.code == 0, flagged.err
    assert flagged.json()["result"]["added"] == len(EN_FILES) - 1
    stat = cli("stat", f"{R}/v2/auth.md", "--store", store, "--config", hash_conf, "--json").json()["result"]
    assert stat["tags"] == ["env=dev", "team=docs"]
    parent = cli(
        "add-resource", en_tree / "auth.md", "--parent", f"{R}/v2", "--store", store, "--config", hash_conf, "--json"
    )
    assert parent.json()["result"]["root_uri"] == f"{R}/v2/auth.md"


# ----------------------------------------------------------------------------- store and config
def test_store_from_the_environment(cli: Cli, shared: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    store, conf = shared
    monkeypatch.setenv("OPENVIKING_STORE", str(store))
    result = cli("ls", H, "-s", "--config", conf)
    assert result.code == 0, result.err
    assert f"{H}/auth.md" in result.out.split()


def test_store_from_the_config_file(cli: Cli, shared: tuple[Path, Path], tmp_path: Path) -> None:
    store, _ = shared
    conf = write_config(tmp_path / "ws.conf", {"storage": {"workspace": str(store)}, **HASH_CONF})
    result = cli("find", "docker", "--config", conf, "--json")
    assert result.code == 0, result.err
    assert result.json()["result"]["total"] > 0


def test_config_from_home_and_from_the_environment(
    cli: Cli, shared: tuple[Path, Path], isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, conf = shared
    # without the hash config the default (local) embedder does not match this store
    assert cli("find", "docker", "--store", store, "--json").code == 1
    monkeypatch.setenv("OPENVIKING_CONFIG_FILE", str(conf))
    assert cli("find", "docker", "--store", store, "--json").code == 0
    monkeypatch.delenv("OPENVIKING_CONFIG_FILE")
    write_hash_config(Path(os.environ["OPENVIKING_HOME"]) / "ov.conf")
    assert cli("find", "docker", "--store", store, "--json").code == 0


def test_default_store_is_under_openviking_home(cli: Cli, en_tree: Path, hash_conf: Path) -> None:
    result = cli("add-resource", en_tree, "--config", hash_conf, "--json")
    assert result.code == 0, result.err
    assert (Path(os.environ["OPENVIKING_HOME"]) / "data").is_dir()
    assert cli("find", "docker", "--config", hash_conf, "--json").json()["result"]["total"] > 0


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json", "not valid JSON"),
        ('{"embedding": {"dense": {"provider": "hash"}},}', "not valid JSON"),
        ('{"embeding": {}}', "Unknown config key 'embeding'"),
        ('{"embedding": {"dense": {"provider": "magic"}}}', "provider 'magic' is not supported"),
    ],
)
def test_bad_config_file(cli: Cli, shared: tuple[Path, Path], tmp_path: Path, content: str, needle: str) -> None:
    store, _ = shared
    conf = write_config(tmp_path / "bad.conf", content)
    result = cli("find", "docker", "--store", store, "--config", conf, "--json")
    error = cli_error(result, "FAILED_PRECONDITION", 2)
    assert needle in error["message"]


def test_missing_config_file(cli: Cli, shared: tuple[Path, Path], tmp_path: Path) -> None:
    store, _ = shared
    result = cli("find", "docker", "--store", store, "--config", tmp_path / "nope.conf")
    assert result.code != 0
    assert result.out == ""
    assert "nope.conf" in result.err


def test_api_keys_are_never_printed(cli: Cli, shared: tuple[Path, Path], tmp_path: Path) -> None:
    store, _ = shared
    dense = {"provider": "openai", "api_key": "sk-SECRET-123", "api_base": "http://127.0.0.1:9/v1", "model": "m"}
    conf = write_config(tmp_path / "key.conf", {"embedding": {"dense": dense}})
    result = cli("find", "docker", "--store", store, "--config", conf, "--json")
    assert result.code != 0
    assert "sk-SECRET-123" not in result.out + result.err


# ----------------------------------------------------------------------------- rich markup stays data
def test_markup_in_names_and_text_is_printed_literally(ov: Cli) -> None:
    uri = f"{H}/alerts/{MARKUP_NAME}"
    found = ov("find", "alarm notes markup words literal", "-u", f"{H}/alerts", "-L", "2")
    assert found.code == 0, found.err
    assert uri in found.out
    assert "[red]Markup words[/red]" in found.out or "[red]Alarm[/red]" in found.out
    assert ov("read", uri).out == MARKUP_TEXT
    assert uri in ov("ls", f"{H}/alerts", "-s").out.split()
    assert "[red]Alarm[/red]" in ov("ls", f"{H}/alerts").out  # the abstract column (URI column: see below)
    assert MARKUP_NAME in ov("tree", f"{H}/alerts").out
    stat = ov("stat", uri).out
    assert uri in stat and "[red]" in stat
    assert "[red]" in ov("abstract", uri).out
    assert MARKUP_NAME in ov("overview", f"{H}/alerts").out


def test_ls_table_shows_every_uri(ov: Cli) -> None:
    # COLUMNS=120 (set by the isolation fixture): wide enough for the abstract column
    for uri in (H, f"{H}/alerts", f"{H}/deploy"):
        out = ov("ls", uri).out
        expected = ov("ls", uri, "-s").out.split()
        assert expected
        for child in expected:
            assert child in out, (child, out)
        assert out.splitlines()[0].split()[:4] == ["type", "size", "modified", "uri"], out


def test_ls_at_a_narrow_width_loses_no_character_of_a_uri(ov: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    # At 40 columns a URI folded to ~20 cells and then cropped at the edge would read "viking://reso",
    # "ocs/english.m". A pipe gets whole lines whatever COLUMNS says; a screen gets folds.
    monkeypatch.setenv("COLUMNS", "40")
    expected = ov("ls", H, "-s").out.split()
    piped = ov("ls", H).out.splitlines()
    assert [line.split()[4] for line in piped[1:]] == expected  # one entry per line, whole URIs
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich takes stdout for a terminal
    screen = ANSI.sub("", ov("ls", H).out).splitlines()[1:]
    uris: list[str] = []
    for line in screen:  # a URI goes on in the lines below its row
        if line[:4] in ("dir ", "file"):
            uris.append(line[line.index("viking://") :].strip())
        else:
            uris[-1] += line.strip()
    assert uris == expected and len(screen) > len(expected) and max(len(line) for line in screen) <= 40


def test_ls_in_a_pipe_shows_the_abstracts_however_short(cli: Cli, hash_conf: Path, tmp_path: Path) -> None:
    ov = with_store(cli, tmp_path / "store", hash_conf)
    assert ov("add-resource", make_tree(tmp_path / "tiny", {"a.md": "# A\n"})).code == 0
    header, row = ov("ls", "viking://resources/tiny").out.splitlines()
    assert header.split() == ["type", "size", "modified", "uri", "abstract"] and row.endswith(" A")


def test_a_long_uri_in_a_find_card_is_never_cut(cli: Cli, hash_conf: Path, tmp_path: Path) -> None:
    # a 200-character URI stays whole, in a pipe too: not cut after two card lines
    deep = "/".join(f"directory_level_{i:02d}" for i in range(1, 9))
    tree = make_tree(
        tmp_path / "long", {f"{deep}/wombat_notes_file_with_a_long_name.md": "# Wombats\n\nCube droppings.\n"}
    )
    ov = with_store(cli, tmp_path / "store", hash_conf)
    assert ov("add-resource", tree).code == 0
    uri = f"viking://resources/long/{deep}/wombat_notes_file_with_a_long_name.md"
    piped = ov("find", "wombat droppings", "-n", "1").out.splitlines()
    assert f"   {uri}" in piped  # whole, on one line: `| grep viking://` finds it
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TTY_COMPATIBLE", "1")
        mp.setenv("COLUMNS", "60")
        screen = ANSI.sub("", ov("find", "wombat droppings", "-n", "1").out).splitlines()
    start = next(i for i, line in enumerate(screen) if line.startswith("   viking://"))
    folded = "".join(line.strip() for line in screen[start : start + 4])
    assert folded.startswith(uri) and max(len(line) for line in screen) <= 60


def test_markup_in_an_error_message_is_printed_literally(ov: Cli) -> None:
    result = ov("read", f"{H}/[bold]missing[/bold].md")
    assert result.code == 1
    assert f"{H}/[bold]missing[/bold].md" in result.err.splitlines()[0]


def test_no_color_when_not_a_terminal(ov: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR")
    for argv in (("find", "docker"), ("ls", H), ("tree", H), ("stat", H), ("read", f"{H}/nope.md")):
        result = ov(*argv)
        assert not ANSI.search(result.out + result.err), argv


# ----------------------------------------------------------------------------- errors: shape and exit codes
def test_error_in_table_mode_is_one_line_and_a_hint(ov: Cli) -> None:
    result = ov("read", f"{H}/missing.md")
    assert result.code == 1
    assert result.out == ""
    lines = result.err.splitlines()
    assert len(lines) == 2, result.err
    assert lines[0] == f"Error: File not found: {H}/missing.md"
    assert lines[1].startswith("Hint: ")


@pytest.mark.parametrize("fmt", [["-o", "json"], ["--json"], ["-o", "jsonl"]])
def test_error_in_json_mode_is_a_json_object_on_stderr(ov: Cli, fmt: list[str]) -> None:
    result = ov("read", f"{H}/missing.md", *fmt)
    assert result.code == 1
    assert result.out == ""
    assert result.err.count("\n") == 1
    payload = json.loads(result.err)
    assert payload["status"] == "error"
    error = payload["error"]
    assert {"code", "message", "details"} <= set(error)
    assert error["code"] == "NOT_FOUND"
    assert error["message"] == f"File not found: {H}/missing.md"
    assert isinstance(error["details"], dict)
    if fmt == ["-o", "jsonl"]:  # one compact line, like the items
        assert result.err == json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n"


def test_debug_shows_the_traceback(ov: Cli) -> None:
    result = ov("read", f"{H}/missing.md", "--debug")
    assert result.code == 1
    assert "Traceback" in result.err
    assert "Error: File not found" in result.err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["find", "x", "--bogus"], "No such option: --bogus"),
        (["find", "x", "--limit", "abc"], "Invalid value for '-n' / '--limit'"),
        (["find", "x", "-n", "1.5"], "Invalid value for '-n' / '--limit'"),
        (["find", "x", "-t", "high"], "Invalid value for '-t' / '--threshold'"),
        (["find", "x", "-o", "xml"], "'--output': 'xml' is not one of 'table', 'json', 'jsonl', 'csv', 'tsv'."),
        (["find"], "Missing argument 'query'"),
        (["read"], "Missing argument"),
        (["read", f"{H}/auth.md", "--offset", "-1"], "Invalid value for '--offset'"),
        (["ls", H, "-n", "-3"], "Invalid value for '-n' / '--node-limit'"),
        (["frobnicate"], "No such command 'frobnicate'"),
        (["add-resource"], "Missing argument"),
    ],
)
def test_usage_errors_exit_2(cli: Cli, argv: list[str], needle: str) -> None:
    table = cli(*argv)
    assert table.code == 2
    assert table.out == ""
    lines = table.err.splitlines()
    assert lines[0].startswith("Error: ") and needle in lines[0], table.err
    assert lines[1].startswith("Hint: ")
    as_json = cli(*argv, "--json") if argv != ["find", "x", "-o", "xml"] else cli("find", "x", "--json", "-o", "xml")
    error = cli_error(as_json, "INVALID_ARGUMENT", 2)
    assert needle in error["message"]


@pytest.mark.parametrize("argv", [[], ["session"], ["--store", "/tmp/x", "session"], ["--store", "/tmp/x"]])
def test_no_command_is_a_usage_error_with_the_help_on_stderr(cli: Cli, argv: list[str]) -> None:
    result = cli(*argv)
    assert (result.code, result.out) == (2, "")  # stdout stays empty on an error
    assert "Usage: openviking" in result.err and "Commands" in result.err
    assert "No such option" not in result.err  # global options alone are no mistake of their own


@pytest.mark.parametrize(
    ("argv", "path"),
    [
        (["--json"], "openviking"),
        (["session", "--json"], "openviking session"),
        (["-o", "jsonl"], "openviking"),
        (["-o", "JSON"], "openviking"),  # -o is not case-sensitive, and neither is the error's format
    ],
)
def test_no_command_in_json_mode_is_a_json_error(cli: Cli, argv: list[str], path: str) -> None:
    # a script that asks for JSON gets a JSON error, not the help text or "No such option: --json"
    error = cli_error(cli(*argv), "INVALID_ARGUMENT", 2)
    assert (error["message"], error["hint"]) == ("Missing command.", f"Try '{path} --help'.")


def test_version(cli: Cli) -> None:
    import openviking

    result = cli("--version")
    assert result.code == 0
    assert result.out.strip() == f"openviking {openviking.__version__}"


def test_help(cli: Cli) -> None:
    result = cli("--help")
    assert result.code == 0
    for command in ("add-resource", "find", "read", "abstract", "overview", "ls", "tree", "stat"):
        assert command in result.out


@pytest.mark.parametrize("command", ["add-resource", "find", "read", "abstract", "overview", "ls", "tree", "stat"])
def test_every_command_has_the_global_options(cli: Cli, command: str) -> None:
    result = cli(command, "--help")
    assert result.code == 0
    for option in ("--store", "--config", "--output", "--json", "--debug"):
        assert option in result.out, (command, option)


# ----------------------------------------------------------------------------- bad input
FIND_BAD = [
    (["find", ""], "INVALID_ARGUMENT", "must not be empty"),
    (["find", "   "], "INVALID_ARGUMENT", "must not be empty"),
    (["find", "x", "-u", "viking://nowhere/x"], "INVALID_URI", "Invalid scope 'nowhere'"),
    (["find", "x", "-u", "resources/handbook"], "INVALID_URI", "must start with 'viking://'"),
    (["find", "x", "-u", f"{R}/../etc"], "PERMISSION_DENIED", "'..'"),
    (["find", "x", "--after", "yesterdayish"], "INVALID_ARGUMENT", "'yesterdayish'"),
    (["find", "x", "--after", "2026-02-30"], "INVALID_ARGUMENT", "'2026-02-30'"),
    (["find", "x", "--after", "2h", "--time-field", "mtime"], "INVALID_ARGUMENT", "time_field must be one of"),
    (["find", "x", "--time-field", "mtime"], "INVALID_ARGUMENT", "time_field must be one of"),
    (["find", "x", "--limit", "-1"], "INVALID_ARGUMENT", "limit must be an integer >= 0"),
    (["find", "x", "--filter", "not json"], "INVALID_ARGUMENT", "not valid JSON"),
    (
        ["find", "x", "--filter", '{"op": "must", "field": "color", "conds": ["red"]}'],
        "INVALID_ARGUMENT",
        "Unknown filter field 'color'",
    ),
    (["find", "x", "--filter", '{"op": "xor", "conds": []}'], "INVALID_ARGUMENT", "Unknown filter op 'xor'"),
    (["find", "x", "--tags", "env"], "INVALID_ARGUMENT", "Invalid tag 'env'"),
    (["find", "x", "--level", "7"], "INVALID_ARGUMENT", "Invalid level '7'"),
    (["find", "x", "--context-type", "document"], "INVALID_ARGUMENT", "context_type must be one or more of"),
    (["find", "x", "--mode", "semantic"], "INVALID_ARGUMENT", "mode must be one of"),
    # bytes that are not UTF-8 (a Latin-1 terminal), as Python hands them over: lone surrogates
    (["find", "caf\udcff"], "INVALID_ARGUMENT", "Search query is not valid UTF-8: caf\\xff"),
    (["search", "caf\udcff"], "INVALID_ARGUMENT", "Search query is not valid UTF-8: caf\\xff"),
    (["ls", f"{R}/caf\udce9"], "INVALID_URI", f"Invalid URI: {R}/caf\\xe9 (URI is not valid UTF-8)"),
    (["add-memory", "caf\udcff"], "INVALID_ARGUMENT", "Memory text is not valid UTF-8: caf\\xff"),
    (
        ["session", "add-message", "s1", "--role", "user", "--content", "caf\udcff"],
        "INVALID_ARGUMENT",
        "Message text is not valid UTF-8: caf\\xff",
    ),
    # another user's space is not written to (find could never search what landed there)
    (["mkdir", "viking://user/bob/notes"], "PERMISSION_DENIED", "viking://user/bob/notes is in another user's space"),
    (["mv", f"{H}/auth.md", "viking://user/bob/auth.md"], "PERMISSION_DENIED", "in another user's space"),
    (["read", "viking://nowhere/x"], "INVALID_URI", "Invalid scope 'nowhere'"),
    (["ls", f"{R}/.."], "PERMISSION_DENIED", "'..'"),
    (["stat", f"{R}/a\\b"], "PERMISSION_DENIED", "a\\b"),
]


@pytest.mark.parametrize(("argv", "code", "needle"), FIND_BAD, ids=[" ".join(a) for a, _, _ in FIND_BAD])
def test_bad_input_json_and_table_with_a_hint(
    ov: Cli, shared: tuple[Path, Path], argv: list[str], code: str, needle: str
) -> None:
    store, _ = shared
    _error, table = cli_unharmed(ov, store, argv, code, 2, needle)
    lines = table.err.splitlines()
    assert len(lines) == 2 and lines[1].startswith("Hint: "), f"no hint for {code}: {table.err!r}"


@pytest.mark.parametrize("command", ["find", "search"])
def test_an_empty_query_hint_fits_the_command_it_follows(ov: Cli, shared: tuple[Path, Path], command: str) -> None:
    store, _ = shared
    _error, table = cli_unharmed(ov, store, [command, " "], "INVALID_ARGUMENT", 2, "must not be empty")
    hint = table.err.splitlines()[1]
    assert hint == 'Hint: Say what to look for in words, e.g. "how to authenticate users"'


def _add_bad_cases(tmp: Path, en_tree: Path) -> dict[str, tuple[list[Any], str, str, int]]:
    (tmp / "empty").mkdir()
    (tmp / "blob.bin").write_bytes(b"\x00\x01\x02\x03" * 64)
    return {
        "missing path": (["add-resource", tmp / "does-not-exist"], "NOT_FOUND", "Path not found", 1),
        "empty directory": (["add-resource", tmp / "empty"], "INVALID_ARGUMENT", "Nothing to add", 2),
        "binary file": (["add-resource", tmp / "blob.bin"], "INVALID_ARGUMENT", "binary", 2),
        "to and parent": (
            ["add-resource", en_tree, "--to", f"{R}/a", "--parent", R],
            "INVALID_ARGUMENT",
            "--to or --parent",
            2,
        ),
        "tag without =": (["add-resource", en_tree, "--tag", "env"], "INVALID_ARGUMENT", "Invalid tag 'env'", 2),
        "another user's space": (
            ["add-resource", en_tree, "--to", "viking://user/bob/handbook"],
            "PERMISSION_DENIED",
            "viking://user/bob/handbook is in another user's space",
            2,
        ),
        "another user's parent": (
            ["add-resource", en_tree, "--parent", "viking://user/bob"],
            "PERMISSION_DENIED",
            "in another user's space",
            2,
        ),
        "bad to scope": (
            ["add-resource", en_tree, "--to", "viking://nowhere/x"],
            "INVALID_URI",
            "Invalid scope 'nowhere'",
            2,
        ),
        "to with ..": (["add-resource", en_tree, "--to", f"{R}/../x"], "PERMISSION_DENIED", "'..'", 2),
        "missing parent": (["add-resource", en_tree, "--parent", f"{R}/missing"], "NOT_FOUND", "Parent not found", 1),
        "file onto a directory": (
            ["add-resource", en_tree / "auth.md", "--to", H],
            "ALREADY_EXISTS",
            "already exists",
            1,
        ),
    }


ADD_CASES = [
    "missing path",
    "empty directory",
    "binary file",
    "to and parent",
    "tag without =",
    "bad to scope",
    "to with ..",
    "missing parent",
    "another user's space",
    "another user's parent",
    "file onto a directory",
]
# On a new store there is no directory to add a file onto: every other case still fails.
ADD_CASES_ON_A_NEW_STORE = [case for case in ADD_CASES if case != "file onto a directory"]


@pytest.mark.parametrize("case", ADD_CASES)
def test_bad_add_resource_input(ov: Cli, shared: tuple[Path, Path], tmp_path: Path, en_tree: Path, case: str) -> None:
    store, _ = shared
    argv, code, needle, status = _add_bad_cases(tmp_path, en_tree)[case]
    cli_unharmed(ov, store, argv, code, status, needle)


def test_bad_add_resource_input_creates_no_store(cli: Cli, tmp_path: Path, hash_conf: Path, en_tree: Path) -> None:
    cases = _add_bad_cases(tmp_path, en_tree)
    for name in ADD_CASES_ON_A_NEW_STORE:
        argv, code, _needle, status = cases[name]
        result = cli(*argv, "--store", tmp_path / "new-store", "--config", hash_conf, "--json")
        cli_error(result, code, status)
        assert not (tmp_path / "new-store").exists(), name


@pytest.mark.parametrize(
    "command",
    [
        ["find", "docker"],
        ["ls", R],
        ["read", f"{H}/auth.md"],
        ["tree", R],
        ["stat", H],
        ["abstract", H],
        ["overview", H],
    ],
)
def test_store_that_does_not_exist(cli: Cli, tmp_path: Path, hash_conf: Path, command: list[str]) -> None:
    store = tmp_path / "no" / "store"
    result = cli(*command, "--store", store, "--config", hash_conf, "--json")
    error = cli_error(result, "NOT_FOUND", 1)
    assert str(store) in error["message"]
    assert "add-resource" in error.get("hint", "")
    table = cli(*command, "--store", store, "--config", hash_conf)
    assert table.code == 1
    assert table.err.splitlines()[0].startswith("Error: No store at")
    assert "Hint: " in table.err and "add-resource" in table.err
    assert not store.exists()
    assert not store.parent.exists()


def test_store_made_with_another_embedder(cli: Cli, shared: tuple[Path, Path], tmp_path: Path) -> None:
    store, _ = shared
    extra = make_tree(tmp_path / "extra", {"more.md": "# More\n\nMore text.\n"})
    before = snapshot(store)
    result = cli("find", "docker", "--store", store, "--json")  # no --config: the default local embedder
    error = cli_error(result, "FAILED_PRECONDITION", 1)
    assert "hash" in error["message"] and "local" in error["message"]
    assert "reindex" in error["message"] + error.get("hint", "")
    table = cli("find", "docker", "--store", store)
    assert table.code == 1
    assert table.err.splitlines()[0].startswith("Error: ")
    assert "reindex" in table.err
    cli_error(cli("add-resource", extra, "--store", store, "--json"), "FAILED_PRECONDITION", 1)
    assert snapshot(store) == before


# ----------------------------------------------------------------------------- subprocesses
@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """A store whose find/ls output is larger than a pipe buffer, plus one large file."""
    base = tmp_path_factory.mktemp("pipe")
    files: dict[str, str] = {
        f"d{i % 10}/a-rather-long-note-name-{i:03d}.md": f"# Note {i}\n\nThis note {i} is about shared pipeline "
        "topics, and it says so in a sentence long enough to make every listing line wide.\n"
        for i in range(700)
    }
    files["big.md"] = "# Big\n\n" + "".join(f"Line {i} of a big file about pipes.\n" for i in range(20000))
    tree = make_tree(base / "many", files)
    with OpenViking(path=base / "store", config=hash_config()) as client:
        client.add_resource(tree)
    return base / "store", write_hash_config(base / "ov.conf"), f"{R}/many"


@pytest.mark.parametrize(
    "argv",
    [
        ["find", "note about pipeline topics", "-n", "800", "-t", "0", "-o", "jsonl"],
        ["find", "note about pipeline topics", "-n", "800", "-t", "0"],
        ["ls", "{root}", "-r", "-o", "jsonl"],
        ["ls", "{root}", "-r"],
        ["read", "{root}/big.md"],
    ],
    ids=["find-jsonl", "find-table", "ls-jsonl", "ls-table", "read"],
)
def test_closed_pipe_exits_quietly(big_store: tuple[Path, Path, str], argv: list[str]) -> None:
    store, conf, root = big_store
    args = [a.format(root=root) for a in argv] + ["--store", str(store), "--config", str(conf)]
    proc = start_module(args, text=False)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    assert first.strip()
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read().decode("utf-8", "replace")
    proc.stderr.close()
    proc.wait(timeout=120)
    assert "Traceback" not in err
    assert "Error" not in err
    assert "Exception" not in err
    assert proc.returncode == 0, err


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["find", "--help"],
        ["add-resource", "--help"],
        ["--version"],
        ["find", "x", "--limit", "abc"],
        ["find", "x", "--bogus"],
        [],
    ],
    ids=["help", "find-help", "add-help", "version", "bad-int", "bad-option", "no-args"],
)
def test_help_and_argument_errors_load_no_heavy_module(argv: list[str]) -> None:
    code = f"from openviking_cli.main import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass"
    assert heavy(loaded_modules(code)) == []


def test_help_loads_none_of_the_library_but_its_version_errors_and_printable() -> None:
    # ostext (re and errors alone) spells out the control characters of every line the CLI prints.
    code = "from openviking_cli.main import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    library = sorted(m for m in loaded_modules(code) if m.startswith("openviking."))
    assert library == ["openviking._version", "openviking.errors", "openviking.system", "openviking.system.ostext"]


def test_the_library_loads_its_result_types_when_first_named() -> None:
    code = "import openviking as ov\nassert 'openviking.contract.hits' not in sys.modules\nov.FindResult\n"
    code += "from openviking import Stat"
    loaded = loaded_modules(code)
    assert "openviking.contract.hits" in loaded and "openviking.contract.results" in loaded
    import openviking

    assert all(getattr(openviking, name) is not None for name in openviking.__all__)


def test_importtime_of_help_shows_no_heavy_module() -> None:
    proc = run_module(["--help"], python_flags=["-X", "importtime"], timeout=120)
    assert proc.returncode == 0, proc.stderr
    imported = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert imported.isdisjoint(HEAVY), sorted(imported & set(HEAVY))


def test_console_script_and_module_entry_points(tmp_path: Path) -> None:
    import openviking

    script = Path(sys.executable).parent / "openviking"
    assert script.exists()
    for proc in (
        subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=120, env=dict(os.environ)),
        run_module(["--version"], timeout=120),
    ):
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == f"openviking {openviking.__version__}"
    no_args = subprocess.run([str(script)], capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert no_args.returncode == 2


def test_subprocess_error_and_no_progress_bar_off_a_terminal(tmp_path: Path, en_tree: Path, hash_conf: Path) -> None:
    store = tmp_path / "store"
    added = run_module(["add-resource", str(en_tree), "--store", str(store), "--config", str(hash_conf)])
    assert added.returncode == 0
    assert added.stderr == ""  # no progress bar when stderr is not a terminal
    assert added.stdout.startswith("Added ")
    missing = run_module(["find", "x", "--store", str(tmp_path / "nowhere"), "--config", str(hash_conf)])
    assert missing.returncode == 1
    assert missing.stdout == ""
    assert "Traceback" not in missing.stderr
    assert missing.stderr.startswith("Error: No store at")
    bad = run_module(["find", "", "--store", str(store), "--config", str(hash_conf), "-o", "json"])
    assert bad.returncode == 2
    assert json.loads(bad.stderr)["error"]["code"] == "INVALID_ARGUMENT"


# ----------------------------------------------------------------------------- layout, pipes, tree
def test_tree_draws_each_folder_as_a_branch(cli: Cli, tmp_path: Path, hash_conf: Path) -> None:
    tree = make_tree(tmp_path / "y", {"b/c/d.md": "# D\n\nd.\n", "b/e.md": "# E\n\ne.\n", "f.md": "# F\n\nf.\n"})
    ov = with_store(cli, tmp_path / "store", hash_conf)
    assert ov("add-resource", tree).code == 0
    lines = ov("tree", f"{R}/y", "-L", "0").out.splitlines()
    assert lines[0] == f"{R}/y"
    drawn = [line.split("/")[0].split(".md")[0] for line in lines[1:]]  # the rails and the name
    assert drawn == ["├─ b", "│  ├─ c", "│  │  └─ d", "│  └─ e", "└─ f"]
    assert ov("tree", f"{R}/y/f.md").out == f"{R}/y/f.md\n"  # a file's tree is the file alone
    (entry,) = ov("tree", f"{R}/y/f.md", "-o", "json").json()["result"]
    assert (entry["uri"], entry["rel_path"], entry["isDir"]) == (f"{R}/y/f.md", "", False)


def test_piped_listings_keep_one_entry_per_line(
    cli: Cli, tmp_path: Path, hash_conf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)  # rich's 80 columns, as in `openviking ls | awk`
    name = "a-folder-whose-name-is-long-enough-to-push-every-uri-past-eighty-columns"
    tree = make_tree(tmp_path / "src", {f"{name}/{n}.md": f"# Page {n}\n\nText {n} " * 20 for n in "abc"})
    ov = with_store(cli, tmp_path / "store", hash_conf)
    assert ov("add-resource", tree, "--to", f"{R}/src").code == 0
    uris = ov("ls", f"{R}/src", "-r", "-s").out.split()
    assert len(uris) == 4 and min(map(len, uris)) > 80
    lines = ov("ls", f"{R}/src", "-r").out.splitlines()
    assert len(lines) == 1 + len(uris)
    for line, uri in zip(lines[1:], uris, strict=True):
        assert line.split()[4] == uri  # type, size, date, time, uri
        assert line == line.rstrip()
    tree_lines = ov("tree", f"{R}/src").out.splitlines()
    assert len(tree_lines) == 1 + len(uris)


def test_threshold_help_names_its_default(ov: Cli) -> None:
    for command in ("find", "search"):
        assert "(default: rerank.threshold, 0.1)" in ov(command, "--help").out


def test_empty_scopes_are_empty_folders_not_errors(cli: Cli, tmp_path: Path, hash_conf: Path) -> None:
    ov = with_store(cli, tmp_path / "store", hash_conf)
    assert ov("add-memory", "The user prefers tabs over spaces").code == 0
    assert ov("ls", "viking://", "-s").out.split() == ["viking://agent", "viking://resources", "viking://user"]
    for argv in (
        ("grep", R, "authentication"),
        ("grep", "viking://agent/skills", "x"),
        ("glob", "**/*.md", "--uri", R),
        ("ls", "viking://session"),
        ("tree", R),
    ):
        result = ov(*argv, "-o", "json")
        assert result.code == 0, (argv, result.err)
        payload = result.json()["result"]
        assert payload == [] or payload.get("count") == 0, (argv, payload)
    # the layout's folders are listed, stored or not
    assert ov("ls", "viking://agent", "-s").out.split() == ["viking://agent/skills"]
    assert ov("ls", "viking://user", "-s").out.split() == ["viking://user/default"]
    assert ov("ls", "viking://user/default", "-s").out.split() == [
        "viking://user/default/memories",
        "viking://user/default/sessions",
        "viking://user/default/skills",
    ]
    # ... recursively and in trees too, as deep as asked
    assert ov("ls", "viking://agent", "-r", "-s").out.split() == ["viking://agent/skills"]
    listed = ov("ls", "viking://user", "-r", "-s").out.split()
    assert [u for u in listed if "/memories/" not in u] == [
        "viking://user/default",
        "viking://user/default/memories",
        "viking://user/default/sessions",
        "viking://user/default/skills",
    ]
    assert len(listed) == 5  # the memory itself
    tree = ov("tree", "viking://", "-L", "2", "-o", "json").json()["result"]
    assert [e["rel_path"] for e in tree] == ["agent", "agent/skills", "resources", "user", "user/default"]
    assert all(e["isDir"] for e in tree)
    info = ov("stat", "viking://agent", "-o", "json").json()["result"]
    assert info["isDir"] is True and info["children"] == 1
    for folder in ("viking://agent", "viking://", "viking://user/default/skills"):  # a folder reads as its overview
        read = ov("read", folder)
        assert read.code == 0 and read.out == ov("overview", folder).out
        assert "[Directory overview is not ready]" in read.out
    assert ov("stat", "viking://user/default", "-o", "json").json()["result"]["children"] == 3
    assert ov("ls", "viking://user/someone-else", "-s").out.split() == []  # only what is stored
    nothing = ov("grep", R, "authentication")
    assert (nothing.code, nothing.out, nothing.err) == (0, "", "No matches.\n")  # a note, not data
    missing = cli_error(ov("ls", f"{R}/my-project", "-o", "json"), "NOT_FOUND", 1)  # below a scope: still missing
    assert missing["message"] == f"File not found: {R}/my-project"


def test_add_resource_prints_skips_and_warnings(cli: Cli, tmp_path: Path, hash_conf: Path) -> None:
    tree = make_tree(tmp_path / "enc", {"ok.md": "# Ok\n\nText.\n", "latin.md": "# Café\n\ncrème\n".encode("latin-1")})
    (tree / "gone.md").symlink_to(tmp_path / "missing.md")
    (tree / "what?.md").write_text("# What\n\nA question mark.\n")
    result = with_store(cli, tmp_path / "store", hash_conf)("add-resource", tree)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("Added 3 · updated 0 · unchanged 0 · removed 0 · skipped 1 -> viking://resources/enc")
    assert lines[1:] == ["  skipped gone.md: broken symlink"]  # what was left out is part of the report
    assert sorted(
        result.err.splitlines()
    ) == [  # a file added with a caveat is a warning, on stderr as every warning is
        "Warning: latin.md: not UTF-8: read as cp1252",
        "Warning: what?.md: stored as viking://resources/enc/what_.md: a URI segment cannot hold \\, ? or #, "
        "control characters, or start like a drive (C:)",
    ]


def test_sessions_are_listed_where_their_uris_point(cli: Cli, tmp_path: Path, hash_conf: Path) -> None:
    ov = with_store(cli, tmp_path / "store", hash_conf)
    assert ov("add-memory", "The user prefers tabs").code == 0
    assert ov("ls", "viking://session", "-o", "json").json()["result"] == []
    first = ov("session", "new", "-o", "json").json()["result"]
    assert ov("session", "add-message", first["session_id"], "--role", "user", "--content", "hello").code == 0
    second = ov("session", "new", "-o", "json").json()["result"]
    listed = ov("ls", "viking://user/default/sessions", "-o", "json").json()["result"]
    by_uri = {entry["uri"]: entry for entry in listed}
    assert set(by_uri) == {first["uri"], second["uri"]}
    assert by_uri[first["uri"]]["abstract"] == "session, 1 message"
    assert by_uri[second["uri"]]["isDir"] is True
    assert ov("ls", "viking://session", "-s").out.split() == ov("ls", "viking://~/sessions", "-s").out.split()
    info = ov("stat", first["uri"], "-o", "json").json()["result"]
    assert (info["name"], info["context_type"], info["message_count"]) == (first["session_id"], "session", 1)
    assert ov("stat", f"viking://session/{second['session_id']}", "-o", "json").json()["result"]["message_count"] == 0
    table = ov("stat", first["uri"]).out.splitlines()
    assert "message_count 1" in [" ".join(line.split()) for line in table]
    missing = cli_error(ov("stat", "viking://session/no-such-session", "-o", "json"), "NOT_FOUND", 1)
    assert missing["message"] == "Session not found: no-such-session"


def test_a_session_is_a_folder_for_every_read_command(cli: Cli, tmp_path: Path, hash_conf: Path) -> None:
    ov = with_store(cli, tmp_path / "store", hash_conf)
    sid = ov("session", "new", "-o", "json").json()["result"]["session_id"]
    assert ov("session", "add-message", sid, "--role", "user", "--content", "We design the OAuth flow.").code == 0
    uri = f"viking://user/default/sessions/{sid}"
    folder = "viking://user/default/sessions"
    # ls, ls -r, tree and glob show it where its URI points
    assert ov("ls", folder, "-s").out.split() == [uri]
    assert ov("ls", "viking://user", "-r", "-s").out.split() == [
        "viking://user/default",
        "viking://user/default/memories",
        folder,
        uri,
        "viking://user/default/skills",
    ]
    tree = ov("tree", "viking://user/default", "-o", "json").json()["result"]
    assert [(e["rel_path"], e["abstract"]) for e in tree][1:3] == [
        ("sessions", ""),
        (f"sessions/{sid}", "session, 1 message"),
    ]
    assert [e["uri"] for e in ov("tree", "viking://user", "-L", "2", "-o", "json").json()["result"]] == [
        "viking://user/default",
        "viking://user/default/memories",
        folder,
        "viking://user/default/skills",
    ]
    assert ov("glob", "**/sessions/*", "-o", "json").json()["result"]["matches"] == [uri]
    # inside it: no files; it reads as its messages
    assert ov("ls", uri, "-o", "json").json()["result"] == []
    assert ov("tree", uri, "-o", "json").json()["result"] == []
    assert ov("glob", "*", "--uri", uri, "-o", "json").json()["result"]["count"] == 0
    assert ov("grep", uri, "OAuth", "-o", "json").json()["result"]["count"] == 0
    assert ov("abstract", uri).out.strip() == "session, 1 message"
    text = ov("read", uri).out
    assert text == ov("overview", uri).out
    assert text.startswith(f"# Session {sid}\n") and "[user] " in text and "We design the OAuth flow." in text
    assert ov("read", uri, "--offset", "0", "--limit", "1").out == f"# Session {sid}\n"
    # find does not look in sessions, and says so
    found = ov("find", "OAuth flow", "--uri", uri, "-o", "json")
    assert found.code == 0 and found.json()["result"]["total"] == 0
    assert found.err.startswith(f"Warning: {uri} is a session: find and search look in resources, memories and skills")
    assert f"--session-id {sid}" in found.err
    for command in ("read", "abstract", "ls", "tree"):
        gone = cli_error(ov(command, f"{folder}/no-such-session", "-o", "json"), "NOT_FOUND", 1)
        assert gone["message"] == "Session not found: no-such-session"


def test_rm_of_the_sessions_folder_or_above_takes_the_sessions(cli: Cli, tmp_path: Path, hash_conf: Path) -> None:
    ov = with_store(cli, tmp_path / "store", hash_conf)
    assert ov("add-memory", "The user prefers tabs").code == 0
    for _ in range(2):
        assert ov("session", "new").code == 0
    folder = "viking://user/default/sessions"
    refused = cli_error(ov("rm", folder, "-o", "json"), "FAILED_PRECONDITION", 1)  # a folder: -r, as for any
    assert refused["message"] == f"Cannot remove directory without --recursive: {folder} (it holds 2 session(s))"
    assert len(ov("session", "list", "-o", "json").json()["result"]) == 2
    removed = ov("rm", "-r", folder, "-o", "json").json()["result"]
    assert (removed["removed"], removed["sessions"]) == (2, 2)
    assert ov("session", "list", "-o", "json").json()["result"] == []
    assert ov("session", "new").code == 0
    everything = ov("rm", "-r", "viking://user/default")
    assert everything.out == "Removed 4 nodes at viking://user/default\n"  # the memory, its folders, the session
    assert ov("session", "list", "-o", "json").json()["result"] == []
    assert ov("ls", "viking://user/default/sessions", "-o", "json").json()["result"] == []


def test_find_warns_about_a_target_that_does_not_exist(ov: Cli) -> None:
    missing = f"{R}/my-project"
    for argv in (("find", "API endpoints", "--uri", missing), ("search", "API endpoints", "--uri", missing)):
        result = ov(*argv, "-o", "json")
        assert result.code == 0 and result.json()["result"]["total"] == 0
        assert result.err.splitlines()[0] == (
            f"Warning: {missing} does not exist, so nothing was searched there (see openviking ls {R})"
        )
    both = ov("find", "docker deployment", "--uri", missing, "--uri", H, "-o", "json")
    assert both.code == 0 and both.json()["result"]["total"] > 0
    assert both.err.count("Warning: ") == 1
    for present in (H, R, "viking://agent/skills", "viking://user/default/memories"):
        assert ov("find", "docker deployment", "--uri", present).err.count("Warning") == 0, present
    # find's URI of a level-0/1 hit, passed back as a target, searches its directory
    for sidecar in (f"{H}/deploy/.overview.md", f"{H}/deploy/.abstract.md"):
        narrowed = ov("find", "docker deployment", "--uri", sidecar, "-o", "json")
        assert narrowed.code == 0 and narrowed.err == ""
        assert (
            narrowed.json()["result"]
            == ov("find", "docker deployment", "--uri", f"{H}/deploy", "-o", "json").json()["result"]
        )


def test_cards_are_ranked_by_score_across_the_groups() -> None:
    import io

    from rich.console import Console

    from openviking_cli.render import hit_cards

    def hit(kind: str, uri: str, score: float) -> dict[str, Any]:
        return {"context_type": kind, "uri": uri, "level": 2, "score": score, "abstract": "x"}

    result = {
        "memories": [hit("memory", "viking://user/default/memories/m.md", 0.56)],
        "resources": [hit("resource", "viking://resources/r.md", 1.0), hit("resource", "viking://resources/s.md", 0.3)],
        "skills": [hit("skill", "viking://agent/skills/k", 0.56)],
    }
    out = io.StringIO()
    hit_cards(Console(file=out, width=100, color_system=None), result, "4 results", "Ranked by relevance")
    cards = [line for line in out.getvalue().splitlines() if re.match(r"^\d+\. ", line)]
    assert cards == [
        "1. resource · Level 2 · score 1.000",
        "2. memory · Level 2 · score 0.560",  # a tie keeps the group order
        "3. skill · Level 2 · score 0.560",
        "4. resource · Level 2 · score 0.300",
    ]


def test_global_options_may_come_before_the_command(cli: Cli, shared: tuple[Path, Path]) -> None:
    store, conf = shared
    after = cli("find", "docker deployment", "--store", store, "--config", conf, "--json")
    before = cli("--store", store, f"--config={conf}", "--json", "find", "docker deployment")
    assert before.code == after.code == 0, before.err
    assert before.json()["result"] == after.json()["result"]
    listed = cli("-o", "jsonl", "--store", store, "--config", conf, "ls", H)
    assert listed.code == 0 and [json.loads(line)["uri"] for line in listed.out.splitlines()][0] == f"{H}/alerts"
    sessions = cli("--store", store, "--config", conf, "--json", "session", "list")
    assert sessions.code == 0 and sessions.json()["status"] == "ok"
    alone = cli("--store", store)  # no command to put them after: no command is the mistake, so the help
    assert (alone.code, alone.out) == (2, "") and "Usage: openviking [OPTIONS] COMMAND" in alone.err
    for argv in (["-h", "--json"], ["--json", "-h"], ["--store", store, "--help", "--json"]):
        shown = cli(*argv)  # --json after the help is no error ("No such option"): the help wins
        assert shown.code == 0 and "Usage: openviking [OPTIONS] COMMAND" in shown.out, (argv, shown.err)
    blamed = cli("--json", "--bogus")  # the option that is wrong is named, in the JSON asked for
    assert blamed.code == 2 and blamed.error()["message"] == "No such option: --bogus"
    group_help = cli("--store", store, "--json", "session", "--help")
    assert group_help.code == 0 and "session [OPTIONS] COMMAND" in group_help.out, group_help.err
    bad_group_option = cli("--store", store, "session", "--bogus")
    assert bad_group_option.code == 2 and "No such option: --bogus" in bad_group_option.err
    as_json = cli("-o", "json", "session", "--bogus")  # the JSON asked for before the group still comes
    assert as_json.code == 2 and as_json.error()["message"] == "No such option: --bogus"


def test_each_command_is_built_from_the_module_that_defines_it() -> None:
    """main() loads only the module of the command it runs: the table naming it must be whole."""
    import typer

    from openviking_cli.main import COMMAND_MODULES, GROUPS, MODULES, build_app

    every = typer.main.get_command(build_app())
    assert list(every.commands) == list(COMMAND_MODULES)  # type: ignore[attr-defined]
    assert GROUPS == {name for name, c in every.commands.items() if hasattr(c, "commands")}  # type: ignore[attr-defined]
    for name, module in COMMAND_MODULES.items():
        alone = typer.main.get_command(build_app([module]))
        assert name in alone.commands, (name, module)  # type: ignore[attr-defined]
    assert set(COMMAND_MODULES.values()) == set(MODULES)


def test_running_a_command_loads_no_other_command_module() -> None:
    code = "from openviking_cli.main import main\ntry:\n    main(['find', '--help'])\nexcept SystemExit:\n    pass"
    loaded = loaded_modules(code)
    assert "openviking_cli.commands.find" in loaded
    assert not [m for m in loaded if m.startswith("openviking_cli.commands.") and m != "openviking_cli.commands.find"]


def test_moving_global_options_touches_nothing_else() -> None:
    import typer

    from openviking_cli.main import CommandShape, build_app, global_options_after_the_command

    every = typer.main.get_command(build_app())
    groups = frozenset(name for name, c in every.commands.items() if hasattr(c, "commands"))  # type: ignore[attr-defined]
    shape = CommandShape.from_params(every.commands["find"].params, groups)  # type: ignore[attr-defined]
    assert (
        shape.groups == {"session", "snapshot", "key"}
        and {"--store", "--config", "--url", "--api-key", "-o", "--output"} == shape.value_options
    )
    assert CommandShape.without_commands() == shape  # what main() knows before it loads a command

    def move(args: list[str]) -> list[str]:
        return global_options_after_the_command(args, shape)

    assert move(["find", "q", "--store", "s"]) == ["find", "q", "--store", "s"]
    assert move(["--debug", "-ojson", "grep", "x", "--", "--store"]) == [
        "grep",
        "--debug",
        "-ojson",
        "x",
        "--",
        "--store",
    ]
    assert move(["--store", "s", "session", "new", "--session-id", "a"]) == [
        "session",
        "new",
        "--store",
        "s",
        "--session-id",
        "a",
    ]
    assert move(["--json", "key", "new", "alice"]) == ["key", "new", "--json", "alice"]
    assert move(["--version"]) == ["--version"]
    assert move(["--store", "s", "session", "--help"]) == ["session", "--help"]  # help reads no store
    assert move(["--json", "session"]) == ["session"]
    assert move(["--store", "s", "--help"]) == ["--help"]  # the app's own help and version read no store
    assert move(["-o", "json", "--version"]) == ["--version"]
    assert move(["session", "--json", "list", "-n", "3"]) == ["session", "list", "--json", "-n", "3"]
    assert move(["--store", "s", "session", "-o", "json", "show", "a"]) == [
        "session",
        "show",
        "--store",
        "s",
        "-o",
        "json",
        "a",
    ]
    assert move(["session", "--json"]) == ["session"]  # the group's help, on stderr (no command given)


def test_cards_wrap_chinese_by_terminal_columns() -> None:
    import io
    import textwrap

    from rich.cells import cell_len
    from rich.console import Console

    from openviking_cli.render import hit_cards, wrap_cells, wrap_indented

    english = "OpenViking can run as a standalone HTTP server, allowing multiple clients to connect over the network"
    for width in (20, 33, 60):  # plain words wrap as textwrap wraps them
        assert wrap_cells(english, width) == textwrap.wrap(english, width)
    chinese = (
        "导入本地 Agent 日志（openviking-server ingest）: 把你本地已有的 AI 编码 / agent harness 的对话日志"
        "（Claude Code、Codex、OpenCode）解析成标准消息，再通过 OpenViking 既有的会话管线重放进去，创建会话并提交。"
    )
    lines = wrap_cells(chinese, 40)
    assert all(cell_len(line) <= 40 for line in lines) and max(map(cell_len, lines)) >= 38  # full lines, not half
    assert "".join(lines).replace(" ", "") == chinese.replace(" ", "")  # nothing lost or repeated
    assert wrap_cells("a" * 25, 10) == ["a" * 10, "a" * 10, "a" * 5]
    assert wrap_cells("中文", 0) == ["中", "文"]  # ends even when no character fits
    assert wrap_indented("    x = compute(a, b)  # a comment long enough", 24) == [
        "    x = compute(a, b) #",
        "    a comment long",
        "    enough",
    ]

    out = io.StringIO()
    hit = {"context_type": "resource", "uri": "viking://resources/zh/guide.md", "level": 2, "score": 0.9}
    console = Console(file=out, width=60, force_terminal=True, color_system=None)
    hit_cards(console, {"resources": [{**hit, "abstract": chinese}]}, "1 result", "Ranked by relevance")
    printed = out.getvalue().splitlines()
    assert all(cell_len(line) <= 60 for line in printed), printed
    abstract = printed[-2:]
    assert abstract[0].startswith("   导入本地") and abstract[1].endswith("...")


def test_hints_quote_a_uri_that_the_shell_would_split(ov: Cli) -> None:
    missing = f"{R}/my notes/todo.md"
    read = ov("read", missing)
    assert read.code == 1 and read.err.splitlines()[1] == f"Hint: List what exists with: openviking ls '{R}/my notes'"
    found = ov("find", "todo", "--uri", missing)
    assert found.err.splitlines()[0].endswith(f"(see openviking ls '{R}/my notes')")
    assert ov("read", f"{H}/missing.md").err.splitlines()[1] == f"Hint: List what exists with: openviking ls {H}"


def test_help_paragraphs_wrap_at_the_terminal_not_at_the_docstring() -> None:
    import typer

    from openviking_cli.main import build_app

    def commands(group: Any) -> Iterator[Any]:
        for command in group.commands.values():
            yield from commands(command) if hasattr(command, "commands") else [command]

    helps = {command.name: command.help or "" for command in commands(typer.main.get_command(build_app()))}
    assert len(helps) > 20 and all(helps.values())
    for name, text in helps.items():
        for paragraph in text.split("\n\n"):
            assert "\n" not in paragraph, (name, paragraph)
    assert "up to 5 queries for skills, resources and memories" in helps["search"]


@pytest.mark.parametrize("fmt", [["-o", "jsonl"], ["-ojsonl"], ["--output=jsonl"]])
def test_a_usage_error_in_jsonl_mode_is_one_compact_line(cli: Cli, fmt: list[str]) -> None:
    result = cli("find", "x", "--bogus", *fmt)
    assert (result.code, result.out) == (2, "")
    payload = json.loads(result.err)
    assert payload["error"]["code"] == "INVALID_ARGUMENT" and payload["error"]["message"].startswith("No such option")
    assert result.err == json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n"


def test_control_sequences_in_content_never_reach_the_terminal_through_a_table(
    cli: Cli, hash_conf: Path, tmp_path: Path
) -> None:
    # a file's "\x1b[2J" (clear screen) must not come through ls's abstract column or the summaries
    tree = make_tree(tmp_path / "esc", {"esc.txt": "intro \x1b[2J\x1b[31mRED\x1b[0m text\n"})
    ov = with_store(cli, tmp_path / "store", hash_conf)
    assert ov("add-resource", tree).code == 0
    assert ov("abstract", "viking://resources/esc/esc.txt").out == "esc: intro RED text\n"  # the summary is clean
    assert ov("mkdir", "viking://resources/esc/made", "--description", "made \x1b[2J by hand").code == 0
    listing = ov("ls", "viking://resources/esc").out
    assert "\x1b" not in listing and "made by hand" in listing
    # what an older store or an LLM may hold is shown inert in a table, not sent to the terminal
    from openviking.system.ostext import printable

    assert printable("a \x1b[2J b\rc\x7f") == "a \\x1b[2J b\\x0dc\\x7f"
    assert ov("read", "viking://resources/esc/esc.txt").out == "intro \\x1b[2J\\x1b[31mRED\\x1b[0m text\n"
    exact = ov("read", "viking://resources/esc/esc.txt", "-o", "json").json()["result"]
    assert exact == "intro \x1b[2J\x1b[31mRED\x1b[0m text\n"
