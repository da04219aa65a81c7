"""The HTTP API route by route, over a real server on 127.0.0.1 (httpx as the client): each
answers the envelope of exactly what the embedded client returns for the same call, the
OpenAPI document lists every route of the contract, and the framework's own answers (an
unknown route, a wrong method) are envelopes too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import HASH_CONF, make_tree
from ovserver import ROOT_KEY, body_of, error_of, handbook_store, headers, keyed_config, thread_server

from openviking import __version__

# Every route of the contract (the MCP endpoint belongs to the MCP module).
SPEC_ROUTES = {
    ("post", "/api/v1/search/find"),
    ("post", "/api/v1/search/search"),
    ("post", "/api/v1/search/grep"),
    ("post", "/api/v1/search/glob"),
    ("get", "/api/v1/content/read"),
    ("get", "/api/v1/content/abstract"),
    ("get", "/api/v1/content/overview"),
    ("get", "/api/v1/relations"),
    ("post", "/api/v1/relations/link"),
    ("delete", "/api/v1/relations/link"),
    ("get", "/api/v1/fs/ls"),
    ("get", "/api/v1/fs/tree"),
    ("get", "/api/v1/fs/stat"),
    ("post", "/api/v1/fs/mkdir"),
    ("post", "/api/v1/fs/mv"),
    ("delete", "/api/v1/fs"),
    ("post", "/api/v1/sessions"),
    ("get", "/api/v1/sessions"),
    ("get", "/api/v1/sessions/{session_id}"),
    ("post", "/api/v1/sessions/{session_id}/messages"),
    ("delete", "/api/v1/sessions/{session_id}"),
    ("post", "/api/v1/resources/temp_upload"),
    ("post", "/api/v1/resources"),
    ("post", "/api/v1/skills"),
    ("post", "/api/v1/memories"),
    ("post", "/api/v1/reindex"),
    ("get", "/api/v1/doctor"),
    ("post", "/api/v1/doctor/repair"),
    ("get", "/health"),
    ("get", "/ready"),
}


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the handbook at viking://resources/docs, read only by this module's tests."""
    return handbook_store(tmp_path_factory.mktemp("api"))


@pytest.fixture(scope="module")
def http(docs: Path) -> Iterator[httpx.Client]:
    """A root-key client of a server on the read-only store."""
    with thread_server(keyed_config(), docs) as url:
        with httpx.Client(base_url=url, headers=headers(ROOT_KEY), timeout=30) as client:
            yield client


@pytest.fixture(scope="module")
def embedded(docs: Path) -> Iterator[Any]:
    """The embedded client over the same store, for the answers the server must give."""
    from openviking.config import config_from_dict
    from openviking.embedded.client import OpenViking

    with OpenViking(path=docs, config=config_from_dict(HASH_CONF)) as client:
        yield client


@pytest.fixture
def writable(tmp_path: Path) -> Iterator[httpx.Client]:
    """A root-key client of a server on a store of its own, to write to."""
    with thread_server(keyed_config(), handbook_store(tmp_path)) as url:
        with httpx.Client(base_url=url, headers=headers(ROOT_KEY), timeout=30) as client:
            yield client


def plain(value: Any) -> Any:
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value.to_dict() if hasattr(value, "to_dict") else value


