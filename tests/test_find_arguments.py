"""find, search and context hand every argument of theirs to the request, by name.

Each field of :class:`FindArguments` is given a bad value on its own: the error names that
argument, which proves the value reached the checks. A parameter find or search gains is either
a field of the request's arguments or in the named list of those they consume themselves, so a
new one cannot be dropped on the way without a test failing here.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from openviking.contract.interface import OpenVikingClient
from openviking.embedded.client import OpenViking
from openviking.errors import OpenVikingError
from openviking.retrieve.request import FindArguments

# What each method consumes itself instead of putting it in the request, and why.
CONSUMED_BY_THE_METHOD = {
    "find": {
        "include_provenance",  # shapes the result, not the retrieval
        "telemetry",  # likewise
        "explain",  # adds the why of each hit after ranking
        "as_of",  # picks the store version read, before any request
    },
    "search": {"include_provenance", "telemetry", "explain", "as_of", "session", "session_id"},
}

# A value each field refuses, the error's code, and the key its details name.
REFUSED = {
    "query": ("", "INVALID_ARGUMENT", "query"),
    "target_uri": ("http://example.com", "INVALID_URI", "uri"),
    "limit": ("ten", "INVALID_ARGUMENT", "limit"),
    "node_limit": ("ten", "INVALID_ARGUMENT", "node_limit"),
    "score_threshold": ("high", "INVALID_ARGUMENT", "score_threshold"),
    "filter": ({"op": "nearly"}, "INVALID_ARGUMENT", "op"),
    "since": ("last summer", "INVALID_ARGUMENT", "since"),
    "until": ("next summer", "INVALID_ARGUMENT", "until"),
    "time_field": ("born_at", "INVALID_ARGUMENT", "time_field"),
    "level": ("deep", "INVALID_ARGUMENT", "level"),
    "context_type": ("poem", "INVALID_ARGUMENT", "context_type"),
    "tags": ([5], "INVALID_ARGUMENT", "tags"),
    "mode": ("psychic", "INVALID_ARGUMENT", "mode"),
}
FIELDS = [field.name for field in dataclasses.fields(FindArguments)]


def test_every_field_has_a_refused_value() -> None:
    assert sorted(REFUSED) == sorted(FIELDS)


@pytest.mark.parametrize("method", sorted(CONSUMED_BY_THE_METHOD))
@pytest.mark.parametrize("declared_on", [OpenViking, OpenVikingClient])
def test_each_parameter_is_a_request_field_or_consumed_by_name(method: str, declared_on: type) -> None:
    parameters = set(inspect.signature(getattr(declared_on, method)).parameters) - {"self"}
    assert parameters - set(FIELDS) == CONSUMED_BY_THE_METHOD[method]
    assert set(FIELDS) <= parameters


@pytest.mark.parametrize("method", ["find", "search"])
@pytest.mark.parametrize("name", FIELDS)
def test_a_bad_value_of_each_argument_reaches_the_checks(hash_client: Any, method: str, name: str) -> None:
    value, code, detail = REFUSED[name]
    arguments: dict[str, Any] = {"query": "authentication", name: value}
    with pytest.raises(OpenVikingError) as info:
        getattr(hash_client, method)(**arguments)
    assert info.value.code == code
    assert detail in info.value.details, info.value.details


@pytest.mark.parametrize("name", ["query", "target_uri"])
def test_context_hands_its_query_and_targets_to_the_request(hash_client: Any, name: str) -> None:
    value, code, detail = REFUSED[name]
    arguments: dict[str, Any] = {"query": "authentication", name: value}
    with pytest.raises(OpenVikingError) as info:
        hash_client.context(**arguments)
    assert info.value.code == code
    assert detail in info.value.details
