"""Reading request logs: OpenAI usage records, LiteLLM spend logs, plain CSV or Parquet (``.gz`` as they are).

A log is recognised by its columns; ``columns`` maps any others
(``{"timestamp": "ts", "prompt": "in_tok", "output": "out_tok"}``). Every file goes
through the input layer (:mod:`xlplan.io.files`: a folder, a device, a damaged or
truncated ``.gz``, a decompression bomb are refused), and is read line by line, so
one bad line among thousands is one row left out, never the whole file:

- a row that cannot be read (not UTF-8, not a JSON object, a CSV row with the wrong
  number of fields) or whose values do not hold a request (see
  :mod:`xlplan.io.log_values`) is left out, counted and reported with file, line and
  column; a request id seen before (the same log given twice) is left out the same way;
- a row whose timestamp reads but whose lengths do not is still an arrival: it counts toward the rates, not the
  length percentiles;
- timestamps in two Unix units (seconds among milliseconds) are refused, never left out (that would halve the peak);
- ``strict`` makes any of them an error, and so are more than ``BAD_SHARE_MAX`` of the rows (they could change the
  forecast); a row with no readable time inside the peak window is refused by the command that finds that window
  (:func:`untimed_inside`);
- file-level problems (empty, no recognisable columns, mixed time zones) are errors naming the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from xlplan.io import files
from xlplan.io.errors import InputError
from xlplan.io.log_csv import csv_rows, csv_rows_slow
from xlplan.io.log_formats import CHUNK_ROWS, LOG_FILE, RECOGNISED, ROLES, SlowPath, json_rows, kind_of, parquet_rows
from xlplan.io.log_values import EXAMPLES, BadRows, Chunk, FileState, cached_above_prompt, show, timestamps, token_counts

__all__ = ["CHUNK_ROWS", "RECOGNISED", "BadRows", "Requests", "parse_columns", "read_logs", "untimed_inside"]

PROGRESS_MIN_BYTES = 20_000_000
"""Logs larger than this (about a second's reading) get a progress bar. [bytes]"""
BAD_SHARE_MAX = 0.01
"""Above this share of rows left out (duplicates aside), the log is refused rather than summarised from the rest: so many
could change the forecast. [fraction]"""
DUPLICATE = "duplicate request id"


@dataclass
class Requests:
    """The requests read from one or more logs, as arrays."""

    t_s: object  # numpy array, Unix time [s]
    prompt: object  # [tokens]
    output: object  # [tokens]
    cached: object | None  # [tokens]
    files: list[str]
    offset_s: float  # the logs' time zone offset from UTC [s]
    zone: str  # 'UTC', '+02:00', or 'as written (no zone)'
    bad: BadRows
    columns: dict[str, dict[str, str]]  # file -> role -> column used
    arrival_t_s: object = None  # every arrival with a readable time, lengths readable or not (rates use these) [s]
    arrival_file: object = None  # index into files of each arrival [—]
    arrival_number: object = None  # line (record, row) of each arrival [—]

    @property
    def arrivals_without_lengths(self) -> int:
        """Arrivals whose lengths could not be read: in the rates, not in the length percentiles. [requests]"""
        return int(self.arrival_t_s.size - self.t_s.size)


def parse_columns(text: str | None) -> dict[str, str]:
    """``timestamp=ts,prompt=in_tok,output=out_tok[,cached=c][,id=request_id]`` as a mapping."""
    if not text:
        return {}
    out = {}
    for part in text.split(","):
        role, sep, name = part.partition("=")
        role = role.strip()
        if not sep or role not in ROLES or not name.strip():
            raise InputError("--columns", [f"got {part!r}; expected role=column with role one of {', '.join(ROLES)}"])
        out[role] = name.strip()
    return out


def _offset_s(zone: str | None) -> float:
    if not zone or zone == "none":
        return 0.0
    sign = -1.0 if zone.startswith("-") else 1.0
    hh, mm = zone[1:].split(":")
    return sign * (int(hh) * 3600 + int(mm) * 60)


@dataclass
class _Collected:
    """The kept rows of every chunk, as arrays, with where each came from."""

    t: list = field(default_factory=list)
    prompt: list = field(default_factory=list)
    output: list = field(default_factory=list)
    cached: list = field(default_factory=list)
    ids: list = field(default_factory=list)  # per chunk: a pandas Series of ids, or None without an id column
    file: list = field(default_factory=list)  # per chunk: the file's index, an array per kept row
    number: list = field(default_factory=list)  # per chunk: line (record, row) numbers of the kept rows
    unit: dict = field(default_factory=dict)  # file index -> 'line', 'record' or 'row'
    any_without_cached: bool = False
    lengthless: list = field(default_factory=list)  # per chunk: (t, file, number) of arrivals whose lengths are bad

    def extend(self, other: _Collected) -> None:
        """Append another file's rows."""
        for name in ("t", "prompt", "output", "cached", "ids", "file", "number", "lengthless"):
            getattr(self, name).extend(getattr(other, name))
        self.unit.update(other.unit)
        self.any_without_cached |= other.any_without_cached


def _keep(chunk: Chunk, state: FileState, bad: BadRows, out: _Collected, file_index: int) -> None:
    import numpy as np

    t = timestamps(chunk, state, bad)
    good = ~np.isnan(t)
    counts = {}
    for role in ("prompt", "output", "cached"):
        if role in chunk.columns:
            counts[role] = token_counts(chunk, role, bad)
            good &= ~np.isnan(counts[role])
    if "cached" in counts:
        sub = Chunk(chunk.src, chunk.unit, np.asarray(chunk.where)[good],
                    {"cached": (chunk.columns["cached"][0], chunk.columns["cached"][1][good].reset_index(drop=True))})
        checked = cached_above_prompt(sub, counts["prompt"][good], counts["cached"][good], bad)
        keep_idx = np.flatnonzero(good)
        good[keep_idx[np.isnan(checked)]] = False
    else:
        out.any_without_cached = True
    timed_only = ~np.isnan(t) & ~good
    out.lengthless.append((t[timed_only], np.full(int(timed_only.sum()), file_index, dtype=np.int32),
                           np.asarray(chunk.where, dtype=np.int64)[timed_only]))
    out.t.append(t[good])
    out.prompt.append(counts["prompt"][good])
    out.output.append(counts["output"][good])
    if "cached" in counts:
        out.cached.append(counts["cached"][good])
    ids = chunk.columns.get("id")
    out.ids.append(None if ids is None else ids[1][good].reset_index(drop=True))
    out.file.append(np.full(int(good.sum()), file_index, dtype=np.int32))
    out.number.append(np.asarray(chunk.where, dtype=np.int64)[good])
    out.unit[file_index] = chunk.unit


def _drop_duplicate_ids(out: _Collected, srcs: list[str], col_of: dict[int, str], bad: BadRows):
    """Keep-mask over the collected rows: False for a request id seen before (in any file)."""
    import numpy as np
    import pandas as pd

    n = sum(a.size for a in out.t)
    if all(ids is None for ids in out.ids):
        return np.ones(n, dtype=bool)
    ids = pd.concat([pd.Series([None] * a.size, dtype=object) if s is None else s.astype(object)
                     for s, a in zip(out.ids, out.t)], ignore_index=True)
    text = ids.map(lambda v: None if v is None or isinstance(v, (float, bool, dict, list)) or (isinstance(v, str) and not v.strip())
                   else str(v))
    given = text.notna().to_numpy(dtype=bool)
    repeated = given & text.duplicated(keep="first").to_numpy(dtype=bool)
    files, numbers = np.concatenate(out.file), np.concatenate(out.number)
    places = []
    if repeated.any():
        for k in np.flatnonzero(repeated)[:EXAMPLES]:
            k0 = int(np.flatnonzero((text == text.iat[k]).to_numpy(dtype=bool, na_value=False))[0])
            f, f0 = int(files[k]), int(files[k0])
            places.append(f"{srcs[f]} {out.unit[f]} {numbers[k]}, column {col_of.get(f, 'id')!r}: {show(text.iat[k])} was seen "
                          f"before, at {srcs[f0]} {out.unit[f0]} {numbers[k0]}; expected each request once")
    bad.add(DUPLICATE, int(repeated.sum()), places)
    return ~repeated


def read_logs(paths: list[str | Path], columns: dict[str, str] | None = None, strict: bool = False,
              show_progress: bool | None = None) -> Requests:
    """Read request logs into arrays; bad rows counted and reported (an error under ``strict``).

    Parameters
    ----------
    paths
        The logs. [path]
    columns
        Role -> column name, for columns not recognised by name. [text]
    strict
        Any bad row is an error. [bool]
    show_progress
        A progress bar; None: for logs over ``PROGRESS_MIN_BYTES``. [bool]

    Raises
    ------
    InputError
        For an unreadable, empty or unrecognisable file, the same file given twice, mixed time zones,
        no usable rows, more bad rows than good, or (``strict``) any bad row.
    """
    from xlplan.io.extras import require

    require("pandas", command="traffic")
    columns = columns or {}
    paths = _distinct_inputs([Path(p) for p in paths])
    bad = BadRows()
    out = _Collected()
    used: dict[str, dict[str, str]] = {}
    zone = _Zone()
    bar = _progress_bar(paths, show_progress)
    try:
        for index, p in enumerate(paths):
            got = _read_file(p, index, columns, bar)
            src = str(p)
            if got.columns is not None:
                used[src] = got.columns
            bad.merge(got.bad)
            out.extend(got.out)
            zone.add(got.state.zone, src, used)
            if got.rows == 0 and got.bad.total == 0:
                raise InputError(src, ["empty: no requests in the file; expected one request per line or row"])
    finally:
        if bar is not None:
            bar.stop()
    return _requests(out, [str(p) for p in paths], bad, used, zone.seen, strict)


def _distinct_inputs(paths: list[Path]) -> list[Path]:
    """The logs, each checked readable; the same file given twice (under any name) is an error."""
    seen: dict[str, str] = {}
    for p in paths:
        files.check_input(p, LOG_FILE)
        real = os.path.realpath(p)
        if real in seen:
            raise InputError(str(p), [f"given twice (also as {seen[real]}); expected each log once (its requests would count twice)"])
        seen[real] = str(p)
    return paths


@dataclass
class _FileRead:
    """One file's rows, its bad rows and its time zone, with the columns it used (None: no chunk came)."""

    state: FileState
    bad: BadRows
    out: _Collected
    columns: dict[str, str] | None
    rows: int


def _read_file(p: Path, index: int, columns: dict[str, str], bar) -> _FileRead:
    """One log's rows by its format's reader; a CSV the fast reader cannot read exactly is read again line by line."""
    src = str(p)
    kind = kind_of(p)
    used = None  # kept across a retry, as the chunks before the slow path was needed saw them
    for reader in ((parquet_rows,) if kind == "parquet" else (json_rows,) if kind == "json" else (csv_rows, csv_rows_slow)):
        state, file_bad, file_out = FileState(), BadRows(), _Collected()
        progress = _advance(bar, p)
        rows = 0
        try:
            chunks = reader(p, src, columns) if kind == "parquet" else reader(p, src, columns, file_bad, progress)
            for chunk in chunks:
                used = {role: col for role, (col, _) in chunk.columns.items()}
                _keep(chunk, state, file_bad, file_out, index)
                rows += len(chunk.columns["timestamp"][1])
        except SlowPath:
            continue  # read it again, line by line
        break
    return _FileRead(state, file_bad, file_out, used, rows)


@dataclass
class _Zone:
    """The logs' one time zone, and the first file that gave it."""

    seen: str | None = None
    file: str = ""

    def add(self, zone: str | None, src: str, used: dict[str, dict[str, str]]) -> None:
        """Take a file's zone; a second, different zone is an error naming both files."""
        if zone is None or zone == "none":
            return
        if self.seen is None:
            self.seen, self.file = zone, src
        elif zone != self.seen:
            col = used.get(src, {}).get("timestamp", "timestamp")
            raise InputError(src, [(f"column {col!r}: time zone {zone}, but {self.file} is in {self.seen}; "
                                   "expected one time zone across the logs")])


def _requests(out: _Collected, srcs: list[str], bad: BadRows, used: dict[str, dict[str, str]], zone_seen: str | None,
              strict: bool) -> Requests:
    """The kept rows as arrays, duplicates left out; refused under ``strict``, with none left, or with more bad than good."""
    import numpy as np

    keep = _drop_duplicate_ids(out, srcs, {i: used.get(s, {}).get("id", "id") for i, s in enumerate(srcs)}, bad)
    names = ", ".join(srcs)
    if bad.total and strict:
        raise InputError(names, [f"{bad.total:,} bad row(s) (--strict)"], bad.lines())
    t_all = np.concatenate(out.t)[keep] if out.t else np.array([])
    if t_all.size == 0:
        raise InputError(names, ["no usable requests"], bad.lines())
    unusable = bad.total - bad.counts.get(DUPLICATE, 0)  # a copy of a log given twice is not a sign of a wrong format
    rows = unusable + t_all.size
    if unusable > BAD_SHARE_MAX * rows:
        hint = ("check the format, or map the columns with --columns" if unusable > rows / 2
                else "fix or remove them, or give the part of the log they are not in")
        raise InputError(names, [(f"{unusable:,} of {rows:,} rows are bad ({unusable / rows:.1%}), more than "
                                 f"{BAD_SHARE_MAX:.0%}: enough to change the forecast; expected a log whose rows hold "
                                 f"requests ({hint})")], bad.lines())
    cached = np.concatenate(out.cached)[keep] if out.cached and not out.any_without_cached else None
    parts = [(np.concatenate(out.t)[keep], np.concatenate(out.file)[keep], np.concatenate(out.number)[keep])] + out.lengthless
    return Requests(
        t_s=t_all, prompt=np.concatenate(out.prompt)[keep], output=np.concatenate(out.output)[keep], cached=cached,
        files=srcs, offset_s=_offset_s(zone_seen), zone=zone_seen or "UTC or as written (no zone in the log)", bad=bad, columns=used,
        arrival_t_s=np.concatenate([p[0] for p in parts]), arrival_file=np.concatenate([p[1] for p in parts]),
        arrival_number=np.concatenate([p[2] for p in parts]),
    )


def untimed_inside(req: Requests, start_s: float, end_s: float) -> str | None:
    """The first row with no readable time that lies, by its line, among the arrivals of the window [start_s, end_s)
    of the same file (logs are written in time order): it may belong to the window, so the window's rate may be
    higher. A line naming it and the window's lines; None where there is none. [text]"""
    import numpy as np

    inside = (req.arrival_t_s >= start_s) & (req.arrival_t_s < end_s)
    for f, src in enumerate(req.files):
        lines = req.arrival_number[inside & (req.arrival_file == f)]
        untimed = np.asarray(req.bad.untimed.get(src, []), dtype=np.int64)
        if lines.size == 0 or untimed.size == 0:
            continue
        lo, hi = int(lines.min()), int(lines.max())
        within = untimed[(untimed > lo) & (untimed < hi)]
        if within.size:
            return (f"{src} line {int(within.min())}: a row with no readable time among lines {lo:,}-{hi:,}, the peak "
                    f"window's; expected every row inside the peak window to be readable (it may be part of the peak)")
    return None


def _progress_bar(paths: list[Path], show: bool | None):
    total = sum(p.stat().st_size for p in paths)
    if not (total > PROGRESS_MIN_BYTES if show is None else show):
        return None
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    bar = Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(), TimeRemainingColumn(), transient=False)
    bar.start()
    return bar


def _advance(bar, path: Path):
    if bar is None:
        return None
    task = bar.add_task(f"reading {path.name}", total=path.stat().st_size)
    return lambda n: bar.update(task, advance=n)
