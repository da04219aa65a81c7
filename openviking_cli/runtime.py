"""What every command shares: the global options, the client, errors, output and exit codes.

A command is a plain function ``fn(ctx, ...)`` that returns an :class:`Output`; the
:func:`command` decorator adds ``--store``, ``--config``, ``-o/--output``, ``--json`` and
``--debug`` to its signature, times it, prints its result in the chosen format, and turns
every :class:`OpenVikingError` into one line on stderr and an exit status.
"""

from __future__ import annotations

import enum
import functools
import inspect
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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

if TYPE_CHECKING:
    from rich.console import Console

    from openviking.client import OpenViking


class OutputFormat(enum.StrEnum):
    """``-o/--output`` values."""

    table = "table"
    json = "json"
    jsonl = "jsonl"


class ExitCode(enum.IntEnum):
    """Exit statuses (DESIGN.md section 6)."""

    SUCCESS = 0
    FAILURE = 1
    USAGE = 2
    INTERRUPTED = 130


# Bad input of any kind exits 2; everything else that goes wrong exits 1.
USAGE_ERRORS = (InvalidArgumentError, InvalidURIError, PermissionDeniedError, ConfigError, ConfigFileNotFoundError)

GLOBAL_PANEL = "Global options"

StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        envvar="OPENVIKING_STORE",
        help="The store directory (default: storage.workspace in ov.conf, else ~/.openviking/data).",
        rich_help_panel=GLOBAL_PANEL,
        show_default=False,
    ),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="Config file (default: $OPENVIKING_CONFIG_FILE, else ~/.openviking/ov.conf).",
        rich_help_panel=GLOBAL_PANEL,
        show_default=False,
        dir_okay=False,
    ),
]
OutputOption = Annotated[
    OutputFormat | None,
    typer.Option(
        "-o",
        "--output",
        help="Output format (default: table).",
        rich_help_panel=GLOBAL_PANEL,
        case_sensitive=False,
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Same as -o json.", rich_help_panel=GLOBAL_PANEL)]
DebugOption = Annotated[
    bool,
    typer.Option("--debug", envvar="OPENVIKING_DEBUG", help="Show tracebacks.", rich_help_panel=GLOBAL_PANEL),
]

_GLOBALS = [
    inspect.Parameter("store", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=StoreOption),
    inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ConfigOption),
    inspect.Parameter("output", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=OutputOption),
    inspect.Parameter("json_", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=JsonOption),
    inspect.Parameter("debug", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=DebugOption),
]
GLOBAL_NAMES = tuple(p.name for p in _GLOBALS)


@dataclass
class Output:
    """What a command produced.

    ``result`` is the JSON ``result``; ``items`` are the jsonl lines (the result itself when
    None); ``table`` prints the human form on a console; ``exit_code`` lets a command report
    "nothing found" where the convention asks for it.
    """

    result: Any
    table: Callable[[Console], None] | None = None
    items: Iterable[Any] | None = None
    exit_code: int = ExitCode.SUCCESS


@dataclass
class CliContext:
    """The global options of one invocation, and the lazily built client."""

    store: str | None = None
    config: Path | None = None
    output: OutputFormat = OutputFormat.table
    debug: bool = False
    command: str = ""
    _client: OpenViking | None = field(default=None, repr=False)

    @property
    def machine(self) -> bool:
        """True for json/jsonl output."""
        return self.output is not OutputFormat.table

    def client(self) -> OpenViking:
        """The OpenViking client for this invocation (imports the library on first use)."""
        if self._client is None:
            from openviking.client import OpenViking

            self._client = OpenViking(self.store, config_file=self.config, warn=self.warn)
        return self._client

    def warn(self, message: str) -> None:
        """A one-line warning on stderr (never on stdout)."""
        _write(sys.stderr, f"Warning: {message}\n")

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def command_group(app: typer.Typer, name: str, help: str) -> typer.Typer:  # noqa: A002 - typer's name
    """A group of commands (``openviking NAME ...``) added to ``app``; without a command it shows its help."""
    group = typer.Typer(
        name=name, help=help, no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]}
    )
    app.add_typer(group, name=name)
    return group


