"""Context for a prompt within a budget of tokens: the best records of a query packed best first,
and what a session gives (its messages since the last commit, its latest archive).

Candidates. ``context`` scores records, not files (``score_candidates(per_record=True)``: the
hybrid score of find given to each chunk, memory and summary record, ``RECORDS_PER_HIT`` records
for each hit of its ``limit``), so that one long file (a session's transcript) can give several
separate spans; with a session, the hits of its planned ``search`` (one a file) instead.

Packing (:func:`pack`). Each record offers its text in growing pieces: a memory its whole text; a
directory its abstract, then its overview; a file's chunk its lines, then those lines with their
neighbours (twice as many, then three times), then the whole file when it is small; a file's
summary record its summary, then its beginning. First every record, best first, gets its smallest
piece that fits. Each line of a file is given once: a chunk whose lines overlap lines already
given (two-turn chunks of a transcript share a turn) gives only the lines not given yet, and none
when there are none; a piece whose text is one already given is left out as a repeat, and so is a
whole file or a beginning that holds lines given already. A piece too large to fit whole is cut
at a word when at least ``MIN_CUT`` tokens are left. Then, while tokens are left, each chunk
chosen grows by a step, best first, for as long as a step fits: into the lines around it that no
other piece gave, up to the next piece of its file. Tokens are counted by
:mod:`openviking.models.tokens`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from openviking.contract.hits import MatchedContext
from openviking.contract.results import ContextEntry, ContextResult, Message, SessionContext
from openviking.models.tokens import count_tokens, cut_to_tokens, fewest_tokens, tokenizer_name
from openviking.session.sessions import SessionStore
from openviking.store.lance import LanceStore
from openviking.store.view import VikingFS
from openviking.values.uri import VikingURI, parse, sessions_folder

__all__ = ["MIN_CUT", "RECORDS_PER_HIT", "pack", "session_context"]

MIN_CUT = 48  # tokens: less than this left, a piece that does not fit whole is left out
WHOLE_FILE_LINES = 200  # a file this short may be given whole
# Records scored for each hit of ``limit``: 200 at the default 20. On LoCoMo-dev, each side's
# top 200 records packed best first recalled 0.840 / 0.892 / 0.932 of the questions' evidence
# at 1,000 / 2,000 / 4,000 tokens, the top 100 0.834 / 0.875 / 0.907 (bench/README.md).
RECORDS_PER_HIT = 10
READ_AHEAD = 20  # files read in one query when a piece needs one
_LINES = re.compile(r"\blines (\d+)-(\d+)")


@dataclass
class _Step:
    """One size of a piece: its ``detail``, its ``text``, the ``lines`` it shows (a span of a
    file) and the lines of its file it ``holds`` (the span, the whole file, its beginning; none
    for an abstract or an overview)."""

    detail: str
    text: str
    lines: tuple[int, int] | None = None
    holds: tuple[int, int] | None = None


@dataclass
class _Piece:
    """One record's text in the context: the step it is at, and for a chunk the span its record
    names (``span``), which it widens around."""

    hit: MatchedContext
    rank: int
    file: str
    step: _Step
    later: list[_Step]  # the fixed steps after ``step`` (an abstract's overview, a summary's beginning)
    span: tuple[int, int] | None = None
    widened: int = 0  # how many of the chunk's widening steps it took
    cut: bool = False
    trimmed: bool = False  # gave only the lines of its record not given before
    grown: bool = False
    tokens: int = 0


class _Files:
    """The files the pieces are read from, each read once, with the next ``READ_AHEAD`` files
    of the ranking not read yet (one query): their lines, ends kept."""

    def __init__(self, store: LanceStore, fs: VikingFS, ranked: list[str]) -> None:
        self.store, self.fs = store, fs
        self._ranked = list(dict.fromkeys(ranked))
        self._lines: dict[str, list[str]] = {}

    def lines(self, uri: str) -> list[str]:
        if uri not in self._lines:
            start = self._ranked.index(uri) if uri in self._ranked else len(self._ranked)
            batch = [uri] + [u for u in self._ranked[start + 1 :] if u not in self._lines][: READ_AHEAD - 1]
            for row in self.store.nodes_by_uri(batch, columns=["uri", "is_dir", "content"]):
                if not row["is_dir"]:
                    self._lines[row["uri"]] = _cut(row.get("content") or "")
            if uri not in self._lines:  # a directory, or a file removed since: as a read says
                self._lines[uri] = _cut(self.fs.read(parse(uri)))
        return self._lines[uri]

    def text(self, uri: str, first: int, last: int) -> str:
        return "".join(self.lines(uri)[first - 1 : last])


def _cut(text: str) -> list[str]:
    """``text``'s lines, ends kept, as find's "lines A-B" count them (``store.fs.slice_lines``)."""
    cut = text.split("\n")
    return [line + "\n" for line in cut[:-1]] + ([cut[-1]] if cut[-1] else [])


def pack(store: LanceStore, hits: Iterable[MatchedContext], budget: int, *, ranked_by: str = "record") -> ContextResult:
    """The ``hits`` (records, or a search's files) packed into ``budget`` tokens (see the module);
    each entry's reason names its rank (``ranked_by #n``), score and lines."""
    ranked = sorted(hits, key=lambda hit: -hit.score)
    packing = _Packing(store, ranked, budget)
    for rank, hit in enumerate(ranked, start=1):
        packing.choose(rank, hit)
    packing.grow()
    return packing.result(ranked_by)


class _Packing:
    """The state the two phases of :func:`pack` share: the tokens left, the pieces chosen, the
    lines and texts they hold, and the counts a result's stats report."""

    def __init__(self, store: LanceStore, ranked: list[MatchedContext], budget: int) -> None:
        self.fs = VikingFS(store)
        self.files = _Files(store, self.fs, [hit.uri for hit in ranked if hit.level == 2])
        self.candidates = len(ranked)
        self.budget = self.left = budget
        self.given: dict[str, set[int]] = {}  # the lines of each file the chosen pieces hold
        self.texts: set[str] = set()  # the chosen pieces' texts
        self.chosen: list[_Piece] = []
        self.deduped = self.dropped = self.trimmed = 0

    def choose(self, rank: int, hit: MatchedContext) -> None:
        """The first phase for one record: its smallest piece that fits, or its lines not given yet."""
        if self.left <= 0:
            self.dropped += 1
            return
        steps = _steps(self.fs, self.files, hit)
        if not steps:
            return
        file = _file_of(hit.uri)
        taken = self.given.setdefault(file, set())
        first = steps[0]
        parts = [first]
        if first.lines is not None:  # a chunk: the lines of it not given yet, a piece each run
            free = [n for n in range(first.lines[0], first.lines[1] + 1) if n not in taken]
            parts = [
                _Step("chunk", self.files.text(hit.uri, a, b), (a, b), (a, b))
                for a, b in _runs(free)
                if self.files.text(hit.uri, a, b).strip()
            ]
        if not parts or (first.lines is None and _overlaps(first.holds, taken)):
            self.deduped += 1
            return
        for part in parts:
            if part.text.strip() in self.texts:
                self.deduped += 1
                continue
            piece = _Piece(hit, rank, file, part, steps[1:], span=part.lines)
            piece.trimmed = part.lines is not None and part.lines != first.lines
            if self._fit(piece):
                self.trimmed += piece.trimmed
                self.chosen.append(piece)
                self.texts.add(part.text.strip())
                taken.update(_held(part.holds))

    def _fit(self, piece: _Piece) -> bool:
        """Whether ``piece`` goes in (cut at a word when it does not fit whole and enough is
        left), counting its tokens against the budget when it does."""
        part, left = piece.step, self.left
        if left < MIN_CUT and fewest_tokens(part.text) > left:
            self.dropped += 1  # cannot fit whole, and too little is left to cut it
            return False
        tokens = count_tokens(part.text)
        if tokens > left:
            if left < MIN_CUT:
                self.dropped += 1
                return False
            piece.cut = True
            part.text = cut_to_tokens(part.text, left)
            tokens = count_tokens(part.text)
        piece.tokens = tokens
        self.left -= tokens
        return True

    def grow(self) -> None:
        """The second phase: while tokens are left, each chosen piece takes its next step, best
        first, for as long as a step fits."""
        grown = True
        while grown and self.left > 0:
            grown = False
            for piece in self.chosen:
                grown = self._grow_one(piece) or grown

    def _grow_one(self, piece: _Piece) -> bool:
        if piece.cut:
            return False
        following = _next_step(self.files, piece, self.given[piece.file], self.texts)
        if following is None:
            return False
        step, widened = following
        if fewest_tokens(step.text) - piece.tokens > self.left:
            return False
        tokens = count_tokens(step.text)
        if tokens - piece.tokens > self.left:
            return False
        self.left -= tokens - piece.tokens
        self.texts.discard(piece.step.text.strip())
        self.texts.add(step.text.strip())
        self.given[piece.file].update(_held(step.holds))
        if piece.span is None:
            piece.later.pop(0)
        piece.step, piece.widened, piece.tokens, piece.grown = step, widened, tokens, True
        return True

    def result(self, ranked_by: str) -> ContextResult:
        entries = [_entry(piece, ranked_by) for piece in self.chosen]
        used = self.budget - self.left
        details: dict[str, int] = {}
        for entry in entries:
            details[entry.detail] = details.get(entry.detail, 0) + 1
        return ContextResult(
            entries=entries,
            rendered=_rendered(entries),
            budget=self.budget,
            used_tokens=used,
            tokenizer=tokenizer_name(),
            stats={
                "searched": 1, "candidates": self.candidates, "max_tokens": self.budget, "used_tokens": used,
                "returned": len(entries), "dropped": self.dropped, "deduped": self.deduped, "trimmed": self.trimmed,
                "files": len({piece.file for piece in self.chosen}), "tier_counts": details,
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


def _steps(fs: VikingFS, files: _Files, hit: MatchedContext) -> list[_Step]:
    """The hit's first piece and the fixed steps it may grow by, smallest first (a chunk's
    widening steps are worked out as it grows, around what other pieces gave)."""
    if hit.level == 0:
        owner = hit.uri.rsplit("/", 1)[0]
        return _nonempty([_Step("abstract", hit.abstract), _Step("overview", _overview(fs, owner))])
    if hit.level == 1:
        return _nonempty([_Step("abstract", hit.abstract), _Step("overview", hit.overview or "")])
    lines = files.lines(hit.uri)
    if hit.context_type == "memory":
        return _nonempty([_Step("full", "".join(lines), holds=(1, len(lines)))])
    found = _LINES.search(hit.match_reason or "")
    if found is None:
        whole = len(lines) <= WHOLE_FILE_LINES
        beginning = _Step("full" if whole else "chunk", "".join(lines[: WHOLE_FILE_LINES + 1]))
        beginning.holds = (1, min(len(lines), WHOLE_FILE_LINES + 1))
        return _nonempty([_Step("abstract", hit.abstract), beginning])
    first, last = int(found.group(1)), int(found.group(2))
    return [_Step("chunk", files.text(hit.uri, first, last), (first, last), (first, last))]


def _next_step(files: _Files, piece: _Piece, given: set[int], texts: set[str]) -> tuple[_Step, int] | None:
    """The piece's next step, and how many of its widening steps it has taken then: its next
    fixed step; for a chunk, its span widened (by half its record's lines on each side, then
    by as many again, then to the whole file when it is small) into the lines no other piece
    gave. None when it cannot grow (a repeat, or hemmed in by other pieces)."""
    if piece.span is None:
        if not piece.later:
            return None
        step = piece.later[0]
        if step.text.strip() in texts or _overlaps(step.holds, given - set(_held(piece.step.holds))):
            return None
        return step, piece.widened
    uri = piece.hit.uri
    count = len(files.lines(uri))
    first, last = piece.span
    span = last - first + 1
    at, to = piece.step.holds or piece.span
    targets = [(first - widen, last + widen) for widen in (span // 2 + 1, span + 2)]
    if count <= WHOLE_FILE_LINES:
        targets.append((1, count))
    for number in range(piece.widened, len(targets)):
        start, end = targets[number]
        low, high = at, to
        while low > max(1, start) and low - 1 not in given:
            low -= 1
        while high < min(count, end) and high + 1 not in given:
            high += 1
        if (low, high) == (at, to):
            continue
        text = files.text(uri, low, high)
        if text.strip() in texts:
            return None
        whole = (low, high) == (1, count) and count <= WHOLE_FILE_LINES
        return _Step("full" if whole else "chunk", text, None if whole else (low, high), (low, high)), number + 1
    return None


def _held(holds: tuple[int, int] | None) -> range:
    return range(0) if holds is None else range(holds[0], holds[1] + 1)


def _overlaps(holds: tuple[int, int] | None, lines: set[int]) -> bool:
    return holds is not None and any(n in lines for n in _held(holds))


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    """Ascending ``numbers`` as runs of consecutive ones: ``[1, 2, 4]`` -> ``[(1, 2), (4, 4)]``."""
    runs: list[tuple[int, int]] = []
    for n in numbers:
        if runs and runs[-1][1] == n - 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    return runs


def _overview(fs: VikingFS, uri: str) -> str:
    try:
        return fs.overview(parse(uri))
    except Exception:  # a directory removed since the hit: its abstract is all there is
        return ""


def _nonempty(steps: list[_Step]) -> list[_Step]:
    return [step for step in steps if step.text.strip()]


def _file_of(uri: str) -> str:
    return uri.removesuffix("/.abstract.md").removesuffix("/.overview.md")


def _entry(piece: _Piece, ranked_by: str) -> ContextEntry:
    step, hit = piece.step, piece.hit
    reason = f"{ranked_by} #{piece.rank}, score {hit.score:.3f}"
    if hit.match_reason:
        reason += f", {hit.match_reason}"
    if piece.trimmed and piece.span is not None:
        reason += f"; lines {piece.span[0]}-{piece.span[1]} of them, the others given already"
    if piece.grown and step.detail == "chunk" and step.lines is not None:
        reason += f"; widened to lines {step.lines[0]}-{step.lines[1]}"
    elif piece.grown:
        reason += f"; grown to its {step.detail}"
    if piece.cut:
        reason += "; cut to fit the budget"
    category = hit.category or {"memory": "memories", "skill": "skills"}.get(hit.context_type, "resources")
    return ContextEntry(
        uri=hit.uri, category=category, score=hit.score, detail=step.detail, text=step.text.strip(),
        tokens=piece.tokens, reason=reason, lines=list(step.lines) if step.lines is not None else None,
    )  # fmt: skip


def _rendered(entries: list[ContextEntry]) -> str:
    """The pieces as markdown: a heading each (its URI, its lines), why it was chosen, its text."""
    parts = []
    for entry in entries:
        where = f" (lines {entry.lines[0]}-{entry.lines[1]})" if entry.lines else ""
        parts.append(f"### {entry.uri}{where}\n\n_{entry.category}: {entry.reason}_\n\n{entry.text}\n")
    return "\n".join(parts)
