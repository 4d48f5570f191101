"""Does the plan's fleet keep the promise at peak? The verification: the verified load, the runbook's, one replica down.

:func:`verify` simulates the closed form's fleet sizes at the plan's peak (:mod:`xlplan.simulate.search`), the runbook's
load, the runbook's fleet with a replica failing at the start of the peak and the fewest replicas that survive losing
the plan's redundancy, and says in sentences what each run found, beside the runbook's figures.

References
----------
Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable: 4 for the load, +1 for
N+1 … buy a node of 8": the load the simulation starts from.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from xlplan import words
from xlplan.plan import scenario
from xlplan.plan.scenario import Scenario, chunk_tokens
from xlplan.schema import steps as step_results
from xlplan.serving import engines
from xlplan.simulate.run import SimResult, simulate
from xlplan.simulate.search import VERIFY_SEEDS, Search, _survives_loss, on_every_seed, search
from xlplan.simulate.workload import DEFAULT_SEED, MAX_REQUESTS, Workload, verification_minutes, verification_workload

SMALLEST_STEP_BUDGET = 256
"""The smallest step token budget the advice suggests: where the inter-token promise is missed at the load and the
plan's budget is above this, a smaller ``policy.max_num_batched_tokens`` is named as the lever (shorter prefill
chunks stall each decode step less). [tokens]"""


def point(r: SimResult):
    """One run as a point of the simulated curve the result carries. [SimulatedPoint]

    Parameters
    ----------
    r : SimResult
        The run.

    Returns
    -------
    xlplan.schema.result.SimulatedPoint
        Its fleet size, p95 and at-percentile latencies, verdict, mean in flight, KV use, preemptions, stability.
    """
    from xlplan.schema.result import SimulatedPoint

    return SimulatedPoint(gpus=r.gpus, replicas=r.replicas, ttft_p95_s=r.ttft_s.p95, itl_p95_s=r.itl_s.p95,
                          ttft_at_percentile_s=r.ttft_at_percentile_s, itl_at_percentile_s=r.itl_at_percentile_s,
                          meets_promise=r.meets_promise, mean_in_flight=r.mean_in_flight,
                          kv_utilisation_mean=r.kv_utilisation.mean, preemptions=r.preemptions, stable=r.stable)


def _missed(s: Scenario, r: SimResult) -> str:
    """'the TTFT promise (p95 1.3 s)', 'the inter-token promise (p95 62 ms)' or both. [text]"""
    q = f"p{r.percentile:g}"
    parts = []
    if not r.ttft_at_percentile_s <= s.ttft_s:
        parts.append(("TTFT", f"{q} {_secs(r.ttft_at_percentile_s)}"))
    if r.itl_defined and not r.itl_at_percentile_s <= s.itl_s:
        parts.append(("inter-token", f"{q} {_secs(r.itl_at_percentile_s)}"))
    if not parts:  # within both targets, but the queue had not settled
        return (f"a steady state (p{r.percentile:g} TTFT {_secs(r.ttft_at_percentile_s)} still moving between the "
                "halves of the run)")
    if len(parts) == 1:
        return f"the {parts[0][0]} promise ({parts[0][1]})"
    return f"the TTFT and inter-token promises ({parts[0][1]}, {parts[1][1]})"


def _itl(r: SimResult) -> str:
    """The run's inter-token gap at the percentile, or why there is none. [text]"""
    return _secs(r.itl_at_percentile_s) if r.itl_defined else "undefined (one-token outputs)"


def _secs(x: float) -> str:
    """0.0234 -> '23 ms', 1.31 -> '1.3 s', 75 -> '75 s'. [text]"""
    if not math.isfinite(x):
        return "never"
    if x < 1.0:
        return f"{x * 1000:.0f} ms"
    return f"{x:.2g} s" if x < 10 else f"{x:,.0f} s"


