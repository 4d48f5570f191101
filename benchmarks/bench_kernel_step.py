"""Trial for the measured step physics: a model's decode step as the sum of its measured kernels, with nothing fitted,
against the measured sample's inter-token latency and against the shipped model's replay of the same points.

    .venv/bin/python benchmarks/bench_kernel_step.py    # prints the table; bench_kernel_step.txt holds a run

Every fixed-concurrency point of the measured sample (xlplan/data/silicon_sample.md), aggregated, one replica, no
attention data parallelism, its expert split measured within a node, on a GPU AIConfigurator measured — dense models,
MoE models with grouped-query attention (gpt-oss, MiniMax-M2.5, Qwen3-235B-A22B) and with multi-head latent attention
(DeepSeek-V3/R1, Kimi-K2.5) — is predicted two ways:

- **the shipped model**: the replay through the simulator at the shipped, fitted efficiencies (what `validate`
  scores, :mod:`xlplan.evidence.replay`);
- **the kernel sum** (``kernel_sum.py`` beside this file): one decode step at the point's concurrency ``b`` and mean
  context (prompt + half the output) is the sum over the layers of the row's own engine's measured kernels (:mod:`xlplan.serving.kernel_curves`, newest
  version: vLLM 0.24.0, SGLang 0.5.14, TensorRT-LLM 1.3.0rc20): the four projections' GEMMs at M = ``b``
  (fused QKV, output, fused gate and up, down; :func:`~xlplan.serving.kernel_curves.gemm_time_s`, interpolated on the
  measured shape grid; a MoE model's attention projections and router, and its experts as the fused MoE kernel at
  the model's own shape and split, :func:`~xlplan.serving.kernel_curves.moe_time_s`, the fastest of the expert
  formats the checkpoint's format allows, scaled from the measurement's balanced routing to the experts random
  routing touches; MLA's fused low-rank projections, its absorbed per-head BMMs and its decode
  kernel over the latent cache, :func:`~xlplan.serving.kernel_curves.mla_decode_time_s`), decode attention over the cache (:func:`~xlplan.serving.kernel_curves.
  decode_attention_bandwidth_fraction`, sliding-window layers over their window), the elementwise kernels (two residual-add norms and the gated activation, read
  and written once at 80% of HBM bandwidth, as AIConfigurator counts them) and, where TP > 1, two ring all-reduces
  (xlplan's collective model); plus the output head's bf16 GEMM. To that is added the step's mean share of prefill,
  ``b × prompt ÷ output`` tokens a step (each request prefills its prompt once in ``output`` steps), each token at the
  kernel sum's cost per token of a ``min(prompt, 8,192)``-token chunk (GEMMs at that M, causal attention at the
  measured prefill efficiency). No overhead, efficiency or constant is fitted.

Reported: the median |error| (median signed) of inter-token latency by engine, both ways, and the kernel sum by
concurrency. What it showed (bench_kernel_step.txt) is the case for issue 47's design: with nothing fitted, the
kernels measured in isolation predict the sample's decode better than the fitted scalars overall (15.3% against
17.7%), much better on TensorRT-LLM's dense and MoE rows, SGLang's dense rows and vLLM's MoE rows, worse on
TensorRT-LLM's MLA rows and vLLM's dense and MLA rows, and too fast on SGLang's MoE and MLA rows.
What the trial leaves out is named in the output: attention data parallelism and wide expert parallelism, the
per-request path and the prefill-first scheduling of SGLang.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kernel_sum as kernel_step  # noqa: E402
from bench_kernel_prefill import compute_format  # noqa: E402
from bench_replay import points  # noqa: E402

from xlplan import catalog  # noqa: E402
from xlplan.evidence import replay  # noqa: E402
from xlplan.serving import kernel_curves  # noqa: E402

PREFILL_CHUNK = 8192
"""The most prompt tokens one step's prefill chunk carries in the trial (vLLM's default step budget). [tokens]"""


def kernel_replica(rep, c) -> kernel_step.KernelReplica:
    """The row's replica as the kernel sum reads it: the catalog GPU, the engine, the model and its split. [—]"""
    return kernel_step.KernelReplica(
        gpu=catalog.gpu_key(c.gpu.name), engine=c.engine, model=c.model, tp=c.tp, ep=c.ep or 1,
        gemm_format=compute_format(rep, c.gpu), weights_format=c.weights_dtype,
        kv_format="fp8" if c.kv_dtype == "fp8" else "bf16", hbm_tbps=c.gpu.hbm_tbps, bf16_tflops=c.gpu.bf16_tflops,
        link_gbps=rep.r.link_gbps, link_latency_s=rep.r.link_latency_s)


def rows() -> list[tuple]:
    """(engine, concurrency, measured ITL, shipped replay's ITL, kernel sum's ITL, dense or MoE) per sample point the
    trial covers. [—], [s]"""
    out = []
    for rep, c, m in points():
        if not m.point or not m.itl_ms or c.attention_dp or c.replicas != 1:
            continue
        try:
            kr = kernel_replica(rep, c)
            kernel_curves.gemm_source(kr.gpu, kr.gemm_format, c.engine)
            b = float(m.concurrency)
            kernel = (kernel_step.decode_step_s(kr, b, c.isl + c.osl / 2)
                      + b * c.isl / c.osl * kernel_step.prefill_token_s(kr, c.isl, min(c.isl, PREFILL_CHUNK)))
        except (ValueError, KeyError):
            continue
        shipped = replay.closed_loop(rep, c, replay.harness_for(c)).itl_s
        kind = "MLA" if c.model.attention == "mla" else ("MoE" if c.model.num_experts else "dense")
        out.append((c.engine, b, m.itl_ms * 1e-3, shipped, kernel, kind))
    return out


def _err(pairs: list[tuple[float, float]]) -> str:
    e = [p / m - 1 for m, p in pairs]
    return f"{statistics.median(abs(x) for x in e):6.1%} ({statistics.median(e):+6.1%})"


def main() -> None:
    out = rows()
    print(f"{len(out):,} aggregated points of the measured sample (dense, grouped-query MoE and MLA; one replica, no "
          "attention data parallelism, a measured GPU and expert split)")
    print("inter-token latency, median |error| (median signed): shipped model (replay, fitted) | kernel sum (nothing fitted)")
    groups: dict = {"all": out}
    for r in out:
        groups.setdefault(r[0], []).append(r)
        groups.setdefault(f"{r[0]} {r[5]}", []).append(r)
    for name, rs in sorted(groups.items()):
        print(f"  {name:13} {len(rs):5,}  {_err([(r[2], r[3]) for r in rs])} | {_err([(r[2], r[4]) for r in rs])}")
    print("kernel sum by concurrency, median predicted ÷ measured:")
    for name in sorted({r[0] for r in out}):
        cells = []
        for lo, hi in ((0, 8), (8, 32), (32, 128), (128, 1e9)):
            rs = [r[4] / r[2] for r in out if r[0] == name and lo < r[1] <= hi]
            cells.append(f"{lo + 1:.0f}-{hi:.0f}: {statistics.median(rs):.2f} ({len(rs)})" if rs else f"{lo + 1:.0f}-: —")
        print(f"  {name:7} " + "   ".join(cells).replace("1000000000", "∞"))
    print("left out: attention data parallelism and wide expert parallelism (expert splits past one node), the server's "
          "per-request path, SGLang's prefill-first scheduling (the kernel sum spreads prefill evenly over the steps), "
          "MTP and other speculative decoding")


if __name__ == "__main__":
    main()
