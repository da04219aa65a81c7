"""Memories taken by an LLM that answers as small models do: structured output where its server
takes it, else JSON in fences, with trailing commas, inside prose, cut off mid-list, or not at
all. What parses is kept, the rest is said in the commit's notes, the answer is asked for once
more, and the user's messages no memory came from are read offline. The LLM is a real HTTP
server on 127.0.0.1 speaking OpenAI's protocol (tests/servers.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import HASH_CONF
from servers import ChatServer, Reply, Request, completion

from openviking.config import config_from_dict
from openviking.embedded.client import OpenViking

SAID = "2023-05-12T14:00:00Z"
TURNS = [
    ("user", "I'm vegetarian and I moved to Lisbon last month."),
    ("assistant", "Welcome to Lisbon!"),
    ("user", "Last Friday I went hiking with my sister in Sintra."),
    ("user", "I keep bees on my roof, three hives."),
]
VEGETARIAN = {"category": "preferences", "text": "The user is vegetarian.", "day": "2023-05-12", "messages": [1]}
LISBON = {"category": "events", "text": "The user moved to Lisbon in April 2023.", "day": "2023-04-15", "messages": [1]}
HIKING = {"category": "events", "text": "The user went hiking with their sister in Sintra.", "day": "2023-05-05",
          "messages": [3]}  # fmt: skip
BEES = {
    "category": "profile",
    "text": "The user keeps three beehives on their roof.",
    "day": "2023-05-12",
    "messages": [4],
}
ALL = [VEGETARIAN, LISBON, HIKING, BEES]
SUMMARY = "The user, a vegetarian beekeeper who moved to Lisbon, talked about a hike."
WHOLE = json.dumps({"memories": ALL, "summary": SUMMARY})
EXTRACTION = "You keep an assistant's long-term memory of its user. From a conversation"


def _answers(*replies: str | Reply) -> Callable[[Request], Reply]:
    """The extraction prompt answered with ``replies`` in turn (the last one again after that)."""
    given = list(replies)

    def answer(request: Request) -> Reply:
        assert request.body["messages"][0]["content"].startswith(EXTRACTION), "only extraction is asked here"
        reply = given.pop(0) if len(given) > 1 else given[0]
        return reply if isinstance(reply, Reply) else Reply(body=completion(reply))

    return answer


def _client(path: Path, chat: ChatServer, embedding: dict[str, Any] = HASH_CONF) -> OpenViking:
    raw: dict[str, Any] = {**embedding, "memory": {"llm": {"model": "small", "api_base": chat.api_base}}}
    return OpenViking(path=path, config=config_from_dict(raw))


def _commit(tmp_path: Path, chat: ChatServer, ids: list[str] | None = None) -> tuple[Any, list[str]]:
    """The session committed, and the memory files; ``ids`` gets the messages' ids."""
    with _client(tmp_path / "store", chat) as client:
        for role, text in TURNS:
            (ids if ids is not None else []).append(client.add_message("s1", role, text, created_at=SAID).message.id)
        result = client.commit_session("s1")
        files = sorted(e["uri"] for e in client.ls("viking://user/memories", recursive=True) if not e["isDir"])
        assert client.commit_session("s1").status == "skipped"  # what was read is not read again
        assert client.get_session("s1").summary == result.summary
    return result, files


def _kept(result: Any) -> list[tuple[str, str]]:
    return [(m.text.split("\n")[0], m.extraction) for m in result.memories]


BY_LLM = [(m["text"], "llm") for m in ALL]


@pytest.mark.parametrize(
    "reply",
    [
        "```json\n" + WHOLE + "\n```",
        WHOLE.replace("}]", "},]").replace('"messages": [1]', '"messages": [1,]'),
        "Sure! Here are the memories I found:\n" + WHOLE + "\nLet me know if you need anything else.",
        "<think>the user is {vegetarian}</think>\n```\n" + WHOLE + "\n```",
    ],
    ids=["fenced", "trailing-commas", "prose-around", "braces-before"],
)  # fmt: skip
def test_json_wrapped_as_small_models_write_it_is_read_whole(tmp_path: Path, reply: str) -> None:
    with ChatServer(_answers(reply)) as chat:
        result, files = _commit(tmp_path, chat)
        assert len(chat.posts("/chat/completions")) == 1  # nothing to ask again
    assert (result.extraction, result.extraction_error, result.notes) == ("llm", None, [])
    assert _kept(result) == BY_LLM and len(files) == 4
    assert result.summary.endswith(SUMMARY)


