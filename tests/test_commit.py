"""Sessions become memory: a commit archives what was said as a searchable transcript and keeps
what it says about the user, offline in the user's words, or by an LLM whose decisions (new,
merge, skip) are applied as it gives them; committing again changes nothing, a broken answer
keeps the archive and the next commit tries again. And what a session gives a prompt within a
budget. The LLM is a real HTTP server on 127.0.0.1 speaking OpenAI's protocol (tests/servers.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import HASH_CONF, Cli, cli_error, snapshot, unharmed, with_store, write_config
from ovserver import body_of, error_of, thread_server
from servers import ChatServer, Reply, Request, completion, slow

from openviking.config import Config, config_from_dict
from openviking.embedded.client import OpenViking

SAID = "2023-05-12T14:00:00Z"
SELF = "I'm vegetarian and I moved to Lisbon last month."


@pytest.fixture
def local(tmp_path: Path) -> Iterator[OpenViking]:
    """A client on an empty store with the bundled model (no LLM)."""
    with OpenViking(path=tmp_path / "store", config=Config()) as client:
        yield client


def _talk(client: Any, session: str = "s1", at: str = SAID) -> None:
    client.add_message(session, "user", f"Hi! {SELF} Do you know a good market?", created_at=at)
    client.add_message(session, "assistant", "Welcome! The Mercado da Ribeira is a good start.", created_at=at)
    client.add_message(session, "user", "Last Friday I went hiking with my sister in Sintra.", created_at=at)


def _memory_files(client: Any) -> list[str]:
    return sorted(e["uri"] for e in client.ls("viking://user/memories", recursive=True) if not e["isDir"])


# ----------------------------------------------------------------------------- offline
@pytest.mark.slow
def test_offline_the_users_statements_become_dated_memories_that_find_returns_first(local: OpenViking) -> None:
    _talk(local)
    result = local.commit_session("s1")
    assert (result.status, result.archived, result.messages_archived, result.extraction) == (
        "accepted", True, 3, "extractive",
    )  # fmt: skip
    assert result.archive_uri == "viking://user/default/history/s1/archive_001.md"
    made = {m.text.split("\n")[0]: m for m in result.memories}
    assert set(made) == {
        "The user is vegetarian.",
        "The user moved to Lisbon in April 2023.",
        "On Friday 5 May 2023 the user went hiking with their sister in Sintra.",
    }, made
    assert all(m.action == "created" and m.extraction == "extractive" for m in made.values())
    vegetarian = made["The user is vegetarian."]
    lisbon = made["The user moved to Lisbon in April 2023."]
    hiking = made["On Friday 5 May 2023 the user went hiking with their sister in Sintra."]
    assert (vegetarian.category, vegetarian.topic, vegetarian.day) == ("preferences", "food", "2023-05-12")
    assert (lisbon.category, lisbon.day) == ("events", "2023-04-01")  # "last month": April
    assert (hiking.category, hiking.day) == ("events", "2023-05-05")  # "last Friday" of Friday 12 May
    assert lisbon.text.endswith("(said on 2023-05-12, of April 2023)")

    assert local.find("what does the user eat").memories[0].uri == vegetarian.uri
    assert local.find("which city did the user move to").memories[0].uri == lisbon.uri
    assert local.stat(vegetarian.uri).updated_at.startswith("2023-05-12")
    assert local.stat(lisbon.uri).updated_at.startswith("2023-04-01")
    # A memory's time is the day it tells of: time filters and dates in questions work on it.
    since_may = local.find("the user", target_uri="viking://user/memories", since="2023-05-01", limit=20)
    assert lisbon.uri not in [h.uri for h in since_may] and vegetarian.uri in [h.uri for h in since_may]
    assert local.find("what happened in April 2023", target_uri="viking://user/memories").memories[0].uri == lisbon.uri
    # The transcript is searchable as a conversation.
    archive = local.find("hiking in Sintra with the sister", target_uri="viking://user/default/history")
    assert archive.resources[0].uri == result.archive_uri
    assert "User: Last Friday I went hiking" in local.read(result.archive_uri)


# Three facts told in passing, each after a lead-in or before an aside, among small talk.
PASSING = [
    ("user", "Morning! Quick background before we start: I keep bees on my roof in Utrecht, three hives."),
    ("assistant", "Lovely! What can I help with?"),
    ("user", "I'm allergic to penicillin, so if you ever suggest first aid, keep that in mind."),
    ("assistant", "Noted."),
    ("user", "Last week I switched my whole team to trunk-based development and it went fine."),
    ("assistant", "Nice. Anything else?"),
    ("user", "Can you suggest a name for our newsletter?"),
]
ASKED = {
    "what is the user allergic to": ("penicillin", {"profile"}),
    "where does the user keep bees": ("bees", {"profile", "preferences"}),
    "how does the user's team work with branches now": ("trunk-based", {"events", "profile"}),
}


def _first(found: Any) -> tuple[str, str]:
    """The first memory's URI, and the first hit's of all (transcripts and resources too)."""
    every = sorted([*found["memories"], *found["resources"], *found["skills"]], key=lambda hit: -hit["score"])
    return found["memories"][0]["uri"], every[0]["uri"]


def _kept(result: Any) -> dict[str, Any]:
    """Each asked fact's word -> the memory the commit made of it."""
    return {word: next(m for m in result["memories"] if word in m["text"]) for word, _ in ASKED.values()}


