"""Directory summaries (L0/L1) written by the configured LLM (``vlm``), against an
OpenAI-compatible chat server that the tests start on 127.0.0.1."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from helpers import EN_FILES, HASH_CONF, make_tree, write_config
from servers import ChatServer, Reply, Request, completion

from openviking.config import config_from_dict
from openviking.embedded.client import OpenViking
from openviking.ingest.llm_summary import SUMMARY_WRITERS

R = "viking://resources"
H = f"{R}/handbook"


def folder_of(request: Request) -> str:
    """The folder URI a summary request is about ("" for any other request)."""
    prompt = request.body["messages"][-1]["content"]
    found = re.match(r"Folder: (\S+)", prompt)
    return found.group(1) if found else ""


def summary_reply(request: Request) -> Reply:
    name = folder_of(request).rsplit("/", 1)[-1]
    body = {"abstract": f"LLM abstract of {name}.", "overview": f"# {name}\n\nLLM overview of {name}.\n- one: x"}
    return Reply(body=completion("```json\n" + json.dumps(body) + "\n```"))


def llm_client(store: Path, chat: ChatServer, warnings: list[str] | None = None, **vlm: Any) -> OpenViking:
    config = config_from_dict({**HASH_CONF, "vlm": {"model": "writer", "api_base": chat.api_base, **vlm}})
    return OpenViking(path=store, config=config, warn=None if warnings is None else warnings.append)


def test_the_llm_writes_the_summaries_of_the_directories_that_changed(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "handbook", EN_FILES)
    with ChatServer(summary_reply) as chat, llm_client(tmp_path / "store", chat) as client:
        client.add_resource(tree)
        asked = sorted(folder_of(r) for r in chat.posts("/chat/completions"))
        folders = sorted(e["uri"] for e in client.ls(H, recursive=True) if e["isDir"])
        assert asked == sorted([H, *folders])  # every folder of the tree once; not the scope root
        assert client.abstract(f"{H}/deploy") == "LLM abstract of deploy."
        assert client.overview(f"{H}/deploy") == "# deploy\n\nLLM overview of deploy.\n- one: x"
        assert "LLM" not in client.abstract(R)  # the scope root's summary stays extractive...
        assert "- handbook/: LLM abstract of handbook." in client.overview(R)  # ...and lists what the LLM wrote
        # the model read each entry and what it is about
        prompt = next(r for r in chat.posts() if folder_of(r) == f"{H}/deploy").body["messages"][-1]["content"]
        assert "- docker.md: " in prompt and "- kubernetes.md: " in prompt
        hits = client.find("LLM abstract of deploy", target_uri=H, level=0, score_threshold=-1)
        assert hits.resources[0].uri == f"{H}/deploy/.abstract.md"
        assert hits.resources[0].abstract == "LLM abstract of deploy."

        before = len(chat.requests)
        client.add_resource(tree)  # unchanged: the model is not asked again, the texts stay
        assert len(chat.requests) == before
        assert client.abstract(f"{H}/deploy") == "LLM abstract of deploy."

        (tree / "deploy" / "docker.md").write_text("# Docker\n\nRun it in a container with compose.\n")
        client.add_resource(tree)  # one file changed: its folder is asked again, then the folder above it
        assert [folder_of(r) for r in chat.requests[before:]] == [f"{H}/deploy", H]
        assert client.abstract(H) == "LLM abstract of handbook."
        assert client.stat(f"{H}/deploy")["content_hash"].startswith("llm:")


def test_a_failing_model_is_reported_once_and_the_summaries_are_extractive(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "handbook", EN_FILES)
    warnings: list[str] = []
    with ChatServer(Reply(status=500, body={"error": {"message": "down"}})) as chat:
        with llm_client(tmp_path / "store", chat, warnings, max_retries=0) as client:
            result = client.add_resource(tree)
            assert result.added == len(EN_FILES)
            # it gave up after the first failure: only the first depth's folders, written side by side, were asked
            deepest = {e["uri"] for e in client.ls(H, recursive=True) if e["isDir"]}
            assert 1 <= len(chat.posts()) <= min(SUMMARY_WRITERS, len(deepest))
            assert {folder_of(r) for r in chat.posts()} <= deepest
            assert warnings == [
                f"The LLM (vlm) did not write a directory summary: The summary LLM server at {chat.api_base} "
                "answered HTTP 500. The rest keep their extractive summaries for now."
            ]
    with OpenViking(path=tmp_path / "plain", config=config_from_dict(HASH_CONF)) as plain:
        plain.add_resource(tree)
        assert client.abstract(f"{H}/deploy") == plain.abstract(f"{H}/deploy")


def test_a_reply_that_is_not_the_json_asked_for_falls_back_through_the_cli(cli: Any, tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "handbook", EN_FILES)
    with ChatServer("Here is a nice summary of your folder!") as chat:
        conf = write_config(tmp_path / "ov.conf", {**HASH_CONF, "vlm": {"model": "w", "api_base": chat.api_base}})
        added = cli("add-resource", tree, "--store", tmp_path / "store", "--config", conf)
    assert added.code == 0, added.err
    assert added.err.count("did not write a directory summary") == 1
    assert "its reply is not the JSON asked for (no JSON object)" in added.err


def test_the_model_is_held_to_the_sizes_and_a_description_stays_the_abstract(tmp_path: Path) -> None:
    def verbose(request: Request) -> Reply:
        lines = "\n".join(f"- entry {n}: " + "words " * 20 for n in range(200))
        body = {"abstract": "A long abstract. " * 40, "overview": f"# f\n\n{lines}"}
        return Reply(body=completion(json.dumps(body)))

    tree = make_tree(tmp_path / "handbook", EN_FILES)
    with ChatServer(verbose) as chat, llm_client(tmp_path / "store", chat) as client:
        client.add_resource(tree)
        abstract, overview = client.abstract(H), client.overview(H)
        assert 0 < len(abstract) <= 256 and abstract.endswith("abstract.")
        assert 2000 < len(overview) <= 4000 and overview.endswith("words")  # cut after a whole line
        client.mkdir(f"{R}/billing", description="Invoices and the billing service")
        (tmp_path / "inv").mkdir()
        (tmp_path / "inv" / "a.md").write_text("# Invoice A\n\nPaid.\n")
        client.add_resource(tmp_path / "inv" / "a.md", parent=f"{R}/billing")
        assert client.abstract(f"{R}/billing") == "Invoices and the billing service"
        assert client.overview(f"{R}/billing").startswith("# f\n\n- entry 0:")


def test_a_failure_is_asked_again_by_the_next_write(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "handbook", EN_FILES)
    with ChatServer(Reply(status=500, body={"error": {"message": "down"}})) as down:
        with llm_client(tmp_path / "store", down, [], max_retries=0) as client:
            client.add_resource(tree)
            assert "LLM" not in client.abstract(f"{H}/deploy")
    with ChatServer(summary_reply) as up, llm_client(tmp_path / "store", up) as client:
        assert client.add_resource(tree).unchanged == len(EN_FILES)  # nothing changed but the summaries' writer
        assert client.abstract(f"{H}/deploy") == "LLM abstract of deploy."
        assert client.abstract(H) == "LLM abstract of handbook."
        before = len(up.requests)
        client.add_resource(tree)
        assert len(up.requests) == before  # written now: not asked again


def test_the_store_is_not_locked_while_the_model_writes(tmp_path: Path) -> None:
    import threading

    from helpers import hash_config

    tree = make_tree(tmp_path / "handbook", EN_FILES)
    asked, release = threading.Event(), threading.Event()
    answered: list[str] = []

    def slow(request: Request) -> Reply:
        asked.set()
        release.wait(10)
        answered.append(folder_of(request))
        return summary_reply(request)

    with ChatServer(slow) as chat, llm_client(tmp_path / "store", chat) as client:
        adding = threading.Thread(target=client.add_resource, args=(tree,))
        adding.start()
        assert asked.wait(30)  # the files are stored, and the model is writing a summary
        with OpenViking(path=tmp_path / "store", config=hash_config()) as other:
            other.add_memory("The user writes while the model thinks")  # needs the write lock
            assert answered == []  # it got it before the model answered
            assert {h.uri for h in other.find("docker compose", target_uri=H, score_threshold=-1)}
        release.set()
        adding.join(30)
        assert not adding.is_alive()
        assert client.abstract(f"{H}/deploy") == "LLM abstract of deploy."


def test_what_another_write_changed_meanwhile_is_kept(tmp_path: Path) -> None:
    import threading

    from helpers import hash_config

    tree = make_tree(tmp_path / "handbook", EN_FILES)
    asked, release = threading.Event(), threading.Event()

    def slow(request: Request) -> Reply:
        asked.set()
        release.wait(10)
        return summary_reply(request)

    with ChatServer(slow) as chat, llm_client(tmp_path / "store", chat) as client:
        adding = threading.Thread(target=client.add_resource, args=(tree,), kwargs={"tags": ["v=old"]})
        adding.start()
        assert asked.wait(30)
        with OpenViking(path=tmp_path / "store", config=hash_config()) as other:
            other.add_resource(tree, tags=["v=new"])  # the same tree, tagged anew, while the model writes
        release.set()
        adding.join(30)
        assert client.abstract(f"{H}/deploy") == "LLM abstract of deploy."  # the model's text...
        assert client.stat(f"{H}/deploy")["tags"] == ["v=new"]  # ...on the folder as the other write left it
        hits = client.find("deploy", target_uri=f"{H}/deploy", level=0, tags="v=new", score_threshold=-1)
        assert [h.uri for h in hits.resources] == [f"{H}/deploy/.abstract.md"]


def test_a_reindex_meanwhile_leaves_the_summaries_to_the_next_write(tmp_path: Path) -> None:
    from helpers import HASH64_CONF

    tree = make_tree(tmp_path / "handbook", EN_FILES)
    reindexed: list[dict[str, Any]] = []

    def reindex_first(request: Request) -> Reply:
        if not reindexed:  # another process re-embeds the store with another model while the LLM thinks
            with OpenViking(path=tmp_path / "store", config=config_from_dict(HASH64_CONF)) as other:
                reindexed.append(other.reindex())
        return summary_reply(request)

    warnings: list[str] = []
    with ChatServer(reindex_first) as chat, llm_client(tmp_path / "store", chat, warnings) as client:
        result = client.add_resource(tree)  # its files are stored: it succeeds
        assert result.added == len(EN_FILES) and reindexed
        assert warnings == []
    with OpenViking(path=tmp_path / "store", config=config_from_dict(HASH64_CONF)) as other:
        assert other.doctor()["problems"] == []
        assert "LLM" not in other.abstract(f"{H}/deploy")  # left extractive, under the new model's vectors
        assert other.find("docker", target_uri=H, score_threshold=-1).total > 0


def test_ctrl_c_while_the_model_writes_keeps_the_write(tmp_path: Path, monkeypatch: Any) -> None:
    from openviking.ingest import llm_summary

    def interrupted(*args: Any) -> Any:
        raise KeyboardInterrupt  # Ctrl-C reaches the main thread while it waits for the model

    tree = make_tree(tmp_path / "handbook", EN_FILES)
    warnings: list[str] = []
    monkeypatch.setattr(llm_summary, "_ask_writer", interrupted)
    with ChatServer(summary_reply) as chat, llm_client(tmp_path / "store", chat, warnings) as client:
        assert client.add_resource(tree).added == len(EN_FILES)
        assert warnings == [
            "Interrupted while the LLM wrote directory summaries: the write itself is complete, and the folders "
            "left keep their extractive summaries until the next write"
        ]
        monkeypatch.undo()
        client.add_resource(tree)  # the next write asks again
        assert client.abstract(f"{H}/deploy") == "LLM abstract of deploy."
