"""The audit view of a plan's change (`xlplan diff`): which inputs changed, who owns them, and what they change.

Pure: two validated plans in, a :class:`~xlplan.schema.diff.PlanDiff` out. Both plans are answered by
:func:`xlplan.decide.planner.plan` and, where both grow, scheduled by :func:`xlplan.decide.schedule.schedule` with the arguments
`xlplan schedule` gives it from a plan's growth section; nothing is re-derived here.
"""

from __future__ import annotations

import datetime as dt
import re
import typing
from typing import Any

from pydantic import BaseModel

from xlplan import words
from xlplan.schema.decisions import ScheduleOut
from xlplan.schema.diff import Compared, Consequences, InputChange, PlanDiff
from xlplan.schema.plan import Plan
from xlplan.schema.result import PlanResult

HARDWARE_PRICING = ("usd_per_gpu_hour", "hours_per_month", "ops_usd_per_month", "billing")
"""The hardware fields the Pricing owner answers for (the workbook's inputs mark them so); the GPU and its unit are the
model owner's. [text]"""

GROWTH_PRICING = ("lead_time_days", "capex_paid_at", "fiscal_year_start_month")
"""The growth fields that are procurement and accounting terms, the Pricing owner's; the rest is the forecast's. [text]"""

SECTION_OWNER = {"forecast": "forecast", "promise": "promise", "model": "model", "policy": "model", "costs": "pricing",
                 "api": "pricing", "contracts": "pricing", "growth": "forecast"}
"""The owners.<section> of each plan section, as :data:`xlplan.excel.inputs.INPUT_SPECS` marks its inputs. [text]"""

OWN_SOURCE = ("costs", "api", "growth")
"""Sections that carry a ``source`` of their own beside the plan's ``sources.<section>``. [text]"""

UNITLESS = ("text", "bool", "1", "dtype", "catalog key")
_UNIT = re.compile(r"\[([^\[\]]+)\]\s*\.?\s*$")


def owner_section(path: tuple[str, ...]) -> str | None:
    """The owners.<section> that answers for a plan field, mapped as the workbook's inputs are.

    Parameters
    ----------
    path : tuple of str
        The field's path in the plan, e.g. ``("forecast", "prompt_tokens", "p95")``. [text]

    Returns
    -------
    str or None
        'forecast', 'promise', 'pricing' or 'model'; an owner or source names its own section; None for the plan's
        name, date and accepted fields. [text]
    """
    head, field = path[0], path[1] if len(path) > 1 else ""
    if head in ("owners", "sources"):
        return field or None
    if head == "hardware":
        return "pricing" if field in HARDWARE_PRICING else "model"
    if head == "growth" and field in GROWTH_PRICING:
        return "pricing"
    return SECTION_OWNER.get(head)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation holds (itself, or inside Optional, a union or a list)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for a in typing.get_args(annotation) if (m := _model_in(a)) is not None), None)


def _field_unit(path: tuple[str, ...]) -> str:
    """The unit of a plan field, from its description in the plan's schema; '' for text, choices and sections.

    Parameters
    ----------
    path : tuple of str
        The field's path in the plan. [text]

    Returns
    -------
    str
        The unit inside the description's brackets, e.g. 'tokens', 'USD/GPU-hour'; a field without one takes its
        section's (the percentiles of ``prompt_tokens`` are tokens). [text]
    """
    cls: type[BaseModel] | None = Plan
    unit = ""
    for part in path:
        info = cls.model_fields.get(part) if cls is not None else None
        if info is None:
            break
        found = _UNIT.search(info.description or "")
        unit = found.group(1) if found else unit
        cls = _model_in(info.annotation)
    return "" if unit in UNITLESS else unit


def _leaves(old: Any, new: Any, path: tuple[str, ...]):
    """(path, old, new) of every leaf that differs; a section given on one side only is walked on that side."""
    if isinstance(old, dict) or isinstance(new, dict):
        if (old is not None and not isinstance(old, dict)) or (new is not None and not isinstance(new, dict)):
            yield path, old, new  # a catalog name on one side, a mapping on the other
            return
        o, n = old or {}, new or {}
        for key in [*o, *(k for k in n if k not in o)]:
            yield from _leaves(o.get(key), n.get(key), (*path, key))
    elif old != new:
        yield path, old, new


