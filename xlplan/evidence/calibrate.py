"""Calibration: the efficiencies that make the serving model reproduce a benchmark.

Notes
-----
The serving model (:mod:`xlplan.serving.step`, through :mod:`xlplan.evidence.predict`) is fitted to the runs by a regularised
least-squares fit (:mod:`xlplan.evidence.calibrate_map`): the engine's defaults are the prior, each with a stated spread;
each measured TTFT, inter-token latency and output tokens/s is a log ratio over its own spread; every efficiency is
bounded and the per-step overhead has a floor. A field the runs cannot identify apart from the others (decode MFU and
bandwidth from one point, an overhead from one batch) keeps its default and the fit says so. Each fitted field
carries its 95% interval from the posterior covariance; a fit that reaches an implausible value (an MFU above 0.8,
bandwidth at its ceiling, the overhead at its floor) is refused with the runs named.

The default table (:func:`fit_defaults`) is the same fit over the public measurements (:mod:`xlplan.io.measurements`),
as a hierarchy: overall, then each GPU vendor with the overall fit as its prior, then each vendor × engine with its
vendor's; a leave-one-source-out fold refits it without the source it predicts.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace

from xlplan.catalog.specs import vendor
from xlplan.evidence import predict
from xlplan.evidence.bench_conditions import Conditions, Efficiencies
from xlplan.evidence.calibrate_map import BOUNDS, NOISE, PRIOR_SPREAD, ImplausibleFit, MapFit, implausible, map_fit

__all__ = ["Fit", "ImplausibleFit", "Run", "fit", "fit_defaults", "interval", "plausible_fit", "predicted", ]

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
    identified: tuple[str, ...] = ()  # the fields the runs set; the rest stayed at their default
    sd: dict = field(default_factory=dict)  # field -> standard deviation of ln θ after the fit [ln units]
    held: dict = field(default_factory=dict)  # field -> why it was held at its default (it would go implausible) [text]


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
        The efficiencies to predict with; every field filled (see :meth:`xlplan.evidence.bench_conditions.Efficiencies.resolved`).
    base : Conditions, optional
        Model, GPU, dtypes and TP for runs that carry no conditions of their own.
    table : dict, optional
        The fitted default table that fills ``eff``'s empty fields (a leave-one-source-out fold's); left out, the
        shipped one (:func:`xlplan.serving.efficiency_defaults.shipped_table`).

    Returns
    -------
    dict of str to float
        Predicted mean 'ttft_s' [s] and 'itl_s' [s/token] at a fixed concurrency, and whole-system 'output_tok_s'
        (the only one for an offline run). [tokens/s]

    Notes
    -----
    A fixed-concurrency run is predicted here by its steady state in closed form
    (:func:`xlplan.evidence.predict.steady_state`): the fits need a figure smooth in the efficiencies and cheap enough
    to take hundreds of times a fit. ``validate`` scores the replay of the same benchmark
    (:func:`xlplan.evidence.predict.fixed_concurrency`), with the same step time. Fitting through the replay itself
    was tried and held out worse (``benchmarks/bench_replay.txt``).

    Raises
    ------
    ValueError
        When neither the run nor ``base`` gives conditions to predict with.
    """
    c = _conditions(run, base)
    eff = eff.resolved(c.engine, c.gpu.name, table)
    if run.concurrency is None:
        return {"output_tok_s": predict.offline_output_tok_s(c, eff)[0]}
    on = predict.steady_state(c, eff)
    return {"ttft_s": on.ttft_s, "itl_s": on.itl_s, "output_tok_s": on.output_tok_s}


def _measured(run: Run) -> dict[str, float]:
    return {k: v for k, v in (("ttft_s", run.ttft_s), ("itl_s", run.itl_s), ("output_tok_s", run.output_tok_s)) if v}


FIELDS = ("prefill_mfu", "decode_mfu", "bandwidth_efficiency", "step_overhead_s", "expert_efficiency")
LABELS = ("prefill MFU", "decode MFU", "bandwidth efficiency", "per-step overhead", "expert efficiency")
INTERVAL_Z = 1.96
"""The calibrated ranges are the 95% interval of each fitted field: ln θ ± 1.96 sd. [1]"""


