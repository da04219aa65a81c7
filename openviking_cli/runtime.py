"""What every command shares: the global options, the client, and how its output is printed.

A command is a plain function ``fn(ctx, ...)`` that returns an :class:`Output`; the
:func:`command` decorator adds ``--store``, ``--config``, ``--url``, ``--api-key``,
``-o/--output``, ``--json`` and ``--debug`` to its signature, times it and prints its
result in the chosen format (one of those the command says it prints: a format it does not is
a usage error); what goes wrong meanwhile, boundary.py reports, with the exit status.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from openviking.errors import InvalidArgumentError

from .boundary import ExitCode, guard_command, is_usage_error
from .console import LISTING_FORMATS, STANDARD_FORMATS, OutputFormat, json_text, make_console, say

if TYPE_CHECKING:
    from rich.console import Console

    from openviking.contract.interface import OpenVikingClient

# What the commands (and their tests) read from here, wherever it is defined.
__all__ = [
    "LISTING_FORMATS",
    "CliContext",
    "ExitCode",
    "Output",
    "OutputFormat",
    "command",
    "is_usage_error",
    "make_console",
    "idle_seconds",
    "run",
    "text_argument",
]

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
UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="OPENVIKING_URL",
        help="Send the command to the openviking server at this URL (openviking serve) instead of opening a store.",
        rich_help_panel=GLOBAL_PANEL,
        show_default=False,
    ),
]
ApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="OPENVIKING_API_KEY",
        help="The server's API key (with --url).",
        rich_help_panel=GLOBAL_PANEL,
        show_default=False,
    ),
]


def _output_option(formats: tuple[OutputFormat, ...]) -> Any:
    names = ", ".join(f.value for f in formats)
    return Annotated[
        OutputFormat | None,
        typer.Option(
            "-o",
            "--output",
            help=f"Output format: {names} (default: table).",
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

AsOfOption = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        help="Answer from the store as it was then: a snapshot, a version, or a time (2h, YYYY-MM-DD, ISO 8601).",
        show_default=False,
    ),
]

IdleStopOption = Annotated[
    str | None,
    typer.Option(
        "--idle-stop",
        help="Stop the local service after this long without a request: 90s, 30m, 2h (default: never).",
        show_default=False,
    ),
]


def spawn_detached(argv: list[str], log: str | os.PathLike[str]) -> int:
    """Start ``argv`` in a session of its own, stdin from /dev/null, its output appended to
    ``log`` (made mode 0600): a process that outlives this one and its terminal. Its pid.
    posix_spawn leaves no Popen object behind to warn, in a process that goes on, that its
    child outlives it."""
    descriptor = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        return os.posix_spawn(
            argv[0],
            argv,
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, descriptor, 1),
                (os.POSIX_SPAWN_DUP2, descriptor, 2),
            ],
            setsid=True,
        )
    finally:
        os.close(descriptor)


def idle_seconds(text: str | None) -> float | None:
    """``--idle-stop``'s value in seconds (None: never).

    Raises:
        InvalidArgumentError: not a number of seconds, minutes or hours.
    """
    if text is None:
        return None
    units = {"s": 1, "m": 60, "h": 3600}
    value = text.strip().lower()
    unit = units.get(value[-1:], 0)
    number = value[:-1] if unit else value
    try:
        seconds = float(number) * (unit or 1)
    except ValueError:
        seconds = -1.0
    if not seconds > 0 or seconds != seconds or seconds == float("inf"):
        raise InvalidArgumentError(f"--idle-stop takes a time such as 90s, 30m or 2h (got {text!r})")
    return seconds


_GLOBALS = [
    inspect.Parameter("store", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=StoreOption),
    inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ConfigOption),
    inspect.Parameter("url", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=UrlOption),
    inspect.Parameter("api_key", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ApiKeyOption),
    inspect.Parameter(
        "output", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=_output_option(STANDARD_FORMATS)
    ),
    inspect.Parameter("json_", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=JsonOption),
    inspect.Parameter("debug", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=DebugOption),
]
GLOBAL_NAMES = tuple(p.name for p in _GLOBALS)
# typer passes the command's context to a parameter annotated typer.Context (it adds no option):
# a usage error raised through it names the command's help, as the parser's own errors do.
_PARSER_CONTEXT = "parser_context"
_PARSER_CONTEXT_PARAMETER = inspect.Parameter(_PARSER_CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)


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
    url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    output: OutputFormat = OutputFormat.table
    debug: bool = False
    command: str = ""
    _client: OpenVikingClient | None = field(default=None, repr=False)

    @property
    def machine(self) -> bool:
        """Whether a program reads the output (every format but the table)."""
        return self.output.machine

    def client(self) -> OpenVikingClient:
        """The client for this invocation (imports the library on first use): over the server
        at ``--url`` when one is given, else over the local service of the store when one runs
        with this configuration (no store is opened, nor a model loaded, here), else embedded."""
        if self._client is None:
            if self.url:
                from openviking.http_client import CommandLineHTTPClient

                _without_httpx_cli()
                self._client = CommandLineHTTPClient(self.url, self.api_key, warn=self.warn)
            else:
                self._client = self._local_service() or self.embedded()
        return self._client

    def embedded(self) -> OpenVikingClient:
        """A client that opens the store in this process."""
        from openviking.embedded.client import OpenViking

        return OpenViking(self.store, config_file=self.config, warn=self.warn)

    def _local_service(self) -> OpenVikingClient | None:
        """The client of the local service that answers as the embedded client would, if one runs."""
        from openviking.service.rendezvous import find_service

        found = find_service(self.store, self.config)
        if found is None:
            return None
        from openviking.http_client.local import LocalServiceClient

        _without_httpx_cli()
        return LocalServiceClient(found.announcement, found.fingerprint, self.embedded, user=found.user, warn=self.warn)

    def warn(self, message: str) -> None:
        """A one-line warning on stderr (never on stdout)."""
        say(f"Warning: {message}\n", stderr=True)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def _without_httpx_cli() -> None:
    if "httpx" not in sys.modules:
        # httpx imports its own command line (click, rich, pygments) whenever it can; this
        # process never runs it, and a call to a server is mostly imports.
        sys.modules["httpx._main"] = None  # type: ignore[assignment]


def command_group(app: typer.Typer, name: str, help: str) -> typer.Typer:  # noqa: A002 - typer's name
    """A group of commands (``openviking NAME ...``) added to ``app``; without a command it shows its help."""
    group = typer.Typer(
        name=name, help=help, no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]}
    )
    app.add_typer(group, name=name)
    return group


def command(
    app: typer.Typer, name: str, *, formats: tuple[OutputFormat, ...] = STANDARD_FORMATS, **settings: Any
) -> Callable[[Callable[..., Output]], Callable[..., None]]:
    """Register ``fn(ctx, ...)`` as command ``name`` with the global options added; it prints
    ``formats`` (:data:`LISTING_FORMATS` for a command whose output is a list of items)."""

    def decorate(fn: Callable[..., Output]) -> Callable[..., None]:
        signature = inspect.signature(fn, eval_str=True)
        own = list(signature.parameters.values())[1:]  # drop ctx
        group = app.info.name if isinstance(app.info.name, str) else None  # None: a top-level command
        path = " ".join(filter(None, ("openviking", group, name)))

        @functools.wraps(fn)
        def wrapper(**kwargs: Any) -> None:
            options = {key: kwargs.pop(key) for key in GLOBAL_NAMES}
            fmt = output_format(options["output"], options["json_"], kwargs.pop(_PARSER_CONTEXT), formats, path)
            ctx = CliContext(
                store=options["store"],
                config=options["config"],
                url=options["url"],
                api_key=options["api_key"],
                output=fmt,
                debug=options["debug"],
                command=name,
            )
            code = run(ctx, lambda: fn(ctx, **kwargs))
            if code:
                raise typer.Exit(code)

        globals_ = [p.replace(annotation=_output_option(formats)) if p.name == "output" else p for p in _GLOBALS]
        parameters = [*own, *globals_, _PARSER_CONTEXT_PARAMETER]
        wrapper.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
        settings.setdefault("help", reflowed(fn.__doc__ or ""))
        app.command(name, **settings)(wrapper)
        return wrapper

    return decorate


def _nothing(ctx: CliContext) -> Output:
    return Output(None)


def global_options() -> list[Any]:
    """The global options as the parser sees them (click parameters), without loading a command."""
    probe = typer.Typer()
    command(probe, "probe")(_nothing)
    return list(typer.main.get_command(probe).params)


def output_format(
    output: OutputFormat | None,
    json_: bool,
    parser: typer.Context,
    formats: tuple[OutputFormat, ...] = STANDARD_FORMATS,
    command: str = "",
) -> OutputFormat:
    """The format asked for by ``-o`` and ``--json``, if the command prints it; the two naming
    different ones is a usage error rather than one of them winning unseen (a script's ``--json
    -o jsonl`` would get a document where it reads lines), and so is a format the command does
    not print. ``parser`` is the command's context: its usage error names the command's help,
    as the parser's own errors do."""
    if json_ and output not in (None, OutputFormat.json):
        parser.fail(f"--json and -o {output.value} ask for different formats: give one of them")
    chosen = OutputFormat.json if json_ else output or OutputFormat.table
    if chosen not in formats:
        names = ", ".join(f.value for f in formats)
        parser.fail(f"{command or 'this command'} does not print {chosen.value}: -o takes {names}")
    return chosen


