"""The formats of request logs, read row by row into :class:`~xlplan.io.log_values.Chunk` s with where each row is.

- CSV: read by pandas' C parser where it can be (fast: ten million rows in seconds), each row's line computed from
  its index, the quoted newlines before it and the lines the parser skipped; a file the fast path cannot read
  exactly (an unclosed quote, a row over ``LONG_ROW_LINES`` lines) is read again line by line with Python's csv
  module, which reports each row it cannot read;
- JSON Lines line by line, a JSON array whole, nested fields named with dots (``usage.prompt_tokens``);
- Parquet with pandas (pyarrow).

Every text file is opened through :mod:`xlplan.io.files` (size, ``.gz`` cap, a truncated ``.gz``).
"""

from __future__ import annotations

import csv
import io
import re
import warnings
from pathlib import Path

from xlplan.io import files
from xlplan.io.errors import InputError
from xlplan.io.log_values import BadRows, Chunk
from xlplan.io.tables import csv_records

ROLES = ("timestamp", "prompt", "output", "cached", "id")
RECOGNISED: dict[str, tuple[str, ...]] = {
    # OpenAI usage records first, then LiteLLM spend logs, then plain names
    "timestamp": ("created", "startTime", "start_time", "timestamp", "time", "ts", "created_at", "request_time"),
    "prompt": ("usage.prompt_tokens", "prompt_tokens", "usage.input_tokens", "input_tokens", "prompt", "tokens_in"),
    "output": ("usage.completion_tokens", "completion_tokens", "usage.output_tokens", "output_tokens", "output", "tokens_out"),
    "cached": ("usage.prompt_tokens_details.cached_tokens", "cached_tokens", "cache_read_input_tokens",
               "usage.cache_read_input_tokens", "prompt_tokens_details.cached_tokens"),
    "id": ("id", "request_id", "requestId", "call_id", "litellm_call_id", "response_id"),
}
CHUNK_ROWS = 1_000_000
"""Rows checked at a time. [rows]"""
LONG_ROW_LINES = 100
"""A CSV row over more lines than this is read again line by line and reported (an unclosed quote?). [lines]"""
LOG_FILE = "a request log (JSON Lines, JSON, CSV or Parquet, optionally .gz)"
JSON_ARRAY_MAX_BYTES = 1024 * files.MIB
"""Largest log given as one JSON array (read whole); JSON Lines have no limit. [bytes]"""


class SlowPath(Exception):
    """The fast CSV reader cannot read this file exactly; read it line by line instead."""


def kind_of(path: Path) -> str:
    """'parquet', 'json' or 'csv', by the file's name (``.gz`` aside). [text]"""
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "json"
    return "csv"


def resolve_columns(present: list[str], mapping: dict[str, str], src: str) -> dict[str, str]:
    lower = {c.lower(): c for c in present}
    chosen = {}
    for role in ROLES:
        if role in mapping:
            if mapping[role] not in present:
                raise InputError(src, [f"column {mapping[role]!r} (--columns {role}=…) not found; columns: {', '.join(present[:20])}"])
            chosen[role] = mapping[role]
            continue
        for candidate in RECOGNISED[role]:
            if candidate.lower() in lower:
                chosen[role] = lower[candidate.lower()]
                break
    missing = [r for r in ("timestamp", "prompt", "output") if r not in chosen]
    if missing:
        expected = "; ".join(f"{r}: {', '.join(RECOGNISED[r][:4])}…" for r in missing)
        raise InputError(src, [(f"no recognisable {', '.join(missing)} column (columns: {', '.join(present[:20]) or 'none'}); "
                               f"expected {expected}, or map them with --columns timestamp=…,prompt=…,output=…")])
    return chosen


class _Rows:
    """Raw values of the chosen columns, collected row by row, handed on as chunks."""

    def __init__(self, src: str, unit: str, chosen: dict[str, str]):
        self.src, self.unit, self.chosen = src, unit, chosen
        self.where: list[int] = []
        self.values: dict[str, list] = {role: [] for role in chosen}

    def add(self, where: int, get) -> None:
        self.where.append(where)
        for role, col in self.chosen.items():
            self.values[role].append(get(col))

    def __len__(self) -> int:
        return len(self.where)

    def chunk(self) -> Chunk:
        import pandas as pd

        out = Chunk(self.src, self.unit, self.where,
                    {role: (col, pd.Series(self.values[role], dtype=object)) for role, col in self.chosen.items()})
        self.where = []
        self.values = {role: [] for role in self.chosen}
        return out


def _lines(path: Path, src: str, bad: BadRows, progress):
    """Decoded lines of a text log; undecodable or over-long lines reported and given as blank."""
    for line in files.iter_lines(path, LOG_FILE, progress=progress):
        if line.text is None:
            bad.add("unreadable line", 1, [f"{src} line {line.number}: {line.problem}"])
            yield line.number, "\n"
        else:
            yield line.number, line.text


