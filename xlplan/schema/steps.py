"""The seven steps' results as typed records: :class:`Traffic` (steps 1-3), :class:`Paths` (4-6), :class:`Bill` (7).

:class:`Solution` holds one scenario solved: the chosen tensor-parallel degree's paths, every candidate's, and the
bill. :mod:`xlplan.plan.steps` computes them; the renderers read them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Traffic:
    """Steps 1-3 and the demand they imply. Units in the field comments."""

    prompt_mean: float  # E[prompt] [tokens]
    prompt_second_moment: float  # E[prompt²] [tokens²]
    output_mean: float  # E[output] [tokens]
    output_second_moment: float  # E[output²] [tokens²]
    conversation_tokens: float  # length the cache is sized at [tokens]
    time_in_system_s: float  # [s]
    concurrency: float  # [requests]
    kv_bytes_per_conversation: float  # [bytes]
    kv_gib_per_conversation: float  # [GiB]
    kv_gib_total: float  # [GiB]
    prefill_flops_per_request: float  # [FLOP]
    prefill_keys_per_request: float  # token-key pairs of one prompt's prefill (causal or full, as the policy counts) [token·keys]
    prefill_keys_window_per_request: float  # the same, clipped at the sliding window [token·keys]
    decode_flops_per_token: float  # [FLOP/token]
    prefill_tflops: float  # [TFLOP/s]
    decode_tflops: float  # [TFLOP/s]


@dataclass(frozen=True, slots=True)
class Paths:
    """Steps 4-6 at one tensor-parallel degree. Units in the field comments."""

    tp: int  # [GPUs per replica]
    kv_shards: int  # [GPUs]
    weights_gib_per_gpu: float  # [GiB]
    kv_budget_gib_per_gpu: float  # [GiB]
    conversations_per_replica: float  # [conversations]
    memory_gpus_exact: float  # [GPUs]
    memory_gpus: float  # [GPUs], whole replicas
    tflops_per_gpu: float  # peak × MFU [TFLOP/s]
    compute_gpus_exact: float  # [GPUs]
    compute_gpus: float  # [GPUs]
    max_decode_batch: float  # [conversations per replica]
    latency_gpus_exact: float  # [GPUs]
    latency_gpus: float  # [GPUs]
    ttft_p95_s: float  # prefill alone of the prompt at the promise's percentile (p95 by default) [s]
    load_replicas: float  # [replicas]
    load: float  # [GPUs]
    with_redundancy: float  # [GPUs]
    purchased: float  # [GPUs]
    decode_step_s: float  # at the batch each load replica carries [s]


@dataclass(frozen=True, slots=True)
class Bill:
    """Step 7. Units in the field comments."""

    billed_gpus: float  # [GPUs]
    monthly_usd: float  # [USD/month]
    tokens_per_month: float  # [tokens/month]
    usd_per_mtok: float  # [USD/Mtok]
    api_usd_per_mtok_blended: float | None  # [USD/Mtok]
    api_monthly_usd: float | None  # [USD/month]
    breakeven_tokens_per_month: float | None  # [tokens/month]


@dataclass(frozen=True, slots=True)
class Solution:
    """One scenario solved: the chosen TP degree's paths, every candidate's, and the bill."""

    traffic: Traffic
    paths: Paths
    candidates: tuple[Paths, ...]
    bill: Bill
    binding: str
    binding_paths: tuple[str, ...]
