"""The OpenAPI document is true: schemathesis sends every route requests made from it (valid
ones and broken ones) and checks each answer against it with all its checks: a valid request
is taken, a broken one refused, each answer has a status, content type and body the document
gives, never a 500, and a path's 405 names exactly its methods.

The run is schemathesis's command line (``tests/schemathesis.toml``: a fixed seed, derandomized,
one worker, generation that reads the document alone), in a process of its own, so that what it
generates is the same alone and in the suite: in this process, Hypothesis draws on the constants
of whatever modules the tests before loaded. The server has keys (the requests carry the root
key; schemathesis also sends some without it, which must be 401) and the hash embedder, over a
small handbook; the paths a request may add are bounded to an empty folder
(``server.path_roots``), so that a generated path never indexes the machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import HASH_CONF
from ovserver import ROOT_KEY, body_of, error_of, handbook_store, headers, keyed_config, thread_server

CONFIG = Path(__file__).with_name("schemathesis.toml")
# The phases the suite runs: the stateful one draws from true randomness, the coverage one takes minutes.
SUITE_PHASES = ("--phases", "examples,fuzzing")
# A request's time limit: a first search loads the index, longer than httpx's 5 s on a busy machine.
TIMEOUT = 120


def schemathesis(url: str, workdir: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """``schemathesis run`` with CONFIG against the server at ``url``, as the root key."""
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(CONFIG), "--no-color", "run"]
    command += [f"{url}/openapi.json", "--header", f"X-API-Key: {ROOT_KEY}", *options]
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=1800)


def test_every_route_answers_as_the_document_says(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    with thread_server(keyed_config(path_roots=[str(allowed)]), handbook_store(tmp_path)) as url:
        ran = schemathesis(url, tmp_path, *SUITE_PHASES)
    report = ran.stdout + ran.stderr
    assert ran.returncode == 0, report[-12_000:]
    assert " passed" in report and " failed" not in report, report[-3000:]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, Any]]]:
    """A keyed server over the handbook, and its document."""
    base = tmp_path_factory.mktemp("served")
    with thread_server(keyed_config(), handbook_store(base)) as url:
        yield url, httpx.get(f"{url}/openapi.json", timeout=TIMEOUT).json()


def test_a_method_a_path_does_not_take_is_405_naming_every_method_it_does(served: tuple[str, Any]) -> None:
    url, document = served
    for path, concrete in [
        ("/api/v1/sessions", "/api/v1/sessions"),
        ("/api/v1/sessions/{session_id}", "/api/v1/sessions/s1"),
        ("/api/v1/relations/link", "/api/v1/relations/link"),
        ("/api/v1/snapshots", "/api/v1/snapshots"),
    ]:
        documented = sorted(method.upper() for method in document["paths"][path])
        answer = httpx.request("OPTIONS", f"{url}{concrete}", headers=headers(), timeout=TIMEOUT)
        error = error_of(answer, 405, "INVALID_ARGUMENT")
        assert answer.headers["allow"] == ", ".join(documented), (path, answer.headers["allow"])
        assert error["details"]["allowed"] == documented


def test_upstreams_listing_of_skills_is_405_and_says_it_is_not_here(served: tuple[str, Any]) -> None:
    url, document = served
    assert list(document["paths"]["/api/v1/skills"]) == ["post"]
    answer = httpx.get(f"{url}/api/v1/skills", params={"node_limit": 10}, headers=headers(), timeout=TIMEOUT)
    error = error_of(answer, 405, "UNIMPLEMENTED")
    assert answer.headers["allow"] == "POST" and "skill catalogue" in error["message"]
    assert httpx.get(f"{url}/api/v1/skills", headers=headers(None), timeout=TIMEOUT).status_code == 401


def test_a_query_parameter_is_given_once(served: tuple[str, Any]) -> None:
    url, document = served
    twice = [("uri", "viking://resources/docs"), ("uri", "viking://resources")]
    error = error_of(
        httpx.get(f"{url}/api/v1/fs/ls", params=twice, headers=headers(), timeout=TIMEOUT), 400, "INVALID_ARGUMENT"
    )
    assert error["message"] == "uri is given 2 times; it takes one value" and error["details"] == {"parameter": "uri"}
    for path in ("/api/v1/fs/ls", "/api/v1/fs/tree", "/api/v1/content/download"):
        many = [("uri", "viking://resources/docs/auth.md")] * 2
        error_of(httpx.get(f"{url}{path}", params=many, headers=headers(), timeout=TIMEOUT), 400, "INVALID_ARGUMENT")
    # upstream's fields without effect: one value each (any), but its lists
    ls = {p["name"]: p["schema"] for p in document["paths"]["/api/v1/fs/ls"]["get"]["parameters"]}
    assert ls["overview_limit"]["anyOf"][0] == {"type": "string"}
    assert ls["extra_fields"]["type"] == "array" and ls["extra_fields"]["default"] == []
    one = [("uri", "viking://resources/docs"), ("overview_limit", "false")]
    assert httpx.get(f"{url}/api/v1/fs/ls", params=one, headers=headers(), timeout=TIMEOUT).status_code == 200
    error_of(
        httpx.get(f"{url}/api/v1/fs/ls", params=[*one, ("overview_limit", "1")], headers=headers(), timeout=TIMEOUT),
        400,
        "INVALID_ARGUMENT",
    )
    fields = [("uri", "viking://resources/docs"), ("extra_fields", "a"), ("extra_fields", "b")]
    assert httpx.get(f"{url}/api/v1/fs/tree", params=fields, headers=headers(), timeout=TIMEOUT).status_code == 200
    # a list's item is any text, "true" or "null" too: a list is never null
    for text in ("true", "null"):
        listed = [("uri", "viking://resources/docs"), ("extra_fields", text), ("tags", text)]
        assert httpx.get(f"{url}/api/v1/fs/tree", params=listed, headers=headers(), timeout=TIMEOUT).status_code == 200


def test_an_upload_is_any_bytes(served: tuple[str, Any]) -> None:
    # Whatever a client sends as the file part is a file: the document says binary, not a JSON type.
    url, document = served
    form = document["paths"]["/api/v1/resources/temp_upload"]["post"]["requestBody"]["content"]["multipart/form-data"]
    ref = form["schema"]["$ref"].rsplit("/", 1)[1]
    file = document["components"]["schemas"][ref]["properties"]["file"]
    assert file["type"] == "string" and file["format"] == "binary"
    answer = httpx.post(
        f"{url}/api/v1/resources/temp_upload", files={"file": ("file", b"-8957")}, headers=headers(), timeout=TIMEOUT
    )
    assert body_of(answer)["temp_file_id"]


def test_an_integral_json_number_is_an_integer(served: tuple[str, Any]) -> None:
    url, _ = served
    body = {"query": "how do users authenticate", "limit": 2.0}
    assert (
        len(
            body_of(httpx.post(f"{url}/api/v1/search/find", json=body, headers=headers(), timeout=TIMEOUT))["resources"]
        )
        <= 2
    )
    error_of(
        httpx.post(f"{url}/api/v1/search/find", json={**body, "limit": 2.5}, headers=headers(), timeout=TIMEOUT),
        400,
        "INVALID_ARGUMENT",
    )


def test_the_run_is_the_same_wherever_it_runs(tmp_path: Path) -> None:
    """What makes the run above the same in every process: a seed, no randomness of the
    machine's, nothing drawn from the answers (which hold times and generated ids), one worker."""
    from openviking.config import config_from_dict
    from openviking.server.app import create_app

    config = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    assert isinstance(config["seed"], int) and config["workers"] == 1
    assert config["generation"]["deterministic"] is True and config["generation"]["mode"] == "all"
    phases = config["phases"]
    assert "stateful" not in SUITE_PHASES[1].split(",")  # it draws from true randomness
    assert phases["coverage"]["extra-data-sources"]["responses"] is False
    assert phases["fuzzing"]["extra-data-sources"]["responses"] is False
    assert phases["fuzzing"]["error-feedback"]["enabled"] is False
    checks = config["checks"]
    assert checks["enabled"] is True and set(checks) <= {"enabled", "positive_data_acceptance"}
    # A document's examples are drawn with true randomness too: it has none.
    document = create_app(config=config_from_dict(keyed_config()), store=tmp_path / "store").openapi()
    assert not _keys_named(document, {"example", "examples"})


