"""Checking a request log's values, a chunk of rows at a time: what a row must hold to count as a request.

A row is left out, counted and reported with its file, line and column when:

- its timestamp is unparseable, in another format than the file's (Unix seconds among
  ISO 8601 text, milliseconds among seconds: the file's format is the one most of its
  rows use), or outside 2000-2100 (a 0 read as 1970, a typo in the year);
- a token count is missing, not a number (a boolean is not one), negative, not whole,
  not finite, or above ``MAX_TOKENS``;
- its cached tokens exceed its prompt tokens.

Duplicate request ids are found across all files once every row is read (:mod:`xlplan.io.logs`).
Time zones written in ISO 8601 text must agree within a log (an error, not a row).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xlplan.io.errors import InputError

EXAMPLES = 5
"""Places shown for the rows left out, across reasons. [rows]"""
UNTIMED_MAX = 100_000
"""Lines kept per file of rows that could not be placed in time (beyond it the log is refused by share anyway). [rows]"""
T_MIN_S = 946_684_800.0
"""Earliest timestamp accepted: 2000-01-01 00:00 UTC. [s, Unix time]"""
T_MAX_S = 4_102_444_800.0
"""Timestamps from here on are refused: 2100-01-01 00:00 UTC. [s, Unix time]"""
MAX_TOKENS = 100_000_000
"""Largest token count accepted for one request, beyond any model's context. [tokens]"""
UNIX = ((1e11, 1.0, "Unix seconds"), (1e14, 1e-3, "Unix milliseconds"), (1e17, 1e-6, "Unix microseconds"),
        (float("inf"), 1e-9, "Unix nanoseconds"))
"""Numeric timestamps by magnitude: (below, seconds per unit, name). [—]"""
ISO = "ISO 8601 text"
FORMATS = ("unparseable", *(name for _, _, name in UNIX), ISO)


@dataclass
class BadRows:
    """Rows left out, by reason, with the first few places."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    untimed: dict[str, list[int]] = field(default_factory=dict)  # file -> lines of rows with no readable time [line]

    def untimed_at(self, src: str, numbers) -> None:
        """Note rows that could not be placed in time (no readable timestamp, or no row at all), by file and line, so a
        reader can tell whether they fall inside the peak window; at most ``UNTIMED_MAX`` lines a file are kept."""
        kept = self.untimed.setdefault(src, [])
        room = UNTIMED_MAX - len(kept)
        if room > 0:
            kept.extend(int(n) for n in list(numbers)[:room])

    def add(self, reason: str, n: int, where: list[str]) -> None:
        """Count ``n`` rows left out for ``reason``, keeping the first place of each reason and the first few overall."""
        if n:
            new = reason not in self.counts
            self.counts[reason] = self.counts.get(reason, 0) + n
            room = max(0, EXAMPLES - len(self.examples))
            self.examples.extend(where[: max(room, 1 if new else 0)])

    def merge(self, other: BadRows) -> None:
        """Add another count's rows and places (one file's) to this one."""
        new = [reason for reason in other.counts if reason not in self.counts]
        for reason, n in other.counts.items():
            self.counts[reason] = self.counts.get(reason, 0) + n
        for src, numbers in other.untimed.items():
            self.untimed_at(src, numbers)
        self.examples.extend(other.examples[: max(EXAMPLES - len(self.examples), len(new))])

    @property
    def total(self) -> int:
        """Rows left out. [rows]"""
        return sum(self.counts.values())

    def lines(self) -> list[str]:
        """The report: a line per reason, then the examples. [text]"""
        return [f"{n:,} row(s) left out: {reason}" for reason, n in self.counts.items()] + [f"  e.g. {e}" for e in self.examples]


@dataclass
class Chunk:
    """Rows of one file, as read: each role's column name and raw values, and where each row is."""

    src: str  # the file [path]
    unit: str  # 'line', 'record' or 'row' [text]
    where: object  # line (record, row) number of each row: a list or a numpy array [—]
    columns: dict[str, tuple[str, object]]  # role -> (column name, pandas Series of raw values)


@dataclass
class FileState:
    """What the first rows of a file settle for the rest of it."""

    format: int | None = None  # index into FORMATS
    zone: str | None = None  # the zone written in its ISO 8601 text, '+00:00'; None: none written


def show(v) -> str:
    """A raw value as a message shows it: numbers bare, text quoted. [text]"""
    v = v.item() if hasattr(v, "item") else v
    if isinstance(v, str):
        try:
            float(v)
            return v.strip()
        except ValueError:
            return repr(v)
    return repr(v)


def _places(chunk: Chunk, col: str, raw, mask, text: str) -> list[str]:
    import numpy as np

    idx = np.flatnonzero(mask)[:EXAMPLES]
    return [f"{chunk.src} {chunk.unit} {chunk.where[i]}, column {col!r}: {show(raw.iloc[i])}{text}" for i in idx]


