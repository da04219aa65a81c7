"""``POST /api/v1/search/search``, upstream's route for two things: a search planned from a
session (the ``search`` operation), and, with ``mode: "context"``, context packed into a budget
of tokens (the ``context`` operation, upstream's ``search_context``). The body is the search
operation's, with upstream's context fields besides; a context field in a plain search is
refused, as upstream refuses it."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import Field, create_model

from openviking.contract.operations import OPERATIONS
from openviking.errors import InvalidArgumentError
from openviking.server.bodies import Body
from openviking.server.envelope import EnvelopeResponse, ok, said
from openviking.server.state import Client

from .declared import body_model, say_ignored

router = APIRouter(prefix="/api/v1", tags=["search"], default_response_class=EnvelopeResponse)

SEARCH = OPERATIONS["search"]
# Upstream's fields of a context search that this packing does not use, and why.
CONTEXT_UPSTREAM = {
    "quotas": "the pieces are chosen by score, whatever their kind",
    "purpose": "the pieces are chosen by score, whatever their kind",
    "detail": "each piece grows from its smallest form while the budget allows",
    "dedup_turns": "no ledger of earlier turns is kept",
    "exclude_uris": "name what to search with target_uri",
    "peer_scope": "a user's context has no peers",
    "other_peer_penalty": "a user's context has no peers",
    "query_expansion": "a session's messages plan the queries when session_id is given",
    "rewrite": "the pieces are given as they are stored",
    "rewrite_max_bullets": "the pieces are given as they are stored",
}
# The search operation's body, with upstream's fields of a context search besides.
_CONTEXT_FIELDS: dict[str, Any] = {
    "mode": (
        str | None,
        Field(
            None,
            description=(
                "hybrid (default), vector, keyword, or upstream's list (the default); context: the best "
                "context within max_tokens instead of a list of hits (upstream's search_context)."
            ),
            json_schema_extra={"enum": ["hybrid", "vector", "keyword", "list", "context"]},
        ),
    ),
    "max_tokens": (
        int | None,
        Field(None, ge=1, le=1_000_000, description="mode context: the budget in tokens (default 1600)."),
    ),
    **{
        name: (Any, Field(None, description=f"Upstream's; it has no effect here: {why}."))
        for name, why in CONTEXT_UPSTREAM.items()
    },
}
# The search operation's body, with upstream's fields of a context search besides.
SearchBody: Any = create_model(
    "SearchBody",
    __base__=body_model(SEARCH),
    __doc__='The body of a search, or (mode "context") of a context within max_tokens.',
    **_CONTEXT_FIELDS,
)
CONTEXT = OPERATIONS["context"]
REF = "#/components/schemas/{model}"  # where the document keeps a schema that a body names
# What a context takes of the body (the rest is said to have no effect), and how.
_CONTEXT_TAKES = ("query", "target_uri", "session_id")


def _context_limit(default: Any) -> Any:
    return Field(default, ge=0, le=CONTEXT.params["limit"].le, description="How many hits to choose from (0: 20).")


def _context_body() -> type[Body]:
    """The body of a context search, for the document: what a context takes with its own form,
    the rest of a search's fields with their types alone (they change nothing)."""
    plain = body_model(SEARCH)
    fields: dict[str, Any] = {}
    for name, info in plain.model_fields.items():
        if name in _CONTEXT_TAKES:
            param = CONTEXT.params[name]
            fields[name] = (info.annotation, Field(info.default, description=param.doc, json_schema_extra=param.stated))
        elif name in ("limit", "node_limit"):
            fields[name] = (info.annotation, _context_limit(info.default))
        elif name != "mode":
            fields[name] = (info.annotation, Field(None, description="It has no effect on a context."))
    fields["mode"] = (Literal["context"], Field(description="A context within max_tokens."))
    fields["max_tokens"] = _CONTEXT_FIELDS["max_tokens"]
    fields.update({name: _CONTEXT_FIELDS[name] for name in CONTEXT_UPSTREAM})
    model: type[Body] = create_model("ContextSearchBody", __base__=Body, **fields)
    return model


def _either(schema: dict[str, Any]) -> None:
    """The document's body of the route: a search's, or a context's (mode "context")."""
    described: dict[str, Any] = {key: schema[key] for key in ("title", "description") if key in schema}
    schema.clear()
    branches = [model.model_json_schema(ref_template=REF) for model in (body_model(SEARCH), _context_body())]
    schema.update(described, oneOf=branches)


SearchBody.model_config["json_schema_extra"] = _either
SearchBody.model_rebuild(force=True)


@router.post("/search/search", operation_id="search")
def search(client: Client, body: SearchBody) -> EnvelopeResponse:
    """Search with a session's context (a FindResult), or, with mode context, the best context
    within max_tokens (a ContextResult)."""
    fields = body.model_dump(exclude_unset=True)
    context_fields = [name for name in ("max_tokens", *CONTEXT_UPSTREAM) if name in fields]
    if fields.get("mode") == "context":
        for name in context_fields:
            if name != "max_tokens":
                said(f"{name} has no effect here: {CONTEXT_UPSTREAM[name]}")
        taken = {"query", "target_uri", "session_id", "limit", "node_limit", "mode", "max_tokens"}
        for name in sorted(set(fields) - taken):
            said(f"{name} has no effect on a context: the pieces are chosen from a plain search")
        limit = fields.get("node_limit") or fields.get("limit") or 20
        budget = fields.get("max_tokens") or 1600
        context = client.context(
            fields.get("query", ""), fields.get("target_uri", ""), fields.get("session_id"), budget, limit
        )
        return ok(context)
    if context_fields:
        raise InvalidArgumentError(
            f"{context_fields[0]} is for mode context only",
            hint='Send "mode": "context" for context within a budget',
            details={"field": context_fields[0]},
        )
    say_ignored(SEARCH, [name for name in SEARCH.upstream if name in fields])
    given = {name: value for name, value in fields.items() if name not in SEARCH.upstream}
    return ok(client.search(**given))
