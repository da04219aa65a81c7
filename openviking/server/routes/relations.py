"""/api/v1/relations: the links between URIs, with their reasons."""

from __future__ import annotations

from fastapi import APIRouter

from openviking.server.bodies import LinkBody, UnlinkBody
from openviking.server.context import Client
from openviking.server.envelope import EnvelopeResponse, ok

router = APIRouter(prefix="/api/v1/relations", tags=["relations"], default_response_class=EnvelopeResponse)


@router.get("")
def relations(client: Client, uri: str) -> EnvelopeResponse:
    """What uri was linked to, oldest first: [{uri, reason}]."""
    return ok(client.relations(uri))


@router.post("/link")
def link(body: LinkBody, client: Client) -> EnvelopeResponse:
    """Relate from_uri to one or more URIs (every one must exist)."""
    return ok(client.link(body.from_uri, body.to_uris, body.reason))


@router.delete("/link")
def unlink(body: UnlinkBody, client: Client) -> EnvelopeResponse:
    """Remove the relation from from_uri to to_uri."""
    return ok(client.unlink(body.from_uri, body.to_uri))
