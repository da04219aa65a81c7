"""GET /api/v1/fs/ls: a directory's entries, with upstream's second name for its limit."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from openviking.server.context import Client
from openviking.server.envelope import EnvelopeResponse, ok

router = APIRouter(prefix="/api/v1/fs", tags=["fs"], default_response_class=EnvelopeResponse)

NodeLimit = Annotated[int | None, Query(description="At most this many entries.")]


@router.get("/ls")
def ls(
    client: Client,
    uri: str = "viking://",
    recursive: bool = False,
    simple: Annotated[bool, Query(description="Only the URIs.")] = False,
    show_all_hidden: Annotated[bool, Query(description="Also the hidden summary files.")] = False,
    node_limit: NodeLimit = None,
    limit: Annotated[int | None, Query(description="Same as node_limit.")] = None,
    abs_limit: Annotated[int, Query(description="Cut abstracts to this many characters.")] = 256,
) -> EnvelopeResponse:
    """The entries of a directory (everything below it with recursive), directories first."""
    entries = client.ls(
        uri,
        recursive=recursive,
        simple=simple,
        show_hidden=show_all_hidden,
        node_limit=node_limit if node_limit is not None else limit,
        abs_limit=abs_limit,
    )
    return ok(entries)
