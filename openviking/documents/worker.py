"""The worker process that converts documents, so that one that hangs, or grows without end, can
be stopped: run as ``python -m openviking.documents.worker``, it reads requests on stdin and
answers on stdout (:mod:`openviking.system.workers`' frames) until stdin closes.

A request is ``(kind, path, seconds)``. The answer is ``("ok", text, title, places, warnings)``,
``("failed", code, reason)`` for a document that cannot be read, or ``("error", message)`` for
a converter's own failure. Its address space is capped at :func:`memory_bytes` (where the
system lets a process cap it), and past ``seconds`` (and a little more) it ends itself.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import IO, Any

from openviking.config import env_number
from openviking.system.workers import read_message, write_message

from .converted import ConversionFailed, Converted

MEMORY_ENV = "OPENVIKING_CONVERT_MEMORY_MB"
DEFAULT_MEMORY_MB = 2048


def memory_bytes() -> int:
    """The cap on this process's address space: ``OPENVIKING_CONVERT_MEMORY_MB`` MiB (checked by
    the add that starts the worker, so that a bad value is its error)."""
    return int(env_number(MEMORY_ENV, DEFAULT_MEMORY_MB, "MiB") * 1024 * 1024)


def convert(kind: str, path: Path) -> Converted:
    """The document at ``path``, of ``kind``, converted (the converter's import is here)."""
    if kind == "pdf":
        from .pdf import convert_pdf

        return convert_pdf(path)
    if kind in ("docx", "pptx", "odt"):
        from . import office

        return {"docx": office.convert_docx, "pptx": office.convert_pptx, "odt": office.convert_odt}[kind](path)
    if kind in ("xlsx", "xls", "ods"):
        from .sheets import convert_sheets

        return convert_sheets(path)
    if kind in ("html", "epub"):
        from .markup import convert_epub, convert_html

        return convert_html(path) if kind == "html" else convert_epub(path)
    if kind == "feed":
        from .feeds import convert_feed

        return convert_feed(path)
    if kind in ("ipynb", "rtf"):
        from .notebooks import convert_notebook, convert_rtf

        return convert_notebook(path) if kind == "ipynb" else convert_rtf(path)
    raise ValueError(f"no converter for {kind!r}")


def answer(kind: str, path: str) -> tuple[Any, ...]:
    try:
        converted = convert(kind, Path(path))
    except ConversionFailed as exc:
        return ("failed", exc.code, exc.reason)
    except MemoryError:
        return ("failed", "TOO_LARGE", f"it needs more than {memory_bytes() // 1024 // 1024} MiB to convert")
    except ImportError as exc:
        return ("failed", "MISSING_LIBRARY", f"its converter is not installed ({exc.name or exc})")
    except Exception as exc:  # a converter's own failure on a document it could not parse
        return ("failed", "CORRUPT", f"{type(exc).__name__}: {str(exc)[:200]}")
    return ("ok", converted.text, converted.title, converted.places, converted.warnings)


def _cap_memory() -> None:
    try:
        import resource

        cap = memory_bytes()
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):  # not every system lets a process cap itself
        pass


def serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    """Answer requests until their stream ends."""
    alarm = getattr(signal, "alarm", None)
    while (request := read_message(requests)) is not None:
        kind, path, seconds = request
        if alarm is not None:
            alarm(int(seconds) + 2)  # the parent kills a late worker; this is for a parent gone
        write_message(answers, answer(kind, path))
        if alarm is not None:
            alarm(0)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it ends us
    _cap_memory()
    serve(sys.stdin.buffer, sys.stdout.buffer)
