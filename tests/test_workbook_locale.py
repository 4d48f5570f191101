"""Locale-proof labels (issue 43): every text a formula writes reads the same in a German or a French spreadsheet as in
an English one, bar the decimal and thousands marks of its numbers.

LibreOffice stands in for Excel's locale behaviour here (Excel is not available in CI): both read a TEXT format code
in the spreadsheet's locale, so a German LibreOffice showed x1.5 as "x002" and 0.05 s as "00. s" before the labels were
built with FIXED, ROUND and &, and the order-by dates became date cells. LibreOffice is the milder of the two (it reads
"yyyy" in any locale, where a German Excel wants "JJJJ"), so no formula may call TEXT at all.
"""

from __future__ import annotations

import datetime as dt
import re

import openpyxl
import pytest
from test_review_workbook import GROWN
from test_review_workbook import _book as review_book
from test_schedule_cash import _bought
from workbookhelp import agrees, build, require_libreoffice

from xlplan.excel.writer import workbook_bytes
from xlplan.io import libreoffice
from xlplan.io.planfile import plan_to_yaml

MARKS = {"en-US": (",", r"\."), "de-DE": (r"\.", ","), "fr-FR": ("[\u202f\u00a0 ]", ",")}
"""Each locale's thousands and decimal marks, as patterns: French groups digits by a narrow no-break space in
LibreOffice 7.4's locale data (a no-break or plain space elsewhere)."""

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
"""A number as an English text writes it: digits, grouped by commas, with a decimal point."""


def _pattern(english: str, locale: str) -> re.Pattern:
    """The English text with each of its numbers written either as in English (a model's name, a date, a whole
    number, a source's literal "USD 4,500") or with the locale's marks. The English form is allowed in every locale
    because a literal cannot be told from a figure by its text; what no locale may show is a third form ("x002")."""
    thousands, decimal = MARKS[locale]
    parts, at = [], 0
    for m in NUMBER.finditer(english):
        local = "".join(thousands if c == "," else decimal if c == "." else c for c in m.group())
        parts += [re.escape(english[at:m.start()]), f"(?:{re.escape(m.group())}|{local})"]
        at = m.end()
    return re.compile("".join(parts) + re.escape(english[at:]))


def test_the_pattern_allows_the_marks_and_nothing_else():
    # the German garble of "x1.5" (TEXT's "0.0#" read with "," as its decimal: "002") must fail; "1,369" in German is
    # "1.369", in French "1 369" with a narrow no-break space
    assert _pattern("x1.5 (1,369 s)", "de-DE").fullmatch("x1,5 (1.369 s)")
    assert _pattern("x1.5 (1,369 s)", "fr-FR").fullmatch("x1,5 (1\u202f369 s)")
    assert _pattern("Llama-3.1-8B", "de-DE").fullmatch("Llama-3.1-8B")  # a name's digits, not a number shown
    assert not _pattern("x1.5", "de-DE").fullmatch("x002")
    assert not _pattern("0.05 s", "de-DE").fullmatch("00. s")
    assert not _pattern("1,369", "fr-FR").fullmatch("1.369")  # German marks are not French ones


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    """{stem: book}: a bought fleet growing over fourteen months (the Schedule with its order dates, fiscal years and
    quarters; tab 6's what-ifs and tornado), and a growing plan's review (the Review tab's headroom in percent)."""
    folder = tmp_path_factory.mktemp("locale")
    return {"cash": build(_bought("order")), "review": review_book(folder / "review", GROWN)[0]}


@pytest.fixture(scope="module")
def recalculated(books, tmp_path_factory):
    """{locale: {stem: workbook}}: each book written without cached values and recalculated by LibreOffice in each
    locale."""
    require_libreoffice()
    folder = tmp_path_factory.mktemp("locale-recalc")
    files = []
    for stem, book in books.items():
        files.append(folder / f"{stem}.xlsx")
        files[-1].write_bytes(workbook_bytes(book, caches=False))
    return {loc: {stem: openpyxl.load_workbook(out, data_only=True)
                  for stem, out in zip(books, libreoffice.recalculate(files, folder / loc, locale=loc))}
            for loc in MARKS}


