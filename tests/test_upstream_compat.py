"""The HTTP client against upstream OpenViking's server: its recorded answers, replayed.

Each answer below is a body that ``openviking-server`` 0.5.2 (from PyPI, in api_key mode, with
a user key) sent to this client's requests; the stub on 127.0.0.1 answers each route with its
recording, refusing what upstream refused (a path of its machine, fields it does not take), so
each test checks one way this client once misread upstream or was refused by it. The long
``telemetry`` and ``usage`` of the add answers are left out.
"""

from __future__ import annotations

import asyncio
import io
import zipfile
from collections.abc import Iterator
from email.parser import BytesParser
from email.policy import default
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from helpers import make_tree
from servers import Reply, Request, StubServer

import openviking as ov

KEY = "YWNtZQ.YWxpY2U.a2V5LWZvci10aGUtcmVjb3JkaW5n"  # a user key's shape (account.user.secret)

HEALTH = {"status": "ok", "healthy": True, "version": "0.5.2", "auth_mode": "api_key",
          "account_id": "acme", "user_id": "alice", "role": "admin"}  # fmt: skip
BAD_KEY = {"status": "error", "result": None,
           "error": {"code": "UNAUTHENTICATED", "message": "Invalid API key", "details": {}},
           "telemetry": None, "profile": None}  # fmt: skip
NO_ROUTE = {"status": "error", "error": {"code": "NOT_FOUND", "message": "Not Found"}}
NO_FILE = {"status": "error", "result": None,
           "error": {"code": "NOT_FOUND", "message": "File not found: viking://resources/nope.md",
                     "details": {"type": "file", "resource": "viking://resources/nope.md"}},
           "telemetry": None, "profile": None}  # fmt: skip
NO_PATHS = {"status": "error", "result": None,
            "error": {"code": "PERMISSION_DENIED", "message": "HTTP server only accepts remote resource URLs or "
                      "temp-uploaded files; direct host filesystem paths are not allowed.", "details": {}},
            "telemetry": None, "profile": None}  # fmt: skip
UPLOADED = {"status": "ok", "result": {"temp_file_id": "upload_e729d755c6ca4cab914463cc7036e2b8.zip"}}
FOLDER_ADDED = {"status": "ok", "result": {
    "status": "success", "errors": [], "source_path": "docs",
    "meta": {"file_count": 2, "dir_name": "docs", "total_processable": 2,
             "processed_files": [{"path": "auth.md", "parser": "MarkdownParser"},
                                 {"path": "sub/deploy.md", "parser": "MarkdownParser"}],
             "failed_files": [], "unsupported_files": [], "skipped_files": []},
    "root_uri": "viking://resources/docs", "temp_uri": "viking://temp/alice/12021945_9ea813/docs",
    "queue_status": {"Semantic": {"processed": 1, "requeue_count": 0, "error_count": 0, "errors": []},
                     "Embedding": {"processed": 10, "requeue_count": 0, "error_count": 0, "errors": []}},
    "context_count": 10}}  # fmt: skip
FILE_ADDED = {"status": "ok", "result": {
    "status": "success", "errors": [], "source_path": "notes.txt", "meta": {},
    "root_uri": "viking://resources/notes.txt", "temp_uri": "viking://temp/alice/12021945_e0ec53/notes",
    "queue_status": {"Semantic": {"processed": 1, "requeue_count": 0, "error_count": 0, "errors": []},
                     "Embedding": {"processed": 3, "requeue_count": 0, "error_count": 0, "errors": []}},
    "context_count": 3}}  # fmt: skip
SKILL_ADDED = {"status": "ok", "result": {
    "status": "success", "root_uri": "viking://user/alice/skills/check-skill",
    "uri": "viking://user/alice/skills/check-skill", "name": "check-skill", "auxiliary_files": 0,
    "task_id": "ae10f735-3790-492b-ba1f-650c61e52278",
    "queue_status": {"Semantic": {"processed": 1, "requeue_count": 0, "error_count": 0, "errors": []},
                     "Embedding": {"processed": 3, "requeue_count": 0, "error_count": 0, "errors": []}}}}  # fmt: skip
