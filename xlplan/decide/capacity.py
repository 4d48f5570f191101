"""The inverse question: the highest peak rate a given fleet sustains under the promise.

Notes
-----
Every path's GPU count is proportional to the peak rate (concurrency and FLOP
demand both are), so the capacity of ``N`` GPUs at TP ``t`` is
``min over paths of (replicas × t) ÷ (GPUs the path needs per 1 request/s)``,
with ``replicas = floor(N / t)``; the best TP degree is taken.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, replace

from xlplan import arrays, fleet, words
from xlplan.plan import scenario, steps
from xlplan.plan.scenario import Scenario, resolve
from xlplan.schema.decisions import CapacityOut, ClosedFormCapacityOut, PathsCapacityOut
from xlplan.schema.plan import Plan
from xlplan.simulate.search import CAPACITY_GROWTH, CAPACITY_TOLERANCE


@dataclass(frozen=True, slots=True)
class Capacity:
    """The highest sustainable peak rate of a fleet, and what stops it."""

    gpus: int  # [GPUs]
    tp: int  # [GPUs per replica]
    max_peak_rps: float  # [requests/s]
    limited_by: str  # 'memory', 'compute' or 'latency'
    per_path_rps: dict[str, float]  # each path's own limit [requests/s]


def capacity(s: Scenario, gpus: int) -> Capacity:
    """Highest peak rate ``gpus`` GPUs sustain under the scenario's promise and lengths.

    Parameters
    ----------
    s : Scenario
        The plan; its peak rate is ignored.
    gpus : int
        GPUs serving the load (no spares). [GPUs]

    Returns
    -------
    Capacity
        At the best tensor-parallel degree: the highest sustainable peak rate, the path that limits it
        ('memory', 'compute' or 'latency') and each path's own limit.

    Raises
    ------
    PlanningError
        When no tensor-parallel degree can run the model at all (the weights do not fit, or no batch meets the
        inter-token target): "0 requests/s" would read as an answer.
    """
    unit = replace(s, peak_rps=1.0)
    tr = steps.traffic(unit)
    best: Capacity | None = None
    for tp in s.tp_options:
        p = steps.paths(unit, tr, tp)
        usable = arrays.floor(gpus / tp) * tp
        exact = dict(zip(fleet.PATHS, (p.memory_gpus_exact, p.compute_gpus_exact, p.latency_gpus_exact)))
        limits = {k: (usable / v if v > 0 else arrays.INF) if v != arrays.INF else 0.0 for k, v in exact.items()}
        limited_by = min(limits, key=limits.get)
        cap = Capacity(gpus, tp, limits[limited_by], limited_by, limits)
        if best is None or cap.max_peak_rps > best.max_peak_rps:
            best = cap
    if best is None or not best.max_peak_rps > 0:
        candidates = tuple(steps.paths(unit, tr, tp) for tp in s.tp_options)
        if all(c.load == arrays.INF for c in candidates):
            raise scenario.PlanningError(steps.infeasible_reason(unit, candidates))
        smallest = min(c.tp for c in candidates if c.load != arrays.INF)  # the degrees the model runs at
        below = [c for c in candidates if c.tp < smallest]
        why = (f"the smallest degree the model runs at is TP {smallest} (at TP {below[-1].tp} each GPU holds "
               f"{below[-1].weights_gib_per_gpu:.2f} GiB of weights, leaving {max(below[-1].kv_budget_gib_per_gpu, 0.0):.2f} "
               "GiB for the KV cache)" if below else f"the plan allows TP {', '.join(map(str, s.tp_options))}")
        raise scenario.PlanningError(f"{words.count(gpus, 'GPU')} {words.verb(gpus, 'holds', 'hold')} no whole replica: {why}; "
                                  f"expected at least {words.count(smallest, 'GPU')}")
    return best


@dataclass(frozen=True, slots=True)
class ClosedFormCapacity:
    """The highest peak rate at which the closed form (all four paths) fits a fleet, and the path that stops it."""

    gpus: int  # [GPUs]
    tp: int  # the closed form's degree at that rate [GPUs per replica]
    max_peak_rps: float  # [requests/s]
    limited_by: str  # the paths that need more than the GPUs just past that rate, joined by ' and ' [text]
    without_queueing: Capacity  # memory, compute and latency alone: linear in the rate


def closed_form_capacity(s: Scenario, gpus: int, budget_set_by_plan: bool = False,
                         tolerance: float = 1e-4) -> ClosedFormCapacity:
    """The inverse of the closed form's fleet: the highest peak rate whose closed-form load fits ``gpus`` GPUs.

    The closed form's load is the largest of the memory path (at the fleet's achieved time in system), the compute and
    latency paths and the queueing path (:func:`xlplan.plan.closed_form.closed_form`); the queueing path is not linear in
    the rate (Erlang C), so the rate is bracketed from the three linear paths' capacity (:func:`capacity`), doubling
    or halving, and bisected to ``tolerance`` of itself.

    Parameters
    ----------
    s : Scenario
        The plan; its peak rate is ignored.
    gpus : int
        GPUs serving the load (no spares). [GPUs]
    budget_set_by_plan : bool
        The plan file sets ``policy.max_num_batched_tokens``.
    tolerance : float
        Relative width of the final bracket. [1]

    Returns
    -------
    ClosedFormCapacity
        The highest rate whose closed-form load is at most ``gpus``, the degree and binding path there, and the
        three linear paths' capacity beside it.

    Raises
    ------
    PlanningError
        As :func:`capacity`; and when the closed form fits no rate down to 1/16 of the linear paths' capacity.

    References
    ----------
    The queueing path: Erlang C with the Allen–Cunneen factor (:mod:`xlplan.plan.queue_path`); the linear paths: Runbook,
    document 14, steps 4-5.
    """
    base = capacity(s, gpus)

    def at(rate: float):
        return _closed_form_fitting(s, gpus, budget_set_by_plan, rate)

    lo, hi = _doubling_bracket(at, base.max_peak_rps)
    if lo is None:
        raise scenario.PlanningError(f"{words.count(gpus, 'GPU')} {words.verb(gpus, 'holds', 'hold')} the closed form at no peak rate down to {hi:,.4g} requests/s")
    while hi - lo > tolerance * lo:
        mid = (lo + hi) / 2.0
        if at(mid) is not None:
            lo = mid
        else:
            hi = mid
    cf = at(lo)
    return ClosedFormCapacity(gpus, cf.tp, lo, _stopping(s, gpus, budget_set_by_plan, hi) or cf.binding, base)


def _stopping(s: Scenario, gpus: int, budget_set_by_plan: bool, rate: float) -> str:
    """The paths that need more than ``gpus`` GPUs just past the capacity (at ``rate``), joined by ' and ': what stops
    the fleet, where the binding path at the capacity may be a tie of whole replicas ('' when none can be named). [text]"""
    cf = _closed_form_at(s, budget_set_by_plan, rate)
    if cf is None:
        return ""
    need = {"memory": cf.memory_gpus, "compute": cf.compute_gpus, "latency": cf.latency_gpus,
            "queueing": math.inf if cf.queueing_gpus is None else cf.queueing_gpus}
    return " and ".join(k for k, v in need.items() if v > gpus)


def _closed_form_at(s: Scenario, budget_set_by_plan: bool, rate: float):
    """The closed form at peak ``rate``, None where the plan cannot be met there. [ClosedForm]"""
    from xlplan.plan import closed_form

    sr = replace(s, peak_rps=rate)
    try:
        return closed_form.closed_form(sr, steps.solve(sr), budget_set_by_plan)
    except scenario.PlanningError:
        return None


def _closed_form_fitting(s: Scenario, gpus: int, budget_set_by_plan: bool, rate: float):
    """The closed form at peak ``rate`` where it is feasible and its load fits ``gpus``, else None. [ClosedForm]"""
    cf = _closed_form_at(s, budget_set_by_plan, rate)
    return cf if cf is not None and cf.feasible and cf.load <= gpus else None


def _doubling_bracket(at, rate: float) -> tuple[float | None, float | None]:
    """(lo, hi): a rate where ``at`` holds and one where it does not, doubling or halving from ``rate`` at most 8
    times; lo None where none held (hi the last tried), hi the next rate to try where every one held. [requests/s]"""
    lo, hi = None, None
    for _ in range(8):  # up or down by doubling from the linear paths' figure, at most 16 times each way
        if at(rate) is not None:
            lo, rate = rate, 2.0 * rate
            if hi is not None:
                break
        else:
            hi, rate = rate, rate / 2.0
            if lo is not None:
                break
    if lo is not None and hi is None:
        hi = rate
    return lo, hi




@dataclass(frozen=True, slots=True)
class VerifiedCapacity:
    """The highest peak rate at which a fleet keeps the promise in simulation, and the closed form's figure beside it."""

    gpus: int  # [GPUs]
    tp: int  # the closed form's best degree, simulated [GPUs per replica]
    replicas: int  # [replicas]
    max_peak_rps: float  # the highest rate found keeping the promise on every seed [requests/s]
    fails_at_rps: float  # the lowest rate found missing it: the answer is within the tolerance below it [requests/s]
    seeds: list[int]  # [1]
    minutes: float  # each run's span at max_peak_rps [minutes]
    closed_form: Capacity  # the closed form's inverse (memory, compute and latency paths)


