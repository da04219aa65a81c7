"""Rerankers: an OpenAI-compatible ``/rerank`` endpoint (Jina, vLLM, DashScope, TEI...) and Cohere v2.

The wire formats, as upstream's rerank clients (``openviking/models/rerank/``) use them:

* ``openai``: POST ``{"model", "query", "documents"}`` to ``api_base``, which is the **full**
  endpoint URL (``http://host:8000/v1/rerank``); the reply is
  ``{"results": [{"index", "relevance_score"}]}`` (``data`` for ``results`` and ``score``
  for ``relevance_score`` are accepted too). Results may come in any order and may be sparse:
  a document without a result scores 0.0.
* ``cohere``: POST ``{"model", "query", "documents", "top_n", "return_documents": false}`` to
  ``{api_base}/v2/rerank`` (``https://api.cohere.com`` by default; an ``api_base`` that already
  ends in ``/rerank`` is used as is); the reply is read the same way.

:meth:`Reranker.rerank` returns one finite score per document, in input order, or raises:
:class:`~openviking.errors.DeadlineExceededError` on a timeout,
:class:`~openviking.errors.UnavailableError` on anything else (unreachable, HTTP error, a reply
that is not JSON, an index out of range, a duplicate index, more results than documents, a
score that is not a finite number). The caller keeps its own scores for the whole batch then.
HTTP goes through the ``openai`` client's low-level ``post``: the same connection handling,
timeouts and ``Authorization: Bearer`` header as the chat and embedding clients.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import Any, Protocol

from openviking.config import RerankConfig
from openviking.errors import DeadlineExceededError, OpenVikingError, UnavailableError

from .llm import safe_url

__all__ = [
    "CohereReranker",
    "OpenAIReranker",
    "Reranker",
    "estimate_tokens",
    "make_reranker",
    "parse_scores",
    "truncate_to_tokens",
]

OPENAI_DEFAULT_MODEL = "qwen3-rerank"
COHERE_DEFAULT_MODEL = "rerank-v3.5"
COHERE_DEFAULT_BASE = "https://api.cohere.com"
MIN_TOKEN_BUDGET = 128
TRUNCATION_MARK = "\n…\n"
_NOT_JSON = object()


class Reranker(Protocol):
    """Scores documents against a query (higher is more relevant)."""

    identity: str

    def rerank(self, query: str, documents: list[str]) -> list[float]:
        """One finite score per document, in input order; raises on any failure."""
        ...


# ---------------------------------------------------------------------------- token budget
def estimate_tokens(text: str) -> int:
    """Upstream's estimate: CJK, kana, hangul and full-width 1.5, astral 2.0, others 0.25 each."""
    return math.ceil(sum(map(_char_tokens, text)))


def _char_tokens(ch: str) -> float:
    code = ord(ch)
    if code > 0xFFFF:
        return 2.0
    if (
        0x3040 <= code <= 0x30FF
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xAC00 <= code <= 0xD7AF
        or 0xF900 <= code <= 0xFAFF
        or 0xFF00 <= code <= 0xFFEF
    ):
        return 1.5
    return 0.25


def _prefix_within(text: str, budget: float) -> str:
    """The longest head of ``text`` whose characters add up to at most ``budget`` tokens."""
    used = 0.0
    for index, ch in enumerate(text):
        used += _char_tokens(ch)
        if used > budget:
            return text[:index]
    return text


def truncate_to_tokens(text: str, budget: int) -> str:
    """``text`` within ``budget`` estimated tokens: its head (75%) and tail, joined by ``…``."""
    if budget <= 0 or estimate_tokens(text) <= budget:
        return text
    room = max(1, budget - estimate_tokens(TRUNCATION_MARK))
    head = _prefix_within(text, room * 0.75)
    tail = _prefix_within(text[len(head) :][::-1], room - estimate_tokens(head))[::-1]
    return head + TRUNCATION_MARK + tail


def _fit(query: str, documents: Sequence[str], budget: int) -> tuple[str, list[str]]:
    if budget <= 0:
        return query, list(documents)
    budget = max(budget, MIN_TOKEN_BUDGET)
    if estimate_tokens(query) > budget * 0.75:
        query = truncate_to_tokens(query, int(budget * 0.75))
    room = max(1, budget - estimate_tokens(query))
    return query, [truncate_to_tokens(d, room) for d in documents]


