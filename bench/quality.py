"""Retrieval quality: Cranfield (graded nDCG@10) and the OpenViking docs question sets.

Every system runs on the same documents in one run: openviking's find in each mode, and
bm25s (BM25 over the same texts) as the lexical peer.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .metrics import hit_at_1, mrr_at_k, ndcg_at_k, percentile, recall_at_k

# The corpora: ../shared/data beside the repository, or where OPENVIKING_BENCH_DATA says (a worktree elsewhere).
BESIDE = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
DATA = Path(os.environ.get("OPENVIKING_BENCH_DATA") or BESIDE)
DOCS = DATA / "openviking-docs"
QUERIES = Path(__file__).resolve().parent / "queries"
MODES = ("hybrid", "vector", "keyword")


@dataclass
class Scores:
    """Mean metrics of one system on one query set, plus per-query latencies."""

    system: str
    dataset: str
    metrics: dict[str, float] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    per_query: dict[str, float] = field(default_factory=dict)  # query id -> nDCG@10

    def row(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dataset": self.dataset, "system": self.system}
        out.update({k: round(v, 4) for k, v in self.metrics.items()})
        if self.latencies:
            out["p50_ms"] = round(percentile(self.latencies, 50) * 1000, 1)
            out["p95_ms"] = round(percentile(self.latencies, 95) * 1000, 1)
        out["ndcg_by_query"] = {qid: round(value, 4) for qid, value in self.per_query.items()}
        return out


def cranfield_docs() -> list[dict[str, str]]:
    return [json.loads(line) for line in (DATA / "cranfield" / "corpus.jsonl").open(encoding="utf-8")]


def cranfield_queries() -> list[dict[str, str]]:
    return [json.loads(line) for line in (DATA / "cranfield" / "queries.jsonl").open(encoding="utf-8")]


def cranfield_qrels() -> dict[str, dict[str, float]]:
    qrels: dict[str, dict[str, float]] = {}
    lines = (DATA / "cranfield" / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]
    for line in lines:
        qid, doc, grade = line.split("\t")
        qrels.setdefault(qid, {})[doc] = float(grade)
    return qrels


def write_cranfield_tree(folder: Path) -> Path:
    """One text file per Cranfield document (``0001.txt``), the unit add-resource works on."""
    folder.mkdir(parents=True, exist_ok=True)
    for doc in cranfield_docs():
        (folder / f"{int(doc['id']):04d}.txt").write_text(doc["text"].strip() + "\n", encoding="utf-8")
    return folder


def cranfield_id(uri: str) -> str | None:
    name = uri.rsplit("/", 1)[-1]
    return str(int(name[:-4])) if name.endswith(".txt") and name[:-4].isdigit() else None


def evaluate(
    system: str,
    dataset: str,
    queries: Iterable[tuple[str, str, dict[str, float]]],
    search: Callable[[str], list[str]],
) -> Scores:
    """Run ``search`` on each (id, text, grades) and average the metrics."""
    scores = Scores(system, dataset)
    totals: dict[str, float] = {"ndcg@10": 0.0, "recall@10": 0.0, "hit@1": 0.0, "mrr@10": 0.0}
    count = 0
    for qid, text, grades in queries:
        started = time.perf_counter()
        ranked = search(text)
        scores.latencies.append(time.perf_counter() - started)
        relevant = {doc for doc, grade in grades.items() if grade > 0}
        scores.per_query[qid] = ndcg_at_k(ranked, grades, 10)
        totals["ndcg@10"] += scores.per_query[qid]
        totals["recall@10"] += recall_at_k(ranked, relevant, 10)
        totals["hit@1"] += hit_at_1(ranked, relevant)
        totals["mrr@10"] += mrr_at_k(ranked, relevant, 10)
        count += 1
    scores.metrics = {k: v / max(count, 1) for k, v in totals.items()}
    scores.metrics["queries"] = count
    return scores


def paired_gap(
    first: dict[str, float], second: dict[str, float], pairs: dict[str, str], *, samples: int = 10_000
) -> dict[str, Any]:
    """How much ``second`` falls short of ``first`` on the same questions (``pairs``: first's
    id -> second's): the mean nDCG@10 difference, a 95 % paired bootstrap interval of it (fixed
    seed), and how many questions each side answers better. An interval that holds 0 means the
    question set cannot tell the two apart."""
    import random

    differences = [first[a] - second[b] for a, b in pairs.items() if a in first and b in second]
    if not differences:
        return {"questions": 0}
    draw = random.Random(5)
    means = sorted(sum(draw.choice(differences) for _ in differences) / len(differences) for _ in range(samples))
    return {
        "questions": len(differences),
        "gap": round(sum(differences) / len(differences), 4),
        "gap_95": [round(means[int(0.025 * samples)], 4), round(means[int(0.975 * samples) - 1], 4)],
        "first_better": sum(d > 1e-9 for d in differences),
        "second_better": sum(d < -1e-9 for d in differences),
        "same": sum(abs(d) <= 1e-9 for d in differences),
    }


def bm25s_search(docs: list[tuple[str, str]]) -> Callable[[str], list[str]]:
    """A bm25s index over (id, text) pairs: English stop words and Snowball stemming (PyStemmer)."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    ids = [doc_id for doc_id, _ in docs]
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize([text for _, text in docs], stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )

    def search(query: str) -> list[str]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        results, _ = retriever.retrieve(tokens, k=min(10, len(ids)), show_progress=False)
        return [ids[int(i)] for i in results[0]]

    return search