def test_a_list_cut_off_keeps_what_parses_asks_once_more_then_reads_the_rest_offline(tmp_path: Path) -> None:
    cut = json.dumps({"memories": [VEGETARIAN, LISBON, HIKING]})[:-40]  # in the middle of the third
    with ChatServer(_answers(cut)) as chat:
        result, files = _commit(tmp_path, chat)
        first, again = chat.posts("/chat/completions")
    assert result.extraction == "llm" and result.extraction_error is None
    assert _kept(result) == [
        ("The user is vegetarian.", "llm"),
        ("The user moved to Lisbon in April 2023.", "llm"),
        ("On Friday 5 May 2023 the user went hiking with their sister in Sintra.", "extractive"),
        ("The user keeps bees on their roof, three hives.", "extractive"),
    ]
    assert len(files) == 4
    stopped = "the answer stops in the middle of its memories list, after 2 whole items"
    assert result.notes == [
        f"the LLM's answer: {stopped}; asked once more",
        f"its second answer: {stopped}",
        "2 messages of the user no memory of the LLM came from were read without it: 2 memories",
    ]
    # Asked again with its own answer and what could not be read in it.
    assert again.body["messages"][-2] == {"role": "assistant", "content": cut}
    assert stopped in again.body["messages"][-1]["content"]


def test_an_item_that_does_not_parse_is_left_out_and_said(tmp_path: Path) -> None:
    broken = WHOLE.replace(json.dumps(HIKING), '{"category": "events", "text": The user hiked, "day": "2023-05-05"}')
    with ChatServer(_answers(broken)) as chat:
        result, _ = _commit(tmp_path, chat)
    assert [text for text, by in _kept(result) if by == "llm"] == [VEGETARIAN["text"], LISBON["text"], BEES["text"]]
    assert ("On Friday 5 May 2023 the user went hiking with their sister in Sintra.", "extractive") in _kept(result)
    assert result.notes[0].startswith("the LLM's answer: an item of its memories list does not parse (Expecting value)")


def test_no_json_at_all_is_asked_for_again_and_the_second_answer_kept(tmp_path: Path) -> None:
    with ChatServer(_answers("I'm sorry, I can't help with that.", WHOLE)) as chat:
        result, _ = _commit(tmp_path, chat)
    assert _kept(result) == BY_LLM
    assert result.notes == ["the LLM's answer: no memories list in the answer; asked once more"]


def test_two_answers_without_json_leave_the_memories_to_offline_extraction(tmp_path: Path) -> None:
    with ChatServer(_answers("I'm sorry, I can't help with that.")) as chat:
        result, files = _commit(tmp_path, chat)
    assert {by for _, by in _kept(result)} == {"extractive"} and len(files) == 4
    assert result.notes[-1] == "3 messages of the user no memory of the LLM came from were read without it: 4 memories"
    assert result.extraction == "llm" and result.extraction_error is None


def test_what_an_item_lacks_is_said_and_mended(tmp_path: Path) -> None:
    odd = [
        {**VEGETARIAN, "category": "diet"},  # not one of ours: the topic classifier decides
        {**LISBON, "day": "last month"},  # no date: the day it was said
        {**HIKING, "messages": [3, 9]},  # a message that was not given: the others kept
        {"category": "profile", "day": "2023-05-12"},  # no text: left out
        {**BEES, "messages": []},  # no message: the user's message nearest its words
    ]
    with ChatServer(_answers(json.dumps({"memories": odd, "summary": SUMMARY}), WHOLE)) as chat:
        result, _ = _commit(tmp_path, chat)
    # The second answer is whole and without problems: it is the one kept.
    assert _kept(result) == BY_LLM
    assert result.notes[0].startswith("the LLM's answer: 'The user is vegetarian.' has no category of ours ('diet')")
    for said in ("has a day that is no date ('last month')", "names messages that were not given: [3, 9]",
                 "a memory without its text"):  # fmt: skip
        assert said in result.notes[0]


