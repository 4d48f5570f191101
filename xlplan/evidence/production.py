"""Production's latency histograms: the promise's percentile with its bucket bounds, and the step time derived from them.

Notes
-----
- **Histograms.** A Prometheus histogram is a set of cumulative buckets (upper edges ``le``, the last +Inf), a
  ``_sum`` and a ``_count``, each a counter, summed here over the label sets (models, engines, ranks). The window's
  histogram is the last scrape's minus the first's. A fall in any of its series between two scrapes is taken as a
  restart, as the scrape reader takes a counter that falls (:func:`xlplan.evidence.confirm._rate`): the later scrape counts
  from 0, so the window is the sum of the increases, each restart noted.
- **Percentile.** :func:`histogram_percentile` finds the bucket holding the q-th observation and interpolates
  linearly between its edges (Prometheus' ``histogram_quantile``; the first bucket starts at 0); the bucket's edges
  are the error bound. In the +Inf bucket nothing is interpolated: the value is only "above the last finite edge".
- **Step time, derived, not exported.** Engines export no step time. Over each interval between two scrapes the
  mean inter-token latency is Δ``_sum`` ÷ Δ``_count`` of the ITL histogram and the batch is the mean of the
  running-requests gauge at the interval's two ends; a decoding sequence gets one token per step, so that ITL is
  the mean step time of a replica carrying that batch.

References
----------
Prometheus, "Histograms and summaries" and ``histogram_quantile`` (prometheus.io/docs/practices/histograms/).
vLLM's production metrics (docs/usage/metrics.md): ``vllm:time_to_first_token_seconds``,
``vllm:inter_token_latency_seconds``, ``vllm:num_requests_running``; SGLang's (docs/references/production_metrics.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

DERIVED = ("step time derived, not exported: the mean inter-token latency over each scrape interval "
           "(Δ ITL _sum ÷ Δ _count) against the mean running requests")
"""What every step-time figure from production says of itself. [text]"""


@dataclass(frozen=True)
class Histogram:
    """One scrape's latency histogram, summed over its label sets. Units in the field comments."""

    metric: str  # the engine's name, e.g. vllm:inter_token_latency_seconds [text]
    bounds_s: tuple[float, ...]  # upper edges ``le``, ascending, the last +Inf [s]
    cumulative: tuple[float, ...]  # observations at or below each edge [observations]
    sum_s: float  # sum of the observations [s]
    count: float  # observations [observations]


@dataclass(frozen=True)
class ScrapeSeries:
    """The scrapes in time order, as the reader hands them on: one entry per scrape (None where it lacks the metric)."""

    names: tuple[str, ...]  # scrape files [text]
    running: tuple[float | None, ...]  # running requests per engine [requests]
    waiting: tuple[float | None, ...]  # waiting requests per engine [requests]
    kv_usage: tuple[float | None, ...]  # KV cache in use [fraction]
    ttft: tuple[Histogram | None, ...]  # time-to-first-token histograms [s]
    itl: tuple[Histogram | None, ...]  # inter-token latency histograms [s]
    notes: tuple[str, ...] = ()  # how the scrapes were read [text]


def _per_bucket(cumulative: tuple[float, ...] | list[float]) -> list[float]:
    """The observations in each bucket from cumulative counts. [observations]

    Parameters
    ----------
    cumulative : list of float
        Observations at or below each upper edge, in edge order. [observations]

    Returns
    -------
    list of float
        Observations in each bucket, the first from 0 to its edge. [observations]
    """
    return [c - p for c, p in zip(cumulative, [0.0, *cumulative[:-1]])]


def histogram_percentile(bounds: list[float], counts: list[float], q: float) -> tuple[float, float, float]:
    """The q-th quantile of a bucketed histogram, with the edges of the bucket that holds it. [unit of bounds]

    Parameters
    ----------
    bounds : list of float
        Upper edges of the buckets, ascending; the last may be +Inf. The first bucket starts at 0. [s]
    counts : list of float
        Observations in each bucket (not cumulative). [observations]
    q : float
        The quantile: 0.95 for p95. [fraction]

    Returns
    -------
    value : float
        Linear within the bucket holding the ``q × total``-th observation, ``low + (rank − below) ÷ count × (high −
        low)``; in the +Inf bucket the last finite edge, uninterpolated (the value is above it); NaN with no
        observations. [s]
    low : float
        The bucket's lower edge. [s]
    high : float
        Its upper edge (+Inf for the last bucket): the value lies in ``(low, high]``. [s]

    References
    ----------
    Prometheus' ``histogram_quantile`` (prometheus.io/docs/prometheus/latest/querying/functions/).

    Examples
    --------
    >>> histogram_percentile([0.1, 0.2, 0.5, float("inf")], [50, 40, 10, 0], 0.95)
    (0.35, 0.2, 0.5)
    """
    total = sum(counts)
    if total <= 0:
        return math.nan, math.nan, math.nan
    rank, below = q * total, 0.0
    for k, (high, n) in enumerate(zip(bounds, counts)):
        low = bounds[k - 1] if k else 0.0
        if n > 0 and below + n >= rank:
            if math.isinf(high):
                return low, low, high
            return low + (rank - below) / n * (high - low), low, high
        below += n
    return bounds[-1], bounds[-1], bounds[-1]


