"""`openviking doctor`: what is installed, configured and stored, and the problems found."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers import HASH64_CONF, HASH_CONF, make_tree, write_config


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
    report = cli("doctor", "--store", store, "--config", str(other), "-o", "json").json()["result"]
    assert report["store"]["records"] > 0 and report["store"]["embedder"] == "hash:v1-1024"


def test_doctor_never_prints_api_keys(cli: Any, tmp_path: Path) -> None:
    secret = "sk-doctor-secret-0123456789"
    vlm = {"model": "m", "api_base": "http://127.0.0.1:9", "api_key": secret}
    conf = str(write_config(tmp_path / "ov.conf", {**HASH_CONF, "vlm": vlm}))
    for fmt in ("table", "json"):
        out = cli("doctor", "--store", str(tmp_path / "store"), "--config", conf, "-o", fmt)
        assert secret not in out.out + out.err
