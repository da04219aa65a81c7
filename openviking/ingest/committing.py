"""Committing a session: its messages since the last commit archived as a transcript under the
user's space, then memories taken from them, each compared with what is remembered already.

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
4. Each memory is compared with the nearest stored memories. Without an LLM, one whose vector
   is within ``DUPLICATE_SIMILARITY`` of a stored memory's (or of another new one's) is merged
   into it: kept once. With an LLM, the LLM decides new, merge (rewritten) or skip, and its
   decisions are applied as it gives them.
5. The memories are written in one batch, each dated to the day it tells of, and the commit
   state records the messages read. An LLM that fails or answers what cannot be used leaves the
   archive in place and the state as it was: the result says why, and the next commit retries.

``dry_run`` does all of it but the writes (an LLM is still asked), and says what would be done.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time
from typing import TYPE_CHECKING, Any

from openviking.errors import OpenVikingError
from openviking.results import CommitResult, CommittedMemory
from openviking.session.extracting import Candidate, Said, extract, memory_statement, memory_text
from openviking.session.llm_memory import (
    Decision,
    MemoryReplyError,
    decision_prompt,
    extraction_prompt,
    read_decisions,
    read_memories,
)
from openviking.session.sessions import SessionStore
from openviking.store.filters import Scope
from openviking.store.lance import LanceStore
from openviking.store.search import vector_search
from openviking.uri import VikingURI, parse

from .limits import DEFAULT_LIMITS, IngestLimits
from .memories import memory_uri
from .pipeline import TextDocument, write_documents

if TYPE_CHECKING:
    from openviking.models.embedder import Embedder
    from openviking.models.llm import ChatModel

__all__ = ["DUPLICATE_SIMILARITY", "archive_uri", "commit_session", "transcript"]

# Cosine similarity of two memories' vectors (the bundled model) at and above which they say
# the same thing: measured on pairs written by hand (bench/README.md, Sessions).
DUPLICATE_SIMILARITY = 0.965
NEIGHBOURS = 3  # stored memories an LLM sees beside each new one
SAME_WORDS = "remembered already, in the same words"
NEIGHBOUR_SIMILARITY = 0.8  # and only those this near


@dataclass
class _Found:
    candidate: Candidate
    uri: str
    vector: Any
    action: str = "created"
    target: str | None = None
    text: str | None = None
    reason: str = ""


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
    try:
        found = _memories(store, embedder, user, read, chat)
    except (MemoryReplyError, OpenVikingError) as exc:
        reason = str(exc.message if isinstance(exc, OpenVikingError) else exc)
        result.extraction_error = f"the memories were not taken: {reason}; the next commit tries again"
        if not dry_run:
            state.extraction_error = reason
            sessions.save_commit_state(session_id, state)
        return result
    result.memories = [_reported(item) for item in found]
    result.memories_extracted = _counts(found)
    if not dry_run:
        _write(store, embedder, found, sessions.uri(session_id), limits)
        state.extracted_seq, state.extraction_error = max(last_read, state.extracted_seq), ""
        sessions.save_commit_state(session_id, state)
    return result


def _memories(
    store: LanceStore, embedder: Embedder, user: str, read: list[Said], chat: ChatModel | None
) -> list[_Found]:
    """The memories of ``read``, each with what to do with it."""
    candidates = read_memories(chat.complete(extraction_prompt(read)), read) if chat is not None else extract(read)
    if not candidates:
        return []
    texts = [memory_text(candidate) for candidate in candidates]
    vectors = embedder.embed_documents([memory_statement(text) for text in texts])
    found = [
        _Found(candidate, str(memory_uri(text, candidate.category, user)[0]), vector)
        for candidate, text, vector in zip(candidates, texts, vectors, strict=True)
    ]
    known = store.stored_uris([item.uri for item in found])
    for item in found:
        if item.uri in known:
            item.action, item.reason = "skipped", SAME_WORDS
    neighbours = [_neighbours(store, embedder, user, item.vector) for item in found]
    if chat is None:
        _merge_duplicates(found, neighbours)
        return found
    offered = [
        [(uri, text) for uri, text, similarity in near if similarity >= NEIGHBOUR_SIMILARITY] for near in neighbours
    ]
    decisions = [Decision("new")] * len(found)
    asked = [index for index, near in enumerate(offered) if near and found[index].action == "created"]
    if asked:
        reply = chat.complete(decision_prompt([found[i].candidate for i in asked], [offered[i] for i in asked]))
        for index, decision in zip(asked, read_decisions(reply, [found[i].candidate for i in asked],
                                                          [offered[i] for i in asked]), strict=True):  # fmt: skip
            decisions[index] = decision
    for item, decision in zip(found, decisions, strict=True):
        if item.action != "created":
            continue
        item.reason = decision.reason
        if decision.action == "skip":
            item.action = "skipped"
        elif decision.action == "merge":
            item.action, item.target, item.text = "merged", decision.target, decision.text
    return found


def _neighbours(store: LanceStore, embedder: Embedder, user: str, vector: Any) -> list[tuple[str, str, float]]:
    """The stored memories nearest ``vector`` (a memory's statement's): (uri, text, cosine
    similarity of their statements), nearest first. The stored vectors find them; their
    statements, embedded again without the line that dates them, say how near they are."""
    import numpy as np

    scope = Scope(targets=(VikingURI(("user", user, "memories")),), levels=(2,), user=user)
    rows = vector_search(store, vector, scope, NEIGHBOURS * 3, ["uri"])
    uris = list(dict.fromkeys(row["uri"] for row in rows))[:NEIGHBOURS]
    if not uris:
        return []
    stored = {row["uri"]: str(row.get("content") or "") for row in store.nodes_by_uri(uris, ["uri", "content"])}
    near = [(uri, stored[uri]) for uri in uris if uri in stored]
    statements = embedder.embed_documents([memory_statement(text) for _, text in near])
    scored = [(uri, text, float(np.dot(vector, other))) for (uri, text), other in zip(near, statements, strict=True)]
    return sorted(scored, key=lambda item: -item[2])


def _merge_duplicates(found: list[_Found], neighbours: list[list[tuple[str, str, float]]]) -> None:
    """Without an LLM: a memory as near as a duplicate to a stored one, or to a new one before
    it, is merged into that one (kept once, as it was)."""
    import numpy as np

    for index, item in enumerate(found):
        if item.action != "created":
            continue
        stored = next(((uri, sim) for uri, _, sim in neighbours[index] if sim >= DUPLICATE_SIMILARITY), None)
        if stored is not None:
            item.action, item.target = "merged", stored[0]
            item.reason = f"the same as a stored memory (similarity {stored[1]:.3f})"
            continue
        for earlier in found[:index]:
            if earlier.action != "created":
                continue
            similarity = float(np.dot(item.vector, earlier.vector))
            if similarity >= DUPLICATE_SIMILARITY or earlier.uri == item.uri:
                item.action, item.target = "merged", earlier.uri
                item.reason = f"the same as another memory of this commit (similarity {similarity:.3f})"
                break


def _told_at(candidate: Candidate) -> datetime:
    return datetime.combine(candidate.day, time(12, 0), tzinfo=UTC)


def _write(store: LanceStore, embedder: Embedder, found: list[_Found], session_uri: str, limits: IngestLimits) -> None:
    documents = []
    for item in found:
        source = f"{session_uri}#" + ",".join(item.candidate.message_ids)
        told = _told_at(item.candidate)
        # A memory stored already in the same words is written again, which changes nothing but
        # finishes its folders' summaries when a commit was killed after the memory, before them.
        if item.action == "created" or item.reason == SAME_WORDS:
            documents.append(TextDocument(parse(item.uri), memory_text(item.candidate), told_at=told, source=source))
        elif item.action == "merged" and item.text and item.target:
            merged = Candidate(item.text, item.candidate.category, "", item.candidate.day, item.candidate.precision,
                               item.candidate.said_at, item.candidate.message_ids)  # fmt: skip
            documents.append(TextDocument(parse(item.target), memory_text(merged), told_at=told, source=source))
    if documents:
        write_documents(store, embedder, documents, limits=limits)


def _reported(item: _Found) -> CommittedMemory:
    text = item.text if item.action == "merged" and item.text else memory_text(item.candidate)
    return CommittedMemory(
        uri=item.target if item.action == "merged" and item.target else item.uri,
        category=item.candidate.category,
        text=text.strip(),
        day=item.candidate.day.isoformat(),
        action=item.action,
        reason=item.reason,
        source=list(item.candidate.message_ids),
    )


def _counts(found: list[_Found]) -> dict[str, int]:
    counts = {"created": 0, "merged": 0, "skipped": 0}
    for item in found:
        counts[item.action] += 1
    return {**counts, "total": len(found)}
