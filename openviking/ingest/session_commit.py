"""Committing a session: its messages since the last commit archived as a transcript under the
user's space, then memories taken from them, each compared with what is remembered already,
and the session's summary written.

A commit, in order (each step can be run again after a kill and converges):

1. The messages after the last archived one (all but the ``keep_recent_count`` newest) are
   written as ``viking://user/<u>/history/<session>/archive_NNN.md``, one line a turn
   (``User: ...``), so that the dialogue chunking indexes it and its time is its last message's.
   The archive's number comes from the commits recorded, which step 2 advances: a commit killed
   in between writes the same text at the same URI again, which changes nothing.
2. The commit state records the archived messages.
3. Memories are taken from every message archived but not yet read for memories (so an
   extraction that failed before is tried again): by the LLM when one is configured
   (``memory.llm``, else ``vlm``), else extractively (:mod:`openviking.session.extracting`).
   The LLM is asked for structured output where its server takes it; what its answer holds
   that can be used is kept, the rest said in the result's ``notes``; an answer with problems
   is asked for once more with them, and the user's messages that no memory then comes from
   are read extractively. Each memory's topic is told by :mod:`openviking.session.topics`.
4. Each memory is compared with the nearest stored memories. Without an LLM, one whose vector
   is within ``DUPLICATE_SIMILARITY`` of a stored memory's (or of another new one's; for
   events, one of the same day) is merged into it: kept once; one that says what a stored one
   said is no longer so (:func:`~openviking.session.extracting.change`: "we moved from Berlin
   to Lisbon" and "The user lives in Berlin") supersedes it. With an LLM, the LLM decides new,
   merge (rewritten), supersede or skip. A superseded memory is removed, its text kept under
   the one that supersedes it ("Before, until ..."), and a plan whose days have passed by the
   newest message ages: its date line says so.
5. The memories are written in one batch, each dated to the day it tells of and tagged with its
   topic, the superseded ones removed, the session's summary written (a part per archive, the
   newest kept within ``SUMMARY_CHARS``), and the commit state records the messages read. An
   LLM that cannot be reached, or does not answer in time, leaves the archive in place and the
   state as it was: the result says why, and the next commit retries.

Every change to a stored memory is in the result with the text it had (``previous``), so it
can be undone: a superseded memory's text, added again with ``add-memory``, lands on its URI.
``dry_run`` does all of it but the writes (an LLM is still asked), and says what would be done.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from typing import TYPE_CHECKING, Any

from openviking.contract.results import CommitResult, CommittedMemory
from openviking.errors import OpenVikingError
from openviking.session.extracting import (
    Candidate,
    Said,
    change,
    content_stems,
    extract,
    memory_statement,
    memory_text,
)
from openviking.session.llm_memory import (
    CATEGORIES,
    DECISIONS_SCHEMA,
    MEMORIES_SCHEMA,
    Decision,
    Reading,
    again_prompt,
    decision_prompt,
    extraction_prompt,
    read_decisions,
    read_memories,
)
from openviking.session.rewording import Told, last_day
from openviking.session.sessions import SessionStore
from openviking.session.topics import NOT_A_MEMORY, topic_classifier
from openviking.store.filters import Scope
from openviking.store.lance import LanceStore
from openviking.store.search import vector_search
from openviking.values.uri import VikingURI, parse

from .limits import DEFAULT_LIMITS, IngestLimits
from .memories import memory_uri
from .pipeline import TextDocument, write_documents
from .writes import remove

if TYPE_CHECKING:
    from openviking.models.embedder import Embedder
    from openviking.models.llm import ChatModel

__all__ = ["DUPLICATE_SIMILARITY", "archive_uri", "commit_session", "transcript"]

# Cosine similarity of two memories' vectors (the bundled model) at and above which they say
# the same thing: measured on pairs written by hand (bench/README.md, Sessions).
DUPLICATE_SIMILARITY = 0.965
# A statement that only says "now" ("I'm vegan now") supersedes the nearest memory of its
# topic when this near (bench/queries/memory-updates.jsonl).
NOW_SIMILARITY = 0.92
NEIGHBOURS = 3  # stored memories each new one is compared with
SAME_WORDS = "remembered already, in the same words"
NEIGHBOUR_SIMILARITY = 0.8  # and only those this near
SUMMARY_CHARS = 4000  # the session's summary keeps its newest parts within this
_WAS = re.compile(r"\(was (viking://[^\s)]+)\)")
_DATE_LINE = re.compile(
    r"\(said on (?P<said>\d{4}-\d\d-\d\d)(?:, (?P<how>of|planned for) (?P<day>[^,)]+))?(?P<rest>[^)]*)\)"
)


@dataclass
class _Stored:
    """A stored memory near a new one: its URI, text, topic and how near (cosine)."""

    uri: str
    text: str
    similarity: float
    topic: str = ""


@dataclass
class _Found:
    candidate: Candidate
    uri: str
    vector: Any
    action: str = "created"
    target: str | None = None
    text: str | None = None
    reason: str = ""
    previous: str | None = None
    superseded: list[_Stored] = field(default_factory=list)
    stored_text: str | None = None  # a memory kept in the same words: its text as stored


@dataclass
class _Changed:
    """A stored memory this commit changed: superseded (its text kept under ``by``) or aged."""

    uri: str
    action: str
    text: str
    previous: str
    reason: str
    by: str | None = None
    told_at: datetime | None = None
    tags: list[str] = field(default_factory=list)


@dataclass
class _Extraction:
    candidates: list[Candidate]
    notes: list[str] = field(default_factory=list)
    summary: str = ""


def archive_uri(user: str, session_id: str, number: int) -> VikingURI:
    """``viking://user/<user>/history/<session>/archive_NNN.md``."""
    return VikingURI(("user", user, "history", session_id, f"archive_{number:03d}.md"))


