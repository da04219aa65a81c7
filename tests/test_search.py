"""search: planning from a session, typed passes, merge, rerank, and every fallback.

The LLM and the reranker are real HTTP servers on 127.0.0.1 (tests/servers.py) that the
``openai`` package talks to over sockets; the store is a real LanceDB directory with
resources, memories and skills, embedded with the hash embedder (quality is not the point).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    EN_FILES,
    MATCHED_CONTEXT_KEYS,
    Cli,
    cli_unharmed,
    hash_config,
    hit_uris,
    make_tree,
    raw_uri,
    run_shell,
    snapshot,
    with_store,
    write_config,
)
from servers import FAKE_KEY, ChatServer, Reply, RerankServer, completion, http_error, overlap_score, plan_json, slow

from openviking.config import config_from_dict
from openviking.embedded.client import OpenViking
from openviking.errors import InvalidArgumentError
from openviking.message import TextPart

R = "viking://resources/handbook"
MEMORY = "viking://user/default/memories/preferences/writing-style.md"
SKILL = "viking://agent/skills/write-rfc/SKILL.md"
RFC_QUERY = "help me write an RFC for it"
OAUTH = "We are designing the OAuth login flow for our project."
GOOD_PLAN = plan_json(
    ("create an RFC document", "skill"),
    ("RFC document template", "resource"),
    ("the user's writing style preferences", "memory"),
    reasoning="The user wants an RFC about their OAuth login flow.",
)
RESOURCES = {
    **EN_FILES,
    "rfc/template.md": (
        "# RFC document template\n\nAn RFC document has a summary, a motivation, a detailed design and alternatives.\n"
    ),
    "oauth/login.md": (
        "# OAuth login flow\n\nThe OAuth login flow redirects the user to the authorization server and "
        "exchanges the code for a token.\n"
    ),
}
MEMORIES = {
    "writing-style.md": (
        "# Writing style\n\nThe user's preferred writing style for RFC documents is short sections with a "
        "summary first.\n"
    ),
    "editor.md": "# Editor\n\nThe user prefers dark mode in the code editor.\n",
}
SKILLS = {
    "SKILL.md": (
        "# Write an RFC\n\nCreate an RFC document step by step: problem statement, proposal, alternatives, rollout.\n"
    )
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with resources, memories (user default) and a skill, hash-embedded."""
    base = tmp_path_factory.mktemp("search")
    with OpenViking(path=base / "store", config=hash_config()) as client:
        client.add_resource(make_tree(base / "handbook", RESOURCES))
        client.add_resource(make_tree(base / "prefs", MEMORIES), to="viking://user/default/memories/preferences")
        client.add_resource(make_tree(base / "write-rfc", SKILLS), to="viking://agent/skills/write-rfc")
    return base / "store"


def raw_config(
    chat: ChatServer | None = None,
    rerank: RerankServer | None = None,
    *,
    intent: bool = True,
    chat_timeout: float = 5.0,
    rerank_timeout: float = 5.0,
) -> dict[str, Any]:
    raw: dict[str, Any] = {"embedding": {"dense": {"provider": "hash"}}, "retrieval": {"enable_intent": intent}}
    if chat is not None:
        raw["vlm"] = {
            "provider": "openai",
            "api_base": chat.api_base,
            "api_key": FAKE_KEY,
            "model": "planner",
            "timeout": chat_timeout,
            "max_retries": 0,
        }
    if rerank is not None:
        raw["rerank"] = {
            "provider": "openai",
            "api_base": rerank.endpoint,
            "api_key": FAKE_KEY,
            "model": "test-rerank",
            "timeout": rerank_timeout,
        }
    return raw


class Client(OpenViking):
    """An OpenViking whose warnings are collected in ``.warnings``."""

    def __init__(self, store: Path, raw: dict[str, Any]) -> None:
        self.warnings: list[str] = []
        super().__init__(path=store, config=config_from_dict(raw), warn=self.warnings.append)


@pytest.fixture
def make_client(corpus: Path) -> Iterator[Callable[..., Client]]:
    made: list[Client] = []

    def make(chat: ChatServer | None = None, rerank: RerankServer | None = None, **options: Any) -> Client:
        client = Client(corpus, raw_config(chat, rerank, **options))
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def new_session(client: OpenViking, *messages: tuple[str, str]) -> str:
    sid = f"t-{uuid.uuid4().hex[:12]}"
    for role, text in messages or (("user", OAUTH),):
        client.add_message(sid, role, text)
    return sid


# ----------------------------------------------------------------------------- no plan
# A query past the 256 tokens find embeds: search must cut it the same way.
LONG_QUERY = "RFC document template " + "pancakes with flour and butter " * 200