SKILL_PATH_REFUSED = {"status": "error", "error": {
    "code": "INVALID_ARGUMENT", "message": "Invalid request parameters: body.path: Extra inputs are not permitted",
    "details": {"validation_errors": [{"loc": ["body", "path"], "message": "Extra inputs are not permitted",
                                       "type": "extra_forbidden"}]}}}  # fmt: skip
GLOBS_REFUSED = {"status": "error", "error": {
    "code": "INVALID_ARGUMENT", "message": "Invalid request parameters: body.include: Input should be a valid string",
    "details": {"validation_errors": [{"loc": ["body", "include"], "message": "Input should be a valid string",
                                       "type": "string_type"}]}}}  # fmt: skip
SESSION_CREATED = {"status": "ok", "result": {
    "session_id": "check-session-1", "uri": "viking://user/alice/sessions/check-session-1",
    "user": {"account_id": "acme", "user_id": "alice"}, "auto_commit_policy": None,
    "memory_extraction_config": {"events": {"tags": []}}},
    "error": None, "telemetry": None, "profile": None}  # fmt: skip
SESSIONS = {"status": "ok", "result": [
    {"session_id": "20261202-194514-fb8b6a0d506745bd",
     "uri": "viking://user/alice/sessions/20261202-194514-fb8b6a0d506745bd", "is_dir": True,
     "mod_time": "2026-12-02T19:45:14Z"}], "error": None, "telemetry": None, "profile": None}  # fmt: skip
MESSAGE_ADDED = {"status": "ok", "result": {"session_id": "check-session-1", "message_count": 1, "pending_tokens": 4},
                 "error": None, "telemetry": None, "profile": None}  # fmt: skip
SESSION = {"status": "ok", "result": {
    "session_id": "check-session-1", "created_at": "2026-12-02T19:45:14.946Z",
    "updated_at": "2026-12-02T19:45:15.104Z", "created_by_account_id": "acme", "created_by_user_id": "alice",
    "message_count": 2, "commit_count": 0, "pending_tokens": 6, "total_message_count": 2,
    "uri": "viking://user/alice/sessions/check-session-1", "user": {"account_id": "acme", "user_id": "alice"}},
    "error": None, "telemetry": None, "profile": None}  # fmt: skip
SESSION_DELETED = {"status": "ok", "result": {"session_id": "check-session-1"}, "error": None,
                   "telemetry": None, "profile": None}  # fmt: skip
MOVED = {"status": "ok", "result": {"from": "viking://resources/made", "to": "viking://resources/moved"},
         "error": None, "telemetry": None, "profile": None}  # fmt: skip
REMOVED = {"status": "ok", "result": {
    "uri": "viking://resources/moved", "estimated_deleted_count": 1,
    "memory_cleanup": {"status": "no_references", "memory_uris": []}, "semantic_root_uri": "viking://resources",
    "semantic_status": "queued", "task_id": "54c5f8e7-1c5f-4489-9aec-14fc190b4901"},
    "error": None, "telemetry": None, "profile": None}  # fmt: skip
STAT = {"status": "ok", "result": {
    "name": "notes.txt", "size": 4096, "mode": 493, "modTime": "2026-12-02T19:45:12Z", "isDir": True,
    "uri": "viking://resources/notes.txt", "isLocked": False, "count": 3},
    "error": None, "telemetry": None, "profile": None}  # fmt: skip
GREP = {"status": "ok", "result": {
    "matches": [{"line": 3, "uri": "viking://resources/docs/sub/deploy/deploy.md",
                 "content": "Run the server behind a reverse proxy; set the public base URL."}],
    "count": 1, "match_count": 1, "files_scanned": 2}, "error": None, "telemetry": None, "profile": None}  # fmt: skip
EXCLUDE_REFUSED = {"status": "error", "error": {
    "code": "INVALID_ARGUMENT",
    "message": "Invalid request parameters: body.exclude_uri: Input should be a valid string",
    "details": {"validation_errors": [{"loc": ["body", "exclude_uri"], "message": "Input should be a valid string",
                                       "type": "string_type"}]}}}  # fmt: skip

