"""``/mcp`` on the server: the MCP tools over streamable HTTP, behind the same keys as the API.

Through the mcp package's own client, against a real server on 127.0.0.1: a key's user is who
the tools act as, a missing key is 401 before any MCP message, and the results are the API's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from ovserver import ALICE_KEY, BOB_KEY, ROOT_KEY, body_of, handbook_store, headers, keyed_config, thread_server

H = "viking://resources/docs"


async def _calls(url: str, key: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async with (
        create_mcp_http_client(headers={"X-API-Key": key}) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        assert {"find", "grep", "add_memory"} <= {tool.name for tool in listed.tools}
        return [await session.call_tool(name, args) for name, args in calls]


def _json(result: Any) -> Any:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with thread_server(keyed_config(), handbook_store(tmp_path_factory.mktemp("mcp"))) as url:
        yield url


def test_mcp_tools_answer_as_the_api_does_and_act_as_the_keys_user(server: str) -> None:
    memory = "Alice reviews deployments on Fridays"
    with httpx.Client(base_url=server, timeout=60) as http:  # before the memory changes the scores
        api = body_of(http.post("/api/v1/search/find", json={"query": "docker deployment", "limit": 2},
                                headers=headers(ALICE_KEY)))  # fmt: skip

    async def body() -> tuple[list[Any], list[Any]]:
        alice = await _calls(
            server,
            ALICE_KEY,
            [("find", {"query": "docker deployment", "limit": 2}), ("add_memory", {"text": memory})],
        )
        bob = await _calls(server, BOB_KEY, [("ls", {"uri": "viking://user/alice"})])
        return alice, bob

    (found, added), (denied,) = anyio.run(body)
    assert _json(found) == api
    with httpx.Client(base_url=server, timeout=60) as http:
        uri = _json(added)["uri"]
        assert uri.startswith("viking://user/alice/memories/")
        assert (
            body_of(http.get("/api/v1/content/read", params={"uri": uri}, headers=headers(ALICE_KEY))).strip() == memory
        )
        root_reads = body_of(http.get("/api/v1/content/read", params={"uri": uri}, headers=headers(ROOT_KEY)))
        assert root_reads.strip() == memory
    assert denied.is_error and denied.content[0].text.startswith("PERMISSION_DENIED: ")


def test_mcp_without_a_key_is_refused_before_any_message(server: str) -> None:
    with httpx.Client(base_url=server, timeout=30) as http:
        response = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                             headers={"Accept": "application/json, text/event-stream"})  # fmt: skip
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "UNAUTHENTICATED"
        wrong = http.post("/mcp", json={}, headers={"X-API-Key": "not-a-key"})
        assert wrong.status_code == 401


def test_the_openapi_document_leaves_mcp_out(server: str, tmp_path: Path) -> None:
    with httpx.Client(base_url=server, timeout=30) as http:
        paths = http.get("/openapi.json", headers=headers()).json()["paths"]
    assert "/mcp" not in paths and "/api/v1/search/find" in paths
