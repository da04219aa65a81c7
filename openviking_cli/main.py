"""The ``openviking`` command: one Typer app, one module per command group.

``main()`` runs the app itself (not in Typer's standalone mode), through the error boundary
(boundary.py): a usage error is one line on stderr (a JSON error object with ``-o json``),
and Ctrl-C and a closed pipe end the process quietly with the documented exit statuses.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import typer

from openviking import __version__

from .boundary import ExitCode, guard_parser, report_usage
from .console import OutputFormat

# The command modules in the order their commands appear in the help.
MODULES = (
    "add", "watch", "find", "search", "context", "grep", "glob", "content", "write", "session", "eval", "snapshot",
    "serve", "service", "mcp",
)  # fmt: skip
# Which module defines each command and group: a run builds only the one it names, since
# building every command's parser costs a short process (a --url call, say) a fifth of its run.
COMMAND_MODULES = {
    "add-resource": "add",
    "index": "add",
    "watch": "watch",
    "find": "find",
    "search": "search",
    "context": "context",
    "grep": "grep",
    "glob": "glob",
    **dict.fromkeys(("read", "abstract", "overview", "ls", "tree", "stat"), "content"),
    **dict.fromkeys(
        ("add-memory", "add-skill", "reindex", "doctor", "write", "mkdir", "rm", "mv", "link", "unlink", "relations"),
        "write",
    ),
    "session": "session",
    "eval": "eval",
    "snapshot": "snapshot",
    "serve": "serve",
    "key": "serve",
    **dict.fromkeys(("start", "stop", "status"), "service"),
    "mcp": "mcp",
}
GROUPS = frozenset({"session", "snapshot", "key"})


def _version(value: bool) -> None:
    if value:
        typer.echo(f"openviking {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """Keep an AI agent's context in a local viking:// store and find it again."""


def build_app(modules: Iterable[str] = MODULES) -> typer.Typer:
    """The ``openviking`` app with the commands of ``modules`` (by default all of them)."""
    app = typer.Typer(
        name="openviking",
        help=(
            "Keep an AI agent's context (resources, memories, skills) in a local viking:// store, "
            "and find it again with find, search, grep and glob."
        ),
        no_args_is_help=True,
        context_settings={"help_option_names": ["-h", "--help"]},
        pretty_exceptions_show_locals=False,
        add_completion=True,
    )
    for name in modules:
        app.add_typer(importlib.import_module(f"{__package__}.commands.{name}").app)
    app.callback()(_root)
    return app


def _output_asked(argv: Sequence[str]) -> OutputFormat:
    """The machine-readable format ``argv`` asks for (read before click has parsed anything), else table."""
    machine = {f.value for f in OutputFormat if f.machine}
    for index, arg in enumerate(argv):
        if arg == "--json":
            return OutputFormat.json
        for prefix in ("-o", "--output="):  # -o is not case-sensitive: -o JSON asks for JSON too
            if arg.startswith(prefix) and arg[len(prefix) :].lower() in machine:
                return OutputFormat(arg[len(prefix) :].lower())
        if arg in ("-o", "--output") and index + 1 < len(argv) and argv[index + 1].lower() in machine:
            return OutputFormat(argv[index + 1].lower())
    return OutputFormat.table


@dataclass(frozen=True)
class CommandShape:
    """What reordering the arguments needs to know of the app: the spellings of the options
    every command takes (runtime.py), those that take a value, and the command groups."""

    value_options: frozenset[str]
    flags: frozenset[str]
    groups: frozenset[str]

    @classmethod
    def from_params(cls, params: Iterable[Any], groups: frozenset[str]) -> CommandShape:
        from .runtime import GLOBAL_NAMES

        options = [p for p in params if p.name in GLOBAL_NAMES]
        return cls(
            value_options=frozenset(o for p in options if not p.is_flag for o in p.opts),
            flags=frozenset(o for p in options if p.is_flag for o in p.opts),
            groups=groups,
        )

    @classmethod
    @functools.cache
    def without_commands(cls) -> CommandShape:
        """The shape known before any command module is loaded: runtime's global options, and
        :data:`GROUPS` (built once a process: the tests run many commands in one)."""
        from .runtime import global_options

        return cls.from_params(global_options(), GROUPS)