NOT_PUBLIC = {"status": "error", "result": None,
              "error": {"code": "PERMISSION_DENIED", "message": "HTTP server only accepts public remote resource "
                        "targets; host 'example.invalid' could not be resolved to a verifiable public address.",
                        "details": {}}, "telemetry": None, "profile": None}  # fmt: skip
NO_GIT = {"status": "error", "result": None,
          "error": {"code": "INVALID_ARGUMENT", "message": "Unsupported Git skill source URL", "details": {}},
          "telemetry": None, "profile": None}  # fmt: skip

SKILL_FIELDS = {"data", "temp_file_id", "skills", "list_only", "wait", "source_metadata", "target_uri", "telemetry"}


def upstream(request: Request) -> Reply:
    """Upstream's server, as recorded: each route's answer, and its refusals."""
    parts = urlsplit(request.path)
    route, query = f"{request.method} {parts.path}", parse_qs(parts.query)
    body = request.body if isinstance(request.body, dict) else {}
    if route == "GET /health":
        return Reply(200, HEALTH) if request.headers.get("authorization") == f"Bearer {KEY}" else Reply(401, BAD_KEY)
    if request.headers.get("authorization") != f"Bearer {KEY}":
        return Reply(401, BAD_KEY)
    if route == "POST /api/v1/resources/temp_upload":
        return Reply(200, UPLOADED)
    if route == "POST /api/v1/resources":
        if str(body.get("path", "")).startswith("https://"):
            return Reply(403, NOT_PUBLIC)  # it fetches a URL itself: this host cannot be resolved
        if "path" in body:
            return Reply(403, NO_PATHS)
        if not all(isinstance(body.get(k, ""), str) for k in ("include", "exclude")):
            return Reply(400, GLOBS_REFUSED)
        return Reply(200, FOLDER_ADDED if body.get("source_name") == "docs" else FILE_ADDED)
    if route == "POST /api/v1/skills" and "data" in body:
        return Reply(400, NO_GIT)
    if route == "POST /api/v1/skills":
        return Reply(200, SKILL_ADDED) if set(body) <= SKILL_FIELDS else Reply(400, SKILL_PATH_REFUSED)
    if route == "POST /api/v1/search/grep":
        return Reply(200, GREP) if isinstance(body.get("exclude_uri", ""), str) else Reply(400, EXCLUDE_REFUSED)
    recorded = {
        "POST /api/v1/sessions": SESSION_CREATED,
        "GET /api/v1/sessions": SESSIONS,
        "POST /api/v1/sessions/check-session-1/messages": MESSAGE_ADDED,
        "GET /api/v1/sessions/check-session-1": SESSION,
        "DELETE /api/v1/sessions/check-session-1": SESSION_DELETED,
        "POST /api/v1/fs/mv": MOVED,
        "DELETE /api/v1/fs": REMOVED,
    }
    if route in recorded:
        return Reply(200, recorded[route])
    if route == "GET /api/v1/fs/stat":
        return Reply(200, STAT) if query.get("uri") == ["viking://resources/notes.txt"] else Reply(404, NO_FILE)
    if route == "GET /api/v1/content/read":
        return Reply(404, NO_FILE)
    return Reply(404, NO_ROUTE)  # upstream's answer for a route it does not have


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer(upstream) as server:
        yield server


@pytest.fixture
def client(stub: StubServer) -> Iterator[ov.SyncHTTPClient]:
    with ov.SyncHTTPClient(url=stub.url, api_key=KEY) as sdk:
        yield sdk


def sent(stub: StubServer, route: str) -> list[Request]:
    method, path = route.split(" ", 1)
    return [r for r in stub.requests if r.method == method and urlsplit(r.path).path == path]


def uploaded(request: Request) -> tuple[str, bytes]:
    """The file name and bytes of a multipart upload."""
    head = f"Content-Type: {request.headers['content-type']}\r\n\r\n".encode()
    part = next(BytesParser(policy=default).parsebytes(head + request.raw).iter_parts())
    data = part.get_payload(decode=True)
    assert isinstance(data, bytes)
    return str(part.get_filename()), data


