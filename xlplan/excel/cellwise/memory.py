"""The memory path as spreadsheet-sized functions: KV cache per token and per conversation, weights, KV room, GPUs.

Part of :mod:`xlplan.excel.cellwise`; each composes
:mod:`xlplan.serving.memory` and :mod:`xlplan.serving.engines` on catalog look-ups.

References
----------
Runbook, document 14, step 4 · "The memory path: 600 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU".
"""

from __future__ import annotations

from xlplan import fleet
from xlplan.catalog.specs import ModelSpec
from xlplan.excel.cellwise.inputs import gpu_spec, model_spec
from xlplan.serving import engines, memory
from xlplan.units import GIB


def kv_bytes_per_token(model: str | ModelSpec, kv_dtype: str = "bf16") -> float:
    """KV cache per token with every layer full-length. [bytes/token]

    Parameters
    ----------
    model : str or ModelSpec
        Catalog model name, Hugging Face id or alias (e.g. 'llama-3.1-8b'), or a model spec.
    kv_dtype : str
        KV-cache precision: 'bf16', 'fp16', 'fp8', 'int8' or 'fp32'.

    Returns
    -------
    float
        KV cache per token over all layers, sliding windows ignored. [bytes/token]
    """
    return memory.kv_bytes_per_token(model_spec(model), kv_dtype)


def kv_gib_per_conversation(model: str | ModelSpec, conversation_tokens: float, kv_dtype: str = "bf16") -> float:
    """KV cache one conversation of prompt + output tokens holds (sliding windows respected). [GiB]

    Parameters
    ----------
    model : str or ModelSpec
        Catalog model name, Hugging Face id or alias (e.g. 'llama-3.1-8b'), or a model spec.
    conversation_tokens : float
        Prompt plus output tokens the cache is sized at (p50 + p50 in the runbook). [tokens]
    kv_dtype : str
        KV-cache precision: 'bf16', 'fp16', 'fp8', 'int8' or 'fp32'.

    Returns
    -------
    float
        KV cache of one conversation; sliding-window layers hold at most their window. [GiB]

    References
    ----------
    Runbook, document 14, step 4 · "The memory path: 600 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU".

    Examples
    --------
    The runbook: Llama-3.1-8B, 2,300 tokens in bf16 = 0.281 GiB.

    >>> round(kv_gib_per_conversation("llama-3.1-8b", 2300), 3)
    0.281
    """
    return _kv_bytes_per_conversation(model_spec(model), conversation_tokens, kv_dtype) / GIB


def _kv_bytes_per_conversation(m: ModelSpec, tokens: float, kv_dtype: str) -> float:
    per_layer = memory.kv_bytes_per_token_per_layer(m, kv_dtype)
    full = m.num_hidden_layers - m.sliding_window_layers
    return memory.kv_bytes_per_conversation(tokens, per_layer, full, m.sliding_window_layers, m.sliding_window)


def weights_gib(model: str | ModelSpec, weights_dtype: str = "bf16") -> float:
    """Weight footprint of the whole model. [GiB]

    Parameters
    ----------
    model : str or ModelSpec
        Catalog model name, Hugging Face id or alias (e.g. 'llama-3.1-8b'), or a model spec.
    weights_dtype : str
        Weight precision: 'bf16', 'fp16', 'fp8', 'int8', 'int4', 'mxfp4', 'nvfp4', 'fp4' or 'fp32'.

    Returns
    -------
    float
        Weights of the whole model, block-scale overhead included. [GiB]
    """
    return memory.weights_gib(model_spec(model), weights_dtype)


def kv_budget_gib(gpu: str | float, weights_gib_per_gpu: float, memory_utilisation: float, overhead_gib: float,
                  engine: str = "runbook", activation_gib: float = 0.0, tp: int = 1,
                  visible_gib: float | None = None) -> float:
    """KV room per GPU by the engine's memory rule (the runbook's: memory × utilisation − weights − overhead). [GiB]

    Parameters
    ----------
    gpu : str or float
        Catalog GPU name, or its memory as the driver reports it. [GiB]
    weights_gib_per_gpu : float
        This GPU's share of the weights. [GiB]
    memory_utilisation : float
        Fraction of memory the server may use (vLLM ``gpu_memory_utilization``; 0.90, not 90). [fraction]
    overhead_gib : float
        The runbook's stated overhead per GPU (its rule only). [GiB]
    engine : {'runbook', 'vllm', 'sglang', 'trtllm'}
        Whose rule (:func:`xlplan.serving.engines.kv_budget_gib`).
    activation_gib : float
        The engine's activation peak or workspace (vLLM, TensorRT-LLM; :func:`xlplan.plan.replica_at_tp.activation_gib`). [GiB]
    tp : int
        GPUs per replica: the non-torch memory grows past one. [GPUs]
    visible_gib : float, optional
        Memory CUDA can allocate; left out, the catalog's measured figure for a named GPU, else the driver's total
        less the driver's reserve (:func:`xlplan.serving.engines.visible_gib`). [GiB]

    Returns
    -------
    float
        KV room per GPU by that rule; negative when the weights do not fit. [GiB]

    References
    ----------
    Runbook, document 14, step 4 · "The memory path: 600 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU".
    The budget: 0.9 × 79.65 − 14.96 − 3.0 = 53.73 GiB on the H100; vLLM's start-up log (K01): 0.9 × 79.18 − 14.99 −
    4.76 − 0.13 = 51.38 GiB.
    """
    if isinstance(gpu, (int, float)):
        memory_gib, visible = float(gpu), engines.visible_gib(float(gpu))
    else:
        spec = gpu_spec(gpu)
        memory_gib, visible = spec.memory_gib, engines.visible_gib(spec.memory_gib, spec.cuda_visible_gib)
    if visible_gib is not None:
        visible = float(visible_gib)
    return engines.kv_budget_gib(engine, memory_gib, visible, memory_utilisation, weights_gib_per_gpu, overhead_gib,
                                 activation_gib, tp)


def memory_gpus(concurrency_: float, kv_gib_per_conversation_: float, kv_budget_gib_: float, tp: int = 1, kv_shards: int = 1) -> float:
    """The memory path in whole replicas of ``tp`` GPUs. [GPUs]

    Parameters
    ----------
    concurrency_ : float
        Requests in flight. [requests]
    kv_gib_per_conversation_ : float
        KV cache per conversation. [GiB]
    kv_budget_gib_ : float
        KV room per GPU. [GiB]
    tp : int
        GPUs per replica (tensor-parallel degree). [GPUs]
    kv_shards : int
        Ways the cache splits across the replica: min(TP, KV heads); 1 for MLA. [GPUs]

    Returns
    -------
    float
        ``tp × concurrency ÷ (kv_shards × budget ÷ KV per conversation)``, rounded up to whole replicas. [GPUs]

    References
    ----------
    Runbook, document 14, step 4 · "The memory path: 600 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU".

    Examples
    --------
    The runbook: 600 × 0.281 GiB ÷ 53.73 GiB = 3.14 -> 4.

    >>> memory_gpus(600, 0.28076171875, 53.73)
    4.0
    """
    exact = memory.memory_gpus_exact(concurrency_, kv_gib_per_conversation_, kv_budget_gib_, tp, kv_shards)
    return fleet.whole_gpus(exact, tp)