def transcript(session_id: str, number: int, said: Sequence[Said]) -> str:
    """The archive's text: a heading, when it was said, then one line a turn."""
    first, last = said[0].at, said[-1].at
    when = f"{first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC" if first != last else f"{first:%Y-%m-%d %H:%M} UTC"
    turns = [f"{message.role.title()}: {' '.join(message.text.split())}" for message in said if message.text.strip()]
    return f"# Session {session_id}, part {number}\n\nSaid {when}.\n\n" + "\n".join(turns) + "\n"


def commit_session(
    store: LanceStore,
    embedder: Embedder,
    user: str,
    session_id: str,
    *,
    chat: ChatModel | None = None,
    keep_recent_count: int = 0,
    dry_run: bool = False,
    limits: IngestLimits = DEFAULT_LIMITS,
) -> CommitResult:
    """Archive the session's new messages and keep what they say about the user (see the module).

    Raises:
        NotFoundError: no such session.
    """
    sessions = SessionStore(store, user)
    state = sessions.commit_state(session_id)
    conversation = sessions.conversation(session_id)
    new = [(seq, said) for seq, said in conversation if seq > state.archived_seq]
    to_archive = new[: len(new) - keep_recent_count] if keep_recent_count else new
    unread = [(seq, said) for seq, said in conversation if state.extracted_seq < seq <= state.archived_seq]
    result = CommitResult(session_id=session_id, status="accepted", archived=False, dry_run=dry_run)
    if not to_archive and not unread:
        result.status = "skipped"
        result.reason = "all_within_keep_window" if new else "no_messages"
        return result
    number = state.commits + (1 if to_archive else 0)
    if to_archive:
        said = [message for _, message in to_archive]
        uri = archive_uri(user, session_id, number)
        result.archive_uri, result.archived, result.messages_archived = str(uri), True, len(said)
        if not dry_run:
            write_documents(
                store, embedder, [TextDocument(uri, transcript(session_id, number, said), told_at=said[-1].at,
                                               source=sessions.uri(session_id))],
                limits=limits,
            )  # fmt: skip
            state.commits, state.archived_seq = number, to_archive[-1][0]
            sessions.save_commit_state(session_id, state)
    read = [message for _, message in unread + to_archive]
    last_read = (unread + to_archive)[-1][0]
    result.extraction = "llm" if chat is not None else "extractive"
    vectors = _Vectors(embedder)
    try:
        extraction = _extraction(vectors, read, chat)
        found = _decided(store, vectors, user, extraction, chat)
    except OpenVikingError as exc:
        result.extraction_error = f"the memories were not taken: {exc.message}; the next commit tries again"
        if not dry_run:
            state.extraction_error = exc.message
            sessions.save_commit_state(session_id, state)
        return result
    today = max(message.at for message in read).astimezone(UTC).date()
    changed = _superseded(found) + _aged(store, user, today)
    previous = str((sessions.rows.session_by_id(session_id, ["summary"]) or {}).get("summary") or "")
    summary = session_summary(previous, number, read, found, extraction.summary)
    result.memories = [_reported(item) for item in found] + [_reported_change(item) for item in changed]
    result.memories_extracted = _counts(found, changed)
    result.notes = extraction.notes
    result.summary = summary
    if not dry_run:
        _write(store, vectors.embedder, found, changed, sessions.uri(session_id), limits)
        gone = [item.uri for item in changed if item.action == "superseded"] + _left_behind(store, found)
        for old in gone:
            remove(store, vectors.embedder, parse(old), limits=limits)
        sessions.set_summary(session_id, summary)
        state.extracted_seq, state.extraction_error = max(last_read, state.extracted_seq), ""
        sessions.save_commit_state(session_id, state)
    return result


