"""Rows of the nodes and records tables: what a file or a directory becomes in them.

A record's id follows from its URI, level and chunk, so writing a file again replaces its
records rather than adding to them. A record is written before its vector (``pend_rows``):
with the stored vector of the same text when there is one, else waiting for the embedding
phase (``vectors.py``) with the text it will embed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from openviking.store.lance import LanceStore
from openviking.store.schema import FORM_CODE, FORM_DIALOGUE, FORM_DOCUMENT, FORM_TEXT, VECTOR_PENDING
from openviking.values.uri import SCHEME, VikingURI

from .chunk import Chunk
from .dialogue import embedded_turns
from .summary import ChildSummary, navigation_text

if TYPE_CHECKING:
    from openviking.models.embedder import Embedder

__all__ = [
    "SUMMARY_CHUNK",
    "directory_records",
    "file_node",
    "file_records",
    "node_row",
    "pend_rows",
    "record_id",
    "record_row",
    "stored_uri",
]

SUMMARY_CHUNK = -1  # chunk number of a file's summary record
# A transcript's chunk is embedded whole (``chunk.DIALOGUE_CHARS`` with its heading), not its
# first 80 tokens: its turns are short and the answer is rarely the first of them.
DIALOGUE_TOKENS = 192


def record_id(uri: str, level: int, chunk: int = 0) -> str:
    """Deterministic id of a record: the same URI, level and chunk always get the same id."""
    return hashlib.md5(f"{uri}#{level}#{chunk}".encode()).hexdigest()


def node_row(uri: VikingURI, *, is_dir: bool, **fields: Any) -> dict[str, Any]:
    """A nodes row: the columns the URI decides, then ``fields``."""
    return {
        "uri": str(uri),
        "parent_uri": str(uri.parent) if uri.parent else None,
        "name": uri.name,
        "is_dir": is_dir,
        "context_type": uri.context_type,
        "depth": uri.depth,
        **fields,
    }


def record_row(uri: VikingURI, level: int, chunk: int, **fields: Any) -> dict[str, Any]:
    """A records row (without its vector): the columns the URI, level and chunk decide, then ``fields``."""
    return {
        "id": record_id(str(uri), level, chunk),
        "uri": str(uri),
        "depth": uri.depth,
        "level": level,
        "chunk": chunk,
        "context_type": uri.context_type,
        **fields,
    }


def stored_uri(uri: str) -> VikingURI:
    """The URI of a stored row's ``uri`` column, split without the checks a user's URI needs
    (a stored URI passed them when it was written)."""
    return VikingURI(tuple(part for part in uri[len(SCHEME) :].split("/") if part))


def file_node(
    uri: VikingURI,
    *,
    text: str,
    summary: str,
    size: int,
    created_at: datetime,
    updated_at: datetime,
    tags: Sequence[str],
    content_hash: str,
    source: str,
    raw: bytes | None = None,
) -> dict[str, Any]:
    """The node of a file: its whole text, its summary as abstract, no overview; a document's
    own bytes (``raw``) beside the text converted from them."""
    return node_row(
        uri,
        is_dir=False,
        content=text,
        abstract=summary,
        overview=None,
        size=size,
        created_at=created_at,
        updated_at=updated_at,
        tags=list(tags),
        content_hash=content_hash,
        source=source,
        raw=raw,
    )


def file_records(
    uri: VikingURI,
    chunks: Sequence[Chunk],
    *,
    title: str,
    summary: str,
    is_code: bool,
    created_at: datetime,
    updated_at: datetime,
    tags: Sequence[str],
    document: bool = False,
) -> tuple[list[dict[str, Any]], list[str], list[int | None]]:
    """The L2 records of a file (without their vectors), the text each one embeds and how many
    of its tokens (None: the embedder's own limit): one a chunk (an empty file gets one of its
    summary or title), under its heading path. Each record carries its file's form, and a
    document's chunk its place (its place also leads its heading path, for the model to read)."""
    form = FORM_CODE if is_code else FORM_DIALOGUE if any(c.dialogue for c in chunks) else FORM_TEXT
    if document:
        form = FORM_DOCUMENT
    pieces = list(chunks) or [Chunk(0, 1, 1, "", summary or title)]
    if len(pieces) > 1 and summary:
        # A file of several chunks also gets a record of its title and first sentences: the
        # vector that best says what the whole page is about (and the one a question in
        # another language meets best). A one-chunk file's chunk already starts that way.
        pieces.insert(0, Chunk(SUMMARY_CHUNK, 0, 0, "", summary))
    rows: list[dict[str, Any]] = []
    inputs: list[str] = []
    windows: list[int | None] = []
    for chunk in pieces:
        heading = _chunk_heading(title, " > ".join(p for p in (chunk.place, chunk.heading) if p))
        body = chunk.text.strip() if is_code else _without_heading_line(chunk.text)
        if chunk.dialogue:
            body = embedded_turns(body)
        windows.append(DIALOGUE_TOKENS if chunk.dialogue else None)
        if chunk.index == SUMMARY_CHUNK:
            inputs.append(chunk.text)
        else:
            inputs.append("\n".join(part for part in (heading, body) if part))
        rows.append(
            record_row(
                uri,
                2,
                chunk.index,
                line_start=chunk.line_start,
                line_end=chunk.line_end,
                text=chunk.text if chunk.index == SUMMARY_CHUNK or not heading else heading + "\n" + chunk.text,
                abstract=summary,
                created_at=created_at,
                updated_at=updated_at,
                tags=list(tags),
                form=form,
                place=chunk.place,
            )
        )
    return rows, inputs, windows


