"""Health, readiness, doctor and reindex: the server and the store as a whole."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from openviking import __version__
from openviking.errors import OpenVikingError, PermissionDeniedError
from openviking.server.bodies import ReindexBody
from openviking.server.envelope import EnvelopeResponse, ok
from openviking.server.state import CallerOf, Client, State

router = APIRouter(tags=["system"], default_response_class=EnvelopeResponse)


@router.get("/health", response_class=JSONResponse, operation_id="health")
async def health(request: Request, state: State) -> JSONResponse:
    """Liveness, with no key needed and no envelope (as upstream): the version, whether keys
    are required, and (as upstream) the ``user_id`` a valid key, or no key where none is needed, acts as."""
    body: dict[str, object] = {"status": "ok", "healthy": True, "version": __version__, "auth": state.keys.mode}
    try:
        caller = state.keys.caller(request.headers)
    except OpenVikingError:  # a bad key here is no failure of liveness: it just names nobody
        caller = None
    if caller is not None and state.root is not None:
        body["user_id"] = caller.user or state.root.user
    return JSONResponse(body)


@router.get("/ready", response_class=JSONResponse, operation_id="ready")
async def ready(state: State) -> JSONResponse:
    """200 once the store is open and the model loaded; 503 before (and while stopping)."""
    if state.not_ready:
        return JSONResponse({"status": "not_ready", "reason": state.not_ready}, status_code=503)
    return JSONResponse({"status": "ready"})


@router.get("/api/v1/doctor", operation_id="doctor")
def doctor(client: Client) -> EnvelopeResponse:
    """What is installed and configured, what the store holds, and every problem found."""
    return ok(client.doctor())


@router.post("/api/v1/doctor/repair", operation_id="doctor_repair")
def doctor_repair(client: Client, caller: CallerOf) -> EnvelopeResponse:
    """doctor, after mending what a crash or a damaged file left in the store (root key only:
    the store holds every user's space)."""
    if caller.isolated:
        raise PermissionDeniedError("Repairing the store needs the root key", hint="Ask whoever holds the root key")
    return ok(client.doctor(repair=True))


@router.post("/api/v1/reindex", operation_id="reindex")
def reindex(client: Client, caller: CallerOf, body: ReindexBody | None = None) -> EnvelopeResponse:
    """Embed the store (or the files below uri) again with the configured embedder."""
    uri = body.uri if body is not None else None
    if uri is None and caller.isolated:  # the whole store holds other users' spaces too
        raise PermissionDeniedError("Reindexing the whole store needs the root key", hint="Name a uri of your own")
    return ok(client.reindex(uri))
