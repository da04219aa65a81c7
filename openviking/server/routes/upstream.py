"""Upstream OpenViking's routes that are not operations here: its observer (the health its
client asks with ``is_healthy()``), its content reindex and its wait, as this server means them;
and those of what this tool does not have (accounts, ACLs, tasks, packs...), which answer
upstream's own ``UNIMPLEMENTED`` (501) naming what is missing, so that upstream's client says so
rather than "not found".
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import Field

from openviking.errors import UnimplementedError
from openviking.server.bodies import Body, taking_upstreams
from openviking.server.envelope import EnvelopeResponse, Refused, allowed_methods, ok
from openviking.server.state import CallerOf, Client, State

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", default_response_class=EnvelopeResponse, include_in_schema=False)

# What upstream's observer reports on, each answered by this one process.
COMPONENTS = ("queue", "vikingdb", "models", "lock", "retrieval", "filesystem")


def _component(name: str, state: Any) -> dict[str, Any]:
    ready = not state.not_ready
    status = "ready" if ready else f"not ready ({state.not_ready})"
    return {"name": name, "is_healthy": ready, "has_errors": not ready, "status": status}


@router.get("/observer/system")
def observer_system(state: State) -> EnvelopeResponse:
    """Upstream's health of the whole system: every component, healthy once the store is open."""
    components = {name: _component(name, state) for name in COMPONENTS}
    errors = [c["status"] for c in components.values() if c["has_errors"]]
    return ok({"is_healthy": not errors, "errors": errors, "components": components})


@router.get("/observer/{component}")
def observer_component(component: str, state: State) -> EnvelopeResponse:
    """Upstream's health of one component."""
    if component not in COMPONENTS:
        raise UnimplementedError(
            f"This server observes no component '{component}'",
            hint=f"It reports on: {', '.join(COMPONENTS)}",
            details={"resource": component, "type": "component"},
        )
    return ok(_component(component, state))


@router.post("/system/wait")
def wait_processed() -> EnvelopeResponse:
    """Upstream's wait for queued work: every write here is done when it answers, so none is queued."""
    return ok({"pending": 0, "waited_seconds": 0.0})


@taking_upstreams(
    mode="vectors are embedded again; summaries follow the files",
    wait="a reindex answers when it is done",
    recursive="a reindex covers everything below uri",
    force="a reindex embeds everything below uri again",
    tags="a reindex keeps every file's tags",
    tag_mode="a reindex keeps every file's tags",
)
class ContentReindexBody(Body):
    """Upstream's POST /api/v1/content/reindex."""

    uri: str = Field(description="Embed the files below this URI again.")


@router.post("/content/reindex")
def content_reindex(body: ContentReindexBody, client: Client) -> EnvelopeResponse:
    """Upstream's reindex of a URI: this server's reindex of it."""
    body.say_ignored()
    return ok(client.reindex(body.uri))


# Upstream's routes for what this tool does not have, by what they are for.
UNSUPPORTED = {
    "admin/{rest:path}": "accounts and their users (a user here is a key in server.users)",
    "acl": "access control lists (access follows the caller's key)",
    "acl/{rest:path}": "access control lists (access follows the caller's key)",
    "tasks": "background tasks (every call here is done when it answers)",
    "tasks/{rest:path}": "background tasks (every call here is done when it answers)",
    "compile": "compiling resources into a skill",
    "pack/{rest:path}": "ovpack export and import",
    "agent-evolution/{rest:path}": "agent evolution",
    "openviking-assets/{rest:path}": "OpenViking assets",
    "snapshot/{rest:path}": "git-style snapshots of the tree",
    "system/consistency": "consistency checks (openviking doctor checks the store)",
    "content/batch-write": "batch writes (write each file with POST /api/v1/content/write)",
    "fs/attrs": "attributes (stat shows a file's tags)",
    "fs/attrs/{rest:path}": "attributes (tags are given when a file is added)",
    "fs/cp": "copies (add the source again under the other URI)",
    "skills/{rest:path}": "the skill catalogue (find a skill with find, add one with POST /api/v1/skills)",
    "sessions/{session_id}/messages/batch": "batches of messages (add each with POST .../messages)",
    "sessions/{session_id}/config": "a session's configuration",
    "sessions/{session_id}/archives/{rest:path}": "session archives",
    "sessions/{session_id}/used": "marking what a session used",
}


def _unsupported(what: str) -> Any:
    def answer(request: Request, caller: CallerOf) -> EnvelopeResponse:
        del caller  # the key is checked as for any route: an unknown key is still 401
        raise UnimplementedError(
            f"{request.method} {request.url.path} is upstream OpenViking's route for {what}; "
            "this server does not have it",
            hint="See the README's table of upstream's routes",
            details={"resource": request.url.path, "type": "route"},
        )

    return answer


@router.get("/skills")
def list_skills(request: Request, caller: CallerOf) -> EnvelopeResponse:
    """Upstream's listing of skills, at the path where this server adds one: 405, naming what
    the path takes (as any method a path does not take), with upstream's UNIMPLEMENTED."""
    del caller  # the key is checked as for any route: an unknown key is still 401
    allowed = allowed_methods(request)
    raise Refused(
        405,
        UnimplementedError(
            "GET /api/v1/skills is upstream OpenViking's route for the skill catalogue; this server does not have it",
            hint="Find a skill with find (context_type skill); add one with POST /api/v1/skills",
            details={"resource": request.url.path, "type": "route", "allowed": allowed},
        ),
        headers={"Allow": ", ".join(allowed)},
    )


for _path, _what in UNSUPPORTED.items():
    router.add_api_route(f"/{_path}", _unsupported(_what), methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
