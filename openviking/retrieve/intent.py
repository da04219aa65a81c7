"""Intent analysis: an LLM turns a session and a query into 0 to 5 typed queries.

Inputs: the session summary (at most 30,000 characters), its last 5 messages rendered as
``[role]: content``, and the current query. Output: ``{"reasoning", "queries": [{"query",
"context_type", "intent", "priority"}]}``, parsed leniently (the whole reply, else a fenced
code block, else the first balanced ``{...}`` span). An unknown context type becomes
``resource``; queries past the fifth are dropped. A reply with no plan in it raises
:class:`PlanError`; the caller then searches with the raw query.

The prompt is ours, in the query styles of OpenViking's retrieval docs: a skill query starts
with a verb, a resource query is a noun phrase, a memory query reads "the user's ...".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openviking.contract.hits import QueryPlan, TypedQuery
from openviking.models.llm import json_in_reply

if TYPE_CHECKING:
    from openviking.models.llm import ChatModel

__all__ = [
    "MAX_QUERIES",
    "MAX_SUMMARY_CHARS",
    "RECENT_MESSAGES",
    "PlanError",
    "SessionContext",
    "analyze",
    "build_messages",
    "parse_plan",
]

MAX_QUERIES = 5
MAX_SUMMARY_CHARS = 30_000
RECENT_MESSAGES = 5
TRUNCATED = "\n...(truncated)"
CONTEXT_TYPES = ("skill", "resource", "memory")
_TYPE_ALIASES = {"skills": "skill", "resources": "resource", "memories": "memory"}

SYSTEM_PROMPT = """\
You plan the retrieval step of an AI agent. The agent's context store holds three kinds of context:
- skill: what the agent can do: tools, procedures, step-by-step instructions for a kind of task.
- resource: material to work with: documents, code, specifications, templates, reference pages.
- memory: what is known about the user: their preferences, facts about them and their work, \
decisions and events from earlier conversations.

Read the conversation and the user's current message, decide which stored context the agent \
needs to answer or act on it, and write search queries for that context.