@pytest.mark.parametrize("query", ["RFC document template", LONG_QUERY], ids=["short", "long"])
@pytest.mark.parametrize("mode", ["vector", "hybrid", "keyword"])
def test_without_a_session_search_is_find(make_client: Callable[..., Client], mode: str, query: str) -> None:
    with ChatServer(GOOD_PLAN) as chat:
        client = make_client(chat)
        searched = client.search(query, mode=mode)
        found = client.find(query, mode=mode)
    assert searched.to_dict() == found.to_dict()
    assert "query_plan" not in searched.to_dict()
    assert searched.total > 0
    assert chat.posts() == []  # no session: the LLM is never asked
    assert client.warnings == []


def test_session_without_an_llm_runs_the_raw_query_with_a_warning(make_client: Callable[..., Client]) -> None:
    client = make_client()
    sid = new_session(client)
    result = client.search(RFC_QUERY, session_id=sid)
    assert result.query_plan is None
    assert result.to_dict() == client.find(RFC_QUERY).to_dict()
    assert client.warnings == [
        "no LLM is configured (vlm or query_planner in ov.conf), so no intent analysis; searching with the query alone"
    ]


def test_unknown_session_is_not_an_error(make_client: Callable[..., Client]) -> None:
    with ChatServer(GOOD_PLAN) as chat:
        client = make_client(chat)
        result = client.search(RFC_QUERY, session_id="no-such-session")
        odd = client.search(RFC_QUERY, session_id="../../etc/passwd")
    assert result.query_plan is None and odd.query_plan is None
    assert result.to_dict() == client.find(RFC_QUERY).to_dict()
    assert chat.posts() == []
    assert client.warnings == [
        "no session 'no-such-session'; searching with the query alone",
        "no session '../../etc/passwd'; searching with the query alone",
    ]


def test_empty_session_and_disabled_intent_never_ask_the_llm(make_client: Callable[..., Client]) -> None:
    with ChatServer(GOOD_PLAN) as chat:
        client = make_client(chat)
        empty = client.create_session()["session_id"]
        assert client.search(RFC_QUERY, session_id=empty).query_plan is None
        off = make_client(chat, intent=False)
        sid = new_session(off)
        assert off.search(RFC_QUERY, session_id=sid).query_plan is None
    assert chat.posts() == []
    assert client.warnings == [] and off.warnings == []


# ----------------------------------------------------------------------------- planned search
def test_a_plan_runs_each_typed_query_in_its_own_context_type(make_client: Callable[..., Client]) -> None:
    with ChatServer(GOOD_PLAN) as chat:
        client = make_client(chat)
        sid = new_session(client)
        result = client.search(RFC_QUERY, session_id=sid, mode="vector")
    data = result.to_dict()
    assert data["query_plan"] == {
        "reasoning": "The user wants an RFC about their OAuth login flow.",
        "queries": [
            {
                "query": "create an RFC document",
                "context_type": "skill",
                "intent": "why create an RFC document",
                "priority": 1,
            },
            {
                "query": "RFC document template",
                "context_type": "resource",
                "intent": "why RFC document template",
                "priority": 2,
            },
            {
                "query": "the user's writing style preferences",
                "context_type": "memory",
                "intent": "why the user's writing style preferences",
                "priority": 3,
            },
        ],
    }
    assert list(data) == ["memories", "resources", "skills", "query_plan", "total", "pending_vectors"]
    assert {h["context_type"] for h in data["skills"]} == {"skill"} and data["skills"]
    assert {h["context_type"] for h in data["resources"]} == {"resource"} and data["resources"]
    assert {h["context_type"] for h in data["memories"]} == {"memory"} and data["memories"]
    assert SKILL in hit_uris(result.skills) and MEMORY in hit_uris(result.memories)
    assert f"{R}/rfc/template.md" in hit_uris(result.resources)
    for hit in data["skills"]:
        assert hit["queries"] == ["create an RFC document"]
        assert hit["match_reason"].startswith('query "create an RFC document"')
    for hit in data["memories"]:
        assert hit["queries"] == ["the user's writing style preferences"]
    # Each pass is exactly find with that query and that context type.
    for typed in data["query_plan"]["queries"]:
        alone = client.find(typed["query"], context_type=typed["context_type"], mode="vector")
        group = {"skill": data["skills"], "resource": data["resources"], "memory": data["memories"]}
        assert [(h.uri, h.score) for h in alone] == [(h["uri"], h["score"]) for h in group[typed["context_type"]]]
    assert client.warnings == []


def test_the_prompt_holds_summary_last_five_messages_and_query(make_client: Callable[..., Client]) -> None:
    from openviking.session.sessions import SessionStore

    with ChatServer(GOOD_PLAN) as chat:
        client = make_client(chat)
        turns = [("user" if i % 2 else "assistant", f"message number {i}") for i in range(1, 8)]
        sid = new_session(client, *turns)
        SessionStore(client._open(), client.user).set_summary(sid, "S" * 29_990 + "TAIL-NOT-SENT" + "x" * 100)
        client.search(RFC_QUERY, session_id=sid)
    (request,) = chat.posts("/chat/completions")
    system, user = request.body["messages"]
    assert system["role"] == "system" and "skill: start with a verb" in system["content"]
    assert '"the user\'s ..."' in system["content"]
    prompt = user["content"]
    assert "S" * 29_985 + "\n...(truncated)" in prompt and "TAIL-NOT-SENT" not in prompt
    assert "message number 2\n" not in prompt and "[user]: message number 1\n" not in prompt
    recent = "\n".join(f"[{role}]: {text}" for role, text in turns[-5:])
    assert f"## Recent messages (oldest first)\n{recent}\n" in prompt
    assert prompt.endswith(f"## Current message\n{RFC_QUERY}")
    assert request.body["model"] == "planner" and request.body["temperature"] == 0.0
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"


