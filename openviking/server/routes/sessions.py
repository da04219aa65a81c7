"""/api/v1/sessions: the conversations a search plans its queries from."""

from __future__ import annotations

from fastapi import APIRouter

from openviking.server.bodies import AddMessageBody, CreateSessionBody
from openviking.server.context import Client
from openviking.server.envelope import EnvelopeResponse, ok

router = APIRouter(prefix="/api/v1/sessions", tags=["sessions"], default_response_class=EnvelopeResponse)


@router.post("")
def create_session(client: Client, body: CreateSessionBody | None = None) -> EnvelopeResponse:
    """Start a session (an id is generated when none is given)."""
    return ok(client.create_session(body.session_id if body is not None else None))


@router.get("")
def list_sessions(client: Client) -> EnvelopeResponse:
    """Every session of the caller's user, most recently changed first."""
    return ok(client.list_sessions())


@router.get("/{session_id}")
def get_session(session_id: str, client: Client) -> EnvelopeResponse:
    """A session with its messages, oldest first."""
    return ok(client.get_session(session_id))


@router.post("/{session_id}/messages")
def add_message(session_id: str, body: AddMessageBody, client: Client) -> EnvelopeResponse:
    """Append a message (the session is created when needed)."""
    return ok(client.add_message(session_id, body.role, body.message()))


@router.delete("/{session_id}")
def delete_session(session_id: str, client: Client) -> EnvelopeResponse:
    """Delete a session and its messages."""
    return ok(client.delete_session(session_id))
