"""Writes that add content from a path or an upload: resources and skills.

``path`` names a file or folder on the server's machine, so only the root key (or a server
without keys, on loopback) may give one: a user key would read any file the server can. A
client elsewhere uploads instead, then adds the upload by its ``temp_file_id``; the add
then reads as if it were the client's own path (``source_name``), in its messages and in the
nodes' ``source``, so uploading the same folder again finds it unchanged. A user key's
``source_name`` is recorded below ``upload://<user>/``: only the root key's word can name a path
of the server's machine as a source.

A URL is fetched here, within the bounds on fetches under way (:mod:`openviking.server.fetching`);
a user key's from public addresses only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, File, UploadFile

from openviking.contract.results import AddResult
from openviking.errors import InvalidArgumentError, OpenVikingError, PermissionDeniedError, UnavailableError
from openviking.origins.fetch import is_url
from openviking.origins.local import local_source
from openviking.server.auth import Caller
from openviking.server.bodies import AddResourceBody, AddSkillBody
from openviking.server.envelope import EnvelopeResponse, ok, rewrite_warnings
from openviking.server.state import CallerOf, Client, ServerState, State
from openviking.server.uploads import UPLOADED, Uploads, local_name, replaced, skill_text

router = APIRouter(prefix="/api/v1", tags=["resources"], default_response_class=EnvelopeResponse)


@router.post("/resources/temp_upload", operation_id="temp_upload")
def temp_upload(
    file: Annotated[
        UploadFile,
        # Its bytes are whatever they are: any value sent as it is a file (OpenAPI names that binary).
        File(description="A file, or a folder as a .zip, .tar or .tar.gz.", json_schema_extra={"format": "binary"}),
    ],
    caller: CallerOf,
    state: State,
) -> EnvelopeResponse:
    """Keep an uploaded file or folder for the next add: {temp_file_id}."""
    return ok({"temp_file_id": _uploads(state).save(file.file, file.filename or "", caller.owner)})


@router.post("/resources", operation_id="add_resource")
def add_resource(body: AddResourceBody, client: Client, caller: CallerOf, state: State) -> EnvelopeResponse:
    """Mirror a file or folder under a viking:// URI and index it: an AddResult."""
    body.say_ignored()
    watching = body.watch_interval is not None and body.watch_interval > 0
    if watching and (body.path is None or is_url(body.path)):
        raise InvalidArgumentError(
            "watch_interval > 0 is not supported for an upload or a URL: only a local folder or file is watched",
            hint="Watch a path of the server's machine (root key), or add it again when it changes",
        )
    with _source(body.path, body.temp_file_id, body.source_name, caller, state) as (path, name, shown):
        include, exclude = body.globs()
        result = client.add_resource(
            path, body.to, body.parent, tags=body.tags, include=include, exclude=exclude, source_name=name,
            wait=body.wait,
        )  # fmt: skip
        _embed_later(state, result)
        if watching:  # upstream's way to watch: the source is recorded as watched at what it was added as
            client.watch(
                path, result.root_uri, tags=body.tags, include=include, exclude=exclude,
                watch_interval=body.watch_interval,
            )  # fmt: skip
        return ok(shown(result))


@router.post("/skills", operation_id="add_skill")
def add_skill(body: AddSkillBody, client: Client, caller: CallerOf, state: State) -> EnvelopeResponse:
    """Add an agent skill (a folder holding SKILL.md, one file, or a SKILL.md's text): an AddResult."""
    body.say_ignored()
    if body.data is not None:
        with skill_text(body.data) as (path, name):
            # Named only as SKILL.md, the skill has no source of its own: adding it again updates it.
            added = client.add_skill(path, body.name, tags=body.tags, source_name="SKILL.md", wait=body.wait)
            _embed_later(state, added)
            return ok(replaced(_plain(added), str(path), name))
    with _source(body.path, body.temp_file_id, body.source_name, caller, state) as (path, name, shown):
        added = client.add_skill(path, body.name, tags=body.tags, source_name=name, wait=body.wait)
        _embed_later(state, added)
        return ok(shown(added))