def _scaled_residuals(runs: list[Run], eff: Efficiencies, base: Conditions | None = None, table: dict | None = None) -> list[float]:
    """Each measured figure's ``ln(predicted ÷ measured) ÷ σ``, σ its spread (:data:`xlplan.evidence.calibrate_map.NOISE`). [1]

    Parameters
    ----------
    runs : list of Run
        Benchmark runs (or public measurements), each with the figures it measured.
    eff : Efficiencies
        The efficiencies to predict with; empty fields take the defaults of ``table``.
    base : Conditions, optional
        Model, GPU, dtypes and TP for runs that carry no conditions of their own.
    table : dict, optional
        The fitted default table that fills ``eff``'s empty fields; left out, the shipped one.

    Returns
    -------
    list of float
        Run by run, figure by figure; ``5 ÷ σ`` where the prediction is missing, not positive or not finite. [1]
    """
    out = []
    for r in runs:
        pred = predicted(r, eff, base, table)
        for k, m in _measured(r).items():
            p = pred.get(k)
            x = math.log(p / m) if p is not None and p > 0 and math.isfinite(p) else 5.0
            out.append(x / NOISE[k])
    return out


def _fields_for(runs: list[Run], base: Conditions | None, fields: tuple[str, ...]) -> tuple[str, ...]:
    if not any((r.conditions or base).model.num_experts for r in runs):
        return tuple(f for f in fields if f != "expert_efficiency")  # a dense model has no experts to fit
    return fields


def interval(eff: Efficiencies, sd: dict, f: str) -> tuple[float, float]:
    """A field's 95% interval, ``θ × exp(±1.96 sd)`` within its bounds; the point itself where it was not fitted.

    Parameters
    ----------
    eff : Efficiencies
        The fitted efficiencies.
    sd : dict of str to float
        Each fitted field's standard deviation of ln θ (a field absent was not fitted). [ln units]
    f : str
        The field.

    Returns
    -------
    tuple of float
        (low, high) of the field. [fraction], [s]
    """
    v = getattr(eff, f)
    if f not in sd:
        return (v, v)
    lo, hi = BOUNDS[f]
    return (max(lo, v * math.exp(-INTERVAL_Z * sd[f])), min(hi, v * math.exp(INTERVAL_Z * sd[f])))


def fit(runs: list[Run], base: Conditions | None = None, start: Efficiencies = Efficiencies(),
        spread: bool = True, fields: tuple[str, ...] = FIELDS, table: dict | None = None, refuse: bool = True) -> Fit:
    """Calibrate: the engine's defaults moved only in what the runs identify (a regularised fit).

    The defaults are the prior (:mod:`xlplan.evidence.calibrate_map`); a field the runs cannot tell apart from the others
    stays at its default and the notes say so; each fitted field carries its 95% interval.

    Parameters
    ----------
    runs : list of Run
        Benchmark runs (or public measurements), each with the figures it measured.
    base : Conditions, optional
        Model, GPU, dtypes and TP for runs that carry no conditions of their own.
    start : Efficiencies
        The prior's centre; fields left as None take the engine's and GPU's defaults.
    spread : bool
        Report each field's 95% interval (else each range is the fit alone).
    fields : tuple of str
        The :class:`Efficiencies` fields the fit may set (see :data:`FIELDS`); a dense model never fits the expert
        efficiency.
    table : dict, optional
        The default table the prior comes from; left out, the shipped one.
    refuse : bool
        Raise :class:`~xlplan.evidence.calibrate_map.ImplausibleFit` on an implausible fit (else keep it and say so).

    Returns
    -------
    Fit
        The fitted efficiencies, their 95% intervals, the median error at the fit, which figures each run measured,
        and notes on the fields left at their default.

    Raises
    ------
    ImplausibleFit
        An MFU above 0.8, bandwidth at its ceiling or the overhead at its floor, naming the runs.
    """
    c0 = runs[0].conditions or base
    prior = start.resolved(c0.engine, c0.gpu.name, table)
    fields = _fields_for(runs, base, fields)
    m, held, notes = plausible_fit(lambda e: _scaled_residuals(runs, e, base, table), prior, fields)
    eff = m.efficiencies
    notes = [f"the runs cannot identify the {label} apart from the other figures: left at its default "
             f"{getattr(prior, f):g}" for f, label in zip(FIELDS, LABELS) if f in fields and f not in m.identified
             and f not in held] + notes
    notes += _judged(runs, m, held, base, table, refuse)
    sd = {f: m.sd[f] for f in m.identified} if spread else {}
    errs = [abs(math.exp(x * NOISE[k]) - 1.0) for x, k in zip(_scaled_residuals(runs, eff, base, table),
                                                              [k for r in runs for k in _measured(r)])]
    sides = {r.source: ", ".join(k for k in _measured(r)) for r in runs}
    span = {f: interval(eff, sd, f) for f in FIELDS}
    return Fit(eff, span["prefill_mfu"], span["decode_mfu"], span["bandwidth_efficiency"], span["step_overhead_s"],
               statistics.median(errs) if errs else 0.0, sides, tuple(notes), m.identified, dict(m.sd), dict(held))