def verified_capacity(s: Scenario, gpus: int, percentile: float = 95.0, max_context: int | None = None,
                      tolerance: float = CAPACITY_TOLERANCE, budget_set_by_plan: bool = False) -> VerifiedCapacity:
    """The inverse of the verified answer: the highest peak rate ``gpus`` GPUs serve keeping the promise.

    A rate keeps the promise when the fleet's simulation at it does by the verification's rule
    (:func:`xlplan.simulate.search.minimum_replicas`): on each of :data:`xlplan.simulate.search.VERIFY_SEEDS` seeds of
    :func:`xlplan.simulate.workload.workload_for` arrivals at that rate, over :func:`xlplan.simulate.workload.default_minutes`, every
    run stable. The plan's own peak is tried first, so the answer agrees with ``xlplan plan`` there (a fleet it
    verifies at its peak has a capacity at or above it); then the rate is bracketed outward from the closed form's
    capacity (:func:`capacity`, whose degree is simulated), doubling or halving, and bisected to ``tolerance`` of
    itself; the answer is the bracket's passing end.

    Parameters
    ----------
    s : Scenario
        The plan; its peak rate is ignored, its step budget and arrivals' burstiness are simulated.
    gpus : int
        GPUs serving the load (no spares). [GPUs]
    percentile : float
        The promise's percentile. [percent]
    max_context : int, optional
        The model's context limit, for clipping lengths. [tokens]
    tolerance : float
        Relative width of the final bracket. [1]
    budget_set_by_plan : bool
        The plan file sets ``policy.max_num_batched_tokens``; else the step budget is the one ``plan`` deploys at the
        plan's peak (:func:`xlplan.decide.answer.deployed`), and the TP degree its Answer's (the configuration search's)
        where ``gpus`` holds at least one replica of it (GPUs over whole replicas idle: 7 GPUs at TP 2 serve as 6, never less).

    Returns
    -------
    VerifiedCapacity
        The highest passing rate, the lowest failing one, the fleet simulated and the closed form's figure.

    Raises
    ------
    PlanningError
        As :func:`capacity`; and when the fleet keeps the promise at no rate down to 1/16 of the closed form's (a
        step too slow for the inter-token target, say), or at every rate up to 16 times it.
    """
    from xlplan.simulate import search, workload

    cf = capacity(s, gpus)
    s, tp = _as_plan_simulates(s, gpus, cf.tp, percentile, max_context, budget_set_by_plan)
    replicas = gpus // tp
    guess = cf.max_peak_rps
    lo, hi, seeds = search.highest_rate(s, replicas, tp, guess, float(s.peak_rps), percentile, max_context, tolerance)
    _require_bracket(gpus, tp, guess, lo, hi)
    return VerifiedCapacity(gpus, tp, replicas, lo, hi, seeds,
                            workload.verification_minutes(dataclasses.replace(s, peak_rps=lo), replicas), cf)


