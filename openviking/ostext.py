"""Text that came from the operating system: file names, paths and command-line arguments.

On POSIX these are bytes. Python decodes the ones that are not UTF-8 with lone surrogates
(``\\udce9`` for the byte 0xE9), which no UTF-8 encoder accepts: not LanceDB, not a terminal,
not JSON. What reaches the store or a message goes through here first.
"""

from __future__ import annotations

from .errors import InvalidArgumentError

__all__ = ["has_undecodable", "require_utf8", "utf8_text"]


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
