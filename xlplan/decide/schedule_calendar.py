"""The peaks of a schedule: each month's peak from the plan's growth (the calendar arithmetic is :mod:`xlplan.dates`).

Read by :mod:`xlplan.decide.schedule` and the review's re-plan.
"""

from __future__ import annotations


def monthly_peaks(peak_rps: float, growth: float, months: int) -> list[float]:
    """Peak rate month by month at a compounding monthly growth. [requests/s]

    Parameters
    ----------
    peak_rps : float
        Peak arrival rate of the first month. [requests/s]
    growth : float
        Growth of the peak per month, compounding: 0.10 is 10% a month; negative shrinks it. [fraction/month]
    months : int
        Months to list. [months]

    Returns
    -------
    list of float
        ``peak_rps × (1 + growth)^m`` for month ``m`` = 0, 1, ..., ``months − 1``. [requests/s]

    Examples
    --------
    >>> [round(x, 2) for x in monthly_peaks(40.0, 0.10, 4)]
    [40.0, 44.0, 48.4, 53.24]
    """
    return [_compounded(peak_rps, growth, m) for m in range(months)]


def _compounded(peak_rps: float, growth: float, m: int) -> float:
    """The peak after ``m`` months of compounding growth. [requests/s]"""
    return peak_rps * (1.0 + growth) ** m


def month_peak(peak_rps: float, growth, index: int) -> float:
    """The plan's peak in month ``index`` of its growth: the one rule the schedule and the review read a month's peak by.

    Parameters
    ----------
    peak_rps : float
        The plan's forecast peak. [requests/s]
    growth : Growth or None
        The plan's growth section: ``peaks_rps`` (a table, its last entry past its end) or ``monthly`` (compounding).
    index : int
        Months from the growth's first month (0 and below: the first month). [months]

    Returns
    -------
    float
        The table's entry, or ``peak_rps × (1 + monthly)^index``; ``peak_rps`` without growth. [requests/s]

    Examples
    --------
    >>> from types import SimpleNamespace as G
    >>> month_peak(40.0, G(peaks_rps=None, monthly=0.10), 2), month_peak(40.0, G(peaks_rps=[40, 50], monthly=None), 5)
    (48.400000000000006, 50)
    """
    if growth is None:
        return peak_rps
    if growth.peaks_rps is not None:
        return growth.peaks_rps[min(max(index, 0), len(growth.peaks_rps) - 1)]
    return _compounded(peak_rps, growth.monthly or 0.0, max(index, 0))


def plan_growth(peak_rps: float, growth, months: int | None = None) -> tuple[list[float], str] | None:
    """The monthly peaks a plan's growth section gives, and how they were made in words; None when it gives none.

    Parameters
    ----------
    peak_rps : float
        The plan's peak, the first month's. [requests/s]
    growth : Growth or None
        The plan's growth section: ``peaks_rps`` (a table, cut to ``months``) or ``monthly`` (compounding over
        ``months``, else ``growth.months``).
    months : int, optional
        Months to plan. [months]

    Returns
    -------
    tuple of (list of float, str) or None
        (peaks, words): the peaks month by month [requests/s] and their source in words [text].
    """
    if growth is None:
        return None
    if growth.peaks_rps is not None:
        n = min(months or len(growth.peaks_rps), len(growth.peaks_rps))
        return [month_peak(peak_rps, growth, m) for m in range(n)], "monthly peaks from the plan's growth section"
    if growth.monthly is None:
        return None
    words = (f"{growth.monthly:.1%} a month from {peak_rps:g} req/s"
             + (f" ({growth.source})" if growth.source else " (the plan's growth section)"))
    return [month_peak(peak_rps, growth, m) for m in range(months or growth.months)], words