def _keys_named(node: Any, names: set[str]) -> list[str]:
    if isinstance(node, dict):
        return [key for key in node if key in names] + [k for value in node.values() for k in _keys_named(value, names)]
    if isinstance(node, list):
        return [k for item in node for k in _keys_named(item, names)]
    return []


def test_the_document_lists_no_422_and_every_error_status(tmp_path: Path) -> None:
    from openviking.config import config_from_dict
    from openviking.server.app import create_app
    from openviking.server.openapi import ERROR_STATUSES

    document = create_app(config=config_from_dict(dict(HASH_CONF)), store=tmp_path / "store").openapi()
    for path, methods in document["paths"].items():
        for method, described in methods.items():
            statuses = set(described["responses"])
            assert "422" not in statuses, (method, path)
            assert {str(s) for s in ERROR_STATUSES} <= statuses, (method, path)
            assert "200" in statuses and described["responses"]["200"].get("content"), (method, path)
    assert "HTTPValidationError" not in document["components"]["schemas"]
    found = document["paths"]["/api/v1/search/find"]["post"]["responses"]["200"]["content"]["application/json"]
    result = found["schema"]["properties"]["result"]
    assert result["title"] == "FindResult" and result["required"] == ["memories", "resources", "skills", "total"]


def test_the_search_route_is_documented_to_answer_what_its_mode_asks(tmp_path: Path) -> None:
    import httpx
    import jsonschema

    with thread_server(keyed_config(), handbook_store(tmp_path)) as url:
        document = httpx.get(f"{url}/openapi.json", timeout=TIMEOUT).json()
        answers = document["paths"]["/api/v1/search/search"]["post"]["responses"]["200"]
        schema = answers["content"]["application/json"]["schema"]
        for mode in ("context", "hybrid"):
            body = {"query": "how do users authenticate", "mode": mode}
            answer = httpx.post(
                f"{url}/api/v1/search/search", json=body, headers={"X-API-Key": ROOT_KEY}, timeout=TIMEOUT
            )
            assert answer.status_code == 200, answer.text
            jsonschema.validate(answer.json(), schema)
            assert ("entries" in answer.json()["result"]) == (mode == "context")


def test_a_server_without_keys_asks_for_none_in_its_document(tmp_path: Path) -> None:
    from openviking.config import config_from_dict
    from openviking.server.app import create_app

    keyless = create_app(config=config_from_dict(dict(HASH_CONF)), store=tmp_path / "a").openapi()
    assert "securitySchemes" not in keyless["components"]
    assert all("security" not in d for methods in keyless["paths"].values() for d in methods.values())
    keyed = create_app(config=config_from_dict(keyed_config()), store=tmp_path / "b").openapi()
    assert keyed["paths"]["/api/v1/fs/ls"]["get"]["security"]
