"""One replica at a tensor-parallel degree: the serving model's replica, its efficiencies, and each GPU's KV room.

:func:`replica` cuts the model across ``tp`` GPUs for :mod:`xlplan.serving.step`; :func:`kv_budget_gib` is the memory
each GPU leaves for the KV cache by the engine's rule, after the weights and the activation peak. Written with
operators and :mod:`xlplan.arrays`, so the same code runs on floats and on a sweep's arrays.
"""

from __future__ import annotations

from xlplan import arrays
from xlplan.plan.scenario import Scenario
from xlplan.plan.tp_choice import ACTIVATION_BYTES
from xlplan.serving import engines, memory, step_inputs
from xlplan.units import GIB


def prefill_mfu(s: Scenario):
    """The MFU prefill runs at: the calibrated one, else the plan's MFU. [fraction]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.

    Returns
    -------
    float or array
        Prefill's achieved fraction of peak FLOP/s. [fraction]
    """
    return s.mfu if s.prefill_mfu is None else s.prefill_mfu


def decode_mfu(s: Scenario):
    """The MFU decode runs at: the calibrated one, else the plan's MFU. [fraction]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.

    Returns
    -------
    float or array
        Decode's achieved fraction of peak FLOP/s. [fraction]
    """
    return s.mfu if s.decode_mfu is None else s.decode_mfu


def replica(s: Scenario, tp: int) -> step_inputs.Replica:
    """One replica of ``tp`` GPUs for the serving model. [Replica]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tp : int
        GPUs in the replica (tensor-parallel degree). [GPUs]

    Returns
    -------
    serving.Replica
        The replica's physics: the model cut across ``tp`` GPUs, the GPU's peaks and the engine's efficiencies.
    """
    ep = s.expert_parallel if s.experts and tp % s.expert_parallel == 0 else 1
    return step_inputs.Replica(
        tp=tp, ep=ep, layers=s.layers, window_layers=s.window_layers,
        window=float(s.window) if s.window_layers else arrays.INF, hidden=s.hidden, attention_width=s.attention_width,
        active_params=s.active_params, expert_active_params=s.expert_active_params,
        dense_weight_bytes=s.weights_bytes - s.expert_weights_bytes,
        expert_weight_bytes=s.expert_weights_bytes, experts=s.experts, experts_per_token=s.experts_per_token,
        moe_layers=s.moe_layers, kv_bytes_per_token_layer=s.kv_bytes_per_token_layer,
        kv_shards=kv_shards(s, tp), peak_tflops=s.peak_tflops, attention_peak_tflops=s.attention_peak_tflops,
        hbm_tbps=s.hbm_tbps,
        link_gbps=s.link_gbps, link_latency_s=s.link_latency_s, activation_bytes=ACTIVATION_BYTES,
        prefill_mfu=prefill_mfu(s), decode_mfu=decode_mfu(s), bandwidth_efficiency=s.bandwidth_efficiency,
        step_overhead_s=s.step_overhead_s, expert_efficiency=s.expert_efficiency,
    )


def kv_shards(s: Scenario, tp: int) -> int:
    """Ways each sequence's KV cache splits across a replica (DP attention gives each rank its own sequences). [GPUs]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tp : int
        GPUs in the replica (tensor-parallel degree). [GPUs]

    Returns
    -------
    int
        ``tp`` with DP attention, else :func:`xlplan.serving.memory.kv_shards` (capped by the KV heads; 1 for MLA). [GPUs]
    """
    if s.attention_data_parallel:
        return tp
    return memory.kv_shards(tp, s.kv_shard_limit)


def activation_gib(s: Scenario, tp: int):
    """The engine's activation memory per GPU at start-up (what its KV rule takes out). [GiB]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tp : int
        GPUs in the replica (tensor-parallel degree). [GPUs]

    Returns
    -------
    float or array
        vLLM's (or TensorRT-LLM's) profiled activation peak per GPU; 0 for the other engines. [GiB]

    References
    ----------
    vLLM's start-up log line "model weights … peak activation … non-torch memory … KV Cache is …"
    (:func:`xlplan.serving.engines.activation_gib`).
    """
    peak = engines.activation_gib(s.engine, s.vocab, s.hidden, s.intermediate / tp, s.max_num_seqs, s.max_num_batched_tokens)
    return peak if s.engine in engines.PROFILED else 0.0 * s.memory_gib  # a sweep's array where memory is one


