"""Calibration: the efficiencies that make the serving model reproduce a benchmark.

Notes
-----
The serving model (:mod:`xlplan.serving`, through :mod:`xlplan.predict`) is fitted to the runs:
prefill MFU, decode MFU, bandwidth efficiency and the fixed time per step are the values that
minimise the squared log ratios of predicted to measured TTFT, inter-token latency and output
tokens/s over all runs (``scipy.optimize.least_squares``, bounded: efficiencies in (0.02, 1],
overhead in [0, 50 ms]). A parameter no run is sensitive to keeps its starting value, and the
fit says so. The spread is the lowest and highest value over leave-one-run-out refits (the
jackknife), so one odd run shows as a wide range.

Public measurements (:mod:`xlplan.io.measurements`) are fitted the same way, one set of
efficiencies for all their rows, which is how the leave-one-source-out check works.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace

from xlplan import predict
from xlplan.predict import Conditions, Efficiencies

BOUNDS_EFFICIENCY = (0.02, 1.0)
"""Fitted efficiencies stay fractions of peak. [fraction]"""
BOUNDS_OVERHEAD_S = (0.0, 0.05)
"""Fitted fixed time per step. [s]"""
BOUNDS_BANDWIDTH = (0.05, 0.92)
"""Fitted bandwidth efficiency: no kernel streams HBM faster than ~92% of its datasheet rate (nvbandwidth and
STREAM-style copies on H100/H200 reach 85-92%), so a fit that wants more is absorbing another term. [fraction]"""
TTFT_WEIGHT = 0.5
"""TTFT residuals count half: a TTFT mixes prefill with queueing the model takes in coarsely. [1]"""


@dataclass(frozen=True)
class Run:
    """One benchmark run (or measurement) in the units the fit uses."""

    source: str
    concurrency: float | None  # requests in flight in the whole system; None: offline maximum throughput [requests]
    isl: float  # mean prompt length [tokens]
    osl: float  # mean output length [tokens]
    ttft_s: float | None = None  # mean time to first token [s]
    itl_s: float | None = None  # mean inter-token latency [s]
    output_tok_s: float | None = None  # whole system [tokens/s]
    conditions: Conditions | None = None  # its own replica where runs differ (public measurements)


@dataclass(frozen=True)
class Fit:
    """Fitted efficiencies with their spread over the runs."""

    efficiencies: Efficiencies
    prefill_range: tuple[float, float]
    decode_range: tuple[float, float]
    bandwidth_range: tuple[float, float]
    overhead_range_s: tuple[float, float] = (0.0, 0.0)
    median_error: float = 0.0  # median |predicted ÷ measured − 1| over the runs' figures at the fit [fraction]
    sides: dict[str, str] = field(default_factory=dict)  # run -> which of TTFT, ITL, tokens/s it constrained
    notes: tuple[str, ...] = ()


def _conditions(run: Run, base: Conditions | None) -> Conditions:
    """The run's conditions at its lengths and concurrency."""
    c = run.conditions or base
    if c is None:
        raise ValueError(f"{run.source}: no conditions (model, GPU, dtypes, TP) to predict it with")
    return replace(c, isl=run.isl, osl=run.osl, concurrency=run.concurrency)


def predicted(run: Run, eff: Efficiencies, base: Conditions | None = None, table: dict | None = None) -> dict[str, float]:
    """The model's figures for a run at ``eff``: 'ttft_s', 'itl_s', 'output_tok_s' (those the run measured).

    Parameters
    ----------
    run : Run
        The run, at its own lengths and concurrency (``None``: offline maximum throughput).
    eff : Efficiencies
        The efficiencies to predict with; every field filled (see :meth:`xlplan.predict.Efficiencies.resolved`).
    base : Conditions, optional
        Model, GPU, dtypes and TP for runs that carry no conditions of their own.
    table : dict, optional
        The fitted default table that fills ``eff``'s empty fields (a leave-one-source-out fold's); left out, the
        shipped one (:func:`xlplan.engines.shipped_table`).

    Returns
    -------
    dict of str to float
        Predicted mean 'ttft_s' [s] and 'itl_s' [s/token] at a fixed concurrency, and whole-system 'output_tok_s'
        (the only one for an offline run). [tokens/s]

    Raises
    ------
    ValueError
        When neither the run nor ``base`` gives conditions to predict with.
    """
    c = _conditions(run, base)
    eff = eff.resolved(c.engine, c.gpu.name, table)
    if run.concurrency is None:
        return {"output_tok_s": predict.offline_output_tok_s(c, eff)[0]}
    on = predict.fixed_concurrency(c, eff)
    return {"ttft_s": on.ttft_s, "itl_s": on.itl_s, "output_tok_s": on.output_tok_s}


