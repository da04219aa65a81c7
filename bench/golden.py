"""``python -m bench golden``: every README command and every bad-input case, as JSON, for a diff.

A refactoring must not change what the tool prints. This runs the README's commands (on
OpenViking's English and Chinese docs, with the default local model) and the bad-input
cases of ``tests/test_cli.py`` (on the handbook store those tests use), each with ``-o json``
(and ``-o jsonl`` where a command lists items), and writes one JSON file of
``{command: {code, out, err}}``. Values that change from run to run (``time``, durations,
timestamps, generated session ids) are replaced by placeholders.

    python -m bench golden --save /tmp/golden-before.json      # on the old code
    python -m bench golden --compare /tmp/golden-before.json   # on the new code: exit 1 on any difference
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
WORK = Path("/tmp/openviking-golden")
R = "viking://resources"
D = f"{R}/docs"

_VOLATILE_KEYS = {"time", "seconds", "duration_ms"}
_VOLATILE_TEXT = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "<TIME>"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d"), "<TIME>"),
    (re.compile(r"\d{8}-\d{6}-[0-9a-f]{16}"), "<SID>"),
    (re.compile(r"tm_[0-9a-f]{32}"), "<TELEMETRY>"),
    (re.compile(r"msg_[0-9a-f]{32}"), "<MESSAGE>"),
    (re.compile(r"\(\d+(\.\d+)? s\)"), "(<S> s)"),
]


def readme_commands(docs: Path, skill: Path, extra: Path) -> list[list[str]]:
    """The README's commands and every command of its table, with the flags it documents."""
    auth = f"{D}/guides/04-authentication.md"
    return [
        ["add-resource", str(docs / "en"), "--to", D],
        ["add-resource", str(docs / "en"), "--to", D],
        ["add-resource", str(docs / "zh"), "--to", f"{R}/zh", "--tag", "lang=zh"],
        ["add-resource", str(extra), "--parent", R, "--include", "*.md", "--exclude", "skip*"],
        ["find", "how do I authenticate users", "--uri", D, "--limit", "5"],
        ["find", "how do I authenticate users", "--uri", D, "--limit", "3"],
        ["find", "如何配置嵌入模型"],
        ["find", "怎样把静态数据加密", "--uri", D, "--limit", "2", "--explain"],
        ["find", "deployment", "-u", D, "-u", f"{R}/zh", "-n", "4", "-t", "0.2"],
        ["find", "encryption", "--after", "2000-01-01", "--before", "2100-01-01", "--time-field", "created_at"],
        ["find", "server", "-L", "0,1", "--context-type", "resource"],
        ["find", "server", "--tags", "lang=zh", "-n", "3"],
        ["find", "server", "--filter", '{"op": "must", "field": "level", "conds": [2]}', "-n", "3"],
        ["find", "authentication", "--mode", "vector", "-n", "3"],
        ["find", "authentication", "--mode", "keyword", "-n", "3"],
        ["find", "zzzzqqqq nothing like this", "--explain", "-t", "0.99"],
        ["search", "help me write an RFC for it", "-n", "3"],
        ["read", auth, "--limit", "3"],
        ["read", auth, "--offset", "5", "--limit", "4"],
        ["abstract", f"{D}/guides"],
        ["overview", f"{D}/guides"],
        ["overview", auth],
        ["ls", D],
        ["ls", f"{D}/guides", "-s"],
        ["ls", f"{D}/about", "-a"],
        ["ls", f"{D}/about", "-r"],
        ["tree", f"{D}/about", "-L", "2"],
        ["stat", auth],
        ["stat", f"{D}/guides"],
        ["grep", R, "API key hashing", "-i"],
        ["grep", "auth(entication|orization)", "-u", D, "-i", "-n", "5"],
        ["grep", "TODO|FIXME", "-u", R, "-l"],
        ["grep", "encryption", "-u", D, "-c"],
        ["grep", "a.b", "-u", D, "-F"],
        ["grep", "server", "-u", D, "-x", f"{D}/guides", "-L", "1", "-n", "3"],
        ["glob", "guides/*auth*", "--uri", D],
        ["glob", "**/*.md", "--uri", f"{D}/about"],
        ["glob", "{about,api}/0[1-2]*", "--uri", D, "-n", "3"],
        ["add-memory", "The user prefers dark mode", "--category", "preferences", "--tag", "src=golden"],
        ["add-memory", "The user prefers dark mode", "--category", "preferences"],
        ["add-skill", str(skill)],
        ["add-skill", str(skill), "--name", "Other Name"],
        ["find", "dark mode", "--context-type", "memory"],
        ["find", "write an rfc", "--context-type", "skill"],
        ["mkdir", f"{R}/scratch/notes", "--description", "Scratch notes for the golden run"],
        ["mv", f"{R}/extra", f"{R}/scratch/extra"],
        ["mv", f"{R}/extra", f"{R}/scratch/extra"],
        ["link", auth, f"{D}/guides/11-oauth.md", f"{R}/scratch", "--reason", "login topics"],
        ["relations", auth],
        ["find", "authentication users", "--uri", f"{D}/guides", "-n", "2"],
        ["unlink", auth, f"{R}/scratch"],
        ["relations", f"{D}/guides/.overview.md"],
        ["rm", f"{R}/scratch/extra/notes.md"],
        ["rm", f"{R}/scratch"],
        ["rm", f"{R}/scratch", "-r"],
        ["rm", f"{R}/scratch", "-r"],
        ["session", "new", "--session-id", "golden-1"],
        ["session", "add-message", "golden-1", "--role", "user", "--content", "We design the OAuth login flow."],
        ["session", "add-message", "golden-2", "--role", "assistant", "--content", "Auto-created."],
        ["session", "list"],
        ["session", "show", "golden-1"],
        ["search", "help me write an RFC for it", "--session-id", "golden-1", "-n", "3"],
        ["ls", "viking://user/default/sessions"],
        ["stat", "viking://user/default/sessions/golden-1"],
        ["read", "viking://user/default/sessions/golden-1"],
        ["glob", "**", "--uri", "viking://user"],
        ["rm", "viking://user/default/sessions/golden-2", "-r"],
        ["session", "delete", "golden-1"],
        ["reindex", f"{D}/about"],
        ["doctor"],
    ]


