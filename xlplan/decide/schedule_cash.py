"""Cash, dated: what each month of a schedule pays out, capex in the month of order or of delivery, apart from the
depreciation the bill books, with totals by fiscal quarter and year.

Notes
-----
A bought fleet pays, in month ``m``: the price of the whole nodes paid for in it (those delivered in it, or ordered
in it: the order goes out ``lead_time_days`` before the first day of the month that needs them) plus its running
costs (:func:`_running_usd_per_month`). Depreciation, the capex spread over the life, is booked beside it and never
summed into cash. A rented fleet pays its rent: no capex, no depreciation. An order that goes out before the first
month, paid at order, is paid before the schedule: in no month of it, but in the fiscal quarter and year it is dated in.

A fiscal year starting in month ``s`` is named by the calendar year it ends in (FY2027 runs from 2026-07 to 2027-06
when ``s`` = 7; with ``s`` = 1 it is the calendar year), and its quarters are FY2027 Q1 to Q4.

References
----------
Runbook, document 14 · "you cannot scale into a burst": bought capacity is ordered a lead time ahead, so its cash
leaves a lead time before the bill shows it. Straight-line depreciation is an accounting charge, not a payment
(IAS 16 · 50-62; ASC 360-10-35).
"""

from __future__ import annotations

from dataclasses import dataclass

from xlplan.dates import fiscal_period, month_start, order_by
from xlplan.schema.decisions import CashTotal, ScheduleMonth
from xlplan.schema.owning import OwnershipOut

CAPEX_PAID_AT = ("order", "delivery")
"""When bought GPUs are paid for: the month the order goes out, or the month they are delivered into service. [text]"""


@dataclass(frozen=True)
class CashTerms:
    """What dates a schedule's cash: the ownership of one purchasing unit (None: rented), when capex is paid, and the
    fiscal year's first month."""

    unit: OwnershipOut | None  # :func:`_unit_ownership`
    paid_at: str = "delivery"  # :data:`CAPEX_PAID_AT` [text]
    fiscal_year_start_month: int = 1  # 1-12 [month]


def cash_terms(p, s) -> CashTerms:
    """A plan's cash terms: its unit's ownership when bought, and its growth section's timing and fiscal year.

    Parameters
    ----------
    p : Plan
        The validated plan.
    s : Scenario
        The plan as numbers (:func:`xlplan.plan.scenario.resolve`).

    Returns
    -------
    CashTerms
        ``growth.capex_paid_at`` (default 'delivery') and ``growth.fiscal_year_start_month`` (default 1).
    """
    g = p.growth
    return CashTerms(_unit_ownership(p, s), g.capex_paid_at if g else "delivery", g.fiscal_year_start_month if g else 1)


def with_cash(months: list[ScheduleMonth], start: str, lead_time_days: int, paid_as: str, gpus_per_node: int,
              terms: CashTerms | None) -> tuple[list[ScheduleMonth], dict]:
    """The months with their cash dated, and the schedule's cash fields; a bought fleet without its ownership is left
    uncounted (its cash figures None), never counted as rent.

    Parameters
    ----------
    months : list of ScheduleMonth
        The schedule's months.
    start : str
        The first month, ``YYYY-MM``. [month]
    lead_time_days : int
        Days from order to service. [days]
    paid_as : {'rent_per_gpu', 'rent_per_node', 'buy'}
        ``costs.mode``.
    gpus_per_node : int
        The purchasing unit. [GPUs]
    terms : CashTerms or None
        :func:`cash_terms`; None: rented terms (a bought fleet then goes uncounted).

    Returns
    -------
    months : list of ScheduleMonth
        With their cash (:func:`_dated_cash`).
    fields : dict
        ``capex_paid_at``, ``fiscal_year_start_month``, ``capex_before_schedule_usd`` [USD] and ``cash_totals``
        (:func:`_cash_totals`), for :class:`xlplan.schema.decisions.ScheduleOut`.
    """
    terms = terms or CashTerms(None)
    fields = {"capex_paid_at": terms.paid_at, "fiscal_year_start_month": terms.fiscal_year_start_month}
    if paid_as == "buy" and terms.unit is None:
        return months, fields
    months, before, early = _dated_cash(months, start, lead_time_days, gpus_per_node, terms.unit if paid_as == "buy" else None,
                                terms.paid_at, terms.fiscal_year_start_month)
    return months, {**fields, "capex_before_schedule_usd": before,
                    "cash_totals": _cash_totals(months, early, terms.fiscal_year_start_month)}


