"""Searchable at once, vectors behind: how soon an add answers, and what it answers with.

* first answer: ``openviking add-resource DOCS --background`` then ``openviking find`` (two
  fresh processes) against bm25s indexing and answering the same files as one process, run
  alternately on upstream's docs/en; then (once) how long until every vector is in;
* quality: nDCG@10 of the docs sets with only the first phase landed (text, full-text index,
  summaries: no vector yet) and with every vector in;
* fill: writing the vectors of 192 waiting records at a time into a 10,000-record table with
  ``merge_insert`` (one commit a batch) against ``update`` (one call, and commit, a record);
* server: a find's latency over HTTP while the server's indexer embeds an add that did not
  wait, against the same finds once it is done.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .metrics import percentile
from .procs import compile_bytecode
from .quality import DOCS, docs_queries, evaluate

DOCS_URI = "viking://resources/docs"
# The docs sets whose answers are in the English docs (those of the Chinese docs, docs-zh and
# docs-en-zh, would double the embedding on machines where it takes most of the run).
DOC_SETS = {"docs-en": "en", "docs-zh2en": "en", "docs-zh2en-pure": "en"}


def _cli(args: list[str]) -> tuple[float, Any]:
    """``openviking ARGS -o json`` as a fresh process: its wall seconds and its result."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "openviking_cli", *args, "-o", "json"], check=True, capture_output=True, text=True
    )
    return time.perf_counter() - started, json.loads(done.stdout)["result"]


def _bm25s(question: str) -> tuple[float, list[str]]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bench.bm25s_process", str(DOCS / "en"), question],
        check=True,
        capture_output=True,
        text=True,
    )
    return time.perf_counter() - started, json.loads(done.stdout)["top"]


def _top(result: dict[str, Any]) -> list[str]:
    hits = sorted([*result["memories"], *result["resources"], *result["skills"]], key=lambda h: -h["score"])
    return ["en/" + h["uri"][len(DOCS_URI) + 1 :] for h in hits if h["uri"].startswith(DOCS_URI + "/")]


def first_answer(work: Path, runs: int = 3) -> dict[str, Any]:
    """Alternately per question: bm25s's process, then ``add-resource --background`` and a find
    (two processes) on a fresh store. The background index is then killed (SIGKILL), and in the
    first run ``openviking index`` makes what it left, in the foreground: the time until every
    vector is in (the background index runs niced, behind everything else on the machine, so its
    own time says more of the load than of openviking)."""
    compile_bytecode()
    questions = docs_queries("docs-en")[:runs]
    rows = []
    for number, (_qid, question, relevant) in enumerate(questions):
        bm25s_seconds, bm25s_top = _bm25s(question)
        store = work / f"live-store-{number}"
        shutil.rmtree(store, ignore_errors=True)
        started = time.perf_counter()
        add = ["add-resource", str(DOCS / "en"), "--to", DOCS_URI, "--store", str(store), "--background"]
        add_seconds, added = _cli(add)
        find_seconds, found = _cli(["find", question, "-u", DOCS_URI, "--store", str(store)])
        first = time.perf_counter() - started
        with contextlib.suppress(ProcessLookupError):
            os.kill(added["background"]["pid"], signal.SIGKILL)
        top = _top(found)
        row = {
            "question": question,
            "bm25s_s": round(bm25s_seconds, 2),
            "bm25s_right": bool(bm25s_top) and bm25s_top[0] in relevant,
            "add_background_s": round(add_seconds, 2),
            "find_s": round(find_seconds, 2),
            "first_answer_s": round(first, 2),
            "openviking_right": bool(top) and top[0] in relevant,
            "pending_at_find": found["pending_vectors"],
            "ratio_to_bm25s": round(first / bm25s_seconds, 1),
            "records": added["pending_vectors"],
        }
        if number == 0:
            _, indexed = _cli(["index", "--store", str(store)])
            row["every_vector_in_s"] = round(time.perf_counter() - started, 1)
            row["embedded_by_index"] = indexed["records_embedded"]
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
        shutil.rmtree(store, ignore_errors=True)
    return {"runs": rows}


