"""Sessions: the SDK, upstream's TextPart style, the CLI group, and bad input.

Every bad input is checked for its code, message and exit status, and for leaving the store
exactly as it was.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import Cli, cli_error, cli_unharmed, hash_config, run_shell, snapshot, with_store, write_hash_config

from openviking.embedded.client import OpenViking
from openviking.errors import AlreadyExistsError, InvalidArgumentError, NotFoundError
from openviking.message import TextPart

GENERATED_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{16}$")
MESSAGE_ID = re.compile(r"^msg_[0-9a-f]{32}$")
OAUTH = "We are designing the OAuth login flow for our project."


# hash_client (conftest.py) is an SDK client on an empty store under tmp_path.
@pytest.fixture
def store(tmp_path: Path) -> Path:
    """Where the ``ov`` fixture's store lives (not created until a command writes to it)."""
    return tmp_path / "cli-store"


@pytest.fixture
def ov(cli: Cli, store: Path, hash_conf: Path) -> Cli:
    """``cli`` on a fresh store under tmp_path with the hash embedder config."""
    return with_store(cli, store, hash_conf)


# ----------------------------------------------------------------------------- SDK
def test_create_generates_an_upstream_style_id(hash_client: Any) -> None:
    info = hash_client.create_session()
    assert GENERATED_ID.match(info["session_id"]), info
    assert info["uri"] == f"viking://user/default/sessions/{info['session_id']}"
    assert info["message_count"] == 0
    assert info["created_at"].endswith("Z")
    assert hash_client.list_sessions()[0]["session_id"] == info["session_id"]


def test_create_with_a_given_id_and_twice_is_already_exists(hash_client: Any) -> None:
    assert hash_client.create_session("abc123")["session_id"] == "abc123"
    with pytest.raises(AlreadyExistsError, match="Session already exists: abc123"):
        hash_client.create_session("abc123")
    assert [s["session_id"] for s in hash_client.list_sessions()] == ["abc123"]


def test_add_message_creates_the_session_and_keeps_order(hash_client: Any) -> None:
    first = hash_client.add_message("s1", "user", OAUTH)
    assert first["session_id"] == "s1" and first["message_count"] == 1
    assert MESSAGE_ID.match(first["message"]["id"])
    assert first["message"]["role"] == "user"
    assert first["message"]["parts"] == [{"type": "text", "text": OAUTH}]
    hash_client.add_message("s1", "assistant", TextPart(text="I can help with OAuth."))
    hash_client.add_message("s1", "User", [TextPart(text="Part one"), {"type": "text", "text": "part two"}, "three"])
    session = hash_client.get_session("s1")
    assert session["message_count"] == 3
    assert [m["role"] for m in session["messages"]] == ["user", "assistant", "user"]
    assert session["messages"][2]["parts"] == [
        {"type": "text", "text": "Part one"},
        {"type": "text", "text": "part two"},
        {"type": "text", "text": "three"},
    ]
    assert session["summary"] == ""
    assert len({m["id"] for m in session["messages"]}) == 3


def test_a_long_session_stays_a_few_files(hash_client: Any) -> None:
    # Each message is a write of its own; were each left in a file of its own, every count and
    # read of a session would open them all, and an add would cost more the longer it grew.
    from openviking.store.lance import COMPACT_AFTER_FILES

    said = []
    for number in range(3 * COMPACT_AFTER_FILES):
        session = ("long", "other")[number % 2]  # two sessions: a session's row is updated in place
        added = hash_client.add_message(session, "user" if number % 4 < 2 else "assistant", f"message {number}")
        said.append((session, f"message {number}"))
        assert added["message_count"] == sum(s == session for s, _ in said)
    store = hash_client._open()
    for table in ("messages", "sessions"):
        files = store._table(table).stats()["fragment_stats"]["num_fragments"]
        assert files <= COMPACT_AFTER_FILES, (table, files)
    for session in ("long", "other"):
        got = hash_client.get_session(session)
        assert [m["parts"][0]["text"] for m in got["messages"]] == [text for s, text in said if s == session]
        assert got["message_count"] == len(got["messages"]) == 3 * COMPACT_AFTER_FILES // 2