def _running_usd_per_month(unit: OwnershipOut, nodes: float) -> float:
    """The running costs of owning ``nodes`` purchasing units for a month: every figure of the ownership result that
    is paid month by month, read here and nowhere else. [USD/month]

    Parameters
    ----------
    unit : OwnershipOut
        The ownership of ONE purchasing unit (:func:`_unit_ownership`).
    nodes : float
        Units held that month. [units]

    Returns
    -------
    float
        ``nodes × (electricity + colocation + licences of one unit) + hardware operations`` (the last for the whole fleet):
        no depreciation, no capex. [USD/month]

    Examples
    --------
    Two 8-GPU nodes at 1,116.90 power and 1,836 colocation each, 1,000 hardware operations:

    >>> from types import SimpleNamespace
    >>> u = SimpleNamespace(energy_usd_per_month=1116.9, hosting_usd_per_month=1836.0, licence_usd_per_month=0.0,
    ...                     hardware_ops_usd_per_month=1000.0)
    >>> round(_running_usd_per_month(u, 2), 2)
    6905.8
    """
    return nodes * (unit.energy_usd_per_month + unit.hosting_usd_per_month + unit.licence_usd_per_month) + unit.hardware_ops_usd_per_month


def _unit_ownership(p, s) -> OwnershipOut | None:
    """The ownership of one purchasing unit of a bought plan; None when the plan rents.

    Parameters
    ----------
    p : Plan
        The validated plan.
    s : Scenario
        The plan as numbers (:func:`xlplan.plan.scenario.resolve`).

    Returns
    -------
    OwnershipOut or None
        Capex, depreciation and running costs of ``gpus_per_node`` GPUs, as the Answer's ownership counts them.
    """
    from xlplan.money import ownership_plan

    if p.costs.rents():
        return None
    return ownership_plan.ownership_out(p, float(p.hardware.gpus_per_node), None, None)


def _paid_month_index(k: int, start: str, lead_time_days: int, paid_at: str) -> int:
    """The month, counted from the schedule's first (0), in which the GPUs month ``k`` adds are paid for. [month index]

    Parameters
    ----------
    k : int
        The month that needs them, from 0. [month index]
    start : str
        The first month, ``YYYY-MM``. [month]
    lead_time_days : int
        Days from order to service. [days]
    paid_at : {'order', 'delivery'}
        :data:`CAPEX_PAID_AT`.

    Returns
    -------
    int
        ``k`` when paid on delivery; else the month holding the order date (the first day of month ``k`` less the lead
        time), negative when that is before the schedule. [month index]

    Examples
    --------
    Needed from 2027-03 (k = 2 from 2027-01), 90 days ahead: ordered 2026-12-01, month -1:

    >>> _paid_month_index(2, "2027-01", 90, "order"), _paid_month_index(2, "2027-01", 90, "delivery")
    (-1, 2)
    """
    if paid_at not in CAPEX_PAID_AT:
        raise ValueError(f"capex_paid_at: got {paid_at!r}; expected one of {', '.join(CAPEX_PAID_AT)}")
    if paid_at == "delivery":
        return k
    first, ordered = month_start(start), order_by(month_start(start, k), lead_time_days)
    return (ordered.year - first.year) * 12 + ordered.month - first.month


