"""What a serving engine measures, predicted from a benchmark's stated conditions by the planner's own serving model.

A benchmark's conditions (model, precision, GPU and count, parallelism, engine and settings, lengths,
concurrency) are turned into a plan with fixed lengths and run through the planner's own functions:
:func:`xlplan.plan.scenario.resolve`, :func:`xlplan.plan.replica_at_tp.kv_budget_gib` (the engine's memory rule),
:func:`xlplan.plan.latency_step.latency_load` and :func:`xlplan.serving.step.step_time_s`. So ``xlplan validate`` and
``xlplan calibrate`` check the very model that sizes the fleet. Nothing here reads a measured figure. The
conditions and the plan they become are :mod:`xlplan.evidence.bench_conditions`'.

Notes
-----
- **KV capacity at start-up**: the engine's memory rule at the stated utilisation and budgets.
- **Offline maximum throughput**: each replica runs the largest batch it can — ``max_num_seqs``, what
  its KV cache holds at the mean context ``isl + osl/2``, and what the step budget leaves beside the
  prefill share, ``budget ÷ (1 + isl/osl)`` — each step carrying the batch's decodes and its
  steady-state share of prefill; output tokens/s = replicas × batch ÷ step. Where the benchmark states
  how many prompts it submitted at once (``num_prompts``: a drain at an infinite request rate), the
  drain itself (:mod:`xlplan.evidence.drain`): every prompt prefilled, the first wave's prefill beside no
  decodes, the last wave part-empty; output tokens/s = prompts × osl ÷ the time the last one ends.
- **Fixed concurrency** ``C``, as ``validate`` scores it: the benchmark's closed loop replayed through
  the simulator (:mod:`xlplan.evidence.replay`): ``C`` clients, each sending its next request when
  its last one ends, for the harness's warm-up and measured rounds; TTFT, inter-token latency and
  tokens/s as the benchmark measures them.
- **Its steady state in closed form** (:func:`steady_state`, what the fits work on): the batch is
  ``C`` per replica up to the same caps (beyond them requests wait); the inter-token latency is the
  step time; TTFT is the wait for a slot plus the prompt's prefill in chunks of what the step budget
  leaves beside the decodes; throughput is ``C·osl ÷ (TTFT + osl·ITL)`` per replica.

References
----------
Sarathi-Serve (Agrawal et al., OSDI 2024) for chunked prefill sharing decode steps; vLLM's scheduler
(vllm/v1/core/sched/scheduler.py: decodes first, then prefill up to ``max_num_batched_tokens``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from xlplan import arrays
from xlplan.catalog.specs import GPUSpec
from xlplan.evidence import replay
from xlplan.evidence.bench_conditions import Conditions, Efficiencies, plan_for
from xlplan.evidence.replay import Online
from xlplan.frozen import replaced
from xlplan.plan import latency_step, replica_at_tp, steps
from xlplan.schema import steps as step_results
from xlplan.serving import engines, step, step_inputs
from xlplan.units import GIB

ENGINE_DEFAULTS = Efficiencies()
"""Efficiencies with no field given: every figure the engine's and GPU's default (frozen, so one shared value). [—]"""


@dataclass(frozen=True)
class Replica:
    """A benchmark's replica as the planner sees it: its scenario, traffic, serving replica and KV room."""

    s: object  # xlplan.plan.scenario.Scenario
    gpu_name: str
    tr: step_results.Traffic
    r: step_inputs.Replica
    kv_gib_per_gpu: float  # the engine's KV room [GiB]
    kv_tokens: float  # tokens one replica's cache holds (all layers full-length) [tokens]


def replica_for(c: Conditions, eff: Efficiencies = ENGINE_DEFAULTS) -> Replica:
    """Resolve the benchmark's replica through the planner's own functions (the plan is resolved once per conditions).

    Parameters
    ----------
    c : Conditions
        The benchmark's conditions.
    eff : Efficiencies
        The efficiencies to run at; a field left None takes the engine's default.

    Returns
    -------
    Replica
        Its scenario, traffic, serving replica and the engine's KV room at start-up, at ``eff``.
    """
    return with_efficiencies(_replica(c), eff)


