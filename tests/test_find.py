"""find(): every parameter, threshold, dedupe, grouping and the shape of FindResult (hash embedder)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    EN_FILES,
    HASH_CONF,
    MATCHED_CONTEXT_KEYS,
    ZH_FILES,
    hash_config,
    hit_uris,
    make_tree,
    raw_uri,
    set_mtime,
    snapshot,
)

from openviking.config import Config, config_from_dict
from openviking.contract.hits import FindResult, MatchedContext
from openviking.embedded.client import OpenViking
from openviking.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    InvalidURIError,
    NotFoundError,
    OpenVikingWarning,
    PermissionDeniedError,
)

R = "viking://resources"
H = f"{R}/handbook"
ITEM_KEYS = MATCHED_CONTEXT_KEYS
MTIMES = {
    "README.md": datetime(2023, 1, 1, 12, tzinfo=UTC),
    "auth.md": datetime(2024, 1, 10, 12, tzinfo=UTC),
    "deploy/docker.md": datetime(2025, 2, 1, 12, tzinfo=UTC),
    "deploy/kubernetes.md": datetime(2025, 3, 1, 12, tzinfo=UTC),
    "notes/cooking.md": datetime(2020, 5, 5, 12, tzinfo=UTC),
}
LONG = "# Zebra handbook\n\nEverything about zebras.\n\n" + "".join(
    f"## Zebra topic {i}\n\n" + f"Zebras in herd {i} graze on the savanna and the zebra stripes differ. " * 10 + "\n\n"
    for i in range(12)
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenViking]:
    base = tmp_path_factory.mktemp("find")
    handbook = make_tree(base / "handbook", EN_FILES)
    for rel, moment in MTIMES.items():
        set_mtime(handbook / rel, moment)
    manual = make_tree(base / "手册", ZH_FILES)
    long_dir = make_tree(base / "long", {"long.md": LONG})
    prefs = make_tree(base / "prefs", {"likes.md": "# Preferences\n\nThe user prefers docker compose for deploys.\n"})
    skill = make_tree(base / "deploy-skill", {"SKILL.md": "# Deploy skill\n\nDeploys the service with docker.\n"})
    bob = make_tree(base / "bob", {"bob.md": "# Bob\n\nBob also deploys with docker.\n"})
    tools = make_tree(base / "tools", {"tool.md": "# Tool\n\nA docker deploy tool.\n"})
    client = OpenViking(path=base / "store", config=hash_config())
    client.add_resource(handbook, tags=["env=prod"])
    client.add_resource(manual)
    client.add_resource(long_dir)
    client.add_resource(prefs, to="viking://user/default/memories/prefs")
    client.add_resource(skill, to="viking://agent/skills/deploy")
    with OpenViking(path=base / "store", config=config_from_dict({**HASH_CONF, "default_user": "bob"})) as as_bob:
        as_bob.add_resource(bob, to="viking://user/bob/memories/bob")  # only bob writes in bob's space
    client.add_resource(tools, to="viking://agent/tools/docker")
    yield client
    client.close()


def everything(client: OpenViking, query: str = "docker deploy", **kwargs: Any) -> FindResult:
    kwargs.setdefault("limit", 200)
    kwargs.setdefault("score_threshold", 0)
    return client.find(query, **kwargs)


# ----------------------------------------------------------------------------- target_uri
def test_target_uri_string(corpus: OpenViking) -> None:
    result = everything(corpus, target_uri=f"{H}/deploy")
    assert all(u.startswith(f"{H}/deploy/") for u in hit_uris(result))
    assert {raw_uri(u) for u in hit_uris(result)} == {
        f"{H}/deploy",
        f"{H}/deploy/docker.md",
        f"{H}/deploy/kubernetes.md",
    }


def test_target_uri_list(corpus: OpenViking) -> None:
    result = everything(corpus, target_uri=[f"{H}/deploy/", f"{R}/手册/部署", f"{H}/deploy"])
    raws = {raw_uri(u) for u in hit_uris(result)}
    assert raws == {
        f"{H}/deploy",
        f"{H}/deploy/docker.md",
        f"{H}/deploy/kubernetes.md",
        f"{R}/手册/部署",
        f"{R}/手册/部署/容器.md",
    }


def test_target_uri_aliases(corpus: OpenViking) -> None:
    by_alias = everything(corpus, target_uri="viking://~/memories")
    by_shorthand = everything(corpus, target_uri="viking://user/memories")
    assert hit_uris(by_alias) == hit_uris(by_shorthand)
    # A folder of memories matches what its memories match (its summary lists their titles), so
    # the memory that answers comes first and its folders follow.
    assert [raw_uri(u) for u in hit_uris(by_alias)][0] == "viking://user/default/memories/prefs/likes.md"
    assert {raw_uri(u) for u in hit_uris(by_alias)} == {
        "viking://user/default/memories",
        "viking://user/default/memories/prefs",
        "viking://user/default/memories/prefs/likes.md",
    }


def test_target_that_does_not_exist_is_not_an_error(corpus: OpenViking) -> None:
    # The SDK says so as the CLI does: with a Python warning when no warn callback was given.
    with pytest.warns(OpenVikingWarning, match=f"^{R}/nothing-here does not exist, so nothing was searched there") as w:
        result = corpus.find("docker", target_uri=f"{R}/nothing-here")
    assert (w[0].filename, w[0].lineno) == (__file__, sys._getframe().f_lineno - 1)  # points at the call above
    assert result.total == 0
    told: list[str] = []
    told_client = OpenViking(path=corpus.store_path, config=hash_config(), warn=told.append)
    assert told_client.find("docker", target_uri=f"{R}/nothing-here").total == 0
    assert len(told) == 1 and told[0].startswith(f"{R}/nothing-here does not exist")
    told_client.close()
    assert result.to_dict() == {"memories": [], "resources": [], "skills": [], "total": 0, "pending_vectors": 0}


def test_only_the_target_that_does_not_exist_is_warned_of(corpus: OpenViking) -> None:
    """Among several targets, the one naming nothing is told of, whether the others hold hits
    (and so exist) or hold none (and are looked up)."""
    told: list[str] = []
    client = OpenViking(path=corpus.store_path, config=hash_config(), warn=told.append)
    targets = [f"{H}/deploy", f"{R}/nothing-here", H]
    found = client.find("docker", target_uri=targets)
    assert found.total > 0 and {raw_uri(u).startswith(H) for u in hit_uris(found)} == {True}
    assert [t.split(" ")[0] for t in told] == [f"{R}/nothing-here"]
    told.clear()
    assert client.find("docker", target_uri=targets, score_threshold=1.01).total == 0
    assert [t.split(" ")[0] for t in told] == [f"{R}/nothing-here"]
    client.close()


def test_target_is_segment_aware(corpus: OpenViking) -> None:
    with pytest.warns(OpenVikingWarning, match=f"^{R}/hand does not exist"):
        assert everything(corpus, target_uri=f"{R}/hand").total == 0


def test_bad_targets(corpus: OpenViking) -> None:
    with pytest.raises(InvalidURIError):
        corpus.find("docker", target_uri="viking://nowhere/x")
    with pytest.raises(InvalidURIError):
        corpus.find("docker", target_uri=[f"{H}", "resources/x"])
    with pytest.raises(PermissionDeniedError) as info:
        corpus.find("docker", target_uri=f"{R}/../etc")
    assert info.value.code == "PERMISSION_DENIED"


# ----------------------------------------------------------------------------- default targets
def test_default_targets_are_resources_user_space_and_agent_skills(corpus: OpenViking) -> None:
    result = everything(corpus)
    raws = {raw_uri(u) for u in hit_uris(result)}
    assert f"{H}/deploy/docker.md" in raws
    assert "viking://user/default/memories/prefs/likes.md" in raws
    assert "viking://agent/skills/deploy/SKILL.md" in raws
    assert not any(u.startswith("viking://user/bob") for u in raws)
    assert not any(u.startswith("viking://agent/tools") for u in raws)
    assert everything(corpus, target_uri="viking://").to_dict() == result.to_dict()
    assert everything(corpus, target_uri="").to_dict() == result.to_dict()
    assert everything(corpus, target_uri=[]).to_dict() == result.to_dict()


def test_other_spaces_only_when_targeted(corpus: OpenViking) -> None:
    assert "viking://user/bob/memories/bob/bob.md" not in {raw_uri(u) for u in hit_uris(everything(corpus))}
    with pytest.raises(PermissionDeniedError, match="Access denied"):  # another user's space: upstream's 403
        everything(corpus, target_uri="viking://user/bob")
    tools = {raw_uri(u) for u in hit_uris(everything(corpus, target_uri="viking://agent/tools"))}
    assert "viking://agent/tools/docker/tool.md" in tools


# ----------------------------------------------------------------------------- limit / node_limit
def test_limit(corpus: OpenViking) -> None:
    assert everything(corpus).total > 5
    assert corpus.find("docker deploy", limit=2, score_threshold=0).total == 2
    assert corpus.find("docker deploy", limit=1, score_threshold=0).total == 1
    assert corpus.find("docker deploy", limit=0).total == 0


def test_limit_keeps_the_best(corpus: OpenViking) -> None:
    # The limit is applied to the global ranking, before the hits are grouped by type.
    full = hit_uris(corpus.find("docker deploy", limit=10, score_threshold=0))
    top = corpus.find("docker deploy", limit=3, score_threshold=0)
    assert top.total == 3
    # Iteration yields memories, then resources, then skills; each group is best first.
    for group in (top.memories, top.resources, top.skills):
        assert sorted((h.score for h in group), reverse=True) == [h.score for h in group]
    best = sorted(corpus.find("docker deploy", limit=10, score_threshold=0), key=lambda h: -h.score)
    assert {h.uri for h in top} == {h.uri for h in best[:3]}
    assert set(hit_uris(top)) <= set(full)
    ranking = sorted(everything(corpus), key=lambda h: -h.score)  # every hit, not only the first 10
    assert sorted(h.score for h in top) == sorted(h.score for h in ranking[:3])


def test_node_limit_overrides_limit(corpus: OpenViking) -> None:
    assert corpus.find("docker deploy", limit=1, node_limit=3, score_threshold=0).total == 3
    assert corpus.find("docker deploy", limit=5, node_limit=0).total == 0


@pytest.mark.parametrize("kwargs", [{"limit": -1}, {"node_limit": -1}, {"limit": 2.5}, {"limit": True}])
def test_bad_limits(corpus: OpenViking, kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        corpus.find("docker", **kwargs)
    assert "limit must be an integer >= 0" in info.value.message


# ----------------------------------------------------------------------------- score_threshold
def test_threshold_is_strict(corpus: OpenViking) -> None:
    full = corpus.find("kubernetes helm cluster", limit=50, score_threshold=0, mode="vector")
    scores = [h.score for h in full]
    assert len(set(scores)) > 3
    cut = sorted(set(scores))[len(set(scores)) // 2]
    kept = corpus.find("kubernetes helm cluster", limit=50, score_threshold=cut, mode="vector")
    assert kept.total > 0
    assert all(h.score > cut for h in kept)
    assert {h.uri for h in kept} == {h.uri for h in full if h.score > cut}
    assert not any(h.score == cut for h in kept)
    just_below = corpus.find("kubernetes helm cluster", limit=50, score_threshold=cut - 1e-9, mode="vector")
    assert {h.uri for h in just_below} == {h.uri for h in full if h.score >= cut}


@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
def test_threshold_is_strict_in_every_mode(corpus: OpenViking, mode: str) -> None:
    full = corpus.find("kubernetes helm cluster", limit=50, score_threshold=0, mode=mode)
    assert full.total > 2
    cut = sorted(h.score for h in full)[full.total // 2]
    kept = corpus.find("kubernetes helm cluster", limit=50, score_threshold=cut, mode=mode)
    assert {h.uri for h in kept} == {h.uri for h in full if h.score > cut}


def test_default_threshold_is_0_1(corpus: OpenViking) -> None:
    everything_vector = corpus.find("kubernetes helm cluster", limit=200, score_threshold=-1, mode="vector")
    low = [h for h in everything_vector if h.score <= 0.1]
    assert low, "the corpus should hold records scoring <= 0.1 for this query"
    default = corpus.find("kubernetes helm cluster", limit=200, mode="vector")
    assert default.total > 0
    assert all(h.score > 0.1 for h in default)
    assert {h.uri for h in default} == {h.uri for h in everything_vector if h.score > 0.1}


def test_threshold_one_keeps_nothing(corpus: OpenViking) -> None:
    assert corpus.find("docker deploy", score_threshold=1.0).total == 0


def test_threshold_must_be_a_number(corpus: OpenViking) -> None:
    with pytest.raises(InvalidArgumentError):
        corpus.find("docker", score_threshold=float("nan"))


# ----------------------------------------------------------------------------- since / until / time_field
def files(result: FindResult) -> set[str]:
    return {h.uri for h in result if h.level == 2}


def test_since_on_updated_at(corpus: OpenViking) -> None:
    result = everything(corpus, target_uri=H, since="2025-01-01", level=2)
    assert files(result) == {f"{H}/deploy/docker.md", f"{H}/deploy/kubernetes.md"}


def test_until_on_updated_at(corpus: OpenViking) -> None:
    result = everything(corpus, target_uri=H, until="2023-12-31", level=2)
    assert files(result) == {f"{H}/README.md", f"{H}/notes/cooking.md"}


def test_since_and_until_one_day(corpus: OpenViking) -> None:
    result = everything(corpus, target_uri=H, since="2025-02-01", until="2025-02-01", level=2)
    assert files(result) == {f"{H}/deploy/docker.md"}


def test_iso_bounds_with_zones(corpus: OpenViking) -> None:
    # docker.md changed at 2025-02-01T12:00Z = 20:00 in UTC+8
    result = everything(
        corpus, target_uri=H, since="2025-02-01T19:59:59+08:00", until="2025-02-01T20:00:01+08:00", level=2
    )
    assert files(result) == {f"{H}/deploy/docker.md"}
    naive = everything(corpus, target_uri=H, since="2025-02-01T11:59:59", until="2025-02-01T12:00:01", level=2)
    assert files(naive) == {f"{H}/deploy/docker.md"}


def test_relative_since(corpus: OpenViking) -> None:
    assert files(everything(corpus, target_uri=H, since="1h", level=2)) == set()  # mtimes are all in the past
    assert files(everything(corpus, target_uri=H, since="5200w", level=2)) == {f"{H}/{rel}" for rel in EN_FILES}


def test_time_field_created_at(corpus: OpenViking) -> None:
    # created_at is when the files were added (just now), whatever their mtime
    created = everything(corpus, target_uri=H, since="1h", time_field="created_at", level=2)
    assert files(created) == {f"{H}/{rel}" for rel in EN_FILES}
    assert files(everything(corpus, target_uri=H, until="2025-01-01", time_field="created_at", level=2)) == set()


def test_time_bounds_apply_to_directories_too(corpus: OpenViking) -> None:
    # a directory's updated_at is its newest child's; here only deploy/ holds 2025 files
    result = everything(corpus, target_uri=H, since="2025-01-01", level=[0, 1])
    assert {raw_uri(u) for u in hit_uris(result)} == {f"{H}/deploy", H}


def test_since_later_than_until_finds_nothing_and_says_why(corpus: OpenViking) -> None:
    with pytest.warns(OpenVikingWarning, match="since is later than until: nothing changed in that window"):
        result = corpus.find("docker", since="2025-03-02", until="2025-03-01")
    assert result.total == 0


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"since": "yesterdayish"}, "Invalid since value 'yesterdayish'"),
        ({"since": "2026-02-30"}, "Invalid since value '2026-02-30'"),
        ({"until": "not-a-time"}, "Invalid until value 'not-a-time'"),
        ({"since": "2h", "time_field": "mtime"}, "time_field must be one of: updated_at, created_at"),
    ],
)
def test_bad_time_arguments(corpus: OpenViking, kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        corpus.find("docker", **kwargs)
    assert info.value.code == "INVALID_ARGUMENT"
    assert needle in info.value.message


# ----------------------------------------------------------------------------- level
@pytest.mark.parametrize(
    ("level", "expected"),
    [(2, {2}), ("2", {2}), ([2], {2}), ("0,1", {0, 1}), ([0], {0}), ("1", {1}), ("L0, L2", {0, 2}), ([0, "1"], {0, 1})],
)
def test_level(corpus: OpenViking, level: Any, expected: set[int]) -> None:
    result = everything(corpus, level=level)
    assert result.total > 0
    assert {h.level for h in result} <= expected
    if expected == {0}:
        assert all(h.uri.endswith("/.abstract.md") for h in result)


@pytest.mark.parametrize("level", [7, "3", "0,5", "abc", -1])
def test_bad_level(corpus: OpenViking, level: Any) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        corpus.find("docker", level=level)
    assert "Invalid level" in info.value.message


def test_sidecar_uris_and_levels(corpus: OpenViking) -> None:
    result = everything(corpus)
    levels = Counter(h.level for h in result)
    assert levels[2] > 0 and levels[0] + levels[1] > 0
    for hit in result:
        if hit.level == 0:
            assert hit.uri.endswith("/.abstract.md")
        elif hit.level == 1:
            assert hit.uri.endswith("/.overview.md")
            assert hit.overview  # the L1 text comes with an overview hit
        else:
            assert hit.level == 2
            assert not hit.uri.endswith(("/.abstract.md", "/.overview.md"))


def test_directory_hit_never_twice(corpus: OpenViking) -> None:
    raws = [raw_uri(u) for u in hit_uris(everything(corpus))]
    assert [u for u, n in Counter(raws).items() if n > 1] == []


# ----------------------------------------------------------------------------- context_type
def test_context_type(corpus: OpenViking) -> None:
    memory = everything(corpus, context_type="memory")
    assert memory.total > 0 and memory.resources == [] and memory.skills == []
    both = everything(corpus, context_type="memory, Skill")
    assert both.memories and both.skills and both.resources == []
    as_list = everything(corpus, context_type=["skill"])
    assert as_list.skills and as_list.memories == [] and as_list.resources == []
    resources = everything(corpus, context_type="resource")
    assert resources.resources and resources.memories == [] and resources.skills == []


def test_bad_context_type(corpus: OpenViking) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        corpus.find("docker", context_type="document")
    assert "context_type must be one or more of: memory, resource, skill" in info.value.message


# ----------------------------------------------------------------------------- tags
def test_tags(corpus: OpenViking) -> None:
    tagged = everything(corpus, tags="env=prod")
    assert tagged.total > 0
    assert all(h.uri.startswith(H) and "env=prod" in h.tags for h in tagged)
    assert hit_uris(everything(corpus, tags=["ENV=Prod"])) == hit_uris(tagged)
    assert everything(corpus, tags="env=prod,team=search").total == 0  # ANDed
    assert everything(corpus, tags="env=dev").total == 0


@pytest.mark.parametrize("tags", ["env", "env=", "=prod", ["a=b=c"]])
def test_bad_tags(corpus: OpenViking, tags: Any) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        corpus.find("docker", tags=tags)
    assert "tags are key=value pairs" in info.value.message


# ----------------------------------------------------------------------------- filter
def test_filter(corpus: OpenViking) -> None:
    result = everything(corpus, filter={"op": "must", "field": "uri", "conds": [f"{H}/deploy"], "para": "-d=0"})
    assert {raw_uri(u) for u in hit_uris(result)} == {f"{H}/deploy"}
    text = everything(corpus, filter='{"op": "must", "field": "level", "conds": [2]}')
    assert text.total > 0 and all(h.level == 2 for h in text)


# ----------------------------------------------------------------------------- modes
@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
def test_modes_rank_the_obvious_file_first(corpus: OpenViking, mode: str) -> None:
    result = corpus.find("Kubernetes cluster Helm chart", target_uri=H, level=2, mode=mode, score_threshold=0)
    assert hit_uris(result)[0] == f"{H}/deploy/kubernetes.md"
    scores = [h.score for h in result]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)


def test_chinese_query(corpus: OpenViking) -> None:
    result = corpus.find("用户 身份认证 密钥", target_uri=f"{R}/手册", level=2)
    assert hit_uris(result)[0] == f"{R}/手册/认证.md"


def test_keyword_mode_without_matching_words_finds_nothing(corpus: OpenViking) -> None:
    assert corpus.find("qqxzv wqpzz", mode="keyword", score_threshold=0).total == 0


def test_keyword_mode_best_scores_one(corpus: OpenViking) -> None:
    result = corpus.find("pancakes", mode="keyword", score_threshold=0)
    assert result.total > 0
    assert max(h.score for h in result) == pytest.approx(1.0)


def test_unknown_mode(corpus: OpenViking) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        corpus.find("docker", mode="semantic")
    assert "mode must be one of" in info.value.message


# ----------------------------------------------------------------------------- dedupe
def test_a_long_file_appears_once(corpus: OpenViking) -> None:
    long_uri = f"{R}/long/long.md"
    assert corpus.stat(long_uri)["records"] >= 8
    for mode in ("vector", "keyword", "hybrid"):
        result = corpus.find("zebra stripes savanna herd", limit=50, score_threshold=0, mode=mode)
        assert hit_uris(result).count(long_uri) == 1, mode
        assert result.resources[0].uri == long_uri, mode


def test_dedupe_keeps_the_best_chunk(corpus: OpenViking) -> None:
    hit = next(
        h
        for h in corpus.find("Zebras in herd 7 graze", limit=50, score_threshold=0, mode="keyword")
        if h.uri == f"{R}/long/long.md"
    )
    assert hit.match_reason.startswith("lines ")


# ----------------------------------------------------------------------------- grouping and shape
def test_grouping_and_total(corpus: OpenViking) -> None:
    result = everything(corpus)
    assert result.memories and result.resources and result.skills
    assert all(h.context_type == "memory" for h in result.memories)
    assert all(h.context_type == "resource" for h in result.resources)
    assert all(h.context_type == "skill" for h in result.skills)
    assert result.total == len(result.memories) + len(result.resources) + len(result.skills) == len(result)
    assert {raw_uri(h.uri) for h in result.memories} >= {"viking://user/default/memories/prefs/likes.md"}
    assert "viking://agent/skills/deploy/SKILL.md" in {h.uri for h in result.skills}


def test_iteration_order_is_memories_resources_skills(corpus: OpenViking) -> None:
    result = everything(corpus)
    assert list(result) == [*result.memories, *result.resources, *result.skills]


def test_scores_in_range_and_sorted_in_each_group(corpus: OpenViking) -> None:
    for mode in ("vector", "keyword", "hybrid"):
        result = everything(corpus, mode=mode)
        for group in (result.memories, result.resources, result.skills):
            scores = [h.score for h in group]
            assert all(0.0 <= s <= 1.0 for s in scores), mode
            assert scores == sorted(scores, reverse=True), mode


def test_to_dict_shape(corpus: OpenViking) -> None:
    result = everything(corpus)
    data = result.to_dict()
    assert list(data) == ["memories", "resources", "skills", "total", "pending_vectors"]
    assert data["total"] == result.total
    for group in ("memories", "resources", "skills"):
        for item in data[group]:
            assert list(item) == ITEM_KEYS
            assert isinstance(item["score"], float)
            assert isinstance(item["level"], int)
            assert item["relations"] == []
            assert isinstance(item["tags"], list)
            assert item["overview"] is None or isinstance(item["overview"], str)


def test_matched_context_fields(corpus: OpenViking) -> None:
    hit = corpus.find("Kubernetes Helm chart", target_uri=H, level=2).resources[0]
    assert isinstance(hit, MatchedContext)
    assert hit.uri == f"{H}/deploy/kubernetes.md"
    assert hit.context_type == "resource"
    assert hit.level == 2
    assert hit.abstract == corpus.abstract(hit.uri)  # a file's summary
    assert hit.tags == ["env=prod"]
    assert hit.to_dict()["uri"] == hit.uri


# ----------------------------------------------------------------------------- bad calls
@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_empty_query(corpus: OpenViking, query: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        corpus.find(query)
    assert "must not be empty" in info.value.message


def test_missing_store(tmp_path: Path) -> None:
    client = OpenViking(path=tmp_path / "missing", config=hash_config())
    with pytest.raises(NotFoundError) as info:
        client.find("docker")
    assert info.value.code == "NOT_FOUND"
    assert info.value.hint and "add_resource" in info.value.hint  # the SDK's words; the CLI says add-resource
    assert not (tmp_path / "missing").exists()


def test_store_made_with_another_embedder(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with OpenViking(path=store, config=hash_config()) as client:
        client.add_resource(make_tree(tmp_path / "t", {"a.md": "# A\n\nSome text.\n"}))
    before = snapshot(store)
    with OpenViking(path=store, config=Config()) as local, pytest.raises(FailedPreconditionError) as info:
        local.find("some text")
    assert info.value.code == "FAILED_PRECONDITION"
    assert "hash" in info.value.message
    assert info.value.hint and "reindex" in info.value.hint
    assert snapshot(store) == before
    with OpenViking(path=store, config=hash_config()) as client:
        assert client.find("some text").total > 0


def test_keyword_mode_works_on_a_store_of_another_embedder(tmp_path: Path) -> None:
    # keyword mode embeds nothing, so the embedder identity does not matter
    store = tmp_path / "store"
    with OpenViking(path=store, config=hash_config()) as client:
        client.add_resource(make_tree(tmp_path / "t", {"a.md": "# A\n\nSome unusual wording here.\n"}))
    with OpenViking(path=store, config=Config()) as local:
        assert local.find("unusual wording", mode="keyword").total > 0


def test_context_manager_and_close(tmp_path: Path) -> None:
    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        client.add_resource(make_tree(tmp_path / "t", {"a.md": "# A\n\nSome text.\n"}))
        assert client.find("some text").total > 0
    client.close()  # closing twice is harmless
    assert client.find("some text").total > 0  # and a closed client reopens on use


# ----------------------------------------------------------------------------- telemetry
@pytest.mark.parametrize("telemetry", [True, {"summary": True}])
def test_telemetry_when_asked(corpus: OpenViking, telemetry: Any) -> None:
    result = corpus.find("deploy the server", telemetry=telemetry)
    data = result.to_dict()
    assert data["telemetry"]["id"].startswith("tm_")
    summary = data["telemetry"]["summary"]
    assert summary["operation"] == "search.find"
    assert summary["vector"]["returned"] == result.total > 0
    assert isinstance(summary["duration_ms"], float) and 0 < summary["duration_ms"] < 60_000
    assert list(data)[-1] == "telemetry"


@pytest.mark.parametrize("telemetry", [False, {"summary": False}, {}])
def test_no_telemetry_unless_asked(corpus: OpenViking, telemetry: Any) -> None:
    assert "telemetry" not in corpus.find("deploy the server", telemetry=telemetry).to_dict()


@pytest.mark.parametrize("telemetry", [{"events": True}, "yes", 1, {"summary": "yes"}])
def test_bad_telemetry_is_invalid_argument(corpus: OpenViking, telemetry: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="telemetry must be") as caught:
        corpus.find("deploy the server", telemetry=telemetry)
    assert caught.value.code == "INVALID_ARGUMENT"


def test_numpy_numbers_and_datetimes_are_taken_as_their_plain_kinds(corpus: OpenViking) -> None:
    import numpy as np

    assert len(corpus.find("deploy the server", limit=np.int64(2), score_threshold=-1).resources) == 2
    assert (
        corpus.find("deploy", score_threshold=np.float32(-1.0)).total == corpus.find("deploy", score_threshold=-1).total
    )
    since, until = datetime(2000, 1, 1), date(2999, 12, 31)  # a datetime without a zone is UTC, as its text is
    assert (
        corpus.find("deploy", since=since, until=until).to_dict()
        == corpus.find("deploy", since="2000-01-01T00:00:00", until="2999-12-31").to_dict()
    )
    assert corpus.read(f"{H}/auth.md", offset=np.int64(0), limit=np.int64(1)) == corpus.read(f"{H}/auth.md", limit=1)


@pytest.mark.parametrize(
    ("call", "code", "message"),
    [
        ({"query": 123}, "INVALID_ARGUMENT", "Search query must be a string (got int)"),
        ({"limit": 2.5}, "INVALID_ARGUMENT", "limit must be an integer >= 0 (got 2.5)"),
        ({"limit": "5"}, "INVALID_ARGUMENT", "limit must be an integer >= 0 (got '5')"),
        ({"node_limit": -1}, "INVALID_ARGUMENT", "node_limit must be an integer >= 0 (got -1)"),  # its own name
        ({"score_threshold": float("nan")}, "INVALID_ARGUMENT", "score_threshold must be a finite number (got nan)"),
        ({"score_threshold": True}, "INVALID_ARGUMENT", "score_threshold must be a finite number (got True)"),
        ({"tags": 5}, "INVALID_ARGUMENT", "tags must be a 'k=v,k=v' string or a list of 'k=v' strings"),
        ({"context_type": 5}, "INVALID_ARGUMENT", "context_type must be a string or a list of strings (got int)"),
        ({"target_uri": 5}, "INVALID_URI", "Invalid URI: 5 (target_uri must be a string or a list of strings)"),
        ({"since": 5}, "INVALID_ARGUMENT", "since must be a string, a date or a datetime (got int)"),
    ],
    ids=lambda v: str(v) if isinstance(v, dict) else None,
)
def test_a_python_value_of_the_wrong_kind_is_an_error_not_a_type_error(
    corpus: OpenViking, call: dict[str, Any], code: str, message: str
) -> None:
    # these reached the code as AttributeError or TypeError ('int' object is not iterable)
    arguments = {"query": "deploy", **call}
    with pytest.raises((InvalidArgumentError, InvalidURIError)) as info:
        corpus.find(**arguments)
    assert (info.value.code, info.value.message) == (code, message)
    json.dumps(info.value.to_dict())  # details go into a JSON error object as they are


def test_read_offsets_and_the_config_argument_are_checked(corpus: OpenViking, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=r"^offset must be an integer >= 0 \(got 2.5\)$"):
        corpus.read(f"{H}/auth.md", offset=2.5)
    with pytest.raises(InvalidArgumentError, match=r"^limit must be an integer >= 0 \(or -1 for all\) \(got -2\)$"):
        corpus.read(f"{H}/auth.md", limit=-2)
    with pytest.raises(InvalidArgumentError, match="config must be a Config or a dict of ov.conf's keys"):
        OpenViking(path=tmp_path / "s", config=5)  # type: ignore[arg-type]
    from_dict = OpenViking(path=corpus.store_path, config=HASH_CONF)  # ov.conf's content, parsed
    assert from_dict.config.embedding.provider == "hash"
    assert [h.uri for h in from_dict.find("deploy")] == [h.uri for h in corpus.find("deploy")]
    from_dict.close()
