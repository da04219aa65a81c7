"""Sessions committed and context packed, on LoCoMo-dev played as an agent would: each
conversation's sessions added message by message and committed after each, then every question
asked through ``context`` at three budgets, against bm25s's chunks and find's hits cut to the
same budget, and through the memories group; and the duplicate threshold on hand-written pairs.

Each conversation gets a store and a user of its own (``work/sessions/<conv>``), named after it,
so that its memories never meet another's. Its first speaker is the ``user`` (the one memories
are taken from), the second the ``assistant``; every message of a session is dated to the
session's date. What each commit did is kept in ``played.json`` beside the store, so a run with
the same ``--work`` asks again without playing again. Nothing of LoCoMo is copied here.

A packed text recalls a question when it holds one of its evidence turns: the turn's whole text,
or a contiguous part of it of at least half its characters and at least ``MIN_PART`` (a long
turn cut at the budget's end, a memory quoting the sentence that answers), compared with
whitespace collapsed and case folded.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import locomo
from .metrics import hit_at_1, mrr_at_k, percentile, recall_at_k
from .quality import QUERIES, paired_gap
from .report import print_pairs, print_table

BUDGETS = (1000, 2000, 4000)
SYSTEMS = ("context", "bm25s", "find-cut")
MIN_PART = 60  # characters: a shorter quote of a turn could be any greeting
FIND_LIMIT = 20  # the hits find-cut packs: context's own default
BM25S_DEPTH = 200  # chunks bm25s ranks: more than 4,000 tokens of two-turn chunks
PAIRS = QUERIES / "memory-pairs.jsonl"
_LINES = re.compile(r"\blines (\d+)-(\d+)")
_DIRECTORY = (".abstract.md", ".overview.md")


def open_client(store: Path, user: str) -> Any:
    """The embedded client of ``store`` as ``user``, with the bundled model and no LLM."""
    import openviking as ov
    from openviking.config import config_from_dict

    client = ov.OpenViking(path=str(store), config=config_from_dict({"default_user": user}))
    client.initialize()
    return client


def conversations(only: str | None) -> list[str]:
    """The conversations to play: all five, or those ``only`` names (comma-separated)."""
    known = sorted(p.stem for p in (locomo.LOCOMO / "conversations").glob("conv-*.json"))
    wanted = [name for name in (only or "").split(",") if name] or known
    unknown = sorted(set(wanted) - set(known))
    if unknown:
        raise SystemExit(f"unknown conversation {', '.join(unknown)} (choose from {', '.join(known)})")
    return wanted


def sessions_of(data: dict[str, Any]) -> list[tuple[int, datetime, list[dict[str, str]]]]:
    """Each session with turns, in order: its number, its date (as ``build.py`` reads it), its turns."""
    out = []
    for key, turns in data.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if match and isinstance(turns, list) and turns:
            number = int(match.group(1))
            raw = data[f"session_{number}_date_time"]
            out.append((number, datetime.strptime(raw, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC), turns))
    return sorted(out, key=lambda item: item[0])


def _conversation(conv: str) -> dict[str, Any]:
    return json.loads((locomo.LOCOMO / "conversations" / f"{conv}.json").read_text(encoding="utf-8"))


class ModelCalls:
    """Counts the embedder's ``embed_documents`` calls, texts and seconds (reset per commit)."""

    def __init__(self, embedder: Any) -> None:
        self.calls = self.texts = 0
        self.seconds = 0.0
        original = embedder.embed_documents

        def counted(texts: list[str]) -> Any:
            started = time.perf_counter()
            try:
                return original(texts)
            finally:
                self.calls += 1
                self.texts += len(texts)
                self.seconds += time.perf_counter() - started

        embedder.embed_documents = counted

    def taken(self) -> dict[str, Any]:
        """What was counted since the last call, then zero again."""
        out = {"embed_calls": self.calls, "embed_texts": self.texts, "embed_seconds": round(self.seconds, 3)}
        self.calls = self.texts = 0
        self.seconds = 0.0
        return out