def names_no_command(args: list[str], shape: CommandShape) -> bool:
    """True for ``openviking`` or ``openviking session`` with nothing after but global options."""
    rest = args[1:] if args and args[0] in shape.groups else args
    return _global_options(rest, 0, shape)[1] == len(rest)


def global_options_after_the_command(args: list[str], shape: CommandShape) -> list[str]:
    """``openviking --store S --json find Q`` as ``openviking find --store S --json Q``: the
    options every command takes may also come before it, or between a group and its command
    (``openviking session --json list``), as in git or docker."""
    leading, index = _global_options(args, 0, shape)
    if index < len(args) and args[index] in ("--help", "-h", "--version"):
        return [args[index]]  # the app's own help or version: global options before or after change nothing
    if index >= len(args) or args[index].startswith("-"):
        # nothing to move them after: the app's help, or click's error about the option that is
        # not one of them (the JSON it asked for still applies: _output_asked reads the argv as typed)
        return args[index:]
    command = index
    if args[command] in shape.groups:
        between, index = _global_options(args, command + 1, shape)
        leading += between
        if index >= len(args) or args[index].startswith("-"):
            # A group without its subcommand only shows help or a usage error, which read no store.
            return [args[command], *args[index:]]
        return [args[command], args[index], *leading, *args[index + 1 :]]
    return [args[command], *leading, *args[command + 1 :]]


def _global_options(args: list[str], index: int, shape: CommandShape) -> tuple[list[str], int]:
    """The global options from ``args[index]`` on, and where they stop."""
    taken: list[str] = []
    while index < len(args):
        arg = args[index]
        name = arg.split("=", 1)[0]
        if arg in shape.flags or (name in shape.value_options and "=" in arg):
            taken.append(arg)
            index += 1
        elif arg in shape.value_options and index + 1 < len(args):
            taken += args[index : index + 2]
            index += 2
        elif any(len(o) == 2 and arg.startswith(o) and len(arg) > 2 for o in shape.value_options):  # -ojson
            taken.append(arg)
            index += 1
        else:
            break
    return taken, index


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    given = list(sys.argv[1:] if argv is None else argv)
    # As typed: -o json before a group's bad option still asks for JSON.
    output = _output_asked(given)
    shape = CommandShape.without_commands()
    args = global_options_after_the_command(given, shape)
    completing = "_OPENVIKING_COMPLETE" in os.environ  # the shell asks for completions: they go to stdout
    # A named command needs only its own module; help, completions and a mistyped name need them all.
    module = COMMAND_MODULES.get(args[0]) if args and not completing else None
    command = typer.main.get_command(build_app([module] if module else MODULES))
    # No command at all is a usage error: its help goes where errors go, and stdout stays empty.
    # (typer prints that help while raising, so stdout is pointed at stderr beforehand.)
    no_command = names_no_command(args, shape) and not completing
    if no_command:
        group = args[:1] if args and args[0] in shape.groups else []
        if output.machine:  # a script asked for JSON: it gets a JSON error, not the help
            report_usage("Missing command.", " ".join(["openviking", *group]), output)
            return ExitCode.USAGE
        args = group  # the help of the app or the group, with the global options that change nothing there
    stdout = contextlib.redirect_stdout(sys.stderr) if no_command else contextlib.nullcontext()

    def invoke() -> object:
        with stdout:
            return command.main(args=args, prog_name="openviking", standalone_mode=False)

    return guard_parser(invoke, output, no_command=no_command)


def console() -> None:
    """The console script: :func:`main` on this process's arguments, then exit with its status.

    The objects a run made all die with the process, so the interpreter's last collections
    are skipped (``gc.freeze``): they cost a find a tenth of its run, for nothing.

    numpy's OpenBLAS starts a thread per core when it loads, which spins while it waits for
    work; a command makes no matrix product big enough to share (the model runs its own
    threads), and the spinning cost an embedded ``find`` 64 ms of its 541 ms of CPU. So one
    BLAS thread, unless the environment says otherwise.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    status = main()
    gc.freeze()
    sys.exit(status)


if __name__ == "__main__":
    console()