def test_sessions_read_upstreams_answers(client: ov.SyncHTTPClient) -> None:
    created = client.create_session("check-session-1")
    assert (created.session_id, created.user) == ("check-session-1", "alice")  # upstream's user is an object
    (listed,) = client.list_sessions()  # a listed session names no user
    assert listed.session_id == "20261202-194514-fb8b6a0d506745bd" and listed.updated_at == "2026-12-02T19:45:14Z"
    message = client.add_message("check-session-1", "user", "I like dark mode")
    assert message.message_count == 1 and message.session_id == "check-session-1"
    assert (message.message.role, message.message.text) == ("user", "I like dark mode")  # the one sent
    parts = client.add_message("check-session-1", "assistant", [{"type": "text", "text": "Noted."}])
    assert parts.message.parts == [{"type": "text", "text": "Noted."}]
    got = client.get_session("check-session-1")
    assert (got.user, got.message_count, got.created_at) == ("alice", 2, "2026-12-02T19:45:14.946Z")
    deleted = client.delete_session("check-session-1")
    assert deleted.session_id == "check-session-1" and deleted.deleted
    # Our server's answers, which hold every key, read as they are.
    ours = {"session_id": "s1", "uri": "viking://session/s1", "user": "bob", "message_count": 0}
    with StubServer(lambda _request: Reply(200, {"status": "ok", "time": 0.01, "result": ours})) as server:
        info = ov.SyncHTTPClient(url=server.url).get_session("s1")
    user = {"account_id": "default", "user_id": "bob"}  # ours answers as upstream's does now
    assert info.to_dict() == {
        **ours,
        "user": user,
        "created_at": None,
        "updated_at": None,
        "is_dir": True,
        "mod_time": None,
    }


def test_the_async_client_reads_them_too(stub: StubServer) -> None:
    async def run() -> tuple[Any, Any]:
        async with ov.AsyncHTTPClient(url=stub.url, api_key=KEY) as sdk:
            return await sdk.add_message("check-session-1", "user", "hi"), await sdk.delete_session("check-session-1")

    message, deleted = asyncio.run(run())
    assert message.message.text == "hi" and deleted.session_id == "check-session-1"


def test_a_local_folder_is_uploaded_as_a_zip(client: ov.SyncHTTPClient, stub: StubServer, tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "docs", {"auth.md": "# Auth\n\nKeys.\n", "sub/deploy.md": "# Deploy\n", ".env": "x"})
    (folder / "keys.md").symlink_to(folder / "auth.md")  # a link inside goes as the file's bytes
    (folder / "passwd").symlink_to("/etc/passwd")  # one leading out is left out
    (folder / "up").symlink_to(folder)  # and so is a link to a folder
    result = client.add_resource(folder, to="viking://resources/docs", include=["*.md", "*.txt"], exclude=["*.tmp"])
    # Upstream refuses a path of its machine (403), and keeps a .tar.gz as one file of gzip bytes.
    assert sent(stub, "POST /api/v1/resources")[-1].body == {
        "to": "viking://resources/docs", "include": "*.md,*.txt", "exclude": "*.tmp", "wait": True,
        "source_name": "docs", "temp_file_id": "upload_e729d755c6ca4cab914463cc7036e2b8.zip",
    }  # fmt: skip
    name, data = uploaded(sent(stub, "POST /api/v1/resources/temp_upload")[-1])
    assert name == "docs.zip"
    archive = zipfile.ZipFile(io.BytesIO(data))
    assert sorted(archive.namelist()) == ["auth.md", "keys.md", "sub/", "sub/deploy.md"]
    assert archive.read("keys.md") == b"# Auth\n\nKeys.\n"
    assert (result.root_uri, result.added, result.skipped) == ("viking://resources/docs", 2, 0)


def test_a_local_file_is_uploaded_as_it_is(client: ov.SyncHTTPClient, stub: StubServer, tmp_path: Path) -> None:
    notes = make_tree(tmp_path / "src", {"notes.txt": "Plain notes.\n"}) / "notes.txt"
    result = client.add_resource(notes, to="viking://resources/notes.txt")
    assert uploaded(sent(stub, "POST /api/v1/resources/temp_upload")[-1]) == ("notes.txt", b"Plain notes.\n")
    assert "path" not in sent(stub, "POST /api/v1/resources")[-1].body
    assert (result.root_uri, result.added) == ("viking://resources/notes.txt", 1)  # its meta is empty


