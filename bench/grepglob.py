"""grep and glob on a realistic corpus, side by side with ripgrep, fd and Python's glob.

The corpus is the Python standard library's own source tree (``sysconfig``'s ``stdlib`` path,
text files only: no ``site-packages``, ``__pycache__`` or ``lib-dynload``, no binary or
non-UTF-8 file, no hidden name), copied once into the work directory so that every tool reads
exactly the same files, and ingested into a store with the hash embedder (the ingest is not
what is measured).

Measured in one run, each case interleaved with its peer so that the load of the machine falls
on both alike (medians):

* warm SDK: ``client.grep()`` / ``client.glob()`` in this process, after two warm-up calls,
  against ``rg -n`` (a whole process, its output read through a pipe) and ``fd`` (``fdfind``)
  and Python's ``glob.glob(recursive=True)`` on the same files;
* whole process: ``openviking grep|glob ...`` against the same ``rg``/``fd`` command, through
  hyperfine (``--output=pipe``) when it is installed, else repeated subprocess runs.

Every case also checks that both sides found the same number of lines or paths.
"""

from __future__ import annotations

import glob as pyglob
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .report import print_table

ROOT = "viking://resources/stdlib"
MIN_CORPUS_BYTES = 30 * 1024 * 1024
SKIP_DIRS = {"site-packages", "__pycache__", "lib-dynload"}
# rg's default encoding mode drops a UTF-8 BOM, as add-resource does.
RG_FLAGS = ["--no-config", "-n", "--no-ignore", "--hidden", "--no-messages"]
FD_FLAGS = ["--no-ignore", "--hidden", "--color", "never"]

# (what it shows, pattern, ignore case)
GREP_CASES: list[tuple[str, str, bool]] = [
    ("literal, no match", "merge_insert", False),
    ("literal", "NotImplementedError", False),
    ("alternation of literals", "TODO|FIXME|XXX", False),
    ("anchored alternation", r"^import (os|sys)$", False),
    ("case-insensitive", "unicode", True),
    ("class, dense (48k lines)", r"def \w+\(self", False),
    ("non-ASCII", r"[^\x00-\x7F]+", False),
    ("word boundary, very dense (206k lines)", r"\bself\b", False),
]
# (what it shows, our pattern, fd arguments, Python glob pattern)
GLOB_CASES: list[tuple[str, str, list[str], str]] = [
    ("every .py file", "**/*.py", ["--glob", "*.py"], "**/*.py"),
    ("test files", "**/test_*.py", ["--glob", "test_*.py"], "**/test_*.py"),
    ("one package, recursive", "email/**", [".", "email"], "email/**"),
    ("two levels down", "*/*.py", ["--glob", "*.py", "--min-depth", "2", "--max-depth", "2"], "*/*.py"),
    ("everything", "**", ["."], "**"),
]


# ---------------------------------------------------------------------------------------------
# corpus and store


def build_corpus(target: Path) -> dict[str, Any]:
    """Copy the standard library's text files to ``target`` (once; a manifest marks it done)."""
    manifest = target.parent / "corpus.json"
    source = Path(sysconfig.get_paths()["stdlib"])
    if manifest.exists() and target.is_dir():
        info = json.loads(manifest.read_text(encoding="utf-8"))
        if info.get("source") == str(source):
            return info
    if target.exists():
        shutil.rmtree(target)
    files = total = lines = 0
    for dirpath, dirs, names in os.walk(source):
        rel = Path(dirpath).relative_to(source)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith((".", "config-")))
        for name in sorted(names):
            path = Path(dirpath) / name
            if name.startswith(".") or path.is_symlink() or not path.is_file():
                continue
            data = path.read_bytes()
            if b"\0" in data or len(data) > 10 * 1024 * 1024:
                continue
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            out = target / rel / name
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
            files += 1
            total += len(data)
            lines += data.count(b"\n")
    info = {"source": str(source), "files": files, "bytes": total, "lines": lines}
    manifest.write_text(json.dumps(info), encoding="utf-8")
    return info


def open_store(store: Path, corpus: Path) -> tuple[Any, float, Path]:
    """A client on ``store`` holding ``corpus`` at ROOT (hash embedder), the ingest time, its ov.conf."""
    import openviking as ov
    from openviking.config import config_from_dict

    raw = {"embedding": {"dense": {"provider": "hash"}}}
    conf = store.parent / "ov-hash.conf"
    conf.write_text(json.dumps(raw), encoding="utf-8")
    client = ov.OpenViking(path=str(store), config=config_from_dict(raw))
    client.initialize()
    started = time.perf_counter()
    client.add_resource(corpus, to=ROOT)
    return client, time.perf_counter() - started, conf