def _require_bracket(gpus: int, tp: int, guess: float, lo: float | None, hi: float | None) -> None:
    """Raise PlanningError where the bracket has no passing end (``lo``) or no failing end (``hi``). [—]"""
    if lo is None:
        raise scenario.PlanningError(f"{words.count(gpus, 'GPU')} (TP {tp}) {words.verb(gpus, 'keeps', 'keep')} the promise in simulation at no peak rate down to "
                                  f"{hi:,.4g} requests/s (the closed form says {guess:,.4g}): expected a promise one "
                                  "replica's steps can meet; run `xlplan plan` to see which target misses")
    if hi is None:
        raise scenario.PlanningError(f"{words.count(gpus, 'GPU')} (TP {tp}) {words.verb(gpus, 'keeps', 'keep')} the promise in simulation up to {lo:,.4g} requests/s, "
                                  f"{CAPACITY_GROWTH:g} times the closed form's {guess:,.4g}: expected the closed form "
                                  "to be within that factor")


def _as_plan_simulates(s: Scenario, gpus: int, tp: int, percentile: float, max_context: int | None,
                       budget_set_by_plan: bool) -> tuple[Scenario, int]:
    """(plan, TP) simulated as `plan` simulates its own fleet: the Answer's step budget and degree (the configuration
    search's, where the default simulation runs it; else the closed form's) where ``gpus`` holds one replica of it or
    more; else the plan as it is and ``tp``. [—]"""
    from xlplan.decide import answer

    try:  # the Answer's setting: the configuration search's, where the default simulation runs it
        d = answer.decide(s, percentile, max_context, budget_set_by_plan, "auto")
        own = d.configuration or d.closed_form
        s = answer.deployed(s, own)
        tp = own.tp if gpus >= own.tp else tp  # whole replicas of it, a GPU over them left idle
    except scenario.PlanningError:
        pass  # the plan's own peak cannot be met on this hardware: the closed form's inverse's degree, as it is
    return s, tp