def test_a_summary_alone_is_enough_to_plan(make_client: Callable[..., Client]) -> None:
    from openviking.session.sessions import SessionStore

    with ChatServer(GOOD_PLAN) as chat:
        client = make_client(chat)
        sid = f"t-{uuid.uuid4().hex[:12]}"
        SessionStore(client._open(), client.user).set_summary(sid, "The user designs an OAuth login flow.")
        result = client.search(RFC_QUERY, session_id=sid)
    assert result.query_plan is not None and len(result.query_plan.queries) == 3
    assert "## Recent messages (oldest first)\n(none)" in chat.prompts()[0]


@pytest.mark.parametrize(
    "reply",
    [
        f"```json\n{GOOD_PLAN}\n```",
        f"Here is the plan you asked for:\n```\n{GOOD_PLAN}\n```\nGood luck!",
        f"Sure. {GOOD_PLAN} Let me know if you need more.",
        f"<think>the user wants {{an RFC}}</think>\n{GOOD_PLAN}",
    ],
    ids=["fenced-json", "fenced-bare", "prose-around", "braces-before"],
)
def test_plans_are_parsed_leniently(make_client: Callable[..., Client], reply: str) -> None:
    with ChatServer(reply) as chat:
        client = make_client(chat)
        result = client.search(RFC_QUERY, session_id=new_session(client))
    assert result.query_plan is not None
    assert [q.context_type for q in result.query_plan.queries] == ["skill", "resource", "memory"]
    assert client.warnings == []


def test_unknown_context_type_becomes_resource(make_client: Callable[..., Client]) -> None:
    reply = plan_json(("RFC document template", "documentation"), ("OAuth login flow", "Memories"))
    with ChatServer(reply) as chat:
        client = make_client(chat)
        result = client.search(RFC_QUERY, session_id=new_session(client))
    assert [(q.query, q.context_type) for q in result.query_plan.queries] == [
        ("RFC document template", "resource"),
        ("OAuth login flow", "memory"),  # a plural or capitalised type is still known
    ]
    assert result.resources and all(h.context_type == "resource" for h in result.resources)


def test_fifty_planned_queries_are_capped_at_five(make_client: Callable[..., Client]) -> None:
    reply = plan_json(*[(f"topic number {i} docker", "resource") for i in range(50)])
    with ChatServer(reply) as chat, RerankServer("good") as rerank:
        client = make_client(chat, rerank)
        result = client.search(RFC_QUERY, session_id=new_session(client), mode="vector")
    assert [q.query for q in result.query_plan.queries] == [f"topic number {i} docker" for i in range(5)]
    assert len(rerank.posts()) == 5  # five passes, one rerank each
    assert client.warnings == ["the query planner returned 50 queries; only the first 5 run"]


def test_zero_queries_return_an_empty_result_with_the_plan(make_client: Callable[..., Client]) -> None:
    reply = json.dumps({"reasoning": "A greeting; nothing to look up.", "queries": []})
    with ChatServer(reply) as chat, RerankServer("good") as rerank:
        client = make_client(chat, rerank)
        result = client.search("thanks, that was great!", session_id=new_session(client))
    assert result.to_dict() == {
        "memories": [],
        "resources": [],
        "skills": [],
        "query_plan": {"reasoning": "A greeting; nothing to look up.", "queries": []},
        "total": 0,
        "pending_vectors": 0,
    }
    assert rerank.posts() == []


@pytest.mark.parametrize(
    ("script", "warning"),
    [
        ("I cannot help with that.", "intent analysis failed (the reply holds no JSON plan)"),
        ('{"reasoning": "no queries key"}', "intent analysis failed (the reply's JSON has no 'queries')"),
        ('{"queries": "RFC"}', "intent analysis failed (the reply's 'queries' is not a list)"),
        ('```json\n{"queries": [{"query": "RFC", \n```', "intent analysis failed (the reply holds no JSON plan)"),
        (http_error(500), "intent analysis failed (The query planner server at http://127.0.0.1:"),
        (http_error(401), "refused the API key (HTTP 401)"),
        (Reply(200, completion(None)), "returned no text"),
        (slow(GOOD_PLAN, 5), "did not answer within 0.5s"),
    ],
    ids=["prose", "no-queries", "queries-not-list", "truncated", "http-500", "http-401", "no-text", "slow"],
)
def test_a_failed_plan_falls_back_to_the_raw_query(
    make_client: Callable[..., Client], script: Any, warning: str
) -> None:
    with ChatServer(script) as chat:
        client = make_client(chat, chat_timeout=0.5)
        sid = new_session(client)
        result = client.search(RFC_QUERY, session_id=sid)
    assert result.query_plan is None
    assert result.to_dict() == client.find(RFC_QUERY).to_dict()
    assert len(client.warnings) == 1
    assert warning in client.warnings[0]
    assert client.warnings[0].endswith("; searching with the query alone")
    assert FAKE_KEY not in client.warnings[0]