# ---------------------------------------------------------------------------- replies
def parse_scores(payload: Any, count: int) -> list[float]:
    """Scores in input order from a rerank reply, or :class:`UnavailableError` when malformed.

    Accepts ``{"results": [...]}``, ``{"data": [...]}``, ``{"output": {"results": [...]}}`` or
    a bare list; each item ``{"index", "relevance_score" | "score"}``. Items without an index
    are taken in order (then there must be exactly one per document).
    """
    items: Any = payload
    if isinstance(payload, dict):
        items = payload.get("results", payload.get("data"))
        if items is None and isinstance(payload.get("output"), dict):
            items = payload["output"].get("results")
    if not isinstance(items, list) or not items:
        raise _malformed("no results")
    if len(items) > count:
        raise _malformed(f"{len(items)} results for {count} documents")
    scores = [0.0] * count
    seen: set[int] = set()
    positional = all(isinstance(i, dict) and "index" not in i for i in items)
    if positional and len(items) != count:
        raise _malformed(f"{len(items)} results for {count} documents")
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise _malformed("a result is not an object")
        index = position if positional else item.get("index")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise _malformed(f"result index {index!r} is out of range for {count} documents")
        if index in seen:
            raise _malformed(f"result index {index} appears twice")
        seen.add(index)
        raw = item.get("relevance_score", item.get("score"))
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise _malformed(f"the score of document {index} is not a number")
        score = float(raw)
        if not math.isfinite(score):
            raise _malformed(f"the score of document {index} is {score}")
        scores[index] = score
    return scores


def _malformed(what: str) -> UnavailableError:
    return UnavailableError(f"The reranker sent a malformed reply: {what}", details={"reason": what})


# ---------------------------------------------------------------------------- clients
class _HTTPReranker:
    provider = ""
    default_model = ""

    def __init__(self, config: RerankConfig) -> None:
        self.config = config
        self.model = config.model or self.default_model
        self.identity = f"{self.provider}:{self.model}"
        self._client: Any = None

    def endpoint(self) -> str:
        raise NotImplementedError

    def body(self, query: str, documents: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def _openai(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                base_url=self.endpoint(),
                api_key=self.config.api_key or os.environ.get("OPENAI_API_KEY") or "no-key",
                timeout=self.config.timeout,
                max_retries=0,  # a slow reranker costs the search at most one timeout
            )
        return self._client

    def rerank(self, query: str, documents: list[str]) -> list[float]:
        """Scores of ``documents`` against ``query`` (see the module docstring for the errors)."""
        if not documents:
            return []
        import openai

        query, documents = _fit(query, documents, self.config.max_input_tokens)
        url = self.endpoint()
        where = safe_url(url)
        error: OpenVikingError | None = None
        text = ""
        try:
            text = self._openai().post(url, cast_to=str, body=self.body(query, documents))
        except openai.APITimeoutError:
            error = DeadlineExceededError(
                f"The reranker at {where} did not answer within {self.config.timeout:g}s",
                details={"api_base": where, "timeout": self.config.timeout},
            )
        except openai.APIConnectionError:
            error = UnavailableError(f"Cannot reach the reranker at {where}", details={"api_base": where})
        except openai.APIStatusError as exc:
            error = UnavailableError(
                f"The reranker at {where} answered HTTP {exc.status_code}",
                details={"api_base": where, "status": exc.status_code},
            )
        except openai.OpenAIError as exc:
            error = UnavailableError(
                f"The rerank request to {where} failed ({type(exc).__name__})", details={"api_base": where}
            )
        if error is not None:
            raise error  # not chained: the openai error carries the server's reply text
        try:
            payload = json.loads(text)
        except (TypeError, ValueError):
            payload = _NOT_JSON
        if payload is _NOT_JSON:
            raise _malformed("not JSON")
        return parse_scores(payload, len(documents))


class OpenAIReranker(_HTTPReranker):
    """An OpenAI-compatible ``/rerank`` endpoint; ``api_base`` is the full endpoint URL."""

    provider = "openai"
    default_model = OPENAI_DEFAULT_MODEL

    def endpoint(self) -> str:
        return str(self.config.api_base)

    def body(self, query: str, documents: list[str]) -> dict[str, Any]:
        return {"model": self.model, "query": query, "documents": documents}


class CohereReranker(_HTTPReranker):
    """Cohere's ``/v2/rerank`` (or a compatible server at ``api_base``)."""

    provider = "cohere"
    default_model = COHERE_DEFAULT_MODEL

    def endpoint(self) -> str:
        base = (self.config.api_base or COHERE_DEFAULT_BASE).rstrip("/")
        return base if base.endswith("/rerank") else f"{base}/v2/rerank"

    def body(self, query: str, documents: list[str]) -> dict[str, Any]:
        return {
            "model": self.model,
            "query": query,
            "documents": documents,
            "top_n": len(documents),
            "return_documents": False,
        }


def make_reranker(config: RerankConfig) -> Reranker | None:
    """The reranker ``config`` describes, or None when it is not usable (no provider, no endpoint)."""
    if not config.is_available:
        return None
    provider = config.resolved_provider
    if provider == "cohere":
        return CohereReranker(config)
    if provider == "openai":
        return OpenAIReranker(config)
    return None
