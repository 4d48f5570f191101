"""Reading a measurements CSV (the corpus' columns) by the readers' one data-problem policy: an impossible or
incomplete row is left out with its line and why, a prose cell in a measured column is skipped with why, and more
than one row in a hundred left out refuses the file."""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path

from xlplan.io.errors import InputError

REQUIRED = ("id", "category", "model", "precision", "gpu", "gpu_count", "parallelism", "engine", "settings", "isl", "osl",
            "concurrency_or_rate", "weights_GiB_per_gpu", "kv_cache_GiB_per_gpu", "kv_cache_tokens", "output_tok_s",
            "tpot_or_itl_mean_ms", "source")
MEASURED = ("kv_cache_GiB_per_gpu", "kv_cache_tokens", "output_tok_s", "total_tok_s", "samples_per_s", "tpot_or_itl_mean_ms",
            "ttft_mean_ms")


_GROUPED = re.compile(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?")
"""A number with thousands commas ('22,300', '21,605.79'); any other comma ('74,4', a decimal comma) is not read."""


def _num(v) -> float | None:
    """A cell as a number ('22,300' -> 22300.0), or None: blank, prose, a comma that does not group thousands ('74,4'),
    NaN or infinite. [—]"""
    if v is None:
        return None
    text = str(v).strip()
    if "," in text:
        if not _GROUPED.fullmatch(text):
            return None
        text = text.replace(",", "")
    try:
        x = float(text)
    except ValueError:
        return None
    return None if math.isnan(x) or math.isinf(x) else x


IDENTITY = ("id", "category", "model", "precision", "gpu", "gpu_count", "engine", "source")
"""Columns every row states (the corpus has none blank): a row missing one is a truncated line, not a measurement. A
blank ``settings`` is settings not stated (the engine's defaults), a blank ``parallelism`` a layout not stated (the
row is refused naming it where it needs one)."""
POSITIVE = ("isl", "osl", "weights_GiB_per_gpu", "output_tok_s", "tpot_or_itl_mean_ms", "ttft_mean_ms")
"""Figures that are above zero wherever they are stated: a zero or negative one is impossible, not a measurement (the
KV cache's figures may be: vLLM logs a negative KV budget where the weights leave none)."""
BAD_SHARE_MAX = 0.01
"""Above this share of rows left out, the file is refused: so many could change the accuracy it reports. [fraction]"""


@dataclass(frozen=True)
class MeasurementTable:
    """A measurements file as read: the rows kept, the rows left out (by line, with why) and the cells skipped."""

    rows: list[dict]
    left_out: list[str]  # 'line 7 (X01): gpu_count: got 0; expected a whole number of GPUs, at least 1'
    skipped_cells: list[str]  # 'line 9 (X03): output_tok_s: '22,300 per node' is not a number; that figure is not checked'


def _row_problem(line: int, row: dict, seen: dict) -> str | None:
    """Why a row cannot be a measurement (an impossible or missing figure), or None. [text]"""
    rid = str(row.get("id") or "").strip()
    if not rid:
        return f"line {line}: id: empty; expected a row id"
    if rid in seen:
        return f"line {line}: id: {rid!r} also on line {seen[rid]}; expected each row once"
    blank = [c for c in IDENTITY if not str(row.get(c) or "").strip()]
    if blank:
        return (f"line {line} ({rid}): {', '.join(blank)}: blank; expected every row to state "
                f"{', '.join(IDENTITY)} (a truncated line?)")
    count = _num(row.get("gpu_count"))
    if count is None or count < 1 or count != int(count):
        return f"line {line} ({rid}): gpu_count: got {row.get('gpu_count')!r}; expected a whole number of GPUs, at least 1"
    for col in POSITIVE:
        v = _num(row.get(col))
        if v is not None and v <= 0:
            return f"line {line} ({rid}): {col}: got {row.get(col)!r}; expected a figure above 0 (a measurement cannot be {v:g})"
    return None


def read_measurement_table(path: str | Path) -> MeasurementTable:
    """A measurements CSV, read by the readers' one policy: an impossible or incomplete row (no id, a repeated id, a
    blank identity column, zero GPUs, a zero or negative figure) is left out with its line and why; a measured cell
    that holds prose ('22,300 per node') is skipped with why, the row's other figures kept; more than
    :data:`BAD_SHARE_MAX` of the rows left out refuses the file. A missing column or a file of another format is an
    InputError."""
    src, rows = str(path), _csv_rows(path)
    left_out, skipped, kept, seen = [], [], [], {}
    for line, row in enumerate(rows, start=2):
        problem = _row_problem(line, row, seen)
        if problem is not None:
            left_out.append(problem)
            continue
        rid = str(row["id"]).strip()
        seen[rid] = line
        unreadable = []
        for col in MEASURED:
            v = (row.get(col) or "").strip()
            why = _unreadable(col, v)
            if why:
                skipped.append(f"line {line} ({rid}): {col}: {why}; that figure is not checked")
                unreadable.append(f"{col} {why}")
                row = {**row, col: ""}
        if unreadable:
            row = {**row, UNREADABLE: "; ".join(unreadable)}
        kept.append(row)
    if len(left_out) > BAD_SHARE_MAX * len(rows):
        raise InputError(src, [(f"{len(left_out):,} of {len(rows):,} rows cannot be measurements (more than "
                                f"{BAD_SHARE_MAX:.0%}): fix or remove them")] + left_out)
    return MeasurementTable(kept, left_out, skipped)


UNREADABLE = "_unreadable"
"""The key under which a kept row carries why a measured cell of it was not read (a name no CSV column takes). [—]"""
LEAST_MS = {"tpot_or_itl_mean_ms": 0.5, "ttft_mean_ms": 1.0}
"""The least a latency can be: no decode step runs in under half a millisecond, no first token comes back in under
one (a figure below is a slip of units, most often seconds written in a milliseconds column). [ms]"""


def _unreadable(col: str, cell: str) -> str:
    """Why a measured cell cannot be read as its figure ('' where it can, or is blank). [text]"""
    if not cell:
        return ""
    x = _num(cell)
    if x is None:
        comma = "," in cell and _num(cell.replace(",", ".", 1)) is not None
        return f"{cell!r} is not a number" + (" (a decimal comma? write it with a point)" if comma else "")
    if col in LEAST_MS and 0 < x < LEAST_MS[col]:
        return (f"{cell} ms is below {LEAST_MS[col]:g} ms, faster than any engine (was it written in seconds? the "
                "field is in milliseconds)")
    return ""


def read_measurements(path: str | Path) -> list[dict]:
    """The rows of a measurements CSV that :func:`read_measurement_table` keeps."""
    return read_measurement_table(path).rows


def _csv_rows(path: str | Path) -> list[dict]:
    """Every row of a measurements CSV as text; the file's shape checked (columns, other formats, no rows)."""
    from xlplan.io import files

    src = str(path)
    text = files.read_text(path, "a measurements CSV", files.TABLE_MAX_BYTES)
    files.refuse_other_table_formats(src, text, len(REQUIRED), "the corpus' columns (xlplan/data/measurements.csv: id, category, model, …)")
    try:
        reader = csv.DictReader(io.StringIO(text))
        fields = reader.fieldnames or []
        rows = list(reader)
    except csv.Error as e:
        raise InputError(src, [f"not a CSV ({e}); expected the columns of the corpus, xlplan/data/measurements.csv"]) from None
    missing = [c for c in REQUIRED if c not in fields]
    if not missing and not rows:
        raise InputError(src, ["no rows: the header is there but no measurement follows it; expected at least one row"])
    if missing:
        raise InputError(src, [(f"missing column(s) {', '.join(missing)}; expected the columns of the corpus, xlplan/data/measurements.csv "
                               f"({', '.join(REQUIRED)}, …)")])
    return rows


