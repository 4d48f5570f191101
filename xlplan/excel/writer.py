"""Render a :class:`~xlplan.excel.cells.Book` with openpyxl, then make the file an auditor can diff.

openpyxl writes formulas without their values; :func:`_finalise` puts the engine's
value of each formula cell into the file as its cached value (so pandas, a file
previewer or Excel's Protected View show numbers), fixes the document timestamps
and the zip entries' dates, so the same plan always gives the same bytes.
"""

from __future__ import annotations

import io
import math
import re
import zipfile
from xml.sax.saxutils import escape

from xlplan.excel.cells import Book, Cell
from xlplan.excel.charts import chart as _chart
from xlplan.excel.charts import column_index as _col

FIXED_TIMESTAMP = "2026-01-01T00:00:00Z"
"""Document created/modified time written into every workbook, so builds are byte-identical."""

ZIP_DATE = (1980, 1, 1, 0, 0, 0)

INPUT_FONT = "0000FF"  # FAST / ICAEW: inputs blue on pale yellow
INPUT_FILL = "FFFFCC"
HEADER_FILL = "DDEBF7"
SECTION_FILL = "F2F2F2"
STATIC_FILL = "EDEDED"
WARNING_FONT = "C00000"  # a failed check, a stale breakpoint, a price override: dark red, bold
NOT_CHECKED_FONT = "808080"  # an add-in cross-check without the add-in: grey, a state rather than an error


def _styles():
    from openpyxl.styles import Alignment, Border, Font, PatternFill, Protection, Side

    thin = Side(style="thin", color="BFBFBF")
    box = Border(left=thin, right=thin, top=thin, bottom=thin)
    return {
        "input": dict(font=Font(color=INPUT_FONT), fill=PatternFill("solid", fgColor=INPUT_FILL), border=box,
                      protection=Protection(locked=False)),
        "calc": dict(font=Font(color="000000"), border=box),
        "check": dict(font=Font(bold=True), border=box),
        "crosscheck": dict(font=Font(italic=True, color=NOT_CHECKED_FONT), border=box),
        "const": dict(font=Font(color=INPUT_FONT)),
        "static": dict(font=Font(italic=True), fill=PatternFill("solid", fgColor=STATIC_FILL), border=box),
        "title": dict(font=Font(bold=True, size=14)),
        "section": dict(font=Font(bold=True, size=12), fill=PatternFill("solid", fgColor=SECTION_FILL)),
        "header": dict(font=Font(bold=True), fill=PatternFill("solid", fgColor=HEADER_FILL), border=box,
                       alignment=Alignment(wrap_text=True, vertical="top")),
        "label": dict(),
        "unit": dict(font=Font(color="595959")),
        "note": dict(font=Font(italic=True, color="595959")),
        "text": dict(),
        "banner": dict(font=Font(bold=True, size=12, color=WARNING_FONT)),
        "flag": dict(font=Font(bold=True, color=WARNING_FONT)),
    }


TEXT_TRIGGERS = ("=", "+", "-", "@")


def _style_cell(cell, c: Cell, styles: dict, looks: dict) -> None:
    """Style one cell by its look (kind, bold, number format, wrap, quoted text): the look's style built once through
    openpyxl's descriptors, then copied to the next cell of that look (the same style indices, without hashing every
    style object per cell)."""
    from copy import copy

    from openpyxl.styles import Alignment, Font

    quoted = isinstance(c.value, str) and not c.formula and c.value.startswith(TEXT_TRIGGERS)
    look = (c.kind, c.bold, c.fmt, c.wrap, quoted)
    if look in looks:  # a style already built in this workbook: its indices, as openpyxl would find them again
        cell._style = copy(looks[look])
        return
    for attr, value in styles[c.kind].items():
        setattr(cell, attr, value)
    if c.bold:
        cell.font = Font(bold=True)
    if c.fmt:
        cell.number_format = c.fmt
    if c.kind == "note":
        cell.alignment = Alignment(wrap_text=False, vertical="top")
    if c.wrap:
        cell.alignment = Alignment(wrap_text=True, vertical="top")
    if quoted:
        cell.alignment = Alignment(horizontal="left")
        cell.quotePrefix = True  # typed-in text stays text when the user edits the cell
    looks[look] = copy(cell._style)


