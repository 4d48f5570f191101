"""Plan in, workbook file out: build, cache, write atomically; optionally recalculate or print with LibreOffice."""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import Callable
from pathlib import Path

from xlplan.excel.cells import Book, date_serial
from xlplan.excel.common import SIX_TABS, SUMMARY_TAB
from xlplan.excel.figures import Figures
from xlplan.excel.layout import build
from xlplan.excel.writer import workbook_bytes
from xlplan.io.errors import InputError
from xlplan.io.outputs import PDF, WORKBOOK, Output, check_outputs, write_outputs


def workbook_for(fig: Figures, formulas: str = "native") -> bytes:
    """The .xlsx bytes of a plan's figures (:func:`xlplan.excel.book.figures`), caches from the engine (where the figures
    carry it, the fleet simulated at peak as the Summary's Answer). Deterministic: same figures, same bytes."""
    return workbook_bytes(build(fig, formulas))


def _recalculated_caches(book: Book) -> Book:
    """The book with each formula's cache replaced by LibreOffice's recalculated value."""
    import openpyxl

    from xlplan.io.libreoffice import recalculate

    with tempfile.TemporaryDirectory(prefix="xlplan-recalc-") as tmp:
        src = Path(tmp) / "workbook.xlsx"
        src.write_bytes(workbook_bytes(book, caches=False))
        out = recalculate([src], Path(tmp) / "out")[0]
        wb = openpyxl.load_workbook(out, data_only=True)
        for sheet in book.sheets:
            ws = wb[sheet.title]
            for coord, cell in sheet.cells.items():
                if cell.formula:
                    v = ws[coord].value  # a date-formatted number comes back a datetime: cached as its serial
                    cell.cached = "" if v is None else date_serial(v) if isinstance(v, dt.date) else v
    return book


PRINTED = frozenset({SUMMARY_TAB, *SIX_TABS})
"""The sheets a workbook's PDF holds: the Summary and the six tabs, the capacity note itself (not the decisions, the
supporting sheets or the traffic sheets)."""


def _pdf_of_six_tabs(xlsx: bytes, name: str = "workbook", sheets: frozenset[str] = PRINTED) -> bytes:
    """The Summary and the six tabs printed to PDF by headless LibreOffice, charts included (the other sheets hidden in
    the package itself: LibreOffice leaves hidden sheets out of a PDF). [bytes]"""
    from xlplan.excel.writer import with_sheets_shown
    from xlplan.io.libreoffice import to_pdf

    with tempfile.TemporaryDirectory(prefix="xlplan-pdf-") as tmp:
        src = Path(tmp) / (name + ".xlsx")
        src.write_bytes(with_sheets_shown(xlsx, sheets))
        return to_pdf(src, Path(tmp) / "out").read_bytes()


def workbook_outputs(output: str | Path, pdf: str | Path | None = None, option: str = "-o") -> list[Output]:
    """The files writing a workbook makes: the .xlsx, and the PDF where ``pdf`` names one (``--pdf``)."""
    outs = [Output(Path(output), option, WORKBOOK)]
    if pdf is not None:
        outs.append(Output(Path(pdf), "--pdf", PDF))
    return outs


def workbook_files(fig: Figures, output: str | Path, pdf: str | Path | None = None, recalc: bool = False,
                   formulas: str = "native", traffic=None, namespace: str = "", review=None) -> list[tuple[Path, bytes]]:
    """(path, bytes) of the workbook of a plan's figures (:func:`xlplan.excel.book.figures`) and, where ``pdf`` names one,
    the PDF of its Summary and six tabs; nothing is written. ``review`` (`xlplan review --workbook`) adds the Review
    tab (:mod:`xlplan.excel.tabs.review`)."""
    output = Path(output)
    if recalc and formulas != "native":
        raise InputError("--recalc", ["LibreOffice cannot run the xlplan Excel functions; expected --formulas native with --recalc"])
    book = build(fig, formulas, traffic, namespace, review)
    if recalc:
        book = _recalculated_caches(book)
    data = workbook_bytes(book)
    out = [(output, data)]
    if pdf is not None:
        out.append((Path(pdf), _pdf_of_six_tabs(data, output.stem)))
    return out


def export(figures_of: Callable[[], Figures], output: str | Path, force: bool = False, pdf: str | Path | None = None,
           recalc: bool = False, formulas: str = "native", traffic=None, namespace: str = "", inputs: tuple = ()) -> None:
    """Write the workbook of a plan (and its PDF); every output, and LibreOffice where a PDF needs it, is checked first
    (before ``figures_of`` computes the figures), and nothing is written when any step fails."""
    from xlplan.io.libreoffice import require

    check_outputs(workbook_outputs(output, pdf), force, inputs)
    if pdf is not None:
        require("--pdf")
    write_outputs(workbook_files(figures_of(), output, pdf, recalc, formulas, traffic, namespace))
