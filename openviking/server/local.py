"""The local service: the app on a unix socket for this user alone, announced for its store.

``openviking start`` runs :func:`serve_local` in a process of its own. The socket is made in a
fresh ``mkdtemp`` directory (mode 0700) with mode 0600, and every request must carry the
service's own random key, which only the announcement file (mode 0600) holds: the configured
``server`` keys, path roots and body caps do not apply, since its one caller is the user who
could open the store embedded. :class:`LocalGate`, outermost, refuses a request without the key
(401, before anything else: such a caller learns nothing, not even the fingerprint) and one that
expects another fingerprint (409 FAILED_PRECONDITION: a command line of another version or
configuration), names the service's fingerprint on every other answer, counts the requests for the
idle stop, and answers ``/local/status``. The announcement is written once the store is open
and the model loaded, and removed when the service starts to stop, so a command line never
finds one that cannot answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hmac
import json
import logging
import logging.config
import os
import secrets
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

import uvicorn
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from openviking import __version__
from openviking.config import Config, config_from_dict
from openviking.errors import (
    AlreadyExistsError,
    FailedPreconditionError,
    OpenVikingError,
    UnauthenticatedError,
    UnavailableError,
)
from openviking.service.rendezvous import (
    EXPECT_HEADER,
    SERVICE_HEADER,
    SOCKET_DIRECTORY_PREFIX,
    STATUS_PATH,
    WATCH_STATE_KEYS,
    Announcement,
    Location,
    fingerprint,
    located,
    read_announcement,
    remove_announcement,
    write_announcement,
)

from .app import create_app
from .auth import presented_key
from .envelope import failure
from .run import LOG_CONFIG, _paced, _sigterm_ends_cleanly
from .state import ServerState

__all__ = ["LocalGate", "serve_local"]

log = logging.getLogger("openviking.server")

# A body the embedded client would take whole: the service takes it too.
UNCAPPED = 1 << 62


def watched_sources(state: ServerState) -> list[dict[str, Any]] | None:
    """The store's watched sources (``status`` shows them): each one's URI, folder, whether it
    is paused, its last sync and error, and which process keeps it in step (this service when it
    was started with ``--watch``); none before the store is open, None when they cannot be read."""
    root = state.root
    if root is None or state.not_ready:
        return []
    try:
        tasks = root.list_watches()["tasks"]
    except OpenVikingError as exc:  # status still answers: the rest of it is known
        log.warning("status: the watched sources cannot be read: %s", exc.message)
        return None
    return [{key: task[key] for key in WATCH_STATE_KEYS} for task in tasks]


def vectors_waiting(state: ServerState) -> int | None:
    """How many records of the store wait for their vectors (``status`` shows it), as the
    doctor counts them; None when the store is not open yet or cannot say."""
    root = state.root
    if root is None or state.not_ready:
        return None
    try:
        waiting = root.doctor().store.get("pending_vectors")
    except OpenVikingError as exc:  # status still answers: the rest of it is known
        log.warning("status: the records waiting for vectors cannot be counted: %s", exc.message)
        return None
    return waiting if isinstance(waiting, int) else None


def local_config(config: Config, key: str) -> Config:
    """``config`` with the service's key as the only key, and none of the ``server`` section's
    limits a caller of the embedded client does not meet (its path roots, its body cap)."""
    server = dict(config.raw.get("server") or {}) if isinstance(config.raw.get("server"), dict) else {}
    for name in ("root_api_key", "users", "path_roots", "max_body_bytes", "max_upload_bytes"):
        server.pop(name, None)
    server.update(root_api_key=key, max_body_bytes=UNCAPPED, max_upload_bytes=UNCAPPED)
    return config_from_dict({**config.raw, "server": server}, path=config.path)


class LocalGate:
    """Outermost middleware of the local service (see the module docstring)."""

    def __init__(self, app: ASGIApp, announcement: Announcement, state: ServerState) -> None:
        self.app = app
        self.announcement = announcement
        self.state = state
        self.requests = 0
        self.in_flight = 0
        self.last_request = time.monotonic()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if not self._holds_the_key(headers):  # a caller without the key learns nothing, not even the fingerprint
            await failure(UnauthenticatedError("Invalid API key"), 401, {"WWW-Authenticate": "Bearer"})(
                scope, receive, send
            )
            return
        mine = self.announcement.fingerprint.encode("ascii")

        async def named(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (SERVICE_HEADER.encode(), mine)]}
            await send(message)

        asks_status = scope["path"] == STATUS_PATH
        self.requests += 0 if asks_status else 1  # status counts the others
        self.in_flight += 1
        try:
            expected = headers.get(EXPECT_HEADER)
            if expected is not None and expected != self.announcement.fingerprint:
                refusal = FailedPreconditionError(
                    "This local service runs another version or configuration than the caller",
                    hint="Stop it (openviking stop) and start it again from this configuration",
                )
                await failure(refusal, 409)(scope, receive, named)
            elif asks_status:
                await self._status(named)
            else:
                await self.app(scope, receive, named)
        finally:
            self.in_flight -= 1
            if not asks_status:  # status asks keep no service from stopping when idle
                self.last_request = time.monotonic()

    def _holds_the_key(self, headers: Headers) -> bool:
        key = presented_key({k.lower(): v for k, v in headers.items()}) or ""
        return hmac.compare_digest(key.encode("utf-8"), self.announcement.key.encode("utf-8"))

    async def _status(self, send: Send) -> None:
        a = self.announcement
        result = {
            "pid": a.pid,
            "socket": a.socket,
            "since": a.since,
            "version": a.version,
            "store": a.store,
            "config_file": a.config_file,
            "idle_stop": a.idle_stop,
            "requests": self.requests,
            "idle_seconds": round(time.monotonic() - self.last_request, 1),
            "follows_watches": self.state.watching is not None and self.state.watching.is_alive(),
            "watching": await run_in_threadpool(watched_sources, self.state),  # a read of the store
            "vectors_waiting": vectors_waiting(self.state),
        }
        body = json.dumps({"status": "ok", "result": result, "time": 0.0}).encode("utf-8")
        start = {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
        await send(start)
        await send({"type": "http.response.body", "body": body})

    def idle_for(self) -> float:
        """Seconds since the last request ended (0 while one is under way)."""
        return 0.0 if self.in_flight else time.monotonic() - self.last_request


class LocalServer(uvicorn.Server):
    """uvicorn's server that announces itself once it answers, stops being announced as soon
    as it begins to stop, and stops by itself after ``idle_stop`` seconds without a request."""

    def __init__(self, settings: uvicorn.Config, gate: LocalGate, idle_stop: float | None) -> None:
        super().__init__(settings)
        self.gate = gate
        self.idle_stop = idle_stop
        self.announced = False

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and not self.should_exit:
            self.gate.announcement = dataclasses.replace(self.gate.announcement, since=time.time())
            self.gate.last_request = time.monotonic()  # idle from now, not from before the model loaded
            write_announcement(self.gate.announcement)
            self.announced = True
            log.info("local service of %s on %s (pid %d)", self.gate.announcement.store,
                     self.gate.announcement.socket, os.getpid())  # fmt: skip

    async def on_tick(self, counter: int) -> bool:
        if await super().on_tick(counter):
            return True
        if self.idle_stop is not None and self.gate.idle_for() >= self.idle_stop:
            log.info("no request for %g s: stopping", self.idle_stop)
            return True
        return False

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.unannounce()
        await super().shutdown(sockets)

    def unannounce(self) -> None:
        if self.announced:
            remove_announcement(self.gate.announcement)
            self.announced = False


def _listen_unix(path: Path) -> socket.socket:
    """A unix socket listening at ``path``, mode 0600 (its directory is 0700 already)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        os.chmod(path, 0o600)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise UnavailableError(f"Cannot listen on {path}: {exc.strerror or exc}") from exc
    sock.set_inheritable(True)
    return sock


