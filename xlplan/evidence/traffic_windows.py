"""The rate of a request log in windows: requests per window, the sliding peak, the mean over the period.

Pure functions on arrays (numpy is imported inside them, so ``import xlplan`` stays light); :mod:`xlplan.evidence.traffic`
summarises a log with them, and its notes say how the peak window slides.

References
----------
Runbook, document 14, step 1 · "the forecast: peak requests/s, prompt and output lengths at p50/p95/p99 — never
the mean".
"""

from __future__ import annotations

import math

PEAK_RULE = "sliding: the most requests in any {window:g} s span, each span starting at a request's arrival"
"""How the peak window is chosen, as the output states it. [text]"""


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

    The peak window slides (see :mod:`xlplan.evidence.traffic`'s notes); the p99 is over consecutive windows from the first request.

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


SAMPLING_LEVEL = 0.95
"""How sure the sampling band is: a log drawn at the plan's own peak reads above the band's top in at most 5% of
months. [probability]"""

SLIDING_WINDOWS_PER_WINDOW = 40.0
"""Independent normal draws the busiest sliding window behaves like, per window length of log. A window starting at
every arrival, and a count's right tail heavier than the normal's, put the busiest window further out than the busiest
of the disjoint windows: simulated over 400 seeds each, Poisson logs at 4 and 40 req/s over ten minutes and an hour
read like the busiest of 13 to 32 normal draws per minute of log; 40 bounds them all (benchmarks/ states the false
alarms it leaves). [1]"""


def busiest_window_band_rps(rate_rps: float, window_s: float, span_s: float, level: float = SAMPLING_LEVEL) -> float:
    """The top of the busiest window's rate that a Poisson stream at ``rate_rps`` reaches, with probability ``level``,
    over a log ``span_s`` long: a measured peak at or under it is the plan's peak read with sampling noise. [requests/s]

    Parameters
    ----------
    rate_rps : float
        The plan's peak rate, as a steady Poisson stream. [requests/s]
    window_s : float
        The window the peak is averaged over. [s]
    span_s : float
        The log's span: every window in it could be the busiest (a conservative count where only the peak hours
        run near the peak rate). [s]
    level : float
        The probability the busiest window reads at or under the band's top. [probability]

    Returns
    -------
    float
        ``rate + z · √(rate / window)``, z the ``level`` quantile of the largest of n standard normals
        (``Φ⁻¹(level^(1/n))``), n = :data:`SLIDING_WINDOWS_PER_WINDOW` × span ÷ window. [requests/s]

    Notes
    -----
    A window's count is Poisson with mean and variance rate × window, near normal at the counts a peak holds (2,400 in
    a minute at 40 req/s), so its rate has standard deviation √(rate / window). The busiest of n independent windows
    is below a bound with probability Φ(z)^n.

    References
    ----------
    Issue 44 · "a log drawn at exactly the plan's 40 req/s reads as a 42 req/s peak (+5.1%)": the review's alarm must
    allow the busiest window's sampling noise.

    Examples
    --------
    A minute's window over ten minutes of log at 40 req/s: n = 40 × 10 = 400, z = Φ⁻¹(0.95^(1/400)) = 3.66, so the
    top is 40 + 3.66 × √(40/60) = 43.0 req/s.

    >>> round(busiest_window_band_rps(40.0, 60.0, 600.0), 1)
    43.0
    """
    from statistics import NormalDist

    n = max(1.0, SLIDING_WINDOWS_PER_WINDOW * span_s / window_s)
    z = NormalDist().inv_cdf(level ** (1.0 / n))
    return rate_rps + z * math.sqrt(rate_rps / window_s)
