"""Conversations: transcripts told from other text and cut at their turns, what their chunks
embed, the dates a question names, and sessions found by the day they were held."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from helpers import make_tree, set_mtime

from openviking.ingest.chunk import chunk_text, text_lines
from openviking.ingest.dialogue import dialogue_turns, embedded_turns, preamble_heading
from openviking.ingest.rows import DIALOGUE_TOKENS, file_records
from openviking.values.dates import nearness, query_periods
from openviking.values.uri import parse

SESSION = """# Caroline and Melanie, session 1

1:56 pm on 8 May, 2023

[D1:1] Caroline: Hey Mel! Good to see you! How have you been lately?
[D1:2] Melanie: Hey Caroline! I'm swamped with the kids and work. What's up with you?
[D1:3] Caroline: I went to a support group yesterday and it was so powerful for me.
[D1:4] Melanie: Wow, that's cool! What happened that was so awesome there?
[D1:5] Caroline: The stories were so inspiring, I was happy and thankful for the support.
[D1:6] Melanie: Love that. By the way, I painted a lake sunrise last year, take a look.
[D1:7] Caroline: The colors really blend nicely, painting looks like a great outlet for you.
[D1:8] Melanie: Thanks! Painting is a fun way to express my feelings and relax after work.
"""


def session_lines() -> list[str]:
    return text_lines(SESSION)


# ----------------------------------------------------------------------------- telling a transcript
def test_a_session_is_a_transcript_of_its_turns() -> None:
    turns = dialogue_turns(session_lines())
    assert [t.speaker for t in turns] == ["Caroline", "Melanie"] * 4
    assert [t.first for t in turns] == list(range(4, 12))


@pytest.mark.parametrize(
    "line",
    [
        "User: how do I add a folder of notes to the store?",
        "**Assistant:** Run add-resource with the folder, and it mirrors it under resources.",
        "- Bob: I would rather we did the migration on Monday morning, honestly.",
        "[10:42] Alice: the build failed again on the second runner, same error as before",
        "(10:42 PM) Dr. Smith: please take the medication twice a day with some food",
    ],
)
def test_turns_are_read_in_the_usual_shapes(line: str) -> None:
    other = "Someone Else: and this is what the other person answers to all of that, at length"
    turns = dialogue_turns([line, other, line, other])
    assert len(turns) == 4 and turns[0].speaker != turns[1].speaker


@pytest.mark.parametrize(
    "text",
    [
        # prose with a "Note:" and a "Warning:" in it
        "# Guide\n\nSome text about the store.\nNote: this matters a lot in practice, really it does.\n"
        "More text follows here, as prose does.\nWarning: and this matters even more than the note.\n"
        "The end of the guide, in a sentence.\nNote: one more thing to keep in mind at the end of it.\n",
        # settings, one a line
        "name: openviking\nversion: 0.1.0\nname: other\nversion: 0.2.0\nname: third\nversion: 0.3.0\n",
        # an e-mail's headers
        "From: alice@example.com\nTo: bob@example.com\nSubject: the meeting of tomorrow morning\n"
        "Content-Type: text/plain; charset=utf-8\nFrom: bob@example.com\nTo: alice@example.com\n"
        "Subject: re: the meeting of tomorrow morning\nContent-Type: text/plain; charset=utf-8\n",
        # parameters of a stub, indented
        "def f(\n    start: ArrayLike = something_long_enough_here,\n    stop: ArrayLike = something_long_enough,\n"
        "    start: ArrayLike = something_long_enough_here,\n    stop: ArrayLike = something_long_enough,\n)\n",
        # turns inside a code fence are an example, not the text
        "# Chat API\n\n```\nUser: what is the weather like in Paris today?\nBot: It is sunny and warm in Paris.\n"
        "User: and what about tomorrow, will it rain?\nBot: Tomorrow brings some rain in the afternoon.\n```\n",
    ],
)
def test_other_text_is_no_transcript(text: str) -> None:
    assert dialogue_turns(text_lines(text)) == []


def test_a_turn_of_several_lines_keeps_them() -> None:
    lines = text_lines(SESSION.replace("for me.\n", "for me.\nIt went on for hours.\n\n"))
    third = dialogue_turns(lines)[2]
    assert lines[third.first].startswith("[D1:3]") and lines[third.last] == "It went on for hours."


def test_the_preamble_is_a_heading_and_ids_are_not_embedded() -> None:
    assert preamble_heading(session_lines()[:4]) == "Caroline and Melanie, session 1 > 1:56 pm on 8 May, 2023"
    assert embedded_turns("[D1:1] Caroline: Hey!\n[D1:2] Melanie: Hi") == "Caroline: Hey!\nMelanie: Hi"


# ----------------------------------------------------------------------------- its chunks
def test_a_transcript_is_cut_at_turns_each_chunk_headed_by_its_preamble() -> None:
    long = SESSION + "".join(f"[D1:{n}] {'Caroline' if n % 2 else 'Melanie'}: {'words ' * 30}\n" for n in range(9, 30))
    chunks = chunk_text(long, "session-01.md")
    lines = text_lines(long)
    assert len(chunks) > 3 and all(c.dialogue for c in chunks)
    assert {c.heading for c in chunks} == {"Caroline and Melanie, session 1 > 1:56 pm on 8 May, 2023"}
    assert chunks[0].line_start == 1
    for chunk in chunks[1:]:
        assert lines[chunk.line_start - 1].startswith("[D1:")  # a chunk starts at a turn
    covered = {n for c in chunks for n in range(c.line_start, c.line_end + 1)}
    assert covered == set(range(1, len(lines) + 1))
    # consecutive chunks share a turn, so a question and its answer are together in one
    assert all(b.line_start <= a.line_end for a, b in zip(chunks, chunks[1:], strict=False))


def test_a_chunk_of_long_turns_is_a_turn_and_the_one_before_it() -> None:
    chunks = chunk_text(_talk(1, "2023-05-08", [f"turn {n} says " * 12 for n in range(1, 12)]), "session-01.md")
    turns = [[line.split("]")[0] for line in c.text.splitlines() if line.startswith("[D1:")] for c in chunks]
    assert turns[0] == ["[D1:1"]
    assert turns[1:] == [[f"[D1:{n - 1}", f"[D1:{n}"] for n in range(2, 12)]


def test_a_markdown_page_is_still_cut_at_its_headings() -> None:
    page = "# Title\n\nIntro text.\n\n## Install\n\n" + "Install it like this, then run it.\n" * 30
    assert not any(c.dialogue for c in chunk_text(page, "page.md"))


def test_a_transcript_chunk_embeds_who_speaks_and_when_and_all_of_its_turns() -> None:
    uri = parse("viking://resources/talks/session-01.md")
    chunks = chunk_text(SESSION + SESSION.split("\n\n", 2)[2], "session-01.md")
    now = datetime(2023, 5, 8, tzinfo=UTC)
    rows, inputs, windows = file_records(
        uri, chunks, title="Caroline and Melanie, session 1", summary="s", is_code=False,
        created_at=now, updated_at=now, tags=[],
    )  # fmt: skip
    turns = [(r, i, w) for r, i, w in zip(rows, inputs, windows, strict=True) if r["chunk"] >= 0]
    assert turns and all(w == DIALOGUE_TOKENS for _, _, w in turns)
    for row, embedded, _ in turns:
        assert embedded.startswith("Caroline and Melanie, session 1 > 1:56 pm on 8 May, 2023\n")
        assert "[D1:" not in embedded and "Caroline: " in embedded + "Melanie: "
        assert "8 May, 2023" in row["text"]  # the keyword side finds the date in every chunk


def test_a_window_longer_than_the_embedders_is_granted_only_where_asked(tmp_path: Path) -> None:
    from openviking.ingest.rows import pend_rows
    from openviking.models.embedder import HashEmbedder
    from openviking.store.lance import LanceStore

    seen: list[str] = []

    class Recording(HashEmbedder):
        def embed_documents(self, texts: list[str]) -> Any:
            seen.extend(texts)
            return super().embed_documents(texts)

    store = LanceStore.open(str(tmp_path / "s"), create=True)
    long = " ".join(f"w{n}" for n in range(400))
    rows: list[dict[str, Any]] = [{}, {}]
    embedder = Recording(dimension=8, max_tokens=80)
    pend_rows(store, embedder, rows, [long, long + " x"], [], [None, 192])
    assert [row["embed_tokens"] for row in rows] == [80, 192] and seen == []  # the window waits with its record
    pend_rows(store, embedder, rows, [long, long + " x"], [], [None, 192], embed_now=True)
    assert [len(t.split()) for t in seen] == [80, 192]


# ----------------------------------------------------------------------------- dates in questions
@pytest.mark.parametrize(
    ("question", "first", "last"),
    [
        ("What movie did Joanna watch on 1 May, 2022?", "2022-05-01", "2022-05-01"),
        ("What did Maria do on October 13, 2023?", "2023-10-13", "2023-10-13"),
        ("What did Mel paint in July 2023?", "2023-07-01", "2023-07-31"),
        ("How many times did she go to the beach in 2023?", "2023-01-01", "2023-12-31"),
        ("notes of 2023-05-08", "2023-05-08", "2023-05-08"),
        ("Sept 3rd, 2021 it was", "2021-09-03", "2021-09-03"),
    ],
)
def test_a_question_names_a_period(question: str, first: str, last: str) -> None:
    ((start, end),) = query_periods(question)
    assert (start.date().isoformat(), end.date().isoformat()) == (first, last)


@pytest.mark.parametrize("text", ["open localhost:1933 in a browser", "version 2023.1", "May I ask"])
def test_numbers_that_are_no_date(text: str) -> None:
    assert query_periods(text) == []


def test_nearness_is_whole_in_the_period_and_just_after_it_then_falls() -> None:
    (period,) = query_periods("on 1 May, 2022")
    at = [nearness([period], datetime(2022, 5, day, 12, tzinfo=UTC)) for day in (1, 2, 4, 11, 18)]
    assert at[0] == at[1] == at[2] == 1.0 and 0.5 < at[3] < 1.0 and at[4] < at[3]
    assert nearness([period], datetime(2022, 4, 24, tzinfo=UTC)) == pytest.approx(0.5)
    assert nearness([period], None) == 0.0 and nearness([], datetime(2022, 5, 1, tzinfo=UTC)) == 0.0


# ----------------------------------------------------------------------------- sessions in a store
def _sessions(tmp_path: Path) -> Path:
    days = {1: "2023-05-08", 2: "2023-06-09", 3: "2023-07-15"}
    files = {}
    for number, day in days.items():
        when = datetime.fromisoformat(day).strftime("%d %B, %Y")
        turns = "".join(
            f"[D{number}:{n}] {'Ann' if n % 2 else 'Bea'}: we talked about the garden and the weather again {n}\n"
            for n in range(1, 9)
        )
        files[f"session-{number}.md"] = f"# Ann and Bea, session {number}\n\n{when}\n\n{turns}"
    root = make_tree(tmp_path / "talks", files)
    for number, day in days.items():
        set_mtime(root / f"session-{number}.md", datetime.fromisoformat(day).replace(hour=13, tzinfo=UTC))
    return root


def test_a_question_naming_a_day_finds_that_days_session(hash_client: Any, tmp_path: Path) -> None:
    hash_client.add_resource(_sessions(tmp_path), to="viking://resources/talks")
    for question, session in [
        ("What did Ann say about the garden on 9 June, 2023?", "session-2.md"),
        ("What did Bea say about the weather in July 2023?", "session-3.md"),
        ("the garden, 2023-05-08", "session-1.md"),
    ]:
        found = hash_client.find(question, target_uri="viking://resources/talks", limit=3)
        assert found.resources[0].uri.endswith(session), question


def test_after_and_before_narrow_to_the_sessions_of_those_days(hash_client: Any, tmp_path: Path) -> None:
    hash_client.add_resource(_sessions(tmp_path), to="viking://resources/talks")
    found = hash_client.find("garden", target_uri="viking://resources/talks", since="2023-06-01", until="2023-06-30")
    assert [h.uri.rsplit("/", 1)[-1] for h in found.resources] == ["session-2.md"]
    found = hash_client.find("garden", target_uri="viking://resources/talks", since="2023-06-09")
    assert sorted(h.uri.rsplit("/", 1)[-1] for h in found.resources if h.level == 2) == ["session-2.md", "session-3.md"]


def test_a_memory_that_names_its_day_is_found_by_that_day_not_by_when_it_was_added(hash_client: Any) -> None:
    days = {"2023-05-08": "8 May, 2023", "2023-06-09": "9 June, 2023", "2023-07-15": "15 July, 2023"}
    uris = {
        day: hash_client.add_memory(f"{said}. Ann: we talked about the garden and the weather", "talks").uri
        for day, said in days.items()
    }
    for day in days:
        found = hash_client.find(f"the garden, {day}", target_uri="viking://user/default/memories/talks", limit=3)
        assert [h.uri for h in found.memories][0] == uris[day], day
    # a memory naming no day keeps the time it was added: a question naming a day moves nothing
    plain = hash_client.add_memory("Bea: the garden needs water", "talks")
    assert plain.uri in [h.uri for h in hash_client.find("the garden, 2023-06-09", limit=10).memories]


# ----------------------------------------------------------------------------- with the local model
@pytest.fixture
def local_client(tmp_path: Path) -> Any:
    """An SDK client on an empty store under tmp_path, with the default (local) embedder."""
    from openviking.config import Config
    from openviking.embedded.client import OpenViking

    with OpenViking(path=tmp_path / "store", config=Config()) as client:
        yield client


def _talk(number: int, day: str, said: list[str]) -> str:
    when = datetime.fromisoformat(day).strftime("1:56 pm on %d %B, %Y")
    turns = "".join(f"[D{number}:{n}] {'Caroline' if n % 2 else 'Melanie'}: {text}\n" for n, text in enumerate(said, 1))
    return f"# Caroline and Melanie, session {number}\n\n{when}\n\n{turns}"


SMALL_TALK = [
    "Hey! How was your week? Mine was busy with work and the kids.",
    "Pretty good, thanks. I spent the weekend hiking with my family by the river.",
    "That sounds lovely. We had friends over for dinner on Saturday night.",
    "Nice! I have been reading a novel about a lighthouse keeper, it is gripping.",
]


def _conversation(tmp_path: Path) -> Path:
    """Three sessions: the sunrise painting is in the middle of the second, amid small talk."""
    days = {1: "2023-05-08", 2: "2023-06-09", 3: "2023-07-15"}
    files = {
        "session-1.md": _talk(1, days[1], [*SMALL_TALK, "I started volunteering at the animal shelter."] * 3),
        "session-2.md": _talk(
            2,
            days[2],
            [*SMALL_TALK * 2, "Look, I painted this lake sunrise last weekend, orange and pink.", *SMALL_TALK],
        ),
        "session-3.md": _talk(3, days[3], [*SMALL_TALK, "My cousin got married at the beach last month."] * 3),
    }
    root = make_tree(tmp_path / "talks", files)
    for number, day in days.items():
        set_mtime(root / f"session-{number}.md", datetime.fromisoformat(day).replace(hour=13, tzinfo=UTC))
    return root


def test_the_session_holding_the_turn_is_found_and_its_chunk_says_the_date(local_client: Any, tmp_path: Path) -> None:
    local_client.add_resource(_conversation(tmp_path), to="viking://resources/talks")
    found = local_client.find("When did Melanie paint a sunrise?", target_uri="viking://resources/talks", explain=True)
    first = found.resources[0]
    assert first.uri.endswith("session-2.md")
    start, end = first.explain["record"]["lines"]
    lines = text_lines(local_client.read(first.uri))
    assert any("lake sunrise" in line for line in lines[start - 1 : end])
    # the date comes with the chunk: the keyword side finds the session by its day alone
    found = local_client.find("9 June, 2023", target_uri="viking://resources/talks", mode="keyword")
    assert found.resources[0].uri.endswith("session-2.md")


def test_a_file_is_ranked_by_its_best_chunk_not_by_how_often_it_mentions_the_words(
    local_client: Any, tmp_path: Path
) -> None:
    passing = [f"I walked past the pottery shop on my way to the station, day {n}." for n in range(24)]
    root = make_tree(
        tmp_path / "talks",
        {
            "long.md": _talk(1, "2023-05-08", [*passing, *SMALL_TALK] * 2),
            "short.md": _talk(2, "2023-06-09", [*SMALL_TALK, "I signed up for a pottery class, we make bowls."]),
        },
    )
    local_client.add_resource(root, to="viking://resources/talks")
    for mode in ("keyword", "hybrid"):
        found = local_client.find("pottery class", target_uri="viking://resources/talks", mode=mode)
        assert found.resources[0].uri.endswith("short.md"), mode


def test_a_short_memory_that_answers_outranks_a_long_session_that_mentions_the_words(
    local_client: Any, tmp_path: Path
) -> None:
    passing = [f"Caroline said the pottery shop near the station was closed again, day {n}." for n in range(24)]
    root = make_tree(tmp_path / "talks", {"long.md": _talk(1, "2023-05-08", [*passing, *SMALL_TALK] * 2)})
    local_client.add_resource(root, to="viking://resources/talks")
    memory = local_client.add_memory("9 June, 2023. Caroline signed up for a pottery class.", category="talks")
    found = local_client.find(
        "What class did Caroline sign up for?",
        target_uri=["viking://resources/talks", f"viking://user/{local_client.user}/memories/talks"],
    )
    assert found.memories and found.memories[0].uri == memory.uri
    assert found.memories[0].score > max(h.score for h in found.resources)


# ----------------------------------------------------------------------------- how find weighs a transcript
def _mixed_tree(tmp_path: Path) -> Path:
    said = [f"the garden needs water before the heat, {n}" for n in range(8)]
    return make_tree(
        tmp_path / "kb",
        {
            "talks/session-1.md": _talk(1, "2023-05-08", said),
            "guide.md": "# Garden guide\n\nWater the garden early in the morning, before the heat of the day.\n",
            "water.py": "def water_garden(litres):\n    return f'the garden needs {litres} litres of water'\n",
        },
    )


def _forms(client: Any) -> dict[str, str | None]:
    """Each stored URI's last name -> the form of its records."""
    return {row["uri"].rsplit("/", 1)[-1]: row["form"] for row in client._open().all_records(["uri", "form"])}