@pytest.mark.slow
def test_offline_facts_told_in_passing_are_each_found_first_in_a_fitting_category(local: OpenViking) -> None:
    for role, text in PASSING:
        local.add_message("s1", role, text, created_at=SAID)
    result = local.commit_session("s1")
    kept = _kept(result)
    assert kept["penicillin"]["text"].startswith("The user is allergic to penicillin.\n")
    assert kept["bees"]["text"].startswith("The user keeps bees on their roof in Utrecht, three hives.\n")
    assert kept["trunk-based"]["text"].startswith(
        "In the week of 1 May 2023 the user switched their whole team to trunk-based development"
    )
    assert all(m["action"] == "created" for m in kept.values())
    for question, (word, fitting) in ASKED.items():
        assert kept[word]["category"] in fitting, kept[word]
        found = local.find(question).to_dict()
        assert _first(found) == (kept[word]["uri"], kept[word]["uri"]), (question, found)
        group = local.find(question, target_uri="viking://user/memories").memories
        assert group[0].uri == kept[word]["uri"]


@pytest.mark.slow
def test_the_cli_keeps_the_facts_told_in_passing_and_finds_each_first(cli: Cli, tmp_path: Path) -> None:
    ov = with_store(cli, tmp_path / "store", write_config(tmp_path / "c" / "ov.conf", {}))
    for role, text in PASSING:
        assert ov("session", "add-message", "s1", "--role", role, "--content", text).code == 0
    committed = ov("session", "commit", "s1", "-o", "json").json()["result"]
    kept = _kept(committed)
    for question, (word, fitting) in ASKED.items():
        assert kept[word]["category"] in fitting
        found = ov("find", question, "-o", "json").json()["result"]
        assert _first(found) == (kept[word]["uri"], kept[word]["uri"]), (question, found)
    printed = " ".join(ov("session", "show", "s1").out.split())
    assert "Summary Part 1 (" in printed and "The user is allergic to penicillin." in printed


@pytest.mark.slow
def test_over_http_the_facts_told_in_passing_are_kept_and_found_first(tmp_path: Path) -> None:
    from openviking_sdk import SyncHTTPClient as UpstreamClient

    with thread_server({}, tmp_path / "store") as url:
        upstream = UpstreamClient(url=url)
        upstream.initialize()
        try:
            for role, text in PASSING:
                upstream.add_message("s1", role, text)
            kept = _kept(upstream.commit_session("s1"))
            session = upstream.get_session("s1")
            assert "The user keeps bees on their roof in Utrecht" in session["summary"]
        finally:
            upstream.close()
        with httpx.Client(base_url=url, timeout=120) as http:
            for question, (word, fitting) in ASKED.items():
                assert kept[word]["category"] in fitting
                found = body_of(http.post("/api/v1/search/find", json={"query": question}))
                assert _first(found) == (kept[word]["uri"], kept[word]["uri"]), (question, found)


@pytest.mark.slow
def test_offline_a_near_duplicate_is_merged_into_what_is_remembered(local: OpenViking) -> None:
    local.add_message("s1", "user", "I have two dogs.", created_at=SAID)
    first = local.commit_session("s1").memories[0]
    local.add_message("s2", "user", "I've got two dogs. My son started school.", created_at="2023-06-01T09:00:00Z")
    second = local.commit_session("s2")
    by_action = {m.action: m for m in second.memories}
    assert by_action["merged"].uri == first.uri and "similarity" in by_action["merged"].reason
    assert by_action["created"].text.startswith("The user's son started school.")
    assert second.memories_extracted == {"created": 1, "merged": 1, "skipped": 0, "superseded": 0, "aged": 0,
                                         "total": 2}  # fmt: skip
    assert len(_memory_files(local)) == 2


