"""Directory summaries written by the configured LLM (``vlm``) after a write, in prompts of our own.

Without an LLM, a directory's L0 and L1 are extractive (summary.py). With one, a write first
stores the extractive text, and then, with the store's lock released, the model reads each
changed directory's name, the description it was made with and what its entries are about,
and writes both (``write_llm_summaries``). A directory whose entries did not change keeps
the text the model wrote, so re-adding an unchanged tree asks the model nothing. The first
failure (server down, slow, a reply that is not the JSON asked for) is reported once, and the
rest keep their extractive text until a later write asks again: a write never fails because
the summary writer did.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from openviking.errors import OpenVikingError
from openviking.store.lance import LanceStore
from openviking.store.schema import NODE_COLUMNS, RECORDS

from .directories import LLM_WRITTEN, DirectoryDraft, store_directories
from .rows import directory_records, stored_uri
from .summary import ChildSummary, truncate_generated

if TYPE_CHECKING:
    from openviking.models.embedder import Embedder
    from openviking.models.llm import ChatModel
    from openviking.values.uri import VikingURI

    from .limits import IngestLimits

__all__ = ["DirectorySummaryWriter", "write_llm_summaries"]

# What the model reads of the entries: enough for a folder of a few hundred files.
ENTRIES_MAX_CHARS = 12_000
SUMMARY_WRITERS = 4  # directories whose summaries the LLM writes at once

_INSTRUCTIONS = """You summarise one folder of a knowledge base that an AI agent searches and browses.
Reply with one JSON object and nothing else: {{"abstract": "...", "overview": "..."}}.
- abstract: one or two plain sentences, at most {abstract_max} characters, saying what the folder holds and \
what it is useful for. No Markdown, no list of file names.
- overview: Markdown of at most {overview_max} characters. Start with the line "# {name}", then a short \
paragraph on the folder as a whole, then one line per entry, "- name: what it covers" (folders end with /), \
in the order given.
Use only what the entries say; do not invent features. Write in the language most of the entries are \
written in."""


class DirectorySummaryWriter:
    """Writes directories' L0/L1 with a chat model, falling back to the extractive text.

    Args:
        chat: the configured ``vlm``.
        warn: where the one warning about a failing model goes (None: nowhere).
    """

    def __init__(self, chat: ChatModel, warn: Callable[[str], None] | None = None) -> None:
        self.chat = chat
        self.warn = warn
        self.failed = False
        self.pending: set[str] = set()  # directories whose summaries a write left to the model
        self._lock = threading.Lock()  # directories of one depth are written side by side: one warning

    def write(
        self,
        uri: str,
        name: str,
        description: str,
        children: Sequence[ChildSummary],
        described: str,
        limits: tuple[int, int],
    ) -> tuple[str, str] | None:
        """(abstract, overview) of the directory at ``uri``, None once the model has failed.
        ``described`` is the abstract made of the user's description, which stays."""
        if self.failed:
            return None
        abstract_max, overview_max = limits
        messages = [
            {
                "role": "system",
                "content": _INSTRUCTIONS.format(name=name, abstract_max=abstract_max, overview_max=overview_max),
            },
            {"role": "user", "content": _folder_text(uri, description, children)},
        ]
        try:
            reply = self.chat.complete(messages)
            abstract, overview = _parse_reply(reply)
        except OpenVikingError as exc:
            self.give_up(exc.message)
            return None
        except ValueError as exc:
            self.give_up(f"its reply is not the JSON asked for ({exc})")
            return None
        return described or truncate_generated(abstract, abstract_max), _cut_overview(overview, overview_max)

    def give_up(self, why: str) -> None:
        """Stop asking the model for the rest of this write, and say why once."""
        with self._lock:
            first, self.failed = not self.failed, True
        if first and self.warn is not None:
            self.warn(
                f"The LLM (vlm) did not write a directory summary: {why}. "
                "The rest keep their extractive summaries for now."
            )


def _folder_text(uri: str, description: str, children: Sequence[ChildSummary]) -> str:
    lines = [f"Folder: {uri}"]
    if description:
        lines.append(f"Its owner describes it as: {description}")
    lines.append(f"Entries ({len(children)}):")
    used = sum(len(line) for line in lines)
    for shown, child in enumerate(children):
        entry = f"- {child.name}{'/' if child.is_dir else ''}: {' '.join(child.summary.split()) or '(no summary)'}"
        if used + len(entry) > ENTRIES_MAX_CHARS:
            lines.append(f"... and {len(children) - shown} more entries")
            break
        lines.append(entry)
        used += len(entry)
    return "\n".join(lines)


def _parse_reply(reply: str) -> tuple[str, str]:
    """The two texts of a reply that holds a JSON object (bare, or in a Markdown code block)."""
    start = reply.find("{")
    if start < 0:
        raise ValueError("no JSON object")
    try:
        data, _ = json.JSONDecoder().raw_decode(reply[start:])
    except json.JSONDecodeError as exc:
        raise ValueError(exc.msg) from None
    if not isinstance(data, dict):
        raise ValueError("not an object")
    abstract, overview = data.get("abstract"), data.get("overview")
    if not isinstance(abstract, str) or not abstract.strip():
        raise ValueError("no abstract")
    if not isinstance(overview, str) or not overview.strip():
        raise ValueError("no overview")
    return " ".join(abstract.split()), overview.strip()


def _cut_overview(overview: str, limit: int) -> str:
    """``overview`` within ``limit`` characters, cut after a whole line where it can be."""
    if len(overview) <= limit:
        return overview
    cut = overview[:limit]
    line_end = cut.rfind("\n")
    return cut[:line_end].rstrip() if line_end > limit // 2 else truncate_generated(overview, limit)


