"""``python -m bench storage``: the store on object storage (a local moto server) against local disk.

* find p50 on the docs store (English pages, the local model), in a bucket and on disk, the
  same questions alternating in one run;
* requests to the bucket per find, grep, ls and read, cold (a new client's first call) and warm
  (the same client again within ``storage.read_consistency_seconds``), counted by a proxy;
* write throughput of 1, 2, 4 and 8 concurrent writers (processes, hash embedder, small files):
  on object storage with the lease, on disk with ``flock``, and on disk with the lease (kept in
  a bucket) to compare the two locks on the same store;
* reads pinned to a snapshot (``as_of=``) against the same reads of the store as it is now, on
  disk and in the bucket, after writes made since the snapshot (``--only pinned``: this part alone).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import quality
from .report import print_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from s3server import CountingProxy, MotoServer, storage_options  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HASH = {"embedding": {"dense": {"provider": "hash"}}}

WRITER = """
import json, sys, time
from openviking.embedded.client import OpenViking
from openviking.config import config_from_dict

spec = json.loads(sys.argv[1])
client = OpenViking(path=spec.get("path"), config=config_from_dict(spec["config"]))
store = client._open(create=True)
if spec.get("lease"):
    from openviking.store.locking import Lease
    from openviking.store.objectstore import Location

    store.lock = Lease(Location(spec["lease"], spec["options"]), 15)
