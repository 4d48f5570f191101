"""The serving model: how long one engine step of one replica takes, given what the step carries.

One model behind every prediction: the planner's latency path, ``xlplan validate``,
``xlplan calibrate`` and the simulator all time steps with :func:`step_time_s`.

Notes
-----
A step of a replica (``tp`` GPUs, continuous batching) carries ``b`` decode tokens, each
attending to its cached context, and ``p`` prefill tokens (a chunk of a prompt, up to the
batched-token budget). Its time is

``t = overhead + Σ_parts max(t_compute, t_memory) + t_comm``

over three parts that run as separate kernels one after another, each on its own roofline:

- **dense weights** (attention projections, dense MLPs, shared experts, the output head):
  ``2·N_dense`` FLOPs per token at the weights' compute dtype, against reading the weights once;
- **routed experts**: ``2·N_experts,active`` FLOPs per token against reading the experts the step's
  tokens touch (an MoE layer with ``E`` experts and ``k`` per token touches ``E·(1 − (1 − k/E)^T)``
  of them for ``T`` tokens, in expectation under uniform routing);
- **attention**: ``4·w`` FLOPs per (token, key) pair per layer at the 16-bit peak (FlashAttention
  runs in bf16 whatever the weights), against reading every decoding sequence's KV cache;

decode tokens at the decode MFU and prefill tokens at the prefill MFU, over ``tp × peak``, and
bytes over HBM bandwidth × efficiency, per GPU. Summing the parts' rooflines, not taking one
roofline of the whole step, is what makes a large decode batch with long contexts slower than
either side alone: its weight GEMMs are compute-bound while its attention reads the cache;
- ``t_comm``: tensor parallelism's two all-reduces per layer of ``T × hidden`` activations
  (a ring all-reduce moves ``2(tp − 1)/tp`` of them per GPU), each with a fixed latency;
  expert parallelism's two all-to-alls per MoE layer;
- ``overhead``: scheduling, kernel launches and sampling, a fixed time per step.

Each term is a pure function below; the planner, validation and the simulator differ only in
what they put in a step.

References
----------
Roofline: Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009. Decode reads the
weights once per step: Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023
(§2, memory time per step). Ring all-reduce moves 2(n−1)/n of the data per GPU: Patarasuk &
Yuan, JPDC 69(2), 2009. Distinct experts touched: the expected number of occupied bins when
``T·k`` balls are thrown into ``E`` bins without replacement per ball (coupon collector).
Chunked prefill sharing steps with decode: Agrawal et al., "Sarathi-Serve", OSDI 2024.
"""

from __future__ import annotations

from dataclasses import dataclass

from xlplan import _vec
from xlplan.units import GB, TERA

ROOT_RELATIVE_TOLERANCE = 1e-12
"""How close :func:`max_batch_within` brings its bracket, relative to the batch: far below any whole replica. [1]"""

ROOT_CLOSED = 2.5
"""The bracket counts as closed at this many tolerances wide (every trial keeps one tolerance from each end). [1]"""

ROOT_FIRST_STEP = 0.999
""":func:`max_batch_within`'s second trial, this fraction of the top: with the top, the first secant from above. [1]"""

ROOT_MAX_STEPS = 64
"""A cap on :func:`max_batch_within`'s steps (it takes about four; halving alone would close in 64). [1]"""


@dataclass(frozen=True, slots=True)
class Replica:
    """One replica's physics: the model cut across ``tp`` GPUs, the GPU's peaks and the engine's efficiencies.

    Units in the field comments. Built by :func:`xlplan.scenario.replica` (plans) and by
    :mod:`xlplan.predict` (benchmark rows).
    """

    tp: int  # GPUs in the replica (tensor parallel) [GPUs]
    ep: int  # expert-parallel degree inside the replica; 1 splits experts by TP [GPUs]
    layers: int  # [layers]
    window_layers: int  # of ``layers``, sliding-window layers [layers]
    window: float  # their window; inf when none [tokens]
    hidden: int  # model width [elements]
    attention_width: int  # heads × head width of the score/value products [elements]
    active_params: float  # parameters one token passes through (2·N FLOPs) [parameters]
    expert_active_params: float  # of those, in routed experts (k per token, all MoE layers) [parameters]
    dense_weight_bytes: float  # bytes read every step: attention, dense MLPs, shared experts, embeddings [bytes]
    expert_weight_bytes: float  # bytes of all routed experts [bytes]
    experts: int  # routed experts per MoE layer; 0 for a dense model [experts]
    experts_per_token: int  # [experts]
    moe_layers: int  # [layers]
    kv_bytes_per_token_layer: float  # [bytes/token/layer]
    kv_shards: int  # ways one token's KV splits across the replica [GPUs]
    peak_tflops: float  # per GPU, at the weights' compute dtype [TFLOP/s]
    attention_peak_tflops: float  # per GPU, 16-bit, for the attention products [TFLOP/s]
    hbm_tbps: float  # per GPU [TB/s]
    link_gbps: float  # GPU-to-GPU bandwidth per GPU, one direction [GB/s]
    link_latency_s: float  # fixed time of one collective [s]
    activation_bytes: float  # bytes per activation element on the wire [bytes]
    prefill_mfu: float  # [fraction]
    decode_mfu: float  # [fraction]
    bandwidth_efficiency: float  # [fraction]
    step_overhead_s: float  # [s]
    expert_efficiency: float = 1.0  # grouped expert GEMMs' MFU as a fraction of dense GEMMs' [fraction]