def test_parse_plan_normalises_what_the_llm_wrote() -> None:
    from openviking.retrieve.intent import parse_plan

    reply = json.dumps(
        {
            "reasoning": {"cause": "malformed output"},
            "queries": [
                {"query": "  RFC   document template ", "context_type": "RESOURCE", "priority": "2"},
                {"query": "RFC document template", "context_type": "resource"},  # a duplicate
                {"query": "", "context_type": "skill"},
                {"context_type": "skill"},
                "the user's editor",
                42,
                {"query": "create an RFC", "context_type": "skill", "priority": 9, "intent": None},
                {"query": "deploy", "context_type": None, "priority": "high"},
            ],
        }
    )
    plan, planned = parse_plan(reply)
    assert plan.reasoning == "{'cause': 'malformed output'}"  # upstream's str() of a non-string
    assert [q.to_dict() for q in plan.queries] == [
        {"query": "RFC document template", "context_type": "resource", "intent": "", "priority": 2},
        {"query": "the user's editor", "context_type": "resource", "intent": "", "priority": 3},
        {"query": "create an RFC", "context_type": "skill", "intent": "", "priority": 5},
        {"query": "deploy", "context_type": "resource", "intent": "", "priority": 3},
    ]
    assert planned == 4
    bare, _ = parse_plan('[{"query": "RFC template", "context_type": "resource"}]')
    assert [q.query for q in bare.queries] == ["RFC template"] and bare.reasoning == ""


def test_build_messages_without_session_text() -> None:
    from openviking.retrieve.intent import SessionContext, build_messages

    system, user = build_messages("q", SessionContext(), targets=["viking://resources/docs"])
    assert "restricted" not in system["content"]
    assert user["content"] == (
        "## Session summary\n(none)\n\n## Recent messages (oldest first)\n(none)\n\n"
        "## Search scope\nviking://resources/docs\n\n## Current message\nq"
    )
    assert SessionContext().is_empty and SessionContext(messages=(("user", "  "),)).is_empty


# ----------------------------------------------------------------------------- merge
def test_a_uri_found_by_several_queries_appears_once_with_its_best_score(
    make_client: Callable[..., Client],
) -> None:
    queries = ("RFC document template", "RFC document summary and motivation", "Docker deployment")
    reply = plan_json(*[(q, "resource") for q in queries])
    with ChatServer(reply) as chat:
        client = make_client(chat)
        result = client.search(RFC_QUERY, session_id=new_session(client), mode="vector", limit=4)
    expected: dict[str, tuple[float, list[str]]] = {}
    for query in queries:
        for hit in client.find(query, context_type="resource", mode="vector", limit=4):
            score, names = expected.get(raw_uri(hit.uri), (-1.0, []))
            expected[raw_uri(hit.uri)] = (max(score, hit.score), [*names, query])
    got = {raw_uri(h.uri): (h.score, h.queries) for h in result.resources}
    assert got == expected
    assert len(got) == len(result.resources)  # each URI once
    template = next(h for h in result.resources if h.uri == f"{R}/rfc/template.md")
    assert template.queries[:2] == list(queries[:2])
    assert template.match_reason.startswith('queries "RFC document template", "RFC document summary and motivation"')
    assert result.total > 4  # limit is per pass; the merged total may exceed it
    scores = [h.score for h in result.resources]
    assert scores == sorted(scores, reverse=True)


def test_every_group_is_sorted_by_score_and_json_lists_the_queries(make_client: Callable[..., Client]) -> None:
    reply = plan_json(
        ("the user's code editor", "memory"),
        ("the user's writing style preferences", "memory"),
        ("Kubernetes Helm chart", "resource"),
        ("OAuth login flow", "resource"),
    )
    with ChatServer(reply) as chat:
        client = make_client(chat)
        data = client.search(RFC_QUERY, session_id=new_session(client), limit=2).to_dict()
    for group in ("memories", "resources"):
        scores = [h["score"] for h in data[group]]
        assert scores == sorted(scores, reverse=True) and len(scores) >= 2
        for hit in data[group]:
            assert list(hit)[:10] == MATCHED_CONTEXT_KEYS
            assert hit["queries"] and set(hit["queries"]) <= {q["query"] for q in data["query_plan"]["queries"]}