class _Vectors:
    """The embedder's vectors of statements, each embedded once a commit; and their topics, told
    from the bundled model's vectors (the same ones when it is the store's embedder)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._known: dict[str, Any] = {}

    def of(self, texts: Sequence[str]) -> list[Any]:
        missing = list(dict.fromkeys(text for text in texts if text not in self._known))
        if missing:
            self._known.update(zip(missing, self.embedder.embed_documents(missing), strict=True))
        return [self._known[text] for text in texts]

    def topics(self, texts: Sequence[str]) -> list[tuple[str, str]]:
        """Each statement's (topic, category); ("", "profile") when the bundled model is not there."""
        import numpy as np

        from openviking.models.embedder import LocalE5Embedder

        if not texts:
            return []
        classifier = topic_classifier(LocalE5Embedder.identity) if LocalE5Embedder.available() else None
        if classifier is None:
            return [("", "profile")] * len(texts)
        if self.embedder.identity == LocalE5Embedder.identity:
            vectors = np.asarray(self.of(texts))
        else:
            vectors = LocalE5Embedder().embed_documents(list(texts))
        return [(topic.name, topic.category) for topic in classifier.topics(vectors)]


def _extraction(vectors: _Vectors, read: list[Said], chat: ChatModel | None) -> _Extraction:
    """The memories of ``read``: the LLM's, what it left read extractively, or all extractive."""
    if chat is None:
        return _Extraction(_kept(extract(read, vectors.topics)))
    messages = extraction_prompt(read)
    reply = chat.complete(messages, schema=MEMORIES_SCHEMA)
    reading = read_memories(reply, read)
    notes = (
        ["the LLM's server does not take structured output: asked for JSON in words"]
        if chat.structured is False
        else []
    )
    if reading.problems:
        notes.append("the LLM's answer: " + "; ".join(reading.problems) + "; asked once more")
        again = read_memories(chat.complete(again_prompt(messages, reply, reading.problems), schema=MEMORIES_SCHEMA),
                              read)  # fmt: skip
        if again.problems:
            notes.append("its second answer: " + "; ".join(again.problems))
        reading = _better(reading, again)
    topics = vectors.topics([candidate.statement for candidate in reading.candidates])
    for candidate, (topic, category) in zip(reading.candidates, topics, strict=True):
        candidate.topic = topic
        candidate.category = candidate.category or (category if category in CATEGORIES else "profile")
    candidates = list(reading.candidates)
    if reading.problems:
        named = {message_id for candidate in candidates for message_id in candidate.message_ids}
        left = [message for message in read if message.id not in named]
        offline = _kept(extract(left, vectors.topics))
        users = sum(message.role == "user" for message in left)
        notes.append(f"{users} messages of the user no memory of the LLM came from were read without it: "
                     f"{len(offline)} memories")  # fmt: skip
        candidates += offline
    return _Extraction(candidates, notes, reading.summary)