def with_efficiencies(rep: Replica, eff: Efficiencies) -> Replica:
    """The same replica at other efficiencies (nothing else depends on them). [Replica]

    Parameters
    ----------
    rep : Replica
        A benchmark's replica (:func:`replica_for`).
    eff : Efficiencies
        The efficiencies to run at; a field left None takes the engine's default for the replica's GPU.

    Returns
    -------
    Replica
        ``rep`` with its scenario's and serving replica's efficiencies replaced; its KV room unchanged.
    """
    e = eff.resolved(rep.s.engine, rep.gpu_name)
    s = replaced(rep.s, prefill_mfu=e.prefill_mfu, decode_mfu=e.decode_mfu, mfu=e.decode_mfu,
                 bandwidth_efficiency=e.bandwidth_efficiency, step_overhead_s=e.step_overhead_s, expert_efficiency=e.expert_efficiency)
    r = replaced(rep.r, prefill_mfu=e.prefill_mfu, decode_mfu=e.decode_mfu, bandwidth_efficiency=e.bandwidth_efficiency,
                 step_overhead_s=e.step_overhead_s, expert_efficiency=e.expert_efficiency)
    return replace(rep, s=s, r=r)


@functools.lru_cache(maxsize=4096)
def _replica(c: Conditions) -> Replica:
    """The benchmark's replica at the engine's default efficiencies, resolved once per conditions (a memo: the result
    depends on ``c`` alone). [Replica]"""
    from xlplan.plan.scenario import resolve

    s = resolve(plan_for(c, Efficiencies()))
    s = replace(s, visible_gib=_visible(c.gpu, s.visible_gib))
    if c.v0:
        s = replace(s, max_num_seqs=float(c.max_num_seqs or 256))
    tr = steps.traffic(s)
    r = replica_at_tp.replica(s, c.tp)
    kv = replica_at_tp.kv_budget_gib(s, c.tp) if not c.v0 else _v0_budget(c, s)
    return Replica(s, c.gpu.name, tr, r, kv, replica_at_tp.kv_capacity_tokens(s, c.tp, kv))


def _visible(gpu: GPUSpec, default: float) -> float:
    return gpu.cuda_visible_gib if gpu.cuda_visible_gib is not None else default


def _v0_budget(c: Conditions, s) -> float:
    from xlplan.serving import engines

    tokens = c.max_num_batched_tokens or 2048
    act = engines.vllm_activation_peak_gib(s.vocab, s.hidden, s.intermediate / c.tp, 256, tokens, v0=True)
    return engines.kv_budget_gib("vllm", s.memory_gib, s.visible_gib, replica_at_tp.memory_fraction(s, c.tp), s.weights_bytes / c.tp / GIB,
                                 0.0, act, c.tp)


def kv_capacity(c: Conditions) -> tuple[float, float]:
    """(KV room per GPU, tokens one replica holds) at start-up, by the engine's rule. [GiB], [tokens]

    Parameters
    ----------
    c : Conditions
        The benchmark's conditions.

    Returns
    -------
    kv_gib_per_gpu : float
        KV cache room on one GPU by the engine's memory rule (vLLM V0's profile where ``v0``). [GiB]
    kv_tokens : float
        Tokens one replica's cache holds, every layer full-length. [tokens]

    References
    ----------
    vLLM's start-up KV figure (``../shared/reference/measurements-public.csv``, category ``kv_capacity``; K01:
    0.9 × 79.18 − 14.99 − 4.76 − 0.13 = 51.38 GiB).
    """
    rep = replica_for(c)
    return rep.kv_gib_per_gpu, rep.kv_tokens


def batch_caps(rep: Replica) -> float:
    """The most sequences a replica runs at once: max_num_seqs, the step budget beside the prefill share, the KV cache. [sequences]

    Parameters
    ----------
    rep : Replica
        A benchmark's replica (:func:`replica_for`).

    Returns
    -------
    float
        The least of ``max_num_seqs``, ``max_num_batched_tokens ÷ (1 + prefill share)`` and the KV tokens ÷ the mean
        context ``isl + osl/2``. [sequences]

    References
    ----------
    vLLM's scheduler (vllm/v1/core/sched/scheduler.py): at most ``max_num_seqs`` running, decodes first, then prefill
    up to ``max_num_batched_tokens``.
    """
    s, tr = rep.s, rep.tr
    by_cache = rep.kv_tokens / latency_step.decode_context_tokens(tr)
    return arrays.minimum(latency_step.latency_batch_cap(s, tr), by_cache)