def _gpus(n: int) -> str:
    """1 -> '1 GPU', 4 -> '4 GPUs'. [text]"""
    return words.count(n, "GPU")


def verify(s: Scenario, sol: step_results.Solution, percentile: float = 95.0, minutes: float | None = None, seed: int = DEFAULT_SEED,
           cv2: float = 1.0, max_context: int | None = None, workload: Workload | None = None, arrivals: str | None = None,
           start_replicas: int | None = None, tp: int | None = None, sample: int | None = None):
    """Simulate the plan's fleet at peak: the verified load, the runbook's load, and one replica down.

    Parameters
    ----------
    s : Scenario
        The plan's numbers: physics, engine budgets, promise, peak rate and redundancy.
    sol : steps.Solution
        The closed form's solution: its TP degree and load are simulated.
    percentile : float
        The promise's percentile. [percent]
    minutes : float, optional
        Span of each run's arrivals; left out, :func:`xlplan.simulate.workload.default_minutes`, held to :data:`MAX_REQUESTS`. [minutes]
    seed : int
        Seed of the random generator: every fleet size sees the same requests. [1]
    cv2 : float
        Squared coefficient of variation of the gaps between arrivals: 1 Poisson, above 1 bursty (gamma). [1]
    max_context : int, optional
        The model's context limit, for clipping lengths. [tokens]
    workload : Workload, optional
        The requests to serve (a replayed or resampled log); left out, drawn by :func:`verification_workload`.
    arrivals : str, optional
        How the arrivals are described in the sentence; left out, 'Poisson arrivals' or 'bursty arrivals (…)'.
    start_replicas : int, optional
        Where the search for the verified load starts: the closed form's load (the queueing path included); left
        out, the runbook's load. [replicas]
    tp : int, optional
        GPUs per replica of the fleet searched (the closed form's degree, which may differ from the runbook's); left
        out, the runbook's. The runbook's own fleet and its failure check are simulated at the runbook's degree. [GPUs]
    sample : int, optional
        Replicas each run simulates for its fleet (0: every replica); left out, every replica up to
        :data:`xlplan.simulate.workload.SAMPLE_ABOVE_REPLICAS` at the start, else
        :func:`xlplan.simulate.workload.sample_replicas`. Ignored with a given ``workload``. [replicas]

    Returns
    -------
    xlplan.schema.result.VerifiedOut
        The runbook's figures stay as they are; these sit beside them.

    References
    ----------
    Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable: 4 for the load, +1 for
    N+1 … buy a node of 8": the load the simulation starts from.
    vLLM's V1 scheduler (vllm/v1/core/sched/scheduler.py): decodes first, chunked prefill in the remaining token
    budget, recompute preemption of the newest request.
    """
    tp = int(sol.paths.tp) if tp is None else int(tp)
    start = start_replicas or int(round(sol.paths.load / int(sol.paths.tp)))
    if workload is None:  # the run's seed and the next ones
        minutes = _verify_minutes(s, start, sample) if minutes is None else minutes
        workloads = [verification_workload(s, minutes, seed + k, cv2, max_context, start, sample)
                     for k in range(VERIFY_SEEDS)]
    else:
        minutes = _verify_minutes(s, start, 0) if minutes is None else minutes
        workloads = [workload]
    vr = _verification_runs(s, sol, tp, workloads, minutes * 60.0, percentile, start_replicas)
    how = arrivals or ("Poisson arrivals" if cv2 == 1.0 else f"bursty arrivals (squared CV {cv2:g})")
    return _verified_out(s, sol, vr, tp, how, cv2, minutes, seed, len(workloads), percentile)


