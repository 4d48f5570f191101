"""Where the answer changes: the value of one input at which the purchase grows by one unit, or the binding flips.

A breakpoint is found by a geometric search outward from the plan's value, then bisection (:func:`find_threshold`),
for the runbook's method (:func:`breakpoints`) and for the closed form (:func:`closed_breakpoints`); each changed
scenario is solved once.
"""

from __future__ import annotations

from collections.abc import Callable

from xlplan.plan import closed_form, steps
from xlplan.plan.scenario import Scenario, changed
from xlplan.schema import steps as step_results
from xlplan.schema.result import Breakpoint

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


def _with_output_p50(s: Scenario, p50: float) -> Scenario:
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
    ("output_p50", "tokens", "up", _with_output_p50, lambda s: s.output_p50),
    ("itl_s", "s/token", "up", lambda s, x: changed(s, itl_s=x), lambda s: s.itl_s),
    ("itl_s", "s/token", "down", lambda s, x: changed(s, itl_s=x), lambda s: s.itl_s),
)
"""(variable, unit, direction, how to set it, how to read it) for each breakpoint searched."""


def breakpoints(s: Scenario, base: step_results.Solution) -> list[Breakpoint]:
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