# ----------------------------------------------------------------------------- reads: the embedded answers
READS = [
    ("post", "/api/v1/search/find", {"json": {"query": "deploy with docker", "limit": 3}},
     lambda c: c.find("deploy with docker", limit=3)),
    ("post", "/api/v1/search/find",
     {"json": {"query": "keys", "target_uri": ["viking://resources/docs/auth"], "level": [2], "explain": True}},
     lambda c: c.find("keys", target_uri=["viking://resources/docs/auth"], level=[2], explain=True)),
    ("post", "/api/v1/search/find", {"json": {"query": "keys", "telemetry": {"summary": True}}}, None),
    ("post", "/api/v1/search/search", {"json": {"query": "kubernetes helm", "mode": "keyword"}},
     lambda c: c.search("kubernetes helm", mode="keyword")),
    ("post", "/api/v1/search/grep",
     {"json": {"uri": "viking://resources/docs", "pattern": "docker", "case_insensitive": True}},
     lambda c: c.grep("viking://resources/docs", "docker", case_insensitive=True)),
    ("post", "/api/v1/search/grep", {"json": {"uri": "viking://resources", "pattern": "key", "count": True}},
     lambda c: c.grep("viking://resources", "key", count=True)),
    ("post", "/api/v1/search/glob", {"json": {"pattern": "deploy/*", "uri": "viking://resources/docs"}},
     lambda c: c.glob("deploy/*", "viking://resources/docs")),
    ("get", "/api/v1/content/read", {"params": {"uri": "viking://resources/docs/auth.md", "offset": 2, "limit": 1}},
     lambda c: c.read("viking://resources/docs/auth.md", 2, 1)),
    ("get", "/api/v1/content/abstract", {"params": {"uri": "viking://resources/docs/deploy"}},
     lambda c: c.abstract("viking://resources/docs/deploy")),
    ("get", "/api/v1/content/overview", {"params": {"uri": "viking://resources/docs"}},
     lambda c: c.overview("viking://resources/docs")),
    ("get", "/api/v1/fs/ls", {"params": {"uri": "viking://resources/docs"}}, lambda c: c.ls("viking://resources/docs")),
    ("get", "/api/v1/fs/ls", {"params": {"uri": "viking://resources/docs", "recursive": "true", "simple": "true",
                                         "limit": 4}},
     lambda c: c.ls("viking://resources/docs", recursive=True, simple=True, node_limit=4)),
    ("get", "/api/v1/fs/ls", {"params": {"uri": "viking://resources/docs", "show_all_hidden": "true", "abs_limit": 10}},
     lambda c: c.ls("viking://resources/docs", show_hidden=True, abs_limit=10)),
    ("get", "/api/v1/fs/tree", {"params": {"uri": "viking://resources", "level_limit": 2}},
     lambda c: c.tree("viking://resources", level_limit=2)),
    ("get", "/api/v1/fs/stat", {"params": {"uri": "viking://resources/docs/auth.md"}},
     lambda c: c.stat("viking://resources/docs/auth.md")),
    ("get", "/api/v1/relations", {"params": {"uri": "viking://resources/docs"}},
     lambda c: c.relations("viking://resources/docs")),
    ("get", "/api/v1/sessions", {}, lambda c: c.list_sessions()),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "request_args", "call"), READS, ids=[f"{r[0]} {r[1]}" for r in READS])
def test_a_read_answers_what_the_embedded_client_does(
    http: httpx.Client, embedded: Any, method: str, path: str, request_args: dict[str, Any], call: Any
) -> None:
    result = body_of(http.request(method.upper(), path, **request_args))
    if call is None:  # telemetry: its id and duration differ from call to call
        assert {"id", "summary"} <= set(result["telemetry"]), result
        return
    assert result == plain(call(embedded))


def test_find_hits_have_the_brief_fields(http: httpx.Client) -> None:
    result = body_of(http.post("/api/v1/search/find", json={"query": "how do users authenticate"}))
    assert result["resources"][0]["uri"] == "viking://resources/docs/auth.md"
    assert result["total"] == len(result["resources"]) + len(result["memories"]) + len(result["skills"])


def test_text_results_are_json_strings(http: httpx.Client) -> None:
    result = body_of(http.get("/api/v1/content/read", params={"uri": "viking://resources/docs/notes/cooking.md"}))
    assert result == "# Pancakes\n\nMix flour, milk and eggs, then fry the batter in butter.\n"


def test_not_found_is_404_with_the_library_error(http: httpx.Client, embedded: Any) -> None:
    from openviking.errors import NotFoundError

    response = http.get("/api/v1/content/read", params={"uri": "viking://resources/docs/nope.md"})
    error = error_of(response, 404, "NOT_FOUND")
    with pytest.raises(NotFoundError) as info:
        embedded.read("viking://resources/docs/nope.md")
    assert error == info.value.to_dict()


def test_a_bad_value_is_the_library_error_with_400(http: httpx.Client) -> None:
    error = error_of(http.post("/api/v1/search/find", json={"query": "x", "limit": -3}), 400, "INVALID_ARGUMENT")
    assert "limit" in error["message"]
    response = http.post("/api/v1/search/grep", json={"uri": "viking://", "pattern": "("})
    error = error_of(response, 400, "INVALID_ARGUMENT")
    assert "pattern" in error["message"].lower() or "regular expression" in error["message"].lower()
    error_of(http.get("/api/v1/fs/ls", params={"uri": "https://example.com"}), 400, "INVALID_URI")


