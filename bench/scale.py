"""find at scale: synthetic stores of 10k, 100k and 1M records with real 384-d vectors.

The vectors are real multilingual-e5-small embeddings of the docs and Cranfield texts, each
copied with Gaussian noise (cosine ~0.9 to its original), so they cluster like real
embeddings do; each record keeps its original's text for the full-text side. Queries are the
docs question sets, embedded for real. Measured side by side in one run: index build time,
warm find p50/p95 (hybrid and vector), numpy brute force over the same vectors in RAM,
recall@10 of the vector index against exact search (no filter, a narrow URI scope, a 10 %
time window), and the whole `openviking find` process with its peak memory.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .metrics import percentile
from .procs import run_cli

SIZES = (10_000, 100_000, 1_000_000)
FOLDER = 1000  # records per synthetic folder: a `--uri` scope of one folder keeps 0.1-10 %


def base_corpus(work: Path) -> tuple[Any, list[str]]:
    """Real (vector, text) pairs: from the quality suites' stores if they exist, else embedded now."""
    import numpy as np

    import openviking as ov

    vectors: list[Any] = []
    texts: list[str] = []
    for name in ("store-docs", "store-cranfield"):
        path = work / name
        if not path.exists():
            continue
        client = ov.OpenViking(path=str(path))
        for row in client._open().query_records(None, ["vector", "text"]):
            vectors.append(row["vector"])
            texts.append(row["text"] or "")
        client.close()
    if not vectors:
        from . import quality

        embedder = ov.OpenViking(path=str(work / "unused")).embedder()
        texts = [text[:600] for _, text in quality.docs_texts("en")][:300]
        vectors = list(embedder.embed_documents(texts))
    return np.asarray(vectors, dtype=np.float32), texts


def build_store(path: Path, size: int, base: Any, texts: list[str], seed: int = 7) -> dict[str, Any]:
    """A store of ``size`` synthetic records (re-used when it already holds that many)."""
    import numpy as np
    import pyarrow as pa

    from openviking.models.embedder import LocalE5Embedder
    from openviking.store.lance import LanceStore
    from openviking.store.schema import records_schema

    marker = path / "bench-size.json"
    if marker.exists() and json.loads(marker.read_text()).get("size") == size:
        return json.loads(marker.read_text())
    shutil.rmtree(path, ignore_errors=True)
    store = LanceStore.open(str(path), create=True)
    store.set_meta({"embedder": LocalE5Embedder.identity, "dimension": str(base.shape[1])})
    rng = np.random.default_rng(seed)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    schema = records_schema(base.shape[1])
    written = time.perf_counter()
    for offset in range(0, size, 50_000):
        count = min(50_000, size - offset)
        index = np.arange(offset, offset + count)
        source = index % len(base)
        noise = rng.standard_normal((count, base.shape[1])).astype(np.float32) * (0.5 / np.sqrt(base.shape[1]))
        vectors = base[source] + noise
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        uris = [f"viking://resources/synth/d{i // FOLDER:04d}/f{i}.md" for i in index]
        days = (index * 730 // size).tolist()
        stamps = [start + timedelta(days=int(d)) for d in days]
        table = pa.table(
            {
                "id": [f"r{i}" for i in index],
                "uri": uris,
                "depth": pa.array([4] * count, pa.int32()),
                "level": pa.array([2] * count, pa.int8()),
                "chunk": pa.array([0] * count, pa.int32()),
                "line_start": pa.array([1] * count, pa.int32()),
                "line_end": pa.array([20] * count, pa.int32()),
                "context_type": ["resource"] * count,
                "text": pa.array([texts[s] for s in source], pa.large_string()),
                "abstract": [texts[s][:200] for s in source],
                "text_hash": [""] * count,
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), base.shape[1]),
                "created_at": pa.array(stamps, pa.timestamp("ms", tz="UTC")),
                "updated_at": pa.array(stamps, pa.timestamp("ms", tz="UTC")),
                "tags": pa.array([[] for _ in range(count)], pa.list_(pa.string())),
                "form": ["text"] * count,
                "place": pa.array([None] * count, pa.string()),
                "vector_pending": [False] * count,
                "embed_input": pa.array([None] * count, pa.large_string()),
                "embed_tokens": pa.array([None] * count, pa.int32()),
            },
            schema=schema,
        )
        store.append_records(table, base.shape[1])
    write_seconds = time.perf_counter() - written
    indexed = time.perf_counter()
    store.optimize()
    info = {
        "size": size,
        "write_seconds": round(write_seconds, 1),
        "index_seconds": round(time.perf_counter() - indexed, 1),
        "vector_index": store.has_vector_index(),
    }
    store.close()
    marker.write_text(json.dumps(info))
    return info


