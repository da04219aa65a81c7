"""Searchable at once, vectors behind: an add writes its text, full-text index and summaries
first, find answers from them on every face, and the vectors follow and join the ranking.

The records that wait for their vectors are counted by every find (``pending_vectors``),
marked per hit by ``--explain``, made by ``index`` (or the next write, or a server's indexer)
once each, never over a text edited meanwhile, and outside the write lock: the store takes
other writes, and a server answers, while they are made.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from helpers import (
    HASH_CONF,
    cli_unharmed,
    hash_config,
    make_tree,
    process_ended,
    run_module,
    start_module,
    unharmed,
    with_store,
    write_config,
    write_hash_config,
)
from mcp import Client
from ovserver import body_of, error_of, thread_server
from servers import Reply, Request, StubServer, random_embeddings

from openviking import OpenViking
from openviking.config import config_from_dict
from openviking.errors import InvalidArgumentError, PermissionDeniedError
from openviking.server.mcp import mcp_server
from openviking.store.lance import LanceStore
from openviking.store.pending import count_pending, fill_vectors

R = "viking://resources"
PAGES = {
    "kettle.md": "# Kettles\n\nA kettle boils water for tea on the stove.\n",
    "garden/roses.md": "# Roses\n\nPrune the roses in early spring, above an outward bud.\n",
    "garden/soil.md": "# Soil\n\nCompost keeps the soil loose and feeds the worms.\n",
}
DIMENSION = 64


class Embeddings(StubServer):
    """An OpenAI-compatible embedding server: the same text always gets the same vector; it
    counts what it embeds for the store (passages) apart from queries, and can hold the
    passages back, from the ``held_from``-th request on, until the test lets them through
    (``gate``)."""

    def __init__(self) -> None:
        self.answer = random_embeddings(DIMENSION)
        self.gate = threading.Event()
        self.gate.set()
        self.held_from = 1
        self.asked = threading.Event()  # a passage request is held
        self.on_passages: Any = None  # called (once) with the first passage request, before it is answered
        self._count = 0
        self._counting = threading.Lock()
        super().__init__(self._reply)

    def _reply(self, request: Request) -> Reply:
        if request.body.get("input_type") == "passage":
            with self._counting:
                self._count += 1
                number = self._count
            hook, self.on_passages = self.on_passages, None
            if hook is not None:
                hook(request)
            if number >= self.held_from and not self.gate.is_set():
                self.asked.set()
                assert self.gate.wait(120), "the test never let the passages through"
        return self.answer(request)

    def passages(self) -> list[str]:
        """Every text embedded for the store so far, in order."""
        return [
            text for r in self.posts("/embeddings") if r.body.get("input_type") == "passage" for text in r.body["input"]
        ]

    def conf(self) -> dict[str, Any]:
        dense = {
            "provider": "openai", "api_base": f"{self.url}/v1", "model": "stub", "dimension": DIMENSION,
            "query_param": "query", "document_param": "passage", "batch_size": 16, "max_retries": 0,
        }  # fmt: skip
        return {"embedding": {"dense": dense}}


@pytest.fixture
def embeddings() -> Iterator[Embeddings]:
    with Embeddings() as server:
        yield server


def _tree(tmp_path: Path, name: str = "src", files: dict[str, str] = PAGES) -> Path:
    return make_tree(tmp_path / name, files)


def _records(store: Path) -> list[dict[str, Any]]:
    with LanceStore.open(str(store)) as opened:
        return opened.all_records()


def _waiting(store: Path) -> int:
    with LanceStore.open(str(store)) as opened:
        return count_pending(opened)


# ----------------------------------------------------------------------------- the SDK
def test_an_add_that_does_not_wait_is_found_by_its_words_and_its_vectors_follow(tmp_path: Path) -> None:
    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        client.add_resource(_tree(tmp_path, "done", {"a.md": "# Done\n\nEverything here has its vectors.\n"}))
        added = client.add_resource(_tree(tmp_path), wait=False)
        # three files of one chunk each, and the L0 and L1 of src and src/garden
        assert (added.added, added.records_embedded, added.pending_vectors) == (3, 0, 7)

        found = client.find("prune roses in spring")
        assert found.resources[0].uri == f"{R}/src/garden/roses.md"
        assert found.pending_vectors == 7
        assert client.find("prune roses", target_uri=f"{R}/done").pending_vectors == 0
        assert client.find("prune roses", target_uri=f"{R}/src/garden").pending_vectors == 4
        assert [h.uri for h in client.find("prune roses", mode="vector", target_uri=f"{R}/src")] == []
        explained = client.find("prune roses in spring", explain=True).resources[0]
        assert explained.explain["vectors_pending"] == 1 and explained.explain["vector"] is None
        assert client.context("prune roses in spring", budget=500).pending_vectors == 7
        assert client.search("prune roses in spring").pending_vectors == 7

        done = client.index()
        assert (done.records_embedded, done.texts_embedded, done.pending_vectors) == (7, 7, 0)
        assert done.uri == "viking://"
        assert client.find("prune roses in spring").pending_vectors == 0
        vector_hits = [h.uri for h in client.find("prune the roses early in spring", mode="vector", limit=3)]
        assert f"{R}/src/garden/roses.md" in vector_hits
        explained = client.find("prune roses in spring", explain=True).resources[0]
        assert explained.explain["vectors_pending"] == 0 and explained.explain["vector"] is not None
        assert client.index().records_embedded == 0  # a vector once made is never made again
        assert client.doctor()["problems"] == []


def test_a_write_makes_the_vectors_an_earlier_add_left(tmp_path: Path) -> None:
    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        client.add_resource(_tree(tmp_path), wait=False)
        report = client.doctor()
        assert report["store"]["pending_vectors"] == 7 and report["problems"] == []  # a state, not damage
        client.add_memory("The user waters the roses on Sundays")
        assert _waiting(tmp_path / "store") == 0
        assert client.doctor()["store"]["pending_vectors"] == 0


def test_index_below_a_uri_makes_only_its_vectors(tmp_path: Path) -> None:
    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        client.add_resource(_tree(tmp_path), wait=False)
        done = client.index(f"{R}/src/garden")
        assert (done.uri, done.records_embedded, done.pending_vectors) == (f"{R}/src/garden", 4, 0)
        assert client.find("kettle").pending_vectors == 3
        isolated = client.as_user("alice", isolated=True)
        with pytest.raises(PermissionDeniedError, match="Only the root key may make the vectors of the whole store"):
            isolated.index()
        assert client.find("kettle").pending_vectors == 3


def test_mcp_find_says_what_waits(tmp_path: Path) -> None:
    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        client.add_resource(_tree(tmp_path), wait=False)

        async def body() -> Any:
            async with Client(mcp_server(lambda: client)) as session:
                return await session.call_tool("find", {"query": "prune roses in spring"})

        answer = json.loads(anyio.run(body).content[0].text)
    assert answer["pending_vectors"] == 7
    assert answer["resources"][0]["uri"] == f"{R}/src/garden/roses.md"


def test_a_store_an_older_version_wrote_gets_the_columns_at_its_next_write(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with OpenViking(path=store, config=hash_config()) as client:
        client.add_resource(_tree(tmp_path))
    with LanceStore.open(str(store)) as opened:  # the records table as the version before wrote it
        opened.records().drop_columns(["vector_pending", "embed_input", "embed_tokens"])
    with OpenViking(path=store, config=hash_config()) as client:
        assert client.find("kettle").pending_vectors == 0 and client.find("kettle").total
        added = client.add_resource(_tree(tmp_path, "more", {"b.md": "# B\n\nBees like lavender.\n"}), wait=False)
        assert added.pending_vectors == 3
        assert client.find("bees lavender").resources[0].uri == f"{R}/more/b.md"
        assert client.index().records_embedded == 3
    assert all(r["vector"] is not None and not r["vector_pending"] for r in _records(store))


SKILL = "---\nname: brewing\ndescription: Brew tea at the right heat.\n---\n\n# Brewing\n\nGreen tea wants 80 C.\n"


def test_a_skill_added_without_waiting_is_found_by_its_words(tmp_path: Path) -> None:
    skill = make_tree(tmp_path / "brewing", {"SKILL.md": SKILL})
    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        added = client.add_skill(skill, wait=False)
        assert added.records_embedded == 0 and added.pending_vectors > 0
        found = client.find("green tea water heat", target_uri="viking://agent/skills")
        assert found.skills[0].uri.startswith("viking://agent/skills/brewing")
        # The skill's own (its chunk, its folder's L0 and L1), and the L0 and L1 of the skills' folder
        assert (added.pending_vectors, found.pending_vectors) == (3, 5)
        assert client.index().records_embedded == 5
        assert client.find("green tea water heat", target_uri="viking://agent/skills").pending_vectors == 0


def test_wait_that_is_not_true_or_false_is_refused(tmp_path: Path) -> None:
    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        client.add_resource(_tree(tmp_path))
        error = unharmed(client, lambda: client.add_resource(_tree(tmp_path, "more"), wait="later"))
        assert isinstance(error, InvalidArgumentError)
        assert error.code == "INVALID_ARGUMENT" and "wait must be True or False (got" in error.message
    with thread_server(HASH_CONF, tmp_path / "store") as url, httpx.Client(base_url=url, timeout=60) as http:
        for route in ("/api/v1/resources", "/api/v1/skills"):
            body = {"path": str(tmp_path / "more"), "wait": [False]}
            error = error_of(http.post(route, json=body), 400, "INVALID_ARGUMENT")
            assert "wait" in error["message"], error
        assert f"{R}/more" not in json.dumps(body_of(http.get("/api/v1/fs/ls", params={"uri": R})))


# ----------------------------------------------------------------------------- the CLI
def test_the_cli_says_what_waits_and_index_makes_it(cli: Any, tmp_path: Path) -> None:
    store, conf = tmp_path / "store", write_hash_config(tmp_path / "ov.conf")
    with OpenViking(path=store, config=hash_config()) as client:
        client.add_resource(_tree(tmp_path), wait=False)
    ov = ("--store", store, "--config", conf)

    data = cli("find", "prune roses in spring", *ov, "-o", "json").json()["result"]
    assert list(data) == ["memories", "resources", "skills", "total", "pending_vectors"]
    assert data["pending_vectors"] == 7 and data["resources"][0]["uri"] == f"{R}/src/garden/roses.md"
    table = cli("find", "prune roses in spring", *ov)
    assert table.code == 0
    assert "7 records here still wait for their vectors" in table.out and "openviking index" in table.out
    explained = cli("find", "prune roses in spring", *ov, "--explain")
    assert "vector - · keyword" in explained.out and "1 record waiting for vectors" in explained.out

    done = cli("index", *ov)
    assert done.code == 0 and done.out.startswith("Embedded 7 records ("), done.out
    assert cli("index", *ov, "-o", "json").json()["result"]["records_embedded"] == 0
    after = cli("find", "prune roses in spring", *ov)
    assert "wait for their vectors" not in after.out
    assert cli("find", "prune roses", *ov, "-o", "json").json()["result"]["pending_vectors"] == 0


def test_index_of_a_uri_that_is_not_one_is_refused(cli: Any, tmp_path: Path) -> None:
    store, conf = tmp_path / "store", write_hash_config(tmp_path / "ov.conf")
    with OpenViking(path=store, config=hash_config()) as client:
        client.add_resource(_tree(tmp_path), wait=False)
        unharmed(client, lambda: client.index("https://example.com/x"), "prune roses")
    ov = with_store(cli, store, conf)
    cli_unharmed(ov, store, ["index", "https://example.com/x"], "INVALID_URI", 2, "viking://")
    assert _waiting(store) == 7


def test_add_resource_in_the_background_returns_first_and_a_process_makes_the_vectors(tmp_path: Path) -> None:
    store, conf = tmp_path / "store", write_hash_config(tmp_path / "ov.conf")
    args = ["add-resource", _tree(tmp_path), "--store", store, "--config", conf, "--background", "-o", "json"]
    added = run_module(args)
    assert added.returncode == 0, added.stderr
    result = json.loads(added.stdout)["result"]
    assert result["added"] == 3 and result["records_embedded"] == 0 and result["pending_vectors"] == 7
    assert result["background"]["log"] == str(store / ".openviking.index.log")
    process_ended(result["background"]["pid"])
    assert _waiting(store) == 0
    assert all(r["vector"] is not None for r in _records(store))
    log = (store / ".openviking.index.log").read_text()
    assert "Embedded 7 records (" in log, log

    table = run_module(["add-resource", _tree(tmp_path, "two"), "--store", store, "--config", conf, "--background"])
    assert table.returncode == 0, table.stderr
    assert "7 records wait for their vectors, found by their words meanwhile" in table.stdout
    pid = int(table.stdout.split("in the background (pid ", 1)[1].split(",", 1)[0])
    process_ended(pid)
    assert _waiting(store) == 0


def test_ctrl_c_while_an_add_embeds_leaves_it_done_and_index_finishes(tmp_path: Path, embeddings: Embeddings) -> None:
    store, conf = tmp_path / "store", write_config(tmp_path / "ov.conf", embeddings.conf())
    embeddings.gate.clear()
    proc = start_module(["add-resource", _tree(tmp_path), "--store", store, "--config", conf])
    try:
        assert embeddings.asked.wait(120), "the add never came to its vectors"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        embeddings.gate.set()
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err
    assert "Interrupted while embedding: what was written is found by its words" in err
    assert "7 record(s) wait for their vectors, which openviking index makes" in err
    found = run_module(["find", "prune roses in spring", "--store", store, "--config", conf, "-o", "json"])
    assert json.loads(found.stdout)["result"]["resources"][0]["uri"] == f"{R}/src/garden/roses.md"
    done = run_module(["index", "--store", store, "--config", conf, "-o", "json"])
    assert json.loads(done.stdout)["result"]["records_embedded"] == 7, done.stderr
    assert _waiting(store) == 0


# ----------------------------------------------------------------------------- once, and never over an edit
def test_a_background_index_killed_mid_batch_loses_that_batch_and_nothing_else(
    tmp_path: Path, embeddings: Embeddings
) -> None:
    pages = {f"p{i % 3}/page{i:03d}.md": f"# Page {i}\n\nPage {i} is about subject {i}.\n" for i in range(300)}
    # One request in flight, so that the kill finds exactly one batch request asked and unanswered.
    one_at_a_time = embeddings.conf()
    one_at_a_time["embedding"]["max_concurrent"] = 1
    store, conf = tmp_path / "store", write_config(tmp_path / "ov.conf", one_at_a_time)
    embeddings.gate.clear()
    embeddings.held_from = 192 // 16 + 1  # the first request of the second batch (16 texts a request)
    args = ["add-resource", _tree(tmp_path, "pages", pages), "--store", store, "--config", conf, "--background"]
    added = run_module([*args, "-o", "json"])
    assert added.returncode == 0, added.stderr
    result = json.loads(added.stdout)["result"]
    assert result["pending_vectors"] == 300 + 2 * 4
    try:
        assert embeddings.asked.wait(120), "the background index did not reach its second batch"
        os.kill(result["background"]["pid"], signal.SIGKILL)
        process_ended(result["background"]["pid"])
    finally:
        embeddings.gate.set()
    assert _waiting(store) == 308 - 192  # the first batch's vectors were committed
    done = run_module(["index", "--store", store, "--config", conf, "-o", "json"])
    assert json.loads(done.stdout)["result"]["records_embedded"] == 308 - 192, done.stderr
    assert _waiting(store) == 0 and len({r["id"] for r in _records(store)}) == 308
    twice = [text for text, times in Counter(embeddings.passages()).items() if times > 1]
    assert len(twice) == 16 and len(set(embeddings.passages())) == 308  # the request in flight, no more


def test_each_text_is_embedded_once_and_an_edit_meanwhile_keeps_waiting(tmp_path: Path, embeddings: Embeddings) -> None:
    tree = _tree(tmp_path)
    config = config_from_dict(embeddings.conf())
    edited = "# Roses\n\nRoses want full sun and a deep drink once a week in summer.\n"
    with (
        OpenViking(path=tmp_path / "store", config=config) as client,
        OpenViking(path=tmp_path / "store", config=config) as other,
    ):
        client.add_resource(tree, wait=False)

        def edit_while_embedding(_request: Request) -> None:
            # The embedding holds no write lock while it embeds: another writer edits a file
            # whose old text is in this very batch.
            (tree / "garden" / "roses.md").write_text(edited)
            assert other.add_resource(tree, wait=False).updated == 1

        embeddings.on_passages = edit_while_embedding
        done = client.index()
        assert done.pending_vectors == 0
    records = {(r["uri"], r["level"]): r for r in _records(tmp_path / "store")}
    roses = records[(f"{R}/src/garden/roses.md", 2)]
    assert "full sun" in roses["text"] and roses["vector"] is not None and not roses["vector_pending"]
    embedded = embeddings.passages()
    # The stale batch embedded the old text once; its vector was not stored over the new text,
    # whose own vector was made next. Nothing else twice.
    assert len(embedded) == len(set(embedded))
    rose_texts = [t for t in embedded if t.startswith("Roses\n")]  # the page's one chunk, under its title
    assert any("Prune the roses" in t for t in rose_texts) and any("full sun" in t for t in rose_texts)
    new_text = next(t for t in rose_texts if "full sun" in t)
    assert [round(x, 5) for x in roses["vector"]] == [round(x, 5) for x in _vectors(embeddings, [new_text])[0]]


def _vectors(embeddings: Embeddings, texts: list[str]) -> list[list[float]]:
    reply = embeddings.answer(Request("POST", "/v1/embeddings", {}, {"input": texts}))
    return [item["embedding"] for item in reply.body["data"]]


def test_a_vector_made_of_a_text_that_changed_is_not_stored(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with OpenViking(path=store, config=hash_config()) as client:
        client.add_resource(_tree(tmp_path), wait=False)
    with LanceStore.open(str(store)) as opened:
        row = next(r for r in opened.all_records() if r["uri"].endswith("kettle.md"))
        stale = {"id": row["id"], "text_hash": "0" * 40, "vector": [1.0] + [0.0] * 1023}
        assert fill_vectors(opened, [stale], 1024) == 0
        assert fill_vectors(opened, [{**stale, "id": "no such record"}], 1024) == 0
        assert count_pending(opened) == 7
        assert fill_vectors(opened, [{**stale, "text_hash": row["text_hash"]}], 1024) == 1
        assert count_pending(opened) == 6


def test_an_embedding_steps_aside_when_a_reindex_took_the_store_to_another_table(
    tmp_path: Path, embeddings: Embeddings
) -> None:
    store = tmp_path / "store"
    with OpenViking(path=store, config=config_from_dict(embeddings.conf())) as client:
        client.add_resource(_tree(tmp_path), wait=False)
        embeddings.gate.clear()
        outcome: dict[str, Any] = {}

        def index() -> None:
            try:
                outcome["done"] = client.index()
            except BaseException as exc:  # said by the assertion below
                outcome["error"] = exc

        indexer = threading.Thread(target=index)
        indexer.start()
        try:
            assert embeddings.asked.wait(60), "the index did not start embedding"
            # While the batch is embedded (no lock held), another process switches the store to
            # another model: a new table, made whole, and the old one dropped.
            with OpenViking(path=store, config=hash_config()) as other:
                assert other.reindex().switched_table
        finally:
            embeddings.gate.set()
            indexer.join(60)
        assert "error" not in outcome, outcome.get("error")
        # Its batch's vectors, of the old model, went nowhere; it found nothing more to do.
        assert (outcome["done"].records_embedded, outcome["done"].pending_vectors) == (0, 0)
    records = _records(store)
    assert len(records) == 7 and all(r["vector"] is not None and not r["vector_pending"] for r in records)
    with OpenViking(path=store, config=hash_config()) as other:
        assert other.find("prune roses in spring", mode="vector").resources[0].uri == f"{R}/src/garden/roses.md"
        assert other.doctor()["problems"] == []
    assert len(embeddings.passages()) == 7  # the one batch it embedded before it stepped aside


def test_two_indexers_at_once_embed_each_text_once(tmp_path: Path, embeddings: Embeddings) -> None:
    files = {f"d{i % 3}/p{i:02d}.md": f"# Page {i}\n\nPage {i} tells of topic {i} at length.\n" for i in range(40)}
    store, conf = tmp_path / "store", write_config(tmp_path / "ov.conf", embeddings.conf())
    with OpenViking(path=store, config=config_from_dict(embeddings.conf())) as client:
        client.add_resource(_tree(tmp_path, "pages", files), wait=False)
    waiting = _waiting(store)
    assert waiting == 40 + 2 * 4  # the pages, and the L0 and L1 of pages and its three folders
    procs = [start_module(["index", "--store", store, "--config", conf, "-o", "json"]) for _ in range(2)]
    results = [json.loads(p.communicate(timeout=300)[0])["result"] for p in procs]
    assert sum(r["records_embedded"] for r in results) == waiting
    embedded = embeddings.passages()
    assert len(embedded) == len(set(embedded)) == waiting
    assert _waiting(store) == 0


# ----------------------------------------------------------------------------- the server
@contextlib.contextmanager
def _served(tmp_path: Path, embeddings: Embeddings) -> Iterator[tuple[str, httpx.Client]]:
    with thread_server(embeddings.conf(), tmp_path / "store") as url, httpx.Client(base_url=url, timeout=60) as http:
        yield url, http


def test_the_server_answers_while_it_makes_the_vectors_of_an_add_that_did_not_wait(
    tmp_path: Path, embeddings: Embeddings
) -> None:
    tree = _tree(tmp_path)
    with _served(tmp_path, embeddings) as (url, http):
        embeddings.gate.clear()
        try:
            added = body_of(http.post("/api/v1/resources", json={"path": str(tree), "wait": False}))
            assert added["added"] == 3 and added["pending_vectors"] == 7 and added["records_embedded"] == 0
            assert embeddings.asked.wait(60), "the server's indexer did not start"
            # The indexer is in the middle of a batch: every request is answered meanwhile,
            # writes too (it holds no write lock while it embeds).
            found = body_of(http.post("/api/v1/search/find", json={"query": "prune roses in spring"}))
            assert found["resources"][0]["uri"] == f"{R}/src/garden/roses.md" and found["pending_vectors"] == 7
            memory = body_of(http.post("/api/v1/memories", json={"text": "The user grows roses"}))
            assert memory["added"] is True
            assert body_of(http.get("/api/v1/fs/ls", params={"uri": f"{R}/src"}))
        finally:
            embeddings.gate.set()
        deadline = time.monotonic() + 60
        while body_of(http.post("/api/v1/search/find", json={"query": "roses"}))["pending_vectors"]:
            assert time.monotonic() < deadline, "the vectors never came"
            time.sleep(0.1)
        assert body_of(http.post("/api/v1/index", json={}))["records_embedded"] == 0
        more = _tree(tmp_path, "more", {**PAGES, "new.md": "# New\n\nA page of its own.\n"})
        waited = body_of(http.post("/api/v1/resources", json={"path": str(more), "wait": True}))
        # The copies of src's pages, and more/garden's summaries (src/garden's, word for word),
        # take the stored vectors: only the new page and more's own L0 and L1 are embedded.
        assert waited["pending_vectors"] == 0 and waited["records_embedded"] == 1 + 2
    embedded = embeddings.passages()
    assert len(embedded) == len(set(embedded))


def test_a_server_makes_the_vectors_a_killed_add_left_when_it_starts(tmp_path: Path, embeddings: Embeddings) -> None:
    with OpenViking(path=tmp_path / "store", config=config_from_dict(embeddings.conf())) as client:
        client.add_resource(_tree(tmp_path), wait=False)
    with _served(tmp_path, embeddings) as (_url, http):
        deadline = time.monotonic() + 60
        while body_of(http.post("/api/v1/search/find", json={"query": "roses"}))["pending_vectors"]:
            assert time.monotonic() < deadline, "the server did not make the waiting vectors"
            time.sleep(0.1)
    assert len(embeddings.passages()) == 7


def test_add_resource_in_the_background_over_a_server_leaves_the_vectors_to_it(cli: Any, tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    with thread_server(HASH_CONF, tmp_path / "store") as url:
        added = cli("add-resource", tree, "--url", url, "--background", "-o", "json")
        assert added.code == 0, added.err
        result = added.json()["result"]
        assert result["pending_vectors"] == 7 and result["background"] == {"by": "server"}
        deadline = time.monotonic() + 60
        while cli("find", "roses", "--url", url, "-o", "json").json()["result"]["pending_vectors"]:
            assert time.monotonic() < deadline, "the server did not make the vectors"
            time.sleep(0.1)
        table = cli("add-resource", _tree(tmp_path, "two"), "--url", url, "--background")
    assert "7 records wait for their vectors, found by their words meanwhile: the server makes them" in table.out