def test_provenance_lists_what_each_planned_query_found_when_asked(make_client: Callable[..., Client]) -> None:
    queries = ("RFC document template", "Docker deployment")
    with ChatServer(plan_json(*[(q, "resource") for q in queries])) as chat:
        client = make_client(chat)
        result = client.search(
            RFC_QUERY, session_id=new_session(client), target_uri=f"{R}", limit=3, include_provenance=True
        )
    assert [r.query.query for r in result.query_results] == list(queries)
    data = result.to_dict()
    assert [item["query"]["query"] for item in data["provenance"]] == list(queries)
    for item, query in zip(data["provenance"], queries, strict=True):
        assert item["searched_directories"] == [R]
        expected = client.find(query, target_uri=R, context_type="resource", limit=3)
        assert [m["uri"] for m in item["matched_contexts"]] == [h.uri for h in expected]
        assert [m["tier"] for m in item["matched_contexts"]] == [f"L{h.level}" for h in expected]
    assert "provenance" not in result.to_dict(include_provenance=False)
    assert set(data) - {"provenance"} == set(result.to_dict(include_provenance=False))


def test_a_search_without_a_plan_has_no_provenance_as_upstream(make_client: Callable[..., Client]) -> None:
    # upstream: provenance only when query_results is set, which only a planned search does
    with ChatServer(GOOD_PLAN) as chat:
        client = make_client(chat)
        for result in (
            client.find(RFC_QUERY, include_provenance=True),
            client.search(RFC_QUERY, include_provenance=True),  # no session: no plan
        ):
            assert result.query_results is None and result.total > 0
            assert "provenance" not in result.to_dict()
        assert chat.requests == []


# ----------------------------------------------------------------------------- context types
def test_planned_queries_outside_the_requested_context_type_are_dropped(make_client: Callable[..., Client]) -> None:
    with ChatServer(GOOD_PLAN) as chat:
        client = make_client(chat)
        result = client.search(RFC_QUERY, session_id=new_session(client), context_type="resource")
    assert [(q.query, q.context_type) for q in result.query_plan.queries] == [("RFC document template", "resource")]
    assert result.memories == [] and result.skills == [] and result.resources
    system = chat.posts()[0].body["messages"][0]["content"]
    assert "plan queries of these types only: resource." in system


def test_a_plan_entirely_outside_the_requested_types_runs_the_raw_query(make_client: Callable[..., Client]) -> None:
    reply = plan_json(("the user's writing style preferences", "memory"))
    with ChatServer(reply) as chat:
        client = make_client(chat)
        result = client.search(RFC_QUERY, session_id=new_session(client), context_type="skill", mode="vector")
    (typed,) = result.query_plan.queries
    assert (typed.query, typed.context_type) == (RFC_QUERY, "skill")
    found = client.find(RFC_QUERY, context_type="skill", mode="vector")
    assert [(h.uri, h.score) for h in result] == [(h.uri, h.score) for h in found]
    assert result.memories == []


def test_typed_queries_stay_within_the_target_uri(make_client: Callable[..., Client]) -> None:
    with ChatServer(GOOD_PLAN) as chat:
        client = make_client(chat)
        result = client.search(RFC_QUERY, target_uri=f"{R}/rfc", session_id=new_session(client), score_threshold=0)
    assert result.query_plan is not None and result.total > 0
    assert all(raw_uri(h.uri).startswith(f"{R}/rfc") for h in result)
    assert result.skills == [] and result.memories == []
    assert f"## Search scope\n{R}/rfc\n" in chat.prompts()[0]


# ----------------------------------------------------------------------------- rerank
def test_rerank_fetches_twice_limit_and_its_scores_replace_the_retrieval_scores(
    make_client: Callable[..., Client],
) -> None:
    with RerankServer("reversed") as rerank:
        client = make_client(rerank=rerank)
        result = client.search("RFC document template", limit=2, mode="vector", explain=True)
    (documents,) = rerank.documents()
    assert len(documents) == 4  # 2 x limit candidates, one rerank call
    request = rerank.posts()[0].body
    assert request["query"] == "RFC document template" and request["model"] == "test-rerank"
    sent_scores = [overlap_score("RFC document template", d) for d in documents]
    assert 1 <= result.total <= 2
    for hit in result:
        assert hit.score == hit.explain["rerank"]["score"]
        assert hit.score in sent_scores
    scores = [h.score for h in result]
    assert scores == sorted(scores, reverse=True)
    # The hits are the best of the candidates by the reranker's scores, not by the retrieval's.
    assert scores == sorted(sent_scores, reverse=True)[: result.total]
    assert client.warnings == []


def test_rerank_reads_the_records_text(make_client: Callable[..., Client]) -> None:
    with RerankServer("good") as rerank:
        client = make_client(rerank=rerank)
        client.search("Docker container", limit=3, mode="vector", context_type="resource")
    documents = rerank.documents()[0]
    assert any("docker compose up" in d for d in documents)  # a chunk's own text, not only a summary


