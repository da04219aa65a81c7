"""Real openviking servers on 127.0.0.1 for the server tests: no mocks of FastAPI or httpx.

* :func:`thread_server`: the app under uvicorn in a thread of the test process, built as
  ``openviking serve`` builds it (``openviking.server.run.prepared``); fast to start.
* :func:`process_server`: ``python -m openviking_cli serve`` in a subprocess, for what only a
  process shows: signals, exit statuses, its log on stderr, curl against it.

Keys are distinctive strings, so a leak into a response or a log is easy to spot.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from helpers import EN_FILES, HASH_CONF, REPO, make_tree, write_config
from servers import free_port

ROOT_KEY = "root-key-4c1d9e7a2b6f8035e1c7a9d4"
ALICE_KEY = "alice-key-8e2f6a0c4b9d1735f0e8c2a6"
BOB_KEY = "bob-key-1a7c3e9f5b2d8046c4a0e6b2"
KEYS = (ROOT_KEY, ALICE_KEY, BOB_KEY)

# The handbook, plus a folder named like its auth.md, as the brief's curl examples read both
# viking://resources/docs/auth (a directory) and viking://resources/docs/auth.md (a file).
DOCS_FILES: dict[str, str] = {
    **EN_FILES,
    "auth/oauth.md": "# OAuth\n\nThe OAuth 2.0 authorization code flow signs users in with an identity provider.\n",
    "auth/sessions.md": "# Login sessions\n\nAfter authentication the server keeps a session cookie.\n",
}


def keyed_config(**server: Any) -> dict[str, Any]:
    """ov.conf's content: the hash embedder, a root key, alice's key as a digest, bob's in plain."""
    section = {
        "root_api_key": ROOT_KEY,
        "users": {
            "alice": {"api_key_sha256": hashlib.sha256(ALICE_KEY.encode()).hexdigest()},
            "bob": {"api_key": BOB_KEY},
        },
        **server,
    }
    return {**HASH_CONF, "server": section}


def handbook_store(base: Path) -> Path:
    """A store under ``base`` holding DOCS_FILES at viking://resources/docs (hash embedder)."""
    from openviking.config import config_from_dict
    from openviking.embedded.client import OpenViking

    store = base / "store"
    with OpenViking(path=store, config=config_from_dict(HASH_CONF)) as client:
        client.add_resource(make_tree(base / "docs", DOCS_FILES), to="viking://resources/docs")
    return store


def headers(key: str | None = ROOT_KEY, **extra: str) -> dict[str, str]:
    """Request headers carrying ``key`` (none when None)."""
    return {**({"X-API-Key": key} if key else {}), **extra}


def body_of(response: httpx.Response, status: int = 200) -> Any:
    """The envelope of a response with ``status``: its result, or its error object."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers.get("x-request-id"), response.headers
    payload = response.json()
    assert isinstance(payload["time"], float)
    said = payload.pop("warnings", None)  # what the CLI prints as Warning: lines, only when there is any
    assert said is None or (isinstance(said, list) and said and all(isinstance(w, str) and w for w in said)), said
    if status == 200:
        payload.pop("has_more", None)  # a listing says whether more pages follow, as upstream's do
        assert set(payload) == {"status", "result", "time"} and payload["status"] == "ok", payload
        return payload["result"]
    assert set(payload) == {"status", "error", "time"} and payload["status"] == "error", payload
    assert {"code", "message", "details"} <= set(payload["error"]), payload
    return payload["error"]


def error_of(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The error object of a failed response; its code must be ``code``."""
    error = body_of(response, status)
    assert error["code"] == code, error
    assert "Traceback" not in response.text
    return error


@contextlib.contextmanager
def thread_server(raw: Mapping[str, Any], store: Path, *, setup: Callable[[Any], None] | None = None) -> Iterator[str]:
    """Serve ``store`` with the config ``raw`` in a thread; yields the base URL. ``setup`` is
    given the app before it serves (a test adds a route of its own)."""
    from openviking.config import config_from_dict
    from openviking.server.run import prepared

    server, sock, url = prepared(config_from_dict(dict(raw)), store=store)
    if setup is not None:
        setup(server.config.app)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            assert thread.is_alive(), "the server thread ended before it started"
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()


@dataclass
class ServerProcess:
    """A running ``openviking serve``."""

    url: str
    proc: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        """What it printed so far (stdout and stderr)."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM, then its exit status."""
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.wait(timeout=timeout)


def server_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a server subprocess: its own HOME, nothing from outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENVIKING_")}
    return {**env, "HOME": str(home), "OPENVIKING_HOME": str(home / ".openviking"), "NO_COLOR": "1", **extra}


@contextlib.contextmanager
def process_server(
    raw: Mapping[str, Any] | str,
    store: Path,
    workdir: Path,
    *,
    args: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
) -> Iterator[ServerProcess]:
    """``openviking serve --port <free> --store STORE --config <raw written to a file>``;
    yields it once ``/health`` answers, and stops it (SIGTERM) at the end."""
    conf = write_config(workdir / "ov.conf", raw if isinstance(raw, str) else json.dumps(raw))
    port = free_port()
    log_path = workdir / "server.log"
    argv = [sys.executable, "-m", "openviking_cli", "serve", "--port", str(port), "--store", str(store)]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [*argv, "--config", str(conf), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=str(REPO),
            env=dict(env) if env is not None else server_env(workdir / "home"),
        )
    running = ServerProcess(f"http://127.0.0.1:{port}", proc, log_path)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"the server exited {proc.returncode}:\n{running.log()}"
            try:
                if httpx.get(running.url + "/ready", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"the server did not start:\n{running.log()}"
            time.sleep(0.1)
        yield running
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