@pytest.mark.slow
def test_offline_the_same_event_on_another_day_is_another_memory(local: OpenViking) -> None:
    local.add_message("s1", "user", "Yesterday I went hiking with my sister.", created_at=SAID)
    first = local.commit_session("s1").memories[0]
    local.add_message("s2", "user", "Yesterday I went hiking with my sister.", created_at="2023-05-20T09:00:00Z")
    second = local.commit_session("s2").memories[0]
    assert (first.day, second.day) == ("2023-05-11", "2023-05-19")
    assert second.action == "created" and second.uri != first.uri
    local.add_message("s3", "user", "Yesterday I went hiking with my sister!", created_at="2023-05-20T18:00:00Z")
    assert local.commit_session("s3").memories[0].action == "merged"  # the same day: the same event


@pytest.mark.slow
def test_offline_a_memory_that_is_no_longer_so_is_superseded_and_kept_as_history(local: OpenViking) -> None:
    local.add_message(
        "s1", "user", "I live in Berlin. I drink three cups of coffee a day.", created_at="2023-01-10T10:00:00Z"
    )
    before = {m.text.split("\n")[0]: m for m in local.commit_session("s1").memories}
    berlin, coffee = before["The user lives in Berlin."], before["The user drinks three cups of coffee a day."]
    local.add_message("s2", "user", "Big news: we moved from Berlin to Lisbon last month! And I don't drink coffee "
                      "anymore.", created_at="2023-06-01T10:00:00Z")  # fmt: skip
    result = local.commit_session("s2")
    assert result.memories_extracted["superseded"] == 2
    old = {m.uri: m for m in result.memories if m.action == "superseded"}
    new = {m.text.split("\n")[0]: m for m in result.memories if m.action == "created"}
    lisbon = new["The user and their family moved from Berlin to Lisbon in May 2023!"]
    no_coffee = new["The user doesn't drink coffee anymore."]
    assert old[berlin.uri].superseded_by == lisbon.uri and old[coffee.uri].superseded_by == no_coffee.uri
    assert old[berlin.uri].previous == berlin.text and old[berlin.uri].reason.startswith("no longer so: ")
    # The old memories are gone from the memories, their text kept below what replaced them.
    assert berlin.uri not in _memory_files(local) and coffee.uri not in _memory_files(local)
    assert (
        "\n\nBefore, until 2023-06-01: The user lives in Berlin. (said on 2023-01-10) (was " + berlin.uri + ")"
    ) in local.read(lisbon.uri)
    assert local.find("where does the user live", target_uri="viking://user/memories").memories[0].uri == lisbon.uri
    assert local.find("does the user drink coffee").memories[0].uri == no_coffee.uri
    # Undone: the old text added again lands on its URI.
    assert local.add_memory(old[berlin.uri].previous or "", "profile").uri == berlin.uri


def test_the_cli_says_what_a_commit_superseded_and_where_its_text_is_kept(cli: Cli, tmp_path: Path) -> None:
    ov = with_store(cli, tmp_path / "store", write_config(tmp_path / "c" / "ov.conf", HASH_CONF))
    ov("session", "add-message", "s1", "--role", "user", "--content", "We live in Berlin with our kids.")
    old = ov("session", "commit", "s1", "-o", "json").json()["result"]["memories"][0]
    ov("session", "add-message", "s2", "--role", "user", "--content", "We moved from Berlin to Lisbon with our kids.")
    printed = ov("session", "commit", "s2")
    assert printed.code == 0 and "Memories (extractive): 1 new, 0 merged, 0 known, 1 superseded" in printed.out
    lines = printed.out.splitlines()
    created = next(line for line in lines if line.strip().startswith("created"))
    superseded = " ".join(line.strip() for line in lines[lines.index(created) + 1 :])
    assert superseded.startswith("superseded profile") or superseded.startswith("superseded entities"), printed.out
    assert "(kept as history in viking://user/default/memories/" in superseded
    assert old["uri"] not in ov("ls", "viking://user/memories", "-r").out
    kept = ov("find", "Berlin", "-u", "viking://user/memories", "-o", "json").json()["result"]["memories"][0]
    assert f"(was {old['uri']})" in ov("read", kept["uri"]).out


