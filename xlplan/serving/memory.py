"""The memory path: weights, KV cache, the budget per GPU, and GPUs for the cache.

Notes
-----
KV bytes per token (all layers full-length):
``2 × layers × kv_heads × head_dim × bytes`` (GQA/MHA) or
``(kv_lora_rank + qk_rope_head_dim) × layers × bytes`` (MLA).
A sliding-window layer holds at most its window.
KV budget per GPU: ``memory × utilisation − weights per GPU − overhead``.
Memory path: ``concurrency × KV per conversation ÷ budget``, in whole replicas.

References
----------
Runbook, document 14, step 4 · "The memory path: 600 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU".
vLLM's start-up KV figure (``../shared/reference/measurements-public.csv`` K01):
0.9 × 79.18 − 14.99 − 4.76 − 0.13 = 51.38 GiB.
"""

from __future__ import annotations

from xlplan import arrays
from xlplan.catalog import parameters
from xlplan.catalog.specs import KVDtype, ModelSpec, WeightDtype
from xlplan.units import GIB

WEIGHT_BYTES_PER_PARAM: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,  # per-tensor / per-channel scales: negligible
    "int8": 1.0,
    "int4": 0.5 + 2.0 / 128,  # AWQ/GPTQ: one fp16 scale per group of 128
    "mxfp4": 0.5 + 1.0 / 32,  # OCP MX: one E8M0 byte per block of 32
    "nvfp4": 0.5 + 1.0 / 16,  # NVFP4: one FP8 E4M3 byte per block of 16
    "fp4": 0.5 + 1.0 / 16,  # read as NVFP4
}
"""Bytes per quantized weight, block-scale overhead included. [bytes/parameter]"""

KV_BYTES_PER_ELEMENT: dict[str, float] = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}
"""Bytes per cached K or V element. [bytes/element]"""

UNQUANTIZED_BYTES_PER_PARAM = 2.0
"""Embeddings, the output head and any vision tower stay in 16-bit in quantized checkpoints. [bytes/parameter]"""


def weights_bytes(m: ModelSpec, weights_dtype: WeightDtype) -> float:
    """Weight footprint of the whole model. [bytes]

    Parameters
    ----------
    m : ModelSpec
        The model's shape, from its ``config.json``.
    weights_dtype : str
        Weight precision of the checkpoint, a key of ``WEIGHT_BYTES_PER_PARAM`` ('bf16', 'fp8', 'int4', 'mxfp4', ...).

    Returns
    -------
    float
        Bytes of every weight: the quantised ones with their block scales, the 16-bit ones at 2 bytes. [bytes]

    Notes
    -----
    Decoder weights at the weight dtype (with block-scale overhead); the embedding,
    the output head and any vision tower at 16 bits, as fp8/int4 checkpoints ship
    them (an MXFP4 MoE checkpoint, gpt-oss, quantises only the routed experts) (Llama-3.3-70B FP8-dynamic: 70.55 B params, 2.10 B of them embeddings →
    72.65e9 B = 67.66 GiB; vLLM logs 2 × 33.88 = 67.76 GiB, measurements-public K04).

    References
    ----------
    vLLM's start-up log of model weights (``../shared/reference/measurements-public.csv`` K04):
    Llama-3.3-70B-Instruct-FP8-dynamic at TP 2 on H100, 33.88 GiB of weights per GPU.
    """
    kept = parameters.embedding_params(m) + m.vision_params
    if weights_dtype == "mxfp4" and m.num_experts:
        # gpt-oss ships only the routed experts in MXFP4; attention, router and embeddings stay 16-bit
        kept = parameters.total_params(m) - parameters.routed_expert_params(m)
    quantized = parameters.total_params(m) - kept
    high = max(WEIGHT_BYTES_PER_PARAM[weights_dtype], UNQUANTIZED_BYTES_PER_PARAM)
    return quantized * WEIGHT_BYTES_PER_PARAM[weights_dtype] + kept * high


def expert_weights_bytes(m: ModelSpec, weights_dtype: WeightDtype) -> float:
    """Bytes of all routed experts (quantised with the decoder): what a step reads only where tokens are routed. [bytes]

    Parameters
    ----------
    m : ModelSpec
        The model's shape, from its ``config.json``.
    weights_dtype : str
        Weight precision of the checkpoint, a key of ``WEIGHT_BYTES_PER_PARAM`` ('bf16', 'fp8', 'int4', 'mxfp4', ...).

    Returns
    -------
    float
        Bytes of the routed experts' weights at the weight dtype; 0 for a dense model. [bytes]

    Examples
    --------
    A dense model has none.

    >>> from xlplan.catalog import get_model
    >>> expert_weights_bytes(get_model("llama-3.1-8b"), "bf16")
    0.0
    """
    return float(parameters.routed_expert_params(m)) * WEIGHT_BYTES_PER_PARAM[weights_dtype]


