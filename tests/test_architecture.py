"""Layering rules, checked on the source and in subprocesses."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from helpers import HEAVY, REPO, heavy, loaded_modules

LIBRARY = REPO / "openviking"
CLI = REPO / "openviking_cli"
CORE_INTERNALS = (
    "openviking.store",
    "openviking.retrieve",
    "openviking.ingest",
    "openviking.models",
    "openviking.session",
)


def python_files(*roots: Path) -> list[Path]:
    return sorted(p for root in roots for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Every module a file imports, anywhere in it (lazy imports inside functions included)."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base_parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _is(module: str, name: str) -> bool:
    return module == name or module.startswith(name + ".")


def test_the_packages_exist() -> None:
    assert len(python_files(LIBRARY)) > 10
    assert len(python_files(CLI)) > 3


def test_import_linter_contracts_hold() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    assert lint.exists()
    proc = subprocess.run([str(lint)], cwd=str(REPO), capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_vulture_finds_no_dead_code() -> None:
    # Every name it reports as unused is dead code, unless tests/vulture_whitelist.py says why it is used.
    vulture = Path(sys.executable).parent / "vulture"
    paths = ["openviking", "openviking_cli", "bench", "tests/vulture_whitelist.py"]
    proc = subprocess.run(
        [str(vulture), *paths, "--min-confidence", "60"], cwd=str(REPO), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 and proc.stdout == "", proc.stdout[-3000:] + proc.stderr[-3000:]


def test_every_vulture_whitelist_entry_is_one_vulture_reports() -> None:
    # An entry for a name the code now uses (or no longer has) would let a later dead one pass.
    vulture = Path(sys.executable).parent / "vulture"
    proc = subprocess.run(
        [str(vulture), "openviking", "openviking_cli", "bench", "--min-confidence", "60"],
        cwd=str(REPO),
        capture_output=True,
        text=True,
        timeout=300,
    )
    reported = set(re.findall(r"^(\S+?):\d+: unused \w+ '(\S+)'", proc.stdout, flags=re.MULTILINE))
    entries = re.findall(
        r"^(?:_\.)?(\S+)\s+# unused \w+ \((\S+?)\)",
        (REPO / "tests" / "vulture_whitelist.py").read_text(encoding="utf-8"),
        flags=re.MULTILINE,
    )
    assert entries, "the whitelist's entries are read"
    assert [(name, path) for name, path in entries if (path, name) not in reported] == []


def test_only_the_store_imports_lancedb() -> None:
    offenders = [
        str(path.relative_to(REPO))
        for path in python_files(LIBRARY, CLI)
        if any(_is(m, "lancedb") for m in imports_of(path)) and not path.is_relative_to(LIBRARY / "store")
    ]
    assert offenders == []
    assert any(any(_is(m, "lancedb") for m in imports_of(p)) for p in python_files(LIBRARY / "store"))


def test_only_the_cli_imports_typer_and_rich() -> None:
    offenders = {
        str(path.relative_to(REPO)): sorted(m for m in imports_of(path) if _is(m, "typer") or _is(m, "rich"))
        for path in python_files(LIBRARY)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_cli_uses_no_private_module_of_typer() -> None:
    # typer's underscored modules (its vendored click among them) change without notice between
    # releases: the CLI imports, or reaches as an attribute, only typer's public names.
    offenders = {
        str(path.relative_to(REPO)): sorted(
            name for name in imports_of(path) | attribute_chains(path) if _is(name, "typer") and _private(name)
        )
        for path in python_files(CLI)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def attribute_chains(path: Path) -> set[str]:
    """Every dotted name a file reads (``typer.main.get_command``), whole and shortened."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and parts:
            found.add(".".join([node.id, *reversed(parts)]))
    return found


def _private(name: str) -> bool:
    return any(part.startswith("_") for part in name.split("."))


def test_the_library_never_imports_the_cli() -> None:
    offenders = [
        str(p.relative_to(REPO)) for p in python_files(LIBRARY) if any(_is(m, "openviking_cli") for m in imports_of(p))
    ]
    assert offenders == []


