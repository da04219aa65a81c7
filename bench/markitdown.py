"""markitdown's own test suite, through openviking and beside markitdown: every file of the suite
in a format openviking claims to read, added with ``add-resource`` and read back with ``read``,
each of the suite's test vectors (the strings a converted file must and must not contain)
checked, and markitdown run on the same files in the same run, its text and its time.

    python -m bench markitdown --suite /tmp/markitdown-suite/packages/markitdown/tests

The suite is read from where it was fetched (nothing of it is committed): its
``_test_vectors.py`` and the string checks of its ``test_*.py`` files are read with ``ast``,
never run. A vector is found word for word, found with other formatting (the same words once
markdown's marks, a link's target and the case are set aside), or missing. markitdown is an
optional peer: install it ad hoc (``pip install 'markitdown[docx,pdf,pptx,xls,xlsx]'``); without
it, its columns say so.
"""

from __future__ import annotations

import ast
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The formats openviking claims: documents it converts, text it stores as it is, archives it unpacks.
CLAIMED = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".xls": "xls",
    ".epub": "epub",
    ".html": "html",
    ".ipynb": "ipynb",
    ".rtf": "rtf",
    ".odt": "odt",
    ".ods": "ods",
    ".csv": "csv (text)",
    ".json": "json (text)",
    ".xml": "xml (a feed, or text)",
    ".zip": "zip (archive)",
}
# Vectors that need an option of markitdown's own (images as data: URIs) test that option, not
# the text a file holds.
_OPTION_LISTS = ("DATA_URI_TEST_VECTORS",)
_TEXT_NAMES = ("text_content", "markdown")


@dataclass
class Vector:
    """One string a converted file must (or must not) contain, and where the suite says so."""

    file: str
    text: str
    present: bool = True
    any_case: bool = False  # the suite compares it with the text lowercased
    test: str = ""


@dataclass
class Outcome:
    """How one converter did on one vector."""

    vector: Vector
    verdict: str  # "exact", "formatted", "missing"; a must-not vector: "absent" or "present"


@dataclass
class FileRun:
    """A file's text as a converter gave it, and the seconds it took (openviking: the whole add in
    ``seconds``, the worker's conversion alone in ``converting``)."""

    text: str = ""
    seconds: float = 0.0
    failure: str = ""
    converting: float = 0.0
    outcomes: list[Outcome] = field(default_factory=list)


# ----------------------------------------------------------------------------- the suite's vectors
def suite_vectors(suite: Path) -> list[Vector]:
    """Every vector of the suite at ``suite`` (its ``tests`` folder) on a file it ships."""
    files = {p.name for p in (suite / "test_files").iterdir() if p.is_file()}
    found: list[Vector] = []
    found.extend(_declared_vectors(suite / "_test_vectors.py"))
    for module in sorted(suite.glob("test_*.py")):
        found.extend(_asserted_vectors(module, files))
    unique: dict[tuple[str, str, bool], Vector] = {}
    for vector in found:
        if vector.file in files:
            unique.setdefault((vector.file, vector.text, vector.present), vector)
    return list(unique.values())


def _declared_vectors(path: Path) -> Iterator[Vector]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for statement in tree.body:
        if not isinstance(statement, ast.Assign):
            continue
        names = [t.id for t in statement.targets if isinstance(t, ast.Name)]
        if any(name in _OPTION_LISTS for name in names):
            continue
        for call in ast.walk(statement.value):
            if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "FileTestVector":
                fields = {k.arg: k.value for k in call.keywords if k.arg}
                name = ast.literal_eval(fields["filename"])
                for text in ast.literal_eval(fields.get("must_include") or ast.List([])):
                    yield Vector(name, text, test=f"{path.stem}.{names[0]}")
                for text in ast.literal_eval(fields.get("must_not_include") or ast.List([])):
                    yield Vector(name, text, present=False, test=f"{path.stem}.{names[0]}")


