"""add-resource costs: time, the share spent outside embedding, tokens/s, re-adds, memory.

The English docs are added twice through the real CLI (a fresh process each time, peak
memory from /usr/bin/time when present), then once more through the SDK with the embedder
timed, so the embedding share and tokens/s are measured on the same work.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from . import quality
from .procs import run_cli, timed_add


def run_ingest(work: Path) -> dict[str, Any]:
    source = quality.DOCS / "en"
    store = work / "store-ingest"
    shutil.rmtree(store, ignore_errors=True)
    first, first_peak, added = run_cli(
        ["add-resource", str(source), "--to", "viking://resources/docs", "--store", str(store)]
    )
    again, again_peak, unchanged = run_cli(
        ["add-resource", str(source), "--to", "viking://resources/docs", "--store", str(store)]
    )
    find_seconds, find_peak, _ = run_cli(["find", "how do I authenticate users", "--store", str(store)])

    import openviking as ov

    sdk_store = work / "store-ingest-sdk"
    shutil.rmtree(sdk_store, ignore_errors=True)
    client = ov.OpenViking(path=str(sdk_store))
    stats, timer = timed_add(client, source, "viking://resources/docs")
    client.close()
    return {
        "files": added["added"],
        "cli_first_seconds": round(first, 2),
        "cli_first_peak_rss_mb": first_peak,
        "records_embedded": added["records_embedded"],
        "cli_unchanged_seconds": round(again, 2),
        "cli_unchanged_peak_rss_mb": again_peak,
        "unchanged_share_of_first": round(again / first, 3),
        "unchanged_reported": unchanged["unchanged"],
        "cli_find_seconds": round(find_seconds, 3),
        "cli_find_peak_rss_mb": find_peak,
        "sdk_seconds": stats["seconds"],
        "embed_seconds": stats["embed_seconds"],
        "outside_embedding_share": stats["outside_embedding_share"],
        "embedded_texts": timer.texts,
        "embedded_tokens": timer.tokens,
        "tokens_per_second": round(timer.tokens / timer.seconds) if timer.seconds else None,
    }
