"""Documents made at run time for the tests and the benchmark (nothing binary is committed): a
PDF report, Word minutes, a PowerPoint roadmap, an Excel budget, an HTML runbook with its site's
chrome, an EPUB, a notebook, an RTF and an ODT memo, a CSV table and a PDF named like markdown;
and bad ones (truncated, encrypted, scanned, a zip bomb, files whose extension lies).

Each good document holds one sentence that only it holds (``FACTS``), on a known page, slide,
sheet or cell, so a paraphrased question about it has one right answer and one right place.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

__all__ = ["ARABIC_LINES", "FACTS", "make_bad_documents", "make_documents", "make_faithful_documents"]

# file -> (the sentence inside it, a question that paraphrases it, the place it is on)
FACTS: dict[str, tuple[str, str, str]] = {
    "report.pdf": (
        "Churn among enterprise customers fell to four percent after the onboarding redesign.",
        "how much did big customers stop leaving once onboarding changed",
        "page 2",
    ),
    "minutes.docx": (
        "The committee approved moving the data centre to Frankfurt before the winter audit.",
        "where did the committee decide to relocate the servers",
        "",
    ),
    "roadmap.pptx": (
        "Offline synchronisation for the mobile app ships in the third quarter.",
        "when will the phone app work without a connection",
        "slide 3",
    ),
    "budget.xlsx": (
        "Conference travel for the research team",
        "how much is set aside for researchers to attend conferences",
        "sheet Travel",
    ),
    "runbook.html": (
        "If the payment queue stalls, restart the settlement worker before paging finance.",
        "what to do first when payments stop being processed",
        "",
    ),
    "handbook.epub": (
        "New employees receive their laptop from the front desk on their first morning.",
        "where do newcomers pick up their computer",
        "chapter 2",
    ),
    "analysis.ipynb": (
        "Seasonal demand peaks in the second week of December for every region.",
        "when does seasonal demand reach its peak",
        "cell 3",
    ),
    "policy.rtf": (
        "Visitors must be escorted at all times inside the laboratory wing.",
        "can guests walk around the lab on their own",
        "",
    ),
    "memo.odt": (
        "The cafeteria will close early on Fridays during the renovation.",
        "when will the canteen shut early during the building works",
        "",
    ),
    "expenses.csv": (
        "Replacement batteries for the warehouse forklifts",
        "what did new batteries for the lifting trucks cost",
        "",  # a CSV file is text: its hit names its lines, which are its rows
    ),
    # A whole PDF under a text file's name: judged by its bytes, converted, and found.
    "scan-notes.md": (
        "The archive boxes from the basement were digitised by an outside contractor in March.",
        "who scanned the old paper records from the basement",
        "page 1",
    ),
}

FILLER = (
    "This section records routine figures for the quarter and the usual remarks about them. "
    "Nothing in it is unusual, and the numbers match those of the previous period closely."
)


def _pdf(path: Path, fact: str, *, pages: int = 3, fact_page: int = 2, title: str = "Quarterly Report") -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title(title)
    pdf.set_font("helvetica", size=12)
    for number in range(1, pages + 1):
        pdf.add_page()
        pdf.start_section(f"Section {number}")
        pdf.set_font("helvetica", style="B", size=16)
        pdf.cell(0, 10, f"Section {number}", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("helvetica", size=12)
        pdf.multi_cell(0, 8, FILLER, new_x="LMARGIN", new_y="NEXT")
        if number == fact_page:
            pdf.multi_cell(0, 8, fact, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))


def _docx(path: Path, fact: str) -> None:
    import docx

    document = docx.Document()
    document.core_properties.title = "Committee minutes"
    document.add_heading("Committee minutes", level=0)
    document.add_heading("Attendance", level=1)
    document.add_paragraph("Present: the chair, the treasurer and four members.", style="List Bullet")
    document.add_heading("Decisions", level=1)
    document.add_paragraph(fact)
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Item", "Owner"
    table.cell(1, 0).text, table.cell(1, 1).text = "Move plan", "Operations"
    document.save(str(path))


def _pptx(path: Path, fact: str) -> None:
    from pptx import Presentation

    deck = Presentation()
    for number, (title, line) in enumerate(
        [("Roadmap", "Where the product goes this year"), ("Q1 and Q2", "Faster search; new billing"), ("Q3", fact)],
        start=1,
    ):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text_frame.text = line
        slide.notes_slide.notes_text_frame.text = f"Speaker notes for slide {number}."
    deck.save(str(path))


def _xlsx(path: Path, fact: str) -> None:
    from openpyxl import Workbook

    book = Workbook()
    summary = book.active
    summary.title = "Summary"
    summary.append(["Area", "Total"])
    summary.append(["Salaries", 120000])
    travel = book.create_sheet("Travel")
    travel.append(["Purpose", "Amount"])
    travel.append(["Sales visits to clients", 18000])
    travel.append([fact, 42000])
    book.save(str(path))


def _html(path: Path, fact: str) -> None:
    path.write_text(
        "<!doctype html><html><head><title>Payments runbook</title>"
        "<style>body { color: #333 }</style><script>trackVisitor('secret-tracking-token');</script></head>"
        "<body><nav><a href='/'>Home</a> <a href='/pricing'>Pricing</a> Main menu</nav>"
        "<div id='cookie-banner'>We use cookies to improve your experience. Accept all cookies.</div>"
        "<article><h1>Payments runbook</h1><p>This runbook covers the payment pipeline and what to do "
        "when one of its parts misbehaves during business hours.</p><h2>Stalls</h2>"
        f"<p>{fact} See the <a href='https://wiki.example/settlement'>settlement wiki</a>.</p>"
        "<ul><li>Check the queue depth</li><li>Check the worker logs</li></ul></article>"
        "<footer>Copyright Example Corp. All rights reserved.</footer></body></html>",
        encoding="utf-8",
    )


def _epub(path: Path, fact: str, about: str = "") -> None:
    chapters = [("Welcome", "Our company builds tools for teams."), ("Your first day", fact)]
    with zipfile.ZipFile(path, "w") as book:
        book.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        book.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        items = "".join(f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>' for i in range(1, 3))
        spine = "".join(f'<itemref idref="c{i}"/>' for i in range(1, 3))
        book.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Employee handbook</dc:title>'
            f"{about}</metadata>"
            f"<manifest>{items}</manifest><spine>{spine}</spine></package>",
        )
        for number, (title, text) in enumerate(chapters, start=1):
            book.writestr(
                f"OEBPS/c{number}.xhtml",
                f'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>{title}</title>'
                f"</head><body><h1>{title}</h1><p>{text}</p></body></html>",
            )


def _csv(path: Path, fact: str) -> None:
    rows = ["Item,Department,Cost", "Printer paper,Office,120", "Safety boots,Warehouse,640", f"{fact},Warehouse,2300"]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def _disguised_pdf(path: Path, fact: str) -> None:
    _pdf(path, fact, pages=1, fact_page=1, title="Records project")


def _notebook(path: Path, fact: str) -> None:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Demand analysis\n", "Weekly orders by region."]},
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": ["orders = load('orders.csv')"],
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["OUTPUT-NOT-KEPT\n"]}]},
        {"cell_type": "markdown", "metadata": {}, "source": [fact]},
    ]  # fmt: skip
    notebook = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(notebook), encoding="utf-8")


def _rtf(path: Path, fact: str) -> None:
    path.write_text("{\\rtf1\\ansi{\\fonttbl\\f0 Helvetica;}\\f0\\pard Lab safety\\par " + fact + "\\par}", "latin-1")


def _odt(path: Path, fact: str) -> None:
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    memo = OpenDocumentText()
    memo.text.addElement(H(outlinelevel=1, text="Facilities memo"))
    memo.text.addElement(P(text=fact))
    memo.save(str(path))


MAKERS = {
    "report.pdf": _pdf,
    "minutes.docx": _docx,
    "roadmap.pptx": _pptx,
    "budget.xlsx": _xlsx,
    "runbook.html": _html,
    "handbook.epub": _epub,
    "analysis.ipynb": _notebook,
    "policy.rtf": _rtf,
    "memo.odt": _odt,
    "expenses.csv": _csv,
    "scan-notes.md": _disguised_pdf,
}


def make_documents(folder: Path, names: list[str] | None = None) -> Path:
    """The documents of ``FACTS`` (or those named) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names or list(MAKERS):
        MAKERS[name](folder / name, FACTS[name][0])
    return folder


