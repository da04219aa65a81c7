"""The local service (``openviking start``): every command on its store goes through it with no
flag and prints byte for byte what it prints embedded; anything it cannot answer as the
embedded client would (another version or configuration, a stale announcement, a socket with
nothing or something else behind it, a service that dies mid-call) falls back; the socket and
the files are this user's alone, and the key is checked.

A real service runs in its own process (``openviking start``) over a store built like a second
one that never has a service; a command goes through the service when the service's count of
requests grows, which every test checks, so no test passes by falling back unseen.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import socket
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from helpers import EN_FILES, HASH_CONF, Cli, CliResult, heavy, loaded_modules, make_tree, run_module, write_config
from test_cli_remote import ERRORS, READS, H, _build

import openviking as ov
from openviking.service.rendezvous import (
    EXPECT_HEADER,
    SERVICE_HEADER,
    Announcement,
    announcement_path,
    fingerprint,
    located,
    read_announcement,
    write_announcement,
)

_ENVELOPE_TIME = re.compile(r'("time": ?)[0-9.e-]+')
_DURATION = re.compile(r"\(\d+\.\d s\)")
_SECONDS = re.compile(r'("seconds": ?)[0-9.e-]+')


_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?Z?)?")
_MESSAGE_ID = re.compile(r"\bmsg_[0-9a-f]+")


def _timeless(text: str) -> str:
    """``text`` with the only parts two runs of one command differ in masked: its durations,
    and the random id of a message it adds."""
    masked = _SECONDS.sub(r"\1<s>", _DURATION.sub("(<s>)", _ENVELOPE_TIME.sub(r"\1<s>", text)))
    return _MESSAGE_ID.sub("msg_<id>", masked)


class Service:
    """A local service started by ``openviking start`` for one store, and its log."""

    def __init__(self, home: Path, store: Path, conf: Path) -> None:
        self.home, self.store, self.conf = home, store, conf

    @property
    def env(self) -> dict[str, str]:
        return {"OPENVIKING_HOME": str(self.home)}

    def start(self, *extra: str) -> dict[str, Any]:
        done = run_module(["start", "--store", self.store, "--config", self.conf, "-o", "json", *extra], env=self.env)
        assert done.returncode == 0, done.stderr
        result: dict[str, Any] = json.loads(done.stdout)["result"]
        self.started = self.announcement
        return result

    def stop(self) -> None:
        run_module(["stop", "--store", self.store, "--config", self.conf], env=self.env)

    @property
    def announcement(self) -> Announcement:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("OPENVIKING_HOME", str(self.home))
            found = read_announcement(str(self.store))
        assert found is not None
        return found

    def requests(self) -> int:
        """How many requests the service has taken (its gate counts each as it comes in)."""
        from openviking.http_client.local import service_status

        status = service_status(self.started)  # as started, whatever a test made of its announcement
        assert status is not None
        return int(status["requests"])


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Service, Path]]:
    """A service over one store, and a store built alike that has none."""
    base = tmp_path_factory.mktemp("local")
    tree = make_tree(base / "handbook", EN_FILES)
    _build(base / "served", tree)
    _build(base / "plain", tree)
    conf = write_config(base / "conf" / "ov.conf", HASH_CONF)
    service = Service(base / "home" / ".openviking", base / "served", conf)
    service.start()
    try:
        yield service, base / "plain"
    finally:
        service.stop()


@pytest.fixture
def service(stores: tuple[Service, Path], monkeypatch: pytest.MonkeyPatch) -> Service:
    monkeypatch.setenv("OPENVIKING_HOME", str(stores[0].home))
    return stores[0]


class Both:
    """One command line, through the service and embedded on the same store."""

    def __init__(self, cli: Cli, service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
        self.cli, self.service, self.monkeypatch = cli, service, monkeypatch

    def served(self, *argv: Any, store: Path | None = None) -> CliResult:
        before = self.service.requests()
        result = self.cli(*argv, "--store", store or self.service.store, "--config", self.service.conf)
        assert self.service.requests() > before, ("not through the service", argv, result)
        return result

    def embedded(self, *argv: Any, store: Path | None = None) -> CliResult:
        with self.monkeypatch.context() as patch:
            patch.setenv("OPENVIKING_NO_SERVICE", "1")
            return self.cli(*argv, "--store", store or self.service.store, "--config", self.service.conf)

    def same(self, *argv: Any) -> CliResult:
        there = self.served(*argv)
        here = self.embedded(*argv)
        assert (there.code, _timeless(there.out), _timeless(there.err)) == (
            here.code,
            _timeless(here.out),
            _timeless(here.err),
        ), argv
        return there


@pytest.fixture
def both(cli: Cli, service: Service, monkeypatch: pytest.MonkeyPatch) -> Both:
    return Both(cli, service, monkeypatch)


READ_MATRIX = [
    *READS,
    ("read", f"{H}/auth.md", "--raw"),
    ("doctor",),
    ("context", "how do users sign in", "--budget", "300"),
    ("search", "docker", "-n", "2"),
]


@pytest.mark.parametrize("fmt", [(), ("-o", "json"), ("-o", "jsonl")], ids=["table", "json", "jsonl"])
@pytest.mark.parametrize("argv", READ_MATRIX, ids=[" ".join(a[:2]) for a in READ_MATRIX])
def test_a_read_through_the_service_prints_byte_for_byte_what_it_prints_embedded(
    both: Both, argv: tuple[str, ...], fmt: tuple[str, ...]
) -> None:
    assert both.same(*argv, *fmt).code == 0


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_a_listing_through_the_service_prints_the_same_rows(both: Both, fmt: str) -> None:
    assert both.same("find", "deploy", "-o", fmt).code == 0
    assert both.same("ls", H, "-r", "-o", fmt).code == 0


@pytest.mark.parametrize(("argv", "status", "code"), ERRORS, ids=[" ".join(a[:2]) for a, _, _ in ERRORS])
def test_an_error_through_the_service_is_the_embedded_error(
    both: Both, argv: tuple[str, ...], status: int, code: str
) -> None:
    table = both.same(*argv)
    assert table.code == status and table.out == "" and table.err.startswith("Error: "), table
    machine = both.same(*argv, "-o", "json")
    assert json.loads(machine.err)["error"]["code"] == code, machine


def test_a_batch_through_the_service_prints_what_it_prints_embedded(both: Both, tmp_path: Path) -> None:
    lines = [
        {"id": 1, "query": "how do users authenticate", "limit": 3},
        {"id": "two", "query": "docker", "uri": f"{H}/deploy", "explain": True},
        {"id": 3, "query": "x", "limit": -1},
        {"id": 4, "query": "x", "after": "yesterday-ish"},
        {"id": 5, "query": "x", "uri": "viking://user/bob"},
        {"id": 6, "query": "x", "as_of": "no-such-snapshot"},
        {"id": 7, "query": "x", "filter": {"op": "nope"}},
    ]
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + "not json\n")
    result = both.same("find", "--batch", path)
    assert result.code == 2 and len(result.out.splitlines()) == 8, result
    assert both.same("context", "--batch", path, "--budget", "200").code == 2


def test_writes_through_the_service_print_what_they_print_embedded(
    both: Both, stores: tuple[Service, Path], tmp_path: Path
) -> None:
    plain = stores[1]
    extra = make_tree(tmp_path / "extra", {"a.md": "# Alpha\n\nAlpha text.\n", "b/c.md": "# Gamma\n\nGamma text.\n"})
    skill = make_tree(tmp_path / "skill", {"SKILL.md": "---\nname: write-rfc\n---\n# Write an RFC\n\nSteps.\n"})
    steps: list[tuple[Any, ...]] = [
        ("add-resource", extra, "--to", "viking://resources/extra", "--tag", "team=search"),
        ("add-resource", extra, "--to", "viking://resources/extra", "-o", "json"),
        ("add-skill", skill, "--tag", "kind=writing"),
        ("add-memory", "The user deploys on Fridays", "--category", "habits"),
        ("mkdir", "viking://resources/empty", "--description", "Nothing yet"),
        ("mv", "viking://resources/empty", "viking://resources/still-empty"),
        ("link", f"{H}/README.md", f"{H}/auth.md", "--reason", "see also"),
        ("rm", "viking://resources/extra/b", "-r"),
        ("session", "add-message", "s9", "--role", "user", "--content", "first"),
        ("reindex", H),
        ("ls", "viking://resources", "-r", "-o", "json"),
    ]
    for argv in steps:
        there = both.served(*argv)
        here = both.embedded(*argv, store=plain)
        # Two stores written a moment apart: their files' times differ, and nothing else.
        written = (there.code, *(_TIMESTAMP.sub("<t>", _timeless(t)) for t in (there.out, there.err)))
        assert written == (here.code, *(_TIMESTAMP.sub("<t>", _timeless(t)) for t in (here.out, here.err))), argv
        assert there.code == 0, (argv, there)


def test_a_relative_path_the_service_cannot_resolve_is_left_to_the_embedded_client(
    both: Both, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_tree(tmp_path / "rel", {"r.md": "# Relative\n\nFrom the working directory.\n"})
    monkeypatch.chdir(tmp_path)
    before = both.service.requests()
    missing = both.cli("add-resource", "no-such-folder", "--store", both.service.store, "--config", both.service.conf)
    assert missing.code == 1 and "no-such-folder" in missing.err, missing
    assert both.service.requests() == before  # the service's working directory is not this one
    added = both.served("add-resource", "rel", "--to", "viking://resources/rel")  # found here: sent absolute
    assert added.code == 0 and "viking://resources/rel" in added.out, added
    both.served("rm", "viking://resources/rel", "-r")


def test_a_relative_store_names_the_same_service_and_prints_the_same(
    both: Both, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(service.store.parent)
    relative = ("doctor", "--store", service.store.name, "--config", service.conf, "-o", "json")
    before = service.requests()
    there = both.cli(*relative)
    assert service.requests() == before + 1, there
    monkeypatch.setenv("OPENVIKING_NO_SERVICE", "1")
    here = both.cli(*relative)
    assert (there.code, _timeless(there.out), there.err) == (here.code, _timeless(here.out), here.err)
    assert json.loads(here.out)["result"]["store"]["path"] == str(service.store)


def test_the_service_path_loads_no_store_no_model_and_no_httpx(service: Service) -> None:
    where = f"'--store', {str(service.store)!r}, '--config', {str(service.conf)!r}"
    code = (
        "from openviking_cli.main import main\n"
        f"assert main(['find', 'how do users authenticate', {where}, '-o', 'json']) == 0\n"
        f"assert main(['grep', {H!r}, 'docker', {where}]) == 0"
    )
    before = service.requests()
    loaded = loaded_modules(code)
    assert service.requests() == before + 2
    assert heavy(loaded) == []
    assert not [m for m in loaded if m.startswith(("openviking.store", "openviking.embedded", "openviking.models"))]
    assert not [m for m in loaded if m.split(".")[0] in ("httpx", "httpcore", "fastapi", "uvicorn")]


# ----------------------------------------------------------------------------- falling back
def _unused(both: Both, *argv: Any, config: Path | None = None) -> CliResult:
    """Run ``argv`` where the service must not be used, and check it was not."""
    before = both.service.requests()
    result = both.cli(*argv, "--store", both.service.store, "--config", config or both.service.conf)
    assert both.service.requests() == before, ("the service answered", argv)
    return result


def test_another_configuration_or_environment_does_not_use_the_service(
    both: Both, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedded = both.embedded("find", "docker", "-o", "jsonl")
    other = write_config(tmp_path / "other.conf", {**HASH_CONF, "semantic": {"abstract_max_chars": 256}})
    assert _unused(both, "find", "docker", "-o", "jsonl", config=other).out == embedded.out
    monkeypatch.setenv("OPENVIKING_CONVERT_TIMEOUT", "99")
    assert _unused(both, "find", "docker", "-o", "jsonl").out == embedded.out


def test_a_service_of_another_version_or_fingerprint_is_not_used(
    both: Both, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = service.announcement
    embedded = both.embedded("ls", H, "-s")
    try:
        write_announcement(replace(real, version="0.0.1"))
        assert _unused(both, "ls", H, "-s") == embedded
        write_announcement(replace(real, fingerprint="0" * 64))
        assert _unused(both, "ls", H, "-s") == embedded
    finally:
        write_announcement(real)
    assert both.served("ls", H, "-s") == embedded


def test_the_service_refuses_a_caller_of_another_fingerprint_and_a_wrong_key(service: Service) -> None:
    real = service.announcement

    def ask(headers: dict[str, str], path: str = "/api/v1/fs/ls?uri=viking://") -> tuple[int, dict[str, Any], str]:
        connection = _unix_connection(real.socket)
        try:
            connection.request("GET", path, headers=headers)
            answer = connection.getresponse()
            return answer.status, json.loads(answer.read()), answer.getheader(SERVICE_HEADER) or ""
        finally:
            connection.close()

    key = {"Authorization": f"Bearer {real.key}"}
    status, body, named = ask({**key, EXPECT_HEADER: "f" * 64})
    assert (status, body["error"]["code"]) == (409, "FAILED_PRECONDITION") and named == real.fingerprint, body
    for refused in ({"Authorization": f"Bearer {real.key[::-1]}"}, {}, {EXPECT_HEADER: real.fingerprint}):
        for path in ("/api/v1/fs/ls?uri=viking://", "/local/status", "/health"):
            status, body, named = ask(refused, path)
            assert (status, body["error"]["code"], named) == (401, "UNAUTHENTICATED", ""), (refused, path, body)
    status, body, _ = ask({**key, EXPECT_HEADER: real.fingerprint})
    assert status == 200 and body["status"] == "ok", body
    assert real.key not in json.dumps(body)


def _unix_connection(path: str) -> http.client.HTTPConnection:
    from openviking.http_client.commandline import UnixConnection

    return UnixConnection(path, 10.0)


@contextlib.contextmanager
def _announced_at(service: Service, sock: str, pid: int | None = None) -> Iterator[None]:
    """The service's announcement rewritten to name ``sock`` (and ``pid``), put back after."""
    real = service.announcement
    write_announcement(replace(real, socket=sock, pid=pid or os.getpid()))
    try:
        yield
    finally:
        write_announcement(real)


