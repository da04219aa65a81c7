"""Text that came from the operating system (file names, paths and command-line arguments),
and text that goes to a terminal.

On POSIX the first are bytes. Python decodes the ones that are not UTF-8 with lone surrogates
(``\\udce9`` for the byte 0xE9), which no UTF-8 encoder accepts: not LanceDB, not a terminal,
not JSON. What reaches the store or a message goes through here first. And a terminal acts on
the control characters it is sent (an escape sequence clears the screen or retitles the window,
a carriage return hides what came before it on the line): what the CLI prints, and the server
logs, goes through :func:`printable`.
"""

from __future__ import annotations

import re

from openviking.errors import InvalidArgumentError

__all__ = ["has_undecodable", "printable", "require_utf8", "utf8_text"]

# The C0 controls but tab and line feed (a carriage return too, when it ends a line), DEL, and
# the C1 controls (U+009B is a CSI of its own).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")


def printable(text: str) -> str:
    """``text`` with each control character a terminal would act on shown as ``\\x1b`` (tabs
    and line ends stay): an escape sequence from a file, a message or a name is seen, not obeyed."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()[0]):02x}", text)


def utf8_text(text: str) -> str:
    """``text`` as valid UTF-8, each byte that was not written as ``\\xe9`` (a lone surrogate
    that stands for no byte, which only a Python caller can pass, as ``\\ud800``)."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def has_undecodable(text: str) -> bool:
    """True when ``text`` holds bytes that were not UTF-8 (lone surrogates)."""
    return any("\ud800" <= char <= "\udfff" for char in text)


def require_utf8(text: str, what: str, noun: str) -> None:
    """Refuse text typed in another encoding (``what``: ``"Search query"``, ``noun``: ``"query"``)."""
    if has_undecodable(text):
        shown = utf8_text(text)
        raise InvalidArgumentError(
            f"{what} is not valid UTF-8: {shown[:80]}", hint=f"Give the {noun} as UTF-8 text", details={noun: shown}
        )
