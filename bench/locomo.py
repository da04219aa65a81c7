"""LoCoMo, long-term conversations: each session a file, each question searched in its own
conversation; find against bm25s over the whole session files, per question category; and
the same questions over memories made of the turns that hold their evidence.

The corpus is built at run time by ``../shared/data/locomo-dev/build.py`` (one markdown file a
session, its mtime the session's date); nothing of it is copied into the repository.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .metrics import hit_at_1, mrr_at_k, ndcg_at_k, percentile, recall_at_k
from .quality import DATA, bm25s_search, paired_gap

LOCOMO = DATA / "locomo-dev"
ROOT = "viking://resources/locomo"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
METRICS = ("hit@1", "recall@5", "mrr@10", "ndcg@10")
MARGIN_METRICS = ("hit@1", "recall@5", "mrr@10")
BM25S = "bm25s (whole files)"
# A question that names a day, a month or a year: what a session's date should answer.
_DATED = re.compile(
    r"\b(19|20)\d\d\b|\b(January|February|March|April|May|June|July|August|September|October|November|December"
    r"|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\b\.?\s*\d"
)
_EVIDENCE = re.compile(r"D(\d+):(\d+)")


def build(work: Path) -> Path:
    """The session files and ``queries.jsonl``, written once into ``work/locomo``."""
    out = work / "locomo"
    if not (out / "queries.jsonl").exists():
        subprocess.run([sys.executable, str(LOCOMO / "build.py"), str(out)], check=True, capture_output=True)
    return out


def questions(out: Path) -> list[dict[str, Any]]:
    """Each question with an id (``conv-26/q12``), its evidence turns and whether it names a date."""
    items = [json.loads(line) for line in (out / "queries.jsonl").open(encoding="utf-8")]
    evidence = _evidence_turns()
    counters: dict[str, int] = {}
    for item in items:
        number = counters[item["conv"]] = counters.get(item["conv"], 0) + 1
        item["id"] = f"{item['conv']}/q{number}"
        item["evidence"] = evidence[(item["conv"], item["question"])]
        item["dated"] = bool(_DATED.search(item["question"]))
    return items


def _evidence_turns() -> dict[tuple[str, str], list[str]]:
    """(conversation, question) -> the ids of the turns holding its evidence (``D1:3``)."""
    out: dict[tuple[str, str], list[str]] = {}
    for path in sorted((LOCOMO / "conversations").glob("conv-*.json")):
        conv = json.loads(path.read_text(encoding="utf-8"))
        for qa in conv["qa"]:
            turns = [f"D{s}:{t}" for s, t in _EVIDENCE.findall(" ".join(qa.get("evidence") or []))]
            out.setdefault((path.stem, qa["question"]), turns)
    return out


def turns(out: Path) -> dict[str, dict[str, str]]:
    """conversation -> turn id -> the turn as one line of its session's file says it, with the
    session's date in front (``8 May, 2023. Caroline: I went to ...``): a memory an agent keeps."""
    found: dict[str, dict[str, str]] = {}
    line = re.compile(r"^\[(D\d+:\d+)\] (.*)$")
    for path in sorted((out / "corpus").glob("conv-*/session-*.md")):
        lines = path.read_text(encoding="utf-8").splitlines()
        when = lines[2].split(" on ", 1)[-1] if len(lines) > 2 else ""
        for text in lines:
            match = line.match(text)
            if match:
                found.setdefault(path.parent.name, {})[match.group(1)] = f"{when}. {match.group(2)}"
    return found


def session_texts(out: Path, conv: str) -> list[tuple[str, str]]:
    return [(f"{conv}/{p.name}", p.read_text(encoding="utf-8")) for p in sorted((out / "corpus" / conv).glob("*.md"))]


def score(ranked: Sequence[str], relevant: set[str]) -> dict[str, float]:
    grades = dict.fromkeys(relevant, 1.0)
    return {
        "hit@1": hit_at_1(ranked, relevant),
        "recall@5": recall_at_k(ranked, relevant, 5),
        "mrr@10": mrr_at_k(ranked, relevant, 10),
        "ndcg@10": ndcg_at_k(ranked, grades, 10),
    }


def evaluate(system: str, items: list[dict[str, Any]], search: Callable[[dict[str, Any]], list[str]]) -> dict[str, Any]:
    """Per-question metrics of ``search`` (a question -> ranked relative paths) and latencies."""
    by_query: dict[str, dict[str, float]] = {}
    latencies = []
    for item in items:
        started = time.perf_counter()
        ranked = search(item)
        latencies.append(time.perf_counter() - started)
        by_query[item["id"]] = score(ranked, set(item["relevant"]))
    return {"system": system, "by_query": by_query, "latencies": latencies}


