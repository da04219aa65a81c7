"""The MCP tools (find, search, grep, glob, read, abstract, overview, ls, tree, add_memory) over
the typed interface, served over stdio or as a streamable-HTTP ASGI app.

Each tool calls one method of :class:`~openviking.interface.OpenVikingClient`, of the same
name, with the same parameter names, on the client that ``client_for_call()`` returns for that
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
import uuid
from collections.abc import Callable, Mapping, MutableMapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings

from openviking._version import __version__
from openviking.errors import InvalidArgumentError, OpenVikingError
from openviking.interface import OpenVikingClient

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

TIME_FORMS = "30m, 2h, 7d, 2w (back from now), YYYY-MM-DD (that whole UTC day) or ISO 8601"


@dataclass(frozen=True)
class Param:
    """One argument of a tool: its interface parameter's name, its JSON type, what it means."""

    name: str
    type: str  # "string", "integer", "number", "boolean", or "array" (of strings)
    description: str
    required: bool = False
    enum: tuple[str, ...] = ()


@dataclass(frozen=True)
class Tool:
    """One tool: the interface method it calls (``name``), what an agent reads, its arguments."""

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
    """A JSON Schema every client reads: each property typed, no ``anyOf``, no ``$ref``; the
    defaults are the interface's own, read from its signature."""
    signature = inspect.signature(getattr(OpenVikingClient, tool.name))
    properties: dict[str, Any] = {}
    for param in tool.params:
        prop: dict[str, Any] = {"type": param.type, "description": param.description}
        if param.type == "array":
            prop["items"] = {"type": "string"}
        if param.enum:
            prop["enum"] = list(param.enum)
        default = signature.parameters[param.name].default
        if default is not inspect.Parameter.empty and default is not None:
            prop["default"] = default
        properties[param.name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": [p.name for p in tool.params if p.required],
        "additionalProperties": False,
    }


# ----------------------------------------------------------------------------- the tools
_FIND_PARAMS = (
    Param("query", "string", "What to look for, in plain words (a question or a description).", required=True),
    Param(
        "target_uri",
        "string",
        "Search only below this URI, e.g. viking://resources/docs or viking://user/memories "
        "(default: all resources, the user's space and the agent's skills).",
    ),
    Param("limit", "integer", "The most hits to return."),
    Param(
        "score_threshold",
        "number",
        "Keep hits scoring above this, 0 to 1 (default: the configured threshold, 0.1); lower it "
        "when nothing comes back.",
    ),
    Param("since", "string", f"Only what changed since then: {TIME_FORMS}."),
    Param("until", "string", f"Only what changed until then: {TIME_FORMS}."),
    Param("context_type", "string", "Only this kind: memory, resource or skill (comma-separated for several)."),
    Param(
        "mode",
        "string",
        "hybrid (default: meaning and keywords), vector (meaning only) or keyword (BM25 only).",
        enum=("hybrid", "vector", "keyword"),
    ),
)
_FIND_RESULT = (
    "Result: JSON {memories, resources, skills, total}; each hit has uri, score, level (0: a "
    "directory's abstract, 1: its overview, both with a URI ending in /.abstract.md or "
    "/.overview.md; 2: a file's content), abstract, match_reason (for a file, the lines that "
    "matched), tags and relations (related URIs). Next, read a level-2 hit's uri, or overview a "
    "directory's."
)

TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            "find",
            "Find by meaning",
            "Search the store by meaning (and keywords) for the files and directory summaries that "
            "best answer a query, grouped as memories, resources and skills. Use it first when you "
            "know what you need but not where it is; use grep for exact words or a regex, glob for "
            "file names, and search when a recorded conversation (a session) should shape the query. " + _FIND_RESULT,
            '{"query": "how do users authenticate", "target_uri": "viking://resources", "limit": 5}',
            _FIND_PARAMS,
        ),
        Tool(
            "search",
            "Find with a session's context",
            "Like find, but with a conversation's context: when session_id names a session with "
            "messages and an LLM is configured, an LLM plans up to five typed queries from the "
            "conversation and their hits are merged (each hit lists the queries that found it, and "
            "the result has query_plan); otherwise the query runs alone, exactly as find. Use it "
            "inside a conversation recorded as a session; otherwise use find. " + _FIND_RESULT,
            '{"query": "write an RFC for it", "session_id": "design-review"}',
            (
                _FIND_PARAMS[0],
                Param("session_id", "string", "The session whose messages give the query its context."),
                *_FIND_PARAMS[1:],
            ),
        ),
        Tool(
            "grep",
            "Search text by regular expression",
            "Find the lines of file content below a URI that match a regular expression (Python re "
            "syntax): exact words, names, identifiers, error messages. Use it rather than find when "
            "you know the words; use glob to match file paths rather than content. Directory "
            "summaries are not searched. Result: JSON {matches: [{uri, line, content}], count, "
            "match_count, files_scanned}; line counts from 1, so read it with offset line - 1.",
            '{"uri": "viking://resources", "pattern": "auth(entication|orization)", "case_insensitive": true}',
            (
                Param("uri", "string", "A directory to search below (viking:// for everything), or one file.", True),
                Param("pattern", "string", "A Python regular expression.", required=True),
                Param("case_insensitive", "boolean", "Ignore case."),
                Param("exclude_uri", "array", "URIs to skip, each with everything below it."),
                Param("node_limit", "integer", "At most this many matching lines (0 or none: all)."),
                Param("level_limit", "integer", "Only files at most this many levels below uri (0: all)."),
            ),
        ),
        Tool(
            "glob",
            "Find files by path pattern",
            "List the files and directories whose path below uri matches a glob: * and ? within a "
            "name, [a-z], {a,b}, and ** for any number of directories. The whole path relative to "
            "uri must match, so *.md matches direct children only; use **/*.md for every depth. Use "
            "it to find files by name; grep searches their content, ls and tree browse. Result: JSON "
            "{matches: [uri, ...], count}, sorted by path.",
            '{"pattern": "**/*.md", "uri": "viking://resources"}',
            (
                Param("pattern", "string", "The glob, matched against the path relative to uri.", required=True),
                Param("uri", "string", "The directory the paths are relative to."),
                Param("node_limit", "integer", "At most this many URIs (0 or none: all)."),
            ),
        ),
        Tool(
            "read",
            "Read a file",
            "Read a file's text (its full content, level 2), or a range of its lines: offset is the "
            "first line (counting from 0), limit the number of lines (-1: to the end). A directory "
            "reads as its overview. Use it once find, grep, glob or ls gave you a file's URI; for a "
            "directory's summaries use abstract or overview. Result: the text itself, not JSON.",
            '{"uri": "viking://resources/handbook/auth.md", "offset": 0, "limit": 40}',
            (
                Param("uri", "string", "The viking:// URI of a file.", required=True),
                Param("offset", "integer", "The first line to return, counting from 0."),
                Param("limit", "integer", "How many lines (-1: to the end)."),
            ),
        ),
        Tool(
            "abstract",
            "A directory's one-line summary",
            "The abstract (level 0: a sentence or two) of a directory, or a file's summary. Use it "
            "to judge cheaply whether a directory is worth exploring; overview says more, read "
            "gives a file's text. Result: the text itself, not JSON.",
            '{"uri": "viking://resources/handbook"}',
            (Param("uri", "string", "The viking:// URI of a directory or file.", required=True),),
        ),
        Tool(
            "overview",
            "A directory's overview",
            "The overview (level 1) of a directory: what it holds and what each of its files and "
            "subdirectories is about; a file gives its directory's overview, and a session lists "
            "its messages. Use it to choose which files to read, after abstract or a level-0/1 "
            "find hit. Result: the text itself, not JSON.",
            '{"uri": "viking://resources/handbook/deploy"}',
            (Param("uri", "string", "The viking:// URI of a directory.", required=True),),
        ),
        Tool(
            "ls",
            "List a directory",
            "List a directory's entries, directories first; with recursive, everything below it. "
            "viking:// lists the scope roots: resources, user and agent. Use it to browse where "
            "you know to look; tree shows several levels with relative paths, glob matches names. "
            "Result: JSON list of {uri, size, isDir, modTime, abstract}; with simple, a list of URIs.",
            '{"uri": "viking://resources/handbook"}',
            (
                Param("uri", "string", "The directory to list."),
                Param("recursive", "boolean", "Everything below the directory, not only its entries."),
                Param("simple", "boolean", "Only the URIs."),
                Param("node_limit", "integer", "At most this many entries (0 or none: all)."),
            ),
        ),
        Tool(
            "tree",
            "Show a directory tree",
            "Everything below a URI, depth first, down to level_limit levels (0: all). Use it to "
            "see the shape of a resource in one call; ls lists one directory. Result: JSON list of "
            "{uri, size, isDir, modTime, abstract, rel_path}.",
            '{"uri": "viking://resources/handbook", "level_limit": 2}',
            (
                Param("uri", "string", "The directory at the top of the tree."),
                Param("level_limit", "integer", "How many levels deep (0: all)."),
                Param("node_limit", "integer", "At most this many entries (0 or none: all)."),
            ),
        ),
        Tool(
            "add_memory",
            "Remember a fact about the user",
            "Remember a durable fact about the user (a preference, a decision, something about "
            "their people, projects or habits) so that a later find or search returns it among its "
            "memories. One fact per call, in a sentence that stands on its own. It is kept under "
            "viking://user/<user>/memories/[category/]; the same text again is the same memory, "
            "never a copy. Result: JSON {uri, category, added (false: it was already remembered), "
            "tags_changed}.",
            '{"text": "The user prefers dark mode in every editor", "category": "preferences"}',
            (
                Param("text", "string", "The fact, as a sentence that stands on its own.", required=True),
                Param(
                    "category",
                    "string",
                    "A folder for it: a lower-case name such as preferences, entities, events, cases or profile.",
                ),
            ),
            read_only=False,
        ),
    )
}


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