def _better(first: Reading, second: Reading) -> Reading:
    """The answer to keep of two: the one read whole with fewer problems, then the longer."""

    def rank(reading: Reading) -> tuple[bool, int, int]:
        return (not reading.problems, len(reading.candidates), -len(reading.problems))

    return second if rank(second) >= rank(first) else first


def _kept(candidates: list[Candidate]) -> list[Candidate]:
    """Without chatter (a request, a mood), unless it tells of a day."""
    return [c for c in candidates if c.topic != NOT_A_MEMORY or c.category == "events"]


def _decided(
    store: LanceStore, vectors: _Vectors, user: str, extraction: _Extraction, chat: ChatModel | None
) -> list[_Found]:
    """The memories found, each with what to do with it."""
    candidates = extraction.candidates
    if not candidates:
        return []
    texts = [memory_text(candidate) for candidate in candidates]
    embedded = vectors.of([candidate.statement for candidate in candidates])
    found = [
        _Found(candidate, str(memory_uri(text, candidate.category, user)[0]), vector)
        for candidate, text, vector in zip(candidates, texts, embedded, strict=True)
    ]
    stored = {row["uri"]: str(row.get("content") or "") for row in store.nodes_by_uri([f.uri for f in found],
                                                                                      ["uri", "content"])}  # fmt: skip
    for item in found:
        if item.uri in stored:
            item.action, item.reason, item.stored_text = "skipped", SAME_WORDS, stored[item.uri]
    neighbours = [_neighbours(store, vectors, user, item.vector) for item in found]
    if chat is None:
        _merge_duplicates(found, neighbours)
        _supersede(found, neighbours)
        return found
    offered = [[(s.uri, s.text) for s in near if s.similarity >= NEIGHBOUR_SIMILARITY] for near in neighbours]
    decisions = [Decision("new")] * len(found)
    asked = [index for index, near in enumerate(offered) if near and found[index].action == "created"]
    if asked:
        chosen = [found[i].candidate for i in asked]
        reply = chat.complete(decision_prompt(chosen, [offered[i] for i in asked]), schema=DECISIONS_SCHEMA)
        answered, problems = read_decisions(reply, chosen, [offered[i] for i in asked])
        if problems:
            extraction.notes.append("the LLM's decisions: " + "; ".join(problems))
        for index, decision in zip(asked, answered, strict=True):
            decisions[index] = decision
    for item, decision, near in zip(found, decisions, neighbours, strict=True):
        if item.action != "created":
            continue
        item.reason = decision.reason
        target = next((s for s in near if s.uri == decision.target), None)
        if decision.action == "skip":
            item.action = "skipped"
        elif decision.action == "merge" and target is not None:
            item.action, item.target, item.text, item.previous = "merged", target.uri, decision.text, target.text
        elif decision.action == "supersede" and target is not None:
            item.superseded.append(target)
    return found


