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

from xlplan import fleet
from xlplan.dates import first_month, month_start, order_by
from xlplan.decide.schedule_calendar import plan_growth
from xlplan.decide.schedule_cash import CashTerms, cash_terms, with_cash
from xlplan.plan import monthly_bill, scenario
from xlplan.plan.scenario import Scenario, resolve
from xlplan.schema import plausibility
from xlplan.schema.decisions import ScheduleMonth, ScheduleOut
from xlplan.words import count

MAX_PEAK_RPS = 1e6
"""The largest peak a schedule month plans: a million requests a second is beyond any single deployment, and past it a
compounding growth has run away (a percentage typed as a fraction). [requests/s]"""


VERIFY_MODES = ("margin", "every", "none")
"""How a schedule's fleets are checked: 'margin' simulates the first and the largest month and adds the replicas the
closed form fell short by there to every month; 'every' simulates every month; 'none' gives the closed form. [text]"""


def schedule(s: Scenario, peaks_rps: list[float], start: str, lead_time_days: int, growth_words: str = "",
             verify: str = "none", percentile: float = 95.0, max_context: int | None = None,
             budget_set_by_plan: bool = False, today: str | None = None, accepted: tuple[str, ...] = (),
             cash: CashTerms | None = None) -> ScheduleOut:
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
        The plan's ``accept_implausible``: a month past a bound of :data:`xlplan.schema.plausibility.RESULT_BOUNDS` not
        among them ends the schedule, as ``plan`` refuses such an answer. [text]
    cash : CashTerms, optional
        What dates each month's cash (:func:`xlplan.decide.schedule_cash.cash_terms`); left out, rented months' cash only.

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
    margin, spares, method = _margin(decided, verify, percentile, max_context, budget_set_by_plan)
    months = _months(decided, (margin, spares), lead_time_days, s.ops_usd_per_month)
    first, crossover, cumulative = _api_months(months, s.ops_usd_per_month)
    months, dated = with_cash(months, start, lead_time_days, s.paid_as, s.gpus_per_node, cash)
    return ScheduleOut(months=months, start=start, lead_time_days=lead_time_days, growth=growth_words,
                       monthly_crossover_month=crossover, cumulative_breakeven_month=cumulative,
                       breakeven_words=_breakeven_words(months, first, crossover, cumulative),
                       binding_change_month=next((x.month for x in months if x.binding != months[0].binding), None) if months else None,
                       stopped=stopped, method=method, margin_replicas=margin, spare_margin_replicas=spares,
                       late_orders=[m.month for m in months if today and m.order_by and m.order_by < today], **dated)


def plan_schedule(p, today, verify: str = "none", peaks: tuple[list[float], str] | None = None,
                  lead_time_days: int | None = None, start: str | None = None) -> ScheduleOut:
    """A plan's schedule as ``xlplan schedule`` makes it: the plan's own growth, lead time and start unless given.

    Parameters
    ----------
    p : Plan
        The validated plan.
    today : datetime.date
        The day it is made: the schedule starts the month after it, unless ``start`` or ``growth.start`` says. [date]
    verify : {'margin', 'every', 'none'}
        As ``xlplan schedule --verify``. [text]
    peaks : tuple of (list of float, str), optional
        The monthly peaks and how they were made; left out, the growth section's (:func:`plan_growth`). [requests/s]
    lead_time_days : int, optional
        Days from order to service; left out, ``growth.lead_time_days``. [days]
    start : str, optional
        The first month, ``YYYY-MM``; left out, ``growth.start``, else the month after ``today``. [month]

    Returns
    -------
    ScheduleOut
        :func:`schedule` of the plan's numbers, with its cash dated (:func:`xlplan.decide.schedule_cash.cash_terms`).
    """
    g = p.growth
    s = resolve(p)
    monthly, words = peaks if peaks is not None else plan_growth(p.forecast.peak_rps, g)
    first = start or (g.start if g is not None and g.start else first_month(today))
    lead = lead_time_days if lead_time_days is not None else g.lead_time_days
    return schedule(s, monthly, first, lead, words, verify, p.promise.percentile, p.model.resolve().max_context_tokens,
                    p.policy.max_num_batched_tokens is not None, today.isoformat(), tuple(p.accept_implausible),
                    cash_terms(p, s))


def _decide_months(s: Scenario, peaks_rps: list[float], start: str, verify: str, percentile: float,
                   max_context: int | None, budget_set_by_plan: bool, accepted: tuple[str, ...] = ()) -> tuple[list, str]:
    """(first day, scenario, decision) of each month at its peak, up to the first that cannot be planned; and why
    that one stopped the schedule ('' when none did). [date], [Scenario], [Decision], [text]"""
    from xlplan.decide import answer

    decided = []
    for m, peak in enumerate(peaks_rps):
        first_day = month_start(start, m)
        if peak > MAX_PEAK_RPS:
            return decided, (f"{first_day:%Y-%m}: the peak reaches {peak:,.6g} requests/s, beyond the {MAX_PEAK_RPS:,.0f} a "
                             "schedule plans; check the growth rate or plan fewer months")
        sm = dataclasses.replace(s, peak_rps=peak)
        try:
            d = answer.decide(sm, percentile, max_context, budget_set_by_plan, "auto" if verify == "every" else False)
        except scenario.PlanningError as e:
            return decided, f"{first_day:%Y-%m}: at {peak:,.6g} requests/s the plan cannot be met ({e})"
        past = plausibility.results(d.answer.purchased, d.answer.monthly_usd, accepted)
        if past:
            return decided, (f"{first_day:%Y-%m}: at {peak:,.6g} requests/s the answer passes a plausible bound ("
                             + "; ".join(b.finding for b in past) + "); check the growth rate or plan fewer months")
        decided.append((first_day, sm, d))
    return decided, ""


