"""POST /api/v1/sessions/{session_id}/messages: a message, as text or as upstream's parts."""

from __future__ import annotations

from fastapi import APIRouter

from openviking.server.bodies import AddMessageBody
from openviking.server.context import Client
from openviking.server.envelope import EnvelopeResponse, ok

router = APIRouter(prefix="/api/v1/sessions", tags=["sessions"], default_response_class=EnvelopeResponse)


@router.post("/{session_id}/messages", operation_id="add_message")
def add_message(session_id: str, body: AddMessageBody, client: Client) -> EnvelopeResponse:
    """Append a message (the session is created when needed)."""
    body.say_ignored()
    return ok(client.add_message(session_id, body.role, body.message(), created_at=body.created_at))
