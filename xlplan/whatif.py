"""Section 6, what would change it: standard what-ifs and breakpoints.

Each what-if is a full re-plan with one input changed. A breakpoint is the value
of one input at which the purchase grows by one unit, or the binding constraint
changes, found by a geometric search outward then bisection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from types import SimpleNamespace

from xlplan import closed_form, steps
from xlplan.plan import Plan
from xlplan.result import Breakpoint, Sensitivity
from xlplan.scenario import Scenario, changed, resolve

SEARCH_FACTOR = 1.25
"""Step of the outward search. [ratio]"""

SEARCH_FACTOR_FAR = 2.0
"""Step of the outward search for a monotone predicate past the first :data:`FINE_STEPS`: a far breakpoint (or none
within the range) is reached in a few doublings, each costing one more halving of the bracket after. [ratio]"""

FINE_STEPS = 4
"""Outward steps taken at :data:`SEARCH_FACTOR` before the search widens (to 1.25⁴ ≈ 2.4×). [steps]"""

SEARCH_RANGE = 64.0
"""How far out a breakpoint is searched, as a multiple of the current value. [ratio]"""

RELATIVE_TOLERANCE = 1e-4
"""Bisection stops when the bracket is this narrow, relative to the value: finer than the four figures a breakpoint
is shown with (each further halving costs a re-plan of every path). [fraction]"""

MAX_STEPS = 200
"""Most steps of either search (the outward one takes 19 to reach x64, 9 where it may widen; bisection ~11 to 13 to 1e-4): a cap, so no input can
make a search run forever. [steps]"""


def _outcome(s: Scenario):
    try:
        return steps.solve(s)
    except steps.PlanningError:
        return None


def _sensitivity(change: str, s: Scenario | None, error: str = "") -> Sensitivity:
    sol = None
    if s is not None:
        try:
            sol = steps.solve(s)
        except steps.PlanningError as e:
            error = str(e)
    if sol is None:
        return Sensitivity(change=change, feasible=False, load=None, fleet=None, purchased=None, binding=None,
                           monthly_usd=None, usd_per_mtok=None, note=error)
    return Sensitivity(
        change=change, feasible=True, load=int(sol.paths.load), fleet=int(sol.paths.with_redundancy),
        purchased=int(sol.paths.purchased), binding=sol.binding, binding_paths=list(sol.binding_paths), monthly_usd=sol.bill.monthly_usd,
        usd_per_mtok=sol.bill.usd_per_mtok,
    )


def with_prompt_p95(s: Scenario, p95: float) -> Scenario:
    """The scenario with p95 prompt length changed, p99 raised with it where needed.

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    p95 : float
        The new p95 prompt length; p50 is lowered to it and p99 raised to it where they would cross. [tokens]

    Returns
    -------
    Scenario
        A copy of ``s`` with the prompt percentiles changed.
    """
    p99 = None if s.prompt_p99 is None else max(s.prompt_p99, p95)
    return changed(s, prompt_p95=p95, prompt_p99=p99, prompt_p50=min(s.prompt_p50, p95))


def with_output_p50(s: Scenario, p50: float) -> Scenario:
    """The scenario with median output length changed, p95 and p99 raised with it where needed.

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    p50 : float
        The new median output length; p95 and p99 are raised to it where they would fall below. [tokens]

    Returns
    -------
    Scenario
        A copy of ``s`` with the output percentiles changed.
    """
    p95 = max(s.output_p95, p50)
    p99 = None if s.output_p99 is None else max(s.output_p99, p95)
    return changed(s, output_p50=p50, output_p95=p95, output_p99=p99)


def _fmt_tokens(x: float) -> str:
    return f"{x:,.0f}"


@dataclass(frozen=True, slots=True)
class WhatIf:
    """One what-if: the changes it makes to the plan. A field left as None keeps the plan's value.

    The workbook's ``6 Sensitivities`` tab lays out the same table, one row per
    what-if, so a user can add a row of their own with the same columns.
    """

    rate_x: float = 1.0  # multiplies the peak rate [ratio]
    prompt_p95_x: float = 1.0  # multiplies p95 prompt length (p50 lowered, p99 raised to keep order) [ratio]
    itl_x: float = 1.0  # multiplies the inter-token target [ratio]
    kv_dtype: str | None = None  # KV-cache precision [text]
    weights_dtype: str | None = None  # weight precision [text]
    prefix_reuse: float | None = None  # [fraction]
    average_utilisation: float | None = None  # [fraction]


STANDARD_WHAT_IFS: tuple[WhatIf, ...] = (
    WhatIf(rate_x=1.5),
    WhatIf(rate_x=2.0),
    WhatIf(prompt_p95_x=4.0),
    WhatIf(itl_x=0.5),
    WhatIf(itl_x=2.0),
    WhatIf(kv_dtype="fp8"),
    WhatIf(weights_dtype="fp8"),
    WhatIf(prefix_reuse=0.5),
    WhatIf(average_utilisation=0.2),
    WhatIf(average_utilisation=0.5),
)
"""The standard what-ifs of section 6, in the order the note and the workbook show them."""


def describe(plan: Plan, s: Scenario, w: WhatIf) -> str:
    """A what-if's label as the note prints it, e.g. 'peak rate x1.5 (60 req/s)'. [text]

    Parameters
    ----------
    plan : Plan
        The plan as written: a dtype what-if that changes nothing is marked '(already)'.
    s : Scenario
        The plan's numbers.
    w : WhatIf
        The what-if to describe.

    Returns
    -------
    str
        Its changes joined by '; ', or 'as planned' when it changes nothing.
    """
    parts = []
    if w.rate_x != 1.0:
        parts.append(f"peak rate x{w.rate_x:g} ({s.peak_rps * w.rate_x:g} req/s)")
    if w.prompt_p95_x != 1.0:
        parts.append(f"p95 prompts reach {_fmt_tokens(s.prompt_p95 * w.prompt_p95_x)} tokens (x{w.prompt_p95_x:g})")
    if w.itl_x != 1.0:
        way = "halved" if w.itl_x == 0.5 else "doubled" if w.itl_x == 2.0 else f"x{w.itl_x:g}"
        itl = s.itl_s * w.itl_x
        parts.append(f"inter-token target {way} ({itl:g} s, {1 / itl:g} tokens/s)")
    for label, field in (("fp8 KV cache", "kv_dtype"), ("fp8 weights", "weights_dtype")):
        value = getattr(w, field)
        if value is not None:
            text = label if value == "fp8" else f"{value} {label.split(' ', 1)[1]}"
            parts.append(text + (" (already)" if getattr(plan.model, field) == value else ""))
    if w.prefix_reuse is not None:
        parts.append(f"prefix reuse {w.prefix_reuse:.0%}")
    if w.average_utilisation is not None:
        parts.append(f"average utilisation {w.average_utilisation:.0%}")
    return "; ".join(parts) or "as planned"


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
        The changed scenario, ready for :func:`xlplan.steps.solve`.

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
        except steps.PlanningError as e:
            out.append(one(label, None, str(e)))
            continue
        out.append(one(label, changed))
    return out


def find_threshold(predicate: Callable[[float], bool], start: float, direction: str,
                   search_range: float = SEARCH_RANGE, monotone: bool = False) -> float | None:
    """First value from ``start`` outward at which ``predicate`` turns true. [unit of start]

    Parameters
    ----------
    predicate : callable
        False at ``start``; assumed to stay true once true (a monotone plan).
    start : float
        Where the search begins. [unit]
    direction : {'up', 'down'}
        Which way to move.
    search_range : float
        Give up beyond ``start × range`` (or ``start ÷ range``). [ratio]
    monotone : bool
        The predicate stays true once true (the purchase only grows): the outward search may then widen past its
        first :data:`FINE_STEPS`, since no bracket can hide a first change. A binding that flips and flips back
        (two paths taking turns at the top) keeps the fine steps throughout. [bool]

    Returns
    -------
    float or None
        The smallest (up) or largest (down) value found true, to ``RELATIVE_TOLERANCE``; None when the predicate
        stays false within the range or ``start`` is not positive and finite. [unit of start]

    Examples
    --------
    >>> round(find_threshold(lambda x: x > 3.0, 1.0, "up"), 3)
    3.0
    """
    if not (start > 0 and start < float("inf")):
        return None  # nothing to search from (a zero or infinite value scales to itself)
    up = direction == "up"
    limit = start * search_range if up else start / search_range
    inside, x = start, start * (SEARCH_FACTOR if up else 1.0 / SEARCH_FACTOR)
    for k in range(MAX_STEPS):
        if predicate(x):
            break
        if x == limit:
            return None
        factor = SEARCH_FACTOR_FAR if (monotone and k + 1 >= FINE_STEPS) else SEARCH_FACTOR  # far steps coarse
        inside, x = x, (min(x * factor, limit) if up else max(x / factor, limit))
    else:
        return None
    outside = x
    for _ in range(MAX_STEPS):
        if abs(outside - inside) <= RELATIVE_TOLERANCE * abs(outside):
            break
        mid = (inside + outside) / 2.0
        if predicate(mid):
            outside = mid
        else:
            inside = mid
    return outside


BREAKPOINT_VARIABLES: tuple[tuple[str, str, str, Callable[[Scenario, float], Scenario], Callable[[Scenario], float]], ...] = (
    ("peak_rps", "requests/s", "up", lambda s, x: changed(s, peak_rps=x), lambda s: s.peak_rps),
    ("prompt_p95", "tokens", "up", with_prompt_p95, lambda s: s.prompt_p95),
    ("output_p50", "tokens", "up", with_output_p50, lambda s: s.output_p50),
    ("itl_s", "s/token", "up", lambda s, x: changed(s, itl_s=x), lambda s: s.itl_s),
    ("itl_s", "s/token", "down", lambda s, x: changed(s, itl_s=x), lambda s: s.itl_s),
)
"""(variable, unit, direction, how to set it, how to read it) for each breakpoint searched."""


def breakpoints(s: Scenario, base: steps.Solution) -> list[Breakpoint]:
    """For each input and direction: where the purchase grows one unit, where the binding flips.

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    base : steps.Solution
        The plan's solution, the purchase and binding constraint that each change is compared with.

    Returns
    -------
    list of Breakpoint
        One per entry of :data:`BREAKPOINT_VARIABLES`: the value at which the purchase grows and at which the
        binding constraint changes (None beyond the search range), with what follows.
    """
    def figures(o):
        return int(o[0]), o[1], o[2]

    def outcome(x):
        return steps.solve_fleet(x, int(base.paths.tp))

    return _search_breakpoints(s, outcome, figures, (int(base.paths.purchased), base.binding, base.binding_paths))


def _search_breakpoints(s: Scenario, outcome, figures, base) -> list[Breakpoint]:
    """The breakpoints of one method: ``outcome(scenario)`` solves it (None: infeasible), ``figures(outcome)`` gives
    (purchased, binding, binding paths), ``base`` the plan's own; each changed scenario is solved once."""
    out = []
    for variable, unit, direction, setter, getter in BREAKPOINT_VARIABLES:
        current = getter(s)
        memo: dict[float, object] = {}

        def at(x, setter=setter, memo=memo):
            if x not in memo:
                memo[x] = outcome(setter(s, x))
            return memo[x]

        def grows(x, at=at):
            o = at(x)
            return o is None or figures(o)[0] > base[0]

        def flips(x, at=at):
            o = at(x)
            return o is None or figures(o)[1] != base[1]

        step_at = find_threshold(grows, current, direction, monotone=True)
        flip_at = find_threshold(flips, current, direction)
        after_step = at(step_at) if step_at is not None else None
        after_flip = at(flip_at) if flip_at is not None else None
        out.append(
            Breakpoint(
                variable=variable, unit=unit, direction=direction, current=current,
                fleet_step_at=step_at,
                purchased_after=figures(after_step)[0] if after_step else None,
                binding_flip_at=flip_at,
                binding_after=(figures(after_flip)[1] if after_flip else ("infeasible" if flip_at is not None else None)),
                binding_paths_after=list(figures(after_flip)[2]) if after_flip else None,
            )
        )
    return out