def _private_socket_path(tmp_path: Path) -> Path:
    folder = tmp_path / "sock"
    folder.mkdir(mode=0o700, parents=True)
    return folder / "s"


def test_a_stale_announcement_falls_back(both: Both, service: Service, tmp_path: Path) -> None:
    embedded = both.embedded("find", "docker", "-o", "jsonl")
    gone = _private_socket_path(tmp_path)
    with _announced_at(service, str(gone)):  # no socket at all
        assert _unused(both, "find", "docker", "-o", "jsonl").out == embedded.out
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(gone))  # a socket file that nothing listens on, as a killed service leaves
    os.chmod(gone, 0o600)
    dead.close()
    with _announced_at(service, str(gone)):
        assert _unused(both, "find", "docker", "-o", "jsonl").out == embedded.out
    with _announced_at(service, service.announcement.socket, pid=_a_dead_pid()):
        assert _unused(both, "find", "docker", "-o", "jsonl").out == embedded.out


def _a_dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


class UnixStub:
    """Something else on a unix socket: answers as ``behaviour`` says, counting the requests."""

    def __init__(self, path: Path, behaviour: str) -> None:
        self.path, self.behaviour, self.requests = path, behaviour, 0
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        os.chmod(path, 0o600)
        self.sock.listen(8)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                self.requests += 1
                if self.behaviour == "garbage":
                    body = b'{"status": "ok", "result": {"nothing": true}, "time": 0}'
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                elif self.behaviour == "half":  # the head of an answer, then nothing: it died mid-call
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{")
                # "hangup": closes the connection without a word

    def close(self) -> None:
        self.sock.close()
        with contextlib.suppress(OSError):
            self.path.unlink()


@pytest.mark.parametrize("behaviour", ["garbage", "half", "hangup"])
def test_something_else_on_the_socket_or_a_service_dying_mid_read_falls_back(
    both: Both, service: Service, tmp_path: Path, behaviour: str
) -> None:
    embedded = both.embedded("find", "docker", "-o", "json")
    stub = UnixStub(_private_socket_path(tmp_path), behaviour)
    try:
        with _announced_at(service, str(stub.path)):
            result = _unused(both, "find", "docker", "-o", "json")
    finally:
        stub.close()
    assert stub.requests == 1
    assert (result.code, _timeless(result.out), result.err) == (0, _timeless(embedded.out), embedded.err)


def test_a_write_whose_service_dies_mid_call_is_done_embedded_but_not_while_it_listens(
    both: Both, service: Service, tmp_path: Path
) -> None:
    stub = UnixStub(_private_socket_path(tmp_path), "hangup")
    try:
        with _announced_at(service, str(stub.path)):
            refused = _unused(both, "mkdir", "viking://resources/halfway", "-o", "json")
    finally:
        stub.close()
    # The socket still listened after the connection broke: the write may have been done there.
    assert refused.code == 1 and json.loads(refused.err)["error"]["code"] == "UNAVAILABLE", refused
    assert "may have done it" in refused.err
    assert both.embedded("stat", "viking://resources/halfway").code == 1  # not done here either

    class Closing(UnixStub):
        def _serve(self) -> None:  # takes the request, then the whole service goes
            conn, _ = self.sock.accept()
            conn.recv(65536)
            self.requests += 1
            self.sock.close()
            conn.close()

    stub = Closing(_private_socket_path(tmp_path / "second"), "")
    try:
        with _announced_at(service, str(stub.path)):
            done = _unused(both, "mkdir", "viking://resources/halfway", "-o", "json")
    finally:
        stub.close()
    assert stub.requests == 1 and done.code == 0, done
    assert both.embedded("stat", "viking://resources/halfway").code == 0
    both.embedded("rm", "viking://resources/halfway")


# ----------------------------------------------------------------------------- security and lifecycle
def test_the_socket_and_the_files_are_this_users_alone(service: Service) -> None:
    real = service.announcement
    path = announcement_path(str(service.store))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path.with_suffix(".log")).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(real.socket).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(Path(real.socket).parent).st_mode) == 0o700
    assert len(real.key) >= 40 and real.fingerprint == fingerprint(located(service.store, service.conf))


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to become another user")
def test_another_user_cannot_connect(service: Service) -> None:
    path = service.announcement.socket
    pid = os.fork()
    if pid == 0:  # the child becomes nobody and tries the socket
        code = 3
        try:
            os.setgid(65534)
            os.setuid(65534)
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            probe.connect(path)
            code = 0
        except PermissionError:
            code = 13
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 13


