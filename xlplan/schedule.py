"""When to order: the fleet month by month as traffic grows, each order dated its lead time before it is needed.

Notes
-----
Month ``m`` (0 for the first) has peak ``peak_rps × (1 + g)^m`` at a monthly growth ``g``, or the stated peak of a
table. Each month is re-planned in full at its peak (the seven steps; the TP degree may change). GPUs bought stay
bought: the purchased fleet is the running maximum of what each month needs, and the GPUs a month adds must be in
service on its first day, so their order goes out ``lead_time_days`` before it. A rented fleet's bill follows each
month's fleet with redundancy; a purchased or owned fleet's bill counts every GPU bought so far.

References
----------
Runbook, document 14: "peak for the fleet, average for the cost model"; "you cannot scale into a burst" — capacity
must be in place before the peak it serves, which for bought hardware means ordered a lead time ahead.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math

from xlplan import plausibility, steps
from xlplan.note_format import _count
from xlplan.result import ScheduleMonth, ScheduleOut
from xlplan.scenario import Scenario
from xlplan.traffic import monthly_from_weekly  # noqa: F401  (re-exported: a traffic-growth conversion, named here too)

MAX_PEAK_RPS = 1e6
"""The largest peak a schedule month plans: a million requests a second is beyond any single deployment, and past it a
compounding growth has run away (a percentage typed as a fraction). [requests/s]"""


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
    return [peak_rps * (1.0 + growth) ** m for m in range(months)]


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


VERIFY_MODES = ("margin", "every", "none")
"""How a schedule's fleets are checked: 'margin' simulates the first and the largest month and adds the replicas the
closed form fell short by there to every month; 'every' simulates every month; 'none' gives the closed form. [text]"""


def schedule(s: Scenario, peaks_rps: list[float], start: str, lead_time_days: int, growth_words: str = "",
             verify: str = "none", percentile: float = 95.0, max_context: int | None = None,
             budget_set_by_plan: bool = False, today: str | None = None, accepted: tuple[str, ...] = ()) -> ScheduleOut:
    """The fleet, its orders and its bill month by month, each month's fleet as ``xlplan plan`` answers it.

    Parameters
    ----------
    s : Scenario
        The plan at its current peak; each month replaces ``peak_rps``.
    peaks_rps : list of float
        Peak rate of each month, from the first. [requests/s]
    start : str
        The first month, ``YYYY-MM``. [month]
    lead_time_days : int
        Days from order to GPUs in service. [days]
    growth_words : str
        How the peaks were made, for the record. [text]
    verify : {'margin', 'every', 'none'}
        :data:`VERIFY_MODES`: each month's fleet verified in simulation ('every'), the closed form plus the margin
        measured in simulation at the first and the largest month ('margin'), or the closed form alone ('none').
    percentile : float
        The promise's percentile. [percent]
    max_context : int, optional
        The model's context limit, for clipping simulated lengths. [tokens]
    budget_set_by_plan : bool
        The plan file sets ``policy.max_num_batched_tokens``.
    today : str, optional
        ``YYYY-MM-DD``: the months whose order date is before it are ``late_orders`` (none when not given). [date]
    accepted : tuple of str
        The plan's ``accept_implausible``: a month past a bound of :data:`xlplan.plausibility.RESULT_BOUNDS` not
        among them ends the schedule, as ``plan`` refuses such an answer. [text]

    Returns
    -------
    ScheduleOut
        Every month with the source of its fleet, the method and margin used, the month of the monthly crossover
        with the API, of the cumulative break-even and of the binding constraint's change (None if not). A month whose
        peak cannot be met on this hardware ends the schedule, with its reason.

    References
    ----------
    Runbook, document 14 · "peak for the fleet, average for the cost model"; "you cannot scale into a burst".
    """
    if verify not in VERIFY_MODES:
        raise ValueError(f"verify: got {verify!r}; expected one of {', '.join(VERIFY_MODES)}")
    decided, stopped = _decide_months(s, peaks_rps, start, verify, percentile, max_context, budget_set_by_plan, accepted)
    margin, method = _margin(decided, verify, percentile, max_context, budget_set_by_plan)
    months = _months(decided, margin, lead_time_days, s.ops_usd_per_month)
    first, crossover, cumulative = _api_months(months, s.ops_usd_per_month)
    return ScheduleOut(months=months, start=start, lead_time_days=lead_time_days, growth=growth_words,
                       monthly_crossover_month=crossover, cumulative_breakeven_month=cumulative,
                       breakeven_words=_breakeven_words(months, first, crossover, cumulative),
                       binding_change_month=next((x.month for x in months if x.binding != months[0].binding), None) if months else None,
                       stopped=stopped, method=method, margin_replicas=margin,
                       late_orders=[m.month for m in months if today and m.order_by and m.order_by < today])


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
        return list(growth.peaks_rps)[: months or None], "monthly peaks from the plan's growth section"
    if growth.monthly is None:
        return None
    words = (f"{growth.monthly:.1%} a month from {peak_rps:g} req/s"
             + (f" ({growth.source})" if growth.source else " (the plan's growth section)"))
    return monthly_peaks(peak_rps, growth.monthly, months or growth.months), words


def _decide_months(s: Scenario, peaks_rps: list[float], start: str, verify: str, percentile: float,
                   max_context: int | None, budget_set_by_plan: bool, accepted: tuple[str, ...] = ()) -> tuple[list, str]:
    """(first day, scenario, decision) of each month at its peak, up to the first that cannot be planned; and why
    that one stopped the schedule ('' when none did). [date], [Scenario], [Decision], [text]"""
    from xlplan import decision

    decided = []
    for m, peak in enumerate(peaks_rps):
        first_day = month_start(start, m)
        if peak > MAX_PEAK_RPS:
            return decided, (f"{first_day:%Y-%m}: the peak reaches {peak:,.6g} requests/s, beyond the {MAX_PEAK_RPS:,.0f} a "
                             "schedule plans; check the growth rate or plan fewer months")
        sm = dataclasses.replace(s, peak_rps=peak)
        try:
            d = decision.decide(sm, percentile, max_context, budget_set_by_plan, "auto" if verify == "every" else False)
        except steps.PlanningError as e:
            return decided, f"{first_day:%Y-%m}: at {peak:,.6g} requests/s the plan cannot be met ({e})"
        past = plausibility.results(d.answer.purchased, d.answer.monthly_usd, accepted)
        if past:
            return decided, (f"{first_day:%Y-%m}: at {peak:,.6g} requests/s the answer passes a plausible bound ("
                             + "; ".join(b.finding for b in past) + "); check the growth rate or plan fewer months")
        decided.append((first_day, sm, d))
    return decided, ""


def _month_fleet(d, margin: int) -> tuple[str, int, int]:
    """(source, load, with redundancy) of one month: the verified fleet, else the closed form plus the margin. [text],
    [GPUs], [GPUs]"""
    a, cf = d.answer, d.closed_form
    if a.source == "verified":
        return "verified", a.load, a.with_redundancy
    extra = margin * cf.tp
    return ("closed form" + (f" + {margin} replica margin" if margin else ""), cf.load + extra,
            cf.with_redundancy + extra)


def _months(decided: list, margin: int, lead_time_days: int, ops_usd_per_month: float = 0.0) -> list[ScheduleMonth]:
    """Each decided month's fleet, the GPUs bought so far and the order for those it adds, its bill, and the running
    totals of self-hosting (ops included) and of the API. [ScheduleMonth]"""
    months: list[ScheduleMonth] = []
    owned, cumulative, all_in, api = 0, 0.0, 0.0, 0.0
    for first_day, sm, d in decided:
        cf = d.closed_form
        source, load, red = _month_fleet(d, margin)
        needed = int(math.ceil(red / sm.gpus_per_node) * sm.gpus_per_node)
        new = max(needed - owned, 0)
        owned = max(owned, needed)
        b = steps.bill(sm, d.sol.traffic, dataclasses.replace(d.sol.paths, with_redundancy=float(red), purchased=float(owned)))
        cumulative += b.monthly_usd
        mine, priced = b.monthly_usd + ops_usd_per_month, b.api_monthly_usd is not None
        all_in += mine
        api = api + b.api_monthly_usd if priced else api
        months.append(ScheduleMonth(
            month=f"{first_day:%Y-%m}", peak_rps=sm.peak_rps, tp=cf.tp, load=load, with_redundancy=red,
            needed_purchased=needed, purchased=owned, new_gpus=new, order_by=order_by(first_day, lead_time_days).isoformat() if new else None,
            billed_gpus=int(b.billed_gpus), monthly_usd=b.monthly_usd, cumulative_usd=cumulative, binding=cf.binding,
            api_monthly_usd=b.api_monthly_usd, source=source, closed_form_load=cf.load, all_in_cumulative_usd=all_in,
            api_cumulative_usd=api if priced else None, self_hosted_cheaper=(mine < b.api_monthly_usd) if priced else None,
            cumulative_at_or_below_api=(all_in <= api) if priced else None,
        ))
    return months


def _margin(decided: list, verify: str, percentile: float, max_context: int | None,
            budget_set_by_plan: bool) -> tuple[int, str]:
    """(replicas added to each closed-form month, the method in words): the shortfall measured in simulation. [replicas]"""
    from xlplan import decision

    if verify == "none" or not decided:
        return 0, "the closed form each month (the largest of the memory, compute, latency and queueing paths), not simulated"
    if verify == "every":
        n = sum(d.answer.source == "verified" for _, _, d in decided)
        return 0, (f"each month verified in simulation at its peak, as `xlplan plan` verifies its Answer ({n} of "
                   f"{_count(len(decided), 'month')}; the rest past what the default simulation takes on: the closed form)")
    largest = max(range(len(decided)), key=lambda i: decided[i][1].peak_rps)
    measured, words = [], []
    for i in sorted({0, largest}):
        first_day, sm, d = decided[i]
        v = decision.decide(sm, percentile, max_context, budget_set_by_plan, "auto")
        decided[i] = (first_day, sm, v)
        if v.answer.source == "verified":
            short = (v.answer.load - v.closed_form.load) // v.closed_form.tp
            measured.append(short)
            words.append(f"{first_day:%Y-%m} {v.answer.load} verified against {v.closed_form.load} closed form")
        else:
            words.append(f"{first_day:%Y-%m} not simulated ({v.skipped or 'no fleet verified'})")
    margin = max([0] + measured)
    return margin, (f"the closed form each month plus a margin of {_count(margin, 'replica')}, the most the closed form fell short "
                    f"by where simulated ({'; '.join(words)}); `--verify every` simulates every month")


def monthly_crossover(self_hosted_usd: list[float], api_usd: list[float]) -> int | None:
    """The first month whose monthly comparison with the API differs from the first month's. [month index]

    Parameters
    ----------
    self_hosted_usd : list of float
        Each month's self-hosted cost, fixed costs and engineering included. [USD/month]
    api_usd : list of float
        The same months' traffic on the API. [USD/month]

    Returns
    -------
    int or None
        The index of the first month where self-hosting being cheaper (its month below the API's) is no longer what it
        was in month 0; None if it never changes. A monthly crossover, not a break-even: the months before it are not
        counted (:func:`cumulative_breakeven` counts them). [month index]

    Examples
    --------
    >>> monthly_crossover([100.0, 100.0, 100.0, 100.0], [40.0, 80.0, 120.0, 160.0])
    2
    """
    cheaper = [s < a for s, a in zip(self_hosted_usd, api_usd)]
    return next((m for m, c in enumerate(cheaper) if c != cheaper[0]), None)


def cumulative_breakeven(self_hosted_usd: list[float], api_usd: list[float]) -> int | None:
    """The first month at which self-hosting has cost, in total since the first month, no more than the API. [month index]

    Parameters
    ----------
    self_hosted_usd : list of float
        Each month's self-hosted cost, fixed costs and engineering included. [USD/month]
    api_usd : list of float
        The same months' traffic on the API. [USD/month]

    Returns
    -------
    int or None
        The index of the first month ``m`` with ``Σ_{k≤m} self_hosted_usd[k] ≤ Σ_{k≤m} api_usd[k]``; None when that
        happens in no month of the schedule. [month index]

    Examples
    --------
    >>> cumulative_breakeven([100.0, 100.0, 100.0, 100.0], [40.0, 80.0, 120.0, 160.0])
    3
    """
    mine = theirs = 0.0
    for m, (s, a) in enumerate(zip(self_hosted_usd, api_usd)):
        mine, theirs = mine + s, theirs + a
        if mine <= theirs:
            return m
    return None


def _api_months(months: list[ScheduleMonth], ops: float) -> tuple[bool | None, str | None, str | None]:
    """(self-hosting cheaper in the first month, the monthly crossover, the cumulative break-even); None where there is
    none, all three None without API prices. [bool], [month], [month]"""
    if not months or months[0].api_monthly_usd is None:
        return None, None, None
    mine = [x.monthly_usd + ops for x in months]
    theirs = [x.api_monthly_usd for x in months]
    crossed, even = monthly_crossover(mine, theirs), cumulative_breakeven(mine, theirs)
    return (mine[0] < theirs[0], months[crossed].month if crossed is not None else None,
            months[even].month if even is not None else None)


def _breakeven_words(months: list[ScheduleMonth], first: bool | None, crossed: str | None, even: str | None) -> str:
    """The monthly crossover and the cumulative break-even in words, each named as what it is. [text]"""
    if first is None:
        return "no API price to compare"
    now = "self-hosting is cheaper than the API" if first else "the API is cheaper than self-hosting"
    if crossed is None:
        monthly = f"{now} in every month of the schedule (no monthly crossover)"
    else:
        then = "self-hosting becomes cheaper than the API" if not first else "the API becomes cheaper than self-hosting"
        monthly = f"{now} at first; monthly crossover: {then} from {crossed}"
    return (f"{monthly}; cumulative break-even (self-hosting's total since {months[0].month} at or below the API's): "
            + (even if even is not None else "not within the schedule"))
