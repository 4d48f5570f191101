"""Reading Prometheus text-format scrapes of a vLLM or SGLang server, taken over time.

Each file is one scrape (``curl -s http://server:8000/metrics > scrape-0001.txt``),
read through the input layer (:mod:`xlplan.io.files`) and parsed with
``prometheus_client``'s parser (the ``metrics`` extra); a malformed scrape is an error
naming the file and the line.

- **Order.** Scrapes are put in time order, not argument order: by their samples'
  timestamps where every scrape carries them (the span is then measured), else by
  the files' modification times (the span is then ``interval_s`` per scrape), ties
  kept in the order given. A reordering is noted in the evidence.
- **Several engines.** A data-parallel server reports one series per engine or rank
  (``engine="0"``, ``engine="1"``; see ``ENGINE_LABELS``). Within a label set, gauges
  are averaged across engines (two caches at 60% read 60%) and counters summed;
  across other label sets (models, priorities), counts (waiting, running) and
  counters add up while fractions (cache, GPU utilisation) are averaged.
- **Duplicates.** A series given twice with the same value counts once; with two
  values (two scrapes pasted into one file) it is an error. The same file twice is an error.
- **Ranges.** Values are checked before they reach the verdict: a cache fraction
  in [0, 1] (85 is refused with "0.85, not 85"), GPU utilisation in [0, 100], every
  value finite and not negative.
- **Counters** that fall between scrapes are taken as a restart (counted from 0) and noted.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from xlplan.evidence.confirm import Scrapes
from xlplan.io import files
from xlplan.io.errors import InputError

# role -> metric names, vLLM (current and older) then SGLang
METRICS: dict[str, tuple[str, ...]] = {
    "cache": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"),
    "preemptions": ("vllm:num_preemptions_total", "vllm:num_preemptions", "sglang:num_retracted_reqs_total",
                    "sglang:num_retracted_reqs"),
    "waiting": ("vllm:num_requests_waiting", "sglang:num_queue_reqs"),
    "running": ("vllm:num_requests_running", "sglang:num_running_reqs"),
    "generation": ("vllm:generation_tokens_total", "vllm:generation_tokens", "sglang:generation_tokens_total"),
    "prompt": ("vllm:prompt_tokens_total", "vllm:prompt_tokens", "sglang:prompt_tokens_total"),
    "gpu_util": ("DCGM_FI_DEV_GPU_UTIL",),
}
KIND: dict[str, str] = {"cache": "fraction", "gpu_util": "percent", "waiting": "count", "running": "count",
                        "preemptions": "counter", "generation": "counter", "prompt": "counter"}
"""How each role's samples combine and which values are possible. [—]"""
ENGINE_LABELS = frozenset({"engine", "rank", "dp_rank", "tp_rank", "pp_rank", "data_parallel_rank", "worker", "worker_id",
                           "gpu", "device", "UUID", "pci_bus_id", "Hostname", "modelName", "DCGM_FI_DRIVER_VERSION"})
"""Labels that tell engines, ranks or GPUs of one server apart (averaged over for gauges, summed for counters)."""
FRACTION_SLACK = 1e-6
"""A cache fraction may exceed 1 by this much (rounding). [fraction]"""
MAX_INTERVAL_S = 86_400.0
"""Longest interval between scrapes. [s]"""
SCRAPE_FILE = "a Prometheus text-format scrape (curl http://server/metrics)"
_WANTED = frozenset(name for names in METRICS.values() for name in names)


@dataclass(frozen=True)
class Scrape:
    """One scrape: each metric's value (combined over its series), and when it was taken."""

    path: str
    values: dict[str, float]  # metric name -> combined value [metric's unit]
    at_s: float | None  # the samples' latest timestamp, where they carry one [s, Unix time]
    mtime_s: float  # the file's modification time [s, Unix time]
    skipped: tuple[str, ...] = ()  # malformed lines of metrics not read, left out (line and why) [text]


def _range_problem(role: str, v: float) -> str | None:
    if not math.isfinite(v):
        return f"got {v}; expected a finite number"
    if v < 0:
        return f"got {v:g}; expected a value of at least 0"
    if KIND[role] == "fraction" and v > 1 + FRACTION_SLACK:
        hint = f" ({v / 100:g}, not {v:g})" if 2 <= v <= 100 else ""
        return f"got {v:g}; expected a fraction from 0 to 1{hint}"
    if KIND[role] == "percent" and v > 100:
        return f"got {v:g}; expected a percentage from 0 to 100"
    return None


def _series(name: str, labels: dict[str, str]) -> str:
    return name + ("{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}" if labels else "")


