"""Kernel efficiency curves: the tabulated AIConfigurator measurements come back exactly, and obey the roofline.

Every expected figure is restated from its source: the AIConfigurator database file (github.com/ai-dynamo/
aiconfigurator @095f58a51c4c, under ``aic-core/src/aiconfigurator_core/systems/data/``; "row" is the 0-based row of
the parquet table), the reduced line of ``xlplan/data/kernels/*.csv`` (line 1 is the header), and the catalog peak
(``xlplan/catalog/gpus.yaml``: H100 SXM 989 bf16 / 1979 fp8 TFLOP/s dense and 3.35 TB/s; H100 PCIe 756 / 2.0;
B200 9000 fp4).
"""

from __future__ import annotations

import math

import pytest

from xlplan import catalog
from xlplan.serving import kernel_curves as kc

GEMM_ROWS = [
    # (gpu, dtype, M, n, k, gemm.csv line and value, source latency [ms], dense peak [TFLOP/s])
    # h100_sxm/gemm/trtllm/1.3.0rc20/gemm_perf.parquet row 34628: bfloat16 m 4096 n 6144 k 4096, 0.264669 ms;
    # 2 x 4096 x 6144 x 4096 = 2.0616e11 FLOP / 0.264669 ms = 778.9 TFLOP/s; / 989 = 0.7876 (gemm.csv line 14)
    ("h100-sxm", "bf16", 4096, 6144, 4096, 0.7876, 0.264669, 989.0),
    # same file, row 24406: fp8 m 1024 n 8192 k 8192, 0.117648 ms; 1.3744e11 FLOP -> 1168 TFLOP/s; / 1979 = 0.5903
    # (gemm.csv line 268)
    ("h100-sxm", "fp8", 1024, 8192, 8192, 0.5903, 0.117648, 1979.0),
    # b200_sxm/gemm/trtllm/1.3.0rc20/gemm_perf.parquet row 39585: nvfp4 m 2048 n 7168 k 4096, 0.0468747 ms;
    # 1.2026e11 FLOP -> 2566 TFLOP/s; / 9000 (B200 dense FP4) = 0.2851 (gemm.csv line 1005)
    ("b200", "nvfp4", 2048, 7168, 4096, 0.2851, 0.0468747, 9000.0),
]


@pytest.mark.parametrize(("gpu", "dtype", "m", "n", "k", "tabulated", "latency_ms", "peak_tflops"), GEMM_ROWS)
def test_a_tabulated_gemm_comes_back_exactly(gpu, dtype, m, n, k, tabulated, latency_ms, peak_tflops):
    assert kc.gemm_efficiency(gpu, dtype, m, n, k) == tabulated
    # and it is the source's latency turned into a fraction of the catalog peak (4 significant figures kept)
    assert kc.gemm_efficiency(gpu, dtype, m, n, k) == pytest.approx(2 * m * n * k / (latency_ms * 1e-3) / 1e12 / peak_tflops,
                                                                    rel=1e-3)


def test_between_tabulated_tokens_the_curve_is_linear_in_log_tokens():
    # gemm.csv lines 13 and 14: H100 bf16 (6144, 4096) at M 2048 -> 0.7307, M 4096 -> 0.7876; the geometric mean of
    # the two M is halfway in log M, so the value is the plain mean of the two
    m = math.sqrt(2048 * 4096)
    assert kc.gemm_efficiency("h100-sxm", "bf16", m, 6144, 4096) == pytest.approx((0.7307 + 0.7876) / 2, rel=1e-12)
    # beyond the table (M 32768 is the largest, line 17: 0.7741) the end value is held
    assert kc.gemm_efficiency("h100-sxm", "bf16", 1e6, 6144, 4096) == 0.7741
    # a shape not tabulated takes the nearest one's curve: (6000, 4100) is nearest (6144, 4096) in log distance
    assert kc.gemm_efficiency("h100-sxm", "bf16", 4096, 6000, 4100) == 0.7876


@pytest.mark.parametrize("gpu", catalog.gpu_names())
def test_every_gemm_efficiency_is_a_fraction_of_peak(gpu):
    for dtype in ("bf16", "fp8", "nvfp4"):
        try:
            kc.gemm_source(gpu, dtype)
        except ValueError:
            continue  # the GPU has no dense peak in that format (A100 fp8, Hopper fp4, ...): no curve, said so
        for m in (1, 3, 16, 100, 1024, 4096, 65536):
            assert 0 < kc.gemm_efficiency(gpu, dtype, m) <= 1
            assert 0 < kc.gemm_efficiency(gpu, dtype, m, 4096, 4096) <= 1