def _bad_cases(tmp: Path) -> list[list[str]]:
    """test_cli.py's bad input and usage errors, run against the handbook store."""
    sys.path.insert(0, str(REPO / "tests"))
    import test_cli

    en_tree = tmp / "en_tree"
    from helpers import EN_FILES, make_tree

    make_tree(en_tree, EN_FILES)
    cases = [list(argv) for argv, _code, _needle in test_cli.FIND_BAD]
    cases += [[str(a) for a in argv] for argv, *_rest in test_cli._add_bad_cases(tmp, en_tree).values()]
    usage = [
        ["find", "x", "--bogus"],
        ["find", "x", "--limit", "abc"],
        ["find", "x", "-n", "1.5"],
        ["find", "x", "-t", "high"],
        ["find"],
        ["read"],
        ["read", f"{test_cli.H}/auth.md", "--offset", "-1"],
        ["ls", test_cli.H, "-n", "-3"],
        ["frobnicate"],
        ["add-resource"],
        ["read", f"{test_cli.H}/missing.md"],
        ["rm", test_cli.H],
        ["mv", f"{test_cli.H}/auth.md", f"{test_cli.H}/README.md"],
        ["session", "show", "nope"],
        ["grep", "(", "-u", R],
        ["glob", "{a,b", "-u", R],
    ]
    return cases + usage


@contextlib.contextmanager
def _captured() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