BAD_SHARE_MAX = 0.01
"""A scrape with more than this share of its sample lines malformed is refused, as a log with so many bad rows. [fraction]"""
_PARSE_ERRORS = (ValueError, IndexError, KeyError, TypeError, AttributeError)  # what the parser raises on malformed text


def _families(text: str, src: str, skipped: list[str] | None = None):
    """The scrape's metric families. A malformed sample line of a metric the planner does not read is left out and
    noted in ``skipped`` (the readers' one policy); one of a metric it reads, or more than :data:`BAD_SHARE_MAX` of
    the sample lines, is an InputError naming the line."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        return list(text_string_to_metric_families(text))
    except _PARSE_ERRORS as e:
        kept, bad, samples = [], [], 0
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip() and not line.startswith("#"):
                samples += 1
                try:
                    list(text_string_to_metric_families(line + "\n"))
                except _PARSE_ERRORS:
                    name = line.strip().split("{", 1)[0].split(" ", 1)[0]
                    where = (f"line {number}: not Prometheus text format: {line[:120]!r}; expected 'name{{labels}} value'"
                             + (f" — {name} is a metric the plan is confirmed from" if name in _WANTED else ""))
                    if name in _WANTED or skipped is None:
                        raise InputError(src, [where]) from None
                    bad.append((number, name, where))
                    continue
            kept.append(line)
        if not bad or len(bad) > BAD_SHARE_MAX * samples:
            raise InputError(src, [f"{len(bad):,} of {samples:,} sample lines malformed; expected Prometheus text format"
                                   if bad else f"not Prometheus text format ({e})"], [w for _, _, w in bad[:5]]) from None
        skipped.extend(f"line {number} left out: a malformed {name} sample, a metric confirm does not read"
                       for number, name, _ in bad)
        return list(text_string_to_metric_families("\n".join(kept) + "\n"))


def _combine(role: str, samples: dict[tuple, float]) -> float:
    """One value from a metric's series: per label set across engines, then across label sets (see the module notes)."""
    groups: dict[tuple, list[float]] = {}
    for labels, v in samples.items():
        key = tuple((k, x) for k, x in labels if k not in ENGINE_LABELS)
        groups.setdefault(key, []).append(v)
    counter = KIND[role] == "counter"
    per_group = [sum(vs) if counter else sum(vs) / len(vs) for vs in groups.values()]
    if KIND[role] in ("fraction", "percent"):
        return sum(per_group) / len(per_group)
    return sum(per_group)


def parse_scrape(text: str, src: str, mtime_s: float = 0.0, need_cache: bool = True) -> Scrape:
    """The values a scrape's text gives the roles in ``METRICS``, checked and combined.

    ``need_cache`` off, a scrape without a cache metric is read too (the review's histograms use the cache where
    present).

    Raises
    ------
    InputError
        Malformed text (with the line), a series given twice with two values, a value out of range
        (naming the series), or (with ``need_cache``) no vLLM or SGLang cache metric.
    """
    role_of = {name: role for role, names in METRICS.items() for name in names}
    seen: dict[str, dict[tuple, float]] = {}
    stamps: list[float] = []
    problems: list[str] = []
    skipped: list[str] = []
    for family in _families(text, src, skipped):
        for sample in family.samples:
            if sample.name not in _WANTED:
                continue
            value = float(sample.value)
            labels = tuple(sorted(sample.labels.items()))
            series = seen.setdefault(sample.name, {})
            where = _series(sample.name, sample.labels)
            if labels in series:
                old = series[labels]
                if old != value and not (math.isnan(old) and math.isnan(value)):
                    problems.append(f"{where}: given twice, as {old:g} and {value:g}; expected each series once per scrape file "
                                    "(two scrapes pasted together?)")
                continue
            problem = _range_problem(role_of[sample.name], value)
            if problem:
                problems.append(f"{where}: {problem}")
            series[labels] = value
            if sample.timestamp is not None:
                stamps.append(float(sample.timestamp))
    if problems:
        raise InputError(src, problems)
    values = {name: _combine(role_of[name], samples) for name, samples in seen.items()}
    if need_cache and not any(name in values for name in METRICS["cache"]):
        found = ", ".join(sorted({f.name for f in _families(text, src)})[:8]) or "no metrics"
        raise InputError(src, [(f"no vLLM or SGLang cache metric (found: {found}); expected one of "
                               f"{', '.join(METRICS['cache'])} — is this the inference server's /metrics?")])
    return Scrape(src, values, max(stamps) if stamps else None, mtime_s, tuple(skipped))


def _pick(scrape: Scrape, role: str) -> float | None:
    for name in METRICS[role]:
        if name in scrape.values:
            return scrape.values[name]
    return None