def test_threshold_applies_after_rerank(make_client: Callable[..., Client]) -> None:
    def scorer(query: str, document: str) -> float:
        return 0.9 if "template" in document.lower() else 0.05

    with RerankServer("good", scorer=scorer) as rerank:
        client = make_client(rerank=rerank)
        plain = client.find("RFC document template", mode="vector", limit=3)
        result = client.search("RFC document template", mode="vector", limit=3)
    assert plain.total == 3  # without rerank three records pass the 0.1 threshold
    assert result.total >= 1
    assert all(h.score == 0.9 for h in result)  # the 0.05 ones were cut by the threshold after rerank


def test_find_never_reranks(make_client: Callable[..., Client]) -> None:
    with RerankServer("good") as rerank:
        client = make_client(rerank=rerank)
        client.find("RFC document template")
        client.find("RFC document template", mode="vector")
    assert rerank.posts() == []


@pytest.mark.parametrize("mode", ["failing", "wrong_length", "duplicate", "nan", "not_json", "slow"])
def test_any_rerank_failure_keeps_the_retrieval_scores(make_client: Callable[..., Client], mode: str) -> None:
    with RerankServer(mode) as rerank, ChatServer(GOOD_PLAN) as chat:
        client = make_client(chat, rerank, rerank_timeout=0.3)
        sid = new_session(client)
        result = client.search(RFC_QUERY, session_id=sid, limit=3, mode="vector")
        reference = make_client(chat).search(RFC_QUERY, session_id=sid, limit=3, mode="vector")
    assert result.to_dict() == reference.to_dict()
    assert len(rerank.posts()) == 3  # one attempt per pass, no retry
    assert len(client.warnings) == 1  # a rerank failure is told once per search, not once per pass
    assert client.warnings[0].startswith("rerank failed (") and client.warnings[0].endswith(
        "); keeping the retrieval scores"
    )
    assert FAKE_KEY not in client.warnings[0]


def test_empty_documents_are_not_sent_and_keep_their_score() -> None:
    """Upstream's pinned case: documents ["root A", "", "   ", "root D"]; D falls back to its abstract."""
    from openviking.config import RerankConfig
    from openviking.models.rerank import make_reranker
    from openviking.retrieve.planned import rerank
    from openviking.retrieve.retriever import Candidate

    rows = [
        {"uri": "a", "text": "root A", "abstract": ""},
        {"uri": "b", "text": "", "abstract": ""},
        {"uri": "c", "text": "   ", "abstract": None},
        {"uri": "d", "text": "", "abstract": "root D"},
    ]
    pool = [Candidate(row, score=s) for row, s in zip(rows, [0.2, 0.8, 0.7, 0.4], strict=True)]
    with RerankServer("good", scorer=lambda q, d: {"root A": 0.95, "root D": 0.05}[d]) as server:
        reranker = make_reranker(RerankConfig(provider="openai", api_base=server.endpoint))
        assert reranker is not None
        assert rerank(reranker, "hello", pool) is None
        assert server.documents() == [["root A", "root D"]]
        server.mode = "nan"
        before = [c.score for c in pool]
        assert rerank(reranker, "hello", pool) == "The reranker sent a malformed reply: the score of document 0 is nan"
        assert [c.score for c in pool] == before  # a failed batch changes nothing
    assert [c.score for c in pool] == [0.95, 0.8, 0.7, 0.05]


# ----------------------------------------------------------------------------- SDK styles
def test_brief_sdk_style_with_a_session_object(make_client: Callable[..., Client]) -> None:
    """The SDK example of OpenViking's retrieval API docs: a Session handle's messages plan the search."""
    with ChatServer(GOOD_PLAN) as chat:
        client = make_client(chat)
        session = client.session()
        session.add_message("user", [TextPart(text="I'm building a login page with OAuth")])
        session.add_message("assistant", [TextPart(text="I can help you with OAuth implementation.")])
        results = client.search("best practices", session=session, since="2h")
        again = session.search("best practices")
    assert results.query_plan is not None and again.query_plan is not None
    assert "[assistant]: I can help you with OAuth implementation." in chat.prompts()[0]
    assert "## Current message\nbest practices" in chat.prompts()[0]


def test_a_session_may_be_named_by_its_dict_or_its_id(make_client: Callable[..., Client]) -> None:
    # create_session()'s dict and the bare id each name the session: neither reads as "no session"
    with ChatServer(GOOD_PLAN) as chat:
        client = make_client(chat)
        info = client.create_session()
        client.add_message(session_id=info["session_id"], role="user", content="We are designing the OAuth login flow.")
        by_dict = client.search(RFC_QUERY, session=info)
        by_id = client.search(RFC_QUERY, session=info["session_id"])
        by_object = client.search(RFC_QUERY, session=client.session(info["session_id"]))
    assert by_dict.query_plan is not None and by_id.query_plan is not None and by_object.query_plan is not None
    assert by_dict.to_dict() == by_id.to_dict() == by_object.to_dict()
    for bad, message in (
        ({"session": 42}, "session must be a Session, a session id or create_session()'s dict (got int)"),
        ({"session": {"id": "x"}}, "session must be a Session, a session id or create_session()'s dict (got dict)"),
        ({"session_id": ""}, "session_id must be a non-empty string"),
        ({"session": "a", "session_id": "b"}, "session names 'a' and session_id 'b': give one"),
    ):
        with pytest.raises(InvalidArgumentError) as error:
            client.search(RFC_QUERY, **bad)
        assert error.value.message == message


