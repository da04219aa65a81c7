"""A child process that answers requests, killed when it does not answer in time: how the
library runs work that nothing in-process could stop (a regular expression in Python's ``re``,
a document converter that hangs).

Requests and answers travel as frames: an 8-byte big-endian length, then a pickle. A worker
reads frames on stdin with :func:`read_message` and answers with :func:`write_message`; the
parent holds it as a :class:`WorkerProcess` and asks it one thing at a time.
"""

from __future__ import annotations

import pickle
import struct
import subprocess
import threading
from dataclasses import dataclass
from typing import IO, Any

__all__ = ["WorkerProcess", "read_message", "write_message"]

HEADER = struct.Struct(">Q")


def read_message(stream: IO[bytes]) -> Any | None:
    """One message from ``stream``, or None at its end."""
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (size,) = HEADER.unpack(head)
    body = stream.read(size)
    if len(body) < size:
        return None
    return pickle.loads(body)


def write_message(stream: IO[bytes], value: Any) -> None:
    """``value`` on ``stream``, framed as :func:`read_message` reads it."""
    body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(body)) + body)
    stream.flush()


@dataclass
class WorkerProcess:
    """One child process that answers framed requests."""

    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, command: list[str]) -> WorkerProcess:
        """Start ``command``, which reads requests on stdin and writes answers on stdout."""
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return cls(process)

    def ask(self, request: Any, timeout: float) -> tuple[bool, Any]:
        """``(answered, reply)``: the worker's reply, or ``(False, None)`` after ``timeout`` s."""
        assert self.process.stdin is not None and self.process.stdout is not None
        reply: list[Any] = []
        done = threading.Event()
        stdout = self.process.stdout

        def read() -> None:
            try:
                reply.append(read_message(stdout))
            except (OSError, ValueError, EOFError):
                reply.append(None)
            finally:
                done.set()

        reader = threading.Thread(target=read, name="openviking-worker-reply", daemon=True)
        reader.start()
        try:
            write_message(self.process.stdin, request)
        except (BrokenPipeError, OSError):
            self.stop()
            reader.join()
            return True, None
        if not done.wait(max(timeout, 0.001)):
            return False, None
        return True, reply[0]

    def stop(self) -> None:
        """End the process now, and release its pipes."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass

    def close(self) -> None:
        """Let an idle worker end (its stdin closes), or end it."""
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.stop()
