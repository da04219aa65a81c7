"""GET /api/v1/content/{read,abstract,overview}: a node's content, L0 and L1."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from openviking.server.context import Client
from openviking.server.envelope import EnvelopeResponse, ok

router = APIRouter(prefix="/api/v1/content", tags=["content"], default_response_class=EnvelopeResponse)

Uri = Annotated[str, Query(description="A viking:// URI.")]


@router.get("/read")
def read(
    client: Client,
    uri: Uri,
    offset: Annotated[int, Query(description="The first line (0-based).")] = 0,
    limit: Annotated[int, Query(description="How many lines (-1: to the end).")] = -1,
) -> EnvelopeResponse:
    """A file's content (L2), as text; a directory reads as its overview."""
    return ok(client.read(uri, offset, limit))


@router.get("/abstract")
def abstract(client: Client, uri: Uri) -> EnvelopeResponse:
    """A directory's L0 abstract, or a file's summary, as text."""
    return ok(client.abstract(uri))


@router.get("/overview")
def overview(client: Client, uri: Uri) -> EnvelopeResponse:
    """A directory's L1 overview, as text (a file's is its directory's)."""
    return ok(client.overview(uri))
