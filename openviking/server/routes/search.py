"""POST /api/v1/search/{find,search,grep,glob}: the retrieval routes."""

from __future__ import annotations

from fastapi import APIRouter

from openviking.server.bodies import FindBody, GlobBody, GrepBody, SearchBody
from openviking.server.context import Client
from openviking.server.envelope import EnvelopeResponse, ok

router = APIRouter(prefix="/api/v1/search", tags=["search"], default_response_class=EnvelopeResponse)


@router.post("/find")
def find(body: FindBody, client: Client) -> EnvelopeResponse:
    """Search by meaning, without session context: a FindResult."""
    return ok(client.find(**body.arguments()))


@router.post("/search")
def search(body: SearchBody, client: Client) -> EnvelopeResponse:
    """Search with a session's context (an LLM plans the queries): a FindResult, with its query_plan."""
    return ok(client.search(**body.arguments()))


@router.post("/grep")
def grep(body: GrepBody, client: Client) -> EnvelopeResponse:
    """The lines of file content below uri that match a regular expression: a GrepResult."""
    return ok(client.grep(**body.arguments()))


@router.post("/glob")
def glob(body: GlobBody, client: Client) -> EnvelopeResponse:
    """The files and directories below uri whose path matches a glob: a GlobResult."""
    return ok(client.glob(**body.arguments()))
