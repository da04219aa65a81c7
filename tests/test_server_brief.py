"""Every curl command of the brief, verbatim but for the port and the key, run with the real
curl against ``openviking serve``: status 200, the envelope, and the result shapes of the
brief's response examples.

The store holds the small handbook under viking://resources/docs (with a folder auth/ beside
auth.md, as the brief reads both). A scripted planner LLM makes search's query_plan; the
session the brief names (abc123) is created over HTTP first.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import GUIDE_EN, GUIDE_ZH, MATCHED_CONTEXT_KEYS
from ovserver import (
    ROOT_KEY,
    ServerProcess,
    body_of,
    handbook_store,
    headers,
    keyed_config,
    process_server,
    thread_server,
)
from servers import ChatServer, plan_json

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="needs the curl binary")

# The brief's commands as it prints them; only http://localhost:1933 and your-key change.
BRIEF_CURLS: dict[str, str] = {
    "find": r"""curl -X POST http://localhost:1933/api/v1/search/find \
    -H "Content-Type: application/json" \
    -H "X-API-Key: your-key" \
    -d '{
        "query": "how to authenticate users",
        "limit": 10
    }'""",
    "find_target_time": r"""curl -X POST http://localhost:1933/api/v1/search/find \
    -H "Content-Type: application/json" \
    -H "X-API-Key: your-key" \
    -d '{
        "query": "authentication",
        "target_uri": "viking://resources",
        "since": "7d",
        "time_field": "created_at"
    }'""",
    "search_session": r"""curl -X POST http://localhost:1933/api/v1/search/search \
    -H "Content-Type: application/json" \
    -H "X-API-Key: your-key" \
    -d '{
        "query": "best practices",
        "session_id": "abc123",
        "since": "2h",
        "time_field": "updated_at",
        "limit": 10
    }'""",
    "search_no_session": r"""curl -X POST http://localhost:1933/api/v1/search/search \
    -H "Content-Type: application/json" \
    -H "X-API-Key: your-key" \
    -d '{
        "query": "how to implement OAuth 2.0 authorization code flow"
    }'""",
    "grep": r"""curl -X POST http://localhost:1933/api/v1/search/grep \
    -H "Content-Type: application/json" \
    -H "X-API-Key: your-key" \
    -d '{
        "uri": "viking://resources",
        "pattern": "authentication",
        "case_insensitive": true
    }'""",
    "glob": r"""curl -X POST http://localhost:1933/api/v1/search/glob \
    -H "Content-Type: application/json" \
    -H "X-API-Key: your-key" \
    -d '{
        "pattern": "**/*.md",
        "uri": "viking://resources"
    }'""",
    "step1_find": r"""curl -X POST http://localhost:1933/api/v1/search/find \
    -H "Content-Type: application/json" \
    -H "X-API-Key: your-key" \
    -d '{"query": "authentication"}'""",
    "step2_overview": r'''curl -X GET "http://localhost:1933/api/v1/content/overview?uri=viking://resources/docs/auth" \
    -H "X-API-Key: your-key"''',
    "step3_read": r'''curl -X GET "http://localhost:1933/api/v1/content/read?uri=viking://resources/docs/auth.md" \
    -H "X-API-Key: your-key"''',
    "relations": r'''curl -X GET "http://localhost:1933/api/v1/relations?uri=viking://resources/docs/auth" \
    -H "X-API-Key: your-key"''',
}
BRIEF_ITEM_KEYS = {"context_type", "uri", "level", "score", "category", "match_reason", "relations", "abstract"}
PLAN = plan_json(("OAuth 2.0 best practices", "resource"), ("login page security", "resource"),
                 reasoning="User asks about OAuth login best practices")  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    base = tmp_path_factory.mktemp("brief")
    store = handbook_store(base)
    with ChatServer(PLAN) as chat:
        raw = keyed_config()
        raw["query_planner"] = {"api_base": chat.api_base, "model": "planner", "timeout": 10, "max_retries": 0}
        with process_server(raw, store, base) as running:
            with httpx.Client(base_url=running.url, headers=headers(ROOT_KEY), timeout=30) as http:
                body_of(http.post("/api/v1/sessions", json={"session_id": "abc123"}))
                for role, text in (("user", "I'm building a login page with OAuth"),
                                   ("assistant", "I can help you with OAuth implementation.")):  # fmt: skip
                    body_of(http.post("/api/v1/sessions/abc123/messages", json={"role": role, "content": text}))
                link = {"from_uri": "viking://resources/docs/auth", "to_uris": "viking://resources/docs/auth.md",
                        "reason": "the overview of the same topic"}  # fmt: skip
                body_of(http.post("/api/v1/relations/link", json=link))
            yield running