@dataclass(frozen=True, slots=True)
class StepLoad:
    """What one step carries. Token-key pairs count, per layer kind, the keys each token attends to.

    ``decode_keys`` is the sum over decoding sequences of their context (each decode token attends to
    all of it); ``prefill_keys`` the sum over prefill tokens of the keys each attends to (causal: the
    prefix plus its own position). ``*_window`` are the same sums clipped at the sliding window.
    ``kv_tokens`` / ``kv_tokens_window`` are the cached tokens the step reads (decode contexts and the
    prefixes of prefill chunks).
    """

    decode_tokens: float  # [tokens]
    decode_keys: float  # [token·keys]
    decode_keys_window: float  # [token·keys]
    prefill_tokens: float  # [tokens]
    prefill_keys: float  # [token·keys]
    prefill_keys_window: float  # [token·keys]
    kv_tokens: float  # [tokens]
    kv_tokens_window: float  # [tokens]


def attention_flops(keys, keys_window, full_layers, window_layers, attention_width):
    """Score and value products over a step's token-key pairs. [FLOP]

    Parameters
    ----------
    keys, keys_window : float or array
        Token-key pairs, unclipped and clipped at the window. [token·keys]
    full_layers, window_layers : int
        Layers of each kind. [layers]
    attention_width : int
        Heads × head width. [elements]

    Returns
    -------
    float or array
        FLOPs of the score (QKᵀ) and value (AV) products over every layer. [FLOP]

    Notes
    -----
    ``4·w·(L_full·K + L_window·K_window)``: QKᵀ and AV, one multiply-accumulate (2 FLOPs) each.
    """
    return 4.0 * attention_width * (full_layers * keys + window_layers * keys_window)


def experts_touched_fraction(tokens, experts, experts_per_token):
    """Expected fraction of an MoE layer's routed experts a step's tokens touch. [fraction]

    Parameters
    ----------
    tokens : float or array
        Tokens in the step. [tokens]
    experts : int
        Routed experts per layer; 0 for a dense model (returns 0). [experts]
    experts_per_token : int
        Experts each token is routed to. [experts]

    Returns
    -------
    float or array
        Expected share of the layer's routed experts touched by at least one token; 0 for a dense model. [fraction]

    Notes
    -----
    ``1 − (1 − k/E)^T`` (uniform routing). One token touches ``k/E``; many touch all.

    References
    ----------
    Distinct experts touched: the expected number of occupied bins when ``T·k`` balls are thrown into ``E`` bins
    (coupon collector).

    Examples
    --------
    Qwen3-30B-A3B (128 experts, 8 per token): one token 1/16, sixteen tokens 1 − (15/16)^16 = 64%.

    >>> experts_touched_fraction(1, 128, 8), round(experts_touched_fraction(16, 128, 8), 3)
    (0.0625, 0.644)
    """
    if not experts:
        return 0.0 * tokens
    return 1.0 - (1.0 - experts_per_token / experts) ** tokens


def _flops_time(r: Replica, decode_flops, prefill_flops, peak_tflops, scale=1.0):
    per_gpu = r.tp * peak_tflops * TERA * scale
    return decode_flops / (per_gpu * r.decode_mfu) + prefill_flops / (per_gpu * r.prefill_mfu)


def _bandwidth_time(r: Replica, bytes_per_gpu):
    return bytes_per_gpu / (r.hbm_tbps * r.bandwidth_efficiency * TERA)


def dense_time_s(r: Replica, load: StepLoad):
    """The dense weights' part of a step: GEMM FLOPs against reading the weights once, per GPU. [s]

    Parameters
    ----------
    r : Replica
        The replica's physics: parameters, weight bytes, peaks and efficiencies.
    load : StepLoad
        What the step carries: its decode and prefill tokens.

    Returns
    -------
    float or array
        The larger of the dense GEMMs' compute time and the time to read the dense weights once. [s]

    Notes
    -----
    ``max((2·N_dense·b) ÷ (tp·peak·MFU_d) + (2·N_dense·p) ÷ (tp·peak·MFU_p), W_dense/tp ÷ (bandwidth·efficiency))``.

    References
    ----------
    Roofline: Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009. Decode reads the weights once per step:
    Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023 (§2, memory time per step).
    """
    n = r.active_params - r.expert_active_params
    compute = _flops_time(r, 2.0 * n * load.decode_tokens, 2.0 * n * load.prefill_tokens, r.peak_tflops)
    return _vec.maximum(compute, _bandwidth_time(r, r.dense_weight_bytes / r.tp))


