"""Trial for the measured step physics: a dense model's decode step as the sum of its measured kernels, with nothing
fitted, against the measured sample's inter-token latency and against the shipped model's replay of the same points.

    .venv/bin/python benchmarks/bench_kernel_step.py    # prints the table; bench_kernel_step.txt holds a run

Every fixed-concurrency point of the measured sample (xlplan/data/silicon_sample.md) on a dense model, aggregated,
one replica, on a GPU AIConfigurator measured, is predicted two ways:

- **the shipped model**: the replay through the simulator at the shipped, fitted efficiencies (what `validate`
  scores, :mod:`xlplan.evidence.replay`);
- **the kernel sum**: one decode step at the point's concurrency ``b`` and mean context (prompt + half the output) is
  the sum over the layers of the row's own engine's measured kernels (:mod:`xlplan.serving.kernel_curves`, newest
  version: vLLM 0.24.0, SGLang 0.5.14, TensorRT-LLM 1.3.0rc20): the four projections' GEMMs at M = ``b``
  (fused QKV, output, fused gate and up, down; :func:`~xlplan.serving.kernel_curves.gemm_time_s`, interpolated on the
  measured shape grid), decode attention over the cache (:func:`~xlplan.serving.kernel_curves.
  decode_attention_bandwidth_fraction`), the elementwise kernels (two residual-add norms and the gated activation, read
  and written once at 80% of HBM bandwidth, as AIConfigurator counts them) and, where TP > 1, two ring all-reduces
  (xlplan's collective model); plus the output head's bf16 GEMM. To that is added the step's mean share of prefill,
  ``b × prompt ÷ output`` tokens a step (each request prefills its prompt once in ``output`` steps), each token at the
  kernel sum's cost per token of a ``min(prompt, 8,192)``-token chunk (GEMMs at that M, causal attention at the
  measured prefill efficiency). No overhead, efficiency or constant is fitted.

Reported: the median |error| (median signed) of inter-token latency by engine, both ways, and the kernel sum by
concurrency. What it showed (bench_kernel_step.txt) is the case for issue 47's design: with nothing fitted, the
kernels measured in isolation predict the sample's dense decode about as well as the fitted scalars do for vLLM and
better for TensorRT-LLM and SGLang, and they keep the shape across concurrency that one fitted step overhead cannot.
What the trial leaves out is named in the output: MoE and MLA models (most of the sample), the per-request path and
the prefill-first scheduling of SGLang.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_kernel_prefill import compute_format  # noqa: E402
from bench_replay import points  # noqa: E402

from xlplan import catalog  # noqa: E402
from xlplan.evidence import replay  # noqa: E402
from xlplan.serving import kernel_curves  # noqa: E402

ELEMENTWISE_BANDWIDTH = 0.8
"""Elementwise kernels' share of HBM bandwidth, as AIConfigurator's ``ElementWise`` operations take it. [fraction]"""

PREFILL_CHUNK = 8192
"""The most prompt tokens one step's prefill chunk carries in the trial (vLLM's default step budget). [tokens]"""


def _shape(c):
    """Per-GPU sizes of the model under TP: (query heads, KV heads, head dim, intermediate, vocabulary, hidden). [1]"""
    m, tp = c.model, c.tp
    return (m.num_attention_heads // tp, max(1, m.num_key_value_heads // tp), m.head_dim,
            m.intermediate_size // tp, m.vocab_size // tp, m.hidden_size)


def _gemms_s(c, fmt: str, tokens: float) -> float:
    """The four projections of one layer at M = ``tokens``, on the engine's measured kernels. [s]"""
    nh, nkv, hd, inter, _, h = _shape(c)
    gpu = catalog.gpu_key(c.gpu.name)
    return sum(kernel_curves.gemm_time_s(gpu, fmt, tokens, n, k, engine=c.engine)
               for n, k in (((nh + 2 * nkv) * hd, h), (h, nh * hd), (2 * inter, h), (h, inter)))