def quality_by_phase(work: Path) -> list[dict[str, Any]]:
    """nDCG@10 of each docs set (find, hybrid) with the text alone, then with every vector."""
    import openviking as ov

    store = work / "live-store-quality"
    shutil.rmtree(store, ignore_errors=True)
    client = ov.OpenViking(path=str(store))
    client.add_resource(DOCS / "en", to="viking://resources/en", wait=False)
    rows = []
    for phase in ("text only (first phase)", "every vector in"):
        if phase == "every vector in":
            client.index()
        for name, scope in DOC_SETS.items():
            prefix = f"viking://resources/{scope}/"

            def search(text: str, prefix: str = prefix, scope: str = scope) -> list[str]:
                found = client.find(text, target_uri=prefix.rstrip("/"), limit=10, score_threshold=-1.0)
                return [f"{scope}/" + h.uri[len(prefix) :] for h in found]

            row = evaluate(f"find, {phase}", name, docs_queries(name), search).row()
            row.pop("ndcg_by_query", None)
            rows.append(row)
    client.close()
    return rows


def fill_cost(records: int = 10_000, batch: int = 192, batches: int = 10) -> dict[str, Any]:
    """Milliseconds to give ``batch`` waiting records their vectors in a ``records``-record
    table: one ``merge_insert`` of the changed columns, or one ``update`` a record."""
    import lancedb
    import numpy as np
    import pyarrow as pa
    from lancedb.index import FTS, BTree

    dim = 384
    rng = np.random.default_rng(0)

    def table() -> Any:
        db = lancedb.connect(tempfile.mkdtemp(prefix="ov-fill-"))
        schema = pa.schema(
            [
                pa.field("id", pa.string(), nullable=False),
                pa.field("uri", pa.string()),
                pa.field("text", pa.large_string()),
                pa.field("text_hash", pa.string()),
                pa.field("vector", pa.list_(pa.float32(), dim)),
                pa.field("vector_pending", pa.bool_()),
                pa.field("embed_input", pa.large_string()),
            ]
        )
        data = pa.table(
            {
                "id": [f"{i:08d}" for i in range(records)],
                "uri": [f"viking://resources/d/{i // 10}.md" for i in range(records)],
                "text": [f"some text number {i} " * 30 for i in range(records)],
                "text_hash": [str(i) for i in range(records)],
                "vector": pa.nulls(records, pa.list_(pa.float32(), dim)),
                "vector_pending": [True] * records,
                "embed_input": [f"input {i} " * 30 for i in range(records)],
            },
            schema=schema,
        )
        made = db.create_table("records", schema=schema)
        made.add(data, on_bad_vectors="null")
        made.create_index("text", config=FTS())
        made.create_index("uri", config=BTree())
        return made

    merged = table()
    started = time.perf_counter()
    for start in range(0, batches * batch, batch):
        ids = [f"{i:08d}" for i in range(start, start + batch)]
        vectors = rng.standard_normal((batch, dim)).astype(np.float32)
        source = pa.table(
            {
                "id": ids,
                "text_hash": [str(int(i)) for i in ids],
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim),
                "vector_pending": [False] * batch,
                "embed_input": pa.nulls(batch, pa.large_string()),
            }
        )
        merged.merge_insert("id").when_matched_update_all(
            where="target.text_hash = source.text_hash AND target.vector_pending"
        ).execute(source)
    merge_ms = (time.perf_counter() - started) / batches * 1000
    updated = table()
    slow_batches = 2
    started = time.perf_counter()
    for start in range(0, slow_batches * batch, batch):
        for i in range(start, start + batch):
            vector = rng.standard_normal(dim).astype(np.float32).tolist()
            updated.update(
                where=f"id = '{i:08d}' AND text_hash = '{i}'",
                values={"vector": vector, "vector_pending": False, "embed_input": None},
            )
    update_ms = (time.perf_counter() - started) / slow_batches * 1000
    return {
        "records": records,
        "batch": batch,
        "merge_insert_ms_per_batch": round(merge_ms, 1),
        "update_ms_per_batch": round(update_ms, 1),
        "update_over_merge_insert": round(update_ms / merge_ms, 1),
        "versions_written_by_update": len(updated.list_versions()),
    }


