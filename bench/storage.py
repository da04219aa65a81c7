"""``python -m bench storage``: the store on object storage (a local moto server) against local disk.

* find p50 on the docs store (English pages, the local model), in a bucket and on disk, the
  same questions alternating in one run;
* requests to the bucket per find, grep, ls and read, cold (a new client's first call) and warm
  (the same client again within ``storage.read_consistency_seconds``), counted by a proxy;
* write throughput of 1, 2, 4 and 8 concurrent writers (processes, hash embedder, small files):
  on object storage with the lease, on disk with ``flock``, and on disk with the lease (kept in
  a bucket) to compare the two locks on the same store.
"""

from __future__ import annotations

import json
import os
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
from openviking.embedded import OpenViking
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
    from openviking.embedded import OpenViking

    client = OpenViking(path=path, config=config_from_dict(_config(url, endpoint, **storage)))
    if embedder is not None:
        client._embedder = embedder
    return client


def find_latency(work: Path, server: MotoServer) -> dict[str, Any]:
    local = work / "store-docs-storage"
    from openviking.config import Config
    from openviking.embedded import OpenViking

    if not (local / "nodes.lance").is_dir():
        with OpenViking(path=local, config=Config()) as client:
            client.add_resource(quality.DOCS / "en", to="viking://resources/docs")
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


def run(work: Path, *, writer_counts: tuple[int, ...] = (1, 2, 4, 8), files: int = 100) -> dict[str, Any]:
    server = MotoServer()
    try:
        latency = find_latency(work, server)
        embedder = latency.pop("client").embedder()
        requests = request_counts(latency["url"], server, embedder)
        throughput = writers(work, server, writer_counts, files)
    finally:
        server.stop()
    return {"find": latency, "requests": requests, "writers": throughput}


def print_report(report: dict[str, Any]) -> None:
    print_table(report["find"]["rows"], ["store", "questions", "p50_ms", "p95_ms"], title="find, docs store (warm)")
    print_table(
        report["requests"], ["op", "state", "GET", "LIST", "HEAD", "KB read"], title="requests to the bucket per call"
    )
    print_table(
        report["writers"],
        ["store", "writers", "files", "seconds", "files/s", "slowest writer s"],
        title="concurrent writers (hash embedder, small files)",
    )