def decode_step_s(rep, c, batch: float, context: float) -> float:
    """One decode step of ``batch`` sequences over ``context`` cached tokens each, as the sum of measured kernels. [s]"""
    nh, nkv, hd, inter, vocab, h = _shape(c)
    gpu, fmt = catalog.gpu_key(c.gpu.name), compute_format(rep, c.gpu)
    kv_bytes_per_element = 1.0 if c.kv_dtype == "fp8" else 2.0
    attn_bytes = batch * (4.0 * nh * hd + 2.0 * nkv * context * hd * kv_bytes_per_element)
    frac = kernel_curves.decode_attention_bandwidth_fraction(gpu, context, max(1, round(batch)), "fp8" if c.kv_dtype == "fp8"
                                                             else "bf16", nh, nkv, engine=c.engine)
    attention = attn_bytes / (frac * c.gpu.hbm_tbps * 1e12)
    elementwise = batch * (4 * h + 3 * inter) * 2 * 2.0 / (ELEMENTWISE_BANDWIDTH * c.gpu.hbm_tbps * 1e12)
    comm = 0.0
    if c.tp > 1:
        nbytes = batch * h * 2.0
        comm = 2 * (2 * (c.tp - 1) / c.tp * nbytes / (rep.r.link_gbps * 1e9) + rep.r.link_latency_s)
    head = kernel_curves.gemm_time_s(gpu, "bf16", batch, vocab, h, engine=c.engine)
    return c.model.num_hidden_layers * (_gemms_s(c, fmt, batch) + attention + elementwise + comm) + head


def prefill_token_s(rep, c) -> float:
    """One prompt token's share of a ``min(prompt, PREFILL_CHUNK)``-token prefill chunk, as measured kernels. [s]"""
    nh, nkv, hd, *_ = _shape(c)
    gpu, fmt = catalog.gpu_key(c.gpu.name), compute_format(rep, c.gpu)
    chunk = min(c.isl, PREFILL_CHUNK)
    eff = kernel_curves.prefill_attention_efficiency(gpu, min(c.isl, 16384), 1, nh, nkv, engine=c.engine)
    attention_per_token = 2.0 * nh * hd * c.isl / (eff * c.gpu.bf16_tflops * 1e12)  # causal: 2·h·d·s² over s tokens
    return c.model.num_hidden_layers * (_gemms_s(c, fmt, chunk) / chunk + attention_per_token)


def rows() -> list[tuple]:
    """(engine, concurrency, measured ITL, shipped replay's ITL, kernel sum's ITL) per dense sample point. [—], [s]"""
    out = []
    for rep, c, m in points():
        if not m.point or not m.itl_ms or c.model.num_experts or c.attention_dp or c.replicas != 1:
            continue
        try:
            catalog.gpu_key(c.gpu.name)
            kernel_curves.gemm_source(c.gpu.name, compute_format(rep, c.gpu), c.engine)
        except (ValueError, KeyError):
            continue
        b = float(m.concurrency)
        kernel = decode_step_s(rep, c, b, c.isl + c.osl / 2) + b * c.isl / c.osl * prefill_token_s(rep, c)
        shipped = replay.closed_loop(rep, c, replay.harness_for(c)).itl_s
        out.append((c.engine, b, m.itl_ms * 1e-3, shipped, kernel))
    return out


def _err(pairs: list[tuple[float, float]]) -> str:
    e = [p / m - 1 for m, p in pairs]
    return f"{statistics.median(abs(x) for x in e):6.1%} ({statistics.median(e):+6.1%})"


def main() -> None:
    out = rows()
    print(f"{len(out):,} dense aggregated points of the measured sample (one replica, a measured GPU)")
    print("inter-token latency, median |error| (median signed): shipped model (replay, fitted) | kernel sum (nothing fitted)")
    groups: dict = {"all": out}
    for r in out:
        groups.setdefault(r[0], []).append(r)
    for name, rs in sorted(groups.items()):
        print(f"  {name:7} {len(rs):5,}  {_err([(r[2], r[3]) for r in rs])} | {_err([(r[2], r[4]) for r in rs])}")
    print("kernel sum by concurrency, median predicted ÷ measured:")
    for name in sorted({r[0] for r in out}):
        cells = []
        for lo, hi in ((0, 8), (8, 32), (32, 128), (128, 1e9)):
            rs = [r[4] / r[2] for r in out if r[0] == name and lo < r[1] <= hi]
            cells.append(f"{lo + 1:.0f}-{hi:.0f}: {statistics.median(rs):.2f} ({len(rs)})" if rs else f"{lo + 1:.0f}-: —")
        print(f"  {name:7} " + "   ".join(cells).replace("1000000000", "∞"))
    print("left out: MoE and MLA models (the sample's other 1,560 points), the server's per-request path, SGLang's "
          "prefill-first scheduling (the kernel sum spreads prefill evenly over the steps)")


if __name__ == "__main__":
    main()