def test_brief_sdk_style(hash_client: Any) -> None:
    """The SDK example of OpenViking's retrieval API docs: ``client.session()`` and TextPart messages."""
    session = hash_client.session()
    assert GENERATED_ID.match(session.session_id)
    session.add_message("user", [TextPart(text="I'm building a login page with OAuth")])
    session.add_message("assistant", [TextPart(text="I can help you with OAuth implementation.")])
    assert [m["parts"][0]["text"] for m in session.messages] == [
        "I'm building a login page with OAuth",
        "I can help you with OAuth implementation.",
    ]
    assert session.uri == f"viking://user/default/sessions/{session.session_id}"
    again = hash_client.session(session.session_id)  # an existing id: the same session, not an error
    assert again.get()["message_count"] == 2
    assert hash_client.session("fresh").get()["message_count"] == 0


def test_chinese_brief_sdk_style(hash_client: Any) -> None:
    """The SDK example of the Chinese retrieval docs (检索机制): ``create_session()`` and ``add_message()``."""
    session_info = hash_client.create_session()
    hash_client.add_message(
        session_id=session_info["session_id"], role="user", content="我们正在为项目设计 OAuth 登录流程。"
    )
    messages = hash_client.get_session(session_info["session_id"])["messages"]
    assert messages[0]["parts"][0]["text"] == "我们正在为项目设计 OAuth 登录流程。"


def test_list_is_newest_first_with_counts(hash_client: Any) -> None:
    hash_client.add_message("older", "user", "one")
    hash_client.add_message("newer", "user", "two")
    hash_client.add_message("newer", "assistant", "three")
    listed = hash_client.list_sessions()
    assert [(s["session_id"], s["message_count"]) for s in listed] == [("newer", 2), ("older", 1)]
    hash_client.add_message("older", "user", "four")
    assert hash_client.list_sessions()[0]["session_id"] == "older"


def test_delete_removes_the_session_and_its_messages(hash_client: Any) -> None:
    hash_client.add_message("gone", "user", "one")
    hash_client.add_message("gone", "user", "two")
    hash_client.add_message("kept", "user", "three")
    assert hash_client.delete_session("gone") == {
        "session_id": "gone",
        "uri": "viking://user/default/sessions/gone",
        "deleted": True,
        "messages_deleted": 2,
    }
    with pytest.raises(NotFoundError, match="Session not found: gone"):
        hash_client.get_session("gone")
    assert [s["session_id"] for s in hash_client.list_sessions()] == ["kept"]
    assert hash_client.get_session("kept")["message_count"] == 1
    hash_client.add_message("gone", "user", "back")  # the id can be used again, with no old messages
    assert hash_client.get_session("gone")["message_count"] == 1


def test_sessions_belong_to_their_user(tmp_path: Path) -> None:
    from openviking.config import config_from_dict

    store = tmp_path / "store"
    with OpenViking(path=store, config=hash_config()) as default:
        default.add_message("shared-id", "user", "default's message")
    with OpenViking(path=store, config=config_from_dict({"default_user": "alice"})) as alice:
        assert alice.list_sessions() == []
        with pytest.raises(NotFoundError):
            alice.get_session("shared-id")
        alice.add_message("shared-id", "user", "alice's message")
        assert alice.get_session("shared-id")["uri"] == "viking://user/alice/sessions/shared-id"
    with OpenViking(path=store, config=hash_config()) as default:
        messages = default.get_session("shared-id")["messages"]
        assert [m["parts"][0]["text"] for m in messages] == ["default's message"]


