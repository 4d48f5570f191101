"""Reading the latency histograms of vLLM or SGLang Prometheus scrapes taken over time, for the monthly review.

Each file is one scrape, read and ordered as :mod:`xlplan.io.metrics` reads them for ``xlplan confirm`` (the same
input layer, parser, time order and gauges: running and waiting requests per engine, the cache in use where present).
Besides, each TTFT and inter-token-latency histogram is read into :class:`xlplan.evidence.production.Histogram`:

- **Names.** ``HISTOGRAMS`` maps our roles to the engines' names, newest first: vLLM's
  ``vllm:inter_token_latency_seconds`` (older vLLM: ``vllm:time_per_output_token_seconds``; where a version emits
  both, the newer is read), SGLang's ``sglang:inter_token_latency_seconds`` (older: ``time_per_output_token``).
- **Label sets.** Cumulative ``le`` buckets, ``_sum`` and ``_count`` are summed over every label set (models,
  engines, ranks): they are counters. Every label set must share one set of edges, and so must every scrape.
- **Checks.** Buckets that decrease with ``le``, a missing ``_count`` or ``_sum``, a +Inf bucket that is not the
  count, a negative or non-finite value, or edges that change: one line naming the file and the metric. A missing
  +Inf bucket is taken as the count.
- **Counter resets** are the engine's (:func:`xlplan.evidence.production._increase`): a fall between scrapes is a restart, as
  the gauge reader takes a counter that falls.
"""

from __future__ import annotations

import math
from pathlib import Path

from xlplan.evidence.production import Histogram, ScrapeSeries
from xlplan.io import files
from xlplan.io.errors import InputError
from xlplan.io.metrics import SCRAPE_FILE, Scrape, _families, _in_time_order, _pick, parse_scrape

HISTOGRAMS: dict[str, tuple[str, ...]] = {
    "ttft": ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds"),
    "itl": ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds",
            "sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"),
}
"""Our role -> the engines' histogram names, the newer name first. [—]"""
COUNT_SLACK = 1e-6
"""How far the +Inf bucket may stray from ``_count`` (relative). [fraction]"""
_SUFFIXES = ("_bucket", "_sum", "_count")


def _collect(text: str, src: str) -> dict[str, dict[str, dict]]:
    """metric -> part ('_bucket', '_sum', '_count') -> {(labels without le, le): value}, duplicates checked."""
    wanted = {name + sfx: (name, sfx) for names in HISTOGRAMS.values() for name in names for sfx in _SUFFIXES}
    out: dict[str, dict[str, dict]] = {}
    skipped: list[str] = []
    families = _families(text, src, skipped)
    bad = [line for line in skipped if any(f" {name} " in line for name in wanted)]
    if bad:
        raise InputError(src, [bad[0].replace(" left out: a malformed", ": a malformed").split(", a metric")[0]
                               + "; expected Prometheus text format in a latency histogram the review reads"])
    for family in families:
        for sample in family.samples:
            if sample.name not in wanted:
                continue
            name, sfx = wanted[sample.name]
            le = sample.labels.get("le") if sfx == "_bucket" else None
            key = (tuple(sorted((k, v) for k, v in sample.labels.items() if k != "le")), le)
            value = float(sample.value)
            part = out.setdefault(name, {}).setdefault(sfx, {})
            if not (math.isfinite(value) and value >= 0):
                raise InputError(src, [f"{sample.name}: got {value:g}; expected a finite count of at least 0"])
            if key in part and part[key] != value:
                raise InputError(src, [(f"{sample.name}: given twice, as {part[key]:g} and {value:g}; expected each series "
                                       "once per scrape file")])
            part[key] = value
    return out


def _edge(le: str | None, src: str, name: str) -> float:
    try:
        return float(le)
    except (TypeError, ValueError):
        raise InputError(src, [f"{name}_bucket: le={le!r}; expected a number or +Inf"]) from None


def _one_label_set(parts: dict, labels: tuple, src: str, name: str) -> tuple[tuple[float, ...], list[float], float, float]:
    """(edges, cumulative counts, sum, count) of one label set, checked."""
    where = name + ("{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}" if labels else "")
    for sfx in ("_count", "_sum"):
        if (labels, None) not in parts.get(sfx, {}):
            raise InputError(src, [f"{where}: no {name}{sfx}; expected _bucket, _sum and _count for each histogram"])
    count, total = parts["_count"][(labels, None)], parts["_sum"][(labels, None)]
    buckets = sorted((_edge(le, src, name), v) for (lab, le), v in parts.get("_bucket", {}).items() if lab == labels)
    for (e0, c0), (e1, c1) in zip(buckets, buckets[1:]):
        if c1 < c0:
            raise InputError(src, [(f"{where}: buckets decrease, le={e0:g} holds {c0:g} but le={e1:g} holds {c1:g}; "
                                   "expected cumulative counts that never fall as le grows")])
    if not buckets or not math.isinf(buckets[-1][0]):
        buckets.append((math.inf, count))
    if abs(buckets[-1][1] - count) > COUNT_SLACK * max(count, 1.0):
        raise InputError(src, [f"{where}: the +Inf bucket holds {buckets[-1][1]:g} but _count is {count:g}; expected them equal"])
    return tuple(e for e, _ in buckets), [c for _, c in buckets], total, count


