"""Documents as people have them: PDF, Word, PowerPoint, Excel, CSV, HTML, EPUB, notebooks, RTF
and ODT are converted and found by a paraphrase of a sentence inside them, with the page, slide,
sheet, chapter or cell named, from the SDK, the CLI and over HTTP; bad documents are named and
the rest of the folder is added; archives and URLs are sources like folders.

The documents are made at run time (tests/documents.py); the web pages come from a real HTTP
server on 127.0.0.1 started here. The ranking tests use the bundled local model.
"""

from __future__ import annotations

import base64
import io
import json
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from documents import ARABIC_LINES, FACTS, make_bad_documents, make_documents, make_faithful_documents
from helpers import CONVERTERS, Cli, cli_error, hash_config, loaded_modules, snapshot, unharmed, write_hash_config
from ovserver import ALICE_KEY, ROOT_KEY, body_of, error_of, headers, keyed_config, thread_server
from servers import Reply, Request, StubServer

from openviking.errors import OpenVikingWarning

NOTE = "# Parking\n\nStaff parking moves to the north lot while the garage is resurfaced.\n"
ROOT = "viking://resources/docs"


def _folder(base: Path) -> tuple[Path, dict[str, str]]:
    folder = make_documents(base / "docs")
    bad = make_bad_documents(folder)
    (folder / "parking.md").write_text(NOTE, encoding="utf-8")
    return folder, bad


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any, Path, dict[str, str], list[str]]]:
    """Every good and bad document plus a markdown note, added once with the local model:
    ``(client, AddResult, folder, bad name -> code, the warnings the add gave)``."""
    from conftest import _isolate

    from openviking.config import Config
    from openviking.embedded.client import OpenViking

    with pytest.MonkeyPatch.context() as mp:
        _isolate(mp, tmp_path_factory.mktemp("documents-home"))
        base = tmp_path_factory.mktemp("documents")
        folder, bad = _folder(base)
        client = OpenViking(path=base / "store", config=Config())
        with pytest.warns(OpenVikingWarning) as said:
            result = client.add_resource(folder, to=ROOT)
        yield client, result, folder, bad, [str(warning.message) for warning in said]
        client.close()


# ----------------------------------------------------------------------------- found, and where
@pytest.mark.slow
@pytest.mark.parametrize("name", list(FACTS))
def test_every_format_is_found_by_a_paraphrase_with_its_place(library: Any, name: str) -> None:
    client, *_ = library
    _, question, place = FACTS[name]
    hits = client.find(question, target_uri=ROOT, limit=3).resources
    assert hits and hits[0].uri == f"{ROOT}/{name}", [(h.uri, h.score) for h in hits]
    if place:
        assert hits[0].place is not None and hits[0].place.startswith(place), hits[0]
        assert hits[0].place in hits[0].match_reason, hits[0]
        assert hits[0].to_dict()["place"] == hits[0].place
    else:  # flowing text (a letter, a web page) has no pages to name
        assert hits[0].place is None and "place" not in hits[0].to_dict()


@pytest.mark.slow
def test_bad_documents_are_named_and_the_rest_of_the_folder_is_added(library: Any) -> None:
    client, result, _, bad, warned = library
    assert result.added == len(FACTS) + 1  # every good document, and the note
    assert sorted(message.split(":")[0] for message in warned) == sorted(bad), warned
    codes = {entry["path"]: entry["code"] for entry in result.skipped_files}
    assert codes == bad, result.skipped_files
    said = {warning["path"]: warning for warning in result.warnings}
    for name, code in bad.items():
        assert said[name]["code"] == code and said[name]["warning"].startswith("not added: "), said[name]
        assert not any(entry["uri"].endswith(name) for entry in client.ls(ROOT))  # never an empty record
    reasons = {entry["path"]: entry["reason"] for entry in result.skipped_files}
    assert "password" in reasons["locked.pdf"]
    assert "no text" in reasons["scanned.pdf"]
    assert "decompression bomb" in reasons["bomb.docx"]
    assert "Word document" in reasons["not-word.docx"]
    assert "cut short" in reasons["truncated.pdf"] and "cut short" in reasons["renamed-pdf.md"]
    hits = client.find("where do employees park during the garage works", target_uri=ROOT, limit=1).resources
    assert hits[0].uri == f"{ROOT}/parking.md"