def read_scrapes(paths: list[str | Path], interval_s: float = 15.0) -> Scrapes:
    """A series of scrapes, read and put in time order: each role's values, the span and how they were read (the
    evidence they give is :func:`xlplan.evidence.confirm.evidence`'s).

    Parameters
    ----------
    paths
        Scrape files, in any order. [path]
    interval_s
        Time between scrapes, where the samples carry no timestamps. [s]

    Returns
    -------
    Scrapes
        Each role's values in time order, the number of scrapes, the span and the notes.

    Raises
    ------
    InputError
        A missing or malformed file, the same file twice, fewer than two scrapes, scrapes without vLLM
        or SGLang metrics, a value out of range, or a bad interval.
    """
    from xlplan.io.extras import require

    if not (isinstance(interval_s, (int, float)) and 0 < interval_s <= MAX_INTERVAL_S):
        raise InputError("--interval", [f"got {interval_s!r}; expected a number of seconds above 0 and at most a day"])
    require("prometheus_client", command="confirm")
    scrapes = _each_scrape(paths)
    if len(scrapes) < 2:
        raise InputError(", ".join(map(str, paths)), ["one scrape; expected at least two, taken over time at peak (rates need two)"])
    ordered, order_notes = _in_time_order(scrapes)
    seconds = _span_s(ordered, paths, interval_s)
    skipped = [f"{s.path} {line}" for s in ordered for line in s.skipped]
    return Scrapes(series=_role_values(ordered), scrapes=len(ordered), seconds=seconds,
                   notes=tuple(order_notes + _restart_notes(ordered) + skipped))


def _each_scrape(paths: list[str | Path]) -> list[Scrape]:
    """Every file read and parsed, in the order given; the same file twice is an error."""
    scrapes: list[Scrape] = []
    seen: dict[str, str] = {}
    for p in map(Path, paths):
        real = os.path.realpath(p)
        if real in seen:
            raise InputError(str(p), [f"given twice (also as {seen[real]}); expected each scrape once"])
        seen[real] = str(p)
        text = files.read_text(p, SCRAPE_FILE, files.SCRAPE_MAX_BYTES)
        scrapes.append(parse_scrape(text, str(p), p.stat().st_mtime))
    return scrapes


def _timed(scrapes: list[Scrape]) -> bool:
    """Every scrape carries its samples' timestamps."""
    return all(s.at_s is not None for s in scrapes)


MTIME_APART_S = 1.0
"""Files whose modification times are all at least this far apart were saved as they were scraped, and are ordered by
them; closer (a checkout, a copy: written within a second) they say nothing of the order, and the order given stands. [s]"""


def _in_time_order(scrapes: list[Scrape]) -> tuple[list[Scrape], list[str]]:
    """The scrapes by their samples' timestamps (or the files' modification times where those are :data:`MTIME_APART_S`
    apart), and a note when that reorders them."""
    timed = _timed(scrapes)
    ordered = sorted(scrapes, key=(lambda s: s.at_s) if timed else (lambda s: s.mtime_s))
    if not timed and any(b.mtime_s - a.mtime_s < MTIME_APART_S for a, b in zip(ordered, ordered[1:])):
        return scrapes, []
    if ordered == scrapes:
        return ordered, []
    how = "their samples' timestamps" if timed else "the files' modification times"
    return ordered, [(f"scrapes taken in the order of {how} ({', '.join(Path(s.path).name for s in ordered[:6])}"
                     f"{', …' if len(ordered) > 6 else ''}), not as given")]


def _span_s(ordered: list[Scrape], paths: list[str | Path], interval_s: float) -> float:
    """Seconds from the first scrape to the last: measured from timestamps, else ``interval_s`` per gap. [s]"""
    if not _timed(ordered):
        return interval_s * (len(ordered) - 1)
    seconds = ordered[-1].at_s - ordered[0].at_s
    if seconds <= 0:
        raise InputError(", ".join(map(str, paths)), ["every scrape carries the same timestamp; expected scrapes taken over time"])
    return seconds


def _restart_notes(ordered: list[Scrape]) -> list[str]:
    """A note for every counter that falls between two scrapes (taken as a restart)."""
    notes = []
    for role in ("preemptions", "generation", "prompt"):
        values = [(s, _pick(s, role)) for s in ordered]
        values = [(s, v) for s, v in values if v is not None]
        for (a, x), (b, y) in zip(values, values[1:]):
            if y < x:
                notes.append(f"{role} counter fell from {x:g} to {y:g} between {Path(a.path).name} and {Path(b.path).name}: "
                             "taken as a restart")
    return notes


def _role_values(ordered: list[Scrape]) -> dict[str, list[float]]:
    """Each role's values over the ordered scrapes (a scrape without the role left out)."""
    return {role: [v for v in (_pick(s, role) for s in ordered) if v is not None] for role in METRICS}
