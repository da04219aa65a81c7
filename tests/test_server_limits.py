"""Bad input over HTTP: malformed JSON, wrong types, unknown and missing fields, bodies too
big, URIs that try to leave their space, a catastrophic regex, and clients too slow to send
their request. Each gets the right 4xx and the error object; the server keeps serving and
the store is exactly as it was.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import HASH_CONF, make_tree, snapshot
from ovserver import ROOT_KEY, body_of, error_of, handbook_store, headers, keyed_config, thread_server

FIND = "/api/v1/search/find"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[httpx.Client, Path]]:
    """A root-key client of a server (request_timeout 1 s) and its store, which must be unharmed at the end.

    The store holds the handbook, and a file of one 20,000-character line at viking://resources/long.
    """
    from openviking.config import config_from_dict
    from openviking.embedded.client import OpenViking

    store = handbook_store(tmp_path)
    long_line = make_tree(tmp_path / "long", {"aaa.md": "# Long\n\n" + "a" * 20_000 + "\n"})
    with OpenViking(path=store, config=config_from_dict(HASH_CONF)) as client:
        client.add_resource(long_line, to="viking://resources/long")
    with thread_server(keyed_config(request_timeout=1), store) as url:
        with httpx.Client(base_url=url, headers=headers(ROOT_KEY), timeout=60) as http:
            before = snapshot(store)
            listing = body_of(http.get("/api/v1/fs/ls", params={"uri": "viking://", "recursive": "true"}))
            yield http, store
            # Still serving, and nothing changed.
            assert body_of(http.get("/api/v1/fs/ls", params={"uri": "viking://", "recursive": "true"})) == listing
            assert body_of(http.post(FIND, json={"query": "docker"}))["total"] > 0
    assert snapshot(store) == before


def invalid(response: httpx.Response) -> dict[str, Any]:
    error = error_of(response, 400, "INVALID_ARGUMENT")
    assert error["message"].startswith("Invalid request: "), error
    for item in error["details"]["validation_errors"]:
        assert set(item) == {"loc", "message", "type"}
    return error


@pytest.mark.parametrize(
    ("body", "where", "kind"),
    [
        (b'{"query": "x",}', "body.14", "json_invalid"),
        (b'{"query": ', "body.10", "json_invalid"),
        (b"[1, 2]", "body", "model_attributes_type"),
        (b'"just a string"', "body", "model_attributes_type"),
        (b"{}", "body.query", "missing"),
        (b'{"query": 5}', "body.query", "string_type"),
        (b'{"query": "x", "limit": "10"}', "body.limit", "int_type"),
        (b'{"query": "x", "limit": 2.5}', "body.limit", "int_type"),
        (b'{"query": "x", "explain": "yes"}', "body.explain", "bool_type"),
        (b'{"query": "x", "tags": 5}', "body.tags", "list_type"),
        (b'{"query": "x", "lmit": 3}', "body.lmit", "extra_forbidden"),
    ],
)
def test_a_bad_body_is_400_with_where_and_why(
    served: tuple[httpx.Client, Path], body: bytes, where: str, kind: str
) -> None:
    http, _ = served
    error = invalid(http.post(FIND, content=body, headers={"Content-Type": "application/json"}))
    items = error["details"]["validation_errors"]
    # A union names the member that failed too (body.tags.list[str]).
    assert any(".".join(item["loc"]).startswith(where) for item in items), items
    assert kind in [item["type"] for item in items], items
    assert error["message"].startswith(f"Invalid request: {'.'.join(items[0]['loc'])}: ")


def test_bad_bodies_of_other_routes(served: tuple[httpx.Client, Path]) -> None:
    http, _ = served
    invalid(http.post("/api/v1/search/grep", json={"uri": "viking://", "pattern": "x", "ignore_case": True}))
    invalid(http.post("/api/v1/fs/mkdir", json={"path": "viking://resources/x"}))
    error = invalid(http.post("/api/v1/sessions/s1/messages", json={"role": "user"}))
    assert "give content" in error["message"]  # pydantic's "Value error, " prefix is dropped
    invalid(http.post("/api/v1/sessions/s1/messages", json={"role": "user", "parts": [{"type": "image", "text": "x"}]}))
    error = invalid(http.post("/api/v1/resources", json={"path": "/tmp", "temp_file_id": "upload_x"}))
    assert "path or temp_file_id" in error["message"]
    invalid(http.get("/api/v1/content/read"))  # the uri is required
    invalid(http.get("/api/v1/content/read", params={"uri": "viking://resources", "offset": "first"}))
    # A body that is not JSON at all, sent as a form.
    invalid(http.post(FIND, content=b"query=x", headers={"Content-Type": "application/x-www-form-urlencoded"}))


def test_a_100_mb_body_is_413_before_it_is_all_read(served: tuple[httpx.Client, Path]) -> None:
    http, _ = served
    sent = 0

    def chunks() -> Iterator[bytes]:
        nonlocal sent
        chunk = b" " * (1 << 20)
        for _ in range(100):
            sent += len(chunk)
            yield chunk

    # Streamed (chunked): the server stops at its cap of 8 MiB.
    response = http.post(FIND, content=chunks(), headers={"Content-Type": "application/json"})
    error = error_of(response, 413, "INVALID_ARGUMENT")
    assert error["details"] == {"limit_bytes": 8 * 1024 * 1024}
    assert error["message"] == f"Request body too large: the limit is {8 * 1024 * 1024} bytes"
    # Declared up front: refused before a byte of it is read.
    sent = 0
    declared = {"Content-Type": "application/json", "Content-Length": str(100 << 20)}
    error = error_of(http.post(FIND, content=chunks(), headers=declared), 413, "INVALID_ARGUMENT")
    assert error["details"] == {"limit_bytes": 8 * 1024 * 1024}


@pytest.mark.parametrize(
    ("method", "path", "args"),
    [
        ("GET", "/api/v1/content/read", {"params": {"uri": "viking://resources/docs/../../etc/passwd"}}),
        ("GET", "/api/v1/fs/ls", {"params": {"uri": "viking://resources/.."}}),
        ("GET", "/api/v1/fs/stat", {"params": {"uri": "viking://user/../resources"}}),
        ("POST", "/api/v1/fs/mkdir", {"json": {"uri": "viking://resources/a/../../b"}}),
        ("POST", "/api/v1/search/grep", {"json": {"uri": "viking://resources/..", "pattern": "x"}}),
        ("POST", FIND, {"json": {"query": "x", "target_uri": "viking://resources/docs/.."}}),
        ("DELETE", "/api/v1/fs", {"params": {"uri": "viking://resources/docs/..", "recursive": "true"}}),
    ],
)
def test_a_uri_with_dot_dot_is_refused(served: tuple[httpx.Client, Path], method: str, path: str, args: Any) -> None:
    http, _ = served
    response = http.request(method, path, **args)
    assert response.status_code in (400, 403), response.text
    error = body_of(response, response.status_code)
    assert error["code"] in ("PERMISSION_DENIED", "INVALID_URI"), error
    assert ".." in error["message"], error


def test_a_catastrophic_regex_finishes_or_is_refused(served: tuple[httpx.Client, Path]) -> None:
    http, _ = served
    for pattern in ("(a|a?){30}b", "(a+)+$", "(a*)*b", "^(a|aa)+c"):
        started = time.perf_counter()
        response = http.post("/api/v1/search/grep", json={"uri": "viking://resources/long", "pattern": pattern})
        assert time.perf_counter() - started < 10, pattern
        assert response.status_code in (200, 400), response.text
        if response.status_code == 200:
            assert response.json()["result"]["count"] in (0, 1)


# ----------------------------------------------------------------------------- slow clients
def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_a_body_that_does_not_arrive_in_time_is_408(served: tuple[httpx.Client, Path]) -> None:
    http, _ = served
    with _connect(str(http.base_url).rstrip("/")) as sock:
        head = (
            f"POST {FIND} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: {ROOT_KEY}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
        )
        sock.sendall(head.encode() + b'{"query": ')
        started = time.monotonic()
        reply = _read_all(sock)  # the server answers, then closes the connection
    assert 0.8 < time.monotonic() - started < 8
    status_line, _, rest = reply.partition(b"\r\n")
    assert status_line == b"HTTP/1.1 408 Request Timeout", reply
    assert b'"code":"DEADLINE_EXCEEDED"' in rest and b"within 1 s" in rest


def test_a_request_head_that_does_not_arrive_in_time_is_dropped(served: tuple[httpx.Client, Path]) -> None:
    http, _ = served
    with _connect(str(http.base_url).rstrip("/")) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        closed = False
        while time.monotonic() - started < 8:  # a byte every 0.2 s keeps uvicorn's idle timer from firing
            try:
                sock.sendall(b"X")
                sock.settimeout(0.2)
                closed = sock.recv(1024) == b""
            except TimeoutError:
                continue
            except OSError:
                closed = True
            if closed:
                break
    assert closed and 0.8 < time.monotonic() - started < 8