def test_one_token_is_weight_bound_and_thousands_are_compute_bound():
    # Roofline: with M = 1 the GEMM does 2·n·k FLOPs and must read its n·k bf16 weights (2 bytes each) plus a small
    # activation and output, so its arithmetic intensity is just under 1 FLOP/byte and it cannot run faster than
    # 1 FLOP/byte x 3.35 TB/s = 3.35 TFLOP/s, 3.35 / 989 = 0.34% of the H100's dense bf16 peak.
    n, k = 6144, 4096
    intensity = 2 * n * k / ((k + n * k) * 2 + 2 * n)  # 0.9996 FLOP/byte
    bound = intensity * 3.35 / 989.0
    assert bound == pytest.approx(0.00339, rel=1e-2)
    one = kc.gemm_efficiency("h100-sxm", "bf16", 1, n, k)
    assert one == 0.002303  # gemm.csv line 2: 0.0221013 ms -> 2.277 TFLOP/s, 68% of that HBM bound
    assert one <= bound
    # At M = 4096 the intensity is ~1,500 FLOP/byte, far past the ridge (989 / 3.35 = 295): compute-bound, 79% of peak
    big = kc.gemm_efficiency("h100-sxm", "bf16", 4096, n, k)
    assert big > 0.5 and big > 100 * one
    # the same holds for the median over the tabulated shapes
    assert kc.gemm_efficiency("h100-sxm", "bf16", 4096) > 100 * kc.gemm_efficiency("h100-sxm", "bf16", 1)


def test_a_gpu_without_data_borrows_its_familys_curve_scaled_by_the_rooflines():
    assert kc.gemm_source("h100-sxm", "bf16") == "h100-sxm"
    assert kc.gemm_source("H100 PCIe", "bf16") == "h100-sxm"  # Hopper: the measured H100 SXM
    path = ("https://github.com/ai-dynamo/aiconfigurator@095f58a51c4ca8e61b66ec108d86f223f8d559ce:"
            "aic-core/src/aiconfigurator_core/systems/data/h100_sxm/gemm/trtllm/1.3.0rc20/gemm_perf.parquet")
    assert kc.source_paths("gemm", "h100-pcie") == (path,)
    sxm = kc.gemm_efficiency("h100-sxm", "bf16", 1, 6144, 4096)
    pcie = kc.gemm_efficiency("h100-pcie", "bf16", 1, 6144, 4096)
    # weight-bound on both: the share of peak scales with bandwidth per FLOP, (2.0 / 756) / (3.35 / 989) = 0.781
    assert pcie == pytest.approx(sxm * (2.0 / 756.0) / (3.35 / 989.0), rel=1e-9)
    # compute-bound on both (intensity ~1,500 FLOP/byte, past both ridges, 295 and 378): the share carries over
    assert kc.gemm_efficiency("h100-pcie", "bf16", 4096, 6144, 4096) == pytest.approx(0.7876, rel=1e-12)
    # no NVIDIA architecture of its own: the measured GPU nearest in peak and bandwidth, here the H200 (989, 4.8)
    # for the MI300X (1307, 5.3): |ln 1307/989| + |ln 5.3/4.8| = 0.38, against 0.74 for the H100 and 0.95 for B200
    assert kc.gemm_source("mi300x", "bf16") == "h200"
    # the catalog gives the H100 PCIe no FP4 peak: no fp4 curve, and the refusal says why
    with pytest.raises(ValueError, match="no dense nvfp4 peak"):
        kc.gemm_efficiency("h100-pcie", "fp4", 1024)
    with pytest.raises(ValueError, match="tokens must be > 0"):
        kc.gemm_efficiency("h100-sxm", "bf16", 0)


