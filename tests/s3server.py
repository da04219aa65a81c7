"""A real S3-compatible server on 127.0.0.1 for the object-storage tests and the bench.

* :class:`MotoServer`: moto's server mode (``python -m moto.server``) as a subprocess; a bucket
  is made with a plain HTTP PUT (moto checks no signature unless asked to).
* :class:`CountingProxy`: a forwarding proxy in front of it that records each request's
  method, path and query, so a test or the bench can count the GETs and LISTs an operation
  costs.

No mocks: LanceDB and obstore talk HTTP to these as they would to a bucket.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

# Distinctive, so that a leak into any output is easy to spot.
ACCESS_KEY = "AKIAOVTEST7F3A9C1E5B"
SECRET_KEY = "ovS3cret7f3a9c1e5b2d4f60a8c7e9b1d3f5a7c9e1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class MotoServer:
    """``python -m moto.server`` on a free port of 127.0.0.1, until :meth:`stop`.

    ``auth``: moto checks credentials (its IAM emulation): :attr:`keys` are the only ones it
    takes, and :attr:`auth_bucket` is a bucket they may use."""

    def __init__(self, *, auth: bool = False) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        # moto lets this many requests through unchecked: the four that set the user up below.
        env = {"INITIAL_NO_AUTH_ACTION_COUNT": "4"} if auth else {}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **env},
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=2).read()
                break
            except OSError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto's server did not start") from None
                time.sleep(0.1)
        self.keys = (ACCESS_KEY, SECRET_KEY)
        self.auth_bucket = ""
        if auth:
            self._set_up_a_user()

    def _set_up_a_user(self) -> None:
        import boto3  # moto's own dependency

        anyone = {"endpoint_url": self.endpoint, "region_name": "us-east-1"}
        iam = boto3.client("iam", aws_access_key_id="setup", aws_secret_access_key="setup", **anyone)
        iam.create_user(UserName="ov")
        policy = '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}'
        iam.put_user_policy(UserName="ov", PolicyName="all", PolicyDocument=policy)
        key = iam.create_access_key(UserName="ov")["AccessKey"]
        self.keys = (key["AccessKeyId"], key["SecretAccessKey"])
        s3 = boto3.client("s3", aws_access_key_id=self.keys[0], aws_secret_access_key=self.keys[1], **anyone)
        self.auth_bucket = f"ov-{uuid.uuid4().hex[:16]}"
        s3.create_bucket(Bucket=self.auth_bucket)

    def bucket(self, name: str | None = None) -> str:
        """Create a bucket (a fresh name when none is given) and return its name."""
        name = name or f"ov-{uuid.uuid4().hex[:16]}"
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        urllib.request.urlopen(request, timeout=10).read()
        return name

    def stop(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()


@dataclass(frozen=True)
class Seen:
    """One request the proxy forwarded."""

    method: str
    path: str
    query: dict[str, list[str]]
    size: int = 0  # bytes of the reply's body

    @property
    def kind(self) -> str:
        """LIST, GET (data), HEAD, PUT, POST or DELETE."""
        if self.method == "GET" and ("list-type" in self.query or "prefix" in self.query):
            return "LIST"
        return self.method


class CountingProxy:
    """A proxy on a free port of 127.0.0.1 in front of ``upstream``, recording each request."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    body = _read_chunked(self.rfile)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "transfer-encoding"}
                headers["Content-Length"] = str(len(body))
                conn = http.client.HTTPConnection(*proxy._upstream, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body or None, headers=headers)
                    reply = conn.getresponse()
                    data = reply.read()
                finally:
                    conn.close()
                split = urlsplit(self.path)
                with proxy._lock:
                    proxy.seen.append(
                        Seen(self.command, split.path, parse_qs(split.query, keep_blank_values=True), len(data))
                    )
                self.send_response(reply.status)
                for key, value in reply.getheaders():
                    if key.lower() not in ("transfer-encoding", "content-length", "connection", "server", "date"):
                        self.send_header(key, value)
                # A HEAD reply has no body but says the object's size, which a reader sizes its range by.
                size = reply.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", size or str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward  # noqa: N815

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def reset(self) -> None:
        with self._lock:
            self.seen.clear()

    def counts(self) -> Counter[str]:
        """Requests by kind (LIST, GET, HEAD, PUT...) since the last :meth:`reset`."""
        with self._lock:
            return Counter(seen.kind for seen in self.seen)

    def bytes_read(self) -> int:
        """Bytes of the GET replies since the last :meth:`reset`."""
        with self._lock:
            return sum(seen.size for seen in self.seen if seen.method == "GET")

    @contextlib.contextmanager
    def counting(self) -> Iterator[Counter[str]]:
        """``with proxy.counting() as counts:`` holds the requests made inside, by kind."""
        self.reset()
        counts: Counter[str] = Counter()
        try:
            yield counts
        finally:
            counts.update(self.counts())

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _read_chunked(stream: Any) -> bytes:
    chunks = []
    while True:
        size = int(stream.readline().strip().split(b";")[0], 16)
        if size == 0:
            stream.readline()
            return b"".join(chunks)
        chunks.append(stream.read(size))
        stream.readline()


def storage_options(endpoint: str, keys: tuple[str, str] = (ACCESS_KEY, SECRET_KEY)) -> dict[str, Any]:
    """``storage.options`` for a local S3 server."""
    return {
        "endpoint": endpoint,
        "region": "us-east-1",
        "allow_http": True,
        "aws_access_key_id": keys[0],
        "aws_secret_access_key": keys[1],
    }


def s3_config(
    url: str, endpoint: str, *, keys: tuple[str, str] = (ACCESS_KEY, SECRET_KEY), **storage: Any
) -> dict[str, Any]:
    """An ov.conf object: the store at ``url`` on the server at ``endpoint``, the hash embedder."""
    return {
        "storage": {"workspace": url, "options": storage_options(endpoint, keys), **storage},
        "embedding": {"dense": {"provider": "hash"}},
    }


@dataclass
class S3Store:
    """A fresh bucket on the session's server, and an ov.conf naming a store in it."""

    url: str
    bucket: str
    endpoint: str
    conf: Any  # Path of the ov.conf

    def config(self) -> Any:
        """The ov.conf as a loaded Config, for the SDK."""
        from openviking.config import load_config

        return load_config(self.conf)
