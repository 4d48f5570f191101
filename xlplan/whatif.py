"""Section 6, what would change it: standard what-ifs and breakpoints.

Each what-if is a full re-plan with one input changed. A breakpoint is the value
of one input at which the purchase grows by one unit, or the binding constraint
changes, found by a geometric search outward then bisection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from xlplan import steps
from xlplan.plan import Plan
from xlplan.result import Breakpoint, Sensitivity
from xlplan.scenario import Scenario, resolve

SEARCH_FACTOR = 1.25
"""Step of the outward search. [ratio]"""

SEARCH_RANGE = 64.0
"""How far out a breakpoint is searched, as a multiple of the current value. [ratio]"""

RELATIVE_TOLERANCE = 1e-6
"""Bisection stops when the bracket is this narrow, relative to the value. [fraction]"""


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
    """The scenario with p95 prompt length changed, p99 raised with it where needed."""
    p99 = None if s.prompt_p99 is None else max(s.prompt_p99, p95)
    return replace(s, prompt_p95=p95, prompt_p99=p99, prompt_p50=min(s.prompt_p50, p95))


def with_output_p50(s: Scenario, p50: float) -> Scenario:
    """The scenario with median output length changed, p95 and p99 raised with it where needed."""
    p95 = max(s.output_p95, p50)
    p99 = None if s.output_p99 is None else max(s.output_p99, p95)
    return replace(s, output_p50=p50, output_p95=p95, output_p99=p99)


def _fmt_tokens(x: float) -> str:
    return f"{x:,.0f}"


def sensitivities(plan: Plan, s: Scenario) -> list[Sensitivity]:
    """The standard what-ifs, each a full re-plan with one input changed."""
    out = [
        _sensitivity(f"peak rate x1.5 ({s.peak_rps * 1.5:g} req/s)", replace(s, peak_rps=s.peak_rps * 1.5)),
        _sensitivity(f"peak rate x2 ({s.peak_rps * 2:g} req/s)", replace(s, peak_rps=s.peak_rps * 2)),
        _sensitivity(f"p95 prompts reach {_fmt_tokens(s.prompt_p95 * 4)} tokens (x4)", with_prompt_p95(s, s.prompt_p95 * 4)),
        _sensitivity(f"inter-token target halved ({s.itl_s / 2:g} s, {2 / s.itl_s:g} tokens/s)", replace(s, itl_s=s.itl_s / 2)),
        _sensitivity(f"inter-token target doubled ({s.itl_s * 2:g} s, {0.5 / s.itl_s:g} tokens/s)", replace(s, itl_s=s.itl_s * 2)),
    ]
    for label, field in (("fp8 KV cache", "kv_dtype"), ("fp8 weights", "weights_dtype")):
        if getattr(plan.model, field) == "fp8":
            out.append(_sensitivity(f"{label} (already)", s))
            continue
        try:
            changed = resolve(plan.model_copy(update={"model": plan.model.model_copy(update={field: "fp8"})}))
        except ValueError as e:
            out.append(_sensitivity(label, None, str(e)))
            continue
        out.append(_sensitivity(label, changed))
    out += [
        _sensitivity("prefix reuse 50%", replace(s, prefix_reuse=0.5)),
        _sensitivity("average utilisation 20%", replace(s, average_utilisation=0.2)),
        _sensitivity("average utilisation 50%", replace(s, average_utilisation=0.5)),
    ]
    return out


def find_threshold(predicate: Callable[[float], bool], start: float, direction: str,
                   search_range: float = SEARCH_RANGE) -> float | None:
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

    Returns
    -------
    float or None
        The smallest (up) or largest (down) value found true, to ``RELATIVE_TOLERANCE``.

    Examples
    --------
    >>> round(find_threshold(lambda x: x > 3.0, 1.0, "up"), 4)
    3.0
    """
    factor = SEARCH_FACTOR if direction == "up" else 1.0 / SEARCH_FACTOR
    inside, x = start, start * factor
    while not predicate(x):
        inside, x = x, x * factor
        if x > start * search_range or x < start / search_range:
            return None
    outside = x
    while abs(outside - inside) > RELATIVE_TOLERANCE * abs(outside):
        mid = (inside + outside) / 2.0
        if predicate(mid):
            outside = mid
        else:
            inside = mid
    return outside


BREAKPOINT_VARIABLES: tuple[tuple[str, str, str, Callable[[Scenario, float], Scenario], Callable[[Scenario], float]], ...] = (
    ("peak_rps", "requests/s", "up", lambda s, x: replace(s, peak_rps=x), lambda s: s.peak_rps),
    ("prompt_p95", "tokens", "up", with_prompt_p95, lambda s: s.prompt_p95),
    ("output_p50", "tokens", "up", with_output_p50, lambda s: s.output_p50),
    ("itl_s", "s/token", "up", lambda s, x: replace(s, itl_s=x), lambda s: s.itl_s),
    ("itl_s", "s/token", "down", lambda s, x: replace(s, itl_s=x), lambda s: s.itl_s),
)
"""(variable, unit, direction, how to set it, how to read it) for each breakpoint searched."""


def breakpoints(s: Scenario, base: steps.Solution) -> list[Breakpoint]:
    """For each input and direction: where the purchase grows one unit, where the binding flips."""
    out = []
    for variable, unit, direction, setter, getter in BREAKPOINT_VARIABLES:
        current = getter(s)

        def grows(x, setter=setter):
            sol = _outcome(setter(s, x))
            return sol is None or sol.paths.purchased > base.paths.purchased

        def flips(x, setter=setter):
            sol = _outcome(setter(s, x))
            return sol is None or sol.binding != base.binding

        step_at = find_threshold(grows, current, direction)
        flip_at = find_threshold(flips, current, direction)
        after_step = _outcome(setter(s, step_at)) if step_at is not None else None
        after_flip = _outcome(setter(s, flip_at)) if flip_at is not None else None
        out.append(
            Breakpoint(
                variable=variable, unit=unit, direction=direction, current=current,
                fleet_step_at=step_at,
                purchased_after=int(after_step.paths.purchased) if after_step else None,
                binding_flip_at=flip_at,
                binding_after=(after_flip.binding if after_flip else ("infeasible" if flip_at is not None else None)),
                binding_paths_after=list(after_flip.binding_paths) if after_flip else None,
            )
        )
    return out
