"""Section 6, what would change it: standard what-ifs and breakpoints.

Each what-if is a full re-plan with one input changed. A breakpoint is the value
of one input at which the purchase grows by one unit, or the binding constraint
changes, found by a geometric search outward then bisection. The rows live in
:mod:`xlplan.plan.whatif_table` and the search in :mod:`xlplan.plan.breakpoints`.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from xlplan.plan import monthly_bill, scenario, steps
from xlplan.plan.breakpoints import (
    closed_outcome,
    with_prompt_p95,
)
from xlplan.plan.scenario import Scenario, resolve
from xlplan.plan.whatif_table import STANDARD_WHAT_IFS, WhatIf, describe
from xlplan.schema.plan import Plan
from xlplan.schema.result import Sensitivity


def _sensitivity(change: str, s: Scenario | None, error: str = "") -> Sensitivity:
    sol = None
    if s is not None:
        try:
            sol = steps.solve(s)
        except scenario.PlanningError as e:
            error = str(e)
    if sol is None:
        return Sensitivity(change=change, feasible=False, load=None, fleet=None, purchased=None, binding=None,
                           monthly_usd=None, usd_per_mtok=None, note=error)
    return Sensitivity(
        change=change, feasible=True, load=int(sol.paths.load), fleet=int(sol.paths.with_redundancy),
        purchased=int(sol.paths.purchased), binding=sol.binding, binding_paths=list(sol.binding_paths), monthly_usd=sol.bill.monthly_usd,
        usd_per_mtok=sol.bill.usd_per_mtok,
    )


def apply(plan: Plan, s: Scenario, w: WhatIf) -> Scenario:
    """The scenario with a what-if's changes made.

    Parameters
    ----------
    plan : Plan
        The plan as written: a dtype what-if re-resolves it with the model's dtypes changed.
    s : Scenario
        The plan's numbers.
    w : WhatIf
        The what-if to make.

    Returns
    -------
    Scenario
        The changed scenario, ready for :func:`xlplan.plan.steps.solve`.

    Raises
    ------
    PlanningError
        When the changed plan cannot run on the GPU (e.g. a dtype the GPU lacks).
    """
    if w.kv_dtype is not None or w.weights_dtype is not None:
        update = {k: v for k, v in (("kv_dtype", w.kv_dtype), ("weights_dtype", w.weights_dtype)) if v is not None}
        s = resolve(plan.model_copy(update={"model": plan.model.model_copy(update=update)}))
    if w.prompt_p95_x != 1.0:
        s = with_prompt_p95(s, s.prompt_p95 * w.prompt_p95_x)
    changes = {"peak_rps": s.peak_rps * w.rate_x, "itl_s": s.itl_s * w.itl_x}
    if w.prefix_reuse is not None:
        changes["prefix_reuse"] = w.prefix_reuse
    if w.average_utilisation is not None:
        changes["average_utilisation"] = w.average_utilisation
    return replace(s, **changes)


def sensitivities(plan: Plan, s: Scenario, what_ifs: tuple[WhatIf, ...] = STANDARD_WHAT_IFS) -> list[Sensitivity]:
    """The what-ifs, each a full re-plan with one input changed.

    Parameters
    ----------
    plan : Plan
        The plan as written.
    s : Scenario
        The plan's numbers.
    what_ifs : tuple of WhatIf
        The what-ifs to run, in the order they are shown.

    Returns
    -------
    list of Sensitivity
        One per what-if, in order: its label and re-planned fleet and cost, or why it cannot be met.
    """
    return _each_what_if(plan, s, what_ifs, _sensitivity)


def _each_what_if(plan: Plan, s: Scenario, what_ifs: tuple[WhatIf, ...], one) -> list[Sensitivity]:
    """``one(label, changed scenario or None, why not)`` for each what-if, in order: the change made, or the reason it
    cannot be (only a real infeasibility reads as "cannot be met"; a bug surfaces as a bug)."""
    out = []
    for w in what_ifs:
        label = describe(plan, s, w)
        try:
            changed = apply(plan, s, w)
        except scenario.PlanningError as e:
            out.append(one(label, None, str(e)))
            continue
        out.append(one(label, changed))
    return out


def _closed_sensitivity(change: str, s: Scenario | None, budget: int, set_by_plan: bool, error: str = "") -> Sensitivity:
    """One what-if on the closed form: the largest of the four paths, its fleet and bill. [Sensitivity]

    Parameters
    ----------
    change : str
        The what-if's label.
    s : Scenario or None
        The changed scenario; None when the change itself cannot be made (``error`` says why).
    budget : int
        The plan's deployed step budget. [tokens]
    set_by_plan : bool
        Whether the plan file sets it. [bool]
    error : str
        Why the change cannot be made, when ``s`` is None. [text]

    Returns
    -------
    Sensitivity
        The re-planned closed-form fleet and its bill, or why it cannot be met.
    """
    out = None
    if s is not None:
        try:
            out = closed_outcome(s, budget, set_by_plan)
        except scenario.PlanningError as e:
            error = str(e)
        if out is None and not error:
            try:
                steps.solve(s)
                error = "no fleet keeps the wait for a slot within the TTFT target (the prompt's prefill alone leaves no room)"
            except scenario.PlanningError as e:
                error = str(e)
    if out is None:
        return Sensitivity(change=change, feasible=False, load=None, fleet=None, purchased=None, binding=None,
                           monthly_usd=None, usd_per_mtok=None, note=error)
    tr, cf = out
    b = monthly_bill.bill(s, tr, SimpleNamespace(with_redundancy=float(cf.with_redundancy), purchased=float(cf.purchased)))
    return Sensitivity(change=change, feasible=True, load=cf.load, fleet=cf.with_redundancy, purchased=cf.purchased,
                       binding=cf.binding, binding_paths=list(cf.binding_paths), monthly_usd=b.monthly_usd,
                       usd_per_mtok=b.usd_per_mtok)


def closed_sensitivities(plan: Plan, s: Scenario, budget: int, set_by_plan: bool,
                         what_ifs: tuple[WhatIf, ...] = STANDARD_WHAT_IFS) -> list[Sensitivity]:
    """The what-ifs on the closed form (the largest of the four paths), at the plan's deployed step budget.

    Parameters
    ----------
    plan : Plan
        The plan as written.
    s : Scenario
        The plan's numbers.
    budget : int
        The step budget the plan deploys. [tokens]
    set_by_plan : bool
        Whether the plan file sets it. [bool]
    what_ifs : tuple of WhatIf
        The what-ifs to run, in the order they are shown.

    Returns
    -------
    list of Sensitivity
        One per what-if, in order.
    """
    return _each_what_if(plan, s, what_ifs,
                         lambda label, changed, error="": _closed_sensitivity(label, changed, budget, set_by_plan, error))
