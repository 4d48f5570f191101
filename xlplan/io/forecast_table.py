"""Reading a table of monthly peaks for `xlplan schedule --forecast`: CSV with columns ``month`` and ``peak_rps``.

``month`` is a month (2027-01, 2027-01-01, Jan 2027…; consecutive, no gaps); ``peak_rps`` a positive number of
requests per second. A header row is required; other columns are ignored; commas, semicolons or tabs separate them. Bad content is an :class:`InputError` naming the file, the
line and the column.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import re
from pathlib import Path

from xlplan.io import files
from xlplan.io.errors import InputError
from xlplan.io.tables import CsvRow, csv_records
from xlplan.schema import plausibility

FORECAST_MAX_BYTES = files.MIB
"""A monthly forecast is a few hundred bytes; a file past 1 MiB is not one. [bytes]"""

MAX_MONTHS = 240
"""Twenty years of months. [months]"""

_MONTH_FORMATS = ("%Y-%m", "%Y-%m-%d", "%Y/%m", "%b %Y", "%B %Y", "%b-%Y", "%m/%Y")
"""How months are written in the files people keep: 2027-01, 2027-01-01 (a spreadsheet's first of the month),
2027/01, Jan 2027, January 2027, Jan-2027, 01/2027."""

_THOUSANDS = re.compile(r"^\d{1,3}(,\d{3})+(\.\d+)?$")
_DOT_THOUSANDS = re.compile(r"^\d{1,3}(\.\d{3})+(,\d+)?$")
MAX_PROBLEMS = 20
"""Bad rows reported before the rest are counted. [rows]"""


def _column(name: str) -> str:
    """A header as a column key: 'Peak RPS' -> 'peak_rps', ' Month ' -> 'month'. [text]"""
    return re.sub(r"[\s\-/]+", "_", name.strip().strip("\ufeff").lower())


def _month(text: str) -> str | None:
    """'YYYY-MM' for a month written any of the :data:`_MONTH_FORMATS` ways, else None. [month]"""
    for fmt in _MONTH_FORMATS:
        try:
            d = dt.datetime.strptime(text, fmt)
        except ValueError:
            continue
        return f"{d.year:04d}-{d.month:02d}"
    return None


def _records(text: str) -> tuple[list[CsvRow], str]:
    """The records with their lines, split at the delimiter under which the header names both columns (comma,
    semicolon or tab); blank rows left out."""
    lines = text.splitlines()
    for delimiter in (",", ";", "\t"):
        recs = list(csv_records(csv.reader(lines, delimiter=delimiter)))
        if recs and recs[0].fields is not None and {"month", "peak_rps"} <= {_column(h) for h in recs[0].fields}:
            return recs, delimiter
    return list(csv_records(csv.reader(lines))), ","


def read_forecast(path: str | Path) -> tuple[str, list[float]]:
    """(first month ``YYYY-MM``, peak of each month from it). [month], [requests/s]

    The header names the columns ``month`` and ``peak_rps`` (any case; 'Peak RPS' too), split by commas, semicolons
    or tabs; months are written as in :data:`_MONTH_FORMATS`; a peak may carry thousands separators (1,200).

    Raises
    ------
    InputError
        Unreadable or oversized file; no ``month``/``peak_rps`` header; a month not readable or not following the
        one before; a peak that is not a positive finite number; no rows; more than 240 months. Every bad row is
        named (up to :data:`MAX_PROBLEMS`).
    """
    src = str(path)
    text = files.read_text(path, "a forecast CSV (month,peak_rps)", FORECAST_MAX_BYTES)
    recs, delimiter = _records(text)
    if not recs:
        raise InputError(src, ["empty; expected a header 'month,peak_rps' and one row per month"])
    names = recs[0].fields or []
    header = [_column(h) for h in names]
    if "month" not in header or "peak_rps" not in header:
        raise InputError(src, [(f"line {recs[0].first}: header {','.join(names)!r}; expected columns 'month' and 'peak_rps' "
                               "(separated by commas, semicolons or tabs)")])
    months, peaks, problems = _months_and_peaks(recs[1:], header.index("month"), header.index("peak_rps"), len(names), delimiter)
    if problems:
        raise InputError(src, problems)
    if not months:
        raise InputError(src, ["no months; expected one row per month under the header 'month,peak_rps'"])
    return months[0], peaks


def _months_and_peaks(recs: list[CsvRow], im: int, ip: int, width: int, delimiter: str) -> tuple[list[str], list[float], list[str]]:
    """(months, peaks, problems) of the rows under the header; a month with a bad peak keeps NaN in its place."""
    months: list[str] = []
    peaks: list[float] = []
    problems: list[str] = []
    for rec in recs:
        n = rec.first
        problem, cells = _cells(rec, im, ip, width)
        if problem is not None:
            problems.append(problem)
            continue
        month_text, peak_text = cells
        month = _month(month_text)
        problems += _month_problems(n, month_text, month, months)
        peak, peak_problems = _peak(n, peak_text, delimiter)
        problems += peak_problems
        implausible = plausibility.finding("forecast.peak_rps", peak) if peak is not None and not peak_problems else None
        if implausible:  # the plan file's range and slip ('3,456,000 a day is 40 a second'), at this line
            problems.append(f"line {n}, column 'peak_rps': {implausible.split(': ', 1)[1]}")
        if month is not None:
            months.append(month)
            peaks.append(peak if peak is not None else math.nan)
        if len(months) > MAX_MONTHS:
            problems.append(f"line {n}: more than {MAX_MONTHS} months; expected at most {MAX_MONTHS}")
            break
        if len(problems) >= MAX_PROBLEMS:
            problems.append(f"stopped at line {n} after {MAX_PROBLEMS} problems")
            break
    return months, peaks, problems


def _cells(rec: CsvRow, im: int, ip: int, width: int) -> tuple[str | None, tuple[str, str] | None]:
    """(None, (month text, peak text)) of a row, or (the problem, None) for a row that holds no such pair."""
    n, row = rec.first, rec.fields
    if row is None:
        return f"line {n}: not a CSV row ({rec.error})", None
    if len(row) <= max(im, ip):
        return f"line {n}: {len(row)} column(s); expected month and peak_rps", None
    if len(row) > width and any(c.strip() for c in row[width:]):
        # 2027-01,1,200 is three cells under a two-column header: a thousands separator would be read as a column
        return (f"line {n}: {len(row)} cells under a {width}-column header; expected one cell per "
                "column (write 1200, not 1,200 unquoted)"), None
    return None, (row[im].strip(), row[ip].strip())


def _month_problems(n: int, month_text: str, month: str | None, months: list[str]) -> list[str]:
    """What is wrong with a row's month: unreadable, or not the month after the one before."""
    if month is None:
        return [f"line {n}, column 'month': got {month_text!r}; expected a month such as 2027-01 or Jan 2027"]
    if months:
        y, mo = (int(x) for x in months[-1].split("-"))
        expected = f"{y + (mo == 12):04d}-{mo % 12 + 1:02d}"
        if month != expected:
            return [f"line {n}, column 'month': got {month_text}; expected {expected}, the month after {months[-1]}"]
    return []


def _peak(n: int, peak_text: str, delimiter: str) -> tuple[float | None, list[str]]:
    """(the peak, what is wrong with it): None where it cannot be read. [requests/s]"""
    peak = None
    problems = []
    if delimiter != "," and ("," in peak_text or _DOT_THOUSANDS.match(peak_text)):
        # a semicolon or tab file is often written with 1.200 for twelve hundred and 40,5 for forty and a half:
        # which one was meant cannot be told, so it is asked for, never guessed
        problems.append(f"line {n}, column 'peak_rps': got {peak_text!r}; expected a number without separators "
                        "(1200 or 40.5): '.' and ',' are read differently in different locales")
    else:
        try:
            peak = float(peak_text.replace(",", "") if _THOUSANDS.match(peak_text) else peak_text)
        except ValueError:
            problems.append(f"line {n}, column 'peak_rps': got {peak_text!r}; expected a number of requests/s")
    if peak is not None and not (math.isfinite(peak) and 0 < peak <= 1e7):
        problems.append(f"line {n}, column 'peak_rps': got {peak_text}; expected a positive number up to 10,000,000 requests/s")
    return peak, problems
