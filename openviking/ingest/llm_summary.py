"""Directory summaries written by the configured LLM (``vlm``), in prompts of our own.

Without an LLM, a directory's L0 and L1 are extractive (summary.py). With one, a write first
stores the extractive text, and then, with the store's lock released, the model reads each
changed directory's name, the description it was made with and what its entries are about,
and writes both (pipeline.write_llm_summaries). A directory whose entries did not change keeps
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

from .summary import ChildSummary, truncate_generated

if TYPE_CHECKING:
    from openviking.models.llm import ChatModel

__all__ = ["DirectorySummaryWriter"]

# What the model reads of the entries: enough for a folder of a few hundred files.
ENTRIES_MAX_CHARS = 12_000

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
