"""A fixed-concurrency benchmark replayed: its clients, lengths, request count and warm-up through the simulator.

A closed-loop benchmark (``vllm bench serve --max-concurrency``, GuideLLM's concurrent profile, genai-perf and aiperf
``--concurrency``) keeps ``C`` requests in flight: each client sends its next request the moment its last one
finishes. A new request waits behind the other clients' prefills and shares their decode steps, so its TTFT is not a
lone prompt's prefill. The replay serves exactly that through the simulator that verifies plans
(:func:`xlplan.simulate.run.closed_loop`): the same scheduler (the engine's: decodes first with chunked prefill in the
remaining budget, or SGLang's prefill first; the newest preempted) and the same step time (:func:`xlplan.serving.folded_step.step_time_fn`), on the
benchmark's own replica and KV room (:func:`xlplan.evidence.predict.replica_for`).

``validate`` scores every fixed-concurrency row by this replay (:func:`xlplan.evidence.predict.fixed_concurrency`);
the fits (``calibrate`` and the default table) work on its steady state in closed form
(:func:`xlplan.evidence.predict.steady_state`), smooth in the efficiencies and far cheaper. ``benchmarks/bench_replay.py``
puts the two side by side on every fixed-concurrency row, with their time per row.

Notes
-----
What a benchmark file leaves unstated is taken from :data:`DEFAULT_HARNESS`, the harness NVIDIA AIConfigurator's
generated benchmark runs (aiperf: ``--concurrency C --num-requests 20·C --warmup-request-count 2·C``, fixed lengths,
``ignore_eos``): 20 rounds of ``C`` requests measured after 2 rounds of warm-up, the warm-up's clients carrying on
into the measured rounds, the mean over requests. :func:`sensitivity` states how far each of these assumptions
moves a prediction. The measured figures are aiperf's: TTFT from a request's send to its first token; the
inter-token latency per request, ``(end − first token) ÷ (osl − 1)``, averaged over requests; output tokens/s, the
measured requests' tokens over the time from the first measured send to the last measured end.

References
----------
aiperf's benchmark template in NVIDIA AIConfigurator (``src/aiconfigurator/generator/config/backend_templates/
benchmark/bench_run.sh.j2``, commit 095f58a5, Apache-2.0): ``--num-requests $((concurrency*20))``,
``--warmup-request-count $((concurrency*2))``. Little's Law (Little, Operations Research 9(3), 1961): in a closed
loop, throughput = C ÷ the mean time a request takes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from xlplan.evidence.bench_conditions import Conditions

STATISTICS = ("mean", "median")
"""How a benchmark summarises per-request latencies. [text]"""


@dataclass(frozen=True)
class Harness:
    """How a closed-loop benchmark ran: what it measured and how it warmed up. Units in the field comments."""

    rounds: float = 20.0  # measured requests ÷ concurrency [rounds]
    warmup_rounds: float = 2.0  # warm-up requests ÷ concurrency [rounds]
    continuous: bool = True  # the warm-up's clients carry on into the measured requests (False: it drains first) [bool]
    statistic: str = "mean"  # how the benchmark summarises TTFT and TPOT over requests: mean | median [text]
    requests: int | None = None  # measured requests, where the benchmark states them (else rounds × C) [requests]

    def __post_init__(self):
        if self.statistic not in STATISTICS:
            raise ValueError(f"statistic: got {self.statistic!r}; expected one of {', '.join(STATISTICS)}")


DEFAULT_HARNESS = Harness()
"""AIConfigurator's aiperf harness (module Notes): 20 rounds measured after 2 of warm-up, carried on, the mean. [—]"""


def harness_for(c: Conditions) -> Harness:
    """The harness a fixed-concurrency row states, else :data:`DEFAULT_HARNESS`.

    Parameters
    ----------
    c : Conditions
        The benchmark's conditions; ``num_prompts`` where it states how many requests it sent in all.

    Returns
    -------
    Harness
        Where ``num_prompts`` is stated, ``vllm bench serve``'s: that many requests, no warm-up, all measured from a
        start of ``C`` at once, the mean; else :data:`DEFAULT_HARNESS`. [—]

    References
    ----------
    ``vllm bench serve --max-concurrency C --num-prompts N`` (vllm/benchmarks/serve.py): N requests, no warm-up by
    default, the mean and median of each latency reported.
    """
    if c.num_prompts:
        return Harness(rounds=0.0, warmup_rounds=0.0, continuous=False, requests=max(1, round(c.num_prompts)))
    return DEFAULT_HARNESS


MAX_REPLAY_REQUESTS = 40_000
"""The most requests one replay serves, warm-up included, where the benchmark's rounds of a large concurrency would
be more: its measured rounds are cut to fit, never below one whole round. It binds only past 1,800 clients at the
default harness (22 rounds of 1,818 are 40,000), where one round already averages over thousands of requests. [requests]"""