def expert_time_s(r: Replica, load: StepLoad):
    """The routed experts' part of a step: their FLOPs against reading the experts the tokens touch. [s]

    Parameters
    ----------
    r : Replica
        The replica's physics: routed-expert parameters and bytes, expert counts, peaks and efficiencies.
    load : StepLoad
        What the step carries: its decode and prefill tokens.

    Returns
    -------
    float or array
        The larger of the expert GEMMs' compute time and the time to read the experts the step's tokens touch;
        0 for a dense model. [s]

    Notes
    -----
    Grouped expert GEMMs run each expert on its share of the tokens (``T·k/E``), with routing, permutation and
    padding around them, so they reach a lower fraction of peak than a dense GEMM: ``expert_efficiency``.

    References
    ----------
    Roofline: Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009. Distinct experts touched: the expected
    number of occupied bins (coupon collector), :func:`experts_touched_fraction`.
    """
    if not r.experts:
        return 0.0 * load.decode_tokens
    tokens = load.decode_tokens + load.prefill_tokens
    compute = _flops_time(r, 2.0 * r.expert_active_params * load.decode_tokens,
                          2.0 * r.expert_active_params * load.prefill_tokens, r.peak_tflops, r.expert_efficiency)
    touched = r.expert_weight_bytes * experts_touched_fraction(tokens, r.experts, r.experts_per_token)
    return _vec.maximum(compute, _bandwidth_time(r, touched / r.tp))


def attention_time_s(r: Replica, load: StepLoad):
    """The attention part of a step: score and value FLOPs at the 16-bit peak against reading the KV cache. [s]

    Parameters
    ----------
    r : Replica
        The replica's physics: layers, attention width, KV bytes per token and layer, KV shards, peaks.
    load : StepLoad
        What the step carries: its token-key pairs and the cached tokens it reads.

    Returns
    -------
    float or array
        The larger of the attention products' compute time and the time to read the step's KV cache per GPU. [s]

    References
    ----------
    Roofline: Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009.
    """
    full = r.layers - r.window_layers
    decode = attention_flops(load.decode_keys, load.decode_keys_window, full, r.window_layers, r.attention_width)
    prefill = attention_flops(load.prefill_keys, load.prefill_keys_window, full, r.window_layers, r.attention_width)
    compute = _flops_time(r, decode, prefill, r.attention_peak_tflops)
    kv = r.kv_bytes_per_token_layer * (full * load.kv_tokens + r.window_layers * load.kv_tokens_window)
    return _vec.maximum(compute, _bandwidth_time(r, kv / r.kv_shards))


def compute_time_s(r: Replica, load: StepLoad):
    """All the step's FLOPs over the replica's peaks, decode and prefill at their own MFU (the parts' compute sides). [s]

    Parameters
    ----------
    r : Replica
        The replica's physics: parameters, attention width, peaks and MFUs.
    load : StepLoad
        What the step carries: its tokens and token-key pairs.

    Returns
    -------
    float or array
        Time of the step's GEMM and attention FLOPs alone, with no memory side taken. [s]
    """
    full = r.layers - r.window_layers
    n_dense = r.active_params - r.expert_active_params
    linear = _flops_time(r, 2.0 * (n_dense + r.expert_active_params) * load.decode_tokens,
                         2.0 * (n_dense + r.expert_active_params) * load.prefill_tokens, r.peak_tflops)
    attn = _flops_time(r, attention_flops(load.decode_keys, load.decode_keys_window, full, r.window_layers, r.attention_width),
                       attention_flops(load.prefill_keys, load.prefill_keys_window, full, r.window_layers, r.attention_width),
                       r.attention_peak_tflops)
    return linear + attn


def bytes_read_per_gpu(r: Replica, load: StepLoad):
    """Bytes one GPU reads from HBM in the step: its share of the weights and of the KV cache. [bytes]

    Parameters
    ----------
    r : Replica
        The replica's physics: weight bytes, experts, KV bytes per token and layer, TP degree and KV shards.
    load : StepLoad
        What the step carries: its tokens and the cached tokens it reads.

    Returns
    -------
    float or array
        HBM bytes one GPU reads in the step: weights (the touched experts only) and KV cache. [bytes]

    Notes
    -----
    ``(W_dense + W_experts·touched(T)) ÷ tp + kv_layer·(L_full·kv_tokens + L_window·kv_tokens_window) ÷ shards``.

    References
    ----------
    Decode reads the weights once per step: Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023
    (§2, memory time per step).
    """
    tokens = load.decode_tokens + load.prefill_tokens
    weights = r.dense_weight_bytes + r.expert_weight_bytes * experts_touched_fraction(tokens, r.experts, r.experts_per_token)
    kv = r.kv_bytes_per_token_layer * ((r.layers - r.window_layers) * load.kv_tokens + r.window_layers * load.kv_tokens_window)
    return weights / r.tp + kv / r.kv_shards


def memory_time_s(r: Replica, load: StepLoad):
    """The step's HBM traffic over bandwidth × efficiency (the parts' memory sides). [s]

    Parameters
    ----------
    r : Replica
        The replica's physics: HBM bandwidth and its achieved efficiency, and what :func:`bytes_read_per_gpu` reads.
    load : StepLoad
        What the step carries.

    Returns
    -------
    float or array
        Time to read :func:`bytes_read_per_gpu` at the achieved bandwidth, with no compute side taken. [s]
    """
    return _bandwidth_time(r, bytes_read_per_gpu(r, load))


