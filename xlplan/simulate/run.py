"""One run at peak measured against the promise: :func:`simulate`, its result and the verdict.

A run is measured over its window (the warm-up discarded, arrivals followed until they finish or the drain cap
passes): TTFT, ITL pooled over token gaps, TPOT per request, requests in flight (Little's Law inside the run), KV
cache use, preemptions. It keeps the promise only when it is stable, its TTFT is within target and its ITL within
target or undefined.

References
----------
Little's Law (Little, Operations Research 9(3), 1961) holds inside the run and is tested.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from xlplan.plan.scenario import Scenario
from xlplan.simulate import order_stats
from xlplan.simulate.loop import _Run, _warmup_s
from xlplan.simulate.workload import SampledWorkload, Workload

STABLE_SPREAD = 0.10
"""A run is stable when p95 TTFT over the two halves of its measured window differ by at most this fraction of the
larger, or by at most this fraction of the TTFT target (or, see :func:`_steady`, when its growth carried on for twice the
run still keeps the target). [fraction]"""


@dataclass(frozen=True)
class Quantiles:
    """p50, p95, p99 of a sample. [unit of the sample]"""

    p50: float
    p95: float
    p99: float


@dataclass(frozen=True)
class KVUse:
    """Share of the KV cache in use, time-weighted over the measured window. [fraction]"""

    mean: float
    p95: float
    max: float


@dataclass(frozen=True)
class SimResult:
    """One run at peak. Units in the field comments."""

    gpus: int  # [GPUs]
    replicas: int  # [replicas]
    tp: int  # [GPUs per replica]
    requests: int  # measured: arrived after the warm-up [requests]
    simulated_s: float  # arrivals span [s]
    ttft_s: Quantiles  # [s]
    itl_s: Quantiles  # token gaps, pooled [s]
    tpot_s: Quantiles  # per request [s/token]
    mean_in_flight: float  # time average over the measured window [requests]
    mean_time_in_system_s: float  # over measured requests [s]
    arrival_rate_rps: float  # measured requests ÷ measured window [requests/s]
    kv_utilisation: KVUse  # [fraction]
    output_tok_s: float  # tokens generated per second over the measured window, every replica [tokens/s]
    preemptions: int  # [requests]
    percentile: float  # the promise's percentile [percent]
    meets_promise: bool  # TTFT and ITL at the percentile within the targets
    ttft_at_percentile_s: float  # [s]
    itl_at_percentile_s: float  # [s]
    stable: bool  # p95 TTFT over the two halves of the window within 10% (of the larger, or of the target)
    unfinished: int  # measured requests still unfinished at the drain cap [requests]
    itl_defined: bool = True  # some measured sequence decoded a second token (one-token outputs have no gaps) [bool]
    lost_replicas: int = 0  # replicas that failed at the start of the measured window [replicas]
    requeued: int = 0  # requests the failed replicas held, sent to the others to prefill again [requests]
    sampled_replicas: int = 0  # replicas simulated for the fleet (SampledWorkload); 0: every one [replicas]


def _fleet_run(s: Scenario, replicas: int, tp: int, workload, duration_s: float, lost: int) -> tuple[_Run, int]:
    """(run, replicas sampled): the run of ``replicas`` on ``workload``, or, on a :class:`SampledWorkload` of fewer
    replicas than the fleet, of the sample on its share (the loss as the survivors' share of the peak). [—]"""
    if isinstance(workload, SampledWorkload):
        if replicas > workload.replicas:
            share = workload.share(replicas, lost, _warmup_s(duration_s) if lost else math.inf)
            return _Run(s, workload.replicas, tp, share, duration_s, 0), workload.replicas
        workload = workload.share(replicas)
    return _Run(s, replicas, tp, workload, duration_s, lost), 0


def _as_fleet(r: SimResult, replicas: int, lost: int, sampled: int) -> SimResult:
    """A sample's run read as its fleet's: fleet-wide rates and in flight scaled by the serving replicas over the
    sample's (``(n − lost) ÷ k``); latencies, KV use and the verdict as measured. [SimResult]"""
    if not sampled:
        return r
    scale = (replicas - lost) / sampled
    return dataclasses.replace(r, gpus=replicas * r.tp, replicas=replicas, mean_in_flight=r.mean_in_flight * scale,
                               arrival_rate_rps=r.arrival_rate_rps * scale, output_tok_s=r.output_tok_s * scale,
                               lost_replicas=lost, sampled_replicas=sampled)


def simulate(s: Scenario, replicas: int, tp: int, workload: Workload, duration_s: float, percentile: float = 95.0,
             lost: int = 0) -> SimResult:
    """Serve ``workload`` on ``replicas`` replicas of ``tp`` GPUs at the plan's physics; measure against the promise.

    Parameters
    ----------
    s : Scenario
        The plan's numbers: the serving model's physics, the engine's budgets and the promise.
    replicas : int
        Replicas serving the workload, routed by the plan's rule (``policy.routing``). [replicas]
    tp : int
        GPUs per replica (tensor parallel). [GPUs]
    workload : Workload or SampledWorkload
        The requests to serve: arrival times and lengths; or a sample's, whose run of fewer replicas than the fleet
        is read as the fleet's (rates and in flight scaled to it, ``sampled_replicas`` set).
    duration_s : float
        Span of the arrivals measured; the warm-up and the drain cap follow from it. [s]
    percentile : float
        The promise's percentile at which TTFT and ITL are checked. [percent]
    lost : int
        Replicas that fail at the start of the measured window (the end of the warm-up: the start of the peak); the
        requests they held re-queue on the others and prefill again, and everything is measured after the loss.
        [replicas]

    Returns
    -------
    SimResult
        The run measured over its window: latency quantiles, in flight, KV use, preemptions, the verdict.

    Raises
    ------
    PlanningError
        When the weights leave no room for a KV cache at this TP degree.

    References
    ----------
    vLLM's V1 scheduler (vllm/v1/core/sched/scheduler.py): decodes first, chunked prefill in the remaining token
    budget, recompute preemption of the newest request; SGLang's scheduler (sgl-project/sglang scheduler.py ``get_next_batch_to_run``): prefill first, in steps of its own (an SGLang plan).
    """
    run, sampled = _fleet_run(s, replicas, tp, workload, duration_s, lost)
    run.run()
    return _as_fleet(_measure(s, len(run.reps), tp, run, percentile), replicas, lost, sampled)


@dataclass(frozen=True)
class ClosedLoopRun:
    """A closed loop served to the end: every request's times and every step's. Units in the field comments."""

    arrival_s: object  # array: when each request was sent, in order of request [s]
    first_token_s: object  # array: its first token (NaN: never) [s]
    finish_s: object  # array: its last token (NaN: never) [s]
    step_s: object  # array: each step's time, in order of start [s]
    step_decodes: object  # array: the sequences each step decoded [sequences]


def closed_loop(s: Scenario, replicas: int, tp: int, workload: Workload, clients: int,
                kv_gib: float | None = None) -> ClosedLoopRun:
    """Serve ``workload`` as a closed loop of ``clients``: the first ``clients`` requests at their given times (t = 0
    for a benchmark), each later one the moment a request finishes; every request followed to its end.

    Parameters
    ----------
    s : Scenario
        The plan's numbers: the serving model's physics and the engine's budgets.
    replicas : int
        Replicas serving, routed to least loaded. [replicas]
    tp : int
        GPUs per replica (tensor parallel). [GPUs]
    workload : Workload
        The requests, in the order the clients send them: lengths, and the first ``clients`` send times. [—]
    clients : int
        Requests kept in flight. [requests]
    kv_gib : float, optional
        The KV room per GPU where a benchmark's engine states its own; left out, the engine's rule at ``tp``. [GiB]

    Returns
    -------
    ClosedLoopRun
        Send, first-token and finish times per request and each step's time and decodes.

    Raises
    ------
    PlanningError
        When the weights leave no room for a KV cache at this TP degree.

    References
    ----------
    The closed loop of ``vllm bench serve --max-concurrency``, GuideLLM's concurrent profile and aiperf/genai-perf
    ``--concurrency``; the engine's schedule (vLLM's V1 scheduler, SGLang's prefill first) as
    :mod:`xlplan.simulate.scheduler` schedules it.
    """
    import numpy as np

    run = _Run(s, replicas, tp, workload, math.inf, 0, clients, kv_gib)
    run.warm, run.stop = 0.0, math.inf  # every step recorded; every request followed to its end
    run.run()
    return ClosedLoopRun(np.asarray(run.arrivals, dtype=float), np.asarray(run.first_token, dtype=float),
                         np.asarray(run.finish, dtype=float), np.asarray(run.step_t, dtype=float),
                         np.asarray(run.step_b, dtype=float))


def watched_verdict(s: Scenario, replicas: int, tp: int, workload: Workload, duration_s: float, percentile: float = 95.0,
             lost: int = 0) -> tuple[SimResult | None, bool]:
    """(run, verdict) of :func:`simulate`, where only the verdict is needed: the run stops once it has missed. [—]

    The same run as :func:`simulate`, watched: it stops as soon as the TTFT promise is missed whatever happens next,
    and then returns ``(None, False)``; otherwise it runs to the end and returns ``(result, result.meets_promise)``.
    So the verdict is always the full run's; only the figures of a run that missed are not computed.

    Why the miss is certain. Of the M measured requests (arrived in the window), at time T a request that got its
    first token has its final TTFT; one arrived at ``a`` still without one ends with TTFT at least ``min(T, duration)
    − a`` (its first token comes after T, or never, and then it counts up to the run's end, which is past the last
    arrival). Linear interpolation reads the sorted sample at positions ⌊h⌋ and ⌊h⌋ + 1, h = (M − 1)·p/100, and
    never returns less than the lower of the two. So once at least M − ⌊h⌋ + 1 measured TTFTs are certainly over
    the target (one more than needed, against rounding in h; and a 1e-9 relative margin on each bound), p-th
    percentile TTFT is over it, and :func:`verdict` is False however stable the run or whatever its ITL. Counted:
    the requests whose first token came over the target, and, as a lower bound on the late ones, those arrived
    before ``min(T, duration) − target`` less those whose first token came within it. Checked at each arrival.

    Parameters
    ----------
    s : Scenario
        The plan's numbers, as for :func:`simulate`; its ``ttft_s`` is the target watched.
    replicas : int
        Replicas serving the workload. [replicas]
    tp : int
        GPUs per replica. [GPUs]
    workload : Workload or SampledWorkload
        The requests to serve, or a sample's (as :func:`simulate` reads it).
    duration_s : float
        Span of the arrivals measured. [s]
    percentile : float
        The promise's percentile. [percent]
    lost : int
        Replicas that fail at the start of the measured window. [replicas]

    Returns
    -------
    tuple
        The run (None when stopped early) and whether it keeps the promise. [SimResult or None, bool]
    """
    run, sampled = _fleet_run(s, replicas, tp, workload, duration_s, lost)
    run.watch_ttft_s = float(s.ttft_s)
    run.percentile = float(percentile)
    run.run()
    if run.decided_miss:
        return None, False
    r = _as_fleet(_measure(s, len(run.reps), tp, run, percentile), replicas, lost, sampled)
    return r, r.meets_promise


def _quantiles(x) -> Quantiles:
    """p50, p95 and p99 of a sample; NaN for an empty one. [unit of the sample]"""
    import numpy as np

    if len(x) == 0:
        return Quantiles(math.nan, math.nan, math.nan)
    q = np.percentile(x, [50, 95, 99])
    return Quantiles(float(q[0]), float(q[1]), float(q[2]))


def _pooled_percentiles(values, counts, qs) -> list[float]:
    """``np.percentile(np.repeat(values, counts), qs)`` to the last bit, without building the repeated array. [unit of values]

    The pooled ITL sample repeats each step's duration once per sequence it advanced: tens of millions of entries on
    a large fleet, most of a run's measuring time. Linear interpolation (numpy's default) reads only the two order
    statistics either side of the virtual index ``(N − 1)·q/100``; each is found by the cumulative counts
    (:func:`xlplan.simulate.order_stats.value_at_weight`, which sorts only the values near the rank), and interpolated with numpy's own formula (``_lerp``), so the figures are unchanged.

    Parameters
    ----------
    values : array
        The sample's values, each standing for ``counts`` entries. [unit of the sample]
    counts : array
        How many times each value occurs, whole and non-negative. [entries]
    qs : sequence of float
        The percentiles. [percent]

    Returns
    -------
    list of float
        The sample's percentile at each of ``qs``; NaN for an empty sample. [unit of the sample]
    """
    import numpy as np

    values = np.asarray(values, dtype=float)
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return [math.nan for _ in qs]
    hs = [(total - 1) * (q / 100.0) for q in qs]  # numpy: (n − 1) × true_divide(q, 100)
    ranks = sorted({j for h in hs for j in ((total - 1,) if h >= total - 1 else (math.floor(h), math.floor(h) + 1))})
    # the j-th entry (from 0) of the sorted repeated sample is the first value whose cumulative count reaches j + 1
    at = dict(zip(ranks, order_stats.value_at_weight(values, counts, [j + 1 for j in ranks])))
    out = []
    for h in hs:
        if h >= total - 1:
            out.append(at[total - 1])
            continue
        lo = math.floor(h)
        gamma = h - lo
        a, b = np.float64(at[lo]), np.float64(at[lo + 1])
        diff = b - a
        out.append(float(b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma))
    return out


def _weighted_percentile(values, weights, q: float) -> float:
    """The ``q``-th percentile of ``values`` weighted by ``weights`` (the first value whose cumulative weight reaches
    it); NaN when the weights sum to nothing. [unit of values]"""
    import numpy as np

    values, weights = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    if weights.sum() <= 0:
        return math.nan
    return order_stats.value_at_weight(values, weights, [q / 100.0 * weights.sum()])[0]


def _measure(s: Scenario, replicas: int, tp: int, run: _Run, percentile: float) -> SimResult:
    """A finished run measured over its window, against the promise at ``percentile``. [SimResult]"""
    import numpy as np

    arr = run.arrivals
    first = np.asarray(run.first_token, dtype=float)
    fin = np.asarray(run.finish, dtype=float)
    end = min(run.stop, max(np.nanmax(fin) if np.isfinite(fin).any() else run.duration, run.duration))
    sel = (arr >= run.warm) & (arr < run.duration)
    ttft = np.where(np.isnan(first), end - arr, first - arr)[sel]
    out = run.output0[sel]
    done = sel & ~np.isnan(fin)
    tpot = ((fin - first)[done] / np.maximum(run.output0[done] - 1, 1))[run.output0[done] > 1]
    t_in = np.where(np.isnan(fin), end, fin) - arr
    # ITL pooled over token gaps: each measured step once per sequence it advanced, plus the gaps across preemptions
    # (the pooled sample is never built: its percentiles come from the steps' durations and their counts)
    step_t = np.frombuffer(run.step_t, dtype=float) if len(run.step_t) else np.zeros(0)
    step_b = np.frombuffer(run.step_b, dtype=np.int64) if len(run.step_b) else np.zeros(0, dtype=np.int64)
    gap_values, gap_counts = step_t, step_b
    if len(run.pause_idx):  # prefill first: that many of a step's gaps also span the prefill steps before it
        gap_counts = step_b.copy()
        p_n = np.asarray(run.pause_n, dtype=np.int64)
        np.subtract.at(gap_counts, np.asarray(run.pause_idx, dtype=np.int64), p_n)
        gap_values = np.concatenate([step_t, np.asarray(run.pause_gap, dtype=float)])
        gap_counts = np.concatenate([gap_counts, p_n])
    if run.gaps_extra:
        gap_values = np.concatenate([gap_values, np.asarray(run.gaps_extra, dtype=float)])
        gap_counts = np.concatenate([gap_counts, np.ones(len(run.gaps_extra), dtype=np.int64)])
    n_gaps = int(gap_counts.sum())
    itl_50, itl_95, itl_99, itl_q = _pooled_percentiles(gap_values, gap_counts, [50.0, 95.0, 99.0, percentile])
    # Little's Law inside the run: the time average of requests in the system over the measured window
    lo, hi = run.warm, run.duration
    overlap = np.clip(np.minimum(np.where(np.isnan(fin), end, fin), hi) - np.maximum(arr, lo), 0.0, None)
    in_flight = float(overlap.sum() / (hi - lo))
    kv_w = step_t
    kv_held = np.frombuffer(run.kv_held, dtype=float) if len(run.kv_held) else np.zeros(0)
    kv_u = np.minimum(kv_held / run.cap, 1.0)  # as min(held / cap, 1) per step
    ttft_q = float(np.percentile(ttft, percentile)) if len(ttft) else math.nan
    mid = (lo + hi) / 2.0
    a1, a2 = ttft[arr[sel] < mid], ttft[arr[sel] >= mid]
    if len(a1) and len(a2):
        stable = _steady(float(np.percentile(a1, 95)), float(np.percentile(a2, 95)), s.ttft_s)
    else:
        stable = False
    del out
    return SimResult(
        gpus=replicas * tp, replicas=replicas, tp=tp, requests=int(sel.sum()), simulated_s=run.duration,
        ttft_s=_quantiles(ttft), itl_s=Quantiles(itl_50, itl_95, itl_99), tpot_s=_quantiles(tpot), mean_in_flight=in_flight,
        mean_time_in_system_s=float(t_in[sel].mean()) if sel.any() else math.nan,
        arrival_rate_rps=float(sel.sum() / (hi - lo)),
        output_tok_s=float((int(step_b.sum()) + run.first_in_window) / (hi - lo)),
        kv_utilisation=KVUse(float((kv_u * kv_w).sum() / kv_w.sum()) if kv_w.sum() > 0 else math.nan,
                             _weighted_percentile(kv_u, kv_w, 95), float(kv_u.max()) if len(kv_u) else math.nan),
        preemptions=run.preemptions, percentile=percentile,
        meets_promise=verdict(ttft_q, itl_q, n_gaps > 0, stable, s.ttft_s, s.itl_s),
        ttft_at_percentile_s=ttft_q, itl_at_percentile_s=itl_q,
        stable=stable, unfinished=int((sel & np.isnan(fin)).sum()), itl_defined=n_gaps > 0,
        lost_replicas=run.lost, requeued=run.requeued,
    )


def _steady(h1_s: float, h2_s: float, ttft_target_s: float) -> bool:
    """Whether a run's p95 TTFT is not running away: its two halves agree within :data:`STABLE_SPREAD`, or the rise
    from the first half to the second, carried on at the same pace for twice the run (two more rises: h2 + 2 (h2 − h1)),
    still keeps the TTFT target.

    A queue that grows without bound (arrivals past the fleet's rate) raises TTFT in proportion to time, so its halves
    part by far more than the target allows (seconds against tens of seconds) and both tests fail; the p95 of half a run
    of a heavy-tailed workload moves by more than 10% from sampling alone, and the projection keeps that noise from
    failing a fleet whose TTFT is well inside the target (a fleet would otherwise pass at a higher rate and fail at a
    lower one).

    Parameters
    ----------
    h1_s, h2_s : float
        p95 TTFT over the first and the second half of the measured window. [s]
    ttft_target_s : float
        The promise's TTFT. [s]

    Returns
    -------
    bool
        Steady. [bool]

    Examples
    --------
    >>> _steady(0.571, 0.682, 1.0)   # +0.111 s: more than 10% of the 1 s target, but 0.682 + 0.222 = 0.904 <= 1 s
    True
    >>> _steady(4.43, 31.8, 1.0)     # a queue growing without bound
    False
    >>> _steady(0.60, 0.75, 1.0)     # 0.75 + 0.30 = 1.05 s would pass the target
    False
    """
    rise = h2_s - h1_s
    return bool(abs(rise) <= STABLE_SPREAD * max(h1_s, h2_s, ttft_target_s) or h2_s + 2.0 * max(rise, 0.0) <= ttft_target_s)


def verdict(ttft_q_s: float, itl_q_s: float, itl_defined: bool, stable: bool, ttft_target_s: float, itl_target_s: float) -> bool:
    """Whether one run keeps the promise: TTFT and ITL at the percentile within the targets, in a steady state.

    Parameters
    ----------
    ttft_q_s : float
        TTFT at the promise's percentile; NaN when no request was measured. [s]
    itl_q_s : float
        Inter-token gap at the percentile; NaN when no sequence decoded a second token. [s]
    itl_defined : bool
        Whether any token gap was measured. With one-token outputs there is none: ITL is undefined, not missed. [bool]
    stable : bool
        Whether p95 TTFT over the two halves of the measured window is not running away (:func:`_steady`). [bool]
    ttft_target_s : float
        The promise's TTFT. [s]
    itl_target_s : float
        The promise's inter-token gap. [s]

    Returns
    -------
    bool
        True only when TTFT is within its target, ITL is within its target or undefined, and the run is stable: a
        queue still growing at the end of the window has not shown its percentile, so it never passes. [bool]
    """
    itl_ok = (not itl_defined) or itl_q_s <= itl_target_s
    return bool(ttft_q_s <= ttft_target_s and itl_ok and stable)
