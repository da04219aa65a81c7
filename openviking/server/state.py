"""What the app holds between requests (the root client over the one open store, the keys,
the uploads, the fetches under way), and which client answers a request: the dependency every
route takes.

One :class:`~openviking.embedded.client.OpenViking` opens the store and loads the model at start-up;
each caller gets a client over that same store and model (``as_user``): the root key or no
key acts as the user it names (else the default user), a user key as its user, isolated.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPBearer

from openviking.config import Config
from openviking.contract.results import WatchReport
from openviking.embedded.client import OpenViking
from openviking.errors import ConfigError, InvalidArgumentError, UnavailableError

from .auth import NOBODY, Caller, Keys
from .envelope import said
from .fetching import Fetches
from .indexer import Indexer
from .uploads import Uploads

__all__ = ["CALLER_KEY", "Client", "CallerOf", "ServerState", "State", "caller_of", "state_of"]

log = logging.getLogger("openviking.server")

CALLER_KEY = "openviking.caller"  # where the key check leaves the Caller in the ASGI scope


class ServerState:
    """The root client and what every request shares; :meth:`open` and :meth:`close` are the
    app's lifespan."""

    def __init__(self, config: Config, store: str | os.PathLike[str] | None, *, watch: bool = False) -> None:
        self.config = config
        self.server = config.server
        self.keys = Keys(self.server)
        self._store = store
        self.root: OpenViking | None = None
        self.uploads: Uploads | None = None
        self.indexer: Indexer | None = None  # makes the vectors writes leave waiting
        self.fetches = Fetches()
        self.not_ready = "starting"
        self.failed: BaseException | None = None  # why open() failed, for the process to say
        self.watching: threading.Thread | None = None  # the watched sources' watcher (serve --watch)
        self._watch = watch
        self._stop_watching = threading.Event()

    def open(self) -> None:
        """Open the store and load the model, once, before the first request."""
        root = OpenViking(self._store, config=self.config, warn=_log_warning)
        root.as_user(root.user)  # opens (or creates) the store and builds the embedder, shared from now on
        embedder = root.embedder()
        if embedder.identity.startswith("local:"):
            embedder.embed_query("openviking")  # the bundled model loads on its first use: not in a request
        self.uploads = Uploads(
            Path(tempfile.mkdtemp(prefix="openviking-uploads-")),
            self.server.max_upload_bytes,
            quota=self.server.upload_quota_bytes,
            unused_seconds=self.server.upload_unused_seconds,
        )
        self.uploads.sweep()
        self.root = root
        self.indexer = Indexer(root)
        self.indexer.start()
        self.not_ready = ""
        if self._watch:
            self.watching = threading.Thread(
                target=root.keep_watching,
                kwargs={"stop": self._stop_watching, "report": _log_report, "vectors_by": self.indexer.wake},
                name="openviking-watching",
                daemon=True,
            )
            self.watching.start()
        where = root.store_path if "://" in root.store_path else os.path.abspath(root.store_path)
        log.info("store %s open, embedder %s", where, embedder.identity)

    def close(self) -> None:
        """Stop answering, release the store and delete what uploads are left."""
        self.not_ready = "stopping"
        if self.indexer is not None:
            self.indexer.stop()
        self._stop_watching.set()
        if self.watching is not None:
            self.watching.join()  # a sync under way finishes: what it wrote stays whole
        if self.uploads is not None:
            self.uploads.close()
        if self.root is not None:
            self.root.close()

    def client_for(self, caller: Caller) -> OpenViking:
        """The client that acts as ``caller``.

        Raises:
            UnavailableError: the store is not open (starting or stopping).
            InvalidArgumentError: ``X-OpenViking-User`` is not a valid user id.
        """
        root = self.root
        if root is None or self.not_ready:
            raise UnavailableError(f"The server is not ready ({self.not_ready or 'starting'})", hint="Retry shortly")
        user = caller.user or root.user
        if user == root.user and not caller.isolated:
            return root
        try:
            return root.as_user(user, isolated=caller.isolated)
        except ConfigError as exc:
            raise InvalidArgumentError(
                f"X-OpenViking-User '{user}' is not a valid user id",
                hint="Use letters, digits and _ . @ -",
                details={"user": user},
            ) from exc


def _log_report(report: WatchReport) -> None:
    log.log(logging.WARNING if report.kind == "error" else logging.INFO, "watch %s: %s", report.uri, report.message)


def _log_warning(message: str) -> None:
    log.warning("%s", message)
    said(message)  # the answer carries it too, for the client to say as the embedded one would


def state_of(request: Request) -> ServerState:
    """The app's :class:`ServerState`."""
    state: ServerState = request.app.state.openviking
    return state


def caller_of(request: Request) -> Caller:
    """Who the request acts as (the key check put it in the scope; no key configured: the default user)."""
    caller: Caller = request.scope.get(CALLER_KEY, NOBODY)
    return caller


# Declared for the OpenAPI document only: the key was checked before the body was read.
_api_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="The API key (or send it as a bearer token)")
_bearer = HTTPBearer(auto_error=False, description="The API key as a bearer token")


def caller_client(
    request: Request,
    _key: Annotated[str | None, Security(_api_key)] = None,
    _token: Annotated[object, Security(_bearer)] = None,
) -> OpenViking:
    """The client that answers the request."""
    return state_of(request).client_for(caller_of(request))


Client = Annotated[OpenViking, Depends(caller_client)]
CallerOf = Annotated[Caller, Depends(caller_of)]


async def _state(request: Request) -> ServerState:
    # A coroutine, so that /health and /ready take no worker thread: they answer even while
    # every thread is busy with requests (abandoned ones included, which still run to the end).
    return state_of(request)


State = Annotated[ServerState, Depends(_state)]