def kv_budget_gib(s: Scenario, tp: int):
    """KV room per GPU at TP ``tp``, by the engine's memory rule. [GiB]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tp : int
        GPUs in the replica (tensor-parallel degree). [GPUs]

    Returns
    -------
    float or array
        Memory left per GPU for the KV cache; not positive when the weights do not fit. [GiB]

    References
    ----------
    Runbook, document 14, step 4 · "The memory path: 600 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU".
    vLLM's start-up KV figure (``../shared/reference/measurements-public.csv`` K01):
    0.9 × 79.18 − 14.99 − 4.76 − 0.13 = 51.38 GiB.
    """
    return engines.kv_budget_gib(s.engine, s.memory_gib, s.visible_gib, memory_fraction(s, tp), s.weights_bytes / tp / GIB,
                                 s.overhead_gib, activation_gib(s, tp), tp)


def kv_budget_terms(s: Scenario, tp: int) -> tuple:
    """:func:`kv_budget_gib`'s operands at ``tp``, as the note prints them (:func:`xlplan.serving.engines.kv_budget_terms`).

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats).
    tp : int
        GPUs in the replica. [GPUs]

    Returns
    -------
    tuple
        ``(basis, basis_gib, utilisation, ((label, gib), …), after)``. [GiB]
    """
    return engines.kv_budget_terms(s.engine, s.memory_gib, s.visible_gib, memory_fraction(s, tp), s.weights_bytes / tp / GIB,
                                   s.overhead_gib, activation_gib(s, tp), tp)


def memory_fraction(s: Scenario, tp: int):
    """The memory fraction the engine runs at on a replica of ``tp`` GPUs: the plan's, else the engine's default. [fraction]

    Parameters
    ----------
    s : Scenario
        The plan's numbers: its stated fraction (None where it states none), engine, GPU memory and step budget.
    tp : int
        GPUs in the replica (tensor-parallel degree). [GPUs]

    Returns
    -------
    float or array
        ``s.memory_utilisation`` where stated; else :func:`xlplan.serving.engines.default_memory_fraction` at this TP:
        0.9 (vLLM, TensorRT-LLM, the runbook's rule), SGLang's from the GPU's memory, TP and step budget, with every GPU
        a DP rank under DP attention. A plan deploys today's release, so SGLang's rule is its current one. [fraction]

    References
    ----------
    sgl-project/sglang server_args.py ``_handle_gpu_memory_settings``; vLLM ``--gpu-memory-utilization`` (0.9);
    TensorRT-LLM ``KvCacheConfig.free_gpu_memory_fraction`` (0.9).
    """
    if s.memory_utilisation is not None:
        return s.memory_utilisation
    if s.engine != "sglang":
        return engines.DEFAULT_MEMORY_FRACTION[s.engine]
    def one(memory_gib, tp_, chunk):
        return engines.default_memory_fraction("sglang", float(memory_gib), int(tp_), "",
                                               int(tp_) if s.attention_data_parallel else 0, int(chunk))
    if arrays.is_array(s.memory_gib, tp, s.max_num_batched_tokens):  # a sweep's columns: element by element
        return arrays.numpy_module().vectorize(one, otypes=[float])(s.memory_gib, tp, s.max_num_batched_tokens)
    return one(s.memory_gib, tp, s.max_num_batched_tokens)


def kv_capacity_tokens(s: Scenario, tp: int, kv_gib: float | None = None) -> float:
    """Tokens one replica's KV cache holds, in tokens of every layer: the one count the simulator's cache and the
    benchmark predictions use (a sliding-window layer's share is clipped where the run counts what each sequence
    holds). [tokens]

    Parameters
    ----------
    s : Scenario
        The plan's numbers: the engine's memory rule, KV bytes per token and layer, layers.
    tp : int
        GPUs in the replica (tensor parallel). [GPUs]
    kv_gib : float, optional
        The KV budget per GPU; left out, :func:`kv_budget_gib` (the engine's memory rule at ``tp``). [GiB]

    Returns
    -------
    float
        ``max(KV budget per GPU, 0) × shards ÷ (KV bytes per token and layer × layers)``. [tokens]
    """
    budget = kv_budget_gib(s, tp) if kv_gib is None else kv_gib
    return max(budget, 0.0) * GIB * kv_shards(s, tp) / (s.kv_bytes_per_token_layer * s.layers)