def test_a_plan_whose_days_have_passed_ages_at_the_next_commit(hash_client: OpenViking) -> None:
    hash_client.add_message("s1", "user", "Next month I'm flying to Tokyo for a conference.", created_at=SAID)
    plan = hash_client.commit_session("s1").memories[0]
    assert plan.text == (
        "In June 2023 the user is flying to Tokyo for a conference.\n\n(said on 2023-05-12, planned for June 2023)"
    )
    hash_client.add_message("s1", "user", "Any tips for jet lag?", created_at="2023-06-20T09:00:00Z")
    assert [m.action for m in hash_client.commit_session("s1").memories] == []  # June is not over
    hash_client.add_message("s1", "user", "Back home now.", created_at="2023-07-02T09:00:00Z")
    aged = hash_client.commit_session("s1")
    (changed,) = [m for m in aged.memories if m.action == "aged"]
    assert changed.uri == plan.uri and changed.previous == plan.text
    assert changed.text.endswith("(said on 2023-05-12, planned for June 2023, which had passed by 2023-07-02)")
    assert hash_client.read(plan.uri) == changed.text + "\n"
    hash_client.add_message("s1", "user", "Still tired.", created_at="2023-07-05T09:00:00Z")
    assert not [m for m in hash_client.commit_session("s1").memories if m.action == "aged"]  # once


def test_a_commit_writes_the_sessions_summary_that_search_reads(tmp_path: Path) -> None:
    from servers import plan_json

    with ChatServer(plan_json(("the user's diet", "memory"))) as chat:
        raw = {**HASH_CONF, "query_planner": {"model": "planner", "api_base": chat.api_base}}
        with OpenViking(path=tmp_path / "store", config=config_from_dict(raw)) as client:
            _talk(client)
            assert client.get_session("s1").summary == ""
            result = client.commit_session("s1")
            assert result.extraction == "extractive"  # the planner is not the memory's model
            summary = client.get_session("s1").summary
            assert summary == result.summary and summary.startswith("Part 1 (2023-05-12, 3 messages): ")
            assert "The user is vegetarian." in summary and "The user asked: Do you know a good market?" in summary
            client.add_message(
                "s1", "user", "I adopted a cat called Miso yesterday.", created_at="2023-05-20T10:00:00Z"
            )
            client.commit_session("s1")
            both = client.get_session("s1").summary
            assert both.startswith(summary + "\n\nPart 2 (2023-05-20, 1 messages): ") and "Miso" in both
            client.search("what should I cook tonight", session_id="s1")
    assert "Miso" in chat.prompts()[-1] and "The user is vegetarian." in chat.prompts()[-1]


def test_committing_again_changes_nothing_and_a_later_commit_reads_only_what_is_new(
    hash_client: OpenViking, tmp_path: Path
) -> None:
    _talk(hash_client)
    first = hash_client.commit_session("s1")
    assert first.archived and first.memories_extracted["total"] == 3
    before = snapshot(tmp_path / "store")
    again = hash_client.commit_session("s1")
    assert (again.status, again.reason, again.archived, again.memories) == ("skipped", "no_messages", False, [])
    assert snapshot(tmp_path / "store") == before

    hash_client.add_message("s1", "user", "I adopted a cat called Miso yesterday.", created_at="2023-05-20T10:00:00Z")
    later = hash_client.commit_session("s1")
    assert later.archive_uri == "viking://user/default/history/s1/archive_002.md" and later.messages_archived == 1
    first_lines = [m.text.split("\n")[0] for m in later.memories]
    assert first_lines == ["The user adopted a cat called Miso on 19 May 2023."]
    assert later.memories[0].day == "2023-05-19"
    assert "Miso" in hash_client.read(later.archive_uri) and "Sintra" not in hash_client.read(later.archive_uri)


def test_keep_recent_count_leaves_the_newest_messages_for_the_next_commit(hash_client: OpenViking) -> None:
    _talk(hash_client)
    kept = hash_client.commit_session("s1", keep_recent_count=1)
    assert kept.messages_archived == 2 and "Sintra" not in hash_client.read(kept.archive_uri)
    assert hash_client.commit_session("s1", keep_recent_count=1).reason == "all_within_keep_window"
    rest = hash_client.commit_session("s1")
    assert rest.messages_archived == 1 and "Sintra" in hash_client.read(rest.archive_uri)


def test_a_dry_run_says_what_would_be_done_and_writes_nothing(hash_client: OpenViking, tmp_path: Path) -> None:
    _talk(hash_client)
    before = snapshot(tmp_path / "store")
    preview = hash_client.commit_session("s1", dry_run=True)
    assert preview.dry_run and preview.archived and preview.messages_archived == 3
    assert preview.archive_uri == "viking://user/default/history/s1/archive_001.md"
    assert len(preview.memories) == 3 and preview.summary and "The user is vegetarian." in preview.summary
    assert snapshot(tmp_path / "store") == before and hash_client.get_session("s1").summary == ""
    done = hash_client.commit_session("s1")
    assert [m.uri for m in done.memories] == [m.uri for m in preview.memories]
    assert done.summary == preview.summary == hash_client.get_session("s1").summary