def weights_gib(m: ModelSpec, weights_dtype: WeightDtype) -> float:
    """Weight footprint of the whole model. [GiB]

    Parameters
    ----------
    m : ModelSpec
        The model's shape, from its ``config.json``.
    weights_dtype : str
        Weight precision of the checkpoint, a key of ``WEIGHT_BYTES_PER_PARAM`` ('bf16', 'fp8', 'int4', 'mxfp4', ...).

    Returns
    -------
    float
        :func:`weights_bytes` in gibibytes (2**30 bytes). [GiB]
    """
    return weights_bytes(m, weights_dtype) / GIB


def kv_bytes_per_token_per_layer(m: ModelSpec, kv_dtype: KVDtype) -> float:
    """KV cache one token takes in one layer. [bytes/token/layer]

    Parameters
    ----------
    m : ModelSpec
        The model's shape: its attention kind, KV heads and head width, or its MLA latent widths.
    kv_dtype : str
        KV-cache precision, a key of ``KV_BYTES_PER_ELEMENT`` ('fp32', 'bf16', 'fp16', 'fp8', 'int8').

    Returns
    -------
    float
        ``2 × kv_heads × head_dim × bytes`` (GQA/MHA) or ``(kv_lora_rank + qk_rope_head_dim) × bytes`` (MLA).
        [bytes/token/layer]
    """
    b = KV_BYTES_PER_ELEMENT[kv_dtype]
    if m.attention == "mla":
        return (m.kv_lora_rank + m.qk_rope_head_dim) * b
    return 2 * m.num_key_value_heads * m.head_dim * b


def kv_bytes_per_token(m: ModelSpec, kv_dtype: KVDtype) -> float:
    """KV cache per token with every layer full-length. [bytes/token]

    Parameters
    ----------
    m : ModelSpec
        The model's shape: its layers, attention kind, KV heads and head width, or its MLA latent widths.
    kv_dtype : str
        KV-cache precision, a key of ``KV_BYTES_PER_ELEMENT`` ('fp32', 'bf16', 'fp16', 'fp8', 'int8').

    Returns
    -------
    float
        Layers × :func:`kv_bytes_per_token_per_layer`, sliding windows ignored. [bytes/token]

    References
    ----------
    ``../shared/reference/models.csv``, column ``kv_bytes_per_token_bf16``: 2 × layers × kv_heads × head_dim × 2 bytes;
    MLA: (kv_lora_rank + qk_rope_head_dim) × layers × 2 bytes.

    Examples
    --------
    Llama-3.1-8B in bf16: 2 × 32 × 8 × 128 × 2 = 131,072 B.

    >>> from xlplan.catalog import get_model
    >>> kv_bytes_per_token(get_model("llama-3.1-8b"), "bf16")
    131072.0
    """
    return m.num_hidden_layers * kv_bytes_per_token_per_layer(m, kv_dtype)


def kv_bytes_per_conversation(tokens, per_layer_bytes, full_layers, window_layers=0, window=None):
    """KV cache one conversation of ``tokens`` holds. [bytes]

    Parameters
    ----------
    tokens : float or array
        Conversation length, prompt plus output. [tokens]
    per_layer_bytes : float
        KV per token per layer. [bytes/token/layer]
    full_layers : int
        Layers that cache the whole conversation. [layers]
    window_layers : int
        Sliding-window layers, which cache at most ``window`` tokens. [layers]
    window : int, optional
        The sliding window. [tokens]

    Returns
    -------
    float or array
        KV cache the conversation holds over all layers. [bytes]

    Notes
    -----
    ``per_layer × (full_layers × n + window_layers × min(n, window))``.

    References
    ----------
    Runbook, document 14, step 4 · "600 × 0.281 GiB = 168.5 GiB": KV per conversation, the tokens it holds times
    the KV per token.
    """
    held = full_layers * tokens
    if window_layers:
        held = held + window_layers * arrays.minimum(tokens, float(window))
    return per_layer_bytes * held


