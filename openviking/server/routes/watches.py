"""Watched sources: a watch made from a path of the server's machine (root key only, as an add
from a path), upstream's PATCH of a watch (its URI in the query, the fields in the body), and
upstream's routes that name a watch by its ``task_id`` rather than its URI."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from pydantic import Field

from openviking.contract.interface import OpenVikingClient
from openviking.contract.operations import OPERATIONS
from openviking.contract.results import WatchInfo
from openviking.errors import NotFoundError
from openviking.server.bodies import Body, declared, taking_upstreams
from openviking.server.envelope import EnvelopeResponse, ok
from openviking.server.state import CallerOf, Client, State

from .resources import check_local_path

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["watches"], default_response_class=EnvelopeResponse)

TaskId = Annotated[str, Path(description="The watch's task_id (as list_watches gives it).")]
_TO_URI = OPERATIONS["update_watch"].params["to_uri"]
ToUri = Annotated[str, Query(description=_TO_URI.doc, json_schema_extra=_TO_URI.stated)]


class WatchBody(Body):
    """POST /api/v1/watches."""

    path: str = declared("watch", "path", ...)
    to: str | None = declared("watch", "to")
    parent: str | None = declared("watch", "parent")
    tags: list[str] | str | None = declared("watch", "tags")
    include: list[str] = Field(default_factory=list, description="Only files matching one of these globs.")
    exclude: list[str] = Field(default_factory=list, description="Leave out what matches these globs.")
    watch_interval: int | float | None = declared("watch", "watch_interval")


@taking_upstreams(
    reason="what a watched resource is for is not kept",
    instruction="resources are indexed as they are; no instruction changes how",
)
class UpdateWatchBody(Body):
    """PATCH /api/v1/watches: upstream's partial update (fields left out stay as they are)."""

    watch_interval: int | float | None = declared("update_watch", "watch_interval")
    is_active: bool | None = Field(None, description="false pauses the watch, true resumes it.")


@router.post("/watches", operation_id="watch")
def watch(body: WatchBody, client: Client, caller: CallerOf, state: State) -> EnvelopeResponse:
    """Add a folder or file of the server's machine and keep it in step with its files: a WatchInfo."""
    check_local_path(body.path, caller, state)
    return ok(
        client.watch(
            body.path, body.to, body.parent, tags=body.tags, include=body.include, exclude=body.exclude,
            watch_interval=body.watch_interval,
        )
    )  # fmt: skip


@router.patch("/watches", operation_id="update_watch")
def update_watch(to_uri: ToUri, client: Client, body: UpdateWatchBody | None = None) -> EnvelopeResponse:
    """Pause or resume a watch, or change its interval: the WatchInfo."""
    given = body or UpdateWatchBody()
    given.say_ignored()
    return ok(client.update_watch(to_uri, watch_interval=given.watch_interval, is_active=given.is_active))


@router.get("/watches/{task_id}", operation_id="get_watch")
def get_watch(task_id: TaskId, client: Client) -> EnvelopeResponse:
    """Upstream's look-up of one watch by its task_id: the WatchInfo."""
    return ok(_by_id(client, task_id))


@router.patch("/watches/{task_id}", operation_id="update_watch_by_id")
def update_watch_by_id(task_id: TaskId, client: Client, body: UpdateWatchBody | None = None) -> EnvelopeResponse:
    """Upstream's update of a watch by its task_id: the WatchInfo."""
    given = body or UpdateWatchBody()
    given.say_ignored()
    uri = _by_id(client, task_id).to_uri
    return ok(client.update_watch(uri, watch_interval=given.watch_interval, is_active=given.is_active))


@router.delete("/watches/{task_id}", operation_id="delete_watch_by_id")
def delete_watch_by_id(task_id: TaskId, client: Client) -> EnvelopeResponse:
    """Upstream's removal of a watch by its task_id."""
    return ok(client.delete_watch(_by_id(client, task_id).to_uri))


@router.post("/watches/{task_id}/trigger", operation_id="trigger_watch_by_id")
def trigger_watch_by_id(task_id: TaskId, client: Client) -> EnvelopeResponse:
    """Upstream's sync of a watch by its task_id: the WatchInfo once synced."""
    return ok(client.trigger_watch(_by_id(client, task_id).to_uri))


def _by_id(client: OpenVikingClient, task_id: str) -> WatchInfo:
    for info in client.list_watches().tasks:
        if info.task_id == task_id:
            return info
    raise NotFoundError(f"Watch not found: {task_id}", details={"resource": task_id, "type": "watch_task"})
