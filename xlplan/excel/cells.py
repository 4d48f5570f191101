"""The workbook as data: every cell, its formula, its engine value and its style.

:mod:`~xlplan.excel.layout` fills a :class:`Book` (no openpyxl here), the
writer renders it, and the checker compares an edited workbook against a fresh
one cell by cell. A formula cell carries the value the engine computed for it,
written as the cell's cached value so readers that do not recalculate see numbers.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from openpyxl.utils import get_column_letter


@dataclass
class Validation:
    """Data validation on an input cell (Excel's Data > Validation)."""

    type: str  # 'decimal', 'whole', 'list', 'textLength'
    operator: str | None = None
    formula1: str | None = None
    formula2: str | None = None
    allow_blank: bool = False
    title: str = ""
    message: str = ""  # shown when the cell is selected (input message)
    error: str = ""  # shown when a bad value is typed


@dataclass
class Cell:
    """One cell: a constant, text, or a formula with the engine's value for it."""

    value: Any = None  # constant, text, or a formula beginning with '=' (formula=True)
    formula: bool = False
    cached: Any = None  # engine value of a formula cell
    kind: str = "text"  # input | calc | const | label | header | title | unit | note | check | static | banner | flag
    fmt: str | None = None
    name: str | None = None  # workbook-scope defined name pointing at this cell
    validation: Validation | None = None
    comment: str | None = None
    bold: bool = False
    wrap: bool = False  # wrap long text inside the column (the row grows) instead of running on or being cut off
    depends: tuple[str, ...] | None = None  # an engine value's input groups (xlplan.excel.staleness); () a record, never stale


@dataclass
class Sheet:
    """One worksheet: cells by coordinate, column widths, what it is for."""

    title: str
    purpose: str
    widths: dict[str, float] = field(default_factory=dict)
    cells: dict[str, Cell] = field(default_factory=dict)
    print_title_rows: str | None = None
    landscape: bool = False
    outline_columns: tuple[str, str] | None = None  # working columns grouped (and left out of print)
    print_area: str | None = None
    pages_wide: int | None = None  # printed this many pages across; None: as few as print every text at 8 pt or more
    charts: list[dict] = field(default_factory=list)
    freeze: str | None = None  # top-left cell of the scrolling area (rows above and columns left of it stay put)
    merges: list[str] = field(default_factory=list)  # ranges shown as one cell, e.g. 'C8:E8'
    values_depend: tuple[str, ...] | None = None  # the input groups of this sheet's engine values not given their own
    stale_flag: str | None = None  # the one flag of a sheet that is all engine values (Options, Schedule), by its name
    flag_col: str | None = None  # the column of each row's stale flag, where that cell of the row is free
    row_flags: dict[int, str] = field(default_factory=dict)  # a table's rows -> the one flag above them (its coordinate)
    row: int = 1  # cursor for builders

    def put(self, col: int | str, row: int, cell: Cell) -> str:
        """Place a cell; returns its coordinate."""
        letter = col if isinstance(col, str) else get_column_letter(col)
        coord = f"{letter}{row}"
        self.cells[coord] = cell
        return coord

    def ref(self, coord: str) -> str:
        """An absolute reference to a cell of this sheet from another sheet."""
        col = coord.rstrip("0123456789")
        row = coord[len(col):]
        return f"{quote_sheet(self.title)}!${col}${row}"


@dataclass
class Book:
    """The whole workbook: sheets in order and the defined names."""

    sheets: list[Sheet] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # name -> absolute reference
    chartsheets: list[dict] = field(default_factory=list)  # sheets that are one chart, after the worksheets
    print_header: str = ""  # the plan's name, printed at the top of every page
    flags: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)  # (sheet, cell) -> its stale flag's
    flag_groups: dict[tuple[str, str], frozenset] = field(default_factory=dict)  # (sheet, cell) -> the groups it reads

    def sheet(self, title: str, purpose: str, **kw) -> Sheet:
        s = Sheet(title=title, purpose=purpose, **kw)
        self.sheets.append(s)
        return s

    def define(self, name: str, sheet: Sheet, coord: str) -> None:
        if name in self.names:
            raise ValueError(f"defined name {name} used twice")
        self.names[name] = sheet.ref(coord)

    def define_range(self, name: str, sheet: Sheet, first: str, last: str) -> None:
        a, b = sheet.ref(first), sheet.ref(last)
        self.names[name] = f"{a}:{b.split('!', 1)[1]}"

    def formula_cells(self):
        """(sheet title, coordinate, cell) for every formula cell."""
        for s in self.sheets:
            for coord, c in s.cells.items():
                if c.formula:
                    yield s.title, coord, c

    def get(self, title: str) -> Sheet:
        return next(s for s in self.sheets if s.title == title)


def quote_sheet(title: str) -> str:
    """A sheet name as a formula writes it: quoted when it has spaces or starts with a digit."""
    if title.replace("_", "").isalnum() and not title[0].isdigit():
        return title
    return "'" + title.replace("'", "''") + "'"


SERIAL_EPOCH = dt.date(1899, 12, 30)
"""Day 0 of a spreadsheet date serial: Excel's 1900 date system (which counts a 29 February 1900 that never was), as
xlsx files store dates and LibreOffice reads them, so serials from 1 March 1900 on are days since this day."""


def date_serial(day: dt.date) -> int:
    """A day as a spreadsheet stores it: its serial number in the 1900 date system (2027-01-18 is 46405). A date cell
    holds this number and shows it through its number format, so the text follows the reader's locale while the value
    does not; a ``datetime`` (openpyxl's reading of a date-formatted number) gives its day's serial. [days]"""
    return day.toordinal() - SERIAL_EPOCH.toordinal()


@dataclass(frozen=True)
class Line:
    """One row of a vertical tab, declared: its defined name, label, formula with the engine's value, unit, number
    format and how it is computed. ``how`` is fixed text, or an object with ``formula`` and ``text`` (a
    :class:`~xlplan.excel.formulas.Prose`) when it quotes figures, so it follows the inputs."""

    name: str | None
    label: str
    formula: str
    cached: Any
    unit: str = ""
    fmt: str | None = None
    how: Any = ""
    udf: str | None = None  # the same figure as a call to an xlplan Excel function (an add-in cross-check beside it)
    needs: str = ""


HOW_COL = "D"


def write_lines(rows, lines) -> None:
    """Write declared lines one under another with a row writer (:class:`~xlplan.excel.common.Rows`)."""
    from xlplan.excel.formulas import cell_formula

    for ln in lines:
        how = ln.how if isinstance(ln.how, str) else ""
        rows.calc(ln.name, ln.label, ln.formula, ln.cached, ln.unit, ln.fmt, how, udf=ln.udf, needs=ln.needs)
        if not isinstance(ln.how, str):
            rows.sheet.put(HOW_COL, rows.sheet.row - 1, Cell(cell_formula(ln.how), formula=True, cached=ln.how.text, kind="note"))
