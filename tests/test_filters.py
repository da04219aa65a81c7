"""The upstream filter DSL turned into LanceDB prefilters, checked through find() on a real store.

The store holds a few files and their directories (hash embedder). Every find here uses
``score_threshold=0`` and a large limit in hybrid mode, where every candidate scores above 0, so
the result is exactly the set of records the filter lets through (deduplicated by record URI).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from helpers import hash_config, make_tree, raw_uri, set_mtime, snapshot

from openviking.embedded.client import OpenViking
from openviking.errors import InvalidArgumentError

R = "viking://resources"
FX_FILES = {f"{R}/fx/alpha.md", f"{R}/fx/sub/beta.md", f"{R}/fx/sub/deep/gamma.md"}
FX_DIRS = {f"{R}/fx", f"{R}/fx/sub", f"{R}/fx/sub/deep"}
OTHER = {f"{R}/other", f"{R}/other/delta.md"}
MEMORY = {
    "viking://user/default/memories",
    "viking://user/default/memories/prefs",
    "viking://user/default/memories/prefs/likes.md",
}
SKILL = {"viking://agent/skills", "viking://agent/skills/deploy", "viking://agent/skills/deploy/SKILL.md"}
USER_ROOT = {"viking://user/default"}
FILES = FX_FILES | {
    f"{R}/other/delta.md",
    "viking://user/default/memories/prefs/likes.md",
    "viking://agent/skills/deploy/SKILL.md",
}
EVERYTHING = FX_FILES | FX_DIRS | OTHER | MEMORY | SKILL | USER_ROOT


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OpenViking, Path]]:
    base = tmp_path_factory.mktemp("filters")
    fx = make_tree(
        base / "fx",
        {
            "alpha.md": "# Alpha\n\nAlpha is about authentication tokens.\n",
            "sub/beta.md": "# Beta\n\nBeta is about deployment with containers.\n",
            "sub/deep/gamma.md": "# Gamma\n\nGamma is about monitoring dashboards.\n",
        },
    )
    other = make_tree(base / "other", {"delta.md": "# Delta\n\nDelta is about billing invoices.\n"})
    prefs = make_tree(base / "prefs", {"likes.md": "# Likes\n\nThe user likes dark mode.\n"})
    deploy = make_tree(base / "deploy", {"SKILL.md": "# Deploy skill\n\nDeploys the service to production.\n"})
    set_mtime(fx / "alpha.md", datetime(2020, 1, 1, 12, tzinfo=UTC))
    set_mtime(fx / "sub/beta.md", datetime(2024, 6, 1, 12, tzinfo=UTC))
    set_mtime(fx / "sub/deep/gamma.md", datetime(2025, 6, 1, 12, tzinfo=UTC))
    set_mtime(other / "delta.md", datetime(2023, 1, 1, 12, tzinfo=UTC))
    set_mtime(prefs / "likes.md", datetime(2022, 1, 1, 12, tzinfo=UTC))
    set_mtime(deploy / "SKILL.md", datetime(2021, 1, 1, 12, tzinfo=UTC))
    client = OpenViking(path=base / "store", config=hash_config())
    client.add_resource(fx, to=f"{R}/fx", tags=["env=prod"])
    client.add_resource(other, to=f"{R}/other", tags=["env=dev", "team=search"])
    client.add_resource(prefs, to="viking://user/default/memories/prefs")
    client.add_resource(deploy, to="viking://agent/skills/deploy")
    yield client, base / "store"
    client.close()


def found(client: OpenViking, filter_: Any = None, **kwargs: Any) -> list[str]:
    result = client.find("what is this about", limit=500, score_threshold=0, filter=filter_, **kwargs)
    return [hit.uri for hit in result]


def raw(client: OpenViking, filter_: Any = None, **kwargs: Any) -> set[str]:
    uris = [raw_uri(u) for u in found(client, filter_, **kwargs)]
    assert len(uris) == len(set(uris)), f"a record URI came back twice: {uris}"
    return set(uris)


def test_no_filter_sees_everything(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    assert raw(client) == EVERYTHING
    assert raw(client, {}) == EVERYTHING
    assert raw(client, "") == EVERYTHING
    assert raw(client, "  ") == EVERYTHING


# ----------------------------------------------------------------------------- must / must_not
def test_must_level(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    assert raw(client, {"op": "must", "field": "level", "conds": [2]}) == FILES
    abstracts = found(client, {"op": "must", "field": "level", "conds": [0]})
    assert abstracts and all(u.endswith("/.abstract.md") for u in abstracts)
    assert {raw_uri(u) for u in abstracts} == EVERYTHING - FILES


def test_must_context_type(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    assert raw(client, {"op": "must", "field": "context_type", "conds": ["memory"]}) == MEMORY
    assert raw(client, {"op": "must", "field": "context_type", "conds": ["memory", "skill"]}) == MEMORY | SKILL


def test_must_not(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    assert raw(client, {"op": "must_not", "field": "context_type", "conds": ["resource"]}) == MEMORY | SKILL
    assert raw(client, {"op": "must_not", "field": "level", "conds": [0, 1]}) == FILES


def test_must_tags_any_of(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    prod = FX_FILES | FX_DIRS
    assert raw(client, {"op": "must", "field": "search_tags", "conds": ["env=prod"]}) == prod
    assert raw(client, {"op": "must", "field": "tags", "conds": ["ENV=Prod "]}) == prod  # normalised like tags
    assert raw(client, {"op": "must", "field": "search_tags", "conds": ["env=prod", "env=dev"]}) == prod | OTHER
    assert raw(client, {"op": "must_not", "field": "search_tags", "conds": ["env=prod"]}) == EVERYTHING - prod


# ----------------------------------------------------------------------------- and / or
def test_and(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    node = {
        "op": "and",
        "conds": [
            {"op": "must", "field": "level", "conds": [2]},
            {"op": "must", "field": "context_type", "conds": ["resource"]},
        ],
    }
    assert raw(client, node) == FX_FILES | {f"{R}/other/delta.md"}


def test_or(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    node = {
        "op": "or",
        "conds": [
            {"op": "must", "field": "context_type", "conds": ["memory"]},
            {"op": "must", "field": "search_tags", "conds": ["team=search"]},
        ],
    }
    assert raw(client, node) == MEMORY | OTHER


def test_nested_and_or(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    node = {
        "op": "and",
        "conds": [
            {"op": "must", "field": "level", "conds": [2]},
            {
                "op": "or",
                "conds": [
                    {"op": "must", "field": "context_type", "conds": ["skill"]},
                    {"op": "must", "field": "search_tags", "conds": ["env=dev"]},
                ],
            },
        ],
    }
    assert raw(client, node) == {"viking://agent/skills/deploy/SKILL.md", f"{R}/other/delta.md"}


def test_empty_and_matches_all_empty_or_matches_none(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    assert raw(client, {"op": "and", "conds": []}) == EVERYTHING
    assert raw(client, {"op": "or", "conds": []}) == set()


# ----------------------------------------------------------------------------- range / range_out
def test_range_on_level(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    upper = found(client, {"op": "range", "field": "level", "gte": 1})
    # L1 beats nothing here but dedupe keeps one record per directory: never an .abstract.md
    assert {raw_uri(u) for u in upper} == EVERYTHING
    assert not any(u.endswith("/.abstract.md") for u in upper)
    lower = found(client, {"op": "range", "field": "level", "lt": 1})
    assert lower and all(u.endswith("/.abstract.md") for u in lower)
    middle = found(client, {"op": "range", "field": "level", "gt": 0, "lte": 1})
    assert middle and all(u.endswith("/.overview.md") for u in middle)


def test_range_out_is_the_negation(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    outside = found(client, {"op": "range_out", "field": "level", "gte": 1})
    assert sorted(outside) == sorted(found(client, {"op": "range", "field": "level", "lt": 1}))
    assert raw(client, {"op": "range_out", "field": "level", "lte": 1}) == FILES


def test_range_on_a_time_field(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    node = {
        "op": "and",
        "conds": [
            {"op": "must", "field": "level", "conds": [2]},
            {"op": "range", "field": "updated_at", "gte": "2024-01-01T00:00:00Z"},
        ],
    }
    assert raw(client, node) == {f"{R}/fx/sub/beta.md", f"{R}/fx/sub/deep/gamma.md"}


# ----------------------------------------------------------------------------- time_range
def files_in(client: OpenViking, time_node: dict[str, Any]) -> set[str]:
    return raw(client, {"op": "and", "conds": [{"op": "must", "field": "level", "conds": [2]}, time_node]})


def test_time_range_updated_at(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    newer = files_in(client, {"op": "time_range", "field": "updated_at", "gte": "2024-01-01T00:00:00.000Z"})
    assert newer == {f"{R}/fx/sub/beta.md", f"{R}/fx/sub/deep/gamma.md"}
    older = files_in(client, {"op": "time_range", "field": "updated_at", "lte": "2023-06-01T00:00:00Z"})
    assert older == {
        f"{R}/fx/alpha.md",
        f"{R}/other/delta.md",
        "viking://user/default/memories/prefs/likes.md",
        "viking://agent/skills/deploy/SKILL.md",
    }
    window = files_in(
        client,
        {"op": "time_range", "field": "updated_at", "gte": "2022-06-01T00:00:00Z", "lte": "2024-12-31T23:59:59.999Z"},
    )
    assert window == {f"{R}/other/delta.md", f"{R}/fx/sub/beta.md"}


def test_time_range_bounds_are_inclusive(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    exact = "2024-06-01T12:00:00.000Z"  # beta.md's mtime
    assert files_in(client, {"op": "time_range", "field": "updated_at", "gte": exact, "lte": exact}) == {
        f"{R}/fx/sub/beta.md"
    }
    # the same instant written with another zone
    assert files_in(
        client,
        {
            "op": "time_range",
            "field": "updated_at",
            "gte": "2024-06-01T20:00:00+08:00",
            "lte": "2024-06-01T20:00:00+08:00",
        },
    ) == {f"{R}/fx/sub/beta.md"}


def test_time_range_created_at(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    # created_at is when the files were first added (now), not their mtime
    assert files_in(client, {"op": "time_range", "field": "created_at", "gte": "2026-01-01T00:00:00Z"}) == FILES
    assert files_in(client, {"op": "time_range", "field": "created_at", "lte": "2025-12-31T00:00:00Z"}) == set()


# ----------------------------------------------------------------------------- contains / prefix
def test_contains_on_uri(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    assert raw(client, {"op": "contains", "field": "uri", "substring": "/sub/"}) == {
        f"{R}/fx/sub/beta.md",
        f"{R}/fx/sub/deep",
        f"{R}/fx/sub/deep/gamma.md",
    }


def test_contains_on_tags(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    assert raw(client, {"op": "contains", "field": "search_tags", "substring": "team="}) == OTHER


def test_contains_with_a_quote_is_safe(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    assert raw(client, {"op": "contains", "field": "uri", "substring": "it's'); DROP TABLE records; --"}) == set()
    assert raw(client) == EVERYTHING


def test_prefix_on_uri(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    assert raw(client, {"op": "prefix", "field": "uri", "prefix": f"{R}/fx/sub"}) == {
        f"{R}/fx/sub",
        f"{R}/fx/sub/beta.md",
        f"{R}/fx/sub/deep",
        f"{R}/fx/sub/deep/gamma.md",
    }
    assert raw(client, {"op": "prefix", "field": "context_type", "prefix": "mem"}) == MEMORY


# ----------------------------------------------------------------------------- uri scope with para -d=N
@pytest.mark.parametrize(
    ("para", "expected"),
    [
        (None, FX_DIRS | FX_FILES),
        ("-d=-1", FX_DIRS | FX_FILES),
        ("-d=0", {f"{R}/fx"}),
        ("-d=1", {f"{R}/fx", f"{R}/fx/alpha.md", f"{R}/fx/sub"}),
        ("-d=2", {f"{R}/fx", f"{R}/fx/alpha.md", f"{R}/fx/sub", f"{R}/fx/sub/beta.md", f"{R}/fx/sub/deep"}),
    ],
)
def test_uri_scope_depth(store: tuple[OpenViking, Path], para: str | None, expected: set[str]) -> None:
    client, _ = store
    node: dict[str, Any] = {"op": "must", "field": "uri", "conds": [f"{R}/fx"]}
    if para is not None:
        node["para"] = para
    assert raw(client, node) == expected


def test_uri_scope_several_values_and_aliases(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    node = {"op": "must", "field": "uri", "conds": [f"{R}/fx/sub/deep", f"{R}/other/"]}
    assert raw(client, node) == {f"{R}/fx/sub/deep", f"{R}/fx/sub/deep/gamma.md"} | OTHER
    assert raw(client, {"op": "must", "field": "uri", "conds": ["viking://user/memories"]}) == MEMORY
    assert raw(client, {"op": "must", "field": "uri", "conds": ["viking://~/memories/prefs"]}) == MEMORY - {
        "viking://user/default/memories"
    }


def test_uri_scope_is_segment_aware(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    assert raw(client, {"op": "must", "field": "uri", "conds": [f"{R}/f"]}) == set()


def test_must_not_uri(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    assert raw(client, {"op": "must_not", "field": "uri", "conds": [R]}) == MEMORY | SKILL | USER_ROOT


# ----------------------------------------------------------------------------- combined with the shortcuts
def test_filter_is_anded_with_the_shortcut_parameters(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    node = {"op": "must", "field": "uri", "conds": [R]}
    assert raw(client, node, level=2, tags="env=prod") == FX_FILES
    assert raw(client, node, context_type="memory") == set()
    assert raw(client, node, since="2024-01-01", level=2) == {f"{R}/fx/sub/beta.md", f"{R}/fx/sub/deep/gamma.md"}


def test_filter_as_json_text_equals_the_dict(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    node = {"op": "must", "field": "context_type", "conds": ["skill"]}
    assert found(client, json.dumps(node)) == found(client, node)
    assert raw(client, json.dumps(node)) == SKILL


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("filter_", "needle"),
    [
        ({"op": "xor", "conds": []}, "Unknown filter op 'xor'"),
        ({"op": "MUST", "field": "level", "conds": [2]}, "Unknown filter op 'MUST'"),
        ({"field": "level", "conds": [2]}, "Unknown filter op 'None'"),
        ({"op": "must", "field": "color", "conds": ["red"]}, "Unknown filter field 'color'"),
        ({"op": "range", "field": "_distance", "gte": 0}, "Unknown filter field '_distance'"),
        ({"op": "and", "conds": [{"op": "must", "field": "vector", "conds": [1]}]}, "Unknown filter field 'vector'"),
        ({"op": "or", "conds": [{"op": "nand", "conds": []}]}, "Unknown filter op 'nand'"),
        ("not json", "not valid JSON"),
        ("{'op': 'must'}", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ({"op": "and", "conds": {"op": "must"}}, "'and' needs a list 'conds'"),
        ({"op": "must", "field": "level", "conds": []}, "non-empty list 'conds'"),
        ({"op": "must", "field": "level", "conds": ["2"]}, "'level' conds must be integers"),
        ({"op": "range", "field": "level"}, "needs at least one of gte, gt, lte, lt"),
        ({"op": "time_range", "field": "level", "gte": 1}, "needs a time field"),
        ({"op": "time_range", "field": "updated_at", "gte": "yesterday"}, "'yesterday' is not an ISO 8601 time"),
        ({"op": "contains", "field": "uri"}, "'contains' needs a string 'substring'"),
        ({"op": "must", "field": "uri", "conds": [f"{R}/fx"], "para": "deep"}, "'para' must look like -d=N"),
        ({"op": "must", "field": "uri", "conds": ["viking://nowhere/x"]}, "Invalid URI in filter"),
        ({"op": "must", "field": "uri", "conds": ["resources/fx"]}, "Invalid URI in filter"),
    ],
)
def test_bad_filters(store: tuple[OpenViking, Path], filter_: Any, needle: str) -> None:
    client, path = store
    before_state, before_hits = snapshot(path), found(client)
    with pytest.raises(InvalidArgumentError) as info:
        client.find("anything", filter=filter_)
    assert info.value.code == "INVALID_ARGUMENT"
    assert needle in info.value.message
    assert snapshot(path) == before_state
    assert found(client) == before_hits


def test_unknown_op_and_field_are_named_in_details(store: tuple[OpenViking, Path]) -> None:
    client, _ = store
    with pytest.raises(InvalidArgumentError) as op_info:
        client.find("x", filter={"op": "near", "field": "uri"})
    assert op_info.value.details["op"] == "near"
    assert "must" in op_info.value.details["known_ops"]
    assert op_info.value.hint and "must" in op_info.value.hint
    with pytest.raises(InvalidArgumentError) as field_info:
        client.find("x", filter={"op": "must", "field": "colour", "conds": ["red"]})
    assert field_info.value.details["field"] == "colour"
    assert field_info.value.hint and "context_type" in field_info.value.hint


def test_bad_filter_is_reported_before_the_store_is_opened(tmp_path: Path) -> None:
    client = OpenViking(path=tmp_path / "no-store", config=hash_config())
    with pytest.raises(InvalidArgumentError, match="Unknown filter field 'color'"):
        client.find("x", filter={"op": "must", "field": "color", "conds": ["red"]})
    assert not (tmp_path / "no-store").exists()
