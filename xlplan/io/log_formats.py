"""The formats of request logs, read row by row into :class:`~xlplan.io.log_values.Chunk` s with where each row is.

- CSV: in :mod:`xlplan.io.log_csv` (pandas' C parser where it can be exact, else line by line);
- JSON Lines line by line, a JSON array whole, nested fields named with dots (``usage.prompt_tokens``);
- Parquet with pandas (pyarrow).

Every text file is opened through :mod:`xlplan.io.files` (size, ``.gz`` cap, a truncated ``.gz``).
"""

from __future__ import annotations

from pathlib import Path

from xlplan.io import files
from xlplan.io.errors import InputError
from xlplan.io.log_values import BadRows, Chunk

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


class Rows:
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


def decoded_lines(path: Path, src: str, bad: BadRows, progress):
    """Decoded lines of a text log; undecodable or over-long lines reported and given as blank."""
    for line in files.iter_lines(path, LOG_FILE, progress=progress):
        if line.text is None:
            bad.add("unreadable line", 1, [f"{src} line {line.number}: {line.problem}"])
            bad.untimed_at(src, [line.number])
            yield line.number, "\n"
        else:
            yield line.number, line.text


def json_rows(path: Path, src: str, mapping: dict[str, str], bad: BadRows, progress):
    """JSON Lines (one record per line) or a JSON array of records; nested fields named with dots ('usage.prompt_tokens')."""
    from xlplan.io.structured import record_problem

    lines = decoded_lines(path, src, bad, progress)
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
    rows: Rows | None = None
    pending: list[tuple[int, dict]] = []

    def flush_pending():
        nonlocal rows
        keys: dict[str, None] = {}
        for _, rec in pending:
            keys.update(dict.fromkeys(_flat_keys(rec)))
        rows = Rows(src, "line", resolve_columns(list(keys), mapping, src))
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
            bad.untimed_at(src, [number])
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
            bad.untimed_at(src, [k])
        else:
            good.append((k, rec))
    if not good:
        return
    keys: dict[str, None] = {}
    for _, rec in good[:1000]:
        keys.update(dict.fromkeys(_flat_keys(rec)))
    rows = Rows(src, "record", resolve_columns(list(keys), mapping, src))
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
