"""``/mcp`` on the server: the MCP tools over streamable HTTP, acting as the API key's user.

The key check has put the caller in the request's scope by the time a request reaches here;
this endpoint makes that caller's client the one every tool call of the request uses (a
context variable, which the MCP SDK carries into the tool's thread).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

from openviking.errors import OpenVikingError

from .auth import NOBODY
from .envelope import failure
from .state import CALLER_KEY, ServerState

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from starlette.types import Receive, Scope, Send

    from openviking.embedded.client import OpenViking

    from .mcp import StreamableHTTPApp

__all__ = ["McpRoute"]

_CLIENT: ContextVar[OpenViking] = ContextVar("openviking_mcp_client")


class McpRoute:
    """The ASGI endpoint at ``/mcp``."""

    def __init__(self, state: ServerState) -> None:
        from .mcp import streamable_http_app

        self.state = state
        self.endpoint: StreamableHTTPApp = streamable_http_app(_CLIENT.get, max_body_bytes=state.server.max_body_bytes)

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        """The MCP session manager's lifespan, run inside the app's."""
        return self.endpoint.lifespan()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            client = self.state.client_for(scope.get(CALLER_KEY, NOBODY))
        except OpenVikingError as exc:  # not ready, or a user id that cannot be one
            await failure(exc)(scope, receive, send)
            return
        token = _CLIENT.set(client)
        try:
            await self.endpoint(scope, receive, send)
        finally:
            _CLIENT.reset(token)