def _validate(ws, coord: str, v, validations: dict) -> None:
    """Add the cell to the sheet's data validation of the same rule, made on first use."""
    from openpyxl.worksheet.datavalidation import DataValidation

    key = (v.type, v.operator, v.formula1, v.formula2, v.allow_blank, v.title, v.message, v.error)
    dv = validations.get(key)
    if dv is None:
        dv = DataValidation(type=v.type, operator=v.operator, formula1=v.formula1, formula2=v.formula2,
                            allow_blank=v.allow_blank, showErrorMessage=True, showInputMessage=True,
                            errorTitle="Not a valid value"[:32], error=v.error, promptTitle=v.title, prompt=v.message)
        validations[key] = dv
        ws.add_data_validation(dv)
    dv.add(coord)


def _write_cells(ws, sheet, styles: dict, looks: dict) -> None:
    """Every cell of the sheet: its value, style, comment and validation."""
    from openpyxl.comments import Comment

    validations: dict[tuple, object] = {}
    for coord, c in sheet.cells.items():
        cell = ws[coord]
        _set_value(cell, c)
        _style_cell(cell, c, styles, looks)
        if c.comment:
            cell.comment = Comment(c.comment, "xlplan", width=320, height=90)
        if c.validation:
            _validate(ws, coord, c.validation, validations)


def _layout(ws, sheet) -> None:
    """Row heights, the checks' green and red, grouped columns, merges, frozen panes and charts."""
    from openpyxl.formatting.rule import CellIsRule
    from openpyxl.styles import PatternFill

    _header_heights(ws, sheet)
    _wrapped_heights(ws, sheet)
    checks = [coord for coord, c in sheet.cells.items() if c.kind == "check"]
    for coord in checks:
        ws.conditional_formatting.add(coord, CellIsRule(operator="equal", formula=["TRUE"], fill=PatternFill("solid", fgColor="C6EFCE")))
        ws.conditional_formatting.add(coord, CellIsRule(operator="notEqual", formula=["TRUE"], fill=PatternFill("solid", fgColor="FFC7CE")))
    if sheet.outline_columns:
        ws.column_dimensions.group(*sheet.outline_columns, hidden=False, outline_level=1)
    for rng in sheet.merges:
        ws.merge_cells(rng)
    if sheet.freeze:
        ws.freeze_panes = sheet.freeze
    for ch in sheet.charts:
        ws.add_chart(_chart(ws, ch), ch["anchor"])


def _page_setup(ws, sheet, book: Book) -> None:
    """Protection (no password), paper, orientation, fit, print titles and area, header and footer, no gridlines."""
    from openpyxl.worksheet.properties import PageSetupProperties

    ws.protection.sheet = True  # no password: stops accidents, not a deliberate unprotect
    ws.protection.formatColumns = False
    ws.protection.formatRows = False
    ws.page_setup.orientation = "landscape" if sheet.landscape else "portrait"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    ws.page_margins.left = ws.page_margins.right = SIDE_MARGIN_IN
    ws.page_setup.fitToWidth = sheet.pages_wide or _pages_wide(sheet)
    ws.page_setup.fitToHeight = PAGES_TALL_BOUND  # as many long as it takes: the width sets the scale
    ws.sheet_properties.pageSetUpPr = PageSetupProperties(fitToPage=True)
    if sheet.print_title_rows:
        ws.print_title_rows = sheet.print_title_rows
    if sheet.print_area:  # no wider than what it shows: empty columns would shrink the print to fit them
        first, last = sheet.print_area.split(":")
        row = last.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        ws.print_area = f"{first}:{_printed_columns(sheet)[-1]}{row}"
    if book.print_header:
        ws.oddHeader.left.text = _header_text(book.print_header)
    ws.oddHeader.right.text = "printed &D"
    ws.oddFooter.center.text = f"{sheet.title} — page &P of &N"
    ws.sheet_view.showGridLines = False


PAGES_TALL_BOUND = 999
"""Pages a sheet may print down: a bound no sheet reaches, so the width alone sets the scale. Not 0 ("automatic"):
LibreOffice then lays out one band of pages too many for some heights of rows and prints it blank, without even the
footer (the Options sheet at 3 pages wide with one more GPU in the catalog printed three). [pages]"""

A4_WIDTH_POINTS = {False: 595.28, True: 841.89}
"""Width of an A4 page, portrait (False) and landscape (True). [points]"""

SIDE_MARGIN_IN = 0.5
"""Left and right page margins. [inches]"""

POINTS_PER_WIDTH = 7.2
"""Printed width of one unit of column width at 100 %, measured in LibreOffice's PDF where DejaVu Sans stands in for
Calibri (no Carlito installed): the widest of the usual stand-ins; Calibri itself prints about 5.6. [points]"""

