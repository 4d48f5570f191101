"""The queueing path: the replicas a peak needs so that requests wait for a slot no longer than the TTFT promise allows.

The memory, compute and latency paths size a fleet from averages; none of them computes the wait for a slot, which
is what the TTFT promise is about. This path takes one replica's service rate at the promise from the serving model
(the step carries the decode batch the inter-token target allows and its steady-state share of prefill, weights and
cache read included), treats the replicas as the servers of one queue, and finds the fewest that keep the wait at the
promise's percentile within the TTFT target less the request's own prefill.

Notes
-----
- **A replica's service rate** ``μ = b ÷ (E[output] × τ(b))``: ``b`` decodes fit one step within the inter-token
  target and the step's token budget (each decode brings ``E[prompt]·(1 − reuse) ÷ E[output]`` prompt tokens of
  prefill with it), and each request holds a slot for ``E[output]`` steps of ``τ(b)``.
- **The step budget**: the plan's ``max_num_batched_tokens``, or the simulation's 512-token chunks where the engine
  sets none (the runbook's), so the path and the simulator schedule the same steps.
- **The wait** by Erlang C with the Allen–Cunneen factor (:mod:`xlplan.queueing`): Poisson arrivals at peak
  (``cₐ² = 1``) and exponential service (``cₛ² = 1``), the M/M/c case.
- **The target**: the TTFT promise less the prefill of a prompt at the percentile on an idle replica; where that
  prefill alone misses the promise, no fleet meets it.

References
----------
Erlang C and Allen–Cunneen: see :mod:`xlplan.queueing`. vLLM's scheduler (vllm/v1/core/sched/scheduler.py): decodes
first, then prefill up to ``max_num_batched_tokens``; chunked prefill sharing steps with decode: Agrawal et al.,
"Sarathi-Serve", OSDI 2024.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from xlplan import distributions, queueing, serving, steps
from xlplan.scenario import RUNBOOK_UNBOUNDED, Scenario

ARRIVAL_CV2 = 1.0
"""Squared coefficient of variation of the gaps between arrivals at peak: Poisson. [1]"""

SERVICE_CV2 = 1.0
"""Squared coefficient of variation of a replica's service time: exponential, the M/M/c case. [1]"""

RUNBOOK_STEP_TOKENS = 512
"""The step budget where the plan's engine sets none (the runbook's): the simulation's prefill chunk
(:data:`xlplan.simulate.RUNBOOK_CHUNK_TOKENS`). [tokens]"""


@dataclass(frozen=True)
class QueuePath:
    """The queueing path at one TP degree. Units in the field comments."""

    tp: int  # GPUs per replica [GPUs]
    step_budget_tokens: int  # tokens one step may carry [tokens]
    slots_per_replica: float  # decodes one step carries within the inter-token target [sequences]
    step_s: float  # the step at that batch, its prefill share included [s]
    service_rps_per_replica: float  # requests one replica serves per second at the promise [requests/s]
    offered_erlangs: float  # peak rate ÷ service rate: the replicas busy on average [erlangs]
    prefill_at_percentile_s: float  # prefill of a prompt at the promise's percentile on an idle replica [s]
    wait_target_s: float  # the TTFT promise less that prefill [s]
    replicas: int | None  # the fewest replicas keeping the wait within the target; None: no fleet can [replicas]
    gpus: int | None  # replicas × TP [GPUs]
    wait_at_percentile_s: float  # the wait at the percentile on those replicas [s]
    utilisation_at_load: float  # offered load ÷ the closed form's load replicas [fraction]


def step_budget_tokens(s: Scenario) -> int:
    """The step's token budget the path schedules with: the plan's, else :data:`RUNBOOK_STEP_TOKENS`. [tokens]

    Parameters
    ----------
    s : Scenario
        The plan's numbers; ``max_num_batched_tokens`` is the engine's step budget (unbounded: none set).

    Returns
    -------
    int
        Tokens one step may carry, decodes and prefill chunks together. [tokens]
    """
    budget = s.max_num_batched_tokens
    return RUNBOOK_STEP_TOKENS if budget >= RUNBOOK_UNBOUNDED else int(budget)


def queue_path(s: Scenario, tr: steps.Traffic, tp: int, load_replicas: float) -> QueuePath:
    """The queueing path at TP degree ``tp``: a replica's service rate at the promise and the replicas the wait needs.

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats).
    tr : steps.Traffic
        Steps 1-3 and the demand, from :func:`xlplan.steps.traffic`.
    tp : int
        GPUs per replica. [GPUs]
    load_replicas : float
        The closed form's load in replicas, for its utilisation. [replicas]

    Returns
    -------
    QueuePath
        Slots, step, service rate, offered load, the wait target and the fewest replicas that meet it.

    References
    ----------
    Erlang C with the Allen–Cunneen factor: :func:`xlplan.queueing.servers_for_wait`.
    """
    budget = step_budget_tokens(s)
    q = dataclasses.replace(s, latency_with_prefill=True, max_num_batched_tokens=float(budget))
    r = steps.replica(q, tp)
    step = steps.latency_step_fn(q, tr, r)
    slots = float(serving.max_batch_within(step, q.itl_s, steps.latency_batch_cap(q, tr)))
    step_s = float(step(slots)) if slots > 0 else math.inf
    mu = slots / (tr.output_mean * step_s) if slots > 0 else 0.0
    offered = s.peak_rps / mu if mu > 0 else math.inf
    prompt = distributions.length_at_percentile(s.prompt_p50, s.prompt_p95, s.prompt_p99, s.percentile)
    prefill = float(steps.prefill_alone_s(q, r, prompt))
    target = s.ttft_s - prefill
    n = queueing.servers_for_wait(s.peak_rps, 1.0 / mu, target, s.percentile, ARRIVAL_CV2, SERVICE_CV2) if mu > 0 else None
    wait = queueing.wait_at_percentile_s(n, s.peak_rps, 1.0 / mu, s.percentile, ARRIVAL_CV2, SERVICE_CV2) if n else math.inf
    return QueuePath(tp=tp, step_budget_tokens=budget, slots_per_replica=slots, step_s=step_s, service_rps_per_replica=mu,
                     offered_erlangs=offered, prefill_at_percentile_s=prefill, wait_target_s=target, replicas=n,
                     gpus=n * tp if n is not None else None, wait_at_percentile_s=wait,
                     utilisation_at_load=offered / load_replicas if load_replicas > 0 else math.inf)