def allreduce_time_s(message_bytes, gpus, link_gbps, latency_s):
    """One ring all-reduce of ``message_bytes`` across ``gpus``. [s]

    Parameters
    ----------
    message_bytes : float or array
        Bytes each GPU contributes. [bytes]
    gpus : int
        GPUs in the group; one GPU needs none (returns 0). [GPUs]
    link_gbps : float
        Bandwidth per GPU, one direction. [GB/s]
    latency_s : float
        Fixed cost of one collective. [s]

    Returns
    -------
    float or array
        Time of the all-reduce; 0 for a single GPU. [s]

    Notes
    -----
    ``latency + 2·(n − 1)/n · bytes ÷ bandwidth`` for ``n > 1`` (Patarasuk & Yuan 2009).

    References
    ----------
    Ring all-reduce moves 2(n−1)/n of the data per GPU: Patarasuk & Yuan, JPDC 69(2), 2009.

    Examples
    --------
    8 GPUs, 1 MB each, 450 GB/s, 10 µs: 10 µs + 1.75 × 1e6 / 450e9 = 13.9 µs.

    >>> round(allreduce_time_s(1e6, 8, 450, 10e-6) * 1e6, 1)
    13.9
    """
    if gpus <= 1:
        return 0.0 * message_bytes
    return latency_s + 2.0 * (gpus - 1) / gpus * message_bytes / (link_gbps * GB)


def comm_time_s(r: Replica, load: StepLoad):
    """Tensor- and expert-parallel communication of the step. [s]

    Parameters
    ----------
    r : Replica
        The replica's physics: TP and EP degrees, layers, width, link bandwidth and latency.
    load : StepLoad
        What the step carries: its decode and prefill tokens.

    Returns
    -------
    float or array
        Time of the step's all-reduces and all-to-alls; 0 on one GPU without expert parallelism. [s]

    Notes
    -----
    TP: two all-reduces per layer (after attention and after the MLP) of ``T × hidden`` activations.
    EP: two all-to-alls per MoE layer (dispatch and combine), each moving ``T·k/ep × hidden`` activations
    per GPU with ``(ep − 1)/ep`` of them crossing GPUs.

    References
    ----------
    Ring all-reduce moves 2(n−1)/n of the data per GPU: Patarasuk & Yuan, JPDC 69(2), 2009.
    """
    tokens = load.decode_tokens + load.prefill_tokens
    message = tokens * r.hidden * r.activation_bytes
    t = 2.0 * r.layers * allreduce_time_s(message, r.tp, r.link_gbps, r.link_latency_s)
    if r.ep > 1 and r.experts:
        a2a = tokens * r.experts_per_token / r.ep * r.hidden * r.activation_bytes * (r.ep - 1) / r.ep
        t = t + 2.0 * r.moe_layers * (r.link_latency_s + a2a / (r.link_gbps * GB))
    return t


def step_time_s(r: Replica, load: StepLoad):
    """Time of one engine step: overhead + each part's roofline (dense weights, experts, attention) + communication. [s]

    Parameters
    ----------
    r : Replica
        The replica.
    load : StepLoad
        What the step carries.

    Returns
    -------
    float or array
        Duration of the step, overhead and communication included. [s]

    References
    ----------
    Roofline: Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009. Decode reads the weights once per step:
    Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023 (§2, memory time per step).

    Examples
    --------
    Llama-3.1-8B bf16 on one H100 (989 TFLOP/s, 3.35 TB/s at 40% and 60%), one decode token of no
    context: the weights, 16.06e9 B ÷ 2.01e12 B/s = 7.99 ms.

    >>> r = Replica(1, 1, 32, 0, float("inf"), 4096, 4096, 8.03e9, 0.0, 16.06e9, 0.0, 0, 0, 0, 4096, 1, 989, 989, 3.35,
    ...             450, 10e-6, 2, 0.4, 0.4, 0.6, 0.0)
    >>> round(step_time_s(r, decode_step(1, 0.0)) * 1e3, 2)
    7.99
    """
    return (r.step_overhead_s + dense_time_s(r, load) + expert_time_s(r, load) + attention_time_s(r, load)
            + comm_time_s(r, load))


# ---------------------------------------------------------------------------------------------- steps the callers build


def decode_step(batch, context_tokens, window=float("inf")) -> StepLoad:
    """A step of ``batch`` decodes, each over ``context_tokens`` of cache; no prefill. [StepLoad]

    Parameters
    ----------
    batch : float or array
        Decoding sequences. [sequences]
    context_tokens : float or array
        Mean cached context of each. [tokens]
    window : float
        Sliding window of the window layers. [tokens]

    Returns
    -------
    StepLoad
        The step: ``batch`` decode tokens, their token-key pairs and cached tokens (clipped at ``window`` for the
        window layers), no prefill.
    """
    keys = batch * context_tokens
    if isinstance(window, float) and window == float("inf"):  # no window layers: the clipped figures are the same
        keys_window = keys
    else:
        keys_window = batch * _vec.minimum(context_tokens, window)
    zero = 0.0 * batch  # the same values as before, each computed once (a sweep's arrays are never written in place)
    return StepLoad(batch, keys, keys_window, zero, zero, zero, keys, keys_window)


