"""Configuration (ov.conf, $VAR, precedence, secrets) and what changes on a real terminal
(colors, NO_COLOR, the progress bar), checked through a pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import cli_error, make_tree, write_config, write_hash_config

from openviking.config import load_config, redacted
from openviking.errors import ConfigError, NotFoundError

COLOR = re.compile(rb"\x1b\[[0-9;]*m")


# ----------------------------------------------------------------------------- ov.conf
def test_variables_are_expanded_and_unset_ones_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OV_TEST_STORE", str(tmp_path / "from-env"))
    monkeypatch.setenv("OV_TEST_MODEL", "text-embedding-3-small")
    monkeypatch.delenv("OV_TEST_UNSET", raising=False)
    conf = write_config(
        tmp_path / "ov.conf",
        '{"storage": {"workspace": "$OV_TEST_STORE"}, "query_planner": {"model": "u$OV_TEST_UNSET"},'
        ' "vlm": {"model": "${OV_TEST_MODEL}"}}',
    )
    config = load_config(conf)
    assert config.store_path() == str(tmp_path / "from-env")
    assert config.query_planner.model == "u$OV_TEST_UNSET"
    assert config.vlm.model == "text-embedding-3-small"


def test_config_file_is_found_flag_then_env_then_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("OPENVIKING_HOME", str(home))
    write_config(home / "ov.conf", {"default_user": "from-home"})
    assert load_config().user == "from-home"
    monkeypatch.setenv("OPENVIKING_CONFIG_FILE", str(write_config(tmp_path / "env.conf", {"default_user": "from-env"})))
    assert load_config().user == "from-env"
    assert load_config(write_config(tmp_path / "flag.conf", {"default_user": "from-flag"})).user == "from-flag"


def test_store_is_found_flag_then_env_then_config_then_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENVIKING_HOME", str(tmp_path / "home"))
    config = load_config(write_config(tmp_path / "ov.conf", {"storage": {"workspace": str(tmp_path / "conf-store")}}))
    assert config.store_path() == str(tmp_path / "conf-store")
    monkeypatch.setenv("OPENVIKING_STORE", str(tmp_path / "env-store"))
    assert config.store_path() == str(tmp_path / "env-store")
    assert config.store_path(tmp_path / "flag-store") == str(tmp_path / "flag-store")
    monkeypatch.delenv("OPENVIKING_STORE")
    assert load_config().store_path() == str(tmp_path / "home" / "data")


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ('{"storage": {"workspace": "x"},}', ConfigError, "not valid JSON"),
        ('{"storag": {}}', ConfigError, "Unknown config key 'storag'"),
        ('{"embedding": {"dense": {"provider": "sentence-transformers"}}}', ConfigError, "is not supported"),
        ('{"retrieval": {"mode": "fuzzy"}}', ConfigError, "retrieval.mode"),
        ('{"embedding": {"dense": {"batch_size": "big"}}}', ConfigError, "must be an integer"),
        ("[1, 2]", ConfigError, "must hold a JSON object"),
        ('{"embedding": {"dense": {"provider": "hash", "dimension": -5}}}', ConfigError, "positive integer"),
        ('{"embedding": {"dense": {"provider": "hash", "dimension": 0}}}', ConfigError, "positive integer"),
        ('{"embedding": {"dense": {"provider": "openai"}}}', ConfigError, "embedding.dense.model is required"),
        ('{"embedding": {"max_input_tokens": "lots"}}', ConfigError, "'embedding.max_input_tokens' must be an"),
        ('{"semantic": {"abstract_max_chars": -3}}', ConfigError, "'semantic.abstract_max_chars' must be a positive"),
        ('{"semantic": {"overview_max_chars": "big"}}', ConfigError, "'semantic.overview_max_chars' must be a posit"),
        # a misspelt key is refused, not ignored with the setting silently at its default
        ('{"retrieval": {"enable_intnet": false}}', ConfigError, "Unknown config key 'retrieval.enable_intnet'"),
        ('{"rerank": {"treshold": 0.5}}', ConfigError, "Unknown config key 'rerank.treshold'"),
        ('{"embedding": {"dense": {"provder": "hash"}}}', ConfigError, "Unknown config key 'embedding.dense.provder'"),
        ('{"embedding": {"dens": {"provider": "hash"}}}', ConfigError, "Unknown config key 'embedding.dens'"),
        ('{"vlm": {"modle": "gpt"}}', ConfigError, "Unknown config key 'vlm.modle'"),
        ('{"storage": {"workspce": "/x"}}', ConfigError, "Unknown config key 'storage.workspce'"),
        # true is not a number, though Python counts it as 1
        ('{"rerank": {"threshold": true}}', ConfigError, "'rerank.threshold' must be a number"),
        ('{"vlm": {"max_retries": false}}', ConfigError, "'vlm.max_retries' must be an integer"),
        ('{"embedding": {"dense": {"batch_size": true}}}', ConfigError, "'embedding.dense.batch_size' must be an int"),
        ('{"embedding": []}', ConfigError, "'embedding' must be a JSON object"),
    ],
)
def test_a_bad_config_is_refused(tmp_path: Path, text: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        load_config(write_config(tmp_path / "ov.conf", text))
    assert message in str(info.value)


def test_upstream_keys_this_tool_does_not_use_are_accepted(tmp_path: Path) -> None:
    raw = {
        "storage": {"workspace": str(tmp_path / "s"), "agfs": {"port": 1833}, "vectordb": {"backend": "local"}},
        "embedding": {
            "dense": {"provider": "hash", "extra_headers": {"x": "y"}, "version": "1", "region": "cn", "res_level": 1},
            "max_concurrent": 4,
        },
        "vlm": {"model": "m", "api_base": "http://127.0.0.1:9/v1", "thinking": False, "backend": "openai"},
        "query_planner": {"forward_api_key": True, "failback_timeout_seconds": 600, "failback_request_count": 50},
        "rerank": {"ak": "a", "sk": "b", "model_version": "251028", "batch_size": 8, "colour": "any other key"},
        "retrieval": {"hotness_alpha": 0.2, "recall_intent_timeout_s": 5.0, "memory_association": True},
        "grep": {"engine": "auto"},
        "log": {"level": "INFO"},
        "encryption": {"enabled": False},  # upstream's sections this tool has no use for
        "memory": {"version": "v2"},
        "pdf": {"strategy": "auto"},
    }
    config = load_config(write_config(tmp_path / "ov.conf", raw))
    assert (config.embedding.provider, config.vlm.model, config.store_path()) == ("hash", "m", str(tmp_path / "s"))
    with pytest.raises(ConfigError) as info:
        load_config(write_config(tmp_path / "typo.conf", {"rerank": {"treshold": 0.5}}))
    assert info.value.hint == "Did you mean 'rerank.threshold'?"


def test_a_user_id_with_dots_at_signs_and_dashes_is_fine(tmp_path: Path) -> None:
    from openviking.embedded.client import OpenViking

    conf = write_config(tmp_path / "ov.conf", '{"default_user": "ana.b-c@team"}')
    assert OpenViking(tmp_path / "store", config_file=conf).user == "ana.b-c@team"


@pytest.mark.parametrize("user", ["../evil", "..", "a/b", "A B#?", "$OPENVIKING_TEST_UNSET_USER", "a@b@c"])
def test_a_default_user_that_cannot_be_a_uri_segment_is_a_config_error(cli: Any, tmp_path: Path, user: str) -> None:
    from openviking.embedded.client import OpenViking

    conf = write_config(tmp_path / "ov.conf", {"default_user": user})
    with pytest.raises(ConfigError) as info:
        OpenViking(tmp_path / "store", config_file=conf).user  # noqa: B018 - loading it is the test
    assert info.value.message == f"default_user '{user}' is not a valid user id"
    with pytest.raises(ConfigError):
        OpenViking(tmp_path / "store", config=load_config(conf))
    out = cli("add-memory", "x", "--config", str(conf), "--store", str(tmp_path / "store"), "-o", "json")
    error = cli_error(out, "FAILED_PRECONDITION", 2)
    assert error["message"] == f"default_user '{user}' is not a valid user id"
    assert not (tmp_path / "store").exists()  # nothing was written


def test_a_named_config_that_does_not_exist_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError) as info:
        load_config(tmp_path / "missing.conf")
    assert info.value.message == f"Config file not found: {tmp_path / 'missing.conf'}"
    for not_a_file in (tmp_path, Path(os.devnull)):
        with pytest.raises(NotFoundError) as info:
            load_config(not_a_file)
        assert info.value.message == f"Config path is not a file: {not_a_file}"
    with pytest.raises(ConfigError) as info:  # a config that cannot be loaded, like a bad one
        load_config(tmp_path / "missing.conf")
    assert info.value.code == "NOT_FOUND"


def test_every_error_crosses_a_process_boundary_intact() -> None:
    # A process pool pickles a worker's exception; one that cannot be rebuilt from its message
    # (InvalidURIError is built from a uri and a reason) breaks the pool instead of raising.
    import pickle

    import openviking as ov
    from openviking import errors

    for name in errors.__all__:
        kind = getattr(errors, name)
        if not isinstance(kind, type) or not issubclass(kind, ov.OpenVikingError):
            continue
        error = kind.__new__(kind)
        ov.OpenVikingError.__init__(error, f"{name} happened", hint="do this", details={"uri": "viking://x"})
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is kind and back.to_dict() == error.to_dict() and str(back) == str(error)
    uri = pickle.loads(pickle.dumps(errors.InvalidURIError("viking://nope/x", "unknown scope", hint="Use resources")))
    assert (uri.code, uri.message, uri.hint) == (
        "INVALID_URI",
        "Invalid URI: viking://nope/x (unknown scope)",
        "Use resources",
    )
    assert uri.details == {"uri": "viking://nope/x", "reason": "unknown scope"}


def test_bad_config_through_the_cli(cli: Any, tmp_path: Path) -> None:
    conf = write_config(tmp_path / "ov.conf", "{,}")
    out = cli("ls", "--config", str(conf), "--store", str(tmp_path / "store"), "-o", "json")
    error = cli_error(out, "FAILED_PRECONDITION", 2)
    assert "not valid JSON" in error["message"]
    fuzzy = write_config(tmp_path / "fuzzy.conf", '{"retrieval": {"mode": "fuzzy"}}')
    table = cli("ls", "--config", str(fuzzy), "--store", str(tmp_path / "store"))
    assert table.code == 2
    assert "Hint: Fix the config file; 'openviking doctor' shows which one is read." in table.err
    assert "--help" not in table.err
    no_model = write_config(tmp_path / "no-model.conf", '{"embedding": {"dense": {"provider": "openai"}}}')
    assert cli("find", "x", "--config", str(no_model), "--store", str(tmp_path / "store")).code == 2
    missing = cli("ls", "--config", str(tmp_path / "nope.conf"), "--store", str(tmp_path / "store"))
    assert missing.code == 2 and missing.err.startswith("Error: Config file not found")  # a load failure: bad usage
    assert cli_error(cli("ls", "--config", os.devnull, "-o", "json"), "NOT_FOUND", 2)["message"] == (
        f"Config path is not a file: {os.devnull}"
    )
    assert not (tmp_path / "store").exists()


def test_secrets_never_show(tmp_path: Path) -> None:
    secret = "sk-config-secret-123456"
    raw = {"vlm": {"model": "m", "api_key": secret}, "rerank": {"api_key": secret, "api_base": "http://x"}}
    config = load_config(write_config(tmp_path / "ov.conf", raw))
    assert secret not in repr(config)
    assert secret not in json.dumps(redacted(raw))
    assert redacted(raw)["vlm"]["api_key"] == "***"


# ----------------------------------------------------------------------------- a real terminal
def _on_terminal(args: list[str], *, stdout_tty: bool, env: dict[str, str]) -> tuple[int, bytes, bytes]:
    """Run ``openviking ARGS`` with stderr (and stdout, if asked) on a pseudo-terminal."""
    master, slave = pty.openpty()
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    environment.update({"TERM": "xterm-256color", "COLUMNS": "100", **env})
    proc = subprocess.Popen(
        [sys.executable, "-m", "openviking_cli", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave if stdout_tty else subprocess.PIPE,
        stderr=slave,
        env=environment,
    )
    os.close(slave)
    seen = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        seen.append(data)
    piped = proc.stdout.read() if proc.stdout is not None else b""
    if proc.stdout is not None:
        proc.stdout.close()
    code = proc.wait(timeout=60)
    os.close(master)
    return code, piped, b"".join(seen)


@pytest.fixture
def terminal_store(tmp_path: Path) -> tuple[list[str], Path]:
    source = make_tree(tmp_path / "src", {"a.md": "# Alpha\n\nAlpha is about authentication.\n"})
    conf = write_hash_config(tmp_path / "ov.conf")
    options = ["--store", str(tmp_path / "store"), "--config", str(conf)]
    return options, source


def test_progress_bar_on_a_terminal_and_results_on_stdout(terminal_store: tuple[list[str], Path]) -> None:
    options, source = terminal_store
    code, stdout, terminal = _on_terminal(["add-resource", str(source), *options], stdout_tty=False, env={})
    assert code == 0
    assert b"Indexing" in terminal  # the bar, drawn on stderr
    assert stdout.startswith(b"Added 1 ")
    assert b"Indexing" not in stdout


def test_colors_only_on_a_terminal_and_never_with_no_color(terminal_store: tuple[list[str], Path]) -> None:
    options, source = terminal_store
    assert _on_terminal(["add-resource", str(source), *options], stdout_tty=False, env={})[0] == 0
    code, _, colored = _on_terminal(["find", "alpha", *options], stdout_tty=True, env={})
    assert code == 0 and b"viking://resources/src/a.md" in colored
    assert re.search(rb"\x1b\[[0-9;]*3[0-7]m|\x1b\[[0-9;]*38;5;", colored)  # a foreground color
    code, _, plain = _on_terminal(["find", "alpha", *options], stdout_tty=True, env={"NO_COLOR": "1"})
    assert code == 0 and b"viking://resources/src/a.md" in plain
    assert not re.search(rb"\x1b\[[0-9;]*(3[0-7]|38;5;\d+)m", plain)
    code, piped, _ = _on_terminal(["find", "alpha", *options], stdout_tty=False, env={})
    assert code == 0 and b"viking://resources/src/a.md" in piped and not COLOR.search(piped)


def test_a_store_that_cannot_be_written_is_a_failure_and_traversal_is_bad_input() -> None:
    import errno

    from openviking.errors import PermissionDeniedError, StoreNotWritableError
    from openviking.store.lance import _translate
    from openviking_cli.runtime import is_usage_error

    read_only = _translate(OSError(errno.EROFS, "Read-only file system"), "Cannot write to the store /s")
    assert isinstance(read_only, StoreNotWritableError) and read_only.code == "PERMISSION_DENIED"
    traversal = PermissionDeniedError("Access denied: '..' segments are not allowed in URIs: viking://resources/../x")
    assert not is_usage_error(read_only)
    assert is_usage_error(traversal)


def test_a_ctrl_c_that_a_library_turned_into_its_own_error_still_exits_130(capsys: pytest.CaptureFixture[str]) -> None:
    # pyarrow, interrupted while importing zoneinfo, reports "The zoneinfo module ... must be
    # installed"; whatever error comes out, a Ctrl-C received meanwhile wins.
    import signal

    from openviking.errors import InternalError
    from openviking_cli.runtime import CliContext, ExitCode, OutputFormat, run

    def interrupted_then_raising(error: Exception) -> Callable[[], Any]:
        def body() -> Any:
            try:
                signal.raise_signal(signal.SIGINT)
            except KeyboardInterrupt:
                raise error from None
            raise AssertionError("SIGINT did not interrupt")

        return body

    before = signal.getsignal(signal.SIGINT)
    for body in (
        interrupted_then_raising(InternalError("Store operation failed: The zoneinfo module must be installed")),
        interrupted_then_raising(RuntimeError("converted")),  # an unexpected error instead
    ):
        assert run(CliContext(command="ls"), body) == ExitCode.INTERRUPTED
        err = capsys.readouterr().err
        assert err == "\nInterrupted.\n"  # a read: nothing to resume, and neither error is shown
        assert signal.getsignal(signal.SIGINT) is before
        assert run(CliContext(command="mv"), body) == ExitCode.INTERRUPTED  # it may have been complete already
        assert capsys.readouterr().err == (
            "\nInterrupted. If the move was left unfinished, 'openviking doctor' says so and the same mv finishes it.\n"
        )
        # a script reading JSON gets the error object, and the same advice
        json_mode = CliContext(command="reindex", output=OutputFormat.json)
        assert run(json_mode, body) == ExitCode.INTERRUPTED
        out, err = capsys.readouterr()
        assert out == "" and json.loads(err) == {
            "status": "error",
            "error": {
                "code": "CANCELLED",
                "message": "Interrupted. What was written is kept; run the same command again to finish.",
                "details": {},
            },
        }

    def fails() -> Any:
        raise InternalError("plain failure")

    assert run(CliContext(command="ls"), fails) == 1
    assert "plain failure" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGINT) is before  # the handler is put back


def test_a_command_started_with_ctrl_c_ignored_keeps_ignoring_it() -> None:
    # a shell runs `cmd &` with SIGINT ignored: the watch must not turn it back on
    import signal

    from openviking_cli.runtime import CliContext, run

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        seen: list[Any] = []
        assert run(CliContext(command="ls"), lambda: seen.append(signal.getsignal(signal.SIGINT)) or _ok()) == 0
        assert seen == [signal.SIG_IGN]
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def _ok() -> Any:
    from openviking_cli.runtime import Output

    return Output({"ok": True}, table=lambda console: None)