def _source(p: Plan, section: str | None, head: str) -> str | None:
    """sources.<section>, and the field's section's own source where it has one. [text]"""
    if section is None:
        return None
    text = getattr(p.sources, section)
    block = getattr(p, head, None) if head in OWN_SOURCE else None
    own = getattr(block, "source", "") if block is not None else ""
    return f"{text}; {head}.source: {own}" if own else text


def _changed_inputs(old: Plan, new: Plan) -> list[InputChange]:
    """Every plan field that differs, by its dotted path, with its unit, owner and source in each plan.

    Parameters
    ----------
    old : Plan
        The plan before the change.
    new : Plan
        The plan after it.

    Returns
    -------
    list of InputChange
        In the plan's order; empty when the plans are equal. A new owner or source is given only where it differs.
    """
    out = []
    for path, o, n in _leaves(old.model_dump(mode="json"), new.model_dump(mode="json"), ()):
        section = owner_section(path)
        owner = getattr(old.owners, section) if section else None
        new_owner = getattr(new.owners, section) if section else None
        source, new_source = _source(old, section, path[0]), _source(new, section, path[0])
        out.append(InputChange(path=".".join(path), unit=_field_unit(path), old=o, new=n, owner_section=section,
                               owner=owner, new_owner=new_owner if new_owner != owner else None, source=source,
                               new_source=new_source if new_source != source else None))
    return out


def _compared(old: Any, new: Any, unit: str = "") -> Compared:
    return Compared(unit=unit, old=old, new=new, changed=old != new)


def _order_dates(out: ScheduleOut) -> list[str]:
    """The months of a schedule that need new GPUs, each with its order-by date, as `xlplan schedule` dates them.

    Parameters
    ----------
    out : ScheduleOut
        A schedule.

    Returns
    -------
    list of str
        'YYYY-MM: N new GPUs, order by YYYY-MM-DD', then why the schedule stops where it does. [text]
    """
    dates = [f"{m.month}: {words.count(m.new_gpus, 'new GPU')}, order by {m.order_by}" for m in out.months if m.new_gpus]
    return dates + ([f"stops: {out.stopped}"] if out.stopped else [])


def consequences(old_result: PlanResult | None, new_result: PlanResult | None, method: str,
                 reasons: tuple[str, str] = ("", ""), schedules: tuple[ScheduleOut | None, ScheduleOut | None] = (None, None),
                 schedule_note: str = "") -> Consequences:
    """The Answer of each plan figure by figure: the fleet, the binding constraint, the bill and the order dates.

    Parameters
    ----------
    old_result : PlanResult or None
        The old plan's result; None where it cannot be planned.
    new_result : PlanResult or None
        The new plan's result; None where it cannot be planned.
    method : str
        How both were answered: 'closed form' or 'verified'. [text]
    reasons : tuple of str
        Why each plan cannot be planned ('' where it can). [text]
    schedules : tuple of ScheduleOut or None
        Each plan's schedule, where both plans have a growth section.
    schedule_note : str
        Why the order dates are not compared, or how the schedules were sized. [text]

    Returns
    -------
    Consequences
        Each figure old and new, ``changed`` where they differ; a plan that cannot be met has None figures.
    """
    a, b = (r.answer if r is not None else None for r in (old_result, new_result))

    def pair(get, unit: str = "") -> Compared:
        return _compared(get(a) if a is not None else None, get(b) if b is not None else None, unit)

    feasible = [("yes" if r is not None else f"no: {why}") for r, why in zip((old_result, new_result), reasons)]
    dates = None
    if all(s is not None for s in schedules):
        dates = _compared(*(_order_dates(s) for s in schedules))
    return Consequences(
        method=method, feasible=_compared(*feasible), source=pair(lambda x: x.source), load=pair(lambda x: x.load, "GPUs"),
        with_redundancy=pair(lambda x: x.with_redundancy, "GPUs"), purchased=pair(lambda x: x.purchased, "GPUs"),
        order=pair(lambda x: x.order), settings=pair(lambda x: x.settings), binding=pair(lambda x: x.binding),
        runbook_binding=_compared(*(r.binding if r is not None else None for r in (old_result, new_result))),
        monthly_usd=pair(lambda x: x.monthly_usd, "USD/month"), usd_per_mtok=pair(lambda x: x.usd_per_mtok, "USD/Mtok"),
        order_dates=dates, schedule_note=schedule_note)


