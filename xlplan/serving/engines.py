"""Serving engines: how each sizes its KV cache at start-up, and its scheduling defaults.

The KV capacity of a replica is predicted at plan time from the engine's own memory rule
(``policy.engine``), not from a start-up log:

- ``runbook``: ``memory × utilisation − weights − overhead`` — the runbook's convention, with the
  overhead a stated input (3 GiB);
- ``vllm``: ``utilisation × CUDA-visible memory − weights − activation peak − non-torch memory``
  (vLLM's ``gpu_memory_utilization``; its V1 engine profiles one forward pass of
  ``max_num_batched_tokens`` tokens and the sampler on ``max_num_seqs`` rows);
- ``sglang``: ``mem_fraction_static × visible − weights − reserve`` (SGLang's static pool holds the
  weights and the KV cache);
- ``trtllm``: ``kv_cache_free_gpu_mem_fraction × (visible − weights − activations)`` (TensorRT-LLM takes
  its fraction of the memory left after the engine is loaded).

The efficiencies each engine runs at when a plan states none are :mod:`xlplan.serving.efficiency_defaults`'.

References
----------
vLLM's start-up log line "model weights … peak activation … non-torch memory … KV Cache is …":
0.9 × 79.18 − 14.99 − 4.76 − 0.13 = 51.38 GiB (Llama-3.1-8B on H100; llm-d-benchmark
config_explorer/empirical-vllm-memory-results.md @4f4d449). vLLM's default scheduling budgets:
vllm/engine/arg_utils.py ``_set_default_args`` (8,192 batched tokens and 1,024 sequences for the API
server on GPUs with at least 70 GiB, 2,048 and 256 below). SGLang ``--mem-fraction-static``;
TensorRT-LLM ``KvCacheConfig.free_gpu_memory_fraction``.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

from xlplan.units import GIB

Engine = Literal["runbook", "vllm", "sglang", "trtllm"]
ENGINES: tuple[str, ...] = get_args(Engine)
"""The serving engines whose rules and defaults xlplan has, in the plan file's order: the one list. [text]"""

DRIVER_RESERVED_GIB = 0.47
"""Memory the driver reports but CUDA cannot allocate, where the catalog has no CUDA-visible figure:
the H100's 81,559 MiB (79.65 GiB) against 79.18 GiB visible to vLLM (llm-d-benchmark, same file). [GiB]"""

SAMPLER_BYTES_PER_SEQ_VOCAB = 38.2
"""vLLM V1's profiled sampler: bytes per (sequence × vocabulary entry), about 9.5 float32 copies of the
logits. Fitted by least squares, with :data:`FORWARD_HIDDEN_TENSORS`, to the activation peaks six vLLM ~0.11
start-up logs print (llm-d-benchmark empirical-vllm-memory-results.md @4f4d449: Llama-3.1-8B 4.76, Llama-3.3-70B
FP8 TP1 and TP2 4.84, Qwen3-32B TP2 5.64, Qwen3-0.6B 5.56, gpt-oss 7.38 GiB); residuals under 5 MiB. [bytes]"""

FORWARD_HIDDEN_TENSORS = 1.34
"""vLLM V1's profiled forward pass: bf16 tensors of ``max_num_batched_tokens × hidden`` at its peak (same fit). [tensors]"""

V0_FORWARD_HIDDEN_TENSORS = 6.0
"""vLLM V0 (before 0.8) profiled an unfused forward: the MLP's ``2·I/tp`` plus this many hidden-sized bf16
tensors per token — 106.5 KB/token for Llama-3.1-8B, as two V0 logs at 20,000 and 29,000 tokens show
(107 KB/token between them; vllm-project/vllm issue comments, measurements KV01/KV02). [tensors]"""

NON_TORCH_GIB = {1: 0.13, "tp": 0.55}
"""CUDA context and allocator memory outside PyTorch: 0.13 GiB on one GPU, 0.55 GiB with NCCL buffers at TP > 1
(the same llm-d logs: 0.13/0.14 at TP 1, 0.54/0.55 at TP 2). [GiB]"""