def test_prefill_attention_reads_its_measured_row_and_grows_with_the_prompt():
    # h100_sxm/attention/trtllm/1.3.0rc20/context_attention_perf.parquet row 42086: batch 1, isl 8192, 32 heads,
    # 8 KV heads, head dim 128, bf16, 1.0845 ms; causal FLOPs 2 x 1 x 32 x 128 x 8192^2 = 5.497e11 -> 506.9 TFLOP/s;
    # / 989 = 0.5126 (attention.csv line 14)
    assert kc.prefill_attention_efficiency("h100-sxm", 8192) == 0.5126
    assert kc.prefill_attention_efficiency("h100-sxm", 8192) == pytest.approx(
        2 * 32 * 128 * 8192**2 / 1.084496e-3 / 1e12 / 989.0, rel=1e-3)
    assert kc.prefill_attention_efficiency("h100-sxm", 128) < 0.1 < 0.5 < kc.prefill_attention_efficiency("h100-sxm", 8192)


def test_decode_attention_reads_its_measured_row_and_is_capped_at_hbm_bandwidth():
    # h100_sxm/attention/trtllm/1.3.0rc20/generation_attention_perf.parquet row 18357: batch 1, 8191 cached tokens,
    # 32 heads, 8 KV heads, head dim 128, bf16 cache, 0.0240107 ms; bytes 4 x 32 x 128 + 2 x 8 x 8191 x 128 x 2 =
    # 33,566,720 -> 1.398 TB/s; / 3.35 = 0.4173 (attention.csv line 65)
    assert kc.decode_attention_bandwidth_fraction("h100-sxm", 8191) == 0.4173
    assert kc.decode_attention_bandwidth_fraction("h100-sxm", 8191) == pytest.approx(
        (4 * 32 * 128 + 2 * 8 * 8191 * 128 * 2) / 0.0240107e-3 / 1e12 / 3.35, rel=1e-3)
    assert kc.decode_attention_bandwidth_fraction("h100-sxm", 127) < kc.decode_attention_bandwidth_fraction("h100-sxm", 8191)
    # L40S, batch 1, 16383 tokens: one layer's 64 MiB cache stays in the L40S's 96 MB L2 between iterations and the table
    # reads 2.4 TB/s, 2.79 x the 0.864 TB/s HBM; the function says no more than the HBM bandwidth
    assert kc.decode_attention_bandwidth_fraction("l40s", 16383) == 1.0


def test_moe_reads_its_measured_row_and_grows_with_tokens_per_expert():
    # h100_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet row 48668: bf16 CUTLASS, balanced, hidden 2048, inter 768,
    # top-8 of 128 experts (Qwen3-30B-A3B), TP 1 EP 1, 2048 tokens -> 2048 x 8 / 128 = 128 per expert, 0.649861 ms;
    # 2 x 2048 x 8 x 2048 x 768 x 3 = 1.546e11 FLOP -> 237.9 TFLOP/s; / 989 = 0.2406 (moe.csv line 49)
    assert kc.moe_efficiency("h100-sxm", "bf16", 128, hidden=2048, inter=768) == 0.2406
    assert kc.moe_efficiency("h100-sxm", "bf16", 1) < 0.01 < 0.4 < kc.moe_efficiency("h100-sxm", "bf16", 1024)
    assert kc.curve_source("moe", "h100-nvl", "fp8") == "h100-sxm"


def test_each_engine_reads_its_own_kernels():
    # h100_sxm/gemm/vllm/0.24.0/gemm_perf.parquet row 9175: bfloat16 (torch.nn.functional.linear) m 4096 n 6144
    # k 4096, 0.258703 ms; 2.0616e11 FLOP -> 796.9 TFLOP/s; / 989 = 0.8058 (gemm.csv line 3514). TensorRT-LLM's
    # own kernel on the same GEMM took 0.264669 ms, 0.7876 (GEMM_ROWS above).
    assert kc.gemm_efficiency("h100-sxm", "bf16", 4096, 6144, 4096, engine="vllm") == 0.8058
    assert kc.gemm_efficiency("h100-sxm", "bf16", 4096, 6144, 4096, engine="vllm") == pytest.approx(
        2 * 4096 * 6144 * 4096 / 0.258703e-3 / 1e12 / 989.0, rel=1e-3)
    # h100_sxm/gemm/sglang/0.5.14/gemm_perf.parquet row 16109: fp8 (sgl_kernel fp8_scaled_mm) m 1024 n 8192 k 8192,
    # 0.107724 ms; 1.3744e11 FLOP -> 1276 TFLOP/s; / 1979 = 0.6447 (gemm.csv line 7268)
    assert kc.gemm_efficiency("h100-sxm", "fp8", 1024, 8192, 8192, engine="sglang") == 0.6447
    # h100_sxm/attention/vllm/0.24.0/context_attention_perf.parquet row 28997: FlashAttention 3, batch 1, isl 8192,
    # 32/8 heads, no window, 0.912219 ms; 5.497e11 FLOP -> 602.7 TFLOP/s; / 989 = 0.6094 (attention.csv line 2550),
    # where TensorRT-LLM's took 1.0845 ms (0.5126, the test above)
    assert kc.prefill_attention_efficiency("h100-sxm", 8192, engine="vllm") == 0.6094
    want = ("https://github.com/ai-dynamo/aiconfigurator@095f58a51c4ca8e61b66ec108d86f223f8d559ce:"
            "aic-core/src/aiconfigurator_core/systems/data/h100_sxm/gemm/vllm/0.24.0/gemm_perf.parquet")
    assert kc.source_paths("gemm", "h100-sxm", "bf16", engine="vllm") == (want,)