def test_committing_a_session_that_is_not_there_is_not_found(
    handbook_client: OpenViking, handbook_ov: Cli, tmp_path: Path
) -> None:
    error = unharmed(handbook_client, lambda: handbook_client.commit_session("nope"), "deploy")
    assert (error.code, error.message) == ("NOT_FOUND", "Session not found: nope")
    failed = cli_error(handbook_ov("session", "commit", "nope", "-o", "json"), "NOT_FOUND", 1)
    assert failed["message"] == "Session not found: nope"
    error = unharmed(handbook_client, lambda: handbook_client.commit_session("s1", keep_recent_count=-1), "deploy")
    assert error.code == "INVALID_ARGUMENT" and "keep_recent_count" in error.message


def test_the_cli_commits_and_shows_what_it_remembered(hash_client: OpenViking, cli: Cli, tmp_path: Path) -> None:
    _talk(hash_client)
    ov = with_store(cli, tmp_path / "store", write_config(tmp_path / "c" / "ov.conf", HASH_CONF))
    preview = ov("session", "commit", "s1", "--dry-run")
    assert preview.code == 0 and preview.out.startswith("Would archive 3 messages as viking://user/default/history/s1/")
    assert "(dry run: nothing written)" in preview.out
    done = ov("session", "commit", "s1", "-o", "json").json()["result"]
    assert done["status"] == "accepted" and done["memories_extracted"]["created"] == 3
    assert "Nothing to commit in s1" in ov("session", "commit", "s1").err


# ----------------------------------------------------------------------------- with an LLM
def _llm_client(path: Path, chat: ChatServer, **memory: Any) -> OpenViking:
    raw: dict[str, Any] = {"memory": {"llm": {"model": "m", "api_base": chat.api_base, **memory}}}
    return OpenViking(path=path, config=config_from_dict(raw))


def _scripted(extracted: list[dict[str, Any]], decide: Any) -> Any:
    """A chat server's answers: the memories to the first kind of prompt, the decisions
    (``decide(numbered new memories, offered uris)``) to the second."""

    def answer(request: Request) -> Reply:
        system = request.body["messages"][0]["content"]
        prompt = request.body["messages"][-1]["content"]
        if system.startswith("You keep an assistant's long-term memory of its user. From a conversation"):
            return Reply(body=completion("```json\n" + json.dumps({"memories": extracted}) + "\n```"))
        numbers = [int(n) for n in re.findall(r"^New memory (\d+) ", prompt, re.M)]
        offered = re.findall(r"^  - (viking://\S+):", prompt, re.M)
        texts = re.findall(r"^New memory \d+ \([^)]*\): (.*)$", prompt, re.M)
        return Reply(body=completion(json.dumps({"decisions": decide(numbers, texts, offered)})))

    return answer


@pytest.mark.slow
def test_an_llms_memories_and_decisions_are_applied_exactly_as_it_gives_them(tmp_path: Path) -> None:
    extracted = [
        {"category": "preferences", "text": "The user eats no meat and no fish.", "day": "2023-05-12", "messages": [1]},
        {"category": "events", "text": "The user moved to Lisbon in April 2023.", "day": "2023-04-15", "messages": [1]},
        {"category": "preferences", "text": "The user likes vegetarian food.", "day": "2023-05-12", "messages": [1]},
    ]

    def decide(numbers: list[int], texts: list[str], offered: list[str]) -> list[dict[str, Any]]:
        decisions = []
        for number, text in zip(numbers, texts, strict=True):
            if "no meat" in text:
                merged = "The user is vegetarian: no meat, no fish."
                decisions.append(
                    {"memory": number, "decision": "merge", "target": offered[0], "text": merged, "reason": "same diet"}
                )
            elif "likes vegetarian" in text:
                decisions.append({"memory": number, "decision": "skip", "target": None, "reason": "known"})
            else:
                decisions.append({"memory": number, "decision": "new", "target": None})
        return decisions

    with ChatServer(_scripted(extracted, decide)) as chat, _llm_client(tmp_path / "store", chat) as client:
        known = client.add_memory("The user is vegetarian.", "preferences").uri
        client.add_message("s1", "user", SELF, created_at=SAID)
        result = client.commit_session("s1")
        assert result.extraction == "llm" and result.extraction_error is None
        actions = {m.text.split("\n")[0]: (m.action, m.uri) for m in result.memories}
        assert actions["The user is vegetarian: no meat, no fish."] == ("merged", known)
        assert actions["The user likes vegetarian food."][0] == "skipped"
        lisbon_action, lisbon_uri = actions["The user moved to Lisbon in April 2023."]
        assert lisbon_action == "created"
        assert client.read(known).startswith("The user is vegetarian: no meat, no fish.")
        assert client.stat(lisbon_uri).updated_at.startswith("2023-04-15")
        assert not any("likes vegetarian" in client.read(uri) for uri in _memory_files(client))
        assert len(_memory_files(client)) == 2
        # The conversation went to the LLM with each message's role and time.
        assert "[1] user at 2023-05-12 14:00 Friday: " + SELF in chat.prompts()[0]


