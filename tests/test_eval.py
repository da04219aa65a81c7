"""``eval``: the guide's golden file scored with the bundled model, the user guide's CI job run
as written, a broken model caught by the gates with the worse queries named, a stale golden
file, bad input on every face, and eval as of a snapshot."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from helpers import (
    GUIDE_EN,
    GUIDE_ZH,
    HASH_CONF,
    REPO,
    Cli,
    cli_error,
    cli_unharmed,
    hash_config,
    write_config,
)
from ovserver import body_of, error_of, handbook_store, headers, thread_server
from servers import StubServer, random_embeddings

import openviking as ov
from openviking.contract.evaluation import EvalResult, compare, failures, junit_xml
from openviking.errors import InvalidArgumentError

GOLDEN = REPO / "tests" / "data" / "guide-golden.jsonl"
RECIPE = GUIDE_EN / "09-ci.md"
H = "viking://resources/handbook"
HANDBOOK_GOLDEN = [
    {"id": "auth", "query": "how do users authenticate", "relevant": [f"{H}/auth.md"], "uri": H},
    {"id": "docker", "query": "run the service in containers with docker", "relevant": [f"{H}/deploy/docker.md"]},
    {"id": "helm", "query": "kubernetes helm chart", "relevant": {f"{H}/deploy/kubernetes.md": 2, f"{H}/deploy": 1}},
]


def golden_lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()]


# ----------------------------------------------------------------------------- the guide, for real
def test_the_guide_golden_file_passes_with_the_bundled_model(guide_store: tuple[Any, Any]) -> None:
    client, _ = guide_store
    result = client.evaluate(golden_lines())
    assert result.warnings == []  # every relevant URI is in the store
    assert result.count == len(golden_lines()) and result.k == 10 and result.searched_with == "find"
    assert result.metrics["ndcg@10"] >= 0.9 and result.metrics["hit@1"] >= 0.85, result.metrics
    # Each language is answered, and the Chinese questions about English pages too.
    groups = {
        "Chinese": [q for q in result.queries if q.id.startswith("zh-") and not q.id.endswith("-to-en")],
        "Chinese about English pages": [q for q in result.queries if q.id.endswith("-to-en")],
    }
    for name, asked in groups.items():
        assert len(asked) >= 4 and sum(q.metrics["ndcg@10"] for q in asked) / len(asked) >= 0.8, name


def recipe_steps() -> dict[str, str]:
    """The shell of each named step of the guide's GitHub Actions job."""
    text = RECIPE.read_text(encoding="utf-8")
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    job = yaml.safe_load(block)["jobs"]["eval"]
    assert job["env"]["GOLDEN"] == "tests/data/guide-golden.jsonl"
    return {step["name"]: step["run"] for step in job["steps"] if "run" in step and "name" in step}


