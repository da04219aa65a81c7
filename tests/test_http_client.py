"""The HTTP clients against real servers on 127.0.0.1: the interface's methods and signatures,
the same results and errors as the embedded client, retries that never repeat a write, the
key kept secret, and every SyncHTTPClient example of the brief.

Two identical stores are built from one tree: the embedded client reads and writes one, a
server in a thread serves the other, and each call's ``to_dict()`` must match, times aside.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers import EN_FILES, HASH_CONF, make_tree
from ovserver import ALICE_KEY, ROOT_KEY, handbook_store, keyed_config, thread_server
from servers import Reply, StubServer, free_port

import openviking as ov
from openviking.contract.interface import OpenVikingClient
from openviking.http_client import CommandLineHTTPClient
from openviking.message import TextPart

H = "viking://resources/handbook"
# What differs between two stores built alike: times, and the random ids of messages.
TIMES = {"created_at", "updated_at", "modTime", "mod_time", "time", "seconds", "id"}


def interface_methods() -> list[str]:
    return sorted(
        name
        for name, member in vars(OpenVikingClient).items()
        if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property))
    )


def _parameters(function: object) -> list[tuple[str, object, object]]:
    signature = inspect.signature(function)  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


# ----------------------------------------------------------------------------- conformance
@pytest.mark.parametrize("kind", ["OpenViking", "SyncHTTPClient", "AsyncHTTPClient"])
@pytest.mark.parametrize("name", interface_methods())
def test_every_client_has_every_method_of_the_interface(kind: str, name: str) -> None:
    declared = vars(OpenVikingClient)[name]
    implemented = inspect.getattr_static(getattr(ov, kind), name)
    if isinstance(declared, property):
        assert isinstance(implemented, property), (kind, name)
        return
    assert callable(implemented), (kind, name)
    assert _parameters(implemented) == _parameters(declared), (kind, name)
    if kind == "AsyncHTTPClient":
        assert inspect.iscoroutinefunction(implemented), name


def test_the_http_clients_are_exported_lazily() -> None:
    assert ov.SyncHTTPClient.__module__ == "openviking.http_client"
    assert ov.AsyncHTTPClient.__module__ == "openviking.http_client"
    assert isinstance(ov.SyncHTTPClient("http://127.0.0.1:1"), OpenVikingClient)


# ----------------------------------------------------------------------------- two identical stores
def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: None if k in TIMES else _timeless(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?", "<time>", value)
    return value


def _json(value: Any) -> Any:
    if isinstance(value, list):
        return [_json(v) for v in value]
    return _timeless(value.to_dict()) if hasattr(value, "to_dict") else value


def _but_the_store_path(report: dict[str, Any]) -> dict[str, Any]:
    """A doctor's report without where its store is (the two clients' stores are two folders)."""
    return {**report, "store": {k: v for k, v in report["store"].items() if k != "path"}}


def _build(store: Path, tree: Path) -> None:
    with ov.OpenViking(path=store, config=dict(HASH_CONF)) as client:
        client.add_resource(tree)
        client.link(f"{H}/auth.md", f"{H}/deploy/docker.md", reason="both about running it")
        client.add_message("s1", "user", "We are designing the OAuth login flow.")
        client.add_memory("The user prefers dark mode", "preferences")


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ov.OpenViking, ov.SyncHTTPClient, Path]]:
    base = tmp_path_factory.mktemp("pair")
    tree = make_tree(base / "handbook", EN_FILES)
    _build(base / "embedded", tree)
    _build(base / "served", tree)
    told: list[str] = []
    with thread_server(HASH_CONF, base / "served") as url:
        embedded = ov.OpenViking(path=base / "embedded", config=dict(HASH_CONF), warn=told.append)
        remote = ov.SyncHTTPClient(url, warn=told.append)
        remote.initialize()
        yield embedded, remote, base
        remote.close()
        embedded.close()


READS: list[tuple[str, Callable[[Any], Any]]] = [
    ("find", lambda c: c.find("how do users authenticate", limit=3)),
    ("find-scoped", lambda c: c.find("docker", target_uri=[f"{H}/deploy"], level=2, score_threshold=0.0)),
    ("find-explain", lambda c: c.find("kubernetes helm", target_uri=H, explain=True, mode="keyword")),
    ("find-time", lambda c: c.find("deploy", since="2000-01-01", until="2999-12-31", time_field="created_at")),
    ("find-memory", lambda c: c.find("dark mode", context_type="memory")),
    ("search", lambda c: c.search("best practices", session_id="s1", include_provenance=True)),
    ("grep", lambda c: c.grep(H, "docker", case_insensitive=True)),
    ("grep-levels", lambda c: c.grep(H, "the", level_limit=None, exclude_uri=f"{H}/notes", node_limit=4)),
    ("grep-count", lambda c: c.grep(H, "e", count=True)),
    ("grep-files", lambda c: c.grep(H, "a", files_with_matches=True, fixed_strings=True)),
    ("glob", lambda c: c.glob("**/*.md", H)),
    ("glob-limit", lambda c: c.glob("*", "viking://", node_limit=2)),
    ("read", lambda c: c.read(f"{H}/auth.md")),
    ("read-lines", lambda c: c.read(f"{H}/auth.md", offset=2, limit=1)),
    ("abstract", lambda c: c.abstract(H)),
    ("overview", lambda c: c.overview(f"{H}/deploy")),
    ("ls", lambda c: c.ls(H)),
    ("ls-options", lambda c: c.ls(H, recursive=True, show_hidden=True, node_limit=5, abs_limit=10)),
    ("ls-simple", lambda c: c.ls("viking://", simple=True)),
    ("tree", lambda c: c.tree(H, level_limit=0)),
    ("stat", lambda c: c.stat(f"{H}/auth.md")),
    ("stat-session", lambda c: c.stat("viking://user/default/sessions/s1")),
    ("relations", lambda c: c.relations(f"{H}/auth.md")),
    ("get-session", lambda c: c.get_session("s1")),
    ("list-sessions", lambda c: c.list_sessions()),
    ("user", lambda c: c.user),
    ("download", lambda c: c.download(f"{H}/auth.md")),
    ("context", lambda c: c.context("how do users authenticate", budget=300)),
    ("get-session-context", lambda c: c.get_session_context("s1", token_budget=200)),
    ("evaluate", lambda c: c.evaluate([{"query": "docker compose", "relevant": [f"{H}/deploy/docker.md"]}], k=3)),
    ("list-snapshots", lambda c: c.list_snapshots()),
    ("list-watches", lambda c: c.list_watches()),
    ("doctor", lambda c: _but_the_store_path(c.doctor().to_dict())),
]


def test_every_read_operation_is_compared() -> None:
    from openviking.contract.operations import OPERATIONS

    tried = {name.replace("-", "_") for name, _ in READS}
    reads = [name for name, op in OPERATIONS.items() if not op.writes]
    assert [name for name in reads if not any(t == name or t.startswith(name + "_") for t in tried)] == []


@pytest.mark.parametrize(("name", "call"), READS, ids=[name for name, _ in READS])
def test_a_read_over_http_answers_as_the_embedded_client(pair: Any, name: str, call: Callable[[Any], Any]) -> None:
    embedded, remote, _ = pair
    here, there = call(embedded), call(remote)
    assert type(there) is type(here), name
    if isinstance(here, list) and here:
        assert {type(x) for x in there} == {type(x) for x in here}, name
    assert _json(there) == _json(here), name


def test_the_brief_reads_results_as_it_does(pair: Any) -> None:
    _, remote, _ = pair
    results = remote.find("how to authenticate users")
    assert results.resources and all(isinstance(ctx.score, float) for ctx in results.resources)
    assert remote.grep(H, "docker")["count"] == len(remote.grep(H, "docker")["matches"]) > 0
    assert [rel["uri"] for rel in remote.relations(f"{H}/auth.md")] == [f"{H}/deploy/docker.md"]


def test_writes_over_http_answer_as_the_embedded_client(pair: Any) -> None:
    embedded, remote, base = pair
    extra = make_tree(base / "extra", {"a.md": "# Alpha\n\nAlpha text.\n", "b/c.md": "# Gamma\n\nGamma text.\n"})
    skill = make_tree(base / "skill", {"SKILL.md": "---\nname: write-rfc\n---\n# Write an RFC\n\nSteps.\n"})
    steps: list[Callable[[Any], Any]] = [
        lambda c: c.add_resource(extra, to="viking://resources/extra", tags=["team=search"]),
        lambda c: c.add_resource(extra, to="viking://resources/extra"),  # unchanged the second time
        lambda c: c.add_resource(extra / "a.md", parent="viking://resources/extra/b", include=["*.md"]),
        lambda c: c.add_skill(skill, tags="kind=writing"),
        lambda c: c.add_memory("The user deploys on Fridays", "habits", tags=["k=v"]),
        lambda c: c.mkdir("viking://resources/empty", description="Nothing yet"),
        lambda c: c.mv("viking://resources/empty", "viking://resources/still-empty"),
        lambda c: c.link(f"{H}/README.md", [f"{H}/auth.md", f"{H}/notes/cooking.md"], reason="see also"),
        lambda c: c.unlink(f"{H}/README.md", f"{H}/notes/cooking.md"),
        lambda c: c.rm("viking://resources/extra/b", recursive=True),
        lambda c: c.rm("viking://resources/never-there"),
        lambda c: c.create_session("s2"),
        lambda c: c.add_message("s2", "user", [TextPart(text="first"), {"type": "text", "text": "second"}]),
        lambda c: c.add_message("s2", "assistant", "an answer"),
        lambda c: c.session("s2").add_message("user", "third"),
        lambda c: c.delete_session("s2"),
        lambda c: c.reindex(H),
        lambda c: c.stat("viking://resources/extra"),
        lambda c: c.ls("viking://resources", recursive=True),
    ]
    for index, step in enumerate(steps):
        here, there = step(embedded), step(remote)
        assert type(there) is type(here), index
        assert _json(there) == _json(here), index
    assert remote.add_resource(extra, to="viking://resources/extra").seconds > 0  # the envelope's time


def test_doctor_over_http_is_the_servers_report(pair: Any) -> None:
    embedded, remote, _ = pair
    here, there = embedded.doctor().to_dict(), remote.doctor().to_dict()
    assert set(there) == set(here) and there["user"] == here["user"]
    assert there["store"]["exists"] and there["problems"] == here["problems"] == []


ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("missing-file", lambda c: c.read(f"{H}/nope.md")),
    ("bad-uri", lambda c: c.ls("http://example.com")),
    ("traversal", lambda c: c.stat(f"{H}/../x")),
    ("other-user", lambda c: c.find("x", target_uri="viking://user/bob")),
    ("bad-regex", lambda c: c.grep(H, "(unclosed")),
    ("bad-limit", lambda c: c.find("x", limit=-1)),
    ("bad-mode", lambda c: c.find("x", mode="fuzzy")),
    ("bad-time", lambda c: c.find("x", since="yesterday-ish")),
    ("rm-dir", lambda c: c.rm(H)),
    ("mkdir-exists", lambda c: c.mkdir(H)),
    ("mv-missing", lambda c: c.mv(f"{H}/nope.md", f"{H}/nope2.md")),
    ("no-session", lambda c: c.get_session("never-made")),
    ("bad-session-id", lambda c: c.get_session("a/b")),
    ("bad-role", lambda c: c.add_message("s1", "robot", "hi")),
    ("missing-path", lambda c: c.add_resource("/no/such/path/here")),
    ("glob-file", lambda c: c.glob("*", f"{H}/auth.md")),
    ("mv-into-itself", lambda c: c.mv(H, f"{H}/inner")),
    # A filter travels as its object: its JSON text is read by the client, with the embedded errors.
    ("bad-filter-text", lambda c: c.find("x", filter="not json")),
    ("bad-filter-node", lambda c: c.find("x", filter='{"op": "must", "field": "color", "conds": ["red"]}')),
]


@pytest.mark.parametrize(("name", "call"), ERRORS, ids=[name for name, _ in ERRORS])
def test_an_error_over_http_is_the_embedded_clients(pair: Any, name: str, call: Callable[[Any], Any]) -> None:
    embedded, remote, _ = pair
    with pytest.raises(ov.OpenVikingError) as here:
        call(embedded)
    with pytest.raises(ov.OpenVikingError) as there:
        call(remote)
    assert type(there.value) is type(here.value), name
    assert there.value.to_dict() == here.value.to_dict(), name


def test_a_value_of_the_wrong_kind_is_the_same_class_and_code(pair: Any) -> None:
    embedded, remote, _ = pair
    for call in (lambda c: c.find("x", limit=2.5), lambda c: c.grep(H, "x", node_limit="3"), lambda c: c.find(5)):
        with pytest.raises(ov.OpenVikingError) as here:
            call(embedded)
        with pytest.raises(ov.OpenVikingError) as there:
            call(remote)
        assert (
            (type(there.value), there.value.code)
            == (type(here.value), here.value.code)
            == (
                ov.InvalidArgumentError,
                "INVALID_ARGUMENT",
            )
        )


def test_warnings_come_through_the_callback_as_the_embedded_clients(pair: Any) -> None:
    embedded, remote, _ = pair
    told: list[str] = []
    client = ov.SyncHTTPClient(remote.url, warn=told.append)
    assert client.find("x", target_uri=f"{H}/missing").total == 0
    here: list[str] = []
    ov.OpenViking(embedded.store_path, config=dict(HASH_CONF), warn=here.append).find("x", target_uri=f"{H}/missing")
    assert told == here and len(told) == 1 and told[0].startswith(f"{H}/missing does not exist")
    with pytest.warns(ov.OpenVikingWarning, match="does not exist") as caught:
        ov.SyncHTTPClient(remote.url).find("x", target_uri=f"{H}/missing")
    assert caught[0].filename == __file__  # the caller's line, as the embedded client's warnings


def test_the_async_client_answers_as_the_sync_one(pair: Any) -> None:
    _, remote, _ = pair

    async def calls() -> list[Any]:
        async with ov.AsyncHTTPClient(remote.url, warn=lambda message: None) as client:
            session = await client.session()
            await session.add_message("user", [TextPart(text="OAuth login")])
            found = await client.search("best practices", session=session.session_id)
            gathered = await asyncio.gather(*(client.find("docker deployment", limit=2) for _ in range(4)))
            with pytest.raises(ov.NotFoundError):
                await client.read(f"{H}/nope.md")
            await session.delete()
            return [found, *gathered, await client.grep(H, "docker"), client.user]

    found, *finds, grep, user = asyncio.run(calls())
    assert isinstance(found, ov.FindResult) and user == "default"
    assert all(_json(f) == _json(remote.find("docker deployment", limit=2)) for f in finds)
    assert _json(grep) == _json(remote.grep(H, "docker"))


# ----------------------------------------------------------------------------- keys, users, uploads
@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    base = tmp_path_factory.mktemp("keyed")
    with thread_server(keyed_config(), handbook_store(base)) as url:
        yield url, base


def test_the_key_is_never_in_a_repr_an_error_or_a_log(keyed: Any, caplog: pytest.LogCaptureFixture) -> None:
    url, _ = keyed
    caplog.set_level(logging.DEBUG)
    client = ov.SyncHTTPClient(url, api_key=ROOT_KEY)
    client.initialize()
    client.find("authentication")
    wrong = ov.SyncHTTPClient(url, api_key=ROOT_KEY + "x")
    with pytest.raises(ov.UnauthenticatedError) as caught:
        wrong.find("authentication")
    assert caught.value.message == "Invalid API key"
    with pytest.raises(ov.UnauthenticatedError, match="Missing API key"):
        ov.SyncHTTPClient(url).find("authentication")
    down = ov.SyncHTTPClient(f"http://127.0.0.1:{free_port()}", api_key=ROOT_KEY)
    with pytest.raises(ov.UnavailableError) as unavailable:
        down.find("x")
    shown = [repr(client), str(client), repr(wrong), repr(caught.value.to_dict()), repr(unavailable.value.to_dict())]
    shown += [record.getMessage() for record in caplog.records]
    assert not [text for text in shown if ROOT_KEY in text]


def test_a_user_key_acts_as_its_user_and_uploads_what_it_adds(keyed: Any) -> None:
    url, base = keyed
    alice = ov.SyncHTTPClient(url, api_key=ALICE_KEY)
    assert alice.user == "alice"
    with pytest.raises(ov.PermissionDeniedError):
        alice.find("x", target_uri="viking://user/bob")
    notes = make_tree(base / "alice-notes", {"todo.md": "# Todo\n\nBuy milk.\n"})
    first = alice.add_resource(notes, to="viking://user/alice/resources/notes")  # loopback, refused as a path: uploaded
    assert (first.added, first.root_uri) == (1, "viking://user/alice/resources/notes")
    assert alice.add_resource(notes, to="viking://user/alice/resources/notes").unchanged == 1
    # A user key's word names no file of the server's machine: its path is recorded as its upload.
    assert alice.stat("viking://user/alice/resources/notes")["source"] == f"upload://alice{notes}"
    root = ov.SyncHTTPClient(url, api_key=ROOT_KEY, user="alice")
    assert root.user == "alice" and root.read("viking://user/alice/resources/notes/todo.md").startswith("# Todo")


def test_a_path_that_is_not_here_is_the_servers(keyed: Any) -> None:
    url, _ = keyed
    client = ov.SyncHTTPClient(url.replace("127.0.0.1", "localhost"), api_key=ROOT_KEY)
    with pytest.raises(ov.NotFoundError, match="^Path not found: /nowhere/at/all$"):
        client.add_resource("/nowhere/at/all")


def test_a_server_elsewhere_gets_an_upload_that_adds_as_the_path_would(keyed: Any) -> None:
    url, base = keyed
    files = {"a.md": "# A\n\nAlpha.\n", "sub/b.md": "# B\n\nBeta.\n", ".gitignore": "ignored.md\n"}
    tree = make_tree(base / "elsewhere", {**files, "ignored.md": "# I\n\nIgnored.\n", ".hidden.md": "# H\n"})
    (tree / "out").symlink_to("/etc")  # a link leading out is left out of the archive, as the walk skips it
    local = ov.SyncHTTPClient(url, api_key=ROOT_KEY)
    remote = ov.SyncHTTPClient(url, api_key=ROOT_KEY)
    remote._requests.loopback = False  # as a client on another machine sees this server
    first = remote.add_resource(tree, to="viking://resources/elsewhere")
    assert (first.added, first.root_uri) == (2, "viking://resources/elsewhere")
    assert local.add_resource(tree, to="viking://resources/elsewhere").unchanged == 2  # same source, same files
    assert remote.stat("viking://resources/elsewhere")["source"] == str(tree)
    single = remote.add_resource(tree / "a.md", to="viking://resources/single.md")
    assert single.added == 1 and remote.read("viking://resources/single.md") == "# A\n\nAlpha.\n"
    skill = make_tree(base / "remote-skill", {"SKILL.md": "---\nname: remote-skill\n---\n# Remote\n\nSteps.\n"})
    assert remote.add_skill(skill).root_uri == "viking://agent/skills/remote-skill"


# ----------------------------------------------------------------------------- failures and retries
# The command line's client sends its JSON calls over the stdlib: it must fail, retry and refuse
# to repeat a write exactly as the SDK's client over httpx does.
SYNC_CLIENTS = [ov.SyncHTTPClient, CommandLineHTTPClient]
sync_clients = pytest.mark.parametrize("kind", SYNC_CLIENTS, ids=[c.__name__ for c in SYNC_CLIENTS])


@sync_clients
def test_a_server_that_is_down_is_unavailable_with_a_clear_message(kind: type[ov.SyncHTTPClient]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    client = kind(url)
    with pytest.raises(ov.UnavailableError) as caught:
        client.initialize()
    error = caught.value
    assert error.code == "UNAVAILABLE" and error.message.startswith(f"Cannot reach the openviking server at {url} (")
    assert error.hint == "Start it with 'openviking serve', or check the URL (--url, OPENVIKING_URL)"
    with pytest.raises(ov.UnavailableError, match="Cannot reach"):
        client.mkdir("viking://resources/x")


def test_a_url_that_is_not_one_is_invalid_argument() -> None:
    for url in ("localhost:1933", "ftp://host", "", "http://"):
        with pytest.raises(ov.InvalidArgumentError, match="url must be"):
            ov.SyncHTTPClient(url)
    with pytest.raises(ov.InvalidArgumentError, match="timeout must be"):
        ov.SyncHTTPClient(timeout=0)


def _stub(reply: Reply) -> StubServer:
    return StubServer(lambda request: reply)


@sync_clients
def test_a_read_is_tried_three_times_and_a_write_once_on_503(kind: type[ov.SyncHTTPClient]) -> None:
    down = {"status": "error", "error": {"code": "UNAVAILABLE", "message": "busy", "details": {}}, "time": 0.0}
    with _stub(Reply(503, down)) as stub:
        client = kind(stub.url)
        with pytest.raises(ov.UnavailableError, match="^busy$"):
            client.find("x")
        assert len(stub.posts("/api/v1/search/find")) == 3
        with pytest.raises(ov.UnavailableError, match="^busy$"):
            client.ls("viking://")
        assert len([r for r in stub.requests if r.path.startswith("/api/v1/fs/ls")]) == 3
        with pytest.raises(ov.UnavailableError, match="^busy$"):
            client.mkdir("viking://resources/x")
        assert len(stub.posts("/api/v1/fs/mkdir")) == 1  # a write is never sent twice


@sync_clients
def test_a_write_that_timed_out_is_not_sent_again(kind: type[ov.SyncHTTPClient]) -> None:
    with _stub(Reply(200, {"status": "ok", "result": {"uri": "viking://resources/x"}, "time": 0.0}, delay=2)) as stub:
        client = kind(stub.url, timeout=0.3)
        with pytest.raises(ov.DeadlineExceededError) as caught:
            client.mkdir("viking://resources/x")
        assert caught.value.message == f"No answer from the openviking server at {stub.url} within 0.3 s"
        assert "may still finish the write" in (caught.value.hint or "")
        assert len(stub.posts("/api/v1/fs/mkdir")) == 1
        with pytest.raises(ov.DeadlineExceededError):
            client.glob("*")
        assert len(stub.posts("/api/v1/search/glob")) == 3


@sync_clients
def test_a_write_is_sent_again_when_it_never_left(kind: type[ov.SyncHTTPClient]) -> None:
    """Nothing listens on the port at first; a server comes up there before the third try:
    the write that could not connect goes through, once."""
    port = free_port()
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            data = json.dumps({"status": "ok", "result": {"uri": "viking://resources/x"}, "time": 0.0}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    def serve_later() -> None:
        time.sleep(0.1)
        holder.append(ThreadingHTTPServer(("127.0.0.1", port), Handler))
        holder[0].serve_forever(0.02)

    holder: list[ThreadingHTTPServer] = []
    client = kind(f"http://127.0.0.1:{port}")
    thread = threading.Thread(target=serve_later, daemon=True)
    started = time.monotonic()
    thread.start()
    try:
        result = client.mkdir("viking://resources/x")
    finally:
        while not holder and thread.is_alive():
            time.sleep(0.01)
        if holder:
            holder[0].shutdown()
            holder[0].server_close()
    assert result.uri == "viking://resources/x" and seen == ["/api/v1/fs/mkdir"]
    assert time.monotonic() - started >= 0.2  # it waited for a try again: the first could not connect


@sync_clients
def test_an_answer_that_is_not_openvikings_is_an_error(kind: type[ov.SyncHTTPClient]) -> None:
    with _stub(Reply(200, raw="<html>hello</html>")) as stub:
        with pytest.raises(ov.InternalError, match="not an openviking envelope"):
            kind(stub.url).stat("viking://")
    with _stub(Reply(404, raw="Not Found")) as stub:
        # A 404 that is no envelope is the framework's: the route, not an item, is missing.
        with pytest.raises(ov.NotFoundError, match="^The server has no route GET /api/v1/fs/stat$"):
            kind(stub.url).stat("viking://")
        with pytest.raises(ov.UnavailableError, match="is not an openviking server"):
            kind(stub.url).initialize()


# ----------------------------------------------------------------------------- the brief's SDK examples
@pytest.fixture(scope="module")
def brief_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("brief")
    store = handbook_store(base)
    with ov.OpenViking(path=store, config=dict(HASH_CONF)) as client:
        client.link("viking://resources/docs/auth.md", "viking://resources/docs/auth/oauth.md", reason="OAuth")
    with thread_server(keyed_config(), store) as url:
        yield url


def _brief(url: str, code: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Run one of the brief's snippets as printed, but for the server's address and key."""
    code = code.replace("http://localhost:1933", url).replace('"your-key"', repr(ROOT_KEY))
    with pytest.warns(ov.OpenVikingWarning) if "search(" in code else _nothing():
        exec(compile(code, "<brief>", "exec"), {})  # noqa: S102 - the brief's own text
    return capsys.readouterr().out


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


