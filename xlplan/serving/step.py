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

Each term is a pure function: the rooflines here, communication in :mod:`xlplan.serving.collectives`. What a
step carries is :mod:`xlplan.serving.step_inputs`; the same step with the replica's constants folded in (the
simulator's inner loop) :mod:`xlplan.serving.folded_step`; the largest batch within a target
:mod:`xlplan.serving.batch_search`. The planner, validation and the
simulator differ only in what they put in a step.

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

from xlplan import arrays
from xlplan.serving.collectives import comm_time_s
from xlplan.serving.step_inputs import Replica, StepLoad
from xlplan.units import TERA


def _attention_flops(keys, keys_window, full_layers, window_layers, attention_width):
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


def _experts_touched_fraction(tokens, experts, experts_per_token):
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

    >>> _experts_touched_fraction(1, 128, 8), round(_experts_touched_fraction(16, 128, 8), 3)
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


def _dense_time_s(r: Replica, load: StepLoad):
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
    return arrays.maximum(compute, _bandwidth_time(r, r.dense_weight_bytes / r.tp))


def _expert_time_s(r: Replica, load: StepLoad):
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
    number of occupied bins (coupon collector), :func:`_experts_touched_fraction`.
    """
    if not r.experts:
        return 0.0 * load.decode_tokens
    tokens = load.decode_tokens + load.prefill_tokens
    compute = _flops_time(r, 2.0 * r.expert_active_params * load.decode_tokens,
                          2.0 * r.expert_active_params * load.prefill_tokens, r.peak_tflops, r.expert_efficiency)
    touched = r.expert_weight_bytes * _experts_touched_fraction(tokens, r.experts, r.experts_per_token)
    return arrays.maximum(compute, _bandwidth_time(r, touched / r.tp))


def _attention_time_s(r: Replica, load: StepLoad):
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
    decode = _attention_flops(load.decode_keys, load.decode_keys_window, full, r.window_layers, r.attention_width)
    prefill = _attention_flops(load.prefill_keys, load.prefill_keys_window, full, r.window_layers, r.attention_width)
    compute = _flops_time(r, decode, prefill, r.attention_peak_tflops)
    kv = r.kv_bytes_per_token_layer * (full * load.kv_tokens + r.window_layers * load.kv_tokens_window)
    return arrays.maximum(compute, _bandwidth_time(r, kv / r.kv_shards))


def step_time_s(r: Replica, load: StepLoad):
    """Time of one engine step: overhead + each part's roofline (dense weights, experts, attention) + communication. [s]

    The step time's one home. It has three deliberate twins, each held equal to it by a test on plans with every
    engine's defaults (``tests/test_one_home.py``): the fast closure :func:`xlplan.serving.folded_step.step_time_fn`
    (the simulator's Python loop and the sweep), the compiled :func:`xlplan.simulate.kernel_state.step_s` (the
    simulator's numba loop), and the workbook's formula :func:`xlplan.excel.formulas.step_time` (Excel's grammar).

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

    >>> from xlplan.serving.step_inputs import decode_step
    >>> r = Replica(1, 1, 32, 0, float("inf"), 4096, 4096, 8.03e9, 0.0, 16.06e9, 0.0, 0, 0, 0, 4096, 1, 989, 989, 3.35,
    ...             450, 10e-6, 2, 0.4, 0.4, 0.6, 0.0)
    >>> round(step_time_s(r, decode_step(1, 0.0)) * 1e3, 2)
    7.99
    """
    return (r.step_overhead_s + _dense_time_s(r, load) + _expert_time_s(r, load) + _attention_time_s(r, load)
            + comm_time_s(r, load))

