"""The server against the embedded client, on one warm store of the English docs (local model).

* find latency: the same docs-en questions through ``SyncHTTPClient`` to ``openviking serve``
  and through an in-process ``OpenViking``, alternating, p50/p99 and what HTTP adds;
* whole processes: ``openviking --url URL find`` against the embedded ``openviking find``,
  alternating, medians and their ratio;
* load: N concurrent clients (threads, one ``SyncHTTPClient`` each) for S seconds, readers
  mixing find/grep/glob/read and writers adding memories and files; requests per second,
  p50/p99 per kind, errors, and every acknowledged write checked afterwards (lost writes).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from .metrics import percentile
from .procs import compile_bytecode
from .quality import DOCS, docs_queries

DOCS_URI = "viking://resources/docs"
READ_URIS = ("guides/04-authentication.md", "concepts/11-multi-tenant.md", "getting-started/03-quickstart-server.md")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cli() -> list[str]:
    exe = shutil.which("openviking")
    return [exe] if exe else [sys.executable, "-m", "openviking_cli"]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENVIKING_")}
    return {**env, "HOME": str(home), "OPENVIKING_HOME": str(home / ".openviking"), "NO_COLOR": "1"}


def _start_server(store: Path, conf: Path, env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    import httpx

    port = _free_port()
    argv = [*_cli(), "serve", "--port", str(port), "--store", str(store), "--config", str(conf)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited {proc.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(url + "/ready", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.terminate()
    raise RuntimeError("the server did not get ready in 300 s")


def _ms(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(values, 50) * 1000, 2),
        "p99_ms": round(percentile(values, 99) * 1000, 2),
        "n": len(values),
    }


def find_latency(store: Path, conf: Path, url: str, rounds: int) -> dict[str, Any]:
    """The docs-en questions, each through both clients in turn, ``rounds`` times (after one warm-up round)."""
    import openviking as ov

    questions = [text for _, text, _ in docs_queries("docs-en")]
    local = ov.OpenViking(path=store, config_file=conf, warn=lambda message: None)
    remote = ov.SyncHTTPClient(url, warn=lambda message: None)
    remote.initialize()
    times: dict[str, list[float]] = {"in_process": [], "http": []}
    same = 0
    for round_ in range(rounds + 1):
        for question in questions:
            pair = []
            for name, client in (("in_process", local), ("http", remote)):
                started = time.perf_counter()
                result = client.find(question, target_uri=DOCS_URI, limit=10)
                elapsed = time.perf_counter() - started
                pair.append([hit.uri for hit in result])
                if round_:  # the first round warms caches on both sides
                    times[name].append(elapsed)
            same += pair[0] == pair[1]
    local.close()
    remote.close()
    report = {name: _ms(values) for name, values in times.items()}
    report["http_adds_p50_ms"] = round(report["http"]["p50_ms"] - report["in_process"]["p50_ms"], 2)
    report["http_adds_p99_ms"] = round(report["http"]["p99_ms"] - report["in_process"]["p99_ms"], 2)
    report["same_hits"] = f"{same}/{len(questions) * (rounds + 1)}"
    return report


def processes(store: Path, conf: Path, url: str, env: dict[str, str], runs: int) -> dict[str, Any]:
    """``openviking find`` as a whole process, over the server and embedded, alternating, after
    the bytecode is written and one untimed round of each."""
    query = "how do I authenticate users"
    remote = [*_cli(), "--url", url, "find", query, "--uri", DOCS_URI, "-o", "json"]
    local = [*_cli(), "find", query, "--uri", DOCS_URI, "--store", str(store), "--config", str(conf), "-o", "json"]
    times: dict[str, list[float]] = {"remote": [], "embedded": []}
    answers: dict[str, Any] = {}
    compile_bytecode()
    for round_ in range(runs + 1):
        for name, argv in (("remote", remote), ("embedded", local)):
            started = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
            if round_:  # the first round fills the page cache for both
                times[name].append(time.perf_counter() - started)
            answers[name] = [h["uri"] for h in json.loads(done.stdout)["result"]["resources"]]
    medians = {name: round(percentile(values, 50), 3) for name, values in times.items()}
    return {
        "remote_seconds_p50": medians["remote"],
        "embedded_seconds_p50": medians["embedded"],
        "speedup": round(medians["embedded"] / medians["remote"], 2),
        "remote_seconds": [round(t, 3) for t in times["remote"]],
        "embedded_seconds": [round(t, 3) for t in times["embedded"]],
        "same_hits": answers["remote"] == answers["embedded"],
        "runs": runs,
    }


def load(url: str, work: Path, clients: int, seconds: float) -> dict[str, Any]:
    """``clients`` threads for ``seconds``: a quarter write (memories, files), the rest read."""
    import openviking as ov

    questions = [text for _, text, _ in docs_queries("docs-en")]
    writers = max(1, clients // 4)
    files = work / "load-files"
    files.mkdir(parents=True, exist_ok=True)
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, list[str]] = defaultdict(list)
    written: list[tuple[str, str, str]] = []  # (kind, uri, text)
    lock = threading.Lock()
    stop = time.monotonic() + seconds
    start = threading.Barrier(clients)

    def reader(index: int) -> None:
        client = ov.SyncHTTPClient(url, warn=lambda message: None)
        ops = [
            ("find", lambda i: client.find(questions[i % len(questions)], target_uri=DOCS_URI)),
            ("grep", lambda i: client.grep(DOCS_URI, "auth(entication|orization)", case_insensitive=True)),
            ("glob", lambda i: client.glob("**/*.md", DOCS_URI)),
            ("read", lambda i: client.read(f"{DOCS_URI}/{READ_URIS[i % len(READ_URIS)]}")),
        ]
        start.wait()
        i = index
        while time.monotonic() < stop:
            kind, op = ops[i % len(ops)]
            began = time.perf_counter()
            try:
                op(i)
            except Exception as exc:  # every failure is counted, whatever it is
                with lock:
                    errors[kind].append(f"{type(exc).__name__}: {exc}")
            else:
                with lock:
                    latencies[kind].append(time.perf_counter() - began)
            i += 1
        client.close()

    def writer(index: int) -> None:
        client = ov.SyncHTTPClient(url, warn=lambda message: None)
        start.wait()
        i = 0
        while time.monotonic() < stop:
            began = time.perf_counter()
            kind = "add_memory" if (index + i) % 2 == 0 else "add_resource"
            text = f"load test write {index}-{i}: the writer {index} wrote item {i}"
            try:
                if kind == "add_memory":
                    uri = client.add_memory(text, "loadtest").uri
                else:
                    path = files / f"w{index}-{i}.md"
                    path.write_text(f"# Write {index}-{i}\n\n{text}\n", encoding="utf-8")
                    uri = client.add_resource(path, to=f"viking://resources/loadtest/w{index}-{i}.md").root_uri
            except Exception as exc:
                with lock:
                    errors[kind].append(f"{type(exc).__name__}: {exc}")
            else:
                with lock:
                    latencies[kind].append(time.perf_counter() - began)
                    written.append((kind, uri, text))
            i += 1
        client.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    threads += [threading.Thread(target=reader, args=(n,)) for n in range(clients - writers)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    checker = ov.SyncHTTPClient(url, warn=lambda message: None)
    lost = [uri for _, uri, text in written if text not in checker.read(uri)]
    memories = len(checker.glob("**/*.md", "viking://user/default/memories/loadtest")["matches"])
    resources = len(checker.glob("*.md", "viking://resources/loadtest")["matches"]) if written else 0
    checker.close()
    total = sum(len(v) for v in latencies.values())
    return {
        "clients": clients,
        "writers": writers,
        "seconds": round(elapsed, 1),
        "requests": total,
        "requests_per_second": round(total / elapsed, 1),
        "by_kind": {kind: _ms(values) for kind, values in sorted(latencies.items())},
        "errors": sum(len(v) for v in errors.values()),
        "error_samples": {kind: values[:3] for kind, values in errors.items()},
        "writes_acknowledged": len(written),
        "writes_lost": len(lost),
        "memories_listed": memories,
        "resources_listed": resources,
        "memories_acknowledged": sum(kind == "add_memory" for kind, _, _ in written),
        "resources_acknowledged": sum(kind == "add_resource" for kind, _, _ in written),
    }


def run(
    work: Path, *, rounds: int = 3, process_runs: int = 15, clients: int = 16, seconds: float = 60
) -> dict[str, Any]:
    """Build (or reuse) the docs store, start ``openviking serve`` on it, run the three parts."""
    import openviking as ov

    home = work / "server-home"
    home.mkdir(parents=True, exist_ok=True)
    conf = work / "server-ov.conf"
    conf.write_text("{}\n", encoding="utf-8")  # the defaults: the bundled local model
    store = work / "store-server"
    env = _env(home)
    started = time.perf_counter()
    with ov.OpenViking(path=store, config_file=conf, warn=lambda message: None) as client:
        added = client.add_resource(DOCS / "en", to=DOCS_URI)
        client.rm("viking://resources/loadtest", recursive=True)  # a store reused from an earlier run
        client.rm("viking://user/default/memories/loadtest", recursive=True)
    ingest = {"seconds": round(time.perf_counter() - started, 1), "files": added.added + added.unchanged}
    proc, url = _start_server(store, conf, env, work / "server.log")
    try:
        report: dict[str, Any] = {"store": str(store), "ingest": ingest}
        report["find_latency"] = find_latency(store, conf, url, rounds)
        print_section("find, warm, docs-en questions (HTTP vs in-process)", report["find_latency"])
        report["processes"] = processes(store, conf, url, env, process_runs)
        print_section("openviking find as a process (--url vs embedded)", report["processes"])
        report["load"] = load(url, work, clients, seconds)
        print_section(f"load: {clients} clients for {seconds:g} s", report["load"])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    return report


def print_section(title: str, values: dict[str, Any]) -> None:
    print(f"\n{title}")
    for key, value in values.items():
        print(f"  {key:<24} {json.dumps(value, ensure_ascii=False)}")
    sys.stdout.flush()
