"""The OpenAI-compatible embedder at a server's speed: ``max_concurrent`` requests in flight,
the vectors in the order of the texts, retries with backoff on 429/408/409/5xx and no answer,
the server's Retry-After obeyed by every request, other errors at once. Against a real HTTP
stub on 127.0.0.1 that answers after a latency (tests/servers.py ``PacedEmbeddings``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from email.utils import formatdate
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import Cli, make_tree, write_config
from servers import FAKE_KEY, PacedEmbeddings, StubServer, free_port

from openviking.config import config_from_dict
from openviking.errors import ConfigError, UnavailableError
from openviking.models.embedder import OpenAIEmbedder
from openviking.models.pacing import retry_after

TEXTS = [f"text number {i}" for i in range(16)]


MADE: list[OpenAIEmbedder] = []


@pytest.fixture(autouse=True)
def _closed() -> Iterator[None]:
    """Every embedder a test made, closed after it (its kept-alive connections with it)."""
    yield
    while MADE:
        MADE.pop().close()


def _embedder(api_base: str, **dense: Any) -> OpenAIEmbedder:
    settings = {"provider": "openai", "model": "stub", "api_base": api_base, "api_key": FAKE_KEY, "dimension": 64}
    config = config_from_dict({"embedding": {"dense": {**settings, **dense}}})
    MADE.append(OpenAIEmbedder(config.embedding))
    return MADE[-1]


@pytest.mark.parametrize("concurrency", [1, 4])
def test_requests_in_flight_are_as_many_as_configured_and_the_vectors_keep_their_order(concurrency: int) -> None:
    stub = PacedEmbeddings(latency=0.2)
    with StubServer(stub) as server:
        vectors = _embedder(server.url + "/v1", batch_size=2, max_concurrent=concurrency).embed_documents(TEXTS)
    assert stub.most_in_flight == concurrency
    assert len(stub.arrivals) == len(TEXTS) // 2
    one_by_one = np.vstack([stub.answer_vector(text) for text in TEXTS])
    assert vectors.shape == (16, 64) and np.allclose(vectors, one_by_one, atol=1e-6)


def test_a_429_holds_back_every_request_until_its_retry_after() -> None:
    stub = PacedEmbeddings(latency=0.3, failures=[(429, {"Retry-After": "1"})])
    with StubServer(stub) as server:
        vectors = _embedder(server.url + "/v1", batch_size=4, max_concurrent=2).embed_documents(TEXTS)
    assert vectors.shape == (16, 64) and len(stub.arrivals) == 5  # the four batches, one of them twice
    first, second, *later = sorted(stub.arrivals)
    limited = next(t for t, status in (first, second) if status == 429)
    # The other first request was already in flight beside the 429; every one sent after it waited.
    assert min(t for t, _ in later) - limited >= 0.95, [round(t - limited, 3) for t, _ in stub.arrivals]


def test_a_5xx_is_tried_again_with_backoff_and_an_http_date_retry_after_is_read() -> None:
    # An HTTP date has whole seconds: the retry is due at the start of the sixth second from now,
    # at least 3.5 s after the 500 comes, where the embedder's own backoff would be 2 s at most.
    due = int(time.time()) + 6
    wall_minus_monotonic = time.time() - time.monotonic()
    stub = PacedEmbeddings(
        latency=0.0, failures=[(503, {}), (502, {}), (500, {"Retry-After": formatdate(due, usegmt=True)})]
    )
    with StubServer(stub) as server:
        vector = _embedder(server.url + "/v1", max_retries=3).embed_query("question")
    assert vector.shape == (64,) and [s for _, s in stub.arrivals] == [503, 502, 500, 200]
    gaps = [b - a for (a, _), (b, _) in zip(stub.arrivals, stub.arrivals[1:], strict=False)]
    assert gaps[0] >= 0.24 and gaps[1] >= 0.49, gaps  # 0.5 s then 1 s, jittered down to half at most
    retried = stub.arrivals[3][0] + wall_minus_monotonic
    assert retried >= due - 0.05, (retried - due, gaps)  # not before the date the server named


def test_the_tries_run_out_with_the_servers_status_and_no_key() -> None:
    stub = PacedEmbeddings(latency=0.0, failures=[(429, {"Retry-After": "0"})] * 3)
    with StubServer(stub) as server, pytest.raises(UnavailableError) as raised:
        _embedder(server.url + "/v1", max_retries=2).embed_query("question")
    assert raised.value.message == "The embedding server answered HTTP 429" and len(stub.arrivals) == 3
    assert FAKE_KEY not in str(raised.value.to_dict())


def test_a_request_the_server_refuses_is_not_tried_again() -> None:
    stub = PacedEmbeddings(latency=0.5, failures=[(400, {})])
    with StubServer(stub) as server:
        with pytest.raises(UnavailableError) as raised:
            _embedder(server.url + "/v1", batch_size=2, max_concurrent=4).embed_documents(TEXTS)
        sent = [r.body["input"] for r in server.requests]
    assert raised.value.message == "The embedding server answered HTTP 400"
    assert stub.arrivals[0][1] == 400 and sent.count(sent[0]) == 1
    assert len(sent) <= 4  # at most those in flight beside it; the batches left are not sent


def test_no_server_is_tried_again_then_a_clear_error() -> None:
    started = time.monotonic()
    with pytest.raises(UnavailableError) as raised:
        _embedder(f"http://127.0.0.1:{free_port()}/v1", max_retries=1).embed_query("question")
    assert raised.value.message.startswith("Cannot reach the embedding server") and time.monotonic() - started >= 0.25


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [({"Retry-After": "2"}, 2.0), ({"retry-after-ms": "1500"}, 1.5), ({"Retry-After": "soon"}, None), ({}, None)],
)
def test_retry_after_is_read_in_seconds_milliseconds_or_not_at_all(
    headers: dict[str, str], seconds: float | None
) -> None:
    assert retry_after(headers) == seconds


def test_the_settings_take_upstreams_place_and_names() -> None:
    top = config_from_dict({"embedding": {"max_concurrent": 16, "max_retries": 5, "dense": {"provider": "hash"}}})
    assert (top.embedding.max_concurrent, top.embedding.max_retries) == (16, 5)
    dense = config_from_dict({"embedding": {"dense": {"provider": "hash", "max_concurrent": 2}}})
    assert (dense.embedding.max_concurrent, dense.embedding.max_retries) == (2, 3)
    assert config_from_dict({}).embedding.max_concurrent == 10  # upstream's default
    with pytest.raises(ConfigError, match="max_concurrent must be at least 1"):
        config_from_dict({"embedding": {"max_concurrent": 0}})
    with pytest.raises(ConfigError, match="must be an integer"):
        config_from_dict({"embedding": {"dense": {"max_retries": "many"}}})


def test_an_add_through_a_rate_limited_slow_server_embeds_everything(cli: Cli, tmp_path: Path) -> None:
    files = {f"note-{i}.md": f"# Note {i}\n\nThe note about topic {i}.\n" for i in range(12)}
    tree = make_tree(tmp_path / "notes", files)
    stub = PacedEmbeddings(latency=0.1, failures=[(429, {"Retry-After": "0.5"}), (503, {})])
    with StubServer(stub) as server:
        dense = {"provider": "openai", "model": "stub", "api_base": server.url + "/v1", "api_key": FAKE_KEY,
                 "dimension": 64, "batch_size": 4}  # fmt: skip
        conf = write_config(tmp_path / "ov.conf", {"embedding": {"dense": dense, "max_concurrent": 4}})
        added = cli("add-resource", tree, "--store", tmp_path / "store", "--config", conf, "-o", "json")
        assert added.code == 0, added.err
        assert added.json()["result"]["added"] == 12
        found = cli(
            "find", "topic 7", "--store", tmp_path / "store", "--config", conf, "--mode", "vector", "-o", "json"
        )
    assert found.code == 0 and found.json()["result"]["total"] > 0, found
    assert stub.most_in_flight > 1 and FAKE_KEY not in added.out + added.err
    statuses = [s for _, s in stub.arrivals]
    assert statuses[:2] == [429, 503] and statuses.count(200) == len(statuses) - 2
    assert json.loads(added.out)["result"]["added"] == 12


def test_an_answer_that_is_no_embeddings_list_is_a_clear_error_and_base64_is_read() -> None:
    from servers import Reply, Request

    def broken(request: Request) -> Reply:
        return Reply(body={"data": [{"index": 0, "embedding": {"not": "a vector"}}]})

    with StubServer(broken) as server, pytest.raises(UnavailableError) as raised:
        _embedder(server.url + "/v1").embed_query("question")
    assert raised.value.message == "The embedding server's answer is not an embeddings list"

    import base64

    packed = base64.b64encode(np.arange(64, dtype="<f4").tobytes()).decode()

    def base64_vectors(request: Request) -> Reply:
        return Reply(body={"data": [{"index": 0, "embedding": packed}]})

    with StubServer(base64_vectors) as server:
        vector = _embedder(server.url + "/v1").embed_query("question")
    assert np.allclose(vector, np.arange(64) / np.linalg.norm(np.arange(64)))
