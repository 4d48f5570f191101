"""Small CSV tables (the measurements file) read through the input layer, every row with its line.

The reader gives text, never guesses types: the caller converts each field it
uses and reports a bad one against ``table.lines[i]`` and the column. Usage, e.g.
for ``xlplan validate``::

    from xlplan.io.tables import read_csv_table
    table = read_csv_table(path, "a CSV in the schema of measurements-public.csv", required=REQUIRED)
    for line, row in zip(table.lines, table.rows):
        ...  # row["measured"] is text; a problem is reported as f"{table.source} line {line}, column 'measured': ..."
    problems = list(table.problems)  # rows that could not be read at all, one line each
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from xlplan.io import files
from xlplan.io.errors import InputError


@dataclass(frozen=True)
class CsvTable:
    """A CSV file's rows as text, with where each row is."""

    source: str  # the file [path]
    header: tuple[str, ...]  # column names, stripped [text]
    rows: tuple[dict[str, str], ...]  # each row's fields by column name [text]
    lines: tuple[int, ...]  # the line each row starts on [line]
    problems: tuple[str, ...]  # rows left out (wrong number of fields, unreadable): 'line N: …' [text]


@dataclass(frozen=True)
class CsvRow:
    """One record of a CSV reader: its fields and the lines it spans, or the error that kept it from being read."""

    first: int  # the line it starts on [line]
    last: int  # the line it ends on (a quoted field may run over several) [line]
    fields: list[str] | None  # None when it could not be read [text]
    error: csv.Error | None = None


def csv_records(reader) -> Iterator[CsvRow]:
    """Each record of a ``csv.reader`` with the lines it spans, blank rows skipped and unreadable ones yielded with
    their error (the reader goes on after them), so every CSV reader reports a row at the same line."""
    previous = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            previous = reader.line_num
            yield CsvRow(previous, previous, None, e)
            continue
        start, previous = previous + 1, reader.line_num
        if row and any(c.strip() for c in row):
            yield CsvRow(start, previous, row)


def read_csv_table(path: str | Path, what: str, required: tuple[str, ...] | list[str] = (),
                   max_bytes: int = files.TABLE_MAX_BYTES) -> CsvTable:
    """Read a CSV file with a header row.

    Parameters
    ----------
    path
        The file (``.gz`` read as it is). [path]
    what
        What it should be, for messages: ``"a CSV in the schema of measurements-public.csv"``. [text]
    required
        Columns it must have. [text]
    max_bytes
        Largest size read. [bytes]

    Returns
    -------
    CsvTable
        Rows that could be read; the others are in ``problems``. [—]

    Raises
    ------
    InputError
        As :func:`xlplan.io.files.read_text` (missing, a folder, too large, not UTF-8 with its line and column),
        an empty file, a column named twice, or a required column missing.
    """
    src = str(path)
    text = files.read_text(path, what, max_bytes)
    lines = text.splitlines(keepends=True)
    header: list[str] | None = None
    rows: list[dict[str, str]] = []
    where: list[int] = []
    problems: list[str] = []
    for rec in csv_records(csv.reader(lines)):
        if rec.fields is None:
            problems.append(f"line {rec.first}: not a CSV row ({rec.error})")
            continue
        row, start = rec.fields, rec.first
        if header is None:
            header = [c.strip() for c in row]
            twice = sorted({c for c in header if header.count(c) > 1})
            if twice:
                raise InputError(src, [(f"line {start}: column(s) {', '.join(map(repr, twice))} named twice; expected {what} "
                                       "with each column once")])
            missing = [c for c in required if c not in header]
            if missing:
                raise InputError(src, [f"missing column(s) {', '.join(missing)}; expected {what} ({', '.join(required)}, …)"])
            continue
        if len(row) != len(header):
            problems.append(f"line {start}: {len(row)} field(s) where the header has {len(header)}; row left out")
            continue
        rows.append(dict(zip(header, row)))
        where.append(start)
    if header is None:
        raise InputError(src, [f"empty: no header row; expected {what}"])
    return CsvTable(src, tuple(header), tuple(rows), tuple(where), tuple(problems))