def _too_large_to_simulate(s: Scenario, gpus: int) -> str | None:
    """Why the verified capacity is not searched by default, or None: past the default simulation's limits.

    The limits are the default ``xlplan plan``'s (:data:`xlplan.decide.answer.VERIFY_MAX_GPUS` GPUs, and
    :data:`xlplan.decide.answer.AUTO_VERIFY_MAX_REQUESTS` requests a run at the closed form's capacity, a sample's
    share past :data:`xlplan.simulate.workload.SAMPLE_ABOVE_REPLICAS` replicas, as ``plan`` samples), as a search
    runs some twenty such runs.

    Parameters
    ----------
    s : Scenario
        The plan.
    gpus : int
        GPUs serving the load. [GPUs]

    Returns
    -------
    str or None
        The sentence saying what is past which limit; None where the search runs. [text]
    """
    from xlplan.decide import answer
    from xlplan.simulate import workload

    cf = capacity(s, gpus)
    replicas = max(gpus // cf.tp, 1)
    at = dataclasses.replace(s, peak_rps=cf.max_peak_rps)
    k = workload.sample_replicas(at, replicas)
    requests = workload.share_rps(at.peak_rps, k, replicas) * workload.verification_minutes(at, replicas) * 60.0
    if gpus <= answer.VERIFY_MAX_GPUS and requests <= answer.AUTO_VERIFY_MAX_REQUESTS:
        return None
    runs = f"{words.count(k, 'replica')} sampled of {replicas:,}" if k else words.count(replicas, 'replica')
    return (f"not simulated: {words.count(gpus, 'GPU')}, a run of {runs} holding {requests:,.0f} requests at the closed "
            f"form's rate, are past what the default search takes on (at most {answer.VERIFY_MAX_GPUS:,} GPUs and "
            f"{answer.AUTO_VERIFY_MAX_REQUESTS:,} requests a run); simulate a share of the fleet with a plan at that "
            "share of the peak")


def plan_capacity(p: Plan, gpus: int, verify: bool = True) -> CapacityOut:
    """The inverse question on a plan: the highest peak rate ``gpus`` GPUs serve keeping its promise; what
    ``xlplan capacity`` prints and ``--json`` dumps.

    Parameters
    ----------
    p : Plan
        The validated plan.
    gpus : int
        GPUs serving the load, spares excluded. [GPUs]
    verify : bool
        Simulate where affordable (:func:`_too_large_to_simulate`); False gives the closed form's figure alone.

    Returns
    -------
    CapacityOut
        The verified figure, or the closed form's with why it was not simulated, and the closed form's beside it.
    """
    s = resolve(p)
    budget_set = p.policy.max_num_batched_tokens is not None
    four = closed_form_capacity(s, gpus, budget_set)
    cap = four.without_queueing
    why = "not simulated: --no-verify" if not verify else _too_large_to_simulate(s, gpus)
    closed = ClosedFormCapacityOut(
        tp=four.tp, max_peak_rps=four.max_peak_rps, limited_by=four.limited_by,
        without_queueing=PathsCapacityOut(tp=cap.tp, max_peak_rps=cap.max_peak_rps, limited_by=cap.limited_by,
                                          per_path_rps=cap.per_path_rps))
    if why:
        return CapacityOut(gpus=gpus, method="closed form", max_peak_rps=four.max_peak_rps, closed_form=closed,
                           not_simulated=why)
    ver = verified_capacity(s, gpus, p.promise.percentile, p.model.resolve().max_context_tokens, budget_set_by_plan=budget_set)
    return CapacityOut(gpus=gpus, method="verified", max_peak_rps=ver.max_peak_rps, closed_form=closed, tp=ver.tp,
                       replicas=ver.replicas, fails_at_rps=ver.fails_at_rps, seeds=ver.seeds, minutes=ver.minutes)
