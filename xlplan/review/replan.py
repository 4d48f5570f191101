"""The review's re-plan: the plan with the measured inputs, its schedule beside the plan's, and the orders to place,
move or cancel against what is installed and ordered.

Notes
-----
The re-plan's fleet is the Answer ``xlplan plan`` gives the measured plan (verified in simulation, as ``plan``
verifies by default). Both schedules start the month after the review and are sized as ``xlplan schedule`` sizes them
(``--verify margin``: the closed form plus the shortfall simulation measured at the first and the largest month, so
the first month holds the verified Answer), or by the closed form alone when the review is not verified. The plan's peaks are its forecast grown by its growth section; the re-plan's are the measured peak grown
the same way (by the measured plan's growth, which is the log's where the log measured one). Supply is what is
installed plus each order from its delivery month (left out: the plan's own fleet, the Answer's GPUs on the bill).
Each order, in delivery order, is needed from the first month the re-plan holds more than what came before it: never
within the schedule, cancel; another month, move; whatever supply still falls short is placed, its place-by day the
lead time before the first day of the month that needs it (:func:`xlplan.dates.order_by`). An action is due
when its place-by day is within :data:`DUE_DAYS` of the review, or when it moves or cancels an order.

References
----------
Runbook, document 14 · "you cannot scale into a burst": capacity is in place before the peak it serves, which for
bought hardware means ordered a lead time ahead.
"""

from __future__ import annotations

import datetime as dt

from xlplan.dates import first_month, month_start, order_by
from xlplan.decide.schedule_calendar import month_peak
from xlplan.schema.plan import Plan
from xlplan.schema.result import PlanResult
from xlplan.schema.review import FleetSide, MonthPair, OrderAction, Replan

DUE_DAYS = 31
"""An order to place by a day within this many days of the review is due before the next monthly review. [days]"""


def _start(plan: Plan, day: dt.date) -> str:
    g = plan.growth
    if g is not None and g.start:
        return g.start
    return first_month(dt.date.fromisoformat(plan.date)) if plan.date else f"{day:%Y-%m}"


def _peak_at(plan: Plan, index: int) -> float:
    """The plan's peak in month ``index`` of its growth (:func:`xlplan.decide.schedule_calendar.month_peak`). [requests/s]"""
    return month_peak(plan.forecast.peak_rps, plan.growth, index)


def planned_peak(plan: Plan, day: dt.date) -> tuple[int, float]:
    """The plan's month index and peak for the month of ``day``.

    Parameters
    ----------
    plan : Plan
        The plan, with its growth section where it has one (month 0: ``growth.start``, else the month after the
        plan's date, else the review month).
    day : datetime.date
        The review day. [date]

    Returns
    -------
    tuple of (int, float)
        Months from the growth's first month to the review month, 0 before it or without growth [months]; the peak
        that month: the forecast's × (1 + monthly growth)^index, or the table's entry (its last past its end). [requests/s]
    """
    first = month_start(_start(plan, day))
    index = max(0, (day.year - first.year) * 12 + day.month - first.month)
    return index, _peak_at(plan, index)


def _horizon(plan: Plan, index: int) -> int:
    g = plan.growth
    if g is None or (g.monthly is None and g.peaks_rps is None):
        return 1
    return g.months if g.peaks_rps is None else max(1, len(g.peaks_rps) - index - 1)


def _schedule(p: Plan, peaks: list[float], start: str, lead: int, date: str, verify: bool | str):
    from xlplan.decide.schedule import schedule
    from xlplan.plan.scenario import resolve

    return schedule(resolve(p), peaks, start, lead, "", "margin" if verify else "none", p.promise.percentile, p.model.resolve().max_context_tokens,
                    p.policy.max_num_batched_tokens is not None, date, tuple(p.accept_implausible))


def _side(r: PlanResult) -> FleetSide:
    a = r.answer
    return FleetSide(purchased=a.purchased, held=a.billed_gpus, binding=a.binding, monthly_usd=a.monthly_usd, order=a.order,
                     breakeven_tokens_per_month=a.breakeven_tokens_per_month)


