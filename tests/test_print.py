"""Issue 43, readable print: the workbook of a plan with growth (so Options and Schedule hold their tables) and a
Review tab, printed to PDF by headless LibreOffice as `xlplan workbook --pdf` prints it, then read back glyph by glyph.
Nothing here reads the writer's page setup: the PDF is the evidence."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
from test_review_workbook import GROWN, _book
from workbookhelp import require_libreoffice

from xlplan.excel.common import DECISION_TABS, REVIEW_TAB
from xlplan.excel.export import PRINTED
from xlplan.excel.writer import with_sheets_shown, workbook_bytes
from xlplan.io.libreoffice import to_pdf

SHOWN = PRINTED | {REVIEW_TAB, *DECISION_TABS}

READABLE_POINTS = 8.0
"""Issue 43's threshold: no glyph of a printed page smaller than this. [points]"""

PROSE_KINDS = ("title", "section", "label", "note", "header", "static", "text", "banner")
"""The cells whose words a reader reads (labels, How, headings, table headers): the ones that must print whole."""

CHAR_MARGIN = 0.35
"""The gap that parts two runs of text, in glyph widths (pdfminer's default, 2, joins adjacent cells). [glyph widths]"""

FOOTER = re.compile(r"^(?P<sheet>.+?) — page \d+ of \d+$")


def _effective_points(ch) -> float:
    """The printed size of a glyph: its font size times the scale of its text matrix, i.e. the height of its box for
    upright text and the width for text turned a quarter (a chart's vertical axis title). [points]"""
    a, b = ch.matrix[0], ch.matrix[1]
    return ch.height if abs(a) >= abs(b) else ch.width


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    """(book, {sheet title: [glyph sizes]}, {sheet title: the sheet's text in the PDF}) of the grown review workbook."""
    require_libreoffice()
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LAParams, LTChar, LTTextLine

    folder = tmp_path_factory.mktemp("print")
    book, _ = _book(folder / "grown", GROWN)
    xlsx = folder / "workbook.xlsx"
    xlsx.write_bytes(with_sheets_shown(workbook_bytes(book), SHOWN))
    pdf = to_pdf(xlsx, folder / "pdf")
    sizes: dict[str, list[float]] = defaultdict(list)
    texts: dict[str, list[str]] = defaultdict(list)
    # glyphs further apart than a third of a glyph's width start a new line of text, so neighbouring cells' texts (a How
    # beside its Still current?) stay apart and a wrapped cell's lines follow one another
    for page in extract_pages(pdf, laparams=LAParams(char_margin=CHAR_MARGIN)):
        lines: list = []
        stack = [page]
        while stack:  # depth first, in the PDF's order: a text box's lines top to bottom
            node = stack.pop()
            if isinstance(node, LTTextLine):
                lines.append(node)
            elif hasattr(node, "__iter__"):
                stack.extend(reversed(list(node)))
        sheet = next(m["sheet"] for ln in lines if (m := FOOTER.match(ln.get_text().strip())))
        sizes[sheet] += [_effective_points(ch) for ln in lines for ch in ln if isinstance(ch, LTChar) and ch.get_text().strip()]
        texts[sheet] += [ln.get_text() for ln in lines]
    return book, sizes, {title: " ".join(lines) for title, lines in texts.items()}


def _squeezed(text: str) -> str:
    """Text without whitespace: a wrapped line breaks where the PDF starts a new line."""
    return re.sub(r"\s+", "", text)


def _printed_whole(words: str, text: str) -> bool:
    """Whether ``words`` print whole in ``text``: as one run (whitespace aside), or, where a wrapped cell's lines are read
    apart (a label beside it read between them), each of its lines in order, its words no further apart than the
    cells of one row. [bool]"""
    if _squeezed(words) in _squeezed(text):
        return True
    printed = text.split()
    wanted = words.split()
    for start in (i for i, w in enumerate(printed) if w == wanted[0]):
        at, found = start, 0
        for w in wanted:
            nxt = next((j for j in range(at, min(at + ROW_WORDS, len(printed))) if printed[j] == w), None)
            if nxt is None:
                break
            at, found = nxt + 1, found + 1
        if found == len(wanted):
            return True
    return False


ROW_WORDS = 40
"""Words a printed row may hold between two of one cell's (its label, value, unit and check): the most a tab writes."""


def _in_print(sheet, coord: str) -> bool:
    """Whether a cell lies in the sheet's print area (all of the sheet where it sets none)."""
    if not sheet.print_area:
        return True
    from openpyxl.utils.cell import range_boundaries

    c0, r0, c1, r1 = range_boundaries(sheet.print_area)
    c, r = range_boundaries(f"{coord}:{coord}")[:2]
    return c0 <= c <= c1 and r0 <= r <= r1


def test_every_shown_sheet_is_printed(printed):
    # the footer names each page's sheet: a sheet missing here would let the other assertions pass vacuously
    _, sizes, _ = printed
    assert set(sizes) == set(SHOWN)


def test_no_glyph_prints_smaller_than_8_points(printed):
    # fit-to-page scaling shrank 3 Constraints to 3.5 pt and 1 Inputs to 5 pt; the bar is 8 pt for every glyph,
    # chart text and page headers included
    _, sizes, _ = printed
    smallest = {title: round(min(s), 2) for title, s in sizes.items()}
    assert all(v >= READABLE_POINTS for v in smallest.values()), smallest


def test_every_label_and_how_prints_whole(printed):
    # a text cut at the next filled cell or at the print area's edge leaves only its head in the PDF: each prose cell
    # in the print area must appear whole in its sheet's text (whitespace aside, as wrapping breaks lines)
    book, _, texts = printed
    cut = []
    for title in SHOWN:
        sheet = book.get(title)
        for coord, cell in sheet.cells.items():
            words = cell.cached if cell.formula else cell.value
            if cell.kind in PROSE_KINDS and isinstance(words, str) and words.strip() and _in_print(sheet, coord):
                if not _printed_whole(words, texts[title] if isinstance(texts[title], str) else "\n".join(texts[title])):
                    cut.append(f"{title}!{coord}: {words[:60]}")
    assert not cut, "\n".join(cut)


def test_booleans_print_as_words(printed):
    # LibreOffice shows a boolean as 1 or 0 where the cell's format is a number's: the printed TRUE and FALSE, less
    # those the prose itself writes, are the boolean cells in the print area, one word each, and no unit "TRUE | FALSE"
    # follows a digit
    book, _, texts = printed
    for title in SHOWN:
        sheet, text = book.get(title), texts[title]
        booleans = prose = 0
        for coord, cell in sheet.cells.items():
            if not _in_print(sheet, coord):
                continue
            value = cell.cached if cell.formula else cell.value
            if isinstance(value, bool):
                booleans += 1
            elif isinstance(value, str):
                prose += len(re.findall(r"\b(?:TRUE|FALSE)\b", value))
        assert len(re.findall(r"\b(?:TRUE|FALSE)\b", text)) - prose >= booleans, title
        assert not re.search(r"\b[01]\s+TRUE \| FALSE", text), title
