"""Calendar arithmetic on months: the first day of a month, the month after a day, when an order must go, and the
fiscal year and quarter of a month. Pure date helpers every part may use (the schedule, the review, the workbook).

References
----------
Runbook, document 14 · "you cannot scale into a burst": capacity is in place before the peak it serves.
"""

from __future__ import annotations

import datetime as dt


def month_start(yyyy_mm: str, add: int = 0) -> dt.date:
    """The first day of the month ``add`` months after ``YYYY-MM``. [date]

    Parameters
    ----------
    yyyy_mm : str
        The month counted from, ``YYYY-MM``.
    add : int
        Months to move forward; 0 for the month itself. [months]

    Returns
    -------
    datetime.date
        The first day of that month.

    Examples
    --------
    >>> month_start("2026-11", 3)
    datetime.date(2027, 2, 1)
    """
    year, month = (int(x) for x in yyyy_mm.split("-"))
    k = year * 12 + (month - 1) + add
    return dt.date(k // 12, k % 12 + 1, 1)



def order_by(needed_from: dt.date, lead_time_days: int) -> dt.date:
    """The last day an order can go out to be in service on ``needed_from``. [date]

    Parameters
    ----------
    needed_from : datetime.date
        The day the GPUs must be in service: the first day of the month that needs them.
    lead_time_days : int
        Days from order to GPUs in service. [days]

    Returns
    -------
    datetime.date
        ``needed_from`` less the lead time.

    References
    ----------
    Runbook, document 14 · "you cannot scale into a burst": capacity is in place before the peak it serves.

    Examples
    --------
    >>> order_by(dt.date(2027, 3, 1), 90)
    datetime.date(2026, 12, 1)
    """
    return needed_from - dt.timedelta(days=lead_time_days)



def first_month(today: dt.date) -> str:
    """The month after ``today``, where a schedule starts unless told otherwise. [month]

    Parameters
    ----------
    today : date
        The day the schedule is made. [date]

    Returns
    -------
    str
        ``YYYY-MM``. [month]

    Examples
    --------
    >>> first_month(dt.date(2026, 12, 3))
    '2027-01'
    """
    return f"{today.year + (today.month == 12):04d}-{today.month % 12 + 1:02d}"



def fiscal_period(yyyy_mm: str, start_month: int) -> tuple[str, str]:
    """The fiscal year and quarter of a month. [text]

    Parameters
    ----------
    yyyy_mm : str
        The month, ``YYYY-MM``. [month]
    start_month : int
        The fiscal year's first month, 1-12 (1: the calendar year). [month]

    Returns
    -------
    tuple of (str, str)
        ``('FY2027', 'FY2027 Q1')``: the year named by the calendar year it ends in. [text]

    Examples
    --------
    >>> fiscal_period("2026-07", 7), fiscal_period("2027-06", 7), fiscal_period("2026-12", 1)
    (('FY2027', 'FY2027 Q1'), ('FY2027', 'FY2027 Q4'), ('FY2026', 'FY2026 Q4'))
    """
    year, month = (int(x) for x in yyyy_mm.split("-"))
    fy = year + int(start_month > 1 and month >= start_month)
    return f"FY{fy}", f"FY{fy} Q{(month - start_month) % 12 // 3 + 1}"