@pytest.mark.slow
def test_read_gives_the_text_with_its_markers_and_the_bytes_stay_readable(library: Any) -> None:
    client, _, folder, *_ = library
    text = client.read(f"{ROOT}/report.pdf")
    assert "<!-- page 2 -->" in text and FACTS["report.pdf"][0] in text
    lines = text.split("\n")
    page_two = lines.index("<!-- page 2 -->")
    assert client.read(f"{ROOT}/report.pdf", offset=page_two, limit=2).split("\n")[0] == "<!-- page 2 -->"
    assert "<!-- slide 3 -->" in client.read(f"{ROOT}/roadmap.pptx")
    assert "<!-- sheet Travel A1:B3 -->" in client.read(f"{ROOT}/budget.xlsx")
    for name in ("report.pdf", "budget.xlsx", "scan-notes.md", "runbook.html"):
        assert client.download(f"{ROOT}/{name}") == (folder / name).read_bytes()
    assert client.download(f"{ROOT}/parking.md") == NOTE.encode()


@pytest.mark.slow
def test_documents_are_summarised_like_any_page(library: Any) -> None:
    client, *_ = library
    stat = client.stat(f"{ROOT}/report.pdf")
    assert stat.abstract.startswith("Quarterly Report"), stat.abstract
    assert "<!--" not in stat.abstract
    assert "Quarterly Report" in client.overview(ROOT) and "Committee minutes" in client.overview(ROOT)


@pytest.mark.slow
def test_html_is_indexed_as_a_reader_sees_it(library: Any) -> None:
    client, *_ = library
    text = client.read(f"{ROOT}/runbook.html")
    for chrome in ("trackVisitor", "secret-tracking-token", "color: #333", "Main menu", "cookies", "Copyright"):
        assert chrome not in text, chrome
    assert "[settlement wiki](https://wiki.example/settlement)" in text
    assert text.startswith("# Payments runbook")
    assert client.stat(f"{ROOT}/runbook.html").abstract.startswith("Payments runbook")
    assert not client.grep(ROOT, "secret-tracking-token").matches


@pytest.mark.slow
def test_a_notebook_keeps_its_cells_and_leaves_out_their_outputs(library: Any) -> None:
    client, *_ = library
    text = client.read(f"{ROOT}/analysis.ipynb")
    assert "orders = load('orders.csv')" in text and "<!-- cell 2 (code) -->" in text
    assert "OUTPUT-NOT-KEPT" not in text


@pytest.mark.slow
def test_grep_lines_name_their_place(library: Any) -> None:
    client, *_ = library
    found = client.grep(ROOT, "Churn among|Offline synchronisation|Conference travel|parking moves")
    places = {match.uri.rsplit("/", 1)[-1]: match.place for match in found.matches}
    assert places == {
        "report.pdf": "page 2",
        "roadmap.pptx": "slide 3",
        "budget.xlsx": "sheet Travel A1:B3",
        "parking.md": None,
    }, places
    assert "place" not in next(m for m in found.matches if m.uri.endswith("parking.md")).to_dict()


@pytest.mark.slow
def test_the_cli_names_the_place_and_warns_of_each_bad_document(library: Any, cli: Cli, tmp_path: Path) -> None:
    client, _, folder, bad, _ = library
    store = ["--store", client.store_path]
    found = cli("find", FACTS["report.pdf"][1], "--uri", ROOT, "-n", "1", "-o", "json", *store).json()
    hit = found["result"]["resources"][0]
    assert hit["uri"] == f"{ROOT}/report.pdf" and hit["place"] == "page 2", hit
    grep = cli("grep", "Churn among", "--uri", ROOT, "-o", "json", *store).json()["result"]["matches"]
    assert grep[0]["place"] == "page 2"
    raw = cli("read", "--raw", f"{ROOT}/report.pdf", "-o", "json", *store).json()["result"]
    assert base64.b64decode(raw["content_base64"]) == (folder / "report.pdf").read_bytes()

    # A new store, added from the command line: a Warning: line on stderr per bad document.
    added = cli("add-resource", folder, "--store", tmp_path / "store", "--config", write_hash_config(tmp_path / "c"))
    assert added.code == 0, added.err
    warnings = [line for line in added.err.splitlines() if line.startswith("Warning: ")]
    assert sorted(line.split(":")[1].strip() for line in warnings) == sorted(bad), added.err
    assert "Warning: locked.pdf: not added: protected by a password" in added.err
    assert "Traceback" not in added.err