client.embedder()
print("ready", flush=True)
sys.stdin.readline()
started = time.time()
result = client.add_resource(spec["source"], to=spec["to"])
print(json.dumps({"start": started, "end": time.time(), "added": result.added}), flush=True)
"""


def _options(endpoint: str) -> dict[str, str]:
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in storage_options(endpoint).items()}


def _config(url: str | None, endpoint: str, **storage: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {}
    if url:
        raw["storage"] = {"workspace": url, "options": _options(endpoint), **storage}
    return raw


def _upload(local: Path, url: str, endpoint: str) -> int:
    """Copy a store directory into the bucket, file by file (LanceDB's paths are relative)."""
    import obstore

    from openviking.store.objectstore import Location

    client = Location(url, _options(endpoint)).object_store()
    count = 0
    for path in sorted(local.rglob("*")):
        if path.is_file() and not path.name.startswith(".openviking"):
            obstore.put(client, str(path.relative_to(local)), path.read_bytes())
            count += 1
    return count


def _client(url: str | None, endpoint: str, path: Path | None = None, embedder: Any = None, **storage: Any) -> Any:
    from openviking.config import config_from_dict
    from openviking.embedded.client import OpenViking

    client = OpenViking(path=path, config=config_from_dict(_config(url, endpoint, **storage)))
    if embedder is not None:
        client._embedder = embedder
    return client


def _docs_store(work: Path) -> Path:
    """The English docs added with the local model on disk (once per ``--work``)."""
    local = work / "store-docs-storage"
    from openviking.config import Config
    from openviking.embedded.client import OpenViking

    if not (local / "nodes.lance").is_dir():
        with OpenViking(path=local, config=Config()) as client:
            client.add_resource(quality.DOCS / "en", to="viking://resources/docs")
    return local


def _p50_p95(ms: list[float]) -> tuple[float, float]:
    return round(statistics.median(ms), 1), round(sorted(ms)[int(len(ms) * 0.95) - 1], 1)


def find_latency(work: Path, server: MotoServer) -> dict[str, Any]:
    local = _docs_store(work)
    url = f"s3://{server.bucket()}/docs"
    files = _upload(local, url, server.endpoint)
    on_disk = _client(None, server.endpoint, path=local)
    on_s3 = _client(url, server.endpoint, embedder=on_disk.embedder())
    questions = _docs_questions()
    times: dict[str, list[float]] = {"local disk": [], "object storage": []}
    for round_ in range(2):  # the first round warms both
        for question in questions:
            for name, client in (("local disk", on_disk), ("object storage", on_s3)):
                started = time.perf_counter()
                client.find(question, target_uri="viking://resources/docs", limit=10)
                if round_:
                    times[name].append((time.perf_counter() - started) * 1000)
    rows = [
        {
            "store": name,
            "questions": len(ms),
            "p50_ms": round(statistics.median(ms), 1),
            "p95_ms": round(sorted(ms)[int(len(ms) * 0.95) - 1], 1),
        }
        for name, ms in times.items()
    ]
    return {"rows": rows, "files_uploaded": files, "url": url, "local": str(local), "client": on_disk}


def _docs_questions() -> list[str]:
    return [text for _, text, _ in quality.docs_queries("docs-en")]


def request_counts(url: str, server: MotoServer, embedder: Any) -> list[dict[str, Any]]:
    proxy = CountingProxy(server.endpoint)
    questions = _docs_questions()[:10]
    page = "viking://resources/docs/guides/04-authentication.md"
    ops = {
        "find": lambda c, i: c.find(questions[i % len(questions)], target_uri="viking://resources/docs", limit=10),
        "grep": lambda c, i: c.grep("viking://resources/docs", ["API key", "token", "docker"][i % 3]),
        "ls": lambda c, i: c.ls("viking://resources/docs"),
        "read": lambda c, i: c.read(page),
    }
    rows = []
    try:
        for name, op in ops.items():
            cold, warm, cold_bytes, warm_bytes = [], [], [], []
            for i in range(5):
                client = _client(url, proxy.endpoint, embedder=embedder, read_consistency_seconds=60)
                with proxy.counting() as counts:
                    op(client, i)
                cold.append(counts)
                cold_bytes.append(proxy.bytes_read())
                op(client, i + 1)
                with proxy.counting() as counts:
                    op(client, i + 2)
                warm.append(counts)
                warm_bytes.append(proxy.bytes_read())
                client.close()
            for kind, samples, sizes in (("cold", cold, cold_bytes), ("warm", warm, warm_bytes)):
                rows.append(
                    {
                        "op": name,
                        "state": kind,
                        "GET": statistics.median(c["GET"] for c in samples),
                        "LIST": statistics.median(c["LIST"] for c in samples),
                        "HEAD": statistics.median(c["HEAD"] for c in samples),
                        "KB read": round(statistics.median(sizes) / 1024, 1),
                    }
                )
        # Past the interval: one look per open table.
        client = _client(url, proxy.endpoint, embedder=embedder, read_consistency_seconds=1)
        client.find(questions[0], target_uri="viking://resources/docs")
        time.sleep(1.1)
        with proxy.counting() as counts:
            client.find(questions[1], target_uri="viking://resources/docs")
        rows.append({"op": "find", "state": "warm, interval over", "GET": counts["GET"], "LIST": counts["LIST"]})
        client.close()
    finally:
        proxy.stop()
    return rows


def _tree(root: Path, writer: int, files: int) -> Path:
    for i in range(files):
        path = root / f"part{i // 25}" / f"note{i:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Writer {writer} note {i}\n\nmarker{writer}x{i} from writer {writer}.\n", encoding="utf-8")
    return root


STORES = ("object storage (lease)", "local disk (flock)", "local disk (lease)")