def _judged(runs: list[Run], m, held: dict, base, table, refuse: bool) -> list[str]:
    """Refuse (or, with ``refuse`` off, note) a fit that is implausible or that reproduces a run only by a factor of two."""
    bad = implausible(m.efficiencies, m.identified)
    notes = []
    if bad or (held and not m.identified):
        why = "; ".join(bad or held.values())
        if refuse:
            raise ImplausibleFit(", ".join(r.source for r in runs),
                                 f"the fit is implausible — {why}; the runs need a term the model does not have "
                                 "(check the GPU, TP, dtypes and that the runs are of this deployment)")
        notes.append("implausible: " + why)
    far = _unreproduced(runs, m.efficiencies, base, table)
    if far and refuse:
        named = sorted({r for r, _ in far})
        raise ImplausibleFit(", ".join(named), "no plausible efficiencies reproduce it: " + "; ".join(
            what if len(named) == 1 else f"{r}: {what}" for r, what in far))
    return notes


FAR = 1.0
"""A run's output tokens/s or inter-token latency that the fitted model misses by more than this (a factor of two,
either way) is not reproduced: no efficiency within its bounds explains it, so the fit is refused naming the run
rather than averaged over. TTFT, which the model takes in coarsely, is judged only for a unit slip (under 1 ms). [1]"""
UNIT_HINT = {"itl_s": ("mean ITL", 1e-3, "ms"), "ttft_s": ("mean TTFT", 1e-3, "ms")}


def _unreproduced(runs: list[Run], eff: Efficiencies, base: Conditions | None, table: dict | None) -> list[tuple[str, str]]:
    """(run, what) for each measured figure the fitted model misses by more than :data:`FAR`, with a unit hint."""
    out = []
    for r in runs:
        pred = predicted(r, eff, base, table)
        for k, m in _measured(r).items():
            p = pred.get(k)
            label, small, unit = UNIT_HINT.get(k, ("output tokens/s", 0.0, ""))
            if p is None or not p > 0 or (abs(math.log(p / m)) <= math.log(1.0 + FAR) and m >= small):
                continue
            if k == "ttft_s" and m >= small:
                continue
            scale = 1e3 if unit else 1.0
            hint = f" (was {m * scale:.3g} written in seconds? the field is in milliseconds)" if m < small else ""
            u = f" {unit}" if unit else ""
            out.append((r.source, f"{label} {m * scale:,.4g}{u} measured, {p * scale:,.4g}{u} at the fit{hint}"))
    return out


def plausible_fit(resid, prior: Efficiencies, fields: tuple[str, ...]) -> tuple[MapFit, dict, list[str]]:
    """The regularised fit, with a field that would go implausible held at its default and the next one tried.

    One batch cannot tell bandwidth from the per-step overhead; the fit offers bandwidth first, and where bandwidth
    would have to pass its ceiling the overhead is the plausible reading instead (and the note says so).

    Parameters
    ----------
    resid : callable
        Efficiencies to the figures' scaled residuals, ``ln(predicted ÷ measured) ÷ σ``. [1]
    prior : Efficiencies
        The defaults, every field filled: the prior's centre.
    fields : tuple of str
        The fields that may be fitted.

    Returns
    -------
    fit : MapFit
        The regularised fit over the fields not held.
    held : dict of str to str
        Each field held at its default, and why.
    notes : list of str
        What was held, in words.
    """
    held: dict[str, str] = {}
    notes: list[str] = []
    allowed = tuple(fields)
    while True:
        m = map_fit(resid, prior, allowed)
        bad = {f: p for f, p in zip(FIELDS, (implausible(m.efficiencies, (f,)) for f in FIELDS)) if p and f in m.identified}
        if not bad:
            return m, held, notes
        for f, phrases in bad.items():
            held[f] = phrases[0]
            notes.append(f"the {LABELS[FIELDS.index(f)]} would go past what is plausible ({phrases[0]}): it is held at "
                         f"its default {getattr(prior, f):g} and the other fields fitted")
        allowed = tuple(f for f in allowed if f not in bad)
        if not allowed:
            return MapFit(prior, (), {f: PRIOR_SPREAD[f] for f in fields}, prior), held, notes


