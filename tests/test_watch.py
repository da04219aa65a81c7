"""Watched sources: real files changed on tmp_path while a watcher runs, and find polled (with a
deadline) until it answers from the new text; a git checkout of a thousand files; the polling
way; a watch that survives a new process; a watcher killed with kill -9 in the middle of a burst,
and while it makes a burst's vectors behind its syncs, then started again, leaving what a clean
add of the final tree leaves."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from helpers import HASH_CONF, REPO, cli_unharmed, make_tree, unharmed, with_store, write_config, write_hash_config
from ovserver import process_server, server_env
from servers import FAKE_KEY, PacedEmbeddings, StubServer

import openviking as ov
from openviking.contract.results import WatchReport
from openviking.errors import AlreadyExistsError, InvalidArgumentError, InvalidURIError, NotFoundError
from openviking.store.tables import FAULT_AFTER_COMMITS

ROOT = "viking://resources/notes"
T = TypeVar("T")


def until(check: Callable[[], T], seconds: float = 90.0, what: str = "") -> T:
    """``check()``'s first true value, asked every 0.1 s; fails after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.1)


def found(client: ov.OpenViking, text: str, root: str = ROOT) -> list[str]:
    """The files whose text holds ``text`` (keyword find, so only what is written counts)."""
    hits = client.find(text, target_uri=root, mode="keyword", limit=50, score_threshold=-1).resources
    return [hit.uri for hit in hits if hit.level == 2]


def client_at(store: Path, config: dict[str, Any] = HASH_CONF) -> ov.OpenViking:
    return ov.OpenViking(path=store, config=dict(config))


@contextmanager
def watching(
    store: Path, uris: tuple[str, ...] = (), config: dict[str, Any] = HASH_CONF
) -> Iterator[list[WatchReport]]:
    """A watcher over ``store`` in a thread of this process, caught up before the test goes on."""
    client = client_at(store, config)
    reports: list[WatchReport] = []
    stop = threading.Event()
    thread = threading.Thread(
        target=client.keep_watching, args=(uris,), kwargs={"stop": stop, "report": reports.append}, daemon=True
    )
    thread.start()
    try:
        until(lambda: any(r.kind == "synced" for r in reports), what="the watcher's first sync")
        yield reports
    finally:
        stop.set()
        thread.join(timeout=120)
        client.close()
    assert not thread.is_alive()


def notes(tmp_path: Path) -> Path:
    return make_tree(
        tmp_path / "notes",
        {
            "alpha.md": "# Alpha\n\nThe heron waits by the river.\n",
            "beta.md": "# Beta\n\nA lantern glows in the workshop.\n",
            "deep/gamma.md": "# Gamma\n\nThe orchard keeps its quinces.\n",
            "deep/delta.md": "# Delta\n\nMarmalade simmers on the stove.\n",
        },
    )