def _measured(run: Run) -> dict[str, float]:
    return {k: v for k, v in (("ttft_s", run.ttft_s), ("itl_s", run.itl_s), ("output_tok_s", run.output_tok_s)) if v}


def residuals(runs: list[Run], eff: Efficiencies, base: Conditions | None = None, table: dict | None = None) -> list[float]:
    """Log ratios predicted ÷ measured over every figure every run measured (TTFT weighted by :data:`TTFT_WEIGHT`). [1]

    Parameters
    ----------
    runs : list of Run
        Benchmark runs (or public measurements), each with the figures it measured.
    eff : Efficiencies
        The efficiencies to predict with; every field filled (see :meth:`xlplan.predict.Efficiencies.resolved`).
    base : Conditions, optional
        Model, GPU, dtypes and TP for runs that carry no conditions of their own.
    table : dict, optional
        The fitted default table that fills ``eff``'s empty fields; left out, the shipped one.

    Returns
    -------
    list of float
        ``ln(predicted ÷ measured)`` per measured figure, run by run; 5.0 where the prediction is missing, not
        positive or not finite. [1]
    """
    out = []
    for r in runs:
        pred = predicted(r, eff, base, table)
        for k, m in _measured(r).items():
            p = pred.get(k)
            if p is None or not p > 0 or not math.isfinite(p):
                out.append(5.0)
                continue
            out.append(math.log(p / m) * (TTFT_WEIGHT if k == "ttft_s" else 1.0))
    return out


FIELDS = ("prefill_mfu", "decode_mfu", "bandwidth_efficiency", "step_overhead_s", "expert_efficiency")
LABELS = ("prefill MFU", "decode MFU", "bandwidth efficiency", "per-step overhead", "expert efficiency")
BOUNDS = {"prefill_mfu": BOUNDS_EFFICIENCY, "decode_mfu": BOUNDS_EFFICIENCY, "bandwidth_efficiency": BOUNDS_BANDWIDTH,
          "step_overhead_s": BOUNDS_OVERHEAD_S, "expert_efficiency": BOUNDS_EFFICIENCY}
SCALE = {"step_overhead_s": 0.002}


def _solve(runs: list[Run], start: Efficiencies, base: Conditions | None, free: tuple[str, ...],
           table: dict | None = None) -> Efficiencies:
    """Least squares over the ``free`` fields, the rest held at ``start`` (empty ones filled from ``table``)."""
    from scipy.optimize import least_squares

    if not free:
        return start
    lo = [BOUNDS[f][0] for f in free]
    hi = [BOUNDS[f][1] for f in free]
    z0 = [min(max(getattr(start, f), a + 1e-4), b - 1e-6) for f, a, b in zip(free, lo, hi)]

    def eff_of(z):
        return replace(start, **{f: float(v) for f, v in zip(free, z)})

    sol = least_squares(lambda z: residuals(runs, eff_of(z), base, table), z0, bounds=(lo, hi),
                        x_scale=[SCALE.get(f, 0.1) for f in free], diff_step=1e-3, max_nfev=200 * len(free))
    return eff_of(sol.x)


def _resolved(runs: list[Run], start: Efficiencies, base: Conditions | None) -> Efficiencies:
    c = runs[0].conditions or base
    return start.resolved(c.engine, c.gpu.name)


def sensitivity(runs: list[Run], eff: Efficiencies, base: Conditions | None = None,
                fields: tuple[str, ...] = FIELDS) -> tuple[str, ...]:
    """Which fields move the runs' predictions at (resolved) ``eff``: the ones a fit can set.

    Parameters
    ----------
    runs : list of Run
        Benchmark runs (or public measurements), each with the figures it measured.
    eff : Efficiencies
        The efficiencies to predict with; every field filled (see :meth:`xlplan.predict.Efficiencies.resolved`).
    base : Conditions, optional
        Model, GPU, dtypes and TP for runs that carry no conditions of their own.
    fields : tuple of str
        The :class:`Efficiencies` fields to try (see :data:`FIELDS`).

    Returns
    -------
    tuple of str
        The fields whose change (×1.2, or +2 ms for the per-step overhead) moves some residual by more than 0.01.
    """
    r0 = residuals(runs, eff, base)
    out = []
    for f in fields:
        v = getattr(eff, f)
        moved = replace(eff, **{f: v + 0.002 if f == "step_overhead_s" else v * 1.2})
        r1 = residuals(runs, moved, base)
        if max((abs(a - b) for a, b in zip(r0, r1)), default=0.0) > 0.01:
            out.append(f)
    return tuple(out)