def prefill_keys(chunk_tokens, prefix_tokens, causal: bool = True):
    """Token-key pairs of a prefill chunk of ``chunk_tokens`` after ``prefix_tokens`` already cached. [token·keys]

    Parameters
    ----------
    chunk_tokens : float or array
        Prompt tokens prefilled in the chunk. [tokens]
    prefix_tokens : float or array
        Tokens of the prompt already cached before the chunk. [tokens]
    causal : bool
        Count causal attention (each token attends to the tokens before it); False counts full attention.

    Returns
    -------
    float or array
        Token-key pairs the chunk's tokens attend to. [token·keys]

    Notes
    -----
    Causal: token ``i`` of the chunk attends to the prefix and to ``i`` tokens of the chunk,
    ``p·s + p(p + 1)/2``; full (the runbook's convention): ``p·(s + p)``.

    References
    ----------
    Runbook, document 14, step 5 · "(prefill 1,369 + decode 193) TFLOP/s ÷ 396 per GPU at 40% MFU", prefill
    attention counted in full (``n²`` key pairs per prompt).

    Examples
    --------
    >>> prefill_keys(2000, 0), prefill_keys(2000, 0, causal=False)
    (2001000.0, 4000000.0)
    """
    own = chunk_tokens * (chunk_tokens + 1.0) / 2.0 if causal else chunk_tokens * chunk_tokens * 1.0
    return chunk_tokens * prefix_tokens + own


def mixed_step(batch, context_tokens, prefill_tokens, prefill_keys_full, prefill_keys_window, prefill_prefix_tokens=0.0,
               window=float("inf")) -> StepLoad:
    """A step of ``batch`` decodes and ``prefill_tokens`` of prefill (chunked prefill shares the step). [StepLoad]

    Parameters
    ----------
    batch : float or array
        Decoding sequences. [sequences]
    context_tokens : float or array
        Mean cached context of each decode. [tokens]
    prefill_tokens : float or array
        Prompt tokens prefilled in the step. [tokens]
    prefill_keys_full, prefill_keys_window : float or array
        Their token-key pairs, unclipped and clipped at the window. [token·keys]
    prefill_prefix_tokens : float or array
        Cached prompt tokens the chunks continue from (read once). [tokens]
    window : float
        Sliding window. [tokens]

    Returns
    -------
    StepLoad
        The step: the decodes of :func:`decode_step` plus the prefill tokens, their key pairs and the cached prefix
        they read.

    References
    ----------
    Chunked prefill sharing steps with decode: Agrawal et al., "Sarathi-Serve", OSDI 2024.
    """
    d = decode_step(batch, context_tokens, window)
    return StepLoad(d.decode_tokens, d.decode_keys, d.decode_keys_window, prefill_tokens, prefill_keys_full,
                    prefill_keys_window, d.kv_tokens + prefill_prefix_tokens,
                    d.kv_tokens_window + _vec.minimum(prefill_prefix_tokens, window))