def write_llm_summaries(store: LanceStore, embedder: Embedder, limits: IngestLimits) -> int:
    """Have the configured LLM write the summaries of the directories the write left to it
    (``limits.summary_writer.pending``); how many it wrote.

    It runs after the write, with the store's lock released while the model thinks: deepest
    first, the directories of one depth side by side. Under the lock again, a text is stored
    only if the directory's entries are still those it was made from (another process may
    have changed them meanwhile: then its own write asks again). Each directory the model
    wrote makes its parent's summary stale, so the parent is written next.
    """
    writer = limits.summary_writer
    if writer is None:
        return 0
    assert isinstance(writer, DirectorySummaryWriter), writer  # the only queue a write is given
    written = 0
    scope_roots: set[str] = set()
    while writer.pending and not writer.failed:
        level = _take_deepest(writer)
        drafts = [d for d in (_read_draft(store, uri, limits) for uri in level) if d is not None and d.wants_writer]
        texts = _ask_writer(writer, drafts, limits)
        with store.write_lock():
            if _records_moved(store, embedder):
                break  # a reindex in another process moved the records meanwhile: the next write asks again
            for uri in _store_texts(store, embedder, drafts, texts, limits):
                written += 1
                parent = uri.parent
                if parent is not None and parent.depth >= 2:
                    writer.pending.add(str(parent))
                elif parent is not None and not parent.is_root:
                    scope_roots.add(str(parent))
    if scope_roots:
        _refresh_scope_roots(store, sorted(scope_roots), limits)
    return written


def _take_deepest(writer: DirectorySummaryWriter) -> list[str]:
    """Take the deepest of the directories pending off ``writer.pending``, sorted."""
    depth = max(uri.count("/") for uri in writer.pending)
    level = sorted(uri for uri in writer.pending if uri.count("/") == depth)
    writer.pending.difference_update(level)
    return level


def _records_moved(store: LanceStore, embedder: Embedder) -> bool:
    """Under the write lock: the store's records are no longer those of ``embedder``."""
    meta = store.meta()
    return meta.get("embedder") != embedder.identity or (meta.get("records_table") or RECORDS) != store.records_table


def _store_texts(
    store: LanceStore,
    embedder: Embedder,
    drafts: list[DirectoryDraft],
    texts: list[tuple[str, str] | None],
    limits: IngestLimits,
) -> list[VikingURI]:
    """Under the write lock: store each text the LLM wrote whose directory's entries are still
    those of its draft; the URIs of the directories stored."""
    rows, records, inputs, stored = [], [], [], []
    for draft, text in zip(drafts, texts, strict=True):
        now = _read_draft(store, str(draft.uri), limits)
        if text is None or now is None or now.node is None or now.digest != draft.digest:
            continue
        # The node as it is now (another write may have changed its tags or times): only the texts are new.
        row = {**now.node, "abstract": text[0], "overview": text[1], "content_hash": LLM_WRITTEN + now.digest}
        rows.append(row)
        for record, embed in directory_records(now.uri, now.summaries, row):
            records.append(record)
            inputs.append(embed)
        stored.append(draft.uri)
    store_directories(store, embedder, rows, records, inputs)
    return stored


def _refresh_scope_roots(store: LanceStore, uris: list[str], limits: IngestLimits) -> None:
    """The extractive summaries of scope roots whose folders the LLM just summed up anew (a
    scope root's overview lists its folders' abstracts; it has no records)."""
    with store.write_lock():
        roots = [draft for draft in (_read_draft(store, uri, limits) for uri in uris) if draft is not None]
        store.upsert_nodes(
            [
                {**root.node, "abstract": root.abstract, "overview": root.overview, "content_hash": root.digest}
                for root in roots
                if root.node is not None and not root.same_entries
            ]
        )


def _read_draft(store: LanceStore, uri: str, limits: IngestLimits) -> DirectoryDraft | None:
    """The summary draft of the directory at ``uri`` as the store holds it now (None: not a directory)."""
    node = store.get_node(uri, columns=NODE_COLUMNS)
    if node is None or not node["is_dir"]:
        return None
    kids = store.children_of(uri, columns=["uri", "name", "is_dir", "abstract"])
    kids.sort(key=lambda r: (not r["is_dir"], r["name"]))
    return DirectoryDraft.of(stored_uri(uri), node, kids, limits)


def _ask_writer(
    writer: DirectorySummaryWriter, drafts: list[DirectoryDraft], limits: IngestLimits
) -> list[tuple[str, str] | None]:
    """The LLM's (abstract, overview) of each draft, None where it failed; several at a time."""
    if not drafts:
        return []

    def write(draft: DirectoryDraft) -> tuple[str, str] | None:
        return writer.write(
            str(draft.uri),
            draft.uri.name,
            draft.description,
            draft.summaries,
            draft.abstract if draft.description else "",
            (limits.abstract_max_chars, limits.overview_max_chars),
        )

    answers: list[tuple[str, str] | None] = [None] * len(drafts)

    def answer(index: int) -> None:
        try:
            answers[index] = write(drafts[index])
        except Exception as exc:  # noqa: BLE001 - in a thread it would only be printed, as a traceback
            writer.give_up(f"unexpected {type(exc).__name__}")

    # Daemon threads, SUMMARY_WRITERS at a time: after Ctrl-C the process ends at once instead
    # of waiting for the answers still on their way (a pool's threads are joined at exit).
    for start in range(0, len(drafts), SUMMARY_WRITERS):
        threads = [
            threading.Thread(target=answer, args=(index,), daemon=True)
            for index in range(start, min(start + SUMMARY_WRITERS, len(drafts)))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return answers