SMALLEST_POINTS = 10
"""Size of the smallest text on a sheet: a chart's (LibreOffice's default for chart text; the cells' is Calibri 11).
[points]"""

LEAST_PRINT_POINTS = 8.2
"""The smallest any text may print at: issue 43's 8 pt, with room for the measured :data:`POINTS_PER_WIDTH`. [points]"""

CHART_POINTS_PER_WIDTH = 5.6
"""Width of one unit of column width where a chart is anchored, as Excel draws Calibri (narrower than
:data:`POINTS_PER_WIDTH`, so a chart is taken to span more columns, never fewer). [points]"""

CM_POINTS = 72 / 2.54
"""Points in a centimetre. [points/cm]"""


def _printed_columns(sheet, chart_points_per_width: float = CHART_POINTS_PER_WIDTH) -> list[str]:
    """The sheet's printed columns, from A: to the print area's last column, or the last one a cell or a chart reaches
    (a chart's width over columns of ``chart_points_per_width``), whichever is nearer: an empty column in the area would
    only shrink the print. [column letters]"""
    from openpyxl.utils import get_column_letter

    last = max((_col(coord.rstrip("0123456789")) for coord in sheet.cells), default=1)
    for ch in sheet.charts:
        col = _col(ch["anchor"].rstrip("0123456789"))
        room = ch.get("width", 16) * CM_POINTS
        while room > 0:
            room -= sheet.widths.get(get_column_letter(col), 8.43) * chart_points_per_width
            col += 1
        last = max(last, col - 1)
    if sheet.print_area:
        last = min(last, _col(sheet.print_area.split(":")[1].rstrip("0123456789")))
    return [get_column_letter(i) for i in range(1, last + 1)]


def _pages_wide(sheet) -> int:
    """Pages across that print the sheet's columns (a chart over them as LibreOffice draws it) with every text at
    :data:`LEAST_PRINT_POINTS` or larger: fitting a wide sheet to one page wide would print it smaller. [pages]"""
    page = A4_WIDTH_POINTS[sheet.landscape] - 2 * 72 * SIDE_MARGIN_IN
    columns = _printed_columns(sheet, POINTS_PER_WIDTH)
    width = sum(sheet.widths.get(c, 8.43) for c in columns) * POINTS_PER_WIDTH * LEAST_PRINT_POINTS / SMALLEST_POINTS
    return max(math.ceil(width / page), 1)