SGLANG_RESERVE_GIB = 1.5
"""Memory SGLang's static pool leaves for CUDA context, NCCL and graphs beyond the weights (the gap a
Qwen3-235B-A22B FP8 TP4 start-up log leaves: 0.93 × 79.18 − 55.0 − 16.47 = 2.2 GiB, less non-torch). [GiB]"""


def visible_gib(memory_gib: float, cuda_visible_gib: float | None = None) -> float:
    """Memory CUDA can allocate: the catalog's measured figure, else the driver total less the reserve. [GiB]

    Parameters
    ----------
    memory_gib : float
        Memory as the driver reports it. [GiB]
    cuda_visible_gib : float, optional
        The catalog's measured CUDA-visible memory, where it has one. [GiB]

    Returns
    -------
    float
        ``cuda_visible_gib``, else ``memory_gib`` − :data:`DRIVER_RESERVED_GIB`. [GiB]

    References
    ----------
    llm-d-benchmark config_explorer/empirical-vllm-memory-results.md @4f4d449 · the H100's 81,559 MiB (79.65 GiB)
    against 79.18 GiB visible to vLLM.

    Examples
    --------
    >>> round(visible_gib(79.647), 3), visible_gib(79.647, 79.18)
    (79.177, 79.18)
    """
    return cuda_visible_gib if cuda_visible_gib is not None else memory_gib - DRIVER_RESERVED_GIB


def _non_torch_gib(tp: int) -> float:
    """Non-PyTorch memory per GPU. [GiB]

    Parameters
    ----------
    tp : int
        GPUs per replica; above 1, NCCL buffers count too. [GPUs]

    Returns
    -------
    float
        CUDA context and allocator memory outside PyTorch (:data:`NON_TORCH_GIB`). [GiB]

    References
    ----------
    llm-d-benchmark config_explorer/empirical-vllm-memory-results.md @4f4d449 · vLLM start-up logs: 0.13/0.14 GiB at
    TP 1, 0.54/0.55 GiB at TP 2.
    """
    return NON_TORCH_GIB[1] if tp <= 1 else NON_TORCH_GIB["tp"]


def vllm_defaults(memory_gib: float, gpu_name: str = "", v0: bool = False) -> tuple[int, int]:
    """vLLM's default (max_num_seqs, max_num_batched_tokens) for its OpenAI server on this GPU. [sequences], [tokens]

    Parameters
    ----------
    memory_gib : float
        The GPU's memory. [GiB]
    gpu_name : str
        The GPU's display name; an A100 keeps the smaller budgets whatever its memory.
    v0 : bool
        vLLM before 0.8 (the V0 engine).

    Returns
    -------
    max_num_seqs : int
        Sequences the scheduler runs at once. [sequences]
    max_num_batched_tokens : int
        Tokens one step may carry; 0 for V0, whose budget the caller sets to the context limit. [tokens]

    Notes
    -----
    V1: 1,024 and 8,192 on GPUs with at least 70 GiB that are not A100s; 256 and 2,048 otherwise (arg_utils.py).
    V0 had no chunked prefill by default: 256 sequences, and the batched-token budget is the context limit,
    set by the caller.

    References
    ----------
    vLLM, vllm/engine/arg_utils.py ``_set_default_args`` · 8,192 batched tokens and 1,024 sequences for the API
    server on GPUs with at least 70 GiB, 2,048 and 256 below.
    """
    if v0:
        return 256, 0
    if memory_gib >= 70 and "a100" not in gpu_name.lower():
        return 1024, 8192
    return 256, 2048


