"""Upstream's own HTTP client, ``openviking-sdk`` from PyPI (its ``SyncHTTPClient``), unchanged
against ``openviking serve``: every call the brief covers works, upstream's own optional fields
are taken, errors name what they are about, and what this tool does not have answers upstream's
``UNIMPLEMENTED``, which the client raises as such.

Each call is one row of the README's table "Upstream's own client against this server", which
this test renders: it fails when the README's table is not the one the calls gave, and with
``OPENVIKING_UPDATE_README=1`` it writes the table there instead.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import HASH_CONF, REPO
from ovserver import handbook_store, thread_server

import openviking as ov

openviking_sdk = pytest.importorskip("openviking_sdk")
from openviking_sdk import errors as sdk_errors  # noqa: E402

KB = "viking://resources/sdk/kb"
WATCHED = "viking://resources/sdk/watched"
TABLE_START = "<!-- upstream-sdk-table: made by tests/test_upstream_sdk.py -->"
TABLE_END = "<!-- /upstream-sdk-table -->"


@dataclass
class Row:
    """One call of upstream's client: the method as called, the route it takes, what came of it."""

    call: str
    route: str
    outcome: str


@pytest.fixture(scope="module")
def sdk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path, str]]:
    base = tmp_path_factory.mktemp("sdk")
    with thread_server(HASH_CONF, handbook_store(base)) as url:
        client = openviking_sdk.SyncHTTPClient(url=url, timeout=120)
        client.initialize()
        yield client, base, url
        client.close()


def _tree(base: Path, name: str, files: dict[str, str]) -> Path:
    root = base / name
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


SKILL = textwrap.dedent(
    """\
    ---
    name: release-notes
    description: Write release notes from merged changes.
    ---

    # Release notes

    Collect the merged changes and group them by kind.
    """
)


