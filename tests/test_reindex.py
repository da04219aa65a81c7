"""`openviking reindex`: re-embedding after a model change, in place, and after Ctrl-C."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from helpers import EN_FILES, HASH64_CONF, HASH_CONF, hit_uris, make_tree, raw_uri, write_config

from openviking.config import config_from_dict
from openviking.embedded.client import OpenViking
from openviking.errors import FailedPreconditionError, NotFoundError

ROOT = "viking://resources/handbook"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    source = make_tree(tmp_path / "src", EN_FILES)
    with OpenViking(path=tmp_path / "store", config=config_from_dict(HASH_CONF)) as client:
        client.add_resource(source, to=ROOT)
    return tmp_path / "store"


def uris(client: OpenViking, query: str = "authentication api keys") -> list[str]:
    return hit_uris(client.find(query, target_uri=ROOT, limit=50, score_threshold=-1))


def test_a_new_embedder_is_refused_until_reindex(store: Path) -> None:
    before = uris(OpenViking(path=store, config=config_from_dict(HASH_CONF)))
    client = OpenViking(path=store, config=config_from_dict(HASH64_CONF))
    with pytest.raises(FailedPreconditionError, match="hash:v1-1024") as info:
        client.find("authentication")
    assert "reindex" in (info.value.hint or "")
    result = client.reindex()
    assert result["switched_table"] is True
    assert (result["embedder"], result["previous_embedder"]) == ("hash:v1-64", "hash:v1-1024")
    assert result["files"] == len(EN_FILES)
    after = uris(client)
    # The same files and directories, now 64-dimensional (a directory may now be best met by
    # its other level, so compare what each hit is about, not which of its two records).
    assert sorted(map(raw_uri, after)) == sorted(map(raw_uri, before))
    assert after[0] == f"{ROOT}/auth.md"
    meta = client._open().meta()
    assert meta["embedder"] == "hash:v1-64" and meta["dimension"] == "64" and not meta.get("reindex_table")
    assert client._open().records_dimension() == 64
    with pytest.raises(FailedPreconditionError):  # and the old embedder is the stranger now
        OpenViking(path=store, config=config_from_dict(HASH_CONF)).find("authentication")


def test_a_long_lived_client_sees_another_clients_reindex(store: Path) -> None:
    """A client that has found keeps no stale idea of the store's embedder: another client's
    reindex to a new embedder makes its next find refuse, as a fresh client's would."""
    old = OpenViking(path=store, config=config_from_dict(HASH_CONF))
    assert uris(old)[0] == f"{ROOT}/auth.md"
    new = OpenViking(path=store, config=config_from_dict(HASH64_CONF))
    new.reindex()
    with pytest.raises(FailedPreconditionError, match="hash:v1-64"):
        old.find("authentication")
    assert uris(new)[0] == f"{ROOT}/auth.md"


def test_reindex_with_the_same_embedder_refreshes_in_place(store: Path) -> None:
    client = OpenViking(path=store, config=config_from_dict(HASH_CONF))
    before = uris(client)
    result = client.reindex(f"{ROOT}/deploy")
    assert result["switched_table"] is False
    assert result["records_embedded"] == 0  # nothing changed in what is embedded
    assert result["files"] == 2
    assert uris(client) == before
    listed = client.ls("viking://", recursive=True, simple=True)
    client.reindex()  # all of it: no node for viking:// itself, which glob and ls would list
    assert client.ls("viking://", recursive=True, simple=True) == listed
    assert "viking://" not in client.glob("*")["matches"] and client._open().get_node("viking://") is None


def test_reindex_of_a_uri_that_does_not_exist_is_not_found(store: Path, cli: Any) -> None:
    client = OpenViking(path=store, config=config_from_dict(HASH_CONF))
    with pytest.raises(NotFoundError, match=f"Nothing to reindex: {ROOT}/nope does not exist"):
        client.reindex(f"{ROOT}/nope")  # a typo is NOT_FOUND, not "Re-embedded 0 files and 1 directories"
    assert client.reindex("viking://user/default/memories")["files"] == 0  # the layout's folders exist
    conf = write_config(store.parent / "ov.conf", HASH_CONF)
    out = cli("reindex", f"{ROOT}/nope", "--store", store, "--config", conf)
    assert (out.code, out.out) == (1, "")
    assert out.err.splitlines()[0] == f"Error: Nothing to reindex: {ROOT}/nope does not exist"


def test_reindex_of_one_uri_with_a_new_embedder_is_refused(store: Path) -> None:
    client = OpenViking(path=store, config=config_from_dict(HASH64_CONF))
    with pytest.raises(FailedPreconditionError, match="re-embeds everything"):
        client.reindex(f"{ROOT}/deploy")
    assert client._open().meta()["embedder"] == "hash:v1-1024"