def atomic_save(path: Path, text: str) -> None:
    """What editors do: write a temporary file beside it, then rename it over the file."""
    temporary = path.with_name(f".{path.name}.swp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def view(store: Path) -> dict[str, Any]:
    """What a store holds below ROOT that an add decides (not when it ran), checked for
    duplicates: the nodes and the records (text, level, vector)."""
    from openviking.store.lance import LanceStore
    from openviking.store.schema import NODE_COLUMNS
    from openviking.values.uri import parse

    with LanceStore.open(str(store)) as lance:
        nodes = lance.nodes_below(parse(ROOT), columns=NODE_COLUMNS)
        records = lance.records_below(parse(ROOT))
    uris = [n["uri"] for n in nodes]
    ids = [r["id"] for r in records]
    assert len(uris) == len(set(uris)), "a URI stored twice"
    assert len(ids) == len(set(ids)), "a record id stored twice"
    times = {"created_at", "updated_at"}
    for record in records:  # a record whose vector a killed sync left to come has none yet
        if record["vector"] is not None:
            record["vector"] = [round(float(x), 5) for x in record["vector"]]
    return {
        "nodes": sorted(json.dumps({k: v for k, v in n.items() if k not in times}, sort_keys=True) for n in nodes),
        "records": sorted(json.dumps({k: v for k, v in r.items() if k not in times}, sort_keys=True) for r in records),
    }


def _waiting(store: Path) -> int:
    """How many records of ``store`` wait for their vectors."""
    from openviking.store.lance import LanceStore
    from openviking.store.pending import count_pending

    with LanceStore.open(str(store)) as lance:
        return count_pending(lance)


def until_same(store: Path, clean: dict[str, Any], seconds: float = 300.0) -> None:
    """Wait until ``store`` holds below ROOT what ``clean`` (a clean add's view) does."""
    deadline = time.monotonic() + seconds
    while (got := view(store)) != clean:
        assert time.monotonic() < deadline, (len(got["nodes"]), len(clean["nodes"]))
        time.sleep(1.0)


def clean_add(tree: Path, store: Path, config: dict[str, Any] = HASH_CONF) -> dict[str, Any]:
    """The view of a store made by one add of ``tree`` as it is now."""
    with client_at(store, config) as client:
        client.add_resource(tree, to=ROOT)
    return view(store)


# ----------------------------------------------------------------------------- the SDK, in one process
def test_a_saved_file_is_found_by_its_new_text_and_a_deleted_one_is_gone(tmp_path: Path) -> None:
    tree, store = notes(tmp_path), tmp_path / "store"
    with client_at(store) as client:
        info = client.watch(tree, to=ROOT)
        assert (info.to_uri, info.path, info.is_active, info.watch_interval) == (ROOT, str(tree), True, None)
        assert info.last_result is not None and info.last_result["added"] == 4
        with watching(store) as reports:
            atomic_save(tree / "alpha.md", "# Alpha\n\nThe kingfisher dives for minnows.\n")
            assert until(lambda: found(client, "kingfisher")) == [f"{ROOT}/alpha.md"]
            assert found(client, "heron") == []
            (tree / "deep" / "delta.md").unlink()
            until(lambda: not found(client, "marmalade"), what="the deleted file gone")
            assert [e.uri for e in client.ls(f"{ROOT}/deep")] == [f"{ROOT}/deep/gamma.md"]
            (tree / "new.md").write_text("# New\n\nA zeppelin drifts over the hills.\n", encoding="utf-8")
            assert until(lambda: found(client, "zeppelin")) == [f"{ROOT}/new.md"]
            # The temporary file of the save was never taken for a file of the folder.
            assert not [e for e in client.ls(ROOT, recursive=True) if ".swp" in e.uri]
            assert not [r for r in reports if r.kind == "error"], reports
            clean = clean_add(tree, tmp_path / "clean")
            until_same(store, clean)  # the vectors too, which follow the syncs
        watched = client.list_watches().tasks
        assert [w.to_uri for w in watched] == [ROOT]
        assert watched[0].last_error is None and watched[0].watcher is None  # nobody watches now
    assert view(store) == clean


def test_a_watched_file_follows_its_atomic_saves(tmp_path: Path) -> None:
    tree, store = notes(tmp_path), tmp_path / "store"
    solo = f"{ROOT}-alpha.md"
    with client_at(store) as client:
        client.watch(tree / "alpha.md", to=solo)
        with watching(store):
            atomic_save(tree / "alpha.md", "# Alpha\n\nA pangolin curls up.\n")  # a new inode at the path
            assert until(lambda: found(client, "pangolin", solo)) == [solo]
            atomic_save(tree / "alpha.md", "# Alpha\n\nAn ocelot stalks.\n")
            assert until(lambda: found(client, "ocelot", solo)) == [solo]
            (tree / "beta.md").write_text("# Beta\n\nA pangolin beside it.\n", encoding="utf-8")
            time.sleep(2)
        assert [e.uri for e in client.ls("viking://resources")] == [solo]  # the files beside it stay out


def test_a_rename_is_a_move_and_a_renamed_folder_one_move(tmp_path: Path) -> None:
    tree, store = notes(tmp_path), tmp_path / "store"
    with client_at(store) as client:
        client.watch(tree, to=ROOT)
        with watching(store) as reports:
            (tree / "beta.md").rename(tree / "lantern.md")
            until(lambda: found(client, "lantern") == [f"{ROOT}/lantern.md"], what="the file moved")
            until(lambda: [r for r in reports if r.result and r.result["moved"]], what="the move")
            (tree / "deep").rename(tree / "orchard")
            until(lambda: found(client, "quinces") == [f"{ROOT}/orchard/gamma.md"], what="the folder moved")
            until(lambda: f"{ROOT}/deep" not in [e.uri for e in client.ls(ROOT)], what="the old folder gone")
            clean = clean_add(tree, tmp_path / "clean")
            until_same(store, clean)
        synced = [r.result for r in reports if r.result and (r.result["moved"] or r.result["added"])]
        # Each rename was one move, and nothing was added (embedded) again.
        assert [(s["moved"], s["added"], s["removed"]) for s in synced] == [(1, 0, 0), (1, 0, 0)], synced
    assert view(store) == clean


def test_a_checkout_that_changes_a_thousand_files_converges_like_a_clean_add(tmp_path: Path) -> None:
    tree, store = tmp_path / "repo", tmp_path / "store"
    files = {f"part{i % 10}/note{i}.md": f"# Note {i}\n\nThe pristine draft of note {i}.\n" for i in range(1000)}
    make_tree(tree, files)
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    subprocess.run([*git, "checkout", "-qb", "second"], check=True)
    second = {rel: f"# Note {i}\n\nThe second draft of note {i}, with rewrites.\n" for i, rel in enumerate(files)}
    make_tree(tree, second)
    (tree / "part3" / "note3.md").unlink()
    make_tree(tree, {"part10/extra.md": "# Extra\n\nOnly on the second branch.\n"})
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "second"], check=True)
    subprocess.run([*git, "checkout", "-q", "main"], check=True)
    with client_at(store) as client:
        client.watch(tree, to=ROOT)
        with watching(store):
            started = time.monotonic()
            subprocess.run([*git, "checkout", "-q", "second"], check=True)
            until(lambda: found(client, "rewrites"), what="the second branch's text")
            until(lambda: not found(client, "pristine"), seconds=300, what="no file of the first branch left")
            assert found(client, "extra") == [f"{ROOT}/part10/extra.md"]
            until_same(store, clean_add(tree, tmp_path / "clean"))
            assert time.monotonic() - started < 300


