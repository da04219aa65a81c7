"""The warm paths, on the English docs (90 files, the bundled local model):

* per call: ``openviking find``, ``grep`` and ``ls`` as whole processes, embedded and through
  the store's local service (``openviking start``), beside a minimal 25-command typer app's
  ``--help``, ``openviking --help`` and ripgrep over the same files, all in one hyperfine run;
* many questions: ``find --batch`` of 100 questions against 100 ``find`` processes, embedded
  and through the service, with the same hits;
* remote embedding: records per second of the OpenAI-compatible embedder with 1, 4 and 16
  requests in flight against a stub that answers in 100 ms (the embedder alone, and a whole
  ``add-resource`` of the docs).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .procs import compile_bytecode
from .quality import DOCS, docs_queries
from .server import _cli, _env, print_section
from .startup import hyperfine, write_typer_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

DOCS_URI = "viking://resources/docs"
QUESTION = "how do I authenticate users"


def _without_times(text: str) -> Any:
    """A command's JSON output without its ``time``, for comparing two runs."""
    payload = json.loads(text)
    if isinstance(payload, dict):
        payload.pop("time", None)
    return payload


def per_call(store: Path, conf: Path, env: dict[str, str], work: Path, runs: int) -> dict[str, Any]:
    """The hyperfine run: every command side by side, each checked to answer first."""
    where = ["--store", str(store), "--config", str(conf)]
    commands = {
        "find": ["find", QUESTION, "--uri", DOCS_URI, *where, "-o", "json"],
        "grep": ["grep", DOCS_URI, "authentication", "-i", *where, "-o", "json"],
        "ls": ["ls", DOCS_URI, *where, "-o", "json"],
    }
    timed: dict[str, list[str]] = {
        "typer app --help": ["env", sys.executable, str(write_typer_app(work / "typer_app.py")), "--help"],
        "openviking --help": ["env", *_cli(), "--help"],
        "rg": ["env", "rg", "-i", "authentication", str(DOCS / "en")],
    }
    same = {}
    for name, argv in commands.items():
        outputs = []
        for label, opt_out in (("service", "0"), ("embedded", "1")):
            command = ["env", f"OPENVIKING_NO_SERVICE={opt_out}", *_cli(), *argv]
            done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
            outputs.append(_without_times(done.stdout))
            timed[f"{name} ({label})"] = command
        same[name] = outputs[0] == outputs[1]
    medians = hyperfine(timed, runs, env=env)
    typer = medians["typer app --help"]
    rows = {
        name: {
            "ms": round(m["median"] * 1000, 1),
            "x_typer_app": round(m["median"] / typer["median"], 2),
            "cpu_ms": round(m["cpu"] * 1000, 1),
            "cpu_x_typer_app": round(m["cpu"] / typer["cpu"], 2),
        }
        for name, m in medians.items()
    }
    return {"rows": rows, "same_output": same, "command": f"hyperfine -N -w 3 -r {runs} (bench/warm.py per_call)"}


def _questions() -> list[str]:
    texts = [text for _, text, _ in docs_queries("docs-en") + docs_queries("docs-en-zh")]
    texts += [text for _, text, _ in docs_queries("docs-zh")]
    return texts[:100]


def batch(store: Path, conf: Path, env: dict[str, str], work: Path) -> dict[str, Any]:
    """``find --batch`` of 100 questions against 100 ``find`` processes, each way."""
    questions = _questions()
    path = work / "questions.jsonl"
    path.write_text("".join(json.dumps({"id": i, "query": q}) + "\n" for i, q in enumerate(questions)))
    where = ["--uri", DOCS_URI, "--store", str(store), "--config", str(conf)]
    report: dict[str, Any] = {"questions": len(questions)}
    for label, opt_out in (("service", "0"), ("embedded", "1")):
        run_env = {**env, "OPENVIKING_NO_SERVICE": opt_out}
        started = time.perf_counter()
        done = subprocess.run([*_cli(), "find", "--batch", str(path), *where], capture_output=True, text=True,
                              env=run_env, check=True)  # fmt: skip
        one = time.perf_counter() - started
        batched = [[h["uri"] for h in json.loads(line)["result"]["resources"]] for line in done.stdout.splitlines()]
        started = time.perf_counter()
        separate = []
        for question in questions:
            single = subprocess.run([*_cli(), "find", question, *where, "-o", "json"], capture_output=True,
                                    text=True, env=run_env, check=True)  # fmt: skip
            separate.append([h["uri"] for h in json.loads(single.stdout)["result"]["resources"]])
        many = time.perf_counter() - started
        report[label] = {
            "batch_seconds": round(one, 2),
            "processes_seconds": round(many, 2),
            "speedup": round(many / one, 1),
            "same_hits": f"{sum(a == b for a, b in zip(batched, separate, strict=True))}/{len(questions)}",
        }
    return report


