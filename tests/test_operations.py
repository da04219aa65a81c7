"""Every declared operation reaches every face: the embedded client, both HTTP clients, the
server's routes and its OpenAPI document, the MCP tools (or a reason for none) and a command.

The declarations (``openviking.contract.operations``, on ``openviking.contract.interface``) are the one place an
operation is described; these tests fail when a face lacks one, or has it with other
parameters, and when a face offers something no declaration describes.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from helpers import hash_config

import openviking as ov
from openviking.contract.interface import OpenVikingClient, Operations
from openviking.contract.operations import OPERATIONS, NoTool, Param, Route, Tool, declared, operation, wire_type
from openviking.http_client import CommandLineHTTPClient

CLIENT_MEMBERS = {"user", "initialize", "close", "session"}
# Commands that run no operation of the interface: they serve it, make a key for it, or start,
# stop and report the local service that serves it.
NOT_OPERATIONS = {"serve", "key new", "mcp", "start", "stop", "status"}
# Routes written by hand that no operation declares: an upload, doctor's write, and upstream's
# routes that name a watch by its task_id (each calls the operation of its URI).
UNDECLARED_ROUTES = {
    ("POST", "/api/v1/resources/temp_upload"),
    ("POST", "/api/v1/doctor/repair"),
    ("GET", "/api/v1/watches/{task_id}"),
    ("PATCH", "/api/v1/watches/{task_id}"),
    ("DELETE", "/api/v1/watches/{task_id}"),
    ("POST", "/api/v1/watches/{task_id}/trigger"),
}


def _parameters(signature: inspect.Signature) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


def test_the_interface_is_its_operations_and_a_clients_own_members() -> None:
    declared_names = {name for name in vars(Operations) if not name.startswith("_")}
    assert declared_names == set(OPERATIONS)
    assert all(isinstance(vars(Operations)[name], type(OPERATIONS["find"])) for name in OPERATIONS)
    own = {name for name in vars(OpenVikingClient) if not name.startswith("_")}
    assert own == CLIENT_MEMBERS


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    embedded = ov.OpenViking(path=tmp_path_factory.mktemp("ops") / "store", config=hash_config())
    yield {
        "OpenViking": embedded,
        "SyncHTTPClient": ov.SyncHTTPClient("http://127.0.0.1:1"),
        "AsyncHTTPClient": ov.AsyncHTTPClient("http://127.0.0.1:1"),
        "CommandLineHTTPClient": CommandLineHTTPClient("http://127.0.0.1:1"),
    }
    embedded.close()


@pytest.mark.parametrize("kind", ["OpenViking", "SyncHTTPClient", "AsyncHTTPClient", "CommandLineHTTPClient"])
@pytest.mark.parametrize("name", list(OPERATIONS))
def test_every_client_has_every_operation_with_its_parameters(clients: dict[str, Any], kind: str, name: str) -> None:
    method = getattr(clients[kind], name)
    assert _parameters(inspect.signature(method)) == _parameters(OPERATIONS[name].signature), (kind, name)
    assert inspect.iscoroutinefunction(method) == (kind == "AsyncHTTPClient"), (kind, name)
    assert method.__doc__ and method.__doc__.strip(), (kind, name)


@pytest.mark.parametrize("kind", ["SyncHTTPClient", "AsyncHTTPClient"])
def test_the_http_clients_have_no_operation_of_their_own(kind: str) -> None:
    # They perform the declared operations, so none is defined again (and none can drift).
    cls = getattr(ov, kind)
    own = {name for name in vars(cls) if name in OPERATIONS}
    assert own == set(), own


def test_the_embedded_client_and_the_sync_client_are_interface_clients(clients: dict[str, Any]) -> None:
    assert isinstance(clients["OpenViking"], OpenVikingClient)
    assert isinstance(clients["SyncHTTPClient"], OpenVikingClient)


def _command_paths(command: Any, prefix: str = "") -> set[str]:
    paths = set()
    for name, sub in getattr(command, "commands", {}).items():
        path = f"{prefix} {name}".strip()
        if getattr(sub, "commands", None):
            paths |= _command_paths(sub, path)
        else:
            paths.add(path)
    return paths


def test_every_operation_has_a_command_and_every_command_an_operation() -> None:
    from openviking_cli.main import build_app

    commands = _command_paths(typer.main.get_command(build_app()))
    declared_commands = {op.command for op in OPERATIONS.values()}
    assert declared_commands <= commands, declared_commands - commands
    assert commands - declared_commands == NOT_OPERATIONS


def test_every_operation_has_its_route_and_every_route_an_operation(tmp_path: Path) -> None:
    from openviking.server.app import create_app

    paths = create_app(config=hash_config(), store=tmp_path / "store").openapi()["paths"]
    served = {(method.upper(), path) for path, methods in paths.items() for method in methods}
    declared_routes = {(op.http.method, op.http.path) for op in OPERATIONS.values()}
    assert declared_routes <= served, declared_routes - served
    api = {(method, path) for method, path in served if path.startswith("/api/")}
    assert api - declared_routes == UNDECLARED_ROUTES
    for op in OPERATIONS.values():
        described = paths[op.http.path][op.http.method.lower()]
        if not op.http.custom:
            assert described["operationId"] == op.name
            assert described["summary"] == inspect.cleandoc(op.__doc__ or "").split("\n")[0]


def test_every_operation_has_a_tool_or_says_why_not() -> None:
    from openviking.server.mcp import TOOLS

    for name, op in OPERATIONS.items():
        assert isinstance(op.mcp, Tool | NoTool), name
        if isinstance(op.mcp, NoTool):
            assert op.mcp.why.strip(), name
            assert name not in TOOLS
        else:
            tool = TOOLS[name]
            assert [p.name for p in tool.params] == list(op.tool_params)
            assert tool.read_only == (not op.writes)


def test_a_tool_takes_every_parameter_it_does_not_leave_out_with_a_reason() -> None:
    # A parameter declared on an operation reaches its tool unless the tool names it, and why.
    for name, op in OPERATIONS.items():
        if not isinstance(op.mcp, Tool):
            continue
        givable = [p for p in op.signature.parameters if not op.params[p].local]
        assert set(op.tool_params) | set(op.mcp.leaves_out) == set(givable), name
        assert not set(op.tool_params) & set(op.mcp.leaves_out), name
        assert all(why.strip() for why in op.mcp.leaves_out.values()), name
    assert "fixed_strings" in OPERATIONS["grep"].tool_params  # once left out by no one's choice


def test_a_parameter_declared_later_reaches_the_tool() -> None:
    @operation(http=Route("GET", "/x"), mcp=Tool("X", "Does x.", "{}"), command="x", params={"a": Param("A.")})
    def first(self: Any, a: int = 0) -> int:
        declared()

    @operation(
        http=Route("GET", "/x"),
        mcp=Tool("X", "Does x.", "{}", {"b": "an agent has no use for it"}),
        command="x",
        params={"a": Param("A."), "b": Param("B."), "c": Param("C.")},
    )
    def later(self: Any, a: int = 0, b: int = 0, c: int = 0) -> int:
        declared()

    try:
        assert first.tool_params == ("a",) and later.tool_params == ("a", "c")
    finally:
        del OPERATIONS["first"], OPERATIONS["later"]


def test_the_openapi_document_holds_each_declared_body_with_its_constraints(tmp_path: Path) -> None:
    from openviking.server.app import create_app

    document = create_app(config=hash_config(), store=tmp_path / "store").openapi()
    schemas = document["components"]["schemas"]
    find = schemas["FindBody"]
    declared_fields = {n for n, p in OPERATIONS["find"].params.items() if not p.local}
    assert set(find["properties"]) == declared_fields | set(OPERATIONS["find"].upstream)
    assert "no effect here" in find["properties"]["read_content"]["description"]
    assert find["required"] == ["query"] and find["additionalProperties"] is False
    assert find["properties"]["limit"]["minimum"] == 0
    assert find["properties"]["mode"]["anyOf"][0]["enum"] == ["hybrid", "vector", "keyword", "list", ""]
    assert find["properties"]["query"]["pattern"] == OPERATIONS["find"].params["query"].pattern
    assert find["properties"]["query"]["description"] == OPERATIONS["find"].params["query"].doc
    plain, context = schemas["SearchBody"]["oneOf"]
    from openviking.server.routes.search import CONTEXT_UPSTREAM

    context_fields = {"max_tokens", *CONTEXT_UPSTREAM}
    assert set(plain["properties"]) - set(find["properties"]) == {"session_id", "search_type"}
    assert set(context["properties"]) - set(plain["properties"]) == context_fields
    assert context["properties"]["mode"]["const"] == "context" and "mode" in context["required"]
    link = schemas["LinkBody"]
    assert "to_uris" in link["properties"] and "uris" not in link["properties"]  # the wire name
    ls = next(p for p in document["paths"]["/api/v1/content/read"]["get"]["parameters"] if p["name"] == "limit")
    assert ls["schema"]["minimum"] == -1


def test_a_search_body_field_is_not_a_find_field(tmp_path: Path) -> None:
    # Each operation's body is its own: session_id is search's, and find refuses it (400, not 500).
    from fastapi.testclient import TestClient

    from openviking.server.app import create_app

    with TestClient(create_app(config=hash_config(), store=tmp_path / "store"), base_url="http://127.0.0.1") as http:
        answer = http.post("/api/v1/search/find", json={"query": "q", "session_id": "s1"})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "INVALID_ARGUMENT"
    assert "session_id" in answer.json()["error"]["message"]


def test_a_declaration_must_describe_its_own_signature() -> None:
    with pytest.raises(TypeError, match="documents"):

        @operation(http=Route("GET", "/x"), mcp=NoTool("test"), command="x", params={"a": Param("A.")})
        def undocumented(self: Any, a: int, b: int) -> int:
            declared()

    with pytest.raises(TypeError, match="tool parameter"):

        @operation(
            http=Route("GET", "/x"),
            mcp=Tool("X", "Does x.", "{}", {"progress": "a callback"}),
            command="x",
            params={"progress": Param("P.", local=True)},
        )
        def local_tool(self: Any, progress: Any = None) -> int:
            declared()

    with pytest.raises(TypeError, match="leaves out a with no reason"):

        @operation(
            http=Route("GET", "/x"),
            mcp=Tool("X", "Does x.", "{}", {"a": " "}),
            command="x",
            params={"a": Param("A.")},
        )
        def unexplained(self: Any, a: int = 0) -> int:
            declared()

    assert not {"undocumented", "local_tool", "unexplained"} & set(OPERATIONS)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("query", str),
        ("target_uri", str | list[str]),
        ("since", str | None),
        ("filter", dict[str, Any] | str | None),  # its wire form is the object alone (json_type)
        ("tags", list[str] | str | None),
        ("telemetry", bool | dict[str, Any]),
        ("level", int | str | list[int | str] | None),
    ],
)
def test_a_parameter_has_its_json_form(name: str, expected: Any) -> None:
    assert wire_type(OPERATIONS["find"].hints[name]) == expected


def test_a_filter_travels_as_an_object() -> None:
    # Its JSON text is read by the client, as the embedded one reads it: the server takes objects.
    assert OPERATIONS["find"].wire_type("filter") == dict[str, Any] | None
    assert OPERATIONS["find"].wire_type("tags") == list[str] | str | None


def test_a_parameter_with_no_json_form_has_none() -> None:
    assert wire_type(OPERATIONS["add_resource"].hints["progress"]) is None
    assert wire_type(OPERATIONS["search"].hints["session"]) == str | None  # the handle drops out


# A valid call of each operation that takes a number, which each bound below is then broken in
# ("{handbook}": the handbook's folder, which the fixture watches at WATCHED).
H = "viking://resources/handbook"
WATCHED = "viking://resources/watched"
VALID_CALLS: dict[str, dict[str, Any]] = {
    "find": {"query": "docker"},
    "search": {"query": "docker"},
    "grep": {"uri": H, "pattern": "docker"},
    "glob": {"pattern": "**"},
    "read": {"uri": f"{H}/auth.md"},
    "ls": {"uri": H},
    "tree": {"uri": H},
    "commit_session": {"session_id": "bounds", "dry_run": True},
    "get_session_context": {"session_id": "bounds"},
    "context": {"query": "docker"},
    "evaluate": {"queries": [{"query": "docker", "relevant": [f"{H}/deploy/docker.md"]}]},
    "watch": {"path": "{handbook}", "to": WATCHED},
    "update_watch": {"to_uri": WATCHED},
}


def _bounded() -> list[tuple[str, str, float]]:
    """(operation, parameter, a value just outside its declared range) for every bounded number."""
    cases = []
    for name, op in OPERATIONS.items():
        for param_name, param in op.params.items():
            for bound, step in ((param.ge, -1), (param.le, 1)):
                if bound is not None:
                    cases.append((name, param_name, bound + step))
    return cases


def test_every_bounded_operation_has_a_valid_call_to_break() -> None:
    assert {name for name, _, _ in _bounded()} <= set(VALID_CALLS)


@pytest.fixture(scope="module")
def handbook_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from helpers import EN_FILES, make_tree

    base = tmp_path_factory.mktemp("bounds")
    client = ov.OpenViking(path=base / "store", config=hash_config())
    client.add_resource(make_tree(base / "handbook", EN_FILES))
    client.create_session("bounds")
    client.session("bounds").add_message("user", "We deploy with docker compose on Fridays")
    client.watch(base / "handbook", WATCHED)
    yield client
    client.close()


@pytest.mark.parametrize(("name", "param", "value"), _bounded(), ids=[f"{n}-{p}-{v}" for n, p, v in _bounded()])
def test_a_number_outside_its_declared_range_is_refused_on_every_face(
    handbook_client: Any, name: str, param: str, value: float
) -> None:
    from helpers import unharmed
    from ovserver import thread_server

    handbook = str(Path(handbook_client.store_path).parent / "handbook")
    valid = {key: handbook if given == "{handbook}" else given for key, given in VALID_CALLS[name].items()}
    arguments = {**valid, param: int(value)}
    getattr(handbook_client, name)(**valid)  # the call is valid without the broken bound
    error = unharmed(handbook_client, lambda: getattr(handbook_client, name)(**arguments))
    assert error.code == "INVALID_ARGUMENT" and param in error.message, error.to_dict()
    with thread_server({"embedding": {"dense": {"provider": "hash"}}}, Path(handbook_client.store_path)) as url:
        with pytest.raises(ov.OpenVikingError) as over_http:
            getattr(ov.SyncHTTPClient(url), name)(**arguments)
    assert over_http.value.to_dict() == error.to_dict()
