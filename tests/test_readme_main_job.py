"""The README's main job runs from a fresh clone: it indexes the repository's own ``docs/``
(no data from outside the repository) and finds the authentication page for the question it
asks, as soon as the add returns (its vectors made in the background) and once they are in."""

from __future__ import annotations

import json
import re
import shlex

from helpers import REPO, process_ended, run_module

DOCS = "viking://resources/docs"


def main_job() -> list[list[str]]:
    """The openviking commands of the README's first set-up command, as argv lists."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    setup = readme.split("## Set up", 1)[1]
    command = re.search(r"```sh\n(.+?)\n```", setup, re.S)
    assert command is not None, "the Set up section has no sh block"
    steps = [shlex.split(step) for step in command.group(1).split("&&")]
    return [step[1:] for step in steps if step and step[0] == "openviking"]


def test_the_main_job_reads_nothing_outside_the_repository() -> None:
    commands = main_job()
    assert [c[0] for c in commands] == ["add-resource", "find"]
    source = REPO / commands[0][1]
    assert source.is_dir() and source.resolve().is_relative_to(REPO)
    assert {p.parent.name for p in source.rglob("*.md")} >= {"en", "zh"}


def test_the_main_job_finds_the_authentication_page_first() -> None:
    add, find = main_job()
    assert "--background" in add
    added = run_module([*add, "-o", "json"], timeout=600)
    assert added.returncode == 0, added.stderr
    result = json.loads(added.stdout)["result"]
    assert result["added"] > 0 and result["skipped"] == 0 and result["pending_vectors"] > 0
    for vectors in ("as they may be", "all in"):
        if vectors == "all in":
            process_ended(result["background"]["pid"])
        found = run_module([*find, "-o", "json"], timeout=300)
        assert found.returncode == 0, found.stderr
        answer = json.loads(found.stdout)["result"]
        assert answer["resources"][0]["uri"] == f"{DOCS}/en/05-authentication.md", vectors
        assert vectors != "all in" or answer["pending_vectors"] == 0
        chinese = run_module(["find", "如何对用户进行身份验证", "--uri", f"{DOCS}/zh", "-o", "json"], timeout=300)
        assert json.loads(chinese.stdout)["result"]["resources"][0]["uri"] == f"{DOCS}/zh/05-authentication.md"