def _printable(sheet):
    """The sheet with each text too long for the room it runs into made to wrap (running text is cut at the next
    filled cell and at the print's last column): across the empty cells to its right, merged, where there are some,
    else in its own column. A copy; the book is left as it was."""
    from dataclasses import replace

    from openpyxl.utils import get_column_letter

    columns = _printed_columns(sheet)
    last = len(columns)
    merged = set()
    for rng in sheet.merges:
        a, b = rng.split(":")
        ra, rb = int(a.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")), int(b.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
        for r in range(ra, rb + 1):
            for c in range(_col(a.rstrip("0123456789")), _col(b.rstrip("0123456789")) + 1):
                merged.add(f"{get_column_letter(c)}{r}")
    cells, merges = dict(sheet.cells), list(sheet.merges)
    for coord, c in sheet.cells.items():
        text = c.cached if c.formula else c.value
        if c.wrap or c.kind == "header" or coord in merged or not isinstance(text, str) or not text:
            continue
        col = coord.rstrip("0123456789")
        row = coord[len(col):]
        own = sheet.widths.get(col, 8.43)
        if _lines(text, own) == 1:
            continue
        run = []
        for i in range(_col(col) + 1, last + 1):
            nxt = f"{get_column_letter(i)}{row}"
            if nxt in sheet.cells or nxt in merged:
                break
            run.append(get_column_letter(i))
        if _lines(text, own + sum(sheet.widths.get(x, 8.43) for x in run)) == 1:
            continue  # runs on into empty cells, all printed
        cells[coord] = replace(c, wrap=True)
        if run and c.kind != "input":
            merges.append(f"{coord}:{run[-1]}{row}")
    return replace(sheet, cells=cells, merges=merges)


def _render(book: Book):
    """An openpyxl Workbook for the book (formulas without cached values; see :func:`_finalise`)."""
    from openpyxl import Workbook
    from openpyxl.workbook.defined_name import DefinedName

    styles = _styles()
    looks: dict[tuple, object] = {}  # (kind, bold, format, wrap, quoted) -> the cell style built for it (StyleArray)
    wb = Workbook()
    wb.remove(wb.active)
    wb.properties.creator = "xlplan"
    wb.properties.lastModifiedBy = "xlplan"
    wb.properties.title = "LLM inference capacity plan"
    wb.calculation.fullCalcOnLoad = True  # Excel recalculates on open; the caches serve readers that do not
    for sheet in book.sheets:
        sheet = _printable(sheet)
        ws = wb.create_sheet(sheet.title)
        for col, width in sheet.widths.items():
            ws.column_dimensions[col].width = width
        _write_cells(ws, sheet, styles, looks)
        _layout(ws, sheet)
        _page_setup(ws, sheet, book)
    for name, ref in book.names.items():
        wb.defined_names[name] = DefinedName(name, attr_text=ref)
    for cs in book.chartsheets:  # after the worksheets, so worksheet file numbers follow book.sheets
        sheet = wb.create_chartsheet(cs["sheet"])
        sheet.add_chart(_chart(wb[cs["data_sheet"]], cs))
    return wb


def _header_text(text: str) -> str:
    """Text for a print header: '&' doubled (it starts a header code), cut to fit Excel's 255 characters."""
    return text[:100].replace("&", "&&")


def _header_heights(ws, sheet) -> None:
    """Tall enough header rows where a label wraps in a narrow column (LibreOffice and Excel keep set heights)."""
    tall: dict[int, int] = {}
    for coord, c in sheet.cells.items():
        if c.kind != "header" or not isinstance(c.value, str):
            continue
        col = coord.rstrip("0123456789")
        row = int(coord[len(col):])
        lines = _lines(c.value, sheet.widths.get(col, 8.43))
        tall[row] = max(tall.get(row, 1), min(lines, 4))
    for row, lines in tall.items():
        if lines > 1:
            ws.row_dimensions[row].height = 13 * lines + 2


CHARS_PER_WIDTH = 1.0
"""Characters of running text that fit one unit of column width (a width counts the digit '0', wider than most
letters). [characters]"""

LINE_POINTS = 13
"""Height of one line of wrapped text. [points]"""


def _lines(text: str, width: float) -> int:
    """Lines ``text`` wraps to in a column ``width`` wide: words laid greedily, as a spreadsheet wraps them. [lines]"""
    room = max(int(width * CHARS_PER_WIDTH), 1)
    lines, used = 1, 0
    for word in text.split():
        if used and used + 1 + len(word) > room:
            lines, used = lines + 1, 0
        used += (1 if used else 0) + len(word)
        while used > room:  # a word longer than the column breaks across lines
            lines, used = lines + 1, used - room
    return lines


def _wrapped_heights(ws, sheet) -> None:
    """Rows tall enough for their wrapped cells (the text each shows, over its column or merged columns): neither
    LibreOffice nor Excel grows a row by itself when a file is opened."""
    from openpyxl.utils import get_column_letter

    spans = {}
    for rng in sheet.merges:
        a, b = rng.split(":")
        ca, cb = a.rstrip("0123456789"), b.rstrip("0123456789")
        spans[a] = [get_column_letter(i) for i in range(_col(ca), _col(cb) + 1)]
    tall: dict[int, int] = {}
    for coord, c in sheet.cells.items():
        text = c.cached if c.formula else c.value
        if not c.wrap or not isinstance(text, str) or not text:
            continue
        col = coord.rstrip("0123456789")
        lines = _lines(text, sum(sheet.widths.get(x, 8.43) for x in spans.get(coord, [col])))
        row = int(coord[len(col):])
        tall[row] = max(tall.get(row, 1), lines)
    from openpyxl.styles import Alignment

    for row, lines in tall.items():
        if lines > 1:
            ws.row_dimensions[row].height = LINE_POINTS * lines + 2
            for cell in ws[row]:  # the row's other cells at the top too, level with the wrapped text's first line
                if cell.value is not None:
                    a = cell.alignment
                    cell.alignment = Alignment(horizontal=a.horizontal, wrap_text=a.wrap_text, vertical="top")


def _set_value(cell, c: Cell) -> None:
    if c.formula:
        cell.value = c.value
        return
    cell.value = c.value
    if isinstance(c.value, str):
        cell.data_type = "s"  # a plan's text is text, even when it begins with '='


_FORMULA_CELL = re.compile(r'<c r="(?P<r>[A-Z]+[0-9]+)"(?P<a>[^>]*)><f>(?P<f>.*?)</f><v\s*/>(?:</v>)?</c>|'
                           r'<c r="(?P<r2>[A-Z]+[0-9]+)"(?P<a2>[^>]*)><f>(?P<f2>.*?)</f><v></v></c>', re.DOTALL)


def _cached_xml(value) -> tuple[str, str]:
    """(type attribute, text) of a cached value."""
    if isinstance(value, bool):
        return ' t="b"', "1" if value else "0"
    if isinstance(value, str):
        return ' t="str"', escape(value)
    if isinstance(value, int):
        return "", str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return ' t="e"', "#NUM!"
        return "", repr(value) if not value.is_integer() else str(int(value)) if abs(value) < 1e15 else repr(value)
    return None, ""


def _finalise(raw: bytes, book: Book, caches: bool = True) -> bytes:
    """Insert cached values (none with ``caches=False``), fix timestamps and zip dates: the bytes to write."""
    values = {s.title: {coord: c.cached for coord, c in s.cells.items() if c.formula} if caches else {}
              for s in book.sheets}
    titles = [s.title for s in book.sheets]
    src = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            m = re.fullmatch(r"xl/worksheets/sheet(\d+)\.xml", info.filename)
            if m:
                data = _fill_sheet(data.decode("utf-8"), values[titles[int(m.group(1)) - 1]]).encode("utf-8")
            elif info.filename == "docProps/core.xml":
                text = data.decode("utf-8")
                text = re.sub(r"(<dcterms:created[^>]*>)[^<]*(</dcterms:created>)", rf"\g<1>{FIXED_TIMESTAMP}\g<2>", text)
                text = re.sub(r"(<dcterms:modified[^>]*>)[^<]*(</dcterms:modified>)", rf"\g<1>{FIXED_TIMESTAMP}\g<2>", text)
                data = text.encode("utf-8")
            zi = zipfile.ZipInfo(info.filename, date_time=ZIP_DATE)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            dst.writestr(zi, data)
    return out.getvalue()


def _fill_sheet(xml: str, cache: dict) -> str:
    def sub(m: re.Match) -> str:
        r = m.group("r") or m.group("r2")
        attrs = m.group("a") if m.group("r") else m.group("a2")
        f = m.group("f") if m.group("r") else m.group("f2")
        value = cache.get(r)
        t, text = _cached_xml(value)
        if t is None:
            return m.group(0)
        return f'<c r="{r}"{attrs}{t}><f>{f}</f><v>{text}</v></c>'

    return _FORMULA_CELL.sub(sub, xml)


def workbook_bytes(book: Book, caches: bool = True) -> bytes:
    """The finished .xlsx for a book; ``caches=False`` leaves formula values out (for recalculation tests)."""
    buf = io.BytesIO()
    _render(book).save(buf)
    return _finalise(buf.getvalue(), book, caches)


def with_sheets_shown(xlsx: bytes, keep: set[str] | frozenset[str]) -> bytes:
    """The same package with every sheet outside ``keep`` hidden, edited in ``xl/workbook.xml`` itself (a re-save
    through openpyxl would drop the charts); the first kept sheet becomes the active one. For printing a subset. [bytes]"""
    import re
    from xml.sax.saxutils import unescape

    src = zipfile.ZipFile(io.BytesIO(xlsx))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "xl/workbook.xml":
                text = data.decode("utf-8")
                names = [unescape(m.group(1), {"&quot;": '"', "&apos;": "'"}) for m in re.finditer(r'<sheet [^>]*name="([^"]*)"', text)]
                first = next((i for i, n in enumerate(names) if n in keep), 0)

                def hide(m: re.Match) -> str:
                    tag = re.sub(r'\s+state="[^"]*"', "", m.group(0))
                    name = unescape(re.search(r'name="([^"]*)"', tag).group(1), {"&quot;": '"', "&apos;": "'"})
                    return tag if name in keep else tag.replace("<sheet ", '<sheet state="hidden" ', 1)

                text = re.sub(r"<sheet [^>]*/>", hide, text)
                hidden_ids = {str(i) for i, n in enumerate(names) if n not in keep}
                # LibreOffice prints a hidden sheet that has a print range: drop the ranges of the hidden ones
                text = re.sub(r'<definedName name="_xlnm\.Print_Area" localSheetId="(\d+)"[^>]*>[^<]*</definedName>',
                              lambda m, hidden_ids=hidden_ids: "" if m.group(1) in hidden_ids else m.group(0), text)
                text = re.sub(r'activeTab="\d+"', f'activeTab="{first}"', text)
                if "activeTab=" not in text:
                    text = text.replace("<workbookView ", f'<workbookView activeTab="{first}" ', 1)
                data = text.encode("utf-8")
            dst.writestr(info, data)
    return out.getvalue()
