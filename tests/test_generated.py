"""The committed completions and man page are what the CLI generates (not stale)."""

from __future__ import annotations

import pytest
from helpers import run_module

from openviking_cli import _docgen


@pytest.mark.parametrize("path", sorted(_docgen.expected_files()), ids=lambda p: p.name)
def test_generated_file_is_current(path) -> None:  # type: ignore[no-untyped-def]
    expected = _docgen.expected_files()[path]
    assert path.exists(), f"{path} is missing: run python -m openviking_cli._docgen"
    assert path.read_text(encoding="utf-8") == expected, f"{path} is stale: run python -m openviking_cli._docgen"


def test_man_page_documents_every_command() -> None:
    import typer

    from openviking_cli.main import build_app

    page = _docgen.man_page()
    for name, _ in _docgen._commands(typer.main.get_command(build_app())):
        assert f".SS {name}".replace("-", "\\-") in page
    assert ".SH EXIT STATUS" in page and "OPENVIKING_STORE" in page


def test_check_mode_reports_nothing_stale() -> None:
    assert _docgen.main(["--check"]) == 0


def test_completion_shim_completes_commands_and_options() -> None:
    env = {"_OPENVIKING_COMPLETE": "complete_bash", "COMP_WORDS": "openviking fi", "COMP_CWORD": "1"}
    out = run_module([], env=env, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["find"]
    out = run_module([], env={**env, "COMP_WORDS": "openviking find q --mo", "COMP_CWORD": "3"}, timeout=120)
    assert "--mode" in out.stdout.split()
