"""Validation: each published measurement predicted from its stated conditions, with the error; the predictions
refitted with each source left out, and calibration judged within a deployment.

A row comes in as read at the edge (:func:`xlplan.io.measurements.measured_row`: its outside names in xlplan's,
its measured figures parsed); its conditions go to :mod:`xlplan.evidence.predict`, the planner's own serving model.
No measured column is an input to a prediction: a row is predicted from its model, precision, GPU, count,
parallelism, engine, settings, lengths and concurrency alone. A row that cannot be predicted says what is missing.

Metrics and how each is scored:

- **capacity**: KV cache GiB per GPU (or tokens per replica) at start-up. The error is taken against
  the measured figure, or against 5 GiB where the figure is smaller (a cache near zero, or a model
  that does not fit), so 0.5 GiB there scores as 10%.
- **throughput**: output tokens/s of the whole system.
- **latency**: mean inter-token latency (TPOT) at a fixed concurrency.
- **ttft**: mean time to first token at a fixed concurrency (shown, not in the headline targets).
"""

from __future__ import annotations

import functools
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass, replace

from xlplan.evidence import predict
from xlplan.evidence.bench_conditions import Conditions, Efficiencies, deployment, memory_fraction, replace_concurrency
from xlplan.serving import efficiency_defaults

HEADLINE_KINDS = ("throughput", "latency")
"""The kinds the headline pools. [text]"""

CATEGORIES = {
    "kv_capacity": "KV-cache capacity at start-up",
    "offline_max_throughput": "offline maximum throughput",
    "online_latency_sweep": "throughput and latency at a fixed concurrency",
    "online_latency": "throughput and latency at a fixed concurrency",
    "mlperf_offline": "MLPerf offline",
    "mlperf_server": "MLPerf server",
}
CAPACITY, THROUGHPUT, LATENCY, TTFT = "capacity", "throughput", "latency", "ttft"
KINDS = (CAPACITY, THROUGHPUT, LATENCY, TTFT)
CAPACITY_FLOOR_GIB = 5.0
"""Capacity errors are taken against the measured figure, or this much where it is smaller. [GiB]"""
@dataclass(frozen=True)
class Check:
    """One predicted figure against its measurement (or a row that could not be predicted, with why)."""

    id: str
    category: str
    source: str  # the source group the row comes from (host and repository)
    metric: str
    kind: str  # capacity | throughput | latency | ttft
    predicted: float | None
    measured: float | None
    relative_error: float | None  # predicted ÷ measured − 1; capacity against max(|measured|, 5 GiB) [fraction]
    skipped: str = ""
    note: str = ""


@dataclass(frozen=True)
class MeasuredRow:
    """One measurement row as read at the edge: its conditions in xlplan's names (or why they cannot be read), what
    its condition columns say of speculative decoding and settings, and its measured figures parsed."""

    id: str
    category: str
    source: str  # the source group: host and repository (what leave-one-source-out leaves out)
    conditions: Conditions | None  # None: a name xlplan cannot read, said in ``why``
    why: str = ""  # why the conditions cannot be read [text]
    speculative: bool = False  # the condition columns state speculative decoding (MTP, EAGLE, a draft model)
    settings_unknown: bool = False  # the settings column says the engine's settings are not stated
    offline: bool = False  # an offline run (no fixed concurrency stated)
    concurrency: float | None = None  # the fixed concurrency stated [requests]
    concurrency_why: str = ""  # why no concurrency could be read [text]
    kv_gib: float | None = None  # measured KV cache per GPU [GiB]
    kv_tokens: float | None = None  # measured KV cache per replica [tokens]
    output_tok_s: float | None = None  # measured output tokens/s of the whole system [tokens/s]
    total_tok_s: float | None = None  # measured prompt and output tokens/s of the whole system [tokens/s]
    samples_per_s: float | None = None  # measured requests completed per second [requests/s]
    layout_free: bool = False  # the layout is not stated (an MLPerf submitter's choice): the best is predicted
    itl_ms: float | None = None  # measured mean inter-token latency [ms]
    ttft_ms: float | None = None  # measured mean TTFT [ms]
    point: str = ""  # the configuration measured: rows of one point differ only in provenance and figures [text]
    unreadable: str = ""  # measured cells not read, with why ("output_tok_s '22,3OO' is not a number") [text]
    server_limits_s: tuple[float, float] | None = None  # an MLPerf Server row's p99 TTFT and TPOT limits [s], [s/token]