def command(app: typer.Typer, name: str, **settings: Any) -> Callable[[Callable[..., Output]], Callable[..., None]]:
    """Register ``fn(ctx, ...)`` as command ``name`` with the global options added."""

    def decorate(fn: Callable[..., Output]) -> Callable[..., None]:
        signature = inspect.signature(fn, eval_str=True)
        own = list(signature.parameters.values())[1:]  # drop ctx

        @functools.wraps(fn)
        def wrapper(**kwargs: Any) -> None:
            options = {key: kwargs.pop(key) for key in GLOBAL_NAMES}
            fmt = output_format(options["output"], options["json_"])
            ctx = CliContext(
                store=options["store"], config=options["config"], output=fmt, debug=options["debug"], command=name
            )
            code = run(ctx, lambda: fn(ctx, **kwargs))
            if code:
                raise typer.Exit(code)

        wrapper.__signature__ = signature.replace(parameters=[*own, *_GLOBALS])  # type: ignore[attr-defined]
        annotations = {p.name: p.annotation for p in own}
        annotations.update({p.name: p.annotation for p in _GLOBALS})
        wrapper.__annotations__ = annotations
        settings.setdefault("help", reflowed(fn.__doc__ or ""))
        app.command(name, **settings)(wrapper)
        return wrapper

    return decorate


def output_format(output: OutputFormat | None, json_: bool) -> OutputFormat:
    """The format asked for by ``-o`` and ``--json``; the two naming different ones is a usage
    error rather than one of them winning unseen (a script's ``--json -o jsonl`` would get a
    document where it reads lines)."""
    if json_ and output not in (None, OutputFormat.json):
        from typer._click.exceptions import UsageError
        from typer._click.globals import get_current_context

        raise UsageError(
            f"--json and -o {output.value} ask for different formats: give one of them",
            ctx=get_current_context(silent=True),
        )
    return OutputFormat.json if json_ else output or OutputFormat.table


def reflowed(doc: str) -> str:
    """A docstring as help text: each paragraph on one line, for the help to wrap at the
    terminal's width (Typer keeps a docstring's line breaks, which broke lines mid-sentence)."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(p.split("\n")) if not p.startswith("\b") else p for p in paragraphs)


def text_argument(value: str, what: str) -> str:
    """``value``, or for ``-`` the text on stdin without its last newline (``echo ... | openviking
    add-memory -``); stdin must be UTF-8, as every text the store holds is."""
    if value != "-":
        return value
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8").removesuffix("\n")
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(
            f"The {what} on stdin is not UTF-8 (byte {exc.start + 1})",
            hint="Convert it first, e.g. iconv -f latin1 -t utf-8",
        ) from exc


def is_usage_error(exc: OpenVikingError) -> bool:
    """Bad input (exit 2), as opposed to a runtime failure (exit 1): a store that cannot be
    written is PERMISSION_DENIED like a traversal, but it is the machine's state, not the input."""
    if isinstance(exc, StoreNotWritableError):
        return False
    return isinstance(exc, USAGE_ERRORS)


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


# What to do after Ctrl-C, for the commands that pick up where they stopped when run again.
RESUMING_ADVICE = {
    "add-resource": "What was written is kept; run the same command again to finish.",
    "add-skill": "What was written is kept; run the same command again to finish.",
    "reindex": "What was written is kept; run the same command again to finish.",
    # The move may have been complete already when Ctrl-C came: doctor tells.
    "mv": "If the move was left unfinished, 'openviking doctor' says so and the same mv finishes it.",
}


def report_interrupt(ctx: CliContext) -> None:
    """Say that Ctrl-C stopped the command: a line on stderr, or in json/jsonl mode the error
    object a script reads (code CANCELLED)."""
    message = "Interrupted."
    if ctx.command in RESUMING_ADVICE:
        message += " " + RESUMING_ADVICE[ctx.command]
    if ctx.machine:
        report_error(ctx, CancelledError(message))
    else:
        _write(sys.stderr, f"\n{message}\n")


