"""The inverse question: the highest peak rate a given fleet sustains under the promise.

Notes
-----
Every path's GPU count is proportional to the peak rate (concurrency and FLOP
demand both are), so the capacity of ``N`` GPUs at TP ``t`` is
``min over paths of (replicas × t) ÷ (GPUs the path needs per 1 request/s)``,
with ``replicas = floor(N / t)``; the best TP degree is taken.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xlplan import _vec, fleet, steps
from xlplan.scenario import Scenario


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
        usable = _vec.floor(gpus / tp) * tp
        exact = dict(zip(fleet.PATHS, (p.memory_gpus_exact, p.compute_gpus_exact, p.latency_gpus_exact)))
        limits = {k: (usable / v if v > 0 else _vec.INF) if v != _vec.INF else 0.0 for k, v in exact.items()}
        limited_by = min(limits, key=limits.get)
        cap = Capacity(gpus, tp, limits[limited_by], limited_by, limits)
        if best is None or cap.max_peak_rps > best.max_peak_rps:
            best = cap
    if best is None or not best.max_peak_rps > 0:
        candidates = tuple(steps.paths(unit, tr, tp) for tp in s.tp_options)
        if all(c.load == _vec.INF for c in candidates):
            raise steps.PlanningError(steps.infeasible_reason(unit, candidates))
        raise steps.PlanningError(f"{gpus} GPUs hold no whole replica at any TP degree the plan allows "
                                  f"({', '.join(map(str, s.tp_options))}); expected at least {min(s.tp_options)} GPUs")
    return best
