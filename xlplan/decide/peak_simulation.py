"""The plan's fleet at peak, simulated: what `xlplan simulate` computes, as one function with a typed result.

:func:`simulate_peak` decides the fleet `plan` simulates (the closed form's, at its TP degree and the step budget it
deploys), builds the arrivals (Poisson or gamma at the plan's peak, a request log's lengths resampled at that peak,
or the log's busiest minutes replayed), runs the discrete-event simulation and, when asked, the search for the
fewest GPUs that keep the promise. It answers a :class:`PeakSimulation`: the command prints it and ``--json`` dumps
:meth:`PeakSimulation.as_json`. Nothing here reads a file: a request log comes as a function the caller passes,
called only once the run needs it (after every check that comes before it), so the errors come in the command's order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from xlplan import words


class RunRefused(ValueError):
    """A run the plan or the options cannot give, said in one line.

    ``subject`` names what is at fault: an option (``--gpus``, ``--minutes``), the request log by its name, or None
    for the plan itself; ``problem`` says what was found and what was expected.
    """

    def __init__(self, subject: str | None, problem: str):
        self.subject, self.problem = subject, problem
        super().__init__(problem)


@dataclass(frozen=True)
class LoggedRequests:
    """A request log's requests, as the simulation replays or resamples them. Units in the field comments."""

    name: str  # the log, as messages name it [text]
    t_s: object  # arrival times, numpy array [s]
    prompt: object  # prompt lengths [tokens]
    output: object  # output lengths [tokens]


@dataclass(frozen=True)
class PeakSimulation:
    """One simulated run of the plan's fleet at peak, the search beside it when asked. Units in the field comments."""

    run: object  # xlplan.simulate.run.SimResult: the run at the GPUs asked for
    search: object | None  # xlplan.simulate.search.Search, or None without --search
    tp: int  # the setting's TP degree: the Answer's with a search, else the closed form's [GPUs per replica]
    load_replicas: int  # the closed form's load at that setting [replicas]
    runbook_load_gpus: int  # the runbook's method's load [GPUs]
    ttft_target_s: float  # the promise's TTFT target [s]
    itl_target_s: float  # the promise's inter-token target [s]
    percentile: float  # the promise's percentile [percent]
    minutes: float  # minutes of arrivals simulated (replayed: the log's span, if shorter) [min]
    seed: int  # random seed [1]
    burst_cv2: float  # squared coefficient of variation of the gaps between arrivals [1]
    chunk_tokens: int  # the step budget of chunked prefill [tokens]
    arrivals: str | None  # where the arrivals come from, for a log; None: Poisson or gamma at the plan's peak [text]
    search_seeds: tuple = ()  # seeds the search's answer holds on, all of them (plan's rule); empty: one run (a log) [1]
    routing: str = "least_loaded"  # the load balancer simulated (policy.routing) [text]

    def shown_runs(self) -> list:
        """The search's runs beside its answer: the verified fleet and one replica fewer (else the largest tried).

        Returns
        -------
        list of xlplan.simulate.run.SimResult
            Empty without a search.
        """
        if self.search is None:
            return []
        v, runs = self.search.verified_replicas, self.search.runs
        shown = [n for n in (v - 1, v) if n and n in runs] if v is not None else sorted(runs)[-1:]
        return [runs[n] for n in shown]

    def curve(self) -> list:
        """The search's runs as points, fewest GPUs first: what ``--picture`` draws.

        Returns
        -------
        list of xlplan.schema.result.SimulatedPoint
            Empty without a search.
        """
        from xlplan.simulate import verify

        return [] if self.search is None else [verify.point(x) for _, x in sorted(self.search.runs.items())]

    def as_json(self) -> dict:
        """The run under the keys ``xlplan simulate --json`` prints (units in the names), NaN and infinity as null.

        Returns
        -------
        dict
            The run's figures, the run's settings, and with a search ``verified_load_gpus``,
            ``searched_up_to_gpus`` and ``runs``.
        """
        out = run_json(self.run)
        out.update({"minutes": self.minutes, "seed": self.seed, "burst_cv2": self.burst_cv2, "chunk_tokens": self.chunk_tokens,
                    "arrivals": self.arrivals or ("poisson" if self.burst_cv2 == 1.0 else "gamma"), "routing": self.routing})
        if self.search is not None:
            v = self.search.verified_replicas
            out["verified_load_gpus"] = v * self.tp if v is not None else None
            out["verified_on_seeds"] = list(self.search_seeds)
            out["searched_up_to_gpus"] = max(self.search.runs) * self.tp
            out["runs"] = [run_json(r) for r in self.shown_runs()]
        return finite_json(out)


def _quantiles(q) -> dict:
    """p50, p95 and p99 by name."""
    return {"p50": q.p50, "p95": q.p95, "p99": q.p99}