def test_chinese_brief_example(make_client: Callable[..., Client]) -> None:
    """The SDK example of OpenViking's Chinese retrieval docs (检索机制): an RFC asked for in a session."""
    reply = plan_json(("创建 RFC 文档", "skill"), ("RFC 文档模板", "resource"), ("用户的代码规范偏好", "memory"))
    with ChatServer(reply) as chat:
        client = make_client(chat)
        session_info = client.create_session()
        client.add_message(
            session_id=session_info["session_id"], role="user", content="我们正在为项目设计 OAuth 登录流程。"
        )
        results = client.search(query="帮我创建一个 RFC 文档", session_id=session_info["session_id"])
    assert [q.query for q in results.query_plan.queries] == ["创建 RFC 文档", "RFC 文档模板", "用户的代码规范偏好"]
    assert "[user]: 我们正在为项目设计 OAuth 登录流程。" in chat.prompts()[0]


def test_search_only_reads_the_store(make_client: Callable[..., Client], corpus: Path) -> None:
    with ChatServer(GOOD_PLAN) as chat, RerankServer("good") as rerank:
        client = make_client(chat, rerank)
        sid = new_session(client)
        before = snapshot(corpus)
        client.search(RFC_QUERY, session_id=sid)
        client.search(RFC_QUERY, session_id="unknown")
        client.search(RFC_QUERY)
    assert snapshot(corpus) == before


# ----------------------------------------------------------------------------- CLI
@pytest.fixture
def ov_with(cli: Cli, corpus: Path, tmp_path: Path) -> Callable[..., Cli]:
    """``ov_with(chat, rerank)`` -> a ``cli`` on the corpus with those servers in ov.conf."""

    def make(chat: ChatServer | None = None, rerank: RerankServer | None = None, **options: Any) -> Cli:
        conf = write_config(tmp_path / f"ov-{uuid.uuid4().hex[:6]}.conf", raw_config(chat, rerank, **options))
        return with_store(cli, corpus, conf)

    return make


def test_cli_brief_example(ov_with: Callable[..., Cli]) -> None:
    """A session made on the command line, then the retrieval docs' ``search --session-id``, which plans."""
    with ChatServer(GOOD_PLAN) as chat:
        ov = ov_with(chat)
        sid = ov("session", "new", "-o", "json").json()["result"]["session_id"]
        added = ov("session", "add-message", sid, "--role", "user", "--content", OAUTH)
        assert added.code == 0, added.err
        result = ov("search", RFC_QUERY, "--session-id", sid, "-o", "json")
    assert result.code == 0, result.err
    assert result.err == ""
    plan = result.json()["result"]["query_plan"]
    assert [q["context_type"] for q in plan["queries"]] == ["skill", "resource", "memory"]
    assert f"[user]: {OAUTH}" in chat.prompts()[0]


def test_cli_table_says_how_many_passes_ran(ov_with: Callable[..., Cli]) -> None:
    with ChatServer(GOOD_PLAN) as chat:
        ov = ov_with(chat)
        sid = new_session_cli(ov)
        table = ov("search", RFC_QUERY, "--session-id", sid, "-n", "2")
        data = ov("search", RFC_QUERY, "--session-id", sid, "-n", "2", "--json").json()["result"]
    assert table.code == 0, table.err
    lines = table.out.splitlines()
    assert lines[0] == f"{data['total']} results from 3 search passes"
    assert lines[1] == "Ranked by relevance · limit 2 per pass"
    assert "Query plan" in lines
    assert "   1. skill · priority 1 · create an RFC document" in lines
    assert '   query "create an RFC document"' in table.out


def test_cli_without_a_plan_prints_find_style_cards(ov_with: Callable[..., Cli]) -> None:
    ov = ov_with()
    table = ov("search", "RFC document template", "-n", "2")
    assert table.code == 0
    assert table.out.splitlines()[0] == "2 results"
    assert "Query plan" not in table.out
    lines = ov("search", "RFC document template", "-n", "2", "-o", "jsonl").json_lines()
    assert len(lines) == 2 and "queries" not in lines[0]


def test_cli_zero_query_plan_says_so(ov_with: Callable[..., Cli]) -> None:
    with ChatServer(json.dumps({"reasoning": "Just thanks.", "queries": []})) as chat:
        ov = ov_with(chat)
        sid = new_session_cli(ov)
        table = ov("search", "thanks!", "--session-id", sid)
        data = ov("search", "thanks!", "--session-id", sid, "-o", "json").json()["result"]
    assert table.code == 0 and table.out == ""
    assert "No search needed: the query planner planned no queries." in table.err
    assert "Reasoning: Just thanks." in table.err
    assert data["total"] == 0 and data["query_plan"] == {"reasoning": "Just thanks.", "queries": []}