def reflowed(doc: str) -> str:
    """A docstring as help text: each paragraph on one line, for the help to wrap at the
    terminal's width (Typer keeps a docstring's line breaks, which would break lines mid-sentence)."""
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


def run(ctx: CliContext, call: Callable[[], Output]) -> int:
    """Run a command body and print its output; the boundary reports what goes wrong. Returns
    the exit status."""
    started = time.perf_counter()

    def body() -> int:
        try:
            outcome = call()
            emit(ctx, outcome, time.perf_counter() - started)
            return int(outcome.exit_code)
        finally:
            ctx.close()

    return guard_command(body, ctx.output, command=ctx.command, debug=ctx.debug)


def emit(ctx: CliContext, outcome: Output, seconds: float) -> None:
    """Print a command's output in the chosen format (JSON never goes through rich)."""
    if ctx.output is OutputFormat.json:
        envelope = {"status": "ok", "result": outcome.result, "time": round(seconds, 4)}
        say(json_text(envelope) + "\n")
    elif ctx.output is OutputFormat.jsonl:
        for item in _items(outcome):
            say(json_text(item, compact=True) + "\n")
    elif ctx.output in (OutputFormat.csv, OutputFormat.tsv):
        _write_rows(_items(outcome), "," if ctx.output is OutputFormat.csv else "\t")
    elif outcome.table is not None:
        outcome.table(make_console())
    sys.stdout.flush()


