"""Confirm the binding constraint in production from the two gauges.

Notes
-----
The runbook: "compute both, compare, then confirm in production with two
gauges" — memory binds when cache utilisation is pinned near 100%, requests
queue for blocks and preemptions rise; compute binds when the GPU is saturated
while cache utilisation is comfortable. Pure functions on per-scrape series.

- memory: cache utilisation p95 at or above ``CACHE_PINNED`` and requests
  preempted or waiting;
- compute: requests waiting (or GPU utilisation at or above ``GPU_SATURATED``)
  while cache utilisation p95 stays below ``CACHE_COMFORTABLE``;
- neither: no queue, no preemptions, the cache comfortable;
- otherwise 'unclear', with the evidence.

References
----------
Runbook, document 14, step 6 · "Memory-bound: cache utilisation pinned near 100%,
requests queue for blocks, preemptions rise. Compute-bound: GPU saturated while
cache utilisation is comfortable."
"""

from __future__ import annotations

from dataclasses import dataclass, field

CACHE_PINNED = 0.90
"""Cache utilisation (p95) at which the cache counts as pinned. [fraction]"""
CACHE_COMFORTABLE = 0.80
"""Cache utilisation (p95) below which the cache counts as comfortable. [fraction]"""
GPU_SATURATED = 0.90
"""GPU utilisation (p50) at which the GPU counts as saturated, where the scrape has it. [fraction]"""
QUEUE = 0.5
"""Median waiting requests above which requests count as queueing. [requests]"""


@dataclass(frozen=True)
class Evidence:
    """What the scrapes show. Units in the field comments."""

    scrapes: int  # [scrapes]
    seconds: float  # span covered [s]
    cache_p50: float  # [fraction]
    cache_p95: float  # [fraction]
    preemptions_per_s: float  # [preemptions/s]
    waiting_p50: float  # per engine, summed over other label sets [requests]
    waiting_max: float  # [requests]
    running_p50: float  # per engine, summed over other label sets [requests]
    generation_tok_s: float | None  # [tokens/s]
    prompt_tok_s: float | None  # [tokens/s]
    gpu_util_p50: float | None  # [fraction]
    notes: tuple[str, ...] = field(default_factory=tuple)  # how the scrapes were read: reordering, counter restarts [text]


@dataclass(frozen=True)
class Scrapes:
    """What a series of scrapes holds, as read: each role's values in time order, the span and how they were read."""

    series: dict[str, list[float]]  # role -> the values of the scrapes that have it, in time order [unit of the role]
    scrapes: int  # [scrapes]
    seconds: float  # span covered [s]
    notes: tuple[str, ...] = field(default_factory=tuple)  # reordering, counter restarts, lines skipped [text]


def evidence(sc: Scrapes) -> Evidence:
    """The gauges' percentiles and the counters' rates over a series of scrapes.

    Parameters
    ----------
    sc : Scrapes
        The scrapes as read (:func:`xlplan.io.metrics.read_scrapes`), in time order.

    Returns
    -------
    Evidence
        The cache's p50 and p95, preemptions a second, waiting and running requests, token rates and GPU
        utilisation, with the notes of how the scrapes were read.
    """
    def series(role: str) -> list[float]:
        return sc.series.get(role, [])

    cache, gpu = series("cache"), series("gpu_util")
    gen, prompt = series("generation"), series("prompt")
    seconds = sc.seconds
    return Evidence(
        scrapes=sc.scrapes, seconds=seconds, cache_p50=_percentile(cache, 0.5), cache_p95=_percentile(cache, 0.95),
        preemptions_per_s=_rate(series("preemptions"), seconds), waiting_p50=_percentile(series("waiting"), 0.5),
        waiting_max=max(series("waiting") or [0.0]), running_p50=_percentile(series("running"), 0.5),
        generation_tok_s=_rate(gen, seconds) if len(gen) > 1 else None, prompt_tok_s=_rate(prompt, seconds) if len(prompt) > 1 else None,
        gpu_util_p50=_percentile([g / 100.0 for g in gpu], 0.5) if gpu else None, notes=sc.notes,
    )


