"""Shared fixtures: an isolated environment, an in-process CLI runner, small trees, stores.

No network anywhere: stores are real LanceDB directories under tmp_path, embedders are the
built-in hash embedder (fast) or the bundled local model (quality tests, Ctrl-C test).
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    EN_FILES,
    GUIDE_EN,
    GUIDE_ZH,
    ZH_FILES,
    Cli,
    CliResult,
    MissingData,
    hash_config,
    make_tree,
    shared_data,
    with_store,
    write_config,
    write_hash_config,
)
from s3server import MotoServer, S3Store, s3_config


def pytest_configure(config: pytest.Config) -> None:
    # A suite started in the background (``nohup``, ``&`` in a script) inherits SIGINT ignored,
    # and so would every process it starts; the Ctrl-C tests need it as a terminal delivers it.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    # A test that reads a corpus beside the repository must say so with its marker: .ci/run
    # runs the marked ones where the corpus is, and would never run an unmarked one there.
    report: Any = yield
    missing = call.excinfo is not None and call.excinfo.errisinstance(MissingData)
    if missing and item.get_closest_marker("needs_shared_data") is None:
        report.outcome = "failed"
        report.longrepr = f"{item.nodeid} reads a corpus beside the repository: mark it needs_shared_data"
    return report  # type: ignore[no-any-return]


ISOLATION_UNSET = (
    "OPENVIKING_STORE",
    "OPENVIKING_CONFIG_FILE",
    "OPENVIKING_DEBUG",
    "OPENVIKING_URL",
    "OPENVIKING_API_KEY",
    "FORCE_COLOR",
)


def _isolate(mp: pytest.MonkeyPatch, home: Path) -> None:
    mp.setenv("HOME", str(home))
    mp.setenv("OPENVIKING_HOME", str(home / ".openviking"))
    for name in ISOLATION_UNSET:
        mp.delenv(name, raising=False)
    mp.setenv("NO_COLOR", "1")
    mp.setenv("COLUMNS", "120")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME and OPENVIKING_HOME in fresh temp dirs; no store/config/debug/color from outside."""
    home = tmp_path_factory.mktemp("home")
    _isolate(monkeypatch, home)
    return home


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run ``openviking ARGS`` in-process: ``cli("find", "x", ...) -> (code, stdout, stderr)``."""
    from openviking_cli.main import main

    def run(*argv: Any) -> CliResult:
        capsys.readouterr()  # drop anything printed before
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        out, err = capsys.readouterr()
        return CliResult(int(code), out, err)

    return run


@pytest.fixture
def hash_conf(tmp_path: Path) -> Path:
    """Path of an ov.conf that selects the hash embedder."""
    return write_hash_config(tmp_path / "conf" / "ov.conf")


@pytest.fixture
def en_tree(tmp_path: Path) -> Path:
    """A small English markdown tree (README, auth, deploy/docker, deploy/kubernetes, notes/cooking)."""
    return make_tree(tmp_path / "handbook", EN_FILES)


@pytest.fixture
def zh_tree(tmp_path: Path) -> Path:
    """A small Chinese markdown tree (认证, 部署/容器, 笔记/烹饪)."""
    return make_tree(tmp_path / "手册", ZH_FILES)


@pytest.fixture
def hash_client(tmp_path: Path) -> Iterator[Any]:
    """An SDK client on an empty store under tmp_path, with the hash embedder."""
    from openviking.embedded.client import OpenViking

    client = OpenViking(path=tmp_path / "store", config=hash_config())
    client.initialize()
    yield client
    client.close()


@pytest.fixture
def handbook_client(tmp_path: Path, en_tree: Path) -> Iterator[Any]:
    """An SDK client on tmp_path/"store" holding the English handbook (viking://resources/handbook), hash embedder."""
    from openviking.embedded.client import OpenViking

    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        client.add_resource(en_tree)
        yield client


@pytest.fixture
def handbook_ov(cli: Cli, tmp_path: Path, hash_conf: Path, en_tree: Path) -> Cli:
    """``cli`` on tmp_path/"store" holding the English handbook, with ``--store`` and ``--config`` appended."""
    from openviking.embedded.client import OpenViking

    store = tmp_path / "store"
    with OpenViking(path=store, config=hash_config()) as client:
        client.add_resource(en_tree)
    return with_store(cli, store, hash_conf)


def _store_of_the_local_model(
    tmp_path_factory: pytest.TempPathFactory, name: str, trees: dict[str, Path]
) -> Iterator[tuple[Any, Any]]:
    """A store of ``trees`` (URI -> folder) ingested with the bundled local model, with the
    client and the first tree's AddResult."""
    from openviking.config import Config
    from openviking.embedded.client import OpenViking

    with pytest.MonkeyPatch.context() as mp:
        _isolate(mp, tmp_path_factory.mktemp(f"{name}-home"))
        store = tmp_path_factory.mktemp(name) / "store"
        client = OpenViking(path=store, config=Config())  # the defaults: provider "local"
        assert client.embedder().identity.startswith("local:"), client.embedder().identity
        results = [client.add_resource(folder, to=uri) for uri, folder in trees.items()]
    yield client, results[0]
    client.close()


@pytest.fixture(scope="session")
def guide_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    """The repository's own user guide (``docs/``) ingested once per session with the real local
    embedder: English pages under viking://resources/guide, Chinese under viking://resources/guide-zh.
    Yields ``(client, AddResult of the English pages)``."""
    trees = {"viking://resources/guide": GUIDE_EN, "viking://resources/guide-zh": GUIDE_ZH}
    yield from _store_of_the_local_model(tmp_path_factory, "guide", trees)


@pytest.fixture(scope="session")
def docs_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    """Upstream OpenViking's docs, read from beside the repository (tests using it are marked
    ``needs_shared_data``), ingested once per session with the real local embedder: English
    pages under viking://resources/docs, Chinese under viking://resources/docs-zh. Yields
    ``(client, AddResult of the English pages)``."""
    docs = shared_data("openviking-docs")
    trees = {"viking://resources/docs": docs / "en", "viking://resources/docs-zh": docs / "zh"}
    yield from _store_of_the_local_model(tmp_path_factory, "docs", trees)


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    """An S3-compatible server (moto's server mode) on 127.0.0.1 for the whole session."""
    server = MotoServer()
    yield server
    server.stop()


@pytest.fixture
def s3(moto_server: MotoServer, tmp_path: Path) -> S3Store:
    """A fresh bucket, and an ov.conf whose storage.workspace is s3://BUCKET/store (hash embedder,
    a 3-second lease)."""
    bucket = moto_server.bucket()
    url = f"s3://{bucket}/store"
    conf = write_config(tmp_path / "s3conf" / "ov.conf", s3_config(url, moto_server.endpoint, lease_seconds=3))
    return S3Store(url, bucket, moto_server.endpoint, conf)
