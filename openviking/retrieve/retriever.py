"""find: one global search per query over L0, L1 and L2 records, as OpenViking's retrieval API documents it.

Modes:

* ``vector``: the documented algorithm. Score = cosine similarity of the query and the record.
* ``keyword``: LanceDB's BM25 full-text index alone; score = BM25 / best BM25 of the query.
* ``hybrid`` (default): both, each side reduced to its best record per URI and scaled to
  [0, 1] over its top 100 (BM25 / best BM25; cosine min-max, over a spread of at least 0.1
  so that a few near-equal candidates are not stretched apart), then
  ``0.4 * vector + 0.6 * keyword``, or ``0.65 * vector + 0.35 * keyword`` for a transcript
  (``DIALOGUE_VECTOR_WEIGHT``). A URI best on both sides scores 1.0. The keyword side
  is the best chunk's BM25 plus ``SUMMARY_WEIGHT`` times the BM25 of its page's summary (the
  ``abstract`` column, indexed apart: a title field), for the URIs either side found. A
  record that waits for its vector (an add writes it first: ``store/pending.py``), which the
  vector side cannot find, is scored by its keyword side alone.

When the query has Chinese words, their English dictionary glosses join the keyword side as
a second search whose BM25 is added at ``TRANSLATION_WEIGHT`` (``retrieval.translate_queries``; see
``crosslingual.py``), so that Chinese questions find English pages too.

When the query names a date, ``DATE_WEIGHT`` of the hybrid score is how near the file's time
(``updated_at``) is to it (``values/dates.py``): what was said on a day is in that day's session.

Then, whatever the mode (each URI is one candidate by then): threshold (strict ``>``), sort
by score (ties by URI, so results are deterministic), cut to ``limit``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openviking.contract.hits import FindResult, MatchedContext
from openviking.errors import OpenVikingError
from openviking.store.filters import Scope
from openviking.store.lance import LanceStore
from openviking.store.pending import pending_by_uri
from openviking.store.schema import FORM_DIALOGUE, FORM_TEXT, VECTOR_PENDING
from openviking.store.search import keyword_search, vector_search
from openviking.values.dates import nearness, query_periods
from openviking.values.uri import parse, sidecar_owner

if TYPE_CHECKING:
    from datetime import datetime

    from openviking.models.embedder import Embedder

    from .request import FindRequest

__all__ = ["Candidate", "find", "found", "mark_pending", "record_hits", "retrieve", "score_candidates"]
# Fusion constants, chosen on the bench's five query sets (see bench/README.md).
VECTOR_WEIGHT = 0.4
KEYWORD_WEIGHT = 0.6
# A transcript's vector side weighs more: people rarely say a thing in the words a later
# question uses, and the turns around an answer are full of words of no weight ("that's so
# great!"). Chosen on LoCoMo-dev: hit@1 0.771 -> 0.780, open-domain questions 0.455 -> 0.500
# (plain BM25 over whole sessions: 0.455); at 0.6-0.8 every category beats BM25 (bench/README.md).
DIALOGUE_VECTOR_WEIGHT = 0.65
DIALOGUE_KEYWORD_WEIGHT = 0.35
# So does a memory's: a sentence or two, where one shared word ("jobs" for "what is the user's
# job") decides BM25 between memories. Facts told in passing, asked in other words: the first
# memory holds the fact for 0.626 -> 0.677 of the questions, the first hit of all 0.495 -> 0.626
# (bench/README.md, "Facts told in passing").
MEMORY_VECTOR_WEIGHT = 0.65
MEMORY_KEYWORD_WEIGHT = 0.35
NORMALIZE_DEPTH = 100
VECTOR_MIN_SPREAD = 0.1
VECTOR_FLOOR = 0.05
# BM25 of the English glosses of a Chinese query counts this much of the original words':
# low enough that a Chinese page matching the Chinese words stays first (docs-zh 0.809 ->
# 0.808 nDCG@10), high enough to find the English page (Chinese-only questions over the
# English docs 0.153 -> 0.60; bench/README.md).
TRANSLATION_WEIGHT = 0.3
# BM25 of the query on a page's summary (its title and first sentences, the ``abstract`` of
# each of its records) counts this much of the best chunk's: a field of its own, like a
# title field, so that a page about the question outranks one that only mentions its words
# in passing. Chosen on the bench's sets (bench/README.md): Chinese questions over the
# Chinese pages 0.903 -> 0.924 nDCG@10, over the English pages 0.604 -> 0.635, others +-0.006.
SUMMARY_WEIGHT = 0.2
# Every record of a page carries its summary, so the summary index holds one copy a chunk and
# a long page's copies take several of the search's rows. Searching one record a page
# (``chunk <= 0``) scores the same on every set (within 0.002) but takes twice as long at 1M
# records, its prefilter reading every row; so the copies stay.
# A query is a question, not a document: past this many tokens the model learns nothing new.
QUERY_MAX_TOKENS = 256
# Two keyword searches a query (text, summary), for up to five planned queries at once.
_POOL = ThreadPoolExecutor(max_workers=10, thread_name_prefix="openviking-search")
# Candidates carry no text (up to 2 KB each, hundreds per query): fill_texts() fetches it for
# the few that need it (an L1 hit's overview, what a reranker reads).
RECORD_COLUMNS = [
    "id", "uri", "level", "chunk", "line_start", "line_end", "context_type", "abstract", "tags", "updated_at", "form",
    "place", VECTOR_PENDING,
]  # fmt: skip
# A question naming a day, a month or a year ("on 9 June, 2023") moves this share of each
# hybrid score to how near the record's file time is to it (``dates.nearness``): a session's
# date is its mtime. LoCoMo's dated questions: hit@1 0.814 -> 0.884 (bench/README.md).
DATE_WEIGHT = 0.2
# A memory folder's summary, matching as well as a memory in it, scores this share of that memory's.
MEMORY_FOLDER_SHARE = 0.95


@dataclass(slots=True)
class Candidate:
    """One record on its way to becoming a hit, with the parts of its score."""

    row: dict[str, Any]
    score: float = 0.0
    vector_score: float | None = None
    vector_rank: int | None = None
    keyword_score: float | None = None
    keyword_rank: int | None = None
    summary_score: float | None = None
    summary_rank: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def uri(self) -> str:
        return str(self.row["uri"])


def candidate_count(limit: int) -> int:
    """Records fetched per side: enough for ``NORMALIZE_DEPTH`` URIs once chunks collapse."""
    return min(max(limit, NORMALIZE_DEPTH) * 3, 10_000)


def find(store: LanceStore, embedder: Embedder | None, request: FindRequest, *, explain: bool = False) -> FindResult:
    """A find: the request's hits grouped by context type, with their relations; for no
    hits under ``explain``, what removed the candidates."""
    return found(store, embedder, request, _requested(store, embedder, request), explain=explain)


def record_hits(store: LanceStore, embedder: Embedder | None, request: FindRequest) -> FindResult:
    """The request's best records as hits, best first, several of a file (each scored as find
    scores a file: ``score_candidates(per_record=True)``): what ``context`` packs."""
    hits = _requested(store, embedder, request, per_record=True)
    return FindResult.from_hits([to_matched(hit) for hit in hits])


def _requested(
    store: LanceStore, embedder: Embedder | None, request: FindRequest, *, per_record: bool = False
) -> list[Candidate]:
    return retrieve(
        store,
        embedder,
        request.query,
        request.scope,
        limit=request.limit,
        threshold=request.threshold,
        mode=request.mode,
        translate=request.translate,
        per_record=per_record,
    )


def found(
    store: LanceStore, embedder: Embedder | None, request: FindRequest, hits: list[Candidate], *, explain: bool
) -> FindResult:
    """The result of ``request``'s ``hits``: grouped by context type, with their relations;
    under ``explain``, how many records of each hit wait for their vectors, and for no hits,
    what removed the candidates."""
    if explain:
        mark_pending(store, hits)
    result = FindResult.from_hits(attach_relations(store, [to_matched(h, explain=explain) for h in hits]))
    if explain and result.total == 0:
        from .diagnose import diagnose

        def best(count: int) -> list[Candidate]:
            return score_candidates(
                store, embedder, request.query, request.scope, count, request.mode, translate=request.translate
            )

        result.diagnostics = diagnose(store, request, best)
    return result


def mark_pending(store: LanceStore, hits: list[Candidate]) -> None:
    """Put in each hit's explanation how many records of its URI wait for their vectors (a
    hit found by its words alone so far, whose vector side may change its rank)."""
    waiting = pending_by_uri(store, {hit.uri for hit in hits})
    for hit in hits:
        hit.extra["vectors_pending"] = waiting.get(hit.uri, 0)


def retrieve(
    store: LanceStore,
    embedder: Embedder | None,
    query: str,
    scope: Scope,
    *,
    limit: int,
    threshold: float,
    mode: str = "hybrid",
    query_vector: Any = None,
    translate: bool = True,
    rerank: Callable[[list[Candidate]], None] | None = None,
    per_record: bool = False,
) -> list[Candidate]:
    """Ranked, thresholded, deduplicated candidates (at most ``limit``).

    With ``rerank``, the best ``2 x limit`` candidates, their texts fetched, are handed to it
    to score again in place before the threshold and the cut. With ``per_record``, a candidate
    is a record, not a file (``score_candidates``): ``limit`` records, several of a file.
    """
    if limit <= 0 or not store.has_records:
        return []
    pool_size = 2 * limit if rerank is not None else limit
    candidates = score_candidates(
        store,
        embedder,
        query,
        scope,
        candidate_count(pool_size),
        mode,
        query_vector,
        translate=translate,
        per_record=per_record,
    )
    if rerank is not None:
        candidates = candidates[:pool_size]
        if candidates:
            fill_texts(store, candidates)  # what the reranker reads
            rerank(candidates)
    return finish(store, candidates, limit=limit, threshold=threshold)


def fill_texts(store: LanceStore, candidates: list[Candidate]) -> None:
    """Fetch the record text of candidates that lack it, in one query."""
    missing = [c for c in candidates if "text" not in c.row]
    if not missing:
        return
    rows = store.records_by_id((str(c.row["id"]) for c in missing), ["id", "text"])
    texts = {row["id"]: row["text"] for row in rows}
    for candidate in missing:
        candidate.row["text"] = texts.get(candidate.row["id"]) or ""


def score_candidates(
    store: LanceStore,
    embedder: Embedder | None,
    query: str,
    scope: Scope | None,
    fetch: int,
    mode: str,
    query_vector: Any = None,
    *,
    translate: bool = True,
    per_record: bool = False,
) -> list[Candidate]:
    """Scored candidates of one query, one per record URI, best first, before the threshold.

    Each side's list is first reduced to its best record per URI, so that a file's rank
    on a side is its best chunk's, and many chunks of one file do not crowd the others out.

    With ``per_record``, one candidate per record instead (keyed by its id), each side's best
    records as they come, for what packs several pieces of one file (``context``): every
    record is scored as a file is, and a summary match adds to every record of its URI.
    """
    found = _Found("id" if per_record else "uri", _as_found if per_record else _best_per_uri)
    depth = max(NORMALIZE_DEPTH, fetch // 3)
    searches: list[Any] = []
    record_columns = store.record_columns(RECORD_COLUMNS)  # a store an older version wrote may lack some
    side = functools.partial(_keyword_side, store, query, scope, fetch, translate)
    if mode in ("keyword", "hybrid"):
        # The records' text and their summaries are searched while the query is embedded and
        # the vector side searched.
        searches = [_POOL.submit(side, "text", record_columns), _POOL.submit(side, "abstract", ["uri"])]
    if mode in ("vector", "hybrid"):
        vector = query_vector if query_vector is not None else embed_query(embedder, query)
        found.add_vector_side(vector_search(store, vector, scope, fetch, record_columns), depth)
    expansion = ""
    if mode in ("keyword", "hybrid"):
        (rows, expansion), (summaries, _) = (search.result() for search in searches)
        found.add_keyword_side(rows, depth)
        found.add_summary_matches(summaries)
    candidates = list(found.by_key.values())
    _score(candidates, mode, query)
    if expansion:
        for item in candidates:
            item.extra["keyword_translation"] = expansion
    _memory_folders_below_their_memories(candidates)
    candidates.sort(key=lambda c: (-c.score, c.uri))  # stable: a URI's records, at a tie, as found
    return candidates


def _keyword_side(
    store: LanceStore, query: str, scope: Scope | None, fetch: int, translate: bool, column: str, columns: list[str]
) -> tuple[list[dict[str, Any]], str]:
    """The BM25 matches of ``query`` on ``column`` (the records' ``text``, or their summaries'
    ``abstract``), and the English glosses added to a Chinese query."""
    expansion = ""
    if translate:
        from .crosslingual import english_terms

        expansion = english_terms(query)  # the dictionary loads here, off the vector side's path
    if column == "text":
        return keyword_search(
            store, query, scope, fetch, columns, expansion=expansion, expansion_weight=TRANSLATION_WEIGHT
        ), expansion
    try:  # the summary part is a refinement: without it, find still answers
        if not store.has_text_index(column):
            return [], expansion  # a store an older version wrote, with no summary index yet
        rows = keyword_search(
            store, query, scope, fetch, columns, expansion=expansion, expansion_weight=TRANSLATION_WEIGHT, column=column
        )
    except OpenVikingError:
        return [], expansion
    return rows, expansion


class _Found:
    """The candidates the two sides found, by URI (or by record id): each side's rank and score
    on them, and their summaries' match."""

    def __init__(self, key: str, best_first: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
        self.key, self.best_first = key, best_first
        self.by_key: dict[str, Candidate] = {}

    def add_vector_side(self, rows: list[dict[str, Any]], depth: int) -> None:
        for rank, row in enumerate(self.best_first(rows)[:depth], start=1):
            similarity = _finite(1.0 - float(row.pop("_distance", 1.0)))
            item = self.by_key.setdefault(row[self.key], Candidate(row))
            item.vector_score, item.vector_rank = similarity, rank

    def add_keyword_side(self, rows: list[dict[str, Any]], depth: int) -> None:
        # A file's keyword score is its best chunk's. Adding its other chunks' scores lost on the
        # conversations (a long file mentioning the words outranks a short answer); BM25 over
        # the whole file as a field gained too little for a second index (bench/README.md).
        for rank, row in enumerate(self.best_first(rows)[:depth], start=1):
            bm25 = _finite(float(row.pop("_score", 0.0)))
            known = self.by_key.get(row[self.key])
            if known is None:
                item = self.by_key[row[self.key]] = Candidate(row)
            elif known.vector_rank is not None and (
                rank < known.vector_rank or (rank == known.vector_rank and row.get("place"))
            ):
                # The hit shows the record of the side that ranks its file higher; at a tie
                # (always, in a search of one file) the vector side's, as on the code questions
                # its lines overlap the answering definition in 18 of 45, the keyword side's in
                # 15; but a document's keyword record, which named the right page in 2 more of
                # the 11 questions over real PDFs and in none fewer (bench/README.md).
                known.row = row
                item = known
            else:
                item = known
            item.keyword_score, item.keyword_rank = bm25, rank

    def add_summary_matches(self, summaries: list[dict[str, Any]]) -> None:
        """A summary match adds to a URI that either side found; it brings no URI of its own."""
        of_uri: dict[str, list[Candidate]] = {}
        for item in self.by_key.values():
            of_uri.setdefault(item.uri, []).append(item)
        for rank, row in enumerate(_best_per_uri(summaries), start=1):
            for found_by_a_side in of_uri.get(row["uri"], ()):
                found_by_a_side.summary_score, found_by_a_side.summary_rank = _finite(float(row["_score"])), rank


def _score(candidates: list[Candidate], mode: str, query: str) -> None:
    """Each candidate's score in ``mode``: one side's, or the two fused (with the nearness of a
    date the query names)."""
    if mode == "vector":
        for item in candidates:
            item.score = max(0.0, min(1.0, item.vector_score or 0.0))
        return
    if mode == "keyword":
        for item, part in zip(candidates, _keyword_parts(candidates), strict=True):
            item.score = part
        return
    vector_parts = _vector_parts(candidates)
    keyword_parts = _keyword_parts(candidates)
    for item, v, k in zip(candidates, vector_parts, keyword_parts, strict=True):
        item.extra = {"vector_part": v, "keyword_part": k}
        vector_weight, keyword_weight = _fusion_weights(item)
        item.score = vector_weight * v + keyword_weight * k
    periods = query_periods(query) if DATE_WEIGHT else []
    if periods:
        for item in candidates:
            near = nearness(periods, _told_of(item.row))
            item.extra["date_part"] = near
            item.score = (1 - DATE_WEIGHT) * item.score + DATE_WEIGHT * near


def _memory_folders_below_their_memories(candidates: list[Candidate]) -> None:
    """A folder of memories is summarised by the titles of the memories in it, so its summary
    matches whatever one of them matches: it is scored just below the best of its memories that
    is a candidate too, and the memory that answers comes first. A folder none of whose memories
    was found keeps its score."""
    folders = [c for c in candidates if c.row.get("context_type") == "memory" and c.row.get("level", 2) < 2]
    if not folders:
        return
    memories = [c for c in candidates if c.row.get("context_type") == "memory" and c.row.get("level", 2) == 2]
    for folder in folders:
        below = str(sidecar_owner(parse(folder.uri))) + "/"
        best = max((m.score for m in memories if m.uri.startswith(below)), default=None)
        if best is not None and folder.score >= best:
            folder.extra["below_its_memories"] = folder.score
            folder.score = best * MEMORY_FOLDER_SHARE


def _fusion_weights(item: Candidate) -> tuple[float, float]:
    """The vector and keyword sides' shares of a hybrid score, by the form of the hit's file (a
    memory's own, not its folder's summary); a record that waits for its vector, which the vector
    side cannot have found, is ranked by what it has: its keyword side alone."""
    row = item.row
    if item.vector_score is None and row.get(VECTOR_PENDING):
        return 0.0, 1.0
    if row.get("form") == FORM_DIALOGUE:
        return DIALOGUE_VECTOR_WEIGHT, DIALOGUE_KEYWORD_WEIGHT
    if row.get("context_type") == "memory" and row.get("level", 2) == 2:
        return MEMORY_VECTOR_WEIGHT, MEMORY_KEYWORD_WEIGHT
    return VECTOR_WEIGHT, KEYWORD_WEIGHT


def _told_of(row: dict[str, Any]) -> datetime | None:
    """The time a record tells of: a memory that starts by naming a day (``8 May, 2023.
    Caroline: ...``) tells of that day, whenever it was added; anything else, its file's time.

    Kept as facts of a conversation, such memories lost the date part to the sessions they came
    from: on LoCoMo-dev a session without the evidence outranked every answering memory in 0.457
    of the questions, 0.428 with this (bench/README.md)."""
    if row.get("context_type") == "memory":
        named = query_periods(str(row.get("abstract") or "")[:40])
        if named:
            return named[0][0]
    when: datetime | None = row.get("updated_at")
    return when


def _vector_parts(candidates: list[Candidate]) -> list[float]:
    """Cosine scaled to [0.05, 1] between the worst and best candidate (spread >= 0.1).

    The worst candidate keeps a little above 0: it was found, and ``--threshold 0`` keeps
    everything that was.
    """
    scores = [c.vector_score for c in candidates if c.vector_score is not None]
    if not scores:
        return [0.0] * len(candidates)
    high = max(scores)
    low = min(min(scores), high - VECTOR_MIN_SPREAD)
    return [
        0.0 if c.vector_score is None else VECTOR_FLOOR + (1 - VECTOR_FLOOR) * (c.vector_score - low) / (high - low)
        for c in candidates
    ]


def _keyword_parts(candidates: list[Candidate]) -> list[float]:
    """BM25 (plus ``SUMMARY_WEIGHT`` x its summary's BM25) divided by the query's best."""
    totals = [(c.keyword_score or 0.0) + SUMMARY_WEIGHT * (c.summary_score or 0.0) for c in candidates]
    best = max(totals, default=0.0)
    return [total / best if best > 0 else 0.0 for total in totals]


def embed_query(embedder: Embedder | None, query: str) -> Any:
    """The query's vector; a very long query is cut to its first ``QUERY_MAX_TOKENS`` tokens."""
    if embedder is None:
        raise ValueError("vector search needs an embedder")
    return embedder.embed_query(embedder.truncate(query, QUERY_MAX_TOKENS))


def _best_per_uri(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each URI's first (best) record, rows arriving best first. A document's record with no
    place of its own (its title and summary) takes the place of its best record that has one,
    so that the hit still names the page or slide to read."""
    kept: dict[str, dict[str, Any]] = {}
    for row in rows:
        best = kept.get(row["uri"])
        if best is None:
            kept[row["uri"]] = row
        elif not best.get("place") and row.get("place") and "best_place" not in best:
            best["best_place"] = row["place"]
    return list(kept.values())


def _as_found(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as a side found them, best first: each record is a candidate of its own."""
    return rows


def finish(store: LanceStore, candidates: list[Candidate], *, limit: int, threshold: float) -> list[Candidate]:
    """Threshold (strict), sort, cut to ``limit``; then fetch the text of the L1 hits (their overview).

    ``candidates`` hold one candidate per URI, as ``score_candidates`` makes them, or one per
    record (``per_record``): a URI's records then keep their order at a tie, and each is kept
    or dropped with its URI's node.
    """
    kept = sorted((item for item in candidates if item.score > threshold), key=lambda c: (-c.score, c.uri))
    # A file's records are written before its node: records whose node is not there are an add
    # still under way in another process (or one that crashed), which no hit may point into.
    hits: list[Candidate] = []
    start = 0
    while len(hits) < limit and start < len(kept):
        batch = kept[start : start + limit - len(hits)]
        start += len(batch)
        stored = store.stored_uris(list(dict.fromkeys(item.uri for item in batch)))
        hits += [item for item in batch if item.uri in stored]
    fill_texts(store, [hit for hit in hits if hit.row.get("level") == 1])
    return hits


def to_matched(item: Candidate, *, explain: bool = False) -> MatchedContext:
    """Upstream's MatchedContext for a candidate (display URI with the level suffix)."""
    row = item.row
    level = int(row.get("level", 2))
    uri = str(row["uri"])
    overview = None
    reason = ""
    if level == 0:
        display = uri.rstrip("/") + "/.abstract.md"
    elif level == 1:
        display = uri.rstrip("/") + "/.overview.md"
        overview = row.get("text") or None
    else:
        display = uri
        if row.get("line_start"):
            reason = f"lines {row['line_start']}-{row['line_end']}"
        elif row.get("chunk") == -1:
            reason = "title and summary"
        if row.get("place"):  # a document's page, slide or sheet, before the lines of its text
            reason = f"{row['place']}, {reason}" if reason else str(row["place"])
        elif row.get("best_place"):
            reason = f"{reason}, best on {row['best_place']}"
    hit = MatchedContext(
        uri=display,
        category=memory_category(uri),
        context_type=row.get("context_type") or "resource",
        level=level,
        score=_finite(item.score),
        abstract=row.get("abstract") or "",
        overview=overview,
        match_reason=reason,
        tags=list(row.get("tags") or []),
        place=row.get("place") or row.get("best_place") or None,
    )
    if explain:
        hit.explain = explanation(item)
    return hit


def memory_category(uri: str) -> str:
    """``preferences`` for ``viking://user/u/memories/preferences/x.md``; ``""`` elsewhere."""
    parts = uri[len("viking://") :].split("/")
    if len(parts) >= 5 and parts[0] == "user" and parts[2] == "memories":
        return parts[3]
    return ""


def explanation(item: Candidate) -> dict[str, Any]:
    """The parts of a hit's score, and its rank on each side."""
    parts: dict[str, Any] = {
        "score": item.score,
        "vector": None if item.vector_rank is None else {"score": item.vector_score, "rank": item.vector_rank},
        "keyword": None if item.keyword_rank is None else {"score": item.keyword_score, "rank": item.keyword_rank},
        "summary": None if item.summary_rank is None else {"score": item.summary_score, "rank": item.summary_rank},
        "record": {
            "level": int(item.row.get("level", 2)),
            "chunk": int(item.row.get("chunk") or 0),
            "lines": [item.row.get("line_start"), item.row.get("line_end")],
            "form": item.row.get("form") or FORM_TEXT,
        },
    }
    parts.update(item.extra)
    return parts


def _finite(value: float) -> float:
    return value if math.isfinite(value) else 0.0


def attach_relations(store: LanceStore, hits: list[MatchedContext]) -> list[MatchedContext]:
    """Fill each hit's ``relations`` with the links out of its URI (one query for all hits)."""
    from openviking.store.relations import links_of_many

    def raw(uri: str) -> str:
        return str(sidecar_owner(parse(uri)))

    links = links_of_many(store, (raw(hit.uri) for hit in hits))
    for hit in hits:
        hit.relations = list(links.get(raw(hit.uri), []))
    return hits