How to decide:
1. Work out what the current message asks for in the light of the conversation; resolve words \
such as "it", "this" or "that one" to what they refer to.
2. If it needs no stored context (a greeting, thanks, small talk, a plain acknowledgement), \
plan no queries at all.
3. Otherwise write between 1 and 5 queries, one need each, the most important first. A task \
often needs a skill (how to do it), resources (what to do it with) and memories (the user's \
preferences that shape it); ask only for what would change the answer.

How to write each query:
- skill: start with a verb that names the action, e.g. "create an RFC document", \
"extract tables from a PDF".
- resource: a noun phrase that names the material, e.g. "RFC document template", \
"OAuth 2.0 login flow specification".
- memory: "the user's ...", e.g. "the user's code style preferences", "the user's preferred OAuth provider".
- Make it self-contained: write out the names, products, dates and terms the conversation \
uses instead of pronouns.
- Leave out words about searching ("find", "look up", "search for", "information about").
- Write it in the language of the current message.

priority: 1 (essential) to 5 (nice to have). intent: one short sentence on why the agent needs it.

Answer with one JSON object and nothing else:
{"reasoning": "<one or two sentences>", "queries": [{"query": "...", \
"context_type": "skill|resource|memory", "intent": "...", "priority": 1}]}"""


class PlanError(ValueError):
    """The LLM's reply holds no usable plan."""


@dataclass(frozen=True, slots=True)
class SessionContext:
    """What intent analysis reads from a session: its summary and its last messages."""

    summary: str = ""
    messages: tuple[tuple[str, str], ...] = field(default=())

    @property
    def is_empty(self) -> bool:
        """True when there is neither a summary nor a message with text."""
        return not self.summary.strip() and not any(text.strip() for _, text in self.messages)


def _summary_text(summary: str) -> str:
    if len(summary) <= MAX_SUMMARY_CHARS:
        return summary
    return summary[: MAX_SUMMARY_CHARS - len(TRUNCATED)] + TRUNCATED


def build_messages(
    query: str,
    context: SessionContext,
    *,
    context_types: Sequence[str] = (),
    targets: Sequence[str] = (),
) -> list[dict[str, str]]:
    """The chat messages of one intent analysis: our instructions, then the session and the query.

    Args:
        query: the current message.
        context: the session's summary and messages (only the last 5 with text are shown).
        context_types: when the caller restricted the search, the only types to plan.
        targets: when the caller restricted the search to URIs, those URIs (for context).
    """
    system = SYSTEM_PROMPT
    if context_types:
        system += (
            "\n\nThis search is restricted to these context types; plan queries of these types only: "
            + ", ".join(context_types)
            + "."
        )
    recent = [(role, text) for role, text in context.messages if text.strip()][-RECENT_MESSAGES:]
    summary = _summary_text(context.summary.strip()) or "(none)"
    lines = "\n".join(f"[{role}]: {text}" for role, text in recent) or "(none)"
    user = f"## Session summary\n{summary}\n\n## Recent messages (oldest first)\n{lines}\n\n"
    if targets:
        user += "## Search scope\n" + "\n".join(targets) + "\n\n"
    user += f"## Current message\n{query}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


# ---------------------------------------------------------------------------- parsing
def _extract(text: str) -> Any:
    """The first JSON value in the reply that looks like a plan (a list of queries is one)."""
    value = json_in_reply(
        text, lambda v: (isinstance(v, dict) and ("queries" in v or "reasoning" in v)) or _list_of_objects(v)
    )
    return {"reasoning": "", "queries": value} if isinstance(value, list) else value


def _list_of_objects(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


def _context_type(value: Any) -> str:
    text = str(value or "").strip().lower()
    text = _TYPE_ALIASES.get(text, text)
    return text if text in CONTEXT_TYPES else "resource"


def _priority(value: Any) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return 3
    return min(5, max(1, number))


def parse_plan(text: str) -> tuple[QueryPlan, int]:
    """The plan in an LLM reply, and how many usable queries it held before the cap of 5.

    Raises:
        PlanError: no JSON object with ``queries`` in the reply.
    """
    data = _extract(text or "")
    if data is None:
        raise PlanError("the reply holds no JSON plan")
    raw_queries = data.get("queries")
    if raw_queries is None:
        raise PlanError("the reply's JSON has no 'queries'")
    if not isinstance(raw_queries, list):
        raise PlanError("the reply's 'queries' is not a list")
    reasoning = data.get("reasoning", "")
    reasoning = reasoning if isinstance(reasoning, str) else str(reasoning)
    queries: list[TypedQuery] = []
    seen: set[tuple[str, str]] = set()
    for item in raw_queries:
        if isinstance(item, str):
            item = {"query": item}
        if not isinstance(item, dict):
            continue
        query = item.get("query")
        if not isinstance(query, str) or not query.strip():
            continue
        typed = TypedQuery(
            query=" ".join(query.split()),
            context_type=_context_type(item.get("context_type")),
            intent=str(item.get("intent") or ""),
            priority=_priority(item.get("priority", 3)),
        )
        key = (typed.query.casefold(), str(typed.context_type))
        if key in seen:
            continue
        seen.add(key)
        queries.append(typed)
    return QueryPlan(reasoning=reasoning.strip(), queries=tuple(queries[:MAX_QUERIES])), len(queries)


def analyze(
    chat: ChatModel,
    query: str,
    context: SessionContext,
    *,
    context_types: Sequence[str] = (),
    targets: Sequence[str] = (),
    warn: Callable[[str], None] | None = None,
) -> QueryPlan:
    """Ask the LLM for a plan.

    Raises:
        PlanError: the reply holds no plan.
        UnavailableError, DeadlineExceededError: the LLM call failed.
    """
    reply = chat.complete(build_messages(query, context, context_types=context_types, targets=targets))
    plan, planned = parse_plan(reply)
    if planned > MAX_QUERIES and warn is not None:
        warn(f"the query planner returned {planned} queries; only the first {MAX_QUERIES} run")
    return plan
