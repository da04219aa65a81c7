"""The OpenAPI document is true: schemathesis sends every route requests made from it (valid
ones and broken ones) and checks each answer against it: a status it lists, the content type
and the body's schema it gives, never a 500.

The server has keys (the requests carry the root key; schemathesis also sends some without it,
which must be 401) and the hash embedder, over a small handbook; the paths a request may add
are bounded to an empty folder (``server.path_roots``), so that a generated path never indexes
the machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from helpers import HASH_CONF
from hypothesis import HealthCheck, settings
from ovserver import ROOT_KEY, handbook_store, keyed_config, thread_server

# Each operation gets this many generated requests: a bounded run, as CI affords.
EXAMPLES = 25
# A request the schema allows may still be refused (400) for what no JSON Schema says: a
# viking:// URI that names no scope, a regular expression that does not compile, a time that
# is not one. Every other check runs.
SEMANTIC = [schemathesis.checks.positive_data_acceptance]


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    base = tmp_path_factory.mktemp("openapi")
    allowed = base / "allowed"
    allowed.mkdir()
    raw = keyed_config(path_roots=[str(allowed)])
    with thread_server(raw, handbook_store(base)) as url:
        yield schemathesis.openapi.from_url(f"{url}/openapi.json")


def test_every_route_answers_as_the_document_says(api_schema: Any) -> None:
    from hypothesis import given

    failures: list[str] = []
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 30
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
        def answers_as_documented(case: Any) -> None:
            case.call_and_validate(headers={"X-API-Key": ROOT_KEY}, excluded_checks=SEMANTIC)

        try:
            answers_as_documented()
        except Exception as exc:  # every operation is tried; all that failed are named at the end
            failures.append(f"{operation.label}: {type(exc).__name__}: {str(exc)[:1500]}")
    assert failures == [], "\n\n".join(failures)


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
        document = httpx.get(f"{url}/openapi.json").json()
        answers = document["paths"]["/api/v1/search/search"]["post"]["responses"]["200"]
        schema = answers["content"]["application/json"]["schema"]
        for mode in ("context", "hybrid"):
            body = {"query": "how do users authenticate", "mode": mode}
            answer = httpx.post(f"{url}/api/v1/search/search", json=body, headers={"X-API-Key": ROOT_KEY})
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