def step_s(rep: Replica, batch: float) -> float:
    """Mean step time at ``batch`` running sequences: their decodes and their share of prefill. [s]

    Parameters
    ----------
    rep : Replica
        A benchmark's replica (:func:`replica_for`).
    batch : float
        Sequences decoding in each step. [sequences]

    Returns
    -------
    float
        Time of one engine step carrying the decodes and their steady-state share of prefill. [s]

    Notes
    -----
    Where the engine runs prefill first (SGLang, :func:`xlplan.serving.engines.prefill_first`) the prefill share runs
    in steps of its own beside no decode (:func:`xlplan.plan.latency_step.prefill_first_step_s`), as the simulator
    schedules it.

    References
    ----------
    Sarathi-Serve (Agrawal et al., OSDI 2024): chunked prefill sharing decode steps.
    """
    if engines.prefill_first(rep.s.engine):
        return latency_step.prefill_first_step_s(rep.s, rep.tr, rep.r, batch)
    return step.step_time_s(rep.r, latency_step.latency_load(rep.s, rep.tr, rep.r, batch))


def server_scenario(c: Conditions, eff: Efficiencies, ttft_s: float, tpot_s: float):
    """The benchmark's replica as a plan promising p99 TTFT and inter-token latency: what a Server scenario asks. [Scenario]

    Parameters
    ----------
    c : Conditions
        The benchmark's conditions: lengths (fixed at their means), GPUs, layout, engine.
    eff : Efficiencies
        The efficiencies to run at; a field left None takes the engine's default.
    ttft_s, tpot_s : float
        The p99 limits on time to first token and time per output token. [s], [s/token]

    Returns
    -------
    Scenario
        The resolved plan of :func:`xlplan.evidence.bench_conditions.plan_for` with the promise at the 99th percentile,
        the engine's KV room as :func:`replica_for` takes it. [—]
    """
    from xlplan.plan.scenario import resolve

    rep = replica_for(c, eff)
    plan = plan_for(c, eff)
    plan = plan.model_copy(update={"promise": plan.promise.model_copy(update={"ttft_s": ttft_s, "itl_s": tpot_s,
                                                                             "percentile": 99.0})})
    return replace(resolve(plan), visible_gib=rep.s.visible_gib)


def offline_output_tok_s(c: Conditions, eff: Efficiencies = ENGINE_DEFAULTS) -> tuple[float, float]:
    """(Output tokens/s of the whole system at maximum throughput, the batch each replica runs). [tokens/s], [sequences]

    Parameters
    ----------
    c : Conditions
        The benchmark's conditions (offline: ``num_prompts`` submitted at once, where stated).
    eff : Efficiencies
        The efficiencies to run at; a field left None takes the engine's default.

    Returns
    -------
    output_tok_s : float
        Output tokens/s of all replicas; 0 when no batch fits. Where ``num_prompts`` is stated, the drain the
        benchmark measures (:func:`xlplan.evidence.drain.drain_output_tok_s`): every prompt prefilled, the first wave's
        prefill beside no other decodes, the last wave part-empty, ``num_prompts × osl ÷`` the time until the last
        request ends. Otherwise the steady state: replicas × batch ÷ step time. [tokens/s]
    batch : float
        Sequences each replica runs. With ``num_prompts``: the mean, the busiest replica's running sequences
        (decoding, or prefilling a chunk) averaged over the drain's time, at most its slots, :func:`batch_caps`
        rounded down. Otherwise the cap, :func:`batch_caps` itself: the steady state's batch. [sequences]

    References
    ----------
    Sarathi-Serve (Agrawal et al., OSDI 2024): chunked prefill sharing decode steps. vLLM's scheduler
    (vllm/v1/core/sched/scheduler.py): decodes first, then prefill up to ``max_num_batched_tokens``, at most
    ``max_num_seqs`` running.
    """
    from xlplan.evidence import drain

    rep = replica_for(c, eff)
    batch = batch_caps(rep)
    if batch <= 0:
        return 0.0, 0.0
    if c.num_prompts is not None:
        return drain.drain_output_tok_s(rep, c.num_prompts, c.isl, c.osl, c.replicas, batch)
    return c.replicas * batch / step_s(rep, batch), batch


def fixed_concurrency(c: Conditions, eff: Efficiencies = ENGINE_DEFAULTS, harness=None) -> Online:
    """Inter-token latency, TTFT and throughput at a fixed concurrency, as the benchmark measures them: its closed loop
    replayed through the simulator.

    Parameters
    ----------
    c : Conditions
        The benchmark's conditions, with ``concurrency`` set (the whole system's).
    eff : Efficiencies
        The efficiencies to run at; a field left None takes the engine's default.
    harness : xlplan.evidence.replay.Harness, optional
        How the benchmark ran (rounds, warm-up, statistic); left out, what the conditions state
        (:func:`xlplan.evidence.replay.harness_for`).

    Returns
    -------
    Online
        The mean decode batch and waiting requests per replica, the harness's TTFT and inter-token latency, and the
        system's output tokens/s.

    Notes
    -----
    ``concurrency`` clients each send the next request when the last one ends, served by the simulator that verifies
    plans on the benchmark's replica (:func:`xlplan.evidence.replay.closed_loop`): a request waits behind the other
    clients' prefills and shares their decode steps, as in the benchmark. The fits work on :func:`steady_state`.

    References
    ----------
    Little's Law (Little, Operations Research 9(3), 1961) holds in the replay; vLLM's V1 scheduler
    (vllm/v1/core/sched/scheduler.py) or SGLang's prefill first, as the simulator schedules them.
    """
    return _replayed(c, eff.resolved(c.engine, c.gpu.name), harness or replay.harness_for(c))


