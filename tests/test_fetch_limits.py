"""What an add of a URL may cost and reach, against real servers on 127.0.0.1: a server that
sends its answer a byte every 0.5 s (headers or body) is cut at the fetch's time limit,
whatever it sends; slow fetches cannot hold every worker thread of ``openviking serve``
(bounds per caller and in all); a user key reaches public addresses only, through a proxy too;
and a URL that cannot be parsed is a bad argument, never a 500.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import CliResult, cli_unharmed, snapshot
from ovserver import ALICE_KEY, BOB_KEY, ROOT_KEY, body_of, error_of, headers, keyed_config, thread_server

from openviking.errors import DeadlineExceededError, UnavailableError
from openviking.origins.fetch import fetch
from openviking.server.fetching import Fetches

Cli = Callable[..., CliResult]
TIMEOUT = 3  # OPENVIKING_FETCH_TIMEOUT in these tests
# Far more than a fetch takes once the timeout holds; far less than the slow server keeps sending.
WITHIN = TIMEOUT + 7
LASTING = 25.0
# A public address (literal, so no name is resolved): reached only through the test's proxy.
PUBLIC = "93.184.216.34"


class Trickle:
    """An HTTP server, and a proxy, on 127.0.0.1 that sends its answer a byte every 0.5 s: its
    status line and headers (``headers``), or, after the headers at once, its body (``body``),
    for :data:`LASTING` seconds at most. It counts the requests it received."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.requests: list[str] = []
        self._stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def __enter__(self) -> Trickle:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._listener.close()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = self._listener.accept()
                threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n"
        with connection, contextlib.suppress(OSError):
            received = b""
            while b"\r\n\r\n" not in received:
                data = connection.recv(4096)
                if not data:
                    return
                received += data
            self.requests.append(received.split(b"\r\n", 1)[0].decode())
            if self.mode == "body":
                connection.sendall(head)
            dribble = iter(head) if self.mode == "headers" else iter(lambda: ord("x"), None)
            ends = time.monotonic() + LASTING
            for byte in dribble:
                if time.monotonic() > ends or self._stopping.wait(0.5):
                    return
                connection.sendall(bytes([byte]))


@pytest.fixture
def limited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENVIKING_FETCH_TIMEOUT", str(TIMEOUT))


@pytest.mark.parametrize("mode", ["headers", "body"])
def test_the_time_limit_bounds_the_whole_answer(tmp_path: Path, limited: None, mode: str) -> None:
    with Trickle(mode) as slow:
        started = time.monotonic()
        with pytest.raises(DeadlineExceededError) as info:
            fetch(f"{slow.url}/slow.txt", tmp_path)
        assert time.monotonic() - started < WITHIN
    assert info.value.message == f"{slow.url}/slow.txt did not answer within 3 s"
    assert info.value.details == {"path": f"{slow.url}/slow.txt", "timeout_seconds": 3.0}


@pytest.mark.parametrize("mode", ["headers", "body"])
def test_the_cli_gives_up_at_the_time_limit(handbook_ov: Cli, tmp_path: Path, limited: None, mode: str) -> None:
    with Trickle(mode) as slow:
        address = f"{slow.url}/notes.txt"
        started = time.monotonic()
        failed = handbook_ov("add-resource", address, "-o", "json")
        assert time.monotonic() - started < WITHIN and failed.code == 1, failed
        message = f"{address} did not answer within 3 s"
        cli_unharmed(handbook_ov, tmp_path / "store", ["add-resource", address], "DEADLINE_EXCEEDED", 1, message)