def _verify_minutes(s: Scenario, start_replicas: int, sample: int | None) -> float:
    """A verification run's span at the rate it serves (:func:`verification_minutes`); PlanningError under one
    minute. [minutes]"""
    minutes = verification_minutes(s, start_replicas, sample)
    if minutes < 1.0:
        raise scenario.PlanningError(f"--verify: at {s.peak_rps:,.6g} requests/s one minute of peak is "
                                  f"{s.peak_rps * 60:,.0f} requests, past the {MAX_REQUESTS:,} one run may hold; "
                                  "expected a peak under 33,000 requests/s (simulate a share of the fleet with "
                                  "`xlplan simulate` on a plan with that share of the peak)")
    return minutes


@dataclass(frozen=True)
class _Verification:
    """The runs a verification reads. Units in the field comments."""

    found: Search  # the fewest replicas keeping the promise on every seed, at the searched degree
    runs: dict  # replicas -> SimResult: the first seed's full runs at the searched degree
    at_load: SimResult  # the runbook's load, at the runbook's degree
    failed: SimResult  # the runbook's fleet with redundancy, one replica failing at the start of the peak
    with_redundancy: int | None  # the fewest replicas keeping it with the redundancy lost [replicas]
    lossy: SimResult | None  # their run on the first seed
    load_reps: int  # the runbook's load [replicas]
    rb_tp: int  # the runbook's degree [GPUs per replica]
    red: int  # the plan's redundancy [replicas]


def _verification_runs(s: Scenario, sol: step_results.Solution, tp: int, workloads: list, duration_s: float, percentile: float,
                       start_replicas: int | None) -> _Verification:
    """Every run of a verification: the search on the first workload confirmed on the others, the runbook's load,
    its fleet with a replica lost, and the fleet surviving the redundancy's loss. [_Verification]"""
    rb_tp = int(sol.paths.tp)  # the runbook's fleet is simulated as the runbook builds it
    load_reps = int(round(sol.paths.load / rb_tp))
    red = int(s.redundancy)
    wl, others = workloads[0], workloads[1:]
    runs: dict = {}
    found = search(s, tp, wl, duration_s, start_replicas or load_reps, percentile, runs)
    if found.verified_replicas is not None and others:
        found = dataclasses.replace(found, verified_replicas=on_every_seed(
            s, tp, wl, others, duration_s, percentile, found.verified_replicas, found.cap_replicas, runs))
    same_tp = rb_tp == tp
    if same_tp and load_reps not in runs:
        runs[load_reps] = simulate(s, load_reps, tp, wl, duration_s, percentile)
    at_load = runs[load_reps] if same_tp else simulate(s, load_reps, rb_tp, wl, duration_s, percentile)
    # the failure check: the runbook's fleet with redundancy, one replica failing at the start of the peak
    fail_fleet = load_reps + red
    failed = simulate(s, fail_fleet, rb_tp, wl, duration_s, percentile, lost=1 if fail_fleet > 1 else 0)
    known = {fail_fleet: failed} if (failed.lost_replicas == red and same_tp) else {}  # one of its runs
    n_red, lossy = _survives_loss(s, tp, workloads, duration_s, percentile, found.verified_replicas, red,
                                  found.cap_replicas, known)
    return _Verification(found, runs, at_load, failed, n_red, lossy, load_reps, rb_tp, red)