# ----------------------------------------------------------------------------- writes
def test_fs_writes_round_trip(writable: httpx.Client) -> None:
    made = body_of(writable.post("/api/v1/fs/mkdir", json={"uri": "viking://resources/team", "description": "Team"}))
    assert made == {"uri": "viking://resources/team", "created": True}
    error_of(writable.post("/api/v1/fs/mkdir", json={"uri": "viking://resources/team"}), 409, "ALREADY_EXISTS")
    moved = body_of(
        writable.post(
            "/api/v1/fs/mv", json={"from_uri": "viking://resources/team", "to_uri": "viking://resources/crew"}
        )
    )
    assert moved["from"] == "viking://resources/team" and moved["to"] == "viking://resources/crew"
    assert body_of(writable.get("/api/v1/content/abstract", params={"uri": "viking://resources/crew"})) == "Team"
    error_of(writable.delete("/api/v1/fs", params={"uri": "viking://resources/docs"}), 412, "FAILED_PRECONDITION")
    gone = {"uri": "viking://resources/docs/deploy", "recursive": "true"}
    removed = body_of(writable.delete("/api/v1/fs", params=gone))
    assert removed["uri"] == "viking://resources/docs/deploy" and removed["removed"] == 3
    listed = body_of(writable.get("/api/v1/fs/ls", params={"uri": "viking://resources/docs", "simple": "true"}))
    assert "viking://resources/docs/deploy" not in listed


def test_links_round_trip(writable: httpx.Client) -> None:
    link = {"from_uri": "viking://resources/docs/auth.md", "to_uris": ["viking://resources/docs/README.md"],
            "reason": "start here"}  # fmt: skip
    linked = body_of(writable.post("/api/v1/relations/link", json=link))
    assert linked == {"from": link["from_uri"], "to": link["to_uris"], "reason": "start here", "linked": 1}
    relations = body_of(writable.get("/api/v1/relations", params={"uri": link["from_uri"]}))
    assert relations == [{"uri": "viking://resources/docs/README.md", "reason": "start here"}]
    unlink = {"from_uri": link["from_uri"], "to_uri": "viking://resources/docs/README.md"}
    gone = body_of(writable.request("DELETE", "/api/v1/relations/link", json=unlink))
    assert gone["removed"] == 1
    assert body_of(writable.get("/api/v1/relations", params={"uri": link["from_uri"]})) == []


