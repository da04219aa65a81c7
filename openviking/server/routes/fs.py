"""/api/v1/fs: browse the tree (ls, tree, stat) and write it (mkdir, mv, rm)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from openviking.server.bodies import MkdirBody, MoveBody
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


@router.get("/tree")
def tree(
    client: Client, uri: str = "viking://", level_limit: int = 3, node_limit: NodeLimit = None
) -> EnvelopeResponse:
    """Everything below uri, depth first, at most level_limit levels deep (0: all)."""
    return ok(client.tree(uri, level_limit=level_limit, node_limit=node_limit))


@router.get("/stat")
def stat(client: Client, uri: str) -> EnvelopeResponse:
    """Everything known about one file, directory or session, without its content."""
    return ok(client.stat(uri))


@router.post("/mkdir")
def mkdir(body: MkdirBody, client: Client) -> EnvelopeResponse:
    """Create a directory (parents too)."""
    return ok(client.mkdir(**body.arguments()))


@router.post("/mv")
def mv(body: MoveBody, client: Client) -> EnvelopeResponse:
    """Move a file or directory; records keep their vectors, relations follow."""
    return ok(client.mv(**body.arguments()))


@router.delete("")
def rm(client: Client, uri: str, recursive: bool = False) -> EnvelopeResponse:
    """Remove a file, or a directory with recursive, with its records and relations."""
    return ok(client.rm(uri, recursive))