class CommitParts:
    """Seconds of a commit's parts, by wrapping what ``committing`` calls: the archive's write
    (its first ``write_documents``), the stored neighbours of each memory (``_neighbours``, which
    embeds their statements again), and the memories' write."""

    def __init__(self) -> None:
        from openviking.ingest import session_commit as committing

        self.writes: list[float] = []
        self.neighbours = 0.0
        write, near = committing.write_documents, committing._neighbours

        def timed_write(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return write(*args, **kwargs)
            finally:
                self.writes.append(time.perf_counter() - started)

        def timed_near(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return near(*args, **kwargs)
            finally:
                self.neighbours += time.perf_counter() - started

        committing.write_documents, committing._neighbours = timed_write, timed_near
        self._originals = (write, near)

    def close(self) -> None:
        from openviking.ingest import session_commit as committing

        committing.write_documents, committing._neighbours = self._originals

    def taken(self) -> dict[str, float]:
        """The parts since the last call, then zero again."""
        archive, memories = (self.writes + [0.0, 0.0])[:2]
        out = {
            "archive_seconds": round(archive, 3),
            "neighbours_seconds": round(self.neighbours, 3),
            "memory_write_seconds": round(memories, 3),
        }
        self.writes, self.neighbours = [], 0.0
        return out


def play(work: Path, conv: str) -> dict[str, Any]:
    """Every session of ``conv`` added in order and committed after each, timed; what each
    commit archived and remembered, with each memory's source turns (read from ``played.json``
    when a run with this ``--work`` played it already)."""
    folder = work / "sessions" / conv
    done = folder / "played.json"
    if done.exists():
        return json.loads(done.read_text(encoding="utf-8"))
    shutil.rmtree(folder, ignore_errors=True)  # a run killed while playing: start the conversation again
    data = _conversation(conv)
    client = open_client(folder / "store", conv)
    model, parts = ModelCalls(client.embedder()), CommitParts()
    turn_of: dict[str, str] = {}
    played = []
    load = [os.getloadavg()[0]]
    for number, when, turns in sessions_of(data):
        session_id = f"session-{number}"
        started = time.perf_counter()
        for turn in turns:
            role = "user" if turn["speaker"] == data["speaker_a"] else "assistant"
            added = client.add_message(session_id, role, turn["text"], created_at=when.isoformat())
            turn_of[added.message.id] = turn["dia_id"]
        adding = time.perf_counter() - started
        model.taken()  # what adding the messages embedded (nothing) is not the commit's
        parts.taken()
        started = time.perf_counter()
        result = client.commit_session(session_id)
        seconds = time.perf_counter() - started
        load.append(os.getloadavg()[0])
        played.append(
            {
                "session": session_id,
                "date": when.isoformat(),
                "messages": len(turns),
                "user_messages": sum(turn["speaker"] == data["speaker_a"] for turn in turns),
                "add_seconds": round(adding, 3),
                "commit_seconds": round(seconds, 3),
                **model.taken(),
                **parts.taken(),
                "archive": result.archive_uri,
                "archived": result.messages_archived,
                "counts": dict(result.memories_extracted),
                "memories": [
                    {"uri": m.uri, "action": m.action, "reason": m.reason, "text": m.text, "category": m.category,
                     "topic": m.topic, "superseded_by": m.superseded_by, "turns": [turn_of.get(i, i) for i in m.source]}
                    for m in result.memories
                ],
                "summary": result.summary,
            }
        )  # fmt: skip
        print(
            f"{conv} {session_id}: {len(turns)} messages, commit {seconds:.2f} s, {result.memories_extracted}",
            flush=True,
        )
    parts.close()
    client.close()
    report = {"conv": conv, "user": conv, "sessions": played, "load": load}
    done.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return report


# ------------------------------------------------------------------------ recall of a packed text


def normalised(text: str) -> str:
    return " ".join(text.split()).casefold()


def holds(packed: str, turn: str) -> bool:
    """True when ``packed`` holds ``turn`` (both normalised): whole, or a contiguous part of at
    least half of it and at least ``MIN_PART`` characters."""
    if turn in packed:
        return True
    part = max(MIN_PART, (len(turn) + 1) // 2)
    if len(turn) <= part:
        return False
    return any(turn[start : start + part] in packed for start in range(len(turn) - part + 1))


def recalled(packed: str, evidence: list[str], strict: bool = False) -> float:
    text = normalised(packed)
    if strict:
        return float(any(turn in text for turn in evidence))
    return float(any(holds(text, turn) for turn in evidence))


def cut_to_budget(pieces: Iterable[str], budget: int) -> tuple[str, int]:
    """``pieces`` in order while they fit in ``budget`` tokens, the first that does not cut to fit."""
    from openviking.models.tokens import count_tokens, cut_to_tokens

    out, used = [], 0
    for text in pieces:
        tokens = count_tokens(text)
        if used + tokens > budget:
            if budget - used > 0:
                cut = cut_to_tokens(text, budget - used)
                out.append(cut)
                used += count_tokens(cut)
            break
        out.append(text)
        used += tokens
    return "\n".join(out), used


# ------------------------------------------------------------------------ the peers


def bm25s_chunks(client: Any, archives: list[str]) -> Callable[[str], list[str]]:
    """bm25s over the archived transcripts cut by the tool's own chunker (a turn and the one
    before it, up to 300 characters: the records find searches), each chunk indexed with its
    heading as the store indexes it; a question gets the chunks' lines best first, each line of
    a transcript given once (consecutive chunks share a turn)."""
    import bm25s
    import Stemmer

    from openviking.ingest.chunk import chunk_text, text_lines

    chunks: list[tuple[str, int, int, str]] = []  # (archive, first line, last line, indexed text)
    lines: dict[str, list[str]] = {}
    for uri in archives:
        text = client.read(uri)
        lines[uri] = text_lines(text)
        for chunk in chunk_text(text, uri.rsplit("/", 1)[-1]):
            indexed = chunk.heading + "\n" + chunk.text if chunk.heading else chunk.text
            chunks.append((uri, chunk.line_start, chunk.line_end, indexed))
    stemmer = Stemmer.Stemmer("english")  # as bench/quality.py's bm25s_search
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize([c[3] for c in chunks], stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )

    def pieces(question: str) -> list[str]:
        tokens = bm25s.tokenize([question], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        found, _ = retriever.retrieve(tokens, k=min(BM25S_DEPTH, len(chunks)), show_progress=False)
        given: set[tuple[str, int]] = set()
        out = []
        for index in found[0]:
            uri, first, last, _ = chunks[int(index)]
            new = [n for n in range(first, last + 1) if (uri, n) not in given and lines[uri][n - 1].strip()]
            given.update((uri, n) for n in range(first, last + 1))
            if new:
                out.append("\n".join(lines[uri][n - 1] for n in new))
        return out

    return pieces


def find_pieces(client: Any, found: Any) -> list[str]:
    """find's hits best first, each as its matched lines (``lines a-b`` of its match reason) or,
    without lines, its abstract."""
    out = []
    for hit in sorted(found, key=lambda h: -h.score):
        lines = _LINES.search(hit.match_reason or "")
        if lines is None:
            text = hit.abstract or ""
        else:
            first, last = int(lines.group(1)), int(lines.group(2))
            text = client.read(hit.uri, first - 1, last - first + 1)
        if text.strip():
            out.append(text.strip())
    return out


def _kind(uri: str) -> str:
    if uri.endswith(_DIRECTORY):
        return "directory"
    return "memory" if "/memories/" in uri else "transcript"


# ------------------------------------------------------------------------ asking


def _memory_turns(played: dict[str, Any]) -> dict[str, set[str]]:
    """Each memory's URI and the turns it holds: a merged or skipped memory names the stored one
    it says again, which holds it too; a superseded one's turns go with its text to the memory
    that supersedes it."""
    memory_turns: dict[str, set[str]] = {}
    for session in played["sessions"]:
        for memory in session["memories"]:
            if memory["action"] == "superseded" and memory.get("superseded_by"):
                held = memory_turns.pop(memory["uri"], set())
                memory_turns.setdefault(memory["superseded_by"], set()).update(held)
                continue
            memory_turns.setdefault(memory["uri"], set()).update(memory["turns"])
    return memory_turns


def ask(work: Path, played: dict[str, Any], items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every question of the conversation through context, bm25s, find-cut and the memories group."""
    conv = played["conv"]
    data = _conversation(conv)
    said = {t["dia_id"]: normalised(t["text"]) for _, _, turns in sessions_of(data) for t in turns}
    memory_turns = _memory_turns(played)
    client = open_client(work / "sessions" / conv / "store", played["user"])
    scope = f"viking://user/{played['user']}"
    bm25s = bm25s_chunks(client, [s["archive"] for s in played["sessions"] if s["archive"]])
    out = []
    for item in items:
        evidence = [said[t] for t in item["evidence"] if t in said]
        question = item["question"]
        row: dict[str, Any] = {"id": item["id"], "category": item["category"], "evidence": len(evidence)}
        for budget in BUDGETS:
            started = time.perf_counter()
            packed = client.context(question, target_uri=scope, budget=budget)
            row[f"context_ms@{budget}"] = round((time.perf_counter() - started) * 1000, 1)
            texts = [entry.text for entry in packed.entries]
            row[f"context@{budget}"] = recalled("\n".join(texts), evidence)
            row[f"context_strict@{budget}"] = recalled("\n".join(texts), evidence, strict=True)
            row[f"context_tokens@{budget}"] = packed.used_tokens
            # A memory taken from an evidence turn holds that evidence, in the words of a memory.
            sourced = [e for e in packed.entries if memory_turns.get(e.uri, set()) & set(item["evidence"])]
            row[f"memory_sourced@{budget}"] = float(bool(sourced))
            row[f"context_sourced@{budget}"] = max(row[f"context@{budget}"], float(bool(sourced)))
            for kind in ("transcript", "memory", "directory"):
                mine = [entry for entry in packed.entries if _kind(entry.uri) == kind]
                row[f"{kind}_tokens@{budget}"] = sum(entry.tokens for entry in mine)
                row[f"{kind}_recall@{budget}"] = recalled("\n".join(entry.text for entry in mine), evidence)
        found = client.find(question, target_uri=scope, limit=FIND_LIMIT)
        peers = {"bm25s": bm25s(question), "find-cut": find_pieces(client, found)}
        for name, pieces in peers.items():
            for budget in BUDGETS:
                text, used = cut_to_budget(pieces, budget)
                row[f"{name}@{budget}"] = recalled(text, evidence)
                row[f"{name}_strict@{budget}"] = recalled(text, evidence, strict=True)
                row[f"{name}_tokens@{budget}"] = used
        memories = client.find(question, target_uri=f"{scope}/memories", limit=10)
        ranked = [hit.uri for hit in memories.memories]
        relevant = {uri for uri, turns in memory_turns.items() if turns & set(item["evidence"])}
        row["memory_relevant"] = len(relevant)
        row["memory_directories@10"] = sum(_kind(uri) == "directory" for uri in ranked[:10])
        if relevant:
            row["memory_hit@1"] = hit_at_1(ranked, relevant)
            row["memory_recall@5"] = recall_at_k(ranked, relevant, 5)
            row["memory_mrr@10"] = mrr_at_k(ranked, relevant, 10)
        out.append(row)
    client.close()
    return out


# ------------------------------------------------------------------------ the duplicate threshold


def duplicate_pairs() -> dict[str, Any]:
    """Cosine similarity of each hand-written pair's statements as a commit compares two memories
    (the bundled model, ``memory_statement``), the two distributions, and what each threshold
    merges."""
    import numpy as np

    from openviking.ingest.session_commit import DUPLICATE_SIMILARITY
    from openviking.models.embedder import LocalE5Embedder
    from openviking.session.extracting import memory_statement

    pairs = [json.loads(line) for line in PAIRS.open(encoding="utf-8")]
    model = LocalE5Embedder()
    first = model.embed_documents([memory_statement(p["a"]) for p in pairs])
    second = model.embed_documents([memory_statement(p["b"]) for p in pairs])
    for pair, a, b in zip(pairs, first, second, strict=True):
        pair["cosine"] = round(float(np.dot(a, b)), 4)
    same = sorted(p["cosine"] for p in pairs if p["same"])
    other = sorted(p["cosine"] for p in pairs if not p["same"])

    def merges(threshold: float) -> dict[str, Any]:
        return {
            "threshold": threshold,
            "duplicates_merged": sum(c >= threshold for c in same),
            "different_merged": sum(c >= threshold for c in other),
        }

    spread = {
        "pairs": len(pairs),
        "same": len(same),
        "different": len(other),
        "same_cosine": [same[0], round(percentile(same, 50), 4), same[-1]],
        "different_cosine": [other[0], round(percentile(other, 50), 4), other[-1]],
        "separating_range": [other[-1], same[0]] if other[-1] < same[0] else None,
        "at_current": merges(DUPLICATE_SIMILARITY),
        "lowest_without_false_merge": merges(round(other[-1] + 0.0001, 4)),
        "highest_merging_every_duplicate": merges(same[0]),
        "thresholds": [merges(t) for t in (0.95, 0.96, 0.965, 0.97, 0.975, 0.98, 0.985, 0.99)],
        "different_above_current": [
            f"{p['cosine']}: {p['a']} / {p['b']}"
            for p in pairs
            if not p["same"] and p["cosine"] >= DUPLICATE_SIMILARITY
        ],
        "by_pair": pairs,
    }
    return spread


# ------------------------------------------------------------------------ the report


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else float("nan")


def recall_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for budget in BUDGETS:
        for system in SYSTEMS:
            out.append(
                {
                    "budget": budget,
                    "system": system,
                    "recall": _mean([r[f"{system}@{budget}"] for r in rows]),
                    "whole_turn": _mean([r[f"{system}_strict@{budget}"] for r in rows]),
                    "memories_by_source": _mean(
                        [r.get(f"{system}_sourced@{budget}", r[f"{system}@{budget}"]) for r in rows]
                    ),  # fmt: skip
                    "tokens": round(sum(r[f"{system}_tokens@{budget}"] for r in rows) / len(rows)),
                    "questions": len(rows),
                }
            )
    return out


def gap_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """context minus each peer at each budget, 95 % paired bootstrap over the questions."""
    out = []
    ids = {r["id"]: r["id"] for r in rows}
    for budget in BUDGETS:
        context = {r["id"]: r[f"context@{budget}"] for r in rows}
        for peer in SYSTEMS[1:]:
            gap = paired_gap(context, {r["id"]: r[f"{peer}@{budget}"] for r in rows}, ids)
            out.append({"budget": budget, "versus": peer, **gap})
        sourced = {r["id"]: r[f"context_sourced@{budget}"] for r in rows}
        gap = paired_gap(sourced, {r["id"]: r[f"bm25s@{budget}"] for r in rows}, ids)
        out.append({"budget": budget, "versus": "bm25s, memories by source", **gap})
    return out


def category_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for number, name in locomo.CATEGORIES.items():
        mine = [r for r in rows if r["category"] == number]
        for budget in BUDGETS:
            row: dict[str, Any] = {"category": f"{number} {name}", "budget": budget, "questions": len(mine)}
            for system in SYSTEMS:
                row[system] = _mean([r[f"{system}@{budget}"] for r in mine])
            out.append(row)
    return out


def part_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What context's tokens went to, and which part held the evidence."""
    out = []
    for budget in BUDGETS:
        row: dict[str, Any] = {"budget": budget}
        for kind in ("transcript", "memory", "directory"):
            row[f"{kind}_tokens"] = round(sum(r[f"{kind}_tokens@{budget}"] for r in rows) / len(rows))
            row[f"{kind}_recall"] = _mean([r[f"{kind}_recall@{budget}"] for r in rows])
        row["memory_by_source"] = _mean([r[f"memory_sourced@{budget}"] for r in rows])
        row["context_p50_ms"] = round(percentile([r[f"context_ms@{budget}"] for r in rows], 50), 1)
        out.append(row)
    return out


def memory_report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    asked = [r for r in rows if r["memory_relevant"]]
    report: dict[str, Any] = {
        "questions": len(rows),
        "with_a_relevant_memory": len(asked),
        "share whose evidence a memory holds": round(len(asked) / len(rows), 3),
    }
    for metric in ("hit@1", "recall@5", "mrr@10"):
        report[metric] = _mean([r[f"memory_{metric}"] for r in asked])
    for number, name in locomo.CATEGORIES.items():
        mine = [r for r in asked if r["category"] == number]
        report[f"hit@1 {number} {name}"] = f"{_mean([r['memory_hit@1'] for r in mine])} ({len(mine)})"
    report["directory hits in the first 10"] = round(sum(r["memory_directories@10"] for r in rows) / len(rows), 2)
    return report


def session_rows(played: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per conversation and in all: messages, memories per session, commit seconds."""
    out = []
    groups = [(p["conv"], p["sessions"]) for p in played]
    groups.append(("all", [s for p in played for s in p["sessions"]]))
    for name, sessions in groups:
        seconds = [s["commit_seconds"] for s in sessions]
        counts = {k: sum(s["counts"].get(k, 0) for s in sessions) for k in ("created", "merged", "skipped")}
        out.append(
            {
                "conv": name,
                "sessions": len(sessions),
                "messages": sum(s["messages"] for s in sessions),
                "user_messages": sum(s["user_messages"] for s in sessions),
                **counts,
                "memories/session": round(sum(counts.values()) / len(sessions), 1),
                "created/session": round(counts["created"] / len(sessions), 1),
                "commit_p50_s": round(percentile(seconds, 50), 2),
                "commit_p95_s": round(percentile(seconds, 95), 2),
                "commit_total_s": round(sum(seconds), 1),
                "commit_embed_s": round(sum(s["embed_seconds"] for s in sessions), 1),
                "archive_s": round(sum(s["archive_seconds"] for s in sessions), 1),
                "neighbours_s": round(sum(s["neighbours_seconds"] for s in sessions), 1),
                "memory_write_s": round(sum(s["memory_write_seconds"] for s in sessions), 1),
                "commit_embed_calls": sum(s["embed_calls"] for s in sessions),
                "add_message_s": round(sum(s["add_seconds"] for s in sessions), 1),
            }
        )
    return out


def merged_examples(played: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every memory a commit merged into another, with the text it was merged into."""
    memories = [m for p in played for s in p["sessions"] for m in s["memories"]]
    texts = {m["uri"]: m["text"] for m in memories if m["action"] == "created"}
    out = []
    for p in played:
        for session in p["sessions"]:
            for memory in session["memories"]:
                if memory["action"] == "merged":
                    out.append(
                        {
                            "conv": p["conv"],
                            "session": session["session"],
                            "text": memory["text"],
                            "into": texts.get(memory["uri"], memory["uri"]),
                            "reason": memory["reason"],
                        }
                    )
    return out


def run(work: Path, only: str | None = None) -> dict[str, Any]:
    from . import passing

    sets = {"passing": ["dev", "held-out"], "passing-dev": ["dev"]}
    chosen = [name for name in (only or "").split(",") if name]
    told = [s for name in chosen if name in sets for s in sets[name]] if chosen else ["dev", "held-out"]
    report: dict[str, Any] = {"passing": passing.run(work, told)}
    locomo_only = ",".join(name for name in chosen if name not in sets)
    if chosen and not locomo_only:
        return report
    return {**report, **run_locomo(work, locomo_only or None)}


def run_locomo(work: Path, only: str | None = None) -> dict[str, Any]:
    names = conversations(only)
    out = locomo.build(work)
    items = [item for item in locomo.questions(out) if item["conv"] in names]
    report: dict[str, Any] = {"threshold": duplicate_pairs(), "load": {"start": os.getloadavg()[0]}}
    played = [play(work, conv) for conv in names]
    report["load"]["played"] = max(load for p in played for load in p["load"])
    rows = []
    for conv, game in zip(names, played, strict=True):
        rows += ask(work, game, [item for item in items if item["conv"] == conv])
    report["load"]["asked"] = os.getloadavg()[0]
    report["recall"] = recall_rows(rows)
    report["gaps"] = gap_rows(rows)
    report["by_category"] = category_rows(rows)
    report["parts"] = part_rows(rows)
    report["memories"] = memory_report(rows)
    report["sessions"] = session_rows(played)
    report["merged"] = merged_examples(played)
    report["played"] = played
    report["by_query"] = rows
    return report


def print_report(report: dict[str, Any]) -> None:
    from . import passing

    passing.print_report(report["passing"])
    if "recall" not in report:
        return
    print_table(
        report["recall"],
        ["budget", "system", "recall", "whole_turn", "memories_by_source", "tokens", "questions"],
        title="Evidence recall of the packed context against bm25s's chunks and find's hits cut to the budget",
    )
    print_table(
        report["gaps"],
        ["budget", "versus", "questions", "gap", "gap_95", "first_better", "second_better", "same"],
        title="context minus each peer, 95 % paired bootstrap",
    )
    print_table(report["by_category"], ["category", "budget", "questions", *SYSTEMS], title="Recall by category")
    parts = ["budget"] + [f"{k}_{m}" for k in ("transcript", "memory", "directory") for m in ("tokens", "recall")]
    print_table(report["parts"], [*parts, "memory_by_source", "context_p50_ms"], title="What context's tokens went to")
    print_pairs("Memories group: find over viking://user/<conv>/memories, limit 10", report["memories"])
    print_table(report["sessions"], list(report["sessions"][0]), title="Sessions played and committed")
    print(f"\n{len(report['merged'])} memories merged into another; the first 15:")
    for example in report["merged"][:15]:
        print(f"  {example['text']!r}\n    into {example['into'].strip()!r} ({example['reason']})")
    threshold = {k: v for k, v in report["threshold"].items() if k not in ("by_pair", "thresholds")}
    print_pairs("Duplicate threshold on bench/queries/memory-pairs.jsonl", threshold)
    print_table(
        report["threshold"]["thresholds"], ["threshold", "duplicates_merged", "different_merged"], title="By threshold"
    )
    print_pairs("Load average (1 min)", report["load"])
