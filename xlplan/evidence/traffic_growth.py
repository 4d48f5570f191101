"""How a log's traffic moves over the week and grows week on week: the busiest hour, weekly peaks, growth, headroom.

Pure functions on arrays (numpy is imported inside them, so ``import xlplan`` stays light); the peaks are the sliding
windows of :mod:`xlplan.evidence.traffic_windows`.
"""

from __future__ import annotations

import math

from xlplan.evidence.traffic_windows import _sorted, sliding_counts

SECONDS_PER_WEEK = 7 * 24 * 3600.0
"""[s/week]"""
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


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


def daily_curve(t_s, offset_s: float = 0.0) -> tuple[float, ...] | None:
    """Each hour of the day's mean request rate ÷ the busiest hour of the day's, in the log's time zone. [fraction]

    Parameters
    ----------
    t_s : array
        Arrival time of each request, Unix time. [s]
    offset_s : float
        The log's time zone as an offset from UTC, added to the timestamps. [s]

    Returns
    -------
    tuple of float or None
        24 fractions, hour 0 first, the busiest 1: each hour's requests ÷ the seconds of that hour of the day the log
        covers (from the first request to the last), over the busiest hour's; None when the log spans less than a day
        (some hour of the day would be seen only in part, or not at all). [fraction]

    Examples
    --------
    >>> daily_curve([0.0, 10.0]) is None
    True
    """
    import numpy as np

    t = np.asarray(t_s, dtype=float) + offset_s
    first, last = float(np.min(t)), float(np.max(t))
    if last - first < 86400.0:
        return None
    counts = np.bincount((np.floor(t / 3600.0).astype(np.int64) % 24), minlength=24).astype(float)
    # the seconds of each hour of the day inside [first, last]: whole days, then the part-day left over
    days, rest = divmod(last - first, 86400.0)
    covered = np.full(24, days * 3600.0)
    start = first % 86400.0
    for h in range(24):  # the leftover span [start, start + rest) laid over the day, wrapping at midnight
        lo, hi = h * 3600.0, (h + 1) * 3600.0
        for shift in (0.0, 86400.0):
            covered[h] += max(0.0, min(hi + shift, start + rest) - max(lo + shift, start))
    rate = counts / covered
    return tuple(float(x) for x in rate / rate.max())
