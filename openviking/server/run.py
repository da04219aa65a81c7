"""``serve()``: run the app under uvicorn until SIGTERM or Ctrl-C, finishing the requests in flight.

Without an API key configured the server listens on loopback only, and says so; a host
that is not loopback is then refused before anything starts. A client that does not send its
request head within ``server.request_timeout`` seconds is disconnected (uvicorn only times
out idle keep-alive connections).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import logging.config
import os
import signal
import socket
import threading
from collections.abc import Iterator
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from openviking.config import Config, load_config
from openviking.errors import InvalidArgumentError, OpenVikingError, UnavailableError
from openviking.system.ostext import printable

from .app import create_app

__all__ = ["UnsafeBindError", "check_bind", "is_loopback", "prepared", "serve"]

log = logging.getLogger("openviking.server")


class PrintableFormatter(logging.Formatter):
    """Log lines with their control characters shown (``ostext.printable``): a request's path,
    an uploaded file's name or a warning may hold escape sequences meant for the terminal."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"()": PrintableFormatter, "fmt": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain", "stream": "ext://sys.stderr"}},
    "loggers": {
        "uvicorn": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        "openviking.server": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
    },
}


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class UnsafeBindError(InvalidArgumentError):
    """A host beyond loopback, with no API key configured."""


def check_bind(host: str, has_keys: bool) -> None:
    """Refuse to listen beyond this machine when no key is configured.

    Raises:
        UnsafeBindError: ``host`` is not loopback and ``has_keys`` is False.
    """
    if not has_keys and not is_loopback(host):
        raise UnsafeBindError(
            f"Refusing to serve on {host} without an API key: set server.root_api_key or server.users "
            "in ov.conf (openviking key new USER makes one), or serve on 127.0.0.1",
            details={"host": host},
        )


def serve(
    host: str | None = None,
    port: int | None = None,
    *,
    store: str | os.PathLike[str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    watch: bool = False,
) -> None:
    """Serve the store until SIGTERM (then return) or Ctrl-C (then KeyboardInterrupt); with
    ``watch``, keep every watched source of the store in step meanwhile.

    Raises:
        ConfigError: the config is invalid.
        UnsafeBindError: a host beyond loopback without a key.
        UnavailableError: the address cannot be listened on.
        OpenVikingError: the store could not be opened.
    """
    if host is not None and not host.strip():
        raise InvalidArgumentError("--host must name an address to listen on (got an empty string)")
    config = load_config(config_file)
    server = config.server
    host = host or server.host
    port = server.port if port is None else port
    check_bind(host, server.has_keys)
    logging.config.dictConfig(LOG_CONFIG)
    runner, sock, url = prepared(config, store=store, host=host, port=port, watch=watch)
    if server.has_keys:
        log.info("OpenViking HTTP server on %s (API keys required)", url)
    else:
        log.warning("No API key configured: serving %s to this machine only; every request acts as user '%s'",
                    url, config.user)  # fmt: skip
    with sock, _sigterm_ends_cleanly():
        try:
            runner.run(sockets=[sock])
        except SystemExit:  # uvicorn's way out when the lifespan failed: say why as an error
            failed = runner.config.app.state.openviking.failed  # type: ignore[union-attr]
            if isinstance(failed, OpenVikingError):
                raise failed from None
            raise UnavailableError(f"The server did not start on {url}", hint="Its log above says why") from None


def prepared(
    config: Config,
    *,
    store: str | os.PathLike[str] | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    watch: bool = False,
) -> tuple[uvicorn.Server, socket.socket, str]:
    """The uvicorn server of the app for ``config``, the socket it is to serve (already
    bound, so a port in use fails here), and its URL. Logging is left as it is."""
    app = create_app(config=config, store=store, host=host, watch=watch)
    sock = _listen(host, port)
    try:
        settings = uvicorn.Config(
            app,
            http=_paced(config.server.request_timeout),
            lifespan="on",
            log_config=None,
            access_log=False,  # RequestContext logs each request, with its id
            server_header=False,
            timeout_keep_alive=5,
        )
    except BaseException:
        sock.close()
        raise
    bound = sock.getsockname()[1]
    return uvicorn.Server(settings), sock, f"http://{'[' + host + ']' if ':' in host else host}:{bound}"


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port``, so a port in use is one clear error, before the store opens."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise UnavailableError(
            f"Cannot listen on {host}:{port}: {exc.strerror or exc}", details={"host": host, "port": port}
        ) from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise UnavailableError(
            f"Cannot listen on {host}:{port}: {exc.strerror or exc}", details={"host": host, "port": port}
        ) from exc
    sock.set_inheritable(True)
    return sock


@contextlib.contextmanager
def _sigterm_ends_cleanly() -> Iterator[None]:
    """uvicorn answers SIGTERM by finishing the requests in flight, then raises the signal again
    for the handler it found; that handler being this no-op, the process ends with status 0
    instead of dying of the signal."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class PacedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head has not arrived
    ``head_timeout`` seconds after it opened or after its previous response."""

    head_timeout = 60.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        self._wait_for_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._wait_for_head()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        super().connection_lost(exc)

    def _wait_for_head(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_late)

    def _head_late(self) -> None:
        waiting = self.cycle is None or self.cycle.response_complete  # no request under way
        if waiting and not self.transport.is_closing():
            self.transport.close()


def _paced(timeout: float) -> type[H11Protocol]:
    return type("PacedH11Protocol", (PacedH11Protocol,), {"head_timeout": timeout})