def make_bad_documents(folder: Path) -> dict[str, str]:
    """The bad documents in ``folder``: name -> the reason code its warning must give."""
    folder.mkdir(parents=True, exist_ok=True)
    full = folder / "_full.pdf"
    _pdf(full, "A sentence that a cut-short file loses.", pages=4)
    data = full.read_bytes()
    full.unlink()
    (folder / "truncated.pdf").write_bytes(data[: len(data) // 2])
    (folder / "renamed-pdf.md").write_bytes(data[: len(data) // 2])  # a PDF's bytes under a text name
    encrypted = folder / "locked.pdf"
    _encrypted_pdf(encrypted)
    _scanned_pdf(folder / "scanned.pdf")
    with zipfile.ZipFile(folder / "not-word.docx", "w") as fake:
        fake.writestr("readme.txt", "just a zip of text")
    _zip_bomb(folder / "bomb.docx")
    return {
        "truncated.pdf": "CORRUPT",
        "renamed-pdf.md": "CORRUPT",
        "locked.pdf": "ENCRYPTED",
        "scanned.pdf": "NO_TEXT",
        "not-word.docx": "NOT_DOCUMENT",
        "bomb.docx": "BOMB",
    }


def _encrypted_pdf(path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_encryption(owner_password="owner-secret", user_password="user-secret")
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(0, 10, "A locked page.")
    pdf.output(str(path))


def _scanned_pdf(path: Path) -> None:
    """A page that is only a picture: no text layer at all."""
    from fpdf import FPDF
    from PIL import Image

    image = path.with_suffix(".png")
    Image.new("RGB", (400, 200), "white").save(image)
    pdf = FPDF()
    pdf.add_page()
    pdf.image(str(image), x=10, y=10, w=180)
    pdf.output(str(path))
    image.unlink()


def _zip_bomb(path: Path) -> None:
    """A .docx whose document part unpacks to 300 MiB of one repeated byte."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as bomb:
        bomb.writestr("[Content_Types].xml", "<Types/>")
        with bomb.open("word/document.xml", "w", force_zip64=True) as part:
            block = b"a" * (1024 * 1024)
            for _ in range(300):
                part.write(block)


# ----------------------------------------------------------------------------- what converters must keep
def make_faithful_documents(folder: Path) -> Path:
    """Documents whose every part holds text a converter might lose: a statement whose repeated
    lines carry data, short texts and tables of short cells, Word equations, comments and alt
    text, a PowerPoint chart, an EPUB's metadata, a page of search results, a PDF PDFium cannot
    open, an Arabic PDF laid out as a shaper lays it, Word's notes, headers, footers and charts,
    SmartArt and slide comments, cell comments and charts in Excel and OpenDocument, pictures'
    alt text, a placeholder title, an RSS feed, a log on one line and a Shift-JIS CSV."""
    folder.mkdir(parents=True, exist_ok=True)
    _statement(folder / "statement.pdf")
    _arabic_pdf(folder / "arabic.pdf")
    _text_pdf(folder / "hello.pdf", ["Hello, World!"])
    _text_pdf(folder / "keys.pdf", ["The boiler room key hangs by the east door."], title="(anonymous)")
    _damaged_pdf(folder / "damaged.pdf")
    _ids_sheet(folder / "ids.xlsx")
    _price_table(folder / "prices.docx")
    _word_extras(folder / "physics.docx")
    _word_margins(folder / "lease.docx")
    _chart_deck(folder / "sales.pptx")
    _diagram_deck(folder / "process.pptx")
    _noted_sheet(folder / "stock.xlsx")
    _survey_odt(folder / "survey.odt")
    _tolls_ods(folder / "tolls.ods")
    about = "<dc:creator>Ada Lovelace</dc:creator><dc:description>How the office runs, for newcomers.</dc:description>"
    desk = ' <img src="desk.png" alt="The front desk on the ground floor"/>'
    _epub(folder / "handbook.epub", FACTS["handbook.epub"][0] + desk, about)
    _results_page(folder / "results.html")
    (folder / "pier.html").write_text(
        "<html><head><title>Pier report</title></head><body><article><h1>Pier report</h1>"
        "<p>The north pier was inspected on Monday by the harbour engineers, who walked its whole length.</p>"
        "<p><img src='pier.jpg' alt='Rust on the north pier railing'></p>"
        "<p>Repairs start in June and should take three weeks if the weather holds.</p></article></body></html>",
        encoding="utf-8",
    )
    items = "".join(
        f"<item><title>Story {n}</title><description>Day {n} of the &lt;b&gt;harbour&lt;/b&gt; log."
        "</description></item>"
        for n in range(600)
    )
    last = "<item><title>The lighthouse keeper retires after forty winters</title></item>"
    (folder / "feed.xml").write_text(
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>Harbour news</title>{items}{last}</channel></rss>',
        encoding="utf-8",
    )
    entries = " ".join(f"Day {n}: the tide came in at {n % 12 + 1} o'clock." for n in range(600))
    last_entry = "Day 600: the lighthouse keeper retires after forty winters."
    (folder / "harbour.log").write_text(f"{entries} {last_entry}", encoding="utf-8")
    (folder / "people.csv").write_bytes("名前,年齢,住所\r\n佐藤太郎,30,東京\r\n髙橋淳,35,名古屋\r\n".encode("cp932"))
    return folder


def _statement(path: Path) -> None:
    """Four pages, each with a header, lines that repeat with the page's own data, and a footer."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_auto_page_break(False)
    pdf.set_font("helvetica", size=11)
    for page in range(1, 5):
        pdf.add_page()
        for line in (
            "ACME Supplies Ltd",
            f"Monthly statement {page}",
            "Invoice date 2024-03-31",
            f"Items shipped: {page * 7 + 3}",
            f"Order {1000 + page}: {page * 2} crates of pears",
        ):
            pdf.cell(0, 8, line, new_x="LMARGIN", new_y="NEXT")
        pdf.set_y(-20)
        pdf.cell(0, 8, f"Page {page} of 4")
    pdf.output(str(path))


def _text_pdf(path: Path, lines: list[str], title: str = "") -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_compression(False)
    if title:
        pdf.set_title(title)
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    for line in lines:
        pdf.cell(0, 10, line, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))


# An Arabic page as a text shaper lays it out (HarfBuzz, in WeasyPrint, Chrome, LibreOffice): its
# glyphs from left to right, each mapped by the font's ToUnicode to the characters it shows, in
# their logical order. A lam-alef ligature is one glyph for two letters; a cluster's text may sit
# on one glyph while the cluster's other glyphs map to nothing.
ARABIC_LINES = (
    ("السلام عليكم", ["م", "ك", "ي", "ل", "ع", " ", "م", "لا", "س", "ل", "ا"]),
    ("habibi حَبيبي", ["h", "a", "b", "i", "b", "i", " ", "", "", "", "", "", "حَبيبي"]),
    ("فاتورة رقم 2024", ["2024", " ", "م", "ق", "ر", " ", "ة", "ر", "و", "ت", "ا", "ف"]),
)


def _arabic_pdf(path: Path) -> None:
    """A page of ``ARABIC_LINES`` written by hand (no font file: text extraction needs only the
    ToUnicode map and the glyphs' places)."""
    mapped, shown = [], []
    code = 0x100
    for number, (_, glyphs) in enumerate(ARABIC_LINES):
        codes = []
        for text in glyphs:
            mapped.append(f"<{code:04x}> <{''.join(f'{ord(c):04x}' for c in text)}>")
            codes.append(f"{code:04x}")
            code += 1
        shown.append(f"BT /F1 16 Tf 72 {720 - 30 * number} Td <{''.join(codes)}> Tj ET")
    content = "\n".join(shown).encode()
    to_unicode = (
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Adobe-Identity-UCS def "
        "/CMapType 2 def 1 begincodespacerange <0000> <ffff> endcodespacerange "
        f"{len(mapped)} beginbfchar\n" + "\n".join(mapped) + "\nendbfchar endcmap "
        "CMapName currentdict /CMap defineresource pop end end"
    ).encode()
    font = "/BaseFont /ArabicSans"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> "
        b"/Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        f"<< /Type /Font /Subtype /Type0 {font} /Encoding /Identity-H /DescendantFonts [6 0 R] "
        "/ToUnicode 7 0 R >>".encode(),
        f"<< /Type /Font /Subtype /CIDFontType2 {font} /CIDSystemInfo << /Registry (Adobe) /Ordering "
        "(Identity) /Supplement 0 >> /FontDescriptor 8 0 R /DW 500 /CIDToGIDMap /Identity >>".encode(),
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(to_unicode), to_unicode),
        b"<< /Type /FontDescriptor /FontName /ArabicSans /Flags 32 /FontBBox [0 -200 1000 800] "
        b"/ItalicAngle 0 /Ascent 800 /Descent -200 /CapHeight 700 /StemV 80 >>",
    ]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    start = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, start)
    path.write_bytes(bytes(out))


def _damaged_pdf(path: Path) -> None:
    """A PDF whose trailer names a catalog that is not there: PDFium refuses it, pdfminer reads it."""
    import re

    _text_pdf(path, ["The spare projector is in cabinet nine."])
    path.write_bytes(re.sub(rb"/Root \d+ 0 R", b"/Root 99 0 R", path.read_bytes()))


def _ids_sheet(path: Path) -> None:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Stock"
    sheet.append(["SKU", "Bin", "Qty"])
    for number in range(1, 6):
        sheet.append([f"SKU-{8840 + number}", f"A-{number:02d}", number * 3])
    book.save(str(path))


def _price_table(path: Path) -> None:
    import docx

    document = docx.Document()
    table = document.add_table(rows=4, cols=2)
    for row, (item, price) in enumerate([("Item", "Price"), ("Tea", "3"), ("Scone", "4"), ("Jam", "2")]):
        table.cell(row, 0).text, table.cell(row, 1).text = item, price
    document.save(str(path))


_OMML = (
    '<m:oMath xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math">'
    "<m:r><m:t>E</m:t></m:r><m:r><m:t>=</m:t></m:r><m:r><m:t>m</m:t></m:r>"
    "<m:sSup><m:e><m:r><m:t>c</m:t></m:r></m:e><m:sup><m:r><m:t>2</m:t></m:r></m:sup></m:sSup></m:oMath>"
)
_OMML_BLOCK = (
    '<m:oMathPara xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math"><m:oMath>'
    "<m:f><m:num><m:r><m:t>a</m:t></m:r></m:num><m:den><m:r><m:t>b</m:t></m:r></m:den></m:f>"
    "</m:oMath></m:oMathPara>"
)


def _word_extras(path: Path) -> None:
    """A paragraph with an equation in its line, one on its own, a comment, and a described picture."""
    import docx
    from docx.oxml import parse_xml
    from PIL import Image

    document = docx.Document()
    line = document.add_paragraph("Energy is ")
    line._p.append(parse_xml(_OMML))
    line.add_run(" for a body at rest.")
    document.add_paragraph()._p.append(parse_xml(_OMML_BLOCK))
    noted = document.add_paragraph("The budget is final.")
    document.add_comment(noted.runs, text="Check the travel line with finance first.", author="Grace")
    image = path.with_suffix(".png")
    Image.new("RGB", (40, 20), "white").save(image)
    document.add_picture(str(image))
    image.unlink()
    document.inline_shapes[0]._inline.docPr.set("descr", "A map of the north parking lot")
    document.save(str(path))


_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def _chart_xml(title: str, categories: list[str], series: str, values: list[float]) -> bytes:
    """A column chart's part, as python-pptx writes it, with its title."""
    from pptx.chart.data import CategoryChartData
    from pptx.chart.xmlwriter import ChartXmlWriter
    from pptx.enum.chart import XL_CHART_TYPE

    data = CategoryChartData()
    data.categories = categories
    data.add_series(series, values)
    xml = ChartXmlWriter(XL_CHART_TYPE.COLUMN_CLUSTERED, data).xml
    title_xml = (
        "<c:title><c:tx><c:rich><a:bodyPr/><a:p><a:r><a:t>" + title + "</a:t></a:r></a:p></c:rich></c:tx></c:title>"
    )
    return xml.replace("<c:chart>", "<c:chart>" + title_xml, 1).encode()


def _word_margins(path: Path) -> None:
    """A lease with a footnote, an endnote, a header, a footer and a chart: the parts python-docx
    does not read, added to its package by hand as Word writes them."""
    import docx
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part
    from docx.oxml import parse_xml

    document = docx.Document()
    section = document.sections[0]
    section.header.paragraphs[0].text = "Harbour Street lease, confidential"
    section.footer.paragraphs[0].text = "Drafted by the estates office"
    clause = document.add_paragraph("The tenant pays the rent monthly.")
    clause._p.append(parse_xml(f'<w:r {_W}><w:footnoteReference w:id="1"/></w:r>'))
    clause.add_run(" Repairs are shared.")
    clause._p.append(parse_xml(f'<w:r {_W}><w:endnoteReference w:id="1"/></w:r>'))
    package = document.part.package
    for kind, tag, text in (("footnotes", "footnote", "Rent is due on the first working day."),
                            ("endnotes", "endnote", "Roof repairs fall to the landlord.")):  # fmt: skip
        xml = (
            f'<w:{kind} {_W}><w:{tag} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:{tag}>'
            f'<w:{tag} w:id="1"><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:{tag}></w:{kind}>'
        ).encode()
        content_type = f"application/vnd.openxmlformats-officedocument.wordprocessingml.{kind}+xml"
        part = Part(PackURI(f"/word/{kind}.xml"), content_type, xml, package)
        document.part.relate_to(part, getattr(RT, kind.upper()))
    chart = Part(
        PackURI("/word/charts/chart1.xml"),
        "application/vnd.openxmlformats-officedocument.drawingml.chart+xml",
        _chart_xml("Rent by year", ["2024", "2025"], "Rent", [1200, 1260]),
        package,
    )
    chart_id = document.part.relate_to(chart, RT.CHART)
    holder = document.add_paragraph()
    holder._p.append(
        parse_xml(
            f'<w:r {_W}><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/'
            'wordprocessingDrawing"><wp:extent cx="4000000" cy="3000000"/><wp:docPr id="9" name="Chart 1"/>'
            '<a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData '
            'uri="http://schemas.openxmlformats.org/drawingml/2006/chart"><c:chart xmlns:c="http://schemas.'
            f'openxmlformats.org/drawingml/2006/chart" xmlns:r="{_R}" r:id="{chart_id}"/></a:graphicData>'
            "</a:graphic></wp:inline></w:drawing></w:r>"
        )
    )
    document.save(str(path))


def _diagram_deck(path: Path) -> None:
    """A slide with a SmartArt diagram and a comment, their parts added by hand as PowerPoint writes them."""
    from pptx import Presentation
    from pptx.opc.constants import RELATIONSHIP_TYPE as RT
    from pptx.opc.package import Part
    from pptx.opc.packuri import PackURI
    from pptx.oxml import parse_xml

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "How an order ships"
    steps = "".join(
        f'<dgm:pt modelId="{n}"><dgm:t><a:bodyPr/><a:p><a:r><a:t>{step}</a:t></a:r></a:p></dgm:t></dgm:pt>'
        for n, step in enumerate(["Pick the crates", "Weigh them", "Book the courier"], start=1)
    )
    namespaces = (
        'xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram" '
        'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'
    )
    data = Part(
        PackURI("/ppt/diagrams/data1.xml"),
        "application/vnd.openxmlformats-officedocument.drawingml.diagramData+xml",
        deck.part.package,
        f"<dgm:dataModel {namespaces}><dgm:ptLst>{steps}</dgm:ptLst></dgm:dataModel>".encode(),
    )
    data_id = slide.part.relate_to(data, RT.DIAGRAM_DATA)
    slide.shapes._spTree.append(
        parse_xml(
            '<p:graphicFrame xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" '
            f'{namespaces} xmlns:r="{_R}"><p:nvGraphicFramePr><p:cNvPr id="20" name="Diagram 1"/>'
            '<p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr><p:xfrm><a:off x="0" y="0"/>'
            '<a:ext cx="100" cy="100"/></p:xfrm><a:graphic><a:graphicData '
            'uri="http://schemas.openxmlformats.org/drawingml/2006/diagram">'
            f'<dgm:relIds r:dm="{data_id}" r:lo="" r:qs="" r:cs=""/></a:graphicData></a:graphic></p:graphicFrame>'
        )
    )
    comments = Part(
        PackURI("/ppt/comments/comment1.xml"),
        "application/vnd.openxmlformats-officedocument.presentationml.comments+xml",
        deck.part.package,
        b'<p:cmLst xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cm authorId="0" idx="1">'
        b'<p:pos x="10" y="10"/><p:text>Ask the warehouse about Saturday pickups.</p:text></p:cm></p:cmLst>',
    )
    slide.part.relate_to(comments, RT.COMMENTS)
    deck.save(str(path))


def _noted_sheet(path: Path) -> None:
    """A sheet with a note on a cell and a chart of its values."""
    from openpyxl import Workbook
    from openpyxl.chart import BarChart, Reference
    from openpyxl.comments import Comment

    book = Workbook()
    sheet = book.active
    sheet.title = "Harvest"
    for row in (["Fruit", "Crates"], ["Pears", 40], ["Plums", 25]):
        sheet.append(row)
    sheet["B2"].comment = Comment("Counted twice, both times forty.", "Ines")
    chart = BarChart()
    chart.title = "Crates by fruit"
    chart.add_data(Reference(sheet, min_col=2, min_row=1, max_row=3), titles_from_data=True)
    chart.set_categories(Reference(sheet, min_col=1, min_row=2, max_row=3))
    sheet.add_chart(chart, "D2")
    book.save(str(path))


def _survey_odt(path: Path) -> None:
    """An OpenDocument text with a footnote, a comment, a described picture, a header, a footer
    and an embedded object."""
    from odf.dc import Creator
    from odf.draw import Frame, Image, Object
    from odf.office import Annotation
    from odf.opendocument import OpenDocumentText
    from odf.style import Footer, Header, MasterPage, PageLayout
    from odf.svg import Title
    from odf.text import Note, NoteBody, NoteCitation, P

    document = OpenDocumentText()
    layout = PageLayout(name="pm1")
    document.automaticstyles.addElement(layout)
    master = MasterPage(name="Standard", pagelayoutname=layout)
    for part, text in ((Header(), "Quarry road survey, draft"), (Footer(), "Prepared by the county office")):
        part.addElement(P(text=text))
        master.addElement(part)
    document.masterstyles.addElement(master)
    line = P(text="The bridge needs new railings.")
    note = Note(id="ftn1", noteclass="footnote")
    note.addElement(NoteCitation(text="1"))
    body = NoteBody()
    body.addElement(P(text="Measured in May by two inspectors."))
    note.addElement(body)
    line.addElement(note)
    comment = Annotation()
    comment.addElement(Creator(text="Ruth"))
    comment.addElement(P(text="Check the east side too."))
    line.addElement(comment)
    document.text.addElement(line)
    picture = Frame(width="2cm", height="1cm", anchortype="paragraph", name="pier")
    picture.addElement(Image(href="Pictures/pier.png"))
    picture.addElement(Title(text="Rust along the north pier"))
    chart = Frame(width="8cm", height="6cm", anchortype="paragraph", name="Object1")
    chart.addElement(Object(href="./Object 1"))
    holder = P()
    holder.addElement(picture)
    holder.addElement(chart)
    document.text.addElement(holder)
    document.save(str(path))


def _tolls_ods(path: Path) -> None:
    """An OpenDocument spreadsheet with a comment on a cell."""
    from odf.office import Annotation
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    book = OpenDocumentSpreadsheet()
    table = Table(name="Tolls")
    for values in (["Vehicle", "Toll"], ["Car", "3"], ["Truck", "9"]):
        row = TableRow()
        for value in values:
            cell = TableCell(valuetype="string")
            cell.addElement(P(text=value))
            if value == "9":
                comment = Annotation()
                comment.addElement(P(text="Raised in March"))
                cell.addElement(comment)
            row.addElement(cell)
        table.addElement(row)
    book.spreadsheet.addElement(table)
    book.save(str(path))


def _chart_deck(path: Path) -> None:
    from PIL import Image
    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Sales by year"
    data = CategoryChartData()
    data.categories = ["2022", "2023"]
    data.add_series("Units", (1250, 1875))
    chart = slide.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(2), Inches(6), Inches(4), data
    ).chart
    chart.has_title = True
    chart.chart_title.text_frame.text = "Units sold per year"
    image = path.with_suffix(".png")
    Image.new("RGB", (40, 20), "white").save(image)
    picture = slide.shapes.add_picture(str(image), Inches(1), Inches(1))
    image.unlink()
    picture._element.nvPicPr.cNvPr.set("descr", "The sales team at the spring fair")
    deck.save(str(path))


def _results_page(path: Path) -> None:
    """A page of search results (short items alike) beside a long box of its own."""
    results = "".join(
        f"<li class='result'><a href='https://example.org/{n}'>Result {n}: tide tables for pier {n}</a> "
        f"<a href='https://example.org/{n}/map'>high water {n} minutes after the harbour mouth</a></li>"
        for n in range(1, 41)
    )
    box = " ".join(["The harbour authority publishes these tables every spring for all the piers it keeps."] * 3)
    path.write_text(
        "<!doctype html><html><head><title>tide tables - Search</title></head><body>"
        f"<ol id='results'>{results}</ol><div class='sidebox'><p>{box}</p></div></body></html>",
        encoding="utf-8",
    )
