"""Watched sources: from a save to ``find`` returning the new text, p50 and p95.

* one file: upstream's English docs (``../shared/data/openviking-docs/en``, copied to the work
  directory at run time) watched by ``openviking watch`` in its own process; a page saved as an
  editor saves it (a temporary file renamed over it) with a word of its own, then ``find`` of that
  word polled every 20 ms from this process until the page is among its hits;
* a checkout: a git repository of 1,000 notes on two branches that differ in every note; ``git
  checkout`` of the other branch, then ``find`` of sampled notes' new words polled until each is
  found, the time until all 1,000 are (every note of the branch found by its word), and until
  none of them waits for its vector (the next checkout waits for that: each starts embedded).

Each case also counts the saves found while records of the watched tree still waited for their
vectors (``find``'s ``pending_vectors``): found by their words before the embedding was done.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .metrics import percentile
from .quality import DOCS
from .report import print_table

ROOT = "viking://resources/watched"
NOTES = 1000
POLL = 0.02


def _client(store: Path, embedder: str) -> Any:
    import openviking as ov

    return ov.OpenViking(path=str(store), config={"embedding": {"dense": {"provider": embedder}}})


def _conf(work: Path, embedder: str) -> Path:
    conf = work / f"ov-{embedder}.conf"
    conf.write_text(json.dumps({"embedding": {"dense": {"provider": embedder}}}), encoding="utf-8")
    return conf


def _watcher(store: Path, conf: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "openviking_cli", "watch", "--store", str(store), "--config", str(conf), "-o", "jsonl"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _until_found(client: Any, word: str, uri: str, deadline: float = 900.0) -> tuple[float, bool]:
    """Seconds until ``find(word)`` has ``uri`` among its hits (polled every POLL), and whether
    records of the watched tree still waited for their vectors then."""
    started = time.perf_counter()
    while True:
        result = client.find(word, target_uri=ROOT, limit=10, score_threshold=-1)
        if any(hit.uri == uri for hit in result.resources):
            return time.perf_counter() - started, result.pending_vectors > 0
        if time.perf_counter() - started > deadline:
            raise TimeoutError(f"{word} not found at {uri} within {deadline} s")
        time.sleep(POLL)


def _ready(client: Any) -> None:
    """Wait until the watcher holds its claim and caught up (its first sync recorded)."""
    first = client.list_watches().tasks[0].last_execution_time
    deadline = time.monotonic() + 900
    while True:
        task = client.list_watches().tasks[0]
        if task.watcher and task.last_execution_time != first:
            return
        assert time.monotonic() < deadline, "the watcher did not start"
        time.sleep(0.1)


def _all_updated(client: Any, seen: str | None, since: float) -> float:
    """Seconds from ``since`` until the syncs recorded after ``seen`` updated every note."""
    updated = 0
    while updated < NOTES:
        task = client.list_watches().tasks[0]
        if task.last_execution_time != seen and task.last_result:
            seen = task.last_execution_time
            updated += int(task.last_result["updated"])
        time.sleep(POLL)
    return time.perf_counter() - since


def _vectors_in(client: Any, since: float, deadline: float = 3600.0) -> float:
    """Seconds from ``since`` until no record of the watched tree waits for its vector."""
    while client.find("note", target_uri=ROOT, limit=1, mode="keyword").pending_vectors:
        if time.perf_counter() - since > deadline:
            raise TimeoutError(f"vectors still waiting after {deadline} s")
        time.sleep(0.5)
    return time.perf_counter() - since


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=600)


def one_file(work: Path, embedder: str, saves: int) -> dict[str, Any]:
    tree = work / f"docs-{embedder}"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(DOCS / "en", tree)
    store = work / f"store-one-{embedder}"
    shutil.rmtree(store, ignore_errors=True)
    client = _client(store, embedder)
    started = time.perf_counter()
    client.watch(tree, to=ROOT)
    added = time.perf_counter() - started
    pages = sorted(p for p in tree.rglob("*.md"))
    rng = random.Random(35)
    proc = _watcher(store, _conf(work, embedder))
    try:
        _ready(client)
        times = []
        early = 0
        for i in range(saves):
            page = rng.choice(pages)
            word = f"wordzq{i}x{rng.randrange(10**6)}"
            text = page.read_text(encoding="utf-8") + f"\n\nThe {word} paragraph, saved now.\n"
            temporary = page.with_name(f".{page.name}.tmp")
            temporary.write_text(text, encoding="utf-8")
            saved = time.perf_counter()
            os.replace(temporary, page)
            early += _until_found(client, word, f"{ROOT}/{page.relative_to(tree).as_posix()}")[1]
            times.append(time.perf_counter() - saved)
            time.sleep(0.5)
    finally:
        _stop(proc)
        client.close()
    return {
        "case": f"one file saved ({len(pages)} pages, {embedder})", "n": len(times), "first_add_s": round(added, 1),
        "p50_s": round(percentile(times, 50), 2), "p95_s": round(percentile(times, 95), 2),
        "max_s": round(max(times), 2), "all_in_s": None, "before_vectors": early,
    }  # fmt: skip


def _git(tree: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(tree), "-c", "user.name=b", "-c", "user.email=b@example.com", *args], check=True)


def checkout(work: Path, embedder: str, rounds: int) -> dict[str, Any]:
    tree = work / f"repo-{embedder}"
    shutil.rmtree(tree, ignore_errors=True)
    paragraph = (DOCS / "en").rglob("*.md").__next__().read_text(encoding="utf-8")[:600]
    for i in range(NOTES):
        path = tree / f"part{i % 20}" / f"note{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {i}\n\nbranchmain{i} {paragraph}\n", encoding="utf-8")
    _git(tree, "init", "-q", "-b", "main")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-qm", "main")
    _git(tree, "checkout", "-qb", "other")
    for i in range(NOTES):
        (tree / f"part{i % 20}" / f"note{i}.md").write_text(f"# Note {i}\n\nbranchother{i} {paragraph}\n", "utf-8")
    _git(tree, "commit", "-qam", "other")
    _git(tree, "checkout", "-q", "main")
    store = work / f"store-checkout-{embedder}"
    shutil.rmtree(store, ignore_errors=True)
    client = _client(store, embedder)
    started = time.perf_counter()
    client.watch(tree, to=ROOT)
    added = time.perf_counter() - started
    proc = _watcher(store, _conf(work, embedder))
    rng = random.Random(35)
    samples: list[float] = []
    all_in: list[float] = []
    vectors_in: list[float] = []
    early = 0
    try:
        _ready(client)
        branch = "main"
        for _ in range(rounds):
            branch = "other" if branch == "main" else "main"
            picked = rng.sample(range(NOTES), 10)
            switched = time.perf_counter()
            _git(tree, "checkout", "-q", branch)
            seen = client.list_watches().tasks[0].last_execution_time
            for i in picked:
                uri = f"{ROOT}/part{i % 20}/note{i}.md"
                early += _until_found(client, f"branch{branch}{i}", uri)[1]
                samples.append(time.perf_counter() - switched)
            all_in.append(_all_updated(client, seen, switched))
            vectors_in.append(_vectors_in(client, switched))
            time.sleep(1.0)
    finally:
        _stop(proc)
        client.close()
    return {
        "case": f"git checkout of {NOTES} changed files ({embedder})", "n": len(samples),
        "first_add_s": round(added, 1), "p50_s": round(percentile(samples, 50), 2),
        "p95_s": round(percentile(samples, 95), 2), "max_s": round(max(samples), 2),
        "all_in_s": round(percentile(all_in, 50), 2), "vectors_in_s": round(percentile(vectors_in, 50), 1),
        "before_vectors": early,
    }  # fmt: skip


def run(work: Path, embedders: list[str], only: str | None = None, saves: int = 20, rounds: int = 3) -> dict[str, Any]:
    rows = []
    for embedder in embedders:
        if only in (None, "one"):
            rows.append(one_file(work, embedder, saves))
        if only in (None, "checkout"):
            rows.append(checkout(work, embedder, rounds))
    return {"rows": rows}


def print_report(report: dict[str, Any]) -> None:
    columns = ["case", "n", "first_add_s", "p50_s", "p95_s", "max_s", "all_in_s", "vectors_in_s", "before_vectors"]
    print_table(report["rows"], columns, "Watch: from a save to find returning the new text (seconds)")