def test_cli_unknown_session_and_failed_plan_warn_and_succeed(ov_with: Callable[..., Cli]) -> None:
    with ChatServer("not a plan") as chat:
        ov = ov_with(chat)
        unknown = ov("search", RFC_QUERY, "--session-id", "nope", "-o", "json")
        sid = new_session_cli(ov)
        failed = ov("search", RFC_QUERY, "--session-id", sid, "-o", "json")
    assert unknown.code == 0
    assert "query_plan" not in unknown.json()["result"]
    assert unknown.err == "Warning: no session 'nope'; searching with the query alone\n"
    assert failed.code == 0
    assert "query_plan" not in failed.json()["result"]
    assert failed.err == (
        "Warning: intent analysis failed (the reply holds no JSON plan); searching with the query alone\n"
    )


def test_cli_fifty_queries_and_rerank_nan(ov_with: Callable[..., Cli]) -> None:
    reply = plan_json(*[(f"docker topic {i}", "resource") for i in range(50)])
    with ChatServer(reply) as chat, RerankServer("nan") as rerank:
        ov = ov_with(chat, rerank)
        sid = new_session_cli(ov)
        result = ov("search", RFC_QUERY, "--session-id", sid, "-o", "json")
    assert result.code == 0
    assert len(result.json()["result"]["query_plan"]["queries"]) == 5
    assert result.err.splitlines() == [
        "Warning: the query planner returned 50 queries; only the first 5 run",
        "Warning: rerank failed (The reranker sent a malformed reply: the score of document 0 is nan); "
        "keeping the retrieval scores",
    ]


@pytest.mark.parametrize(
    ("argv", "code", "error_code", "message"),
    [
        (["search", "   "], 2, "INVALID_ARGUMENT", "Search query must not be empty."),
        (["search", "x", "--context-type", "robot"], 2, "INVALID_ARGUMENT", "context_type must be one or more of"),
        (["search", "x", "--after", "yesterday-ish"], 2, "INVALID_ARGUMENT", "'yesterday-ish'"),
        (["search", "x", "-u", "http://nope"], 2, "INVALID_URI", "Invalid URI"),
        (["search"], 2, "INVALID_ARGUMENT", "Missing argument"),
    ],
)
def test_cli_search_bad_input(
    ov_with: Callable[..., Cli], corpus: Path, argv: list[str], code: int, error_code: str, message: str
) -> None:
    cli_unharmed(ov_with(), corpus, argv, error_code, code, message)


def test_api_keys_never_appear_in_output_errors_or_debug(ov_with: Callable[..., Cli], tmp_path: Path) -> None:
    """Servers that echo the Authorization header back in their errors; --debug on."""
    with ChatServer(http_error(500)) as chat, RerankServer("failing") as rerank:
        ov = ov_with(chat, rerank)
        sid = new_session_cli(ov)
        runs = [
            ov("search", RFC_QUERY, "--session-id", sid, "--debug"),
            ov("search", RFC_QUERY, "--session-id", sid, "--debug", "-o", "json", "--explain"),
            ov("search", RFC_QUERY, "--debug", "-o", "jsonl"),
            ov("session", "show", sid, "--debug", "-o", "json"),
            ov("session", "show", "missing", "--debug"),
            ov("search", "", "--debug"),
        ]
    assert chat.posts("/chat/completions") and rerank.posts()
    # Every request carried the key, so a server echoing it could leak it.
    for request in [*chat.posts(), *rerank.posts()]:
        assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert any("Warning: intent analysis failed" in r.err for r in runs)
    assert any("Warning: rerank failed" in r.err for r in runs)
    for result in runs:
        assert FAKE_KEY not in result.out + result.err
        assert FAKE_KEY[-12:] not in result.out + result.err


def test_brief_example_in_a_real_shell_with_jq(corpus: Path, tmp_path: Path) -> None:
    """The same as a user types it in bash: session new, add-message, search; the plan read with jq."""
    with ChatServer(GOOD_PLAN) as chat:
        conf = write_config(tmp_path / "ov.conf", raw_config(chat))
        script = f"""
set -euo pipefail
export OPENVIKING_STORE={corpus} OPENVIKING_CONFIG_FILE={conf}
SID=$(openviking session new -o json | jq -r .result.session_id)
openviking session add-message $SID --role user --content "{OAUTH}" > /dev/null
openviking search "{RFC_QUERY}" --session-id $SID -o json | jq -c .result.query_plan
"""
        proc = run_shell(script)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["reasoning"] == "The user wants an RFC about their OAuth login flow."
    assert [q["query"] for q in plan["queries"]] == [
        "create an RFC document",
        "RFC document template",
        "the user's writing style preferences",
    ]


def new_session_cli(ov: Cli) -> str:
    sid = f"c-{uuid.uuid4().hex[:12]}"
    result = ov("session", "add-message", sid, "--role", "user", "--content", OAUTH)
    assert result.code == 0, result.err
    return sid
