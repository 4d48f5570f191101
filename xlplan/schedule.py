"""When to order: the fleet month by month as traffic grows, each order dated its lead time before it is needed.

Notes
-----
Month ``m`` (0 for the first) has peak ``peak_rps × (1 + g)^m`` at a monthly growth ``g``, or the stated peak of a
table. Each month is re-planned in full at its peak (the seven steps; the TP degree may change). GPUs bought stay
bought: the purchased fleet is the running maximum of what each month needs, and the GPUs a month adds must be in
service on its first day, so their order goes out ``lead_time_days`` before it. A fleet rented per GPU holds and pays
for each month's fleet with redundancy, one rented by the node that month's whole nodes (:func:`held_gpus`: a rented
fleet shrinks in a dip); a bought fleet every GPU bought so far.

References
----------
Runbook, document 14: "peak for the fleet, average for the cost model"; "you cannot scale into a burst" — capacity
must be in place before the peak it serves, which for bought hardware means ordered a lead time ahead.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math

from xlplan import fleet, plausibility, steps
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
        Every month with the source of its fleet, the method and margin used, the months the API break-even is
        crossed and the binding constraint changes (None if not). A month whose peak cannot be met on this hardware
        ends the schedule, with its reason.

    References
    ----------
    Runbook, document 14 · "peak for the fleet, average for the cost model"; "you cannot scale into a burst".
    """
    if verify not in VERIFY_MODES:
        raise ValueError(f"verify: got {verify!r}; expected one of {', '.join(VERIFY_MODES)}")
    decided, stopped = _decide_months(s, peaks_rps, start, verify, percentile, max_context, budget_set_by_plan, accepted)
    margin, method = _margin(decided, verify, percentile, max_context, budget_set_by_plan)
    months = _months(decided, margin, lead_time_days)
    return ScheduleOut(months=months, start=start, lead_time_days=lead_time_days, growth=growth_words,
                       breakeven_month=_breakeven_month(months, s.ops_usd_per_month),
                       breakeven_words=_breakeven_words(months, s.ops_usd_per_month),
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


def held_gpus(paid_as: str, with_redundancy: int, needed_purchased: int, bought_before: int) -> int:
    """GPUs a month holds and pays for: what it rents that month, or every GPU bought so far. [GPUs]

    Parameters
    ----------
    paid_as : {'rent_per_gpu', 'rent_per_node', 'buy'}
        How the fleet is paid for (``costs.mode``).
    with_redundancy : int
        The month's fleet with redundancy. [GPUs]
    needed_purchased : int
        That fleet in whole purchasing units. [GPUs]
    bought_before : int
        GPUs bought in the months before (buying only). [GPUs]

    Returns
    -------
    int
        Rented per GPU, ``with_redundancy``; rented by the node, ``needed_purchased`` (a rented node is given back in a
        dip); bought, the larger of ``needed_purchased`` and ``bought_before`` (GPUs bought stay bought). [GPUs]

    Examples
    --------
    A dip month needing 4 with redundancy, a node of 8, 16 bought before:

    >>> held_gpus("rent_per_gpu", 4, 8, 16), held_gpus("rent_per_node", 4, 8, 16), held_gpus("buy", 4, 8, 16)
    (4, 8, 16)
    """
    if paid_as == "rent_per_gpu":
        return with_redundancy
    if paid_as == "rent_per_node":
        return needed_purchased
    return max(needed_purchased, bought_before)


def _months(decided: list, margin: int, lead_time_days: int) -> list[ScheduleMonth]:
    """Each decided month's fleet, the GPUs bought so far and the order for those it adds, and its bill. [ScheduleMonth]"""
    months: list[ScheduleMonth] = []
    owned, previous, cumulative = 0, 0, 0.0
    for first_day, sm, d in decided:
        cf = d.closed_form
        source, load, red = _month_fleet(d, margin)
        needed = int(math.ceil(red / sm.gpus_per_node) * sm.gpus_per_node)
        held = held_gpus(sm.paid_as, red, needed, owned)
        new = max(held - owned, 0) if sm.paid_as == "buy" else max(held - previous, 0)
        owned, previous = max(owned, needed), held
        b = steps.bill(sm, d.sol.traffic, dataclasses.replace(d.sol.paths, with_redundancy=float(red), purchased=float(held)))
        cumulative += b.monthly_usd
        months.append(ScheduleMonth(
            month=f"{first_day:%Y-%m}", peak_rps=sm.peak_rps, tp=cf.tp, load=load, with_redundancy=red,
            needed_purchased=needed, purchased=held, new_gpus=new,
            order=fleet.order_words(sm.paid_as, red, held, sm.gpus_per_node), order_by=order_by(first_day, lead_time_days).isoformat() if new else None,
            billed_gpus=int(b.billed_gpus), monthly_usd=b.monthly_usd, cumulative_usd=cumulative, binding=cf.binding,
            api_monthly_usd=b.api_monthly_usd, source=source, closed_form_load=cf.load,
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


def _cheaper_self_hosted(x: ScheduleMonth, ops_usd_per_month: float) -> bool | None:
    if x.api_monthly_usd is None:
        return None
    return x.monthly_usd + ops_usd_per_month < x.api_monthly_usd


def _breakeven_month(months: list[ScheduleMonth], ops: float) -> str | None:
    """The first month whose API comparison differs from the first month's. [month]"""
    if not months or _cheaper_self_hosted(months[0], ops) is None:
        return None
    first = _cheaper_self_hosted(months[0], ops)
    return next((x.month for x in months if _cheaper_self_hosted(x, ops) != first), None)


def _breakeven_words(months: list[ScheduleMonth], ops: float) -> str:
    if not months or months[0].api_monthly_usd is None:
        return "no API price to compare"
    first = _cheaper_self_hosted(months[0], ops)
    crossed = _breakeven_month(months, ops)
    now = "self-hosting is cheaper than the API" if first else "the API is cheaper than self-hosting"
    if crossed is None:
        return f"{now} in every month of the schedule"
    then = "self-hosting becomes cheaper than the API" if not first else "the API becomes cheaper than self-hosting"
    return f"{now} at first; {then} from {crossed}"
