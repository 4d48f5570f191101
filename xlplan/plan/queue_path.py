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
- **The step budget**: :func:`xlplan.plan.scenario.chunk_tokens` — the plan's ``max_num_batched_tokens``, or the
  simulation's 512-token chunks where the engine sets none (the runbook's) — so the path and the simulator schedule
  the same steps.
- **Long prefill steps**: a step that carries a prompt's chunk (up to the step budget) can take longer than the
  inter-token target; the pooled p95 gap then holds only while at most ``1 − p`` of the steps carry one. With ``n``
  chunks per prompt and a mean step ``τ̄ = p·τ_decode + (1 − p)·τ_prefill``, a replica serves at most
  ``(1 − p) ÷ (n·τ̄)`` requests per second, a hard limit (no queue forms behind it): the fleet needs at least
  ``λ ÷`` that many replicas. (With 512-token chunks a step stays within the target; with vLLM's 8,192-token steps a
  2,000-token prompt's step takes 87 ms against 50.) Where the budget holds two or more whole prompts, the prompts
  that arrive during a long prefill step share the next one: the share of prefill steps comes from a Markov chain of
  the prompts waiting at each step's start (:func:`chunk_step_chain`).
- **The wait** by Erlang C with the Allen–Cunneen factor (:mod:`xlplan.serving.queueing`): the plan's arrivals at peak
  (``cₐ² = forecast.arrival_cv2``, 1 for Poisson) and exponential service (``cₛ² = 1``); M/M/c where arrivals are
  Poisson, the factor ``(cₐ² + cₛ²) ÷ 2`` scaling the wait where they are burstier. The load balancer
  (``policy.routing``) sets the queue: least-loaded routing pools the replicas as the servers of one queue; round
  robin and random routing commit a request to a replica on arrival, so each replica is an M/M/c queue of its own
  over its slots at ``λ ÷ n`` (:func:`xlplan.serving.queueing.routed_wait_at_percentile_s`).
- **The target**: the TTFT promise less the prefill of a prompt at the percentile on an idle replica; where that
  prefill alone misses the promise, no fleet meets it.

References
----------
Erlang C and Allen–Cunneen: see :mod:`xlplan.serving.queueing`. vLLM's scheduler (vllm/v1/core/sched/scheduler.py): decodes
first, then prefill up to ``max_num_batched_tokens``; chunked prefill sharing steps with decode: Agrawal et al.,
"Sarathi-Serve", OSDI 2024.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from statistics import NormalDist

from xlplan import distributions, fleet
from xlplan.plan import latency_step, replica_at_tp, scenario
from xlplan.plan.scenario import Scenario, changed
from xlplan.schema import steps as step_results
from xlplan.schema.plausibility import FLEET_CEILING_GPUS
from xlplan.serving import batch_search, queueing, step_inputs
from xlplan.serving.queueing import SERVICE_CV2

STEP_BUDGETS = (256, 512, 1024, 2048, 4096, 8192)
"""Step token budgets the path compares: from vLLM's smallest useful chunk to its default on large GPUs. [tokens]"""


@dataclass(frozen=True)
class QueuePath:
    """The queueing path at one TP degree. Units in the field comments."""

    tp: int  # GPUs per replica [GPUs]
    step_budget_tokens: int  # tokens one step may carry [tokens]
    slots_per_replica: float  # decodes one step carries within the inter-token target [sequences]
    step_s: float  # the step at that batch, its prefill share included [s]
    slot_rps_per_replica: float  # requests the decode slots serve per second: b ÷ (E[output] × τ(b)) [requests/s]
    prefill_step_s: float  # a step carrying one prompt chunk beside the decodes [s]
    prefill_tail_rps_per_replica: float | None  # the rate at which 1 − p of steps carry a chunk; None: it never binds [requests/s]
    tail_replicas: int  # replicas that rate needs: ⌈λ ÷ it⌉ (0 when it never binds) [replicas]
    service_rps_per_replica: float  # the slots' rate, the queue's service rate [requests/s]
    offered_erlangs: float  # peak rate ÷ service rate: the replicas busy on average [erlangs]
    prefill_at_percentile_s: float  # prefill of a prompt at the promise's percentile on an idle replica [s]
    wait_target_s: float  # the TTFT promise less that prefill [s]
    replicas: int | None  # the fewest replicas keeping the wait within the target; None: no fleet can [replicas]
    gpus: int | None  # replicas × TP [GPUs]
    wait_at_percentile_s: float  # the wait at the percentile on those replicas [s]
    utilisation_at_load: float  # offered load ÷ the closed form's load replicas [fraction]
    prefill_mean_s: float = 0.0  # E[S]: a prompt's prefill on an idle replica, over the prompt distribution [s]
    prefill_second_moment_s2: float = 0.0  # E[S²] of that prefill [s²]
    prefill_queue_replicas: int = 0  # replicas each replica's own prefill queue needs (0: prompts are chunked) [replicas]
    prefill_wait_scale: float = 1.0  # Kingman's factor on the prefill queue's wait at its replicas (1: M/G/1) [1]
    routing: str = "least_loaded"  # the queue: one for the fleet (least_loaded, least_kv), or one per replica [text]


def queue_path(s: Scenario, tr: step_results.Traffic, tp: int, load_replicas: float, r: step_inputs.Replica | None = None,
               step=None) -> QueuePath:
    """The queueing path at TP degree ``tp``: a replica's service rate at the promise and the replicas the wait needs.

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats).
    tr : steps.Traffic
        Steps 1-3 and the demand, from :func:`xlplan.plan.steps.traffic`.
    tp : int
        GPUs per replica. [GPUs]
    load_replicas : float
        The closed form's load in replicas, for its utilisation. [replicas]
    r : serving.Replica, optional
        The replica at ``tp``, where the caller holds it. [Replica]
    step : callable, optional
        ``batch -> step [s]`` with its prefill share at the simulation's step budget, where the caller holds it (a
        scenario already at that budget, with prefill). [callable]

    Returns
    -------
    QueuePath
        Slots, step, service rate, offered load, the wait target and the fewest replicas that meet it.

    References
    ----------
    Erlang C with the Allen–Cunneen factor, as routing sets the queue: :func:`xlplan.serving.queueing.replicas_for_wait`.
    """
    budget = scenario.chunk_tokens(s)  # the simulation's own step budget: both schedule the same steps
    same = s.latency_with_prefill and s.max_num_batched_tokens == float(budget)
    q = s if same else changed(s, latency_with_prefill=True, max_num_batched_tokens=float(budget))
    r = r if r is not None else replica_at_tp.replica(q, tp)
    step = step if (step is not None and same) else latency_step.closed_form_step_fn(q, tr, r)
    slots, step_s, slot_rate = _slots(q, tr, step)
    tail_rate, prefill_step = _prefill_tail_rps(q, tr, r, budget, getattr(step, "step_time", None))
    tail_n = int(fleet.whole_replicas(s.peak_rps / tail_rate, 1)) if tail_rate else 0
    mu = slot_rate
    offered = s.peak_rps / mu if mu > 0 else math.inf
    prompt = distributions.length_at_percentile(s.prompt_p50, s.prompt_p95, s.prompt_p99, s.percentile)
    prefill = float(latency_step.prefill_alone_s(q, r, prompt))
    target = s.ttft_s - prefill
    n = queueing.replicas_for_wait(s.routing, slots, s.peak_rps, 1.0 / mu, target, s.percentile, s.arrival_cv2,
                                   SERVICE_CV2, max_servers=max(1, FLEET_CEILING_GPUS // tp)) if mu > 0 else None
    if n is not None and tail_rate is not None:
        n = max(n, tail_n)
    m1, m2, pre_n = prefill_queue(q, r, budget, prompt, target, max(1, FLEET_CEILING_GPUS // tp))
    scale = prefill_wait_scale(q, m1, m2, pre_n) if pre_n else 1.0
    if n is not None:
        n = None if pre_n is None else max(n, pre_n)
    wait = (queueing.routed_wait_at_percentile_s(s.routing, n, slots, s.peak_rps, 1.0 / mu, s.percentile, s.arrival_cv2,
                                                 SERVICE_CV2) if n else math.inf)
    return QueuePath(tp=tp, step_budget_tokens=budget, slots_per_replica=slots, step_s=step_s, slot_rps_per_replica=slot_rate,
                     prefill_step_s=prefill_step, prefill_tail_rps_per_replica=tail_rate, tail_replicas=tail_n,
                     service_rps_per_replica=mu,
                     offered_erlangs=offered, prefill_at_percentile_s=prefill, wait_target_s=target, replicas=n,
                     gpus=n * tp if n is not None else None, wait_at_percentile_s=wait,
                     utilisation_at_load=offered / load_replicas if load_replicas > 0 else math.inf,
                     prefill_mean_s=m1, prefill_second_moment_s2=m2, prefill_queue_replicas=pre_n or 0,
                     prefill_wait_scale=scale, routing=s.routing)


PREFILL_QUANTILES = 64
"""Points of the prompt distribution the prefill's moments are taken over (midpoint quantiles of the fitted
lognormal). [points]"""


def prefill_queue(s: Scenario, r: step_inputs.Replica, budget: int, prompt_at_percentile: float, wait_target_s: float,
                  max_replicas: int) -> tuple[float, float, int | None]:
    """Each replica's prefill as a queue of its own: the replicas that keep a prompt's wait behind other prompts'
    prefill steps within the target, where a prompt at the percentile fits one step. [s], [s²], [replicas]

    Parameters
    ----------
    s : Scenario
        The plan's numbers at the step budget, with prefill (its prompt percentiles, peak rate, promise).
    r : serving.Replica
        The replica at this TP degree.
    budget : int
        Tokens one step may carry. [tokens]
    prompt_at_percentile : float
        The prompt at the promise's percentile. [tokens]
    wait_target_s : float
        The TTFT promise less that prompt's prefill: the longest wait allowed. [s]
    max_replicas : int
        Search no further than this. [replicas]

    Returns
    -------
    mean : float
        ``E[S]``, a prompt's prefill on an idle replica over the prompt distribution. [s]
    second_moment : float
        ``E[S²]``. [s²]
    replicas : int or None
        The fewest replicas ``n`` with ``ρ = λ·E[S] ÷ n < 1`` and ``P(wait > t) ≈ ρ·exp(−2t(1 − ρ)·E[S] ÷ E[S²]) ≤ 1 − p``;
        0 where a prompt at the percentile is chunked over several steps and routing is least-loaded (the decode
        slots' queue then holds it); None where none up to ``max_replicas`` does, or the target is negative. [replicas]

    Notes
    -----
    Where a whole prompt fits one step (vLLM's 8,192-token default against a few thousand tokens), a request that
    arrives while its replica runs another prompt's prefill waits for the whole step, and routing by the requests held
    does not see it: each replica is an M/G/1 queue of prefills at ``λ ÷ n``. Its wait is 0 with probability
    ``1 − ρ`` and, given a wait, taken as exponential with the Pollaczek–Khinchine mean ``λE[S²] ÷ (2(1 − ρ)) ÷ ρ``
    (exact for exponential service). Llama-3.1-70B on two H200s at 15 req/s and 8,192-token steps: a 0.53 s prefill
    leaves 0.47 s of wait, and 41 replicas keep it, where the simulation needs 41 and the slots' queue alone 15.
    Where routing commits each request on arrival (``policy.routing`` round robin or random), every replica's prompts
    queue behind its own prefill work whether or not they are chunked, so the queue counts chunked prompts too, its
    wait scaled by Kingman's ``(cₐ² + cₛ²) ÷ (1 + cₛ²)`` with the routed arrivals' ``cₐ²``
    (:func:`xlplan.serving.queueing.routed_arrival_cv2`: 1 random, ``1 ÷ n`` round robin, for Poisson).

    References
    ----------
    Pollaczek–Khinchine mean wait: Kleinrock, *Queueing Systems* vol. 1, 1975, ch. 5. The probability of waiting in
    M/G/1 is ρ (PASTA): Wolff, "Poisson arrivals see time averages", Operations Research 30(2), 1982. Kingman,
    "The single server queue in heavy traffic", Proc. Cambridge Philosophical Society 57(4), 1961.
    """
    from statistics import NormalDist

    median, sigma = distributions.fit_lognormal(s.prompt_p50, s.prompt_p95, s.prompt_p99)
    z = [NormalDist().inv_cdf((k + 0.5) / PREFILL_QUANTILES) for k in range(PREFILL_QUANTILES)]
    times = [float(latency_step.prefill_alone_s(s, r, max(1.0, float(median * math.exp(sigma * x))))) for x in z]
    m1 = sum(times) / len(times)
    m2 = sum(x * x for x in times) / len(times)
    if prompt_at_percentile * (1.0 - s.prefix_reuse) > scenario.prefill_chunk_tokens(s) and queueing.pooled(s.routing):
        return m1, m2, 0
    if wait_target_s < 0 or m1 <= 0:
        return m1, m2, None
    tail = 1.0 - s.percentile / 100.0

    def meets(n: int) -> bool:
        rho = s.peak_rps * m1 / n
        spread = prefill_wait_scale(s, m1, m2, n)
        return rho < 1.0 and rho * math.exp(-2.0 * wait_target_s * (1.0 - rho) * m1 / (m2 * spread)) <= tail

    lo, hi = int(math.floor(s.peak_rps * m1)) + 1, max(int(math.floor(s.peak_rps * m1)) + 1, 1)
    while not meets(hi):
        if hi >= max_replicas:
            return m1, m2, None
        lo, hi = hi + 1, min(2 * hi, max_replicas)
    while lo < hi:  # the fewest that meets: the wait falls as replicas are added
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if meets(mid) else (mid + 1, hi)
    return m1, m2, hi


def prefill_wait_scale(s: Scenario, mean_s: float, second_moment_s2: float, replicas: int) -> float:
    """Kingman's factor on each replica's M/G/1 prefill wait for the arrivals routing sends it. [1]

    ``(cₐ² + cₛ²) ÷ (1 + cₛ²)`` with ``cₛ² = E[S²] ÷ E[S]² − 1`` and the routed arrivals' ``cₐ²``
    (:func:`xlplan.serving.queueing.routed_arrival_cv2`): 1 where they are Poisson (random routing of Poisson
    arrivals), below 1 under round robin (every ``n``-th arrival). Least-loaded routing: 1, the M/G/1 of
    :func:`prefill_queue`'s Notes.

    Parameters
    ----------
    s : Scenario
        The plan's numbers: its routing and the fleet's arrivals' squared CV.
    mean_s : float
        ``E[S]``: a prompt's prefill on an idle replica. [s]
    second_moment_s2 : float
        ``E[S²]`` of that prefill. [s²]
    replicas : int
        Replicas the arrivals are routed over. [replicas]

    Returns
    -------
    float
        The factor on the M/G/1 wait. [1]

    References
    ----------
    J. F. C. Kingman, "The single server queue in heavy traffic", Proc. Cambridge Philosophical Society 57(4), 1961.
    """
    if queueing.pooled(s.routing) or mean_s <= 0:
        return 1.0
    service_cv2 = second_moment_s2 / (mean_s * mean_s) - 1.0
    return (queueing.routed_arrival_cv2(s.routing, s.arrival_cv2, replicas) + service_cv2) / (1.0 + service_cv2)


def stable_replicas(s: Scenario, tr: step_results.Traffic, r: step_inputs.Replica, step) -> int | None:
    """The fewest replicas on which the queue of :func:`queue_path` is stable: more than its offered load. [replicas]

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats), at the simulation's step budget, with prefill.
    tr : steps.Traffic
        Steps 1-3 and the demand, from :func:`xlplan.plan.steps.traffic`.
    r : serving.Replica
        The replica at this TP degree.
    step : callable
        ``batch -> step [s]`` with its prefill share (:func:`xlplan.plan.latency_step.latency_step_fn`). [callable]

    Returns
    -------
    int or None
        ``⌊λ ÷ μ⌋ + 1`` with ``μ`` the slots' service rate; None where no batch keeps the step within the target.
        Erlang C's answer is never below it (a queue with ``n ≤ a`` grows without bound). [replicas]

    References
    ----------
    Erlang C is defined for ``a < n`` only: Kleinrock, *Queueing Systems* vol. 1, 1975, §3.5.
    """
    slots, _, mu = _slots(s, tr, step)
    if slots <= 0:
        return None
    return int(math.floor(s.peak_rps / mu)) + 1


def _slots(s: Scenario, tr: step_results.Traffic, step) -> tuple[float, float, float]:
    """(slots, step, rate): the decodes one step carries within the inter-token target, that step, and the requests
    the slots serve per second, ``slots ÷ (E[output] × step)``; (0, inf, 0) where not one fits. [sequences], [s],
    [requests/s]"""
    slots = float(batch_search.max_batch_within(step, s.itl_s, latency_step.latency_batch_cap(s, tr)))
    if slots <= 0:
        return slots, math.inf, 0.0
    step_s = float(step(slots))
    return slots, step_s, slots / (tr.output_mean * step_s)


def percentile_step_s(s: Scenario, tr: step_results.Traffic, r: step_inputs.Replica, budget: int, batch: float,
                      mean_step=None, mean_batch: float | None = None) -> float:
    """The step a token gap at the promise's percentile sees, at ``batch`` decodes per replica. [s]

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats), with the inter-token target's percentile and the prefix reuse.
    tr : steps.Traffic
        Steps 1-3 and the demand.
    r : serving.Replica
        The replica at this TP degree.
    budget : int
        Tokens one step may carry. [tokens]
    batch : float
        Decodes per step. [sequences]
    mean_step : callable, optional
        ``batch -> step [s]`` with its prefill share (:func:`xlplan.plan.latency_step.latency_step_fn` with prefill), where the
        caller holds it already; built here otherwise. [callable]
    mean_batch : float, optional
        The replica's mean decodes per step (Little's Law), where ``batch`` is the size-biased batch a gap sees at the
        percentile; the share of steps carrying a chunk is set by the arrival rate, so by the mean batch. Left out,
        ``batch``. [sequences]

    Returns
    -------
    float
        Where steps carrying a prompt chunk are more than ``1 − p`` of all steps
        (``f = b̄·E[prompt]·(1 − reuse) ÷ (E[output]·(budget − b))``, with ``b̄`` the mean batch: the prompt tokens a
        step must take ÷ the room it has, at most the long-prefill threshold), the step of ``b`` decodes beside a
        ``min(E[prompt], budget − b, threshold)``-token chunk; otherwise the mean step with its prefill share (:func:`xlplan.plan.latency_step.latency_step_fn`). [s]

    Notes
    -----
    The mean step hides the spread between steps: with 512-token steps and 2,000-token prompts nearly every step
    carries a chunk, so the percentile's gap is a chunk step's (a 25 ms target: 8 replicas simulated, 6 from the mean
    step). The share is the mean batch's: Llama-3.1-70B at TP 2 on H200, 15 req/s of 2,000-token prompts, 512-token
    steps keeps a 50 ms p95 gap on 35 replicas in simulation (4.5% of steps carry a chunk at the mean batch of 3.4,
    10% at the percentile's batch of 7.7, which asked for 107).

    References
    ----------
    Little's Law (the mean batch): Little, Operations Research 9(3), 1961.
    """
    b = max(batch, 1.0)
    share_b = max(mean_batch, 1.0) if mean_batch is not None else b
    if mean_step is None:
        mean_step = latency_step.closed_form_step_fn(s, tr, r)
    if hasattr(mean_step, "prefill_moments_s"):  # prefill runs first, in steps of its own (SGLang)
        return prefill_first_gap_s(mean_step, b, share_b, s.percentile)
    prompt = max(tr.prompt_mean * (1.0 - s.prefix_reuse), 1.0)
    room = min(budget - b, s.long_prefill_token_threshold)  # one prompt's chunk: the threshold caps it where set
    if room > 0 and share_b * prompt / (tr.output_mean * room) > 1.0 - s.percentile / 100.0:
        f = mean_step.step_time
        ctx = latency_step.decode_context_tokens(tr)
        clipped = min(ctx, r.window)
        chunk = min(prompt, room)
        keys = step_inputs.prefill_keys(chunk, 0.0, s.causal_attention)
        return float(f(b, b * ctx, b * clipped, chunk, keys, min(keys, r.window * chunk), b * ctx, b * clipped))
    return float(mean_step(b))


def prefill_first_gap_s(gap, batch: float, mean_batch: float, percentile: float) -> float:
    """The token gap at ``percentile`` where prefill runs first (SGLang): a decode step, then every prompt that
    arrived meanwhile prefilled, and those arriving during that, before the next decode step. [s]

    Parameters
    ----------
    gap : callable
        :func:`xlplan.plan.latency_step.closed_form_step_fn` for a prefill-first engine: its ``decode_s``,
        ``prompts_per_decode_step`` and ``prefill_moments_s``. [callable]
    batch : float
        Decodes in the step a gap sees. [sequences]
    mean_batch : float
        The replica's mean decodes per step, which sets the prompts' arrival rate (Little's Law). [sequences]
    percentile : float
        The promise's percentile. [percent]

    Returns
    -------
    float
        The gap ``G = d + Y`` at ``percentile``: ``d`` the decode step; ``Y`` the busy period of the prefills the
        decode step lets in (an M/G/1 busy period started by ``d`` of work: mean ``d·ρ ÷ (1 − ρ)``, variance
        ``d·λ·E[S²] ÷ (1 − ρ)³``, ``ρ = λ·E[S]``), none with probability ``e^(−λd)``, else a lognormal with the
        remaining moments; infinite where ``ρ ≥ 1``. [s]

    Notes
    -----
    Llama-3.1-8B on H100s at 500 req/s of chat (prompts 500/1,500/3,000), SGLang with 512-token steps: at 36 and 50
    replicas this gives a p95 gap of 155 and 70 ms where the simulation measures 166 and 80 (a gamma with the same
    moments, 142 and 61); it sizes 63 replicas for a 50 ms target where the simulation needs 70, and the Answer
    follows the simulation. Before it (a gap of one decode step and one chunk's step) the closed form said 36.

    References
    ----------
    Busy period started by a fixed amount of work in M/G/1: Kleinrock, *Queueing Systems* vol. 1, 1975, §5.8 (its
    mean and variance). A lognormal by its first two moments: Fenton, "The sum of log-normal probability
    distributions in scatter transmission systems", IRE Transactions on Communications Systems 8(1), 1960. SGLang's scheduler
    (``get_next_batch_to_run``: a new prefill batch runs first).

    Examples
    --------
    No prompt arrives during most 10 ms steps at 1 req/s (e^(−0.01) = 0.99 of them): the p95 gap is the decode step.

    >>> from types import SimpleNamespace as NS
    >>> g = NS(decode_s=lambda b: 0.01, prompts_per_decode_step=0.01 / 100, prefill_moments_s=(0.05, 0.0025))
    >>> prefill_first_gap_s(g, 10.0, 10.0, 95)
    0.01
    """
    d = float(gap.decode_s(batch))
    d_mean = float(gap.decode_s(mean_batch))
    es, es2 = gap.prefill_moments_s
    per_step = mean_batch * gap.prompts_per_decode_step  # prompts started per decode step
    lam = per_step / (d_mean + per_step * es)  # prompts per second: one decode step and its prefills per cycle
    rho = lam * es
    if rho >= 1.0:
        return math.inf
    if lam <= 0.0:
        return d
    p = percentile / 100.0
    none = math.exp(-lam * d)
    if none >= p:
        return d
    mean_y = d * rho / (1.0 - rho)
    var_y = d * lam * es2 / (1.0 - rho) ** 3
    m1 = mean_y / (1.0 - none)  # given at least one prompt
    m2 = (var_y + mean_y * mean_y) / (1.0 - none)
    sigma2 = math.log1p(max(m2 - m1 * m1, 0.0) / (m1 * m1))
    z = NormalDist().inv_cdf(1.0 - (1.0 - p) / (1.0 - none))
    return d + math.exp(math.log(m1) - sigma2 / 2.0 + math.sqrt(sigma2) * z)


def _prefill_tail_rps(s: Scenario, tr: step_results.Traffic, r: step_inputs.Replica, budget: int,
                     f=None) -> tuple[float | None, float]:
    """(rate, step): the most requests per second a replica serves while at most ``1 − p`` of its steps carry a prompt
    chunk, where a chunk's step is over the inter-token target; and that step's time. [requests/s], [s]

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats), with the inter-token target and its percentile.
    tr : steps.Traffic
        Steps 1-3 and the demand, from :func:`xlplan.plan.steps.traffic`.
    r : serving.Replica
        The replica at this TP degree.
    budget : int
        Tokens one step may carry. [tokens]
    f : callable, optional
        The replica's :func:`xlplan.serving.folded_step.step_time_fn`, where the caller holds it. [callable]

    Returns
    -------
    tuple
        ``(None, τ_prefill)`` when a step with a chunk stays within the target; else ``((1 − p) ÷ (n·τ̄), τ_prefill)``
        solved with the decode batch ``b = λ·E[output]·τ̄`` it implies (Little's Law on the slots); where the budget
        holds :data:`SHARED_PROMPTS_LEAST` whole prompts or more, the rate at which :func:`chunk_step_chain`'s share
        of prefill steps is ``1 − p``. [requests/s], [s]

    Notes
    -----
    A chunk is ``min(E[prompt]·(1 − reuse), budget − b, threshold)`` tokens (the prompt's first, with no prefix
    before it; the threshold: ``policy.long_prefill_token_threshold``, none by default), each taken to have a step of
    its own (several chunks share one under a threshold: counted as apart, the rate errs low);
    ``n = ⌈E[prompt]·(1 − reuse) ÷ chunk⌉`` chunks per prompt; ``τ̄ = p·τ_decode(b) + (1 − p)·τ_prefill(b)``.

    References
    ----------
    vLLM's scheduler (vllm/v1/core/sched/scheduler.py): decodes first, then prefill up to ``max_num_batched_tokens``.
    Little's Law: Little, Operations Research 9(3), 1961.
    """
    f = f if f is not None else latency_step.closed_form_step_fn(s, tr, r).step_time
    ctx = latency_step.decode_context_tokens(tr)
    clipped = min(ctx, r.window)
    prompt = max(tr.prompt_mean * (1.0 - s.prefix_reuse), 1.0)
    p = s.percentile / 100.0

    def decode_s(b: float) -> float:  # decodes alone, as steps.latency_step_fn times them without prefill
        return f(b, b * ctx, b * clipped, 0.0, 0.0, 0.0, b * ctx, b * clipped)

    def prefill_s(b: float) -> tuple[float, float]:
        chunk = max(min(prompt, budget - b, s.long_prefill_token_threshold), 1.0)
        keys = step_inputs.prefill_keys(chunk, 0.0, s.causal_attention)
        return f(b, b * ctx, b * clipped, chunk, keys, min(keys, r.window * chunk), b * ctx, b * clipped), chunk

    first, _ = prefill_s(1.0)
    if first <= s.itl_s:
        return None, first
    if prompt * SHARED_PROMPTS_LEAST <= budget - 1.0 and prompt <= s.long_prefill_token_threshold:  # whole prompts share a step
        return _shared_tail_rate(s, decode_s, f, ctx, clipped, r.window, prompt, budget, tr.output_mean, p, first)
    return _tail_rate(decode_s, prefill_s, first, tr.output_mean, prompt, p)


SHARED_PROMPTS_LEAST = 2
"""Whole prompts a step's budget must hold beside one decode before prompts are taken to share prefill steps. [prompts]"""

CHAIN_STATES = 16
"""Prompts waiting at a step's start the chain of :func:`chunk_step_chain` tracks (the last state holds the rest). [prompts]"""


def chunk_step_chain(rate_rps: float, decode_s: float, prefill_step_s, shared: int) -> tuple[float, float, float]:
    """Steps of one replica as a Markov chain of the prompts waiting at each step's start, where a step takes up to
    ``shared`` whole prompts: the share of steps carrying prefill, the mean prompts such a step carries, and the mean
    step. [fraction], [prompts], [s]

    Parameters
    ----------
    rate_rps : float
        Prompts arriving at the replica. [requests/s]
    decode_s : float
        A step of decodes alone. [s]
    prefill_step_s : callable
        ``prompts -> step [s]``: a step carrying that many whole prompts beside the decodes. [callable]
    shared : int
        Whole prompts one step's budget holds beside the decodes. [prompts]

    Returns
    -------
    tuple of float
        ``(1 − π₀, E[prompts | a prefill step], E[step])``, with ``π`` the chain's stationary distribution: a step with
        ``q`` prompts waiting takes ``min(q, shared)`` of them (none: a decode step), and the prompts arriving during
        it, Poisson at ``rate × its time``, wait for the next. [fraction], [prompts], [s]

    Notes
    -----
    With ``shared = 1`` each prompt has a step of its own, and the share of prefill steps is ``rate × E[step]``, the
    count :func:`_tail_rate` uses. Where a prefill step is long against the gaps between arrivals, the prompts that
    arrive during it share the next: Llama-3.1-8B on an H100 at 3.3 req/s of 2,000-token prompts and 4,096-token
    steps (120 ms with a prompt, 11 ms without) carries about 1.2 prompts per prefill step, and the simulation keeps a
    20 ms p95 gap on 12 replicas where a step per prompt asked for 14.

    References
    ----------
    Embedded Markov chain of a bulk-service queue (service in batches up to a capacity): Bailey, "On queueing
    processes with bulk service", Journal of the Royal Statistical Society B 16(1), 1954. Poisson arrivals: the
    number in a step of length ``t`` is Poisson with mean ``rate × t``.

    Examples
    --------
    Prompts far apart (0.1 req/s, 50 ms prefill steps): about one prefill step in a thousand carries two, so the
    share is within 0.1% of ``rate × E[step]``.

    >>> share, per_step, mean = chunk_step_chain(0.1, 0.01, lambda m: 0.05 * m, 4)
    >>> round(share / (0.1 * mean), 3), round(per_step, 3)
    (0.999, 1.001)
    """
    n = CHAIN_STATES
    taken = [min(q, shared) for q in range(n)]
    by_prompts = [decode_s] + [float(prefill_step_s(m)) for m in range(1, min(shared, n - 1) + 1)]
    times = [by_prompts[m] for m in taken]
    # a[j][q] = P(q → j) − [q = j]: the balance π = πP, one row replaced by Σπ = 1; plain floats (the plan's path loads
    # no numpy), Gaussian elimination with partial pivoting on n ≤ 16 states
    a = [[0.0] * n for _ in range(n)]
    for q in range(n):
        mean = rate_rps * times[q]  # Poisson arrivals during the step of state q
        p, mass = math.exp(-mean), 0.0
        for k in range(n):
            a[min(q - taken[q] + k, n - 1)][q] += p
            mass += p
            p *= mean / (k + 1)
        a[n - 1][q] += max(0.0, 1.0 - mass)  # arrivals past the last state
        a[q][q] -= 1.0
    a[n - 1] = [1.0] * n
    rhs = [0.0] * (n - 1) + [1.0]
    for c in range(n):
        piv = max(range(c, n), key=lambda r: abs(a[r][c]))
        a[c], a[piv], rhs[c], rhs[piv] = a[piv], a[c], rhs[piv], rhs[c]
        for r in range(c + 1, n):
            f = a[r][c] / a[c][c]
            if f:
                row_r, row_c = a[r], a[c]
                for k in range(c, n):
                    row_r[k] -= f * row_c[k]
                rhs[r] -= f * rhs[c]
    pi = [0.0] * n
    for r in range(n - 1, -1, -1):
        pi[r] = (rhs[r] - sum(a[r][k] * pi[k] for k in range(r + 1, n))) / a[r][r]
    pi = [max(x, 0.0) for x in pi]
    total = sum(pi)
    pi = [x / total for x in pi]
    share = 1.0 - pi[0]
    per_step = sum(pi[q] * taken[q] for q in range(1, n)) / share if share > 0 else 1.0
    return share, per_step, sum(pi[q] * times[q] for q in range(n))


def _shared_tail_rate(s: Scenario, decode_s, f, ctx: float, clipped: float, window: float, prompt: float, budget: int,
                      output_mean: float, p: float, first: float) -> tuple[float, float]:
    """(rate, step) of :func:`_prefill_tail_rps` where whole prompts share a step: the most requests per second whose
    prefill steps (:func:`chunk_step_chain`) stay at most ``1 − p`` of all steps, the decode batch ``b = rate ×
    E[output] × E[step]`` (Little's Law on the slots), by bisection. [requests/s], [s]"""

    keys1 = step_inputs.prefill_keys(prompt, 0.0, s.causal_attention)  # one prompt, attending to itself
    windowed1 = min(keys1, window * prompt)

    def steps_at(rate: float) -> tuple[float, float]:
        b, share, step1 = 1.0, 0.0, first
        for _ in range(20):  # the batch and the mean step it implies, to a fixed point
            shared = max(int(max(budget - b, prompt) // prompt), 1)

            def prefill_step(m: int, b=b) -> float:  # m whole prompts, each attending to itself alone
                return f(b, b * ctx, b * clipped, m * prompt, m * keys1, m * windowed1, b * ctx, b * clipped)

            share, _, mean = chunk_step_chain(rate, decode_s(b), prefill_step, shared)
            step1 = prefill_step(1)
            nb = max(rate * output_mean * mean, 1.0)
            if abs(nb - b) <= 1e-6 * nb:
                break
            b = nb
        return share, step1

    tail = 1.0 - p
    lo, g_lo = 0.0, -tail
    hi = 1.0
    g_hi = steps_at(hi)[0] - tail
    while g_hi <= 0 and hi < 1e6:
        lo, g_lo, hi = hi, g_hi, 2.0 * hi
        g_hi = steps_at(hi)[0] - tail
    side = 0
    for _ in range(60):  # false position with the Illinois step: the share of prefill steps grows with the rate
        if hi - lo <= 1e-6 * hi:
            break
        mid = hi - g_hi * (hi - lo) / (g_hi - g_lo)
        if not lo < mid < hi:
            mid = 0.5 * (lo + hi)
        g = steps_at(mid)[0] - tail
        if abs(g) <= 1e-9:
            lo = mid
            break
        if g < 0:
            lo, g_lo = mid, g
            g_hi = g_hi * 0.5 if side == -1 else g_hi
            side = -1
        else:
            hi, g_hi = mid, g
            g_lo = g_lo * 0.5 if side == 1 else g_lo
            side = 1
    return max(lo, 1e-12), steps_at(max(lo, 1e-12))[1]


def _tail_rate(decode_s, prefill_s, first: float, output_mean: float, prompt: float, p: float) -> tuple[float, float]:
    """(rate, step) of :func:`_prefill_tail_rps` where a chunk's step is over the target: the root of
    ``h(λ) = (1 − p) ÷ (n·τ̄(λ)) − λ``, with ``τ̄`` the mean step at the decode batch ``b = λ·E[output]·τ̄`` it implies
    (Little's Law on the slots), by false position with the Illinois step. [requests/s], [s]

    ``h`` falls as the rate grows (a larger batch, a longer mean step, smaller chunks), so 1 req/s and the rate it
    implies bracket the root. Where ``n = ⌈prompt ÷ chunk⌉`` jumps over the root, the bracket closes on the jump and the
    rate kept is the side the tail still holds (``h ≥ 0``). A damped fixed-point iteration took about 500 step
    evaluations to reach the same root to 1e-12, and in about 1 in 600 cases (a rate past the replica's capacity,
    where the implied batch diverges) stopped at 200 rounds short of it, with ``h`` off by 40-200% of the rate.
    """

    def at(rate: float) -> tuple[float, float]:  # (h(rate), the chunk's step there)
        def mean(m: float) -> tuple[float, float, float]:  # the mean step the batch of mean step m implies
            b = max(rate * output_mean * m, 1.0)
            step, chunk = prefill_s(b)
            return p * decode_s(b) + (1.0 - p) * step, step, chunk

        prev = first
        for _ in range(200):  # m = mean(m), from below, with Aitken's extrapolation of each pair of rounds
            m, step, chunk = mean(prev)
            if abs(m - prev) <= 1e-13 * m:
                break
            m2, step, chunk = mean(m)
            if abs(m2 - m) <= 1e-13 * m2:
                m = m2
                break
            q = (m2 - m) / (m - prev)  # the rounds' contraction: near 1 close to the replica's capacity
            prev, m = (m2 + (m2 - m) * q / (1.0 - q) if 0.0 < q < 1.0 else m2), m2
        return (1.0 - p) / (math.ceil(prompt / chunk) * m) - rate, step

    a = 1.0
    fa, sa = at(a)
    if abs(fa) <= 1e-12 * a:
        return a, sa
    b = a + fa  # the rate 1 req/s implies: on the root's other side, h falling
    fb, sb = at(b)
    for _ in range(60):  # where h does not fall all the way, widen until it changes sign
        if fa * fb <= 0:
            break
        a, fa, sa = b, fb, sb
        b = 2.0 * b if fb > 0 else 0.5 * b
        fb, sb = at(b)
    for _ in range(200):
        if abs(fb) <= 1e-12 * b:
            return b, sb
        if fa * fb > 0 or abs(b - a) <= 1e-14 * b:  # the bracket closed on a jump of n (or never formed)
            break
        c = b - fb * (b - a) / (fb - fa)
        if not min(a, b) < c < max(a, b):
            c = 0.5 * (a + b)
        fc, sc = at(c)
        if fc * fb < 0:
            a, fa, sa = b, fb, sb
        else:
            fa *= 0.5  # Illinois: the end kept twice counts half, so the bracket closes from both sides
        b, fb, sb = c, fc, sc
    return (b, sb) if fb >= 0 else (a, sa)


def budget_options(s: Scenario, tr: step_results.Traffic, tp: int, load_replicas: float) -> list[tuple[int, int | None]]:
    """The queueing path's replicas at each of :data:`STEP_BUDGETS`: which step budget keeps the promise with the
    fewest replicas. [(tokens, replicas)]

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats).
    tr : steps.Traffic
        Steps 1-3 and the demand, from :func:`xlplan.plan.steps.traffic`.
    tp : int
        GPUs per replica. [GPUs]
    load_replicas : float
        The closed form's load in replicas. [replicas]

    Returns
    -------
    list of tuple
        ``(budget [tokens], replicas [replicas] or None where no fleet keeps the wait)`` for every budget, smallest
        first.

    Notes
    -----
    Smaller steps stall decodes less (each carries a shorter prefill chunk) but spread a prompt over more of them;
    larger steps prefill faster but hold every decode of the step for the whole chunk. Which wins depends on the model,
    the GPU and the lengths: the 70B at TP 4 of issue 18 needs 4 replicas with 256-token steps and 14 with 512
    (simulated), where this path gives 4 and 17.
    """
    return [(b, queue_path(dataclasses.replace(s, max_num_batched_tokens=float(b)), tr, tp, load_replicas).replicas)
            for b in STEP_BUDGETS]
