"""``find --batch`` and ``context --batch``: JSONL questions in, one JSONL answer per line out,
keyed by id, in the order asked; each answer is what the single command prints with -o json,
each bad line an ``{"id", "error"}`` line, the exit status that of the worst line; one client
(one embedder) for the whole batch."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import EN_FILES, Cli, make_tree, snapshot, with_store

import openviking.models.embedder as embedder_module

H = "viking://resources/handbook"


@pytest.fixture
def ov(cli: Cli, tmp_path: Path, hash_conf: Path) -> Cli:
    bound = with_store(cli, tmp_path / "store", hash_conf)
    assert bound("add-resource", make_tree(tmp_path / "handbook", EN_FILES)).code == 0
    assert bound("add-memory", "The user deploys on Fridays").code == 0
    return bound


def _batch_file(tmp_path: Path, lines: list[Any]) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def _single(ov: Cli, *argv: Any) -> Any:
    result = ov(*argv, "-o", "json")
    assert result.code == 0, result
    return result.json()["result"]


def test_each_answer_is_the_single_commands_result_in_the_order_asked(ov: Cli, tmp_path: Path) -> None:
    questions = [
        {"id": "q1", "query": "how do users authenticate"},
        {"id": 2, "query": "docker", "uri": f"{H}/deploy", "limit": 1, "threshold": 0},
        {"id": "q3", "query": "kubernetes helm", "mode": "keyword", "explain": True},
        {"id": "q4", "query": "deploy", "target_uri": [H], "after": "2000-01-01", "level": "2"},
        {"id": "q5", "query": "fridays", "context_type": "memory"},
    ]
    result = ov("find", "--batch", _batch_file(tmp_path, questions))
    assert result.code == 0 and result.err == "", result
    answers = _lines(result.out)
    assert [a["id"] for a in answers] == ["q1", 2, "q3", "q4", "q5"]
    assert answers[0]["result"] == _single(ov, "find", "how do users authenticate")
    assert answers[1]["result"] == _single(ov, "find", "docker", "-u", f"{H}/deploy", "-n", "1", "-t", "0")
    assert answers[2]["result"] == _single(ov, "find", "kubernetes helm", "--mode", "keyword", "--explain")
    assert answers[3]["result"] == _single(ov, "find", "deploy", "-u", H, "--after", "2000-01-01", "-L", "2")
    assert answers[4]["result"]["memories"] and not answers[4]["result"]["resources"]


def test_the_flags_are_every_lines_defaults_and_a_line_overrides_them(ov: Cli, tmp_path: Path) -> None:
    questions = [{"id": "a", "query": "docker"}, {"id": "b", "query": "docker", "limit": 3}]
    result = ov("find", "--batch", _batch_file(tmp_path, questions), "-n", "1", "-u", H, "-o", "jsonl")
    assert result.code == 0, result
    first, second = _lines(result.out)
    assert first["result"] == _single(ov, "find", "docker", "-n", "1", "-u", H)
    assert second["result"] == _single(ov, "find", "docker", "-n", "3", "-u", H)


def test_stdin_is_read_with_a_dash(ov: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    text = '{"id": "x", "query": "docker"}\n\n{"id": "y", "query": "authentication"}\n'
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    result = ov("find", "--batch", "-")
    assert result.code == 0, result
    assert [a["id"] for a in _lines(result.out)] == ["x", "y"]


def test_context_batch(ov: Cli, tmp_path: Path) -> None:
    questions = [{"id": 1, "query": "how do users sign in", "budget": 120}, {"id": 2, "query": "docker"}]
    result = ov("context", "--batch", _batch_file(tmp_path, questions), "--budget", "300")
    assert result.code == 0, result
    first, second = _lines(result.out)
    assert first["result"] == _single(ov, "context", "how do users sign in", "--budget", "120")
    assert second["result"] == _single(ov, "context", "docker", "--budget", "300")
    assert first["result"]["used_tokens"] <= 120


BAD_LINES = [
    ("not json", None, "Line 2 is not JSON"),
    ('["a", "list"]', None, "Line 2 is not an object"),
    (b"\xff\xfe", None, "Line 2 is not UTF-8"),
    ({"query": "no id"}, None, "Line 2 has no id"),
    ({"id": True, "query": "a bool id"}, None, "Line 2 has no id"),
    ({"id": "n", "limit": 3}, "n", "Line 2: no query"),
    ({"id": "u", "query": "x", "bogus": 1}, "u", "Line 2: unknown option 'bogus'"),
    ({"id": "t", "query": "x", "limit": "many"}, "t", "Line 2: 'limit' must be a whole number"),
    ({"id": "f", "query": "x", "explain": 1}, "f", "Line 2: 'explain' must be true or false"),
    ({"id": "d", "query": "x", "uri": H, "target_uri": H}, "d", "Line 2: 'target_uri' and another name of it"),
    ({"id": "a", "query": "x", "after": "yesterday-ish"}, "a", "Invalid since value 'yesterday-ish'"),
    ({"id": "p", "query": "x", "uri": "viking://user/bob"}, "p", "viking://user/bob"),
    ({"id": "l", "query": "x", "limit": -1}, "l", "limit"),
]


@pytest.mark.parametrize(("line", "ident", "needle"), BAD_LINES, ids=[b[2][:30] for b in BAD_LINES])
def test_a_bad_line_is_an_error_line_and_the_others_are_answered(
    ov: Cli, tmp_path: Path, hash_conf: Path, line: Any, ident: Any, needle: str
) -> None:
    path = tmp_path / "questions.jsonl"
    bad = line if isinstance(line, bytes) else (line if isinstance(line, str) else json.dumps(line)).encode()
    path.write_bytes(b'{"id": "ok1", "query": "docker"}\n' + bad + b'\n{"id": "ok2", "query": "docker"}\n')
    before = snapshot(tmp_path / "store")
    result = ov("find", "--batch", path)
    assert result.code == 2 and result.err == "", result
    first, error, last = _lines(result.out)
    assert first["id"] == "ok1" and last["id"] == "ok2" and first["result"] == last["result"]
    assert set(error) == {"id", "error"} and error["id"] == ident, error
    assert error["error"]["code"] in ("INVALID_ARGUMENT", "PERMISSION_DENIED"), error
    assert needle in error["error"]["message"] and error["error"]["details"]["line"] == 2, error
    assert snapshot(tmp_path / "store") == before


def test_the_exit_status_is_the_worst_lines(ov: Cli, tmp_path: Path) -> None:
    failing = [{"id": "ok", "query": "docker"}, {"id": "gone", "query": "docker", "as_of": "no-such-snapshot"}]
    result = ov("find", "--batch", _batch_file(tmp_path, failing))
    assert result.code == 1, result
    assert _lines(result.out)[1]["error"]["code"] == "NOT_FOUND"
    worse = ov("find", "--batch", _batch_file(tmp_path, [*failing, "{"]))
    assert worse.code == 2 and len(_lines(worse.out)) == 3, worse


def test_what_is_not_a_batch_is_a_usage_error(ov: Cli, tmp_path: Path) -> None:
    path = _batch_file(tmp_path, [{"id": 1, "query": "docker"}])
    for argv, needle in [
        (("find", "q", "--batch", path), "not both"),
        (("find",), "Missing argument 'query': give a QUERY, or --batch FILE"),
        (("context",), "Missing argument 'query': give a QUERY, or --batch FILE"),
        (("find", "--batch", tmp_path / "missing.jsonl"), "Cannot read the batch file"),
        (("find", "--batch", path, "-o", "csv"), "--batch prints JSONL"),
    ]:
        machine = ov(*argv, "-o", "jsonl") if "-o" not in argv else ov(*argv)
        assert machine.code == 2 and machine.out == "", (argv, machine)
        assert needle in machine.err, (argv, machine)


def test_one_embedder_answers_the_whole_batch(ov: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Any] = []
    original = embedder_module.make_embedder

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(embedder_module, "make_embedder", counted)
    questions = [{"id": i, "query": f"question number {i}"} for i in range(20)]
    result = ov("find", "--batch", _batch_file(tmp_path, questions))
    assert result.code == 0 and len(_lines(result.out)) == 20
    assert len(made) == 1
