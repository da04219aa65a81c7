"""The MCP tools over the typed interface, one per operation that declares one (``TOOLS``),
served over stdio or as a streamable-HTTP ASGI app.

Each tool calls one method of :class:`~openviking.contract.interface.OpenVikingClient`, of the same
name, with the parameters its declaration does not leave out (each stated in its input schema
with its range, choices and form), on the client that ``client_for_call()`` returns for that
call; its text is the result's ``to_dict()`` as compact JSON (file text as it is). An
:class:`~openviking.errors.OpenVikingError` is an error result (``isError``) reading
``CODE: message`` and ``Hint: ...``; anything else is a bug: an ``INTERNAL`` error result with an
id, and the traceback in this process's log under that id, never in the result.

Over stdio (``openviking mcp``)::

    anyio.run(serve_stdio, lambda: client)

Over HTTP, the host app mounts :func:`streamable_http_app` at ``/mcp`` and runs its lifespan
(a mounted app's own lifespan is not run by Starlette or FastAPI)::

    endpoint = streamable_http_app(client_of_this_request)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with endpoint.lifespan():
            yield

    app = FastAPI(lifespan=lifespan)
    app.add_route("/mcp", endpoint)  # every method: the endpoint answers all but POST with 405

``client_of_this_request`` is called in the context of the HTTP request that carries the tool
call (the SDK hands the request's ``contextvars`` to the tool, and the tool runs in a worker
thread with a copy of them): an ASGI middleware around ``/mcp`` that authenticates the API key
and sets a ``ContextVar`` to the caller's client (``client.as_user(user, isolated=True)``) is
what makes every tool act as the key's user. The endpoint is stateless (every POST stands
alone, no MCP session to hijack across keys), answers in plain JSON, and sends no message of
its own (so a GET, which would open a stream for them, is 405, as the spec allows). The tools
never close the clients they are given: the factory owns them.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import typing
import uuid
from collections.abc import Callable, Mapping, MutableMapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import anyio.to_thread
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings

from openviking._version import __version__
from openviking.contract.interface import OpenVikingClient
from openviking.contract.operations import OPERATIONS, Operation, tool_names
from openviking.contract.operations import Tool as DeclaredTool
from openviking.errors import InvalidArgumentError, OpenVikingError

__all__ = [
    "TOOLS",
    "ClientFactory",
    "StreamableHTTPApp",
    "call_tool",
    "mcp_server",
    "serve_stdio",
    "streamable_http_app",
]

logger = logging.getLogger("openviking.mcp")

ClientFactory = Callable[[], OpenVikingClient]
"""Returns the client a tool call acts through (the caller's, over HTTP)."""

INSTRUCTIONS = (
    "openviking keeps an agent's context in a store of viking:// URIs: resources (documents and "
    "code, under viking://resources/<name>/...), the user's memories (viking://user/<user>/memories/"
    "...) and agent skills (viking://agent/skills/<name>). Start with find (by meaning) or grep "
    "(exact words, regex); glob, ls and tree show what is where; read gives a file's text, abstract "
    "and overview a directory's summaries; add_memory remembers a fact about the user."
)


@dataclass(frozen=True)
class Param:
    """One argument of a tool: its interface parameter's name, its JSON type, what it means,
    and what its values may be."""

    name: str
    type: str  # "string", "integer", "number", "boolean", or "array" (of strings)
    description: str
    required: bool = False
    enum: tuple[str, ...] = ()
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    pattern: str | None = None  # of the string, or of each item of the array


@dataclass(frozen=True)
class Tool:
    """One tool: the operation it calls (``name``), what an agent reads, its arguments."""

    name: str
    title: str
    text: str  # what it does, when to use it rather than another tool, what its result holds
    example: str  # the JSON arguments of one call
    params: tuple[Param, ...]
    read_only: bool = True
    schema: dict[str, Any] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema", _input_schema(self))

    @property
    def description(self) -> str:
        return f"{self.text} Example: {self.example}"

    def definition(self) -> types.Tool:
        """What ``tools/list`` says of it."""
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.schema,
            annotations=types.ToolAnnotations(
                title=self.title,
                read_only_hint=self.read_only,
                # add_memory: the same text again is the same memory, and nothing is ever removed.
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        )


def _input_schema(tool: Tool) -> dict[str, Any]:
    """A JSON Schema every client reads: each property typed, no ``anyOf``, no ``$ref``."""
    properties: dict[str, Any] = {}
    for param in tool.params:
        prop: dict[str, Any] = {"type": param.type, "description": param.description}
        strings = prop
        if param.type == "array":
            strings = prop["items"] = {"type": "string"}
        if param.enum:
            strings["enum"] = list(param.enum)
        if param.pattern is not None:
            strings["pattern"] = param.pattern
        if param.default is not None:
            prop["default"] = param.default
        if param.minimum is not None:
            prop["minimum"] = param.minimum
        if param.maximum is not None:
            prop["maximum"] = param.maximum
        properties[param.name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": [p.name for p in tool.params if p.required],
        "additionalProperties": False,
    }


_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _json_type(annotation: Any) -> str:
    """The one JSON type of a parameter: a list of strings when it may be one, else its first kind."""
    kinds = [k for k in typing.get_args(annotation) or (annotation,) if k is not type(None)]
    if any(typing.get_origin(k) is list for k in kinds):
        return "array"  # a lone string is taken too
    return _JSON_TYPES[kinds[0]]


def _tool_of(operation: Operation[Any, Any], declared: DeclaredTool) -> Tool:
    params = []
    for name in operation.tool_params:
        param = operation.params[name]
        if param.schema is not None:
            raise TypeError(f"tool {operation.name}: {name}'s schema has no form a tool's property takes")
        default = operation.default(name)
        kind = _json_type(operation.wire_type(name))
        if default is inspect.Parameter.empty or (kind == "array" and not isinstance(default, list | tuple)):
            default = None  # none, or none the property's type can hold ("" for a list of URIs: the default applies)
        params.append(
            Param(
                name,
                kind,
                param.doc,
                required=operation.default(name) is inspect.Parameter.empty or name in declared.required,
                enum=param.choices,
                default=list(default) if isinstance(default, tuple) else default,
                minimum=param.ge,
                maximum=param.le,
                pattern=param.pattern,
            )
        )
    return Tool(
        operation.name, declared.title, declared.text, declared.example, tuple(params), read_only=not operation.writes
    )


TOOLS: dict[str, Tool] = {
    name: _tool_of(OPERATIONS[name], cast(DeclaredTool, OPERATIONS[name].mcp)) for name in tool_names()
}
"""The tools, one per declared operation that has one (``mcp=Tool(...)`` in the interface)."""


# ----------------------------------------------------------------------------- one call
def _arguments(tool: Tool, given: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of the interface call: each given value checked against its
    declared type (a null is an argument not given, so the interface's default applies)."""
    known = {p.name: p for p in tool.params}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise InvalidArgumentError(
            f"{tool.name} does not take {', '.join(unknown)}",
            hint=f"{tool.name} takes: {', '.join(known)}",
            details={"unknown": unknown},
        )
    kwargs = {name: _checked(known[name], value) for name, value in given.items() if value is not None}
    missing = [p.name for p in tool.params if p.required and p.name not in kwargs]
    if missing:
        raise InvalidArgumentError(
            f"{tool.name} needs {', '.join(missing)}",
            hint=f"For example: {tool.example}",
            details={"missing": missing},
        )
    return kwargs


_WANTED = {"string": "a string", "boolean": "true or false", "integer": "an integer", "number": "a number"}
_JSON_KIND = {
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    list: "a list",
    dict: "an object",
}


def _checked(param: Param, value: Any) -> Any:
    kind = param.type
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if (kind == "string" and isinstance(value, str)) or (kind == "boolean" and isinstance(value, bool)):
        return value
    if kind == "number" and number:
        return value
    if kind == "integer" and number and (isinstance(value, int) or value.is_integer()):
        return int(value)  # some clients send every number as 10.0
    if kind == "array":
        items = [value] if isinstance(value, str) else value  # one URI needs no list around it
        if isinstance(items, list) and all(isinstance(item, str) for item in items):
            return items
    raise InvalidArgumentError(
        f"{param.name} must be {_WANTED.get(kind, 'a list of strings')}, "
        f"not {_JSON_KIND.get(type(value), type(value).__name__)}",
        details={"argument": param.name},
    )


def _text(result: Any) -> str:
    """A result as the tool's text: a string as it is, anything else its ``to_dict()`` as compact JSON."""
    if isinstance(result, str):
        return result
    plain = [_plain(item) for item in result] if isinstance(result, list) else _plain(result)
    return json.dumps(plain, separators=(",", ":"), ensure_ascii=False)


def _plain(value: Any) -> Any:
    return value.to_dict() if hasattr(value, "to_dict") else value


def _error(code: str, message: str, hint: str | None = None) -> types.CallToolResult:
    text = f"{code}: {message}" + (f"\nHint: {hint}" if hint else "")
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def call_tool(client_for_call: ClientFactory, name: str, arguments: Mapping[str, Any]) -> types.CallToolResult:
    """Run one tool call to its result (blocking: the server runs it in a worker thread)."""
    tool = TOOLS.get(name)
    if tool is None:
        return _error("INVALID_ARGUMENT", f"There is no tool {name!r}", f"The tools are: {', '.join(TOOLS)}")
    try:
        kwargs = _arguments(tool, arguments)
        result = getattr(client_for_call(), tool.name)(**kwargs)
        return types.CallToolResult(content=[types.TextContent(type="text", text=_text(result))])
    except OpenVikingError as exc:
        return _error(exc.code, exc.message, exc.hint)
    except Exception as exc:  # a bug: the caller gets an id to report, the log gets the traceback
        incident = uuid.uuid4().hex[:12]
        logger.exception("MCP tool %s failed unexpectedly (id %s)", name, incident)
        return _error(
            "INTERNAL",
            f"Unexpected {type(exc).__name__} (id {incident}): this is a bug in openviking",
            "The server's log has the traceback under that id; please report it.",
        )


# ----------------------------------------------------------------------------- the server
def mcp_server(client_for_call: ClientFactory, *, max_concurrent_calls: int | None = None) -> Server:
    """The MCP server of the tools, each call acting through ``client_for_call()``.

    Calls run in worker threads (the interface blocks); ``max_concurrent_calls`` bounds how many
    at once (1 for a single embedded client, which is not meant to be used from several threads
    at a time; None: anyio's default pool).
    """
    limiter = anyio.CapacityLimiter(max_concurrent_calls) if max_concurrent_calls else None

    async def list_tools(_ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool.definition() for tool in TOOLS.values()])

    async def call(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        run = functools.partial(call_tool, client_for_call, params.name, params.arguments or {})
        return await anyio.to_thread.run_sync(run, limiter=limiter)

    return Server(
        "openviking",
        version=__version__,
        title="OpenViking",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call,
    )


async def serve_stdio(client_for_call: ClientFactory) -> None:
    """Serve the tools on stdin/stdout until stdin closes, one call at a time (the SDK points
    fd 1 at stderr meanwhile, so nothing but the protocol reaches stdout)."""
    server = mcp_server(client_for_call, max_concurrent_calls=1)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


Scope = MutableMapping[str, Any]
Receive = Callable[[], Any]
Send = Callable[[MutableMapping[str, Any]], Any]


class StreamableHTTPApp:
    """The MCP endpoint over streamable HTTP: an ASGI app for one route (``/mcp``), and the
    :meth:`lifespan` its host app must run around serving (see the module's docstring)."""

    def __init__(self, server: Server, *, max_body_bytes: int, allowed_hosts: list[str] | None) -> None:
        security = (
            TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts)
            if allowed_hosts
            else TransportSecuritySettings(enable_dns_rebinding_protection=False)
        )
        self._manager = StreamableHTTPSessionManager(
            app=server,
            stateless=True,
            json_response=True,
            security_settings=security,
            max_request_body_size=max_body_bytes,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] != "POST":
            # Stateless, the endpoint never sends a message of its own: the spec's answer to the GET
            # that would open a stream for them is 405, rather than a stream held open with nothing in it.
            await _method_not_allowed(send)
            return
        await self._manager.handle_request(scope, receive, send)

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        """Run while the host app serves (once: a new app is needed to serve again)."""
        return self._manager.run()


async def _method_not_allowed(send: Send) -> None:
    error = {"code": -32000, "message": "Method Not Allowed: this endpoint takes JSON-RPC messages by POST only"}
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"allow", b"POST"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": 405, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def streamable_http_app(
    client_for_call: ClientFactory,
    *,
    max_body_bytes: int = DEFAULT_MAX_REQUEST_BODY_SIZE,
    allowed_hosts: list[str] | None = None,
) -> StreamableHTTPApp:
    """The tools as a streamable-HTTP ASGI app, to mount at ``/mcp``.

    ``client_for_call`` is called once per tool call, in the HTTP request's context.
    ``max_body_bytes`` caps a request body (413 above it). ``allowed_hosts`` (``Host`` header
    values, ``"127.0.0.1:*"`` for any port) turns on the SDK's DNS-rebinding protection; None
    leaves the checking of hosts to the host app.
    """
    return StreamableHTTPApp(mcp_server(client_for_call), max_body_bytes=max_body_bytes, allowed_hosts=allowed_hosts)
