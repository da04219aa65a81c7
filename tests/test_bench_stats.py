"""The benchmark's own arithmetic (bench/quality.py, bench/locomo.py): the paired comparison of
two question sets, which the closing notes quote for the language gap and the conversations'
margins, and the code questions' answers."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.quality import code_queries, lines_of, paired_gap, span_hits  # noqa: E402


def test_same_answers_have_no_gap() -> None:
    scores = {f"q{i}": i / 10 for i in range(10)}
    gap = paired_gap(scores, scores, {q: q for q in scores}, samples=2000)
    assert gap == {"questions": 10, "gap": 0.0, "gap_95": [0.0, 0.0], "first_better": 0, "second_better": 0, "same": 10}


def test_a_steady_shortfall_is_outside_the_noise_and_one_question_is_not() -> None:
    first = {f"en-{i}": 1.0 for i in range(40)}
    steady = {f"zh-{i}": 0.85 if i % 2 else 0.95 for i in range(40)}  # every question a little worse
    pairs = {f"en-{i}": f"zh-{i}" for i in range(40)}
    gap = paired_gap(first, steady, pairs, samples=2000)
    assert gap["gap"] == 0.1 and 0 < gap["gap_95"][0] < 0.1 < gap["gap_95"][1]
    one_miss = {f"zh-{i}": 0.0 if i == 0 else 1.0 for i in range(40)}
    gap = paired_gap(first, one_miss, pairs, samples=2000)
    assert gap["gap"] == 0.025 and gap["gap_95"][0] == 0.0 and (gap["first_better"], gap["same"]) == (1, 39)


def test_unpaired_questions_are_left_out() -> None:
    assert paired_gap({"a": 1.0}, {"b": 1.0}, {"a": "c"}) == {"questions": 0}


def test_every_code_question_names_a_definition_of_its_file() -> None:
    questions = code_queries()  # raises on a symbol its file does not define
    assert len(questions) >= 30 and len({q["id"] for q in questions}) == len(questions)
    assert all(0 < q["lines"][0] <= q["lines"][1] for q in questions)


def test_a_span_counts_when_it_overlaps_the_definition_in_the_right_file() -> None:
    assert lines_of("lines 12-40") == (12, 40) and lines_of("title and summary") is None
    hits = [("a.py", (1, 10)), ("b.py", (50, 60)), ("b.py", (100, 120))]
    assert span_hits(hits, "b.py", (55, 70)) == {"span@file": 1.0, "span@3": 1.0}
    assert span_hits(hits, "b.py", (105, 110)) == {"span@file": 0.0, "span@3": 1.0}  # the file's first hit missed
    assert span_hits(hits, "c.py", (1, 10)) == {"span@file": 0.0, "span@3": 0.0}  # right lines, wrong file
    assert span_hits([("b.py", None)], "b.py", (1, 5)) == {"span@file": 0.0, "span@3": 0.0}


def test_conversation_questions_are_scored_by_category_and_paired() -> None:
    from bench.locomo import margins, rows, score

    first = score(["a", "b", "c"], {"b"})
    assert first["ndcg@10"] == pytest.approx(1 / math.log2(3))
    assert (first["hit@1"], first["recall@5"], first["mrr@10"]) == (0.0, 1.0, 0.5)
    items = [
        {"id": "c/q1", "category": 1, "dated": False},
        {"id": "c/q2", "category": 4, "dated": True},
        {"id": "c/q3", "category": 4, "dated": False},
    ]
    ranked = {"c/q1": ["s1"], "c/q2": ["s2"], "c/q3": ["s9", "s3"]}
    relevant = {"c/q1": {"s1"}, "c/q2": {"s2"}, "c/q3": {"s3"}}
    ours = {"system": "find", "latencies": [], "by_query": {q: score(ranked[q], relevant[q]) for q in ranked}}
    theirs = {"system": "bm25s", "latencies": [], "by_query": {q: score(["s0"], relevant[q]) for q in ranked}}
    table = {(r["dataset"], r["system"]): r for r in rows([ours, theirs], items)}
    assert table[("locomo", "find")]["hit@1"] == round(2 / 3, 4) and table[("locomo", "bm25s")]["hit@1"] == 0.0
    assert (
        table[("locomo/4 single-hop", "find")]["mrr@10"] == 0.75
        and table[("locomo/4 single-hop", "find")]["queries"] == 2
    )
    assert table[("locomo/dated", "find")]["queries"] == 1 and table[("locomo/3 open-domain", "find")]["queries"] == 0
    gaps = {(m["dataset"], m["metric"]): m for m in margins(ours, theirs, items)}
    assert gaps[("locomo", "hit@1")]["first_better"] == 2 and gaps[("locomo", "hit@1")]["same"] == 1
    assert gaps[("locomo/4 single-hop", "recall@5")]["gap"] == 1.0
