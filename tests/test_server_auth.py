"""Who a request acts as: API keys (root, users), the default user without keys, the
``server`` section of ov.conf, ``openviking key new``, and secrets that never show.

Every response and the server's log are searched for the keys: none may appear.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from helpers import HASH_CONF, Cli, heavy, loaded_modules, run_module
from ovserver import (
    ALICE_KEY,
    BOB_KEY,
    KEYS,
    ROOT_KEY,
    body_of,
    error_of,
    handbook_store,
    headers,
    keyed_config,
    process_server,
    server_env,
    thread_server,
)

from openviking.config import config_from_dict
from openviking.errors import ConfigError

WRONG_KEY = "wrong-key-5d3b1f9e7c2a4068"


class Recorder:
    """An httpx client that keeps every response text, to look for leaked keys in them."""

    def __init__(self, url: str) -> None:
        self.texts: list[str] = []
        self.http = httpx.Client(base_url=url, timeout=30, event_hooks={"response": [self._keep]})

    def _keep(self, response: httpx.Response) -> None:
        response.read()
        self.texts.append(response.text + "".join(f"{k}:{v}" for k, v in response.headers.items()))

    def leaked(self) -> list[str]:
        return [key for key in (*KEYS, WRONG_KEY) if any(key in text for text in self.texts)]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Recorder]:
    """A keyed server on the handbook; alice and bob each have a memory of their own."""
    with thread_server(keyed_config(), handbook_store(tmp_path)) as url:
        recorder = Recorder(url)
        for key, text in ((ALICE_KEY, "alice likes green tea"), (BOB_KEY, "bob likes black coffee")):
            body_of(recorder.http.post("/api/v1/memories", json={"text": text}, headers=headers(key)))
        yield recorder
        recorder.http.close()
        assert recorder.leaked() == []


def test_a_missing_key_is_401(server: Recorder) -> None:
    response = server.http.post("/api/v1/search/find", json={"query": "x"})
    error = error_of(response, 401, "UNAUTHENTICATED")
    assert error["message"] == "Missing API key"
    assert response.headers["www-authenticate"] == "Bearer"
    for method, path in (("GET", "/api/v1/fs/ls"), ("GET", "/api/v1/doctor"), ("POST", "/api/v1/resources/temp_upload"),
                         ("GET", "/api/v1/unknown")):  # fmt: skip
        error_of(server.http.request(method, path), 401, "UNAUTHENTICATED")


def test_a_wrong_key_is_401(server: Recorder) -> None:
    for sent in ({"X-API-Key": WRONG_KEY}, {"Authorization": f"Bearer {WRONG_KEY}"}, {"X-API-Key": ALICE_KEY[:-1]}):
        error = error_of(server.http.get("/api/v1/fs/ls", headers=sent), 401, "UNAUTHENTICATED")
        assert error["message"] == "Invalid API key"


def test_a_bearer_token_works_as_the_key(server: Recorder) -> None:
    listed = body_of(server.http.get("/api/v1/fs/ls", headers={"Authorization": f"Bearer {ROOT_KEY}"}))
    assert any(entry["uri"] == "viking://resources" for entry in listed)
    # X-API-Key wins over Authorization, as upstream.
    both = {"X-API-Key": ROOT_KEY, "Authorization": f"Bearer {WRONG_KEY}"}
    body_of(server.http.get("/api/v1/fs/ls", headers=both))
    body_of(server.http.get("/api/v1/doctor", headers=both))  # what it reports holds no key either


def test_health_needs_no_key(server: Recorder) -> None:
    assert server.http.get("/health").json()["auth"] == "api_key"
    assert server.http.get("/ready").status_code == 200
    assert server.http.get("/openapi.json").status_code == 200


def test_a_user_key_acts_as_its_user_only(server: Recorder) -> None:
    alice = headers(ALICE_KEY)
    mine = body_of(server.http.post("/api/v1/search/find", json={"query": "tea", "context_type": "memory"},
                                    headers=alice))  # fmt: skip
    assert {hit["uri"].split("/")[3] for hit in mine["memories"]} == {"alice"}
    bob_memories = "viking://user/bob/memories"
    for method, path, args in (
        ("GET", "/api/v1/fs/ls", {"params": {"uri": bob_memories}}),
        ("GET", "/api/v1/fs/tree", {"params": {"uri": "viking://user/bob"}}),
        ("GET", "/api/v1/content/overview", {"params": {"uri": bob_memories}}),
        ("POST", "/api/v1/search/grep", {"json": {"uri": "viking://user/bob", "pattern": "coffee"}}),
        ("POST", "/api/v1/search/glob", {"json": {"pattern": "**", "uri": "viking://user/bob"}}),
        ("POST", "/api/v1/search/find", {"json": {"query": "coffee", "target_uri": "viking://user/bob"}}),
        ("POST", "/api/v1/fs/mkdir", {"json": {"uri": "viking://user/bob/resources/x"}}),
    ):
        error = error_of(server.http.request(method, path, headers=alice, **args), 403, "PERMISSION_DENIED")
        assert "another user's space" in error["message"], error
    # Listings leave the other users out; grep over everything finds only alice's memory.
    users = body_of(server.http.get("/api/v1/fs/ls", params={"uri": "viking://user"}, headers=alice))
    assert [entry["uri"] for entry in users] == ["viking://user/alice"]
    found = body_of(server.http.post("/api/v1/search/grep", json={"uri": "viking://", "pattern": "likes"},
                                     headers=alice))  # fmt: skip
    assert [m["content"] for m in found["matches"]] == ["alice likes green tea"]
    # Naming another user does not change who it is.
    other = headers(ALICE_KEY, **{"X-OpenViking-User": "bob"})
    error_of(server.http.get("/api/v1/fs/ls", headers=other), 403, "PERMISSION_DENIED")
    same = headers(ALICE_KEY, **{"X-OpenViking-User": "alice"})
    body_of(server.http.get("/api/v1/fs/ls", headers=same))


def test_the_root_key_may_act_as_any_user(server: Recorder) -> None:
    as_bob = headers(ROOT_KEY, **{"X-OpenViking-User": "bob"})
    found = body_of(server.http.post("/api/v1/search/find", json={"query": "coffee", "context_type": "memory"},
                                     headers=as_bob))  # fmt: skip
    assert found["memories"][0]["uri"].startswith("viking://user/bob/memories/")
    # Root reads other users' spaces (the default user here), and lists them all.
    read = body_of(server.http.get("/api/v1/fs/ls", params={"uri": "viking://user/alice/memories"},
                                   headers=headers(ROOT_KEY)))  # fmt: skip
    assert len(read) == 1
    users = body_of(server.http.get("/api/v1/fs/ls", params={"uri": "viking://user", "simple": "true"},
                                    headers=headers(ROOT_KEY)))  # fmt: skip
    assert {"viking://user/alice", "viking://user/bob"} <= set(users)
    memory = body_of(server.http.post("/api/v1/memories", json={"text": "carol is new"},
                                      headers=headers(ROOT_KEY, **{"X-OpenViking-User": "carol"})))  # fmt: skip
    assert memory["uri"].startswith("viking://user/carol/memories/")
    error = error_of(server.http.get("/api/v1/fs/ls", headers=headers(ROOT_KEY, **{"X-OpenViking-User": "a/b"})),
                     400, "INVALID_ARGUMENT")  # fmt: skip
    assert "X-OpenViking-User" in error["message"]


def test_a_user_key_may_not_name_server_paths_or_reindex_everything(server: Recorder, tmp_path: Path) -> None:
    alice = headers(ALICE_KEY)
    error = error_of(server.http.post("/api/v1/resources", json={"path": str(tmp_path)}, headers=alice),
                     403, "PERMISSION_DENIED")  # fmt: skip
    assert "temp_upload" in error["hint"]
    error_of(server.http.post("/api/v1/skills", json={"path": str(tmp_path)}, headers=alice), 403, "PERMISSION_DENIED")
    error_of(server.http.post("/api/v1/reindex", headers=alice), 403, "PERMISSION_DENIED")
    body_of(server.http.post("/api/v1/reindex", json={"uri": "viking://user/alice"}, headers=alice))


def test_keys_never_reach_the_log(tmp_path: Path) -> None:
    raw = keyed_config()
    raw["server"]["users"]["bob"] = {"api_key": "$BOB_KEY"}  # from the environment, as ov.conf allows
    env = server_env(tmp_path / "home", BOB_KEY=BOB_KEY)
    with process_server(raw, handbook_store(tmp_path), tmp_path, env=env) as running:
        recorder = Recorder(running.url)
        for key in (*KEYS, WRONG_KEY):
            recorder.http.post("/api/v1/search/find", json={"query": "docker"}, headers=headers(key))
            recorder.http.get("/api/v1/fs/ls", headers={"Authorization": f"Bearer {key}"})
        body_of(recorder.http.post("/api/v1/memories", json={"text": "bob's"}, headers=headers(BOB_KEY)))
        recorder.http.close()
        assert running.stop() == 0
        log = running.log()
    assert recorder.leaked() == []
    assert "API keys required" in log and " 401 " in log and " 200 " in log
    assert [key for key in (*KEYS, WRONG_KEY) if key in log] == []


# ----------------------------------------------------------------------------- without keys
def test_without_keys_it_serves_loopback_and_says_so(tmp_path: Path) -> None:
    with process_server(HASH_CONF, handbook_store(tmp_path), tmp_path) as running:
        assert httpx.get(running.url + "/health").json()["auth"] == "none"
        body_of(httpx.get(running.url + "/api/v1/fs/ls"))
        assert running.stop() == 0
    assert "No API key configured: serving http://127.0.0.1:" in running.log()
    assert "every request acts as user 'default'" in running.log()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.7", "example.com"])
def test_a_host_beyond_loopback_without_a_key_is_refused(tmp_path: Path, host: str) -> None:
    conf = tmp_path / "ov.conf"
    conf.write_text('{"embedding": {"dense": {"provider": "hash"}}}')
    store = tmp_path / "store"
    proc = run_module(["serve", "--host", host, "--port", "0", "--store", store, "--config", conf], timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"Error: Refusing to serve on {host}"), proc.stderr
    assert not store.exists()
    proc = run_module(["serve", "--host", host, "--store", store, "--config", conf, "-o", "json"], timeout=120)
    assert proc.returncode == 2 and '"code": "INVALID_ARGUMENT"' in proc.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--port", "-1"], "Invalid value for '--port': -1 is not in the range 0<=x<=65535."),
        (["--port", "70000"], "Invalid value for '--port': 70000 is not in the range 0<=x<=65535."),
        (["--port", "x"], "Invalid value for '--port': 'x' is not a valid int range."),
        (["--host", ""], "--host must name an address to listen on"),
        (["--host", "  "], "--host must name an address to listen on"),
    ],
)
def test_bad_serve_arguments_exit_2_before_anything_listens(tmp_path: Path, args: list[str], needle: str) -> None:
    conf = tmp_path / "ov.conf"
    conf.write_text('{"embedding": {"dense": {"provider": "hash"}}}')
    store = tmp_path / "store"
    proc = run_module(["serve", *args, "--store", store, "--config", conf, "-o", "json"], timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert '"code": "INVALID_ARGUMENT"' in proc.stderr and needle in proc.stderr, proc.stderr
    assert not store.exists()


def test_a_port_in_use_is_one_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        conf = tmp_path / "ov.conf"
        conf.write_text('{"embedding": {"dense": {"provider": "hash"}}}')
        proc = run_module(["serve", "--port", port, "--store", tmp_path / "s", "--config", conf], timeout=120)
    assert proc.returncode == 1
    assert f"Error: Cannot listen on 127.0.0.1:{port}" in proc.stderr and "Traceback" not in proc.stderr


def test_serve_help_loads_no_server_nor_store() -> None:
    modules = loaded_modules("from openviking_cli.main import main\nmain(['serve', '--help'])\nmain(['key', '--help'])")
    assert heavy(modules) == []
    assert [m for m in modules if m.split(".")[0] in ("fastapi", "starlette", "uvicorn")] == []


# ----------------------------------------------------------------------------- openviking key new
def test_key_new_prints_a_key_once_and_its_config_line(cli: Cli, tmp_path: Path) -> None:
    import json

    result = cli("key", "new", "alice")
    assert result.code == 0, result.err
    key, line = result.out.splitlines()
    assert len(key) > 40 and key not in result.err and "ov.conf" in result.err
    users = json.loads("{" + line + "}")
    assert users == {"alice": {"api_key_sha256": hashlib.sha256(key.encode()).hexdigest()}}
    assert cli("key", "new", "alice").out.splitlines()[0] != key
    as_json = cli("key", "new", "bob", "-o", "json").json()["result"]
    assert (
        as_json["user"] == "bob"
        and hashlib.sha256(as_json["api_key"].encode()).hexdigest() == as_json["api_key_sha256"]
    )
    assert cli("key", "new", "a/b").code == 2
    # The line, pasted into ov.conf, lets the key in as alice.
    raw = {**HASH_CONF, "server": {"users": users}}
    with thread_server(raw, tmp_path / "store") as url:
        memory = body_of(httpx.post(url + "/api/v1/memories", json={"text": "hi"}, headers=headers(key)))
        assert memory["uri"].startswith("viking://user/alice/")
        error_of(httpx.get(url + "/api/v1/fs/ls", headers=headers(key + "x")), 401, "UNAUTHENTICATED")


# ----------------------------------------------------------------------------- the server section
def test_server_config_defaults_and_digests() -> None:
    server = config_from_dict({}).server
    assert (server.host, server.port, server.root_api_key, server.users) == ("127.0.0.1", 1933, None, {})
    assert (server.max_body_bytes, server.max_upload_bytes, server.request_timeout) == (8 << 20, 512 << 20, 60.0)
    server = config_from_dict(keyed_config(port=8080, request_timeout=5)).server
    assert server.port == 8080 and server.request_timeout == 5.0 and server.has_keys
    assert server.users["bob"] == hashlib.sha256(BOB_KEY.encode()).hexdigest()  # a plain key is kept as its digest
    assert ROOT_KEY not in repr(server) and BOB_KEY not in repr(config_from_dict(keyed_config()))


@pytest.mark.parametrize(
    ("section", "needle"),
    [
        ({"root_api_keys": "x"}, "Did you mean 'server.root_api_key'"),
        ({"user": {}}, "Did you mean 'server.users'"),
        ({"max_body_byte": 5}, "Did you mean 'server.max_body_bytes'"),
        ({"root_api_key": ""}, "must be a non-empty string"),
        ({"root_api_key": "$UNSET_ROOT_KEY"}, "UNSET_ROOT_KEY, which is not set"),
        ({"users": {"alice": {"api_key_sha256": "abc"}}}, "64 hexadecimal digits"),
        ({"users": {"alice": {"api_key": "k1", "api_key_sha256": "0" * 64}}}, "one of api_key_sha256, api_key"),
        ({"users": {"alice": {"api_key": "k1", "role": "admin"}}}, "Unknown config key 'server.users.alice.role'"),
        ({"users": {"a/b": {"api_key": "k1"}}}, "not a valid user id"),
        ({"users": {"alice": {"api_key": "same"}, "bob": {"api_key": "same"}}}, "share one API key"),
        ({"port": "1933"}, "'server.port' must be an integer"),
        ({"port": 70000}, "at most 65535"),
        ({"max_upload_bytes": 0}, "'server.max_upload_bytes' must be a positive integer"),
        ({"request_timeout": 0}, "request_timeout"),
    ],
)
def test_a_bad_server_section_is_refused_when_serving(section: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        _ = config_from_dict({"server": section}).server
    assert needle in info.value.message or needle in (info.value.hint or ""), info.value.to_dict()


def test_a_bad_server_section_does_not_stop_other_commands(tmp_path: Path) -> None:
    # A key for the server only ($ROOT_KEY unset where the CLI runs) leaves every other command working.
    conf = tmp_path / "ov.conf"
    conf.write_text('{"embedding": {"dense": {"provider": "hash"}}, "server": {"root_api_key": "$UNSET_ROOT"}}')
    assert run_module(["ls", "--store", tmp_path / "s", "--config", conf], timeout=120).returncode in (0, 1)
    proc = run_module(["serve", "--store", tmp_path / "s", "--config", conf], timeout=120)
    assert proc.returncode == 2 and "UNSET_ROOT, which is not set" in proc.stderr