def max_batch_within(step_of_batch, limit_s, upper):
    """Largest batch whose step time stays within ``limit_s``, by a bracketed root search on a monotone step. [sequences]

    Parameters
    ----------
    step_of_batch : callable
        Batch (float or array) → step time [s]; increasing in the batch.
    limit_s : float or array
        The inter-token target. [s]
    upper : float or array
        A batch known to be too large, or the most the replica may run (max_num_seqs, the cache). [sequences]

    Returns
    -------
    float or array
        The largest batch (fractional, to :data:`ROOT_RELATIVE_TOLERANCE` of it) with ``step_of_batch(b) <= limit_s``;
        ``upper`` when even that fits; 0 when not even one sequence does. [sequences]

    Notes
    -----
    The step is a sum of rooflines, each the larger of a line and a constant in the batch, so it is piecewise linear:
    false position with the Illinois halving finds the crossing in about four steps, where halving the bracket took
    64. Every trial stays at least the tolerance inside the bracket, so a root hugging one end is closed in one more
    step, and the answer is always the bracket's feasible end (its step is within the target). Written with
    :mod:`xlplan._vec` so arrays (the sweep) work, each element stopping when its own bracket closes; on plain floats
    the same steps run as a plain loop (the planner's every what-if and breakpoint), with the same result to the bit.

    References
    ----------
    Dowell & Jarratt, "A modified regula falsi method for computing the root of an equation", BIT 11, 1971 (the
    Illinois method).
    """
    at_upper = step_of_batch(upper)
    at_one = step_of_batch(1.0 + 0.0 * upper)
    fits_all, fits_one = at_upper <= limit_s, at_one <= limit_s
    if not _vec._is_array(fits_all, fits_one, upper, limit_s):  # plain floats: the same steps without _vec
        if fits_all:
            return upper * 1.0
        if not fits_one:
            return 0.0 * upper
        lo, hi = 1.0, upper * 1.0
        g_lo, g_hi = at_one - limit_s, at_upper - limit_s
        x = hi * ROOT_FIRST_STEP  # a second point near the top: the secant from above starts from these two
        g = step_of_batch(x) - limit_s
        above = g > 0.0
        prev, g_prev = hi, g_hi
        if above:
            hi, g_hi = x, g
        else:
            lo, g_lo = x, g
        side = 1 if above else -1
        for _ in range(ROOT_MAX_STEPS):
            tol = ROOT_RELATIVE_TOLERANCE * hi
            if hi - lo <= ROOT_CLOSED * tol:
                break
            if above:  # both points over the target: their secant, on a convex step, lands at or over the crossing
                x = hi - g_hi * (hi - prev) / (g_hi - g_prev)
            else:  # a bracket: false position, the end that stays put halved (Illinois)
                x = hi - g_hi * (hi - lo) / (g_hi - g_lo)
            if x != x:  # an infinite step at the top: halve instead
                x = 0.5 * (lo + hi)
            x = min(max(x, lo + tol), hi - tol)
            g = step_of_batch(x) - limit_s
            if g <= 0.0:
                lo, g_lo = x, g
                if side < 0:
                    g_hi *= 0.5
                side, above = -1, False
            else:
                if above:
                    prev, g_prev = hi, g_hi
                elif side > 0:
                    g_lo *= 0.5
                hi, g_hi = x, g
                side = 1
        return lo
    np = _vec._np()
    shape = np.broadcast_shapes(np.shape(at_upper), np.shape(at_one), np.shape(upper), np.shape(limit_s))

    def full(v):
        return np.broadcast_to(np.asarray(v, dtype=float), shape)

    upper = full(upper).copy()
    lo = np.ones(shape)
    # only the elements still searching are carried (the step itself is timed on whole columns, the rest held at 1)
    idx = np.flatnonzero(~full(fits_all).astype(bool) & full(fits_one).astype(bool))
    limit = full(limit_s).ravel()[idx]
    lo_i, hi_i = lo.ravel()[idx], upper.ravel()[idx]
    g_lo = full(at_one).ravel()[idx] - limit
    g_hi = full(at_upper).ravel()[idx] - limit
    trial = np.ones(shape)
    flat = trial.reshape(-1)  # a view: writing a trial into it writes the column the step is timed on
    x = hi_i * ROOT_FIRST_STEP
    flat[idx] = x
    g = full(step_of_batch(trial)).ravel()[idx] - limit
    flat[idx] = 1.0
    above = g > 0.0
    prev, g_prev = hi_i, g_hi
    hi_i, g_hi = np.where(above, x, hi_i), np.where(above, g, g_hi)
    lo_i, g_lo = np.where(above, lo_i, x), np.where(above, g_lo, g)
    side = np.where(above, 1.0, -1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        for _ in range(ROOT_MAX_STEPS):
            tol = ROOT_RELATIVE_TOLERANCE * hi_i
            open_ = ~(hi_i - lo_i <= ROOT_CLOSED * tol)
            if not open_.all():
                lo.reshape(-1)[idx[~open_]] = lo_i[~open_]
                idx, limit, lo_i, hi_i, g_lo, g_hi, side, tol, above, prev, g_prev = (
                    v[open_] for v in (idx, limit, lo_i, hi_i, g_lo, g_hi, side, tol, above, prev, g_prev))
            if not idx.size:
                break
            x = np.where(above, hi_i - g_hi * (hi_i - prev) / (g_hi - g_prev), hi_i - g_hi * (hi_i - lo_i) / (g_hi - g_lo))
            x = np.where(x != x, 0.5 * (lo_i + hi_i), x)
            x = np.minimum(np.maximum(x, lo_i + tol), hi_i - tol)
            flat[idx] = x
            g = full(step_of_batch(trial)).ravel()[idx] - limit
            flat[idx] = 1.0
            low = g <= 0.0
            g_hi = np.where(low & (side < 0), g_hi * 0.5, g_hi)
            g_lo = np.where(~low & ~above & (side > 0), g_lo * 0.5, g_lo)
            prev, g_prev = np.where(~low & above, hi_i, prev), np.where(~low & above, g_hi, g_prev)
            lo_i, g_lo = np.where(low, x, lo_i), np.where(low, g, g_lo)
            hi_i, g_hi = np.where(low, hi_i, x), np.where(low, g_hi, g)
            side = np.where(low, -1.0, 1.0)
            above = above & ~low
        lo.reshape(-1)[idx] = lo_i
    return np.where(fits_all, upper * 1.0, np.where(fits_one, lo, 0.0 * upper))


def step_lines(r: Replica, per_sequence: StepLoad):
    """The step of ``b`` sequences as two lines, ``max(a₁ + s₁·b, a₂ + s₂·b)``, where every figure of the load grows
    in proportion to ``b`` and the model is dense; None for routed experts (their touched bytes are not a line).

    Parameters
    ----------
    r : Replica
        The replica.
    per_sequence : StepLoad
        The load of one sequence: the step of ``b`` carries ``b`` times each field.

    Returns
    -------
    tuple or None
        ``(a₁ [s], s₁ [s/sequence], a₂ [s], s₂ [s/sequence])``: the weights-read line and the compute line; the
        step is the larger. None when the replica has routed experts. [s]

    Notes
    -----
    Of :func:`step_time_s`'s terms, only the dense part bends: ``max(c·b, W)``. Attention is ``max(f·b, k·b)``,
    which is ``max(f, k)·b`` for ``b ≥ 0``, and communication is a fixed latency plus a line. So the step is
    ``base + max(c·b, W) + m·b = max(base + W + m·b, base + (c + m)·b)``, and the largest batch within a target is
    where the higher line meets it (:func:`max_batch_on_lines`).

    References
    ----------
    Roofline: Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009.
    """
    if r.experts:
        return None
    ps = per_sequence
    f = step_time_fn(r, _vec._is_array(ps.decode_tokens, ps.decode_keys, ps.prefill_tokens, ps.prefill_keys, ps.kv_tokens))
    return f.lines(ps.decode_tokens, ps.decode_keys, ps.decode_keys_window, ps.prefill_tokens, ps.prefill_keys,
                   ps.prefill_keys_window, ps.kv_tokens, ps.kv_tokens_window)


def max_batch_on_lines(lines, limit_s, upper):
    """:func:`max_batch_within` for a step of two lines (:func:`step_lines`): where the higher meets the target. [sequences]

    Parameters
    ----------
    lines : tuple
        ``(a₁, s₁, a₂, s₂)`` of :func:`step_lines`. [s, s/sequence]
    limit_s : float or array
        The inter-token target. [s]
    upper : float or array
        The most the replica may run. [sequences]

    Returns
    -------
    float or array
        ``min((limit − a₁) ÷ s₁, (limit − a₂) ÷ s₂)``, at most ``upper``; 0 when one sequence misses. [sequences]

    Notes
    -----
    The step is the larger of the two lines, so it is within the target exactly where both are; each line with a
    positive slope meets it once, and one that does not rise bounds nothing (its intercept decides alone).
    """
    a1, s1, a2, s2 = lines

    def reach(a, sl):
        over = _vec.where(a <= limit_s, _vec.INF + 0.0 * a, 0.0 * a)  # a flat line: always within, or never
        return _vec.where(sl > 0.0, (limit_s - a) / _vec.where(sl > 0.0, sl, 1.0 + 0.0 * sl), over)

    b = _vec.minimum(_vec.minimum(reach(a1, s1), reach(a2, s2)), upper * 1.0)
    return _vec.where(b < 1.0, 0.0 * b, b)


STEP_CONSTANTS = ("overhead", "n_dense", "gpu_d", "gpu_p", "dense_mem", "has_experts", "n_exp", "exp_d", "exp_p",
                  "exp_bytes", "q", "attn", "full", "windowed", "att_d", "att_p", "kv_per", "comm", "ar_fixed",
                  "ar_per_token", "ep", "a2a_fixed", "a2a_per_token")
"""The names of :func:`step_constants`, in order: the replica's figures a step's time is folded from. [—]"""


def step_constants(r: Replica) -> dict:
    """The replica's constants a step's time is computed from, as :func:`step_time_fn` folds them in. [mixed]

    Parameters
    ----------
    r : Replica
        The replica.

    Returns
    -------
    dict
        :data:`STEP_CONSTANTS` → value: throughputs ([FLOP/s]), bandwidth-bound times ([s], [s/token]), FLOPs per
        token ([FLOP]), layer counts ([layers]) and flags ([bool]).

    References
    ----------
    Roofline: Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009. Ring all-reduce: Patarasuk & Yuan,
    JPDC 69(2), 2009.
    """
    tera = TERA
    gpu_d = r.tp * r.peak_tflops * tera * r.decode_mfu
    gpu_p = r.tp * r.peak_tflops * tera * r.prefill_mfu
    exp_d = gpu_d * r.expert_efficiency
    exp_p = gpu_p * r.expert_efficiency
    att_d = r.tp * r.attention_peak_tflops * tera * r.decode_mfu
    att_p = r.tp * r.attention_peak_tflops * tera * r.prefill_mfu
    bw = r.hbm_tbps * r.bandwidth_efficiency * tera
    n_dense = 2.0 * (r.active_params - r.expert_active_params)
    n_exp = 2.0 * r.expert_active_params
    dense_mem = r.dense_weight_bytes / r.tp / bw
    full = r.layers - r.window_layers
    attn = 4.0 * r.attention_width
    kv_per = r.kv_bytes_per_token_layer / r.kv_shards / bw
    q = 1.0 - r.experts_per_token / r.experts if r.experts else 0.0
    exp_bytes = r.expert_weight_bytes / r.tp / bw
    link = r.link_gbps * GB
    ring = 2.0 * (r.tp - 1) / r.tp * r.hidden * r.activation_bytes / link if r.tp > 1 else 0.0
    ar_fixed = 2.0 * r.layers * r.link_latency_s if r.tp > 1 else 0.0
    ar_per_token = 2.0 * r.layers * ring
    ep = r.ep if (r.ep > 1 and r.experts) else 0
    a2a_fixed = 2.0 * r.moe_layers * r.link_latency_s if ep else 0.0
    a2a_per_token = (2.0 * r.moe_layers * r.experts_per_token / ep * r.hidden * r.activation_bytes * (ep - 1) / ep / link
                     if ep else 0.0)
    overhead = r.step_overhead_s
    has_experts = bool(r.experts)
    comm = r.tp > 1
    windowed = r.window_layers
    return {"overhead": overhead, "n_dense": n_dense, "gpu_d": gpu_d, "gpu_p": gpu_p, "dense_mem": dense_mem,
            "has_experts": has_experts, "n_exp": n_exp, "exp_d": exp_d, "exp_p": exp_p, "exp_bytes": exp_bytes, "q": q,
            "attn": attn, "full": full, "windowed": windowed, "att_d": att_d, "att_p": att_p, "kv_per": kv_per,
            "comm": comm, "ar_fixed": ar_fixed, "ar_per_token": ar_per_token, "ep": ep, "a2a_fixed": a2a_fixed,
            "a2a_per_token": a2a_per_token, "bw": bw}


def step_time_fn(r: Replica, arrays: bool = False):
    """:func:`step_time_s` with the replica's constants folded in, for the simulator's inner loop. [callable]

    Returns ``f(decode_tokens, decode_keys, decode_keys_window, prefill_tokens, prefill_keys, prefill_keys_window,
    kv_tokens, kv_tokens_window) -> seconds`` on plain floats: the same arithmetic as :func:`step_time_s` term by
    term (a test holds them equal), without building a :class:`StepLoad` per step.

    Parameters
    ----------
    r : Replica
        The replica whose constants are folded in.
    arrays : bool
        Whether ``f`` will be given arrays (a sweep's columns): then its larger-ofs are numpy's, element by
        element; the replica's own arrays choose that too. [bool]

    Returns
    -------
    callable
        ``f`` of the eight :class:`StepLoad` fields as plain floats ([tokens], [token·keys]) → the step's time. [s]

    References
    ----------
    Roofline: Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009. Ring all-reduce: Patarasuk & Yuan,
    JPDC 69(2), 2009.
    """
    k = step_constants(r)
    (overhead, n_dense, gpu_d, gpu_p, dense_mem, has_experts, n_exp, exp_d, exp_p, exp_bytes, q, attn, full, windowed,
     att_d, att_p, kv_per, comm, ar_fixed, ar_per_token, ep, a2a_fixed, a2a_per_token) = (k[x] for x in STEP_CONSTANTS)
    bw = k["bw"]

    array_form = arrays or _vec._is_array(gpu_d, gpu_p, exp_d, exp_p, att_d, att_p, bw, dense_mem, kv_per, exp_bytes, q,
                                          ar_per_token, ar_fixed, overhead, a2a_fixed, a2a_per_token)
    larger = _vec._np().maximum if array_form else max

    def lines(dec, dec_keys, dec_keys_w, pre, pre_keys, pre_keys_w, kv, kv_w):
        # the same terms for one sequence's load, split where f bends: (a1, s1) reads the weights, (a2, s2) computes
        fixed = overhead + (ar_fixed if comm else 0.0)
        per = larger(attn * (full * dec_keys + windowed * dec_keys_w) / att_d
                     + attn * (full * pre_keys + windowed * pre_keys_w) / att_p, kv_per * (full * kv + windowed * kv_w))
        if comm:
            per = per + ar_per_token * (dec + pre)
        return fixed + dense_mem, per, fixed, n_dense * dec / gpu_d + n_dense * pre / gpu_p + per

    if array_form:
        mx = _vec._np().maximum  # a sweep's columns: the same terms, element by element

        def f_array(dec, dec_keys, dec_keys_w, pre, pre_keys, pre_keys_w, kv, kv_w):
            tokens = dec + pre
            t = overhead + mx(n_dense * dec / gpu_d + n_dense * pre / gpu_p, dense_mem)
            if has_experts:
                t = t + mx(n_exp * dec / exp_d + n_exp * pre / exp_p, exp_bytes * (1.0 - q ** tokens))
            t = t + mx(attn * (full * dec_keys + windowed * dec_keys_w) / att_d
                       + attn * (full * pre_keys + windowed * pre_keys_w) / att_p,
                       kv_per * (full * kv + windowed * kv_w))
            if comm:
                t = t + (ar_fixed + ar_per_token * tokens)
            if ep:
                t = t + (a2a_fixed + a2a_per_token * tokens)
            return t

        f_array.lines = None if has_experts else lines
        return f_array

    if not (has_experts or comm or ep):  # one GPU, a dense model: the same terms, without the branches for the rest
        def f_dense(dec, dec_keys, dec_keys_w, pre, pre_keys, pre_keys_w, kv, kv_w):
            t = overhead
            c = n_dense * dec / gpu_d + n_dense * pre / gpu_p
            t += c if c > dense_mem else dense_mem
            c = attn * (full * dec_keys + windowed * dec_keys_w) / att_d + attn * (full * pre_keys + windowed * pre_keys_w) / att_p
            m = kv_per * (full * kv + windowed * kv_w)
            t += c if c > m else m
            return t

        f_dense.lines = lines
        return f_dense

    def f(dec, dec_keys, dec_keys_w, pre, pre_keys, pre_keys_w, kv, kv_w):
        tokens = dec + pre
        t = overhead
        c = n_dense * dec / gpu_d + n_dense * pre / gpu_p
        t += c if c > dense_mem else dense_mem
        if has_experts:
            c = n_exp * dec / exp_d + n_exp * pre / exp_p
            m = exp_bytes * (1.0 - q ** tokens)
            t += c if c > m else m
        c = attn * (full * dec_keys + windowed * dec_keys_w) / att_d + attn * (full * pre_keys + windowed * pre_keys_w) / att_p
        m = kv_per * (full * kv + windowed * kv_w)
        t += c if c > m else m
        if comm:
            t += ar_fixed + ar_per_token * tokens
        if ep:
            t += a2a_fixed + a2a_per_token * tokens
        return t

    f.lines = None if has_experts else lines  # the step as two lines in the batch (step_lines), a dense model only
    return f