def test_files_deleted_while_they_are_indexed_leave_no_trace(tmp_path: Path) -> None:
    tree, store = notes(tmp_path), tmp_path / "store"
    with client_at(store) as client:
        client.watch(tree, to=ROOT)
        with watching(store) as reports:
            make_tree(tree, {f"wave/page{i}.md": f"# Page {i}\n\nA wave of pages, page {i}.\n" for i in range(400)})
            until(lambda: any("/wave/" in e.uri for e in client.ls(ROOT, recursive=True)), what="the wave indexed")
            for i in range(0, 400, 2):  # half of them go while the sync reads them
                (tree / "wave" / f"page{i}.md").unlink()
            clean = clean_add(tree, tmp_path / "clean")
            until_same(store, clean)
            assert not [r for r in reports if r.kind == "error"], reports


def test_polling_finds_changes_where_events_are_not_used(tmp_path: Path) -> None:
    tree, store = notes(tmp_path), tmp_path / "store"
    with client_at(store) as client:
        info = client.watch(tree, to=ROOT, watch_interval=0.01)  # every 0.6 s, no OS events at all
        assert info.watch_interval == 0.01
        with watching(store) as reports:
            assert "checked every 0.6 s" in reports[0].message
            atomic_save(tree / "beta.md", "# Beta\n\nA gramophone plays in the workshop.\n")
            assert until(lambda: found(client, "gramophone")) == [f"{ROOT}/beta.md"]
            (tree / "alpha.md").unlink()
            until(lambda: not found(client, "heron"), what="the deleted file gone")
            clean = clean_add(tree, tmp_path / "clean")
            until_same(store, clean)
    assert view(store) == clean


