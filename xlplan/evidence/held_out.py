"""Scoring held out by deployment and by model: each row predicted at a default table fitted without it.

A **deployment** is a model × GPU × engine (:func:`xlplan.evidence.bench_conditions.deployment`). Leaving one deployment out
refits the default efficiency table on every run outside it and predicts its rows through the planner's own
functions; leaving one model out does the same with every deployment of the model out, leaving one source out with
every row of the source (host and repository) out; in-sample fits on every run and predicts them all (labelled so
wherever it is printed).

The fit is :func:`xlplan.evidence.calibrate.fit_defaults`' — the same hierarchy (overall, vendor, vendor × engine,
each the prior of the next; a class with fewer than :data:`xlplan.evidence.calibrate.MIN_RUNS` runs keeps the fit
above it), the same objective (each figure's ``ln(predicted ÷ measured) ÷ σ`` with σ from
:data:`xlplan.evidence.calibrate_map.NOISE`, each field's log drawn to its prior with the spread
:data:`xlplan.evidence.calibrate_map.PRIOR_SPREAD`), the dense fields on dense runs and then the expert efficiency on
MoE runs with the dense fields held — solved on the step model linearised once at the shipped defaults: each run's
scaled residuals and their sensitivities to the five log-efficiencies are taken there once, so a fold is a 4 × 4 and
a 1 × 1 linear solve per class (one Gauss–Newton step from the shipped defaults). Only the predictions that are
scored go through the planner's functions at the fold's table. Repeats of one point (rows that differ only in
provenance) weigh as one point in the fit and in the medians.

References
----------
Tarantola, *Inverse Problem Theory* (SIAM 2005), §3.2: least squares with a Gaussian prior; its linearised solution
``(GᵀC_d⁻¹G + C_m⁻¹)⁻¹(GᵀC_d⁻¹d + C_m⁻¹m₀)``.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from xlplan.catalog.specs import vendor
from xlplan.evidence.bench_conditions import Efficiencies, deployment
from xlplan.evidence.calibrate_map import BOUNDS, NOISE, PRIOR_SPREAD, STEP
from xlplan.serving.efficiency_defaults import EFFICIENCY_FIELDS

EXPERT = EFFICIENCY_FIELDS.index("expert_efficiency")


@dataclass(frozen=True)
class Linearised:
    """One run's scaled residuals and their sensitivities, at the shipped defaults of its class."""

    run: object  # xlplan.evidence.calibrate.Run
    point: str  # the configuration: repeats of one point share it
    source: str  # the row's source group (host and repository)
    deployment: tuple[str, str, str]  # (model, GPU, engine)
    vendor: str
    engine: str
    moe: bool
    gram: np.ndarray  # Jᵀ J, 5 × 5, scaled by the point's weight [1]
    rhs: np.ndarray  # Jᵀ (J u₀ − r₀), 5, scaled by the point's weight [1]


def _residuals(run, eff: Efficiencies) -> np.ndarray | None:
    from xlplan.evidence.calibrate import _measured, predicted

    pred = predicted(run, eff)
    out = []
    for k, m in _measured(run).items():
        p = pred.get(k)
        if p is None or not p > 0 or not math.isfinite(p):
            return None
        out.append(math.log(p / m) / NOISE[k])
    return np.array(out)


def linearise(rows_and_runs: list[tuple[object, object]]) -> list[Linearised]:
    """Each run's scaled residuals ``r₀`` and Jacobian ``J`` in ``u = ln θ`` at its class's shipped defaults, as the
    normal-equation terms ``JᵀJ`` and ``Jᵀ(J u₀ − r₀)`` (a run whose prediction is not finite there is left out).

    Parameters
    ----------
    rows_and_runs : list of (MeasuredRow, Run)
        The fitted rows with their calibration runs (:func:`xlplan.evidence.validation.run_of`).

    Returns
    -------
    list of Linearised
        One per run kept; a point's repeats weigh ``1 ÷ repeats`` each. [—]
    """
    repeats: dict[str, int] = defaultdict(int)
    for m, _ in rows_and_runs:
        repeats[m.point or m.id] += 1
    out = []
    for m, run in rows_and_runs:
        c = run.conditions
        base = Efficiencies().resolved(c.engine, c.gpu.name)
        u0 = np.log([getattr(base, f) for f in EFFICIENCY_FIELDS])
        r0 = _residuals(run, base)
        if r0 is None:
            continue
        moe = bool(c.model.num_experts)
        jac = np.zeros((len(r0), len(EFFICIENCY_FIELDS)))
        for i, f in enumerate(EFFICIENCY_FIELDS):
            if f == "expert_efficiency" and not moe:
                continue
            shifted = Efficiencies(**{g: math.exp(u0[j] + (STEP if j == i else 0.0)) for j, g in enumerate(EFFICIENCY_FIELDS)})
            r = _residuals(run, shifted)
            if r is not None:
                jac[:, i] = (r - r0) / STEP
        w = 1.0 / repeats[m.point or m.id]
        out.append(Linearised(run, m.point or m.id, m.source, deployment(c), vendor(c.gpu.name), c.engine, moe,
                              w * jac.T @ jac, w * jac.T @ (jac @ u0 - r0)))
    return out


_SPREAD = np.array([PRIOR_SPREAD[f] for f in EFFICIENCY_FIELDS])
_LOW = np.log([BOUNDS[f][0] for f in EFFICIENCY_FIELDS])
_HIGH = np.log([BOUNDS[f][1] for f in EFFICIENCY_FIELDS])


