"""Vectorized sweep: a pandas DataFrame of scenarios in, a DataFrame of results out.

Each column of the input overrides one numeric field of a base plan's
:class:`~xlplan.plan.scenario.Scenario` (e.g. ``peak_rps``, ``prompt_p95``,
``itl_s``, ``usd_per_gpu_hour``). The steps run once on whole columns (numpy
arrays) through the same functions as the scalar planner (:mod:`xlplan.plan.steps`);
for each row the TP degree is chosen by :func:`xlplan.plan.tp_choice.tp_objective` (fewest purchased, then fewest
billed, then the smallest degree). pandas and numpy are imported only here.

The sweep answers with the memory, compute and latency paths of the seven steps (the runbook's method, with the
latency path beside it): no queueing path and no simulation, so it is a fast screen of many scenarios, not the Answer.
For the fleet that keeps the promise at one scenario, run :func:`xlplan.decide.planner.plan` (``xlplan plan``).

Examples
--------
>>> import pandas as pd
>>> from xlplan.io.planfile import reference_plan
>>> out = sweep(reference_plan(), pd.DataFrame({"peak_rps": [10.0, 40.0]}))
>>> [int(x) for x in out["fleet_purchased"]], [float(x) for x in out["monthly_usd"]]
([8, 8], [4380.0, 10950.0])
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from xlplan import fleet
from xlplan.plan import monthly_bill, steps, tp_choice
from xlplan.plan.scenario import SWEEPABLE, resolve
from xlplan.schema.plan import Plan

OUTPUT_COLUMNS = (
    "concurrency", "time_in_system_s", "kv_gib_total", "memory_gpus", "compute_gpus", "latency_gpus", "tp",
    "binding", "fleet_load", "fleet_with_redundancy", "fleet_purchased", "monthly_usd", "tokens_per_month", "usd_per_mtok",
)


def sweep(base: Plan, scenarios):
    """Run every row of ``scenarios`` (a DataFrame) as a plan derived from ``base``.

    Parameters
    ----------
    base : Plan
        Supplies every input a column does not.
    scenarios : pandas.DataFrame
        One row per scenario; columns named after Scenario fields (see ``SWEEPABLE``).

    Returns
    -------
    pandas.DataFrame
        The input columns plus ``OUTPUT_COLUMNS``; infeasible rows have infinite GPU counts
        and binding ``'infeasible'``.
    """
    import numpy as np
    import pandas as pd

    unknown = [c for c in scenarios.columns if c not in SWEEPABLE]
    if unknown:
        raise ValueError(f"sweep columns {unknown} are not sweepable; expected some of {', '.join(SWEEPABLE)}")
    s0 = resolve(base)
    n = len(scenarios)
    cols = {c: scenarios[c].to_numpy(dtype=float) for c in scenarios.columns}
    s = replace(s0, **{"peak_rps": np.full(n, float(s0.peak_rps)), **cols})
    tr = steps.traffic(s)
    best = _best_degree(s, tr, n)
    binding = _binding(best)
    bl = monthly_bill.bill(s, tr, SimpleNamespace(purchased=best["purchased"], with_redundancy=best["with_redundancy"]))
    out = pd.DataFrame(
        {
            "concurrency": np.broadcast_to(tr.concurrency, (n,)),
            "time_in_system_s": np.broadcast_to(tr.time_in_system_s, (n,)),
            "kv_gib_total": np.broadcast_to(tr.kv_gib_total, (n,)),
            "memory_gpus": best["memory_gpus"], "compute_gpus": best["compute_gpus"], "latency_gpus": best["latency_gpus"],
            "tp": best["tp"],
            "binding": binding,
            "fleet_load": best["load"], "fleet_with_redundancy": best["with_redundancy"], "fleet_purchased": best["purchased"],
            "monthly_usd": np.broadcast_to(bl.monthly_usd, (n,)),
            "tokens_per_month": np.broadcast_to(bl.tokens_per_month, (n,)),
            "usd_per_mtok": np.broadcast_to(bl.usd_per_mtok, (n,)),
        },
        index=scenarios.index,
    )
    return pd.concat([scenarios, out], axis=1)


_PATH_COLUMNS = ("load", "with_redundancy", "purchased", "memory_gpus", "compute_gpus", "latency_gpus", "memory_gpus_exact",
                 "compute_gpus_exact", "latency_gpus_exact")
"""The fields of :class:`xlplan.schema.steps.Paths` the sweep carries per row, for the degree each row chooses. [—]"""


def _best_degree(s, tr, n: int) -> dict:
    """Each row's paths at the TP degree the engine's objective chooses (fewer purchased, then fewer billed, then the
    smaller degree): column name → array of ``n``, with ``tp`` and ``billed``. [GPUs]"""
    import numpy as np

    best = None
    for tp in s.tp_options:
        p = steps.paths(s, tr, tp)
        now = {k: np.broadcast_to(np.asarray(getattr(p, k), dtype=float), (n,)).copy() for k in _PATH_COLUMNS}
        now["tp"] = np.full(n, float(tp))
        now["billed"] = now["purchased"] if s.bill_purchased else now["with_redundancy"]
        now["purchased"] = np.where(np.isinf(now["load"]), np.inf, now["purchased"])
        if best is None:
            best = now
            continue
        # the engine's objective (fewer purchased, then fewer billed, then the smaller degree), row by row
        better = tp_choice.objective(now["purchased"], now["billed"], now["tp"]) < tp_choice.objective(best["purchased"], best["billed"], best["tp"])
        for k in best:
            best[k] = np.where(better, now[k], best[k])
    return best


def _binding(best: dict):
    """Each row's binding path: the largest of memory, compute and latency, 'both' or 'all' on ties, the minimum
    replica, or 'infeasible'. [text]"""
    import numpy as np

    mem, comp, lat = best["memory_gpus"], best["compute_gpus"], best["latency_gpus"]
    top = np.maximum(np.maximum(mem, comp), lat)
    ties = (mem == top).astype(int) + (comp == top).astype(int) + (lat == top).astype(int)
    single = np.select([mem == top, comp == top], [fleet.PATHS[0], fleet.PATHS[1]], fleet.PATHS[2])
    binding = np.where(ties == 3, "all", np.where(ties == 2, "both", single))
    minimum = (ties == 3) & (top == best["tp"])
    binding = np.where(minimum, fleet.MINIMUM_REPLICA, binding)
    return np.where(np.isinf(best["load"]), "infeasible", binding)
