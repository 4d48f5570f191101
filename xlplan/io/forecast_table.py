"""Reading a table of monthly peaks for `xlplan schedule --forecast`: CSV with columns ``month`` and ``peak_rps``.

``month`` is ``YYYY-MM`` (consecutive months, no gaps); ``peak_rps`` a positive number of requests per second.
A header row is required; other columns are ignored. Bad content is an :class:`InputError` naming the file, the
line and the column.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

from xlplan.io import files
from xlplan.io.errors import InputError

FORECAST_MAX_BYTES = files.MIB
"""A monthly forecast is a few hundred bytes; a file past 1 MiB is not one. [bytes]"""

MAX_MONTHS = 240
"""Twenty years of months. [months]"""

_MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


def read_forecast(path: str | Path) -> tuple[str, list[float]]:
    """(first month ``YYYY-MM``, peak of each month from it). [month], [requests/s]

    Raises
    ------
    InputError
        Unreadable or oversized file; no ``month``/``peak_rps`` header; a month not ``YYYY-MM`` or not following the
        one before; a peak that is not a positive finite number; no rows; more than 240 months.
    """
    src = str(path)
    text = files.read_text(path, "a forecast CSV (month,peak_rps)", FORECAST_MAX_BYTES)
    rows = list(csv.reader(text.splitlines()))
    if not rows:
        raise InputError(src, ["empty; expected a header 'month,peak_rps' and one row per month"])
    header = [h.strip().lower() for h in rows[0]]
    if "month" not in header or "peak_rps" not in header:
        raise InputError(src, [f"line 1: header {','.join(rows[0])!r}; expected columns 'month' and 'peak_rps'"])
    im, ip = header.index("month"), header.index("peak_rps")
    months: list[str] = []
    peaks: list[float] = []
    for n, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) <= max(im, ip):
            raise InputError(src, [f"line {n}: {len(row)} column(s); expected month and peak_rps"])
        month, peak_text = row[im].strip(), row[ip].strip()
        m = _MONTH.match(month)
        if not m:
            raise InputError(src, [f"line {n}, column 'month': got {month!r}; expected YYYY-MM, e.g. 2027-01"])
        if months:
            y, mo = (int(x) for x in months[-1].split("-"))
            expected = f"{y + (mo == 12):04d}-{mo % 12 + 1:02d}"
            if month != expected:
                raise InputError(src, [f"line {n}, column 'month': got {month}; expected {expected}, the month after {months[-1]}"])
        try:
            peak = float(peak_text)
        except ValueError:
            raise InputError(src, [f"line {n}, column 'peak_rps': got {peak_text!r}; expected a number of requests/s"]) from None
        if not (math.isfinite(peak) and 0 < peak <= 1e7):
            raise InputError(src, [f"line {n}, column 'peak_rps': got {peak_text}; expected a positive number up to 10,000,000 requests/s"])
        months.append(month)
        peaks.append(peak)
        if len(months) > MAX_MONTHS:
            raise InputError(src, [f"line {n}: more than {MAX_MONTHS} months; expected at most {MAX_MONTHS}"])
    if not months:
        raise InputError(src, ["no months; expected one row per month under the header 'month,peak_rps'"])
    return months[0], peaks
