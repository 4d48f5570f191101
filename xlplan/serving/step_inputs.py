"""What a step's time is computed from: one replica's physics, and the load one engine step carries.

:class:`Replica` holds the model cut across ``tp`` GPUs, the GPU's peaks and the engine's efficiencies;
:class:`StepLoad` the decode and prefill tokens of one step and the token-key pairs they attend to. The builders
below (:func:`decode_step`, :func:`prefill_keys`, :func:`mixed_step`) are the steps the planner, validation and the
simulator put in front of :func:`xlplan.serving.step.step_time_s`.

References
----------
Chunked prefill sharing steps with decode: Agrawal et al., "Sarathi-Serve", OSDI 2024.
"""

from __future__ import annotations

from dataclasses import dataclass

from xlplan import arrays


@dataclass(frozen=True, slots=True)
class Replica:
    """One replica's physics: the model cut across ``tp`` GPUs, the GPU's peaks and the engine's efficiencies.

    Units in the field comments. Built by :func:`xlplan.plan.replica_at_tp.replica` (plans) and by
    :mod:`xlplan.evidence.predict` (benchmark rows).
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
        keys_window = batch * arrays.minimum(context_tokens, window)
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
                    d.kv_tokens_window + arrays.minimum(prefill_prefix_tokens, window))