def _string_lists(body: list[ast.stmt]) -> dict[str, list[str]]:
    """The names bound to a string or a list of strings in ``body``'s assignments."""
    bound: dict[str, list[str]] = {}
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                try:
                    value = ast.literal_eval(node.value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    continue
                if isinstance(value, str):
                    bound[node.targets[0].id] = [value]
                elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                    bound[node.targets[0].id] = value
    return bound


def _asserted_vectors(path: Path, files: set[str]) -> Iterator[Vector]:
    """The strings each test function of ``path`` asserts in (or not in) a converted text, for
    the one suite file it converts; a function that converts no file of the suite (a URL, an
    option's test) gives none."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module_lists = _string_lists([s for s in tree.body if isinstance(s, ast.Assign)])
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef) or not function.name.startswith("test"):
            continue
        named = {
            n.value
            for n in ast.walk(function)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in files
        }
        if len(named) != 1:
            continue
        (name,) = named
        lists = {**module_lists, **_string_lists(function.body)}
        loops = {
            loop.target.id: _strings(loop.iter, lists)
            for loop in ast.walk(function)
            if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name)
        }
        test = f"{path.stem}.{function.name}"
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "validate_strings":
                for index, present in ((1, True), (2, False)):
                    if len(node.args) > index:
                        for text in _strings(node.args[index], lists):
                            yield Vector(name, text, present=present, test=test)
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In | ast.NotIn):
                lowered, about_text = _compared_text(node.comparators[0])
                if not about_text:
                    continue
                left = node.left
                values = loops.get(left.id, []) if isinstance(left, ast.Name) and left.id in loops else []
                values = values or _strings(left, lists)
                for text in values:
                    yield Vector(name, text, present=isinstance(node.ops[0], ast.In), any_case=lowered, test=test)


def _strings(node: ast.expr, lists: dict[str, list[str]]) -> list[str]:
    if isinstance(node, ast.Name):
        return lists.get(node.id, [])
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.List | ast.Tuple):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _compared_text(node: ast.expr) -> tuple[bool, bool]:
    """(lowered, about the converted text) for the right side of an ``in``."""
    lowered = False
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "lower":
        node, lowered = node.func.value, True
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return lowered, name in _TEXT_NAMES


# ----------------------------------------------------------------------------- checking a text
_MARKS = re.compile(r"[*_#|`>\\]+|\]\([^)]*\)|\[|\]")


def plain(text: str) -> str:
    """``text`` without markdown's marks, links' targets and case, its whitespace made single."""
    return " ".join(_MARKS.sub(" ", text).split()).lower()


def verdict(vector: Vector, text: str, flat: str) -> str:
    """What ``text`` (and ``flat``, its :func:`plain` form) says of ``vector``."""
    shown = text.replace("\\", "")  # as the suite compares: markdown's escapes set aside
    if vector.any_case:
        shown = shown.lower()
    exact = vector.text in shown
    if not vector.present:
        return "present" if exact else "absent"
    if exact:
        return "exact"
    wanted = plain(vector.text)
    return "formatted" if wanted and wanted in flat else "missing"


def judged(vectors: list[Vector], text: str) -> list[Outcome]:
    flat = plain(text)
    return [Outcome(vector, verdict(vector, text, flat)) for vector in vectors]


# ----------------------------------------------------------------------------- the two converters
def openviking_texts(files: list[Path], work: Path) -> dict[str, FileRun]:
    """Each file added on its own (``add-resource``, the hash embedder: the text does not depend on
    it) and read back (``read``; an archive's files read one after another)."""
    from openviking.config import config_from_dict
    from openviking.embedded.client import OpenViking

    shutil.rmtree(work / "store", ignore_errors=True)
    client = OpenViking(path=str(work / "store"), config=config_from_dict({"embedding": {"provider": "hash"}}))
    client.initialize()
    runs: dict[str, FileRun] = {}
    try:
        for number, path in enumerate(files):
            target = f"viking://resources/suite/f{number}"
            started = time.perf_counter()
            result = client.add_resource(str(path), to=target)
            run = FileRun(seconds=time.perf_counter() - started)
            skipped = [f"{s['code']}: {s['reason']}" for s in result.skipped_files]
            texts = []
            if result.added:
                if client.stat(target)["isDir"]:
                    texts = [client.read(uri) for uri in client.glob("**", uri=target)["matches"]]
                else:
                    texts = [client.read(target)]
            run.text = "\n".join(texts)
            run.failure = "; ".join(skipped) if skipped and not texts else ""
            runs[path.name] = run
    finally:
        client.close()
    return runs


def openviking_conversions(files: list[Path], work: Path) -> tuple[dict[str, float], float]:
    """The seconds of each file's conversion as an add runs it, and no more: a document in the
    conversion worker (one worker for all, started and warmed on the first file before the clock
    runs, as markitdown is imported and built once), a text file decoded, an archive unpacked and
    its members converted. Also the worker's start, apart."""
    from openviking.documents.converter import DocumentConverter
    from openviking.documents.kinds import kind_of
    from openviking.ingest.walk import decode_text
    from openviking.origins.archives import unpack

    converter = DocumentConverter()
    started = time.perf_counter()
    first = next((path for path in files if kind_of(path) == "pdf"), None)
    if first is not None:
        converter.convert(first, "pdf")
    warm = time.perf_counter() - started

    def convert(path: Path) -> None:
        kind = kind_of(path)
        if kind is not None:
            try:
                converter.convert(path, kind)
            except Exception:  # a skipped file took its time too
                pass
        else:
            decode_text(path.read_bytes())

    seconds: dict[str, float] = {}
    try:
        for path in files:
            started = time.perf_counter()
            if path.suffix.lower() == ".zip":
                into = work / "unpacked" / path.stem
                shutil.rmtree(into, ignore_errors=True)
                into.parent.mkdir(parents=True, exist_ok=True)
                unpack(path, into, 1 << 30, zipped=True)
                for member in sorted(p for p in into.rglob("*") if p.is_file()):
                    convert(member)
            else:
                convert(path)
            seconds[path.name] = time.perf_counter() - started
    finally:
        converter.close()
    return seconds, warm


def markitdown_texts(files: list[Path]) -> dict[str, FileRun] | None:
    """Each file through markitdown's ``convert`` in this process; None when it is not installed."""
    try:
        from markitdown import MarkItDown
    except ImportError:
        return None
    converter = MarkItDown()
    runs: dict[str, FileRun] = {}
    for path in files:
        started = time.perf_counter()
        try:
            text = converter.convert(str(path)).text_content
            runs[path.name] = FileRun(text=text, seconds=time.perf_counter() - started)
        except Exception as exc:  # a peer's failure on one file is a result, not a crash of the bench
            runs[path.name] = FileRun(seconds=time.perf_counter() - started, failure=type(exc).__name__)
    return runs


# ----------------------------------------------------------------------------- other libraries
def _pdfium_text(path: Path) -> tuple[str, int]:
    from openviking.documents.pdf import convert_pdf

    converted = convert_pdf(path)
    return converted.text, converted.places


def _pdfminer_text(path: Path) -> tuple[str, int]:
    from pdfminer.high_level import extract_text
    from pdfminer.pdfpage import PDFPage

    with path.open("rb") as handle:
        pages = sum(1 for _ in PDFPage.get_pages(handle))
    return extract_text(str(path)), pages


def _pdfplumber_text(path: Path) -> tuple[str, int]:
    """Each page's text, then its tables (ruled or aligned, pdfplumber's finder) as markdown."""
    import pdfplumber

    from openviking.documents.office import markdown_table

    parts = []
    with pdfplumber.open(str(path)) as pdf:
        for page in pdf.pages:
            parts.append(page.extract_text() or "")
            parts.extend(markdown_table([[c or "" for c in row] for row in t]) for t in page.extract_tables())
            page.close()
        return "\n\n".join(parts), len(pdf.pages)


def _docx_text(path: Path) -> tuple[str, int]:
    from openviking.documents.office import convert_docx

    return convert_docx(path).text, 1


def _mammoth_text(path: Path) -> tuple[str, int]:
    """mammoth's HTML of the document as markdown (markdownify), as markitdown does."""
    import mammoth
    from markdownify import markdownify

    with path.open("rb") as handle:
        html = mammoth.convert_to_html(handle).value
    return markdownify(html, heading_style="ATX"), 1


# format -> (library, its module, the function that converts a file: (text, pages))
LIBRARIES = {
    "pdf": [
        ("pypdfium2 (openviking)", "pypdfium2", _pdfium_text),
        ("pdfminer.six", "pdfminer.high_level", _pdfminer_text),
        ("pdfplumber", "pdfplumber", _pdfplumber_text),
    ],
    "docx": [("python-docx (openviking)", "docx", _docx_text), ("mammoth", "mammoth", _mammoth_text)],
}


def import_seconds(module: str) -> float | None:
    """The median of three cold imports of ``module`` in a new interpreter (None: not installed)."""
    import statistics
    import subprocess
    import sys

    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    runs = []
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
        if done.returncode:
            return None
        runs.append(float(done.stdout))
    return statistics.median(runs)


def library_comparison(files: list[Path], vectors: list[Vector]) -> list[dict[str, Any]]:
    """Each library of ``LIBRARIES`` on the files of its format, in this process: the vectors it
    finds, its seconds (pages per second), its import time; a library not installed is left out."""
    rows = []
    for kind, libraries in LIBRARIES.items():
        mine = [path for path in files if path.suffix.lower() == f".{kind}"]
        for name, module, convert in libraries:
            imported = import_seconds(module)
            if imported is None or not mine:
                continue
            counts = {"exact": 0, "formatted": 0, "missing": 0, "present": 0}
            seconds, pages = 0.0, 0
            for path in mine:
                started = time.perf_counter()
                try:
                    text, count = convert(path)
                except Exception as exc:  # a library's failure on one file is a result
                    text, count = f"failed: {type(exc).__name__}", 0
                seconds += time.perf_counter() - started
                pages += count
                for outcome in judged([v for v in vectors if v.file == path.name], text):
                    if outcome.verdict != "absent":
                        counts[outcome.verdict] += 1
            rows.append({"format": kind, "library": name, "files": len(mine), "pages": pages,
                         "seconds": round(seconds, 3), "import_seconds": round(imported, 3), **counts})  # fmt: skip
    return rows


# ----------------------------------------------------------------------------- the run
def run(suite: Path, work: Path) -> dict[str, Any]:
    """Both converters on every claimed file of ``suite``, each vector judged; the JSON report."""
    vectors = suite_vectors(suite)
    claimed = [v for v in vectors if Path(v.file).suffix.lower() in CLAIMED]
    names = sorted({v.file for v in claimed})
    copies = work / "files"
    shutil.rmtree(copies, ignore_errors=True)
    copies.mkdir(parents=True)
    files = [Path(shutil.copy(suite / "test_files" / name, copies / name)) for name in names]
    ours = openviking_texts(files, work)
    converting, warm = openviking_conversions(files, work)
    for name, seconds in converting.items():
        ours[name].converting = seconds
    theirs = markitdown_texts(files)
    report: dict[str, Any] = {"suite": str(suite), "vectors": len(claimed), "files": {}, "formats": {}}
    report["worker_start_seconds"] = round(warm, 3)
    report["libraries"] = library_comparison(files, claimed)
    for name in names:
        mine = [v for v in claimed if v.file == name]
        entry: dict[str, Any] = {"format": CLAIMED[Path(name).suffix.lower()]}
        for label, runs in (("openviking", ours), ("markitdown", theirs)):
            if runs is None:
                continue
            file_run = runs[name]
            file_run.outcomes = judged(mine, file_run.text)
            entry[label] = {
                "seconds": round(file_run.seconds, 3),
                "converting": round(file_run.converting, 3),
                "failure": file_run.failure,
                "chars": len(file_run.text),
                "outcomes": [
                    {"text": o.vector.text, "verdict": o.verdict, "test": o.vector.test} for o in file_run.outcomes
                ],
            }
        report["files"][name] = entry
    report["formats"] = _by_format(report["files"])
    return report


def _by_format(files: dict[str, Any]) -> dict[str, Any]:
    formats: dict[str, Any] = {}
    for entry in files.values():
        row = formats.setdefault(entry["format"], {"files": 0})
        row["files"] += 1
        for label in ("openviking", "markitdown"):
            if label not in entry:
                continue
            counts = row.setdefault(
                label, {"exact": 0, "formatted": 0, "missing": 0, "present": 0, "seconds": 0.0, "converting": 0.0}
            )
            counts["seconds"] = round(counts["seconds"] + entry[label]["seconds"], 3)
            counts["converting"] = round(counts["converting"] + entry[label]["converting"], 3)
            for outcome in entry[label]["outcomes"]:
                if outcome["verdict"] != "absent":
                    counts[outcome["verdict"]] += 1
    return formats


def print_report(report: dict[str, Any]) -> None:
    print(f"\nmarkitdown's suite: {report['vectors']} vectors on {len(report['files'])} files ({report['suite']})")
    print(f"(openviking's conversion worker started and warmed apart: {report['worker_start_seconds']:.2f} s)")
    header = f"{'format':<14} {'files':>5}  {'openviking exact/fmt/miss/must-not':>36} {'add s':>7} {'conv s':>7}"
    header += f"  {'markitdown exact/fmt/miss/must-not':>36} {'conv s':>7}"
    print(header)
    keys = ("exact", "formatted", "missing", "present", "seconds", "converting")
    totals: dict[str, dict[str, float]] = {}
    for name, row in [*sorted(report["formats"].items()), ("all", None)]:
        cells = [f"{name:<14} {row['files'] if row else len(report['files']):>5}"]
        for label in ("openviking", "markitdown"):
            counts = row.get(label) if row else totals.get(label)
            if counts is None:
                cells.append(f"{'(not installed)':>36}")
                continue
            if row:
                total = totals.setdefault(label, dict.fromkeys(keys, 0.0))
                for key in keys:
                    total[key] += counts[key]
            shown = f"{counts['exact']:.0f}/{counts['formatted']:.0f}/{counts['missing']:.0f}/{counts['present']:.0f}"
            if label == "openviking":
                cells.append(f"{shown:>36} {counts['seconds']:>7.2f} {counts['converting']:>7.2f}")
            else:
                cells.append(f"{shown:>36} {counts['seconds']:>7.2f}")
        print("  ".join(cells))
    print("\nlibraries, each on the files of its format (exact/fmt/miss/must-not, pages, s, pages/s, import s):")
    for row in report.get("libraries", []):
        rate = row["pages"] / row["seconds"] if row["seconds"] else 0.0
        shown = f"{row['exact']}/{row['formatted']}/{row['missing']}/{row['present']}"
        print(f"  {row['format']:<5} {row['library']:<26} {shown:>12} {row['pages']:>5} {row['seconds']:>7.2f}"
              f" {rate:>8.1f} {row['import_seconds']:>6.2f}")  # fmt: skip
    print("\nmissing (openviking | markitdown):")
    for name, entry in sorted(report["files"].items()):
        ours = {o["text"]: o["verdict"] for o in entry.get("openviking", {}).get("outcomes", [])}
        theirs = {o["text"]: o["verdict"] for o in entry.get("markitdown", {}).get("outcomes", [])}
        for text, mine in ours.items():
            if mine in ("missing", "present") or theirs.get(text) in ("missing", "present"):
                print(f"  {name}: {text[:70]!r}: {mine} | {theirs.get(text, '-')}")
        failure = entry.get("openviking", {}).get("failure")
        if failure:
            print(f"  {name}: openviking skipped it: {failure}")
