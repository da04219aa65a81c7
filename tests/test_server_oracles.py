"""A user key learns nothing of another user's space by naming it: every operation answers a URI
there (or a session id of theirs) the same whether it exists or not, and no answer names one.

Against ``openviking serve`` on 127.0.0.1 with a root key and two user keys: alice keeps a memory
whose name holds her PIN, links a shared page to it and has a session; bob guesses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import snapshot
from ovserver import (
    ALICE_KEY,
    BOB_KEY,
    ROOT_KEY,
    body_of,
    error_of,
    handbook_store,
    headers,
    keyed_config,
    thread_server,
)

SHARED = "viking://resources/docs/auth.md"
MISSING = "viking://user/alice/memories/preferences/my-bank-pin-is-0000.md"
SESSION = "alice-chat"
MISSING_SESSION = "alice-chat-2"
# Alice's PIN as her memory and her message say it, and as her memory's name spells it.
PIN = re.compile(r"is[ _-]4071")


@dataclass
class Keyed:
    url: str
    store: Path
    memory: str  # alice's memory, whose URI holds her PIN


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keyed]:
    base = tmp_path_factory.mktemp("oracles")
    store = handbook_store(base)
    with thread_server(keyed_config(), store) as url, httpx.Client(base_url=url, timeout=60) as http:
        alice = headers(ALICE_KEY)
        added = body_of(http.post("/api/v1/memories", json={"text": "my bank PIN is 4071"}, headers=alice))
        memory = added["uri"]
        assert PIN.search(memory), memory  # what a guess would find
        link = {"from_uri": SHARED, "to_uris": [memory], "reason": "where my PIN is"}
        body_of(http.post("/api/v1/relations/link", json=link, headers=alice))
        said = {"role": "user", "content": "my PIN is 4071"}
        body_of(http.post(f"/api/v1/sessions/{SESSION}/messages", json=said, headers=alice))
        body_of(http.post("/api/v1/snapshots", json={"name": "before-guesses"}, headers=headers(ROOT_KEY)))
        body_of(http.post("/api/v1/memories", json={"text": "bob drinks tea"}, headers=headers(BOB_KEY)))
        yield Keyed(url, store, memory)


def _upload(http: httpx.Client) -> str:
    files = {"file": ("note.md", b"# A note\n\nfor a guess\n", "text/markdown")}
    return str(body_of(http.post("/api/v1/resources/temp_upload", files=files))["temp_file_id"])


Request = Callable[[httpx.Client, str], httpx.Response]

# Each operation that takes a URI or a session id, named by it and by the parameter it is given
# another user's in: the request bob sends, given that URI (or id).
URI_REQUESTS: dict[str, Request] = {
    "find target_uri": lambda h, u: h.post("/api/v1/search/find", json={"query": "pin", "target_uri": u}),
    "search target_uri": lambda h, u: h.post("/api/v1/search/search", json={"query": "pin", "target_uri": u}),
    "context target_uri": lambda h, u: h.post("/api/v1/search/context", json={"query": "pin", "target_uri": u}),
    "grep uri": lambda h, u: h.post("/api/v1/search/grep", json={"uri": u, "pattern": "PIN"}),
    "grep exclude_uri": lambda h, u: h.post(
        "/api/v1/search/grep", json={"uri": "viking://resources", "pattern": "PIN", "exclude_uri": u}
    ),
    "glob uri": lambda h, u: h.post("/api/v1/search/glob", json={"pattern": "*", "uri": u}),
    "read uri": lambda h, u: h.get("/api/v1/content/read", params={"uri": u}),
    "abstract uri": lambda h, u: h.get("/api/v1/content/abstract", params={"uri": u}),
    "overview uri": lambda h, u: h.get("/api/v1/content/overview", params={"uri": u}),
    "ls uri": lambda h, u: h.get("/api/v1/fs/ls", params={"uri": u}),
    "tree uri": lambda h, u: h.get("/api/v1/fs/tree", params={"uri": u}),
    "download uri": lambda h, u: h.get("/api/v1/content/download", params={"uri": u}),
    "stat uri": lambda h, u: h.get("/api/v1/fs/stat", params={"uri": u}),
    "stat uri as_of": lambda h, u: h.get("/api/v1/fs/stat", params={"uri": u, "as_of": "before-guesses"}),
    "relations uri": lambda h, u: h.get("/api/v1/relations", params={"uri": u}),
    "add_resource to": lambda h, u: h.post("/api/v1/resources", json={"temp_file_id": _upload(h), "to": u}),
    "add_resource parent": lambda h, u: h.post("/api/v1/resources", json={"temp_file_id": _upload(h), "parent": u}),
    "write uri": lambda h, u: h.post("/api/v1/content/write", json={"uri": u, "content": "guess"}),
    "mkdir uri": lambda h, u: h.post("/api/v1/fs/mkdir", json={"uri": u}),
    "rm uri": lambda h, u: h.request("DELETE", "/api/v1/fs", params={"uri": u}),
    "mv from_uri": lambda h, u: h.post("/api/v1/fs/mv", json={"from_uri": u, "to_uri": "viking://user/bob/taken.md"}),
    "mv to_uri": lambda h, u: h.post("/api/v1/fs/mv", json={"from_uri": "viking://user/bob/nothing.md", "to_uri": u}),
    "link from_uri": lambda h, u: h.post("/api/v1/relations/link", json={"from_uri": u, "to_uris": [SHARED]}),
    "link uris": lambda h, u: h.post("/api/v1/relations/link", json={"from_uri": SHARED, "to_uris": [u]}),
    "unlink from_uri": lambda h, u: h.request(
        "DELETE", "/api/v1/relations/link", json={"from_uri": u, "to_uri": SHARED}
    ),
    "unlink uri": lambda h, u: h.request("DELETE", "/api/v1/relations/link", json={"from_uri": SHARED, "to_uri": u}),
    "reindex uri": lambda h, u: h.post("/api/v1/reindex", json={"uri": u}),
    "index uri": lambda h, u: h.post("/api/v1/index", json={"uri": u}),
    "watch to": lambda h, u: h.post("/api/v1/watches", json={"path": "/tmp", "to": u}),
    "watch parent": lambda h, u: h.post("/api/v1/watches", json={"path": "/tmp", "parent": u}),
    "list_watches to_uri": lambda h, u: h.get("/api/v1/watches", params={"to_uri": u}),
    "update_watch to_uri": lambda h, u: h.patch("/api/v1/watches", params={"to_uri": u}, json={"is_active": False}),
    "delete_watch to_uri": lambda h, u: h.request("DELETE", "/api/v1/watches", params={"to_uri": u}),
    "trigger_watch to_uri": lambda h, u: h.post("/api/v1/watches/trigger", params={"to_uri": u}),
    "evaluate queries": lambda h, u: h.post("/api/v1/eval", json={"queries": [{"query": "pin", "relevant": [u]}]}),
    "evaluate queries uri": lambda h, u: h.post(
        "/api/v1/eval", json={"queries": [{"query": "pin", "relevant": [SHARED], "uri": u}]}
    ),
}
SESSION_REQUESTS: dict[str, Request] = {
    "get_session session_id": lambda h, s: h.get(f"/api/v1/sessions/{s}"),
    "get_session_context session_id": lambda h, s: h.get(f"/api/v1/sessions/{s}/context"),
    "commit_session session_id": lambda h, s: h.post(f"/api/v1/sessions/{s}/commit", json={"dry_run": True}),
    "delete_session session_id": lambda h, s: h.request("DELETE", f"/api/v1/sessions/{s}"),
    "search session_id": lambda h, s: h.post("/api/v1/search/search", json={"query": "pin", "session_id": s}),
    "context session_id": lambda h, s: h.post("/api/v1/search/context", json={"query": "pin", "session_id": s}),
    "evaluate session_id": lambda h, s: h.post(
        "/api/v1/eval", json={"queries": [{"query": "pin", "relevant": [SHARED]}], "session_id": s}
    ),
}
# The parameters that name a place or a session, and the operations that have none of them
# answer the same to everyone.
NAMING = {"uri", "target_uri", "exclude_uri", "from_uri", "to_uri", "uris", "to", "parent", "queries", "session_id"}


def test_every_operation_that_names_a_place_is_tried() -> None:
    from openviking.contract.interface import Operations
    from openviking.contract.operations import OPERATIONS

    assert Operations  # the declarations are made on import
    tried = {name.split()[0] for name in (*URI_REQUESTS, *SESSION_REQUESTS)}
    naming = {name for name, op in OPERATIONS.items() if NAMING & set(op.params)}
    # add_message with another user's session id makes a session of the caller's own (nothing is
    # looked up), and create_session the same.
    assert naming - tried == {"add_message", "create_session"}, naming - tried


def _alike(first: httpx.Response, second: httpx.Response, named: tuple[str, str]) -> dict[str, Any]:
    """The two answers, once each names its own guess the same way, are one answer; it."""

    def untimed(value: Any) -> Any:  # how long it took is not what it says
        if isinstance(value, dict):
            return {k: untimed(v) for k, v in value.items() if k not in ("time", "seconds")}
        return [untimed(v) for v in value] if isinstance(value, list) else value

    def shown(response: httpx.Response, guess: str) -> str:
        text = json.dumps(untimed(response.json()), sort_keys=True)
        return text.replace(json.dumps(guess)[1:-1], "<guess>")

    assert first.status_code == second.status_code, (first.text, second.text)
    assert shown(first, named[0]) == shown(second, named[1]), (first.text, second.text)
    assert not PIN.search(second.text), second.text
    answer: dict[str, Any] = first.json()
    return answer


@pytest.mark.parametrize("name", sorted(URI_REQUESTS))
def test_another_users_uri_answers_alike_whether_it_exists_or_not(keyed: Keyed, name: str) -> None:
    before = snapshot(keyed.store)
    with httpx.Client(base_url=keyed.url, timeout=60, headers=headers(BOB_KEY)) as http:
        request = URI_REQUESTS[name]
        answer = _alike(request(http, keyed.memory), request(http, MISSING), (keyed.memory, MISSING))
    error = answer["error"]
    assert error["code"] == "PERMISSION_DENIED", error
    refusals = ("another user's space", "Only the root key", "A user key cannot add a path on the server's machine")
    assert any(refusal in error["message"] for refusal in refusals), error
    assert snapshot(keyed.store) == before


@pytest.mark.parametrize("name", sorted(SESSION_REQUESTS))
def test_another_users_session_id_answers_alike_whether_it_exists_or_not(keyed: Keyed, name: str) -> None:
    before = snapshot(keyed.store)
    with httpx.Client(base_url=keyed.url, timeout=60, headers=headers(BOB_KEY)) as http:
        request = SESSION_REQUESTS[name]
        first, second = request(http, SESSION), request(http, MISSING_SESSION)
        _alike(first, second, (SESSION, MISSING_SESSION))
        assert not PIN.search(first.text), first.text
    assert snapshot(keyed.store) == before


def test_a_user_keys_golden_file_cannot_test_another_users_uris(keyed: Keyed) -> None:
    # Ten guesses, one of them right: the answer does not say which.
    guesses = [keyed.memory.replace("4071", f"{pin:04d}") for pin in range(4066, 4076)]
    assert keyed.memory in guesses
    queries = [{"query": "what is my PIN", "relevant": [guess]} for guess in guesses]
    before = snapshot(keyed.store)
    with httpx.Client(base_url=keyed.url, timeout=60) as http:
        answer = http.post("/api/v1/eval", json={"queries": queries}, headers=headers(BOB_KEY))
        error = error_of(answer, 403, "PERMISSION_DENIED")
        assert error["message"] == f"Access denied: {guesses[0]} is in another user's space", error
        assert error["details"] == {"uri": guesses[0], "user": "bob"}, error
        # Her own golden file: the missing ones are named, the stored one is not.
        mine = body_of(http.post("/api/v1/eval", json={"queries": queries}, headers=headers(ALICE_KEY)))
        missing = [uri for query in mine["queries"] for uri in query["missing"]]
        assert sorted(missing) == sorted(set(guesses) - {keyed.memory})
    assert snapshot(keyed.store) == before


def test_a_link_to_another_users_space_is_not_shown(keyed: Keyed) -> None:
    with httpx.Client(base_url=keyed.url, timeout=60) as http:
        for key, sees in ((BOB_KEY, False), (ALICE_KEY, True), (ROOT_KEY, True)):
            relations = body_of(http.get("/api/v1/relations", params={"uri": SHARED}, headers=headers(key)))
            assert (keyed.memory in json.dumps(relations)) is sees, (key, relations)
            found = body_of(
                http.post(
                    "/api/v1/search/find",
                    json={"query": "OAuth authorization code flow", "target_uri": "viking://resources/docs"},
                    headers=headers(key),
                )
            )
            hit = next(hit for hit in found["resources"] if hit["uri"] == SHARED)
            assert (keyed.memory in json.dumps(hit["relations"])) is sees, (key, hit)


def test_the_users_folder_counts_only_what_a_user_key_lists(keyed: Keyed) -> None:
    with httpx.Client(base_url=keyed.url, timeout=60) as http:
        for key in (BOB_KEY, ALICE_KEY):
            listed = body_of(http.get("/api/v1/fs/ls", params={"uri": "viking://user"}, headers=headers(key)))
            info = body_of(http.get("/api/v1/fs/stat", params={"uri": "viking://user"}, headers=headers(key)))
            assert info["children"] == len(listed) == 1, (key, info, listed)
        root = body_of(http.get("/api/v1/fs/stat", params={"uri": "viking://user"}, headers=headers(ROOT_KEY)))
        assert root["children"] >= 2, root


def test_a_user_key_sees_snapshots_without_the_stores_tables(keyed: Keyed) -> None:
    with httpx.Client(base_url=keyed.url, timeout=60) as http:
        root = body_of(http.get("/api/v1/snapshots", headers=headers(ROOT_KEY)))
        bob = body_of(http.get("/api/v1/snapshots", headers=headers(BOB_KEY)))
    assert [s["name"] for s in root] == [s["name"] for s in bob] == ["before-guesses"]
    assert {"nodes", "messages", "sessions"} <= set(root[0]["tables"]), root
    assert bob[0]["tables"] == {}, bob
    assert bob[0]["version"] == root[0]["version"] and bob[0]["created_at"] == root[0]["created_at"]


@pytest.mark.parametrize("as_of", [" ", "\t", "  \n "])
@pytest.mark.parametrize(
    "request_of",
    [
        lambda h, a: h.get("/api/v1/content/read", params={"uri": SHARED, "as_of": a}),
        lambda h, a: h.post("/api/v1/search/glob", json={"pattern": "**/*.md", "as_of": a}),
        lambda h, a: h.get("/api/v1/fs/ls", params={"uri": "viking://resources", "as_of": a}),
    ],
    ids=["read", "glob", "ls"],
)
def test_a_blank_as_of_is_a_bad_argument(keyed: Keyed, as_of: str, request_of: Request) -> None:
    before = snapshot(keyed.store)
    with httpx.Client(base_url=keyed.url, timeout=60, headers=headers(BOB_KEY)) as http:
        error = error_of(request_of(http, as_of), 400, "INVALID_ARGUMENT")
    assert error["message"] == "as_of is empty", error
    assert error["details"] == {"as_of": as_of}, error
    assert snapshot(keyed.store) == before
