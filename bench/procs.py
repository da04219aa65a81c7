"""Running ``openviking`` as a fresh process: wall time, peak memory, parsed JSON result."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TIME = Path("/usr/bin/time")  # GNU time (Debian package `time`): %M is the peak RSS in KB


def run_cli(args: list[str]) -> tuple[float, float | None, Any]:
    """Run ``openviking ARGS -o json``; return wall seconds, peak RSS in MB (if known), result."""
    command = [sys.executable, "-m", "openviking_cli", *args, "-o", "json"]
    if TIME.exists():
        command = [str(TIME), "-f", "%M", *command]
    started = time.perf_counter()
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    peak = None
    if TIME.exists():
        last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
        peak = round(int(last) / 1024, 1) if last.isdigit() else None
    return seconds, peak, json.loads(done.stdout)["result"]