def vllm_activation_peak_gib(vocab: int, hidden: int, intermediate_per_gpu: float, max_num_seqs: int,
                             max_num_batched_tokens: int, v0: bool = False) -> float:
    """Peak activation memory of vLLM's start-up profiling run. [GiB]

    Parameters
    ----------
    vocab : int
        Vocabulary. [tokens]
    hidden : int
        Model width. [elements]
    intermediate_per_gpu : float
        This GPU's share of the MLP width (V0's unfused forward holds it). [elements]
    max_num_seqs : int
        Sequences the sampler is profiled on. [sequences]
    max_num_batched_tokens : int
        Tokens of the profiled forward pass. [tokens]
    v0 : bool
        vLLM before 0.8 (the V0 engine).

    Returns
    -------
    float
        The profiled sampler plus forward pass (V1), or the unfused forward pass (V0). [GiB]

    Notes
    -----
    V1: ``38.2 B × seqs × vocab + 1.34 × tokens × hidden × 2 B``. V0: ``tokens × (2·I/tp + 6·hidden) × 2 B``.

    References
    ----------
    llm-d-benchmark config_explorer/empirical-vllm-memory-results.md @4f4d449 · the activation peaks six vLLM ~0.11
    start-up logs print, to which the V1 coefficients are fitted (residuals under 5 MiB). V0: two start-up logs at
    20,000 and 29,000 tokens (vllm-project/vllm issue comments, measurements KV01/KV02).

    Examples
    --------
    Llama-3.1-8B on an H100 with V1's defaults (1,024 sequences, 8,192 tokens): 4.76 GiB as logged.

    >>> round(vllm_activation_peak_gib(128256, 4096, 14336, 1024, 8192), 2)
    4.76
    """
    if v0:
        return max_num_batched_tokens * (2.0 * intermediate_per_gpu + V0_FORWARD_HIDDEN_TENSORS * hidden) * 2.0 / GIB
    sampler = SAMPLER_BYTES_PER_SEQ_VOCAB * max_num_seqs * vocab
    forward = FORWARD_HIDDEN_TENSORS * max_num_batched_tokens * hidden * 2.0
    return (sampler + forward) / GIB


PREFILL_FIRST: tuple[str, ...] = ("sglang",)
"""The engines whose scheduler runs waiting prompts' prefill as a batch of its own, the decodes paused, before the next
decode step: SGLang's ``get_next_batch_to_run`` builds a new prefill batch first ("Run prefill first if possible") and
decodes only when no prompt can be admitted; a prefill mixes with the decodes only with ``--enable-mixed-chunk``
(``ServerArgs.enable_mixed_chunk``, False by default) (sgl-project/sglang python/sglang/srt/managers/scheduler.py,
server_args.py). vLLM's V1 scheduler and TensorRT-LLM's in-flight batching put prefill chunks beside the decodes in
one step. [text]"""


def prefill_first(engine: str) -> bool:
    """Whether the engine runs waiting prompts' prefill before the decodes, in steps of its own (:data:`PREFILL_FIRST`). [bool]

    Parameters
    ----------
    engine : str
        The plan's ``policy.engine`` (or a benchmark's).

    Returns
    -------
    bool
        True for SGLang (by default: no mixed chunks); False for vLLM, TensorRT-LLM and the runbook's convention,
        whose steps carry prefill chunks beside the decodes.

    References
    ----------
    sgl-project/sglang python/sglang/srt/managers/scheduler.py ``get_next_batch_to_run`` ("Run prefill first if
    possible"); server_args.py ``enable_mixed_chunk: bool = False``.

    Examples
    --------
    >>> prefill_first("sglang"), prefill_first("vllm")
    (True, False)
    """
    return engine in PREFILL_FIRST


SGLANG_CHUNK_TIERS_GIB: tuple[tuple[float, int], ...] = ((35.0, 2048), (60.0, 4096), (160.0, 8192))
"""SGLang's default ``chunked_prefill_size`` by the GPU's memory: 2,048 tokens below 35 GiB (A10, L40, 4090), 4,096
below 60 GiB (A100 40GB), 8,192 below 160 GiB (H100, H200, A100 80GB), 16,384 above (B200, MI300X)
(:func:`sglang_chunked_prefill_tokens`). [GiB], [tokens]"""


def sglang_chunked_prefill_tokens(memory_gib: float) -> int:
    """SGLang's default prefill budget on a GPU: its ``chunked_prefill_size`` by memory tier. [tokens]

    Parameters
    ----------
    memory_gib : float
        The GPU's memory as the driver reports it (SGLang reads the device's total memory). [GiB]

    Returns
    -------
    int
        2,048, 4,096, 8,192 or 16,384 tokens (:data:`SGLANG_CHUNK_TIERS_GIB`). [tokens]

    References
    ----------
    sgl-project/sglang python/sglang/srt/server_args.py ``_handle_gpu_memory_settings``: ``gpu_mem < 35 * 1024``
    (MB) → 2048, ``< 60 * 1024`` → 4096, ``< 160 * 1024`` → 8192, else 16384; the prefill batch is also held to
    ``max_prefill_tokens`` (16,384 by default), which no tier exceeds.

    Examples
    --------
    >>> sglang_chunked_prefill_tokens(79.65), sglang_chunked_prefill_tokens(179.06), sglang_chunked_prefill_tokens(44.4)
    (8192, 16384, 4096)
    """
    for below_gib, tokens in SGLANG_CHUNK_TIERS_GIB:
        if memory_gib < below_gib:
            return tokens
    return 16384


