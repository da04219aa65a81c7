"""The MCP tools, through the mcp package's own client: ``openviking mcp`` over stdio (a real
subprocess), the streamable-HTTP app served by uvicorn, and the SDK's in-process client.

Every result is compared with what the embedded client returns for the same call.
"""

from __future__ import annotations

import ast
import contextlib
import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import REPO, hash_config, heavy, loaded_modules, run_module, snapshot, write_hash_config
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from ovserver import ALICE_KEY, ROOT_KEY, keyed_config, thread_server

from openviking.contract.interface import OpenVikingClient
from openviking.embedded.client import OpenViking
from openviking.errors import UnauthenticatedError
from openviking.server.mcp import TOOLS, mcp_server, streamable_http_app

H = "viking://resources/handbook"
TOOL_NAMES = [
    "find", "search", "grep", "glob", "read", "abstract", "overview", "ls", "tree", "add_memory", "list_watches",
    "commit_session", "context",
]  # fmt: skip
# What `openviking mcp --help` must not load: the SDK, its server stack and its async runtime.
MCP_STACK = ("mcp", "mcp_types", "starlette", "uvicorn", "anyio", "httpx2", "sse_starlette", "fastapi")


def text_of(result: Any) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text", result
    return result.content[0].text


def plain(result: Any) -> Any:
    """What the embedded client returned, as JSON data (a listing item by item)."""
    if isinstance(result, list):
        return [item if isinstance(item, str) else item.to_dict() for item in result]
    return result.to_dict()


def ok(result: Any) -> Any:
    """A successful tool result's JSON."""
    assert not result.is_error, text_of(result)
    return json.loads(text_of(result))


def failed(result: Any, code: str) -> str:
    """An error result's text, which starts with ``code``."""
    text = text_of(result)
    assert result.is_error, text
    assert text.startswith(f"{code}: "), text
    assert "Traceback" not in text
    return text


@contextlib.asynccontextmanager
async def stdio_session(store: Path, conf: Path, errlog: Any) -> AsyncIterator[ClientSession]:
    """``python -m openviking_cli mcp --store STORE --config CONF`` as an MCP server, connected."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "openviking_cli", "mcp", "--store", str(store), "--config", str(conf)],
        env=dict(os.environ),
        cwd=str(REPO),
    )
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@pytest.fixture
def store(tmp_path: Path, handbook_client: OpenViking) -> Path:
    """The handbook's store (the embedded client stays open on it, for comparisons)."""
    return tmp_path / "store"


# ----------------------------------------------------------------------------- the tool table
def test_each_tool_is_an_interface_method_with_its_parameter_names_and_defaults() -> None:
    import inspect

    assert list(TOOLS) == TOOL_NAMES
    for name, tool in TOOLS.items():
        signature = inspect.signature(getattr(OpenVikingClient, name))
        schema = tool.schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        for param, prop in schema["properties"].items():
            assert param in signature.parameters, (name, param)
            default = signature.parameters[param].default
            if prop["type"] == "array" and not isinstance(default, list | tuple):
                # A list of URIs defaults to "" in Python: no default of its type, the interface's applies.
                assert "default" not in prop, (name, param)
            else:
                assert prop.get("default") == (None if default is inspect.Parameter.empty else default), (name, param)
            assert prop["type"] in ("string", "integer", "number", "boolean", "array") and prop["description"]
            assert "anyOf" not in prop and "$ref" not in prop
        example = json.loads(tool.example)
        assert set(schema["required"]) <= set(example) <= set(schema["properties"]), name
        assert tool.description.endswith(f"Example: {tool.example}")


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_each_tool_schema_its_defaults_and_its_example_are_valid(name: str) -> None:
    # What a strict client checks before it calls: the SDK's own Tool, a valid JSON Schema, and
    # every default and the tool's own example valid under it.
    import jsonschema
    from mcp import types

    tool = TOOLS[name]
    listed = types.Tool.model_validate(tool.definition().model_dump(by_alias=True, exclude_none=True))
    schema = listed.input_schema
    validator = jsonschema.validators.validator_for(schema)
    validator.check_schema(schema)
    for param, prop in schema["properties"].items():
        if "default" in prop:
            jsonschema.validate(prop["default"], prop, cls=validator)
            jsonschema.validate({param: prop["default"]}, {**schema, "required": []}, cls=validator)
    jsonschema.validate(json.loads(tool.example), schema, cls=validator)