def _dated_cash(months: list[ScheduleMonth], start: str, lead_time_days: int, gpus_per_node: int,
               unit: OwnershipOut | None, paid_at: str = "delivery",
               fiscal_year_start_month: int = 1) -> tuple[list[ScheduleMonth], float]:
    """Each month with its capex paid, running costs, cash, depreciation and fiscal period; and the capex paid before
    the first month.

    Parameters
    ----------
    months : list of ScheduleMonth
        The schedule's months, from the first.
    start : str
        The first month, ``YYYY-MM``. [month]
    lead_time_days : int
        Days from order to service. [days]
    gpus_per_node : int
        The purchasing unit. [GPUs]
    unit : OwnershipOut or None
        The ownership of one unit (:func:`_unit_ownership`); None: the fleet is rented.
    paid_at : {'order', 'delivery'}
        :data:`CAPEX_PAID_AT`.
    fiscal_year_start_month : int
        The fiscal year's first month, 1-12. [month]

    Returns
    -------
    months : list of ScheduleMonth
        The months with ``capex_paid_month``, ``capex_paid_usd``, ``opex_usd_per_month``, ``cash_usd``, ``depreciation_usd_per_month``,
        ``cumulative_cash_usd``, ``fiscal_year`` and ``fiscal_quarter``.
    before_usd : float
        Capex paid before the first month. [USD]
    before_paid : list of tuple
        (month ``YYYY-MM``, USD) of each payment before the first month, for its fiscal period. [USD]
    """
    paid_gpus = [0] * len(months)  # GPUs paid for in each month, by when they are paid, not when needed
    paid_in: list[str | None] = [None] * len(months)
    price = unit.capex_usd_per_node if unit is not None else 0.0
    before_paid = []
    for k, m in enumerate(months):
        if unit is None or not m.new_gpus:
            continue
        i = _paid_month_index(k, start, lead_time_days, paid_at)
        paid_in[k] = f"{month_start(start, i):%Y-%m}"
        if i < 0:
            before_paid.append((paid_in[k], m.new_gpus / gpus_per_node * price))
        else:
            paid_gpus[i] += m.new_gpus
    before = sum(usd for _, usd in before_paid)
    out, cumulative = [], before
    for k, m in enumerate(months):
        nodes = m.purchased / gpus_per_node
        capex = paid_gpus[k] / gpus_per_node * price
        opex = _running_usd_per_month(unit, nodes) if unit is not None else m.monthly_usd
        cumulative += capex + opex
        fy, quarter = fiscal_period(m.month, fiscal_year_start_month)
        out.append(m.model_copy(update={
            "capex_paid_month": paid_in[k], "capex_paid_usd": capex, "opex_usd_per_month": opex, "cash_usd": capex + opex,
            "depreciation_usd_per_month": nodes * unit.depreciation_usd_per_month if unit is not None else 0.0,
            "cumulative_cash_usd": cumulative, "fiscal_year": fy, "fiscal_quarter": quarter}))
    return out, before, before_paid


def _cash_totals(months: list[ScheduleMonth], before_paid: list[tuple[str, float]] = (), fiscal_year_start_month: int = 1
                ) -> list[CashTotal]:
    """Capex, running costs, cash and depreciation summed by fiscal quarter, then by fiscal year, in calendar order.

    Parameters
    ----------
    months : list of ScheduleMonth
        Months with their cash (:func:`_dated_cash`).
    before_paid : list of tuple
        (month, USD) of the capex paid before the first month (:func:`_dated_cash`), counted in its own period. [USD]
    fiscal_year_start_month : int
        The fiscal year's first month, 1-12. [month]

    Returns
    -------
    list of CashTotal
        One per quarter the schedule or a payment before it touches, then one per fiscal year; a period the schedule
        starts or ends inside counts its months within the schedule (``months`` says how many) and every capex
        payment dated in it. [USD]
    """
    early = [(fiscal_period(month, fiscal_year_start_month), usd) for month, usd in before_paid]
    out = []
    for kind, key, part in (("quarter", "fiscal_quarter", 1), ("fiscal year", "fiscal_year", 0)):
        periods = list(dict.fromkeys([fp[part] for fp, _ in early] + [getattr(m, key) for m in months]))
        for period in periods:
            inside = [m for m in months if getattr(m, key) == period]
            capex = sum(m.capex_paid_usd for m in inside) + sum(usd for fp, usd in early if fp[part] == period)
            opex = sum(m.opex_usd_per_month for m in inside)
            out.append(CashTotal(period=period, kind=kind, months=len(inside), capex_usd=capex, opex_usd=opex,
                                 cash_usd=capex + opex, depreciation_usd=sum(m.depreciation_usd_per_month for m in inside)))
    return out