def test_a_skill_goes_as_upstream_takes_it(client: ov.SyncHTTPClient, stub: StubServer, tmp_path: Path) -> None:
    skill = make_tree(tmp_path / "skill", {"SKILL.md": "---\nname: check-skill\n---\n# Check\n"})
    result = client.add_skill(skill)
    body = sent(stub, "POST /api/v1/skills")[-1].body
    assert body == {"wait": True, "temp_file_id": "upload_e729d755c6ca4cab914463cc7036e2b8.zip"}
    assert (result.root_uri, result.added) == ("viking://user/alice/skills/check-skill", 1)
    # A name upstream cannot take is an error before anything is sent.
    before = len(stub.requests)
    with pytest.raises(ov.InvalidArgumentError, match="takes no name for a skill"):
        client.add_skill(skill, name="other")
    assert len(stub.requests) == before


def test_a_url_goes_to_upstream_to_fetch(client: ov.SyncHTTPClient, stub: StubServer) -> None:
    with pytest.raises(ov.PermissionDeniedError, match="only accepts public remote resource targets"):
        client.add_resource("https://example.invalid/doc.md", to="viking://resources/web.md")
    assert sent(stub, "POST /api/v1/resources")[-1].body["path"] == "https://example.invalid/doc.md"
    with pytest.raises(ov.InvalidArgumentError, match="^Unsupported Git skill source URL$"):
        client.add_skill("https://example.invalid/skill.git")
    assert sent(stub, "POST /api/v1/skills")[-1].body == {"data": "https://example.invalid/skill.git", "wait": True}
    assert not sent(stub, "POST /api/v1/resources/temp_upload")  # nothing of this machine to upload


def test_mv_and_rm_count_what_upstream_did(client: ov.SyncHTTPClient) -> None:
    moved = client.mv("viking://resources/made", "viking://resources/moved")
    assert (moved["from"], moved["to"], moved["moved"]) == ("viking://resources/made", "viking://resources/moved", 1)
    assert client.rm("viking://resources/moved", recursive=True)["removed"] == 1


def test_a_route_upstream_lacks_names_itself(client: ov.SyncHTTPClient) -> None:
    with pytest.raises(ov.NotFoundError, match="^The server has no route POST /api/v1/memories$") as caught:
        client.add_memory("The user prefers dark mode.")
    assert caught.value.details["route"] == "POST /api/v1/memories"
    with pytest.raises(ov.NotFoundError, match="^The server has no route GET /api/v1/doctor$"):
        client.doctor()
    # A missing item is still the item.
    with pytest.raises(ov.NotFoundError, match="^File not found: viking://resources/nope.md$"):
        client.read("viking://resources/nope.md")


def test_one_excluded_uri_goes_as_a_string(client: ov.SyncHTTPClient, stub: StubServer) -> None:
    result = client.grep("viking://resources", "proxy", exclude_uri=["viking://resources/notes.txt"])
    assert sent(stub, "POST /api/v1/search/grep")[-1].body["exclude_uri"] == "viking://resources/notes.txt"
    assert [m.uri for m in result.matches] == ["viking://resources/docs/sub/deploy/deploy.md"]


def test_a_wrong_key_at_health_is_unauthenticated(stub: StubServer) -> None:
    with pytest.raises(ov.UnauthenticatedError, match="^Invalid API key$"):
        ov.SyncHTTPClient(url=stub.url, api_key="wrong-key").initialize()


def test_stat_reads_upstreams_file_system_stat(client: ov.SyncHTTPClient) -> None:
    stat = client.stat("viking://resources/notes.txt")
    assert (stat.name, stat.is_dir, stat.size, stat.context_type) == ("notes.txt", True, 4096, "resource")
    assert stat.updated_at == "2026-12-02T19:45:12Z"  # upstream's modTime