def json_rows(path: Path, src: str, mapping: dict[str, str], bad: BadRows, progress):
    """JSON Lines (one record per line) or a JSON array of records; nested fields named with dots ('usage.prompt_tokens')."""
    from xlplan.io.structured import record_problem

    lines = _lines(path, src, bad, progress)
    first = None
    for number, text in lines:
        if text.strip():
            first = (number, text)
            break
    if first is None:
        return
    if first[1].lstrip().startswith("["):
        yield from _json_array_rows(path, src, mapping, bad)
        return
    rows: _Rows | None = None
    pending: list[tuple[int, dict]] = []

    def flush_pending():
        nonlocal rows
        keys: dict[str, None] = {}
        for _, rec in pending:
            keys.update(dict.fromkeys(_flat_keys(rec)))
        rows = _Rows(src, "line", resolve_columns(list(keys), mapping, src))
        for n, rec in pending:
            rows.add(n, lambda col, rec=rec: _get(rec, col))

    broken = []
    for number, text in _chain(first, lines):
        if not text.strip():
            continue
        rec, problem = _json_object(text)
        if problem is None:
            problem = record_problem(rec)
        if problem:
            broken.append(f"{src} line {number}: {problem}")
            bad.add("unreadable JSON line", 1, broken[-1:])
            continue
        if rows is None:
            pending.append((number, rec))
            if len(pending) >= 1000:
                flush_pending()
        else:
            rows.add(number, lambda col, rec=rec: _get(rec, col))
            if len(rows) >= CHUNK_ROWS:
                yield rows.chunk()
    if rows is None and pending:
        flush_pending()
    if rows is not None and len(rows):
        yield rows.chunk()


def _chain(first, rest):
    yield first
    yield from rest


def _json_object(text: str):
    import json

    from xlplan.io.structured import loads_marked

    try:
        rec = loads_marked(text)
    except (json.JSONDecodeError, RecursionError) as e:
        return None, f"not valid JSON ({getattr(e, 'msg', 'nested too deeply')})"
    if not isinstance(rec, dict):
        return None, f"a JSON {type(rec).__name__}, not an object; expected one request record per line"
    return rec, None


def _json_array_rows(path: Path, src: str, mapping: dict[str, str], bad: BadRows):
    import json

    from xlplan.io.structured import loads_marked, record_problem

    text = files.read_text(path, LOG_FILE, JSON_ARRAY_MAX_BYTES)
    try:
        records = loads_marked(text)
    except json.JSONDecodeError as e:
        raise InputError(src, [(f"line {e.lineno}, column {e.colno}: not valid JSON ({e.msg}); expected a JSON array of request "
                               "records")]) from None
    except RecursionError:
        raise InputError(src, ["nested too deeply; expected a JSON array of request records"]) from None
    if not isinstance(records, list):
        raise InputError(src, [f"(top level): got a JSON {type(records).__name__}; expected an array of request records"])
    good: list[tuple[int, dict]] = []
    for k, rec in enumerate(records, start=1):
        problem = (f"a JSON {type(rec).__name__}, not an object" if not isinstance(rec, dict) else record_problem(rec))
        if problem:
            bad.add("unreadable JSON record", 1, [f"{src} record {k}: {problem}"])
        else:
            good.append((k, rec))
    if not good:
        return
    keys: dict[str, None] = {}
    for _, rec in good[:1000]:
        keys.update(dict.fromkeys(_flat_keys(rec)))
    rows = _Rows(src, "record", resolve_columns(list(keys), mapping, src))
    for k, rec in good:
        rows.add(k, lambda col, rec=rec: _get(rec, col))
        if len(rows) >= CHUNK_ROWS:
            yield rows.chunk()
    if len(rows):
        yield rows.chunk()


def _flat_keys(rec: dict, prefix: str = "", depth: int = 0):
    for k, v in rec.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and depth < 4:
            yield from _flat_keys(v, key + ".", depth + 1)
        else:
            yield key


def _get(rec: dict, col: str):
    if col in rec:
        return rec[col]
    node = rec
    for part in col.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return None if isinstance(node, (dict, list)) else node