def test_a_transcripts_records_are_dialogue_and_its_vector_side_weighs_more(hash_client: Any, tmp_path: Path) -> None:
    from openviking.retrieve.retriever import (
        DIALOGUE_KEYWORD_WEIGHT,
        DIALOGUE_VECTOR_WEIGHT,
        KEYWORD_WEIGHT,
        VECTOR_WEIGHT,
    )

    hash_client.add_resource(_mixed_tree(tmp_path), to="viking://resources/kb")
    forms = _forms(hash_client)
    assert forms == {"session-1.md": "dialogue", "guide.md": "text", "water.py": "code", "kb": "text", "talks": "text"}
    hits = hash_client.find("does the garden need water", target_uri="viking://resources/kb", explain=True)
    shown = {hit.uri.rsplit("/", 1)[-1]: hit for hit in hits.resources if hit.level == 2}
    assert set(shown) == {"session-1.md", "guide.md", "water.py"}
    for name, hit in shown.items():
        weights = (
            (DIALOGUE_VECTOR_WEIGHT, DIALOGUE_KEYWORD_WEIGHT)
            if name == "session-1.md"
            else (VECTOR_WEIGHT, KEYWORD_WEIGHT)
        )
        parts = hit.explain
        assert parts["record"]["form"] == forms[name]
        assert hit.score == pytest.approx(weights[0] * parts["vector_part"] + weights[1] * parts["keyword_part"])
    assert DIALOGUE_VECTOR_WEIGHT > VECTOR_WEIGHT and DIALOGUE_VECTOR_WEIGHT + DIALOGUE_KEYWORD_WEIGHT == 1