def test_the_guides_ci_job_runs_as_written(guide_store: tuple[Any, Any], tmp_path: Path) -> None:
    """The job's own steps, in bash, on this repository's docs: adding them again changes
    nothing, the first run passes its floors, and a second compares with the first."""
    client, _ = guide_store
    steps = recipe_steps()
    assert set(steps) >= {"Install openviking", "Add the docs", "Score retrieval", "Keep main's run as the baseline"}
    store = tmp_path / "store"  # a copy: the job's add records this checkout as the pages' source
    shutil.copytree(client.store_path, store)
    work = tmp_path / "checkout"
    (work / "tests" / "data").mkdir(parents=True)
    (work / "docs").mkdir()
    (work / "docs" / "en").symlink_to(GUIDE_EN)
    (work / "docs" / "zh").symlink_to(GUIDE_ZH)
    shutil.copy(GOLDEN, work / "tests" / "data" / GOLDEN.name)
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "OPENVIKING_STORE": str(store),
        "GOLDEN": "tests/data/guide-golden.jsonl",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("OPENVIKING_CONFIG_FILE", None)

    def step(name: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-euo", "pipefail", "-c", steps[name]],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    added = step("Add the docs")
    assert added.returncode == 0, added.stderr
    assert added.stdout.count("Added 0 · ") == 2 and added.stdout.count(" · removed 0 · ") == 2, added.stdout
    first = step("Score retrieval")
    assert first.returncode == 0, first.stderr
    run = json.loads((work / "eval.json").read_text())["result"]
    assert run["comparison"] is None and run["failures"] == [] and run["count"] == len(golden_lines())
    suite = ET.parse(work / "eval.xml").getroot()
    cases = suite.findall(".//testcase")
    assert len([c for c in cases if c.get("classname") == "openviking.eval.queries"]) == len(golden_lines())
    assert not suite.findall(".//failure")

    assert step("Keep main's run as the baseline").returncode == 0
    second = step("Score retrieval")
    assert second.returncode == 0, second.stderr
    again = json.loads((work / "eval.json").read_text())["result"]
    assert again["metrics"] == run["metrics"]
    assert {
        m["metric"]: (m["difference"], m["low"], m["high"]) for m in again["comparison"]["metrics"]
    } == dict.fromkeys(run["metrics"], (0.0, 0.0, 0.0))


def test_a_broken_model_fails_the_gates_with_the_worse_queries_named(
    cli: Cli, guide_store: tuple[Any, Any], tmp_path: Path
) -> None:
    client, _ = guide_store
    baseline = tmp_path / "main.json"
    baseline.write_text(json.dumps({"result": client.evaluate(golden_lines()).to_dict()}))
    base = tmp_path / "random"
    with StubServer(random_embeddings()) as stub:
        dense = {"provider": "openai", "model": "broken", "api_base": stub.url + "/v1", "api_key": "k", "dimension": 64}
        conf = write_config(base / "ov.conf", {"embedding": {"dense": dense}})
        store = base / "store"
        for folder, uri in ((GUIDE_EN, "viking://resources/guide"), (GUIDE_ZH, "viking://resources/guide-zh")):
            assert cli("add-resource", folder, "--to", uri, "--store", store, "--config", conf).code == 0
        gates = ["--baseline", baseline, "--fail-on-regress", "0.02", "--fail-under", "ndcg@10=0.9"]
        junit = tmp_path / "eval.xml"
        ran = cli("eval", GOLDEN, *gates, "--junit", junit, "--store", store, "--config", conf, "-o", "json")
        table = cli("eval", GOLDEN, *gates, "--store", store, "--config", conf)

    assert ran.code == 1, ran.err
    result = ran.json()["result"]
    ndcg = next(m for m in result["comparison"]["metrics"] if m["metric"] == "ndcg@10")
    assert ndcg["difference"] < -0.05 and ndcg["low"] <= ndcg["difference"] <= ndcg["high"] < 0, ndcg
    assert result["failures"][0].startswith(f"ndcg@10 is {result['metrics']['ndcg@10']:.4f}, under 0.9")
    assert any(f.startswith("ndcg@10 fell by ") and "more than 0.02" in f for f in result["failures"])
    worse = result["comparison"]["worse"]
    assert worse and all(w["current"] < w["baseline"] for w in worse)
    assert [w["baseline"] - w["current"] for w in worse] == sorted((w["baseline"] - w["current"] for w in worse),
                                                                    reverse=True)  # fmt: skip

    assert table.code == 1
    assert "ndcg@10" in table.out and worse[0]["id"] in table.out and worse[0]["query"][:30] in table.out
    failed = [c for c in ET.parse(junit).getroot().iter("testcase") if c.find("failure") is not None]
    assert {c.get("name") for c in failed} >= {f"{worse[0]['id']}: {worse[0]['query']}"}


# ----------------------------------------------------------------------------- the handbook, cheap
def test_eval_on_a_store_with_gates_met(handbook_ov: Cli, tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(json.dumps(q) for q in HANDBOOK_GOLDEN) + "\n\n")
    ran = handbook_ov("eval", golden, "--fail-under", "hit@1=0.3", "-k", "5", "-o", "json")
    assert ran.code == 0, ran.err
    result = ran.json()["result"]
    assert result["k"] == 5 and set(result["metrics"]) == {"ndcg@5", "mrr@5", "recall@5", "hit@1"}
    assert [q["id"] for q in result["queries"]] == ["auth", "docker", "helm"]
    assert result["queries"][0]["ranks"] == {f"{H}/auth.md": 1}
    lines = handbook_ov("eval", golden, "-o", "jsonl").json_lines()
    assert [line["id"] for line in lines] == ["auth", "docker", "helm"]  # one line a query
    piped = handbook_ov("eval", "-", "-o", "json")  # stdin: the cli fixture's is empty
    cli_error(piped, "INVALID_ARGUMENT", 2)


def test_a_stale_golden_file_is_a_warning_naming_the_uri(handbook_ov: Cli, tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    stale = {"id": "gone", "query": "cooking pancakes", "relevant": [f"{H}/notes/gone.md"]}
    golden.write_text(json.dumps(stale) + "\n")
    ran = handbook_ov("eval", golden)
    assert ran.code == 0
    assert f"Warning: query gone: {H}/notes/gone.md is not in the store (a stale golden file?)" in ran.err
    data = handbook_ov("eval", golden, "-o", "json").json()
    assert data["result"]["queries"][0]["missing"] == [f"{H}/notes/gone.md"]


def bad_golden(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("golden", "extra", "code", "status", "needle"),
    [
        (
            '{"query": "a", "relevant": ["viking://resources/x"]}\nnot json\n',
            [],
            "INVALID_ARGUMENT",
            2,
            "bad.jsonl:2 is not JSON",
        ),
        (
            '{"query": "a", "relevant": []}\n',
            [],
            "INVALID_ARGUMENT",
            2,
            "bad.jsonl:1: relevant must be a non-empty list",
        ),
        (
            '\n{"query": "a", "relevant": ["viking://resources/x"]}\n{"query": "b"}\n',
            [],
            "INVALID_ARGUMENT",
            2,
            "bad.jsonl:3: relevant must be a non-empty list",
        ),
        (
            '{"id": 7, "query": "a", "relevant": "viking://resources/x"}\n{"id": "7", "query": "b", "relevant": "x"}\n',
            [],
            "ALREADY_EXISTS",
            1,
            "bad.jsonl:2: id '7' is the id of an earlier query",
        ),
        (
            '{"query": "a", "relevant": ["viking://resources/x"], "weight": 2}\n',
            [],
            "INVALID_ARGUMENT",
            2,
            "bad.jsonl:1: has unknown key 'weight'",
        ),
        (
            '{"query": "", "relevant": ["viking://resources/x"]}\n',
            [],
            "INVALID_ARGUMENT",
            2,
            "bad.jsonl:1: query must be a non-empty string",
        ),
        (
            '{"query": "a", "relevant": {"viking://resources/x": -1}}\n',
            [],
            "INVALID_ARGUMENT",
            2,
            "bad.jsonl:1: relevant['viking://resources/x'] must be a grade above 0",
        ),
        ("\n\n", [], "INVALID_ARGUMENT", 2, "holds no query"),
        (
            '{"query": "a", "relevant": ["viking://resources/x"]}\n',
            ["--fail-under", "ndcg@20=0.5"],
            "INVALID_ARGUMENT",
            2,
            "--fail-under names 'ndcg@20', which this run does not measure",
        ),
        (
            '{"query": "a", "relevant": ["viking://resources/x"]}\n',
            ["--fail-under", "ndcg@10"],
            "INVALID_ARGUMENT",
            2,
            "--fail-under takes METRIC=VALUE",
        ),
        (
            '{"query": "a", "relevant": ["viking://resources/x"]}\n',
            ["--fail-on-regress", "0.02"],
            "INVALID_ARGUMENT",
            2,
            "--fail-on-regress needs --baseline",
        ),
        (
            '{"query": "a", "relevant": ["viking://resources/x"]}\n',
            ["--baseline", "/nonexistent/main.json"],
            "NOT_FOUND",
            1,
            "No baseline at /nonexistent/main.json",
        ),
        (
            '{"query": "a", "relevant": ["viking://resources/x"]}\n',
            ["--as-of", "nightly"],
            "NOT_FOUND",
            1,
            "No snapshot named nightly",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None,
)
def test_cli_bad_eval_input(
    handbook_ov: Cli, tmp_path: Path, golden: str, extra: list[str], code: str, status: int, needle: str
) -> None:
    cli_unharmed(handbook_ov, tmp_path / "store", ["eval", bad_golden(tmp_path, golden), *extra], code, status, needle)


def test_a_baseline_that_is_not_an_eval_is_refused(handbook_ov: Cli, tmp_path: Path) -> None:
    golden = bad_golden(tmp_path, json.dumps(HANDBOOK_GOLDEN[0]) + "\n")
    other = tmp_path / "find.json"
    other.write_text(handbook_ov("find", "docker", "-o", "json").out)
    error = cli_error(handbook_ov("eval", golden, "--baseline", other, "-o", "json"), "INVALID_ARGUMENT", 2)
    assert error["message"] == f"The baseline {other} is not the JSON of an eval"
    assert error["hint"] == "Save a run with: openviking eval golden.jsonl -o json > baseline.json"
    missing = cli_error(handbook_ov("eval", tmp_path / "none.jsonl", "-o", "json"), "NOT_FOUND", 1)
    assert missing["message"] == f"No golden file at {tmp_path / 'none.jsonl'}"


def test_eval_as_of_a_snapshot_scores_the_tagged_state(tmp_path: Path, en_tree: Path) -> None:
    with ov.OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        client.add_resource(en_tree, to=H)
        before = client.evaluate(HANDBOOK_GOLDEN)
        client.snapshot_tag("release")
        client.rm(f"{H}/auth.md")
        with pytest.warns(ov.OpenVikingWarning, match="^query auth: .* is not in the store"):
            now = client.evaluate(HANDBOOK_GOLDEN)
        assert now.warnings == [f"query auth: {H}/auth.md is not in the store (a stale golden file?)"]
        assert now.metrics["hit@1"] < before.metrics["hit@1"]
        pinned = client.evaluate(HANDBOOK_GOLDEN, as_of="release")
        assert pinned.as_of == "snapshot release" and pinned.warnings == []
        assert [(q.id, q.found, q.metrics) for q in pinned.queries] == [
            (q.id, q.found, q.metrics) for q in before.queries
        ]


# ----------------------------------------------------------------------------- the other faces
def test_eval_over_http_and_the_http_sdk_answers_as_embedded(tmp_path: Path) -> None:
    store = handbook_store(tmp_path)
    golden = [{**q, "relevant": q["relevant"]} for q in HANDBOOK_GOLDEN]
    for query in golden:  # the handbook is at viking://resources/docs on this store
        query["relevant"] = _moved(query["relevant"])
        query.pop("uri", None)
    with ov.OpenViking(path=store, config=dict(HASH_CONF)) as embedded:
        here = _stable(embedded.evaluate(golden, 5).to_dict())
    with thread_server(HASH_CONF, store) as url:
        over_http = body_of(httpx.post(url + "/api/v1/eval", json={"queries": golden, "k": 5}, headers=headers(None)))
        assert _stable(over_http) == here
        error = error_of(httpx.post(url + "/api/v1/eval", json={"queries": [{"query": "x"}]}), 400, "INVALID_ARGUMENT")
        assert error["message"] == "queries[0].relevant must be a non-empty list of URIs, or an object of URI: grade"
        with ov.SyncHTTPClient(url) as remote:
            assert _stable(remote.evaluate(golden, 5).to_dict()) == here
            with pytest.raises(InvalidArgumentError, match="k must be"):
                remote.evaluate(golden, 0)


def _moved(relevant: Any) -> Any:
    docs = "viking://resources/docs"
    if isinstance(relevant, dict):
        return {uri.replace(H, docs): grade for uri, grade in relevant.items()}
    return [uri.replace(H, docs) for uri in relevant]


def _stable(value: Any) -> Any:
    """A result without the seconds each query took."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


# ----------------------------------------------------------------------------- the gates alone
def _result(ndcgs: list[float]) -> EvalResult:
    queries = [
        {"id": str(i), "query": f"q{i}", "k": 10, "relevant": {"viking://resources/a": 1.0}, "found": [],
         "ranks": {}, "metrics": {"ndcg@10": v, "mrr@10": v, "recall@10": v, "hit@1": float(v > 0.5)}}
        for i, v in enumerate(ndcgs)
    ]  # fmt: skip
    means = {name: sum(q["metrics"][name] for q in queries) / len(queries) for name in queries[0]["metrics"]}
    return EvalResult.from_dict({"metrics": means, "count": len(queries), "k": 10, "searched_with": "find",
                                 "queries": queries})  # fmt: skip


def test_a_small_noisy_drop_does_not_fail_but_a_clear_one_does() -> None:
    baseline = _result([1.0, 0.8, 0.6, 0.9, 1.0, 0.7, 0.5, 1.0, 0.9, 0.8] * 3)
    noisy = _result(
        [1.0, 0.8, 0.6, 0.9, 1.0, 0.7, 0.5, 1.0, 0.9, 0.8] * 2 + [0.9, 0.8, 0.6, 0.9, 1.0, 0.8, 0.5, 1.0, 0.8, 0.8]
    )
    clear = _result([0.4, 0.3, 0.2, 0.5, 0.6, 0.3, 0.1, 0.5, 0.4, 0.3] * 3)
    small = compare(noisy, baseline)
    assert failures(noisy, fail_under={}, comparison=small, fail_on_regress=0.02) == []
    assert compare(noisy, baseline).to_dict() == small.to_dict()  # the bootstrap's seed is fixed
    big = compare(clear, baseline)
    said = failures(clear, fail_under={"ndcg@10": 0.5}, comparison=big, fail_on_regress=0.02)
    assert said[0] == f"ndcg@10 is {clear.metrics['ndcg@10']:.4f}, under 0.5"
    assert len(said) == 1 + 4  # the floor, and every metric fell
    assert len(big.worse) == 30 and {w.id for w in big.worse[:3]} == {"0", "10", "20"}  # fell by 0.6, the most
    suite = ET.fromstring(junit_xml(clear, said, big))
    assert suite.tag == "testsuite" and suite.get("tests") == "31" and suite.get("failures") == "31"
    gates = suite.find("testcase[@name='gates']/failure")
    assert gates is not None and gates.text == "\n".join(said)