def _increase(earlier: Histogram, later: Histogram) -> tuple[Histogram, bool]:
    """The observations between two scrapes of one histogram, and whether the server restarted between them.

    Parameters
    ----------
    earlier : Histogram
        The earlier scrape's histogram.
    later : Histogram
        The later one's, with the same bucket edges.

    Returns
    -------
    increase : Histogram
        ``later − earlier`` bucket by bucket, in ``_sum`` and ``_count``; ``later`` itself after a restart (a fall in
        any of its series: the later scrape counts from 0). [observations], [s]
    restarted : bool
        Whether any series fell.
    """
    before = (*earlier.cumulative, earlier.sum_s, earlier.count)
    after = (*later.cumulative, later.sum_s, later.count)
    if any(b < a for a, b in zip(before, after)):
        return later, True
    return replace(later, cumulative=tuple(b - a for a, b in zip(earlier.cumulative, later.cumulative)),
                   sum_s=later.sum_s - earlier.sum_s, count=later.count - earlier.count), False


def window(series: tuple[Histogram | None, ...] | list[Histogram | None]) -> tuple[Histogram | None, int]:
    """The window's histogram: the sum of the increases between consecutive scrapes that carry it, restarts tolerated.

    Parameters
    ----------
    series : list of Histogram or None
        One histogram per scrape in time order (None where a scrape lacks it), all with the same bucket edges.

    Returns
    -------
    window : Histogram or None
        Without restarts, the last minus the first; None with fewer than two scrapes carrying it. [observations]
    restarts : int
        Falls taken as restarts. [1]
    """
    present = [h for h in series if h is not None]
    if len(present) < 2:
        return None, 0
    total, restarts = None, 0
    for a, b in zip(present, present[1:]):
        inc, fell = _increase(a, b)
        restarts += fell
        total = inc if total is None else replace(
            total, cumulative=tuple(x + y for x, y in zip(total.cumulative, inc.cumulative)),
            sum_s=total.sum_s + inc.sum_s, count=total.count + inc.count)
    return total, restarts


@dataclass(frozen=True)
class LatencyEvidence:
    """The promise in production: TTFT and ITL at the plan's percentile with the bucket that bounds each."""

    percentile: float  # the plan's promise percentile [percent]
    ttft_s: float  # NaN without observations [s]
    ttft_low_s: float  # [s]
    ttft_high_s: float  # +Inf in the last bucket [s]
    ttft_count: float  # requests observed in the window [requests]
    ttft_mean_s: float  # Δ_sum ÷ Δ_count [s]
    itl_s: float  # [s]
    itl_low_s: float  # [s]
    itl_high_s: float  # [s]
    itl_count: float  # inter-token gaps observed [tokens]
    itl_mean_s: float  # [s]
    metrics: tuple[str, ...] = ()  # the engine's histogram names read [text]
    notes: tuple[str, ...] = field(default_factory=tuple)  # restarts, the +Inf bucket, missing histograms [text]


def _at(h: Histogram | None, q: float, label: str, notes: list[str]) -> tuple[float, float, float, float, float]:
    """(value, low, high, count, mean) of one window histogram, a note where it says less than a value."""
    if h is None or h.count <= 0:
        notes.append(f"{label}: no observations in the window")
        return math.nan, math.nan, math.nan, 0.0, math.nan
    value, low, high = histogram_percentile(list(h.bounds_s), _per_bucket(h.cumulative), q)
    if math.isinf(high):
        notes.append(f"{label}: p{q * 100:g} is in the +Inf bucket, above the last finite edge {low:g} s (not interpolated)")
    return value, low, high, h.count, h.sum_s / h.count


