"""Statements about the user found in what they say, told of the user with absolute days, and
what they say is no longer so: the text side of offline extraction, without a store or model."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from openviking.session.extracting import (
    Candidate,
    Said,
    change,
    content_stems,
    memory_statement,
    memory_text,
    statements,
)
from openviking.session.rewording import last_day, reworded, told_day

FRIDAY = datetime(2023, 5, 12, 14, 0, tzinfo=UTC)  # a Friday


def _said(*texts: str, role: str = "user") -> list[Said]:
    return [Said(f"m{n}", role, text, FRIDAY) for n, text in enumerate(texts)]


def _about(*texts: str) -> list[str]:
    return [statement.about for statement in statements(_said(*texts))]


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        # What comes before a fact and what follows it is left out; the fact is told of the user.
        ("Quick background before we start: I keep bees on my roof in Utrecht, three hives.",
         ["The user keeps bees on their roof in Utrecht, three hives."]),
        ("I'm allergic to penicillin, so if you ever suggest first aid, keep that in mind.",
         ["The user is allergic to penicillin."]),
        ("By the way, my laptop is a ThinkPad X1 running Arch Linux, in case the commands differ.",
         ["The user's laptop is a ThinkPad X1 running Arch Linux."]),
        ("Heads up: I don't eat pork, so skip those recipes.", ["The user doesn't eat pork."]),
        ("Sorry for the slow replies today, my daughter Mira has chickenpox.",
         ["The user's daughter Mira has chickenpox."]),
        ("Our production database is PostgreSQL 16, hosted on our own servers.",
         ["The user's production database is PostgreSQL 16, hosted on their own servers."]),
        # Two statements in one sentence are two memories; a clause about the assistant is none.
        ("I grew up in Porto, so Portuguese is my first language.",
         ["The user grew up in Porto.", "Portuguese is the user's first language."]),
        ("I'm vegetarian and I moved to Lisbon last month.",
         ["The user is vegetarian.", "The user moved to Lisbon in April 2023."]),
        # A standing instruction to the assistant is a preference, the assistant named.
        ("When you write SQL for me, always use uppercase keywords, I find it easier to read.",
         ["The user asks: when the assistant writes SQL for the user, always use uppercase keywords, they find "
          "it easier to read."]),
        # Nothing about the user: agreeing, hedging, questions, the assistant, too little said.
        ("I think so.", []),
        ("Do you know a good market?", []),
        ("I love that you remembered!", []),
        ("Thanks, that's what I needed.", []),
        ("Filter, I think.", []),
    ],
)  # fmt: skip
def test_statements_about_the_user_whatever_comes_before_and_after(said: str, kept: list[str]) -> None:
    assert _about(said) == kept


def test_only_the_users_messages_are_read_and_each_statement_once() -> None:
    conversation = [*_said("I live in Porto.", "I live in Porto."), *_said("I live in Rome.", role="assistant")]
    assert [s.about for s in statements(conversation)] == ["The user lives in Porto."]


@pytest.mark.parametrize(
    ("said", "told"),
    [
        ("Last week I switched my whole team to trunk-based development.",
         "In the week of 1 May 2023 the user switched their whole team to trunk-based development."),
        ("Yesterday was my son's sixth birthday.", "11 May 2023 was the user's son's sixth birthday."),
        ("Two weeks ago I ran my first half marathon in 1:52.",
         "Around 28 April 2023 the user ran their first half marathon in 1:52."),
        ("Last Friday I went hiking with my sister.", "On Friday 5 May 2023 the user went hiking with their sister."),
        ("I'm flying to Tokyo in October.", "The user is flying to Tokyo in October 2023."),
        ("We moved from Berlin to Lisbon in March.",
         "The user and their family moved from Berlin to Lisbon in March 2023."),
        ("We're planning to adopt a dog next spring.",
         "The user and their family are planning to adopt a dog in spring 2024."),
        ("My wife and I moved to Porto two years ago.", "The user's wife and the user moved to Porto in 2021."),
        ("Ever since I moved to Montreal I've been cycling everywhere.",
         "Ever since the user moved to Montreal they have been cycling everywhere."),
        ("I really don't like dark mode, it gives me headaches.",
         "The user really doesn't like dark mode, it gives them headaches."),
        ("I go to the gym and I watch films.", "The user goes to the gym and they watch films."),
        ("Our CI kept timing out until we split the tests.",
         "The user's CI kept timing out until they split the tests."),
    ],
)  # fmt: skip
def test_a_statement_is_told_of_the_user_with_its_days_as_dates(said: str, told: str) -> None:
    assert reworded(said, told_day(said, FRIDAY)) == told


def test_the_day_a_statement_tells_of_and_how_precisely() -> None:
    week = told_day("Last week I was in Rome.", FRIDAY)
    assert (week.day.isoformat(), week.precision, last_day(week).isoformat()) == ("2023-05-01", "week", "2023-05-07")
    month = told_day("Next month I'm giving a talk.", FRIDAY)
    assert (month.day.isoformat(), month.precision, last_day(month).isoformat()) == (
        "2023-06-01",
        "month",
        "2023-06-30",
    )
    assert told_day("I live in Porto.", FRIDAY).span is None


def test_a_memory_says_when_it_was_said_and_the_day_it_tells_of() -> None:
    def candidate(statement: str) -> Candidate:
        told = told_day(statement, FRIDAY)
        return Candidate(reworded(statement, told), "events", "", told.day, told.precision, FRIDAY)

    assert memory_text(candidate("I live in Porto.")) == "The user lives in Porto.\n\n(said on 2023-05-12)\n"
    past = memory_text(candidate("Last Friday I went hiking."))
    assert past.endswith("(said on 2023-05-12, of 2023-05-05)\n")
    plan = memory_text(candidate("Next month I'm giving a talk."))
    assert plan.endswith("(said on 2023-05-12, planned for June 2023)\n")
    history = plan + "\nBefore, until 2023-05-12: The user gives no talks. (said on 2022-01-01)\n"
    assert memory_statement(history) == "In June 2023 the user is giving a talk."


@pytest.mark.parametrize(
    ("new", "old", "supersedes"),
    [
        ("We moved from Berlin to Lisbon in March.", "I live in Berlin.", True),
        ("I don't drink coffee anymore.", "I drink three cups of coffee a day.", True),
        ("I quit smoking two months ago.", "I smoke about ten cigarettes a day.", True),
        ("I switched from VS Code to Neovim.", "I use VS Code for everything.", True),
        ("My sister moved to Berlin last year.", "I live in Berlin.", False),  # Berlin is where she went
        ("I bought a new coffee grinder.", "I drink three cups of coffee a day.", False),
        ("We left Utrecht for a weekend in the Ardennes.", "I keep bees on my roof in Utrecht.", False),
        ("I don't eat fish anymore.", "I love spicy food.", False),
        ("I won't quit on my dreams.", "I keep chasing my dreams.", False),  # a quit denied ends nothing
    ],
)
def test_what_a_statement_says_is_no_longer_so(new: str, old: str, supersedes: bool) -> None:
    def told(text: str) -> str:
        return reworded(text, told_day(text, FRIDAY))

    changed = change(told(new))
    assert changed is not None or not supersedes
    assert (changed is not None and bool(changed.stems & content_stems(told(old)))) is supersedes


def test_a_bare_now_changes_the_nearest_memory_of_its_topic_only() -> None:
    vegan = change("The user is vegan now.")
    assert vegan is not None and vegan.stems == frozenset()
    assert change("The user now also plays padel.") is None
    assert change("The user lives in Porto.") is None