def test_pause_resume_trigger_and_stop(tmp_path: Path) -> None:
    tree, store = notes(tmp_path), tmp_path / "store"
    with client_at(store) as client:
        client.watch(tree, to=ROOT)
        with watching(store):
            paused = client.update_watch(ROOT, is_active=False)
            assert paused.is_active is False
            assert client.list_watches(active_only=True).total == 0
            time.sleep(2)  # the watcher reads its state again within a second
            atomic_save(tree / "alpha.md", "# Alpha\n\nA walrus naps on the ice.\n")
            time.sleep(3)
            assert found(client, "walrus") == []  # paused: the change waits
            assert client.update_watch(ROOT, is_active=True).is_active is True
            assert until(lambda: found(client, "walrus")) == [f"{ROOT}/alpha.md"]  # caught up at resume
        atomic_save(tree / "beta.md", "# Beta\n\nA yak grazes on the slope.\n")
        triggered = client.trigger_watch(ROOT)  # nobody watches: a sync now, in full
        assert triggered.last_result is not None and triggered.last_result["updated"] == 1
        assert found(client, "yak") == [f"{ROOT}/beta.md"]
        deleted = client.delete_watch(ROOT)
        assert (deleted.to_uri, deleted.deleted) == (ROOT, True)
        assert client.list_watches().total == 0
        assert found(client, "yak") == [f"{ROOT}/beta.md"]  # what it added stays


def test_a_watcher_stops_when_its_watch_is_deleted_elsewhere(tmp_path: Path) -> None:
    tree, store = notes(tmp_path), tmp_path / "store"
    with client_at(store) as client:
        client.watch(tree, to=ROOT)
        stop = threading.Event()
        reports: list[WatchReport] = []
        thread = threading.Thread(target=client_at(store).keep_watching, args=((ROOT,),),
                                  kwargs={"stop": stop, "report": reports.append})  # fmt: skip
        thread.start()
        until(lambda: any(r.kind == "synced" for r in reports))
        client_at(store).delete_watch(ROOT)
        thread.join(timeout=60)
        assert not thread.is_alive() and reports[-1].kind == "stopped"


def test_only_one_process_watches_a_source(tmp_path: Path) -> None:
    tree, store = notes(tmp_path), tmp_path / "store"
    with client_at(store) as client:
        client.watch(tree, to=ROOT)
        with watching(store):
            holder = client.list_watches().tasks[0].watcher
            assert holder == f"pid {os.getpid()} on {os.uname().nodename}"
            second: list[WatchReport] = []
            stop = threading.Event()
            other = threading.Thread(target=client_at(store).keep_watching,
                                     kwargs={"stop": stop, "report": second.append})  # fmt: skip
            # flock is per open file: another claim of this process is refused as another process's is
            other.start()
            until(lambda: any(r.kind == "waiting" for r in second), what="the second watcher waiting")
            assert not [r for r in second if r.kind == "synced"]
            stop.set()
            other.join(timeout=60)


def test_bad_input_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    tree, store = notes(tmp_path), tmp_path / "store"
    with client_at(store) as client:
        client.watch(tree, to=ROOT)
        error = unharmed(client, lambda: client.watch("https://example.com/page", to=f"{ROOT}2"))
        assert isinstance(error, InvalidArgumentError) and "Only a local folder or file can be watched" in error.message
        error = unharmed(client, lambda: client.watch(tree, to=ROOT, watch_interval=-1))
        assert isinstance(error, InvalidArgumentError) and "watch_interval must be a number of minutes" in error.message
        other = make_tree(tmp_path / "other", {"x.md": "# X\n\nx\n"})
        error = unharmed(client, lambda: client.watch(other, to=ROOT))
        assert isinstance(error, AlreadyExistsError) and error.message == f"{ROOT} is watched from {tree}"
        error = unharmed(client, lambda: client.delete_watch("viking://resources/nothing"))
        assert isinstance(error, NotFoundError) and error.message == "Watch not found: viking://resources/nothing"
        error = unharmed(client, lambda: client.update_watch(ROOT, is_active="yes"))  # type: ignore[arg-type]
        assert isinstance(error, InvalidArgumentError)
        for placed in ({"to": 0}, {"parent": 0}):  # a falsy non-string is refused too, not taken as none
            error = unharmed(client, lambda placed=placed: client.watch(other, **placed))
            name = next(iter(placed))
            assert isinstance(error, InvalidURIError) and error.message == f"Invalid URI: 0 ({name} must be a string)"


def test_a_missing_source_removes_nothing(tmp_path: Path) -> None:
    tree, store = notes(tmp_path), tmp_path / "store"
    with client_at(store) as client:
        client.watch(tree, to=ROOT)
        tree.rename(tmp_path / "unmounted")
        with pytest.raises(NotFoundError, match="is not there: nothing was removed"):
            client.trigger_watch(ROOT)
        assert found(client, "heron") == [f"{ROOT}/alpha.md"]
        assert "NOT_FOUND" in (client.list_watches().tasks[0].last_error or "")