BRIEF_FIND = """
import openviking as ov

client = ov.SyncHTTPClient(url="http://localhost:1933", api_key="your-key")
client.initialize()

# Basic search
results = client.find("how to authenticate users")

# Search with filter and time range
recent_emails = client.find(
    "invoice",
    target_uri="viking://resources/docs",
    since="7d",
    time_field="created_at",
)

# Iterate through results
for ctx in results.resources:
    print(f"URI: {ctx.uri}")
    print(f"Score: {ctx.score:.3f}")
    print(f"Type: {ctx.context_type}")
    print(f"Abstract: {ctx.abstract[:100]}...")
    print("---")

# Search only in resources
results = client.find(
    "authentication",
    target_uri="viking://resources"
)
"""

BRIEF_SEARCH = """
import openviking as ov
from openviking.message import TextPart

client = ov.SyncHTTPClient(url="http://localhost:1933", api_key="your-key")
client.initialize()

# Create session with conversation context
session = client.session()
session.add_message("user", [
    TextPart(text="I'm building a login page with OAuth")
])
session.add_message("assistant", [
    TextPart(text="I can help you with OAuth implementation.")
])

# Search understands conversation context
results = client.search(
    "best practices",
    session=session,
    since="2h"
)

for ctx in results.resources:
    print(f"Found: {ctx.uri}")
    print(f"Abstract: {ctx.abstract[:200]}...")

results = client.search(
    "how to implement OAuth 2.0 authorization code flow"
)

for ctx in results.resources:
    print(f"Found: {ctx.uri} (score: {ctx.score:.3f})")
"""

