"""``python -m bench``: openviking's retrieval quality and speed, side by side with its peers.

    python -m bench quality            # Cranfield + docs question sets, all modes, bm25s
    python -m bench quality --only cranfield
    python -m bench quality --only code   # Python questions over the standard library
    python -m bench quality --only locomo # long-term conversations, per question category
    python -m bench all --out bench/results/latest.json
    python -m bench grepglob --work /tmp/ov-bench   # grep/glob vs rg, fd, Python's glob
    python -m bench ingest-scale --sizes 10000,100000 --local-sizes 10000 --work /tmp/ov-bench
    python -m bench golden --save /tmp/golden.json   # every README command's JSON, for a diff
    python -m bench storage --work /tmp/ov-bench     # object storage (local moto) against local disk
    python -m bench storage --only pinned --work /tmp/ov-bench   # reads as_of a snapshot against now
    python -m bench server --work /tmp/ov-bench      # openviking serve: find over HTTP, --url processes, load
    python -m bench warm --work /tmp/ov-bench        # local service and --batch per call; remote embedding
    python -m bench documents --work /tmp/ov-bench   # PDF/Office/HTML...: find vs bm25s, pages/s vs the converter
    python -m bench sessions --work /tmp/ov-bench-sessions [--only conv-26]   # commit, context vs bm25s
    python -m bench live --work /tmp/ov-bench [--only first]   # an add's first answer; vectors behind
    python -m bench markitdown --suite PATH --work /tmp/ov-bench   # markitdown's test vectors, beside markitdown
    python -m bench watch --work /tmp/ov-bench --embedders hash,local [--only one|checkout]   # save -> find
    python -m bench session-growth --before REF --work /tmp/ov-bench-growth   # one long session, two versions

Stores and generated corpora go to a work directory (``--work``, default a temp dir);
results are printed as a table and written as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import grepglob, ingest_scale, locomo, quality, scale, startup
from . import ingest as ingest_suite
from .procs import timed_add
from .report import print_pairs, print_table

EMBED_TOKENS: int | None = None


def open_client(store: Path) -> Any:
    import openviking as ov
    from openviking.config import config_from_dict

    raw: dict[str, Any] = {}
    if EMBED_TOKENS is not None:
        raw["embedding"] = {"max_input_tokens": EMBED_TOKENS}
    client = ov.OpenViking(path=str(store), config=config_from_dict(raw))
    client.initialize()
    return client


def ingest(client: Any, source: Path, to: str) -> dict[str, Any]:
    return timed_add(client, source, to)[0]


def run_cranfield(work: Path, modes: list[str]) -> dict[str, Any]:
    tree = quality.write_cranfield_tree(work / "cranfield-docs")
    client = open_client(work / "store-cranfield")
    stats = ingest(client, tree, "viking://resources/cranfield")
    qrels = quality.cranfield_qrels()
    queries = [(q["id"], q["text"], qrels.get(q["id"], {})) for q in quality.cranfield_queries()]
    queries = [q for q in queries if q[2]]
    rows = []
    for mode in modes:

        def search(text: str, mode: str = mode) -> list[str]:
            result = client.find(
                text, target_uri="viking://resources/cranfield", limit=10, mode=mode, score_threshold=-1.0
            )
            return [d for d in (quality.cranfield_id(h.uri) for h in result) if d]

        rows.append(quality.evaluate(f"openviking find --mode {mode}", "cranfield", queries, search).row())
    docs = [(d["id"], d["text"]) for d in quality.cranfield_docs()]
    rows.append(quality.evaluate("bm25s (stop words, stemmed)", "cranfield", queries, quality.bm25s_search(docs)).row())
    client.close()
    return {"ingest": stats, "rows": rows}


def run_docs(work: Path, modes: list[str]) -> dict[str, Any]:
    client = open_client(work / "store-docs")
    root = quality.DOCS
    stats = [ingest(client, root / "en", "viking://resources/en"), ingest(client, root / "zh", "viking://resources/zh")]
    rows = []
    sets = {"docs-en": "en", "docs-en-zh": "zh", "docs-zh": "zh", "docs-zh2en": "en", "docs-zh2en-pure": "en"}
    for name, scope in sets.items():
        queries = quality.docs_queries(name)
        prefix = f"viking://resources/{scope}/"

        for mode in modes:

            def search(text: str, mode: str = mode, prefix: str = prefix, scope: str = scope) -> list[str]:
                result = client.find(text, target_uri=prefix.rstrip("/"), limit=10, mode=mode, score_threshold=-1.0)
                return [f"{scope}/" + h.uri[len(prefix) :] for h in result]

            rows.append(quality.evaluate(f"openviking find --mode {mode}", name, queries, search).row())
        rows.append(
            quality.evaluate(
                "bm25s (stop words, stemmed)", name, queries, quality.bm25s_search(quality.docs_texts(scope))
            ).row()
        )
    client.close()
    return {"ingest": stats, "rows": rows, "language_gap": language_gap(rows)}


def run_code(work: Path, modes: list[str]) -> dict[str, Any]:
    """The Python questions over the standard library: the right file (nDCG@10), and whether
    the hit points at the definition that answers (span@file, span@3)."""
    tree = quality.write_code_tree(work / "code-py")
    client = open_client(work / "store-code")
    stats = ingest(client, tree, "viking://resources/py")
    items = quality.code_queries()
    queries = [(q["id"], q["query"], dict.fromkeys(q["relevant"], 1.0)) for q in items]
    prefix = "viking://resources/py/"
    rows = []
    for mode in modes:
        spans: dict[str, list[tuple[str, tuple[int, int] | None]]] = {}

        def search(text: str, mode: str = mode, spans: dict = spans) -> list[str]:
            result = client.find(text, target_uri=prefix.rstrip("/"), limit=10, mode=mode, score_threshold=-1.0)
            spans[text] = [(h.uri[len(prefix) :], quality.lines_of(h.match_reason)) for h in result]
            return [uri for uri, _ in spans[text]]

        row = quality.evaluate(f"openviking find --mode {mode}", "code-py", queries, search).row()
        for metric in ("span@file", "span@3"):
            values = [quality.span_hits(spans[q["query"]], q["relevant"][0], q["lines"])[metric] for q in items]
            row[metric] = round(sum(values) / len(values), 4)
        rows.append(row)
    files = [(name, (tree / name).read_text(encoding="utf-8")) for name in quality.CODE_FILES]
    rows.append(quality.evaluate("bm25s (stop words, stemmed)", "code-py", queries, quality.bm25s_search(files)).row())
    client.close()
    return {"ingest": stats, "rows": rows}


def language_gap(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """docs-en against docs-en-zh (the same questions in Chinese), per system."""
    english = {r["system"]: r["ndcg_by_query"] for r in rows if r["dataset"] == "docs-en"}
    chinese = {r["system"]: r["ndcg_by_query"] for r in rows if r["dataset"] == "docs-en-zh"}
    gaps = []
    for system, by_query in english.items():
        if system in chinese:
            pairs = {qid: qid.replace("en-", "enzh-", 1) for qid in by_query}
            gaps.append({"system": system, **quality.paired_gap(by_query, chinese[system], pairs)})
    return gaps


def run_locomo(work: Path, modes: list[str]) -> dict[str, Any]:
    """The LoCoMo conversations: each session a file, searched per conversation (bench/locomo.py)."""
    return locomo.run(work, open_client, ingest, modes)


def print_locomo(report: dict[str, Any]) -> None:
    print_table(report["rows"], LOCOMO_COLUMNS, title="LoCoMo development conversations, by question category")
    if report.get("margins"):
        print_table(
            report["margins"],
            ["dataset", "metric", "questions", "gap", "gap_95", "first_better", "second_better", "same"],
            title="find --mode hybrid minus bm25s over whole files, 95 % paired bootstrap",
        )
    if report.get("memories"):
        print_pairs("LoCoMo evidence turns as memories", report["memories"])


QUALITY_SETS = ("cranfield", "docs", "code", "locomo")
LIVE_PARTS = ("first", "quality", "fill", "server")
QUALITY_COLUMNS = ["dataset", "system", "ndcg@10", "recall@10", "hit@1", "mrr@10", "p50_ms", "p95_ms", "queries"]
CODE_COLUMNS = [*QUALITY_COLUMNS, "span@file", "span@3"]
LOCOMO_COLUMNS = ["dataset", "system", "hit@1", "recall@5", "mrr@10", "ndcg@10", "p50_ms", "p95_ms", "queries"]


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    if given[:1] == ["golden"]:
        from . import golden

        return golden.main(given[1:])
    if given[:1] == ["reliability"]:
        from . import reliability

        return reliability.main(given[1:])
    if given[:1] == ["session-growth"]:
        from . import session_growth

        return session_growth.main(given[1:])
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "suite",
        choices=[
            "quality",
            "grepglob",
            "ingest",
            "ingest-scale",
            "scale",
            "startup",
            "storage",
            "server",
            "warm",
            "documents",
            "sessions",
            "live",
            "markitdown",
            "watch",
            "all",
        ],  # fmt: skip
        nargs="?",
        default="all",
    )
    parser.add_argument(
        "--only",
        help="quality: one dataset (cranfield, docs, code, locomo); sessions: conversations (conv-26,conv-30); "
        "storage: pinned (the reads as_of a snapshot alone); live: first, quality, fill or server; "
        "warm: per-call (the hyperfine run alone)",
    )
    parser.add_argument("--modes", default=",".join(quality.MODES), help="find modes to compare")
    parser.add_argument("--work", type=Path, help="work directory (default: a new temp dir)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/latest.json"))
    parser.add_argument("--embed-tokens", type=int, help="tokens of each record the local model embeds")
    parser.add_argument("--runs", type=int, default=9, help="grepglob, warm: timed runs per case (medians)")
    parser.add_argument(
        "--sizes",
        default="10000,100000,1000000",
        help="scale, ingest-scale: synthetic store / tree sizes (records), comma-separated",
    )
    parser.add_argument(
        "--local-sizes",
        default="10000",
        help="ingest-scale: sizes also added with the local model (~14 records/s on 2 cores; '' for none)",
    )
    parser.add_argument(
        "--suite",
        dest="suite_path",
        type=Path,
        help="markitdown: its tests folder (packages/markitdown/tests of a checkout)",
    )
    parser.add_argument("--clients", type=int, default=16, help="server: concurrent clients of the load part")
    parser.add_argument("--embedders", default="local", help="watch: the embedders to measure with (hash,local)")
    parser.add_argument("--rounds", type=int, default=3, help="watch: checkouts per embedder")
    parser.add_argument("--seconds", type=float, default=60, help="server: seconds of the load part")
    args = parser.parse_args(argv)
    pinned_only = args.suite == "storage" and args.only == "pinned"
    live_part = args.suite == "live" and args.only in LIVE_PARTS
    watch_only = args.suite == "watch" and args.only in ("one", "checkout")
    per_call_only = args.suite == "warm" and args.only == "per-call"
    named_part = pinned_only or live_part or watch_only or per_call_only
    if args.only and args.suite != "sessions" and not named_part and args.only not in QUALITY_SETS:
        parser.error(f"argument --only: invalid choice: {args.only!r} (choose from {', '.join(QUALITY_SETS)})")
    global EMBED_TOKENS
    EMBED_TOKENS = args.embed_tokens
    work = args.work or Path(tempfile.mkdtemp(prefix="openviking-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    modes = [m for m in args.modes.split(",") if m]
    report: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "work": str(work),
    }
    rows: list[dict[str, Any]] = []
    quality_on = args.suite in ("quality", "all")
    if quality_on and args.only in (None, "cranfield"):
        report["cranfield"] = run_cranfield(work, modes)
        rows += report["cranfield"]["rows"]
        print("cranfield ingest:", json.dumps(report["cranfield"]["ingest"]), file=sys.stderr)
    if quality_on and args.only in (None, "docs"):
        report["docs"] = run_docs(work, modes)
        rows += report["docs"]["rows"]
        for item in report["docs"]["ingest"]:
            print("docs ingest:", json.dumps(item), file=sys.stderr)
    if rows:
        print_table(rows, QUALITY_COLUMNS)
    if quality_on and args.only in (None, "code"):
        report["code"] = run_code(work, modes)
        print("code ingest:", json.dumps(report["code"]["ingest"]), file=sys.stderr)
        print_table(report["code"]["rows"], CODE_COLUMNS, title="Python questions over the standard library")
    if quality_on and args.only in (None, "locomo"):
        report["locomo"] = run_locomo(work, modes)
        print("locomo ingest:", json.dumps(report["locomo"]["ingest"]), file=sys.stderr)
        print_locomo(report["locomo"])
    if report.get("docs", {}).get("language_gap"):
        print_table(
            report["docs"]["language_gap"],
            ["system", "questions", "gap", "gap_95", "first_better", "second_better", "same"],
            title="nDCG@10 of docs-en minus docs-en-zh (the same questions in Chinese), 95 % paired bootstrap",
        )
    if args.suite in ("grepglob", "all"):
        report["grepglob"] = grepglob.run(work, runs=args.runs)
        report["grepglob"]["command"] = "python -m bench " + " ".join(sys.argv[1:] if argv is None else argv)
        grepglob.print_report(report["grepglob"])
    if args.suite in ("documents", "all"):
        from . import documents

        report["documents"] = documents.run(work)
        documents.print_report(report["documents"])
    if args.suite in ("startup", "all"):
        report["startup"] = startup.run()
        startup.print_report(report["startup"])
    if args.suite in ("ingest", "all"):
        report["ingest"] = ingest_suite.run_ingest(work)
        print_pairs("ingest (English docs, 90 files)", report["ingest"])
    sizes = tuple(int(s) for s in args.sizes.split(",") if s)
    if args.suite == "ingest-scale":  # not in `all`: 1M records take about 13 minutes and 12.5 GB
        local_sizes = tuple(int(s) for s in args.local_sizes.split(",") if s)
        report["ingest_scale"] = ingest_scale.run_ingest_scale(work, sizes, local_sizes)
        ingest_scale.print_report(report["ingest_scale"])
    if args.suite == "storage":  # not in `all`: it starts its own S3 server and 45 writer processes
        from . import storage

        report["storage"] = storage.run(work, only="pinned" if pinned_only else None)
        storage.print_report(report["storage"])
    if args.suite == "server":  # not in `all`: it runs a server and a minute of load
        from . import server

        report["server"] = server.run(work, clients=args.clients, seconds=args.seconds)
    if args.suite == "warm":  # not in `all`: it starts a local service and runs some 600 processes
        from . import warm

        report["warm"] = warm.run(work, runs=args.runs, only="per-call" if per_call_only else None)
    if args.suite == "sessions":  # not in `all`: five conversations played and asked take 20-40 minutes
        from . import sessions

        report["sessions"] = sessions.run(work, args.only)
        sessions.print_report(report["sessions"])
    if args.suite == "live":  # not in `all`: it adds the docs several times and waits for every vector
        from . import live

        report["live"] = live.run(work, args.only)
        live.print_report(report["live"])
    if args.suite == "markitdown":  # not in `all`: it needs markitdown's test suite, fetched
        from . import markitdown

        if args.suite_path is None or not (args.suite_path / "test_files").is_dir():
            parser.error("markitdown needs --suite PATH, the tests folder of markitdown's source")
        report["markitdown"] = markitdown.run(args.suite_path, work)
        markitdown.print_report(report["markitdown"])
    if args.suite == "watch":  # not in `all`: a thousand files re-embedded per checkout with the local model
        from . import watch

        report["watch"] = watch.run(work, args.embedders.split(","), args.only, rounds=args.rounds)
        watch.print_report(report["watch"])
    if args.suite in ("scale", "all"):
        report["scale"] = scale.run_scale(work, sizes)
        scale.print_report(report["scale"])
    report["command"] = "python -m bench " + " ".join(sys.argv[1:] if argv is None else argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nwritten: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
