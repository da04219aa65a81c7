"""A store on object storage (s3:// on a local moto server): the CLI's contract as on disk,
configuration and credentials, errors for a bad bucket, doctor, and the requests it costs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import Cli, hash_config, run_module, with_store, write_config
from s3server import ACCESS_KEY, SECRET_KEY, CountingProxy, MotoServer, S3Store, s3_config, storage_options

VOLATILE = {
    "time", "seconds", "modified", "created_at", "updated_at", "mtime", "mod_time", "modTime", "store", "path", "root"
}  # fmt: skip


def _stable(value: Any) -> Any:
    """A command's JSON result without what differs between two stores made a moment apart."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    if isinstance(value, str) and value.startswith("msg_"):
        return "msg_*"  # message ids are generated
    return value


# The CLI contract subset, in order: each command's JSON result on s3:// equals its result on disk.
CONTRACT: list[tuple[str, ...]] = [
    ("find", "docker"),
    ("find", "docker", "--mode", "vector"),
    ("find", "rotate api keys", "--mode", "keyword"),
    ("find", "kubernetes helm", "-u", "viking://resources/handbook/deploy", "--explain"),
    ("find", "pancakes", "--tags", "team=docs", "-n", "2"),
    ("search", "how do I deploy"),
    ("grep", "viking://resources", "docker", "-i"),
    ("grep", "viking://resources", "key", "-c"),
    ("glob", "**/*.md", "--uri", "viking://resources/handbook"),
    ("read", "viking://resources/handbook/auth.md"),
    ("abstract", "viking://resources/handbook/deploy"),
    ("overview", "viking://resources/handbook"),
    ("ls", "viking://resources/handbook"),
    ("ls", "viking://", "-r"),
    ("tree", "viking://resources/handbook"),
    ("stat", "viking://resources/handbook/auth.md"),
    ("session", "new", "--session-id", "s3-contract"),
    ("session", "add-message", "s3-contract", "--role", "user", "--content", "We deploy with Docker."),
    ("session", "list"),
    ("session", "show", "s3-contract"),
    ("search", "deploy it", "--session-id", "s3-contract"),
    ("mkdir", "viking://resources/handbook/archive", "--description", "Old notes"),
    ("mv", "viking://resources/handbook/notes", "viking://resources/handbook/archive/notes"),
    ("ls", "viking://resources/handbook/archive", "-r"),
    ("find", "pancakes"),
    ("link", "viking://resources/handbook/auth.md", "viking://resources/handbook/deploy/docker.md"),
    ("relations", "viking://resources/handbook/auth.md"),
    ("rm", "viking://resources/handbook/archive", "-r"),
    ("session", "delete", "s3-contract"),
    ("reindex",),
    ("ls", "viking://", "-r"),
    ("find", "authenticate"),
]


def test_the_cli_contract_holds_on_object_storage(cli: Cli, s3: S3Store, tmp_path: Path, en_tree: Path) -> None:
    local = with_store(
        cli,
        tmp_path / "local-store",
        write_config(tmp_path / "local.conf", {"embedding": {"dense": {"provider": "hash"}}}),
    )
    remote = with_store(cli, s3.url, s3.conf)
    for ov in (local, remote):
        added = ov("add-resource", en_tree, "--tag", "team=docs", "-o", "json")
        assert added.code == 0, added.err
    assert (
        _stable(remote("add-resource", en_tree, "--tag", "team=docs", "-o", "json").json()["result"])["unchanged"] == 5
    )
    local("add-resource", en_tree, "--tag", "team=docs", "-o", "json")
    for argv in CONTRACT:
        on_disk, on_s3 = local(*argv, "-o", "json"), remote(*argv, "-o", "json")
        assert on_s3.code == on_disk.code == 0, (argv, on_s3.err, on_disk.err)
        assert _stable(on_s3.json()["result"]) == _stable(on_disk.json()["result"]), argv
    table = remote("find", "docker")
    assert table.code == 0 and "viking://resources/handbook/deploy/docker.md" in table.out


