"""The closed form's memory and latency paths at the batch the fleet achieves, not at the inter-token target.

A request holds its cache for ``E[output]`` steps of the step its replica achieves at its own batch, and that batch is
what the peak puts on each replica (Little's Law): :func:`achieved_time_in_system_s` solves the two together. The
memory path is then the fewest replicas whose caches hold what their own achieved time implies
(:func:`memory_path_replicas`), and the latency path the fewest whose token gap at the promise's percentile, at their
own batch, stays within the target (:func:`latency_path_replicas`). :func:`xlplan.plan.closed_form._at_tp` takes them with
the compute and queueing paths.

References
----------
Little's Law: Little, Operations Research 9(3), 1961. Size-biased sampling (the inspection paradox): Feller, *An
Introduction to Probability Theory and Its Applications* vol. 2, 1971, §I.4. Cornish & Fisher, "Moments and cumulants
in the specification of distributions", Revue de l'Institut International de Statistique 5(4), 1938.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

from xlplan import fleet
from xlplan.plan import queue_path
from xlplan.plan.scenario import Scenario
from xlplan.schema import steps as step_results
from xlplan.serving import memory, step_inputs

FIXED_POINT_ITERATIONS = 200
"""Most iterations of the batch ↔ step fixed point (it converges from below, monotonically). [iterations]"""

LATENCY_SEARCH_CAP = 1 << 20
"""Most replicas the latency path's doubling tries before it falls back on the runbook's check. [replicas]"""

FIXED_POINT_TOLERANCE = 1e-7
"""Relative change of the batch at which the fixed point stops. [fraction]"""


def achieved_time_in_system_s(s: Scenario, tr: step_results.Traffic, step, replicas: float,
                              lines=None) -> tuple[float, float, float]:
    """(time in system, step, batch) on ``replicas`` replicas: the step at the fleet's own batch, solved with the batch
    it implies. [s], [s], [sequences]

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats): peak rate and inter-token target.
    tr : steps.Traffic
        Steps 1-3 and the demand, from :func:`xlplan.plan.steps.traffic`.
    step : callable
        ``batch [sequences] -> step time [s]`` of one replica, increasing in the batch
        (:func:`xlplan.plan.latency_step.latency_step_fn`).
    replicas : float
        Replicas sharing the peak. [replicas]
    lines : tuple, optional
        ``step`` as two lines in the batch (:func:`xlplan.serving.folded_step.step_lines`, a dense model): the fixed point is
        then solved in closed form, where each iterate of the map only nears it. [s, s/sequence]

    Returns
    -------
    tuple of float
        ``T = E[output] × τ`` with ``τ = min(step(b), ITL target)`` and ``b = λ·T ÷ n``: the smallest fixed point,
        reached by iterating from an empty batch (each iterate is below it, and the map is increasing). [s], [s],
        [sequences]

    Examples
    --------
    A step of 10 ms + 0.1 ms per sequence, 40 req/s of 300 tokens on 4 replicas: ``b = 3000·(0.01 + 0.0001·b)``,
    so ``b = 30 ÷ 0.7 = 42.86`` and ``τ = 14.29 ms``.

    >>> from types import SimpleNamespace as NS
    >>> t, tau, b = achieved_time_in_system_s(NS(peak_rps=40.0, itl_s=0.05), NS(output_mean=300.0),
    ...                                      lambda b: 0.01 + 0.0001 * b, 4)
    >>> round(b, 2), round(tau * 1000, 2), round(t, 3)
    (42.86, 14.29, 4.286)
    """
    per = s.peak_rps * tr.output_mean / replicas  # b = per × τ
    if lines is not None:
        return _fixed_point_on_lines(s, tr, step, per, lines)
    b, tau = 0.0, 0.0
    for _ in range(FIXED_POINT_ITERATIONS):
        tau = min(float(step(max(b, 1.0))), s.itl_s)
        new = per * tau
        if abs(new - b) <= FIXED_POINT_TOLERANCE * max(new, 1.0):
            b = new
            break
        b = new
    return tr.output_mean * tau, tau, b


def _fixed_point_on_lines(s: Scenario, tr: step_results.Traffic, step, per: float, lines) -> tuple[float, float, float]:
    """:func:`achieved_time_in_system_s` where the step is ``max(a₁ + s₁·b, a₂ + s₂·b)``: ``b = per × min(τ(b), ITL)``
    solved on each line, ``b_i = per·a_i ÷ (1 − per·s_i)``; the map's fixed point is the larger of them (each
    ``per·τ_i(b) − b`` falls, so their larger falls too and crosses zero once), or the target's ``per × ITL`` where it
    is lower or a line rises faster than the batch it implies. [s], [s], [sequences]"""
    at_one = min(float(step(1.0)), s.itl_s)
    if per * at_one <= 1.0:  # less than one sequence per replica: the step of one, as the iteration finds
        return tr.output_mean * at_one, at_one, per * at_one
    a1, s1, a2, s2 = lines
    b = s.itl_s * per
    if per * s1 < 1.0 and per * s2 < 1.0:
        b = min(max(per * a1 / (1.0 - per * s1), per * a2 / (1.0 - per * s2)), b)
    tau = b / per
    return tr.output_mean * tau, tau, b


def memory_at(s: Scenario, tr: step_results.Traffic, at_fleet, kv_budget_gib: float, tp: int, kv_shards: int,
              replicas: int) -> tuple[int, tuple[float, float, float, float, float]]:
    """The replicas the cache of a fleet of ``replicas`` needs, at the time in system that fleet achieves. [replicas]

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats): the peak rate.
    tr : steps.Traffic
        Steps 1-3 and the demand: the KV cache per conversation.
    at_fleet : callable
        ``replicas -> (time in system [s], step [s], batch [sequences])``: :func:`achieved_time_in_system_s` on the
        replica's step. [callable]
    kv_budget_gib : float
        KV room per GPU. [GiB]
    tp : int
        GPUs per replica. [GPUs]
    kv_shards : int
        Ways the cache splits across the replica. [GPUs]
    replicas : int
        Replicas sharing the peak. [replicas]

    Returns
    -------
    needed : int
        Whole replicas the fleet's cache needs. [replicas]
    figures : tuple of float
        ``(time in system [s], step [s], batch [sequences], concurrency [requests], memory GPUs before rounding
        [GPUs])`` of that fleet.

    References
    ----------
    Little's Law: Little, Operations Research 9(3), 1961.
    """
    t, tau, b = at_fleet(replicas)
    conc = s.peak_rps * t
    exact = float(memory.memory_gpus_exact(conc, tr.kv_gib_per_conversation, kv_budget_gib, tp, kv_shards))
    return int(fleet.whole_replicas(exact, tp)), (t, tau, b, conc, exact)


def memory_path_replicas(needed, top: int) -> int:
    """The memory path: the fewest replicas ``n`` whose caches hold what their own achieved time implies. [replicas]

    Parameters
    ----------
    needed : callable
        ``n -> (replicas the cache needs, figures)``: :func:`memory_at` of the fleet. [callable]
    top : int
        A fleet known to hold its cache: the runbook's memory path, at the target's time, which bounds it. [replicas]

    Returns
    -------
    int
        The fewest ``n`` with ``needed(n) ≤ n``, by bisection on ``[1, top]`` (a fleet's cache shrinks as replicas are
        added: each carries a smaller batch, so its step is shorter). [replicas]

    References
    ----------
    Runbook, document 14, step 4 · "The memory path: 600 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU" (the bound,
    at the target's time). Little's Law: Little, Operations Research 9(3), 1961.
    """
    if needed(1)[0] <= 1:
        return 1
    lo, hi = 1, top  # memory(lo) > lo; memory(top) ≤ runbook memory ≤ top
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if needed(mid)[0] <= mid:
            hi = mid
        else:
            lo = mid
    return hi


@functools.lru_cache(maxsize=16)
def _z(percentile: float) -> float:
    """The standard normal quantile at ``percentile``. [1]"""
    return NormalDist().inv_cdf(percentile / 100.0)


def latency_path_replicas(s: Scenario, q_s: Scenario, tr: step_results.Traffic, r: step_inputs.Replica, budget: int, step,
                          at_fleet) -> int | None:
    """The latency path: the fewest replicas whose own batch keeps the step a token gap sees at the percentile within
    the inter-token target. [replicas]

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats): the inter-token target and its percentile.
    q_s : Scenario
        The same at the deployed step budget, with prefill (the queueing path's). [Scenario]
    tr : steps.Traffic
        Steps 1-3 and the demand.
    r : serving.Replica
        The replica at this TP degree.
    budget : int
        Tokens one step may carry. [tokens]
    step : callable
        ``batch -> step [s]`` with its prefill share (:func:`xlplan.plan.latency_step.latency_step_fn`). [callable]
    at_fleet : callable
        ``replicas -> (time in system [s], step [s], batch [sequences])`` (:func:`achieved_time_in_system_s`). [callable]

    Returns
    -------
    int or None
        The fewest replicas, by doubling then bisection; None where not even one sequence's step fits, or no fleet
        within :data:`LATENCY_SEARCH_CAP` does (the runbook's check stands then). [replicas]

    Notes
    -----
    A token gap is seen by every sequence of its step, so it sees the batch size-biased: with the sequences decoding
    on a replica Poisson about their mean ``b`` (an M/G/∞ count; least-loaded routing spreads them less),
    ``1 + Poisson(b)``, whose percentile the Cornish–Fisher expansion gives: ``1 + b + z·√b + (z² − 1)/6``. The engine
    runs at most ``max_num_seqs`` at once, so the batch a gap sees is capped there; the sequences past the cap wait
    for a slot, which the queueing path counts.

    References
    ----------
    Size-biased sampling (the inspection paradox): Feller, *An Introduction to Probability Theory and Its
    Applications* vol. 2, 1971, §I.4. Cornish & Fisher, "Moments and cumulants in the specification of
    distributions", Revue de l'Institut International de Statistique 5(4), 1938.
    """
    z = _z(s.percentile)

    def gap_ok(n: int) -> bool:
        b = at_fleet(n)[2]
        # the batch a gap sees at the percentile, never past the sequences a replica runs at once (the rest wait)
        b_p = min(1.0 + b + z * math.sqrt(b) + (z * z - 1.0) / 6.0, q_s.max_num_seqs)
        return queue_path.percentile_step_s(q_s, tr, r, budget, b_p, step, b) <= s.itl_s * (1.0 + fleet.ROUNDING_TOLERANCE)

    if not queue_path.percentile_step_s(q_s, tr, r, budget, 1.0, step) <= s.itl_s:
        return None
    return _fewest_passing(gap_ok, LATENCY_SEARCH_CAP)


def _fewest_passing(ok, cap: int) -> int | None:
    """The fewest ``n ≥ 1`` with ``ok(n)`` (``ok`` monotone): doubling to the first that passes, at most ``cap``, then
    bisection; None where none up to the cap does. [replicas]"""
    hi = 1
    while not ok(hi) and hi < cap:
        hi *= 2
    if not ok(hi):
        return None
    lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
