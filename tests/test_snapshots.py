"""Snapshots and ``as_of``: a tagged state read back exactly after later writes (on disk and on
object storage), by name, version and time; tags through cleanup and ``doctor --repair``; the
errors of each face; and what a user key may do."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import EN_FILES, HASH_CONF, Cli, cli_error, cli_unharmed, hash_config, make_tree, with_store, write_config
from ovserver import ALICE_KEY, body_of, error_of, handbook_store, headers, keyed_config, thread_server

import openviking as ov
from openviking.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    InvalidURIError,
    NotFoundError,
    PermissionDeniedError,
)

H = "viking://resources/handbook"
AUTH = f"{H}/auth.md"
# Every read that takes --as-of, each touched by the writes after the tag.
READS: list[tuple[str, ...]] = [
    ("find", "deploy with docker"),
    ("find", "how do users authenticate", "--mode", "keyword"),
    ("search", "how do users authenticate"),
    ("grep", "viking://resources", "docker", "-i"),
    ("glob", "**/*.md", "--uri", "viking://resources"),
    ("ls", "viking://resources", "-r"),
    ("tree", "viking://resources"),
    ("read", AUTH),
    ("stat", AUTH),
    ("abstract", H),
    ("overview", H),
]


@pytest.fixture(params=["disk", "s3"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    """Where the store lives (a directory, or s3:// on the local moto server) and its ov.conf."""
    if request.param == "disk":
        return str(tmp_path / "store"), write_config(tmp_path / "ov.conf", HASH_CONF)
    s3 = request.getfixturevalue("s3")
    return s3.url, s3.conf


def results(ov_cli: Cli, *extra: str) -> dict[str, Any]:
    """Each read's JSON result, by its command line."""
    found = {}
    for argv in READS:
        result = ov_cli(*argv, *extra, "-o", "json")
        assert result.code == 0, (argv, result.err)
        found[" ".join(argv)] = result.json()["result"]
    return found


def later_writes(ov_cli: Cli, tmp_path: Path) -> None:
    """An add, a changed file added again, a move and a removal: every read above sees one."""
    changed = make_tree(
        tmp_path / "changed", {**EN_FILES, "auth.md": "# Authentication\n\nUsers sign in with docker.\n"}
    )
    for argv in (
        ("add-resource", make_tree(tmp_path / "more", {"ops.md": "# Ops\n\nWe deploy with docker swarm.\n"})),
        ("add-resource", changed, "--to", H),
        ("mv", f"{H}/deploy", "viking://resources/deploy"),
        ("rm", f"{H}/notes", "-r"),
    ):
        assert ov_cli(*argv).code == 0, argv


def test_as_of_answers_as_the_tagged_state_after_adds_moves_and_removals(
    cli: Cli, place: tuple[str, Path], tmp_path: Path, en_tree: Path
) -> None:
    store, conf = place
    ov_cli = with_store(cli, store, conf)
    assert ov_cli("add-resource", en_tree, "--to", H).code == 0
    tagged = results(ov_cli)
    tag = ov_cli("snapshot", "tag", "before-edits", "-o", "json").json()["result"]
    assert tag["name"] == "before-edits" and tag["version"] > 0
    between = datetime.now(UTC)
    time.sleep(1.1)  # the times LanceDB gives its versions are to the second or finer; keep clear of both
    later_writes(ov_cli, tmp_path)

    now = results(ov_cli)
    # Every read sees the writes, but the handbook's abstract: its README's, which no write changed.
    assert [argv for argv in tagged if now[argv] == tagged[argv]] == [f"abstract {H}"]
    assert results(ov_cli, "--as-of", "before-edits") == tagged
    assert results(ov_cli, "--as-of", str(tag["version"])) == tagged
    assert results(ov_cli, "--as-of", between.isoformat().replace("+00:00", "Z")) == tagged
    assert results(ov_cli) == now  # reading the past changed nothing
    listed = ov_cli("snapshot", "list", "-o", "jsonl").json_lines()
    assert [s["name"] for s in listed] == ["before-edits"] and listed[0]["version"] == tag["version"]


def test_a_tag_survives_cleanup_and_doctor_repair(
    tmp_path: Path, en_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import openviking.store.lance as lance
    import openviking.store.snapshots as snapshots

    # Cleanup after a second, with a margin of one: what no snapshot holds is gone after the next write.
    monkeypatch.setattr(lance, "CLEANUP_AFTER", timedelta(seconds=1))
    monkeypatch.setattr(snapshots, "CLOCK_MARGIN", timedelta(seconds=1))
    with ov.OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        client.add_resource(en_tree, to=H)
        early = client.snapshot_tag("early")
        time.sleep(2.5)
        client.add_resource(make_tree(tmp_path / "more", {"ops.md": "# Ops\n\nDeploy with docker swarm.\n"}))
        kept = client.snapshot_tag("kept")
        expected = reads(client, "kept")
        client.delete_snapshot("early")
        client.rm(f"{H}/deploy", recursive=True)  # a write: its optimize cleans up what no tag holds
        assert reads(client, "kept") == expected
        with pytest.raises(NotFoundError, match="^No snapshot named early$") as info:
            client.find("docker", as_of="early")
        assert info.value.hint == "The snapshots are: kept (openviking snapshot list)"
        with pytest.raises(NotFoundError, match=f"^The store has no version {early.version}: it keeps versions "):
            client.ls(H, as_of=str(early.version))

        report = client.doctor(repair=True)
        assert report.problems == []
        assert reads(client, "kept") == expected
        assert [s.name for s in client.list_snapshots()] == ["kept"]
        assert client.list_snapshots()[0].version == kept.version


def reads(client: ov.OpenViking, as_of: str) -> list[Any]:
    return [
        client.find("deploy with docker", as_of=as_of).to_dict(),
        [entry.to_dict() for entry in client.ls("viking://resources", recursive=True, as_of=as_of)],
        client.read(f"{H}/deploy/docker.md", as_of=as_of),
        client.grep("viking://resources", "docker", as_of=as_of).to_dict(),
    ]


def test_readers_of_a_snapshot_are_not_disturbed_by_a_writer(tmp_path: Path, en_tree: Path) -> None:
    """One client reads the tag over and over while another writes in the same process."""
    import threading

    with ov.OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        client.add_resource(en_tree, to=H)
        client.snapshot_tag("stable")
        expected = reads(client, "stable")
        seen: list[Any] = []
        stop = threading.Event()

        def read_on() -> None:
            with ov.OpenViking(path=tmp_path / "store", config=hash_config()) as reader:
                while not stop.is_set():
                    seen.append(reads(reader, "stable"))

        reader = threading.Thread(target=read_on)
        reader.start()
        try:
            for n in range(4):
                client.add_resource(make_tree(tmp_path / f"w{n}", {"x.md": f"# X{n}\n\nDocker note {n}.\n"}))
        finally:
            stop.set()
            reader.join(timeout=120)
        assert seen and all(one == expected for one in seen)


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("argv", "code", "status", "needle"),
    [
        (["find", "docker", "--as-of", "nightly"], "NOT_FOUND", 1, "No snapshot named nightly"),
        (["ls", H, "--as-of", "999999"], "NOT_FOUND", 1, "The store has no version 999999"),
        (["grep", H, "docker", "--as-of", "2001-01-01"], "NOT_FOUND", 1, "keeps no version as old as 2001"),
        (["snapshot", "tag", "release."], "INVALID_ARGUMENT", 2, "not ending in '.' or '.lock'"),
        (["snapshot", "tag", "a..b"], "INVALID_ARGUMENT", 2, "no '..'"),
        (["snapshot", "tag", "v1.lock"], "INVALID_ARGUMENT", 2, "A snapshot's name is a letter"),
        (["read", AUTH, "--as-of", "not a time"], "INVALID_ARGUMENT", 2, "is not a snapshot, a version"),
        (["read", AUTH, "--raw", "--as-of", "now"], "INVALID_ARGUMENT", 2, "--raw"),
        (["stat", AUTH, "--as-of", ""], "INVALID_ARGUMENT", 2, "as_of is empty"),
        (["snapshot", "tag", "9lives"], "INVALID_ARGUMENT", 2, "A snapshot's name is a letter"),
        (["snapshot", "tag", "a/b"], "INVALID_ARGUMENT", 2, "A snapshot's name is a letter"),
        (["snapshot", "delete", "ghost"], "NOT_FOUND", 1, "No snapshot named ghost"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_cli_bad_snapshot_input(
    handbook_ov: Cli, tmp_path: Path, argv: list[str], code: str, status: int, needle: str
) -> None:
    cli_unharmed(handbook_ov, tmp_path / "store", argv, code, status, needle)


def test_a_name_is_tagged_once(handbook_ov: Cli) -> None:
    assert handbook_ov("snapshot", "tag", "v1").out.startswith("Tagged v1: the store at version ")
    error = cli_error(handbook_ov("snapshot", "tag", "v1", "-o", "json"), "ALREADY_EXISTS", 1)
    assert error["message"] == "A snapshot named v1 exists"
    assert error["hint"] == "Pick another name, or delete it first: openviking snapshot delete v1"
    assert handbook_ov("snapshot", "delete", "v1").out == "Deleted snapshot v1\n"
    assert handbook_ov("snapshot", "tag", "v1").code == 0  # the name is free again
    table = handbook_ov("snapshot", "list")
    assert table.code == 0 and "v1" in table.out


def test_the_sdk_says_what_went_wrong(tmp_path: Path, en_tree: Path) -> None:
    with ov.OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        client.add_resource(en_tree, to=H)
        client.snapshot_tag("v1")
        with pytest.raises(AlreadyExistsError):
            client.snapshot_tag("v1")
        with pytest.raises(InvalidArgumentError, match="A snapshot's name"):
            client.snapshot_tag("")
        with pytest.raises(InvalidArgumentError, match="as_of must be"):
            client.find("docker", as_of=3)  # type: ignore[arg-type]
        assert client.find("docker", as_of="v1").total == client.find("docker").total
    with ov.OpenViking(path=tmp_path / "nothing", config=hash_config()) as empty:
        with pytest.raises(NotFoundError):
            empty.find("docker", as_of="v1")
    assert not (tmp_path / "nothing").exists()


# ----------------------------------------------------------------------------- over HTTP
@pytest.fixture
def served(tmp_path: Path) -> Iterator[httpx.Client]:
    with thread_server(keyed_config(), handbook_store(tmp_path)) as url, httpx.Client(base_url=url, timeout=60) as http:
        yield http


def test_snapshots_over_http(served: httpx.Client) -> None:
    root = headers()
    tagged = body_of(served.post("/api/v1/snapshots", json={"name": "v1"}, headers=root))
    assert tagged["name"] == "v1"
    find = {"query": "docker", "target_uri": "viking://resources/docs"}
    before = body_of(served.post("/api/v1/search/find", json=find, headers=root))
    ls_before = body_of(served.get("/api/v1/fs/ls", params={"uri": "viking://resources/docs"}, headers=root))
    body_of(served.request("DELETE", "/api/v1/fs", params={"uri": "viking://resources/docs/deploy", "recursive": True},
                           headers=root))  # fmt: skip
    assert body_of(served.post("/api/v1/search/find", json={**find, "as_of": "v1"}, headers=root)) == before
    params = {"uri": "viking://resources/docs", "as_of": "v1"}
    assert body_of(served.get("/api/v1/fs/ls", params=params, headers=root)) == ls_before
    assert [s["name"] for s in body_of(served.get("/api/v1/snapshots", headers=root))] == ["v1"]

    error = error_of(served.post("/api/v1/search/find", json={**find, "as_of": "v9"}, headers=root), 404, "NOT_FOUND")
    assert error["message"] == "No snapshot named v9"
    error_of(served.post("/api/v1/snapshots", json={"name": "v1"}, headers=root), 409, "ALREADY_EXISTS")
    error_of(served.post("/api/v1/snapshots", json={"name": "-x"}, headers=root), 400, "INVALID_ARGUMENT")
    assert body_of(served.delete("/api/v1/snapshots/v1", headers=root))["name"] == "v1"
    error_of(served.delete("/api/v1/snapshots/v1", headers=root), 404, "NOT_FOUND")


def test_a_user_key_reads_snapshots_but_may_not_tag_or_delete(served: httpx.Client) -> None:
    body_of(served.post("/api/v1/snapshots", json={"name": "v1"}, headers=headers()))
    alice = headers(ALICE_KEY)
    error = error_of(served.post("/api/v1/snapshots", json={"name": "mine"}, headers=alice), 403, "PERMISSION_DENIED")
    assert error["message"] == "Only the root key may tag a snapshot: a snapshot holds every user's space"
    error_of(served.delete("/api/v1/snapshots/v1", headers=alice), 403, "PERMISSION_DENIED")
    found = body_of(served.post("/api/v1/search/find", json={"query": "docker", "as_of": "v1"}, headers=alice))
    assert found["total"] > 0  # the shared resources, as they were
    assert [s["name"] for s in body_of(served.get("/api/v1/snapshots", headers=headers()))] == ["v1"]


def test_the_http_sdk_reads_as_of(served: httpx.Client) -> None:
    with ov.SyncHTTPClient(str(served.base_url), api_key=headers()["X-API-Key"]) as remote:
        remote.snapshot_tag("v1")
        before = remote.find("docker").to_dict()
        remote.rm("viking://resources/docs/deploy", recursive=True)
        assert remote.find("docker", as_of="v1").to_dict() == before
        with pytest.raises(NotFoundError, match="No snapshot named v2"):
            remote.ls("viking://resources", as_of="v2")
        with ov.SyncHTTPClient(str(served.base_url), api_key=ALICE_KEY) as as_alice:
            with pytest.raises(PermissionDeniedError):
                as_alice.delete_snapshot("v1")


def test_a_warm_pinned_read_on_object_storage_asks_the_bucket_what_a_read_of_now_does(
    s3: Any, moto_server: Any, en_tree: Path, tmp_path: Path
) -> None:
    from s3server import CountingProxy, s3_config

    from openviking.config import config_from_dict

    proxy = CountingProxy(moto_server.endpoint)
    try:
        raw = s3_config(s3.url, proxy.endpoint, read_consistency_seconds=30)
        with ov.OpenViking(config=config_from_dict(raw)) as client:
            client.add_resource(en_tree, to=H)
            client.snapshot_tag("v1")
            client.add_resource(make_tree(tmp_path / "more", {"ops.md": "# Ops\n\nDeploy with docker swarm.\n"}))
            ops = {
                "find": lambda as_of: client.find("docker", as_of=as_of),
                "grep": lambda as_of: client.grep("viking://resources", "docker", as_of=as_of),
                "ls": lambda as_of: client.ls(H, as_of=as_of),
                "read": lambda as_of: client.read(AUTH, as_of=as_of),
            }
            counts = {}
            for name, op in ops.items():
                for as_of in (None, "v1"):
                    op(as_of)
                    with proxy.counting() as warm:
                        op(as_of)
                    counts[name, as_of] = dict(warm)
            assert client.ls("viking://resources", as_of="v1") != client.ls("viking://resources")
    finally:
        proxy.stop()
    for name in ops:
        now, pinned = counts[name, None], counts[name, "v1"]
        assert pinned.get("LIST", 0) == 0 and pinned.get("GET", 0) <= now.get("GET", 0) + 1, (name, now, pinned)


# Every operation that reads at a version, called with a bad argument and an unknown snapshot.
BAD_ARGUMENT_AS_OF: dict[str, Callable[[Any], object]] = {
    "find": lambda c: c.find("", as_of="nightly"),
    "search": lambda c: c.search("docker", limit=-1, as_of="nightly"),
    "grep": lambda c: c.grep(None, "docker", as_of="nightly"),
    "glob": lambda c: c.glob("[", as_of="nightly"),
    "ls": lambda c: c.ls(None, as_of="nightly"),
    "tree": lambda c: c.tree(None, as_of="nightly"),
    "read": lambda c: c.read(None, as_of="nightly"),
    "stat": lambda c: c.stat(None, as_of="nightly"),
    "abstract": lambda c: c.abstract(None, as_of="nightly"),
    "overview": lambda c: c.overview(None, as_of="nightly"),
    "evaluate": lambda c: c.evaluate([{"query": "x"}], as_of="nightly"),
}


def test_every_operation_that_reads_at_a_version_is_tried() -> None:
    from openviking.contract.operations import OPERATIONS

    assert sorted(BAD_ARGUMENT_AS_OF) == sorted(name for name, op in OPERATIONS.items() if "as_of" in op.params)


@pytest.mark.parametrize("name", sorted(BAD_ARGUMENT_AS_OF))
def test_a_bad_argument_is_told_before_an_unknown_snapshot(handbook_client: ov.OpenViking, name: str) -> None:
    with pytest.raises((InvalidArgumentError, InvalidURIError)):
        BAD_ARGUMENT_AS_OF[name](handbook_client)