BRIEF_GREP = """
import openviking as ov

client = ov.SyncHTTPClient(url="http://localhost:1933", api_key="your-key")
client.initialize()

results = client.grep(
    "viking://resources",
    "authentication",
    case_insensitive=True
)

print(f"Found {results['count']} matches")
for match in results['matches']:
    print(f"  {match['uri']}:{match['line']}")
    print(f"    {match['content']}")
"""

BRIEF_GLOB = """
import openviking as ov

client = ov.SyncHTTPClient(url="http://localhost:1933", api_key="your-key")
client.initialize()

# Find all markdown files
results = client.glob("**/*.md", "viking://resources")
print(f"Found {results['count']} markdown files:")
for uri in results['matches']:
    print(f"  {uri}")

# Find all Python files
results = client.glob("**/*.py", "viking://resources")
print(f"Found {results['count']} Python files")
"""

BRIEF_LAYERS = """
import openviking as ov

client = ov.SyncHTTPClient(url="http://localhost:1933", api_key="your-key")
client.initialize()

results = client.find("authentication")

for ctx in results.resources:
    # Start with L0 (abstract) - already in ctx.abstract
    print(f"Abstract: {ctx.abstract}")

    if ctx.level < 2:
        # Get L1 (overview) for directories
        overview = client.overview(ctx.uri)
        print(f"Overview: {overview[:500]}...")
    else:
        # Load L2 (content) for files
        content = client.read(ctx.uri)
        print(f"File content: {content}")
"""