def run(ctx: CliContext, call: Callable[[], Output]) -> int:
    """Run a command body; print its output or its error; return the exit status."""
    started = time.perf_counter()
    with _InterruptWatch() as interrupt:
        try:
            try:
                outcome = call()
                emit(ctx, outcome, time.perf_counter() - started)
                return int(outcome.exit_code)
            finally:
                ctx.close()
        except OpenVikingError as exc:
            if ctx.debug:
                traceback.print_exc(file=sys.stderr)
            if interrupt.seen:
                report_interrupt(ctx)
                return ExitCode.INTERRUPTED
            report_error(ctx, exc)
            return ExitCode.USAGE if is_usage_error(exc) else ExitCode.FAILURE
        except KeyboardInterrupt:
            report_interrupt(ctx)
            return ExitCode.INTERRUPTED
        except BrokenPipeError:
            silence_stdout()
            return ExitCode.SUCCESS
        except (typer.Exit, typer.Abort):
            raise
        except Exception as exc:  # a bug: one line, and the traceback with --debug
            if ctx.debug:
                traceback.print_exc(file=sys.stderr)
            if interrupt.seen:
                report_interrupt(ctx)
                return ExitCode.INTERRUPTED
            report_error(
                ctx,
                OpenVikingError(
                    f"Unexpected {type(exc).__name__}: {exc}",
                    hint="This is a bug; run again with --debug for the traceback and report it.",
                ),
            )
            return ExitCode.FAILURE


def emit(ctx: CliContext, outcome: Output, seconds: float) -> None:
    """Print a command's output in the chosen format (JSON never goes through rich)."""
    if ctx.output is OutputFormat.json:
        envelope = {"status": "ok", "result": outcome.result, "time": round(seconds, 4)}
        _write(sys.stdout, json.dumps(envelope, ensure_ascii=False, default=_json_default) + "\n")
    elif ctx.output is OutputFormat.jsonl:
        items = outcome.items if outcome.items is not None else [outcome.result]
        for item in items:
            _write(sys.stdout, json.dumps(item, **COMPACT_JSON) + "\n")
    elif outcome.table is not None:
        outcome.table(make_console())
    sys.stdout.flush()


def report_error(ctx: CliContext, exc: OpenVikingError) -> None:
    """One line (and a hint) on stderr, or the JSON error object in json/jsonl mode."""
    if not exc.hint and isinstance(exc, ConfigError):
        exc.hint = "Fix the config file; 'openviking doctor' shows which one is read."
    elif not exc.hint and is_usage_error(exc):
        exc.hint = f"Run 'openviking {ctx.command or ''} --help' to see what it accepts.".replace("  ", " ")
    if ctx.machine:
        payload = {"status": "error", "error": exc.to_dict()}
        style = COMPACT_JSON if ctx.output is OutputFormat.jsonl else {"ensure_ascii": False, "default": _json_default}
        _write(sys.stderr, json.dumps(payload, **style) + "\n")
        return
    console = make_console(stderr=True)
    from rich.text import Text

    line = Text("Error: ", style="bold red")
    line.append(exc.message)
    console.print(line, soft_wrap=True)
    if exc.hint:
        hint = Text("Hint: ", style="yellow")
        hint.append(exc.hint)
        console.print(hint, soft_wrap=True)


PIPE_WIDTH = 4096


def make_console(stderr: bool = False) -> Console:
    """A rich console that never reads data as markup and colors only a terminal.

    Made anew each time: rich reads NO_COLOR and the terminal when a console is built.
    Into a pipe or a file it does not wrap at 80 columns (rich's default there): a script
    reading ``ls`` or ``tree`` line by line gets one entry per line. ``COLUMNS`` still wins.
    """
    console = _console_class()(stderr=stderr, highlight=False, markup=False, emoji=False, soft_wrap=False)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console.width = PIPE_WIDTH
    return console


@functools.cache
def _console_class() -> type[Console]:
    from rich.console import Console

    class PipeAwareConsole(Console):
        def on_broken_pipe(self) -> None:
            # rich exits 1 on EPIPE; a reader that stopped early (`| head -1`) is no failure.
            self.quiet = True
            raise BrokenPipeError

    return PipeAwareConsole


def silence_stdout() -> None:
    """After EPIPE: point stdout at /dev/null so the interpreter's final flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _write(stream: Any, text: str) -> None:
    stream.write(text)


def _json_default(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "isoformat"):
        from openviking.timefilter import format_iso8601

        return format_iso8601(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


# jsonl lines are what `jq -c` prints: no space after the separators.
COMPACT_JSON: dict[str, Any] = {"ensure_ascii": False, "separators": (",", ":"), "default": _json_default}
