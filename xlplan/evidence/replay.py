"""A fixed-concurrency benchmark replayed: its clients, lengths, request count and warm-up through the simulator.

A closed-loop benchmark (``vllm bench serve --max-concurrency``, GuideLLM's concurrent profile, genai-perf and aiperf
``--concurrency``) keeps ``C`` requests in flight: each client sends its next request the moment its last one
finishes. A new request waits behind the other clients' prefills and shares their decode steps, so its TTFT is not a
lone prompt's prefill. The replay serves exactly that through the simulator that verifies plans
(:class:`xlplan.simulate.loop._Run` with ``clients = C``): the same scheduler (decodes first, chunked prefill in the
remaining budget, the newest preempted) and the same step time (:func:`xlplan.serving.folded_step.step_time_fn`),
on the benchmark's own replica and KV room (:func:`xlplan.evidence.predict.replica_for`).

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


DEFAULT_HARNESS = Harness()
"""AIConfigurator's aiperf harness (module Notes): 20 rounds measured after 2 of warm-up, carried on, the mean. [—]"""

MAX_REPLAY_REQUESTS = 200_000
"""The most requests one replay serves; more rounds of a large concurrency are cut to this many. [requests]"""


@dataclass(frozen=True)
class Online:
    """A fixed-concurrency prediction, as the benchmark measures it. Units in the field comments."""

    batch: float  # sequences decoding in a step, per replica, averaged over the measured steps [sequences]
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
    vLLM's V1 scheduler (vllm/v1/core/sched/scheduler.py), as :mod:`xlplan.simulate.scheduler` schedules it;
    Little's Law (Little, 1961) holds in the replay: tokens/s = C·osl ÷ (TTFT + (osl − 1)·ITL + one step).
    """
    from xlplan.simulate.loop import _Run
    from xlplan.simulate.workload import Workload

    clients = max(1, round(c.concurrency))
    isl, osl = max(1.0, float(round(c.isl))), max(1, round(c.osl))
    measured = harness.requests or max(1, math.ceil(harness.rounds * clients))
    warm = math.ceil(harness.warmup_rounds * clients) if harness.continuous else 0
    measured = min(measured, MAX_REPLAY_REQUESTS - warm)
    n = warm + measured
    run = _Run(rep.s, c.replicas, c.tp, Workload(np.zeros(n), np.full(n, isl), np.full(n, osl, dtype=np.int64)),
               math.inf, 0, clients, rep.kv_gib_per_gpu)
    run.warm, run.stop = 0.0, math.inf  # every step recorded; every request followed to its end
    run.run()
    arrivals = np.asarray(run.arrivals, dtype=float)[warm:]
    first = np.asarray(run.first_token, dtype=float)[warm:]
    finish = np.asarray(run.finish, dtype=float)[warm:]
    summary = np.median if harness.statistic == "median" else np.mean
    t, b = np.asarray(run.step_t, dtype=float), np.asarray(run.step_b, dtype=float)
    if not np.isfinite(finish).all() or not t.sum() > 0:
        return Online(0.0, clients / c.replicas, math.inf, math.inf, 0.0)
    ttft = float(summary(first - arrivals))
    itl = float(summary((finish - first) / (osl - 1))) if osl > 1 else float(t.mean())
    span = float(finish.max() - arrivals.min())
    batch = float((t * b).sum() / t.sum())  # time-weighted over every step, the warm-up's too
    per_replica = clients / c.replicas
    return Online(batch, max(per_replica - batch, 0.0), itl, ttft, measured * osl / span if span > 0 else math.inf)


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