BRIEF_RELATIONS = """
import openviking as ov

client = ov.SyncHTTPClient(url="http://localhost:1933", api_key="your-key")
client.initialize()

results = client.find("OAuth implementation")

for ctx in results.resources:
    print(f"Found: {ctx.uri}")

    # Get related resources
    relations = client.relations(ctx.uri)
    for rel in relations:
        print(f"  Related: {rel['uri']} - {rel['reason']}")
"""

BRIEF_PRACTICES = """
import openviking as ov

client = ov.SyncHTTPClient(url="http://localhost:1933", api_key="your-key")
client.initialize()

# Good - specific query
results = client.find("OAuth 2.0 authorization code flow implementation")

# Less effective - too broad
results = client.find("auth")

# Search in relevant scope for better results
results = client.find(
    "error handling",
    target_uri="viking://resources/docs"
)
"""

BRIEF_CONVERSATION = """
import openviking as ov
from openviking.message import TextPart

client = ov.SyncHTTPClient(url="http://localhost:1933", api_key="your-key")
client.initialize()

# For conversational search, use session
session = client.session()
session.add_message("user", [
    TextPart(text="I'm building a login page")
])

# Search understands context
results = client.search("best practices", session=session)
print(results.total, session.session_id)
"""


def test_the_briefs_find_example(brief_server: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = _brief(brief_server, BRIEF_FIND, capsys)
    assert "URI: viking://resources/docs/auth.md\nScore: 1.000\nType: resource\nAbstract: " in out


def test_the_briefs_search_examples(brief_server: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = _brief(brief_server, BRIEF_SEARCH, capsys)
    assert "Found: viking://resources/docs/" in out and "(score: " in out
    conversation = _brief(brief_server, BRIEF_CONVERSATION, capsys).split()
    assert int(conversation[0]) > 0
    sessions = ov.SyncHTTPClient(brief_server, api_key=ROOT_KEY).get_session(conversation[1])
    assert [m.text for m in sessions.messages or []] == ["I'm building a login page"]


def test_the_briefs_grep_and_glob_examples(brief_server: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = _brief(brief_server, BRIEF_GREP, capsys)
    assert re.match(r"Found [1-9]\d* matches\n  viking://resources/docs/[^:]+:\d+\n    ", out), out
    out = _brief(brief_server, BRIEF_GLOB, capsys)
    assert out.startswith("Found 7 markdown files:\n  viking://resources/docs/") and out.endswith(
        "Found 0 Python files\n"
    )


def test_the_briefs_layer_relation_and_practice_examples(brief_server: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = _brief(brief_server, BRIEF_LAYERS, capsys)
    assert "File content: # Authentication" in out and "Overview: " in out
    out = _brief(brief_server, BRIEF_RELATIONS, capsys)
    assert "  Related: viking://resources/docs/auth/oauth.md - OAuth" in out
    assert _brief(brief_server, BRIEF_PRACTICES, capsys) == ""