def _verified_out(s: Scenario, sol: step_results.Solution, vr: _Verification, tp: int, how: str, cv2: float, minutes: float,
                  seed: int, n_seeds: int, percentile: float):
    """The verification's figures and sentences, beside the runbook's. [xlplan.schema.result.VerifiedOut]"""
    from xlplan.schema.result import VerifiedOut

    v, runs, failed, lossy, red = vr.found.verified_replicas, vr.runs, vr.failed, vr.lossy, vr.red
    rb, rb_red = vr.load_reps * vr.rb_tp, (vr.load_reps + red) * vr.rb_tp
    fail_reps = vr.load_reps + red - failed.lost_replicas
    seeds = [seed + k for k in range(n_seeds)]
    on = (f" (on each of seeds {', '.join(map(str, seeds[:-1]))} and {seeds[-1]})" if len(seeds) > 1 else "")
    ver = runs[v] if v is not None else None
    n_red = vr.with_redundancy
    return VerifiedOut(
        arrivals=how, burst_cv2=cv2, minutes=minutes, seed=seed, chunk_tokens=chunk_tokens(s), percentile=percentile,
        routing=s.routing, sampled_replicas=_sampled(vr),
        runbook_load=rb, runbook_with_redundancy=rb_red, meets_promise_at_load=vr.at_load.meets_promise,
        load=v * tp if v is not None else None, with_redundancy=n_red * tp if n_red is not None else None,
        ttft_p95_s=ver.ttft_s.p95 if ver else None, itl_p95_s=ver.itl_s.p95 if ver else None,
        searched_up_to=max(runs) * tp, failure_gpus=fail_reps * vr.rb_tp, failure_meets_promise=failed.meets_promise,
        failure_ttft_p95_s=failed.ttft_s.p95, failure_itl_p95_s=failed.itl_s.p95,
        curve=[point(runs[n]) for n in sorted(runs)],
        sentence=_load_sentence(s, vr, tp, rb, rb_red, sol.paths.purchased, how, minutes, seed, on, percentile),
        failure_sentence=_failure_sentence(s, failed, fail_reps * vr.rb_tp, rb_red, percentile),
        seeds=seeds, redundancy_lost_replicas=red,
        redundancy_ttft_p95_s=lossy.ttft_s.p95 if lossy is not None else None,
        redundancy_itl_p95_s=lossy.itl_s.p95 if lossy is not None else None,
        redundancy_sentence=_redundancy_sentence(vr, tp, on, percentile),
        schedule="prefill_first" if engines.prefill_first(s.engine) else "mixed",
    )


def _sampled(vr: _Verification) -> int | None:
    """Replicas the runs simulated for their fleets, where any run was a sample's; None where every replica ran. [replicas]"""
    runs = [*vr.runs.values(), vr.at_load, vr.failed] + ([vr.lossy] if vr.lossy is not None else [])
    return max((r.sampled_replicas for r in runs), default=0) or None


def _load_sentence(s: Scenario, vr: _Verification, tp: int, rb: int, rb_red: int, purchased: float, how: str,
                   minutes: float, seed: int, on: str, percentile: float) -> str:
    """Whether the runbook's load keeps the promise, and from how many GPUs it holds. [text]"""
    at_load, v, red, cap = vr.at_load, vr.found.verified_replicas, vr.red, vr.found.cap_replicas
    if tp != vr.rb_tp:  # the fleet searched runs another degree than the runbook's: say which
        on = f" at TP {tp}{on}"
    whose = "the runbook's" if s.engine == "runbook" else "the runbook method's"  # its fleet, on the engine's conventions
    k = _sampled(vr)
    sample = f", {words.count(k, 'replica')} sampled of each fleet with their share of the peak" if k else ""
    head = f"Simulated at peak ({how}, {minutes:.3g} min, seed {seed}{sample}): {whose} {_gpus(rb)}"
    if at_load.meets_promise and v is not None and v * tp <= rb:
        spare = ", so the redundancy stays spare at peak." if red else "; the plan keeps no redundancy."
        sentence = (f"{head} {words.verb(rb, 'keeps', 'keep')} the promise (p{percentile:g} TTFT {_secs(at_load.ttft_at_percentile_s)}, "
                    f"inter-token {_itl(at_load)}); it holds from {_gpus(v * tp)}{on}{spare}")
    elif at_load.meets_promise and v is not None:  # on this seed, not on every one
        sentence = (f"{head} {words.verb(rb, 'keeps', 'keep')} the promise on this seed (p{percentile:g} TTFT "
                    f"{_secs(at_load.ttft_at_percentile_s)}) but not on every seed; it holds from {v * tp}{on}"
                    + _redundancy_tail(v * tp, rb_red, red, tp, v, purchased))
    elif v is None:
        sentence = (f"{head} {words.verb(rb, 'misses', 'miss')} {_missed(s, at_load)}, and no fleet up to {_gpus(cap * tp)} keeps it: "
                    "adding replicas does not shorten one replica's steps; change the promise, the hardware or the model.")
    else:
        sentence = (f"{head} {words.verb(rb, 'misses', 'miss')} {_missed(s, at_load)}; it holds from {v * tp}{on}"
                    + _redundancy_tail(v * tp, rb_red, red, tp, v, purchased))
    chunk = chunk_tokens(s)
    if at_load.itl_defined and not at_load.itl_at_percentile_s <= s.itl_s and chunk > SMALLEST_STEP_BUDGET:
        sentence += (f" Long prefill steps stall decoding: a smaller policy.max_num_batched_tokens (now {chunk:,}) spreads "
                     "each prompt over more, shorter steps.")
    return sentence