def run_json(r) -> dict:
    """One run under the JSON keys of ``xlplan simulate --json`` (units in the names).

    Parameters
    ----------
    r : xlplan.simulate.run.SimResult
        The run.

    Returns
    -------
    dict
        Its fleet, requests, latency quantiles, in-flight and KV figures, preemptions and verdict.
    """
    return {
        "gpus": r.gpus, "replicas": r.replicas, "tp": r.tp, "requests": r.requests, "simulated_s": r.simulated_s,
        "ttft_s": _quantiles(r.ttft_s), "itl_s": _quantiles(r.itl_s), "tpot_s": _quantiles(r.tpot_s),
        "mean_in_flight": r.mean_in_flight, "mean_time_in_system_s": r.mean_time_in_system_s,
        "kv_utilisation": {"mean": r.kv_utilisation.mean, "p95": r.kv_utilisation.p95, "max": r.kv_utilisation.max},
        "preemptions": r.preemptions, "meets_promise": r.meets_promise, "percentile": r.percentile,
        "ttft_at_percentile_s": r.ttft_at_percentile_s, "itl_at_percentile_s": r.itl_at_percentile_s,
        "arrival_rate_rps": r.arrival_rate_rps, "stable": r.stable, "unfinished": r.unfinished,
        "sampled_replicas": r.sampled_replicas or None,
    }