def _month_fleet(d, margins: tuple[int, int]) -> tuple[str, int, int]:
    """(source, load, with redundancy) of one month: the verified fleet, else the closed form plus the margins (on the
    load, and on the spares the simulation added for the redundancy lost mid-run). [text], [GPUs], [GPUs]"""
    a, cf = d.answer, d.closed_form
    if a.source == "verified":
        return "verified", a.load, a.with_redundancy
    margin, spares = margins
    return ("closed form" + (f" + {margin + spares} replica margin" if margin + spares else ""), cf.load + margin * cf.tp,
            cf.with_redundancy + (margin + spares) * cf.tp)


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


def _months(decided: list, margin: tuple[int, int], lead_time_days: int, ops_usd_per_month: float = 0.0) -> list[ScheduleMonth]:
    """Each decided month's fleet, the GPUs it holds and the order for those it adds, its bill, and the running
    totals of self-hosting (ops included) and of the API. [ScheduleMonth]"""
    months: list[ScheduleMonth] = []
    previous, cumulative, all_in, api = 0, 0.0, 0.0, 0.0  # previous: what the month before held (bought: all bought)
    for first_day, sm, d in decided:
        verified = d.answer.source == "verified"
        cf = d.configuration if (verified and d.configuration is not None) else d.closed_form  # the month's setting
        source, load, red = _month_fleet(d, margin)
        needed = int(fleet.whole_units(red, sm.gpus_per_node))
        held = held_gpus(sm.paid_as, red, needed, previous)
        new, previous = max(held - previous, 0), held
        b = monthly_bill.bill(sm, d.sol.traffic, dataclasses.replace(d.sol.paths, with_redundancy=float(red), purchased=float(held)))
        cumulative += b.monthly_usd
        mine, priced = b.monthly_usd + ops_usd_per_month, b.api_monthly_usd is not None
        all_in += mine
        api = api + b.api_monthly_usd if priced else api
        months.append(ScheduleMonth(
            month=f"{first_day:%Y-%m}", peak_rps=sm.peak_rps, tp=cf.tp, step_budget_tokens=int(cf.step_budget_tokens),
            load=load, with_redundancy=red,
            needed_purchased=needed, purchased=held, new_gpus=new,
            order=fleet.order_words(sm.paid_as, red, held, sm.gpus_per_node), order_by=order_by(first_day, lead_time_days).isoformat() if new else None,
            billed_gpus=int(b.billed_gpus), monthly_usd=b.monthly_usd, cumulative_usd=cumulative,
            binding=d.answer.binding if verified else cf.binding,
            api_monthly_usd=b.api_monthly_usd, source=source, closed_form_load=cf.load, all_in_cumulative_usd=all_in,
            api_cumulative_usd=api if priced else None, self_hosted_cheaper=(mine < b.api_monthly_usd) if priced else None,
            cumulative_at_or_below_api=(all_in <= api) if priced else None,
        ))
    return months


def _margin(decided: list, verify: str, percentile: float, max_context: int | None,
            budget_set_by_plan: bool) -> tuple[int, int, str]:
    """(replicas added to each closed-form month's load, and to its spares, the method in words): the shortfalls
    measured in simulation, of the load and of the fleet with redundancy beyond it. [replicas], [replicas], [text]"""
    from xlplan.decide import answer

    if verify == "none" or not decided:
        return 0, 0, "the closed form each month (the largest of the memory, compute, latency and queueing paths), not simulated"
    if verify == "every":
        n = sum(d.answer.source == "verified" for _, _, d in decided)
        rest = "" if n == len(decided) else "; the rest past what the default simulation takes on: the closed form"
        return 0, 0, (f"each month verified in simulation at its peak, as `xlplan plan` verifies its Answer ({n} of "
                      f"{count(len(decided), 'month')}{rest})")
    largest = max(range(len(decided)), key=lambda i: decided[i][1].peak_rps)
    measured, spared, words = [], [], []
    for i in sorted({0, largest}):
        first_day, sm, d = decided[i]
        v = answer.decide(sm, percentile, max_context, budget_set_by_plan, "auto")
        decided[i] = (first_day, sm, v)
        if v.answer.source == "verified":
            own = v.configuration or v.closed_form  # the closed form at the setting verified: like with like
            short = (v.answer.load - own.load) // own.tp
            measured.append(short)
            spared.append((v.answer.with_redundancy - own.with_redundancy) // own.tp - short)
            words.append(f"{first_day:%Y-%m} {v.answer.load} verified against {own.load} closed form, "
                         f"{v.answer.with_redundancy} against {own.with_redundancy} with redundancy")
        else:
            words.append(f"{first_day:%Y-%m} not simulated ({v.skipped or 'no fleet verified'})")
    margin, spares = max([0] + measured), max([0] + spared)
    extra = f" and {count(spares, 'spare replica')} more for the redundancy lost mid-run" if spares else ""
    return margin, spares, (f"the closed form each month plus a margin of {count(margin, 'replica')}{extra}, the most the "
                            f"closed form fell short by where simulated ({'; '.join(words)}); `--verify every` simulates "
                            "every month")


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
        after = [m.self_hosted_cheaper for m in months if m.month >= crossed and m.self_hosted_cheaper is not None]
        when = f"from {crossed}" if all(x != first for x in after) else f"first in {crossed}, not in every month after"
        monthly = f"{now} at first; monthly crossover: {then} {when}"
    return (f"{monthly}; cumulative break-even (self-hosting's total since {months[0].month} at or below the API's): "
            + (even if even is not None else "not within the schedule"))