def docs_queries(name: str) -> list[tuple[str, str, dict[str, float]]]:
    path = QUERIES / f"{name}.jsonl"
    out = []
    for line in path.open(encoding="utf-8"):
        item = json.loads(line)
        out.append((item["id"], item["query"], dict.fromkeys(item["relevant"], 1.0)))
    return out


def docs_texts(language: str) -> list[tuple[str, str]]:
    root = DOCS
    return [(str(p.relative_to(root)), p.read_text(encoding="utf-8")) for p in sorted((root / language).rglob("*.md"))]


# ---------------------------------------------------------------------------- code
# Python's own standard library is the code corpus: every machine that runs the bench has it,
# and a 3.11 patch release moves lines, not the functions the questions are about.
CODE_FILES = (
    "argparse.py ast.py asyncio/queues.py asyncio/tasks.py base64.py bisect.py calendar.py "
    "collections/__init__.py concurrent/futures/_base.py concurrent/futures/thread.py configparser.py "
    "contextlib.py copy.py csv.py dataclasses.py datetime.py difflib.py enum.py fnmatch.py fractions.py "
    "ftplib.py functools.py getopt.py glob.py gzip.py heapq.py http/client.py http/cookiejar.py "
    "http/cookies.py http/server.py inspect.py ipaddress.py json/__init__.py json/decoder.py "
    "json/encoder.py json/scanner.py logging/__init__.py logging/config.py logging/handlers.py os.py "
    "pathlib.py posixpath.py pprint.py queue.py random.py sched.py shlex.py shutil.py smtplib.py "
    "socketserver.py statistics.py string.py subprocess.py tarfile.py tempfile.py textwrap.py "
    "threading.py tokenize.py traceback.py unittest/case.py unittest/mock.py urllib/parse.py "
    "urllib/request.py uuid.py weakref.py zipfile.py"
).split()


def stdlib_root() -> Path:
    import sysconfig

    return Path(sysconfig.get_paths()["stdlib"])


def write_code_tree(folder: Path) -> Path:
    """The standard library's files of ``CODE_FILES``, copied as they are."""
    root = stdlib_root()
    for name in CODE_FILES:
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((root / name).read_bytes())
    return folder


def code_queries() -> list[dict[str, Any]]:
    """Each question with the file that answers it and the lines of the definition that does."""
    import ast

    out = []
    for line in (QUERIES / "code-py.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        tree = ast.parse((stdlib_root() / item["relevant"][0]).read_text(encoding="utf-8"))
        node = _definition(tree, item["symbol"])
        if node is None:
            raise ValueError(f"{item['id']}: {item['symbol']} is not defined in {item['relevant'][0]}")
        item["lines"] = (node.decorator_list[0].lineno if node.decorator_list else node.lineno, node.end_lineno)
        out.append(item)
    return out


def _definition(tree: Any, dotted: str) -> Any:
    import ast

    body, node = tree.body, None
    for name in dotted.split("."):
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        node = next((n for n in body if isinstance(n, kinds) and n.name == name), None)
        if node is None:
            return None
        body = node.body
    return node


def lines_of(match_reason: str) -> tuple[int, int] | None:
    """The line span a hit names ("lines 12-40"), or None for a whole-file hit."""
    import re

    found = re.search(r"lines (\d+)-(\d+)", match_reason)
    return (int(found.group(1)), int(found.group(2))) if found else None


def span_hits(
    hits: list[tuple[str, tuple[int, int] | None]], relevant: str, lines: tuple[int, int]
) -> dict[str, float]:
    """Whether the first hit in the right file points into the definition that answers (its
    line span overlaps the definition's), and whether any of the top 3 hits does."""
    overlapping = [
        uri == relevant and span is not None and span[0] <= lines[1] and lines[0] <= span[1] for uri, span in hits
    ]
    first_in_file = next((i for i, (uri, _) in enumerate(hits) if uri == relevant), None)
    return {
        "span@file": float(first_in_file is not None and overlapping[first_in_file]),
        "span@3": float(any(overlapping[:3])),
    }