# ----------------------------------------------------------------------------- the command line
def test_the_command_line_watches_lists_and_stops(cli: Any, tmp_path: Path) -> None:
    tree, store = notes(tmp_path), tmp_path / "store"
    conf = write_hash_config(tmp_path / "ov.conf")
    run = with_store(cli, store, conf)
    recorded = run("watch", tree, "--to", ROOT, "--no-follow", "-o", "json").json()["result"]
    assert recorded["to_uri"] == ROOT and recorded["last_result"]["added"] == 4
    listed = run("watch", "--list")
    assert listed.code == 0 and ROOT in listed.out and "events" in listed.out
    assert run("watch", "--list", "-o", "jsonl").out.count("\n") == 1
    assert run("watch", "--pause", ROOT).out == f"Paused the watch of {ROOT}\n"
    assert run("watch", "--list", "--active-only", "-o", "json").json()["result"]["total"] == 0
    assert run("watch", "--resume", ROOT).code == 0
    atomic_save(tree / "alpha.md", "# Alpha\n\nAn osprey circles.\n")
    assert "updated 1" in run("watch", "--trigger", ROOT).out
    cli_unharmed(run, store, ("watch", "--stop", "viking://resources/nothing"), "NOT_FOUND", 1, "Watch not found")
    cli_unharmed(run, store, ("watch", "--list", "--stop", ROOT), "INVALID_ARGUMENT", 2, "Use one of PATH, --list")
    cli_unharmed(run, store, ("add-resource", "https://example.com/x", "--watch"), "INVALID_ARGUMENT", 2,
                 "Only a local folder or file can be watched")  # fmt: skip
    assert run("watch", "--stop", ROOT).out == f"Stopped watching {ROOT} (what it added stays)\n"
    assert run("watch", "--list", "-o", "json").json()["result"] == {"tasks": [], "total": 0}


