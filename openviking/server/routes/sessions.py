"""POST /api/v1/sessions/{session_id}/messages: a message, as text or as upstream's parts."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from openviking.contract.operations import OPERATIONS
from openviking.server.bodies import AddMessageBody
from openviking.server.envelope import EnvelopeResponse, ok
from openviking.server.state import Client

router = APIRouter(prefix="/api/v1/sessions", tags=["sessions"], default_response_class=EnvelopeResponse)
SESSION_ID = OPERATIONS["add_message"].params["session_id"]


@router.post("/{session_id}/messages", operation_id="add_message")
def add_message(
    session_id: Annotated[str, Path(description=SESSION_ID.doc, json_schema_extra=SESSION_ID.stated)],
    body: AddMessageBody,
    client: Client,
) -> EnvelopeResponse:
    """Append a message (the session is created when needed)."""
    body.say_ignored()
    return ok(client.add_message(session_id, body.role, body.message(), created_at=body.created_at))