def _redundancy_tail(held: int, rb_red: int, red: int, tp: int, v: int, purchased: float) -> str:
    """What the fleet that holds (``held`` GPUs, above the runbook's load) leaves of the runbook's redundancy. [text]"""
    if red == 0:
        return ", more than the runbook's load, and the plan keeps no redundancy to absorb it."
    if held <= rb_red:
        spare = "the redundancy GPU is" if red * tp == 1 else "the redundancy is"
        return f", so {spare} needed at peak" + (" (no spare is left for a failure)." if held == rb_red else ".")
    return (f", {_gpus(held - rb_red)} more than the {rb_red} with redundancy"
            + (f" (the {int(purchased)} purchased cover it)." if purchased >= (v + red) * tp
               else f"; with redundancy the fleet needs at least {(v + red) * tp}."))


def _failure_sentence(s: Scenario, failed: SimResult, left_gpus: int, rb_red: int, percentile: float) -> str:
    """Whether the runbook's fleet with redundancy keeps the promise with one replica lost at the start of the
    peak. [text]"""
    down = (f"With one replica lost at the start of the peak ({left_gpus} of {_gpus(rb_red)} left, "
            f"{_requeued(failed)})" if failed.lost_replicas else f"With no replica to spare ({_gpus(rb_red)})")
    if failed.meets_promise:
        return (f"{down} the promise holds (p{percentile:g} TTFT {_secs(failed.ttft_at_percentile_s)}, "
                f"inter-token {_itl(failed)}).")
    return f"{down} it misses {_missed(s, failed)}."


def _redundancy_sentence(vr: _Verification, tp: int, on: str, percentile: float) -> str:
    """How many GPUs keep the promise with the plan's redundancy lost at the start of the peak. [text]"""
    v, red, n_red, lossy = vr.found.verified_replicas, vr.red, vr.with_redundancy, vr.lossy
    lost_words = "one replica" if red == 1 else words.count(red, "replica")
    if v is None:
        return ""
    if red == 0:
        return "The plan keeps no redundancy: a replica lost at peak is capacity lost."
    if n_red is None:
        return (f"No fleet up to {_gpus(vr.found.cap_replicas * tp)} keeps the promise with {lost_words} lost at the "
                "start of the peak.")
    return (f"{n_red * tp} {words.verb(n_red * tp, 'keeps', 'keep')} the promise{on} with {lost_words} lost at the start of the peak (p{percentile:g} TTFT "
            f"{_secs(lossy.ttft_at_percentile_s)}, inter-token {_itl(lossy)}; {_requeued(lossy)}), measured over the "
            "window after the loss.")


def _requeued(r) -> str:
    """What a loss run did with the lost replicas' requests: '12 requests re-queued to prefill again', or, in a
    sampled run, that the survivors took the lost replicas' share. [text]"""
    if r.sampled_replicas:
        return "the survivors' share of the peak rising from the loss; the lost replicas' requests not replayed"
    return f"{words.count(r.requeued, 'request')} re-queued to prefill again"
