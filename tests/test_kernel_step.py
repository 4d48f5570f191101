"""The kernel sum (benchmarks/kernel_sum.py, the trial of issue 47's step physics): a step is the sum of its measured
kernels, each part as stated.

Expected figures are assembled by hand from the parts' own sources: the measured kernels (xlplan.serving.kernel_curves,
tested against AIConfigurator's rows in tests/test_kernel_curves.py), the catalog's model shapes
(xlplan/catalog/models.yaml: Llama-3.1-8B hidden 4096, 32 query and 8 KV heads of 128, MLP 14336, vocabulary 128256,
32 layers; Qwen3-235B-A22B hidden 4096, 94 layers, top-8 of 128 experts 1536 wide) and the H100 SXM's 3.35 TB/s.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from xlplan import catalog
from xlplan.serving import kernel_curves as kc
from xlplan.serving.collectives import allreduce_time_s

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import kernel_sum as ks  # noqa: E402  (the trial lives beside its benchmark, not in the package)


def _replica(model: str, gpu: str = "h100-sxm", tp: int = 1, ep: int = 1, fmt: str = "bf16") -> ks.KernelReplica:
    spec = catalog.get_gpu(gpu)
    return ks.KernelReplica(gpu=gpu, engine="vllm", model=catalog.get_model(model), tp=tp, ep=ep, gemm_format=fmt,
                            weights_format=fmt, kv_format="bf16", hbm_tbps=spec.hbm_tbps, bf16_tflops=spec.bf16_tflops,
                            link_gbps=450.0, link_latency_s=10e-6)


def test_a_dense_decode_step_is_its_gemms_attention_elementwise_kernels_and_head():
    kr = _replica("Llama-3.1-8B")
    b, ctx = 8, 1023
    # the projections per layer on one GPU: fused QKV (32 + 2 x 8) x 128 = 6144 by 4096, output 4096 by 4096,
    # gate and up 2 x 14336 by 4096, down 4096 by 14336
    gemms = sum(kc.gemm_time_s("h100-sxm", "bf16", b, n, k, engine="vllm")
                for n, k in ((6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)))
    # decode attention: 8 sequences read 4 x 32 x 128 query and output elements and 2 x 8 x 1023 x 128 cached ones,
    # 2 bytes each, at the measured share of HBM bandwidth
    nbytes = b * (4 * 32 * 128 + 2 * 8 * ctx * 128 * 2)
    attention = nbytes / (kc.decode_attention_bandwidth_fraction("h100-sxm", ctx, b, "bf16", 32, 8, engine="vllm") * 3.35e12)
    # elementwise: 8 x (4 x 4096 + 3 x 14336) elements x 2 bytes, read and written, at 0.8 x 3.35 TB/s = 0.7092 us
    elementwise = 8 * (4 * 4096 + 3 * 14336) * 2 * 2 / (0.8 * 3.35e12)
    assert elementwise == pytest.approx(0.7092e-6, rel=1e-3)
    head = kc.gemm_time_s("h100-sxm", "bf16", b, 128256, 4096, engine="vllm")
    # one GPU: no all-reduce
    assert ks.decode_step_s(kr, b, ctx) == pytest.approx(32 * (gemms + attention + elementwise) + head, rel=1e-12)


def test_tensor_parallelism_splits_the_projections_and_adds_two_all_reduces_a_layer():
    one, two = _replica("Llama-3.1-8B"), _replica("Llama-3.1-8B", tp=2)
    b = 16
    # at TP 2 each GPU holds half the heads and half the MLP: QKV (16 + 2 x 4) x 128 = 3072 by 4096, and so on
    gemms = sum(kc.gemm_time_s("h100-sxm", "bf16", b, n, k, engine="vllm")
                for n, k in ((3072, 4096), (4096, 2048), (14336, 4096), (4096, 7168)))
    assert ks._gemms_s(two, b, mlp=True) == pytest.approx(gemms, rel=1e-12)
    # two ring all-reduces of 16 x 4096 bf16 activations per layer: 2 x (10 us + 2 x 1/2 x 131,072 B / 450 GB/s)
    comm = 2 * allreduce_time_s(16 * 4096 * 2.0, 2, 450.0, 10e-6)
    assert comm == pytest.approx(2 * (10e-6 + 131072 / 450e9), rel=1e-12)
    assert ks.decode_step_s(one, b, 1023) > 0 and ks._decode_attention_s(two, b, 1023) > 0
    assert ks.decode_step_s(two, b, 1023) == pytest.approx(
        32 * (gemms + comm + 16 * (4 * 4096 + 3 * 7168) * 4 / (0.8 * 3.35e12)) + ks._decode_attention_s(two, b, 1023)
        + kc.gemm_time_s("h100-sxm", "bf16", b, 64128, 4096, engine="vllm"), rel=1e-12)


def test_a_moe_layers_experts_are_the_measured_kernel_at_the_share_random_routing_touches():
    kr = _replica("Qwen3-235B-A22B", gpu="h200", tp=1, ep=1, fmt="fp8")
    # 32 tokens with 8 of 128 experts each: balanced routing (the measurement) touches all 128, random routing
    # 128 x (1 - (120/128)^32) = 112.0 of them: 87.5%
    share = ks.touched_share(32, 8, 128)
    assert share == pytest.approx(1 - (120 / 128) ** 32, rel=1e-12)
    measured = min(kc.moe_time_s("h200", f, 32, 4096, 1536, 8, 128, 1, 1, engine="vllm") for f in ("fp8_block", "fp8"))
    router = kc.gemm_time_s("h200", "bf16", 32, 128, 4096, engine="vllm")
    assert ks.experts_time_s(kr, 32) == pytest.approx(measured * share + router, rel=1e-12)
    # many tokens touch every expert either way
    assert ks.touched_share(4096, 8, 128) == pytest.approx(1.0, abs=1e-12)
    assert ks.layer_counts(kr.model) == (0, 94)