def test_an_llm_that_does_not_answer_in_time_leaves_the_archive(tmp_path: Path) -> None:
    with ChatServer(slow('{"memories": []}', 5)) as chat, _llm_client(tmp_path / "store", chat, timeout=0.5) as client:
        client.add_message("s1", "user", SELF, created_at=SAID)
        result = client.commit_session("s1")
        assert result.archived and "did not answer" in (result.extraction_error or ""), result.extraction_error


# ----------------------------------------------------------------------------- over HTTP
def test_upstreams_client_commits_and_then_finds_the_memories(tmp_path: Path) -> None:
    from openviking_sdk import SyncHTTPClient as UpstreamClient

    with thread_server(HASH_CONF, tmp_path / "store") as url:
        upstream = UpstreamClient(url=url)
        upstream.initialize()
        try:
            upstream.add_message("s1", "user", SELF)
            committed = upstream.commit_session("s1")
            assert committed["status"] == "accepted" and committed["archived"] is True
            assert committed["task_id"] is None and committed["memories_extracted"]["created"] == 2
            found = upstream.find("vegetarian", target_uri="viking://user/memories")
            uris = [hit["uri"] for hit in found["memories"]]
            assert any("vegetarian" in uri for uri in uris), uris
            assert upstream.commit_session("s1")["status"] == "skipped"
            context = upstream.get_session_context("s1", token_budget=500)
            assert context["messages"] == [] and "Lisbon" in context["latest_archive_overview"]
            packed = upstream.search_context("what does the user eat", options={"max_tokens": 300})
            assert packed["entries"] and packed["stats"]["used_tokens"] <= 300, packed
        finally:
            upstream.close()
        with httpx.Client(base_url=url, timeout=60) as http:
            refused = http.post("/api/v1/search/search", json={"query": "x", "max_tokens": 100})
            error = error_of(refused, 400, "INVALID_ARGUMENT")
            assert error["message"] == "max_tokens is for mode context only"
            missing = error_of(http.post("/api/v1/sessions/nope/commit", json={}), 404, "NOT_FOUND")
            assert missing["message"] == "Session not found: nope"
            negative = http.get("/api/v1/sessions/s1/context", params={"token_budget": -1})
            bad = error_of(negative, 400, "INVALID_ARGUMENT")
            assert "token_budget" in bad["message"]
            ours = body_of(http.post("/api/v1/search/context", json={"query": "vegetarian", "budget": 80}))
            assert ours["used_tokens"] <= 80 and ours["tokenizer"]


def test_over_http_a_commit_says_what_it_superseded_and_get_session_returns_its_summary(tmp_path: Path) -> None:
    from openviking_sdk import SyncHTTPClient as UpstreamClient

    with thread_server(HASH_CONF, tmp_path / "store") as url:
        upstream = UpstreamClient(url=url)
        upstream.initialize()
        try:
            upstream.add_message("s1", "user", "We live in Berlin with our kids.")
            (old,) = upstream.commit_session("s1")["memories"]
            upstream.add_message("s2", "user", "We moved from Berlin to Lisbon with our kids.")
            committed = upstream.commit_session("s2")
            assert committed["memories_extracted"]["superseded"] == 1
            by_action = {m["action"]: m for m in committed["memories"]}
            gone, lisbon = by_action["superseded"], by_action["created"]
            assert (gone["uri"], gone["superseded_by"], gone["previous"]) == (old["uri"], lisbon["uri"], old["text"])
            assert gone["reason"].startswith("no longer so: ")
            assert upstream.get_session("s2")["summary"] == committed["summary"]
            assert "Lisbon" in committed["summary"]
            assert f"(was {old['uri']})" in upstream.read(lisbon["uri"])
        finally:
            upstream.close()


def test_a_mcp_agent_sees_what_a_commit_superseded(hash_client: OpenViking) -> None:
    import anyio
    from mcp import Client

    from openviking.server.mcp import mcp_server

    hash_client.add_message("s1", "user", "We live in Berlin with our kids.")
    (old,) = hash_client.commit_session("s1").memories
    hash_client.add_message("s2", "user", "We moved from Berlin to Lisbon with our kids.")

    async def run() -> Any:
        async with Client(mcp_server(lambda: hash_client, max_concurrent_calls=1)) as session:
            return await session.call_tool("commit_session", {"session_id": "s2"})

    committed = json.loads(anyio.run(run).content[0].text)
    by_action = {m["action"]: m for m in committed["memories"]}
    assert by_action["superseded"]["uri"] == old.uri and by_action["superseded"]["previous"] == old.text
    assert by_action["superseded"]["superseded_by"] == by_action["created"]["uri"]
    assert committed["summary"] == hash_client.get_session("s2").summary