def _neighbours(store: LanceStore, vectors: _Vectors, user: str, vector: Any) -> list[_Stored]:
    """The stored memories nearest ``vector`` (a memory's statement's), nearest first. The
    stored vectors find them; their statements, embedded again without the line that dates
    them nor their history, say how near they are."""
    import numpy as np

    scope = Scope(targets=(VikingURI(("user", user, "memories")),), levels=(2,), user=user)
    rows = vector_search(store, vector, scope, NEIGHBOURS * 3, ["uri"])
    uris = list(dict.fromkeys(row["uri"] for row in rows))[:NEIGHBOURS]
    if not uris:
        return []
    nodes = {row["uri"]: row for row in store.nodes_by_uri(uris, ["uri", "content", "tags"])}
    near = [(uri, str(nodes[uri].get("content") or ""), _topic_of(nodes[uri])) for uri in uris if uri in nodes]
    statements = vectors.of([memory_statement(text) for _, text, _ in near])
    scored = [_Stored(uri, text, float(np.dot(vector, other)), topic)
              for (uri, text, topic), other in zip(near, statements, strict=True)]  # fmt: skip
    return sorted(scored, key=lambda item: -item.similarity)


def _topic_of(node: dict[str, Any]) -> str:
    return next((tag[6:] for tag in node.get("tags") or [] if str(tag).startswith("topic=")), "")


def _merge_duplicates(found: list[_Found], neighbours: list[list[_Stored]]) -> None:
    """Without an LLM: a memory as near as a duplicate to a stored one, or to a new one before
    it, is merged into that one (kept once, as it was); an event only into one of its day."""
    import numpy as np

    for index, item in enumerate(found):
        if item.action != "created":
            continue
        stored = next((s for s in neighbours[index] if s.similarity >= DUPLICATE_SIMILARITY
                       and _same_day(item.candidate, s.text)), None)  # fmt: skip
        if stored is not None:
            item.action, item.target = "merged", stored.uri
            item.reason = f"the same as a stored memory (similarity {stored.similarity:.3f})"
            continue
        for earlier in found[:index]:
            if earlier.action != "created":
                continue
            similarity = float(np.dot(item.vector, earlier.vector))
            same = similarity >= DUPLICATE_SIMILARITY and _same_day(item.candidate, memory_text(earlier.candidate))
            if same or earlier.uri == item.uri:
                item.action, item.target = "merged", earlier.uri
                item.reason = f"the same as another memory of this commit (similarity {similarity:.3f})"
                break


def _same_day(candidate: Candidate, stored_text: str) -> bool:
    """Two memories may be one unless one is an event and they tell of different days."""
    if candidate.category != "events":
        return True
    return _told_of(memory_text(candidate)) == _told_of(stored_text)


def _told_of(text: str) -> str:
    line = _DATE_LINE.search(text)
    return (line.group("day") or line.group("said")) if line else ""


def _supersede(found: list[_Found], neighbours: list[list[_Stored]]) -> None:
    """Without an LLM: a memory that says what a stored one (or an earlier new one) said is no
    longer so supersedes the nearest such."""
    import numpy as np

    for index, item in enumerate(found):
        if item.action not in ("created",) and item.reason != SAME_WORDS:
            continue
        changed = change(item.candidate.statement)
        if changed is None:
            continue
        earlier = [
            _Stored(other.uri, memory_text(other.candidate), float(np.dot(item.vector, other.vector)),
                    other.candidate.topic)
            for other in found[:index] if other.action == "created"
        ]  # fmt: skip
        near = sorted(neighbours[index] + earlier, key=lambda s: -s.similarity)
        for stored in near:
            if stored.uri == item.uri or stored.similarity < NEIGHBOUR_SIMILARITY:
                continue
            if changed.stems:
                ok = bool(changed.stems & content_stems(memory_statement(stored.text)))
            else:
                ok = stored.topic == item.candidate.topic and stored.similarity >= NOW_SIMILARITY
            if ok:
                item.superseded.append(stored)
                for other in found[:index]:
                    if other.uri == stored.uri:
                        other.action, other.reason = "superseded", f"no longer so: {item.candidate.statement}"
                break