@pytest.fixture
def proxied(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Send the server's fetches through the proxy at a URL (the tests' own requests go direct)."""

    def through(proxy: str) -> None:
        for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"):
            monkeypatch.setenv(name, proxy)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.setenv(name, "127.0.0.1,localhost")
        monkeypatch.delenv("ALL_PROXY", raising=False)
        monkeypatch.delenv("all_proxy", raising=False)

    return through


def test_a_server_gives_up_at_the_time_limit(tmp_path: Path, limited: None, proxied: Callable[[str], None]) -> None:
    with Trickle("body") as slow, thread_server(keyed_config(), tmp_path / "store") as url:
        proxied(slow.url)
        with httpx.Client(base_url=url, timeout=60) as http:
            for key, address in ((ROOT_KEY, f"{slow.url}/a.txt"), (ALICE_KEY, f"http://{PUBLIC}/b.txt")):
                started = time.monotonic()
                response = http.post("/api/v1/resources", json={"path": address}, headers=headers(key))
                assert time.monotonic() - started < WITHIN
                error = error_of(response, 504, "DEADLINE_EXCEEDED")
                assert error["message"] == f"{address} did not answer within 3 s"
            assert body_of(http.get("/api/v1/fs/ls", params={"uri": "viking://resources"}, headers=headers())) == []


def test_slow_fetches_cannot_starve_other_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, proxied: Callable[[str], None]
) -> None:
    monkeypatch.setenv("OPENVIKING_FETCH_TIMEOUT", "15")
    with Trickle("body") as slow, thread_server(keyed_config(), tmp_path / "store") as url:
        proxied(slow.url)

        def add(key: str, name: str) -> httpx.Response:
            body = {"path": f"http://{PUBLIC}/{name}"}
            return httpx.post(f"{url}/api/v1/resources", json=body, headers=headers(key), timeout=120)

        def eventually(condition: Callable[[], bool], what: str) -> None:
            deadline = time.monotonic() + 120
            while not condition():
                assert time.monotonic() < deadline, what
                time.sleep(0.05)

        with ThreadPoolExecutor(41) as pool:
            # Forty adds of a slow URL at once (as many as the server has worker threads).
            alices = [pool.submit(add, ALICE_KEY, f"slow-{n}.txt") for n in range(40)]
            eventually(lambda: sum(future.done() for future in alices) == 38, "the refusals never came")
            eventually(lambda: len(slow.requests) == 2, "the two fetches never reached the slow server")
            refused = [future.result() for future in alices if future.done()]
            fetching = [future for future in alices if not future.done()]
            assert len(fetching) == 2
            for response in refused:
                error = error_of(response, 503, "UNAVAILABLE")
                assert (
                    error["message"]
                    == "You have 2 fetches under way already, as many as this server makes for one caller"
                )
                assert (
                    error["details"] == {"limit": 2} and error["hint"] == "Wait for one to end, then add the URL again"
                )
            # Another caller is answered while alice's two fetches still hold their threads, and may fetch too.
            params = {"uri": "viking://resources"}
            listed = httpx.get(f"{url}/api/v1/fs/ls", params=params, headers=headers(BOB_KEY), timeout=120)
            assert body_of(listed) == []
            assert sum(future.done() for future in alices) == 38, "bob was answered only once alice's fetches ended"
            bobs = pool.submit(add, BOB_KEY, "bob.txt")
            eventually(lambda: len(slow.requests) == 3 or bobs.done(), "bob's fetch never started")
            assert len(slow.requests) == 3, bobs.result().text
            for response in [future.result() for future in [*fetching, bobs]]:
                error_of(response, 504, "DEADLINE_EXCEEDED")


def test_fetches_are_bounded_in_all() -> None:
    fetches = Fetches(in_all=3, per_caller=2)
    with fetches.slot("user:alice"), fetches.slot("user:alice"), fetches.slot("user:bob"):
        with pytest.raises(UnavailableError) as info:
            with fetches.slot("user:carol"):
                pass
        assert info.value.message == "The server has 3 fetches under way already, as many as it makes at once"
    with fetches.slot("user:carol"):  # all given back
        pass


# ----------------------------------------------------------------------------- through a proxy
class Proxy:
    """A tiny HTTP proxy on 127.0.0.1 standing for a network the server must not reach for a
    user: it answers every absolute URL itself, as the machines behind it would."""

    PAGES: dict[str, tuple[int, dict[str, str], bytes]] = {
        "http://internal-only.corp/admin": (
            200,
            {},
            b"<html><body><h1>Admin</h1><p>internal secrets</p></body></html>",
        ),
        f"http://{PUBLIC}/redirect": (302, {"Location": "http://metadata.google.internal/computeMetadata/v1/"}, b""),
        "http://metadata.google.internal/computeMetadata/v1/": (200, {}, b"<html><body>instance token</body></html>"),
        f"http://{PUBLIC}/page.html": (200, {}, b"<html><body><h1>Public</h1><p>a public page</p></body></html>"),
    }

    def __init__(self) -> None:
        self.asked: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                outer.asked.append(self.path)
                status, extra, data = outer.PAGES.get(self.path, (404, {}, b"no"))
                self.send_response(status)
                for name, value in {"Content-Type": "text/html", "Content-Length": str(len(data)), **extra}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Proxy:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy(proxied: Callable[[str], None]) -> Iterator[Proxy]:
    with Proxy() as running:
        proxied(running.url)
        yield running


def test_a_user_key_cannot_reach_internal_names_through_a_proxy(tmp_path: Path, proxy: Proxy) -> None:
    with thread_server(keyed_config(), tmp_path / "store") as url, httpx.Client(base_url=url, timeout=60) as http:
        before = snapshot(tmp_path / "store")
        for address, host in [
            ("http://internal-only.corp/admin", "internal-only.corp"),
            (f"http://{PUBLIC}/redirect", "metadata.google.internal"),
        ]:
            response = http.post("/api/v1/resources", json={"path": address}, headers=headers(ALICE_KEY))
            error = error_of(response, 403, "PERMISSION_DENIED")
            unresolved = f"{host} does not resolve here to a public address, and this server fetches only public ones"
            private = f"{host} is not a public address, and this server fetches only public ones"  # it resolved here
            assert error["message"] in (unresolved, private), error
            assert error["details"] == {"host": host}
        assert "http://internal-only.corp/admin" not in proxy.asked
        assert "http://metadata.google.internal/computeMetadata/v1/" not in proxy.asked
        assert snapshot(tmp_path / "store") == before
        # A public address is fetched through the proxy, as any fetch is.
        page = f"http://{PUBLIC}/page.html"
        added = body_of(http.post("/api/v1/resources", json={"path": page}, headers=headers(ALICE_KEY)))
        assert added["added"] == 1 and proxy.asked[-1] == page
        found = body_of(http.get("/api/v1/fs/stat", params={"uri": added["root_uri"]}, headers=headers(ALICE_KEY)))
        assert found["source"] == page
        # A source_name says where the page was, in the user's own words: never a file of the server.
        named = {"path": page, "source_name": "/etc/passwd", "to": "viking://user/alice/resources/page.html"}
        body_of(http.post("/api/v1/resources", json=named, headers=headers(ALICE_KEY)))
        stat = body_of(http.get("/api/v1/fs/stat", params={"uri": named["to"]}, headers=headers(ALICE_KEY)))
        assert stat["source"] == "upload://alice/etc/passwd"
        # The root key's fetches are the operator's own: its proxy decides what they reach.
        inside = body_of(
            http.post("/api/v1/resources", json={"path": "http://internal-only.corp/admin"}, headers=headers(ROOT_KEY))
        )
        assert inside["added"] == 1


# ----------------------------------------------------------------------------- addresses that do not parse
@pytest.mark.parametrize(
    ("address", "shown", "reason"),
    [
        ("http://u:hunter2@[::1/", "http://[::1/", "Invalid port: ':1'"),
        ("http://example.com/a\u0000b", "http://example.com/a\u0000b", "Invalid non-printable ASCII character in URL"),
    ],
)
def test_an_address_that_does_not_parse_is_a_bad_argument(
    tmp_path: Path, handbook_ov: Cli, address: str, shown: str, reason: str
) -> None:
    with thread_server(keyed_config(), tmp_path / "served") as url, httpx.Client(base_url=url, timeout=60) as http:
        for key in (ROOT_KEY, ALICE_KEY):
            response = http.post("/api/v1/resources", json={"path": address}, headers=headers(key))
            error = error_of(response, 400, "INVALID_ARGUMENT")
            assert error["message"].startswith(f"Not a web address: {shown} ({reason}"), error
            assert "hunter2" not in response.text
    if "\u0000" not in address:  # no command line holds a NUL
        failed, _table = cli_unharmed(
            handbook_ov,
            tmp_path / "store",
            ["add-resource", address],
            "INVALID_ARGUMENT",
            2,
            f"Not a web address: {shown}",
        )
        assert "hunter2" not in str(failed)


NOT_PUBLIC = ["127.0.0.1", "169.254.169.254", "10.1.2.3", "100.64.0.1", "224.0.0.1", "0.0.0.0", "[::1]",
              "[::ffff:127.0.0.1]", "[64:ff9b::7f00:1]", "[2002:7f00:1::1]", "[fd00::1]"]  # fmt: skip


def test_a_user_key_reaches_no_address_that_is_not_public(tmp_path: Path) -> None:
    with thread_server(keyed_config(), tmp_path / "store") as url, httpx.Client(base_url=url, timeout=60) as http:
        for host in NOT_PUBLIC:
            response = http.post("/api/v1/resources", json={"path": f"http://{host}/x"}, headers=headers(ALICE_KEY))
            error = error_of(response, 403, "PERMISSION_DENIED")
            assert (
                error["message"]
                == f"{host.strip('[]')} is not a public address, and this server fetches only public ones"
            )
