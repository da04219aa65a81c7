"""Context for a prompt within a budget of tokens: a find's hits packed breadth first, and what
a session gives (its messages since the last commit, its latest archive).

Packing (:func:`pack`). Each hit offers its text in growing pieces: a memory its whole text; a
directory its abstract, then its overview; a file's chunk its lines, then those lines with their
neighbours (twice as many, then three times), then the whole file when it is small; a file's
summary hit its summary, then its beginning. First every hit, best first, gets its smallest
piece that fits (a piece that holds lines another piece holds already, or the same text, is left
out as a repeat); then, while tokens are left, each piece chosen grows by a step, best first,
for as long as a step fits. A piece that is too large to fit whole is cut at a word when at
least ``MIN_CUT`` tokens are left. Tokens are counted by :mod:`openviking.models.tokens`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from openviking.hits import FindResult, MatchedContext
from openviking.models.tokens import count_tokens, cut_to_tokens, tokenizer_name
from openviking.results import ContextEntry, ContextResult, Message, SessionContext
from openviking.session.sessions import SessionStore
from openviking.store.fs import VikingFS
from openviking.store.lance import LanceStore
from openviking.uri import VikingURI, parse, sessions_folder

__all__ = ["MIN_CUT", "pack", "session_context"]

MIN_CUT = 48  # tokens: less than this left, a piece that does not fit whole is left out
WHOLE_FILE_LINES = 200  # a file this short may be given whole
_LINES = re.compile(r"\blines (\d+)-(\d+)")


@dataclass
class _Piece:
    """One hit's growing text: its steps ``(detail, text, lines)``, and the step it is at (-1: none)."""

    hit: MatchedContext
    rank: int
    steps: list[tuple[str, str, tuple[int, int] | None]]
    at: int = -1
    cut: bool = False
    tokens: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def uri(self) -> str:
        return self.hit.uri


def pack(store: LanceStore, found: FindResult, budget: int) -> ContextResult:
    """The hits of ``found`` packed into ``budget`` tokens (see the module)."""
    hits = sorted(found, key=lambda hit: -hit.score)
    fs = VikingFS(store)
    pieces = [_Piece(hit, rank, _steps(fs, hit)) for rank, hit in enumerate(hits, start=1)]
    pieces = [piece for piece in pieces if piece.steps]
    left = budget
    chosen: list[_Piece] = []
    deduped = dropped = 0
    for piece in pieces:
        if _repeats(piece, 0, chosen):
            deduped += 1
            continue
        detail, text, _ = piece.steps[0]
        tokens = count_tokens(text)
        if tokens > left:
            if left < MIN_CUT:
                dropped += 1
                continue
            piece.cut = True
            piece.steps[0] = (detail, cut_to_tokens(text, left), piece.steps[0][2])
            tokens = count_tokens(piece.steps[0][1])
        piece.at, piece.tokens = 0, tokens
        left -= tokens
        chosen.append(piece)
    grown = True
    while grown and left > 0:
        grown = False
        for piece in chosen:
            if piece.cut or piece.at + 1 >= len(piece.steps) or _repeats(piece, piece.at + 1, chosen):
                continue
            tokens = count_tokens(piece.steps[piece.at + 1][1])
            if tokens - piece.tokens <= left:
                left -= tokens - piece.tokens
                piece.at, piece.tokens, grown = piece.at + 1, tokens, True
    entries = [_entry(piece) for piece in chosen]
    used = budget - left
    details: dict[str, int] = {}
    for entry in entries:
        details[entry.detail] = details.get(entry.detail, 0) + 1
    return ContextResult(
        entries=entries,
        rendered=_rendered(entries),
        budget=budget,
        used_tokens=used,
        tokenizer=tokenizer_name(),
        stats={
            "searched": 1, "candidates": len(hits), "max_tokens": budget, "used_tokens": used,
            "returned": len(entries), "dropped": dropped, "deduped": deduped, "tier_counts": details,
        },
    )  # fmt: skip


def session_context(store: LanceStore, user: str, session_id: str, budget: int) -> SessionContext:
    """What the session gives a prompt within ``budget`` tokens: its messages since the last
    commit, newest first while they fit (shown oldest first), then its latest archive's summary
    if it fits too.

    Raises:
        NotFoundError: no such session.
    """
    sessions = SessionStore(store, user)
    state = sessions.commit_state(session_id)
    live = [said.id for seq, said in sessions.conversation(session_id) if seq > state.archived_seq]
    by_id = {message.id: message for message in sessions.messages(session_id)}
    kept: list[Message] = []
    used = 0
    for message_id in reversed(live):
        message = by_id[message_id]
        tokens = count_tokens(" ".join(part.get("text", "") for part in message.parts))
        if used + tokens > budget:
            break
        kept.append(message)
        used += tokens
    kept.reverse()
    overview, archive_tokens, included = "", 0, 0
    if state.commits:
        archive = VikingURI(("user", user, "history", session_id, f"archive_{state.commits:03d}.md"))
        node = store.get_node(str(archive), columns=["uri", "abstract"])
        summary = str((node or {}).get("abstract") or "")
        archive_tokens = count_tokens(summary)
        if summary and used + archive_tokens <= budget:
            overview, used, included = summary, used + archive_tokens, archive_tokens
    return SessionContext(
        latest_archive_overview=overview,
        pre_archive_abstracts=[],
        messages=kept,
        estimated_tokens=used,
        stats={
            "totalArchives": state.commits, "includedArchives": 1 if overview else 0,
            "droppedArchives": 1 if state.commits and not overview else 0, "failedArchives": 0,
            "activeTokens": used - included, "archiveTokens": included,
            "session_uri": f"{sessions_folder(user)}/{session_id}",
        },
    )  # fmt: skip