# The stub in a process of its own, as an embedding server is: it takes no CPU from the client's GIL.
_STUB = """
import signal, sys
sys.path.insert(0, {tests!r})
from servers import PacedEmbeddings, StubServer
signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGTERM}})
stub = PacedEmbeddings(latency={latency!r}, dimension=384)
with StubServer(stub) as server:
    print(server.url, flush=True)
    signal.sigwait({{signal.SIGTERM}})
    print(stub.most_in_flight, flush=True)
"""


def remote_embedding(work: Path, concurrencies: tuple[int, ...] = (1, 4, 16), latency: float = 0.1) -> dict[str, Any]:
    """Records per second of the OpenAI-compatible embedder against a stub answering in ``latency`` s."""
    import openviking as ov
    from openviking.config import config_from_dict
    from openviking.models.embedder import OpenAIEmbedder

    tests = str(Path(__file__).resolve().parents[1] / "tests")
    texts = [f"record {i}: a sentence about topic {i % 97}" for i in range(2048)]
    report: dict[str, Any] = {"latency_s": latency, "batch_size": 32, "texts": len(texts)}
    for concurrency in concurrencies:
        stub = subprocess.Popen([sys.executable, "-c", _STUB.format(tests=tests, latency=latency)],
                                stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert stub.stdout is not None
        url = stub.stdout.readline().strip()
        try:
            dense = {"provider": "openai", "model": "stub", "api_base": url + "/v1", "dimension": 384,
                     "batch_size": 32, "max_concurrent": concurrency}  # fmt: skip
            embedder = OpenAIEmbedder(config_from_dict({"embedding": {"dense": dense}}).embedding)
            started = time.perf_counter()
            embedder.embed_documents(texts)
            alone = time.perf_counter() - started
            conf = work / f"remote-{concurrency}.conf"
            conf.write_text(json.dumps({"embedding": {"dense": dense}}), encoding="utf-8")
            store = work / f"store-remote-{concurrency}"
            shutil.rmtree(store, ignore_errors=True)
            with ov.OpenViking(path=store, config_file=conf, warn=lambda message: None) as client:
                started = time.perf_counter()
                added = client.add_resource(DOCS / "en", to=DOCS_URI)
                whole = time.perf_counter() - started
        finally:
            stub.terminate()
            most = stub.communicate(timeout=60)[0].strip()
        report[f"in_flight_{concurrency}"] = {
            "embedder_records_per_s": round(len(texts) / alone, 1),
            "add_resource_records_per_s": round(added.records_embedded / whole, 1),
            "add_resource_seconds": round(whole, 2),
            "records": added.records_embedded,
            "most_in_flight": int(most) if most.isdigit() else None,
        }
    return report


def run(work: Path, runs: int = 30, only: str | None = None) -> dict[str, Any]:
    """Build (or reuse) the docs store, start its local service, run the three parts (``only``
    ``per-call``: the hyperfine run alone)."""
    import openviking as ov

    compile_bytecode()
    home = work / "warm-home"
    home.mkdir(parents=True, exist_ok=True)
    conf = work / "warm-ov.conf"
    conf.write_text("{}\n", encoding="utf-8")  # the defaults: the bundled local model
    store = work / "store-warm"
    env = _env(home)
    with ov.OpenViking(path=store, config_file=conf, warn=lambda message: None) as client:
        client.add_resource(DOCS / "en", to=DOCS_URI)
    where = ["--store", str(store), "--config", str(conf)]
    started = time.perf_counter()
    done = subprocess.run([*_cli(), "start", *where, "-o", "json"], env=env, check=True, capture_output=True)
    pid = json.loads(done.stdout)["result"]["pid"]
    service = {"start_seconds": round(time.perf_counter() - started, 2), "rss_mb_started": _rss_mb(pid)}
    try:
        report: dict[str, Any] = {"load_before": _load()}
        report["per_call"] = per_call(store, conf, env, work, runs) | {"load_after": _load()}
        print_section("per call, whole processes (hyperfine, side by side)", report["per_call"])
        if only == "per-call":
            return report
        report["batch"] = batch(store, conf, env, work) | {"load_after": _load()}
        print_section("find --batch of 100 questions against 100 find processes", report["batch"])
        report["service"] = service | {"rss_mb_after": _rss_mb(pid)}
        print_section("the local service", report["service"])
    finally:
        subprocess.run([*_cli(), "stop", *where], env=env, check=False, capture_output=True)
    report["remote_embedding"] = remote_embedding(work) | {"load_after": _load()}
    print_section("remote embedding against a stub answering in 100 ms", report["remote_embedding"])
    return report


def _load() -> list[float]:
    """The machine's load averages (1, 5, 15 minutes), said beside each figure: it is shared."""
    return [round(value, 2) for value in os.getloadavg()]


def _rss_mb(pid: int) -> float | None:
    """The resident memory of process ``pid`` in MB (Linux), else None."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None