def measure(path: Path, size: int, queries: list[str], base: Any) -> dict[str, Any]:
    """Warm latencies, brute force, recall and the whole process, for one store."""
    import numpy as np

    import openviking as ov
    from openviking.store.filters import Scope
    from openviking.store.search import vector_search
    from openviking.values.timefilter import parse_time_range
    from openviking.values.uri import parse

    client = ov.OpenViking(path=str(path))
    store = client._open()
    embedder = client.embedder()
    vectors = [embedder.embed_query(q) for q in queries]
    client.find("warm up", limit=10)
    out: dict[str, Any] = {"size": size, "vector_index": store.has_vector_index()}
    for mode in ("hybrid", "vector"):
        times = []
        for query in queries:
            started = time.perf_counter()
            client.find(query, limit=10, mode=mode, target_uri="viking://resources")
            times.append(time.perf_counter() - started)
        out[f"find_{mode}_p50_ms"] = round(percentile(times, 50) * 1000, 1)
        out[f"find_{mode}_p95_ms"] = round(percentile(times, 95) * 1000, 1)
    # numpy brute force over the same vectors, held in RAM (the physical anchor)
    matrix = np.asarray([row["vector"] for row in store.query_records(None, ["vector"])], dtype=np.float32)
    times = []
    for vector in vectors:
        started = time.perf_counter()
        scores = matrix @ vector
        top = np.argpartition(-scores, 10)[:10]
        top[np.argsort(-scores[top])]
        times.append(time.perf_counter() - started)
    out["numpy_bruteforce_p50_ms"] = round(percentile(times, 50) * 1000, 2)
    del matrix
    # recall@10 of what find's vector search returns, against exact search with the same filter
    narrow = Scope(targets=(parse("viking://resources/synth/d0003"),))
    window = parse_time_range("2024-03-01", "2024-05-13")
    timed = Scope(time_range=window)
    for label, scope in (("unfiltered", None), ("uri_1_folder", narrow), ("time_10pct", timed)):
        recalls = []
        for vector in vectors[:50]:
            got = {r["id"] for r in vector_search(store, vector, scope, 10, ["id"])}
            exact = {r["id"] for r in vector_search(store, vector, scope, 10, ["id"], exact=True)}
            recalls.append(len(got & exact) / max(len(exact), 1))
        out[f"recall@10_{label}"] = round(sum(recalls) / len(recalls), 4)
    client.close()
    out.update(whole_process(path))
    return out


def whole_process(path: Path, runs: int = 5) -> dict[str, Any]:
    """``openviking find`` as a fresh process: wall time (median of runs) and peak memory."""
    times, peaks = [], []
    for _ in range(runs):
        seconds, peak, _ = run_cli(["find", "how do I authenticate users", "--store", str(path)])
        times.append(seconds)
        peaks.append(peak or 0.0)
    return {"cli_find_seconds_p50": round(percentile(times, 50), 3), "cli_find_peak_rss_mb": max(peaks)}


def run_scale(work: Path, sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    from . import quality

    base, texts = base_corpus(work)
    queries = [text for name in ("docs-en", "docs-zh") for _, text, _ in quality.docs_queries(name)]
    results = []
    for size in sizes:
        path = work / f"store-scale-{size}"
        info = build_store(path, size, base, texts)
        row = {**info, **measure(path, size, queries, base)}
        results.append(row)
        print("scale:", json.dumps(row), file=sys.stderr, flush=True)
    return {"base_vectors": int(base.shape[0]), "rows": results, "cpus": os.cpu_count()}


def print_report(report: dict[str, Any]) -> None:
    columns = [
        ("size", "records"),
        ("vector_index", "ANN"),
        ("index_seconds", "index s"),
        ("find_hybrid_p50_ms", "hybrid p50"),
        ("find_hybrid_p95_ms", "p95"),
        ("find_vector_p50_ms", "vector p50"),
        ("find_vector_p95_ms", "p95"),
        ("numpy_bruteforce_p50_ms", "numpy p50"),
        ("recall@10_unfiltered", "recall"),
        ("recall@10_uri_1_folder", "recall uri"),
        ("recall@10_time_10pct", "recall time"),
        ("cli_find_seconds_p50", "CLI find s"),
        ("cli_find_peak_rss_mb", "CLI MB"),
    ]
    print("\nfind at scale (ms unless noted; warm SDK calls; recall@10 of the index vs exact search)")
    print("  ".join(label for _, label in columns))
    for row in report["rows"]:
        print("  ".join(str(row.get(key, "")).rjust(len(label)) for key, label in columns))
