"""Nothing of one user reaches another through a server: not in a summary above their spaces,
not in a listing, not in doctor; and no web page elsewhere reaches a server (DNS rebinding).

The store holds two users' private folders, with names and titles that would give them away.
Each check fails when the leak it is about comes back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
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

# What of alice's space would give her away to bob.
ALICE_SECRETS = ("alice", "Falcon", "acquisition")


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("isolation")
    store = handbook_store(base)
    project = base / "falcon"
    project.mkdir()
    (project / "plan.md").write_text("# Project Falcon\n\nThe acquisition closes in March.\n", encoding="utf-8")
    with thread_server(keyed_config(), store) as url:
        with httpx.Client(base_url=url, timeout=60) as http:
            alice = headers(ALICE_KEY)
            body_of(http.post("/api/v1/memories", json={"text": "Falcon is my secret project"}, headers=alice))
            root_as_alice = headers(ROOT_KEY, **{"X-OpenViking-User": "alice"})
            added = {"path": str(project), "to": "viking://user/alice/resources/falcon"}
            body_of(http.post("/api/v1/resources", json=added, headers=root_as_alice))
            body_of(http.post("/api/v1/memories", json={"text": "bob drinks coffee"}, headers=headers(BOB_KEY)))
        yield url


def _bob_sees(url: str) -> list[tuple[str, str]]:
    """Everything bob reads above and around the users' spaces, over REST: (what, text)."""
    bob = headers(BOB_KEY)
    seen = []
    with httpx.Client(base_url=url, timeout=60, headers=bob) as http:
        for uri in ("viking://user", "viking://"):
            for kind in ("abstract", "overview", "read"):
                seen.append((f"{kind} {uri}", body_of(http.get(f"/api/v1/content/{kind}", params={"uri": uri}))))
        for params in (
            {"uri": "viking://", "recursive": "true"},
            {"uri": "viking://user"},
            {"uri": "viking://user", "show_all_hidden": "true"},
        ):
            seen.append((f"ls {params}", json.dumps(body_of(http.get("/api/v1/fs/ls", params=params)))))
        seen.append(
            (
                "tree viking://",
                json.dumps(body_of(http.get("/api/v1/fs/tree", params={"uri": "viking://", "level_limit": 0}))),
            )
        )
        seen.append(
            ("stat viking://user", json.dumps(body_of(http.get("/api/v1/fs/stat", params={"uri": "viking://user"}))))
        )
        seen.append(
            (
                "read .overview.md",
                body_of(http.get("/api/v1/content/read", params={"uri": "viking://user/.overview.md"})),
            )
        )
        found = body_of(http.post("/api/v1/search/find", json={"query": "Falcon acquisition project", "limit": 50}))
        seen.append(("find", json.dumps(found)))
        grep = body_of(http.post("/api/v1/search/grep", json={"uri": "viking://", "pattern": "Falcon"}))
        seen.append(("grep", json.dumps(grep)))
    return seen


def test_nothing_above_a_users_space_names_another_user(keyed: str) -> None:
    for what, text in _bob_sees(keyed):
        leaked = [secret for secret in ALICE_SECRETS if secret.lower() in text.lower()]
        assert leaked == [], (what, text[:500])


def test_the_summaries_above_the_users_are_the_same_for_everyone(keyed: str) -> None:
    with httpx.Client(base_url=keyed, timeout=60) as http:
        texts = {
            key: body_of(http.get("/api/v1/content/overview", params={"uri": "viking://user"}, headers=headers(key)))
            for key in (ROOT_KEY, ALICE_KEY, BOB_KEY)
        }
    assert len(set(texts.values())) == 1, texts
    assert "alice" not in texts[ROOT_KEY] and "bob" not in texts[ROOT_KEY]


def test_mcp_over_the_server_shows_bob_nothing_of_alice(keyed: str) -> None:
    payloads = [
        {"name": "overview", "arguments": {"uri": "viking://user"}},
        {"name": "abstract", "arguments": {"uri": "viking://user"}},
        {"name": "ls", "arguments": {"uri": "viking://", "recursive": True}},
        {"name": "tree", "arguments": {"uri": "viking://", "level_limit": 0}},
    ]
    with httpx.Client(base_url=keyed, timeout=60) as http:
        for number, params in enumerate(payloads):
            message = {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}
            answer = http.post(
                "/mcp",
                json=message,
                headers={**headers(BOB_KEY), "Accept": "application/json, text/event-stream"},
            )
            assert answer.status_code == 200, answer.text
            text = json.dumps(answer.json())
            assert not [s for s in ALICE_SECRETS if s.lower() in text.lower()], (params, text[:500])


def test_doctor_tells_a_user_key_only_of_its_own_space(keyed: str) -> None:
    with httpx.Client(base_url=keyed, timeout=60) as http:
        root = body_of(http.get("/api/v1/doctor", headers=headers(ROOT_KEY)))
        bob = body_of(http.get("/api/v1/doctor", headers=headers(BOB_KEY)))
    text = json.dumps(bob)
    store_path = str(root["store"]["path"]) if isinstance(root.get("store"), dict) else None
    assert store_path and store_path not in text, text[:500]
    for secret in (*ALICE_SECRETS, "ov.conf", str(Path.home())):
        assert secret not in text, (secret, text[:500])
    assert 0 < bob["store"]["files"] < root["store"]["nodes"], (bob["store"], root["store"])


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("evil.example.com", None),
        ("127.0.0.1:1933", "http://evil.example.com"),
        ("evil.example.com", "http://evil.example.com"),
    ],
)
@pytest.mark.parametrize("path", ["/api/v1/fs/ls", "/mcp"])
def test_a_request_from_another_site_is_refused(tmp_path: Path, host: str, origin: str | None, path: str) -> None:
    # A keyless loopback server: without the check, a web page that rebinds its name to
    # 127.0.0.1 could read the whole store.
    store = handbook_store(tmp_path)
    with thread_server({"embedding": {"dense": {"provider": "hash"}}}, store) as url:
        sent: dict[str, Any] = {"Host": host, **({"Origin": origin} if origin else {})}
        with httpx.Client(base_url=url, timeout=30) as http:
            if path == "/mcp":
                message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
                answer = http.post(
                    path, json=message, headers={**sent, "Accept": "application/json, text/event-stream"}
                )
            else:
                answer = http.get(path, headers=sent)
            bad_host = host.startswith("evil")
            error = error_of(answer, 421 if bad_host else 403, "PERMISSION_DENIED")
            assert ("Host" if bad_host else "Origin") in error["message"], error
            # The same request from the server's own names is answered.
            assert http.get("/api/v1/fs/ls").status_code == 200
            assert http.get("/api/v1/fs/ls", headers={"Origin": url}).status_code == 200


def test_an_allowed_host_and_origin_may_be_configured(tmp_path: Path) -> None:
    store = handbook_store(tmp_path)
    raw = {
        "embedding": {"dense": {"provider": "hash"}},
        "server": {"allowed_hosts": ["kb.internal"], "allowed_origins": ["https://agent.internal"]},
    }
    with thread_server(raw, store) as url, httpx.Client(base_url=url, timeout=30) as http:
        ok = {"Host": "kb.internal:1933", "Origin": "https://agent.internal"}
        assert http.get("/api/v1/fs/ls", headers=ok).status_code == 200
        assert http.get("/api/v1/fs/ls", headers={"Host": "other.internal"}).status_code == 421