def csv_rows_slow(path: Path, src: str, mapping: dict[str, str], bad: BadRows, progress):
    """CSV rows with the line each starts on; rows that cannot be read reported."""
    lines = _lines(path, src, bad, progress)
    numbers: list[int] = []

    def text():
        for number, line in lines:
            numbers.append(number)
            yield line

    header: list[str] | None = None
    rows: _Rows | None = None
    old_limit = csv.field_size_limit()
    csv.field_size_limit(files.LINE_MAX_BYTES)
    try:
        for rec in csv_records(csv.reader(text())):
            if rec.fields is None:
                bad.add("unreadable CSV row", 1, [f"{src} line {numbers[-1] if numbers else 1}: {rec.error}"])
                continue
            row, start = rec.fields, rec.first
            if rec.last - start >= LONG_ROW_LINES:
                bad.add("row over many lines (an unclosed quote?)", 1,
                        [f"{src} lines {start}-{rec.last}: one row of {len(row)} field(s); expected one request a line"])
                continue
            if header is None:
                header = [c.strip() for c in row]
                rows = _Rows(src, "line", resolve_columns(header, mapping, src))
                index = {c: i for i, c in reversed(list(enumerate(header)))}
                continue
            if len(row) != len(header):
                bad.add("wrong number of fields", 1, [f"{src} line {start}: {len(row)} field(s) where the header has {len(header)}"])
                continue
            rows.add(start, lambda col, row=row, index=index: row[index[col]])
            if len(rows) >= CHUNK_ROWS:
                yield rows.chunk()
    finally:
        csv.field_size_limit(old_limit)
    if rows is not None and len(rows):
        yield rows.chunk()


def parquet_rows(path: Path, src: str, mapping: dict[str, str]):
    import pandas as pd

    from xlplan.io.extras import require

    files.check_input(path, LOG_FILE)
    require("pyarrow", command="traffic")
    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError, ImportError) as e:
        raise InputError(src, [f"cannot read it as Parquet ({type(e).__name__}: {str(e)[:200]}); expected {LOG_FILE}"]) from None
    chosen = resolve_columns([str(c) for c in frame.columns], mapping, src)
    for start in range(0, max(len(frame), 1), CHUNK_ROWS):
        part = frame.iloc[start:start + CHUNK_ROWS]
        if len(part):
            yield Chunk(src, "row", list(range(start + 1, start + len(part) + 1)),
                        {role: (col, part[col].reset_index(drop=True)) for role, col in chosen.items()})


def _csv_header(path: Path, src: str) -> tuple[list[str] | None, int]:
    """(the header's fields, the line it is on), or (None, 0) for a file with no row."""
    lines = files.iter_lines(path, LOG_FILE)
    for line in lines:
        if line.text is None or not line.text.strip():
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
    import numpy as np
    import pandas as pd

    header, header_line = _csv_header(path, src)
    if header is None:
        return
    chosen = resolve_columns(header, mapping, src)
    index = {c: i for i, c in reversed(list(enumerate(header)))}
    width = len(header)
    extra = 0  # physical lines before the current chunk that are not one row each (quoted newlines)
    skipped: list[int] = []
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
                for w in caught:
                    m = _SKIPPED.search(str(w.message))
                    if m:
                        skipped.append(int(m.group(1)))
                        bad.add("wrong number of fields", 1, [(f"{src} line {m.group(1)}: {m.group(3)} field(s) where the header "
                                                              f"has {m.group(2)}")])
                caught.clear()
                if progress and not files.is_gzip(path):
                    position = stream.tell()
                    progress(position - read)
                    read = position
                texts = [c for c in range(width) if frame[c].dtype == object]
                newlines = np.zeros(len(frame), dtype=np.int64)
                for c in texts:
                    col = frame[c].astype("string")
                    has = col.str.contains("\n", regex=False).to_numpy(dtype=bool, na_value=False)
                    if has.any():
                        newlines[has] += col[has].str.count("\n").to_numpy(dtype=np.int64)
                if newlines.max(initial=0) >= LONG_ROW_LINES:
                    raise SlowPath
                before = np.concatenate([[0], np.cumsum(newlines)[:-1]]) + extra
                extra += int(newlines.sum())
                lines = header_line + 1 + frame.index.to_numpy(dtype=np.int64) + before
                for line in sorted(skipped):
                    lines[lines >= line] += 1
                keep = ~frame.isna().all(axis=1).to_numpy(dtype=bool)  # blank lines
                unreadable = np.zeros(len(frame), dtype=bool)
                for col in chosen.values():
                    if index[col] in texts:
                        unreadable |= frame[index[col]].astype("string").str.contains("[\udc80-\udcff]", regex=True).to_numpy(
                            dtype=bool, na_value=False)
                unreadable &= keep
                if unreadable.any():
                    bad.add("unreadable line", int(unreadable.sum()),
                            [f"{src} line {lines[i]}: not UTF-8 text" for i in np.flatnonzero(unreadable)[:5]])
                    keep &= ~unreadable
                rows = frame[keep].reset_index(drop=True)
                if len(rows):
                    yield Chunk(src, "line", lines[keep],
                                {role: (col, rows[index[col]]) for role, col in chosen.items()})
        except (pd.errors.ParserError, csv.Error, UnicodeError, OverflowError, MemoryError, ValueError):
            raise SlowPath from None
