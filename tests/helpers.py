"""Plain helpers shared by the test modules (fixtures live in conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parents[1]
# The shared corpora sit beside the project's folder: ../shared/data, read at run time.
DATA = REPO.parent / "shared" / "data"
DOCS_EN = DATA / "openviking-docs" / "en"
DOCS_ZH = DATA / "openviking-docs" / "zh"
HASH_CONF: dict[str, Any] = {"embedding": {"dense": {"provider": "hash"}}}
SIDECAR_SUFFIXES = ("/.abstract.md", "/.overview.md")
# The brief's MatchedContext fields, in order, plus tags.
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


def write_hash_config(path: Path) -> Path:
    """An ov.conf selecting the built-in hash embedder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(HASH_CONF), encoding="utf-8")
    return path


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


def run_module(args: list[str], *, timeout: float = 300, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``python -m openviking_cli ARGS`` in a subprocess with the (already isolated) environment."""
    return subprocess.run(
        [sys.executable, "-m", "openviking_cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
        cwd=str(REPO),
        **kwargs,
    )


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