def test_a_tool_states_each_parameter_form_as_the_api_does() -> None:
    from openviking.contract.operations import OPERATIONS

    for name, tool in TOOLS.items():
        for param in tool.params:
            declared = OPERATIONS[name].params[param.name]
            prop = tool.schema["properties"][param.name]
            strings = prop["items"] if prop["type"] == "array" else prop
            assert strings.get("pattern") == declared.pattern, (name, param.name)
            assert prop.get("minimum") == declared.ge and prop.get("maximum") == declared.le, (name, param.name)


def test_the_module_imports_only_the_sdk_and_the_interface() -> None:
    source = REPO / "openviking" / "server" / "mcp.py"
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    ours = {m for m in imported if m.split(".")[0] == "openviking"}
    allowed = {
        "openviking._version",
        "openviking.errors",
        "openviking.contract.interface",
        "openviking.contract.operations",
    }
    assert ours <= allowed, ours
    others = {m.split(".")[0] for m in imported - ours} - set(sys.stdlib_module_names)
    assert others <= {"mcp", "anyio"}, others


# ----------------------------------------------------------------------------- stdio
def test_stdio_lists_the_tools_and_answers_as_the_embedded_client(
    store: Path, hash_conf: Path, handbook_client: OpenViking, tmp_path: Path
) -> None:
    client = handbook_client
    expected: dict[tuple[str, str], Any] = {
        ("find", json.dumps({"query": "deploy with docker", "limit": 3})): client.find("deploy with docker", limit=3),
        ("find", json.dumps({"query": "api keys", "target_uri": H, "mode": "keyword", "score_threshold": 0})): (
            client.find("api keys", target_uri=H, mode="keyword", score_threshold=0)
        ),
        ("search", json.dumps({"query": "rotate keys"})): client.search("rotate keys"),
        ("grep", json.dumps({"uri": H, "pattern": "docker|helm", "case_insensitive": True})): (
            client.grep(H, "docker|helm", case_insensitive=True)
        ),
        ("grep", json.dumps({"uri": H, "pattern": "e", "exclude_uri": [f"{H}/deploy"], "node_limit": 2})): (
            client.grep(H, "e", exclude_uri=[f"{H}/deploy"], node_limit=2)
        ),
        ("glob", json.dumps({"pattern": "**/*.md", "uri": H})): client.glob("**/*.md", uri=H),
        ("ls", json.dumps({})): client.ls(),
        ("ls", json.dumps({"uri": H, "recursive": True, "simple": True})): client.ls(H, recursive=True, simple=True),
        ("tree", json.dumps({"uri": H, "level_limit": 1})): client.tree(H, level_limit=1),
        ("tree", json.dumps({"uri": H, "level_limit": 0, "node_limit": 3})): client.tree(
            H, level_limit=0, node_limit=3
        ),
        ("ls", json.dumps({"uri": H, "node_limit": 2})): client.ls(H, node_limit=2),
        ("list_watches", json.dumps({})): client.list_watches(),
    }
    texts = {
        ("read", json.dumps({"uri": f"{H}/auth.md"})): client.read(f"{H}/auth.md"),
        ("read", json.dumps({"uri": f"{H}/auth.md", "offset": 2, "limit": 1})): client.read(f"{H}/auth.md", 2, 1),
        ("abstract", json.dumps({"uri": H})): client.abstract(H),
        ("overview", json.dumps({"uri": f"{H}/deploy"})): client.overview(f"{H}/deploy"),
    }
    memory = "The user deploys everything with docker compose"

    async def body() -> tuple[Any, dict[Any, Any], dict[Any, str], Any]:
        with open(tmp_path / "stderr.log", "w", encoding="utf-8") as errlog:
            async with stdio_session(store, hash_conf, errlog) as session:
                listed = await session.list_tools()
                got = {key: ok(await session.call_tool(key[0], json.loads(key[1]))) for key in expected}
                got_texts = {key: text_of(await session.call_tool(key[0], json.loads(key[1]))) for key in texts}
                added = ok(await session.call_tool("add_memory", {"text": memory, "category": "preferences"}))
        return listed, got, got_texts, added

    listed, got, got_texts, added = anyio.run(body)

    assert [t.name for t in listed.tools] == TOOL_NAMES
    for tool in listed.tools:
        assert tool.description and tool.title, tool.name
        assert tool.input_schema == TOOLS[tool.name].schema
        assert tool.annotations.read_only_hint is (tool.name not in {"add_memory", "commit_session"})
    assert listed.tools[0].input_schema["required"] == ["query"]

    for key, result in expected.items():
        assert got[key] == plain(result), key
    assert got[("grep", json.dumps({"uri": H, "pattern": "docker|helm", "case_insensitive": True}))]["count"] == 3
    assert got_texts == texts  # text as it is, not JSON
    assert got_texts[("read", json.dumps({"uri": f"{H}/auth.md", "offset": 2, "limit": 1}))].startswith("Users")

    assert added["added"] is True and added["category"] == "preferences"
    assert added["uri"].startswith("viking://user/default/memories/preferences/")
    again = client.add_memory(memory, "preferences")  # the memory the tool wrote is the embedded client's
    assert (again.uri, again.added) == (added["uri"], False)
    assert added["uri"] in [hit.uri for hit in client.find("docker compose", context_type="memory").memories]
    assert "Traceback" not in (tmp_path / "stderr.log").read_text(encoding="utf-8")