def _percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile of a short series. [unit of values]

    Parameters
    ----------
    values : list of float
        The series, one value per scrape, in any order (e.g. cache utilisation, waiting requests). [unit of values]
    q : float
        The quantile: 0.5 for the median, 0.95 for p95. [fraction]

    Returns
    -------
    float
        The value at ``q``, interpolated linearly between the two nearest ranks; 0.0 for an empty series. [unit of values]

    Examples
    --------
    >>> _percentile([0.0, 1.0], 0.5)
    0.5
    """
    v = sorted(values)
    if not v:
        return 0.0
    k = (len(v) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def _rate(counter: list[float], seconds: float) -> float:
    """Increase of a counter over the span, resets tolerated. [unit/s]

    Parameters
    ----------
    counter : list of float
        A cumulative counter's samples in time order (e.g. preemptions, tokens); a fall is a restart from 0. [unit]
    seconds : float
        The time the samples span. [s]

    Returns
    -------
    float
        The counter's increase per second; 0.0 with fewer than two samples or no span. [unit/s]

    Examples
    --------
    >>> _rate([0, 10, 20], 20.0)
    1.0
    """
    if len(counter) < 2 or seconds <= 0:
        return 0.0
    increase = sum(b - a if b >= a else b for a, b in zip(counter, counter[1:]))  # a reset restarts from 0
    return increase / seconds


def verdict(e: Evidence) -> tuple[str, str]:
    """('memory' | 'compute' | 'neither' | 'unclear', why) from the evidence; the evidence's notes follow the why.

    Parameters
    ----------
    e : Evidence
        What the scrapes show (cache and GPU utilisation, waiting requests, preemptions).

    Returns
    -------
    found : str
        'memory', 'compute', 'neither' or 'unclear'.
    why : str
        The evidence behind it, in words, then the evidence's notes.

    References
    ----------
    Runbook, document 14, step 6 · "Memory-bound: cache utilisation pinned near 100%,
    requests queue for blocks, preemptions rise. Compute-bound: GPU saturated while
    cache utilisation is comfortable."
    """
    found, why = _verdict(e)
    return found, why + "".join(f" (note: {n})" for n in e.notes)


def _verdict(e: Evidence) -> tuple[str, str]:
    queueing = e.waiting_p50 > QUEUE
    preempting = e.preemptions_per_s > 0
    saturated = e.gpu_util_p50 is not None and e.gpu_util_p50 >= GPU_SATURATED
    if e.cache_p95 >= CACHE_PINNED and (preempting or queueing):
        return "memory", (f"cache utilisation p95 {e.cache_p95:.0%} (pinned), {e.preemptions_per_s:.3f} preemptions/s, "
                          f"median {e.waiting_p50:g} waiting")
    if e.cache_p95 < CACHE_COMFORTABLE and (queueing or saturated):
        gpu = f", GPU utilisation p50 {e.gpu_util_p50:.0%}" if e.gpu_util_p50 is not None else ""
        return "compute", f"requests wait (median {e.waiting_p50:g}) while cache utilisation p95 is only {e.cache_p95:.0%}{gpu}"
    if not queueing and not preempting and e.cache_p95 < CACHE_PINNED:
        return "neither", f"no queue, no preemptions, cache utilisation p95 {e.cache_p95:.0%}: the fleet has headroom"
    return "unclear", (f"cache p95 {e.cache_p95:.0%}, median {e.waiting_p50:g} waiting, {e.preemptions_per_s:.3f} preemptions/s: "
                       "neither gauge is decisive; take scrapes at peak")


def agrees_with_plan(found: str, planned: str) -> bool:
    """Whether production's binding constraint is one the plan named ('both' covers memory and compute).

    Parameters
    ----------
    found : str
        What :func:`verdict` found: 'memory', 'compute', 'neither' or 'unclear'.
    planned : str
        The Answer's binding constraint: 'memory', 'compute', 'latency', 'both', 'all', 'minimum replica', or 'queueing'
        (its simulated form, 'queueing (simulated)', and a path with it, 'latency and queueing').

    Returns
    -------
    bool
        True when production confirms it; never for 'neither' or 'unclear'. Queueing is the wait for a batch slot
        (slots set by the step's compute and the latency promise): production shows it as requests waiting while the
        cache has room, which :func:`verdict` reads as compute binding.
    """
    if found in ("neither", "unclear"):
        return False
    if "queueing" in planned and found == "compute":
        return True
    return found == planned or (planned in ("both", "all") and found in ("memory", "compute"))