def _check(m: MeasuredRow, metric, kind, predicted, measured, note="") -> Check:
    if predicted is None or measured is None:
        err = None
    elif kind == CAPACITY:
        err = (predicted - measured) / max(abs(measured), CAPACITY_FLOOR_GIB if "GiB" in metric else abs(measured) or 1.0)
    else:
        err = predicted / measured - 1.0 if measured else None
    return Check(m.id, m.category, m.source, metric, kind, predicted, measured, err, "", note)


def _skip(m: MeasuredRow, reason: str) -> Check:
    return Check(m.id, m.category, m.source, "", "", None, None, None, reason)


def predict_row(m: MeasuredRow, eff: Efficiencies = Efficiencies(), table: dict | None = None) -> list[Check]:
    """The checks one measurement row allows, or one skipped check with the reason.

    A row is skipped for its conditions only as its condition columns state them (read at the edge by
    :func:`xlplan.io.measurements.measured_row`): speculative decoding, settings the ``settings`` column says are
    unknown, a name xlplan cannot read. A note (``planner_check``) is never read. Conditions the planner refuses (a :class:`xlplan.plan.scenario.PlanningError`, or a
    plan the conditions make invalid, a pydantic ``ValidationError``) skip the row with the planner's reason; any
    other exception is a bug and is raised.

    Parameters
    ----------
    m : MeasuredRow
        One row of a measurements CSV as read (:func:`xlplan.io.measurements.measured_row`).
    eff : Efficiencies
        The efficiencies to predict at; a field left None takes the engine's default. [—]
    table : dict, optional
        The default-efficiency table the empty fields come from (a leave-one-source-out fold's); left out, the
        shipped one. A row whose engine and vendor borrow another class's fit says so in its checks' notes.

    Returns
    -------
    list of Check
        One check per measured figure the row allows (capacity [GiB] or [tokens], throughput [tokens/s], latency
        and TTFT [ms]), or one skipped check with the reason. [—]
    """
    from pydantic import ValidationError

    from xlplan.plan.scenario import PlanningError

    category = m.category
    if category not in CATEGORIES:
        return [_skip(m, f"category {category!r} is not one xlplan predicts ({', '.join(CATEGORIES)})")]
    c = m.conditions
    if c is None:
        return [_skip(m, m.why)]
    if m.speculative:
        return [_skip(m, "speculative decoding (MTP, EAGLE, a draft model) is not modelled")]
    try:
        checks = _predict(m, c, eff.resolved(c.engine, c.gpu.name, table))
    except (PlanningError, ValidationError) as e:  # conditions the planner refuses: reported, not raised
        return [_skip(m, f"cannot be predicted: {e}")]
    if m.settings_unknown:  # a benchmark that states no settings ran the engine's defaults, as the prediction does
        checks = [replace(k, note=f"{k.note}; settings not stated: the engine's defaults" if k.note
                          else "settings not stated: the engine's defaults") for k in checks]
    borrowed = efficiency_defaults.fallback_note(c.engine, c.gpu.name, bool(c.model.num_experts), table) if eff == Efficiencies() else ""
    if not borrowed:
        return checks
    return [replace(k, note=f"{k.note}; defaults: {borrowed}" if k.note else f"defaults: {borrowed}") if k.kind != CAPACITY
            else k for k in checks]