def _superseded(found: list[_Found]) -> list[_Changed]:
    """The stored memories the new ones supersede."""
    out = []
    for item in found:
        for old in item.superseded:
            if any(other.uri == old.uri and other.action == "superseded" for other in found):
                continue  # a new memory of this same commit: reported as itself
            out.append(_Changed(old.uri, "superseded", memory_statement(old.text), old.text,
                                f"no longer so: {item.candidate.statement}", by=item.uri))  # fmt: skip
    return out


def _left_behind(store: LanceStore, found: list[_Found]) -> list[str]:
    """The memories that memories kept in the same words superseded, whose removal a kill cut
    short: gone from the nodes, maybe not from the records (a removal takes the nodes first)."""
    named = [uri for item in found if item.stored_text for uri in _WAS.findall(item.stored_text)]
    there = store.stored_uris(named)
    return [uri for uri in dict.fromkeys(named) if uri not in there]


def _aged(store: LanceStore, user: str, today: date) -> list[_Changed]:
    """The plans among the stored memories whose days have all passed by ``today``."""
    rows = store.nodes_below(VikingURI(("user", user, "memories", "events")), ["uri", "tags"], files_only=True)
    due = [row["uri"] for row in rows if any(str(t).startswith("plan=") and str(t)[5:] < today.isoformat()
                                             for t in row.get("tags") or [])]  # fmt: skip
    out = []
    for node in store.nodes_by_uri(due, ["uri", "content", "tags", "updated_at"]):
        text = str(node.get("content") or "")
        line = _DATE_LINE.search(text)
        if line is None or line.group("how") != "planned for":
            continue
        aged = text[: line.end() - 1] + f", which had passed by {today.isoformat()})" + text[line.end() :]
        tags = [str(t) for t in node.get("tags") or [] if not str(t).startswith("plan=")]
        out.append(_Changed(node["uri"], "aged", aged, text, f"its days had passed by {today.isoformat()}",
                            told_at=node.get("updated_at"), tags=tags))  # fmt: skip
    return out


def _told_at(candidate: Candidate) -> datetime:
    return datetime.combine(candidate.day, time(12, 0), tzinfo=UTC)


def _tags(candidate: Candidate) -> list[str]:
    tags = [f"topic={candidate.topic}"] if candidate.topic else []
    if candidate.day > candidate.said_at.astimezone(UTC).date():  # a plan: it ages once its days are past
        tags.append(f"plan={last_day(Told(candidate.day, candidate.precision)).isoformat()}")
    return tags


def _with_history(text: str, item: _Found) -> str:
    """``text`` and, below it, what ``item`` supersedes, each with its own history."""
    said = item.candidate.said_at.astimezone(UTC).date().isoformat()
    parts = [text.rstrip("\n")]
    for old in item.superseded:
        line = f"Before, until {said}: {memory_statement(old.text)}"
        if line in text:
            continue
        kept = old.text.strip().split("\n\n")
        dated = next((part for part in kept if part.startswith("(said on ")), "")
        parts.append(f"{line} {dated} (was {old.uri})".replace("  ", " "))
        parts += [part for part in kept if part.startswith("Before, ")]
    return "\n\n".join(parts) + "\n"


