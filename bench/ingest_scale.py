"""add-resource at scale: wall time and peak memory of adding trees of 10k, 100k and 1M records.

Each size is a generated tree of markdown files under ``--work`` (``ingest-scale/tree-N``):
sections of Cranfield sentences and English docs paragraphs, recombined with a fixed seed,
under Cranfield titles and docs headings, 100 files a folder, 50 folders a group. Sections
are 500-1,500 characters, so each is one chunk (``openviking/ingest/chunk.py``); the tree is
cut where its records reach N, counted as the pipeline counts them: each chunk of a file,
plus a title/first-sentences record for a file of several chunks, plus two (L0 and L1) for
every directory below ``viking://resources``. The store's own count after the run is reported
next to it.

Each size is added by a fresh ``openviking add-resource`` process (peak RSS from
``/usr/bin/time``) into a new store. The scale sizes use the built-in ``hash`` embedder at 384
dimensions (the local model's width), reading 80 words of each text (the local model reads
80 tokens): the local model embeds ~14 records/s on 2 cores, so 1M records would take about
a day. Those rows measure the pipeline's own cost (walk, chunk, batches, LanceDB writes,
index build after the bulk writes) with the model's memory and time left out. ``--local-sizes``
adds the same trees with the local model (default 10k), for the whole cost.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from . import quality
from .procs import run_cli
from .report import print_table

SIZES = (10_000, 100_000, 1_000_000)
LOCAL_SIZES = (10_000,)
FILES_PER_DIR = 100
DIRS_PER_GROUP = 50
SECTION_CHARS = (500, 1500)  # within chunk.py's MIN_CHARS..MAX_CHARS: one chunk a section
TREE_VERSION = 1
TARGET = "viking://resources/scale"
EMBEDDERS: dict[str, dict[str, Any]] = {
    "hash": {"embedding": {"dense": {"provider": "hash", "dimension": 384}, "max_input_tokens": 80}},
    "local": {"embedding": {"dense": {"provider": "local"}}},
}
COLUMNS = [
    "size",
    "embedder",
    "records",
    "records_embedded",
    "files",
    "dirs",
    "source_mb",
    "wall_s",
    "add_s",
    "records_per_s",
    "peak_rss_mb",
    "store_mb",
]


class TextPool:
    """Sentences, paragraphs and headings to recombine: Cranfield abstracts and the English docs."""

    def __init__(self) -> None:
        self.sentences: list[str] = []
        self.titles: list[str] = []
        for doc in quality.cranfield_docs():
            title = doc.get("title", "").strip().rstrip(" .")
            if 3 <= len(title.split()) <= 14:
                self.titles.append(_sentence_case(title))
            for part in re.split(r"\s+\.\s+|\s+\.$", doc["text"]):
                words = part.split()
                if len(words) >= 6:
                    self.sentences.append(_sentence_case(" ".join(words)) + ".")
        self.paragraphs: list[str] = []
        self.headings: list[str] = []
        for _, text in quality.docs_texts("en"):
            self._read_markdown(text)

    def _read_markdown(self, text: str) -> None:
        text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.S | re.M)  # code blocks
        for block in re.split(r"\n\s*\n", text):
            stripped = block.strip()
            if stripped.startswith("#") and "\n" not in stripped:
                heading = stripped.lstrip("#").strip()
                if 1 <= len(heading.split()) <= 8:
                    self.headings.append(heading)
            elif 120 <= len(stripped) <= 900 and not stripped.startswith(("|", "-", "*", "<", "!", ">", "1.", "#")):
                self.paragraphs.append(" ".join(stripped.split()))

    def paragraph(self, rng: random.Random) -> str:
        if rng.random() < 0.25:
            return rng.choice(self.paragraphs)
        return " ".join(rng.choice(self.sentences) for _ in range(rng.randint(2, 5)))

    def section(self, rng: random.Random) -> str:
        target = rng.randint(*SECTION_CHARS)
        parts: list[str] = []
        size = 0
        while size < SECTION_CHARS[0] or size < target:
            part = self.paragraph(rng)
            if size + len(part) + 2 > SECTION_CHARS[1]:
                if size >= SECTION_CHARS[0]:
                    break
                part = part[: SECTION_CHARS[1] - size - 2].rsplit(" ", 1)[0] + "."
            parts.append(part)
            size += len(part) + 2
        return "\n\n".join(parts)

    def heading(self, rng: random.Random) -> str:
        if rng.random() < 0.5:
            return rng.choice(self.headings)
        return " ".join(rng.choice(self.titles).split()[:6])


def _sentence_case(text: str) -> str:
    return text[:1].upper() + text[1:]


def _slug(text: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())[:5])[:40] or "note"


def file_records(text: str, name: str) -> int:
    """Records add-resource makes of one file: its chunks, plus a summary record when there are several."""
    from openviking.ingest.chunk import chunk_text, is_markdown
    from openviking.ingest.summary import file_summary, file_title

    chunks = len(chunk_text(text, markdown=is_markdown(name)))
    if chunks > 1 and file_summary(text, name, 256, title=file_title(text, name)):
        return chunks + 1
    return max(chunks, 1)


def write_tree(folder: Path, size: int, pool: TextPool | None = None, seed: int = 11) -> dict[str, Any]:
    """A tree whose add-resource makes about ``size`` records (re-used when already written)."""
    marker = folder / ".bench-tree.json"  # hidden: add-resource skips it
    if marker.exists():
        info = json.loads(marker.read_text())
        if info.get("size") == size and info.get("seed") == seed and info.get("version") == TREE_VERSION:
            return info
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    pool = pool or TextPool()
    rng = random.Random(seed)
    records = 2  # the tree's root directory
    files = dirs = groups = 0
    source_bytes = 0
    leaf = folder
    while records < size:
        if files % (FILES_PER_DIR * DIRS_PER_GROUP) == 0:
            group = folder / f"g{groups:02d}-{_slug(pool.heading(rng))}"
            groups += 1
            records += 2
        if files % FILES_PER_DIR == 0:
            leaf = group / f"d{dirs:04d}-{_slug(pool.heading(rng))}"
            leaf.mkdir(parents=True)
            dirs += 1
            records += 2
        title = rng.choice(pool.titles)
        sections = rng.choice((1, 1, 2, 3, 3, 4, 4, 5, 6, 8))
        parts = [f"# {title}", pool.section(rng)]
        for _ in range(sections - 1):
            parts += [f"## {pool.heading(rng)}", pool.section(rng)]
        text = "\n\n".join(parts) + "\n"
        name = f"{files:06d}-{_slug(title)}.md"
        data = text.encode("utf-8")
        (leaf / name).write_bytes(data)
        records += file_records(text, name)
        source_bytes += len(data)
        files += 1
    info = {
        "size": size,
        "seed": seed,
        "version": TREE_VERSION,
        "expected_records": records,
        "files": files,
        "dirs": dirs + groups + 1,
        "source_bytes": source_bytes,
    }
    marker.write_text(json.dumps(info))
    return info


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def add_tree(work: Path, size: int, embedder: str, tree: Path, info: dict[str, Any]) -> dict[str, Any]:
    """One fresh ``openviking add-resource`` process into a new store: wall time, peak RSS, counts."""
    from openviking.store.lance import LanceStore

    config = work / f"{embedder}.json"
    config.write_text(json.dumps(EMBEDDERS[embedder]))
    store_path = work / f"store-{embedder}-{size}"
    shutil.rmtree(store_path, ignore_errors=True)
    row: dict[str, Any] = {
        "size": size,
        "embedder": embedder,
        "expected_records": info["expected_records"],
        "files": info["files"],
        "dirs": info["dirs"],
        "source_mb": round(info["source_bytes"] / 1e6, 1),
    }
    free = shutil.disk_usage(work).free
    if free < 10 * info["source_bytes"]:
        row["not_run"] = f"{free / 1e9:.1f} GB free under {work}, under 10x the {row['source_mb']} MB source"
        return row
    seconds, peak, result = run_cli(
        ["add-resource", str(tree), "--to", TARGET, "--store", str(store_path), "--config", str(config)]
    )
    with LanceStore.open(str(store_path)) as store:
        records = store.count_records()
        vector_index = store.has_vector_index()
        identity = store.meta().get("embedder", "")
    row.update(
        {
            "records": records,
            "records_embedded": result["records_embedded"],
            "added": result["added"],
            "directories": result["directories"],
            "wall_s": round(seconds, 1),
            "add_s": result["seconds"],
            "records_per_s": round(records / seconds, 1),
            "peak_rss_mb": peak,
            "store_mb": round(_du(store_path) / 1e6, 1),
            "vector_index": vector_index,
            "embedder_identity": identity,
        }
    )
    shutil.rmtree(store_path, ignore_errors=True)  # 1M records hold several GB
    return row


def run_ingest_scale(
    work: Path, sizes: tuple[int, ...] = SIZES, local_sizes: tuple[int, ...] = LOCAL_SIZES
) -> dict[str, Any]:
    work = work / "ingest-scale"
    work.mkdir(parents=True, exist_ok=True)
    pool = TextPool()
    rows = []
    for embedder, wanted in (("hash", sizes), ("local", local_sizes)):
        for size in wanted:
            tree = work / f"tree-{size}"
            info = write_tree(tree, size, pool)
            row = add_tree(work, size, embedder, tree, info)
            rows.append(row)
            print("ingest-scale:", json.dumps(row), file=sys.stderr, flush=True)
    return {
        "target": TARGET,
        "embedders": EMBEDDERS,
        "note": (
            "hash rows: built-in hash embedder, 384-d, 80 words of each text; they measure the "
            "pipeline (walk, chunk, batches, LanceDB writes, index build) without the model's memory or time"
        ),
        "rows": rows,
    }


def print_report(report: dict[str, Any]) -> None:
    title = "add-resource at scale (fresh CLI process each; " + report["note"] + ")"
    print_table(report["rows"], COLUMNS + (["not_run"] if any("not_run" in r for r in report["rows"]) else []), title)
