"""The benchmark's paired comparison of two question sets (bench/quality.py), which the closing
notes quote for the language gap."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.quality import paired_gap  # noqa: E402


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