MIN_RUNS = 4
"""Runs a vendor × engine class needs for a fit of its own (else its vendor's, else the overall fit). [runs]"""
OVERALL_PRIOR = Efficiencies(prefill_mfu=0.40, decode_mfu=0.40, bandwidth_efficiency=0.60, step_overhead_s=0.005,
                             expert_efficiency=0.5)
"""The prior of the overall fit: the runbook's 40% MFU and 60% of bandwidth (Runbook, document 14, step 5), a 5 ms
step (vLLM V1's scheduler and sampler on the corpus' dense runs) and experts at half the dense GEMMs' MFU."""


def fit_defaults(runs: list[Run]) -> dict:
    """Default efficiencies per vendor and engine, fitted to public runs (each with its own conditions).

    A hierarchy of regularised fits: the overall fit has :data:`OVERALL_PRIOR` as its prior; each vendor's fit has
    the overall one; each vendor × engine has its vendor's. Dense runs fit the four dense fields where the class has
    at least :data:`MIN_RUNS` of them; MoE runs then fit the expert efficiency, with the class's dense fields held,
    where it has at least :data:`MIN_RUNS` of those. A class with fewer keeps the fit above it, and its entry says
    so (``dense_fallback``, ``moe_fallback``). Returns the
    table ``xlplan/data/efficiencies.yaml`` holds.

    Parameters
    ----------
    runs : list of Run
        Public runs, each with its own conditions (model, GPU, engine).

    Returns
    -------
    dict
        ``{'overall': {...}, 'vendors': {vendor: {'all': {...}, engine: {...}}}}``; each entry holds the fitted
        fields, rounded to 4 places, the number of runs it was fitted to and the engine versions they ran (as each
        source states it).
    """

    four = FIELDS[:4]

    def fitted(rs, prior: Efficiencies, top: bool = False, above: str = "") -> tuple[dict, Efficiencies]:
        dense = [r for r in rs if not r.conditions.model.num_experts]
        moe = [r for r in rs if r.conditions.model.num_experts]
        e, row = prior, {}
        if dense and (top or len(dense) >= MIN_RUNS):
            e = map_fit(lambda x: _scaled_residuals(dense, x), prior, four).efficiencies
        else:
            row["dense_fallback"] = f"{len(dense)} dense run(s), fewer than {MIN_RUNS}: {above} is used"
        if moe and (top or len(moe) >= MIN_RUNS):
            e = map_fit(lambda x: _scaled_residuals(moe, x), e, ("expert_efficiency",)).efficiencies
        else:
            row["moe_fallback"] = f"{len(moe)} MoE run(s), fewer than {MIN_RUNS}: {above} is used"
        versions = sorted({r.conditions.engine_version for r in rs if r.conditions.engine_version})
        row = ({f: round(float(getattr(e, f)), 4) for f in FIELDS} | {"runs": len(dense), "moe_runs": len(moe)} | row
               | {"engine_versions": versions})
        return row, e

    overall, top = fitted(runs, OVERALL_PRIOR, top=True)
    table: dict = {"overall": overall, "vendors": {}}
    for v in sorted({vendor(r.conditions.gpu.name) for r in runs}):
        vr = [r for r in runs if vendor(r.conditions.gpu.name) == v]
        row, ve = fitted(vr, top, above="the fit over every vendor")
        table["vendors"][v] = {"all": row}
        for e in sorted({r.conditions.engine for r in vr}):
            table["vendors"][v][e] = fitted([r for r in vr if r.conditions.engine == e], ve, above=f"{v}'s fit over all its engines")[0]
    return table
