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


def kv_budget_gib(gpu: str | float, model: str | ModelSpec | float, memory_utilisation: float = 0.90,
                  overhead_gib: float = 3.0, engine: str = "vllm", activation_gib: float | None = None, tp: int = 1,
                  visible_gib: float | None = None, weights_dtype: str = "bf16") -> float:
    """KV room per GPU by the engine's memory rule: the plan's ``memory.kv_budget_gib_per_gpu``. [GiB]

    Parameters
    ----------
    gpu : str or float
        Catalog GPU name, or its memory as the driver reports it. [GiB]
    model : str, ModelSpec or float
        Catalog model name, Hugging Face id or alias, or a model spec: its weights in ``weights_dtype`` split over
        ``tp`` GPUs, and its activation peak at the engine's default budgets for the GPU; or a number, this GPU's share
        of the weights. [GiB]
    memory_utilisation : float
        The engine's memory fraction (vLLM ``gpu_memory_utilization``; 0.90, not 90). [fraction]
    overhead_gib : float
        The runbook's stated overhead per GPU (its rule only). [GiB]
    engine : {'runbook', 'vllm', 'sglang', 'trtllm'}
        Whose rule (:func:`xlplan.serving.engines.kv_budget_gib`); vLLM's, as a plan that states none.
    activation_gib : float, optional
        The engine's activation peak or workspace (vLLM, TensorRT-LLM); left out, the model's at the engine's default
        budgets (:func:`xlplan.serving.engines.activation_gib`), as the plan's where it states no ``max_num_seqs`` or
        ``max_num_batched_tokens``. [GiB]
    tp : int
        GPUs per replica: the weights split over them, the non-torch memory grows past one. [GPUs]
    visible_gib : float, optional
        Memory CUDA can allocate; left out, the catalog's measured figure for a named GPU, else the driver's total
        less the driver's reserve (:func:`xlplan.serving.engines.visible_gib`). [GiB]
    weights_dtype : str
        Weight precision of a named model: 'bf16', 'fp16', 'fp8', 'int8', 'int4', 'mxfp4', 'nvfp4', 'fp4' or 'fp32'.

    Returns
    -------
    float
        KV room per GPU by that rule; negative when the weights do not fit. [GiB]

    Raises
    ------
    ValueError
        The engine deducts an activation peak and neither it nor a model to derive it from is given.

    References
    ----------
    Runbook, document 14, step 4 · "The memory path: 600 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU".
    The budget: 0.9 × 79.65 − 14.96 − 3.0 = 53.73 GiB on the H100 by the runbook's rule; vLLM's start-up log (K01):
    0.9 × 79.18 − 14.99 − 4.76 − 0.13 = 51.38 GiB.

    Examples
    --------
    Llama-3.1-8B in bf16 on one H100 at vLLM's defaults, the plan's 51.42 GiB: 0.9 × 79.18 visible − 14.96 weights −
    4.76 activation peak − 0.13 non-torch; by the runbook's rule, 53.73 GiB.

    >>> round(kv_budget_gib("h100-sxm", "llama-3.1-8b"), 2), round(kv_budget_gib("h100-sxm", 14.957, engine="runbook"), 2)
    (51.42, 53.73)
    """
    from xlplan.plan.engine_settings import default_budgets

    if isinstance(gpu, (int, float)):
        memory_gib, gpu_name = float(gpu), ""
        visible = engines.visible_gib(memory_gib)
    else:
        spec = gpu_spec(gpu)
        memory_gib, gpu_name = spec.memory_gib, spec.name
        visible = engines.visible_gib(spec.memory_gib, spec.cuda_visible_gib)
    if visible_gib is not None:
        visible = float(visible_gib)
    if isinstance(model, (int, float)):
        weights = float(model)
        if activation_gib is None and engine in engines.PROFILED:
            raise ValueError(f"activation_gib: not given; expected the {engine} rule's activation peak [GiB], or a model "
                             "name in place of the weights to derive it from")
    else:
        m = model_spec(model)
        weights = memory.weights_bytes(m, weights_dtype) / tp / GIB
        if activation_gib is None:
            seqs, tokens = default_budgets(engine, memory_gib, gpu_name)
            activation_gib = engines.activation_gib(engine, m.vocab_size, m.hidden_size, m.intermediate_size / tp, seqs, tokens)
    return engines.kv_budget_gib(engine, memory_gib, visible, memory_utilisation, weights, overhead_gib,
                                 activation_gib or 0.0, tp)


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