def server_latency(work: Path, finds: int = 40) -> dict[str, Any]:
    """find over HTTP while ``openviking serve`` embeds docs/en added with ``wait: false``,
    then the same finds once every vector is in (p50/p95, and the records waiting meanwhile)."""
    import httpx

    from .server import _env, _start_server

    store, home = work / "live-store-server", work / "live-home"
    shutil.rmtree(store, ignore_errors=True)
    home.mkdir(parents=True, exist_ok=True)
    conf = home / "ov.conf"
    conf.write_text("{}\n")
    proc, url = _start_server(store, conf, _env(home), work / "live-server.log")
    questions = [q for _, q, _ in docs_queries("docs-en")]
    try:
        with httpx.Client(base_url=url, timeout=300) as http:
            added = http.post("/api/v1/resources", json={"path": str(DOCS / "en"), "to": DOCS_URI, "wait": False})
            added.raise_for_status()

            def timed(count: int, until_batches: int = 0) -> tuple[list[float], list[int]]:
                """``count`` finds, or (``until_batches``) finds until that many batches of vectors
                have landed since the first, at most 10 times ``count``."""
                seconds: list[float] = []
                waiting: list[int] = []
                number = 0
                while number < count or until_batches and len(set(waiting)) <= until_batches:
                    if number >= 10 * count:
                        break
                    started = time.perf_counter()
                    answer = http.post("/api/v1/search/find", json={"query": questions[number % len(questions)]})
                    seconds.append(time.perf_counter() - started)
                    waiting.append(answer.json()["result"]["pending_vectors"])
                    number += 1
                return seconds, waiting

            during, waiting = timed(finds, until_batches=2)
            deadline = time.monotonic() + 3600
            while http.post("/api/v1/search/find", json={"query": "x"}).json()["result"]["pending_vectors"]:
                assert time.monotonic() < deadline, "the server's indexer did not finish"
                time.sleep(1)
            after, _ = timed(finds)
    finally:
        proc.terminate()
        proc.wait(timeout=60)

    def ms(values: list[float]) -> dict[str, float]:
        return {"p50_ms": round(percentile(values, 50) * 1000, 1), "p95_ms": round(percentile(values, 95) * 1000, 1)}

    embedding = {**ms(during), "finds": len(during), "waiting_first": waiting[0], "waiting_last": waiting[-1]}
    return {"while_embedding": embedding, "after": {**ms(after), "finds": len(after)}}


def run(work: Path, only: str | None = None) -> dict[str, Any]:
    report: dict[str, Any] = {}
    if only in (None, "first"):
        report["first_answer"] = first_answer(work)
    if only in (None, "quality"):
        report["quality"] = quality_by_phase(work)
    if only in (None, "fill"):
        report["fill"] = fill_cost()
    if only in (None, "server"):
        report["server"] = server_latency(work)
    return report


def print_report(report: dict[str, Any]) -> None:
    from .report import print_pairs, print_table

    if "first_answer" in report:
        first = report["first_answer"]
        columns = [
            "bm25s_s", "bm25s_right", "add_background_s", "find_s", "first_answer_s", "openviking_right",
            "ratio_to_bm25s", "pending_at_find", "every_vector_in_s", "records",
        ]  # fmt: skip
        print_table(first["runs"], columns, title="docs/en: first right answer after an add, against bm25s")
    if "quality" in report:
        print_table(
            report["quality"],
            ["dataset", "system", "ndcg@10", "recall@10", "hit@1", "p50_ms", "queries"],
            title="nDCG@10 with the first phase landed, and with every vector in",
        )
    if "fill" in report:
        print_pairs("vectors of 192 waiting records, into a 10,000-record table", report["fill"])
    if "server" in report:
        print_pairs("find over HTTP while the server embeds, and after", report["server"])