def _plan_schedule(p: Plan, today: dt.date, verify: str = "none") -> tuple[ScheduleOut | None, str]:
    """The schedule `xlplan schedule PLAN` makes from the plan's growth section, with no option given.

    Parameters
    ----------
    p : Plan
        A plan with a growth section.
    today : date
        The day the schedule is made: it starts the month after, unless ``growth.start`` says otherwise. [date]
    verify : {'margin', 'every', 'none'}
        As ``xlplan schedule --verify``. [text]

    Returns
    -------
    tuple of (ScheduleOut or None, str)
        The schedule, and '' ; or None and why it cannot be made from the plan alone. [text]
    """
    from xlplan.decide.schedule import plan_schedule as made
    from xlplan.decide.schedule_calendar import plan_growth

    g = p.growth
    planned = plan_growth(p.forecast.peak_rps, g, None)
    if planned is None or g.lead_time_days is None:
        return None, "its growth section gives " + ("no peaks (growth.monthly or growth.peaks_rps)" if planned is None
                                                    else "no growth.lead_time_days")
    return made(p, today, verify, planned), ""


def _answered(p: Plan, verify: bool) -> tuple[PlanResult | None, str]:
    """The plan's result, or None and why it cannot be planned. [text]"""
    from xlplan.decide.planner import plan
    from xlplan.plan.scenario import PlanningError

    try:
        return plan(p, verify="auto" if verify else False), ""  # as `plan` verifies: where affordable
    except PlanningError as e:
        return None, str(e)


def _schedules(old: Plan, new: Plan, verify: bool, today: dt.date) -> tuple[tuple, str]:
    """Both plans' schedules where both grow, else (None, None) and why not. [text]"""
    if old.growth is None or new.growth is None:
        which = "neither plan has a" if old.growth is None and new.growth is None else (
            "the old plan has no" if old.growth is None else "the new plan has no")
        return (None, None), f"order dates not compared: {which} growth section"
    mode = "margin" if verify else "none"
    made = [_plan_schedule(p, today, mode) for p in (old, new)]
    why = "; ".join(f"{side} plan: {note}" for side, (_, note) in zip(("old", "new"), made) if note)
    if why:
        return (None, None), f"order dates not compared: {why}"
    how = ("the closed form plus a margin simulated at the first and largest month" if verify
           else "the closed form, month by month")
    return (made[0][0], made[1][0]), f"order dates as `xlplan schedule` gives them from each plan's growth section ({how})"


def diff_plans(old: Plan, new: Plan, verify: bool = False, today: dt.date | None = None) -> PlanDiff:
    """Which inputs changed between two plans, and what they change: both planned, and scheduled where both grow.

    Parameters
    ----------
    old : Plan
        The plan before the change.
    new : Plan
        The plan after it.
    verify : bool
        Simulate both Answers at peak, as ``xlplan plan`` verifies its Answer (and size the schedules with a simulated
        margin); False: the closed form alone, in a fraction of a second.
    today : date, optional
        The day the schedules are made (a growth section without ``start`` starts the month after); needed only
        where both plans grow. [date]

    Returns
    -------
    PlanDiff
        The inputs changed, the consequences, and whether anything differs.

    References
    ----------
    Runbook, document 14, "The capacity note": the Answer, its binding constraint and its bill.
    """
    inputs = _changed_inputs(old, new)
    (r_old, why_old), (r_new, why_new) = _answered(old, verify), _answered(new, verify)
    schedules, note = (((None, None), "") if r_old is None or r_new is None
                       else _schedules(old, new, verify, today or dt.date.today()))
    c = consequences(r_old, r_new, "verified" if verify else "closed form", (why_old, why_new), schedules, note)
    figures = [getattr(c, name) for name in Consequences.model_fields if isinstance(getattr(c, name), Compared)]
    return PlanDiff(inputs_changed=inputs, consequences=c, differs=bool(inputs) or any(f.changed for f in figures))
