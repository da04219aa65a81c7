"""Running ``openviking`` as a fresh process: wall time, peak memory, parsed JSON result."""

from __future__ import annotations

import compileall
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TIME = Path("/usr/bin/time")  # GNU time (Debian package `time`): %M is the peak RSS in KB
REPO = Path(__file__).resolve().parent.parent


def compile_bytecode() -> None:
    """Write the project's bytecode, as ``pip install`` does for an installed package.

    An editable install leaves the sources uncompiled, and where ``PYTHONDONTWRITEBYTECODE`` is set
    (as on these machines) every timed process would compile the project anew: tens of ms a run
    that no user of an installed package pays.
    """
    for package in ("openviking", "openviking_cli"):
        compileall.compile_dir(REPO / package, quiet=1, force=False)


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


class EmbedTimer:
    """Wraps an embedder's ``embed_documents`` to add up its seconds, texts and tokens."""

    def __init__(self, embedder: Any) -> None:
        self.seconds = 0.0
        self.texts = 0
        self.tokens = 0
        original = embedder.embed_documents
        count = getattr(embedder, "count_tokens", None)  # only the local model can count

        def timed(texts: list[str]) -> Any:
            started = time.perf_counter()
            try:
                return original(texts)
            finally:
                self.seconds += time.perf_counter() - started
                self.texts += len(texts)
                if count is not None:
                    self.tokens += sum(count(t) for t in texts)

        embedder.embed_documents = timed


def timed_add(client: Any, source: Path, to: str) -> tuple[dict[str, Any], EmbedTimer]:
    """``add_resource`` with the embedder timed: wall and embedding seconds, and the timer."""
    timer = EmbedTimer(client.embedder())
    started = time.perf_counter()
    result = client.add_resource(source, to=to)
    total = time.perf_counter() - started
    stats = {
        "source": str(source),
        "to": to,
        "seconds": round(total, 2),
        "embed_seconds": round(timer.seconds, 2),
        "outside_embedding_share": round(1 - timer.seconds / total, 3) if total else None,
        "records_embedded": result.records_embedded,
        "files": result.added + result.updated + result.unchanged,
    }
    return stats, timer
