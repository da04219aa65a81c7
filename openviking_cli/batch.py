"""``find --batch`` and ``context --batch``: many questions from JSONL, one client for all of
them, one JSONL line out for each as soon as it is answered.

Each line in is an object: ``id`` (a string or a number, echoed back), ``query``, and any of
the command's own options under their flag names (``uri``, ``limit``, ``threshold``...) or their
names in the API (``target_uri``, ``score_threshold``...); the flags given on the command line
are the defaults of every line. Each line out is ``{"id", "result"}`` (the result as ``-o json``
prints it) or ``{"id", "error"}`` (the error object, its ``details`` naming the line); the exit
status is the worst of the lines' (2 for bad input, 1 for a failure, else 0).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

from openviking.errors import InvalidArgumentError, OpenVikingError

from .boundary import ExitCode, is_usage_error
from .console import OutputFormat, json_text, say
from .hints import cli_hint
from .runtime import CliContext, Output

__all__ = ["BatchOptions", "run_batch"]

# What a line's option may hold: its JSON types (bool is no number here, as in the flags).
_STRING = (str,)
_STRINGS = (str, list)
_WHOLE = (int,)
_NUMBER = (int, float)
_FLAG = (bool,)


@dataclass(frozen=True)
class BatchOptions:
    """The options a line may give (API name -> JSON types) and their flag names (flag -> API name)."""

    types: Mapping[str, tuple[type, ...]]
    flags: Mapping[str, str]

    def of(self, line: Mapping[str, Any], number: int) -> dict[str, Any]:
        """The options ``line`` gives, by their API names.

        Raises:
            InvalidArgumentError: an option the command does not take, one given twice, or one of the wrong type.
        """
        options: dict[str, Any] = {}
        for key, value in line.items():
            if key == "id":
                continue
            name = self.flags.get(key, key)
            if name not in self.types:
                known = ", ".join(sorted({*self.flags, *self.types}))
                raise InvalidArgumentError(
                    f"Line {number}: unknown option '{key}' (a line takes id and {known})", details={"line": number}
                )
            if name in options:
                raise InvalidArgumentError(f"Line {number}: '{key}' and another name of it are both given",
                                           details={"line": number})  # fmt: skip
            kinds = self.types[name]
            if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
                wanted = " or ".join(_KIND_NAMES[k] for k in kinds)
                raise InvalidArgumentError(f"Line {number}: '{key}' must be {wanted} (got {json.dumps(value)[:80]})",
                                           details={"line": number})  # fmt: skip
            if isinstance(value, list) and not all(isinstance(item, str) for item in value):
                raise InvalidArgumentError(f"Line {number}: '{key}' must be a list of strings",
                                           details={"line": number})  # fmt: skip
            options[name] = value
        if "query" not in options:
            raise InvalidArgumentError(f"Line {number}: no query", details={"line": number})
        return options


_KIND_NAMES = {str: "a string", list: "a list", int: "a whole number", float: "a number", bool: "true or false",
               dict: "an object"}  # fmt: skip

FIND_OPTIONS = BatchOptions(
    types={
        "query": _STRING, "target_uri": _STRINGS, "limit": _WHOLE, "node_limit": _WHOLE, "score_threshold": _NUMBER,
        "filter": (dict, str), "since": _STRING, "until": _STRING, "time_field": _STRING, "level": (int, str, list),
        "context_type": _STRINGS, "tags": _STRINGS, "mode": _STRING, "explain": _FLAG, "as_of": _STRING,
    },
    flags={"uri": "target_uri", "threshold": "score_threshold", "after": "since", "before": "until"},
)  # fmt: skip
CONTEXT_OPTIONS = BatchOptions(
    types={"query": _STRING, "target_uri": _STRINGS, "session_id": _STRING, "budget": _WHOLE, "limit": _WHOLE},
    flags={"uri": "target_uri"},
)


def run_batch(
    ctx: CliContext,
    source: str,
    options: BatchOptions,
    defaults: Mapping[str, Any],
    answer: Callable[[dict[str, Any]], Any],
) -> Output:
    """Answer every line of ``source`` (a file, or ``-`` for stdin) with ``answer(options)``,
    writing each line out as it comes (see the module docstring).

    Raises:
        InvalidArgumentError: the output asked for is not JSONL, or ``source`` cannot be read.
    """
    if ctx.output not in (OutputFormat.table, OutputFormat.jsonl):
        raise InvalidArgumentError(f"--batch prints JSONL, one line per question: -o {ctx.output.value} does not apply")
    worst = ExitCode.SUCCESS
    with _opened(source) as stream:
        for number, raw in _numbered(stream):
            ident, out = None, None
            try:
                line = _parsed(raw, number)
                ident = line["id"]
                out = {"id": ident, "result": answer({**defaults, **options.of(line, number)})}
            except OpenVikingError as exc:
                exc.hint = cli_hint(exc.hint)
                exc.details = {**exc.details, "line": number}
                out = {"id": ident, "error": exc.to_dict()}
                worst = max(worst, ExitCode.USAGE if is_usage_error(exc) else ExitCode.FAILURE)
            say(json_text(out, compact=True) + "\n")
            sys.stdout.flush()  # an agent reading the other end gets each answer as it comes
    return Output(None, items=(), exit_code=worst)


class _opened:
    """``source`` opened for reading bytes (stdin for ``-``), closed after unless it is stdin."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.stream: BinaryIO | None = None

    def __enter__(self) -> BinaryIO:
        if self.source == "-":
            return sys.stdin.buffer
        try:
            self.stream = open(self.source, "rb")  # noqa: SIM115 - closed in __exit__
        except OSError as exc:
            raise InvalidArgumentError(
                f"Cannot read the batch file {self.source}: {exc.strerror or exc}", details={"path": self.source}
            ) from None
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self.stream is not None:
            self.stream.close()


def _numbered(stream: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """The lines of ``stream`` that hold anything, numbered from 1, read as they come."""
    for number, raw in enumerate(iter(stream.readline, b""), start=1):
        if raw.strip():
            yield number, raw


def _parsed(raw: bytes, number: int) -> dict[str, Any]:
    """Line ``number``: a JSON object with an ``id``.

    Raises:
        InvalidArgumentError: it is not UTF-8, not JSON, not an object, or has no usable id.
    """
    try:
        line = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(f"Line {number} is not UTF-8 (byte {exc.start + 1})") from None
    except ValueError as exc:
        raise InvalidArgumentError(f"Line {number} is not JSON: {exc}") from None
    if not isinstance(line, dict):
        raise InvalidArgumentError(f'Line {number} is not an object: each line is {{"id": ..., "query": ...}}')
    ident = line.get("id")
    if isinstance(ident, bool) or not isinstance(ident, str | int | float):
        raise InvalidArgumentError(f"Line {number} has no id: give each line a string or a number as its id")
    return line