def _items(outcome: Output) -> Iterable[Any]:
    return outcome.items if outcome.items is not None else [outcome.result]


def _write_rows(items: Iterable[Any], delimiter: str) -> None:
    """One row per item under a header of every key the items have, in the order they first
    appear (sqlite-utils' ``--csv``); a list or an object in a cell is its compact JSON, and a
    control character in a cell is shown as ``\\x1b`` (CSV has no escape of its own for it)."""
    import csv
    import io

    rows = [dict(item) if isinstance(item, Mapping) else {"value": item} for item in items]
    columns = list(dict.fromkeys(key for row in rows for key in row))
    text = io.StringIO()
    writer = csv.writer(text, delimiter=delimiter, lineterminator="\n")
    if columns:
        writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(column)) for column in columns])
    say(text.getvalue())


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return json_text(value, compact=True)


@contextmanager
def progress_bar(
    label: str, *, unit: str = "bytes", then: str | None = None
) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on stderr when stderr is a terminal (counting ``bytes`` or ``items``);
    otherwise nothing. ``then``: the label of a second pass, counted in records, which the
    library starts from 0 once the first is complete (an add's embedding, after its writing)."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    class Amount(ProgressColumn):
        """Bytes or items done, as the pass counts them."""

        def __init__(self) -> None:
            super().__init__()
            self.kinds = {"bytes": DownloadColumn(), "items": MofNCompleteColumn()}

        def render(self, task: Any) -> Any:
            return self.kinds[task.fields.get("unit", "items")].render(task)

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        Amount(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=make_console(stderr=True), transient=True) as progress:
        task = progress.add_task(label, total=None, unit=unit)
        passes = [then] if then else []
        last = (0, -1)

        def update(done: int, total: int) -> None:
            nonlocal task, last
            if passes and done == 0 and last[0] >= last[1] >= 0:
                progress.remove_task(task)
                task = progress.add_task(passes.pop(0), total=None, unit="items")
            progress.update(task, completed=done, total=total)
            last = (done, total)

        yield update