def test_an_engine_without_its_own_table_reads_tensorrt_llms():
    # SGLang's MoE tables measured block-scaled fp8 only (h100_sxm/moe/sglang/0.5.14: fp8_block, bfloat16, int4,
    # mxfp4), so a per-tensor fp8 MoE reads TensorRT-LLM's; an engine AIConfigurator does not measure does too
    assert kc.engine_source("moe", "sglang", "fp8") == "trtllm"
    assert kc.engine_source("moe", "sglang", "bf16") == "sglang"
    assert kc.engine_source("gemm", "tgi", "bf16") == "trtllm"
    assert kc.moe_efficiency("h100-sxm", "fp8", 16, engine="sglang") == kc.moe_efficiency("h100-sxm", "fp8", 16)
    # vLLM 0.22.0's A100 tables are a reuse.yaml pointing at 0.14.0's: the file read is 0.14.0's
    assert kc.source_paths("gemm", "a100-80gb", "bf16", engine="vllm")[0].endswith("a100_sxm/gemm/vllm/0.14.0/gemm_perf.parquet")


def test_the_kernel_tables_stay_within_their_size_budget_in_the_wheel():
    # xlplan/data/kernels/README.md: the reduced copy stays within 3.5 MB (3,500,000 bytes), one version per engine
    from importlib import resources

    def size(node):
        return sum(size(c) for c in node.iterdir()) if node.is_dir() else len(node.read_bytes())

    assert size(resources.files("xlplan.data").joinpath("kernels")) <= 3_500_000


def test_gemm_time_on_the_shape_grid_is_the_measurement_and_interpolates_between():
    # h100_sxm/gemm/trtllm/1.3.0rc20/gemm_perf.parquet rows 43234 and 43232: bfloat16 n 4096 k 8192 at M 256,
    # 0.036784 ms, and at M 512, 0.0463627 ms (gemm_grid.csv line 27, 4 significant figures: 0.03678, 0.04636)
    assert kc.gemm_time_s("h100-sxm", "bf16", 256, 4096, 8192) == pytest.approx(0.03678e-3, rel=1e-12)
    assert kc.gemm_time_s("h100-sxm", "bf16", 256, 4096, 8192) == pytest.approx(0.036784e-3, rel=2e-4)
    # between two measured M the time is linear in M: M 384 is halfway, (0.03678 + 0.04636) / 2 = 0.04157 ms
    assert kc.gemm_time_s("h100-sxm", "bf16", 384, 4096, 8192) == pytest.approx(0.04157e-3, rel=1e-12)
    # between two grid n the log time is linear in log n: n = sqrt(4096 x 8192) at M 256 is the geometric mean of
    # the 4096 (0.03678 ms) and 8192 (row 24303, 0.056416 -> 0.05642 ms, line 34) cells
    assert kc.gemm_time_s("h100-sxm", "bf16", 256, (4096 * 8192) ** 0.5, 8192) == pytest.approx(
        (0.03678e-3 * 0.05642e-3) ** 0.5, rel=1e-12)
    # beyond the largest M (32,768: 2.738 ms, line 27) the time grows in proportion to M
    assert kc.gemm_time_s("h100-sxm", "bf16", 65536, 4096, 8192) == pytest.approx(2 * 2.738e-3, rel=1e-12)
    with pytest.raises(ValueError, match="tokens must be > 0"):
        kc.gemm_time_s("h100-sxm", "bf16", 0, 4096, 4096)
    # a GEMM narrower than the grid's smallest size (512) is held at it, not shrunk below the kernel's fixed cost:
    # 100 x 100 at M 16 takes what 512 x 512 does (gemm_grid.csv line 2: 0.003364 ms at M 16)
    assert kc.gemm_time_s("h100-sxm", "bf16", 16, 100, 100) == pytest.approx(0.003364e-3, rel=1e-12)
    with pytest.raises(ValueError, match="n and k must be > 0"):
        kc.gemm_time_s("h100-sxm", "bf16", 16, -5, 4096)