def replan(plan: Plan, result: PlanResult, measured_plan: Plan, day: dt.date, index: int, recalibrated: str = "",
           verify: bool | str = False) -> Replan:
    """Section 6: the measured plan's fleet, bill and schedule beside the plan's, and the orders that follow.

    Parameters
    ----------
    plan : Plan
        The plan as written.
    result : PlanResult
        Its result.
    measured_plan : Plan
        The plan with the measured forecast (and any recalibrated efficiencies).
    day : datetime.date
        The review day. [date]
    index : int
        The review month's index in the plan's growth (:func:`planned_peak`). [months]
    recalibrated : str
        Where recalibrated efficiencies come from; '' for none. [text]
    verify : bool or 'auto'
        As :func:`xlplan.decide.planner.plan`'s (the CLI's default: 'auto'): the re-plan is ``plan(measured_plan,
        verify)``, and the schedules verify their first and largest months ('margin') unless it is False.

    Returns
    -------
    Replan
        Old and new Answers, the schedules month by month, the supply compared with and the order actions.
    """
    from xlplan.decide.planner import plan as run_plan

    new = run_plan(measured_plan, verify=verify)
    lead = plan.growth.lead_time_days if plan.growth is not None else None
    start, n = first_month(day), _horizon(plan, index)
    old_peaks = [_peak_at(plan, index + k + 1) for k in range(n)]
    new_peaks = [measured_plan.forecast.peak_rps * _peak_at(measured_plan, index + k + 1) / _peak_at(measured_plan, index)
                 for k in range(n)]
    old_s = _schedule(plan, old_peaks, start, lead or 0, day.isoformat(), verify)
    new_s = _schedule(measured_plan, new_peaks, start, lead or 0, day.isoformat(), verify)
    months = [MonthPair(month=f"{month_start(start, k):%Y-%m}", old_peak_rps=old_peaks[k], new_peak_rps=new_peaks[k],
                        old_gpus=_at(old_s.months, k, "purchased"), new_gpus=_at(new_s.months, k, "purchased"),
                        old_order_by=_at(old_s.months, k, "order_by") if lead is not None else None,
                        new_order_by=_at(new_s.months, k, "order_by") if lead is not None else None) for k in range(n)]
    supply = (f"{plan.installed.gpus} GPUs installed" if plan.installed is not None
              else f"the plan's own fleet ({result.answer.billed_gpus} GPUs; no installed section)")
    supply += "".join(f", {o.gpus} ordered for {o.delivery}" for o in plan.orders)
    base = plan.installed.gpus if plan.installed is not None else result.answer.billed_gpus
    need = [(m.month, m.purchased) for m in new_s.months]
    words = "the measured forecast" + (f" and efficiencies recalibrated from {recalibrated}" if recalibrated else "")
    return Replan(inputs=words, old=_side(result), new=_side(new), lead_time_days=lead, months=months, supply=supply,
                  actions=_order_actions(base, plan.orders, need, lead, day), stopped=new_s.stopped)


def _at(months: list, k: int, field: str):
    return getattr(months[k], field) if k < len(months) else None


def _place_by(month: str, lead: int | None, day: dt.date) -> tuple[str | None, bool, bool]:
    """(place-by day, late, due) of GPUs needed from ``month``. [date], [bool], [bool]"""
    if lead is None:
        return None, False, month <= f"{day + dt.timedelta(days=DUE_DAYS):%Y-%m}"
    by = order_by(month_start(month), lead)
    return by.isoformat(), by < day, by <= day + dt.timedelta(days=DUE_DAYS)


def _gpus(n: int) -> str:
    """'1 GPU', '5 GPUs'. [text]"""
    return f"{n} GPU" if n == 1 else f"{n} GPUs"


def _order_actions(installed: int, orders: list, need: list[tuple[str, int]], lead: int | None,
                  day: dt.date) -> list[OrderAction]:
    """The orders to place, move or cancel so that supply meets the re-plan's need month by month.

    Parameters
    ----------
    installed : int
        GPUs in service. [GPUs]
    orders : list of Order
        Orders placed, each with its GPUs and delivery month.
    need : list of (str, int)
        (YYYY-MM, GPUs held) of each month of the re-plan's schedule, in order. [month], [GPUs]
    lead : int or None
        Days from order to service; None leaves the place-by days undated. [days]
    day : datetime.date
        The review day. [date]

    Returns
    -------
    list of OrderAction
        Moves and cancellations of the orders, then the orders to place, each with its place-by day.
    """
    actions, have = [], installed
    for o in sorted(orders, key=lambda o: o.delivery):
        needed = next((m for m, g in need if g > have), None)
        if needed is None:
            actions.append(OrderAction(kind="cancel", gpus=o.gpus, needed_from=None, place_by=None, late=False, due=True,
                                       sentence=f"cancel the order of {o.gpus} GPUs placed {o.placed} for {o.delivery}: the "
                                                f"re-plan does not need them through {need[-1][0] if need else 'the schedule'}"))
        elif needed != o.delivery and not (needed == need[0][0] and o.delivery < needed):
            way = "earlier" if needed < o.delivery else "later"
            soonest = dt.date.fromisoformat(o.placed) + dt.timedelta(days=lead) if lead is not None else None
            late = way == "earlier" and soonest is not None and soonest > dt.date.fromisoformat(f"{needed}-01")
            tail = (f"; late: placed {o.placed} with a {lead}-day lead time it cannot be in service before {soonest}, so "
                    f"expedite it or cover {needed} until then another way (rent)") if late else ""
            actions.append(OrderAction(kind="move", gpus=o.gpus, needed_from=needed, place_by=None, late=late, due=True,
                                       sentence=f"move the order of {o.gpus} GPUs placed {o.placed} from {o.delivery} {way} "
                                                f"to {needed}, the first month the re-plan needs them{tail}"))
        have += o.gpus
    for month, gpus in need:
        if gpus > have:
            by, late, due = _place_by(month, lead, day)
            when = "undated (the plan states no growth.lead_time_days)" if by is None else (
                f"late: the place-by day was {by}; order now" if late else f"by {by}")
            actions.append(OrderAction(kind="place", gpus=gpus - have, needed_from=month, place_by=by, late=late, due=due,
                                       sentence=f"place an order for {_gpus(gpus - have)} needed from {month}, {when}"))
            have = gpus
    return actions