# ----------------------------------------------------------------------------- context within a budget
def _pieces_of(result: Any) -> list[tuple[str, tuple[int, int] | None]]:
    return [(e.uri, tuple(e.lines) if e.lines else None) for e in result.entries]


@pytest.mark.slow
def test_context_packs_the_best_pieces_within_the_budget(guide_store: tuple[Any, Any]) -> None:
    from openviking.models.tokens import count_tokens

    client, _ = guide_store
    question = "how do I authenticate users with API keys"
    small = client.context(question, target_uri="viking://resources/guide", budget=150)
    large = client.context(question, target_uri="viking://resources/guide", budget=3000)
    for packed in (small, large):
        assert packed.used_tokens <= packed.budget
        assert sum(count_tokens(e.text) for e in packed.entries) <= packed.budget
        assert all(e.uri and e.reason.startswith("record #") for e in packed.entries)
        by_file: dict[str, list[tuple[int, int]]] = {}
        for uri, lines in _pieces_of(packed):
            if lines is not None:
                for other in by_file.get(uri, []):
                    assert lines[1] < other[0] or other[1] < lines[0], "two pieces hold the same lines"
                by_file.setdefault(uri, []).append(lines)
        assert len({e.text for e in packed.entries}) == len(packed.entries)
    assert small.entries and small.entries[0].uri.endswith("05-authentication.md")
    assert large.used_tokens > small.used_tokens
    assert len(large.entries) >= len(small.entries)
    assert large.used_tokens > 2500  # 200 records' pieces fill it: none is left to widen them
    # Ten records' pieces leave tokens to widen them to their neighbours.
    roomy = client.context(question, target_uri="viking://resources/guide", budget=3000, limit=1)
    assert roomy.stats["candidates"] <= 10 and roomy.used_tokens <= 3000
    assert any("widened" in e.reason or "grown" in e.reason for e in roomy.entries)
    assert small.rendered.startswith(f"### {small.entries[0].uri}")
    assert large.tokenizer.startswith("e5-small WordPiece")


# A long session: what the user says of the two kittens is far apart, between turns of other things.
_THINGS = [
    "the cold and windy weekend in the mountains",
    "repairing the bicycle chain and cleaning its gears",
    "a big pot of lentil soup for the neighbours",
    "a laptop battery that died on the train home",
    "a loud concert downtown with an amazing drummer",
    "planting tomatoes and basil on the balcony",
    "a chess tournament at the library on Saturday",
    "painting the kitchen a pale shade of yellow",
    "a long delay at the airport because of fog",
    "learning to bake sourdough bread at home",
    "a new job offer from a company in the harbour",
    "the football match that went to penalties",
    "a broken washing machine that flooded the floor",
    "a hike to the lighthouse along the cliffs",
    "a pottery class where every bowl came out lopsided",
    "the noisy renovation in the flat upstairs",
    "a jazz record found at the flea market",
    "a sunburn after a whole day at the beach",
    "the slow internet connection in the old house",
    "a birthday dinner at the Thai restaurant",
]
_CHATTER = [("user" if n % 2 == 0 else "assistant", f"Let me tell you about {thing}, it took most of the day.")
            for n, thing in enumerate(_THINGS)]  # fmt: skip
ANA = "My sister Ana adopted a grey kitten named Pixel from the animal shelter."
RUI = "My brother Rui adopted a black kitten named Miso from the same animal shelter."


def _long_session(client: Any) -> str:
    """A session of 22 turns with ``ANA`` the 5th and ``RUI`` the 20th, committed: its archive."""
    turns = [*_CHATTER[:4], ("user", ANA), *_CHATTER[4:18], ("user", RUI), *_CHATTER[18:]]
    for role, text in turns:
        client.add_message("s1", role, text, created_at=SAID)
    archive = client.commit_session("s1").archive_uri
    assert archive is not None
    lines = client.read(archive).split("\n")
    assert lines.index(f"User: {RUI}") - lines.index(f"User: {ANA}") > 10
    return str(archive)