# ---------------------------------------------------------------------------------------------
# timing


def interleaved(calls: list[Callable[[], Any]], runs: int, warmup: int = 2) -> list[float]:
    """Median seconds of each call, the calls taking turns so that load falls on all alike."""
    for call in calls:
        for _ in range(warmup):
            call()
    times: list[list[float]] = [[] for _ in calls]
    for _ in range(runs):
        for index, call in enumerate(calls):
            started = time.perf_counter()
            call()
            times[index].append(time.perf_counter() - started)
    return [statistics.median(t) for t in times]


def run_lines(args: list[str], cwd: Path) -> int:
    """Run a command, read its whole output through a pipe, return its number of lines."""
    proc = subprocess.run(args, cwd=cwd, capture_output=True, check=False)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{shlex.join(args)} failed: {proc.stderr.decode(errors='replace')[:300]}")
    return proc.stdout.count(b"\n")


def whole_process(pairs: list[tuple[str, list[str], list[str]]], cwd: Path, runs: int) -> list[dict[str, Any]]:
    """(label, our command, peer command): median wall time of each, hyperfine when installed."""
    rows = []
    hyperfine = shutil.which("hyperfine")
    for label, ours, theirs in pairs:
        if hyperfine:
            with tempfile.NamedTemporaryFile(suffix=".json") as export:
                commands = [shlex.join(ours)] + ([shlex.join(theirs)] if theirs else [])
                subprocess.run(
                    [
                        hyperfine,
                        "--warmup",
                        "1",
                        "--runs",
                        str(runs),
                        "--output=pipe",
                        "-i",
                        "--style",
                        "none",
                        "--export-json",
                        export.name,
                        *commands,
                    ],
                    cwd=cwd,
                    check=True,
                    capture_output=True,
                )
                results = json.loads(Path(export.name).read_text(encoding="utf-8"))["results"]
            medians = [r["median"] for r in results]
            tool = "hyperfine"
        else:
            calls = [lambda c=ours: run_lines(c, cwd)] + ([lambda c=theirs: run_lines(c, cwd)] if theirs else [])
            medians = interleaved(calls, runs, warmup=1)
            tool = "subprocess"
        row = {"case": label, "ours_ms": round(medians[0] * 1000, 1), "command": shlex.join(ours), "timer": tool}
        if theirs:
            row.update(
                {
                    "peer": theirs[0],
                    "peer_ms": round(medians[1] * 1000, 1),
                    "ratio": round(medians[0] / medians[1], 2),
                    "peer_command": shlex.join(theirs),
                }
            )
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------
# the run


def python_glob_count(corpus: Path, pattern: str) -> int:
    found = pyglob.glob(pattern, root_dir=corpus, recursive=True)
    plain = {f for f in found if not f.endswith("/")}
    return len(plain | {f.rstrip("/") for f in found if f.endswith("/") and f.rstrip("/") in plain})