def closed_outcome(s: Scenario, budget: int, set_by_plan: bool, first_tp: int | None = None):
    """(traffic, closed form) of a changed scenario at the plan's deployed step budget; None where it cannot be met.

    Parameters
    ----------
    s : Scenario
        The changed scenario.
    budget : int
        The step budget the plan deploys, held through the change (the decision is the plan's). [tokens]
    set_by_plan : bool
        Whether the plan file sets it. [bool]
    first_tp : int, optional
        The TP degree to try first (the plan's closed form's): only the time depends on it. [GPUs]

    Returns
    -------
    tuple or None
        ``(steps.Traffic, closed_form.ClosedForm)``, or None when no TP degree can hold the weights and meet the
        promise, or no fleet keeps the wait for a slot within the TTFT target.
    """
    tr = steps.traffic(s)
    cf = closed_form.closed_form_of(s, set_by_plan, budget=budget, first_tp=first_tp, tr=tr)
    return (tr, cf) if cf is not None and cf.feasible else None


def closed_sensitivity(change: str, s: Scenario | None, budget: int, set_by_plan: bool, error: str = "") -> Sensitivity:
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
        except steps.PlanningError as e:
            error = str(e)
        if out is None and not error:
            try:
                steps.solve(s)
                error = "no fleet keeps the wait for a slot within the TTFT target (the prompt's prefill alone leaves no room)"
            except steps.PlanningError as e:
                error = str(e)
    if out is None:
        return Sensitivity(change=change, feasible=False, load=None, fleet=None, purchased=None, binding=None,
                           monthly_usd=None, usd_per_mtok=None, note=error)
    tr, cf = out
    b = steps.bill(s, tr, SimpleNamespace(with_redundancy=float(cf.with_redundancy), purchased=float(cf.purchased)))
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
                         lambda label, changed, error="": closed_sensitivity(label, changed, budget, set_by_plan, error))


def closed_breakpoints(s: Scenario, base: closed_form.ClosedForm, set_by_plan: bool) -> list[Breakpoint]:
    """Breakpoints of the closed form: where its purchase grows one unit, where its binding path changes.

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    base : closed_form.ClosedForm
        The plan's closed form: the purchase and binding path each change is compared with, and its step budget.
    set_by_plan : bool
        Whether the plan file sets the step budget. [bool]

    Returns
    -------
    list of Breakpoint
        One per entry of :data:`BREAKPOINT_VARIABLES`, as :func:`breakpoints` gives them for the runbook's method.

    References
    ----------
    Runbook, document 14, "What would change the answer".
    """
    def figures(o):
        return o[1].purchased, o[1].binding, o[1].binding_paths

    return _search_breakpoints(s, lambda x: closed_outcome(x, base.step_budget_tokens, set_by_plan, base.tp), figures,
                               (base.purchased, base.binding, base.binding_paths))