def latency_evidence(series: ScrapeSeries, percentile: float) -> LatencyEvidence:
    """TTFT and ITL at the promise's percentile over the scrapes' window, each with its bucket's edges.

    Parameters
    ----------
    series : ScrapeSeries
        The scrapes in time order, with their TTFT and ITL histograms.
    percentile : float
        The plan's promise percentile (``plan.promise.percentile``). [percent]

    Returns
    -------
    LatencyEvidence
        Each figure interpolated within its bucket (:func:`histogram_percentile`), the bucket's edges as its error
        bound, the observation counts and means; notes for restarts and a figure in the +Inf bucket. [s]

    References
    ----------
    Prometheus' ``histogram_quantile`` (prometheus.io/docs/prometheus/latest/querying/functions/).
    """
    q = percentile / 100.0
    notes = list(series.notes)
    out = []
    metrics = []
    for label, hs in (("TTFT", series.ttft), ("ITL", series.itl)):
        h, restarts = window(hs)
        if restarts:
            notes.append(f"{label}: {restarts} fall(s) between scrapes taken as restarts (counted from 0)")
        metrics += [h.metric] if h is not None else []
        out += _at(h, q, label, notes)
    return LatencyEvidence(percentile, *out, metrics=tuple(metrics), notes=tuple(notes))


def against_promise(target_s: float, low_s: float, high_s: float) -> str:
    """Whether a percentile bounded by its bucket keeps a target: 'kept', 'broken' or 'undecided' by the buckets.

    Parameters
    ----------
    target_s : float
        The promise (TTFT or ITL at its percentile). [s]
    low_s : float
        The lower edge of the bucket holding the percentile. [s]
    high_s : float
        Its upper edge. [s]

    Returns
    -------
    str
        'kept' when the whole bucket is at or under the target, 'broken' when it lies above it, 'undecided' when
        the target falls inside it, 'no data' when the edges are NaN.
    """
    if math.isnan(low_s) or math.isnan(high_s):
        return "no data"
    if high_s <= target_s:
        return "kept"
    return "broken" if low_s >= target_s else "undecided"


@dataclass(frozen=True)
class StepObservation:
    """One scrape interval's derived step: the batch it carried and the mean inter-token latency (the step time)."""

    source: str  # the interval, "first → second" scrape [text]
    batch: float  # mean running requests per engine [sequences]
    itl_s: float  # mean inter-token latency, the derived step time [s]
    tokens: float  # inter-token gaps observed [tokens]
    ttft_s: float | None = None  # mean TTFT where no request waited at either end [s]
    kv_usage: float | None = None  # mean KV cache in use [fraction]


@dataclass(frozen=True)
class StepEvidence:
    """The derived steps, what was left out and why, and the statement that the step time is derived."""

    observations: tuple[StepObservation, ...]
    left_out: tuple[str, ...] = ()  # [text]
    derived: str = DERIVED  # [text]


def _mean(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else (a + b) / 2.0


def step_observations(series: ScrapeSeries) -> StepEvidence:
    """Each scrape interval as a derived step: batch = mean running requests, step time = Δ ITL _sum ÷ Δ _count.

    Parameters
    ----------
    series : ScrapeSeries
        The scrapes in time order, with their running-requests gauge and ITL (and TTFT) histograms.

    Returns
    -------
    StepEvidence
        One :class:`StepObservation` per usable interval; an interval with a restart, no inter-token observations or
        no running gauge is left out and said so. TTFT is kept only where no request waited at either end (else it
        holds queueing). [s], [sequences]

    Notes
    -----
    The step time is derived, not exported (:data:`DERIVED`).
    """
    obs: list[StepObservation] = []
    left: list[str] = []
    n = len(series.names)
    for k in range(n - 1):
        where = f"{series.names[k]} → {series.names[k + 1]}"
        batch = _mean(series.running[k], series.running[k + 1])
        a, b = series.itl[k], series.itl[k + 1]
        if a is None or b is None or batch is None:
            left.append(f"{where}: no ITL histogram or running-requests gauge at both ends")
            continue
        itl, fell = _increase(a, b)
        if fell or itl.count <= 0 or batch <= 0:
            left.append(f"{where}: " + ("a restart" if fell else "no tokens generated" if itl.count <= 0 else "no requests running"))
            continue
        obs.append(StepObservation(where, batch, itl.sum_s / itl.count, itl.count, _ttft(series, k),
                                   _mean(series.kv_usage[k], series.kv_usage[k + 1])))
    return StepEvidence(tuple(obs), tuple(left))


def _ttft(series: ScrapeSeries, k: int) -> float | None:
    """The interval's mean TTFT where nothing waited at either end and no restart. [s]"""
    a, b = series.ttft[k], series.ttft[k + 1]
    if a is None or b is None or series.waiting[k] != 0 or series.waiting[k + 1] != 0:
        return None
    inc, fell = _increase(a, b)
    return None if fell or inc.count <= 0 else inc.sum_s / inc.count
