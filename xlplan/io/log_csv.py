"""Reading CSV request logs: pandas' C parser where it is exact, else Python's csv module line by line.

The fast path computes each row's line from its index, the quoted newlines before it and the lines the parser
skipped; a file it cannot read exactly (an unclosed quote, a row over ``LONG_ROW_LINES`` lines, a line over
``files.LINE_MAX_BYTES``) raises :class:`~xlplan.io.log_formats.SlowPath` and is read again by :func:`csv_rows_slow`,
which reports each row it cannot read. Both open the file through :mod:`xlplan.io.files`.
"""

from __future__ import annotations

import csv
import io
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from xlplan.io import files
from xlplan.io.errors import InputError
from xlplan.io.log_formats import CHUNK_ROWS, LOG_FILE, LONG_ROW_LINES, Rows, SlowPath, decoded_lines, resolve_columns
from xlplan.io.log_values import BadRows, Chunk
from xlplan.io.tables import csv_records


def csv_rows_slow(path: Path, src: str, mapping: dict[str, str], bad: BadRows, progress):
    """CSV rows with the line each starts on; rows that cannot be read reported."""
    lines = decoded_lines(path, src, bad, progress)
    numbers: list[int] = []

    def text():
        for number, line in lines:
            numbers.append(number)
            yield line

    header: list[str] | None = None
    rows: Rows | None = None
    old_limit = csv.field_size_limit()
    csv.field_size_limit(files.LINE_MAX_BYTES)
    try:
        for rec in csv_records(csv.reader(text())):
            if rec.fields is None:
                bad.add("unreadable CSV row", 1, [f"{src} line {numbers[-1] if numbers else 1}: {rec.error}"])
                bad.untimed_at(src, [numbers[-1] if numbers else 1])
                continue
            row, start = rec.fields, rec.first
            if rec.last - start >= LONG_ROW_LINES:
                bad.add("row over many lines (an unclosed quote?)", 1,
                        [f"{src} lines {start}-{rec.last}: one row of {len(row)} field(s); expected one request a line"])
                bad.untimed_at(src, range(start, rec.last + 1))
                continue
            if header is None:
                before = [n for n in bad.untimed.get(src, ()) if n < start]
                if before:  # an unreadable line came first: it was the header, not this row
                    raise InputError(src, [(f"line {before[0]}: the header is unreadable (not UTF-8 text); expected a "
                                           "first line of column names in UTF-8 text: re-save the log as UTF-8")])
                header = [c.strip() for c in row]
                rows = Rows(src, "line", resolve_columns(header, mapping, src))
                index = {c: i for i, c in reversed(list(enumerate(header)))}
                continue
            if len(row) != len(header):
                bad.add("wrong number of fields", 1, [f"{src} line {start}: {len(row)} field(s) where the header has {len(header)}"])
                bad.untimed_at(src, [start])
                continue
            rows.add(start, lambda col, row=row, index=index: row[index[col]])
            if len(rows) >= CHUNK_ROWS:
                yield rows.chunk()
    finally:
        csv.field_size_limit(old_limit)
    if rows is not None and len(rows):
        yield rows.chunk()


def _csv_header(path: Path, src: str) -> tuple[list[str] | None, int]:
    """(the header's fields, the line it is on), or (None, 0) for a file with no row."""
    lines = files.iter_lines(path, LOG_FILE)
    for line in lines:
        if line.text is None:  # an unreadable first line is the header: taking the next row for it misnames every column
            raise InputError(src, [(f"line {line.number}: the header is unreadable ({line.problem}); expected a first line of "
                                   "column names in UTF-8 text: re-save the log as UTF-8")])
        if not line.text.strip():
            continue
        try:
            row = next(csv.reader([line.text]))
        except (csv.Error, StopIteration):
            raise SlowPath from None
        if any(c.strip() for c in row):
            return [c.strip() for c in row], line.number
    return None, 0


class _LineGuard(io.RawIOBase):
    """A stream that stops the fast path at a line longer than ``files.LINE_MAX_BYTES`` (the slow path skips it)."""

    def __init__(self, inner):
        super().__init__()
        self._inner, self._run = inner, 0

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._inner.tell()

    def readinto(self, b) -> int:
        n = self._inner.readinto(b)
        if n:
            chunk = memoryview(b)[:n].tobytes()
            last = chunk.rfind(b"\n")
            self._run = self._run + n if last < 0 else n - last - 1
            if self._run > files.LINE_MAX_BYTES:
                raise SlowPath
        return n


_SKIPPED = re.compile(r"Skipping line (\d+): expected (\d+) fields, saw (\d+)")