def _embed_later(state: ServerState, result: AddResult) -> None:
    """Have the server's indexer make the vectors an add that did not wait left."""
    if result.pending_vectors and state.indexer is not None:
        state.indexer.wake()


Shown = Callable[[Any], Any]


@contextmanager
def _source(
    path: str | None, upload_id: str | None, source_name: str | None, caller: Caller, state: ServerState
) -> Iterator[tuple[str, str | None, Shown]]:
    """The local path to add, the name to record it as, and how to show a result of it;
    an error from the add shows the client's name too."""
    if path is not None and is_url(path):
        with ExitStack() as stack:
            # A fetch holds a worker thread: a bounded number of them at once, per caller and in all.
            with state.fetches.slot(caller.owner):
                # A user key's URL is fetched from public addresses only: never the server's own network.
                fetched = stack.enter_context(local_source(path, public_only=caller.isolated))
            name = source_name or fetched.shown
            shown = stack.enter_context(_spelled(fetched.path, name))
            yield str(fetched.path), _recorded(name, caller) if source_name else name, shown
        return
    if path is not None:
        check_local_path(path, caller, state)
        yield path, source_name, _plain
        return
    assert upload_id is not None  # the body has one or the other
    with _uploads(state).taken(upload_id, caller.owner, source_name) as (local, name), _spelled(local, name) as shown:
        yield str(local), _recorded(name, caller), shown


def _recorded(name: str, caller: Caller) -> str:
    """What the nodes record as the source named ``name`` by the client: for a user key, a path
    or a URL is recorded below ``upload://<user>/``, so that no user can make a resource look as
    if it came from a file of the server's machine (``/etc/passwd``) or from a site it did not."""
    if not caller.isolated or name == local_name(name):
        return name  # the root key's word is the server's; a bare name names no place
    return f"{UPLOADED}{caller.user}/{name.lstrip('/')}"


def check_local_path(path: str, caller: Caller, state: ServerState) -> None:
    """Refuse a path of the server's machine to a user key (it would read any file the server
    can), or one outside ``server.path_roots``."""
    if caller.isolated:
        raise PermissionDeniedError(
            "A user key cannot add a path on the server's machine",
            hint="Upload it with POST /api/v1/resources/temp_upload, then add its temp_file_id",
        )
    _within_roots(path, state.server.path_roots)


@contextmanager
def _spelled(local: Path, name: str) -> Iterator[Shown]:
    """How to show a result of adding the temporary ``local``: as ``name``; an error raised
    inside is shown so too."""

    def shown(value: Any) -> Any:
        rewrite_warnings(lambda said: replaced(said, str(local), name))  # before the answer is made
        return replaced(_plain(value), str(local), name)

    try:
        yield shown
    except OpenVikingError as exc:
        exc.message, exc.hint, exc.details = shown(exc.message), shown(exc.hint), shown(exc.details)
        raise


def _within_roots(path: str, roots: tuple[str, ...]) -> None:
    """Refuse a path outside the configured ``server.path_roots`` (none configured: any path)."""
    if not roots or not path.strip():
        return  # an empty path is the library's INVALID_ARGUMENT
    try:
        resolved = Path(path).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):
        return  # the library says what is wrong with it
    if not any(resolved.is_relative_to(root) for root in roots):
        raise PermissionDeniedError(
            f"{path} is outside the folders this server adds from",
            hint="Add from a folder in server.path_roots, or upload it",
            details={"path": path, "path_roots": list(roots)},
        )


def _plain(value: Any) -> Any:
    return value.to_dict() if hasattr(value, "to_dict") else value


def _uploads(state: ServerState) -> Uploads:
    if state.uploads is None:
        raise UnavailableError("The server is not ready (starting)", hint="Retry shortly")
    return state.uploads
