"""The rate of a request log in windows: requests per window, the sliding peak, the mean over the period.

Pure functions on arrays (numpy is imported inside them, so ``import xlplan`` stays light); :mod:`xlplan.evidence.traffic`
summarises a log with them, and its notes say how the peak window slides.

References
----------
Runbook, document 14, step 1 · "the forecast: peak requests/s, prompt and output lengths at p50/p95/p99 — never
the mean".
"""

from __future__ import annotations

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
