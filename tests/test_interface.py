"""The typed interface: every client implements it, and every result reads as its JSON.

``OpenVikingClient`` is the one description of the tool. These tests hold the embedded
client to it (same methods, same parameters, same defaults), check that the results'
``to_dict()`` and ``from_dict()`` round-trip, and that upstream's dict-style reads work.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from helpers import EN_FILES, hash_config, make_tree

import openviking as ov
from openviking.contract.hits import FindResult
from openviking.contract.interface import OpenVikingClient
from openviking.contract.results import (
    Entry,
    GlobResult,
    GrepMatch,
    GrepResult,
    Record,
    Relation,
    RemoveResult,
    SessionDeleted,
    SessionInfo,
    Stat,
)

H = "viking://resources/handbook"


def interface_methods() -> list[str]:
    return sorted(
        name
        for name, member in vars(OpenVikingClient).items()
        if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property))
    )


def _parameters(function: object) -> list[tuple[str, object, object]]:
    signature = inspect.signature(function)  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


@pytest.mark.parametrize("name", interface_methods())
def test_the_embedded_client_has_every_method_of_the_interface(name: str) -> None:
    declared = vars(OpenVikingClient)[name]
    implemented = getattr(ov.OpenViking, name)
    if isinstance(declared, property):
        assert isinstance(implemented, property), name
        return
    assert _parameters(implemented) == _parameters(declared), name


def test_the_embedded_client_is_an_interface_client(tmp_path: Path) -> None:
    client = ov.OpenViking(path=tmp_path / "store", config=hash_config())
    assert isinstance(client, OpenVikingClient)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> ov.OpenViking:
    base = tmp_path_factory.mktemp("interface")
    tree = make_tree(base / "handbook", EN_FILES)
    client = ov.OpenViking(path=base / "store", config=hash_config())
    client.add_resource(tree)
    client.link(f"{H}/auth.md", f"{H}/deploy/docker.md", reason="both about running it")
    client.add_message("s1", "user", "We are designing the OAuth login flow.")
    return client


def _round_trip(result: Record) -> None:
    data = result.to_dict()
    again = type(result).from_dict(json.loads(json.dumps(data)))
    assert again.to_dict() == data
    assert dict(result) == data  # a record is the mapping of its JSON


def test_every_result_round_trips_through_its_json(client: ov.OpenViking) -> None:
    for result in [
        client.grep(H, "docker"),
        client.grep(H, "docker", count=True),
        client.grep(H, "docker", files_with_matches=True),
        client.grep(H, "docker", spans=True),
        client.glob("**/*.md", H),
        *client.ls(H),
        *client.tree(H),
        client.stat(f"{H}/auth.md"),
        client.stat(H),
        client.stat("viking://"),
        client.stat(f"{H}/.abstract.md"),
        client.stat("viking://user/default/sessions/s1"),
        *client.relations(f"{H}/auth.md"),
        client.get_session("s1"),
        *client.list_sessions(),
        client.doctor(),
    ]:
        _round_trip(result)  # type: ignore[arg-type]


def test_find_results_round_trip_through_their_json(client: ov.OpenViking) -> None:
    result = client.find("docker deployment", target_uri=H, telemetry=True)
    data = result.to_dict()
    assert FindResult.from_dict(json.loads(json.dumps(data))).to_dict() == data


def test_the_brief_reads_grep_and_glob_and_relations_as_dicts(client: ov.OpenViking) -> None:
    """grep, glob and relations read as the dicts upstream's SDK returns (``results["matches"]``)."""
    results = client.grep(H, "docker", case_insensitive=True)
    assert results["count"] == len(results["matches"]) > 0
    for match in results["matches"]:
        assert match["uri"].startswith(H) and isinstance(match["line"], int) and match["content"]
    found = client.glob("**/*.md", H)
    assert found["count"] == len(found["matches"]) == 5
    for rel in client.relations(f"{H}/auth.md"):
        assert (rel["uri"], rel["reason"]) == (f"{H}/deploy/docker.md", "both about running it")


def test_a_record_equals_the_dict_of_its_json() -> None:
    assert Relation("viking://a", "why") == {"uri": "viking://a", "reason": "why"}
    assert {"uri": "viking://a", "reason": "why"} == Relation("viking://a", "why")
    assert [GrepMatch("viking://a", 3, "x")] == [{"uri": "viking://a", "line": 3, "content": "x"}]
    assert GlobResult(["viking://a"], 1) != {"matches": [], "count": 0}


def test_optional_keys_are_left_out_as_before() -> None:
    assert Entry("viking://a").to_dict() == {
        "uri": "viking://a",
        "size": 0,
        "isDir": False,
        "modTime": None,
        "abstract": "",
    }
    assert "rel_path" in Entry("viking://a", rel_path="a").to_dict()
    assert RemoveResult("viking://a", 2).to_dict() == {"uri": "viking://a", "removed": 2}
    gone = RemoveResult("viking://s", 1, session=SessionDeleted("s", "viking://s", True, 3)).to_dict()
    assert gone["session"] == {"session_id": "s", "uri": "viking://s", "deleted": True, "messages_deleted": 3}
    assert list(GrepResult(counts=[]).to_dict()) == ["counts", "count", "match_count", "files_scanned"]
    assert "messages" not in SessionInfo("s", "viking://s", "u").to_dict()


def test_stat_keeps_the_keys_of_each_kind() -> None:
    sidecar = Stat("viking://a/.abstract.md", ".abstract.md", False, 3, "resource", kind="sidecar")
    assert list(sidecar.to_dict()) == ["uri", "name", "isDir", "size", "context_type", "hidden"]
    session = Stat("viking://s", "s", True, 0, "session", kind="session", message_count=2, abstract="x")
    assert list(session.to_dict())[-2:] == ["message_count", "abstract"]
    root = Stat("viking://", "", True, 0, "resource", children=3)
    assert "records" not in root.to_dict() and root.to_dict()["children"] == 3