def finite_json(x):
    """NaN and infinity as null (JSON has neither): a quantile of nothing, a request that never started.

    Parameters
    ----------
    x : dict, list or scalar
        Parsed JSON-like data.

    Returns
    -------
    dict, list or scalar
        The same data with every non-finite float replaced by None.
    """
    if isinstance(x, dict):
        return {k: finite_json(v) for k, v in x.items()}
    if isinstance(x, list):
        return [finite_json(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def simulate_peak(plan, gpus: int | None = None, minutes: float | None = None, seed: int = 1, burst_cv2: float = 1.0,
                  search: bool = False, log: Callable[[], LoggedRequests] | None = None, resample: bool = False) -> PeakSimulation:
    """The plan's fleet at peak by discrete-event simulation of continuous batching, and the search when asked.

    Parameters
    ----------
    plan : xlplan.schema.plan.Plan
        The plan, validated.
    gpus : int, optional
        GPUs serving the peak, whole replicas of the setting's TP; None: the closed form's load at that setting (with
        ``search``, the Answer's setting, which the configuration search chose; else the closed form's own). [GPUs]
    minutes : float, optional
        Minutes of arrivals, warm-up included; None: the run's default (a log replayed: its busiest 10). [min]
    seed : int
        Random seed; the same seed gives the same run. [1]
    burst_cv2 : float
        Squared coefficient of variation of the gaps between arrivals: 1 is Poisson, 4 bursty. [1]
    search : bool
        Also find the fewest GPUs that keep the promise. [bool]
    log : callable, optional
        Reads the request log when the run needs it, returning its :class:`LoggedRequests`; None: arrivals at the
        plan's peak. [function]
    resample : bool
        With ``log``: arrivals at the plan's peak, lengths drawn from the log, instead of the log replayed. [bool]

    Returns
    -------
    PeakSimulation
        The run, the search, the fleet's TP and loads, the targets, and the run's settings.

    Raises
    ------
    RunRefused
        The plan cannot be met or simulated, ``gpus`` is not whole replicas, or the run would hold too many
        requests (or a replayed log too few).
    """
    from xlplan.decide import answer
    from xlplan.plan import scenario
    from xlplan.plan.scenario import resolve
    from xlplan.simulate import run as sim_run
    from xlplan.simulate import workload

    try:  # with --search, the Answer's setting: the configuration search's, where the default simulation runs it
        d = answer.decide(resolve(plan), plan.promise.percentile, plan.model.resolve().max_context_tokens,
                           plan.policy.max_num_batched_tokens is not None, "auto" if search else False)
    except scenario.PlanningError as e:
        raise RunRefused(None, f"cannot be simulated: the plan cannot be met ({e})") from None
    # the fleet `plan` simulates: at the Answer's TP degree and step budget, from its closed form's load
    at = d.configuration or d.closed_form
    s = answer.deployed(resolve(plan), at)
    tp = int(at.tp)
    load_reps = int(at.load_replicas)
    gpus = _whole_replicas(gpus, tp, load_reps)
    percentile = plan.promise.percentile
    wl, minutes, arrivals = _workload(s, plan.model.resolve().max_context_tokens, minutes, seed, burst_cv2, log, resample,
                                      load_reps, answer.sample_for(s, at))
    requests = (round(s.peak_rps * minutes * 60.0) if isinstance(wl, workload.SampledWorkload)  # the fleet's, expected
                else len(wl.arrival_s))
    if gpus // tp > max(requests, load_reps):
        raise RunRefused("--gpus", (f"got {gpus:,}: {words.count(gpus // tp, 'replica')} of TP {tp} for "
                                    f"{words.count(requests, 'request')} in the run, so most would never serve "
                                    f"one; expected at most {max(requests, load_reps) * tp:,} GPUs (the plan's "
                                    f"load is {load_reps * tp:,}), or a plan at the peak such a fleet is for"))
    try:
        r = sim_run.simulate(s, gpus // tp, tp, wl, minutes * 60.0, percentile)
        found, seeds = (_searched(s, tp, wl, r, gpus, load_reps, minutes, seed, burst_cv2, percentile, log is None,
                                  plan.model.resolve().max_context_tokens) if search else (None, ()))
    except scenario.PlanningError as e:
        raise RunRefused(None, f"cannot be simulated: {e}") from None
    return PeakSimulation(run=r, search=found, tp=tp, load_replicas=load_reps, runbook_load_gpus=int(d.sol.paths.load),
                          ttft_target_s=s.ttft_s, itl_target_s=s.itl_s, percentile=percentile, minutes=minutes, seed=seed,
                          burst_cv2=burst_cv2, chunk_tokens=scenario.chunk_tokens(s), arrivals=arrivals, search_seeds=seeds,
                          routing=s.routing)


def _searched(s, tp, wl, r, gpus, load_reps, minutes, seed, cv2, percentile, seeded, max_context):
    """The search from the run; on generated arrivals (``seeded``), raised until it holds on every verification seed."""
    from xlplan.simulate import search as sim_search

    found = sim_search.search(s, tp, wl, minutes * 60.0, load_reps, percentile, {gpus // tp: r})
    if not seeded:  # a replayed log is one run: there are no other seeds
        return found, ()
    return _on_every_seed(s, tp, wl, found, minutes, seed, cv2, percentile, max_context)


def _on_every_seed(s, tp, wl, found, minutes, seed, cv2, percentile, max_context):
    """The search's answer raised until it holds on each of the verification's seeds, as ``plan`` verifies. [Search]"""
    from xlplan.simulate import search as sim_search
    from xlplan.simulate import workload

    seeds = tuple(seed + k for k in range(sim_search.VERIFY_SEEDS))
    if found.verified_replicas is None:
        return found, seeds
    fleet, sample = _drawn_for(wl)
    others = [workload.verification_workload(s, minutes, k, cv2, max_context, fleet, sample) for k in seeds[1:]]
    n = sim_search.on_every_seed(s, tp, wl, others, minutes * 60.0, percentile, found.verified_replicas,
                                  found.cap_replicas, found.runs)
    return sim_search.Search(n, found.runs, found.cap_replicas), seeds


def _whole_replicas(gpus: int | None, tp: int, load_replicas: int) -> int:
    """The GPUs to simulate: the closed form's load by default, else whole replicas of its TP. [GPUs]"""
    if gpus is None:
        return load_replicas * tp
    if gpus < tp or gpus % tp:
        raise RunRefused("--gpus", (f"got {gpus}; expected whole replicas of the plan's TP {tp}: "
                                    f"{', '.join(str(tp * k) for k in (1, 2, 3))}…"))
    return gpus


def _drawn_for(wl) -> tuple[int, int]:
    """(fleet, sample) a sampled workload was drawn for (its share's start and size), else (1, 0): every replica.
    [replicas]"""
    from xlplan.simulate import workload

    return (wl.fleet_replicas, wl.replicas) if isinstance(wl, workload.SampledWorkload) else (1, 0)


def _workload(s, max_context, minutes, seed, burst, log, resample, load_reps: int, sample_for: int):
    """(workload, minutes, arrivals text) for the run: Poisson/gamma at the plan's peak, drawn as ``plan``'s
    verification draws it for a fleet of ``load_reps`` (on ``sample_for`` of them past 80 replicas, else 0), or from
    a request log."""
    from xlplan.simulate import workload

    if log is None or resample:
        sample = sample_for if log is None else 0
        rate = workload.share_rps(s.peak_rps, sample, load_reps)  # the run's, a sample's share
        minutes = workload.verification_minutes(s, load_reps, sample) if minutes is None else minutes
        expected = rate * minutes * 60.0
        if workload.too_many_requests(expected):
            raise RunRefused("--minutes", (f"got {minutes:g}: at {rate:,.6g} requests/s that is {expected:,.0f} requests; "
                                           f"expected at most {workload.MAX_REQUESTS:,} in one run (fewer minutes)"))
    if log is None:
        return workload.verification_workload(s, minutes, seed, burst, max_context, load_reps, sample), minutes, None
    req = log()
    if resample:
        wl = workload.resampled_workload(s, req.prompt, req.output, minutes * 60.0, seed, burst)
        return wl, minutes, f"arrivals at the plan's peak, lengths resampled from {req.name}"
    minutes = workload.MIN_MINUTES if minutes is None else minutes
    wl = workload.replayed_workload(req.t_s, req.prompt, req.output, minutes)
    if len(wl.arrival_s) > workload.MAX_REQUESTS:
        raise RunRefused("--minutes", (f"the busiest {minutes:g} minutes of {req.name} hold {len(wl.arrival_s):,} requests; "
                                       f"expected at most {workload.MAX_REQUESTS:,} (fewer minutes)"))
    span_min = max(float(wl.arrival_s[-1]) / 60.0, 1.0 / 60.0) if len(wl.arrival_s) else 0.0
    if len(wl.arrival_s) < 2:
        raise RunRefused(req.name, f"{words.count(len(wl.arrival_s), 'request')} to replay; expected a log with at least 2")
    return wl, min(minutes, span_min), f"the busiest {words.count(min(minutes, span_min), 'minute', fmt='.3g')} of {req.name}, replayed"