def _numbers(raw):
    """(numbers, present): each value as a float (NaN where it is not a number; booleans are not), and whether a value was
    given at all (not None, NaN or blank). [—], [bool]"""
    import numpy as np
    import pandas as pd

    if pd.api.types.is_numeric_dtype(raw.dtype) and not pd.api.types.is_bool_dtype(raw.dtype):
        values = pd.Series(raw, dtype="Float64").to_numpy(dtype=float, na_value=np.nan)
        return values, ~np.isnan(values)
    obj = raw.astype(object)
    if pd.api.types.infer_dtype(obj, skipna=True) in ("string", "empty", "floating", "integer", "mixed-integer-float"):
        is_bool = np.zeros(len(obj), dtype=bool)  # no booleans to look for (text as CSV gives it, or numbers)
    else:
        is_bool = obj.map(lambda v: isinstance(v, bool)).to_numpy(dtype=bool)
    text = obj.where(~is_bool, "true").astype("string").str.strip()
    present = (text.fillna("") != "").to_numpy(dtype=bool)
    values = pd.Series(pd.to_numeric(text, errors="coerce"), dtype="Float64").to_numpy(dtype=float, na_value=np.nan)
    values[is_bool] = np.nan
    return values, present


def timestamps(chunk: Chunk, state: FileState, bad: BadRows):
    """Unix time of each row, NaN where the row is left out. [s]

    Raises
    ------
    InputError
        ISO 8601 text in more than one time zone.
    """
    import numpy as np
    import pandas as pd

    col, raw = chunk.columns["timestamp"]
    n = len(raw)
    if pd.api.types.is_datetime64_any_dtype(raw.dtype):  # Parquet: a real timestamp type
        epoch = pd.Timestamp(0, tz="UTC") if getattr(raw.dt, "tz", None) is not None else pd.Timestamp(0)
        t = np.array((raw - epoch).dt.total_seconds().to_numpy(dtype=float, na_value=np.nan))  # writable
        good = ~np.isnan(t)
        kind = np.where(good, len(FORMATS) - 1, 0)
    else:
        num, _ = _numbers(raw)
        kind = np.zeros(n, dtype=np.int64)
        magnitude = np.abs(num)
        for k, (below, _, _) in reversed(list(enumerate(UNIX, start=1))):
            kind[~np.isnan(num) & (magnitude < below)] = k
        text = None
        if not pd.api.types.is_numeric_dtype(raw.dtype) or pd.api.types.is_bool_dtype(raw.dtype):  # text: ISO 8601 among it?
            text = raw.astype(object).astype("string").str.strip()
            iso = np.isnan(num) & text.str.match(r"^\d{4}-\d{2}-\d{2}").to_numpy(dtype=bool, na_value=False)
            kind[iso] = len(FORMATS) - 1
        t = np.full(n, np.nan)
    if state.format is None and np.any(kind > 0):
        state.format = int(np.bincount(kind[kind > 0]).argmax())
    other = (kind > 0) & (kind != state.format)
    if state.format is not None and 0 < state.format < len(FORMATS) - 1:
        _refuse_mixed_units(chunk, col, raw, num, kind, other, state)
    bad.add(f"timestamp in another format in column {col!r}", int(other.sum()),
            _places(chunk, col, raw, other, f" where the file's timestamps are {FORMATS[state.format or 0]}; expected one format"))
    ours = (kind > 0) & ~other
    if pd.api.types.is_datetime64_any_dtype(raw.dtype):
        pass
    elif state.format is not None and state.format < len(FORMATS) - 1:
        t[ours] = num[ours] * UNIX[state.format - 1][1]
    elif np.any(ours):
        t[ours] = _iso_seconds(chunk, col, raw, text, ours, state)
    unparseable = (kind == 0) | (ours & np.isnan(t))
    bad.add(f"unparseable timestamp in column {col!r}", int(unparseable.sum()),
            _places(chunk, col, raw, unparseable, " is not a timestamp (expected Unix seconds or ISO 8601)"))
    t[unparseable | other] = np.nan
    bad.untimed_at(chunk.src, np.asarray(chunk.where)[unparseable | other])
    with np.errstate(invalid="ignore"):
        outside = ~np.isnan(t) & ((t < T_MIN_S) | (t >= T_MAX_S))
    if np.any(outside):
        dates = iter(_date(x) for x in t[outside][:EXAMPLES])
        places = [f"{p} is {next(dates)}; expected a date from 2000 to 2099" for p in _places(chunk, col, raw, outside, "")]
        bad.add(f"timestamp outside 2000-2099 in column {col!r}", int(outside.sum()), places)
        bad.untimed_at(chunk.src, np.asarray(chunk.where)[outside])
        t[outside] = np.nan
    return t