def _solve(runs: list[Linearised], prior: np.ndarray, free: list[int]) -> np.ndarray:
    """The regularised linear solution over ``free`` fields, the others held at ``prior``, within the bounds."""
    gram = sum((r.gram for r in runs), np.zeros((5, 5)))
    rhs = sum((r.rhs for r in runs), np.zeros(5))
    u = prior.copy()
    free = list(free)
    while free:  # an active set: a field that leaves its bounds is held at the bound, and the rest solved again
        held = [i for i in range(5) if i not in free]
        precision = np.diag(1.0 / _SPREAD[free] ** 2)
        a = gram[np.ix_(free, free)] + precision
        b = rhs[free] - gram[np.ix_(free, held)] @ u[held] + precision @ prior[free]
        x = np.linalg.solve(a, b)
        out = [k for k, i in enumerate(free) if not _LOW[i] <= x[k] <= _HIGH[i]]
        if not out:
            u[free] = x
            return u
        worst = max(out, key=lambda k: max(_LOW[free[k]] - x[k], x[k] - _HIGH[free[k]]))
        i = free.pop(worst)
        u[i] = min(max(x[worst], _LOW[i]), _HIGH[i])
    return u


def _class_fit(runs: list[Linearised], prior: np.ndarray, top: bool) -> np.ndarray:
    """fit_defaults' two stages for one class: dense fields on dense runs, then the expert efficiency on MoE runs."""
    from xlplan.evidence.calibrate import MIN_RUNS

    u = prior
    dense = [r for r in runs if not r.moe]
    moe = [r for r in runs if r.moe]
    if dense and (top or len(dense) >= MIN_RUNS):
        u = _solve(dense, u, list(range(4)))
    if moe and (top or len(moe) >= MIN_RUNS):
        u = _solve(moe, u, [EXPERT])
    return u


def fit_table(runs: list[Linearised]) -> dict:
    """The default table fitted on ``runs``, in :func:`xlplan.evidence.calibrate.fit_defaults`' shape. [—]

    Parameters
    ----------
    runs : list of Linearised
        The training runs (a fold's).

    Returns
    -------
    dict
        ``{'overall': {...}, 'vendors': {vendor: {'all': {...}, engine: {...}}}}``, each entry every field. [—]
    """
    from xlplan.evidence.calibrate import OVERALL_PRIOR

    def entry(u):
        return {f: float(math.exp(x)) for f, x in zip(EFFICIENCY_FIELDS, u, strict=True)}

    top = _class_fit(runs, np.log([getattr(OVERALL_PRIOR, f) for f in EFFICIENCY_FIELDS]), top=True)
    table: dict = {"overall": entry(top), "vendors": {}}
    for v in sorted({r.vendor for r in runs}):
        vr = [r for r in runs if r.vendor == v]
        uv = _class_fit(vr, top, top=False)
        table["vendors"][v] = {"all": entry(uv)}
        for e in sorted({r.engine for r in vr}):
            table["vendors"][v][e] = entry(_class_fit([r for r in vr if r.engine == e], uv, top=False))
    return table


def held_out_checks(rows: list, runs: list[Linearised], scheme: str, validate) -> list:
    """Every row's checks at a table fitted without its fold: its deployment (model × GPU × engine; the headline),
    its model, its source, or none ('in-sample').

    Parameters
    ----------
    rows : list of MeasuredRow
        The rows to predict (those without conditions are skipped as :func:`xlplan.evidence.validation.validate` skips them).
    runs : list of Linearised
        Every fitted run (:func:`linearise`).
    scheme : str
        'deployment', 'model', 'source' or 'in-sample'.
    validate : callable
        Rows and a default table to their checks (:func:`xlplan.evidence.validation.validate`).

    Returns
    -------
    list of Check
        In the rows' order. [—]
    """
    def fold(d, source):
        return {"deployment": d, "model": d[0], "source": source}.get(scheme, "")

    groups: dict = defaultdict(list)
    for m in rows:
        groups[fold(deployment(m.conditions), m.source) if m.conditions is not None else None].append(m)
    out = []
    for key, members in groups.items():
        table = (fit_table([r for r in runs if scheme == "in-sample" or fold(r.deployment, r.source) != key])
                 if key is not None else None)
        out += validate(members, table=table)
    order = {m.id: k for k, m in enumerate(rows)}
    return sorted(out, key=lambda c: order.get(c.id, 0))


def point_errors(checks: list, rows: list, kinds: tuple[str, ...]) -> list[float]:
    """|error| of each point once: repeats of a point share its prediction, and are scored against their mean. [fraction]

    Parameters
    ----------
    checks : list of Check
        Scored checks.
    rows : list of MeasuredRow
        The rows they came from (for each row's point).
    kinds : tuple of str
        The kinds to pool.

    Returns
    -------
    list of float
        ``|predicted ÷ mean measured − 1|`` per (point, figure). [fraction]
    """
    point = {m.id: m.point or m.id for m in rows}
    grouped: dict = defaultdict(list)
    for c in checks:
        if c.relative_error is not None and c.kind in kinds:
            grouped[(point.get(c.id, c.id), c.metric)].append(c)
    return [abs(g[0].predicted / statistics.fmean(x.measured for x in g) - 1.0) for g in grouped.values()]