def _histogram(name: str, parts: dict, src: str) -> Histogram:
    """The metric summed over its label sets, which must share their edges."""
    label_sets = sorted({lab for part in parts.values() for lab, _ in part})
    edges, cumulative, total, count = None, None, 0.0, 0.0
    for labels in label_sets:
        e, c, s, n = _one_label_set(parts, labels, src, name)
        if edges is not None and e != edges:
            raise InputError(src, [(f"{name}: label sets with different bucket edges ({_edges(edges)} and {_edges(e)}); "
                                   "expected one set of edges to sum over")])
        edges = e
        cumulative = c if cumulative is None else [a + b for a, b in zip(cumulative, c)]
        total, count = total + s, count + n
    return Histogram(name, edges, tuple(cumulative), total, count)


def _edges(edges: tuple[float, ...]) -> str:
    return ", ".join(f"{e:g}" for e in edges[:6]) + (", …" if len(edges) > 6 else "")


def parse_histograms(text: str, src: str) -> dict[str, Histogram]:
    """Role ('ttft', 'itl') -> the scrape's histogram, by the first of ``HISTOGRAMS``' names it carries.

    Raises
    ------
    InputError
        Malformed text, decreasing buckets, a missing ``_count`` or ``_sum``, a +Inf bucket that is not the count,
        label sets with different edges, or a negative value: one line naming the file and the metric.
    """
    found = _collect(text, src)
    out = {}
    for role, names in HISTOGRAMS.items():
        for name in names:
            if name in found:
                out[role] = _histogram(name, found[name], src)
                break
    return out


def read_histogram_scrapes(paths: list[str | Path], required: bool = True) -> ScrapeSeries | None:
    """The scrapes in time order, with their latency histograms, running and waiting requests and cache in use.

    Parameters
    ----------
    paths
        Scrape files, in any order. [path]
    required : bool
        Whether scrapes without any TTFT or ITL histogram are an error; False: None for them (the review then reads
        only the gauges, as ``confirm`` does). [bool]

    Raises
    ------
    InputError
        A missing or malformed file, the same file twice, fewer than two scrapes, a bad histogram (one line naming
        the file and the metric), edges that change between scrapes, or (``required``) no TTFT or ITL histogram in
        any scrape.
    """
    from xlplan.io.extras import require

    require("prometheus_client", command="review")
    read: list[tuple[Scrape, dict[str, Histogram]]] = []
    seen: dict[str, str] = {}
    for p in map(Path, paths):
        real = str(p.resolve())
        if real in seen:
            raise InputError(str(p), [f"given twice (also as {seen[real]}); expected each scrape once"])
        seen[real] = str(p)
        text = files.read_text(p, SCRAPE_FILE, files.SCRAPE_MAX_BYTES)
        read.append((parse_scrape(text, str(p), p.stat().st_mtime, need_cache=False), parse_histograms(text, str(p))))
    if len(read) < 2:
        raise InputError(", ".join(map(str, paths)), ["one scrape; expected at least two, taken over time"])
    ordered, notes = _in_time_order([s for s, _ in read])
    hists = {s.path: h for s, h in read}
    series = {role: [hists[s.path].get(role) for s in ordered] for role in HISTOGRAMS}
    if not any(h for hs in series.values() for h in hs):
        if not required:
            return None
        names = ", ".join(n for ns in HISTOGRAMS.values() for n in ns)
        raise InputError(", ".join(map(str, paths)), [f"no latency histogram in any scrape; expected one of {names}"])
    for hs in series.values():
        _same_edges(hs, [s.path for s in ordered])
    return ScrapeSeries(tuple(s.path for s in ordered), tuple(_pick(s, "running") for s in ordered),
                        tuple(_pick(s, "waiting") for s in ordered), tuple(_pick(s, "cache") for s in ordered),
                        tuple(series["ttft"]), tuple(series["itl"]), tuple(notes + [f"{s.path} {x}" for s in ordered for x in s.skipped]))


def _same_edges(hs: list[Histogram | None], paths: list[str]) -> None:
    """Every scrape's histogram of a role under one name with one set of edges."""
    first = next((h for h in hs if h is not None), None)
    for h, path in zip(hs, paths):
        if h is not None and (h.metric != first.metric or h.bounds_s != first.bounds_s):
            raise InputError(path, [(f"{h.metric}: edges {_edges(h.bounds_s)}, but {first.metric} had {_edges(first.bounds_s)} "
                                    "in an earlier scrape; expected one histogram with the same edges throughout")])