def writers(
    work: Path, server: MotoServer, counts: tuple[int, ...], files: int, stores: tuple[str, ...] = STORES
) -> list[dict[str, Any]]:
    rows = []
    for where in stores:
        for n in counts:
            bucket = server.bucket()
            spec_base: dict[str, Any] = {"config": HASH}
            if where.startswith("object"):
                spec_base["config"] = {**HASH, **_config(f"s3://{bucket}/store", server.endpoint)}
            else:
                spec_base["path"] = str(work / f"writers-{where.split()[2][1:-1]}-{n}")
                if "lease" in where:
                    spec_base.update(lease=f"s3://{bucket}/lease", options=_options(server.endpoint))
            procs = []
            for w in range(n):
                source = _tree(work / f"sources-{n}-{w}", w, files)
                spec = {**spec_base, "source": str(source), "to": f"viking://resources/w{w}"}
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-c", WRITER, json.dumps(spec)],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        text=True,
                        cwd=str(REPO),
                        env={**os.environ, "OPENVIKING_HOME": str(work / f"home-{w}")},
                    )
                )
            for proc in procs:
                assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.write("go\n")
                proc.stdin.flush()
            reports = []
            for proc in procs:
                out, _ = proc.communicate(timeout=900)
                assert proc.returncode == 0, out
                reports.append(json.loads(out.strip().splitlines()[-1]))
            wall = max(r["end"] for r in reports) - min(r["start"] for r in reports)
            added = sum(r["added"] for r in reports)
            rows.append(
                {
                    "store": where,
                    "writers": n,
                    "files": added,
                    "seconds": round(wall, 2),
                    "files/s": round(added / wall, 1),
                    "slowest writer s": round(max(r["end"] - r["start"] for r in reports), 2),
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


SNAPSHOT = "bench-pinned"
PAGE = "viking://resources/docs/guides/04-authentication.md"


def _pinned_ops(questions: list[str]) -> dict[str, Any]:
    """Each read, as ``op(client, i, as_of)``."""
    root = "viking://resources/docs"
    return {
        "find": lambda c, i, a: c.find(questions[i % len(questions)], target_uri=root, limit=10, as_of=a),
        "ls -r": lambda c, i, a: c.ls(root, recursive=True, simple=True, as_of=a),
        "read": lambda c, i, a: c.read(PAGE, as_of=a),
        "grep": lambda c, i, a: c.grep(root, "token", as_of=a),
    }


def _extra_folder(work: Path) -> Path:
    root = work / "pinned-extra"
    for i in range(5):
        path = root / f"note{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"# Release note {i}\n\nThe access token of build {i} is rotated every {i + 2} days.\n", encoding="utf-8"
        )
    return root


def pinned_reads(work: Path, server: MotoServer, embedder: Any = None, reps: int = 30) -> dict[str, Any]:
    """find, ls -r, read and grep of the docs store as it is now and as of a snapshot tagged
    before a folder was added: the two alternate call by call, on disk and in the bucket."""
    local = _docs_store(work)
    if embedder is None:
        embedder = _client(None, server.endpoint, path=local).embedder()
    disk = work / "store-docs-pinned"
    shutil.rmtree(disk, ignore_errors=True)
    shutil.copytree(local, disk)
    url = f"s3://{server.bucket()}/pinned"
    _upload(local, url, server.endpoint)
    extra = _extra_folder(work)
    ops = _pinned_ops(_docs_questions()[:5])
    rows, cold_rows, states, costs = [], [], [], []
    for place, where in (("local disk", None), ("object storage", url)):

        def open_(where: str | None = where) -> Any:
            return _client(where, server.endpoint, path=None if where else disk, embedder=embedder)

        client = open_()
        client.snapshot_tag(SNAPSHOT)
        client.add_resource(extra, to="viking://resources/docs/release-notes")
        states.append(
            {
                "store": place,
                "ls -r now": len(ops["ls -r"](client, 0, None)),
                "ls -r pinned": len(ops["ls -r"](client, 0, SNAPSHOT)),
            }
        )
        # Cold: a new client warmed on the store as it is now, then its first pinned call.
        for name, op in ops.items():
            fresh_client = open_()
            for i in range(2):
                op(fresh_client, i, None)
            started = time.perf_counter()
            op(fresh_client, 0, SNAPSHOT)
            cold_rows.append(
                {"store": place, "op": name, "first pinned ms": round((time.perf_counter() - started) * 1000, 1)}
            )
            fresh_client.close()
        for name, op in ops.items():
            times: dict[str, list[float]] = {"fresh": [], "pinned": []}
            for i in range(reps + 3):  # the first 3 rounds warm both
                for kind, as_of in (("fresh", None), ("pinned", SNAPSHOT)):
                    started = time.perf_counter()
                    op(client, i, as_of)
                    if i >= 3:
                        times[kind].append((time.perf_counter() - started) * 1000)
            fresh, pinned = _p50_p95(times["fresh"]), _p50_p95(times["pinned"])
            rows.append(
                {
                    "store": place,
                    "op": name,
                    "calls": reps,
                    "fresh p50": fresh[0],
                    "fresh p95": fresh[1],
                    "pinned p50": pinned[0],
                    "pinned p95": pinned[1],
                    "pinned/fresh": round(pinned[0] / fresh[0], 2),
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr)
        costs.append({"store": place, **_pin_cost(client, reps)})
        client.close()
    return {
        "pin_cost": costs,
        "rows": rows,
        "cold": cold_rows,
        "states": states,
        "snapshot": SNAPSHOT,
    }


def _pin_cost(client: Any, reps: int) -> dict[str, float]:
    """What each pinned call adds before it reads: resolving the snapshot (the meta table of
    the store as it is now); ``at()`` when the store keeps the pinned state open (every call
    but a client's first); and ``at()`` opening each table checked out at its version."""
    from openviking.store.snapshots import resolve

    store = client._open()
    times: dict[str, list[float]] = {"resolve": [], "at, kept": [], "at, opened": []}
    for _ in range(reps):
        started = time.perf_counter()
        resolve(store, SNAPSHOT)
        times["resolve"].append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        store.at(SNAPSHOT)
        times["at, kept"].append((time.perf_counter() - started) * 1000)
        store._pinned_stores.clear()  # what a client's first pinned call finds
        started = time.perf_counter()
        pinned = store.at(SNAPSHOT)  # resolves, then opens meta and nodes
        pinned._has_table(pinned.records_table)
        times["at, opened"].append((time.perf_counter() - started) * 1000)
    return {f"{name} p50": round(statistics.median(ms), 1) for name, ms in times.items()}


def run(
    work: Path, *, writer_counts: tuple[int, ...] = (1, 2, 4, 8), files: int = 100, only: str | None = None
) -> dict[str, Any]:
    server = MotoServer()
    try:
        if only == "pinned":
            return {"pinned": pinned_reads(work, server)}
        latency = find_latency(work, server)
        embedder = latency.pop("client").embedder()
        requests = request_counts(latency["url"], server, embedder)
        pinned = pinned_reads(work, server, embedder)
        throughput = writers(work, server, writer_counts, files)
    finally:
        server.stop()
    return {"find": latency, "requests": requests, "pinned": pinned, "writers": throughput}


def print_report(report: dict[str, Any]) -> None:
    if "find" in report:
        print_table(report["find"]["rows"], ["store", "questions", "p50_ms", "p95_ms"], title="find, docs store (warm)")
        print_table(
            report["requests"],
            ["op", "state", "GET", "LIST", "HEAD", "KB read"],
            title="requests to the bucket per call",
        )
    if "pinned" in report:
        pinned = report["pinned"]
        print_table(
            pinned["rows"],
            ["store", "op", "calls", "fresh p50", "fresh p95", "pinned p50", "pinned p95", "pinned/fresh"],
            title=f"reads now and as_of={pinned['snapshot']!r} (ms, alternating, warm)",
        )
        print_table(pinned["cold"], ["store", "op", "first pinned ms"], title="a new client's first pinned call")
        print_table(pinned["states"], ["store", "ls -r now", "ls -r pinned"], title="entries now and pinned")
        print_table(
            pinned["pin_cost"],
            ["store", "resolve p50", "at, kept p50", "at, opened p50"],
            title="each pinned call's own work (ms): resolve; at() on a kept state; at() opening its tables",
        )
    if "writers" in report:
        print_table(
            report["writers"],
            ["store", "writers", "files", "seconds", "files/s", "slowest writer s"],
            title="concurrent writers (hash embedder, small files)",
        )