def csv_rows(path: Path, src: str, mapping: dict[str, str], bad: BadRows, progress):
    """CSV rows by pandas' C parser, each with its line; raises :class:`SlowPath` where that cannot be exact.

    Columns are parsed as pandas infers them (numbers stay numbers, fast); a column holding text among its numbers
    comes as text and is checked value by value. Blank lines are kept as rows so that row ``i`` after the header is line
    ``header + 1 + i``, plus the quoted newlines before it and the lines the parser skipped (too many fields).
    """
    import pandas as pd

    header, header_line = _csv_header(path, src)
    if header is None:
        return
    chosen = resolve_columns(header, mapping, src)
    index = {c: i for i, c in reversed(list(enumerate(header)))}
    width = len(header)
    places = _LinePlaces(header_line)
    read = 0
    text_columns = {index[chosen["id"]]: object} if "id" in chosen else {}
    with files.open_binary(path, LOG_FILE) as raw, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stream = io.BufferedReader(_LineGuard(raw), buffer_size=files.MIB)
        try:
            reader = pd.read_csv(stream, header=None, names=range(width), skiprows=header_line, dtype=text_columns,
                                 skip_blank_lines=False, on_bad_lines="warn", encoding="utf-8", encoding_errors="surrogateescape",
                                 chunksize=CHUNK_ROWS, engine="c", low_memory=False)
            for frame in reader:
                places.skipped.extend(_skipped_lines(caught, src, bad))
                caught.clear()
                if progress and not files.is_gzip(path):
                    position = stream.tell()
                    progress(position - read)
                    read = position
                chunk = _frame_chunk(frame, src, chosen, index, width, places, bad)
                if chunk is not None:
                    yield chunk
        except (pd.errors.ParserError, csv.Error, UnicodeError, OverflowError, MemoryError, ValueError):
            raise SlowPath from None


def _skipped_lines(caught, src: str, bad: BadRows) -> list[int]:
    """The lines the parser skipped for too many fields (from its warnings), each reported as a bad row."""
    skipped = []
    for w in caught:
        m = _SKIPPED.search(str(w.message))
        if m:
            skipped.append(int(m.group(1)))
            bad.add("wrong number of fields", 1, [(f"{src} line {m.group(1)}: {m.group(3)} field(s) where the header "
                                                  f"has {m.group(2)}")])
            bad.untimed_at(src, [int(m.group(1))])
    return skipped


@dataclass
class _LinePlaces:
    """Where the parser's rows are in the file: the header's line, the quoted newlines so far and the skipped lines."""

    header_line: int
    extra: int = 0  # physical lines before the current chunk that are not one row each (quoted newlines)
    skipped: list[int] = field(default_factory=list)

    def numbers(self, frame_index, newlines):
        """The line each row of the next chunk starts on, given the quoted newlines in each. [line]"""
        import numpy as np

        before = np.concatenate([[0], np.cumsum(newlines)[:-1]]) + self.extra
        self.extra += int(newlines.sum())
        lines = self.header_line + 1 + frame_index.to_numpy(dtype=np.int64) + before
        for line in sorted(self.skipped):
            lines[lines >= line] += 1
        return lines


def _quoted_newlines(frame, texts: list[int]):
    """Newlines inside each row's quoted text cells. [lines]"""
    import numpy as np

    newlines = np.zeros(len(frame), dtype=np.int64)
    for c in texts:
        col = frame[c].astype("string")
        has = col.str.contains("\n", regex=False).to_numpy(dtype=bool, na_value=False)
        if has.any():
            newlines[has] += col[has].str.count("\n").to_numpy(dtype=np.int64)
    return newlines


def _undecodable(frame, chosen: dict[str, str], index: dict[str, int], texts: list[int]):
    """Rows where a chosen text column holds bytes that are not UTF-8 (read as surrogates). [bool]"""
    import numpy as np

    unreadable = np.zeros(len(frame), dtype=bool)
    for col in chosen.values():
        if index[col] in texts:
            unreadable |= frame[index[col]].astype("string").str.contains("[\udc80-\udcff]", regex=True).to_numpy(
                dtype=bool, na_value=False)
    return unreadable


def _frame_chunk(frame, src: str, chosen: dict[str, str], index: dict[str, int], width: int, places: _LinePlaces,
                 bad: BadRows) -> Chunk | None:
    """One parsed frame as a chunk of the chosen columns, blank and undecodable lines left out (None: no row left)."""
    import numpy as np

    texts = [c for c in range(width) if frame[c].dtype == object]
    newlines = _quoted_newlines(frame, texts)
    if newlines.max(initial=0) >= LONG_ROW_LINES:
        raise SlowPath
    lines = places.numbers(frame.index, newlines)
    keep = ~frame.isna().all(axis=1).to_numpy(dtype=bool)  # blank lines
    unreadable = _undecodable(frame, chosen, index, texts) & keep
    if unreadable.any():
        bad.add("unreadable line", int(unreadable.sum()),
                [f"{src} line {lines[i]}: not UTF-8 text" for i in np.flatnonzero(unreadable)[:5]])
        bad.untimed_at(src, np.asarray(lines)[unreadable])
        keep &= ~unreadable
    rows = frame[keep].reset_index(drop=True)
    if not len(rows):
        return None
    return Chunk(src, "line", lines[keep], {role: (col, rows[index[col]]) for role, col in chosen.items()})