def _predict(m: MeasuredRow, c: Conditions, eff: Efficiencies) -> list[Check]:
    """The checks of a row whose conditions were read, at the efficiencies ``eff``."""
    if m.category == "mlperf_server":
        if m.server_limits_s is None:
            return [_skip(m, "MLPerf Server: the benchmark's p99 TTFT and TPOT limits are not defined in xlplan's table")]
        if m.samples_per_s is None and m.output_tok_s is None:
            return [_skip(m, _not_measured(m, "no samples/s or output tokens/s measured"))]
        c, rate_rps, note = _server(m, c, eff)
        return [_throughput_check(m, c, rate_rps * c.osl, note)]
    if m.category == "kv_capacity":
        gib, tokens = predict.kv_capacity(c)
        out = []
        if m.kv_gib is not None:
            out.append(_check(m, "KV cache GiB per GPU", CAPACITY, gib, m.kv_gib, f"{c.engine} rule at {memory_fraction(c):g}"))
        if m.kv_tokens is not None:
            out.append(_check(m, "KV cache tokens per replica", CAPACITY, tokens, m.kv_tokens))
        return out or [_skip(m, _not_measured(m, "no KV figure measured"))]
    if not c.isl or not c.osl:
        missing = " and ".join(n for n, v in (("isl", c.isl), ("osl", c.osl)) if not v)
        return [_skip(m, f"{missing}: not stated (a dataset such as ShareGPT without its token counts)")]
    if m.offline:
        if m.output_tok_s is None and m.total_tok_s is None and m.samples_per_s is None:
            return [_skip(m, _not_measured(m, "no output tokens/s, total tokens/s or samples/s measured"))]
        c, tok_s, batch, chosen = _offline(m, c, eff)
        note = f"batch {batch:,.0f} per replica" + (f"; {chosen}" if chosen else "")
        return [_throughput_check(m, c, tok_s, note)]
    if m.concurrency is None:
        return [_skip(m, m.concurrency_why)]
    on = predict.fixed_concurrency(replace_concurrency(c, m.concurrency), eff)
    out = []
    note = f"batch {on.batch:,.1f} per replica" + (f", {on.waiting:,.1f} waiting" if on.waiting > 0.05 else "")
    if m.output_tok_s is not None or m.total_tok_s is not None or m.samples_per_s is not None:
        out.append(_throughput_check(m, c, on.output_tok_s, note))
    if m.itl_ms is not None:
        out.append(_check(m, "inter-token latency ms", LATENCY, on.itl_s * 1e3, m.itl_ms, note))
    if m.ttft_ms is not None:
        out.append(_check(m, "TTFT ms", TTFT, on.ttft_s * 1e3, m.ttft_ms, note))
    return out or [_skip(m, _not_measured(m, "no throughput or latency measured"))]


def _not_measured(m: MeasuredRow, why: str) -> str:
    """Why a row has no figure to score, with the cells that were there but could not be read. [text]"""
    return f"{why} ({m.unreadable})" if m.unreadable else why


def _throughput_check(m: MeasuredRow, c: Conditions, output_tok_s: float, note: str) -> Check:
    """The throughput check a row allows: output tokens/s where measured, else total tokens/s (prompt and output,
    ``output × (isl + osl) ÷ osl``), else samples/s (``output ÷ osl``)."""
    if m.output_tok_s is not None:
        return _check(m, "output tokens/s", THROUGHPUT, output_tok_s, m.output_tok_s, note)
    if m.total_tok_s is not None:
        return _check(m, "total tokens/s", THROUGHPUT, output_tok_s * (c.isl + c.osl) / c.osl, m.total_tok_s, note)
    return _check(m, "samples/s", THROUGHPUT, output_tok_s / c.osl, m.samples_per_s, note)


def _offline(m: MeasuredRow, c: Conditions, eff: Efficiencies) -> tuple[Conditions, float, float, str]:
    """(conditions, output tokens/s, batch, which layout) at maximum throughput: the row's layout where stated, else
    the best the GPUs allow (:func:`_best_layout`)."""
    if not m.layout_free:
        tok_s, batch = predict.offline_output_tok_s(c, eff)
        return c, tok_s, batch, ""
    cand, tok_s, batch = _best_layout(c, eff)
    return cand, tok_s, batch, (f"layout not stated: the best of the GPUs' layouts, {cand.replicas} × TP{cand.tp} "
                                f"({cand.weights_dtype} weights, {cand.kv_dtype} cache, {cand.engine})")