def test_the_store_named_by_flag_or_environment_with_aws_variables(
    cli: Cli, moto_server: MotoServer, tmp_path: Path, en_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No storage.options at all: LanceDB and the lease read the standard AWS_* variables.
    url = f"s3://{moto_server.bucket()}/by-env"
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    conf = write_config(tmp_path / "hash.conf", {"embedding": {"dense": {"provider": "hash"}}})
    assert cli("add-resource", en_tree, "--store", url, "--config", conf).code == 0
    monkeypatch.setenv("OPENVIKING_STORE", url)
    found = cli("find", "docker", "--config", conf, "-o", "json")
    assert found.code == 0, found.err
    assert found.json()["result"]["resources"][0]["uri"] == "viking://resources/handbook/deploy/docker.md"


def test_options_expand_variables_and_doctor_masks_the_keys(
    cli: Cli, moto_server: MotoServer, tmp_path: Path, en_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OV_TEST_S3_KEY", ACCESS_KEY)
    monkeypatch.setenv("OV_TEST_S3_SECRET", SECRET_KEY)
    url = f"s3://{moto_server.bucket()}/team/context"
    raw = s3_config(url, moto_server.endpoint)
    raw["storage"]["options"].update(aws_access_key_id="$OV_TEST_S3_KEY", aws_secret_access_key="${OV_TEST_S3_SECRET}")
    conf = write_config(tmp_path / "ov.conf", raw)
    assert cli("add-resource", en_tree, "--config", conf).code == 0
    for argv in (("doctor",), ("doctor", "-o", "json"), ("doctor", "--debug")):
        result = cli(*argv, "--config", conf)
        assert result.code == 0, result.err
        assert ACCESS_KEY not in result.out + result.err and SECRET_KEY not in result.out + result.err
    report = cli("doctor", "--config", conf, "-o", "json").json()["result"]
    store = report["store"]
    assert store["path"] == url and store["nodes"] > 0
    assert store["object_storage"]["bucket"] == url.split("/")[2]
    assert store["object_storage"]["endpoint"] == moto_server.endpoint
    assert store["object_storage"]["options"]["aws_secret_access_key"] == "***"
    assert store["object_storage"]["options"]["aws_access_key_id"] == "***"
    assert store["writable"] is True
    table = cli("doctor", "--config", conf).out
    assert moto_server.endpoint in table and url in table


@pytest.fixture(scope="module")
def auth_server() -> Any:
    """A second moto server that checks credentials."""
    server = MotoServer(auth=True)
    yield server
    server.stop()


def _bad_configs(moto_server: MotoServer, auth_server: MotoServer) -> dict[str, tuple[dict[str, Any], str]]:
    good = f"s3://{moto_server.bucket()}/store"
    closed = f"http://127.0.0.1:{_closed_port()}"
    wrong_keys = (ACCESS_KEY, SECRET_KEY)  # moto's IAM knows only its own user's
    return {
        "wrong endpoint": (s3_config(good, closed), "UNAVAILABLE"),
        "wrong credentials": (
            s3_config(f"s3://{auth_server.auth_bucket}/store", auth_server.endpoint, keys=wrong_keys),
            "PERMISSION_DENIED",
        ),
        "missing bucket": (s3_config("s3://ov-no-such-bucket/store", moto_server.endpoint), "NOT_FOUND"),
    }


def _closed_port() -> int:
    from s3server import free_port

    return free_port()  # nothing listens there once the probe socket is closed


@pytest.mark.parametrize("case", ["wrong endpoint", "wrong credentials", "missing bucket"])
@pytest.mark.parametrize("argv", [("find", "docker"), ("add-resource", "{tree}")])
def test_a_bad_storage_config_is_one_clear_error(
    case: str, argv: tuple[str, ...], moto_server: MotoServer, auth_server: MotoServer, tmp_path: Path, en_tree: Path
) -> None:
    raw, code = _bad_configs(moto_server, auth_server)[case]
    conf = write_config(tmp_path / "bad.conf", raw)
    args = [str(en_tree) if a == "{tree}" else a for a in argv]
    table = run_module([*args, "--config", conf], timeout=120)
    assert table.returncode == 1, table.stderr
    assert table.stdout == ""
    lines = table.stderr.strip().splitlines()
    assert lines[0].startswith("Error: ") and "Traceback" not in table.stderr, table.stderr
    assert all(line.startswith(("Error: ", "Hint: ")) for line in lines), table.stderr
    as_json = run_module([*args, "--config", conf, "-o", "json", "--debug"], timeout=120)
    assert as_json.returncode == 1
    assert json.loads(as_json.stderr.strip().splitlines()[-1])["error"]["code"] == code, as_json.stderr
    for output in (table.stdout, table.stderr, as_json.stdout, as_json.stderr):
        assert ACCESS_KEY not in output and SECRET_KEY not in output


@pytest.mark.parametrize("case", ["wrong endpoint", "wrong credentials", "missing bucket"])
def test_doctor_names_what_is_wrong_with_the_bucket(
    case: str, cli: Cli, moto_server: MotoServer, auth_server: MotoServer, tmp_path: Path
) -> None:
    raw, _ = _bad_configs(moto_server, auth_server)[case]
    conf = write_config(tmp_path / "bad.conf", raw)
    result = cli("doctor", "--config", conf, "-o", "json")
    assert result.code == 1
    report = result.error()["details"]
    problem = " ".join(report["problems"])
    expected = {
        "wrong endpoint": "cannot be reached",
        "wrong credentials": "refused",
        "missing bucket": "does not exist",
    }
    assert expected[case] in problem, problem
    assert ACCESS_KEY not in result.err + result.out and SECRET_KEY not in result.err + result.out


def test_requests_per_operation_are_bounded_and_a_cold_find_lists_no_bucket(
    s3: S3Store, moto_server: MotoServer, tmp_path: Path, en_tree: Path
) -> None:
    import time

    from openviking.config import config_from_dict
    from openviking.embedded.client import OpenViking

    proxy = CountingProxy(moto_server.endpoint)
    try:
        with OpenViking(config=config_from_dict(s3_config(s3.url, proxy.endpoint))) as writer:
            writer.add_resource(en_tree)
        # Cold: a new process's first find lists only the store's own tables' versions.
        with proxy.counting() as cold:
            client = OpenViking(config=config_from_dict(s3_config(s3.url, proxy.endpoint, read_consistency_seconds=30)))
            client.find("docker")
        prefix = s3.url.split("/", 3)[3] + "/"
        lists = [seen for seen in proxy.seen if seen.kind == "LIST"]
        assert lists and all(seen.query["prefix"][0].startswith(prefix) for seen in lists), lists
        assert cold["LIST"] <= 6 and cold["GET"] <= 50, cold
        # Warm, within the consistency interval: no LIST at all, a few GETs of data.
        ops = {
            "find": lambda: client.find("docker"),
            "grep": lambda: client.grep("viking://resources", "docker"),
            "ls": lambda: client.ls("viking://resources/handbook"),
            "read": lambda: client.read("viking://resources/handbook/auth.md"),
        }
        for name, op in ops.items():
            op()
            with proxy.counting() as warm:
                op()
            assert warm["LIST"] == 0 and warm["GET"] <= (12 if name == "find" else 4), (name, warm)
        client.close()
        # Once the interval is over, one look (a LIST) per open table, then none again within it.
        interval = 3.0
        raw = s3_config(s3.url, proxy.endpoint, read_consistency_seconds=interval)
        with OpenViking(config=config_from_dict(raw)) as one:
            one.find("docker")
            time.sleep(interval + 0.1)
            looked_at = time.monotonic()
            with proxy.counting() as looked:
                one.find("docker")
            with proxy.counting() as again:
                one.find("docker")
            within = time.monotonic() - looked_at < interval  # a loaded machine may take longer
        assert 1 <= looked["LIST"] <= 5, looked
        assert again["LIST"] == 0 or not within, again
    finally:
        proxy.stop()


def test_storage_config_is_checked(tmp_path: Path) -> None:
    from openviking.config import config_from_dict
    from openviking.errors import ConfigError

    with pytest.raises(ConfigError, match="read_consistency_seconds"):
        config_from_dict({"storage": {"read_consistency_seconds": -1}})
    with pytest.raises(ConfigError, match="lease_seconds"):
        config_from_dict({"storage": {"lease_seconds": True}})
    with pytest.raises(ConfigError, match="storage.options.endpoint"):
        config_from_dict({"storage": {"options": {"endpoint": ["x"]}}})
    with pytest.raises(ConfigError, match="storage.optoins"):
        config_from_dict({"storage": {"optoins": {}}})
    config = config_from_dict({"storage": {"options": {"allow_http": True, "aws_secret_access_key": "abc"}}})
    assert config.storage.options == {"allow_http": "true", "aws_secret_access_key": "abc"}
    assert "abc" not in repr(config)
    assert os.environ.get("OPENVIKING_STORE") is None
    assert hash_config().storage.read_consistency_seconds is None
    assert storage_options("http://x")["allow_http"] is True


def test_a_retryable_commit_conflict_is_made_again_and_never_shown(tmp_path: Path, en_tree: Path) -> None:
    from openviking.embedded.client import OpenViking
    from openviking.errors import UnavailableError
    from openviking.store import lance

    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        client.add_resource(en_tree)
        store = client._open()
        table = store._table("nodes")
        # LanceDB's words when a commit lost a race it could not resolve.
        conflict = (
            "Retryable commit conflict for version 21: This CreateIndex transaction was preempted by "
            "concurrent transaction Rewrite at version 21. Please retry."
        )
        calls: list[int] = []

        def twice_preempted() -> str:
            calls.append(1)
            if len(calls) <= 2:
                raise RuntimeError(conflict)
            return "committed"

        with store.write_lock():
            assert store._commit(table, twice_preempted) == "committed"
        assert len(calls) == 3

        def always_preempted() -> None:
            raise RuntimeError(conflict)

        with store.write_lock(), pytest.raises(UnavailableError) as info:
            store._commit(table, always_preempted)
        assert "Retryable" not in info.value.message and info.value.details["tries"] == lance.COMMIT_TRIES