def _calls(client: Any, base: Path, url: str) -> list[tuple[str, str, Callable[[], Any], Callable[[Any], None]]]:
    """(call, route, the call itself, what its answer must be)."""
    kb = _tree(
        base,
        "kb",
        {
            "auth.md": "# Auth\n\nSend the API key as a bearer token.\n",
            "ops/deploy.md": "# Deploy\n\nDeploy with docker compose.\n",
        },
    )
    first = _tree(base / "m1", "kb", {"one.md": "# One\n\nThe first folder's page.\n"})
    second = _tree(base / "m2", "kb", {"two.md": "# Two\n\nThe second folder's page.\n"})
    skill = _tree(base, "release-notes", {"SKILL.md": SKILL})
    notes = _tree(base, "notes", {"n.md": "# Notes\n\nA watched page.\n"})
    session: dict[str, str] = {}
    task: dict[str, str] = {}

    def upload_not_watched(exc: Any) -> None:
        # upstream's client uploads a local folder, and an upload does not change (upstream refuses it too)
        assert isinstance(exc, sdk_errors.InvalidArgumentError) and "upload" in str(exc), repr(exc)

    def watched() -> Any:
        # upstream's client makes no watch of a path of the server's machine: this tool's client does
        ov.SyncHTTPClient(url=url).watch(notes, to=WATCHED)
        return client.list_watches()

    def listed_watch(answer: Any) -> None:
        assert answer["total"] == 1 and answer["tasks"][0]["to_uri"] == WATCHED, answer
        task["id"] = answer["tasks"][0]["task_id"]

    def has(*keys: str) -> Callable[[Any], None]:
        def check(answer: Any) -> None:
            assert isinstance(answer, dict) and all(k in answer for k in keys), answer

        return check

    def is_true(answer: Any) -> None:
        assert answer is True, answer

    def named_missing(exc: Any) -> None:
        assert isinstance(exc, sdk_errors.NotFoundError) and f"{KB}/nope.md" in str(exc), repr(exc)

    def named_existing(exc: Any) -> None:
        assert isinstance(exc, sdk_errors.AlreadyExistsError) and f"{KB}/ops" in str(exc), repr(exc)

    def unimplemented(exc: Any) -> None:
        assert isinstance(exc, sdk_errors.UnimplementedError) and "does not have" in str(exc), repr(exc)

    def both_folders_kept(_answer: Any) -> None:
        names = sorted(entry["uri"].rsplit("/", 1)[1] for entry in client.ls("viking://resources/sdk/same"))
        assert names == ["one.md", "two.md"], names

    def new_session(answer: Any) -> None:
        assert answer["user"] == {"account_id": "default", "user_id": "default"}, answer
        session["id"] = answer["session_id"]

    def only_directories(answer: Any) -> None:
        assert answer and all(entry["isDir"] for entry in answer), answer

    def one_page(answer: Any) -> None:
        assert len(answer["result"]) == 1 and answer["has_more"] is True, answer

    def found_auth(answer: Any) -> None:
        assert answer["resources"] and answer["resources"][0]["uri"] == f"{KB}/auth.md", answer

    def bytes_of_auth(answer: Any) -> None:
        assert answer == (kb / "auth.md").read_bytes(), answer

    def committed(answer: Any) -> None:
        assert answer["archived"] and answer["messages_archived"] == 2, answer
        counts = {"created": 3, "merged": 0, "skipped": 0, "superseded": 0, "aged": 0, "total": 3}
        assert answer["memories_extracted"] == counts, answer
        lisbon = next(m for m in answer["memories"] if "Lisbon" in m["text"])
        assert lisbon["day"] == "2023-04-01" and lisbon["action"] == "created", lisbon

    def remembered_lisbon(answer: Any) -> None:
        first = answer["memories"][0]
        assert "Lisbon" in (first.get("abstract") or "") and first["uri"].startswith("viking://user/default/memories/")

    def session_context(answer: Any) -> None:
        assert isinstance(answer, dict) and "latest_archive_overview" in answer, answer

    def packed_deploy(answer: Any) -> None:
        text = json.dumps(answer if isinstance(answer, dict) else getattr(answer, "__dict__", str(answer)), default=str)
        assert f"{KB}/ops/deploy.md" in text, text[:500]

    def skill_updated(_answer: Any) -> None:
        text = client.read("viking://agent/skills/release-notes/SKILL.md")
        assert "group them by kind and by owner" in text, text

    edited = SKILL.replace("by kind.", "by kind and by owner.")
    sid = lambda: session["id"]  # noqa: E731 - made by the create_session call before it
    return [
        ("health()", "GET /health", client.health, is_true),
        ("is_healthy()", "GET /api/v1/observer/system", client.is_healthy, is_true),
        (
            "add_resource(folder, to=...)",
            "POST /api/v1/resources",
            lambda: client.add_resource(str(kb), to=KB, wait=True),
            has("root_uri"),
        ),
        (
            "add_resource(file, parent=...)",
            "POST /api/v1/resources",
            lambda: client.add_resource(str(kb / "auth.md"), parent="viking://resources/sdk", wait=True),
            has("root_uri"),
        ),
        (
            "add_resource(..., options reason, instruction, telemetry)",
            "POST /api/v1/resources",
            lambda: client.add_resource(
                str(kb),
                to=KB,
                wait=True,
                options={"reason": "the team's docs", "instruction": "keep headings", "telemetry": True},
            ),
            has("root_uri"),
        ),
        (
            "add_resource of two folders both named kb",
            "POST /api/v1/resources",
            lambda: (
                client.add_resource(str(first), to="viking://resources/sdk/same", wait=True),
                client.add_resource(str(second), to="viking://resources/sdk/same", wait=True),
            )[1],
            both_folders_kept,
        ),
        ("ls(uri)", "GET /api/v1/fs/ls", lambda: client.ls(KB), lambda a: None if len(a) == 2 else pytest.fail(str(a))),
        ("ls_page(uri, limit=1)", "GET /api/v1/fs/ls", lambda: client.ls_page(KB, limit=1), one_page),
        (
            "tree(uri, directories_only=True)",
            "GET /api/v1/fs/tree",
            lambda: client.tree(KB, directories_only=True),
            only_directories,
        ),
        ("stat(uri)", "GET /api/v1/fs/stat", lambda: client.stat(f"{KB}/auth.md"), has("uri", "isDir", "modTime")),
        ("stat(missing uri)", "GET /api/v1/fs/stat", lambda: client.stat(f"{KB}/nope.md"), named_missing),
        (
            "read(uri, offset, limit)",
            "GET /api/v1/content/read",
            lambda: client.read(f"{KB}/auth.md", offset=2, limit=1),
            lambda a: None if a.strip() == "Send the API key as a bearer token." else pytest.fail(a),
        ),
        (
            "abstract(uri), overview(uri)",
            "GET /api/v1/content/abstract, overview",
            lambda: (client.abstract(KB), client.overview(KB)),
            lambda a: None if all(a) else pytest.fail(str(a)),
        ),
        (
            "download_bytes(uri)",
            "GET /api/v1/content/download",
            lambda: client.download_bytes(f"{KB}/auth.md"),
            bytes_of_auth,
        ),
        (
            "find(query, target_uri, limit)",
            "POST /api/v1/search/find",
            lambda: client.find("how do I send the API key", target_uri=KB, limit=3),
            found_auth,
        ),
        (
            "find(..., options read_content)",
            "POST /api/v1/search/find",
            lambda: client.find("how do I send the API key", target_uri=KB, options={"read_content": True}),
            found_auth,
        ),
        (
            "grep(uri, pattern, tags=...)",
            "POST /api/v1/search/grep",
            lambda: client.grep(KB, "docker", tags=["team=ops"]),
            lambda a: None if a["count"] == 1 else pytest.fail(str(a)),
        ),
        (
            "glob(pattern, uri, extra_fields=...)",
            "POST /api/v1/search/glob",
            lambda: client.glob("**/*.md", uri=KB, extra_fields=["size"]),
            lambda a: None if a["count"] == 2 else pytest.fail(str(a)),
        ),
        (
            "mkdir(uri, acl=...)",
            "POST /api/v1/fs/mkdir",
            lambda: client.mkdir(f"{KB}/notes", acl={"entries": []}),
            lambda a: None,
        ),
        ("mkdir(existing uri)", "POST /api/v1/fs/mkdir", lambda: client.mkdir(f"{KB}/ops"), named_existing),
        (
            "write(uri, content, mode='create')",
            "POST /api/v1/content/write",
            lambda: client.write(f"{KB}/notes/todo.md", "# Todo\n\nRotate the keys.\n", mode="create"),
            has("uri", "written_bytes"),
        ),
        ("mv(from_uri, to_uri)", "POST /api/v1/fs/mv", lambda: client.mv(f"{KB}/notes", f"{KB}/later"), lambda a: None),
        (
            "rm(uri, recursive=True)",
            "DELETE /api/v1/fs",
            lambda: client.rm(f"{KB}/later", recursive=True),
            lambda a: None,
        ),
        (
            "create_session(options memory_extraction_config)",
            "POST /api/v1/sessions",
            lambda: client.create_session(options={"memory_extraction_config": {"events": {"tags": ["p"]}}}),
            new_session,
        ),
        (
            "add_message(id, role, content, peer_id, created_at)",
            "POST /api/v1/sessions/{id}/messages",
            lambda: client.add_message(
                sid(),
                "user",
                "We are designing the OAuth login flow.",
                peer_id="laptop",
                options={"created_at": "2023-05-12T10:00:00Z"},
            ),
            has("session_id"),
        ),
        (
            "search(query, session_id, options search_type)",
            "POST /api/v1/search/search",
            lambda: client.search(
                "help me write an RFC for it", session_id=sid(), target_uri=KB, options={"search_type": "fast"}
            ),
            has("resources"),
        ),
        (
            "add_message(id, 'user', a statement about the user)",
            "POST /api/v1/sessions/{id}/messages",
            lambda: client.add_message(
                sid(),
                "user",
                "I'm vegetarian and I moved to Lisbon last month.",
                options={"created_at": "2023-05-12T10:05:00Z"},
            ),
            has("session_id"),
        ),
        ("commit_session(id)", "POST /api/v1/sessions/{id}/commit", lambda: client.commit_session(sid()), committed),
        (
            "find(question about the user) after the commit",
            "POST /api/v1/search/find",
            lambda: client.find("which city did the user move to", target_uri="viking://user/memories", limit=3),
            remembered_lisbon,
        ),
        (
            "get_session_context(id, token_budget)",
            "GET /api/v1/sessions/{id}/context",
            lambda: client.get_session_context(sid(), token_budget=2000),
            session_context,
        ),
        (
            "search_context(query, target_uri)",
            "POST /api/v1/search/search",
            lambda: client.search_context("how do I deploy", target_uri=KB, limit=5),
            packed_deploy,
        ),
        (
            "get_session(id, auto_create=True)",
            "GET /api/v1/sessions/{id}",
            lambda: client.get_session("made-on-demand", auto_create=True),
            has("session_id", "user"),
        ),
        (
            "list_sessions()",
            "GET /api/v1/sessions",
            client.list_sessions,
            lambda a: None if a and all(s["is_dir"] for s in a) else pytest.fail(str(a)),
        ),
        (
            "delete_session(id)",
            "DELETE /api/v1/sessions/{id}",
            lambda: client.delete_session("made-on-demand"),
            lambda a: None,
        ),
        ("add_skill(folder)", "POST /api/v1/skills", lambda: client.add_skill(str(skill), wait=True), has("root_uri")),
        (
            "add_skill(SKILL.md text), edited",
            "POST /api/v1/skills",
            lambda: client.add_skill(edited, wait=True),
            skill_updated,
        ),
        ("admin_list_accounts()", "GET /api/v1/admin/accounts", client.admin_list_accounts, unimplemented),
        ("acl_get(uri)", "GET /api/v1/acl", lambda: client.acl_get(KB), unimplemented),
        (
            "add_resource(folder, options watch_interval)",
            "POST /api/v1/resources",
            lambda: client.add_resource(str(notes), to=WATCHED, wait=True, options={"watch_interval": 5}),
            upload_not_watched,
        ),
        ("list_watches()", "GET /api/v1/watches", watched, listed_watch),
        ("get_watch(task_id)", "GET /api/v1/watches/{task_id}", lambda: client.get_watch(task["id"]), has("to_uri")),
        (
            "update_watch(to_uri, is_active=False)",
            "PATCH /api/v1/watches",
            lambda: client.update_watch(to_uri=WATCHED, is_active=False),
            lambda a: None if a["is_active"] is False else pytest.fail(str(a)),
        ),
        (
            "trigger_watch(to_uri)",
            "POST /api/v1/watches/trigger",
            lambda: client.trigger_watch(to_uri=WATCHED),
            has("last_result"),
        ),
        (
            "delete_watch(to_uri)",
            "DELETE /api/v1/watches",
            lambda: client.delete_watch(to_uri=WATCHED),
            lambda a: None if a["deleted"] is True else pytest.fail(str(a)),
        ),
    ]


