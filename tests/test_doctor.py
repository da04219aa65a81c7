"""`openviking doctor`: what is installed, configured and stored, and the problems found."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import HASH64_CONF, HASH_CONF, cli_error, make_tree, write_config


def test_doctor_before_anything_was_added(cli: Any, tmp_path: Path, hash_conf: Path) -> None:
    out = cli("doctor", "--store", str(tmp_path / "store"), "--config", str(hash_conf), "-o", "json")
    assert out.code == 0, out.err
    report = out.json()["result"]
    assert report["store"] == {"path": str(tmp_path / "store"), "exists": False}
    assert report["embedder"]["configured"].startswith("hash:")
    assert report["packages"]["lancedb"] and report["problems"] == []
    assert not (tmp_path / "store").exists()


def test_doctor_reports_an_embedder_mismatch_and_exits_1(cli: Any, tmp_path: Path, hash_conf: Path) -> None:
    source = make_tree(tmp_path / "src", {"a.md": "# A\n\nAlpha.\n"})
    store = str(tmp_path / "store")
    assert cli("add-resource", str(source), "--store", store, "--config", str(hash_conf)).code == 0
    other = write_config(tmp_path / "other.conf", HASH64_CONF)
    out = cli("doctor", "--store", store, "--config", str(other))
    assert out.code == 1
    assert "problem: the store was built with hash:v1-1024" in out.out
    as_json = cli("doctor", "--store", store, "--config", str(other), "-o", "json")
    error = cli_error(as_json, "FAILED_PRECONDITION", 1)  # a problem is an error, not "status": "ok" with exit 1
    assert error["message"] == f"doctor found a problem: {error['details']['problems'][0]}"
    assert error["message"].startswith("doctor found a problem: the store was built with hash:v1-1024")
    report = error["details"]  # the whole report, as -o json prints it when all is well
    assert report["store"]["records"] > 0 and report["store"]["embedder"] == "hash:v1-1024"


def test_doctor_never_prints_api_keys(cli: Any, tmp_path: Path) -> None:
    secret = "sk-doctor-secret-0123456789"
    vlm = {"model": "m", "api_base": "http://127.0.0.1:9", "api_key": secret}
    conf = str(write_config(tmp_path / "ov.conf", {**HASH_CONF, "vlm": vlm}))
    for fmt in ("table", "json"):
        out = cli("doctor", "--store", str(tmp_path / "store"), "--config", conf, "-o", fmt)
        assert secret not in out.out + out.err


def test_doctor_reports_whether_the_store_is_writable(cli: Any, tmp_path: Path, hash_conf: Path) -> None:
    source = make_tree(tmp_path / "src", {"a.md": "# A\n\nAlpha.\n"})
    store = tmp_path / "store"
    assert cli("add-resource", str(source), "--store", str(store), "--config", str(hash_conf)).code == 0
    report = cli("doctor", "--store", str(store), "--config", str(hash_conf), "-o", "json").json()["result"]
    assert report["store"]["writable"] is True and report["problems"] == []
    store.chmod(0o555)
    try:
        if os.access(store, os.W_OK):
            pytest.skip("running with privileges that write a read-only directory (root)")
        out = cli("doctor", "--store", str(store), "--config", str(hash_conf))
        assert out.code == 1
        assert "problem: the store is read-only here" in out.out
        write = cli("mkdir", "viking://resources/new", "--store", str(store), "--config", str(hash_conf), "-o", "json")
        assert write.code == 1 and write.out == ""  # the machine's state, not bad input
        error = json.loads(write.err)["error"]
        assert error["code"] == "PERMISSION_DENIED"
        assert error["message"].startswith(f"Cannot write to the store {store}: ")
        found = cli("find", "alpha", "--store", str(store), "--config", str(hash_conf), "-o", "json")
        assert found.code == 0 and found.json()["result"]["total"] >= 1  # reads still work
    finally:
        store.chmod(0o755)


def test_a_read_only_file_system_is_permission_denied_not_a_bug() -> None:
    # A read-only bind mount (EROFS) cannot be made without privileges in a test; the
    # translation of what the OS reports is checked directly.
    from openviking.errors import InternalError, PermissionDeniedError, StoreNotWritableError
    from openviking.store.lance import _translate

    for code in (errno.EROFS, errno.EACCES, errno.EPERM):
        error = _translate(OSError(code, os.strerror(code), "/store/.openviking.lock"), "Cannot write to the store /s")
        assert isinstance(error, StoreNotWritableError) and isinstance(error, PermissionDeniedError)
        assert error.message == f"Cannot write to the store /s: {os.strerror(code)}"
        assert error.details["errno"] == code
        assert "read-only" in (error.hint or "")
    assert isinstance(_translate(OSError(errno.EIO, "I/O error"), "x"), InternalError)


def test_doctor_names_config_variables_that_are_not_set(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OV_TEST_UNSET_KEY", raising=False)
    monkeypatch.setenv("OV_TEST_SET_BASE", "http://127.0.0.1:9/v1")
    vlm = {"model": "m", "api_key": "$OV_TEST_UNSET_KEY", "api_base": "${OV_TEST_SET_BASE}"}
    conf = write_config(tmp_path / "ov.conf", {**HASH_CONF, "vlm": vlm})
    out = cli("doctor", "--store", str(tmp_path / "store"), "--config", str(conf))
    assert out.code == 1
    assert f"problem: {conf} uses $OV_TEST_UNSET_KEY, which is not set in the environment" in out.out
    assert "OV_TEST_SET_BASE" not in out.out


def test_doctor_reads_the_store_and_reports_a_missing_data_file(cli: Any, tmp_path: Path, hash_conf: Path) -> None:
    source = make_tree(tmp_path / "src", {"a.md": "# A\n\nAlpha.\n", "b.md": "# B\n\nBeta.\n"})
    store = tmp_path / "store"
    ov = ("--store", str(store), "--config", str(hash_conf))
    assert cli("add-resource", str(source), *ov).code == 0
    healthy = cli("doctor", *ov, "-o", "json").json()["result"]
    assert healthy["store"]["readable"] is True and healthy["problems"] == []
    for data in (store / "records.lance" / "data").iterdir():  # what a bad copy or a full disk leaves
        data.unlink()
    broken = cli_error(cli("find", "alpha", *ov, "-o", "json"), "FAILED_PRECONDITION", 1)  # find says so...
    assert "doctor --repair" in broken["hint"]  # ...as the store's state, not a bug
    out = cli("doctor", *ov)  # ...and so does doctor, which reads every table rather than count rows
    assert out.code == 1
    assert "  cannot be read (see the problems below)" in out.out
    problem = next(line for line in out.out.splitlines() if line.startswith("problem: "))
    assert problem.startswith(
        "problem: the store cannot be read (table records: Store operation failed: lance error: Not found: "
    )
    assert problem.endswith(
        "); openviking doctor --repair restores the table to its last readable version and says what that loses"
    )
    assert ".rs:" not in problem
    report = cli_error(cli("doctor", *ov, "-o", "json"), "FAILED_PRECONDITION", 1)["details"]
    assert report["store"] == {"path": str(store), "exists": True, "readable": False}
    repaired = cli("doctor", "--repair", *ov)  # the advice works: the records come back from the nodes
    assert repaired.code == 0, repaired.out
    assert "repaired: table records: restored to version 1 of " in repaired.out
    assert "restored to version 1 of 10 (4 of its 4 rows lost)" in repaired.out
    assert "repaired: embedded 2 file(s) and 1 director(ies) again" in repaired.out
    found = cli("find", "alpha", *ov, "-o", "json")
    assert found.code == 0 and found.json()["result"]["resources"][0]["uri"].endswith("/a.md")


def test_doctor_tries_each_configured_model_server(cli: Any, tmp_path: Path) -> None:
    import socket

    from servers import ChatServer

    with socket.socket() as probe:  # a port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    with ChatServer("{}") as chat:
        rerank = {"provider": "openai", "api_base": closed + "/rerank", "api_key": "k", "model": "r"}
        conf = write_config(
            tmp_path / "ov.conf", {**HASH_CONF, "vlm": {"model": "m", "api_base": chat.api_base}, "rerank": rerank}
        )
        out = cli("doctor", "--store", str(tmp_path / "store"), "--config", str(conf))
        two = write_config(
            tmp_path / "two.conf", {**HASH_CONF, "vlm": {"model": "m", "api_base": closed}, "rerank": rerank}
        )
        both = cli_error(
            cli("doctor", "--store", str(tmp_path / "store"), "--config", str(two), "--json"), "FAILED_PRECONDITION", 1
        )
    assert out.code == 1
    problems = [line for line in out.out.splitlines() if line.startswith("problem: ")]
    assert problems == [f"problem: the rerank server at {closed}/rerank cannot be reached (Connection refused)"]
    assert both["message"] == f"doctor found a problem: {both['details']['problems'][0]} (and 1 more)"
    assert len(both["details"]["problems"]) == 2
