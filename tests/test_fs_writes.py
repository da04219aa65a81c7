"""Filesystem writes around retrieval: mkdir, rm, mv, link, unlink, relations.

Every write must keep the store consistent: every record find can return and every relation
endpoint is a node that exists; nothing else is lost. Bad input gets its code, message and exit
status, and leaves the store exactly as it was. Real LanceDB stores on tmp_path, the hash
embedder, no network, no mocks.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    EN_FILES,
    CliResult,
    cli_error,
    cli_unharmed,
    everything,
    hash_config,
    make_tree,
    one_line,
    raw_uri,
    store_state,
)
from helpers import unharmed as _unharmed
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from openviking.embedded.client import OpenViking
from openviking.errors import FailedPreconditionError, OpenVikingError
from openviking.ingest.naming import memory_name

Cli = Callable[..., CliResult]
R = "viking://resources"
H = f"{R}/handbook"
MEM = "viking://user/default/memories"
AUTH = f"{H}/auth.md"
README = f"{H}/README.md"
DEPLOY = f"{H}/deploy"
DOCKER = f"{DEPLOY}/docker.md"
K8S = f"{DEPLOY}/kubernetes.md"
NOTES = f"{H}/notes"
COOKING = f"{NOTES}/cooking.md"


# ----------------------------------------------------------------------------- fixtures and helpers
# handbook_client and handbook_ov (conftest.py) hold the English handbook in tmp_path/"store".
@pytest.fixture
def sdk(tmp_path: Path) -> Iterator[OpenViking]:
    """An SDK client on the store the ``handbook_ov`` fixture built (for checks after CLI writes)."""
    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        yield client


def unharmed(client: OpenViking, op: Callable[[], Any]) -> OpenVikingError:
    return _unharmed(client, op, "deploy the handbook")


def state(client: OpenViking) -> tuple[Any, Any, Any]:
    return store_state(client, "deploy the handbook")


def hit_set(client: OpenViking, query: str = "anything at all") -> set[str]:
    """Record URIs (directories for L0/L1 hits) of everything find can return."""
    return {raw_uri(h.uri) for h in everything(client, query)}


def node_set(client: OpenViking) -> dict[str, bool]:
    """Every stored node below the scope roots: uri -> is_dir."""
    return {
        e["uri"]: e["isDir"]
        for e in client.ls("viking://", recursive=True)
        if e["uri"].count("/") >= 3  # depth >= 2: viking://scope/x
        and e["modTime"] is not None  # the layout's folders are listed before anything is stored in them
    }


def exists(client: OpenViking, uri: str) -> bool:
    try:
        client.stat(uri)
    except OpenVikingError as exc:
        assert exc.code == "NOT_FOUND", exc
        return False
    return True


def assert_consistent(client: OpenViking) -> None:
    """No record and no relation points at a node that does not exist; no node lost its records."""
    nodes = node_set(client)
    hits = hit_set(client, "handbook authentication deploy user memory notes")
    assert hits <= set(nodes), f"records without a node: {sorted(hits - set(nodes))}"
    assert set(nodes) <= hits, f"nodes without records: {sorted(set(nodes) - hits)}"
    for uri in nodes:
        for link in client.relations(uri):
            assert link["uri"] in nodes, f"relation {uri} -> {link['uri']} points at nothing"


def ok_json(result: CliResult) -> Any:
    assert result.code == 0, result.err
    assert result.err == ""
    envelope = result.json()
    assert envelope["status"] == "ok"
    return envelope["result"]


def test_everything_sees_every_node(handbook_client: OpenViking) -> None:
    """The helper the consistency checks rely on: find over all scopes returns every node."""
    assert_consistent(handbook_client)
    assert {AUTH, README, DOCKER, K8S, COOKING, H, DEPLOY, NOTES} <= hit_set(handbook_client)


# ----------------------------------------------------------------------------- mkdir
def test_mkdir_creates_directory_and_parents(handbook_client: OpenViking) -> None:
    result = handbook_client.mkdir(f"{R}/projects/alpha/specs")
    assert result == {"uri": f"{R}/projects/alpha/specs", "created": True}
    for uri in (f"{R}/projects", f"{R}/projects/alpha", f"{R}/projects/alpha/specs"):
        info = handbook_client.stat(uri)
        assert info["isDir"] is True and info["context_type"] == "resource"
    assert handbook_client.ls(f"{R}/projects/alpha", simple=True) == [f"{R}/projects/alpha/specs"]
    assert handbook_client.ls(f"{R}/projects/alpha/specs") == []
    assert "specs" in handbook_client.overview(f"{R}/projects/alpha")
    assert_consistent(handbook_client)


def test_mkdir_description_becomes_the_abstract(handbook_client: OpenViking) -> None:
    text = "Design notes for the billing service and its invoices"
    handbook_client.mkdir(f"{R}/billing", description=text)
    assert handbook_client.stat(f"{R}/billing")["abstract"] == text
    assert handbook_client.abstract(f"{R}/billing") == text
    hits = {h.uri for h in everything(handbook_client, text)}
    assert f"{R}/billing/.abstract.md" in hits or f"{R}/billing/.overview.md" in hits
    assert text in handbook_client.overview(R + "/billing")
    assert_consistent(handbook_client)


def test_mkdir_long_description_is_cut_to_the_l0_size(handbook_client: OpenViking) -> None:
    text = " ".join(["Billing design notes for the invoices service."] * 20)
    handbook_client.mkdir(f"{R}/long", description=text)
    abstract = handbook_client.abstract(f"{R}/long")
    assert 0 < len(abstract) <= 256
    assert abstract.startswith("Billing design notes")


def test_mkdir_on_a_new_store_creates_it(tmp_path: Path) -> None:
    with OpenViking(path=tmp_path / "fresh", config=hash_config()) as client:
        client.mkdir("viking://~/notes")
        assert client.stat("viking://user/default/notes")["isDir"] is True
        assert_consistent(client)


def test_mkdir_in_memories_is_memory(handbook_client: OpenViking) -> None:
    handbook_client.mkdir("viking://user/memories/profile")
    assert handbook_client.stat(f"{MEM}/profile")["context_type"] == "memory"


@pytest.mark.parametrize("uri", [H, DEPLOY, AUTH], ids=["dir", "subdir", "file"])
def test_mkdir_existing_is_already_exists(handbook_client: OpenViking, uri: str) -> None:
    error = unharmed(handbook_client, lambda: handbook_client.mkdir(uri))
    assert error.code == "ALREADY_EXISTS"
    assert uri in error.message


@pytest.mark.parametrize("uri", ["viking://resources", "viking://user", "viking://agent", "viking://"])
def test_mkdir_scope_root_is_invalid(handbook_client: OpenViking, uri: str) -> None:
    error = unharmed(handbook_client, lambda: handbook_client.mkdir(uri))
    assert error.code == "INVALID_ARGUMENT"


@pytest.mark.parametrize("uri", [f"{AUTH}/sub", f"{AUTH}/sub/deeper"])
def test_mkdir_under_a_file_is_failed_precondition(handbook_client: OpenViking, uri: str) -> None:
    error = unharmed(handbook_client, lambda: handbook_client.mkdir(uri))
    assert error.code == "FAILED_PRECONDITION"
    assert AUTH in error.message


@pytest.mark.parametrize(
    ("uri", "code"),
    [(f"{R}/../x", "PERMISSION_DENIED"), ("viking://nowhere/x", "INVALID_URI"), ("resources/x", "INVALID_URI")],
)
def test_mkdir_bad_uri(handbook_client: OpenViking, uri: str, code: str) -> None:
    assert unharmed(handbook_client, lambda: handbook_client.mkdir(uri)).code == code


# ----------------------------------------------------------------------------- rm
def test_rm_file(handbook_client: OpenViking) -> None:
    before = handbook_client.read(AUTH)
    assert "Authentication" in before
    assert "auth.md" in handbook_client.overview(H)
    result = handbook_client.rm(AUTH)
    assert result == {"uri": AUTH, "removed": 1}
    assert not exists(handbook_client, AUTH)
    with pytest.raises(OpenVikingError) as info:
        handbook_client.read(AUTH)
    assert info.value.code == "NOT_FOUND"
    assert AUTH not in hit_set(handbook_client, "authenticate with API keys bearer token")
    assert "auth.md" not in handbook_client.overview(H)
    assert "bearer token" not in handbook_client.overview(H)
    assert exists(handbook_client, H) and exists(handbook_client, README)
    assert_consistent(handbook_client)


def test_rm_file_refreshes_every_ancestor(handbook_client: OpenViking) -> None:
    assert "Pancakes" in handbook_client.overview(H)  # handbook's overview shows notes' abstract, from cooking.md
    handbook_client.rm(COOKING)
    assert "Pancakes" not in handbook_client.overview(NOTES)
    assert "Pancakes" not in handbook_client.overview(H)
    assert "Pancakes" not in handbook_client.abstract(NOTES)
    assert_consistent(handbook_client)


def test_rm_directory_without_recursive_is_refused(handbook_client: OpenViking) -> None:
    error = unharmed(handbook_client, lambda: handbook_client.rm(DEPLOY))
    assert error.code == "FAILED_PRECONDITION"
    assert "--recursive" in error.message
    assert exists(handbook_client, DOCKER) and exists(handbook_client, K8S)


def test_rm_recursive_removes_subtree_records_and_relations(handbook_client: OpenViking) -> None:
    handbook_client.link(AUTH, [DOCKER, DEPLOY, README], reason="outside in")
    handbook_client.link(DOCKER, [AUTH], reason="inside out")
    handbook_client.link(K8S, [DOCKER], reason="inside inside")
    result = handbook_client.rm(DEPLOY, recursive=True)
    assert result == {"uri": DEPLOY, "removed": 3}
    for uri in (DEPLOY, DOCKER, K8S):
        assert not exists(handbook_client, uri)
    hits = hit_set(handbook_client, "docker kubernetes deployment helm chart container")
    assert not any(u == DEPLOY or u.startswith(DEPLOY + "/") for u in hits)
    assert handbook_client.relations(AUTH) == [{"uri": README, "reason": "outside in"}]
    assert "deploy" not in handbook_client.overview(H)
    assert sorted(handbook_client.ls(H, simple=True)) == sorted([NOTES, README, AUTH])
    assert_consistent(handbook_client)
    # Nothing of the old links comes back when the same URIs exist again.
    handbook_client.mkdir(DEPLOY)
    handbook_client.mkdir(DOCKER)
    handbook_client.mkdir(K8S)
    assert handbook_client.relations(DOCKER) == []
    assert handbook_client.relations(K8S) == []
    assert handbook_client.relations(AUTH) == [{"uri": README, "reason": "outside in"}]


def test_rm_hits_carry_no_relations_to_removed_nodes(handbook_client: OpenViking) -> None:
    handbook_client.link(AUTH, [DOCKER], reason="deploy it")
    handbook_client.rm(DOCKER)
    for hit in everything(handbook_client, "authentication"):
        assert all(r.uri != DOCKER for r in hit.relations)


def test_rm_is_segment_aware(handbook_client: OpenViking) -> None:
    handbook_client.mkdir(f"{H}/deploy-notes", description="Notes about deploying")
    handbook_client.rm(DEPLOY, recursive=True)
    assert exists(handbook_client, f"{H}/deploy-notes")
    assert f"{H}/deploy-notes" in hit_set(handbook_client)
    assert_consistent(handbook_client)


def test_rm_missing_succeeds_with_zero(handbook_client: OpenViking) -> None:
    before = state(handbook_client)
    assert handbook_client.rm(f"{H}/no-such-file.md") == {"uri": f"{H}/no-such-file.md", "removed": 0}
    assert handbook_client.rm(f"{R}/nothing/here", recursive=True) == {"uri": f"{R}/nothing/here", "removed": 0}
    assert state(handbook_client) == before


def test_rm_root_is_refused(handbook_client: OpenViking) -> None:
    error = unharmed(handbook_client, lambda: handbook_client.rm("viking://", recursive=True))
    assert error.code == "INVALID_ARGUMENT"


def test_rm_bad_uri(handbook_client: OpenViking) -> None:
    assert (
        unharmed(handbook_client, lambda: handbook_client.rm(f"{H}/../x", recursive=True)).code == "PERMISSION_DENIED"
    )
    assert unharmed(handbook_client, lambda: handbook_client.rm("viking://nowhere/x")).code == "INVALID_URI"


# ----------------------------------------------------------------------------- mv
def test_mv_file(handbook_client: OpenViking) -> None:
    content = handbook_client.read(AUTH)
    target = f"{R}/security/keys/auth.md"
    result = handbook_client.mv(AUTH, target)
    assert result == {"from": AUTH, "to": target, "moved": 1}
    assert handbook_client.read(target) == content
    assert not exists(handbook_client, AUTH)
    assert handbook_client.stat(f"{R}/security/keys")["isDir"] is True
    hits = hit_set(handbook_client, "authenticate with API keys bearer token")
    assert target in hits and AUTH not in hits
    assert "auth.md" not in handbook_client.overview(H)
    assert "auth.md" in handbook_client.overview(f"{R}/security/keys")
    assert_consistent(handbook_client)


def test_mv_file_rename_in_place(handbook_client: OpenViking) -> None:
    content = handbook_client.read(AUTH)
    handbook_client.mv(AUTH, f"{H}/authentication.md")
    assert handbook_client.read(f"{H}/authentication.md") == content
    assert sorted(handbook_client.ls(H, simple=True)) == sorted([DEPLOY, NOTES, README, f"{H}/authentication.md"])
    assert_consistent(handbook_client)


def test_mv_directory(handbook_client: OpenViking) -> None:
    docker, k8s = handbook_client.read(DOCKER), handbook_client.read(K8S)
    result = handbook_client.mv(DEPLOY, f"{R}/ops")
    assert result == {"from": DEPLOY, "to": f"{R}/ops", "moved": 3}
    assert handbook_client.read(f"{R}/ops/docker.md") == docker
    assert handbook_client.read(f"{R}/ops/kubernetes.md") == k8s
    for old in (DEPLOY, DOCKER, K8S):
        assert not exists(handbook_client, old)
    hits = hit_set(handbook_client, "docker kubernetes deployment")
    assert {f"{R}/ops", f"{R}/ops/docker.md", f"{R}/ops/kubernetes.md"} <= hits
    assert not any(u == DEPLOY or u.startswith(DEPLOY + "/") for u in hits)
    for hit in everything(handbook_client, "docker"):
        assert not hit.uri.startswith(DEPLOY)
    assert "deploy" not in handbook_client.overview(H)
    assert "docker.md" in handbook_client.overview(f"{R}/ops")
    assert_consistent(handbook_client)


def interrupt_once(monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    """The next call of ``LanceStore.<method>`` is cut short as Ctrl-C would cut it."""
    from openviking.store.lance import LanceStore

    real = getattr(LanceStore, method)

    def interrupted(self: Any, *args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(LanceStore, method, real)
        raise KeyboardInterrupt

    monkeypatch.setattr(LanceStore, method, interrupted)


@pytest.mark.parametrize("cut_at", ["upsert_nodes", "replace_records", "delete_records_below", "delete_nodes_below"])
def test_mv_interrupted_is_finished_by_running_it_again(
    handbook_client: OpenViking, monkeypatch: pytest.MonkeyPatch, cut_at: str
) -> None:
    docker = handbook_client.read(DOCKER)
    records = sum(handbook_client.stat(u)["records"] for u in (DEPLOY, DOCKER, K8S))
    interrupt_once(monkeypatch, cut_at)
    with pytest.raises(KeyboardInterrupt):
        handbook_client.mv(DEPLOY, f"{R}/ops")
    problems = handbook_client.doctor()["problems"]
    assert problems == [
        f"a move from {DEPLOY} to {R}/ops was interrupted: until it is finished, both places may show; "
        f"run the same mv again to finish it: openviking mv {DEPLOY} {R}/ops"
    ]
    result = handbook_client.mv(DEPLOY, f"{R}/ops")  # the same command again
    assert result["resumed"] is True and (result["from"], result["to"]) == (DEPLOY, f"{R}/ops")
    assert handbook_client.read(f"{R}/ops/docker.md") == docker
    assert not exists(handbook_client, DEPLOY)
    assert (
        sum(handbook_client.stat(u)["records"] for u in (f"{R}/ops", f"{R}/ops/docker.md", f"{R}/ops/kubernetes.md"))
        == records
    )
    assert handbook_client.doctor()["problems"] == []
    assert_consistent(handbook_client)


def test_an_interrupted_mv_holds_off_the_writes_it_touches(
    handbook_client: OpenViking, monkeypatch: pytest.MonkeyPatch
) -> None:
    docker = handbook_client.read(DOCKER)
    interrupt_once(monkeypatch, "delete_nodes_below")
    with pytest.raises(KeyboardInterrupt):
        handbook_client.mv(DEPLOY, f"{R}/ops")
    assert {DEPLOY, f"{R}/ops"} <= set(handbook_client.ls(R, recursive=True, simple=True))  # both, mid-move
    # removing the half-made copy must not finish the move first and take the original with it
    for write in (
        lambda: handbook_client.rm(f"{R}/ops", recursive=True),
        lambda: handbook_client.rm(DOCKER),
        lambda: handbook_client.mkdir(f"{R}/ops/more"),
        lambda: handbook_client.mv(README, f"{R}/readme.md"),  # one move at a time
        lambda: handbook_client.reindex(),
    ):
        with pytest.raises(FailedPreconditionError) as refused:
            write()
        assert refused.value.message == (
            f"A move from {DEPLOY} to {R}/ops was interrupted; finish it before changing what it touches"
        )
        assert refused.value.hint == f"openviking mv {DEPLOY} {R}/ops"
    assert handbook_client.read(DOCKER) == docker
    handbook_client.add_memory("The user deploys on Fridays")  # elsewhere: goes ahead, the move stays pending
    assert exists(handbook_client, DEPLOY) and handbook_client.doctor()["problems"]
    assert handbook_client.mv(DEPLOY, f"{R}/ops")["resumed"] is True
    assert not exists(handbook_client, DEPLOY) and handbook_client.read(f"{R}/ops/docker.md") == docker
    assert_consistent(handbook_client)
    other = handbook_client.mv(f"{R}/ops", f"{R}/deploy-again")  # a later mv starts afresh
    assert other == {"from": f"{R}/ops", "to": f"{R}/deploy-again", "moved": 3}


def test_mv_relations_follow(handbook_client: OpenViking) -> None:
    handbook_client.link(AUTH, [DOCKER, DEPLOY], reason="outside in")
    handbook_client.link(DOCKER, [README], reason="inside out")
    handbook_client.link(K8S, [DOCKER], reason="inside inside")
    handbook_client.mv(DEPLOY, f"{R}/ops")
    ops = f"{R}/ops"
    assert sorted(handbook_client.relations(AUTH), key=lambda r: r["uri"]) == [
        {"uri": ops, "reason": "outside in"},
        {"uri": f"{ops}/docker.md", "reason": "outside in"},
    ]
    assert handbook_client.relations(f"{ops}/docker.md") == [{"uri": README, "reason": "inside out"}]
    assert handbook_client.relations(f"{ops}/kubernetes.md") == [{"uri": f"{ops}/docker.md", "reason": "inside inside"}]
    hit = next(h for h in everything(handbook_client, "kubernetes helm") if h.uri == f"{ops}/kubernetes.md")
    assert [r.to_dict() for r in hit.relations] == [{"uri": f"{ops}/docker.md", "reason": "inside inside"}]
    assert_consistent(handbook_client)
    # The old URIs carry nothing when they exist again.
    handbook_client.mkdir(DEPLOY)
    handbook_client.mkdir(DOCKER)
    assert handbook_client.relations(DOCKER) == []
    assert {r["uri"] for r in handbook_client.relations(AUTH)} == {ops, f"{ops}/docker.md"}


def test_mv_keeps_description_tags_and_records(tmp_path: Path, en_tree: Path) -> None:
    with OpenViking(path=tmp_path / "tagged", config=hash_config()) as client:
        client.add_resource(en_tree, tags=["env=prod"])
        client.mkdir(f"{R}/billing", description="Billing design notes")
        records = client.stat(AUTH)["records"]
        client.mv(f"{R}/billing", f"{R}/finance/billing")
        client.mv(AUTH, f"{R}/auth.md")
        assert client.abstract(f"{R}/finance/billing") == "Billing design notes"
        assert client.stat(f"{R}/auth.md")["tags"] == ["env=prod"]
        assert client.stat(f"{R}/auth.md")["records"] == records
        hits = client.find("api keys", target_uri=f"{R}/auth.md", tags="env=prod", score_threshold=-1)
        assert {h.uri for h in hits} == {f"{R}/auth.md"}
        assert all("env=prod" in h.tags for h in hits)
        assert_consistent(client)


def test_mv_into_itself_is_refused(handbook_client: OpenViking) -> None:
    # The tree's state refuses it (412), as a file where a folder is wanted does: no schema of
    # the arguments can say which URIs lie below which.
    error = unharmed(handbook_client, lambda: handbook_client.mv(DEPLOY, f"{DEPLOY}/inner"))
    assert error.code == "FAILED_PRECONDITION"
    assert "into itself" in error.message


def test_a_uri_is_not_linked_to_itself(tmp_path: Path, en_tree: Path) -> None:
    said: list[str] = []
    with OpenViking(path=tmp_path / "store", config=hash_config(), warn=said.append) as client:
        client.add_resource(en_tree, to=H)
        linked = client.link(AUTH, [DOCKER, AUTH], "see also")
        assert linked.linked == 1 and linked.to == [DOCKER]
        assert [r["uri"] for r in client.relations(AUTH)] == [DOCKER]
        assert said == [f"{AUTH} is not linked to itself: a URI's relations are other URIs"]
        assert client.link(AUTH, AUTH).linked == 0


def test_mv_onto_itself_is_refused(handbook_client: OpenViking) -> None:
    unharmed(handbook_client, lambda: handbook_client.mv(DEPLOY, DEPLOY))


@pytest.mark.parametrize(("source", "target"), [(AUTH, README), (DEPLOY, NOTES), (AUTH, NOTES), (DEPLOY, README)])
def test_mv_onto_existing_is_already_exists(handbook_client: OpenViking, source: str, target: str) -> None:
    contents = {u: handbook_client.read(u) for u in (AUTH, README, DOCKER, COOKING)}
    error = unharmed(handbook_client, lambda: handbook_client.mv(source, target))
    assert error.code == "ALREADY_EXISTS"
    assert target in error.message
    assert {u: handbook_client.read(u) for u in contents} == contents


def test_mv_missing_source_is_not_found(handbook_client: OpenViking) -> None:
    error = unharmed(handbook_client, lambda: handbook_client.mv(f"{H}/ghost.md", f"{R}/ghost.md"))
    assert error.code == "NOT_FOUND"
    assert f"{H}/ghost.md" in error.message


def test_mv_under_a_file_is_failed_precondition(handbook_client: OpenViking) -> None:
    error = unharmed(handbook_client, lambda: handbook_client.mv(README, f"{AUTH}/README.md"))
    assert error.code == "FAILED_PRECONDITION"


@pytest.mark.parametrize(
    ("source", "target"), [(R, "viking://agent/elsewhere"), (H, "viking://agent"), (H, "viking://")]
)
def test_mv_scope_roots_are_invalid(handbook_client: OpenViking, source: str, target: str) -> None:
    error = unharmed(handbook_client, lambda: handbook_client.mv(source, target))
    assert error.code == "INVALID_ARGUMENT"


def test_mv_is_segment_aware(handbook_client: OpenViking) -> None:
    handbook_client.mkdir(f"{H}/deploy-notes")
    handbook_client.link(f"{H}/deploy-notes", [AUTH], reason="sibling")
    handbook_client.mv(DEPLOY, f"{R}/ops")
    assert exists(handbook_client, f"{H}/deploy-notes")
    assert handbook_client.relations(f"{H}/deploy-notes") == [{"uri": AUTH, "reason": "sibling"}]
    assert_consistent(handbook_client)


def test_mv_resource_to_memories_changes_context_type(handbook_client: OpenViking) -> None:
    target = f"{MEM}/cases/auth.md"
    handbook_client.mv(AUTH, "viking://user/memories/cases/auth.md")
    assert handbook_client.stat(target)["context_type"] == "memory"
    result = handbook_client.find("authenticate with API keys bearer token", limit=100, score_threshold=-1)
    memories = {h.uri: h for h in result.memories}
    assert target in memories
    assert memories[target].context_type == "memory"
    assert memories[target].category == "cases"
    assert target not in {h.uri for h in result.resources}
    by_type = handbook_client.find("API keys", context_type="memory", limit=100, score_threshold=-1)
    assert target in {h.uri for h in by_type}
    assert_consistent(handbook_client)


def test_mv_directory_to_skills_changes_context_type_of_every_hit(handbook_client: OpenViking) -> None:
    handbook_client.mv(DEPLOY, "viking://agent/skills/deploy")
    result = handbook_client.find("docker kubernetes deployment", limit=100, score_threshold=-1)
    moved = [h for h in result if raw_uri(h.uri).startswith("viking://agent/skills/deploy")]
    assert {raw_uri(h.uri) for h in moved} >= {"viking://agent/skills/deploy/docker.md"}
    assert all(h.context_type == "skill" for h in moved)
    assert all(h in result.skills for h in moved)
    assert_consistent(handbook_client)


def test_mv_memory_back_to_resources(handbook_client: OpenViking) -> None:
    uri = handbook_client.add_memory("The user deploys with docker compose", "cases")["uri"]
    handbook_client.mv(uri, f"{R}/was-memory.md")
    result = handbook_client.find("deploys with docker compose", limit=100, score_threshold=-1)
    hits = {h.uri: h for h in result.resources}
    assert f"{R}/was-memory.md" in hits
    assert hits[f"{R}/was-memory.md"].category == ""
    assert uri not in {h.uri for h in result}
    assert_consistent(handbook_client)


# ----------------------------------------------------------------------------- link, unlink, relations
def test_link_and_relations(handbook_client: OpenViking) -> None:
    result = handbook_client.link(AUTH, [DOCKER, K8S], reason="deploying needs keys")
    assert result == {"from": AUTH, "to": [DOCKER, K8S], "reason": "deploying needs keys", "linked": 2}
    assert sorted(handbook_client.relations(AUTH), key=lambda r: r["uri"]) == [
        {"uri": DOCKER, "reason": "deploying needs keys"},
        {"uri": K8S, "reason": "deploying needs keys"},
    ]
    assert handbook_client.relations(DOCKER) == []  # links are directed
    assert handbook_client.relations(README) == []


def test_link_single_target_string(handbook_client: OpenViking) -> None:
    assert handbook_client.link(AUTH, DOCKER)["linked"] == 1
    assert handbook_client.relations(AUTH) == [{"uri": DOCKER, "reason": ""}]


def test_relink_updates_the_reason(handbook_client: OpenViking) -> None:
    handbook_client.link(AUTH, [DOCKER], reason="first")
    handbook_client.link(AUTH, [DOCKER], reason="second")
    assert handbook_client.relations(AUTH) == [{"uri": DOCKER, "reason": "second"}]


def test_find_hits_carry_relations(handbook_client: OpenViking) -> None:
    handbook_client.link(AUTH, [DOCKER], reason="deploy with keys")
    handbook_client.link(DEPLOY, [AUTH], reason="needs auth")
    hits = list(everything(handbook_client, "authentication api keys"))
    auth = next(h for h in hits if h.uri == AUTH)
    assert [r.to_dict() for r in auth.relations] == [{"uri": DOCKER, "reason": "deploy with keys"}]
    assert auth.to_dict()["relations"] == [{"uri": DOCKER, "reason": "deploy with keys"}]
    deploy_hits = [h for h in hits if raw_uri(h.uri) == DEPLOY]
    assert deploy_hits, "the directory's L0/L1 should be found"
    assert all([r.to_dict() for r in h.relations] == [{"uri": AUTH, "reason": "needs auth"}] for h in deploy_hits)
    others = [h for h in hits if raw_uri(h.uri) not in (AUTH, DEPLOY)]
    assert all(h.relations == [] for h in others)


def test_link_to_missing_is_not_found_and_links_nothing(handbook_client: OpenViking) -> None:
    error = unharmed(handbook_client, lambda: handbook_client.link(AUTH, [DOCKER, f"{H}/ghost.md"], reason="x"))
    assert error.code == "NOT_FOUND"
    assert f"{H}/ghost.md" in error.message
    assert handbook_client.relations(AUTH) == []


def test_link_from_missing_is_not_found(handbook_client: OpenViking) -> None:
    error = unharmed(handbook_client, lambda: handbook_client.link(f"{H}/ghost.md", [AUTH]))
    assert error.code == "NOT_FOUND"


def test_link_without_targets_is_invalid(handbook_client: OpenViking) -> None:
    assert unharmed(handbook_client, lambda: handbook_client.link(AUTH, [])).code == "INVALID_ARGUMENT"


@pytest.mark.parametrize(
    ("target", "code"), [(f"{H}/../x", "PERMISSION_DENIED"), ("viking://nowhere/x", "INVALID_URI")]
)
def test_link_bad_uri(handbook_client: OpenViking, target: str, code: str) -> None:
    assert unharmed(handbook_client, lambda: handbook_client.link(AUTH, [target])).code == code


def test_unlink(handbook_client: OpenViking) -> None:
    handbook_client.link(AUTH, [DOCKER, K8S], reason="r")
    assert handbook_client.unlink(AUTH, DOCKER) == {"from": AUTH, "to": DOCKER, "removed": 1}
    assert handbook_client.relations(AUTH) == [{"uri": K8S, "reason": "r"}]
    auth = next(h for h in everything(handbook_client, "authentication") if h.uri == AUTH)
    assert [r.uri for r in auth.relations] == [K8S]
    assert handbook_client.unlink(AUTH, DOCKER) == {"from": AUTH, "to": DOCKER, "removed": 0}
    assert handbook_client.unlink(AUTH, f"{H}/ghost.md")["removed"] == 0
    assert handbook_client.relations(AUTH) == [{"uri": K8S, "reason": "r"}]


def test_relations_of_missing_uri_is_not_found(handbook_client: OpenViking) -> None:
    error = unharmed(handbook_client, lambda: handbook_client.relations(f"{H}/ghost.md"))
    assert error.code == "NOT_FOUND"


# ----------------------------------------------------------------------------- CLI forms
def test_cli_mkdir(handbook_ov: Cli, sdk: OpenViking) -> None:
    assert one_line(handbook_ov("mkdir", f"{R}/projects/alpha", "--description", "Project alpha")) == (
        f"Created {R}/projects/alpha"
    )
    assert ok_json(handbook_ov("mkdir", f"{R}/projects/beta", "-o", "json")) == {
        "uri": f"{R}/projects/beta",
        "created": True,
    }
    assert sdk.stat(f"{R}/projects/alpha")["abstract"] == "Project alpha"
    abstract = handbook_ov("abstract", f"{R}/projects/alpha")
    assert abstract.code == 0 and "Project alpha" in abstract.out


@pytest.mark.parametrize(
    ("argv", "code", "status", "needle"),
    [
        (["mkdir", H], "ALREADY_EXISTS", 1, "already exists"),
        (["mkdir", "viking://resources"], "INVALID_ARGUMENT", 2, "scope roots"),
        (["mkdir", f"{AUTH}/sub"], "FAILED_PRECONDITION", 1, "is a file"),
        (["mkdir", f"{R}/../x"], "PERMISSION_DENIED", 2, "'..'"),
        (["rm", DEPLOY], "FAILED_PRECONDITION", 1, "--recursive"),
        (["rm", "viking://", "-r"], "INVALID_ARGUMENT", 2, "viking://"),
        (["rm", "viking://nowhere/x"], "INVALID_URI", 2, "nowhere"),
        (["mv", DEPLOY, f"{DEPLOY}/inner"], "FAILED_PRECONDITION", 1, "into itself"),
        (["mv", AUTH, README], "ALREADY_EXISTS", 1, "already exists"),
        (["mv", f"{H}/ghost.md", f"{R}/ghost.md"], "NOT_FOUND", 1, "ghost.md"),
        (["mv", README, f"{AUTH}/README.md"], "FAILED_PRECONDITION", 1, "is a file"),
        # an entry named as a directory's summary would hide behind it: read and rm reach the summary
        (["mv", AUTH, f"{H}/.abstract.md"], "INVALID_URI", 2, "'.abstract.md' is the name a directory's abstract"),
        (["mv", DEPLOY, f"{H}/.overview.md"], "INVALID_URI", 2, "'.overview.md' is the name a directory's overview"),
        (["mkdir", f"{H}/.overview.md/inner"], "INVALID_URI", 2, "cannot name a file or folder"),
        (["add-resource", __file__, "--to", f"{H}/.abstract.md"], "INVALID_URI", 2, "cannot name a file or folder"),
        (["link", AUTH, DOCKER, f"{H}/ghost.md", "--reason", "x"], "NOT_FOUND", 1, "ghost.md"),
        (["link", f"{H}/ghost.md", AUTH], "NOT_FOUND", 1, "ghost.md"),
        (["link", AUTH, f"{H}/../x"], "PERMISSION_DENIED", 2, "'..'"),
        (["relations", f"{H}/ghost.md"], "NOT_FOUND", 1, "ghost.md"),
        (["unlink", AUTH, "viking://nowhere/x"], "INVALID_URI", 2, "nowhere"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_cli_bad_input(handbook_ov: Cli, tmp_path: Path, argv: list[str], code: str, status: int, needle: str) -> None:
    cli_unharmed(handbook_ov, tmp_path / "store", argv, code, status, needle)


def test_cli_link_without_target_is_usage_error(handbook_ov: Cli) -> None:
    result = handbook_ov("link", AUTH)
    assert result.code == 2
    assert result.out == ""


def test_cli_rm(handbook_ov: Cli, sdk: OpenViking) -> None:
    assert one_line(handbook_ov("rm", AUTH)) == f"Removed 1 node at {AUTH}"
    assert ok_json(handbook_ov("rm", DEPLOY, "-r", "-o", "json")) == {"uri": DEPLOY, "removed": 3}
    assert one_line(handbook_ov("rm", NOTES, "--recursive")) == f"Removed 2 nodes at {NOTES}"
    assert one_line(handbook_ov("rm", f"{H}/ghost.md")) == f"Nothing at {H}/ghost.md"
    assert ok_json(handbook_ov("rm", f"{H}/ghost.md", "--json")) == {"uri": f"{H}/ghost.md", "removed": 0}
    stat = handbook_ov("stat", DOCKER, "-o", "json")
    cli_error(stat, "NOT_FOUND", 1)
    found = ok_json(handbook_ov("find", "docker kubernetes pancakes api keys", "-t", "-1", "-n", "1000", "-o", "json"))
    uris = {raw_uri(h["uri"]) for group in ("memories", "resources", "skills") for h in found[group]}
    assert uris.isdisjoint({AUTH, DEPLOY, DOCKER, K8S, NOTES, COOKING})
    assert_consistent(sdk)


def test_cli_rm_directory_message_in_table_form(handbook_ov: Cli) -> None:
    result = handbook_ov("rm", DEPLOY)
    assert result.code == 1 and result.out == ""
    lines = result.err.splitlines()
    assert lines[0] == f"Error: Cannot remove directory without --recursive: {DEPLOY}"
    assert lines[1] == f"Hint: openviking rm -r {DEPLOY}"


def test_cli_mv(handbook_ov: Cli, sdk: OpenViking) -> None:
    content = sdk.read(AUTH)
    assert one_line(handbook_ov("mv", AUTH, f"{R}/auth.md")) == f"Moved {AUTH} -> {R}/auth.md"
    assert ok_json(handbook_ov("mv", DEPLOY, f"{R}/ops", "-o", "json")) == {
        "from": DEPLOY,
        "to": f"{R}/ops",
        "moved": 3,
    }
    read = handbook_ov("read", f"{R}/auth.md")
    assert read.code == 0 and read.out.rstrip("\n") == content.rstrip("\n")
    cli_error(handbook_ov("read", AUTH, "-o", "json"), "NOT_FOUND", 1)
    found = ok_json(handbook_ov("find", "docker api keys", "-t", "-1", "-n", "1000", "-o", "json"))
    uris = {raw_uri(h["uri"]) for h in found["resources"]}
    assert {f"{R}/auth.md", f"{R}/ops/docker.md"} <= uris
    assert uris.isdisjoint({AUTH, DEPLOY, DOCKER, K8S})
    assert_consistent(sdk)


def test_cli_mv_into_memories_json_find(handbook_ov: Cli) -> None:
    ok_json(handbook_ov("mv", AUTH, "viking://user/memories/cases/auth.md", "-o", "json"))
    found = ok_json(handbook_ov("find", "API keys bearer token", "-u", "viking://~/memories", "-t", "-1", "-o", "json"))
    hits = {h["uri"]: h for h in found["memories"]}
    assert hits[f"{MEM}/cases/auth.md"]["context_type"] == "memory"
    assert hits[f"{MEM}/cases/auth.md"]["category"] == "cases"
    assert found["resources"] == []


def test_cli_link_relations_unlink(handbook_ov: Cli) -> None:
    line = one_line(handbook_ov("link", AUTH, DOCKER, K8S, "--reason", "deploying needs keys"))
    assert line == f"Linked {AUTH} -> {DOCKER}, {K8S}"
    assert ok_json(handbook_ov("link", README, AUTH, "--reason", "start here", "-o", "json")) == {
        "from": README,
        "to": [AUTH],
        "reason": "start here",
        "linked": 1,
    }
    table = handbook_ov("relations", AUTH)
    assert table.code == 0 and table.err == ""
    lines = table.out.splitlines()
    assert sorted(lines) == sorted([f"{DOCKER}  deploying needs keys", f"{K8S}  deploying needs keys"])
    jsonl = handbook_ov("relations", AUTH, "-o", "jsonl")
    assert jsonl.code == 0 and jsonl.err == ""
    assert sorted(jsonl.json_lines(), key=lambda r: r["uri"]) == [
        {"uri": DOCKER, "reason": "deploying needs keys"},
        {"uri": K8S, "reason": "deploying needs keys"},
    ]
    assert all(line.startswith("{") for line in jsonl.out.splitlines())  # compact, one per line
    assert sorted(ok_json(handbook_ov("relations", AUTH, "-o", "json")), key=lambda r: r["uri"]) == [
        {"uri": DOCKER, "reason": "deploying needs keys"},
        {"uri": K8S, "reason": "deploying needs keys"},
    ]
    found = ok_json(handbook_ov("find", "authenticate API keys", "-u", AUTH, "-t", "-1", "-o", "json"))
    auth = next(h for h in found["resources"] if h["uri"] == AUTH)
    assert sorted(auth["relations"], key=lambda r: r["uri"]) == [
        {"uri": DOCKER, "reason": "deploying needs keys"},
        {"uri": K8S, "reason": "deploying needs keys"},
    ]
    items = handbook_ov("find", "authenticate API keys", "-u", AUTH, "-t", "-1", "-o", "jsonl")
    assert items.code == 0
    assert {r["uri"] for r in next(i for i in items.json_lines() if i["uri"] == AUTH)["relations"]} == {DOCKER, K8S}

    assert one_line(handbook_ov("unlink", AUTH, DOCKER)) == f"Unlinked {AUTH} -> {DOCKER}"
    assert ok_json(handbook_ov("unlink", AUTH, DOCKER, "-o", "json")) == {"from": AUTH, "to": DOCKER, "removed": 0}
    assert one_line(handbook_ov("unlink", AUTH, DOCKER)) == "No such relation"
    assert handbook_ov("relations", AUTH, "-o", "jsonl").json_lines() == [
        {"uri": K8S, "reason": "deploying needs keys"}
    ]


def test_cli_relations_empty(handbook_ov: Cli) -> None:
    table = handbook_ov("relations", AUTH)
    assert table.code == 0 and table.out == "" and table.err == ""
    jsonl = handbook_ov("relations", AUTH, "-o", "jsonl")
    assert jsonl.code == 0 and jsonl.out == ""
    assert ok_json(handbook_ov("relations", AUTH, "-o", "json")) == []


def test_cli_rm_removes_relations_shown_by_cli(handbook_ov: Cli) -> None:
    assert handbook_ov("link", AUTH, DOCKER, README, "--reason", "r").code == 0
    assert handbook_ov("rm", DEPLOY, "-r").code == 0
    assert handbook_ov("relations", AUTH, "-o", "jsonl").json_lines() == [{"uri": README, "reason": "r"}]


# ----------------------------------------------------------------------------- consistency property
POOL = [
    f"{R}/a",
    f"{R}/b",
    f"{R}/a/c",
    f"{R}/b/c",
    f"{R}/a/c/d",
    f"{MEM}/x",
    f"{MEM}/moved",
    "viking://agent/skills/s",
    f"{R}/a/one.md/sub",  # below a file: mkdir and mv there must be refused
]
TEXTS = ["The user likes short answers", "The user lives in Lisbon", "The user prefers tea"]
CATEGORIES = [None, "prefs", "events"]
REASONS = ["", "see also", "depends on"]

OPS = st.one_of(
    st.tuples(st.just("mkdir"), st.integers(0, 50)),
    st.tuples(st.just("memory"), st.integers(0, len(TEXTS) - 1), st.integers(0, len(CATEGORIES) - 1)),
    st.tuples(st.just("mv"), st.integers(0, 50), st.integers(0, 50)),
    st.tuples(st.just("rm"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("link"), st.integers(0, 50), st.integers(0, 50), st.integers(0, len(REASONS) - 1)),
)


def _within(uri: str, top: str) -> bool:
    return uri == top or uri.startswith(top + "/")


def _ancestors(uri: str) -> list[str]:
    """Ancestors of depth >= 2."""
    parts = uri[len("viking://") :].split("/")
    return ["viking://" + "/".join(parts[:n]) for n in range(2, len(parts))]


class Model:
    """What the store should hold: nodes (uri -> is_dir) and links ((from, to) -> reason)."""

    def __init__(self) -> None:
        self.nodes: dict[str, bool] = {}
        self.links: dict[tuple[str, str], str] = {}
        self.last_move: tuple[str, str] | None = None

    def pick(self, index: int) -> str:
        candidates = sorted(set(POOL) | set(self.nodes))
        return candidates[index % len(candidates)]

    def _parents_ok(self, uri: str) -> bool:
        return all(self.nodes.get(a, True) for a in _ancestors(uri))

    def _add_parents(self, uri: str) -> None:
        for ancestor in _ancestors(uri):
            self.nodes[ancestor] = True

    def mkdir(self, uri: str) -> str | None:
        if uri in self.nodes:
            return "ALREADY_EXISTS"
        if not self._parents_ok(uri):
            return "FAILED_PRECONDITION"
        self._add_parents(uri)
        self.nodes[uri] = True
        return None

    def memory(self, uri: str) -> str | None:
        if self.nodes.get(uri) is True:
            return "ALREADY_EXISTS"
        if not self._parents_ok(uri):
            return "FAILED_PRECONDITION"
        self._add_parents(uri)
        self.nodes[uri] = False
        return None

    def mv(self, source: str, target: str) -> str | None:
        if _within(target, source):
            return "FAILED_PRECONDITION"
        if source not in self.nodes:
            # The same mv run again once it finished has nothing left to do, as rm has.
            return None if (source, target) == self.last_move and target in self.nodes else "NOT_FOUND"
        if target in self.nodes:
            return "ALREADY_EXISTS"
        if not self._parents_ok(target):
            return "FAILED_PRECONDITION"

        def moved(uri: str) -> str:
            return target + uri[len(source) :] if _within(uri, source) else uri

        self.nodes = {moved(u): d for u, d in self.nodes.items()}
        self._add_parents(target)
        self.links = {(moved(f), moved(t)): r for (f, t), r in self.links.items()}
        self.last_move = (source, target)
        return None

    def rm(self, uri: str, recursive: bool) -> str | None:
        if self.nodes.get(uri) is True and not recursive:
            return "FAILED_PRECONDITION"
        self.nodes = {u: d for u, d in self.nodes.items() if not _within(u, uri)}
        self.links = {(f, t): r for (f, t), r in self.links.items() if not (_within(f, uri) or _within(t, uri))}
        return None

    def link(self, source: str, target: str, reason: str) -> str | None:
        if source not in self.nodes or target not in self.nodes:
            return "NOT_FOUND"
        if source != target:  # nothing is its own relation: a link to itself adds none
            self.links[(source, target)] = reason
        return None


def _apply(client: OpenViking, model: Model, op: tuple[Any, ...]) -> tuple[str, str | None, str | None]:
    """Run one operation on the store and the model; (description, expected code, actual code)."""
    kind = op[0]
    call: Callable[[], Any]
    if kind == "mkdir":
        uri = model.pick(op[1])
        expected = model.mkdir(uri)
        call, text = (lambda: client.mkdir(uri)), f"mkdir {uri}"
    elif kind == "memory":
        memory_text, category = TEXTS[op[1]], CATEGORIES[op[2]]
        folder = f"{MEM}/{category}" if category else MEM
        uri = f"{folder}/{memory_name(memory_text)}"
        expected = model.memory(uri)
        call, text = (lambda: client.add_memory(memory_text, category)), f"add-memory {uri}"
    elif kind == "mv":
        source, target = model.pick(op[1]), model.pick(op[2])
        expected = model.mv(source, target)
        call, text = (lambda: client.mv(source, target)), f"mv {source} {target}"
    elif kind == "rm":
        uri, recursive = model.pick(op[1]), op[2]
        expected = model.rm(uri, recursive)
        call, text = (lambda: client.rm(uri, recursive=recursive)), f"rm {'-r ' if recursive else ''}{uri}"
    else:
        source, target, reason = model.pick(op[1]), model.pick(op[2]), REASONS[op[3]]
        expected = model.link(source, target, reason)
        call, text = (lambda: client.link(source, [target], reason)), f"link {source} {target}"
    try:
        call()
    except OpenVikingError as exc:
        return text, expected, exc.code
    return text, expected, None


def _check(client: OpenViking, model: Model, history: list[str]) -> None:
    where = " ; ".join(history)
    nodes = node_set(client)
    hits = hit_set(client, "the user likes answers")
    # The invariant: every record URI and every relation endpoint exists as a node.
    assert hits <= set(nodes), f"records without a node {sorted(hits - set(nodes))} after: {where}"
    for uri in nodes:
        for link in client.relations(uri):
            assert link["uri"] in nodes, f"relation {uri} -> {link['uri']} dangles after: {where}"
    # And nothing was lost or invented: the store is what the model says.
    assert nodes == model.nodes, f"nodes differ from the model after: {where}"
    assert hits == set(model.nodes), f"records differ from the model after: {where}"
    actual_links = {(u, link["uri"]): link["reason"] for u in nodes for link in client.relations(u)}
    assert actual_links == model.links, f"relations differ from the model after: {where}"


@settings(
    max_examples=8,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(ops=st.lists(OPS, min_size=1, max_size=10))
@example(ops=[("link", 0, 0, 0)])  # a URI that does not exist, linked to itself: NOT_FOUND first
def test_writes_keep_the_store_consistent(ops: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tree = make_tree(root / "seed", {"a/one.md": "# One\n\nThe first page.\n", "b/two.md": EN_FILES["auth.md"]})
        with OpenViking(path=root / "store", config=hash_config(), warn=lambda _message: None) as client:
            client.add_resource(tree / "a", to=f"{R}/a")
            client.add_resource(tree / "b", to=f"{R}/b")
            model = Model()
            model.nodes.update({f"{R}/a": True, f"{R}/a/one.md": False, f"{R}/b": True, f"{R}/b/two.md": False})
            history: list[str] = []
            _check(client, model, history)
            for op in ops:
                text, expected, actual = _apply(client, model, op)
                history.append(f"{text} -> {actual or 'ok'}")
                assert actual == expected, f"{text}: expected {expected or 'success'}, got {actual or 'success'}"
                _check(client, model, history)


@pytest.mark.parametrize("scope", ["viking://resources", "viking://user", "viking://agent"])
def test_rm_scope_root_is_refused(handbook_client: OpenViking, scope: str) -> None:
    error = unharmed(handbook_client, lambda: handbook_client.rm(scope, recursive=True))
    assert error.code == "INVALID_ARGUMENT"
    assert error.message == f"Refusing to remove the scope root {scope}"
    assert f"openviking rm -r {scope}/<name>" in (error.hint or "")


def test_rm_scope_root_from_the_cli(handbook_ov: Callable[..., CliResult], tmp_path: Path) -> None:
    cli_unharmed(
        handbook_ov, tmp_path / "store", ["rm", "-r", R], "INVALID_ARGUMENT", 2, "Refusing to remove the scope root"
    )


def between_check_and_write(monkeypatch: pytest.MonkeyPatch, meanwhile: Callable[[], None]) -> None:
    """Run ``meanwhile`` (another process's write) once, right after the next write's first hold
    of the store's lock (where it checked the store), before it takes the lock again to write."""
    import contextlib

    from openviking.store.lance import LanceStore

    real = LanceStore.write_lock
    done: list[bool] = []

    @contextlib.contextmanager
    def lock_then_meanwhile(self: LanceStore) -> Iterator[None]:
        with real(self):
            yield
        if self.write_checks and self._lock_depth == 0 and not done:  # a guarded write let go of the lock
            done.append(True)
            meanwhile()

    monkeypatch.setattr(LanceStore, "write_lock", lock_then_meanwhile)


def test_a_move_left_unfinished_meanwhile_stops_a_write_that_touches_it(
    handbook_client: OpenViking, monkeypatch: pytest.MonkeyPatch
) -> None:
    docker = handbook_client.read(DOCKER)

    def another_process_moves_and_is_killed() -> None:
        with OpenViking(path=handbook_client.store_path, config=hash_config()) as other:
            interrupt_once(monkeypatch, "delete_nodes_below")
            with pytest.raises(KeyboardInterrupt):
                other.mv(DEPLOY, f"{R}/ops")

    between_check_and_write(monkeypatch, another_process_moves_and_is_killed)
    extra = make_tree(Path(tempfile.mkdtemp()) / "extra", {"note.md": "# Note\n\nMore on deploying.\n"})
    with pytest.raises(FailedPreconditionError, match=f"A move from {DEPLOY} to {R}/ops was interrupted"):
        handbook_client.add_resource(extra, to=f"{R}/ops/extra")  # it had passed the check before the move began
    monkeypatch.undo()
    assert handbook_client.read(DOCKER) == docker  # the original is whole
    assert handbook_client.mv(DEPLOY, f"{R}/ops")["resumed"] is True
    assert_consistent(handbook_client)


@pytest.mark.parametrize(
    ("mine", "theirs", "their_identity"),
    [
        (
            {"embedding": {"dense": {"provider": "hash"}}},
            {"embedding": {"dense": {"provider": "hash", "dimension": 64}}},
            "hash:v1-64",
        ),
        ({}, {"embedding": {"dense": {"provider": "hash", "dimension": 384}}}, "hash:v1-384"),  # the same width
    ],
    ids=["another-width", "same-width"],
)
def test_a_store_bound_meanwhile_by_another_embedder_keeps_one_embedder(
    tmp_path: Path,
    en_tree: Path,
    monkeypatch: pytest.MonkeyPatch,
    mine: dict[str, Any],
    theirs: dict[str, Any],
    their_identity: str,
) -> None:
    from openviking.config import config_from_dict

    store = tmp_path / "fresh"

    def another_process_writes_to_the_empty_store_first() -> None:
        with OpenViking(path=store, config=config_from_dict(theirs)) as other:
            other.mkdir(f"{R}/empty")  # its L0/L1 vectors are the store's first

    between_check_and_write(monkeypatch, another_process_writes_to_the_empty_store_first)
    with OpenViking(path=store, config=config_from_dict(mine)) as client:
        with pytest.raises(FailedPreconditionError, match=f"built with the embedder '{their_identity}'"):
            client.add_resource(en_tree)  # it stops before writing its vectors beside theirs
    monkeypatch.undo()
    with OpenViking(path=store, config=config_from_dict(theirs)) as other:
        assert other.doctor()["problems"] == []
        assert other.find("empty", score_threshold=-1).total > 0  # one embedder's vectors, answering