def test_an_answer_with_mended_items_is_kept_when_asking_again_gives_nothing_better(tmp_path: Path) -> None:
    odd = [{**VEGETARIAN, "category": "diet"}, {**LISBON, "day": "last month"}, {**BEES, "messages": []}]
    ids: list[str] = []
    with ChatServer(_answers(json.dumps({"memories": odd}))) as chat:
        result, _ = _commit(tmp_path, chat, ids)
    by_text = {m.text.split("\n")[0]: m for m in result.memories}
    assert by_text["The user is vegetarian."].category == "preferences"  # decided by the classifier
    assert by_text["The user moved to Lisbon in April 2023."].day == "2023-05-12"
    assert by_text["The user keeps three beehives on their roof."].source == [ids[3]]  # the message about bees
    # The message about the hike gave no memory of the LLM's: it is read offline.
    assert by_text["On Friday 5 May 2023 the user went hiking with their sister in Sintra."].extraction == "extractive"


def test_structured_output_is_asked_for_and_a_server_without_it_is_asked_plainly(tmp_path: Path) -> None:
    def refusing(request: Request) -> Reply:
        if "response_format" in request.body:
            return Reply(400, {"error": {"message": "response_format is not supported", "type": "invalid_request"}})
        return Reply(body=completion("```json\n" + WHOLE + "\n```"))

    with ChatServer(refusing) as chat:
        result, _ = _commit(tmp_path, chat)
        structured, plain = chat.posts("/chat/completions")
    assert structured.body["response_format"]["type"] == "json_schema"
    schema = structured.body["response_format"]["json_schema"]
    assert schema["name"] == "memories" and schema["strict"] is True
    assert schema["schema"]["properties"]["memories"]["items"]["required"] == ["category", "text", "day", "messages"]
    assert "response_format" not in plain.body
    assert _kept(result) == BY_LLM
    assert result.notes == ["the LLM's server does not take structured output: asked for JSON in words"]

    with ChatServer(_answers(WHOLE)) as chat:
        result, _ = _commit(tmp_path / "second", chat)
        (only,) = chat.posts("/chat/completions")
    assert only.body["response_format"]["json_schema"]["name"] == "memories"
    assert _kept(result) == BY_LLM and result.notes == []


@pytest.mark.slow
def test_broken_decisions_keep_what_can_be_used_and_say_the_rest(tmp_path: Path) -> None:
    def answer(request: Request) -> Reply:
        system = request.body["messages"][0]["content"]
        if system.startswith(EXTRACTION):
            return Reply(body=completion(json.dumps({"memories": [VEGETARIAN, LISBON]})))
        lines = request.body["messages"][1]["content"].splitlines()
        meat = next(line for line in lines if "eats meat" in line).split(": ", 1)[0].strip("- ")
        decisions = [
            {
                "memory": 1,
                "decision": "supersede",
                "target": meat,
                "text": None,
                "reason": "now vegetarian",
            },
            {"memory": 2, "decision": "merge", "target": "viking://user/default/memories/nowhere.md", "text": "x"},
        ]
        return Reply(body=completion("Decisions:\n```json\n" + json.dumps({"decisions": decisions})[:-1] + ",]}\n```"))

    with ChatServer(answer) as chat, _client(tmp_path / "store", chat, {}) as client:  # the bundled model
        meat = client.add_memory("The user eats meat every day.", "preferences").uri
        lisbon = client.add_memory("The user lives in Lisbon.", "profile").uri
        client.add_message("s1", "user", TURNS[0][1], created_at=SAID)
        result = client.commit_session("s1")
        assert len(chat.posts("/chat/completions")) == 2
        by_action = {(m.action, m.text.split("\n")[0]): m for m in result.memories}
        superseded = by_action[("superseded", "The user eats meat every day.")]
        vegetarian = by_action[("created", "The user is vegetarian.")]
        assert (superseded.uri, superseded.superseded_by) == (meat, vegetarian.uri)
        assert "Before, until 2023-05-12: The user eats meat every day." in client.read(vegetarian.uri)
        assert ("created", "The user moved to Lisbon in April 2023.") in by_action  # the merge named no offer
        assert client.read(lisbon).startswith("The user lives in Lisbon.")
        assert any("a merge into 'viking://user/default/memories/nowhere.md', which was not offered, kept as new" in n
                   for n in result.notes)  # fmt: skip
