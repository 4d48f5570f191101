"""Reading request logs: OpenAI usage records, LiteLLM spend logs, plain CSV or Parquet (``.gz`` as they are).

A log is recognised by its columns; ``columns`` maps any others
(``{"timestamp": "ts", "prompt": "in_tok", "output": "out_tok"}``). Rows that are
wrong (an unparseable timestamp, a missing or negative token count) are counted
and reported with file, line and column, never silently dropped; ``strict``
makes any of them an error. File-level problems (empty, no recognisable columns,
mixed time zones) are errors naming the file.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from xlplan.io.errors import InputError

ROLES = ("timestamp", "prompt", "output", "cached")
RECOGNISED: dict[str, tuple[str, ...]] = {
    # OpenAI usage records first, then LiteLLM spend logs, then plain names
    "timestamp": ("created", "startTime", "start_time", "timestamp", "time", "ts", "created_at", "request_time"),
    "prompt": ("usage.prompt_tokens", "prompt_tokens", "usage.input_tokens", "input_tokens", "prompt", "tokens_in"),
    "output": ("usage.completion_tokens", "completion_tokens", "usage.output_tokens", "output_tokens", "output", "tokens_out"),
    "cached": ("usage.prompt_tokens_details.cached_tokens", "cached_tokens", "cache_read_input_tokens",
               "usage.cache_read_input_tokens", "prompt_tokens_details.cached_tokens"),
}
CHUNK_ROWS = 1_000_000
PROGRESS_MIN_BYTES = 20_000_000
"""Logs larger than this (about a second's reading) get a progress bar. [bytes]"""
EXAMPLES = 5


@dataclass
class BadRows:
    """Rows left out, by reason, with the first few places."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def add(self, reason: str, n: int, where: list[str]) -> None:
        if n:
            self.counts[reason] = self.counts.get(reason, 0) + n
            self.examples.extend(where[: max(0, EXAMPLES - len(self.examples))])

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def lines(self) -> list[str]:
        return [f"{n:,} row(s) left out: {reason}" for reason, n in self.counts.items()] + [f"  e.g. {e}" for e in self.examples]


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


def parse_columns(text: str | None) -> dict[str, str]:
    """``timestamp=ts,prompt=in_tok,output=out_tok[,cached=c]`` as a mapping."""
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


def _open_text(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")


def _kind(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "json"
    return "csv"


def _resolve_columns(present: list[str], mapping: dict[str, str], src: str) -> dict[str, str]:
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
        raise InputError(src, [f"no recognisable {', '.join(missing)} column (columns: {', '.join(present[:20]) or 'none'}); "
                               f"expected {expected}, or map them with --columns timestamp=…,prompt=…,output=…"])
    return chosen


def _json_frames(path: Path, src: str, bad: BadRows, progress):
    """JSON Lines (one record per line) or a JSON array of records, flattened ('usage.prompt_tokens')."""
    import pandas as pd

    with _open_text(path) as f:
        head = f.read(1)
        while head and head.isspace():
            head = f.read(1)
    if not head:
        return
    if head == "[":
        with _open_text(path) as f:
            try:
                records = json.load(f)
            except json.JSONDecodeError as e:
                raise InputError(src, [f"line {e.lineno}: not valid JSON ({e.msg}); expected a JSON array of request records"]) from None
        frame = pd.json_normalize(records)
        frame.index = pd.RangeIndex(1, len(frame) + 1)  # record number
        yield frame, "record"
        return
    records, lines, broken = [], [], []
    with _open_text(path) as f:
        for number, line in enumerate(f, start=1):
            if progress:
                progress(len(line))
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict):
                    raise ValueError("not an object")
            except ValueError:
                broken.append(f"{src} line {number}: not a JSON object")
                continue
            records.append(rec)
            lines.append(number)
            if len(records) >= CHUNK_ROWS:
                frame = pd.json_normalize(records)
                frame.index = pd.Index(lines)
                yield frame, "line"
                records, lines = [], []
    bad.add("unreadable JSON line", len(broken), broken)
    if records:
        frame = pd.json_normalize(records)
        frame.index = pd.Index(lines)
        yield frame, "line"


def _csv_frames(path: Path, progress):
    import pandas as pd

    raw = open(path, "rb")  # noqa: SIM115 - closed below; its position drives the progress bar
    stream = gzip.GzipFile(fileobj=raw) if path.suffix == ".gz" else raw
    start, seen = 2, 0  # line 1 is the header
    try:
        for frame in pd.read_csv(stream, chunksize=CHUNK_ROWS, low_memory=False):
            frame.index = pd.RangeIndex(start, start + len(frame))
            start += len(frame)
            if progress:
                progress(raw.tell() - seen)
                seen = raw.tell()
            yield frame, "line"
    except pd.errors.EmptyDataError:
        return
    finally:
        stream.close()
        raw.close()


def _timestamps(col, src: str, name: str, unit_word: str):
    """Unix seconds (UTC) from numbers (s or ms) or ISO 8601 text; the zone written in the text."""
    import numpy as np
    import pandas as pd

    if pd.api.types.is_numeric_dtype(col):
        t = col.astype(float)
        t = t.where(t < 1e11, t / 1000.0)  # milliseconds
        return t, None
    text = col.astype("string").str.strip()
    zones = text.str.extract(r"(Z|[+-]\d{2}:?\d{2})$", expand=False)
    zones = zones.replace({"Z": "+00:00"}).str.replace(r"^([+-]\d{2})(\d{2})$", r"\1:\2", regex=True)
    looks_like_time = text.str.match(r"^\d{4}-\d{2}-\d{2}").fillna(False).astype(bool)  # unparseable rows are counted later
    kinds = zones[looks_like_time].fillna("none")
    distinct = kinds.unique()
    if len(distinct) > 1:
        first_zone = kinds.iloc[0]
        other = kinds[kinds != first_zone]
        r = other.index[0]
        shown = "no zone" if other.iloc[0] == "none" else other.iloc[0]
        first_shown = "no zone" if first_zone == "none" else first_zone
        raise InputError(src, [f"{unit_word} {r}, column {name!r}: time zone {shown} where earlier rows have {first_shown} "
                               f"({_show(text[r])}); expected one time zone for the whole log: convert it to one zone (UTC)"])
    zone = None if not len(distinct) or distinct[0] == "none" else distinct[0]
    parsed = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
    t = (parsed - pd.Timestamp(0, tz="UTC")).dt.total_seconds()
    return t.astype(float).where(parsed.notna(), np.nan), zone


def _show(v) -> str:
    return repr(v.item() if hasattr(v, "item") else v)


def _offset_s(zone: str | None) -> float:
    if not zone:
        return 0.0
    sign = -1.0 if zone.startswith("-") else 1.0
    hh, mm = zone[1:].split(":")
    return sign * (int(hh) * 3600 + int(mm) * 60)


def read_logs(paths: list[str | Path], columns: dict[str, str] | None = None, strict: bool = False,
              show_progress: bool | None = None) -> Requests:
    """Read request logs into arrays; bad rows counted and reported (an error under ``strict``).

    Raises
    ------
    InputError
        For an unreadable, empty or unrecognisable file, mixed time zones, or (``strict``) any bad row.
    """
    import numpy as np
    import pandas as pd

    columns = columns or {}
    bad = BadRows()
    ts, ps, os_, cs = [], [], [], []
    used: dict[str, dict[str, str]] = {}
    zone_seen: str | None = None
    zone_file = ""
    any_cached = True
    total = sum(os.path.getsize(p) for p in map(Path, paths) if Path(p).exists())
    bar = None
    if show_progress is None:
        show_progress = total > PROGRESS_MIN_BYTES
    if show_progress:
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

        bar = Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                       transient=False)
        bar.start()
    try:
        for p in map(Path, paths):
            src = str(p)
            if not p.exists():
                raise InputError(src, ["file not found; expected a request log (JSON Lines, JSON, CSV or Parquet, optionally .gz)"])
            task = bar.add_task(f"reading {p.name}", total=os.path.getsize(p)) if bar else None

            def progress(n, task=task):
                if bar:
                    bar.update(task, advance=n)

            kind = _kind(p)
            try:
                if kind == "parquet":
                    frame = pd.read_parquet(p)
                    frame.index = pd.RangeIndex(1, len(frame) + 1)
                    frames = iter([(frame, "row")])
                elif kind == "json":
                    frames = _json_frames(p, src, bad, progress if bar else None)
                else:
                    frames = _csv_frames(p, progress if bar else None)
                n_rows = 0
                for frame, unit_word in frames:
                    chosen = _resolve_columns([str(c) for c in frame.columns], columns, src)
                    used[src] = chosen
                    t, zone = _timestamps(frame[chosen["timestamp"]], src, chosen["timestamp"], unit_word)
                    if zone_seen is None and zone is not None:
                        zone_seen, zone_file = zone, src
                    elif zone is not None and zone != zone_seen:
                        raise InputError(src, [f"column {chosen['timestamp']!r}: time zone {zone}, but {zone_file} is in {zone_seen}; "
                                               "expected one time zone across the logs"])
                    good = t.notna()
                    where = [f"{src} {unit_word} {i}, column {chosen['timestamp']!r}: {_show(frame.at[i, chosen['timestamp']])} "
                             "is not a timestamp (expected Unix seconds or ISO 8601)" for i in t.index[~good][:EXAMPLES]]
                    bad.add(f"unparseable timestamp in column {chosen['timestamp']!r}", int((~good).sum()), where)
                    counts = {}
                    for role in ("prompt", "output", "cached"):
                        if role not in chosen:
                            continue
                        raw = frame[chosen[role]]
                        v = pd.to_numeric(raw, errors="coerce")
                        if role == "cached":
                            v = v.fillna(0.0)
                        missing = v.isna() & good
                        negative = (v < 0) & good
                        bad.add(f"missing or non-numeric {role} token count in column {chosen[role]!r}", int(missing.sum()),
                                [f"{src} {unit_word} {i}, column {chosen[role]!r}: {_show(raw[i])}; expected a token count"
                                 for i in v.index[missing][:EXAMPLES]])
                        bad.add(f"negative {role} token count in column {chosen[role]!r}", int(negative.sum()),
                                [f"{src} {unit_word} {i}, column {chosen[role]!r}: {_show(raw[i])}; expected a count of at least 0"
                                 for i in v.index[negative][:EXAMPLES]])
                        good &= ~(missing | negative)
                        counts[role] = v
                    n_rows += len(frame)
                    ts.append(t[good].to_numpy(dtype=float))
                    ps.append(counts["prompt"][good].to_numpy(dtype=float))
                    os_.append(counts["output"][good].to_numpy(dtype=float))
                    if "cached" in counts:
                        cs.append(counts["cached"][good].to_numpy(dtype=float))
                    else:
                        any_cached = False
                if n_rows == 0 and not bad.total:
                    raise InputError(src, ["empty: no requests in the file; expected one request per line or row"])
            except InputError:
                raise
            except (OSError, ValueError, UnicodeDecodeError) as e:
                raise InputError(src, [f"cannot read it as {kind.upper()} ({type(e).__name__}: {str(e)[:200]})"]) from None
    finally:
        if bar:
            bar.stop()
    if bad.total and strict:
        raise InputError(", ".join(map(str, paths)), [f"{bad.total:,} bad row(s) (--strict)"] + bad.lines())
    t_all = np.concatenate(ts) if ts else np.array([])
    if t_all.size == 0:
        raise InputError(", ".join(map(str, paths)), ["no usable requests"] + bad.lines())
    return Requests(
        t_s=t_all, prompt=np.concatenate(ps), output=np.concatenate(os_),
        cached=np.concatenate(cs) if any_cached and cs else None, files=[str(p) for p in paths],
        offset_s=_offset_s(zone_seen), zone=zone_seen or "UTC or as written (no zone in the log)", bad=bad, columns=used,
    )