@dataclass(frozen=True)
class Online:
    """A fixed-concurrency prediction, as the benchmark measures it. Units in the field comments."""

    batch: float  # sequences decoding in a step, per replica, time-weighted over every step replayed [sequences]
    waiting: float  # requests per replica neither decoding nor done: prefilling or queued, on average [requests]
    itl_s: float  # inter-token latency: per request (end − first token) ÷ (osl − 1), the harness's statistic [s]
    ttft_s: float  # time to first token, the harness's statistic over the measured requests [s]
    output_tok_s: float  # the measured requests' output tokens ÷ their span, the whole system [tokens/s]


def closed_loop(rep, c: Conditions, harness: Harness = DEFAULT_HARNESS) -> Online:
    """Replay a fixed-concurrency benchmark of ``c.concurrency`` clients on the replica ``rep``.

    Parameters
    ----------
    rep : xlplan.evidence.predict.Replica
        The benchmark's replica at the efficiencies to predict with (its scenario, KV room per GPU).
    c : Conditions
        The benchmark's conditions: lengths, replicas, TP and ``concurrency`` (the whole system's, rounded to whole
        clients, at least 1).
    harness : Harness
        What the benchmark measured and how it warmed up (default: :data:`DEFAULT_HARNESS`).

    Returns
    -------
    Online
        The mean decode batch and waiting requests per replica, and the harness's TTFT, inter-token latency and
        output tokens/s over the measured requests.

    Notes
    -----
    ``C`` clients send ``(warm-up + measured)`` requests of ``isl`` and ``osl`` tokens; the first ``C`` at t = 0,
    each later one when a request finishes. Routing is the simulator's (least loaded replica). A one-token output
    has no inter-token gap: its ITL is taken as the step time. Where the replay cannot finish every measured request
    (a cache too small for one), TTFT and ITL are infinite.

    References
    ----------
    vLLM's V1 scheduler (vllm/v1/core/sched/scheduler.py) or SGLang's prefill first, as
    :mod:`xlplan.simulate.scheduler` schedules them;
    Little's Law (Little, 1961) holds in the replay: tokens/s ≈ C·osl ÷ (TTFT + (osl − 1)·ITL), to the window's ends.
    """
    clients = max(1, round(c.concurrency))
    isl, osl = max(1.0, float(round(c.isl))), max(1, round(c.osl))
    measured = harness.requests or max(1, math.ceil(harness.rounds * clients))
    warm = math.ceil(harness.warmup_rounds * clients) if harness.continuous else 0
    if warm + measured > MAX_REPLAY_REQUESTS:  # whole rounds that fit, at least one
        measured = min(measured, max(1, (MAX_REPLAY_REQUESTS - warm) // clients) * clients)
    return _online(_served(rep, c, clients, isl, osl, warm + measured), warm, clients, osl, c.replicas,
                   harness.statistic)


def _served(rep, c: Conditions, clients: int, isl: float, osl: int, n: int):
    """``n`` requests of ``isl`` and ``osl`` tokens served as a closed loop of ``clients``. [ClosedLoopRun]"""
    from xlplan.simulate.run import closed_loop as serve
    from xlplan.simulate.workload import Workload

    return serve(rep.s, c.replicas, c.tp, Workload(np.zeros(n), np.full(n, isl), np.full(n, osl, dtype=np.int64)),
                 clients, rep.kv_gib_per_gpu)


def _online(run, warm: int, clients: int, osl: int, replicas: int, statistic: str) -> Online:
    """The benchmark's figures over the measured requests of ``run`` (those after the first ``warm``). [Online]"""
    arrivals, first, finish = run.arrival_s[warm:], run.first_token_s[warm:], run.finish_s[warm:]
    t, b = run.step_s, run.step_decodes
    if not np.isfinite(finish).all() or not t.sum() > 0:
        return Online(0.0, clients / replicas, math.inf, math.inf, 0.0)
    ttfts = first - arrivals
    itls = (finish - first) / (osl - 1) if osl > 1 else None
    count = len(ttfts)
    span = float(finish.max() - arrivals.min())
    summary = np.median if statistic == "median" else np.mean
    ttft = float(summary(ttfts))
    itl = float(summary(itls)) if itls is not None else float(t.mean())
    batch = float((t * b).sum() / t.sum())  # time-weighted over every step, the warm-up's too
    per_replica = clients / replicas
    return Online(batch, max(per_replica - batch, 0.0), itl, ttft, count * osl / span if span > 0 else math.inf)


def sensitivity(rep, c: Conditions) -> dict[str, Online]:
    """The replay under each unstated assumption changed alone, beside the default harness.

    Parameters
    ----------
    rep : xlplan.evidence.predict.Replica
        The benchmark's replica at the efficiencies to predict with.
    c : Conditions
        The benchmark's conditions, ``concurrency`` set.

    Returns
    -------
    dict of str to Online
        ``default`` (:data:`DEFAULT_HARNESS`); ``median`` (the median over requests, not the mean); ``drained``
        (the warm-up drains before the measured requests start together); ``5 rounds`` and ``50 rounds`` (fewer or
        more requests measured). [—]
    """
    d = DEFAULT_HARNESS
    cases = {"default": d, "median": replace(d, statistic="median"), "drained": replace(d, continuous=False),
             "5 rounds": replace(d, rounds=5.0), "50 rounds": replace(d, rounds=50.0)}
    return {k: closed_loop(rep, c, h) for k, h in cases.items()}