def interrupted_reindex(store: Path, monkeypatch: pytest.MonkeyPatch, files_done: int) -> OpenViking:
    """A client that started a model-change reindex (hash 1024 -> 64 dimensions) and was
    stopped by a Ctrl-C once ``files_done`` files were in the new table (a file per commit)."""
    import openviking.ingest.files as ingest_files

    monkeypatch.setattr(ingest_files, "BATCH_CHUNKS", 1)  # one file per commit, to stop in between
    client = OpenViking(path=store, config=config_from_dict(HASH64_CONF))
    embedder = client.embedder()
    original = embedder.embed_documents
    calls = {"n": 0}

    def interrupted(texts: list[str]) -> Any:
        calls["n"] += 1
        if calls["n"] == files_done + 1:
            raise KeyboardInterrupt
        return original(texts)

    embedder.embed_documents = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        client.reindex()
    embedder.embed_documents = original  # type: ignore[method-assign]
    return client


def test_an_interrupted_reindex_keeps_the_store_and_resumes(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    interrupted_reindex(store, monkeypatch, files_done=2).close()
    # Still answering with the embedder it was built with, half a new table aside.
    old = OpenViking(path=store, config=config_from_dict(HASH_CONF))
    assert uris(old)[0] == f"{ROOT}/auth.md"
    meta = old._open().meta()
    assert meta["embedder"] == "hash:v1-1024" and meta["reindex_table"]
    old.close()
    again = OpenViking(path=store, config=config_from_dict(HASH64_CONF))
    result = again.reindex()
    assert result["switched_table"] is True
    assert 0 < result["files"] < len(EN_FILES)  # only what the first run had not done
    assert uris(again)[0] == f"{ROOT}/auth.md"
    assert len(set(uris(again))) == len(uris(again))


def test_writes_between_an_interrupted_reindex_and_its_resumption_are_not_lost(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A resumed run that skipped every file it had finished would keep the old records of a file
    # edited, moved or removed in between: find would return removed files, moved ones twice,
    # and never the edited text.
    client = interrupted_reindex(store, monkeypatch, files_done=3)
    pending = client._open().pending_records_table()
    done = sorted({row["uri"] for row in client._open()._query_rows(pending, None, ["uri"])} - {ROOT})
    client.close()
    edited, moved, removed = (uri for uri in done if not uri.endswith("/handbook"))
    with OpenViking(path=store, config=config_from_dict(HASH_CONF)) as old:  # the store's own embedder
        (tmp_path / "new.md").write_text("# Quokkas\n\nThe quokka lives on Rottnest Island.\n")
        old.add_resource(tmp_path / "new.md", to=edited)
        old.mv(moved, f"{ROOT}/elsewhere/{moved.rsplit('/', 1)[1]}")
        old.rm(removed)
    again = OpenViking(path=store, config=config_from_dict(HASH64_CONF))
    again.reindex()
    assert again._open().pending_records_table() is None and not (store / ".openviking.reindex").exists()
    stored = set(again.ls("viking://resources", recursive=True, simple=True))
    found = [raw_uri(hit.uri) for hit in again.find("the", target_uri=ROOT, limit=1000, score_threshold=-1)]
    assert set(found) <= stored and moved not in found and removed not in found
    assert f"{ROOT}/elsewhere/{moved.rsplit('/', 1)[1]}" in found
    assert len(found) == len(set(found))
    quokka = again.find("quokka rottnest", target_uri=ROOT, mode="keyword", score_threshold=-1)
    assert [hit.uri for hit in quokka][:1] == [edited]  # its records are of what it says now


def test_reindex_through_the_cli(cli: Any, store: Path, tmp_path: Path) -> None:
    conf = write_config(tmp_path / "new.conf", HASH64_CONF)
    refused = cli("find", "auth", "--store", str(store), "--config", str(conf))
    assert refused.code == 1 and "openviking reindex" in refused.err
    done = cli("reindex", "--store", str(store), "--config", str(conf))
    assert done.code == 0, done.err
    assert done.out.startswith(f"Reindexed {len(EN_FILES)} files") and "hash:v1-64: " in done.out
    same = cli("reindex", f"{ROOT}/auth.md", "--store", store, "--config", conf)  # nothing out of date
    assert re.fullmatch(
        r"Reindexed 1 file and \d+ director(y|ies) with hash:v1-64: 0 records embedded \(\d+\.\d s\)\n", same.out
    )
    found = cli("find", "authentication", "--uri", ROOT, "--store", str(store), "--config", str(conf), "-o", "json")
    assert found.code == 0 and found.json()["result"]["resources"][0]["uri"] == f"{ROOT}/auth.md"
