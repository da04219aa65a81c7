"""What tests can pin of retrieval quality (its figures live in bench/): modes, --explain,
awkward queries, and the vector index (exact fallback, stale rows, interrupted builds)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest
from helpers import HASH64_CONF, make_tree, write_config

from openviking.config import config_from_dict
from openviking.contract.hits import FindResult
from openviking.embedded.client import OpenViking
from openviking.errors import OpenVikingWarning
from openviking.store.search import vector_search

TREE = {
    "auth.md": "# Authentication\n\nUsers authenticate with API keys sent as bearer tokens.\n",
    "deploy.md": "# Deployment\n\nDeploy the server with docker compose on a single host.\n",
    "billing.md": "# Billing\n\nInvoices are sent monthly; refunds take five days.\n",
    "notes/cooking.md": "# Pancakes\n\nMix flour, milk and eggs, then fry the batter in butter.\n",
}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[OpenViking]:
    source = make_tree(tmp_path / "src", TREE)
    client = OpenViking(path=tmp_path / "store", config=config_from_dict(HASH64_CONF))
    client.add_resource(source, to="viking://resources/kb", tags=["team=docs"])
    yield client
    client.close()


# ----------------------------------------------------------------------------- modes and scores
@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_every_mode_scores_in_unit_range_in_result_order(client: OpenViking, mode: str) -> None:
    result = client.find("authenticate with api keys", mode=mode, score_threshold=-1, limit=20)
    scores = [hit.score for hit in result.resources]
    assert scores, mode
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert result.resources[0].uri == "viking://resources/kb/auth.md"


def test_hybrid_best_on_both_sides_scores_one(client: OpenViking) -> None:
    hit = client.find("authenticate with api keys", explain=True).resources[0]
    assert hit.explain["vector"]["rank"] == 1 and hit.explain["keyword"]["rank"] == 1
    assert hit.score == pytest.approx(1.0)


def test_threshold_applies_to_the_fused_score(client: OpenViking) -> None:
    everything = client.find("authenticate with api keys", score_threshold=-1, limit=50)
    cut = 0.5
    kept = client.find("authenticate with api keys", score_threshold=cut, limit=50)
    assert {h.uri for h in kept} == {h.uri for h in everything if h.score > cut}


def test_explain_gives_each_side_and_the_record(client: OpenViking, cli: Any, tmp_path: Path) -> None:
    result = client.find("docker compose", explain=True)
    hit = result.resources[0]
    assert hit.uri == "viking://resources/kb/deploy.md"
    assert set(hit.explain) >= {"score", "vector", "keyword", "record"}
    assert hit.explain["keyword"]["rank"] == 1
    assert hit.explain["record"]["level"] == 2
    out = cli(
        "find",
        "docker compose",
        "--explain",
        "--store",
        str(tmp_path / "store"),
        "--config",
        write_config(tmp_path / "ov.conf", HASH64_CONF),
        "-o",
        "json",
    )
    assert out.code == 0, out.err
    first = out.json()["result"]["resources"][0]
    assert first["explain"]["keyword"]["rank"] == 1


EMPTIED_BY_ONE_STAGE = [
    ({"target_uri": "viking://resources/nowhere"}, "scope", "--uri"),
    ({"context_type": "skill"}, "context_type", "--context-type"),
    ({"target_uri": "viking://resources/kb/auth.md", "level": 0}, "level", "--level"),
    ({"tags": "team=other"}, "tags", "--tags"),
    ({"since": "2099-01-01"}, "time", "--after"),
    ({"filter": {"op": "prefix", "field": "uri", "prefix": "viking://resources/kb/zzz"}}, "filter", "--filter"),
]


def test_every_stage_of_a_scope_is_diagnosed() -> None:
    from openviking.store.filters import SCOPE_STAGES

    assert [stage for _, stage, _ in EMPTIED_BY_ONE_STAGE] == [stage.name for stage in SCOPE_STAGES]


def _with_a_stage_over_the_nodes(monkeypatch: pytest.MonkeyPatch, predicate: str) -> None:
    # No restriction of find is on a node field yet: this is the path one would take (a file's
    # size, which the records do not carry), kept working for the day one is added.
    from openviking.store import filters

    stage = filters.ScopeStage("size", lambda scope: True, lambda scope: predicate, "raise --max-size", over_nodes=True)
    monkeypatch.setattr(filters, "SCOPE_STAGES", (*filters.SCOPE_STAGES, stage))


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_a_stage_over_the_nodes_keeps_the_records_of_the_nodes_it_keeps(
    client: OpenViking, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    sizes = {f"viking://resources/kb/{path}": len(text.encode()) for path, text in TREE.items()}
    cut = sorted(sizes.values())[1]  # the smallest file or two, not all of them
    small = {uri for uri, size in sizes.items() if size < cut}
    query = "authenticate deploy invoices pancakes"
    before = {h.uri for h in client.find(query, mode=mode, score_threshold=-1, limit=50).resources}
    assert set(sizes) <= before
    _with_a_stage_over_the_nodes(monkeypatch, f"size < {cut} AND NOT is_dir")
    after = {h.uri for h in client.find(query, mode=mode, score_threshold=-1, limit=50).resources}
    assert after == small


def test_a_stage_over_the_nodes_that_keeps_none_is_the_one_diagnosed(
    client: OpenViking, monkeypatch: pytest.MonkeyPatch
) -> None:
    _with_a_stage_over_the_nodes(monkeypatch, "size < 0")
    result = client.find("authenticate with api keys", explain=True)
    assert result.total == 0
    assert result.diagnostics is not None
    assert result.diagnostics["blocking_stage"] == "size"
    assert "raise --max-size" in result.diagnostics["advice"]


@pytest.mark.parametrize(("kwargs", "stage", "advice"), EMPTIED_BY_ONE_STAGE)
def test_explain_says_which_stage_removed_everything(
    client: OpenViking, kwargs: dict[str, Any], stage: str, advice: str
) -> None:
    missing_target = pytest.warns(OpenVikingWarning, match="does not exist") if stage == "scope" else nullcontext()
    with missing_target:
        result = client.find("authenticate with api keys", explain=True, **kwargs)
    assert result.total == 0
    diagnostics = result.diagnostics
    assert diagnostics is not None
    assert diagnostics["blocking_stage"] == stage
    assert diagnostics["stages"][-1]["remaining"] == 0
    assert advice in diagnostics["advice"]


def test_explain_blames_the_threshold_and_names_the_best_score(client: OpenViking) -> None:
    result = client.find("authenticate with api keys", explain=True, score_threshold=1.5)
    assert result.total == 0
    info = result.diagnostics
    assert info["blocking_stage"] == "threshold"
    assert info["threshold"]["best_score"] == pytest.approx(1.0)
    assert "--threshold" in info["advice"]


def test_explain_in_the_table_output(client: OpenViking, cli: Any, tmp_path: Path) -> None:
    argv = ["--store", str(tmp_path / "store"), "--config", write_config(tmp_path / "ov.conf", HASH64_CONF)]
    out = cli("find", "authenticate", "--explain", "--after", "2099-01-01", *argv)
    assert out.code == 0
    assert out.out == ""
    assert "No results found." in out.err
    assert "time: removed" in out.err
    assert "Suggestion:" in out.err
    # jsonl holds hits only: the explanation of none goes to stderr as in the table, not lost
    lines = cli("find", "authenticate", "--explain", "--after", "2099-01-01", "-o", "jsonl", *argv)
    assert (lines.code, lines.out, lines.err) == (0, "", out.err)
    quiet = cli("find", "authenticate", "--after", "2099-01-01", "-o", "jsonl", *argv)
    assert (quiet.code, quiet.out, quiet.err) == (0, "", "")  # without --explain a script's stderr stays empty


# ----------------------------------------------------------------------------- the summary field
def test_a_pages_summary_adds_a_fifth_of_its_bm25_to_the_keyword_side(client: OpenViking) -> None:
    from openviking.retrieve.retriever import SUMMARY_WEIGHT

    assert client._open().has_text_index("abstract")
    hits = client.find("invoices refunds monthly", mode="keyword", explain=True, score_threshold=-1).resources
    assert hits[0].uri == "viking://resources/kb/billing.md"
    assert hits[0].explain["summary"]["score"] > 0
    totals = [
        h.explain["keyword"]["score"] + SUMMARY_WEIGHT * (h.explain["summary"] or {"score": 0.0})["score"]
        for h in hits
        if h.explain["keyword"] is not None
    ]
    keyword_hits = [h for h in hits if h.explain["keyword"] is not None]
    for hit, total in zip(keyword_hits, totals, strict=True):
        assert hit.score == pytest.approx(total / max(totals))


def test_a_store_without_the_summary_index_answers_and_gets_it_at_the_next_add(tmp_path: Path) -> None:
    # A store an older version wrote has no summary index: find works without it (no summary
    # part), and adding the unchanged tree again builds the index.
    source = make_tree(tmp_path / "src", TREE)
    client = OpenViking(path=tmp_path / "store", config=config_from_dict(HASH64_CONF))
    try:
        client.add_resource(source, to="viking://resources/kb")
        store = client._open()
        store._table(store.records_table).drop_index("abstract_idx")
    finally:
        client.close()
    client = OpenViking(path=tmp_path / "store", config=config_from_dict(HASH64_CONF))
    try:
        assert not client._open().has_text_index("abstract")
        before = client.find("invoices refunds monthly", explain=True).resources
        assert before[0].uri == "viking://resources/kb/billing.md"
        assert all(hit.explain["summary"] is None for hit in before)
        added = client.add_resource(source, to="viking://resources/kb")
        assert added.unchanged == len(TREE) and added.added == 0
        assert client._open().has_text_index("abstract")
        after = client.find("invoices refunds monthly", explain=True).resources
        assert after[0].explain["summary"]["score"] > 0
        assert {h.uri for h in after} == {h.uri for h in before}
    finally:
        client.close()


# ----------------------------------------------------------------------------- awkward queries
def test_a_ten_thousand_character_query_is_answered(client: OpenViking) -> None:
    query = ("how do users authenticate with api keys " * 300)[:10_000]
    result = client.find(query)
    assert result.resources[0].uri == "viking://resources/kb/auth.md"


@pytest.mark.parametrize("query", ["?!?!...", "the of and a to", "「」，。！"])
def test_punctuation_or_stop_word_queries_do_not_fail(client: OpenViking, query: str) -> None:
    for mode in ("hybrid", "keyword", "vector"):
        result = client.find(query, mode=mode, score_threshold=-1)
        assert isinstance(result, FindResult), mode
        assert result.total == len(list(result)) <= 10, mode  # the default limit
        assert all(0.0 <= hit.score <= 1.0 for hit in result), mode


def test_a_huge_limit_returns_what_there_is(client: OpenViking) -> None:
    result = client.find("anything", limit=100_000, score_threshold=-1)
    stored = list(client.ls("viking://resources/kb", recursive=True))
    assert 0 < result.total <= len(stored) + 1


# ----------------------------------------------------------------------------- the vector index
def _synthetic_store(path: Path, rows: int, dimension: int = 64, seed: int = 3) -> Any:
    """A store of `rows` records with clustered random vectors, written in bulk (no embedding)."""
    import numpy as np
    import pyarrow as pa

    from openviking.models.embedder import HashEmbedder
    from openviking.store.lance import LanceStore
    from openviking.store.schema import records_schema

    store = LanceStore.open(str(path), create=True)
    store.set_meta({"embedder": HashEmbedder(dimension=dimension).identity, "dimension": str(dimension)})
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((50, dimension)).astype(np.float32)
    vectors = centers[rng.integers(0, 50, rows)] + 0.5 * rng.standard_normal((rows, dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    stamp = pa.scalar(0, pa.timestamp("ms", tz="UTC"))
    table = pa.table(
        {
            "id": [f"r{i}" for i in range(rows)],
            "uri": [f"viking://resources/synth/d{i // 500:03d}/f{i}.md" for i in range(rows)],
            "depth": pa.array([4] * rows, pa.int32()),
            "level": pa.array([2] * rows, pa.int8()),
            "chunk": pa.array([0] * rows, pa.int32()),
            "line_start": pa.array([1] * rows, pa.int32()),
            "line_end": pa.array([1] * rows, pa.int32()),
            "context_type": ["resource"] * rows,
            "text": pa.array([f"record {i}" for i in range(rows)], pa.large_string()),
            "abstract": [""] * rows,
            "text_hash": [""] * rows,
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dimension),
            "created_at": pa.array([stamp] * rows, pa.timestamp("ms", tz="UTC")),
            "updated_at": pa.array([stamp] * rows, pa.timestamp("ms", tz="UTC")),
            "tags": pa.array([[] for _ in range(rows)], pa.list_(pa.string())),
            "form": ["text"] * rows,
            "place": pa.array([None] * rows, pa.string()),
            "vector_pending": [False] * rows,
            "embed_input": pa.array([None] * rows, pa.large_string()),
            "embed_tokens": pa.array([None] * rows, pa.int32()),
        },
        schema=records_schema(dimension),
    )
    store.append_records(table, dimension)
    return store, vectors


def _exact_ids(store: Any, vector: Any, scope: Any, k: int = 10) -> list[str]:
    return [r["id"] for r in vector_search(store, vector, scope, k, ["id"], exact=True)]


@pytest.fixture
def indexed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    import openviking.store.lance as lance
    import openviking.store.search as search

    # The real threshold is 50,000 records (bench/ measures why); a small store shows the same paths.
    monkeypatch.setattr(lance, "ANN_MIN_ROWS", 4000)
    monkeypatch.setattr(search, "EXACT_MAX_ROWS", 1000)
    store, vectors = _synthetic_store(tmp_path / "store", 6000)
    store.optimize()
    assert store.has_vector_index()
    yield store, vectors
    store.close()


def test_exact_search_is_numpy_brute_force(indexed: tuple[Any, Any]) -> None:
    # The reference the other tests compare the index with: cosine against every stored vector.
    import numpy as np

    store, vectors = indexed
    rows = store.all_records(["id", "vector"])
    ids = [r["id"] for r in rows]
    matrix = np.asarray([r["vector"] for r in rows], dtype=np.float64)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    for vector in vectors[:10]:
        query = np.asarray(vector, dtype=np.float64)
        best = np.argsort(-(matrix @ (query / np.linalg.norm(query))))[:10]
        assert set(_exact_ids(store, vector, None)) == {ids[i] for i in best}


def test_a_narrow_prefilter_searches_exactly(indexed: tuple[Any, Any]) -> None:
    from openviking.store.filters import Scope
    from openviking.values.uri import parse

    store, vectors = indexed
    scope = Scope(targets=(parse("viking://resources/synth/d003"),))  # 500 of 6,000 records
    for vector in vectors[:20]:
        got = [r["id"] for r in vector_search(store, vector, scope, 10, ["id"])]
        assert got == _exact_ids(store, vector, scope)


def test_the_index_keeps_recall_unfiltered(indexed: tuple[Any, Any]) -> None:
    store, vectors = indexed
    recalls = []
    for vector in vectors[100:140]:
        got = {r["id"] for r in vector_search(store, vector, None, 10, ["id"])}
        recalls.append(len(got & set(_exact_ids(store, vector, None))) / 10)
    assert sum(recalls) / len(recalls) >= 0.95


def test_rows_written_after_the_index_are_found(indexed: tuple[Any, Any], tmp_path: Path) -> None:
    import numpy as np
    import pyarrow as pa

    from openviking.store.schema import records_schema

    store, vectors = indexed
    fresh = np.zeros(64, dtype=np.float32)
    fresh[0] = 1.0  # a direction no synthetic vector is near
    stamp = pa.scalar(0, pa.timestamp("ms", tz="UTC"))
    row = {
        "id": "fresh", "uri": "viking://resources/synth/new.md", "depth": 3, "level": 2, "chunk": 0, "line_start": 1,
        "line_end": 1, "context_type": "resource", "text": "fresh", "abstract": "", "text_hash": "",
        "vector": fresh.tolist(), "created_at": stamp.as_py(), "updated_at": stamp.as_py(), "tags": [],
    }  # fmt: skip
    store.append_records(pa.Table.from_pylist([row], schema=records_schema(64)), 64)
    got = [r["id"] for r in vector_search(store, fresh, None, 1, ["id"])]
    assert got == ["fresh"]


def test_an_interrupted_index_build_leaves_a_store_that_answers_exactly(tmp_path: Path) -> None:
    store, vectors = _synthetic_store(tmp_path / "store", 60_000, dimension=64)
    store.close()
    script = (
        "import sys, openviking.store.lance as lance\n"
        "store = lance.LanceStore.open(sys.argv[1])\n"
        "print('building', flush=True)\n"
        "store.optimize()\n"
        "print('built', flush=True)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path / "store")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "building"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=300)
    from openviking.store.lance import LanceStore

    reopened = LanceStore.open(str(tmp_path / "store"))
    assert reopened.count_records() == 60_000
    for vector in vectors[:5]:
        got = [r["id"] for r in vector_search(reopened, vector, None, 10, ["id"])]
        exact = _exact_ids(reopened, vector, None)
        if reopened.has_vector_index():  # the build finished before the signal landed
            assert len(set(got) & set(exact)) >= 8
        else:
            assert got == exact
    reopened.close()