def test_the_cli_reaches_the_core_only_through_the_client() -> None:
    offenders = {
        str(path.relative_to(REPO)): sorted(
            m
            for m in imports_of(path)
            if any(_is(m, internal) for internal in CORE_INTERNALS) or any(_is(m, heavy) for heavy in HEAVY)
        )
        for path in python_files(CLI)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_library_does_not_print_or_exit() -> None:
    offenders = []
    for path in python_files(LIBRARY):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("print", "exit", "quit"):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno} {func.id}()")
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "exit"
                and isinstance(func.value, ast.Name)
                and (func.value.id in ("sys", "os"))
            ):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno} {func.value.id}.exit()")
    assert offenders == []


@pytest.mark.parametrize(
    "code",
    [
        "import openviking",
        "import openviking as ov\nov.OpenViking",  # the client class itself loads lazily
        "from openviking import FindResult, MatchedContext, OpenVikingError",
        "import openviking_cli.main",
    ],
)
def test_importing_loads_no_heavy_module(code: str) -> None:
    assert heavy(loaded_modules(code)) == []


def test_importing_openviking_does_not_load_the_client_or_the_cli() -> None:
    loaded = sorted(
        m
        for m in loaded_modules("import openviking")
        if any(_is(m, x) for x in (*CORE_INTERNALS, "openviking.embedded.client", "openviking_cli", "typer", "rich"))
    )
    assert loaded == []


def test_py_typed_ships() -> None:
    assert (LIBRARY / "py.typed").is_file()
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["openviking"]
    from importlib.resources import files

    assert files("openviking").joinpath("py.typed").is_file()


def test_console_script_is_declared() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["project"]["scripts"]["openviking"] == "openviking_cli.main:console"
    assert config["project"]["requires-python"] == ">=3.11"
    assert (CLI / "__main__.py").is_file()


def test_every_cli_command_and_option_has_help() -> None:
    import typer

    from openviking_cli.main import build_app

    root = typer.main.get_command(build_app())
    assert root.help
    commands = root.commands  # type: ignore[attr-defined]
    assert {"add-resource", "find", "read", "abstract", "overview", "ls", "tree", "stat"} <= set(commands)
    missing = []
    for name, command in commands.items():
        if not (command.help or "").strip():
            missing.append(name)
        for param in command.params:
            if not (getattr(param, "help", None) or "").strip():
                missing.append(f"{name} {param.name}")
    assert missing == []


def test_ruff_passes() -> None:
    ruff = Path(sys.executable).parent / "ruff"
    if not ruff.exists():
        found = shutil.which("ruff")
        assert found, "ruff is not installed in the venv"
        ruff = Path(found)
    proc = subprocess.run(
        [str(ruff), "check", "openviking", "openviking_cli", "tests"],
        cwd=str(REPO),
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_mypy_strict_passes() -> None:
    """The library and the CLI type-check under mypy --strict (pyproject.toml's [tool.mypy])."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy"],
        cwd=str(REPO),
        capture_output=True,
        text=True,
        timeout=900,
        env=dict(os.environ),
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def _modules_the_guide_names() -> set[str]:
    """The modules ARCHITECTURE.md's tables name: a cell's first path gives the folder of the
    bare names after it (`store/view.py`, `relations.py`), relative to the package unless it
    names another top folder."""
    named: set[str] = set()
    for line in (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `"):
            continue
        folder = ""
        for name in re.findall(r"`([^`]+)`", line.split("|")[1]):
            if "/" in name:
                folder = name.rsplit("/", 1)[0] + "/"
                path = name
            else:
                path = folder + name
            if path.endswith(".py"):
                named.add(path if path.startswith(("openviking_cli/", "bench/", "tests/")) else "openviking/" + path)
    return named


def test_the_guide_names_every_module_and_no_module_that_is_not_there() -> None:
    named = _modules_the_guide_names()
    modules = {
        str(path.relative_to(REPO))
        for path in python_files(LIBRARY, CLI)
        if path.name != "__init__.py" and "__pycache__" not in path.parts
    }
    assert sorted(named - modules) == [], "named in ARCHITECTURE.md, not in the tree"
    assert sorted(modules - named) == [], "in the tree, not named in ARCHITECTURE.md"