# ----------------------------------------------------------------------------- over HTTP
@pytest.mark.slow
def test_documents_uploaded_over_http_are_found_with_their_place(tmp_path: Path, cli: Cli) -> None:
    """A user key cannot name a path on the server's machine: the HTTP SDK uploads the folder
    (temp_upload, then resources), and the server converts what it unpacks."""
    from openviking_sdk import SyncHTTPClient as UpstreamClient

    from openviking.http_client import SyncHTTPClient

    folder = make_documents(tmp_path / "docs", ["report.pdf", "roadmap.pptx", "budget.xlsx"])
    config = {key: value for key, value in keyed_config().items() if key != "embedding"}  # the local model
    with thread_server(config, tmp_path / "store") as url:
        with SyncHTTPClient(url, api_key=ALICE_KEY) as alice:
            result = alice.add_resource(folder)
            assert result.added == 3, result
            root = result.root_uri
            for name in ("report.pdf", "roadmap.pptx", "budget.xlsx"):
                _, question, place = FACTS[name]
                hit = alice.find(question, target_uri=root, limit=1).resources[0]
                assert hit.uri == f"{root}/{name}" and hit.place is not None and hit.place.startswith(place), hit
            assert alice.grep(root, "Churn among").matches[0].place == "page 2"
            assert alice.download(f"{root}/report.pdf") == (folder / "report.pdf").read_bytes()
        upstream = UpstreamClient(url=url, api_key=ALICE_KEY)
        upstream.initialize()
        try:
            assert upstream.download_bytes(f"{root}/report.pdf") == (folder / "report.pdf").read_bytes()
        finally:
            upstream.close()
        remote = cli("--url", url, "--api-key", ALICE_KEY, "find", FACTS["roadmap.pptx"][1], "-u", root, "-o", "json")
        assert remote.json()["result"]["resources"][0]["place"] == "slide 3", remote.out


def test_converters_load_only_in_the_worker_that_converts(tmp_path: Path) -> None:
    folder = make_documents(tmp_path / "docs", ["report.pdf", "minutes.docx", "budget.xlsx", "runbook.html"])
    (folder / "parking.md").write_text(NOTE, encoding="utf-8")
    code = (
        "import warnings\nfrom openviking import OpenViking\nfrom openviking.config import config_from_dict\n"
        f"with OpenViking(path={str(tmp_path / 'store')!r}, config=config_from_dict({{'embedding': {{'dense': "
        f"{{'provider': 'hash'}}}}}})) as client:\n"
        f"    assert client.add_resource({str(folder)!r}).added == 5\n"
        "    assert client.grep('viking://resources', 'Churn among').matches[0].place == 'page 2'"
    )
    loaded = loaded_modules(code)
    assert [m for m in loaded if m.split(".")[0] in CONVERTERS] == []


