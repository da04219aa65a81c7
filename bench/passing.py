"""Facts told in passing: each of a set's short conversations (a fact among small talk, after a
lead-in or before an aside to the assistant) added as a session and committed, offline, into
one store; then each fact's questions (several phrasings) asked with ``find`` over the user's
space. A memory **holds** a fact when it names each of its words (whole words, case folded).

Per set: the facts a memory holds after the commits, those filed in a fitting category (a fact
lists the categories that fit it), and the questions whose first memory (find's memories group)
holds the fact, and whose first hit of all (transcripts included) does. ``passing-dev.jsonl``
is what extraction was developed on; ``passing-heldout.jsonl``, of the same kind, only checks it.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from .quality import QUERIES

SETS = {"dev": QUERIES / "passing-dev.jsonl", "held-out": QUERIES / "passing-heldout.jsonl"}


def holds(text: str, fact: list[str]) -> bool:
    """True when ``text`` names every word of ``fact``."""
    return all(re.search(r"(?<!\w)" + re.escape(word.lower()) + r"(?!\w)", text.lower()) for word in fact)


def run_set(work: Path, name: str) -> dict[str, Any]:
    """One set committed into a store of its own, and its questions asked."""
    import openviking as ov
    from openviking.config import Config

    items = [json.loads(line) for line in SETS[name].open(encoding="utf-8")]
    folder = work / "passing" / name
    shutil.rmtree(folder, ignore_errors=True)
    client = ov.OpenViking(path=str(folder / "store"), config=Config())
    client.initialize()
    rows: list[dict[str, Any]] = []
    commit_seconds = []
    memories = 0
    for item in items:
        said = datetime.fromisoformat(item["said"].replace("Z", "+00:00"))
        for role, text in item["turns"]:
            client.add_message(item["id"], role, text, created_at=said.isoformat())
        started = time.perf_counter()
        result = client.commit_session(item["id"])
        commit_seconds.append(time.perf_counter() - started)
        kept = [m for m in result.memories if m.action in ("created", "merged", "skipped")]
        memories += sum(m.action == "created" for m in kept)
        holding = [m for m in kept if holds(m.text, item["fact"])]
        rows.append(
            {
                "id": item["id"],
                "kept": bool(holding),
                "fitting": bool(holding) and holding[0].category in item["category"],
                "category": holding[0].category if holding else "",
                "topic": getattr(holding[0], "topic", "") if holding else "",  # a baseline without topics
                "memory": holding[0].text.split("\n")[0] if holding else "",
                "memories": [m.text.split("\n")[0] for m in kept],
                "questions": [],
            }
        )
    for item, row in zip(items, rows, strict=True):
        for question in item["questions"]:
            group = client.find(question, target_uri="viking://user/memories", limit=5).memories
            first = group[0] if group else None
            found = client.find(question, limit=10)
            everything = sorted([*found.memories, *found.resources, *found.skills], key=lambda hit: -hit.score)
            first_memory = bool(first) and holds(client.read(first.uri), item["fact"])
            top = everything[0].uri if everything else ""
            first_hit = "/memories/" in top and holds(client.read(top), item["fact"])
            row["questions"].append(
                {"question": question, "first_memory": first_memory, "first_hit": first_hit,
                 "got": first.abstract.split("\n")[0] if first else ""}
            )  # fmt: skip
    client.close()
    asked = [q for row in rows for q in row["questions"]]
    return {
        "set": name,
        "facts": len(rows),
        "kept": sum(row["kept"] for row in rows),
        "fitting": sum(row["fitting"] for row in rows),
        "questions": len(asked),
        "first_memory": sum(q["first_memory"] for q in asked),
        "first_hit": sum(q["first_hit"] for q in asked),
        "memories_per_conversation": round(memories / len(rows), 2),
        "commit_p50_s": round(sorted(commit_seconds)[len(commit_seconds) // 2], 2),
        "rows": rows,
    }


def run(work: Path, names: list[str]) -> list[dict[str, Any]]:
    return [run_set(work, name) for name in names]


def summary_rows(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for report in reports:
        facts, asked = report["facts"], report["questions"]
        out.append(
            {
                "set": report["set"],
                "facts": facts,
                "kept": f"{report['kept'] / facts:.3f} ({report['kept']})",
                "fitting category": f"{report['fitting'] / facts:.3f} ({report['fitting']})",
                "questions": asked,
                "first memory holds it": f"{report['first_memory'] / asked:.3f} ({report['first_memory']})",
                "first hit holds it": f"{report['first_hit'] / asked:.3f} ({report['first_hit']})",
                "memories/conversation": report["memories_per_conversation"],
                "commit p50 s": report["commit_p50_s"],
            }
        )
    return out


def print_report(reports: list[dict[str, Any]], verbose: bool = True) -> None:
    from .report import print_table

    rows = summary_rows(reports)
    print_table(rows, list(rows[0]), title="Facts told in passing: kept, filed, found first (offline)")
    if not verbose:
        return
    for report in reports:
        for row in report["rows"]:
            missed = [q for q in row["questions"] if not q["first_memory"]]
            if row["kept"] and row["fitting"] and not missed:
                continue
            print(f"\n{report['set']} {row['id']}: kept={row['kept']} category={row['category']} ({row['topic']}) "
                  f"{row['memory']!r}")  # fmt: skip
            if not row["kept"]:
                print("   memories:", row["memories"])
            for question in missed:
                print(f"   missed {question['question']!r}: first memory {question['got']!r}")