def directory_records(
    uri: VikingURI, summaries: Sequence[ChildSummary], row: dict[str, Any]
) -> list[tuple[dict[str, Any], str]]:
    """The L0 and L1 records of a directory (``row`` is its node, ``summaries`` its entries'),
    each with the text it embeds."""
    return [
        (
            record_row(
                uri,
                level,
                0,
                line_start=0,
                line_end=0,
                text=text,
                abstract=row["abstract"],
                created_at=row["created_at"],
                updated_at=row["updated_at"],
                tags=list(row.get("tags") or []),
                form=FORM_TEXT,
            ),
            embed,
        )
        for level, text, embed in (
            (0, row["abstract"], f"{uri.name}\n{row['abstract']}"),
            (1, row["overview"], navigation_text(uri.name, summaries)),
        )
    ]


def pend_rows(
    store: LanceStore,
    embedder: Embedder,
    rows: list[dict[str, Any]],
    inputs: list[str],
    uris: Iterable[str],
    windows: Sequence[int | None] | None = None,
    *,
    embed_now: bool = False,
) -> int:
    """Fill ``text_hash`` on each row, and its vector where a record at ``uris`` holds one made
    of the same text; every other row waits for its vector (``vector_pending``, with the text to
    embed and how many of its tokens). Returns how many rows wait. ``windows``: the tokens of
    each input to embed where it is not the embedder's limit. With ``embed_now`` (a reindex,
    whose work is the embedding itself) no row waits: the vectors are made here, and the count
    returned is of the texts the embedder read."""
    spans = token_spans(embedder, windows, len(inputs))
    hashes = [input_hash(text, span) for text, span in zip(inputs, spans, strict=True)]
    reusable: dict[str, Any] = {}
    uri_list = list(uris)
    if uri_list and store.has_records:
        for old in store.records_by_uri(uri_list, ["text_hash", "vector"]):
            if old["vector"] is not None:
                reusable[old["text_hash"]] = old["vector"]
    embedded = 0
    if embed_now:
        from .vectors import embed_inputs

        made, embedded = embed_inputs(
            embedder,
            [(h, text, span) for h, text, span in zip(hashes, inputs, spans, strict=True) if h not in reusable],
        )
        reusable.update(made)
    waiting = 0
    for row, text, span, text_hash in zip(rows, inputs, spans, hashes, strict=True):
        vector = reusable.get(text_hash)
        row["text_hash"] = text_hash
        row["vector"] = None if vector is None else [float(x) for x in vector]
        row[VECTOR_PENDING] = vector is None
        row["embed_input"] = text if vector is None else None
        row["embed_tokens"] = span if vector is None else None
        waiting += vector is None
    return embedded if embed_now else waiting


def token_spans(embedder: Embedder, windows: Sequence[int | None] | None, count: int) -> list[int | None]:
    """How many tokens of each input the embedder reads: its limit, or a longer window."""
    limit = embedder.max_tokens
    return [limit if w is None or not limit else max(limit, w) for w in windows or [None] * count]


def input_hash(text: str, tokens: int | None) -> str:
    """What a vector is made of: the text to embed, and how many of its tokens are read (a
    change of ``max_input_tokens`` makes every vector again)."""
    return hashlib.sha1(f"{tokens}\n{text}".encode()).hexdigest()


def _chunk_heading(title: str, heading: str) -> str:
    if not title:
        return heading
    if not heading or heading == title:
        return title
    if heading.startswith(title + " > "):
        return heading
    return f"{title} > {heading}"


def _without_heading_line(text: str) -> str:
    first, _, rest = text.partition("\n")
    return rest.strip() if first.lstrip().startswith("#") else text.strip()
