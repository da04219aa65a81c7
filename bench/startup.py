"""Start-up costs: `openviking --help`, an argument error, and `import lancedb`, as fresh processes."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from typing import Any

from .metrics import percentile
from .procs import compile_bytecode


def _time(command: list[str], runs: int = 10) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, capture_output=True)
        times.append(time.perf_counter() - started)
    return round(percentile(times, 50), 3)


def run() -> dict[str, Any]:
    compile_bytecode()
    exe = shutil.which("openviking") or ""
    base = [exe] if exe else [sys.executable, "-m", "openviking_cli"]
    return {
        "help_seconds_p50": _time([*base, "--help"]),
        "usage_error_seconds_p50": _time([*base, "find", "q", "--limit", "x"]),
        "bad_regex_seconds_p50": _time([*base, "grep", "(", "--store", "/nonexistent"]),
        "python_startup_seconds_p50": _time([sys.executable, "-c", "pass"]),
        "import_lancedb_seconds_p50": _time([sys.executable, "-c", "import lancedb"], runs=5),
        "import_lancedb_deferred_seconds_p50": _time(
            [
                sys.executable,
                "-c",
                "from openviking.store._fastimport import defer_namespace_client as d; d(); import lancedb",
            ],
            runs=5,
        ),
    }


def print_report(report: dict[str, Any]) -> None:
    print("\nstart-up (fresh processes, median seconds)")
    for key, value in report.items():
        print(f"  {key:<38} {value}")