def fit(runs: list[Run], base: Conditions | None = None, start: Efficiencies = Efficiencies(),
        spread: bool = True, fields: tuple[str, ...] = FIELDS) -> Fit:
    """Fit the efficiencies (and the per-step overhead) to the runs, on ``base`` conditions or each run's own.

    Fields the runs are not sensitive to keep their starting value (the engine's default), and the notes say so.

    Parameters
    ----------
    runs : list of Run
        Benchmark runs (or public measurements), each with the figures it measured.
    base : Conditions, optional
        Model, GPU, dtypes and TP for runs that carry no conditions of their own.
    start : Efficiencies
        Starting values; fields left as None take the engine's and GPU's defaults.
    spread : bool
        Refit with each run left out (with more than two runs) for the ranges; else each range is the fit alone.
    fields : tuple of str
        The :class:`Efficiencies` fields the fit may set (see :data:`FIELDS`); a dense model never fits the expert
        efficiency.

    Returns
    -------
    Fit
        The fitted efficiencies, their leave-one-run-out ranges, the median error at the fit, which figures each
        run constrained, and notes on the fields left at their starting value.
    """
    start = _resolved(runs, start, base)
    if not any((r.conditions or base).model.num_experts for r in runs):
        fields = tuple(f for f in fields if f != "expert_efficiency")  # a dense model has no experts to fit
    free = sensitivity(runs, start, base, fields)
    notes = [f"no run is sensitive to the {label}: left at {getattr(start, f):g}"
             for f, label in zip(FIELDS, LABELS) if f in fields and f not in free]
    eff = _solve(runs, start, base, free)
    ranges = {f: [getattr(eff, f)] for f in FIELDS}
    if spread and len(runs) > 2:
        for k in range(len(runs)):
            e = _solve(runs[:k] + runs[k + 1:], eff, base, free)
            for f in FIELDS:
                ranges[f].append(getattr(e, f))
    errs = [abs(math.exp(x) - 1.0) for x in residuals(runs, eff, base)]
    sides = {r.source: ", ".join(k for k in _measured(r)) for r in runs}
    span = {f: (min(v), max(v)) for f, v in ranges.items()}
    return Fit(eff, span["prefill_mfu"], span["decode_mfu"], span["bandwidth_efficiency"], span["step_overhead_s"],
               statistics.median(errs) if errs else 0.0, sides, tuple(notes))


MIN_RUNS = 4
"""Runs a vendor × engine class needs for a fit of its own (else its vendor's, else the overall fit). [runs]"""


def fit_defaults(runs: list[Run]) -> dict:
    """Default efficiencies per vendor and engine, fitted to public runs (each with its own conditions).

    Dense-model runs fit prefill MFU, decode MFU, bandwidth efficiency and the step overhead for each class with
    at least :data:`MIN_RUNS` runs, for each vendor over all its engines, and overall; MoE runs then fit the one
    expert efficiency, with each run's class efficiencies held. Returns the table ``xlplan/data/efficiencies.yaml`` holds.

    Parameters
    ----------
    runs : list of Run
        Public runs, each with its own conditions (model, GPU, engine).

    Returns
    -------
    dict
        ``{'overall': {...}, 'vendors': {vendor: {'all': {...}, engine: {...}}}}``; each entry holds the four fitted
        fields, rounded to 4 places, and the number of runs it was fitted to; 'overall' also the expert efficiency.
    """
    from xlplan import engines

    base = Efficiencies(**engines.RUNBOOK_EFFICIENCIES)
    dense = [r for r in runs if not r.conditions.model.num_experts]
    moe = [r for r in runs if r.conditions.model.num_experts]
    four = FIELDS[:4]

    def fitted(rs):
        e = _solve(rs, base, None, sensitivity(rs, base, None, four)) if rs else base
        return {f: round(float(getattr(e, f)), 4) for f in four} | {"runs": len(rs)}

    table: dict = {"overall": fitted(dense) | {"expert_efficiency": 1.0}, "vendors": {}}
    for v in sorted({engines.vendor(r.conditions.gpu.name) for r in runs}):
        vr = [r for r in dense if engines.vendor(r.conditions.gpu.name) == v]
        if len(vr) < MIN_RUNS:
            continue
        table["vendors"][v] = {"all": fitted(vr)}
        for e in sorted({r.conditions.engine for r in vr}):
            er = [r for r in vr if r.conditions.engine == e]
            if len(er) >= MIN_RUNS:
                table["vendors"][v][e] = fitted(er)
    if moe:
        e = _solve(moe, Efficiencies(expert_efficiency=1.0), None, ("expert_efficiency",), table)
        table["overall"]["expert_efficiency"] = round(float(e.expert_efficiency), 4)
        table["overall"]["moe_runs"] = len(moe)
    return table