def _best_layout(c: Conditions, eff: Efficiencies) -> tuple[Conditions, float, float]:
    """(conditions, output tokens/s, batch) of the layout that serves most offline: every replica of ``tp`` GPUs for
    each ``tp`` dividing the count (the submitter's choice, as a vendor tunes an MLPerf run); a layout whose weights do
    not fit is passed over. [Conditions], [tokens/s], [sequences]"""
    from xlplan.plan.scenario import PlanningError

    best = None
    for tp in (t for t in range(1, c.gpus + 1) if c.gpus % t == 0):
        cand = replace(c, tp=tp, ep=tp if c.model.num_experts else 1)
        try:
            tok_s, batch = predict.offline_output_tok_s(cand, eff)
        except PlanningError:
            continue
        if tok_s > 0 and (best is None or tok_s > best[1]):
            best = (cand, tok_s, batch)
    if best is None:
        raise PlanningError(f"the weights fit no layout of {c.gpus} {c.gpu.name}")
    return best


def _server(m: MeasuredRow, c: Conditions, eff: Efficiencies) -> tuple[Conditions, float, str]:
    """(conditions, the highest rate kept, note): an MLPerf Server row's answer, as ``xlplan capacity`` finds one.

    The row's GPUs at its layout serve Poisson arrivals of the benchmark's mean lengths; the answer is the highest rate whose
    simulation keeps p99 TTFT and p99 inter-token latency within the benchmark's limits on every seed
    (:func:`xlplan.simulate.search.highest_rate`, the search ``capacity`` runs), from the layout's offline throughput
    as the first guess. A submitter's own layout is taken to be the one that serves most offline. [Conditions],
    [requests/s], [text]
    """
    ttft_s, tpot_s = m.server_limits_s
    cand, rate = _server_rate(replace(c, engine_version=""), eff.resolved(c.engine, c.gpu.name), ttft_s, tpot_s,
                              m.layout_free)
    cand = replace(cand, engine_version=c.engine_version)
    chosen = (f"; layout not stated: the best of the GPUs' layouts, {cand.replicas} × TP{cand.tp}" if m.layout_free else "")
    return cand, rate, (f"highest Poisson rate kept at p99 TTFT ≤ {ttft_s:g} s and p99 inter-token latency ≤ {tpot_s:g} s "
                        f"in simulation (capacity's search), mean lengths {cand.isl:,.0f} in / {cand.osl:,.0f} out{chosen}")


SERVER_FIRST_TRY = 0.9
"""An MLPerf Server row's search tries this share of the layout's offline throughput first (submissions' Server rates
run at 80-95% of their Offline ones), then brackets outward. [fraction]"""

SERVER_TOLERANCE = 0.02
"""An MLPerf Server row's rate is bracketed to this fraction of itself: finer than the spread of one system's
submissions by different vendors (2-8% on the corpus' 8 × H100 rows). [1]"""


@functools.lru_cache(maxsize=1024)
def _server_rate(c: Conditions, eff: Efficiencies, ttft_s: float, tpot_s: float, layout_free: bool) -> tuple[Conditions, float]:
    """(the layout, the highest rate it keeps the limits at) for :func:`_server`, once per conditions and efficiencies (a
    memo: submissions of one system by several vendors, and folds whose refit leaves the row's class as it was, share
    it). Where the submitter chose the layout, the one with the most offline throughput (as an MLPerf Offline row's is
    predicted) is searched. [Conditions], [requests/s]"""
    from xlplan.plan.scenario import PlanningError
    from xlplan.simulate import search

    if layout_free:  # the submitter's layout: the one that serves most offline
        c, tok_s, _ = _best_layout(c, eff)
    else:
        tok_s = predict.offline_output_tok_s(c, eff)[0]
    guess = tok_s / c.osl
    s = predict.server_scenario(c, eff, ttft_s, tpot_s)
    lo, _, _ = search.highest_rate(s, c.replicas, c.tp, guess, SERVER_FIRST_TRY * guess, 99.0, tolerance=SERVER_TOLERANCE)
    if lo is None:
        raise PlanningError(f"{c.replicas} × TP{c.tp} of {c.gpu.name} keep p99 TTFT {ttft_s:g} s and TPOT {tpot_s:g} s at "
                            "no rate down to a sixteenth of their offline throughput")
    return c, lo


