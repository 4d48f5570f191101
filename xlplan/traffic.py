"""Step 1 from evidence: a request log summarised into the forecast — peak rate, percentiles, utilisation.

Pure functions on arrays (numpy is imported inside them, so ``import xlplan``
stays light). The reading of log files lives in :mod:`xlplan.io.logs`.

Notes
-----
Peak rate is the busiest window's mean rate (requests in the window ÷ its
length), with the window stated. The window slides: every span of the window's
length that starts at a request's arrival is counted, which finds the busiest
span anywhere (shifting a span right until its first request sits on its left edge
never loses a request), so a burst is never split by a window boundary, whether
the clock's or the log's. The p99 of the rates in consecutive windows from the
first request is reported beside it. A forecast needs at least ``MIN_REQUESTS``
requests spanning at least one window. Average utilisation is the mean rate over the
period ÷ the peak rate. Lengths are reported as p50/p95/p99 (numpy's linear
interpolation); the mean is shown only to warn how far it is from p50. Prefix
reuse is cached prompt tokens ÷ prompt tokens, the share of prompt compute the
prefix cache saves (its linear part).

References
----------
Runbook, document 14, step 1 · "the forecast: peak requests/s, prompt and output
lengths at p50/p95/p99 — never the mean".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

SECONDS_PER_WEEK = 7 * 24 * 3600.0
"""[s/week]"""
MIN_REQUESTS = 100
"""Fewest requests a forecast is made from: a p99 needs a hundred. [requests]"""
PEAK_RULE = "sliding: the most requests in any {window:g} s span, each span starting at a request's arrival"
"""How the peak window is chosen, as the output states it. [text]"""


MAX_WINDOWS = 50_000_000
"""Most consecutive windows a log may span (the rate series holds one count per window). [windows]"""


class UnsuitableLog(ValueError):
    """A log a forecast cannot be made from: too few requests, shorter than the window, or a span of too many windows."""
MEAN_WARNING = 0.10
"""Relative gap between mean and p50 above which the summary warns. [fraction]"""
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@dataclass(frozen=True)
class Lengths:
    """A length distribution from a log. [tokens]"""

    p50: float
    p95: float
    p99: float
    mean: float
    max: float


@dataclass(frozen=True)
class TrafficSummary:
    """What a log says about the traffic. Units in the field comments."""

    requests: int  # [requests]
    first_s: float  # first timestamp, Unix time [s]
    last_s: float  # last timestamp, Unix time [s]
    window_s: float  # [s]
    peak_rps: float  # busiest window's mean rate [requests/s]
    peak_window_start_s: float  # Unix time [s]
    p99_window_rps: float  # p99 of the per-window rates [requests/s]
    mean_rps: float  # over the period [requests/s]
    average_utilisation: float  # mean ÷ peak [fraction]
    prompt: Lengths  # [tokens]
    output: Lengths  # [tokens]
    prefix_reuse: float | None  # cached ÷ prompt tokens [fraction]
    busiest_hour: str  # e.g. 'Tue 14:00-15:00'
    busiest_hour_rph: float  # mean requests in that hour of the week [requests/hour]
    weekly_peaks_rps: tuple[float, ...] = ()  # peak rate of each complete week [requests/s]
    weekly_growth: float | None = None  # week-on-week growth of the peak [fraction/week]
    warnings: tuple[str, ...] = field(default_factory=tuple)


def lengths(values) -> Lengths:
    """p50, p95, p99, mean and max of token counts. [tokens]

    Parameters
    ----------
    values : array
        Token count of each request (prompt or output). [tokens]

    Returns
    -------
    Lengths
        p50, p95 and p99 (numpy's linear interpolation), mean and max. [tokens]

    References
    ----------
    Runbook, document 14, step 1 · "the forecast: peak requests/s, prompt and output lengths at p50/p95/p99 — never
    the mean".

    Examples
    --------
    >>> lengths([1, 2, 3, 4, 100]).p50
    3.0
    """
    import numpy as np

    v = np.asarray(values, dtype=float)
    p50, p95, p99 = np.percentile(v, [50, 95, 99])
    return Lengths(float(p50), float(p95), float(p99), float(v.mean()), float(v.max()))


def window_counts(t_s, window_s: float):
    """Requests in each window from the first timestamp, empty windows included. [requests]

    Parameters
    ----------
    t_s : array
        Arrival time of each request, Unix time. [s]
    window_s : float
        Length of the window. [s]

    Returns
    -------
    ndarray of int
        Requests in each consecutive window ``[t_0 + k·window, t_0 + (k + 1)·window)``. [requests]
    """
    import numpy as np

    t = np.asarray(t_s, dtype=float)
    bins = np.floor((t - t.min()) / window_s).astype(np.int64)
    return np.bincount(bins)


def _sorted(t_s):
    """The timestamps as a sorted float array (not copied when they already are). [s]"""
    import numpy as np

    t = np.asarray(t_s, dtype=float)
    return t if t.size < 2 or bool(np.all(t[1:] >= t[:-1])) else np.sort(t)


def sliding_counts(t_sorted, window_s: float):
    """Requests in the window of length ``window_s`` that starts at each arrival, [t_i, t_i + window). [requests]

    Parameters
    ----------
    t_sorted : array
        Arrival times, sorted ascending. [s]
    window_s : float
        Length of the window. [s]

    Returns
    -------
    ndarray of int
        For each arrival, the requests arriving in the window it starts, itself included. [requests]

    Examples
    --------
    >>> sliding_counts([0, 10, 50, 61], 60).tolist()
    [3, 3, 2, 1]
    """
    import numpy as np

    t = np.asarray(t_sorted, dtype=float)
    return np.searchsorted(t, t + window_s, side="left") - np.arange(t.size)


def peak_rate(t_s, window_s: float) -> tuple[float, float, float]:
    """(peak rate, start of the peak window, p99 of per-window rates). [requests/s], [s], [requests/s]

    The peak window slides (see the module notes); the p99 is over consecutive windows from the first request.

    Parameters
    ----------
    t_s : array
        Arrival time of each request, Unix time. [s]
    window_s : float
        Length of the window. [s]

    Returns
    -------
    peak_rps : float
        The busiest window's requests ÷ its length. [requests/s]
    peak_window_start_s : float
        Arrival of the request that starts the busiest window, Unix time. [s]
    p99_window_rps : float
        p99 of the rates in consecutive windows from the first request. [requests/s]

    References
    ----------
    Runbook, document 14, step 1 · "the forecast: peak requests/s, prompt and output lengths at p50/p95/p99 — never
    the mean".

    Examples
    --------
    Ten requests in the first minute, one in the second: the peak is 10/60 req/s.

    >>> round(peak_rate([0.5 * i for i in range(10)] + [70], 60)[0], 4)
    0.1667

    A burst across the boundary of two fixed windows (30-89 s) is found whole:

    >>> peak_rate([30 + i for i in range(60)], 60)[:2]
    (1.0, 30.0)
    """
    import numpy as np

    t = _sorted(t_s)
    counts = sliding_counts(t, window_s)
    k = int(np.argmax(counts))
    tiled = window_counts(t, window_s)
    return float(counts[k] / window_s), float(t[k]), float(np.percentile(tiled / window_s, 99))


def mean_rate(requests: int, first_s: float, last_s: float, window_s: float) -> float:
    """Requests ÷ the period they span (at least one window). [requests/s]

    Parameters
    ----------
    requests : int
        Requests in the log. [requests]
    first_s : float
        First timestamp, Unix time. [s]
    last_s : float
        Last timestamp, Unix time. [s]
    window_s : float
        Length of the window. [s]

    Returns
    -------
    float
        ``requests ÷ max(last − first, window)``. [requests/s]
    """
    return requests / max(last_s - first_s, window_s)


def prefix_reuse(cached, prompt) -> float:
    """Share of prompt tokens served from the prefix cache. [fraction]

    Parameters
    ----------
    cached : array
        Cached prompt tokens of each request. [tokens]
    prompt : array
        Prompt tokens of each request. [tokens]

    Returns
    -------
    float
        Cached ÷ prompt tokens over the log; 0 when there are no prompt tokens. [fraction]
    """
    import numpy as np

    total = float(np.sum(prompt))
    return float(np.sum(cached)) / total if total > 0 else 0.0


def busiest_hour_of_week(t_s, offset_s: float = 0.0) -> tuple[str, float]:
    """The hour of the week with the most requests on average, in the log's own time zone. ['Tue 14:00-15:00'], [requests/hour]

    Parameters
    ----------
    t_s : array
        Arrival time of each request, Unix time. [s]
    offset_s : float
        The log's time zone as an offset from UTC, added to the timestamps. [s]

    Returns
    -------
    label : str
        The hour, e.g. 'Tue 14:00-15:00'.
    requests_per_hour : float
        Requests in that hour of the week ÷ the weeks the log spans (rounded up, at least one). [requests/hour]
    """
    import numpy as np

    t = np.asarray(t_s, dtype=float) + offset_s
    # 1970-01-01 was a Thursday: day 0 -> index 3
    hour_of_week = ((np.floor(t / 3600.0).astype(np.int64) + 3 * 24) % (7 * 24))
    counts = np.bincount(hour_of_week, minlength=7 * 24)
    weeks = max((float(np.max(t)) - float(np.min(t))) / SECONDS_PER_WEEK, 1.0)
    k = int(np.argmax(counts))
    day, hour = divmod(k, 24)
    return f"{WEEKDAYS[day]} {hour:02d}:00-{(hour + 1) % 24:02d}:00", float(counts[k] / math.ceil(weeks))


def weekly_peaks(t_s, window_s: float) -> list[float]:
    """Peak rate of each complete week from the first timestamp, by sliding windows that start in that week. [requests/s]

    Parameters
    ----------
    t_s : array
        Arrival time of each request, Unix time. [s]
    window_s : float
        Length of the window. [s]

    Returns
    -------
    list of float
        One peak rate per complete week, in order; 0 for a week without requests. [requests/s]
    """
    import numpy as np

    t = _sorted(t_s)
    t0 = float(t[0])
    full_weeks = int((float(t[-1]) - t0) // SECONDS_PER_WEEK)
    counts = sliding_counts(t, window_s)
    week = np.floor((t - t0) / SECONDS_PER_WEEK).astype(np.int64)
    return [float(counts[week == w].max() / window_s) if np.any(week == w) else 0.0 for w in range(full_weeks)]


def weekly_growth(peaks_rps) -> float | None:
    """Week-on-week growth of the peak: exp(slope of ln peak against week) − 1; None under four weeks. [fraction/week]

    Parameters
    ----------
    peaks_rps : array or list of float
        Peak rate of each complete week, in order (:func:`weekly_peaks`). [requests/s]

    Returns
    -------
    float or None
        Growth of the peak per week, by a least-squares fit of ln peak; None under four weeks or with a peak of 0.
        [fraction/week]

    Examples
    --------
    >>> round(weekly_growth([10, 11, 12.1, 13.31]), 6)
    0.1
    """
    import numpy as np

    p = np.asarray(peaks_rps, dtype=float)
    if p.size < 4 or np.any(p <= 0):
        return None
    slope = np.polyfit(np.arange(p.size, dtype=float), np.log(p), 1)[0]
    return float(np.exp(slope) - 1.0)


def weeks_until(capacity_rps: float, peak_rps: float, growth: float | None) -> float | None:
    """Weeks until a peak growing at ``growth`` a week exceeds ``capacity_rps``; 0 if it already does, None if it never will. [weeks]

    Parameters
    ----------
    capacity_rps : float
        The peak rate the fleet serves. [requests/s]
    peak_rps : float
        Today's peak rate. [requests/s]
    growth : float or None
        Week-on-week growth of the peak (:func:`weekly_growth`); None when unknown. [fraction/week]

    Returns
    -------
    float or None
        ``ln(capacity ÷ peak) ÷ ln(1 + growth)``; 0 when the peak already reaches it; None when it does not grow.
        [weeks]

    Examples
    --------
    >>> round(weeks_until(121, 100, 0.10), 3)
    2.0
    """
    if peak_rps >= capacity_rps:
        return 0.0
    if growth is None or growth <= 0:
        return None
    return math.log(capacity_rps / peak_rps) / math.log1p(growth)


def mean_warning(name: str, d: Lengths) -> str | None:
    """A warning when the mean is far from p50: the forecast must use the percentiles. [text]

    Parameters
    ----------
    name : str
        Which lengths: 'prompt' or 'output'.
    d : Lengths
        The distribution, from :func:`lengths`.

    Returns
    -------
    str or None
        The warning, with p50/p95/p99 to size with; None when the mean is within :data:`MEAN_WARNING` of p50.

    References
    ----------
    Runbook, document 14, step 1 · "the forecast: peak requests/s, prompt and output lengths at p50/p95/p99 — never
    the mean".
    """
    if d.p50 <= 0 or abs(d.mean / d.p50 - 1.0) <= MEAN_WARNING:
        return None
    way = "above" if d.mean > d.p50 else "below"
    return (f"{name} mean {d.mean:,.0f} is {abs(d.mean / d.p50 - 1.0):.0%} {way} p50 {d.p50:,.0f}: size with p50/p95/p99 "
            f"({d.p50:,.0f} / {d.p95:,.0f} / {d.p99:,.0f}), never the mean")


def summarise(t_s, prompt, output, cached=None, window_s: float = 60.0, offset_s: float = 0.0) -> TrafficSummary:
    """Summarise a log's requests (timestamps in Unix seconds, token counts) into the forecast's figures.

    Parameters
    ----------
    t_s : array
        Arrival time of each request, Unix time. [s]
    prompt : array
        Prompt length of each request. [tokens]
    output : array
        Output length of each request. [tokens]
    cached : array, optional
        Cached prompt tokens of each request; left out, prefix reuse is not reported. [tokens]
    window_s : float
        Length of the peak window. [s]
    offset_s : float
        The log's time zone as an offset from UTC, for the busiest hour of the week. [s]

    Returns
    -------
    TrafficSummary
        Peak and mean rate, average utilisation, length percentiles, prefix reuse, busiest hour, weekly peaks and
        growth, and warnings.

    Raises
    ------
    UnsuitableLog
        Fewer than ``MIN_REQUESTS`` requests, a span shorter than the window, or one of more than ``MAX_WINDOWS`` windows.

    References
    ----------
    Runbook, document 14, step 1 · "the forecast: peak requests/s, prompt and output lengths at p50/p95/p99 — never
    the mean".
    """
    t = _sorted(t_s)
    if t.size < MIN_REQUESTS:
        raise UnsuitableLog(f"{t.size:,} request(s); expected at least {MIN_REQUESTS} to make a forecast from (a p99 needs a hundred)")
    first, last = float(t.min()), float(t.max())
    if last - first < window_s:
        raise UnsuitableLog(f"the requests span {last - first:,.0f} s, shorter than the {window_s:g} s window; expected a log "
                            "covering at least one window (or a shorter --window)")
    if (last - first) / window_s > MAX_WINDOWS:
        raise UnsuitableLog(f"the requests span {(last - first) / 86400:,.0f} days, {(last - first) / window_s:,.0f} windows of "
                            f"{window_s:g} s; expected at most {MAX_WINDOWS:,} (a longer --window, or check for stray timestamps)")
    peak, peak_start, p99_rate = peak_rate(t, window_s)
    mean = mean_rate(int(t.size), first, last, window_s)
    p, o = lengths(prompt), lengths(output)
    hour, rph = busiest_hour_of_week(t, offset_s)
    peaks = weekly_peaks(t, window_s) if last - first >= 4 * SECONDS_PER_WEEK else []
    warnings = tuple(w for w in (mean_warning("prompt", p), mean_warning("output", o)) if w)
    return TrafficSummary(
        requests=int(t.size), first_s=first, last_s=last, window_s=window_s, peak_rps=peak, peak_window_start_s=peak_start,
        p99_window_rps=p99_rate, mean_rps=mean, average_utilisation=min(mean / peak, 1.0), prompt=p, output=o,
        prefix_reuse=None if cached is None else prefix_reuse(cached, prompt), busiest_hour=hour, busiest_hour_rph=rph,
        weekly_peaks_rps=tuple(peaks), weekly_growth=weekly_growth(peaks), warnings=warnings,
    )