def _write(
    store: LanceStore, embedder: Embedder, found: list[_Found], changed: list[_Changed], session_uri: str,
    limits: IngestLimits,
) -> None:  # fmt: skip
    documents = []
    for item in found:
        source = f"{session_uri}#" + ",".join(item.candidate.message_ids)
        told = _told_at(item.candidate)
        # A memory stored already in the same words is written again, which changes nothing but
        # finishes its folders' summaries when a commit was killed after the memory, before them.
        if item.action == "created" or item.reason == SAME_WORDS:
            text = _with_history(item.stored_text or memory_text(item.candidate), item)
            tags = None if item.stored_text is not None else _tags(item.candidate)
            documents.append(TextDocument(parse(item.uri), text, tags=tags, told_at=told, source=source))
        elif item.action == "merged" and item.text and item.target:
            was = item.candidate
            merged = Candidate(item.text, was.category, was.topic, was.day, was.precision, was.said_at, was.message_ids)
            documents.append(TextDocument(parse(item.target), memory_text(merged), told_at=told, source=source))
    for aged in (item for item in changed if item.action == "aged"):
        documents.append(TextDocument(parse(aged.uri), aged.text, tags=aged.tags, told_at=aged.told_at))
    if documents:
        write_documents(store, embedder, documents, limits=limits)


def session_summary(previous: str, number: int, read: Sequence[Said], found: Sequence[_Found], llm_summary: str) -> str:
    """The session's summary with this commit's part (``Part N``) written or written again: the
    LLM's summary, or the user's statements and questions; the newest parts within ``SUMMARY_CHARS``."""
    first, last = read[0].at.astimezone(UTC), read[-1].at.astimezone(UTC)
    when = f"{first:%Y-%m-%d}" if first.date() == last.date() else f"{first:%Y-%m-%d} to {last:%Y-%m-%d}"
    body = llm_summary or _extractive_summary(read, found)
    part = f"Part {number} ({when}, {len(read)} messages): {body}"
    parts = [p for p in previous.split("\n\n") if p.strip() and not p.startswith(f"Part {number} (")]
    parts.append(part)
    while len(parts) > 1 and len("\n\n".join(parts)) > SUMMARY_CHARS:
        parts.pop(0)
    return "\n\n".join(parts)[-SUMMARY_CHARS:]


def _extractive_summary(read: Sequence[Said], found: Sequence[_Found]) -> str:
    said = [item.candidate.statement for item in found if item.action != "superseded"]
    asked = [
        " ".join(sentence.split())
        for message in read
        if message.role == "user"
        for sentence in re.split(r"(?<=[.!?])\s+", message.text)
        if sentence.strip().endswith("?") and len(sentence.split()) >= 3
    ]
    out = " ".join(said[:12])
    if asked:
        out += (" " if out else "") + "The user asked: " + " ".join(asked[:4])
    if not out:
        opening = next((m.text for m in read if m.role == "user" and m.text.strip()), read[0].text)
        out = "The user said: " + " ".join(opening.split())[:300]
    return out[:1500]


def _reported(item: _Found) -> CommittedMemory:
    text = item.text if item.action == "merged" and item.text else memory_text(item.candidate)
    if item.superseded:
        text = _with_history(item.stored_text or text, item)
    return CommittedMemory(
        uri=item.target if item.action == "merged" and item.target else item.uri,
        category=item.candidate.category,
        text=text.strip(),
        day=item.candidate.day.isoformat(),
        action=item.action,
        reason=item.reason,
        source=list(item.candidate.message_ids),
        topic=item.candidate.topic,
        extraction=item.candidate.extraction,
        previous=item.previous,
    )


def _reported_change(item: _Changed) -> CommittedMemory:
    category = item.uri.split("/memories/", 1)[-1].split("/", 1)[0] if "/memories/" in item.uri else ""
    line = _DATE_LINE.search(item.previous)
    return CommittedMemory(
        uri=item.uri,
        category=category,
        text=item.text.strip(),
        day=line.group("said") if line else "",
        action=item.action,
        reason=item.reason,
        previous=item.previous.strip(),
        superseded_by=item.by,
    )


def _counts(found: list[_Found], changed: list[_Changed]) -> dict[str, int]:
    counts = {"created": 0, "merged": 0, "skipped": 0, "superseded": 0, "aged": 0}
    for item in found:
        counts[item.action] += 1
    for change_ in changed:
        counts[change_.action] += 1
    return {**counts, "total": len(found)}
