"""Retrieval quality on upstream OpenViking's docs with the real local embedder.

The docs are a corpus beside the repository (``../shared/data/openviking-docs``): without it
these tests skip, and ``.ci/run`` runs them where it is (``needs_shared_data``). The
repository's own guide has its questions in ``test_guide_quality.py``.

Each question below is answered by exactly one page of OpenViking's docs
(checked by reading the pages); that page must rank first among the resources. English
questions search the English pages, Chinese questions the Chinese pages. Chinese questions
over the English pages (the cross-lingual case) must rank their page first when they name
it with an English term, and find it in the top 10 when they are pure Chinese: there the
keyword side matches only through the English glosses of the Chinese words
(retrieve/crosslingual.py; bench/ measures 30 such questions: docs-zh2en-pure).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import shared_data

pytestmark = [pytest.mark.slow, pytest.mark.needs_shared_data]

DOCS = "viking://resources/docs"
DOCS_ZH = "viking://resources/docs-zh"

ENGLISH = [
    ("how do I authenticate users", "guides/04-authentication.md"),
    ("how do I view OpenViking metrics in Grafana", "guides/11-grafana-prometheus.md"),
    ("what happens to path locks when the server crashes", "concepts/09-transaction.md"),
    ("how can I use an NVIDIA GPU for vector search", "guides/16-cuvs.md"),
    ("how do I import my existing agent conversation logs", "agent-integrations/09-log-ingestion.md"),
]

CHINESE = [
    ("如何对用户进行身份认证", "guides/04-authentication.md"),  # how to authenticate users
    ("服务器崩溃后路径锁如何恢复", "concepts/09-transaction.md"),  # how path locks recover after a crash
    ("如何用 NVIDIA 显卡加速向量检索", "guides/16-cuvs.md"),  # accelerate vector search on an NVIDIA GPU
    ("如何导入本地智能体的对话日志", "agent-integrations/09-log-ingestion.md"),  # import local agent chat logs
    ("viking URI 的格式是什么", "concepts/04-viking-uri.md"),  # what is the format of a viking URI
]

CROSS_LINGUAL_NAMED = [
    ("如何通过 Prometheus 和 Grafana 查看指标", "guides/11-grafana-prometheus.md"),  # view metrics with ...
    ("viking URI 的格式是什么", "concepts/04-viking-uri.md"),  # what is the format of a viking URI
    ("如何配置 OAuth 2.1 授权", "guides/11-oauth.md"),  # how to configure OAuth 2.1 authorization
]

CROSS_LINGUAL_PURE = [
    ("服务器崩溃后路径锁如何恢复", "concepts/09-transaction.md"),  # how path locks recover after a crash
    ("如何导入本地智能体的对话日志", "agent-integrations/09-log-ingestion.md"),  # import local agent chat logs
    ("怎样把静态数据加密", "guides/08-encryption.md"),  # how to encrypt data at rest
    pytest.param(
        "用显卡加速向量检索",  # accelerate vector search with a graphics card
        "guides/16-cuvs.md",
        marks=pytest.mark.xfail(
            strict=True,
            reason="the dictionary glosses 显卡 as 'graphics card' and the page says 'GPU'; the local "
            "model's cross-lingual vectors do not bridge it either (bench: docs-zh2en-pure)",
        ),
    ),
]


def top_resources(client: Any, query: str, n: int = 5, root: str = DOCS) -> list[str]:
    result = client.find(query, target_uri=root, limit=n)
    return [hit.uri for hit in result.resources]


def test_the_whole_corpus_was_ingested(docs_store: tuple[Any, Any]) -> None:
    client, added = docs_store
    docs_en = shared_data("openviking-docs", "en")
    pages = sorted(p.relative_to(docs_en).as_posix() for p in docs_en.rglob("*.md"))
    assert added.added == len(pages)
    assert added.skipped == 0
    stored = sorted(e["uri"][len(DOCS) + 1 :] for e in client.ls(DOCS, recursive=True) if not e["isDir"])
    assert stored == pages


@pytest.mark.parametrize(("query", "page"), ENGLISH, ids=[q for q, _ in ENGLISH])
def test_english_question_ranks_the_right_page_first(docs_store: tuple[Any, Any], query: str, page: str) -> None:
    client, _ = docs_store
    ranked = top_resources(client, query)
    assert ranked, "no result"
    assert ranked[0] == f"{DOCS}/{page}", ranked


@pytest.mark.parametrize(("query", "page"), CHINESE, ids=[q for q, _ in CHINESE])
def test_chinese_question_ranks_the_right_page_first(docs_store: tuple[Any, Any], query: str, page: str) -> None:
    client, _ = docs_store
    ranked = top_resources(client, query, root=DOCS_ZH)
    assert ranked, "no result"
    assert ranked[0] == f"{DOCS_ZH}/{page}", ranked


@pytest.mark.parametrize(("query", "page"), CROSS_LINGUAL_NAMED, ids=[q for q, _ in CROSS_LINGUAL_NAMED])
def test_chinese_question_naming_an_english_term_ranks_the_english_page_first(
    docs_store: tuple[Any, Any], query: str, page: str
) -> None:
    client, _ = docs_store
    ranked = top_resources(client, query)
    assert ranked, "no result"
    assert ranked[0] == f"{DOCS}/{page}", ranked


@pytest.mark.parametrize(("query", "page"), CROSS_LINGUAL_PURE)
def test_pure_chinese_question_finds_the_english_page(docs_store: tuple[Any, Any], query: str, page: str) -> None:
    client, _ = docs_store
    ranked = top_resources(client, query, n=10)
    assert f"{DOCS}/{page}" in ranked, ranked


def test_issue_chinese_example_finds_an_embedding_config_page(docs_store: tuple[Any, Any]) -> None:
    """The Chinese example question, 如何配置嵌入模型, finds a page on the embedding config."""
    # "how to configure the embedding model": three pages document the embedding config keys
    # (the configuration guide, the server config reference and the Volcengine guide's
    # "Embedding Configuration Fields"), so any of them in the top 3 is a right answer.
    client, _ = docs_store
    ranked = top_resources(client, "如何配置嵌入模型")[:3]
    answers = {
        f"{DOCS}/guides/01-configuration.md",
        f"{DOCS}/configuration/01-server.md",
        f"{DOCS}/guides/02-volcengine-purchase-guide.md",
    }
    assert answers & set(ranked), ranked


def test_issue_walkthrough_through_the_cli(docs_store: tuple[Any, Any], cli: Any) -> None:
    """The README's walk-through on the docs: find in English and Chinese, then read the page found."""
    client, _ = docs_store
    store = str(client.store_path)
    found = cli("find", "how do I authenticate users", "--uri", DOCS, "--limit", "5", "--store", store)
    assert found.code == 0, found.err
    lines = found.out.splitlines()
    first_uri = next(line.strip() for line in lines if line.strip().startswith("viking://"))
    assert first_uri == f"{DOCS}/guides/04-authentication.md"
    as_json = cli("find", "如何配置嵌入模型", "-o", "json", "--store", store)
    assert as_json.code == 0, as_json.err
    # "how to configure the embedding model": with both languages stored, the Chinese
    # configuration guide is the best answer; its English twin would do as well.
    first = as_json.json()["result"]["resources"][0]["uri"]
    assert first in {f"{DOCS_ZH}/guides/01-configuration.md", f"{DOCS}/guides/01-configuration.md"}, first
    page = cli("read", f"{DOCS}/guides/04-authentication.md", "--store", store)
    assert page.code == 0, page.err
    page_file = shared_data("openviking-docs", "en") / "guides" / "04-authentication.md"
    assert page.out == Path(page_file).read_text(encoding="utf-8")


def test_directory_summaries_exist_for_the_docs(docs_store: tuple[Any, Any]) -> None:
    client, _ = docs_store
    for folder in ("", "/guides", "/concepts"):
        assert client.abstract(DOCS + folder).strip()
        assert "04-authentication.md" in client.overview(f"{DOCS}/guides")