@pytest.mark.slow
def test_no_formula_reads_a_format_code(books):
    # TEXT's format code is read in the spreadsheet's locale ("0.0#" in German Excel is not a number format, nor is
    # "yyyy-mm-dd"); a cell's number format is stored once in the file, locale-free, and shown in each reader's
    for stem, book in books.items():
        for title, coord, cell in book.formula_cells():
            assert "TEXT(" not in re.sub(r'"[^"]*"', "", cell.value).upper(), f"{stem}: {title}!{coord} {cell.value}"


@pytest.mark.slow
def test_labels_read_the_same_in_german_and_french_bar_the_marks(books, recalculated):
    problems, texts = [], 0
    for stem, book in books.items():
        for title, coord, cell in book.formula_cells():
            english = recalculated["en-US"][stem][title][coord].value
            if not agrees(english, cell.cached):  # the English recalculation is the engine's text (the baseline)
                problems.append(f"en-US {stem}: {title}!{coord} {english!r} vs cache {cell.cached!r}")
            texts += isinstance(english, str)
            for loc in ("de-DE", "fr-FR"):
                local = recalculated[loc][stem][title][coord].value
                same = (_pattern(english, loc).fullmatch(local) is not None if isinstance(english, str) and
                        isinstance(local, str) else local == english)  # a number, date or flag: no locale changes it
                if not same:
                    problems.append(f"{loc} {stem}: {title}!{coord} {local!r} vs English {english!r}")
    assert problems == []
    assert texts > 100  # the issue counted 124 labels garbled in German: the comparison covers the text cells


@pytest.mark.slow
def test_the_garbled_labels_read_as_in_english(books, recalculated):
    # the issue's examples: tab 6's what-if "peak rate x1.5" (the standard 1.5x traffic what-if) and its tornado row,
    # the Schedule's order date (a date cell: equal as a date in every locale), the Review's "% to go", the fiscal years
    cash = {loc: recalculated[loc]["cash"] for loc in MARKS}
    texts = {loc: [c.value for ws in wb.worksheets for row in ws.iter_rows() for c in row if isinstance(c.value, str)]
             for loc, wb in cash.items()}
    assert sum("peak rate x1.5 (" in t for t in texts["en-US"]) >= 2  # the what-if row and its tornado row
    assert sum("peak rate x1,5 (" in t for t in texts["de-DE"]) == sum("peak rate x1.5 (" in t for t in texts["en-US"])
    # the first node, needed in service on 2026-05-01 with 45 days' lead time, is ordered by 2026-03-17 (30 days of
    # April, 15 of March; test_schedule_cash.py): the first order date on the Schedule, a date in every locale
    order = books["cash"].get("Schedule").cells
    first = next(c for c, cell in order.items() if c.startswith("L") and cell.formula and cell.cached != "")
    assert {cash[loc]["Schedule"][first].value for loc in MARKS} == {dt.datetime(2026, 3, 17)}
    review = [c.value for row in recalculated["de-DE"]["review"]["Review"].iter_rows() for c in row]
    assert any(isinstance(v, str) and re.fullmatch(r"\d+% to go", v) for v in review)


@pytest.mark.slow
def test_recalc_keeps_the_order_dates(tmp_path, capsys):
    # `workbook --recalc` caches LibreOffice's values, which openpyxl reads back from a date cell as a datetime: it is
    # cached as the date's serial, so the file keeps its order dates and check finds it clean
    require_libreoffice()
    from xlplan.cli import main

    plan, out = tmp_path / "bought.yaml", tmp_path / "bought.xlsx"
    plan.write_text(plan_to_yaml(_bought("order")), encoding="utf-8")
    assert main(["workbook", str(plan), "-o", str(out), "--recalc"]) == 0
    schedule = openpyxl.load_workbook(out, data_only=True)["Schedule"]
    dates = [c.value for row in schedule.iter_rows(min_col=12, max_col=12) for c in row if isinstance(c.value, dt.datetime)]
    assert dates[:2] == [dt.datetime(2026, 3, 17), dt.datetime(2026, 6, 17)]  # test_schedule_cash.py: 45 days before
    # the first node's 2026-05-01 and the second's 2026-08-01
    capsys.readouterr()
    assert main(["check", str(out)]) == 0
