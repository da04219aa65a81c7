"""One long session, grown message by message and committed, on two versions of the code side by side.

    python -m bench session-growth --before 3750b6b --work /tmp/ov-bench-growth

The messages are LoCoMo's turns, conversation after conversation (``../shared/data/locomo-dev``),
each conversation's first speaker the ``user``: 2,240 of them (``--messages``) added to one session
of a new store, then the session committed once. What is timed: ``add_message`` around its 1st,
1,000th and 2,000th call (the median of the eleven calls from that one on), and the commit, with
its parts as ``bench/sessions.py`` splits them (the archive's write, the stored neighbours of the
memories, the memories' write).

``--before REF`` is the code of a git commit of this repository, taken out with ``git archive``
into the work directory (the repository is left as it is); the working tree's code is run after
it, on the same messages, so that the two are measured in one run, one after the other. Each
runs in a process of its own whose ``openviking`` is imported from that tree. The embedder is
the hash one unless ``--embedder local`` is given: the bundled model makes the commit mostly
embedding, which is the same on both sides.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from .procs import REPO
from .report import print_table

SESSION = "long"
MARKS = (1, 1000, 2000)  # the calls whose time is reported (the median of MARK_CALLS from each on)
MARK_CALLS = 11


def turns(count: int) -> Iterator[tuple[str, str, datetime]]:
    """``count`` LoCoMo turns as ``(role, text, when)``, conversation after conversation,
    again from the first when they run out."""
    from . import locomo
    from .sessions import _conversation, conversations, sessions_of

    given = 0
    names = conversations(None)
    if not names:
        raise SystemExit(f"no LoCoMo conversation in {locomo.LOCOMO} (set OPENVIKING_BENCH_DATA)")
    while True:
        for conv in names:
            data = _conversation(conv)
            for _number, when, session in sessions_of(data):
                for turn in session:
                    yield ("user" if turn["speaker"] == data["speaker_a"] else "assistant"), turn["text"], when
                    given += 1
                    if given == count:
                        return


def measure(store: Path, count: int, embedder: str) -> dict[str, Any]:
    """Add ``count`` messages to one session of a new store at ``store``, then commit it."""
    import openviking
    from openviking.config import config_from_dict

    from .sessions import CommitParts

    raw: dict[str, Any] = {"default_user": "growth"}
    if embedder == "hash":
        raw["embedding"] = {"dense": {"provider": "hash"}}
    client = openviking.OpenViking(path=str(store), config=config_from_dict(raw))
    client.initialize()
    seconds = []
    for role, text, when in turns(count):
        started = time.perf_counter()
        client.add_message(SESSION, role, text, created_at=when.isoformat())
        seconds.append(time.perf_counter() - started)
    parts = CommitParts()
    started = time.perf_counter()
    result = client.commit_session(SESSION)
    commit = time.perf_counter() - started
    taken = parts.taken()
    parts.close()
    client.close()
    marks = {
        str(mark): round(statistics.median(seconds[mark - 1 : mark - 1 + MARK_CALLS]) * 1000, 1)
        for mark in MARKS
        if mark + MARK_CALLS - 1 <= len(seconds)
    }
    return {
        "code": str(Path(openviking.__file__).parent.parent),
        "messages": count,
        "add_ms": marks,
        "add_seconds": round(sum(seconds), 1),
        "commit_seconds": round(commit, 2),
        **taken,
        "archived": result.messages_archived,
        "memories": dict(result.memories_extracted),
        "load": round(os.getloadavg()[0], 1),
    }


def code_at(ref: str, work: Path) -> Path:
    """The repository's tree at ``ref``, taken out into ``work/code-<ref>`` (once)."""
    folder = work / f"code-{ref}"
    if not (folder / "openviking").is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def run_side(code: Path, store: Path, count: int, embedder: str) -> dict[str, Any]:
    """:func:`measure` in a process whose ``openviking`` is ``code``'s."""
    argv = [sys.executable, "-m", "bench.session_growth", "--measure", str(store), "--code", str(code)]
    argv += ["--messages", str(count), "--embedder", embedder]
    done = subprocess.run(argv, check=True, capture_output=True, text=True, cwd=str(REPO))
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench session-growth", description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="the git commit whose code is measured first (required to compare)")
    parser.add_argument("--messages", type=int, default=2240)
    parser.add_argument("--embedder", choices=("hash", "local"), default="hash")
    parser.add_argument("--work", type=Path, help="work directory (default: a new temp dir)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/session-growth.json"))
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # a side's process: its store
    parser.add_argument("--code", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure is not None:
        sys.path.insert(0, str(args.code))  # before the editable install's finder
        print(json.dumps(measure(args.measure, args.messages, args.embedder)))
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="openviking-bench-growth-"))
    work.mkdir(parents=True, exist_ok=True)
    sides = [(f"before ({args.before})", code_at(args.before, work))] if args.before else []
    sides.append(("now (working tree)", REPO))
    rows = []
    for number, (name, code) in enumerate(sides):
        store = work / f"store-{number}"
        if store.exists():
            import shutil

            shutil.rmtree(store)
        result = run_side(code, store, args.messages, args.embedder)
        rows.append({"side": name, **result})
        print(f"{name}: {json.dumps(result)}", file=sys.stderr, flush=True)
    columns = [*(f"add #{mark} ms" for mark in MARKS), "commit s", "archive s", "neighbours s", "memories s", "load"]
    table = [
        {
            "code": row["side"],
            **{f"add #{mark} ms": row["add_ms"].get(str(mark), "") for mark in MARKS},
            "commit s": row["commit_seconds"],
            "archive s": row["archive_seconds"],
            "neighbours s": row["neighbours_seconds"],
            "memories s": row["memory_write_seconds"],
            "load": row["load"],
        }
        for row in rows
    ]
    print_table(table, ["code", *columns], title=f"one session of {args.messages} messages ({args.embedder} embedder)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    command = "python -m bench session-growth " + " ".join(sys.argv[1:] if argv is None else argv)
    args.out.write_text(json.dumps({"command": command, "sides": rows}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
