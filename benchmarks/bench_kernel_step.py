"""Trial for the measured step physics: a model's decode step as the sum of its measured kernels, with nothing fitted,
against the measured sample's inter-token latency and against the shipped model's replay of the same points.

    .venv/bin/python benchmarks/bench_kernel_step.py    # prints the table; bench_kernel_step.txt holds a run

Every fixed-concurrency point of the measured sample (xlplan/data/silicon_sample.md), aggregated, one replica, no
attention data parallelism, its expert split measured within a node, on a GPU AIConfigurator measured — dense models,
MoE models with grouped-query attention (gpt-oss, MiniMax-M2.5, Qwen3-235B-A22B) and with multi-head latent attention
(DeepSeek-V3/R1, Kimi-K2.5) — is predicted two ways:

- **the shipped model**: the replay through the simulator at the shipped, fitted efficiencies (what `validate`
  scores, :mod:`xlplan.evidence.replay`);
- **the kernel sum**: one decode step at the point's concurrency ``b`` and mean context (prompt + half the output) is
  the sum over the layers of the row's own engine's measured kernels (:mod:`xlplan.serving.kernel_curves`, newest
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
kernels measured in isolation predict the sample's decode better than the fitted scalars overall (15.4% against
17.7%), much better on TensorRT-LLM's dense and MoE rows, SGLang's dense rows and vLLM's MoE rows, worse on
TensorRT-LLM's MLA rows, vLLM's dense rows and SGLang's MoE and MLA rows.
What the trial leaves out is named in the output: attention data parallelism and wide expert parallelism, the
per-request path and the prefill-first scheduling of SGLang.
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


MOE_FORMATS = {"bf16": ("bf16",), "fp8": ("fp8_block", "fp8"), "nvfp4": ("nvfp4",), "mxfp4": ("mxfp4_fp8", "mxfp4")}
"""The expert formats a checkpoint's weight format may run as (moe_grid.csv); the fastest measured is taken. [—]"""


