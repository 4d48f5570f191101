"""Plan in, workbook file out: build, cache, write atomically; optionally recalculate or print with LibreOffice."""

from __future__ import annotations

import tempfile
from pathlib import Path

from xlplan.io.errors import InputError
from xlplan.io.workbook.cells import Book
from xlplan.io.workbook.layout import SIX_TABS, build
from xlplan.io.workbook.writer import workbook_bytes, write_atomic
from xlplan.plan import Plan


def workbook_for_plan(plan: Plan, formulas: str = "native") -> bytes:
    """The .xlsx bytes for a plan, caches from the engine. Deterministic: same plan, same bytes."""
    return workbook_bytes(build(plan, formulas))


def recalculated_caches(book: Book) -> Book:
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
                    v = ws[coord].value
                    cell.cached = "" if v is None else v
    return book


def pdf_of_six_tabs(xlsx: bytes, pdf_path: Path, force: bool = False) -> None:
    """Print the six tabs to PDF with headless LibreOffice (supporting sheets hidden for the print)."""
    import io

    import openpyxl

    from xlplan.io.libreoffice import to_pdf

    if pdf_path.exists() and not force:
        raise InputError(str(pdf_path), ["already exists; expected a new file name, or --force to overwrite it"])
    wb = openpyxl.load_workbook(io.BytesIO(xlsx))
    for ws in wb.worksheets:
        if ws.title not in SIX_TABS:
            ws.sheet_state = "hidden"  # LibreOffice leaves hidden sheets out of a PDF
    with tempfile.TemporaryDirectory(prefix="xlplan-pdf-") as tmp:
        src = Path(tmp) / (pdf_path.stem + ".xlsx")
        wb.save(src)
        out = to_pdf(src, Path(tmp) / "out")
        write_atomic(pdf_path, out.read_bytes(), force=True)


def export(plan: Plan, output: str | Path, force: bool = False, pdf: bool = False, recalc: bool = False,
           formulas: str = "native", traffic=None, namespace: str = "") -> None:
    """Write the workbook for a plan (and its PDF); nothing is written when any step fails."""
    output = Path(output)
    if output.suffix.lower() != ".xlsx":
        raise InputError(str(output), [f"output must end in .xlsx; got {output.suffix or 'no suffix'!r}"])
    if output.exists() and not force:
        raise InputError(str(output), ["already exists; expected a new file name, or --force to overwrite it"])
    pdf_path = output.with_suffix(".pdf")
    if pdf and pdf_path.exists() and not force:
        raise InputError(str(pdf_path), ["already exists; expected a new file name, or --force to overwrite it"])
    if recalc and formulas != "native":
        raise InputError("--recalc", ["LibreOffice cannot run the xlplan Excel functions; expected --formulas native with --recalc"])
    book = build(plan, formulas, traffic, namespace)
    if recalc:
        book = recalculated_caches(book)
    data = workbook_bytes(book)
    if pdf:
        pdf_of_six_tabs(data, pdf_path, force=force)
    write_atomic(output, data, force=force)
