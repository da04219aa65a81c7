"""The command line says the library's hints with its flags, and knows every hint it rewords.

The library's hints name a method's parameters; ``openviking_cli/hints.py`` rewords each for
the command line. A hint the library no longer gives would leave a dead entry behind, and a
reworded one would reach the terminal in the SDK's words: both fail here.
"""

from __future__ import annotations

import re

import pytest
from helpers import REPO

from openviking_cli import hints

LIBRARY_TEXT = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "openviking").rglob("*.py"))


def _limit_hint(name: str) -> str:
    from openviking.errors import InvalidArgumentError
    from openviking.values.arguments import optional_limit

    with pytest.raises(InvalidArgumentError) as info:
        optional_limit(-1, name)
    return str(info.value.hint)


@pytest.mark.parametrize("hint", sorted(hints._STATIC))
def test_every_reworded_hint_is_one_the_library_gives(hint: str) -> None:
    given = LIBRARY_TEXT.replace('\\"', '"').replace("{CONFIG_ENV}", "OPENVIKING_CONFIG_FILE")
    assert hint in given or hint in (_limit_hint("node_limit"), _limit_hint("level_limit"))


@pytest.mark.parametrize("hint", sorted(hints._STATIC))
def test_the_command_line_hint_names_a_flag_or_a_command(hint: str) -> None:
    worded = hints.cli_hint(hint)
    assert worded != hint and re.search(r"(^|\s|/)--?[a-zA-Z]|openviking ", worded or ""), worded


@pytest.mark.parametrize(
    ("library", "command_line"),
    [
        ("glob matches paths below a directory, e.g. uri='viking://resources'",
         "glob matches paths below a directory, e.g. --uri viking://resources"),
        ("Give this one another name with name=, or remove the other: rm('viking://agent/skills/x', recursive=True)",
         "Give this one another name with --name, or remove the other: openviking rm -r viking://agent/skills/x"),
        ("Add to it with add_message('s1', 'user', TEXT)",
         "Add to it with: openviking session add-message s1 --role user --content TEXT"),
        ("Stop that watch first: delete_watch('viking://resources/docs')",
         "Stop that watch first: openviking watch --stop viking://resources/docs"),
        ("Mount or restore it, or stop watching it with delete_watch('viking://resources/docs')",
         "Mount or restore it, or stop watching it with: openviking watch --stop viking://resources/docs"),
        ("A hint with no parameter in it", "A hint with no parameter in it"),
        (None, None),
    ],
)  # fmt: skip
def test_hints_made_from_values_are_reworded_too(library: str | None, command_line: str | None) -> None:
    assert hints.cli_hint(library) == command_line


def test_library_hints_name_no_flag() -> None:
    flags = re.compile(r'hint=f?["\'][^"\']*(\s|^)--[a-z]')
    found = [line for line in LIBRARY_TEXT.splitlines() if flags.search(line)]
    assert found == []