def validate(rows: list[MeasuredRow], eff: Efficiencies = Efficiencies(), table: dict | None = None) -> list[Check]:
    """Every row predicted (or skipped with the reason), the empty efficiencies from ``table`` (default: shipped).

    Parameters
    ----------
    rows : list of MeasuredRow
        The rows as read (:func:`xlplan.io.measurements.measured_rows`).
    eff : Efficiencies
        The efficiencies to predict at; a field left None takes the engine's default.
    table : dict, optional
        The default-efficiency table the empty fields come from; left out, the shipped one.

    Returns
    -------
    list of Check
        Each row's checks, in the rows' order. [—]
    """
    return [c for m in rows for c in predict_row(m, eff, table)]


def medians(checks: list[Check]) -> dict[str, float]:
    """Median absolute error by category and by kind.

    Parameters
    ----------
    checks : list of Check
        Predicted figures against their measurements.

    Returns
    -------
    dict of str to float
        Category or kind -> the median |error| of its scored checks. [fraction]
    """
    out = {}
    for key in sorted({c.category for c in checks} | {c.kind for c in checks if c.kind}):
        errs = [abs(c.relative_error) for c in checks if c.relative_error is not None and key in (c.category, c.kind)]
        if errs:
            out[key] = statistics.median(errs)
    return out


def as_json(checks: list[Check], eff: Efficiencies) -> dict:
    """The checks, the efficiencies and the medians as plain data for ``validate --json``.

    Parameters
    ----------
    checks : list of Check
        Predicted figures against their measurements.
    eff : Efficiencies
        The efficiencies they were predicted at.

    Returns
    -------
    dict
        ``efficiencies``, ``checks`` and ``median_absolute_error``. [—]
    """
    return {"efficiencies": asdict(eff), "checks": [asdict(c) for c in checks], "median_absolute_error": medians(checks)}


def run_of(m: MeasuredRow):
    """A throughput or latency row as a calibration run with its own conditions, or None (capacity rows, skipped rows).

    Parameters
    ----------
    m : MeasuredRow
        A row as read (:func:`xlplan.io.measurements.measured_row`).

    Returns
    -------
    Run or None
        The run at the row's concurrency (None offline), lengths, measured TTFT, ITL and tokens/s. [—]
    """
    from xlplan.evidence.calibrate import Run

    if m.category not in ("offline_max_throughput", "online_latency_sweep", "online_latency"):
        return None
    checks = predict_row(m)
    if not checks or checks[0].skipped:
        return None
    c = m.conditions
    conc = None if m.offline else m.concurrency
    return Run(m.id, conc, c.isl, c.osl, None if m.offline or not m.ttft_ms else m.ttft_ms / 1e3,
               None if m.offline or not m.itl_ms else m.itl_ms / 1e3, m.output_tok_s, c)


def superseded(c: Conditions) -> str:
    """Why a row's engine release is older than the defaults describe, or '' (:func:`xlplan.serving.efficiency_defaults.superseded_release`).

    Parameters
    ----------
    c : Conditions
        A row's conditions, with its engine version as the source states it.

    Returns
    -------
    str
        E.g. "SGLang 0.4, before 0.5 or later"; empty where the release is current or not stated. [text]
    """
    return efficiency_defaults.superseded_release(c.engine, c.engine_version, c.v0)


def fit_runs(rows: list[MeasuredRow]) -> list:
    """The throughput and latency runs the default efficiencies are fitted on: every predictable row of a current release.

    Parameters
    ----------
    rows : list of MeasuredRow
        Measurement rows as read (:func:`xlplan.io.measurements.measured_rows`).

    Returns
    -------
    list of Run
        :func:`run_of` for each row, without rows that cannot be predicted and rows :func:`superseded` names. [—]
    """
    runs = [run_of(r) for r in rows]
    return [r for r in runs if r is not None and not superseded(r.conditions)]