def _refuse_mixed_units(chunk: Chunk, col: str, raw, num, kind, other, state: FileState) -> None:
    """Numeric timestamps in two Unix units (seconds among milliseconds...) are refused, not left out: each unit's rows
    read as real dates, so leaving the minority out would quietly divide the peak (half the rows, half the rate).
    A number that is no date in its own unit (a 12, read as 1970) is a bad row, not a second unit."""
    import numpy as np

    scale = np.array([np.nan] + [u for _, u, _ in UNIX] + [np.nan])
    with np.errstate(invalid="ignore"):
        own_s = num * scale[kind]
        dated = other & (kind < len(FORMATS) - 1) & (own_s >= T_MIN_S) & (own_s < T_MAX_S)
    if not np.any(dated):
        return
    i = int(np.flatnonzero(dated)[0])
    counts = np.bincount(kind[(kind > 0) & (kind < len(FORMATS) - 1)], minlength=len(FORMATS))
    units = ", ".join(f"{counts[k]:,} in {FORMATS[k]}" for k in np.argsort(-counts) if counts[k] and 0 < k < len(FORMATS) - 1)
    raise InputError(chunk.src, [(f"column {col!r}: timestamps in more than one unit ({units}; first {chunk.unit} "
                                  f"{chunk.where[i]}: {show(raw.iloc[i])} = {_date(float(own_s[i]))} in {FORMATS[kind[i]]}); "
                                  f"expected one unit for the whole log: convert them to {FORMATS[state.format]} (leaving "
                                  "either out would understate the peak)")])


def _date(t_s: float) -> str:
    """A Unix time as a UTC date, or its year where the calendar ends. [text]"""
    import datetime as dt

    try:
        return dt.datetime.fromtimestamp(t_s, dt.timezone.utc).strftime("%Y-%m-%d")
    except (OverflowError, OSError, ValueError):
        return f"the year {1970 + t_s / 31_556_952:,.0f}"


def _iso_seconds(chunk: Chunk, col: str, raw, text, rows, state: FileState):
    import numpy as np
    import pandas as pd

    zones = text[rows].str.extract(r"(Z|[+-]\d{2}:?\d{2})$", expand=False)
    zones = zones.replace({"Z": "+00:00"}).str.replace(r"^([+-]\d{2})(\d{2})$", r"\1:\2", regex=True).fillna("none")
    first = state.zone if state.zone is not None else zones.iloc[0]
    other = zones[zones != first]
    if len(other):
        i = other.index[0]
        shown, first_shown = ("no zone" if z == "none" else z for z in (other.iloc[0], first))
        raise InputError(chunk.src, [(f"{chunk.unit} {chunk.where[i]}, column {col!r}: time zone {shown} where earlier rows have "
                                     f"{first_shown} ({show(raw.iloc[i])}); expected one time zone for the whole log: convert it "
                                     "to one zone (UTC)")])
    state.zone = first
    parsed = pd.to_datetime(text[rows], format="ISO8601", utc=True, errors="coerce")
    seconds = (parsed - pd.Timestamp(0, tz="UTC")).dt.total_seconds()
    return seconds.to_numpy(dtype=float, na_value=np.nan)


def token_counts(chunk: Chunk, role: str, bad: BadRows):
    """A role's token counts, NaN where the row is left out (cached tokens: 0 where none is given). [tokens]"""
    import numpy as np

    col, raw = chunk.columns[role]
    v, present = _numbers(raw)
    if role == "cached":
        v[~present] = 0.0
    missing = np.isnan(v)
    with np.errstate(invalid="ignore"):
        infinite = np.isinf(v)
        negative = ~missing & (v < 0)
        huge = ~missing & ~infinite & (v > MAX_TOKENS)
        fractional = ~missing & ~infinite & ~negative & ~huge & (v != np.floor(v))
    what = "missing or non-numeric" if role != "cached" else "non-numeric"
    for mask, reason, text in ((missing, f"{what} {role} token count", "; expected a token count"),
                               (negative, f"negative {role} token count", "; expected a count of at least 0"),
                               (infinite | huge, f"implausible {role} token count", f"; expected at most {MAX_TOKENS:,} tokens"),
                               (fractional, f"fractional {role} token count", "; expected a whole number of tokens")):
        bad.add(f"{reason} in column {col!r}", int(mask.sum()), _places(chunk, col, raw, mask, text))
    v[missing | negative | infinite | huge | fractional] = np.nan
    return v


def cached_above_prompt(chunk: Chunk, prompt, cached, bad: BadRows):
    """Rows whose cached tokens exceed their prompt tokens, reported; their cached count set to NaN. [tokens]"""
    import numpy as np

    with np.errstate(invalid="ignore"):
        over = cached > prompt
    col, raw = chunk.columns["cached"]
    places = [f"{p} above the prompt's {prompt[i]:,.0f} tokens; expected cached <= prompt"
              for p, i in zip(_places(chunk, col, raw, over, ""), np.flatnonzero(over))]
    bad.add(f"cached tokens above prompt tokens in column {col!r}", int(over.sum()), places)
    cached = cached.copy()
    cached[over] = np.nan
    return cached