# ----------------------------------------------------------------------------- deadlines, caps, re-adds
def test_a_converter_that_runs_past_its_deadline_is_stopped(
    hash_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = make_documents(tmp_path / "docs", ["report.pdf"])
    (folder / "parking.md").write_text(NOTE, encoding="utf-8")
    monkeypatch.setenv("OPENVIKING_CONVERT_TIMEOUT", "0.001")  # no conversion finishes this fast
    with pytest.warns(OpenVikingWarning, match=r"^report.pdf: not added: its conversion took longer than 0.001 s"):
        result = hash_client.add_resource(folder)
    assert result.added == 1 and [(e["path"], e["code"]) for e in result.skipped_files] == [("report.pdf", "TIMEOUT")]
    assert "was stopped" in result.skipped_files[0]["reason"]
    monkeypatch.delenv("OPENVIKING_CONVERT_TIMEOUT")
    again = hash_client.add_resource(folder)  # a fresh worker, once the late one was killed
    assert again.added == 1 and again.unchanged == 1, again


def test_an_unchanged_document_is_not_converted_again(
    hash_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    folder = make_documents(tmp_path / "docs", ["report.pdf", "budget.xlsx", "roadmap.pptx"])
    first = hash_client.add_resource(folder)
    assert first.added == 3, first
    # Any conversion now would miss its deadline and be skipped: none may happen.
    monkeypatch.setenv("OPENVIKING_CONVERT_TIMEOUT", "0.001")
    assert hash_client.add_resource(folder).unchanged == 3
    report = folder / "report.pdf"
    os.utime(report, (report.stat().st_atime, report.stat().st_mtime + 60))  # touched, bytes the same
    touched = hash_client.add_resource(folder)
    assert touched.unchanged == 3 and touched.skipped == 0, touched
    monkeypatch.delenv("OPENVIKING_CONVERT_TIMEOUT")
    from documents import _pdf

    _pdf(report, "Churn among small customers rose to nine percent during the price change.")
    changed = hash_client.add_resource(folder)
    assert changed.updated == 1 and changed.unchanged == 2, changed
    assert "nine percent" in hash_client.read("viking://resources/docs/report.pdf")


def test_a_store_made_before_documents_takes_them(tmp_path: Path) -> None:
    """A store whose tables lack the columns documents need (their bytes, their places) gets
    them on the first document added, and what it held stays."""
    import lancedb

    from openviking.embedded.client import OpenViking

    store = tmp_path / "store"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "parking.md").write_text(NOTE, encoding="utf-8")
    with OpenViking(path=store, config=hash_config()) as client:
        client.add_resource(notes)
    db = lancedb.connect(str(store))
    tables = {name: db.open_table(name) for name in db.list_tables().tables}
    tables["nodes"].drop_columns(["raw"])
    records = next(name for name in tables if name.startswith("records"))
    tables[records].drop_columns(["place"])
    report = make_documents(tmp_path / "new", ["report.pdf"]) / "report.pdf"
    with OpenViking(path=store, config=hash_config()) as client:
        assert client.add_resource(report).added == 1
        assert client.grep("viking://resources", "Churn among").matches[0].place == "page 2"
        assert client.download("viking://resources/report.pdf") == report.read_bytes()
        assert client.read("viking://resources/notes/parking.md") == NOTE
        assert client.download("viking://resources/notes/parking.md") == NOTE.encode()


# ----------------------------------------------------------------------------- nothing lost
FAITHFUL = "viking://resources/faithful"


@pytest.fixture(scope="module")
def faithful(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    """The documents of ``make_faithful_documents`` added once, hash embedder: (client, AddResult)."""
    from conftest import _isolate

    from openviking.embedded.client import OpenViking

    with pytest.MonkeyPatch.context() as mp:
        _isolate(mp, tmp_path_factory.mktemp("faithful-home"))
        base = tmp_path_factory.mktemp("faithful")
        folder = make_faithful_documents(base / "faithful")
        client = OpenViking(path=base / "store", config=hash_config())
        with pytest.warns(OpenVikingWarning):
            result = client.add_resource(folder, to=FAITHFUL)
        yield client, result
        client.close()


def test_tables_of_short_cells_and_short_texts_are_text(faithful: Any) -> None:
    client, result = faithful
    assert result.skipped_files == [], result.skipped_files  # none of them is NO_TEXT
    assert "| SKU-8843 | A-03 | 9 |" in client.read(f"{FAITHFUL}/ids.xlsx")
    assert "| Scone | 4 |" in client.read(f"{FAITHFUL}/prices.docx")
    assert client.read(f"{FAITHFUL}/hello.pdf") == "<!-- page 1 -->\nHello, World!\n"


def test_a_statements_repeated_lines_keep_their_data_on_every_page(faithful: Any) -> None:
    client, _ = faithful
    pages = client.read(f"{FAITHFUL}/statement.pdf").split("<!-- page ")[1:]
    assert len(pages) == 4
    for number, page in enumerate(pages, start=1):
        assert f"Monthly statement {number}\n" in page, page  # data that looks like a page number stays
        assert "Invoice date 2024-03-31" in page and f"Items shipped: {number * 7 + 3}" in page
        assert f"Order {1000 + number}: {number * 2} crates of pears" in page
        assert "of 4" not in page  # the page numbers go
    assert [("ACME Supplies Ltd" in page) for page in pages] == [True, False, False, False]  # said once


def test_arabic_in_a_pdf_reads_in_its_own_order_without_stray_glyphs(faithful: Any) -> None:
    """PDFium alone gives "السالم" (the lam-alef ligature's letters reversed with the line), the
    cluster "حَيبيب" and "ĒēĔĕĖ" for the cluster's glyphs that map to no character."""
    text = faithful[0].read(f"{FAITHFUL}/arabic.pdf")
    assert text == "<!-- page 1 -->\n" + "".join(f"{line}\n" for line, _ in ARABIC_LINES)


def test_word_keeps_equations_comments_and_alt_text(faithful: Any) -> None:
    text = faithful[0].read(f"{FAITHFUL}/physics.docx")
    assert "Energy is $E=mc^{2}$ for a body at rest." in text
    assert "$$\\frac{a}{b}$$" in text
    assert "![A map of the north parking lot](" in text
    assert "## Comments\n\n- Grace: Check the travel line with finance first." in text


def test_word_keeps_its_notes_headers_footers_and_charts(faithful: Any) -> None:
    text = faithful[0].read(f"{FAITHFUL}/lease.docx")
    assert "The tenant pays the rent monthly.[^1] Repairs are shared.[^e1]" in text
    assert "[^1]: Rent is due on the first working day.\n\n[^e1]: Roof repairs fall to the landlord." in text
    assert "**Header:** Harbour Street lease, confidential\n\n**Footer:** Drafted by the estates office" in text
    assert "### Chart: Rent by year\n\n| Category | Rent |\n|---|---|\n| 2024 | 1200 |\n| 2025 | 1260 |" in text


def test_powerpoint_keeps_smartart_and_slide_comments(faithful: Any) -> None:
    text = faithful[0].read(f"{FAITHFUL}/process.pptx")
    assert "- Pick the crates\n- Weigh them\n- Book the courier" in text
    assert "Comments:\n\n- Ask the warehouse about Saturday pickups." in text


def test_a_workbook_keeps_its_cell_comments_and_charts(faithful: Any) -> None:
    text = faithful[0].read(f"{FAITHFUL}/stock.xlsx")
    sheet = text.split("<!-- sheet Harvest A1:B3 -->")[1]
    assert "### Chart: Crates by fruit\n\nData: 'Harvest'!B1, 'Harvest'!$A$2:$A$3, 'Harvest'!$B$2:$B$3" in sheet
    assert "Comments:\n\n- B2: Ines: Counted twice, both times forty." in sheet
    ods = faithful[0].read(f"{FAITHFUL}/tolls.ods")
    assert "| Truck | 9 |\n\nComments:\n\n- B3: Raised in March" in ods


def test_opendocument_text_keeps_notes_comments_alt_text_and_names_its_objects(faithful: Any) -> None:
    client, result = faithful
    text = client.read(f"{FAITHFUL}/survey.odt")
    assert "The bridge needs new railings.[^1]\n\n![Rust along the north pier](pier)" in text
    assert "[^1]: Measured in May by two inspectors.\n\n## Comments\n\n- Ruth: Check the east side too." in text
    assert "**Header:** Quarry road survey, draft\n\n**Footer:** Prepared by the county office" in text
    said = [w["warning"] for w in result.warnings if w["path"] == "survey.odt"]
    assert said == ["1 embedded object(s) (a chart, a formula) not kept"]


def test_pictures_alt_text_is_kept_in_books_and_pages(faithful: Any) -> None:
    client, _ = faithful
    assert "![The front desk on the ground floor](desk.png)" in client.read(f"{FAITHFUL}/handbook.epub")
    assert "![Rust on the north pier railing](pier.jpg)" in client.read(f"{FAITHFUL}/pier.html")
    assert "![A map of the north parking lot](" in client.read(f"{FAITHFUL}/physics.docx")


def test_powerpoint_keeps_its_charts_values_and_alt_text(faithful: Any) -> None:
    text = faithful[0].read(f"{FAITHFUL}/sales.pptx")
    assert "### Chart: Units sold per year\n\n| Category | Units |\n|---|---|\n| 2022 | 1250 |\n| 2023 | 1875 |" in text
    assert "![The sales team at the spring fair](Picture3.png)" in text


def test_an_epub_keeps_its_authors_and_description(faithful: Any) -> None:
    text = faithful[0].read(f"{FAITHFUL}/handbook.epub")
    assert text.startswith("**Authors:** Ada Lovelace\n**Description:** How the office runs, for newcomers.\n")


def test_a_page_of_results_keeps_its_results_not_only_a_side_box(faithful: Any) -> None:
    text = faithful[0].read(f"{FAITHFUL}/results.html")
    assert "[Result 37: tide tables for pier 37](https://example.org/37)" in text
    assert "The harbour authority publishes these tables" in text


def test_a_pdf_pdfium_cannot_open_is_read_by_pdfminer_and_said(faithful: Any) -> None:
    client, result = faithful
    assert client.read(f"{FAITHFUL}/damaged.pdf") == "<!-- page 1 -->\nThe spare projector is in cabinet nine.\n"
    said = [w["warning"] for w in result.warnings if w["path"] == "damaged.pdf"]
    assert said == [
        "PDFium cannot open it (Failed to load document (PDFium: Data format error).); "
        "its text was read by pdfminer.six, without its outline"
    ]


def test_a_placeholder_title_is_no_title(faithful: Any) -> None:
    client, _ = faithful
    overview = client.abstract(f"{FAITHFUL}/keys.pdf")
    assert "anonymous" not in overview.lower() and "boiler room key" in overview


def test_a_text_on_one_line_is_cut_into_records_and_its_end_is_found(faithful: Any) -> None:
    client, _ = faithful
    hits = client.find("lighthouse keeper retires after forty winters", target_uri=f"{FAITHFUL}/harbour.log", limit=3)
    assert hits.resources[0].uri == f"{FAITHFUL}/harbour.log"
    records = client._open().records_by_uri([f"{FAITHFUL}/harbour.log"], ["text"])
    bodies = [r["text"].split("\n", 1)[-1] for r in records]  # each after the line naming its file
    assert len(records) > 10 and all(len(body) <= 1800 for body in bodies)
    hits = client.find("lighthouse keeper retires after forty winters", target_uri=FAITHFUL, limit=3)
    assert {hit.uri for hit in hits.resources[:2]} == {f"{FAITHFUL}/harbour.log", f"{FAITHFUL}/feed.xml"}


def test_a_feed_is_read_item_by_item(faithful: Any) -> None:
    client, result = faithful
    text = client.read(f"{FAITHFUL}/feed.xml")
    assert text.startswith("# Harbour news\n\n<!-- item 1 -->\n\n## Story 0\n\nDay 0 of the **harbour** log.\n")
    assert "<!-- item 601 -->\n\n## The lighthouse keeper retires after forty winters\n" in text
    assert "<rss" not in text and "<item>" not in text
    assert [m.place for m in client.grep(f"{FAITHFUL}/feed.xml", "lighthouse keeper").matches] == ["item 601"]
    assert client.download(f"{FAITHFUL}/feed.xml").startswith(b'<?xml version="1.0"?><rss')


def test_a_csv_in_a_legacy_encoding_is_read_in_it(faithful: Any) -> None:
    client, result = faithful
    assert client.read(f"{FAITHFUL}/people.csv") == "名前,年齢,住所\r\n佐藤太郎,30,東京\r\n髙橋淳,35,名古屋\r\n"
    assert {"path": "people.csv", "warning": "not UTF-8: read as cp932"} in result.warnings


# ----------------------------------------------------------------------------- archives
def _zip(folder: Path, target: Path, prefix: str = "") -> Path:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            archive.write(path, prefix + path.relative_to(folder).as_posix())
    return target


def test_an_archive_adds_what_is_inside_it(hash_client: Any, tmp_path: Path) -> None:
    folder = make_documents(tmp_path / "kb", ["report.pdf", "minutes.docx"])
    (folder / "guide").mkdir()
    (folder / "guide" / "parking.md").write_text(NOTE, encoding="utf-8")
    zipped = _zip(folder, tmp_path / "kb.zip")
    result = hash_client.add_resource(zipped)
    assert result.root_uri == "viking://resources/kb" and result.added == 3, result
    assert hash_client.stat("viking://resources/kb/guide/parking.md").source == f"{zipped}/guide/parking.md"
    assert hash_client.grep("viking://resources/kb", "Churn among").matches[0].place == "page 2"
    assert hash_client.add_resource(zipped).unchanged == 3

    (folder / "minutes.docx").unlink()
    _zip(folder, zipped)
    again = hash_client.add_resource(zipped)
    assert again.removed == 1 and again.unchanged == 2, again

    # A folder archived under its own name (tar -czf kb.tar.gz kb) is that folder.
    packed = tmp_path / "notes.tar.gz"
    with tarfile.open(packed, "w:gz") as tar:
        tar.add(folder, arcname="notes")
    assert hash_client.add_resource(packed).root_uri == "viking://resources/notes"
    assert {e["uri"].rsplit("/", 1)[-1] for e in hash_client.ls("viking://resources/notes")} >= {"guide", "report.pdf"}


def test_an_archive_in_a_folder_is_unpacked_in_place_three_deep(hash_client: Any, tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "parking.md").write_text(NOTE, encoding="utf-8")
    levels = []
    for depth in range(1, 5):  # level1.zip holds a.md and level2.zip, which holds level3.zip...
        level = tmp_path / f"level{depth}"
        level.mkdir()
        (level / f"note{depth}.md").write_text(f"# Depth {depth}\n\nThe heron nests {depth} deep.\n", encoding="utf-8")
        levels.append(level)
    for depth in range(4, 1, -1):
        _zip(levels[depth - 1], levels[depth - 2] / f"level{depth}.zip")
    make_documents(levels[0], ["report.pdf"])
    _zip(levels[0], folder / "bundle.zip")

    result = hash_client.add_resource(folder)
    base = "viking://resources/mixed"
    stored = {f"{base}/{rel}" for rel in ("bundle.zip/note1.md", "bundle.zip/level2.zip/note2.md")}
    stored.add(f"{base}/bundle.zip/level2.zip/level3.zip/note3.md")
    for uri in stored:
        assert hash_client.read(uri).startswith("# Depth"), uri
    assert hash_client.grep(f"{base}/bundle.zip", "Churn among").matches[0].place == "page 2"
    assert hash_client.stat(f"{base}/bundle.zip/note1.md").source == f"{folder}/bundle.zip/note1.md"
    assert result.added == 5, result  # parking.md, three notes and the PDF
    assert {"path": "bundle.zip/level2.zip/level3.zip/level4.zip", "code": "ARCHIVE",
            "reason": "an archive nested more than 3 deep"} in result.skipped_files  # fmt: skip
    assert hash_client.add_resource(folder).unchanged == 5  # the same bytes again: nothing to do

    (levels[0] / "note1.md").unlink()  # an archive that no longer holds a file removes it
    _zip(levels[0], folder / "bundle.zip")
    again = hash_client.add_resource(folder)
    assert again.removed == 1 and again.unchanged == 4, again


def test_an_unsafe_archive_in_a_folder_is_skipped_and_the_rest_added(hash_client: Any, tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "parking.md").write_text(NOTE, encoding="utf-8")
    with zipfile.ZipFile(folder / "evil.zip", "w") as archive:
        archive.writestr("ok.md", "# fine\n")
        archive.writestr("../escape.md", "# out\n")
    result = hash_client.add_resource(folder)
    assert result.added == 1
    assert result.skipped_files == [
        {
            "path": "evil.zip",
            "reason": "an archive that cannot be unpacked: The archive evil.zip is refused: "
            "'../escape.md' leaves the folder (an absolute path or '..')",
            "code": "ARCHIVE",
        }
    ]
    assert not (tmp_path / "escape.md").exists()


def test_an_unsafe_or_oversized_archive_is_refused_and_nothing_is_lost(
    handbook_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("ok.md", "# fine\n")
        archive.writestr("../escape.md", "# out\n")
    error = unharmed(handbook_client, lambda: handbook_client.add_resource(evil), "deploy")
    assert error.code == "INVALID_ARGUMENT"
    refusal = "'../escape.md' leaves the folder (an absolute path or '..')"
    assert error.message == f"The archive {evil} is refused: {refusal}"
    assert not (tmp_path / "escape.md").exists()

    big = tmp_path / "big.zip"
    with zipfile.ZipFile(big, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("big.md", "a" * (3 * 1024 * 1024))
    monkeypatch.setenv("OPENVIKING_UNPACK_MAX_MB", "1")
    error = unharmed(handbook_client, lambda: handbook_client.add_resource(big), "deploy")
    assert error.code == "INVALID_ARGUMENT" and error.details == {"limit_bytes": 1024 * 1024}
    assert error.message == f"The archive {big} unpacks to more than 1048576 bytes"


# ----------------------------------------------------------------------------- web pages
PAGE = (
    "<!doctype html><html><head><title>Deploy checklist</title><script>track('tok')</script></head><body>"
    "<nav>Home | Docs | Pricing</nav><main><h1>Deploy checklist</h1><p>Before every release, freeze the "
    "database schema and announce the window in the operations channel.</p></main></body></html>"
)


class Site:
    """A web site on 127.0.0.1: pages by path, a redirect, a slow page, a big file."""

    def __init__(self, report: bytes) -> None:
        self.pages: dict[str, Reply] = {
            "/guide/checklist": Reply(data=PAGE.encode(), content_type="text/html; charset=utf-8"),
            "/files/report.pdf": Reply(data=report, content_type="application/pdf"),
            "/old-checklist": Reply(status=301, data=b"", headers={"Location": "/guide/checklist"}),
            "/slow": Reply(data=PAGE.encode(), content_type="text/html", delay=5),
            "/big.txt": Reply(data=b"word " * 400_000, content_type="text/plain"),
            "/broken": Reply(status=500, data=b"oops", content_type="text/plain"),
        }
        self.server = StubServer(self._answer)

    def _answer(self, request: Request) -> Reply:
        return self.pages.get(request.path.split("?")[0], Reply(status=404, data=b"no", content_type="text/plain"))

    def __enter__(self) -> Site:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)

    @property
    def url(self) -> str:
        return self.server.url


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    report = make_documents(tmp_path / "site-files", ["report.pdf"]) / "report.pdf"
    with Site(report.read_bytes()) as served:
        yield served


def test_a_web_page_is_a_source_that_adding_again_updates(hash_client: Any, site: Site) -> None:
    page = f"{site.url}/guide/checklist"
    result = hash_client.add_resource(page)
    assert result.root_uri == "viking://resources/checklist.html" and result.added == 1, result
    stat = hash_client.stat("viking://resources/checklist.html")
    assert stat.source == page
    text = hash_client.read("viking://resources/checklist.html")
    assert "freeze the database schema" in text and "track(" not in text and "Pricing" not in text
    assert hash_client.add_resource(page).unchanged == 1
    site.pages["/guide/checklist"] = Reply(data=PAGE.replace("freeze", "lock").encode(), content_type="text/html")
    assert hash_client.add_resource(page).updated == 1
    assert "lock the database schema" in hash_client.read("viking://resources/checklist.html")

    # A redirect is followed; what is recorded is the address as it was given.
    moved = hash_client.add_resource(f"{site.url}/old-checklist", to="viking://resources/moved")
    assert moved.added == 1 and hash_client.stat("viking://resources/moved").source == f"{site.url}/old-checklist"

    pdf = hash_client.add_resource(f"{site.url}/files/report.pdf")
    assert pdf.root_uri == "viking://resources/report.pdf" and pdf.added == 1
    assert hash_client.grep("viking://resources/report.pdf", "Churn among").matches[0].place == "page 2"


def test_credentials_in_a_url_are_never_shown_or_stored(hash_client: Any, site: Site) -> None:
    secret = "hunter2-url-secret"
    page = site.url.replace("http://", f"http://reader:{secret}@") + "/guide/checklist"
    result = hash_client.add_resource(page)
    assert result.added == 1
    stat = hash_client.stat(result.root_uri)
    assert stat.source == f"{site.url}/guide/checklist" and secret not in json.dumps(stat.to_dict())
    error = unharmed(hash_client, lambda: hash_client.add_resource(page.replace("checklist", "gone")))
    assert secret not in error.message and secret not in json.dumps(error.details)


@pytest.mark.parametrize(
    ("path", "env", "code", "message"),
    [
        ("/missing", {}, "NOT_FOUND", "Nothing at {url}/missing (HTTP 404)"),
        ("/broken", {}, "UNAVAILABLE", "Cannot fetch {url}/broken: HTTP 500 Internal Server Error"),
        ("/slow", {"OPENVIKING_FETCH_TIMEOUT": "0.5"}, "DEADLINE_EXCEEDED", "{url}/slow did not answer within 0.5 s"),
        (
            "/big.txt",
            {"OPENVIKING_FETCH_MAX_MB": "1"},
            "INVALID_ARGUMENT",
            "{url}/big.txt is 2,000,000 bytes: more than 1,048,576",
        ),  # fmt: skip
    ],
)
def test_a_url_that_cannot_be_fetched_is_an_error_and_nothing_is_lost(
    handbook_client: Any,
    handbook_ov: Cli,
    site: Site,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    path: str,
    env: dict[str, str],
    code: str,
    message: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    url = site.url + path
    error = unharmed(handbook_client, lambda: handbook_client.add_resource(url), "deploy")
    assert (error.code, error.message) == (code, message.format(url=site.url))
    before = snapshot(tmp_path / "store")
    failed = cli_error(handbook_ov("add-resource", url, "-o", "json"), code, 2 if code == "INVALID_ARGUMENT" else 1)
    assert failed["message"] == message.format(url=site.url)
    table = handbook_ov("add-resource", url)
    assert table.err.startswith(f"Error: {message.format(url=site.url)}") and "Traceback" not in table.err
    assert snapshot(tmp_path / "store") == before


def test_a_server_fetches_urls_for_the_root_key_and_only_public_ones_for_users(tmp_path: Path, site: Site) -> None:
    page = f"{site.url}/guide/checklist"
    with thread_server(keyed_config(), tmp_path / "store") as url, httpx.Client(base_url=url, timeout=60) as http:
        added = body_of(http.post("/api/v1/resources", json={"path": page}, headers=headers(ROOT_KEY)))
        assert added["root_uri"] == "viking://resources/checklist.html" and added["added"] == 1
        refused = error_of(
            http.post("/api/v1/resources", json={"path": page}, headers=headers(ALICE_KEY)), 403, "PERMISSION_DENIED"
        )
        assert refused["message"] == "127.0.0.1 is not a public address, and this server fetches only public ones"
        missing = error_of(
            http.post("/api/v1/resources", json={"path": f"{site.url}/missing"}, headers=headers(ROOT_KEY)),
            404,
            "NOT_FOUND",
        )
        assert missing["message"] == f"Nothing at {site.url}/missing (HTTP 404)"
        listed = body_of(http.get("/api/v1/fs/ls", params={"uri": "viking://resources"}, headers=headers(ROOT_KEY)))
        assert [entry["uri"] for entry in listed] == ["viking://resources/checklist.html"]


def test_an_archive_at_a_url_adds_what_is_inside(hash_client: Any, site: Site, tmp_path: Path) -> None:
    folder = make_documents(tmp_path / "bundle", ["roadmap.pptx"])
    (folder / "parking.md").write_text(NOTE, encoding="utf-8")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname="bundle")
    site.pages["/releases/bundle.tar.gz"] = Reply(data=buffer.getvalue(), content_type="application/gzip")
    result = hash_client.add_resource(f"{site.url}/releases/bundle.tar.gz")
    assert result.root_uri == "viking://resources/bundle" and result.added == 2, result
    source = hash_client.stat("viking://resources/bundle/parking.md").source
    assert source == f"{site.url}/releases/bundle.tar.gz/parking.md"