def test_start_status_and_stop(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home" / ".openviking"
    monkeypatch.setenv("OPENVIKING_HOME", str(home))
    store, conf = tmp_path / "store", write_config(tmp_path / "ov.conf", HASH_CONF)
    where = ("--store", store, "--config", conf)
    assert cli("add-memory", "the service keeps this", *where).code == 0
    with ov.OpenViking(path=store, config=dict(HASH_CONF)) as client:
        waiting = client.add_resource(make_tree(tmp_path / "notes", EN_FILES), wait=False).pending_vectors
    assert waiting > 0
    none = cli("status", *where, "-o", "json")
    expected = {"store": str(store), "running": False, "watching": [], "vectors_waiting": waiting}
    assert none.code == 0 and none.json()["result"] == expected, none
    said = cli("status", *where).out
    assert "No local service runs" in said and f"vectors waiting  {waiting}\n" in said, said
    started = cli("start", *where, "-o", "json")
    assert started.code == 0, started
    first = started.json()["result"]
    assert first["already_running"] is False and first["store"] == str(store)
    try:
        again = cli("start", *where, "-o", "json").json()["result"]
        assert again["already_running"] is True and again["pid"] == first["pid"]
        other = write_config(tmp_path / "other.conf", {**HASH_CONF, "default_user": "alice"})
        refused = cli("start", "--store", store, "--config", other, "-o", "json")
        assert refused.code == 1 and json.loads(refused.err)["error"]["code"] == "FAILED_PRECONDITION", refused
        shown = cli("status", *where, "-o", "json").json()["result"]
        assert shown["running"] is True and shown["used"] is True and shown["pid"] == first["pid"]
        # the service's indexer makes the waiting vectors from its start: some may be made already
        assert shown["watching"] == [] and 0 <= shown["vectors_waiting"] <= waiting
        assert cli("status", "--store", store, "--config", other, "-o", "json").json()["result"]["used"] is False
        table = cli("status", *where).out
        assert f"pid              {first['pid']}" in table and "used here        yes" in table, table
        assert cli("find", "keeps", *where, "-o", "json").json()["result"]["memories"]
    finally:
        stopped = cli("stop", *where, "-o", "json")
    assert stopped.code == 0 and stopped.json()["result"] == {"store": str(store), "stopped": True, "pid": first["pid"]}
    assert not announcement_path(str(store)).exists() and not Path(first["socket"]).exists()
    assert not Path(first["socket"]).parent.exists()
    assert cli("stop", *where, "-o", "json").json()["result"] == {"store": str(store), "stopped": False}


def test_status_lists_the_watched_sources_and_start_watch_keeps_them(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENVIKING_HOME", str(tmp_path / "home"))
    store, conf = tmp_path / "store", write_config(tmp_path / "ov.conf", HASH_CONF)
    where = ("--store", store, "--config", conf)
    notes, uri = make_tree(tmp_path / "notes", {"a.md": "# A\n\nThe heron waits.\n"}), "viking://resources/notes"
    assert cli("watch", notes, "--to", uri, "--no-follow", *where).code == 0
    # Without --watch the service lists the watched source and says that nobody follows it.
    cli("start", *where)
    try:
        shown = cli("status", *where, "-o", "json").json()["result"]
        assert shown["follows_watches"] is False
        assert [(w["to_uri"], w["path"], w["is_active"], w["watcher"]) for w in shown["watching"]] == [
            (uri, str(notes), True, None)
        ]
        table = cli("status", *where).out
        assert "keeps watches    no (openviking start --watch keeps them)" in table, table
        assert f"    {uri} <- {notes} (active, followed by no process)" in table, table
    finally:
        cli("stop", *where)
    # With --watch it follows the source: a saved file is found by its new text through it.
    pid = cli("start", "--watch", *where, "-o", "json").json()["result"]["pid"]
    try:
        deadline = time.monotonic() + 90
        # The claim is taken, then its holder written: "another process" for a moment between.
        while not str(
            (shown := cli("status", *where, "-o", "json").json()["result"])["watching"][0]["watcher"]
        ).startswith("pid "):
            assert time.monotonic() < deadline, shown
            time.sleep(0.2)
        assert shown["follows_watches"] is True and shown["watching"][0]["watcher"].startswith(f"pid {pid} on ")
        (notes / "b.md").write_text("# B\n\nA pelican glides.\n", encoding="utf-8")
        while not cli("grep", uri, "pelican", *where, "-o", "json").json()["result"]["matches"]:
            assert time.monotonic() < deadline, "the service did not follow the save"
            time.sleep(0.2)
        assert f"followed by pid {pid} on " in cli("status", *where).out
    finally:
        cli("stop", *where)


def test_a_killed_service_is_not_used_and_stop_clears_what_it_left(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENVIKING_HOME", str(tmp_path / "home"))
    store, conf = tmp_path / "store", write_config(tmp_path / "ov.conf", HASH_CONF)
    where = ("--store", store, "--config", conf)
    assert cli("add-memory", "still here after the kill", *where).code == 0
    pid = cli("start", *where, "-o", "json").json()["result"]["pid"]
    os.kill(pid, signal.SIGKILL)
    found = cli("find", "after the kill", *where, "-o", "json")
    assert found.code == 0 and found.json()["result"]["memories"], found
    left = read_announcement(str(store))
    assert left is not None and Path(left.socket).exists()  # what kill -9 leaves
    assert cli("status", *where, "-o", "json").json()["result"]["running"] is False
    cleared = cli("stop", *where, "-o", "json").json()["result"]
    assert cleared == {"store": str(store), "stopped": False, "pid": pid}
    assert read_announcement(str(store)) is None and not Path(left.socket).exists()


def test_an_idle_service_stops_by_itself(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENVIKING_HOME", str(tmp_path / "home"))
    store, conf = tmp_path / "store", write_config(tmp_path / "ov.conf", HASH_CONF)
    where = ("--store", store, "--config", conf)
    assert cli("add-memory", "idle", *where).code == 0
    started = cli("start", *where, "--idle-stop", "1s", "-o", "json").json()["result"]
    assert started["idle_stop"] == 1.0
    from openviking.service.rendezvous import process_gone

    deadline = time.monotonic() + 60
    while not process_gone(started["pid"]):
        assert time.monotonic() < deadline, "the idle service did not stop"
        time.sleep(0.1)
    assert read_announcement(str(store)) is None
    bad = cli("start", *where, "--idle-stop", "soon")
    assert bad.code == 2 and "--idle-stop takes a time" in bad.err, bad


def test_start_stop_and_status_refuse_url(cli: Cli) -> None:
    result = cli("status", "--url", "http://127.0.0.1:1", "-o", "json")
    assert result.code == 2 and "--url does not apply" in json.loads(result.err)["error"]["message"], result


def test_a_service_that_cannot_start_says_why(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENVIKING_HOME", str(tmp_path / "home"))
    store = tmp_path / "a-file"
    store.write_text("not a store")
    conf = write_config(tmp_path / "ov.conf", HASH_CONF)
    result = cli("start", "--store", store, "--config", conf, "-o", "json")
    assert result.code == 1, result
    error = json.loads(result.err)["error"]
    assert error["code"] == "UNAVAILABLE" and error["message"].startswith("The local service did not start: ")
    assert error["message"] != "The local service did not start: it said nothing", error
    assert read_announcement(str(store)) is None