def _normalise(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("<V>" if k in _VOLATILE_KEYS else _normalise(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    if isinstance(value, str):
        for pattern, placeholder in _VOLATILE_TEXT:
            value = pattern.sub(placeholder, value)
        return value
    return value


def _text(raw: str) -> Any:
    """A stream as JSON documents where it holds JSON, else as normalised text."""
    lines = [line for line in raw.splitlines() if line.strip()]
    try:
        return [_normalise(json.loads(line)) for line in lines]
    except ValueError:
        try:
            return _normalise(json.loads(raw))
        except ValueError:
            return _normalise(raw)


def run(argv: Sequence[str], store: Path, conf: Path) -> dict[str, Any]:
    from openviking_cli.main import main

    with _captured() as (out, err):
        try:
            code = main([*argv, "--store", str(store), "--config", str(conf)])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0
    return {"code": code, "out": _text(out.getvalue()), "err": _text(err.getvalue())}


def collect() -> dict[str, Any]:
    if WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir(parents=True)
    home = WORK / "home"
    os.environ.update(HOME=str(home), OPENVIKING_HOME=str(home / ".openviking"), NO_COLOR="1", COLUMNS="120")
    for name in ("OPENVIKING_STORE", "OPENVIKING_CONFIG_FILE", "OPENVIKING_DEBUG", "FORCE_COLOR"):
        os.environ.pop(name, None)
    skill = WORK / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: rfc-writer\n---\n# Write an RFC\n\nDraft an RFC document.\n")
    extra = WORK / "extra"
    extra.mkdir()
    (extra / "notes.md").write_text("# Notes\n\nDeployment notes for the golden run.\n")
    (extra / "skip-me.md").write_text("# Skipped\n")
    (extra / "data.txt").write_text("not markdown\n")
    default_conf = WORK / "default.conf"
    default_conf.write_text("{}")
    results: dict[str, Any] = {}
    store = WORK / "store-docs"
    for argv in readme_commands(DATA / "openviking-docs", skill, extra):
        listing = argv[0] in ("find", "search", "ls", "tree", "grep", "glob", "relations", "session")
        for fmt in (["-o", "json"], ["-o", "jsonl"]) if listing else (["-o", "json"],):
            key = " ".join([*argv, *fmt])
            results[key] = run([*argv, *fmt], store, default_conf)
            print(f"{results[key]['code']} {key}", file=sys.stderr)
    hash_conf = WORK / "hash.conf"
    hash_conf.write_text(json.dumps({"embedding": {"dense": {"provider": "hash"}}}))
    handbook = WORK / "handbook-store"
    sys.path.insert(0, str(REPO / "tests"))
    from helpers import EN_FILES, make_tree

    tree = make_tree(WORK / "handbook", {**EN_FILES})
    run(["add-resource", str(tree), "--tag", "env=prod"], handbook, hash_conf)
    for argv in _bad_cases(WORK / "bad"):
        for fmt in (["-o", "json"], []):
            key = "bad: " + " ".join([*argv, *fmt])
            results[key] = run([*argv, *fmt], handbook, hash_conf)
    return json.loads(json.dumps(_normalise(results), ensure_ascii=False).replace(str(WORK), "<WORK>"))


def main(argv: Sequence[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench golden")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", type=Path)
    group.add_argument("--compare", type=Path)
    args = parser.parse_args(argv)
    results = collect()
    if args.save:
        args.save.write_text(json.dumps(results, indent=1))  # ASCII: bad input holds lone surrogates
        print(f"{len(results)} outputs saved to {args.save}")
        return 0
    before = _normalise(json.loads(args.compare.read_text()))  # placeholders added since it was saved
    differ = [key for key in sorted(set(before) | set(results)) if before.get(key) != results.get(key)]
    for key in differ:
        print(f"DIFFERS: {key}\n  before: {json.dumps(before.get(key), ensure_ascii=False)[:600]}")
        print(f"  after:  {json.dumps(results.get(key), ensure_ascii=False)[:600]}")
    print(f"{len(results)} outputs compared, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
