"""GET /api/v1/content/download: a file's bytes themselves, as upstream's client reads them."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query
from fastapi.responses import Response

from openviking.contract.operations import OPERATIONS
from openviking.server.state import Client

from .declared import given_once

__all__ = ["router"]

router = APIRouter(prefix="/api/v1/content", tags=["content"], dependencies=[Depends(given_once)])
URI = OPERATIONS["download"].params["uri"]


@router.get(
    "/download",
    operation_id="download",
    summary="A file's bytes as they were added (a file added as text: its text as UTF-8).",
    response_class=Response,
    responses={200: {"content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}},
)
def download(
    client: Client,
    uri: Annotated[str, Query(description=URI.doc, json_schema_extra=URI.stated)],
) -> Response:
    """The bytes of the file at ``uri`` (an error is the usual envelope)."""
    data = client.download(uri)
    name = uri.rstrip("/").rsplit("/", 1)[-1] or "download"
    headers = {"Content-Disposition": f"attachment; filename*=UTF-8''{quote(name)}"}
    return Response(data, media_type="application/octet-stream", headers=headers)
