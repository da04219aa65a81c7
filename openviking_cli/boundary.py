"""The CLI's error boundary: what an error, Ctrl-C or a closed pipe prints, and the exit status.

:func:`guard_command` runs a command's body (runtime.py), :func:`guard_parser` the parser
that picks the command (main.py). From either, an error is an ``Error:`` line and a ``Hint:``
line on stderr, or in json/jsonl mode the JSON error object
``{"status": "error", "error": {code, message, details[, hint]}}`` on stderr, on one compact
line for jsonl. Nothing else in the CLI writes an error.
"""

from __future__ import annotations

import enum
import traceback
from collections.abc import Callable
from typing import Any

import typer

from openviking.errors import (
    CancelledError,
    ConfigError,
    ConfigFileNotFoundError,
    InvalidArgumentError,
    InvalidURIError,
    OpenVikingError,
    PermissionDeniedError,
    StoreNotWritableError,
)
from openviking_cli.hints import cli_hint

from .console import OutputFormat, json_text, make_console, say, silence_stdout


class ExitCode(enum.IntEnum):
    """The exit statuses of ``openviking``."""

    SUCCESS = 0
    FAILURE = 1
    USAGE = 2
    INTERRUPTED = 130


# Bad input of any kind exits 2; everything else that goes wrong exits 1.
USAGE_ERRORS = (InvalidArgumentError, InvalidURIError, PermissionDeniedError, ConfigError, ConfigFileNotFoundError)


def is_usage_error(exc: OpenVikingError) -> bool:
    """Bad input (exit 2), as opposed to a runtime failure (exit 1): a store that cannot be
    written is PERMISSION_DENIED like a traversal, but it is the machine's state, not the input."""
    if isinstance(exc, StoreNotWritableError):
        return False
    return isinstance(exc, USAGE_ERRORS)


# What to do after Ctrl-C, for the commands that pick up where they stopped when run again.
RESUMING_ADVICE = {
    "add-resource": "What was written is kept; run the same command again to finish.",
    "add-skill": "What was written is kept; run the same command again to finish.",
    "reindex": "What was written is kept; run the same command again to finish.",
    # The move may have been complete already when Ctrl-C came: doctor tells.
    "mv": "If the move was left unfinished, 'openviking doctor' says so and the same mv finishes it.",
}


def guard_command(call: Callable[[], int], output: OutputFormat, *, command: str = "", debug: bool = False) -> int:
    """Run a command's body (which returns its exit status); report what escapes it.

    An unexpected exception is a bug: one line that says so, the traceback only with ``debug``.
    """
    with _InterruptWatch() as interrupt:
        try:
            return call()
        except KeyboardInterrupt:
            report_interrupt(output, command)
            return ExitCode.INTERRUPTED
        except BrokenPipeError:
            silence_stdout()
            return ExitCode.SUCCESS
        except (typer.Exit, typer.Abort):
            raise  # typer's own ways to stop, for the parser to finish
        except Exception as exc:
            if debug:
                say(traceback.format_exc(), stderr=True)
            if interrupt.seen:
                report_interrupt(output, command)
                return ExitCode.INTERRUPTED
            error = exc if isinstance(exc, OpenVikingError) else _bug(exc)
            report_error(error, output, command)
            return ExitCode.USAGE if is_usage_error(error) else ExitCode.FAILURE


def guard_parser(invoke: Callable[[], Any], output: OutputFormat, *, no_command: bool = False) -> int:
    """Run the parser, and through it the command (``invoke`` returns the status or None);
    report the parser's errors. ``no_command``: the parser is only asked for the help."""
    try:
        code = invoke()
    except typer.exceptions.TyperException as exc:
        # click's usage errors (UsageError and its subclasses, whose classes typer keeps private)
        # are the ones that exit 2; with no command, typer's error is the help it shows.
        if exc.exit_code != ExitCode.USAGE or no_command:
            exc.show()  # type: ignore[attr-defined]
            return exc.exit_code
        # typer checks choices through pydantic, whose "Value error, " prefix tells a user nothing
        message = exc.format_message().replace(": Value error, ", ": ")
        ctx = getattr(exc, "ctx", None)
        report_usage(message, ctx.command_path if ctx is not None else "openviking", output)
        return ExitCode.USAGE
    except (KeyboardInterrupt, typer.Abort):
        # Outside a command's body (whose guard reports its own) nothing is left to resume:
        # the bare line, whatever the format.
        report_interrupt(OutputFormat.table)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        silence_stdout()
        return ExitCode.SUCCESS
    return code if isinstance(code, int) else ExitCode.SUCCESS


def report_usage(message: str, command_path: str, output: OutputFormat) -> None:
    """A usage error (code INVALID_ARGUMENT) with the hint to read ``command_path --help``."""
    _say(InvalidArgumentError(message, hint=f"Try '{command_path} --help'."), output, styled=False)


def report_error(exc: OpenVikingError, output: OutputFormat, command: str = "") -> None:
    """An error of the library, with a hint when it brings none: the config file to fix, or the
    help of the command that got bad input."""
    exc.hint = cli_hint(exc.hint)
    if not exc.hint and isinstance(exc, ConfigError):
        exc.hint = "Fix the config file; 'openviking doctor' shows which one is read."
    elif not exc.hint and is_usage_error(exc):
        exc.hint = f"Run 'openviking {command or ''} --help' to see what it accepts.".replace("  ", " ")
    _say(exc, output, styled=True)


def report_interrupt(output: OutputFormat, command: str = "") -> None:
    """Say that Ctrl-C stopped ``command``, and how to finish it where running it again does: a
    line on stderr, or in json/jsonl mode the error object a script reads (code CANCELLED)."""
    message = "Interrupted."
    if command in RESUMING_ADVICE:
        message += " " + RESUMING_ADVICE[command]
    if output.machine:
        _say(CancelledError(message), output, styled=True)
    else:
        say(f"\n{message}\n", stderr=True)


def _say(error: OpenVikingError, output: OutputFormat, *, styled: bool) -> None:
    """``error`` on stderr in ``output``'s form. ``styled`` colors the table form on a terminal;
    the parser's errors stay plain text, as click prints them, and load no rich."""
    if output.machine:
        payload = {"status": "error", "error": error.to_dict()}
        say(json_text(payload, compact=output is not OutputFormat.json) + "\n", stderr=True)
    elif not styled:
        say(f"Error: {error.message}\n" + (f"Hint: {error.hint}\n" if error.hint else ""), stderr=True)
    else:
        from rich.text import Text

        console = make_console(stderr=True)
        line = Text("Error: ", style="bold red")
        line.append(error.message)
        console.print(line, soft_wrap=True)
        if error.hint:
            hint = Text("Hint: ", style="yellow")
            hint.append(error.hint)
            console.print(hint, soft_wrap=True)


def _bug(exc: Exception) -> OpenVikingError:
    return OpenVikingError(
        f"Unexpected {type(exc).__name__}: {exc}",
        hint="This is a bug; run again with --debug for the traceback and report it.",
    )


class _InterruptWatch:
    """Remembers a Ctrl-C even when a library turns the KeyboardInterrupt it raised into an
    error of its own (pyarrow reports one raised mid-import as a missing zoneinfo module)."""

    def __init__(self) -> None:
        self.seen = False
        self._previous: Any = None

    def __enter__(self) -> _InterruptWatch:
        import signal
        import threading

        # Only where Ctrl-C would stop us anyway: a shell runs `cmd &` with SIGINT ignored.
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        ):
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        import signal

        self.seen = True
        signal.default_int_handler(signum, frame)

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            import signal

            signal.signal(signal.SIGINT, self._previous)