def groups(items: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Question ids of the whole set, of each category and of the questions naming a date."""
    out = {"locomo": [i["id"] for i in items]}
    for number, name in CATEGORIES.items():
        out[f"locomo/{number} {name}"] = [i["id"] for i in items if i["category"] == number]
    out["locomo/dated"] = [i["id"] for i in items if i["dated"]]
    return out


def rows(results: list[dict[str, Any]], items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean metrics of each system on each group of questions."""
    out = []
    for name, ids in groups(items).items():
        for result in results:
            row: dict[str, Any] = {"dataset": name, "system": result["system"]}
            for metric in METRICS:
                row[metric] = round(sum(result["by_query"][q][metric] for q in ids) / max(len(ids), 1), 4)
            row["queries"] = len(ids)
            if name == "locomo" and result["latencies"]:
                row["p50_ms"] = round(percentile(result["latencies"], 50) * 1000, 1)
                row["p95_ms"] = round(percentile(result["latencies"], 95) * 1000, 1)
            out.append(row)
    return out


def margins(first: dict[str, Any], second: dict[str, Any], items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``first`` minus ``second`` on each group and metric, with its 95 % paired bootstrap interval."""
    out = []
    for name, ids in groups(items).items():
        for metric in MARGIN_METRICS:
            a = {q: first["by_query"][q][metric] for q in ids}
            b = {q: second["by_query"][q][metric] for q in ids}
            gap = paired_gap(a, b, {q: q for q in ids})
            out.append({"dataset": name, "metric": metric, **gap})
    return out


def run(work: Path, open_client: Callable[[Path], Any], ingest: Callable[..., Any], modes: list[str]) -> dict[str, Any]:
    out = build(work)
    items = questions(out)
    store = work / "store-locomo"
    client = open_client(store)
    stats = ingest(client, out / "corpus", ROOT)
    results = []
    for mode in modes:

        def search(item: dict[str, Any], mode: str = mode) -> list[str]:
            scope = f"{ROOT}/{item['conv']}"
            found = client.find(item["question"], target_uri=scope, limit=10, mode=mode, score_threshold=-1.0)
            return [h.uri[len(ROOT) + 1 :] for h in found.resources]

        results.append(evaluate(f"openviking find --mode {mode}", items, search))
    client.close()
    indexes = {conv: bm25s_search(session_texts(out, conv)) for conv in sorted({i["conv"] for i in items})}
    results.append(evaluate(BM25S, items, lambda item: indexes[item["conv"]](item["question"])))
    report: dict[str, Any] = {"ingest": stats, "rows": rows(results, items)}
    if "hybrid" in modes:
        report["margins"] = margins(results[modes.index("hybrid")], results[-1], items)
        report["memories"] = run_memories(work, store, open_client, out, items)
    report["by_query"] = {r["system"]: r["by_query"] for r in results}
    return report


def run_memories(
    work: Path, store: Path, open_client: Callable[[Path], Any], out: Path, items: list[dict[str, Any]]
) -> dict[str, Any]:
    """Each turn of evidence kept as a memory (category: its conversation), in a copy of the
    sessions' store; each question searched over its conversation's sessions and memories.

    ``memory hit@1``: the memories group's first hit is one of the question's turns.
    ``first hit answers``: the first hit of all is one of its turns or its sessions.
    ``session over memory``: a session not holding the evidence outranks every memory that does.
    """
    copy = work / "store-locomo-memories"
    said = turns(out)
    wanted = {(i["conv"], t) for i in items for t in i["evidence"] if t in said.get(i["conv"], {})}
    client = None
    if not (copy / ".memories-done").exists():
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(store, copy)
        client = open_client(copy)
        started = time.perf_counter()
        for conv, turn in sorted(wanted):
            client.add_memory(said[conv][turn], category=conv)
        (copy / ".memories-done").write_text(f"{time.perf_counter() - started:.1f}\n", encoding="utf-8")
    client = client or open_client(copy)
    from openviking.ingest.memories import memory_uri

    user = client.user
    uri_of = {(conv, turn): str(memory_uri(said[conv][turn], conv, user)[0]) for conv, turn in wanted}
    totals = {"memory hit@1": 0.0, "memory mrr@10": 0.0, "first hit answers": 0.0, "session over memory": 0.0}
    by_category: dict[int, list[float]] = {}
    asked = 0
    for item in items:
        answers = {uri_of[(item["conv"], t)] for t in item["evidence"] if (item["conv"], t) in uri_of}
        if not answers:
            continue
        asked += 1
        sessions = {f"{ROOT}/{path}" for path in item["relevant"]}
        scope = [f"{ROOT}/{item['conv']}", f"viking://user/{user}/memories/{item['conv']}"]
        found = client.find(item["question"], target_uri=scope, limit=10, score_threshold=-1.0)
        memories = [h.uri for h in found.memories]
        everything = sorted([*found.memories, *found.resources], key=lambda h: -h.score)
        hit = hit_at_1(memories, answers)
        totals["memory hit@1"] += hit
        totals["memory mrr@10"] += mrr_at_k(memories, answers, 10)
        totals["first hit answers"] += float(bool(everything) and everything[0].uri in answers | sessions)
        best_memory = max((h.score for h in found.memories if h.uri in answers), default=None)
        intruders = [h.score for h in found.resources if h.uri not in sessions]
        totals["session over memory"] += float(
            bool(intruders) and (best_memory is None or max(intruders) > best_memory)
        )
        by_category.setdefault(item["category"], []).append(hit)
    client.close()
    report: dict[str, Any] = {k: round(v / max(asked, 1), 4) for k, v in totals.items()}
    report["questions"] = asked
    report["memories"] = len(wanted)
    report["memory hit@1 by category"] = {
        f"{n} {CATEGORIES[n]}": round(sum(v) / len(v), 4) for n, v in sorted(by_category.items())
    }
    report["add_memory_seconds"] = float((copy / ".memories-done").read_text(encoding="utf-8"))
    return report
