"""The command line's client over the stdlib (``openviking.http_client.commandline``): it sends what
httpx would send, answers as the SDK's client does, finds a new connection when the server
dropped the kept one, and leaves proxies to httpx.

Its failures and retries are tested beside the SDK's client in ``test_http_client.py``.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
from helpers import EN_FILES, HASH_CONF, make_tree
from ovserver import thread_server
from servers import Reply, StubServer, free_port

import openviking as ov
from openviking.http_client import CommandLineHTTPClient
from openviking.http_client.commandline import query_string

H = "viking://resources/handbook"


@pytest.mark.parametrize(
    "params",
    [
        {"uri": "viking://resources/a b/ü?&=#.md", "recursive": True, "simple": False},
        {"uri": "viking://", "node_limit": 3, "score": 0.25, "tags": ["a=b", "c d", "日本"]},
        {"empty": "", "none": None, "slash": "/x/y"},
    ],
)
def test_a_query_is_encoded_as_httpx_encodes_it(params: dict[str, Any]) -> None:
    theirs = httpx.Request("GET", "http://host/p", params=params).url.query.decode("ascii")
    ours = query_string(params)
    assert ours.startswith("?")
    assert parse_qsl(ours[1:], keep_blank_values=True) == parse_qsl(theirs, keep_blank_values=True)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("plain")
    store = base / "store"
    with ov.OpenViking(path=store, config=dict(HASH_CONF)) as client:
        client.add_resource(make_tree(base / "handbook", EN_FILES))
    with thread_server(HASH_CONF, store) as url:
        yield url


def test_its_answers_are_the_sdk_clients(served: str) -> None:
    plain, sdk = CommandLineHTTPClient(served), ov.SyncHTTPClient(served)
    calls = [
        lambda c: c.find("how do users authenticate", target_uri=[H], limit=3),
        lambda c: c.grep(H, "docker", case_insensitive=True, exclude_uri=f"{H}/notes"),
        lambda c: c.glob("**/*.md", H),
        lambda c: c.ls(H, recursive=True),
        lambda c: c.read(f"{H}/auth.md", offset=1, limit=2),
        lambda c: c.stat(f"{H}/auth.md"),
    ]
    for call in calls:
        mine, theirs = call(plain), call(sdk)
        assert _timeless(mine) == _timeless(theirs)
    assert plain._plain is not None and plain._http is None  # nothing went through httpx
    plain.close()
    sdk.close()


def _timeless(value: Any) -> Any:
    data = value.to_dict() if hasattr(value, "to_dict") else value
    if isinstance(data, list):
        return [_timeless(v) for v in data]
    if isinstance(data, dict):
        return {k: _timeless(v) for k, v in data.items() if k not in ("time", "modTime", "mod_time")}
    return data


def test_an_upload_goes_through_httpx(served: str, tmp_path: Path) -> None:
    client = CommandLineHTTPClient(served, warn=lambda message: None)
    source = make_tree(tmp_path / "upload", {"up.md": "# Up\n\nUploaded through httpx.\n"})
    client.add_resource(source / "up.md", to="viking://resources/uploaded/up.md")
    assert client.read("viking://resources/uploaded/up.md") == "# Up\n\nUploaded through httpx.\n"
    client.close()


class _DroppingServer:
    """Answers each request on a connection, then closes that connection without saying so
    (no ``Connection: close``), as a server whose keep-alive ran out does."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.dropped = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    0,
                )
                while len(body) < length:
                    body += conn.recv(65536)
                self.requests.append(head.split(b"\r\n")[0].decode())
                answer = b'{"status": "ok", "result": {"uri": "viking://resources/x"}, "time": 0.0}'
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(answer)}\r\n\r\n".encode()
                    + answer
                )
            self.dropped.set()

    def __enter__(self) -> _DroppingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._listener.close()


def test_a_connection_the_server_dropped_is_replaced_before_a_write() -> None:
    with _DroppingServer() as server:
        client = CommandLineHTTPClient(server.url)
        assert client.mkdir("viking://resources/x").uri == "viking://resources/x"
        assert server.dropped.wait(5)
        # Sent on the dropped connection, the write would fail as a broken connection, which a write
        # may not retry: it must go on a new one, once.
        assert client.mkdir("viking://resources/x").uri == "viking://resources/x"
        assert server.requests == ["POST /api/v1/fs/mkdir HTTP/1.1"] * 2
        client.close()


def test_a_proxy_in_the_environment_is_left_to_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    envelope = {"status": "ok", "result": {"uri": "viking://resources/x"}, "time": 0.0}
    with StubServer(lambda request: Reply(200, envelope)) as proxy:
        monkeypatch.setenv("http_proxy", proxy.url)
        target = f"http://127.0.0.1:{free_port()}"  # nothing listens there: only the proxy answers
        client = CommandLineHTTPClient(target)
        assert client.mkdir("viking://resources/x").uri == "viking://resources/x"
        assert [urlsplit(r.path).netloc for r in proxy.requests] == [urlsplit(target).netloc]
        assert client._plain is None
        client.close()