def _outcome(expectation: Callable[[Any], None], call: Callable[[], Any]) -> str:
    try:
        answer = call()
    except sdk_errors.OpenVikingError as exc:
        expectation(exc)
        return f"{type(exc).__name__}: {exc}"
    expectation(answer)
    return "works"


def _table(rows: list[Row]) -> str:
    lines = ["| call of `openviking_sdk.SyncHTTPClient` | route | against `openviking serve` |", "|---|---|---|"]
    lines += [f"| `{r.call}` | `{r.route}` | {r.outcome.replace('|', '/')} |" for r in rows]
    return "\n".join(lines)


def test_upstreams_client_works_unchanged(sdk: tuple[Any, Path, str]) -> None:
    client, base, url = sdk
    rows = [Row(name, route, _outcome(check, call)) for name, route, call, check in _calls(client, base, url)]
    readme = REPO / "README.md"
    text = readme.read_text(encoding="utf-8")
    block = re.compile(re.escape(TABLE_START) + r".*?" + re.escape(TABLE_END), re.DOTALL)
    made = f"{TABLE_START}\n{_table(rows)}\n{TABLE_END}"
    if os.environ.get("OPENVIKING_UPDATE_README") == "1":
        readme.write_text(block.sub(lambda _m: made, text), encoding="utf-8")
        return
    found = block.search(text)
    assert found is not None, f"README.md has no {TABLE_START} block"
    assert found.group(0) == made, (
        "the README's table of upstream's client is stale: run with OPENVIKING_UPDATE_README=1"
    )