@pytest.mark.slow
def test_context_packs_two_separate_spans_of_one_long_transcript(local: OpenViking) -> None:
    archive = _long_session(local)
    packed = local.context("which kittens did the user's sister and brother adopt from the shelter?",
                           target_uri="viking://user/default/history", budget=200)  # fmt: skip
    spans = [e for e in packed.entries if e.uri == archive and e.lines]
    with_ana = [e for e in spans if ANA in e.text]
    with_rui = [e for e in spans if RUI in e.text]
    assert with_ana and with_rui, packed.rendered
    ana, rui = with_ana[0].lines, with_rui[0].lines
    assert ana is not None and rui is not None
    assert ana[1] < rui[0] and rui[0] - ana[1] > 5, (ana, rui)  # two spans, apart, not one widened
    assert packed.used_tokens <= 200
    assert all(re.match(r"record #\d+, score \d\.\d{3}", e.reason) for e in packed.entries)


@pytest.mark.slow
def test_context_gives_a_line_two_chunks_share_once(local: OpenViking) -> None:
    from openviking.models.tokens import count_tokens

    archive = _long_session(local)
    packed = local.context("Ana adopted a grey kitten named Pixel", target_uri="viking://user/default/history",
                           budget=2000)  # fmt: skip
    assert sum(count_tokens(e.text) for e in packed.entries) <= packed.used_tokens <= 2000
    text = "\n".join(e.text for e in packed.entries if e.uri == archive and e.lines)
    # ANA's turn ends one two-turn chunk and begins the next: both are packed, it is given once.
    assert text.count(ANA) == 1, packed.rendered
    assert _CHATTER[3][1] in text and _CHATTER[4][1] in text  # the turns before and after it
    spans = sorted(tuple(e.lines) for e in packed.entries if e.uri == archive and e.lines)
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False)), spans  # each line once
    line = local.read(archive).split("\n").index(f"User: {ANA}") + 1
    records = [(e, re.search(r"lines (\d+)-(\d+)", e.reason)) for e in packed.entries if e.uri == archive and e.lines]
    holding = [(e, m) for e, m in records if m and int(m.group(1)) <= line <= int(m.group(2))]
    assert len(holding) >= 2, packed.rendered  # two records hold ANA's line ...
    assert sum(e.lines[0] <= line <= e.lines[1] for e, _ in holding if e.lines) == 1  # ... one entry gives it
    assert any("the others given already" in e.reason for e, _ in holding), packed.rendered
    assert packed.stats["trimmed"] >= 1 and packed.stats["files"] >= 1


def test_the_cli_prints_the_context_as_markdown(handbook_ov: Cli) -> None:
    printed = handbook_ov("context", "deploy with docker", "--budget", "200")
    assert printed.code == 0 and printed.out.startswith("### viking://resources/handbook/"), printed.out
    data = handbook_ov("context", "deploy with docker", "--budget", "200", "-o", "json").json()["result"]
    assert data["used_tokens"] <= 200 and data["entries"] and data["rendered"] == printed.out
    cli_error(handbook_ov("context", "deploy", "--budget", "0", "-o", "json"), "INVALID_ARGUMENT", 2)


def test_a_sessions_context_keeps_the_newest_messages_within_the_budget(hash_client: OpenViking) -> None:
    _talk(hash_client)
    everything = hash_client.get_session_context("s1")
    assert [m.role for m in everything.messages] == ["user", "assistant", "user"]
    assert everything.latest_archive_overview == "" and everything.estimated_tokens > 0
    tight = hash_client.get_session_context("s1", token_budget=everything.estimated_tokens - 1)
    assert len(tight.messages) < 3 and tight.messages[-1].parts == everything.messages[-1].parts
    hash_client.commit_session("s1")
    hash_client.add_message("s1", "user", "One more thing.")
    after = hash_client.get_session_context("s1", token_budget=1000)
    assert [m.parts[0]["text"] for m in after.messages] == ["One more thing."]
    assert after.latest_archive_overview.startswith("Session s1, part 1")
    assert after.to_dict()["stats"]["totalArchives"] == 1


def test_a_mcp_agent_commits_and_gets_context(hash_client: OpenViking) -> None:
    import anyio
    from mcp import Client

    from openviking.server.mcp import mcp_server

    _talk(hash_client)

    async def run() -> tuple[Any, Any]:
        async with Client(mcp_server(lambda: hash_client, max_concurrent_calls=1)) as session:
            committed = await session.call_tool("commit_session", {"session_id": "s1"})
            packed = await session.call_tool("context", {"query": "what does the user eat", "budget": 200})
            return committed, packed

    committed, packed = anyio.run(run)
    assert json.loads(committed.content[0].text)["memories_extracted"]["created"] == 3
    assert json.loads(packed.content[0].text)["used_tokens"] <= 200