def refuse_a_second(location: Location) -> None:
    """Refuse to serve a store a live local service already serves.

    Raises:
        AlreadyExistsError: one does.
    """
    running = read_announcement(location.store)
    if running is not None and running.alive():
        raise AlreadyExistsError(
            f"A local service already serves {location.store} (pid {running.pid})",
            hint="Stop it first (openviking stop), or use it as it is",
            details={"pid": running.pid, "socket": running.socket},
        )


def serve_local(
    store: str | os.PathLike[str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    *,
    idle_stop: float | None = None,
    watch: bool = False,
) -> None:
    """Serve the store to this user over a unix socket until SIGTERM (then return), Ctrl-C
    (then KeyboardInterrupt) or ``idle_stop`` seconds without a request; with ``watch``, keep
    the store's watched sources in step meanwhile.

    Raises:
        ConfigError: the config is invalid.
        AlreadyExistsError: a local service already serves the store.
        OpenVikingError: the store could not be opened.
    """
    location = located(store, config_file)
    refuse_a_second(location)
    key = secrets.token_urlsafe(32)
    folder = Path(tempfile.mkdtemp(prefix=SOCKET_DIRECTORY_PREFIX))  # mode 0700, a name nobody else chose
    path = folder / "socket"
    announcement = Announcement(
        pid=os.getpid(),
        socket=str(path),
        version=__version__,
        fingerprint=fingerprint(location),
        store=location.store,
        config_file=location.config_file,
        since=time.time(),
        idle_stop=idle_stop,
        key=key,
    )
    logging.config.dictConfig(LOG_CONFIG)
    app = create_app(config=local_config(location.config, key), store=location.store, host="localhost", watch=watch)
    state: ServerState = app.state.openviking
    gate = LocalGate(app, announcement, state)
    settings = uvicorn.Config(
        gate,
        http=_paced(state.server.request_timeout),
        lifespan="on",
        log_config=None,
        access_log=False,
        server_header=False,
        timeout_keep_alive=5,
    )
    runner = LocalServer(settings, gate, idle_stop)
    try:
        with _listen_unix(path) as sock, _sigterm_ends_cleanly():
            try:
                runner.run(sockets=[sock])
            except SystemExit:  # uvicorn's way out when the lifespan failed: say why as an error
                if isinstance(state.failed, OpenVikingError):
                    raise state.failed from None
                raise UnavailableError("The local service did not start", hint="Its log above says why") from None
    finally:
        runner.unannounce()
        with contextlib.suppress(OSError):
            path.unlink()
        with contextlib.suppress(OSError):
            folder.rmdir()
