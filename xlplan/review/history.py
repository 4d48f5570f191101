"""The review's history: the line each review adds, and the forecast's accuracy over the reviews so far.

Notes
-----
Each review's error per figure is measured ÷ planned − 1; the trend is the least-squares slope of the errors against
the review's position in the history (per review), so a forecast drifting away shows a steady slope, a noisy one none.
"""

from __future__ import annotations

from xlplan.schema.review import FigureTrend, HistoryLine

TRACKED = {"peak_rps": "peak rate", "prompt_p95": "p95 prompts", "output_p95": "p95 outputs",
           "average_utilisation": "average utilisation", "tokens_per_month": "tokens a month"}
"""The figures whose accuracy the history follows: key → label. [text]"""


def history_line(date: str, plan: str, planned: dict, measured: dict, fleet_planned: int, fleet_replanned: int) -> HistoryLine:
    """The line a review appends to the history.

    Parameters
    ----------
    date : str
        The review day, ``YYYY-MM-DD``. [date]
    plan : str
        The plan's name. [text]
    planned : dict
        The planned figures for the review month, by key. [unit of each]
    measured : dict
        The measured figures, by key. [unit of each]
    fleet_planned : int
        The plan's purchased GPUs. [GPUs]
    fleet_replanned : int
        The re-plan's purchased GPUs. [GPUs]

    Returns
    -------
    HistoryLine
        The tracked figures (:data:`TRACKED`), planned and measured, and both fleets.
    """
    return HistoryLine(date=date, plan=plan, planned={k: float(planned[k]) for k in TRACKED},
                       measured={k: None if measured.get(k) is None else float(measured[k]) for k in TRACKED},
                       fleet_planned=fleet_planned, fleet_replanned=fleet_replanned)


def _slope(values: list[float]) -> float | None:
    """Least-squares slope of values against their position (0, 1, 2, ...). [unit of values per position]

    Parameters
    ----------
    values : list of float
        The series, in order. [unit of values]

    Returns
    -------
    float or None
        The slope; None for fewer than two values. [unit of values per position]

    Examples
    --------
    >>> _slope([0.1, 0.2, 0.3])
    0.1
    """
    n = len(values)
    if n < 2:
        return None
    mx, my = (n - 1) / 2, sum(values) / n
    return round(sum((i - mx) * (v - my) for i, v in enumerate(values)) / sum((i - mx) ** 2 for i in range(n)), 12)


def accuracy(lines: list[HistoryLine]) -> list[FigureTrend]:
    """The forecast's error per tracked figure at each review, and its trend.

    Parameters
    ----------
    lines : list of HistoryLine
        The reviews as the history holds them, this one last (in any order: they are put in date order, and a month
        reviewed more than once counts its latest review).

    Returns
    -------
    list of FigureTrend
        One per figure of :data:`TRACKED`: each month's error, the slope of the measured ones per review, in words.
    """
    by_month = {}
    for ln in sorted(lines, key=lambda ln: ln.date):  # a month reviewed twice counts once: its latest review
        by_month[ln.date[:7]] = ln
    lines = list(by_month.values())
    out = []
    for key, label in TRACKED.items():
        errors = [None if ln.measured.get(key) is None or not ln.planned.get(key) else ln.measured[key] / ln.planned[key] - 1.0
                  for ln in lines]
        known = [e for e in errors if e is not None]
        trend = _slope(known)
        shown = ", ".join(f"{ln.date[:7]} " + ("—" if e is None else f"{e:+.0%}") for ln, e in zip(lines, errors))
        way = None if trend is None else "steady" if abs(trend) < 0.005 else "growing" if trend * known[-1] > 0 else "shrinking"
        words = ("not measured in two reviews yet: no trend" if trend is None and len(lines) > 1 else
                 "one review: no trend yet" if trend is None else f"{way}, {trend * 100:+.1f} points a review")
        out.append(FigureTrend(key=key, label=label, months=[ln.date[:7] for ln in lines], errors=errors,
                               trend_per_review=trend, sentence=f"{label}: {shown} ({words})"))
    return out
