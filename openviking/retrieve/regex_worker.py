"""The worker process that runs grep's slow regex work, so that it can be killed at the deadline.

Run as a script (``python -I regex_worker.py``), never imported by the library: it reads
requests from stdin and writes answers to stdout, each an 8-byte big-endian length and a
pickle, until stdin closes. Python's ``re`` holds the GIL for a whole match and pyarrow's RE2
cannot be stopped either, so a search that may run long runs here, where the parent can end
it (:mod:`.bounded`). pyarrow is imported only for the first RE2 request.

Requests are ``(op, args, seconds)``; past ``seconds`` (and a little more) the worker ends
itself, so that it never outlives a parent that could not kill it. ``op`` and ``args``:

* ``("search", (pattern, flags, lines))``: one byte per line, 1 where Python's ``re`` finds a match;
* ``("spans", (pattern, flags, lines))``: each line's ``[[start, end], ...]`` of non-empty matches;
* ``("re2", (regex, texts))``: one byte per text, 1 where RE2 (pyarrow) finds ``regex``;
* ``("re2_replace", (regex, texts, replacement))``: the texts with every match replaced.

An answer is ``("ok", value)`` or ``("error", message)``.
"""

from __future__ import annotations

import re
import signal
import sys
from typing import IO, Any

from openviking.system.workers import read_message, write_message


def answer(op: str, args: tuple[Any, ...]) -> Any:
    """What the request ``(op, args)`` asks for."""
    if op == "search":
        pattern, flags, lines = args
        search = re.compile(pattern, flags).search
        return bytes(search(line) is not None for line in lines)
    if op == "spans":
        pattern, flags, lines = args
        compiled = re.compile(pattern, flags)
        return [[[m.start(), m.end()] for m in compiled.finditer(line) if m.end() > m.start()] for line in lines]
    if op in ("re2", "re2_replace"):
        import pyarrow as pa
        import pyarrow.compute as pc

        values = pa.array(args[1], pa.large_string())
        if op == "re2":
            found = pc.match_substring_regex(values, args[0]).to_pylist()
            return bytes(bool(x) for x in found)
        return pc.replace_substring_regex(values, args[0], args[2]).to_pylist()
    raise ValueError(f"unknown request {op!r}")


def serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    """Answer requests until their stream ends."""
    alarm = getattr(signal, "alarm", None)  # not on Windows, where the parent's kill has to do
    while (request := read_message(requests)) is not None:
        op, args, seconds = request
        if alarm is not None:
            alarm(int(seconds) + 2)  # SIGALRM's default action ends the process, even inside re
        try:
            reply: tuple[str, Any] = ("ok", answer(op, args))
        except Exception as exc:  # the parent reports it; the worker stays usable
            reply = ("error", f"{type(exc).__name__}: {exc}")
        if alarm is not None:
            alarm(0)
        write_message(answers, reply)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it ends us
    serve(sys.stdin.buffer, sys.stdout.buffer)