SGLANG_GRAPH_BS_TIERS_GIB: tuple[tuple[float, int, int], ...] = ((20.0, 8, 8), (35.0, 24, 80), (60.0, 32, 160),
                                                                  (90.0, 256, 512), (160.0, 256, 512))
"""SGLang's default ``cuda_graph_max_bs`` by the GPU's memory: (below GiB, at TP below 4, at TP 4 or more); 512 above
160 GiB (:func:`sglang_mem_fraction_static`). [GiB], [sequences]"""

SGLANG_GRAPH_BS_ABOVE = 512
"""SGLang's default ``cuda_graph_max_bs`` on GPUs of 160 GiB or more, at any TP. [sequences]"""

SGLANG_RESERVE_MB = {"base": 512.0, "per_chunk_token": 1.5, "min_chunk_tokens": 2048.0, "per_graph_seq": 2.0,
                     "per_tp_gpu": 1024.0 / 8.0, "dp_per_graph_seq": 3.0, "dp_large_per_graph_seq": 1.5,
                     "dp_large_above_seqs": 300.0, "floor": 10240.0, "floor_above_gib": 60.0, "graph_tp_large": 4.0}
"""The terms of SGLang's reserve (:func:`sglang_mem_fraction_static`), as its server_args.py writes them: 512 MB, 1.5 MB
per token of the prefill chunk (at least 2,048), 2 MB per CUDA-graph sequence, TP ÷ 8 × 1,024 MB, with DP attention 3 MB
(and 1.5 more above 300 sequences) per graph sequence and rank, at least 10,240 MB above 60 GiB; the larger graph batch
from TP 4. [MB], [tokens], [sequences], [GiB], [GPUs]"""

SGLANG_MEMORY_RULE_SINCE = (0, 5, 3)
"""The first SGLang release whose default ``mem_fraction_static`` follows the GPU's memory
(:func:`sglang_mem_fraction_static`): sgl-project/sglang#10975 and #11076 (merged by 2025-09-30), released in 0.5.3
(version bump #11263, 2025-10-06). Earlier releases set it by TP alone (:data:`SGLANG_TP_FRACTIONS`). [release]"""

SGLANG_TP_FRACTIONS: tuple[tuple[int, float], ...] = ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88))
"""SGLang's default ``mem_fraction_static`` before 0.5.3: 0.79 at TP 16 or more, 0.81 at 8, 0.85 at 4, 0.87 at 2, 0.88
at TP 1 (server_args.py ``__post_init__``, "Set mem fraction static, which depends on the tensor parallelism size").
[TP], [fraction]"""

DEFAULT_MEMORY_FRACTION = {"vllm": 0.90, "trtllm": 0.90, "runbook": 0.90}
"""The memory fraction an engine runs at when none is set, where it is a constant: vLLM ``--gpu-memory-utilization``
0.9 (its engine-arguments documentation, the releases the corpora hold), TensorRT-LLM
``KvCacheConfig.free_gpu_memory_fraction`` 0.9; SGLang's is computed (:func:`sglang_mem_fraction_static`). [fraction]"""


