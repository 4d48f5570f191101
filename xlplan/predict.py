"""Predicting what a serving engine measures: KV capacity at start-up, offline throughput, latency at a concurrency.

The same roofline as the planner's paths, pointed at a benchmark's conditions, so
published measurements (and a user's own benchmark) can check the engine.

Notes
-----
With ``f`` = 2·N_active FLOPs per token, prompt length ``i``, output ``o``, a batch
(or concurrency) ``B`` on a replica of ``tp`` GPUs with ``s`` KV shards:

- compute time per decode step: ``B·f ÷ (tp·peak·MFU_decode) + B·f·i/o ÷ (tp·peak·MFU_prefill)``
  (each request's prefill spread over its ``o`` steps);
- memory time per step: ``(W/tp + B·(i + o/2)·kv_per_token/s) ÷ (bandwidth·efficiency)``;
- a step takes the larger (the roofline); output tokens/s = ``B ÷ step``;
- offline, ``B`` is what the KV cache holds at the mean context ``i + o/2``;
- online at concurrency ``C``: inter-token latency = the step at ``B = C``; TTFT = the
  prompt's prefill alone; throughput = ``C·o ÷ (TTFT + o·ITL)``.

References
----------
Runbook, document 14, steps 4-5; measurements in ``../shared/reference/measurements-public.csv``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xlplan.units import TERA


@dataclass(frozen=True)
class Efficiencies:
    """Achieved fractions of peak: the three numbers a benchmark calibrates. [fraction]"""

    prefill_mfu: float = 0.40  # of peak dense FLOP/s in prefill [fraction]
    decode_mfu: float = 0.40  # of peak dense FLOP/s in decode [fraction]
    bandwidth_efficiency: float = 0.60  # of HBM bandwidth in decode [fraction]


@dataclass(frozen=True)
class Hardware:
    """One replica's figures. Units in the field comments."""

    active_params: float  # [parameters]
    weights_bytes: float  # whole model [bytes]
    kv_bytes_per_token: float  # all layers [bytes/token]
    tp: int  # GPUs per replica [GPUs]
    kv_shards: int  # [GPUs]
    peak_tflops: float  # per GPU [TFLOP/s]
    hbm_tbps: float  # per GPU [TB/s]


def step_times_s(h: Hardware, batch: float, isl: float, osl: float, eff: Efficiencies) -> tuple[float, float]:
    """(compute, memory) time of one decode step with prefill amortised over the output. [s]

    Examples
    --------
    Llama-3.1-8B bf16 on one H100, one request of 0/1 tokens: weights 16.06e9 B ÷ (3.35 TB/s × 0.6) = 8.0 ms.

    >>> h = Hardware(8.03e9, 16.06e9, 131072, 1, 1, 989, 3.35)
    >>> round(step_times_s(h, 1, 0, 1, Efficiencies())[1] * 1e3, 2)
    7.99
    """
    f = 2.0 * h.active_params
    decode = batch * f / (h.tp * h.peak_tflops * eff.decode_mfu * TERA)
    prefill = batch * f * isl / osl / (h.tp * h.peak_tflops * eff.prefill_mfu * TERA)
    memory = (h.weights_bytes / h.tp + batch * (isl + osl / 2.0) * h.kv_bytes_per_token / h.kv_shards) / (
        h.hbm_tbps * eff.bandwidth_efficiency * TERA)
    return decode + prefill, memory


def itl_s(h: Hardware, concurrency: float, isl: float, osl: float, eff: Efficiencies) -> float:
    """Inter-token latency at a concurrency: the slower side of the roofline. [s/token]"""
    return max(step_times_s(h, concurrency, isl, osl, eff))


def ttft_s(h: Hardware, isl: float, eff: Efficiencies) -> float:
    """Time to first token: the prompt's prefill alone on the replica. [s]"""
    return 2.0 * h.active_params * isl / (h.tp * h.peak_tflops * eff.prefill_mfu * TERA)


def online_output_tok_s(h: Hardware, concurrency: float, isl: float, osl: float, eff: Efficiencies) -> float:
    """Output tokens/s of one replica at a fixed concurrency: C·o ÷ (TTFT + o·ITL). [tokens/s]"""
    return concurrency * osl / (ttft_s(h, isl, eff) + osl * itl_s(h, concurrency, isl, osl, eff))


def kv_batch(kv_gib_per_gpu: float, h: Hardware, isl: float, osl: float) -> float:
    """Conversations the replica's KV cache holds at the mean context i + o/2. [conversations]"""
    from xlplan.units import GIB

    return kv_gib_per_gpu * GIB * h.kv_shards / (h.kv_bytes_per_token * (isl + osl / 2.0))


def offline_output_tok_s(h: Hardware, kv_gib_per_gpu: float, isl: float, osl: float, eff: Efficiencies) -> tuple[float, float]:
    """(output tokens/s of one replica at the batch its KV cache holds, that batch). [tokens/s], [conversations]"""
    batch = kv_batch(kv_gib_per_gpu, h, isl, osl)
    return batch / max(step_times_s(h, batch, isl, osl, eff)), batch


def hardware_from_scenario(s, tp: int) -> Hardware:
    """One replica of ``tp`` GPUs for a resolved plan (:class:`~xlplan.scenario.Scenario`)."""
    from xlplan import memory

    return Hardware(s.active_params, s.weights_bytes, s.kv_bytes_per_token_layer * s.layers, tp,
                    memory.kv_shards(tp, s.kv_shard_limit), s.peak_tflops, s.hbm_tbps)
