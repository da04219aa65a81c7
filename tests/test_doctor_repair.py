"""`openviking doctor` names what a kill or a damaged file leaves, and `doctor --repair` mends it.

The damage is made for real: writes killed at a commit (the fault point), rows deleted behind
the store's back, files of the LanceDB directory deleted, cut short or overwritten.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import HASH64_CONF, cli_error, make_tree, run_module, write_config

from openviking.store.tables import FAULT_AFTER_COMMITS, FAULT_EXIT_STATUS

R = "viking://resources/src"
SOURCE = {
    "a.md": "# Alpha\n\nAlpha is the first page.\n",
    "d1/b.md": "# Beta\n\nBeta lives in the first folder.\n",
    "d2/c.md": "# Gamma\n\nGamma lives in the second folder.\n",
}


@pytest.fixture
def ov(cli: Any, tmp_path: Path, hash_conf: Path) -> Any:
    store = tmp_path / "store"

    def run(*argv: Any, conf: Path = hash_conf) -> Any:
        return cli(*argv, "--store", str(store), "--config", str(conf))

    run.store = store  # type: ignore[attr-defined]
    run.conf = hash_conf  # type: ignore[attr-defined]
    run.src = make_tree(tmp_path / "src", SOURCE)  # type: ignore[attr-defined]
    return run


def killed(ov: Any, k: int, *argv: Any, conf: Path | None = None) -> None:
    """``openviking ARGV`` in a process that ends right after its k-th commit."""
    args = [*argv, "--store", str(ov.store), "--config", str(conf or ov.conf)]
    done = run_module(args, env={FAULT_AFTER_COMMITS: str(k)})
    assert done.returncode == FAULT_EXIT_STATUS, done.stderr


def problems(ov: Any) -> list[str]:
    out = ov("doctor")
    assert out.code == 1, out.out
    return [line[len("problem: ") :] for line in out.out.splitlines() if line.startswith("problem: ")]


def repaired(ov: Any) -> list[str]:
    out = ov("doctor", "--repair")
    assert out.code == 0, out.out  # exit 0 once repaired
    again = ov("doctor")
    assert again.code == 0 and "problem:" not in again.out, again.out
    return [line[len("repaired: ") :] for line in out.out.splitlines() if line.startswith("repaired: ")]


def test_a_killed_rm_leaves_a_stale_summary_and_orphan_records_that_repair_mends(ov: Any) -> None:
    assert ov("add-resource", ov.src).code == 0
    killed(ov, 1, "rm", "-r", f"{R}/d1")  # the first commit deletes the nodes
    assert "d1" in ov("abstract", R).out
    found = problems(ov)
    assert found[0].startswith(
        f"2 URI(s) have records but no node ({R}/d1, {R}/d1/b.md): finds leave them out; "
        "openviking doctor --repair deletes them"
    )
    assert found[1] == (
        f"2 directory summaries are out of date (viking://resources, {R}): a write was stopped before it "
        "refreshed them; openviking doctor --repair refreshes them"
    )
    assert repaired(ov) == ["deleted the records of 2 URI(s) without a node", "refreshed 2 directory summaries"]
    assert "d1" not in ov("abstract", R).out


def test_the_same_rm_run_again_refreshes_the_parent(ov: Any) -> None:
    assert ov("add-resource", ov.src).code == 0
    killed(ov, 2, "rm", "-r", f"{R}/d1")  # nodes and records gone, the parent not refreshed
    again = ov("rm", "-r", f"{R}/d1")
    assert again.code == 0 and again.out.strip() == f"Nothing at {R}/d1"
    assert "d1" not in ov("abstract", R).out
    assert ov("doctor").code == 0


def test_nodes_without_records_are_embedded_again(ov: Any) -> None:
    from openviking.store.lance import LanceStore

    assert ov("add-resource", ov.src).code == 0
    with LanceStore.open(str(ov.store)) as store:
        store.delete_records_by_uri([f"{R}/a.md"])
    assert ov("find", "alpha", "-o", "json").json()["result"]["resources"][0]["uri"] != f"{R}/a.md"
    assert problems(ov) == [
        f"1 node(s) have no records ({R}/a.md): find cannot reach them; openviking doctor --repair embeds them again"
    ]
    assert repaired(ov) == ["embedded 1 file(s) and 0 director(ies) again"]
    assert ov("find", "alpha", "-o", "json").json()["result"]["resources"][0]["uri"] == f"{R}/a.md"


def test_an_aborted_model_change_is_dropped_by_reindex_and_by_repair(ov: Any, tmp_path: Path) -> None:
    other = write_config(tmp_path / "other.conf", HASH64_CONF)
    assert ov("add-resource", ov.src).code == 0
    killed(ov, 3, "reindex", conf=other)  # the new table made and named, nothing embedded into it
    assert problems(ov) == [
        "a reindex to hash:v1-64 was interrupted; configure hash:v1-64 and run openviking reindex to finish it, "
        "or run openviking doctor --repair to drop it and keep the store's embedder"
    ]
    done = ov("reindex")  # the store's own embedder again: the switch is dropped, and doctor is content
    assert done.code == 0, done.err
    assert ov("doctor").code == 0
    killed(ov, 3, "reindex", conf=other)
    assert repaired(ov) == ["dropped the interrupted reindex to hash:v1-64"]
    assert not (ov.store / ".openviking.reindex").exists()
    assert not (ov.store / "records_2.lance").exists()


def test_an_unfinished_move_is_finished_by_repair(ov: Any) -> None:
    assert ov("add-resource", ov.src).code == 0
    killed(ov, 3, "mv", f"{R}/d1", "viking://resources/moved")
    found = problems(ov)
    assert found == [
        f"a move from {R}/d1 to viking://resources/moved was interrupted: until it is finished, both places may "
        f"show; run the same mv again to finish it: openviking mv {R}/d1 viking://resources/moved"
    ]
    assert repaired(ov)[0] == f"finished the move from {R}/d1 to viking://resources/moved (2 nodes)"
    assert ov("read", "viking://resources/moved/b.md").code == 0
    assert cli_error(ov("stat", f"{R}/d1", "-o", "json"), "NOT_FOUND", 1)
    again = ov("mv", f"{R}/d1", "viking://resources/moved")  # a finished mv again: as a finished rm again
    assert again.code == 0 and again.out.strip() == (
        f"Nothing to move: {R}/d1 is gone and viking://resources/moved exists (moved already)"
    )
    wrong = ov("mv", f"{R}/nothing", "viking://resources/moved", "-o", "json")
    assert cli_error(wrong, "NOT_FOUND", 1)["message"] == f"File not found: {R}/nothing"


def test_a_store_killed_after_its_first_table_reads_and_is_repaired(ov: Any) -> None:
    killed(ov, 1, "add-resource", ov.src)  # the nodes table made, the meta table not yet
    listed = ov("ls", "viking://resources")
    assert listed.code == 0, listed.err
    assert problems(ov) == [
        "the store has no meta table (a write was stopped as the store was made); openviking doctor --repair makes it"
    ]
    assert repaired(ov) == ["made the meta table"]
    assert ov("add-resource", ov.src).code == 0


def _versions(store: Path, table: str) -> list[Path]:
    return sorted((store / f"{table}.lance" / "_versions").glob("*.manifest"))  # newest first (Lance's naming)


def test_a_damaged_manifest_is_set_aside(ov: Any) -> None:
    assert ov("add-resource", ov.src).code == 0
    newest = _versions(ov.store, "nodes")[0]
    newest.write_bytes(b"not a manifest" * 20)
    error = cli_error(ov("find", "alpha", "-o", "json"), "FAILED_PRECONDITION", 1)
    assert "doctor --repair" in error["hint"]  # the store's state, not INTERNAL ("This is a bug")
    found = problems(ov)
    assert found[0].startswith("the store cannot be read (table nodes: ")
    done = repaired(ov)
    assert done[0].startswith("table nodes: its damaged newest manifest was set aside; version ")
    assert f"set aside: {newest.name}" in done[0]
    assert ov("find", "alpha", "-o", "json").code == 0
    assert (ov.store / "nodes.lance" / "_damaged" / newest.name).exists()  # kept, not deleted


def test_a_damaged_data_file_goes_back_to_the_last_readable_version(ov: Any) -> None:
    assert ov("add-resource", ov.src).code == 0
    (ov.src / "d2" / "new.md").write_text("# New\n\nA new page.\n")
    assert ov("add-resource", ov.src).code == 0
    data = max((ov.store / "nodes.lance" / "data").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    with data.open("r+b") as handle:
        handle.truncate(64)
    assert problems(ov)[0].startswith("the store cannot be read (table nodes: ")
    done = repaired(ov)
    assert done[0].startswith("table nodes: restored to version ")
    assert "rows lost" in done[0]
    listed = ov("ls", R, "-o", "json")
    assert listed.code == 0


def test_a_model_change_whose_server_is_down_is_dropped_by_the_next_reindex(ov: Any, tmp_path: Path) -> None:
    dense = {"provider": "openai", "api_base": "http://127.0.0.1:9/v1", "model": "m", "dimension": 8, "max_retries": 0}
    down = write_config(tmp_path / "down.conf", {"embedding": {"dense": dense}})
    assert ov("add-resource", ov.src).code == 0
    failed = ov("reindex", conf=down)
    assert failed.code == 1, failed.out
    assert problems(ov)[0].startswith("a reindex to openai:")  # the old config again: doctor names it
    done = ov("reindex")
    assert done.code == 0, done.err
    again = ov("doctor")
    assert again.code == 0 and "problem:" not in again.out, again.out  # the marker went with it
    assert not (ov.store / ".openviking.reindex").exists()