@functools.lru_cache(maxsize=32768)
def _replayed(c: Conditions, eff: Efficiencies, harness) -> Online:
    """The replay at fully resolved efficiencies, once per (conditions, efficiencies, harness): a memo, as the result
    depends on them alone (validation predicts a row at the shipped defaults for several figures and folds). [Online]"""
    return replay.closed_loop(replica_for(c, eff), c, harness)


@dataclass(frozen=True)
class SteadyState:
    """A fixed-concurrency benchmark's steady state in closed form. Units in the field comments."""

    batch: float  # running sequences per replica [sequences]
    waiting: float  # requests per replica waiting for a slot [requests]
    itl_s: float  # mean inter-token latency [s]
    ttft_s: float  # mean time to first token [s]
    output_tok_s: float  # whole system [tokens/s]


def steady_state(c: Conditions, eff: Efficiencies = ENGINE_DEFAULTS) -> SteadyState:
    """Inter-token latency, TTFT and throughput at a fixed concurrency in closed form: the steady state the fit works on.

    The fits (:func:`xlplan.evidence.calibrate.predicted`: ``calibrate`` and the default table) work on this closed
    form: smooth in the efficiencies and a hundred times cheaper than the replay that ``validate`` scores
    (:func:`fixed_concurrency`), with the same step time.

    Parameters
    ----------
    c : Conditions
        The benchmark's conditions, with ``concurrency`` set (the whole system's).
    eff : Efficiencies
        The efficiencies to run at; a field left None takes the engine's default.

    Returns
    -------
    SteadyState
        Batch and waiting requests per replica, the mean inter-token latency and TTFT, and the system's output tokens/s.

    Notes
    -----
    With ``C`` requests per replica, the batch is ``C`` up to :func:`batch_caps` (beyond it requests wait); the
    inter-token latency is the step time; TTFT is the wait for a slot plus :func:`prefill_under_load_s`; throughput is
    ``C·osl ÷ (TTFT + osl·ITL)`` per replica.

    References
    ----------
    Little's Law (Little, Operations Research 9(3), 1961) for the closed loop's throughput; Sarathi-Serve (Agrawal
    et al., OSDI 2024) for chunked prefill beside the decodes.
    """
    rep = replica_for(c, eff)
    per_replica = c.concurrency / c.replicas
    batch = min(per_replica, batch_caps(rep))
    itl = step_s(rep, batch)
    waiting = max(per_replica - batch, 0.0)
    wait_s = waiting / batch * c.osl * itl if batch > 0 else float("inf")
    ttft = wait_s + prefill_under_load_s(rep, batch, c.isl)
    return SteadyState(batch, waiting, itl, ttft, c.replicas * per_replica * c.osl / (ttft + c.osl * itl))


def prefill_under_load_s(rep: Replica, batch: float, prompt_tokens: float) -> float:
    """A prompt's prefill while ``batch`` sequences decode: chunks of what the step budget leaves beside them. [s]

    Parameters
    ----------
    rep : Replica
        A benchmark's replica (:func:`replica_for`).
    batch : float
        Sequences decoding beside the prompt. [sequences]
    prompt_tokens : float
        Length of the prompt to prefill. [tokens]

    Returns
    -------
    float
        ``n`` steps, each with the decodes and one chunk of ``prompt ÷ n`` tokens, ``n = ceil(prompt ÷ (budget −
        batch))``; where the engine runs prefill first (SGLang) the decodes wait, and the chunks fill the whole
        budget beside none. [s]

    References
    ----------
    Sarathi-Serve (Agrawal et al., OSDI 2024); vLLM's scheduler (vllm/v1/core/sched/scheduler.py: decodes first, then
    prefill up to ``max_num_batched_tokens``).
    """
    if engines.prefill_first(rep.s.engine):
        return latency_step.prefill_in_chunks_s(rep.s, rep.r, prompt_tokens)
    return latency_step.prefill_in_chunks_s(rep.s, rep.r, prompt_tokens, batch, latency_step.decode_context_tokens(rep.tr))