def curl(server: ServerProcess | str, name: str, key: str = ROOT_KEY) -> tuple[int, Any]:
    """Run the brief's command ``name`` against ``server`` (or its URL): its HTTP status and result."""
    port = (server if isinstance(server, str) else server.url).rsplit(":", 1)[1]
    command = BRIEF_CURLS[name].replace("localhost:1933", f"localhost:{port}").replace("your-key", key)
    # Options that only say how curl reports: silent, errors shown, the status after the body.
    proc = subprocess.run(
        ["bash", "-c", command + " -sS -w '\\n%{http_code}'"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    text, status = proc.stdout.rsplit("\n", 1)
    payload = json.loads(text)
    assert set(payload) == {"status", "result", "time"}, payload
    assert payload["status"] == "ok" and isinstance(payload["time"], float)
    return int(status), payload["result"]


def assert_find_result(result: dict[str, Any], *, planned: bool = False) -> None:
    # The brief's FindResult, and how many records in the query's scope wait for their vectors.
    expected = {"memories", "resources", "skills", "total", "pending_vectors"} | ({"query_plan"} if planned else set())
    assert set(result) == expected, result.keys()
    groups = [result["memories"], result["resources"], result["skills"]]
    assert result["total"] == sum(len(g) for g in groups)
    for group, context_type in zip(groups, ("memory", "resource", "skill"), strict=True):
        for item in group:
            assert item["context_type"] == context_type
            assert BRIEF_ITEM_KEYS <= set(item), item
            if not planned:
                assert list(item) == MATCHED_CONTEXT_KEYS, item
            assert isinstance(item["score"], float) and item["level"] in (0, 1, 2)
            assert isinstance(item["relations"], list) and isinstance(item["abstract"], str)


@pytest.mark.parametrize("name", ["find", "find_target_time", "step1_find"])
def test_find_examples(server: ServerProcess, name: str) -> None:
    status, result = curl(server, name)
    assert status == 200
    assert_find_result(result)
    assert result["resources"], result
    top = [hit["uri"] for hit in result["resources"][:3]]
    assert any("auth" in uri for uri in top), top


def test_search_with_the_session_returns_the_query_plan(server: ServerProcess) -> None:
    status, result = curl(server, "search_session")
    assert status == 200
    assert_find_result(result, planned=True)
    plan = result["query_plan"]
    assert plan["reasoning"] == "User asks about OAuth login best practices"
    assert [q["query"] for q in plan["queries"]] == ["OAuth 2.0 best practices", "login page security"]
    for query in plan["queries"]:
        assert set(query) == {"query", "context_type", "intent", "priority"}
        assert query["context_type"] == "resource"


def test_search_without_a_session(server: ServerProcess) -> None:
    status, result = curl(server, "search_no_session")
    assert status == 200
    assert_find_result(result)  # the query runs alone: no plan to report
    assert any("oauth" in hit["uri"] for hit in result["resources"][:3]), result["resources"]


def test_grep_example(server: ServerProcess) -> None:
    status, result = curl(server, "grep")
    assert status == 200
    assert {"matches", "count"} <= set(result)
    assert result["count"] == len(result["matches"]) > 0
    for match in result["matches"]:
        assert {"uri", "line", "content"} <= set(match)
        assert match["uri"].startswith("viking://resources/") and isinstance(match["line"], int)
        assert "authentication" in match["content"].lower()


def test_glob_example(server: ServerProcess) -> None:
    status, result = curl(server, "glob")
    assert status == 200
    assert set(result) == {"matches", "count"}
    assert result["count"] == len(result["matches"])
    assert "viking://resources/docs/auth.md" in result["matches"]
    assert "viking://resources/docs/auth/oauth.md" in result["matches"]
    assert all(isinstance(uri, str) and uri.endswith(".md") for uri in result["matches"])


def test_progressive_reading_examples(server: ServerProcess) -> None:
    status, overview = curl(server, "step2_overview")
    assert status == 200
    assert isinstance(overview, str) and "oauth.md" in overview
    status, content = curl(server, "step3_read")
    assert status == 200
    assert content.startswith("# Authentication\n") and "Rotate API keys" in content


def test_relations_example(server: ServerProcess) -> None:
    status, result = curl(server, "relations")
    assert status == 200
    assert result == [{"uri": "viking://resources/docs/auth.md", "reason": "the overview of the same topic"}]


@pytest.mark.slow
def test_the_brief_find_on_the_repositorys_guide(guide_store: tuple[Any, Any]) -> None:
    # The guide ingested with the bundled model (conftest.py), served with the default config:
    # no key configured, so the brief's X-API-Key header is simply not needed.
    client, _ = guide_store
    with thread_server({}, Path(client.store_path)) as url:
        status, result = curl(url, "find", key="your-key")
        assert status == 200
        assert_find_result(result)
        top = [hit["uri"] for hit in result["resources"][:3]]
        assert "viking://resources/guide/05-authentication.md" in top, top
        status, result = curl(url, "glob", key="your-key")
        assert status == 200
        pages = len(list(GUIDE_EN.glob("*.md"))) + len(list(GUIDE_ZH.glob("*.md")))
        assert result["count"] == pages, result


@pytest.mark.slow
@pytest.mark.needs_shared_data
def test_the_brief_find_on_openvikings_own_docs(docs_store: tuple[Any, Any]) -> None:
    # The docs ingested with the bundled model (conftest.py), served with the default config:
    # no key configured, so the brief's X-API-Key header is simply not needed.
    client, _ = docs_store
    with thread_server({}, Path(client.store_path)) as url:
        status, result = curl(url, "find", key="your-key")
        assert status == 200
        assert_find_result(result)
        top = [hit["uri"] for hit in result["resources"][:3]]
        assert "viking://resources/docs/guides/04-authentication.md" in top, top
        status, result = curl(url, "glob", key="your-key")
        assert status == 200 and result["count"] > 100