def test_parallel_writers_lose_no_message(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with OpenViking(path=store, config=hash_config()) as ov:
        ov.create_session("busy")

    def write(name: str) -> None:
        with OpenViking(path=store, config=hash_config()) as writer:
            for index in range(8):
                writer.add_message("busy", "user", f"{name} {index}")

    threads = [threading.Thread(target=write, args=(f"w{n}",)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with OpenViking(path=store, config=hash_config()) as ov:
        texts = [m["parts"][0]["text"] for m in ov.get_session("busy")["messages"]]
    assert len(texts) == 24
    for n in range(3):  # each writer's messages stay in the order it wrote them
        assert [t for t in texts if t.startswith(f"w{n} ")] == [f"w{n} {i}" for i in range(8)]


@pytest.mark.parametrize(
    "session_id",
    ["", "   ", "a/b", "../etc", "a\\b", "a b", "..", ".hidden", "x" * 129, "tab\tid", "semi;colon", "quo'te"],
)
def test_invalid_session_ids_are_refused_before_anything_is_written(hash_client: Any, session_id: str) -> None:
    hash_client.create_session("existing")
    before = snapshot(Path(hash_client.store_path))
    for call in (
        lambda: hash_client.create_session(session_id),
        lambda: hash_client.add_message(session_id, "user", "hello"),
        lambda: hash_client.get_session(session_id),
        lambda: hash_client.delete_session(session_id),
    ):
        with pytest.raises(InvalidArgumentError, match="Invalid session id"):
            call()
    assert snapshot(Path(hash_client.store_path)) == before


@pytest.mark.parametrize(
    ("role", "content", "message"),
    [
        ("robot", "hello", "Invalid role 'robot': a message's role must be 'user' or 'assistant'"),
        ("", "hello", "Invalid role ''"),
        ("user", "", "Message content must not be empty."),
        ("user", "   \n\t", "Message content must not be empty."),
        ("user", [], "Message content must not be empty."),
        ("user", [TextPart(text=" ")], "Message content must not be empty."),
        ("user", [{"type": "image", "url": "x.png"}], "Message content must be text"),
        ("user", 42, "Message content must be text"),
    ],
)
def test_bad_messages_are_refused_and_write_nothing(hash_client: Any, role: str, content: Any, message: str) -> None:
    hash_client.add_message("s1", "user", "first")
    before = snapshot(Path(hash_client.store_path))
    with pytest.raises(InvalidArgumentError) as info:
        hash_client.add_message("s1", role, content)
    assert info.value.code == "INVALID_ARGUMENT"
    assert message in info.value.message
    assert snapshot(Path(hash_client.store_path)) == before
    assert hash_client.get_session("s1")["message_count"] == 1


def test_unknown_session_is_not_found(hash_client: Any) -> None:
    hash_client.create_session("known")
    for call in (lambda: hash_client.get_session("nope"), lambda: hash_client.delete_session("nope")):
        with pytest.raises(NotFoundError) as info:
            call()
        assert info.value.code == "NOT_FOUND"
        assert info.value.message == "Session not found: nope"
        assert info.value.hint == "List the sessions with: openviking session list"


def test_sessions_without_a_store_are_not_found(tmp_path: Path) -> None:
    with OpenViking(path=tmp_path / "missing", config=hash_config()) as ov:
        with pytest.raises(NotFoundError, match="No store at"):
            ov.list_sessions()
        with pytest.raises(NotFoundError, match="No store at"):
            ov.get_session("x")
    assert not (tmp_path / "missing").exists()


def test_summary_is_stored_and_shown(hash_client: Any) -> None:
    from openviking.session.sessions import SessionStore

    sessions = SessionStore(hash_client._open(create=True), hash_client.user)
    sessions.set_summary("s1", "The user designs an OAuth login flow.")
    assert hash_client.get_session("s1")["summary"] == "The user designs an OAuth login flow."


# ----------------------------------------------------------------------------- CLI
def test_cli_brief_example_plain_and_json(ov: Cli) -> None:
    """``session new`` and ``add-message`` as a user runs them before ``search --session-id``, plain and JSON."""
    new = ov("session", "new")
    assert new.code == 0, new.err
    sid = new.out.strip()
    assert new.out == sid + "\n" and GENERATED_ID.match(sid)
    assert new.err == ""
    added = ov("session", "add-message", sid, "--role", "user", "--content", OAUTH)
    assert added.code == 0, added.err
    assert re.fullmatch(rf"Added msg_[0-9a-f]{{32}} \(user\) to {sid} · 1 message\n", added.out)
    as_json = ov("session", "new", "-o", "json")
    assert as_json.code == 0
    envelope = as_json.json()
    assert list(envelope) == ["status", "result", "time"]
    assert GENERATED_ID.match(envelope["result"]["session_id"])
    assert envelope["result"]["message_count"] == 0


def test_cli_new_with_id_show_list_delete(ov: Cli) -> None:
    assert ov("session", "new", "--session-id", "abc123").out == "abc123\n"
    ov("session", "add-message", "abc123", "--role", "user", "--content", OAUTH)
    ov("session", "add-message", "abc123", "--role", "assistant", "--content", "Happy to help.\nSecond line.")
    shown = ov("session", "show", "abc123")
    assert shown.code == 0, shown.err
    assert shown.out.startswith("abc123 · 2 messages · updated ")
    assert "[user]" in shown.out and OAUTH in shown.out
    assert "[assistant]" in shown.out and "   Second line." in shown.out
    data = ov("session", "show", "abc123", "--json").json()["result"]
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"]
    assert data["messages"][1]["parts"] == [{"type": "text", "text": "Happy to help.\nSecond line."}]
    lines = ov("session", "show", "abc123", "-o", "jsonl").json_lines()
    assert [m["role"] for m in lines] == ["user", "assistant"]
    listed = ov("session", "list")
    assert listed.code == 0
    assert listed.out.splitlines()[0].split() == ["session_id", "messages", "created", "updated"]
    assert listed.out.splitlines()[1].split()[:2] == ["abc123", "2"]
    assert [s["session_id"] for s in ov("session", "list", "-o", "json").json()["result"]] == ["abc123"]
    deleted = ov("session", "delete", "abc123")
    assert deleted.out == "Deleted session abc123 and its 2 messages\n"
    empty = ov("session", "list")
    assert empty.code == 0 and empty.out == ""
    assert "No sessions yet." in empty.err
    assert ov("session", "list", "-o", "json").json()["result"] == []


@pytest.mark.parametrize(
    ("argv", "code", "error_code", "message"),
    [
        (["session", "show", "nope"], 1, "NOT_FOUND", "Session not found: nope"),
        (["session", "delete", "nope"], 1, "NOT_FOUND", "Session not found: nope"),
        (["session", "new", "--session-id", "taken"], 1, "ALREADY_EXISTS", "Session already exists: taken"),
        (["session", "new", "--session-id", "a/b"], 2, "INVALID_ARGUMENT", "Invalid session id 'a/b'"),
        (["session", "show", "../x"], 2, "INVALID_ARGUMENT", "Invalid session id '../x'"),
        (
            ["session", "add-message", "taken", "--role", "robot", "--content", "hi"],
            2,
            "INVALID_ARGUMENT",
            "Invalid role 'robot': a message's role must be 'user' or 'assistant'",
        ),
        (
            ["session", "add-message", "taken", "--role", "user", "--content", ""],
            2,
            "INVALID_ARGUMENT",
            "Message content must not be empty.",
        ),
        (
            ["session", "add-message", "taken", "--role", "user", "--content", "  "],
            2,
            "INVALID_ARGUMENT",
            "Message content must not be empty.",
        ),
        (["session", "add-message", "taken", "--content", "hi"], 2, "INVALID_ARGUMENT", "Missing option '--role'"),
        (["session", "frobnicate"], 2, "INVALID_ARGUMENT", "No such command 'frobnicate'"),
    ],
)
def test_cli_bad_input(ov: Cli, store: Path, argv: list[str], code: int, error_code: str, message: str) -> None:
    ov("session", "add-message", "taken", "--role", "user", "--content", "first")
    cli_unharmed(ov, store, argv, error_code, code, message)
    assert [m["parts"][0]["text"] for m in ov("session", "show", "taken", "--json").json()["result"]["messages"]] == [
        "first"
    ]


def test_cli_session_commands_without_a_store(cli: Cli, tmp_path: Path) -> None:
    result = cli("session", "list", "--store", tmp_path / "none", "-o", "json")
    cli_error(result, "NOT_FOUND", 1)
    assert not (tmp_path / "none").exists()


def test_cli_group_help_lists_every_subcommand(cli: Cli) -> None:
    result = cli("session", "--help")
    assert result.code == 0
    for name in ("new", "list", "show", "add-message", "delete"):
        assert name in result.out
    bare = cli("session")
    assert bare.code == 2
    assert "add-message" in bare.out + bare.err


def test_brief_shell_example_in_a_real_shell(tmp_path: Path) -> None:
    """The session commands as a user types them in bash (new, add-message, show), jq included."""
    conf = write_hash_config(tmp_path / "ov.conf")
    script = f"""
set -euo pipefail
export OPENVIKING_STORE={tmp_path / "store"} OPENVIKING_CONFIG_FILE={conf}
SID=$(openviking session new -o json | jq -r .result.session_id)
openviking session add-message "$SID" --role user --content "{OAUTH}" > /dev/null
PLAIN=$(openviking session new)
echo "$SID $PLAIN"
echo "piped message" | openviking session add-message "$PLAIN" --role assistant --content - -o json \\
  | jq -c .result.message.parts
openviking session show "$SID" -o json | jq -r '.result.messages[0].parts[0].text'
"""
    proc = run_shell(script)
    assert proc.returncode == 0, proc.stderr
    first, parts, text = proc.stdout.splitlines()
    sid, plain = first.split()
    assert GENERATED_ID.match(sid) and GENERATED_ID.match(plain) and sid != plain
    assert json.loads(parts) == [{"type": "text", "text": "piped message"}]
    assert text == OAUTH


def test_the_sessions_folder_holds_sessions_only(ov: Cli, store: Path) -> None:
    assert ov("session", "new", "--session-id", "s1").code == 0
    assert ov("add-memory", "The user prefers tabs").code == 0
    for argv, message in (
        (["mkdir", "viking://session/foo"], "sessions are made with 'openviking session new'"),
        (["mv", "viking://session/s1", "viking://resources/x"], "they cannot be moved"),
        (["mv", "viking://user/default/memories", "viking://session/x"], "they cannot be moved"),
    ):
        cli_unharmed(ov, store, argv, "INVALID_ARGUMENT", 2, message)
    tree = store.parent / "src"
    tree.mkdir(exist_ok=True)
    (tree / "a.md").write_text("# A\n\nText.\n")
    for argv in (
        ["add-resource", tree, "--to", "viking://session/x"],
        ["add-resource", tree, "--parent", "viking://session"],
    ):
        cli_unharmed(ov, store, argv, "INVALID_ARGUMENT", 2, "sessions are made with 'openviking session new'")
    assert ov("ls", "viking://session", "-s").out.split() == ["viking://user/default/sessions/s1"]
    assert ov("stat", "viking://session", "-o", "json").json()["result"]["children"] == 1
    cli_unharmed(ov, store, ["rm", "viking://session/s1"], "FAILED_PRECONDITION", 1, "is a session: remove it with -r")
    removed = ov("rm", "viking://session/s1", "-r", "-o", "json")
    assert removed.code == 0, removed.err
    assert removed.json()["result"]["removed"] == 1
    assert ov("ls", "viking://session", "-s").out.split() == []
    cli_error(ov("session", "show", "s1", "-o", "json"), "NOT_FOUND", 1)
    again = ov("rm", "viking://session/s1", "-r", "-o", "json")  # like rm of anything missing (upstream)
    assert again.code == 0 and again.json()["result"]["removed"] == 0
