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

from dataclasses import dataclass, field

from xlplan.evidence.traffic_growth import (
    SECONDS_PER_WEEK,
    busiest_hour_of_week,
    daily_curve,
    weekly_growth,
    weekly_peaks,
)
from xlplan.evidence.traffic_windows import _sorted, mean_rate, peak_rate

MIN_REQUESTS = 100
"""Fewest requests a forecast is made from: a p99 needs a hundred. [requests]"""


MAX_WINDOWS = 50_000_000
"""Most consecutive windows a log may span (the rate series holds one count per window). [windows]"""


class UnsuitableLog(ValueError):
    """A log a forecast cannot be made from: too few requests, shorter than the window, or a span of too many windows."""
MEAN_WARNING = 0.10
"""Relative gap between mean and p50 above which the summary warns. [fraction]"""


@dataclass(frozen=True)
class Lengths:
    """A length distribution from a log. [tokens]"""

    p50: float
    p95: float
    p99: float
    mean: float
    max: float


AVERAGE_SPAN_S = 86_400.0
"""The shortest log whose mean rate measures an average utilisation: a day (a slice of the peak is all peak). [s]"""


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
    daily_curve: tuple[float, ...] | None = None  # each hour of the day's mean rate ÷ the busiest's; None: under a day [fraction]
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def measures_utilisation(self) -> bool:
        """Whether the log spans a day (:data:`AVERAGE_SPAN_S`): a shorter slice of the peak measures no month's average
        utilisation, its mean rate being all peak. [bool]"""
        return self.last_s - self.first_s >= AVERAGE_SPAN_S

    @property
    def monthly_growth(self) -> float | None:
        """The weekly growth as the equivalent monthly rate (:func:`monthly_from_weekly`); None without one. [fraction/month]"""
        return None if self.weekly_growth is None else monthly_from_weekly(self.weekly_growth)


def _lengths(values) -> Lengths:
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
    >>> _lengths([1, 2, 3, 4, 100]).p50
    3.0
    """
    import numpy as np

    v = np.asarray(values, dtype=float)
    p50, p95, p99 = np.percentile(v, [50, 95, 99])
    return Lengths(float(p50), float(p95), float(p99), float(v.mean()), float(v.max()))


def _prefix_reuse(cached, prompt) -> float:
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


def monthly_from_weekly(weekly_growth: float) -> float:
    """A weekly growth rate as the equivalent monthly one (365.25 / 12 / 7 weeks a month, compounding). [fraction/month]

    Parameters
    ----------
    weekly_growth : float
        Growth of the peak per week, compounding: 0.02 is 2% a week. [fraction/week]

    Returns
    -------
    float
        ``(1 + weekly)^(365.25 / 12 / 7) − 1``. [fraction/month]

    Examples
    --------
    >>> round(monthly_from_weekly(0.02), 4)
    0.0899
    """
    return (1.0 + weekly_growth) ** (365.25 / 12.0 / 7.0) - 1.0


def _mean_warning(name: str, d: Lengths) -> str | None:
    """A warning when the mean is far from p50: the forecast must use the percentiles. [text]

    Parameters
    ----------
    name : str
        Which lengths: 'prompt' or 'output'.
    d : Lengths
        The distribution, from :func:`_lengths`.

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
    p, o = _lengths(prompt), _lengths(output)
    hour, rph = busiest_hour_of_week(t, offset_s)
    peaks = weekly_peaks(t, window_s) if last - first >= 4 * SECONDS_PER_WEEK else []
    span = f"{last - first:,.0f} s" if last - first < 3600 else f"{(last - first) / 3600:,.1f} h"
    short = (f"the log spans {span}, under a day: its mean rate is a slice of the peak, not a "
             f"month's average; the forecast keeps the plan's average utilisation") if last - first < AVERAGE_SPAN_S else None
    warnings = tuple(w for w in (_mean_warning("prompt", p), _mean_warning("output", o), short) if w)
    return TrafficSummary(
        requests=int(t.size), first_s=first, last_s=last, window_s=window_s, peak_rps=peak, peak_window_start_s=peak_start,
        p99_window_rps=p99_rate, mean_rps=mean, average_utilisation=min(mean / peak, 1.0), prompt=p, output=o,
        prefix_reuse=None if cached is None else _prefix_reuse(cached, prompt), busiest_hour=hour, busiest_hour_rph=rph,
        weekly_peaks_rps=tuple(peaks), weekly_growth=weekly_growth(peaks), daily_curve=daily_curve(t, offset_s), warnings=warnings,
    )
