"""Start-up costs: `openviking --help` against a minimal typer app's, an argument error, and
`import lancedb`, as fresh processes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
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


TYPER_APP = """\
import typer

app = typer.Typer()
for number in range(25):

    def command(
        name: str = typer.Argument(..., help="Who to greet."),
        count: int = typer.Option(1, "--count", "-c", help="How many times."),
        loud: bool = typer.Option(False, "--loud", help="In capitals."),
    ) -> None:
        \"\"\"Greet NAME.\"\"\"
        typer.echo(name * count)

    app.command(f"command-{number}")(command)

if __name__ == "__main__":
    app()
"""


def write_typer_app(path: Path) -> Path:
    """The baseline: a minimal typer app of 25 commands (each with an argument and two options)."""
    path.write_text(TYPER_APP, encoding="utf-8")
    return path


def hyperfine(
    commands: dict[str, list[str]], runs: int, env: dict[str, str] | None = None
) -> dict[str, dict[str, float]]:
    """Each command's median wall seconds and mean CPU seconds (user + system: what a busy
    machine moves least), all measured side by side in one hyperfine run (``-N``: no shell)."""
    import shlex

    with tempfile.NamedTemporaryFile(suffix=".json") as export:
        argv = ["hyperfine", "-N", "--warmup", "3", "--runs", str(runs), "--style", "none"]
        argv += ["--export-json", export.name]
        for name, command in commands.items():
            argv += ["--command-name", name, shlex.join(command)]
        subprocess.run(argv, check=True, capture_output=True, env=env)
        results = json.loads(Path(export.name).read_text(encoding="utf-8"))["results"]
    return {r["command"]: {"median": r["median"], "cpu": r["user"] + r["system"]} for r in results}


def help_against_typer(runs: int = 40) -> dict[str, Any]:
    """``openviking --help`` and the typer app's, side by side (hyperfine)."""
    exe = shutil.which("openviking") or ""
    base = [exe] if exe else [sys.executable, "-m", "openviking_cli"]
    with tempfile.TemporaryDirectory() as folder:
        app = write_typer_app(Path(folder) / "typer_app.py")
        medians = hyperfine({"typer app --help": [sys.executable, str(app), "--help"],
                             "openviking --help": [*base, "--help"]}, runs)  # fmt: skip
    ours, typer = medians["openviking --help"], medians["typer app --help"]
    return {
        "typer_app_help_ms": round(typer["median"] * 1000, 1),
        "openviking_help_ms": round(ours["median"] * 1000, 1),
        "ratio": round(ours["median"] / typer["median"], 2),
        "cpu_ratio": round(ours["cpu"] / typer["cpu"], 2),
        "command": f"hyperfine -N -w 3 -r {runs}",
    }


def run() -> dict[str, Any]:
    compile_bytecode()
    exe = shutil.which("openviking") or ""
    base = [exe] if exe else [sys.executable, "-m", "openviking_cli"]
    report: dict[str, Any] = {"help_against_typer_app": help_against_typer()} if shutil.which("hyperfine") else {}
    return report | {
        "help_seconds_p50": _time([*base, "--help"]),
        "usage_error_seconds_p50": _time([*base, "find", "q", "--limit", "x"]),
        "bad_regex_seconds_p50": _time([*base, "grep", "(", "--store", "/nonexistent"]),
        "python_startup_seconds_p50": _time([sys.executable, "-c", "pass"]),
        "import_lancedb_seconds_p50": _time([sys.executable, "-c", "import lancedb"], runs=5),
        "import_lancedb_deferred_seconds_p50": _time(
            [
                sys.executable,
                "-c",
                "from openviking.store._fastimport import import_lancedb; import_lancedb()",
            ],
            runs=5,
        ),
    }


def print_report(report: dict[str, Any]) -> None:
    print("\nstart-up (fresh processes, median seconds)")
    for key, value in report.items():
        print(f"  {key:<38} {json.dumps(value)}")