def kv_budget_gib(memory_gib, memory_utilisation, weights_gib_per_gpu, overhead_gib):
    """KV cache room on one GPU. [GiB]

    Parameters
    ----------
    memory_gib : float
        Memory as the driver reports it. [GiB]
    memory_utilisation : float
        Fraction of memory the engine may use (vLLM ``gpu_memory_utilization``). [fraction]
    weights_gib_per_gpu : float
        This GPU's share of the weights. [GiB]
    overhead_gib : float
        Activations, CUDA graphs, NCCL and runtime memory. [GiB]

    Returns
    -------
    float or array
        Memory left for the KV cache on one GPU; negative when the weights do not fit. [GiB]

    Notes
    -----
    ``memory × utilisation − weights − overhead``; negative means the weights do not fit.

    References
    ----------
    Runbook, document 14, step 4 · "168.5 GiB ÷ 53.73 GiB per GPU": the runbook's budget, 0.9 × 79.65 − 14.96 − 3.0.
    vLLM's engine arguments: ``gpu_memory_utilization``, the fraction of GPU memory the engine may use.

    Examples
    --------
    The runbook's H100: 0.9 × 79.65 − 14.96 − 3.0 = 53.73 GiB.

    >>> round(kv_budget_gib(81559 / 1024, 0.9, 8030261248 * 2 / 2**30, 3.0), 2)
    53.73
    """
    return memory_gib * memory_utilisation - weights_gib_per_gpu - overhead_gib


def kv_shards(tp, kv_heads, attention="gqa"):
    """Ways the KV cache splits across a tensor-parallel group. [GPUs]

    Parameters
    ----------
    tp : int
        Tensor-parallel degree of the replica. [GPUs]
    kv_heads : int
        Key/value heads of the model (GQA). [heads]
    attention : {'gqa', 'mla'}
        Attention kind: 'gqa' (multi-head, grouped-query, multi-query) or 'mla' (one cached latent per token).

    Returns
    -------
    int
        GPUs over which one conversation's cache is divided: ``min(tp, kv_heads)``, or 1 for MLA. [GPUs]

    Notes
    -----
    GQA shards by KV head, so a group wider than the KV heads replicates them:
    ``min(tp, kv_heads)``. MLA's latent is one vector per token, replicated on
    every rank (vLLM): 1.

    References
    ----------
    vLLM's tensor-parallel attention: KV heads split across the ranks, replicated where the group is wider than
    the KV heads; the MLA latent cache replicated on every rank.
    """
    if attention == "mla":
        return 1
    return min(tp, kv_heads)


def conversations_per_replica(kv_budget_gib_per_gpu, kv_gib_per_conversation, shards):
    """Conversations one replica's cache holds. [conversations]

    Parameters
    ----------
    kv_budget_gib_per_gpu : float or array
        KV cache room on one GPU (:func:`kv_budget_gib`); negative is read as none. [GiB]
    kv_gib_per_conversation : float or array
        KV cache one conversation holds. [GiB]
    shards : int or array
        Ways each conversation's cache splits across the replica (:func:`kv_shards`). [GPUs]

    Returns
    -------
    float or array
        Conversations the replica's cache holds at once, not rounded. [conversations]

    Notes
    -----
    Each of the ``tp`` GPUs holds ``1/shards`` of every conversation's cache, so a
    replica holds ``shards × budget ÷ KV per conversation``; zero room gives zero.
    """
    return arrays.maximum(kv_budget_gib_per_gpu, 0.0) * shards / kv_gib_per_conversation


def memory_gpus_exact(concurrency, kv_gib_per_conversation, kv_budget_gib_per_gpu, tp=1, shards=1):
    """GPUs the cache needs before rounding to whole replicas. [GPUs]

    Parameters
    ----------
    concurrency : float or array
        Conversations in flight at peak (Little's Law). [requests]
    kv_gib_per_conversation : float or array
        KV cache one conversation holds. [GiB]
    kv_budget_gib_per_gpu : float or array
        KV cache room on one GPU (:func:`kv_budget_gib`). [GiB]
    tp : int or array
        Tensor-parallel degree of a replica. [GPUs]
    shards : int or array
        Ways each conversation's cache splits across the replica (:func:`kv_shards`). [GPUs]

    Returns
    -------
    float or array
        GPUs the memory path needs, before rounding; infinite when the weights leave no room. [GPUs]

    Notes
    -----
    ``tp × concurrency ÷ conversations per replica``; for TP = 1 this is the runbook's
    ``concurrency × KV per conversation ÷ budget`` (600 × 0.281 ÷ 53.73 = 3.14).
    Infinite when the weights leave no room.

    References
    ----------
    Runbook, document 14, step 4 · "The memory path: 600 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU".
    """
    return tp * arrays.div_pos(concurrency, conversations_per_replica(kv_budget_gib_per_gpu, kv_gib_per_conversation, shards))
