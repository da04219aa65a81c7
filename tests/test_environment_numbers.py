"""Numbers read from the environment (``OPENVIKING_*``) go through one parser: a word, 0, a
negative number, nan or inf is INVALID_ARGUMENT naming the variable and what it counts (exit
2), before anything is fetched, unpacked or written.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import CliResult, cli_unharmed

Cli = Callable[..., CliResult]


def _archive(tmp_path: Path) -> str:
    path = tmp_path / "notes.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.md", "# A\n\nalpha\n")
    return str(path)


def _folder(tmp_path: Path) -> str:
    folder = tmp_path / "more"
    folder.mkdir(exist_ok=True)
    (folder / "b.md").write_text("# B\n\nbeta\n")
    return str(folder)


# The variable, what it counts, and a command that reads it.
READERS: list[tuple[str, str, Callable[[Path], list[str]]]] = [
    ("OPENVIKING_UNPACK_MAX_MB", "MiB", lambda tmp: ["add-resource", _archive(tmp)]),
    ("OPENVIKING_FETCH_TIMEOUT", "seconds", lambda tmp: ["add-resource", "http://127.0.0.1:9/page.html"]),
    ("OPENVIKING_FETCH_MAX_MB", "MiB", lambda tmp: ["add-resource", "http://127.0.0.1:9/page.html"]),
    ("OPENVIKING_CONVERT_TIMEOUT", "seconds", lambda tmp: ["add-resource", _folder(tmp)]),
    ("OPENVIKING_CONVERT_MEMORY_MB", "MiB", lambda tmp: ["add-resource", _folder(tmp)]),
    ("OPENVIKING_GREP_TIMEOUT", "seconds", lambda tmp: ["grep", "viking://resources", "deploy"]),
]


@pytest.mark.parametrize(("name", "unit", "command"), READERS, ids=[name for name, _, _ in READERS])
@pytest.mark.parametrize("value", ["abc", "-5", "0", "nan"])
def test_a_number_from_the_environment_that_is_not_one_is_a_bad_argument(
    handbook_ov: Cli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    unit: str,
    command: Callable[[Path], list[str]],
    value: str,
) -> None:
    monkeypatch.setenv(name, value)
    message = f"{name} must be a number of {unit} above 0 (got '{value}')"
    error, _table = cli_unharmed(handbook_ov, tmp_path / "store", command(tmp_path), "INVALID_ARGUMENT", 2, message)
    assert error["message"] == message and error["details"] == {name: value}