def _start_watcher(store: Path, conf: Path, home: Path, *args: str, fault: int | None = None) -> subprocess.Popen[str]:
    env = {**server_env(home), FAULT_AFTER_COMMITS: str(fault) if fault else ""}
    return subprocess.Popen(
        [sys.executable, "-m", "openviking_cli", "watch", *args, "--store", str(store), "--config", str(conf),
         "-o", "jsonl"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(REPO), env=env,
    )  # fmt: skip


@contextmanager
def _running(proc: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    """``proc``, killed at the end if it still runs (a failed test leaves no watcher behind)."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=60)


def _stop(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def test_a_watch_survives_a_restart_and_catches_up(tmp_path: Path) -> None:
    tree, store = notes(tmp_path), tmp_path / "store"
    conf = write_hash_config(tmp_path / "ov.conf")
    with client_at(store) as client:
        client.watch(tree, to=ROOT)
    first = _start_watcher(store, conf, tmp_path / "home")
    with client_at(store) as client:
        until(lambda: client.list_watches().tasks[0].watcher, what="the first process watching")
        atomic_save(tree / "alpha.md", "# Alpha\n\nA puffin lands.\n")
        until(lambda: found(client, "puffin"))
    code, out, err = _stop(first)
    assert code == 0 and "Stopped watching." in err, err
    events = [json.loads(line) for line in out.splitlines()]
    assert {e["event"] for e in events} >= {"watching", "synced"} and all(e["uri"] == ROOT for e in events)
    # Changes while nobody watches: found by the next process, which reads the watch from the store.
    atomic_save(tree / "beta.md", "# Beta\n\nA narwhal surfaces.\n")
    (tree / "deep" / "gamma.md").unlink()
    second = _start_watcher(store, conf, tmp_path / "home")
    with client_at(store) as client:
        assert until(lambda: found(client, "narwhal")) == [f"{ROOT}/beta.md"]
        until(lambda: not found(client, "quinces"))
        clean = clean_add(tree, tmp_path / "clean")
        until_same(store, clean)
    assert _stop(second)[0] == 0
    assert view(store) == clean


def _burst(tree: Path, round_: int) -> None:
    """A burst like a checkout: 300 files rewritten, 50 new, 50 deleted, 10 renamed."""
    for i in range(300):
        (tree / f"burst/file{i}.md").write_text(f"# File {i}\n\nepoch{round_} text of file {i}\n", encoding="utf-8")
    for i in range(50):
        (tree / f"burst/new{round_}_{i}.md").write_text(f"# New {i}\n\nadded in epoch{round_}\n", encoding="utf-8")
    for path in sorted((tree / "burst").glob(f"new{round_ - 1}_*.md"))[:50]:
        path.unlink()
    for i in range(10):
        old = tree / f"burst/file{i + 300 + 10 * round_}.md"
        if old.exists():
            old.rename(tree / f"burst/renamed{round_}_{i}.md")


def test_a_watcher_killed_mid_burst_converges_with_nothing_lost_or_doubled(tmp_path: Path) -> None:
    tree, store = tmp_path / "tree", tmp_path / "store"
    make_tree(tree, {f"burst/file{i}.md": f"# File {i}\n\nepoch0 text of file {i}\n" for i in range(400)})
    conf = write_hash_config(tmp_path / "ov.conf")
    with client_at(store) as client:
        client.watch(tree, to=ROOT)
    home = tmp_path / "home"
    # A real kill -9 once the burst is being written, then the fault point at several commits
    # (os._exit right after the k-th durable write of the process, as kill -9 there would).
    for round_, fault in ((1, None), (2, 3), (3, 6), (4, 10)):
        with client_at(store) as client, _running(_start_watcher(store, conf, home, fault=fault)) as watcher:
            # its catch-up recorded (or, killed by the fault point during the catch-up, gone)
            before = client.list_watches().tasks[0].last_execution_time
            until(
                lambda b=before: client.list_watches().tasks[0].last_execution_time != b or watcher.poll() is not None,
                what="the catch-up",
            )
            _burst(tree, round_)
            if fault is None:
                new = f"new{round_}_"
                until(lambda n=new: [e for e in client.ls(f"{ROOT}/burst") if n in e.uri], what="the burst")
                watcher.send_signal(signal.SIGKILL)
            code = watcher.wait(timeout=300)
            assert code == (-signal.SIGKILL if fault is None else 86), watcher.stderr.read() if watcher.stderr else ""
        view(store)  # opens, and holds no URI or record id twice
    clean = clean_add(tree, tmp_path / "clean")
    with _running(_start_watcher(store, conf, home)) as last:
        until_same(store, clean)
        assert _stop(last)[0] == 0


def test_a_watchers_vectors_follow_its_syncs_and_a_kill_while_they_are_made_converges(tmp_path: Path) -> None:
    # An embedding server that answers two texts each half second once the burst is written: the
    # burst's vectors take about a minute to come, while its text, and a save made meanwhile,
    # are found by their words.
    stub = PacedEmbeddings(latency=0.0)
    tree, store, home = tmp_path / "tree", tmp_path / "store", tmp_path / "home"
    files = {f"burst/file{i}.md": f"# File {i}\n\nepoch0 text of file {i}\n" for i in range(120)}
    make_tree(tree, {**files, "alpha.md": "# Alpha\n\nThe heron waits by the river.\n"})
    with StubServer(stub) as server:
        dense = {
            "provider": "openai", "api_base": f"{server.url}/v1", "model": "stub", "api_key": FAKE_KEY,
            "dimension": 64, "batch_size": 2, "max_concurrent": 1, "max_retries": 0,
        }  # fmt: skip
        paced = {"embedding": {"dense": dense}}
        conf = write_config(tmp_path / "paced.conf", paced)
        with client_at(store, paced) as client:
            client.watch(tree, to=ROOT)
            with _running(_start_watcher(store, conf, home)) as watcher:
                until(lambda: client.list_watches().tasks[0].watcher, what="the watcher's claim")
                stub.latency = 0.5
                for i in range(120):
                    (tree / f"burst/file{i}.md").write_text(f"# File {i}\n\nepoch1 text of file {i}\n", "utf-8")
                until(lambda: found(client, "epoch1"), what="the burst's text")
                assert _waiting(store) > 60  # found by its words while its vectors are made
                atomic_save(tree / "alpha.md", "# Alpha\n\nA puffin lands.\n")
                assert until(lambda: found(client, "puffin"), what="the save") == [f"{ROOT}/alpha.md"]
                # The save's sync did not wait for the burst's vectors: most of them still wait.
                assert _waiting(store) > 30
                watcher.send_signal(signal.SIGKILL)
                assert watcher.wait(timeout=60) == -signal.SIGKILL
        view(store)  # opens, and holds no URI or record id twice
        stub.latency = 0.0
        clean = clean_add(tree, tmp_path / "clean", paced)
        with _running(_start_watcher(store, conf, home)) as last:
            until_same(store, clean)  # the vectors the kill left waiting made by the next watcher
            assert _waiting(store) == 0
            assert _stop(last)[0] == 0


def test_a_watchers_vectors_are_tried_again_when_the_embedder_fails(tmp_path: Path) -> None:
    stub = PacedEmbeddings(latency=0.0)
    tree, store = notes(tmp_path), tmp_path / "store"
    with StubServer(stub) as server:
        dense = {
            "provider": "openai", "api_base": f"{server.url}/v1", "model": "stub", "api_key": FAKE_KEY,
            "dimension": 64, "max_retries": 0,
        }  # fmt: skip
        paced = {"embedding": {"dense": dense}}
        with client_at(store, paced) as client:
            client.watch(tree, to=ROOT)
            stub.failures = [(500, {}), (503, {})]  # the next two embedding requests
            with watching(store, config=paced):
                atomic_save(tree / "alpha.md", "# Alpha\n\nA kestrel hovers.\n")
                assert until(lambda: found(client, "kestrel")) == [f"{ROOT}/alpha.md"]  # its words, at once
                until(lambda: _waiting(store) == 0, what="the vectors, once the embedder answers")
        assert not stub.failures and [s for _, s in stub.arrivals][-3:] == [500, 503, 200]


# ----------------------------------------------------------------------------- the server
def test_serve_watch_keeps_a_source_in_step_and_upstreams_routes_answer(tmp_path: Path) -> None:
    import httpx

    tree, store = notes(tmp_path), tmp_path / "store"
    with process_server(HASH_CONF, store, tmp_path, args=("--watch",)) as server:
        sdk = ov.SyncHTTPClient(url=server.url)
        info = sdk.watch(tree, to=ROOT)
        assert info.to_uri == ROOT and info.last_result is not None and info.last_result["added"] == 4
        until(lambda: sdk.list_watches().tasks[0].watcher, what="the server watching")
        atomic_save(tree / "alpha.md", "# Alpha\n\nA pelican glides.\n")
        until(lambda: [h.uri for h in sdk.find("pelican", target_uri=ROOT, mode="keyword").resources])
        # The sync leaves its vectors to the server's indexer, which it wakes (else: its next round, in 30 s).
        until(lambda: _waiting(store) == 0, seconds=20, what="the save's vectors")
        task_id = info.task_id
        with httpx.Client(base_url=server.url, timeout=60) as http:
            listed = http.get("/api/v1/watches", params={"active_only": True}).json()["result"]
            assert listed["total"] == 1 and listed["tasks"][0]["task_id"] == task_id
            one = http.get(f"/api/v1/watches/{task_id}").json()["result"]
            assert one["to_uri"] == ROOT
            paused = http.patch("/api/v1/watches", params={"to_uri": ROOT}, json={"is_active": False, "reason": "x"})
            assert paused.json()["result"]["is_active"] is False
            said = "reason has no effect here: what a watched resource is for is not kept"
            assert paused.json()["warnings"] == [said]
            resumed = http.patch(f"/api/v1/watches/{task_id}", json={"is_active": True}).json()["result"]
            assert resumed["is_active"] is True
            triggered = http.post(f"/api/v1/watches/{task_id}/trigger").json()["result"]
            assert triggered["last_result"]["unchanged"] == 4
            missing = http.get("/api/v1/watches/nope")
            assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"
            gone = http.delete("/api/v1/watches", params={"to_uri": ROOT}).json()["result"]
            assert gone == {"task_id": task_id, "to_uri": ROOT, "deleted": True}
            # upstream's way: an add with watch_interval > 0 watches its path
            added = http.post("/api/v1/resources", json={"path": str(tree), "to": ROOT, "watch_interval": 5})
            assert added.status_code == 200, added.text
            assert sdk.list_watches(to_uri=ROOT).tasks[0].watch_interval == 5
        sdk.close()