def run(work: Path, runs: int = 9, cli_runs: int = 5) -> dict[str, Any]:
    """Build (or reuse) the corpus and store under ``work/grepglob``, measure, return the report."""
    base = work / "grepglob"
    base.mkdir(parents=True, exist_ok=True)
    corpus = base / "corpus"
    info = build_corpus(corpus)
    if info["bytes"] < MIN_CORPUS_BYTES:
        raise SystemExit(f"the corpus holds {info['bytes']} bytes, below the {MIN_CORPUS_BYTES} this bench needs")
    client, ingest_seconds, conf = open_store(base / "store", corpus)
    rg, fd = shutil.which("rg"), shutil.which("fdfind") or shutil.which("fd")
    report: dict[str, Any] = {
        "corpus": {**info, "path": str(corpus)},
        "ingest_seconds": round(ingest_seconds, 2),
        "load_before": list(os.getloadavg()),
        "peers": {"rg": _version([rg, "--version"]) if rg else None, "fd": _version([fd, "--version"]) if fd else None},
        "sdk": [],
        "cli": [],
    }
    for label, pattern, ignore_case in GREP_CASES:
        flags = ["-i"] if ignore_case else []

        def ours(pattern: str = pattern, ignore_case: bool = ignore_case) -> dict[str, Any]:
            return client.grep(ROOT, pattern, case_insensitive=ignore_case, level_limit=0)

        first = time.perf_counter()
        result = ours()
        cold = time.perf_counter() - first
        row: dict[str, Any] = {
            "kind": "grep",
            "case": label,
            "pattern": pattern + (" -i" if ignore_case else ""),
            "first_call_ms": round(cold * 1000, 1),
            "ours_n": result["count"],
        }
        calls: list[Callable[[], Any]] = [ours]
        if rg:
            rg_args = [rg, *RG_FLAGS, *flags, "-e", pattern, "."]
            calls.append(lambda args=rg_args: run_lines(args, corpus))
            row["peer"] = "rg"
            row["peer_n"] = run_lines(rg_args, corpus)
        medians = interleaved(calls, runs)
        row["ours_ms"] = round(medians[0] * 1000, 1)
        if rg:
            row["peer_ms"] = round(medians[1] * 1000, 1)
            row["ratio"] = round(medians[0] / medians[1], 2)
        report["sdk"].append(row)
    for label, pattern, fd_args, py_pattern in GLOB_CASES:

        def ours_glob(pattern: str = pattern) -> dict[str, Any]:
            return client.glob(pattern, ROOT)

        row = {"kind": "glob", "case": label, "pattern": pattern, "ours_n": ours_glob()["count"]}
        calls = [ours_glob, lambda p=py_pattern: pyglob.glob(p, root_dir=corpus, recursive=True)]
        row["python_glob_n"] = python_glob_count(corpus, py_pattern)
        if fd:
            fd_cmd = [fd, *FD_FLAGS, *fd_args]
            calls.append(lambda args=fd_cmd: run_lines(args, corpus))
            row["peer"] = "fd"
            row["peer_n"] = run_lines(fd_cmd, corpus)
        medians = interleaved(calls, runs)
        row["ours_ms"] = round(medians[0] * 1000, 1)
        row["python_glob_ms"] = round(medians[1] * 1000, 1)
        row["ratio_python_glob"] = round(medians[0] / medians[1], 2)
        if fd:
            row["peer_ms"] = round(medians[2] * 1000, 1)
            row["ratio"] = round(medians[0] / medians[2], 2)
        report["sdk"].append(row)
    report["cli"] = whole_process(_cli_pairs(client.store_path, conf, rg, fd), corpus, cli_runs)
    report["load_after"] = list(os.getloadavg())
    client.close()
    return report


def _cli_pairs(store: str, conf: Path, rg: str | None, fd: str | None) -> list[tuple[str, list[str], list[str]]]:
    exe = str(Path(sys.executable).parent / "openviking")
    common = ["--store", store, "--config", str(conf)]
    pairs: list[tuple[str, list[str], list[str]]] = [("openviking --help", [exe, "--help"], [])]
    for label, pattern, ignore_case in (GREP_CASES[2], GREP_CASES[5]):
        flags = ["-i"] if ignore_case else []
        ours = [exe, "grep", ROOT, pattern, "-L", "0", *flags, *common]
        pairs.append((f"grep: {label}", ours, [rg, *RG_FLAGS, *flags, "-e", pattern, "."] if rg else []))
    label, pattern, fd_args, _ = GLOB_CASES[0]
    pairs.append(
        (f"glob: {label}", [exe, "glob", pattern, "-u", ROOT, *common], [fd, *FD_FLAGS, *fd_args] if fd else [])
    )
    return pairs


def _version(args: list[str]) -> str:
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    return proc.stdout.strip().splitlines()[0] if proc.stdout.strip() else ""


def print_report(report: dict[str, Any]) -> None:
    corpus = report["corpus"]
    print(
        f"corpus: {corpus['files']} files, {corpus['bytes'] / 1e6:.1f} MB, {corpus['lines']} lines "
        f"(ingest {report['ingest_seconds']} s); load {report['load_before'][0]:.1f} -> {report['load_after'][0]:.1f}"
    )
    columns = ["kind", "case", "pattern", "ours_ms", "peer", "peer_ms", "ratio", "ours_n", "peer_n", "python_glob_ms"]
    print_table(report["sdk"], columns, "warm SDK call vs peer process (median ms)")
    print_table(report["cli"], ["case", "ours_ms", "peer", "peer_ms", "ratio", "timer"], "whole process (median ms)")
