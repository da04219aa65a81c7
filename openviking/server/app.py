"""The ASGI app: :func:`create_app` builds it from the config, its lifespan opens the store
and loads the model once, and its middleware run in a fixed order.

Middleware, outermost first: :class:`~.envelope.RequestContext` (request id, the one log
line, 500 INTERNAL for anything unhandled), :class:`~.guards.SiteCheck` (421/403 for a Host or
an Origin this server does not answer), :class:`~.guards.KeyCheck` (401 before any body
is read), :class:`~.guards.BodyLimits` (413, 408), then FastAPI's own error handling, which
:func:`~.envelope.install_handlers` points at the envelope, and the routes; ``/mcp`` is the
MCP endpoint (:mod:`.mcp_route`).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from fastapi import FastAPI

from openviking import __version__
from openviking.config import Config, load_config

from .envelope import EnvelopeResponse, RequestContext, install_handlers
from .guards import BodyLimits, KeyCheck, SiteCheck
from .mcp_route import McpRoute
from .openapi import install_openapi
from .routes import ROUTERS
from .state import ServerState

__all__ = ["create_app"]

DESCRIPTION = (
    "An AI agent's context (resources, memories, skills) in a viking:// store: find, search, grep, glob, "
    "read, browse and write it. Every answer is {status, result, time} or {status, error, time}; send the "
    "API key in X-API-Key or as Authorization: Bearer."
)


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    state: ServerState = app.state.openviking
    try:
        await anyio.to_thread.run_sync(state.open)
    except Exception as exc:
        state.failed = exc
        raise
    try:
        async with app.state.mcp.lifespan():  # a mounted app's lifespan is not run by Starlette
            yield
    finally:
        state.close()


def create_app(
    *,
    config: Config | None = None,
    store: str | os.PathLike[str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    host: str | None = None,
    watch: bool = False,
) -> FastAPI:
    """The app serving the store at ``store`` (else the config's) with ``config`` (else the
    one ``config_file``, or the default place, holds), listening on ``host`` (else
    ``server.host``: a request may name it as its Host); with ``watch``, it keeps the store's
    watched sources in step in the background while it runs.

    Raises:
        ConfigError: the config file, or its ``server`` section, is invalid.
    """
    config = config if config is not None else load_config(config_file)
    state = ServerState(config, store, watch=watch)
    # FastAPI's own OpenTelemetry hooks stay off: requests are logged here, keys never.
    telemetry = {"tracing": False, "metrics": False, "logs": False, "operation_spans": False}
    app = FastAPI(
        title="openviking",
        version=__version__,
        description=DESCRIPTION,
        lifespan=_lifespan,
        default_response_class=EnvelopeResponse,
        telemetry=telemetry,  # type: ignore[arg-type]
    )
    app.state.openviking = state
    install_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    install_openapi(app)
    app.state.mcp = McpRoute(state)
    app.add_route("/mcp", app.state.mcp, methods=["GET", "POST", "DELETE"], include_in_schema=False)
    server = state.server
    # Each middleware added wraps those added before it: innermost first.
    app.add_middleware(
        BodyLimits, max_body=server.max_body_bytes, max_upload=server.max_upload_bytes, timeout=server.request_timeout
    )
    app.add_middleware(KeyCheck, keys=state.keys)
    app.add_middleware(SiteCheck, server=server, bound=host or server.host)
    app.add_middleware(RequestContext)
    return app