def test_stdio_over_a_server_answers_as_the_embedded_client_and_keeps_its_keys(
    store: Path, handbook_client: OpenViking, tmp_path: Path
) -> None:
    """``openviking mcp --url URL --api-key KEY``: the same tools, sent to a server instead of a store."""
    client = handbook_client
    expected = {
        ("find", json.dumps({"query": "deploy with docker", "limit": 3})): client.find("deploy with docker", limit=3),
        ("glob", json.dumps({"pattern": "**/*.md", "uri": H})): client.glob("**/*.md", uri=H),
        ("tree", json.dumps({"uri": H, "level_limit": 1})): client.tree(H, level_limit=1),
    }
    auth = client.read(f"{H}/auth.md")

    async def session_calls(url: str, key: str) -> tuple[dict[Any, Any], str, Any, Any]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "openviking_cli", "mcp", "--url", url, "--api-key", key],
            env={k: v for k, v in os.environ.items() if not k.startswith("OPENVIKING_")},
            cwd=str(REPO),
        )
        with open(tmp_path / "stderr.log", "a", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                got = {k: ok(await session.call_tool(k[0], json.loads(k[1]))) for k in expected}
                text = text_of(await session.call_tool("read", {"uri": f"{H}/auth.md"}))
                added = await session.call_tool("add_memory", {"text": "Deploys on Fridays", "category": "habits"})
                other = await session.call_tool("ls", {"uri": "viking://user/bob/memories"})
        return got, text, added, other

    with thread_server(keyed_config(), store) as url:
        got, text, added, other = anyio.run(session_calls, url, ROOT_KEY)
        alice_got, _, alice_added, alice_other = anyio.run(session_calls, url, ALICE_KEY)

    for key, result in expected.items():
        assert got[key] == plain(result), key
        # alice asks after root's memory went in, which moves BM25's statistics: find's scores too
        assert key[0] == "find" or alice_got[key] == got[key], key
    assert text == auth
    assert ok(added)["uri"].startswith("viking://user/default/memories/habits/")
    assert ok(alice_added)["uri"].startswith("viking://user/alice/memories/habits/")  # the key's own user
    failed(alice_other, "PERMISSION_DENIED")  # bob's space is not alice's
    assert not other.is_error
    log = (tmp_path / "stderr.log").read_text(encoding="utf-8")
    assert "Traceback" not in log and ROOT_KEY not in log and ALICE_KEY not in log


BAD_CALLS: list[tuple[str, dict[str, Any], str, str]] = [
    ("find", {"query": ""}, "INVALID_ARGUMENT", "empty"),
    ("find", {"query": "   "}, "INVALID_ARGUMENT", "empty"),
    ("search", {"query": ""}, "INVALID_ARGUMENT", "empty"),
    ("find", {"query": "x", "target_uri": "https://example.com"}, "INVALID_URI", "viking://"),
    ("find", {"query": "x", "since": "yesterday-ish"}, "INVALID_ARGUMENT", "yesterday-ish"),
    ("find", {"query": "x", "mode": "fuzzy"}, "INVALID_ARGUMENT", "fuzzy"),
    ("read", {"uri": "http://example.com/a.md"}, "INVALID_URI", "viking://"),
    ("read", {"uri": f"{H}/missing.md"}, "NOT_FOUND", "missing.md"),
    ("ls", {"uri": "viking://resources/../../etc"}, "PERMISSION_DENIED", ".."),
    ("grep", {"uri": H, "pattern": "("}, "INVALID_ARGUMENT", "regex"),
    ("grep", {"uri": H, "pattern": "x", "node_limit": -1}, "INVALID_ARGUMENT", "node_limit"),
    ("glob", {"pattern": "[a-"}, "INVALID_ARGUMENT", "[a-"),
    ("add_memory", {"text": ""}, "INVALID_ARGUMENT", "empty"),
    ("add_memory", {"text": "x", "category": "Not A Category!"}, "INVALID_ARGUMENT", "category"),
    # the arguments themselves, checked before the interface is called
    ("find", {}, "INVALID_ARGUMENT", "find needs query"),
    ("find", {"query": "x", "limit": "five"}, "INVALID_ARGUMENT", "limit must be an integer, not a string"),
    ("find", {"query": "x", "limit": 2.5}, "INVALID_ARGUMENT", "limit must be an integer, not a number"),
    ("ls", {"recursive": "yes"}, "INVALID_ARGUMENT", "recursive must be true or false"),
    ("grep", {"uri": H, "pattern": "x", "exclude_uri": [1]}, "INVALID_ARGUMENT", "exclude_uri must be a list"),
    ("find", {"query": "x", "bogus": 1}, "INVALID_ARGUMENT", "find does not take bogus"),
    ("rm", {"uri": H}, "INVALID_ARGUMENT", "There is no tool 'rm'"),
]


def test_stdio_bad_calls_are_error_results_and_leave_the_store_unharmed(
    store: Path, hash_conf: Path, tmp_path: Path
) -> None:
    everything = {"query": "deploy the handbook", "score_threshold": -1, "limit": 1000}

    async def body() -> tuple[list[str], Any, Any, Any]:
        with open(tmp_path / "stderr.log", "w", encoding="utf-8") as errlog:
            async with stdio_session(store, hash_conf, errlog) as session:
                before = (
                    ok(await session.call_tool("ls", {"uri": "viking://", "recursive": True})),
                    ok(await session.call_tool("find", everything)),
                )
                files = snapshot(store)
                texts = [failed(await session.call_tool(name, args), code) for name, args, code, _ in BAD_CALLS]
                assert snapshot(store) == files, "the store's files changed"
                after = (
                    ok(await session.call_tool("ls", {"uri": "viking://", "recursive": True})),
                    ok(await session.call_tool("find", everything)),
                )
                later = ok(await session.call_tool("find", {"query": "kubernetes helm", "limit": 1}))
        return texts, before, after, later

    texts, before, after, later = anyio.run(body)
    for text, (name, args, _code, needle) in zip(texts, BAD_CALLS, strict=True):
        assert needle in text.splitlines()[0], (name, args, text)
    assert "Hint: " in texts[0]  # the interface's hint comes along
    assert after == before
    assert later["resources"][0]["uri"] == f"{H}/deploy/kubernetes.md"  # the server still answers
    assert "Traceback" not in (tmp_path / "stderr.log").read_text(encoding="utf-8")


@pytest.mark.parametrize("output", [[], ["-o", "json"]], ids=["table", "json"])
def test_stdio_ends_when_stdin_closes_with_nothing_on_stdout(store: Path, hash_conf: Path, output: list[str]) -> None:
    proc = run_module(["mcp", "--store", store, "--config", hash_conf, *output], input="", timeout=120)
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stderr
    assert "Traceback" not in proc.stderr


def test_stdio_with_a_missing_config_fails_at_start_in_one_line(tmp_path: Path) -> None:
    proc = run_module(["mcp", "--config", tmp_path / "nope.conf"], input="", timeout=120)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith("Error: ") and "nope.conf" in proc.stderr.splitlines()[0], proc.stderr
    assert "Traceback" not in proc.stderr


README_TOOLS = re.compile(r"(<!-- mcp-tools: made by tests/test_mcp.py -->)(.*?)(<!-- /mcp-tools -->)", re.DOTALL)


def test_the_readme_and_the_help_count_and_name_every_tool() -> None:
    # Both are made from the declarations: a tool declared later is counted and named in both.
    import openviking.contract.interface  # noqa: F401 - declares the operations
    from openviking.contract.operations import tool_names
    from openviking_cli.commands.mcp import TOOLS as HELP_TOOLS

    names = tool_names()
    assert names == list(TOOLS) == list(HELP_TOOLS)
    listed = ", ".join(f"`{name}`" for name in names[:-1]) + f" and `{names[-1]}`"
    made = f"{len(names)} tools: {listed}"
    readme = REPO / "README.md"
    text = readme.read_text(encoding="utf-8")
    if os.environ.get("OPENVIKING_UPDATE_README") == "1":
        readme.write_text(README_TOOLS.sub(lambda m: m.group(1) + made + m.group(3), text), encoding="utf-8")
        return
    found = README_TOOLS.search(text)
    assert found is not None and found.group(2) == made, "the README's tools are stale: OPENVIKING_UPDATE_README=1"
    proc = run_module(["mcp", "--help"], timeout=120)
    shown = " ".join(proc.stdout.split())
    assert f"The {len(names)} tools: {', '.join(names)};" in shown, proc.stdout


def test_mcp_help_loads_neither_lancedb_nor_the_mcp_stack() -> None:
    code = "from openviking_cli.main import main\ntry:\n    main(['mcp', '--help'])\nexcept SystemExit:\n    pass"
    modules = loaded_modules(code)
    assert heavy(modules) == []
    assert sorted(m for m in modules if m.split(".")[0] in MCP_STACK) == []
    proc = run_module(["mcp", "--help"], timeout=120)
    assert proc.returncode == 0 and "find, search, grep, glob" in proc.stdout, proc.stderr


# ----------------------------------------------------------------------------- in process
def test_an_unexpected_exception_is_an_internal_error_result_with_an_id(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> OpenVikingClient:
        raise RuntimeError("secret internals /srv/store")

    def unauthenticated() -> OpenVikingClient:
        raise UnauthenticatedError("Missing API key", hint="Send it in X-API-Key")

    async def body() -> tuple[Any, Any]:
        async with Client(mcp_server(broken)) as bug, Client(mcp_server(unauthenticated)) as denied:
            return await bug.call_tool("ls", {}), await denied.call_tool("ls", {})

    with caplog.at_level(logging.ERROR, logger="openviking.mcp"):
        bug, denied = anyio.run(body)
    text = failed(bug, "INTERNAL")
    assert text.startswith("INTERNAL: Unexpected RuntimeError (id ") and "bug" in text
    assert "secret internals" not in text  # the exception's text stays in the log
    incident = text.split("(id ", 1)[1].split(")", 1)[0]
    logged = [r for r in caplog.records if incident in r.getMessage()]
    assert logged and logged[0].exc_info is not None and "secret internals" in str(logged[0].exc_info[1])
    assert failed(denied, "UNAUTHENTICATED") == "UNAUTHENTICATED: Missing API key\nHint: Send it in X-API-Key"


# ----------------------------------------------------------------------------- streamable HTTP
CALLER: ContextVar[str] = ContextVar("caller")


class CallerFromHeader:
    """What the server's auth middleware does, in miniature: the request's user in a ContextVar."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = CALLER.set(dict(scope["headers"]).get(b"x-openviking-user", b"default").decode())
        try:
            await self.app(scope, receive, send)
        finally:
            CALLER.reset(token)


def host_app(endpoint: Any, *, middleware: tuple[Any, ...] = ()) -> Any:
    """A Starlette app with ``endpoint`` at ``/mcp``, as the module's docstring says to mount it."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import Route

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        async with endpoint.lifespan():
            yield

    return Starlette(
        routes=[Route("/mcp", endpoint=endpoint)],
        middleware=[Middleware(m) for m in middleware],
        lifespan=lifespan,
    )


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn on 127.0.0.1 (a free port) in a thread; yields its base URL."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", ws="none"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


def test_streamable_http_tools_act_as_the_callers_user(handbook_client: OpenViking) -> None:
    base = handbook_client
    endpoint = streamable_http_app(lambda: base.as_user(CALLER.get(), isolated=True))
    app = host_app(endpoint, middleware=(CallerFromHeader,))
    memory = "Alice reviews every deployment on Fridays"
    expected = base.as_user("alice", isolated=True).find("docker container", limit=2)  # before any memory

    async def as_user(url: str, user: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        async with (
            create_mcp_http_client(headers={"X-OpenViking-User": user}) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return [await session.call_tool(name, args) for name, args in calls]

    async def body(url: str) -> tuple[list[Any], list[Any]]:
        alice = await as_user(
            url,
            "alice",
            [
                ("find", {"query": "docker container", "limit": 2}),
                ("add_memory", {"text": memory, "category": "habits"}),
                ("find", {"query": "deployment fridays", "context_type": "memory"}),
            ],
        )
        bob = await as_user(
            url,
            "bob",
            [
                ("find", {"query": "deployment fridays", "context_type": "memory", "score_threshold": -1}),
                ("find", {"query": "deployment", "target_uri": "viking://user/alice"}),
            ],
        )
        return alice, bob

    with serving(app) as url:
        (found, added, recalled), (bob_recalled, bob_denied) = anyio.run(body, f"{url}/mcp")

    assert ok(found) == expected.to_dict()
    assert ok(found)["resources"][0]["uri"] == f"{H}/deploy/docker.md"
    memory_uri = ok(added)["uri"]
    assert memory_uri.startswith("viking://user/alice/memories/habits/"), memory_uri
    recalled_uris = [hit["uri"] for hit in ok(recalled)["memories"]]
    assert memory_uri in recalled_uris and all(u.startswith("viking://user/alice/") for u in recalled_uris)
    assert ok(bob_recalled)["memories"] == []  # bob's memories hold none of alice's
    failed(bob_denied, "PERMISSION_DENIED")
    assert base.as_user("alice").read(memory_uri).strip() == memory


def test_the_http_app_takes_posts_from_allowed_hosts_only(handbook_client: OpenViking) -> None:
    app = host_app(streamable_http_app(lambda: handbook_client, allowed_hosts=["localhost:*"]))
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    async def send(url: str, method: str, host: str) -> tuple[int, str | None, str]:
        async with create_mcp_http_client(headers={**headers, "Host": host}) as http:
            response = await http.request(method, url, json=ping if method == "POST" else None)
            return response.status_code, response.headers.get("allow"), response.text

    with serving(app) as url:
        local = f"localhost:{url.rsplit(':', 1)[1]}"
        status, _allow, pong = anyio.run(send, f"{url}/mcp", "POST", local)
        assert (status, json.loads(pong)["id"], json.loads(pong)["result"]) == (200, 1, {})
        assert anyio.run(send, f"{url}/mcp", "POST", "evil.example:80")[0] in (403, 421)
        for method in ("GET", "DELETE"):  # no stream to open, no session to end: at once, not held open
            status, allow, error = anyio.run(send, f"{url}/mcp", method, local)
            assert (status, allow, json.loads(error)["error"]["code"]) == (405, "POST", -32000), method


def test_the_embedded_client_works_for_the_stdio_command_with_a_fresh_store(tmp_path: Path) -> None:
    # add_memory through stdio creates the store when there is none yet
    conf = write_hash_config(tmp_path / "ov.conf")
    store = tmp_path / "fresh"

    async def body() -> tuple[Any, Any]:
        with open(tmp_path / "stderr.log", "w", encoding="utf-8") as errlog:
            async with stdio_session(store, conf, errlog) as session:
                missing = await session.call_tool("find", {"query": "tea"})
                added = await session.call_tool("add_memory", {"text": "The user drinks green tea"})
                return missing, added

    missing, added = anyio.run(body)
    failed(missing, "NOT_FOUND")
    with OpenViking(path=store, config=hash_config()) as client:
        assert ok(added)["uri"] in [m.uri for m in client.find("green tea").memories]