@dataclass(frozen=True)
class SourceOut:
    """One source predicted with default efficiencies fitted without it."""

    source: str
    runs: int
    median_error: float  # [fraction]


@dataclass(frozen=True)
class Pairs:
    """Calibrating on runs of one deployment (GPU, model, engine) and predicting another of its runs."""

    label: str
    pairs: int
    default_median: float  # median over pairs of the predicted run's mean |error| at the defaults [fraction]
    calibrated_median: float  # the same after calibrating [fraction]
    improved: int
    unchanged: int
    worse: int
    worse_by_5_points: int  # pairs whose error grew by more than 0.05 [pairs]
    refused: int  # fits refused as implausible (the defaults are then kept) [fits]


@dataclass(frozen=True)
class Report:
    """Every check at the shipped defaults (in-sample on the corpus) and with its source left out of the fit."""

    in_sample: tuple[Check, ...]
    left_out: tuple[Check, ...]
    sources: tuple[SourceOut, ...]
    calibration: tuple[Pairs, ...]
    corpus: bool = True  # every row is a corpus row, so the shipped defaults were fitted on them (in-sample)
    superseded: frozenset = frozenset()  # ids of rows of engine releases older than the defaults describe
    by_deployment: tuple[Check, ...] = ()  # each row at a table fitted without its model × GPU × engine (the headline)
    by_model: tuple[Check, ...] = ()  # each row at a table fitted without any deployment of its model
    rows: tuple[MeasuredRow, ...] = ()  # the rows judged (their points weigh repeats once)


def _runs_by_group(rows: list[MeasuredRow], fitted_only: bool = False) -> list[tuple[str, object]]:
    """(source group, run) of every row that is a calibration run (of a current release where ``fitted_only``)."""
    pairs = [(m.source, run_of(m)) for m in rows]
    return [(g, r) for g, r in pairs if r is not None and not (fitted_only and superseded(r.conditions))]


def _by_source(checks: list[Check]) -> list[SourceOut]:
    """Median |error| of each source's throughput and latency checks (pass the left-out checks). [fraction]"""
    out = []
    for g in sorted({c.source for c in checks}):
        errs = _errors([c for c in checks if c.source == g], HEADLINE_KINDS)
        if errs:
            out.append(SourceOut(g, len({c.id for c in checks if c.source == g and c.kind in HEADLINE_KINDS}),
                                 statistics.median(errs)))
    return out


def _errors(checks: list[Check], kinds: tuple[str, ...]) -> list[float]:
    return [abs(c.relative_error) for c in checks if c.relative_error is not None and c.kind in kinds]


def headline(checks: list[Check]) -> float:
    """Median |error| of the throughput and inter-token latency checks: the headline.

    Parameters
    ----------
    checks : list of Check
        Predicted figures against their measurements (the left-out checks for the headline).

    Returns
    -------
    float
        The median |error| over :data:`HEADLINE_KINDS`; NaN without one. [fraction]
    """
    errs = _errors(checks, HEADLINE_KINDS)
    return statistics.median(errs) if errs else float("nan")


def _run_error(run, eff) -> float:
    from xlplan.evidence.calibrate import predicted

    p = predicted(run, eff)
    errs = [abs(p[k] / m - 1.0) for k, m in (("output_tok_s", run.output_tok_s), ("itl_s", run.itl_s)) if m]
    return statistics.mean(errs)