def test_a_borrowed_gemm_time_scales_with_peak_where_both_gpus_are_compute_bound():
    # H100 PCIe has no measurements and borrows H100 SXM's; at M 8,192 both are compute-bound (the GEMM's arithmetic
    # intensity, ~2,700 FLOP/byte, is past both ridge points: 989/3.35 = 295 and 756/2.0 = 378), so the borrowed
    # efficiency is the source's and the time scales as the peaks, 989 / 756
    sxm = kc.gemm_time_s("h100-sxm", "bf16", 8192, 8192, 8192)
    assert kc.gemm_time_s("h100-pcie", "bf16", 8192, 8192, 8192) == pytest.approx(sxm * 989 / 756, rel=1e-9)


def test_moe_time_at_a_catalog_shape_is_the_measurement_and_linear_in_tokens_between():
    # h200_sxm/moe/vllm/0.24.0/moe_perf.parquet rows 2600 and 2601: fp8_block (Triton), balanced, Qwen3-235B-A22B's
    # layer (hidden 4096, experts 1536 wide, top-8 of 128), MoE TP 1 × EP 1: 16 tokens 0.59744 ms, 32 tokens
    # 0.610987 ms (moe_grid.csv line 2625, 4 significant figures: 0.5974, 0.611)
    args = ("h200", "fp8_block")
    shape = dict(hidden=4096, inter=1536, topk=8, experts=128, moe_tp=1, moe_ep=1, engine="vllm")
    assert kc.moe_time_s(*args, 16, **shape) == pytest.approx(0.5974e-3, rel=1e-12)
    assert kc.moe_time_s(*args, 16, **shape) == pytest.approx(0.59744e-3, rel=2e-4)
    # 24 tokens is halfway: (0.5974 + 0.611) / 2 = 0.6042 ms
    assert kc.moe_time_s(*args, 24, **shape) == pytest.approx(0.6042e-3, rel=1e-12)
    # a split nobody measured on one node says so
    with pytest.raises(ValueError, match="no measured fp8_block MoE layer"):
        kc.moe_time_s(*args, 16, **{**shape, "moe_tp": 16})


def test_mla_decode_and_its_bmms_are_the_measurement_and_linear_in_cached_tokens_between():
    # b200_sxm/mla/trtllm/1.3.0rc20/generation_mla_perf.parquet rows 1691 and 1867: 16 heads per GPU (DeepSeek's 128
    # at TP 8), batch 64, fp8 latent cache, 1,023 cached tokens 0.015536 ms and 2,047 tokens 0.020949 ms (mla.csv
    # line 257, 4 significant figures: 0.01554, 0.02095)
    assert kc.mla_decode_time_s("b200", "fp8", 16, 64, 1023) == pytest.approx(0.01554e-3, rel=1e-12)
    assert kc.mla_decode_time_s("b200", "fp8", 16, 64, 1023) == pytest.approx(0.015536e-3, rel=5e-4)  # 4 figures
    # 1,535 tokens is halfway between the two lengths: (0.01554 + 0.02095) / 2 = 0.018245 ms
    assert kc.mla_decode_time_s("b200", "fp8", 16, 64, 1535) == pytest.approx(0.018245e-3, rel=1e-12)
    # b200_sxm/mla_bmm/trtllm/1.3.0rc20/mla_bmm_perf.parquet rows 118 and 518: bf16, 16 heads, 64 tokens, before
    # (mla_gen_pre) 0.004454 ms and after (mla_gen_post) 0.004435 ms; the two together 0.008889 ms
    assert kc.mla_bmm_time_s("b200", "bf16", 64, 16) == pytest.approx(0.008889e-3, rel=1e-12)
    # vLLM's MLA database holds whole modules, not this kernel: vLLM reads TensorRT-LLM's
    assert kc.mla_decode_time_s("b200", "fp8", 16, 64, 1023, engine="vllm") == kc.mla_decode_time_s("b200", "fp8", 16, 64, 1023)