def _release(version: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of the first release number in a version text, else None. [release]"""
    m = re.search(r"(?<![\d.])(\d+)\.(\d+)(?:\.(\d+))?", version or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


def sglang_mem_fraction_static(memory_gib: float, tp: int, version: str = "", dp_ranks: int = 0,
                               chunk_tokens: int | None = None) -> float:
    """SGLang's default ``mem_fraction_static``: the share of the GPU its static pool (weights and KV cache) takes
    when the server is not told one. [fraction]

    Parameters
    ----------
    memory_gib : float
        The GPU's memory as the driver reports it (SGLang reads the device's total). [GiB]
    tp : int
        The server's tensor-parallel size (its whole attention-DP group). [GPUs]
    version : str
        The SGLang release as stated; before 0.5.3 the older rule by TP alone, blank or unreadable the current one.
    dp_ranks : int
        Attention data-parallel ranks (``--dp`` with ``--enable-dp-attention``); 0 without DP attention. [ranks]
    chunk_tokens : int, optional
        The server's ``chunked_prefill_size``; left out, its default for the GPU
        (:func:`sglang_chunked_prefill_tokens`). [tokens]

    Returns
    -------
    float
        From 0.5.3: ``round((M − R) ÷ M, 3)`` with M the memory in MB and R the reserve in MB: 512 + 1.5 ×
        max(chunk, 2,048) + 2 × ``cuda_graph_max_bs`` (:data:`SGLANG_GRAPH_BS_TIERS_GIB`) + TP ÷ 8 × 1,024, with
        attention DP 3 × bs × ranks more (and 1.5 × bs × ranks above 300 sequences), at least 10,240 MB on GPUs
        above 60 GiB. Before 0.5.3: :data:`SGLANG_TP_FRACTIONS`. [fraction]

    References
    ----------
    sgl-project/sglang python/sglang/srt/server_args.py ``_handle_gpu_memory_settings`` (#10975, with #11076's 512 MB
    and TP ÷ 8 terms; the same code as commit 037c3982, which gpustack/gpustack#3901 copies): "reserved_mem = 512 …
    max(self.chunked_prefill_size, 2048) * 1.5 … self.cuda_graph_max_bs * 2 … self.tp_size * self.pp_size / 8 * 1024
    … if gpu_mem > 60 * 1024: reserved_mem = max(reserved_mem, 10 * 1024)".

    Examples
    --------
    An H100 (81,559 MiB, 79.647 GiB) at TP 1: 512 + 12,288 + 512 + 128 = 13,440 MB reserved, (81,559 − 13,440) ÷
    81,559 = 0.835; the same GPU on SGLang 0.4.6 at TP 8: 0.81.

    >>> sglang_mem_fraction_static(79.647, 1), sglang_mem_fraction_static(79.647, 8, "v0.4.6")
    (0.835, 0.81)
    """
    release = _release(version)
    if release is not None and release < SGLANG_MEMORY_RULE_SINCE:
        return next(f for at_least, f in SGLANG_TP_FRACTIONS if tp >= at_least)
    k = SGLANG_RESERVE_MB
    mb = memory_gib * 1024.0
    chunk = chunk_tokens if chunk_tokens else sglang_chunked_prefill_tokens(memory_gib)
    bs = next((small if tp < k["graph_tp_large"] else large for below, small, large in SGLANG_GRAPH_BS_TIERS_GIB
               if memory_gib < below), SGLANG_GRAPH_BS_ABOVE)
    reserved = (k["base"] + max(chunk, k["min_chunk_tokens"]) * k["per_chunk_token"] + bs * k["per_graph_seq"]
                + tp * k["per_tp_gpu"])
    if dp_ranks:
        reserved += bs * dp_ranks * (k["dp_per_graph_seq"] + (k["dp_large_per_graph_seq"] if bs > k["dp_large_above_seqs"] else 0.0))
    if memory_gib > k["floor_above_gib"]:
        reserved = max(reserved, k["floor"])
    return round(1.0 - reserved / mb, 3)


def default_memory_fraction(engine: str, memory_gib: float, tp: int, version: str = "", dp_ranks: int = 0,
                            chunk_tokens: int | None = None) -> float:
    """The memory fraction an engine runs at when none is set: vLLM's and TensorRT-LLM's 0.9, SGLang's computed. [fraction]

    Parameters
    ----------
    engine : {'runbook', 'vllm', 'sglang', 'trtllm'}
        Whose default.
    memory_gib : float
        The GPU's memory as the driver reports it. [GiB]
    tp : int
        The server's tensor-parallel size. [GPUs]
    version : str
        The engine's release as stated (SGLang's rule changed in 0.5.3).
    dp_ranks : int
        Attention data-parallel ranks, 0 without DP attention (SGLang reserves more for them). [ranks]
    chunk_tokens : int, optional
        SGLang's ``chunked_prefill_size`` where set; left out, its default for the GPU. [tokens]

    Returns
    -------
    float
        :data:`DEFAULT_MEMORY_FRACTION`, or :func:`sglang_mem_fraction_static` for SGLang. [fraction]

    References
    ----------
    vLLM ``--gpu-memory-utilization`` (default 0.9, docs.vllm.ai engine arguments); TensorRT-LLM ``KvCacheConfig.free_gpu_memory_fraction``
    (0.9); sgl-project/sglang server_args.py ``_handle_gpu_memory_settings``.

    Examples
    --------
    An H200 (143,771 MiB) at TP 8 on SGLang: 512 + 12,288 + 2 × 512 + 1,024 = 14,848 MB reserved,
    (143,771 − 14,848) ÷ 143,771 = 0.897.

    >>> default_memory_fraction("vllm", 79.647, 1), default_memory_fraction("sglang", 143771 / 1024, 8)
    (0.9, 0.897)
    """
    if engine == "sglang":
        return sglang_mem_fraction_static(memory_gib, tp, version, dp_ranks, chunk_tokens)
    return DEFAULT_MEMORY_FRACTION[engine]


PROFILED: tuple[str, ...] = ("vllm", "trtllm")
"""The engines whose memory rule deducts an activation peak or workspace (:func:`activation_gib`). [text]"""


def activation_gib(engine: str, vocab: int, hidden: int, intermediate_per_gpu, max_num_seqs, max_num_batched_tokens):
    """The activation memory the engine's memory rule deducts per GPU at start-up. [GiB]

    Parameters
    ----------
    engine : {'runbook', 'vllm', 'sglang', 'trtllm'}
        Whose rule.
    vocab : int
        Vocabulary. [tokens]
    hidden : int
        Model width. [elements]
    intermediate_per_gpu : float or array
        This GPU's share of the dense MLP width: the model's ``intermediate_size`` ÷ TP. [elements]
    max_num_seqs : float or array
        Sequences the engine runs at once (vLLM profiles its sampler on them). [sequences]
    max_num_batched_tokens : float or array
        Tokens one engine step may carry (the profiled forward pass). [tokens]

    Returns
    -------
    float or array
        vLLM's profiled peak (V1), TensorRT-LLM's workspace (V0's unfused forward pass, no sampler); 0 for the
        runbook's rule (its stated overhead holds it) and SGLang's (its reserve does). [GiB]

    References
    ----------
    vLLM's start-up log line "model weights … peak activation … non-torch memory … KV Cache is …"
    (:func:`vllm_activation_peak_gib`).

    Examples
    --------
    Llama-3.1-8B on an H100 at vLLM's defaults (1,024 sequences, 8,192 tokens): 4.76 GiB, as logged.

    >>> round(activation_gib("vllm", 128256, 4096, 14336, 1024, 8192), 2), activation_gib("sglang", 128256, 4096, 14336, 1024, 8192)
    (4.76, 0.0)
    """
    if engine == "vllm":
        return vllm_activation_peak_gib(vocab, hidden, intermediate_per_gpu, max_num_seqs, max_num_batched_tokens)
    if engine == "trtllm":
        return vllm_activation_peak_gib(vocab, hidden, intermediate_per_gpu, 0, max_num_batched_tokens, v0=True)
    return 0.0


def kv_budget_gib(engine: str, memory_gib: float, visible: float, utilisation: float, weights_gib_per_gpu: float,
                  overhead_gib: float, activation_gib: float, tp: int):
    """KV-cache room per GPU by the engine's own memory rule. [GiB]

    Parameters
    ----------
    engine : {'runbook', 'vllm', 'sglang', 'trtllm'}
        Whose rule.
    memory_gib : float
        Memory as the driver reports it (the runbook's figure). [GiB]
    visible : float
        Memory CUDA can allocate (:func:`visible_gib`). [GiB]
    utilisation : float
        The engine's memory fraction (gpu_memory_utilization, mem_fraction_static, free_gpu_memory_fraction). [fraction]
    weights_gib_per_gpu : float
        This GPU's share of the weights. [GiB]
    overhead_gib : float
        The runbook's stated overhead (its rule only). [GiB]
    activation_gib : float
        The engine's activation peak or workspace. [GiB]
    tp : int
        GPUs per replica (non-torch memory). [GPUs]

    Returns
    -------
    float
        KV-cache room per GPU. Negative when the weights do not fit. [GiB]

    References
    ----------
    Runbook, document 14, step 4 · "600 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU" (the runbook's rule).
    vLLM ``gpu_memory_utilization``; its start-up log (``../shared/reference/measurements-public.csv`` K01):
    0.9 × 79.18 − 14.99 − 4.76 − 0.13 = 51.38 GiB. SGLang ``--mem-fraction-static``; TensorRT-LLM
    ``KvCacheConfig.free_gpu_memory_fraction``.

    Examples
    --------
    The runbook's H100: 0.9 × 79.65 − 14.96 − 3.0 = 53.73 GiB; vLLM's on the same card (log K01): 51.38 GiB.

    >>> round(kv_budget_gib("runbook", 79.647, 79.18, 0.9, 14.957, 3.0, 0.0, 1), 2)
    53.73
    >>> round(kv_budget_gib("vllm", 79.647, 79.18, 0.9, 14.99, 0.0, 4.76, 1), 2)
    51.38
    """
    if engine == "runbook":
        return memory_gib * utilisation - weights_gib_per_gpu - overhead_gib
    if engine == "vllm":
        return utilisation * visible - weights_gib_per_gpu - activation_gib - _non_torch_gib(tp)
    if engine == "sglang":
        return utilisation * visible - weights_gib_per_gpu - SGLANG_RESERVE_GIB
    if engine == "trtllm":
        return utilisation * (visible - weights_gib_per_gpu - activation_gib - _non_torch_gib(tp))
    raise ValueError(f"policy.engine: got {engine!r}; expected one of {', '.join(ENGINES)}")


def kv_budget_terms(engine: str, memory_gib: float, visible: float, utilisation: float, weights_gib_per_gpu: float,
                    overhead_gib: float, activation_gib: float, tp: int) -> tuple[str, float, float, tuple, bool]:
    """The operands of :func:`kv_budget_gib`, as the note prints them: what the rule starts from, the fraction it
    takes, what it deducts, and whether the fraction applies after the deductions (TensorRT-LLM). [GiB]

    Parameters
    ----------
    engine : {'runbook', 'vllm', 'sglang', 'trtllm'}
        Whose rule.
    memory_gib : float
        Memory as the driver reports it. [GiB]
    visible : float
        Memory CUDA can allocate. [GiB]
    utilisation : float
        The engine's memory fraction. [fraction]
    weights_gib_per_gpu : float
        This GPU's share of the weights. [GiB]
    overhead_gib : float
        The runbook's stated overhead. [GiB]
    activation_gib : float
        The engine's activation peak or workspace. [GiB]
    tp : int
        GPUs per replica. [GPUs]

    Returns
    -------
    tuple
        ``(basis, basis_gib, utilisation, ((label, gib), …), after)``: ``utilisation × basis − Σ gib`` (or
        ``utilisation × (basis − Σ gib)`` when ``after``) is :func:`kv_budget_gib` (a test holds them equal). [GiB]

    References
    ----------
    Runbook, document 14, step 4 · "600 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU" (the runbook's rule).
    vLLM's start-up log (``../shared/reference/measurements-public.csv`` K01): 0.9 × 79.18 − 14.99 − 4.76 − 0.13.
    """
    if engine == "runbook":
        return "memory", memory_gib, utilisation, (("weights", weights_gib_per_gpu), ("overhead", overhead_gib)), False
    if engine == "vllm":
        return "visible", visible, utilisation, (("weights", weights_gib_per_gpu), ("activation peak", activation_gib),
                                                 ("non-torch", _non_torch_gib(tp))), False
    if engine == "sglang":
        return "visible", visible, utilisation, (("weights", weights_gib_per_gpu), ("SGLang reserve", SGLANG_RESERVE_GIB)), False
    if engine == "trtllm":
        return "visible", visible, utilisation, (("weights", weights_gib_per_gpu), ("workspace", activation_gib),
                                                 ("non-torch", _non_torch_gib(tp))), True
    raise ValueError(f"policy.engine: got {engine!r}; expected one of {', '.join(ENGINES)}")