def test_sessions_round_trip(writable: httpx.Client) -> None:
    generated = body_of(writable.post("/api/v1/sessions"))
    assert generated["message_count"] == 0 and generated["uri"].endswith(generated["session_id"])
    body_of(writable.post("/api/v1/sessions", json={"session_id": "s1"}))
    error_of(writable.post("/api/v1/sessions", json={"session_id": "s1"}), 409, "ALREADY_EXISTS")
    added = body_of(writable.post("/api/v1/sessions/s1/messages", json={"role": "user", "content": "hello"}))
    assert added["message_count"] == 1 and added["message"]["parts"] == [{"type": "text", "text": "hello"}]
    parts = [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    body_of(writable.post("/api/v1/sessions/s1/messages", json={"role": "assistant", "parts": parts}))
    session = body_of(writable.get("/api/v1/sessions/s1"))
    assert [m["role"] for m in session["messages"]] == ["user", "assistant"]
    assert session["messages"][1]["parts"] == parts
    listed = body_of(writable.get("/api/v1/sessions"))
    assert {s["session_id"] for s in listed} == {"s1", generated["session_id"]}
    deleted = body_of(writable.delete("/api/v1/sessions/s1"))
    assert deleted["session_id"] == "s1" and deleted["messages_deleted"] == 2
    error_of(writable.get("/api/v1/sessions/s1"), 404, "NOT_FOUND")
    error_of(writable.delete("/api/v1/sessions/s1"), 404, "NOT_FOUND")


def test_memories_skills_resources_reindex_doctor(writable: httpx.Client, tmp_path: Path) -> None:
    memory = body_of(writable.post("/api/v1/memories", json={"text": "The user prefers dark mode", "category": "ui"}))
    assert memory["uri"].startswith("viking://user/default/memories/ui/") and memory["added"] is True
    hits = body_of(writable.post("/api/v1/search/find", json={"query": "dark mode", "context_type": "memory"}))
    assert hits["memories"][0]["uri"] == memory["uri"]
    skill_dir = make_tree(tmp_path / "write-rfc", {"SKILL.md": "---\nname: write-rfc\n---\n# Write an RFC\n"})
    skill = body_of(writable.post("/api/v1/skills", json={"path": str(skill_dir)}))
    assert skill["root_uri"] == "viking://agent/skills/write-rfc" and skill["added"] == 1
    notes = make_tree(tmp_path / "notes", {"a.md": "# A\n\nalpha\n"})
    added = body_of(writable.post("/api/v1/resources", json={"path": str(notes), "parent": "viking://resources/docs",
                                                             "tags": ["team=search"]}))  # fmt: skip
    assert added["root_uri"] == "viking://resources/docs/notes" and added["added"] == 1
    error_of(writable.post("/api/v1/resources", json={"path": str(tmp_path / "missing")}), 404, "NOT_FOUND")
    reindexed = body_of(writable.post("/api/v1/reindex", json={"uri": "viking://resources/docs/notes"}))
    assert reindexed["embedder"] == "hash:v1-1024" and reindexed["files"] >= 1
    assert body_of(writable.post("/api/v1/reindex"))["files"] >= 6
    report = body_of(writable.get("/api/v1/doctor"))
    assert report["openviking"] == __version__ and report["store"]["exists"] is True
    mended = body_of(writable.post("/api/v1/doctor/repair"))  # a healthy store: nothing to mend
    assert mended["repaired"] == [] and mended["problems"] == report["problems"]


# ----------------------------------------------------------------------------- the server's own answers
def test_health_and_ready_need_no_key(http: httpx.Client) -> None:
    with httpx.Client(base_url=str(http.base_url), timeout=10) as bare:
        health = bare.get("/health")
        assert health.status_code == 200
        assert health.json() == {"status": "ok", "healthy": True, "version": __version__, "auth": "api_key"}
        ready = bare.get("/ready")
        assert ready.status_code == 200 and ready.json() == {"status": "ready"}


def test_openapi_lists_every_route_of_the_contract(http: httpx.Client) -> None:
    document = httpx.get(str(http.base_url.join("/openapi.json")), timeout=10).json()
    served = {(method, path) for path, operations in document["paths"].items() for method in operations}
    assert SPEC_ROUTES <= served, SPEC_ROUTES - served
    assert document["info"]["version"] == __version__
    find = document["paths"]["/api/v1/search/find"]["post"]
    assert find["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/FindBody")
    assert find["security"], find  # the key is documented on every API route


def test_unknown_route_and_wrong_method_are_envelopes(http: httpx.Client) -> None:
    error = error_of(http.get("/api/v1/nothing"), 404, "NOT_FOUND")
    assert "/api/v1/nothing" in error["message"]
    response = http.get("/api/v1/search/find")
    error = error_of(response, 405, "INVALID_ARGUMENT")
    assert error["details"]["allowed"] == ["POST"] and response.headers["allow"] == "POST"


def test_request_ids(http: httpx.Client) -> None:
    echoed = http.get("/api/v1/fs/ls", headers={"X-Request-ID": "client-id:42"})
    assert echoed.headers["x-request-id"] == "client-id:42"
    replaced = http.get("/api/v1/fs/ls", headers={"X-Request-ID": "not valid!"})
    assert replaced.headers["x-request-id"] not in ("not valid!", "")
    ids = {http.get("/health").headers["x-request-id"] for _ in range(3)}
    assert len(ids) == 3
    failed = http.get("/api/v1/content/read", params={"uri": "viking://resources/docs/nope.md"})
    assert failed.headers["x-request-id"]


def test_no_key_configured_acts_as_the_default_user(tmp_path: Path) -> None:
    with thread_server(HASH_CONF, handbook_store(tmp_path)) as url:
        health = httpx.get(url + "/health").json()
        assert health["auth"] == "none"
        # No key needed; X-OpenViking-User changes nothing: every request is the default user.
        memory = body_of(httpx.post(url + "/api/v1/memories", json={"text": "likes tea"},
                                    headers={"X-OpenViking-User": "alice"}))  # fmt: skip
        assert memory["uri"].startswith("viking://user/default/memories/")
        assert body_of(httpx.post(url + "/api/v1/search/find", json={"query": "docker"}))["total"] > 0
