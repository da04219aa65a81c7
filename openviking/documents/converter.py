"""Converting the documents of one add: each in the worker process (:mod:`.worker`), under a
deadline, a zipped one checked before it is opened, several asked for ahead (:meth:`prefetch`)
so that conversion runs while the add embeds what was converted before."""

from __future__ import annotations

import hashlib
import sys
import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from openviking.system.workers import WorkerProcess

from .converted import ConversionFailed, Converted, has_text, shown_title
from .kinds import package_problem

__all__ = ["DEFAULT_SECONDS", "DocumentConverter"]

DEFAULT_SECONDS = 60.0  # a document's conversion may take this long (OPENVIKING_CONVERT_TIMEOUT)
_ZIPPED = ("docx", "pptx", "xlsx", "ods", "odt", "epub")
_COMMAND = [sys.executable, "-m", "openviking.documents.worker"]


class DocumentConverter:
    """The conversions of one add (or one server's lifetime): one worker at a time, started on the
    first document and stopped by :meth:`close`, or killed and replaced when it is late."""

    def __init__(self, seconds: float = DEFAULT_SECONDS) -> None:
        self.seconds = seconds
        self._worker: WorkerProcess | None = None
        self._lock = threading.Lock()  # one conversion at a time: PDFium is not thread-safe
        self._ahead: dict[Path, Future[Converted | None]] = {}
        self._pool: ThreadPoolExecutor | None = None

    def convert(self, path: Path, kind: str) -> Converted:
        """The document at ``path`` (of ``kind``) as text with its places.

        Raises:
            ConversionFailed: it cannot be read (CORRUPT, ENCRYPTED, NO_TEXT, BOMB, TIMEOUT...).
        """
        ahead = self._ahead.pop(path, None)
        converted = ahead.result() if ahead is not None else None
        return converted if converted is not None else self._convert(path, kind)

    def prefetch(self, documents: Iterable[tuple[Path, str, str | None]]) -> None:
        """Start converting ``documents`` (path, kind, the content hash stored for it) in the
        background, in order; one whose bytes still hash to what is stored is left alone."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="openviking-convert")
        for path, kind, stored_hash in documents:
            if path not in self._ahead:
                self._ahead[path] = self._pool.submit(self._convert_changed, path, kind, stored_hash)

    def _convert_changed(self, path: Path, kind: str, stored_hash: str | None) -> Converted | None:
        if stored_hash is not None:
            try:
                if hashlib.sha256(path.read_bytes()).hexdigest() == stored_hash:
                    return None
            except OSError:
                return None  # the add reads it again and says why it cannot
        return self._convert(path, kind)

    def _convert(self, path: Path, kind: str) -> Converted:
        if kind in _ZIPPED:
            refused = package_problem(path)
            if refused is not None:
                raise ConversionFailed(refused.code, refused.reason)
        with self._lock:
            if self._worker is None or self._worker.process.poll() is not None:
                self._worker = WorkerProcess.start(_COMMAND)
            answered, reply = self._worker.ask((kind, str(path), self.seconds), self.seconds)
            if not answered or reply is None:
                self._worker.stop()
                self._worker = None
                if not answered:
                    late = f"its conversion took longer than {self.seconds:g} s, and was stopped"
                    raise ConversionFailed("TIMEOUT", late)
                raise ConversionFailed("TOO_LARGE", "the converter ran out of memory on it")
        if reply[0] == "failed":
            raise ConversionFailed(reply[1], reply[2])
        _, text, title, places, warnings = reply
        if not has_text(text):
            raise ConversionFailed("NO_TEXT", "holds no text to index (a scan, or only images?)")
        return Converted(text, title=shown_title(title), places=places, warnings=list(warnings))

    def close(self) -> None:
        """Stop the worker and whatever was asked for ahead."""
        if self._pool is not None:
            for future in self._ahead.values():
                future.cancel()
            self._pool.shutdown(wait=True)
            self._pool = None
        self._ahead.clear()
        if self._worker is not None:
            self._worker.close()
            self._worker = None