def _shape(c):
    """Per-GPU sizes of the model under TP: (query heads, KV heads, head dim, intermediate, vocabulary, hidden). [1]"""
    m, tp = c.model, c.tp
    return (m.num_attention_heads // tp, max(1, m.num_key_value_heads // tp), m.head_dim,
            m.intermediate_size // tp, m.vocab_size // tp, m.hidden_size)


def _gemms_s(c, fmt: str, tokens: float, mlp: bool = True) -> float:
    """One layer's projections at M = ``tokens`` on the engine's measured kernels: attention's (grouped-query: fused
    QKV and output; MLA: the fused low-rank A projection, replicated on every GPU, the query's B projection and the
    output), a MoE layer's shared experts, and the dense MLP's where ``mlp``. [s]"""
    nh, nkv, hd, inter, _, h = _shape(c)
    m, gpu = c.model, catalog.gpu_key(c.gpu.name)
    if m.attention == "mla":
        shapes = [((m.q_lora_rank or 0) + m.kv_lora_rank + m.qk_rope_head_dim, h),
                  (nh * (m.qk_nope_head_dim + m.qk_rope_head_dim), m.q_lora_rank or h), (h, nh * m.v_head_dim)]
    else:
        shapes = [((nh + 2 * nkv) * hd, h), (h, nh * hd)]
    if mlp and inter:
        shapes += [(2 * inter, h), (h, inter)]
    if not mlp and m.shared_experts:
        width = m.shared_experts * m.moe_intermediate_size // c.tp
        shapes += [(2 * width, h), (h, width)]
    return sum(kernel_curves.gemm_time_s(gpu, fmt, tokens, n, k, engine=c.engine) for n, k in shapes)


def _mla_decode_s(c, batch: float, context: float) -> float:
    """One layer's MLA decode: the absorbed per-head BMMs and the latent-cache kernel. [s]"""
    gpu, nh = catalog.gpu_key(c.gpu.name), c.model.num_attention_heads // c.tp
    bmm = "fp8" if c.weights_dtype in ("fp8", "nvfp4") else "bf16"
    return (kernel_curves.mla_bmm_time_s(gpu, bmm, batch, nh, engine=c.engine)
            + kernel_curves.mla_decode_time_s(gpu, "fp8" if c.kv_dtype == "fp8" else "bf16", nh, batch, context,
                                              engine=c.engine))


def _experts_s(c, tokens: float) -> float:
    """One MoE layer's router and experts with ``tokens`` entering it (the fastest allowed format). [s]"""
    m, gpu = c.model, catalog.gpu_key(c.gpu.name)
    ep = c.ep or 1
    split = dict(hidden=m.hidden_size, inter=m.moe_intermediate_size, topk=m.experts_per_token, experts=m.num_experts,
                 moe_tp=c.tp // ep, moe_ep=ep, engine=c.engine)
    times = []
    for fmt in MOE_FORMATS.get(c.weights_dtype, ()):
        try:
            times.append(kernel_curves.moe_time_s(gpu, fmt, tokens, **split))
        except ValueError:
            continue
    if not times:
        raise ValueError(f"no measured MoE kernel for {m.name} at {c.weights_dtype}, TP {c.tp} EP {ep}")
    router = kernel_curves.gemm_time_s(gpu, "bf16", tokens, m.num_experts, m.hidden_size, engine=c.engine)
    return min(times) * _touched_share(tokens, m.experts_per_token, m.num_experts) + router


def _touched_share(tokens: float, topk: int, experts: int) -> float:
    """Experts a step's tokens touch under random routing, as a share of those the measurement's balanced routing
    touched: ``E·(1 − (1 − k/E)^T) ÷ min(E, T·k)``. [fraction]

    AIConfigurator measures the MoE kernel with balanced routing, which hands every expert its share, so 32 tokens
    with 8 of 256 experts each touch all 256; routed at random they touch 1 − (1 − 8/256)^32 = 64% of them. Where the
    kernel reads its experts' weights (few tokens), its time follows the experts touched."""
    random = experts * (1.0 - (1.0 - topk / experts) ** tokens)
    return random / min(experts, tokens * topk)


def _layers(c) -> tuple[int, int]:
    """(dense-MLP layers, MoE layers). [layers]"""
    m = c.model
    if not m.num_experts:
        return m.num_hidden_layers, 0
    return m.first_dense_layers, m.num_hidden_layers - m.first_dense_layers


def decode_step_s(rep, c, batch: float, context: float) -> float:
    """One decode step of ``batch`` sequences over ``context`` cached tokens each, as the sum of measured kernels. [s]"""
    nh, nkv, hd, inter, vocab, h = _shape(c)
    gpu, fmt = catalog.gpu_key(c.gpu.name), compute_format(rep, c.gpu)
    dense_layers, moe_layers = _layers(c)
    layers = dense_layers + moe_layers
    window_layers = c.model.sliding_window_layers if c.model.sliding_window else 0
    kv_bytes_per_element = 1.0 if c.kv_dtype == "fp8" else 2.0
    kv_fmt = "fp8" if c.kv_dtype == "fp8" else "bf16"
    attention = layers * _mla_decode_s(c, batch, context) if c.model.attention == "mla" else 0.0
    for n, ctx in ((layers - window_layers, context), (window_layers, min(context, c.model.sliding_window or context))):
        if n and c.model.attention != "mla":
            nbytes = batch * (4.0 * nh * hd + 2.0 * nkv * ctx * hd * kv_bytes_per_element)
            frac = kernel_curves.decode_attention_bandwidth_fraction(gpu, ctx, max(1, round(batch)), kv_fmt, nh, nkv,
                                                                     engine=c.engine)
            attention += n * nbytes / (frac * c.gpu.hbm_tbps * 1e12)
    width = inter if not moe_layers else 0
    elementwise = batch * (4 * h + 3 * width) * 2 * 2.0 / (ELEMENTWISE_BANDWIDTH * c.gpu.hbm_tbps * 1e12)
    comm = 0.0
    if c.tp > 1:
        nbytes = batch * h * 2.0
        comm = 2 * (2 * (c.tp - 1) / c.tp * nbytes / (rep.r.link_gbps * 1e9) + rep.r.link_latency_s)
    head = kernel_curves.gemm_time_s(gpu, "bf16", batch, vocab, h, engine=c.engine)
    gemms = dense_layers * _gemms_s(c, fmt, batch)
    if moe_layers:
        gemms += moe_layers * (_gemms_s(c, fmt, batch, mlp=False) + _experts_s(c, batch))
    return gemms + attention + layers * (elementwise + comm) + head


def prefill_token_s(rep, c) -> float:
    """One prompt token's share of a ``min(prompt, PREFILL_CHUNK)``-token prefill chunk, as measured kernels. [s]"""
    nh, nkv, hd, *_ = _shape(c)
    gpu, fmt = catalog.gpu_key(c.gpu.name), compute_format(rep, c.gpu)
    chunk = min(c.isl, PREFILL_CHUNK)
    dense_layers, moe_layers = _layers(c)
    eff = kernel_curves.prefill_attention_efficiency(gpu, min(c.isl, 16384), 1, nh, nkv, engine=c.engine)
    if c.model.attention == "mla":  # the score and value widths of MLA's heads: 192 and 128 for DeepSeek
        hd = (c.model.qk_nope_head_dim + c.model.qk_rope_head_dim + c.model.v_head_dim) / 2
    attention_per_token = 2.0 * nh * hd * c.isl / (eff * c.gpu.bf16_tflops * 1e12)  # causal: 2·h·d·s² over s tokens
    gemms = dense_layers * _gemms_s(c, fmt, chunk)
    if moe_layers:
        gemms += moe_layers * (_gemms_s(c, fmt, chunk, mlp=False) + _experts_s(c, chunk))
    return gemms / chunk + (dense_layers + moe_layers) * attention_per_token


def rows() -> list[tuple]:
    """(engine, concurrency, measured ITL, shipped replay's ITL, kernel sum's ITL, dense or MoE) per sample point the
    trial covers. [—], [s]"""
    out = []
    for rep, c, m in points():
        if not m.point or not m.itl_ms or c.attention_dp or c.replicas != 1:
            continue
        try:
            catalog.gpu_key(c.gpu.name)
            kernel_curves.gemm_source(c.gpu.name, compute_format(rep, c.gpu), c.engine)
            b = float(m.concurrency)
            kernel = decode_step_s(rep, c, b, c.isl + c.osl / 2) + b * c.isl / c.osl * prefill_token_s(rep, c)
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