def within_deployment(rows: list[MeasuredRow]) -> list[Pairs]:
    """Calibration judged as a user would meet it: runs of one deployment calibrate, another of its runs is predicted.

    Parameters
    ----------
    rows : list of dict
        Measurement rows; throughput and latency runs are grouped by GPU, model and engine.

    Returns
    -------
    list of Pairs
        'one run predicts another' (every ordered pair within a deployment) and 'all runs but one predict it' (each
        run of a deployment with at least three), each against the shipped defaults. [—]
    """
    from xlplan.evidence.calibrate import fit
    from xlplan.evidence.calibrate_map import ImplausibleFit

    groups: dict[tuple, list] = defaultdict(list)
    for _, r in _runs_by_group(rows):
        if r.output_tok_s or r.itl_s:  # what a pair is scored on (a run of TTFT or total tokens/s alone is not)
            groups[deployment(r.conditions)].append(r)

    def calibrated(runs):
        try:
            return fit(runs, spread=False).efficiencies, False
        except ImplausibleFit:
            c = runs[0].conditions
            return Efficiencies().resolved(c.engine, c.gpu.name), True

    out = []
    for label, minimum, trains in (("one run predicts another", 2, lambda g, j: [[i] for i in g if i is not j]),
                                   ("all runs but one predict it", 3, lambda g, j: [[i for i in g if i is not j]])):
        scores, refused = [], 0
        for g in groups.values():
            if len(g) < minimum:
                continue
            for j in g:
                d = _run_error(j, Efficiencies().resolved(j.conditions.engine, j.conditions.gpu.name))
                for train in trains(g, j):
                    eff, was_refused = calibrated(train)
                    refused += was_refused
                    scores.append((d, _run_error(j, eff)))
        if scores:
            out.append(Pairs(label, len(scores), statistics.median(d for d, _ in scores),
                             statistics.median(c for _, c in scores), sum(c < d - 1e-9 for d, c in scores),
                             sum(abs(c - d) <= 1e-9 for d, c in scores), sum(c > d + 1e-9 for d, c in scores),
                             sum(c - d > 0.05 for d, c in scores), refused))
    return out


def validation(rows: list[MeasuredRow], corpus: list[MeasuredRow], calibration: bool = True, by_source: bool = True) -> Report:
    """The validation of measurement rows: in-sample at the shipped defaults, left out, by source, calibration pairs.

    Parameters
    ----------
    rows : list of MeasuredRow
        The rows to judge, as read (:func:`xlplan.io.measurements.measured_rows`).
    corpus : list of MeasuredRow
        The shipped corpus, as read: every fold's training rows (a row of ``rows`` outside it joins them).
    calibration : bool
        Also score calibration within each deployment (:func:`within_deployment`).
    by_source : bool
        Also leave each source out; without it the report's ``left_out`` and ``sources`` are empty.

    Returns
    -------
    Report
        The checks at the shipped defaults, held out by deployment and by model, left out by source (where asked) and
        the calibration pairs. [—]
    """
    from xlplan.evidence import held_out

    ids = {m.id for m in corpus}
    extra = [m for m in rows if m.id not in ids]
    training = corpus + [m for m in extra if not m.point]  # never the silicon sample: the table is fitted on the corpus
    old = frozenset(m.id for m in rows if (run := run_of(m)) is not None and superseded(run.conditions))
    pool = held_out.linearise(fit_pool(training))
    left = held_out.held_out_checks(rows, pool, "source", validate) if by_source else []
    return Report(tuple(validate(rows)), tuple(left), tuple(_by_source(left)),
                  tuple(within_deployment(rows)) if calibration else (), not extra, old,
                  tuple(held_out.held_out_checks(rows, pool, "deployment", validate)),
                  tuple(held_out.held_out_checks(rows, pool, "model", validate)), tuple(rows))


def fit_pool(rows: list[MeasuredRow]) -> list[tuple[MeasuredRow, object]]:
    """(row, run) of every row the default table is fitted on: a throughput or latency row of a current release.

    Parameters
    ----------
    rows : list of MeasuredRow
        The candidate rows: the corpus, and a measurements file's own rows judged beside it. The silicon sample's rows
        (those with a ``point``) are never passed: the shipped table is fitted on the corpus, so the held-out figures
        judge the table as shipped, refitted without the rows predicted.

    Returns
    -------
    list of tuple
        Each fitted row with its calibration run (:func:`run_of`). [—]
    """
    return [(m, r) for m in rows if (r := run_of(m)) is not None and not superseded(r.conditions)]