def test_a_store_written_before_forms_answers_and_gets_them_by_its_next_writes(tmp_path: Path) -> None:
    from conftest import hash_config

    from openviking.embedded.client import OpenViking
    from openviking.retrieve.retriever import KEYWORD_WEIGHT, VECTOR_WEIGHT

    tree = _mixed_tree(tmp_path)
    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        client.add_resource(tree, to="viking://resources/kb")
        store = client._open()
        store._table(store.records_table).drop_columns(["form"])  # as an older version wrote it
    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:  # columns are never dropped in use
        before = client.find("does the garden need water", target_uri="viking://resources/kb", explain=True)
    with OpenViking(path=tmp_path / "store", config=hash_config()) as client:
        found = client.find("does the garden need water", target_uri="viking://resources/kb", explain=True)
        assert [h.uri for h in found.resources] == [h.uri for h in before.resources]
        assert {h.explain["record"]["form"] for h in found.resources} == {"text"}  # read as text until written
        for hit in found.resources:
            parts = hit.explain
            assert hit.score == pytest.approx(
                VECTOR_WEIGHT * parts["vector_part"] + KEYWORD_WEIGHT * parts["keyword_part"]
            )
        make_tree(tree, {"talks/session-2.md": (tree / "talks" / "session-1.md").read_text().replace("1", "2")})
        added = client.add_resource(tree, to="viking://resources/kb")
        assert added.added == 1 and added.unchanged == 3
        forms = _forms(client)
        assert forms["session-2.md"] == "dialogue" and forms["session-1.md"] is None
        result = client.reindex()
        assert result["files"] == 4, result
        forms = _forms(client)
        assert forms["session-1.md"] == "dialogue" and forms["guide.md"] == "text" and forms["water.py"] == "code"
        listed = {entry["uri"].rsplit("/", 1)[-1] for entry in client.ls("viking://resources/kb", recursive=True)}
        assert listed == {"guide.md", "water.py", "talks", "session-1.md", "session-2.md"}  # nothing lost on the way


def test_the_terminal_explain_line_marks_a_transcript(cli: Any, hash_conf: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    added = cli(
        "add-resource", _mixed_tree(tmp_path), "--to", "viking://resources/kb", "--store", store, "--config", hash_conf
    )
    assert added.code == 0, added.err
    out = cli(
        "find", "does the garden need water", "--uri", "viking://resources/kb", "--explain",
        "--store", store, "--config", hash_conf,
    )  # fmt: skip
    assert out.code == 0, out.err
    blocks = {b.splitlines()[1].strip().rsplit("/", 1)[-1]: b for b in out.out.split("\n\n") if "Level 2" in b}
    transcript = [b for name, b in blocks.items() if name == "session-1.md"]
    others = [b for name, b in blocks.items() if name in ("guide.md", "water.py")]
    assert len(transcript) == 1 and transcript[0].rstrip().endswith("· transcript")
    assert len(others) == 2 and not any("transcript" in b for b in others)