def _steps(fs: VikingFS, hit: MatchedContext) -> list[tuple[str, str, tuple[int, int] | None]]:
    """The hit's pieces, smallest first: ``(detail, text, lines)``."""
    if hit.level == 0:
        owner = hit.uri.rsplit("/", 1)[0]
        return _nonempty([("abstract", hit.abstract, None), ("overview", _overview(fs, owner), None)])
    if hit.level == 1:
        return _nonempty([("abstract", hit.abstract, None), ("overview", hit.overview or "", None)])
    uri = parse(hit.uri)
    if hit.context_type == "memory":
        return _nonempty([("full", fs.read(uri), None)])
    lines = _LINES.search(hit.match_reason or "")
    if lines is None:
        text = fs.read(uri, 0, WHOLE_FILE_LINES + 1)
        whole = text.count("\n") <= WHOLE_FILE_LINES
        return _nonempty([("abstract", hit.abstract, None), ("full" if whole else "chunk", text, None)])
    first, last = int(lines.group(1)), int(lines.group(2))
    steps: list[tuple[str, str, tuple[int, int] | None]] = [("chunk", _lines(fs, uri, first, last), (first, last))]
    span = last - first + 1
    for widen in (span // 2 + 1, span + 2):
        start, end = max(1, first - widen), last + widen
        steps.append(("chunk", _lines(fs, uri, start, end), (start, end)))
    text = fs.read(uri, 0, WHOLE_FILE_LINES + 1)
    if text.count("\n") <= WHOLE_FILE_LINES:
        steps.append(("full", text, None))
    return _nonempty(_grown_only(steps))


def _lines(fs: VikingFS, uri: VikingURI, first: int, last: int) -> str:
    return fs.read(uri, first - 1, last - first + 1)


def _overview(fs: VikingFS, uri: str) -> str:
    try:
        return fs.overview(parse(uri))
    except Exception:  # a directory removed since the hit: its abstract is all there is
        return ""


def _nonempty(steps: list[tuple[str, str, tuple[int, int] | None]]) -> list[tuple[str, str, tuple[int, int] | None]]:
    return [step for step in steps if step[1].strip()]


def _grown_only(steps: list[tuple[str, str, tuple[int, int] | None]]) -> list[tuple[str, str, tuple[int, int] | None]]:
    """Steps that each give more than the one before (a chunk at a file's end cannot widen)."""
    out: list[tuple[str, str, tuple[int, int] | None]] = []
    for step in steps:
        if not out or len(step[1]) > len(out[-1][1]):
            out.append(step)
    return out


def _repeats(piece: _Piece, step: int, chosen: list[_Piece]) -> bool:
    """True when the piece's ``step`` holds what a chosen piece holds: the same text, or lines of
    the same file that overlap."""
    _, text, lines = piece.steps[step]
    file = _file_of(piece.uri)
    for other in chosen:
        if other is piece or other.at < 0:
            continue
        _, other_text, other_lines = other.steps[other.at]
        if other_text.strip() == text.strip():
            return True
        if _file_of(other.uri) == file:
            if lines is None or other_lines is None:
                return True  # a file given whole (or its summary) beside another piece of it
            if lines[0] <= other_lines[1] and other_lines[0] <= lines[1]:
                return True
    return False


def _file_of(uri: str) -> str:
    return uri.removesuffix("/.abstract.md").removesuffix("/.overview.md")


def _entry(piece: _Piece) -> ContextEntry:
    detail, text, lines = piece.steps[piece.at]
    hit = piece.hit
    reason = f"find #{piece.rank}, score {hit.score:.3f}"
    if hit.match_reason:
        reason += f", {hit.match_reason}"
    if lines is not None and piece.at > 0:
        reason += f"; widened to lines {lines[0]}-{lines[1]}"
    elif piece.at > 0:
        reason += f"; grown to its {detail}"
    if piece.cut:
        reason += "; cut to fit the budget"
    category = hit.category or {"memory": "memories", "skill": "skills"}.get(hit.context_type, "resources")
    return ContextEntry(
        uri=hit.uri, category=category, score=hit.score, detail=detail, text=text.strip(), tokens=piece.tokens,
        reason=reason, lines=list(lines) if lines is not None else None,
    )  # fmt: skip


def _rendered(entries: list[ContextEntry]) -> str:
    """The pieces as markdown: a heading each (its URI, its lines), why it was chosen, its text."""
    parts = []
    for entry in entries:
        where = f" (lines {entry.lines[0]}-{entry.lines[1]})" if entry.lines else ""
        parts.append(f"### {entry.uri}{where}\n\n_{entry.category}: {entry.reason}_\n\n{entry.text}\n")
    return "\n".join(parts)
