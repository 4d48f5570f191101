"""xlplan's own H200 kernel measurements (xlplan/data/kernels/measured/) against the roofline and a second source.

The measured latencies are turned into efficiencies by scripts/reduce_measured_kernels.py; these tests hold the
reduced files to (1) arithmetic: each row's figures follow from its latency and the catalog's H200 peaks (989 bf16 and
1,979 fp8 dense TFLOP/s, 4.8 TB/s, xlplan/catalog/gpus.yaml); (2) the roofline: no kernel exceeds its peak, since every
call read its operands from HBM (copies cycled past 4 x L2); (3) agreement with an independent source measuring the
same GPU: AIConfigurator's TensorRT-LLM GEMM table for H200 (xlplan/data/kernels/gemm.csv).
"""

from __future__ import annotations

import csv
import importlib.util
import statistics
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[1] / "xlplan" / "data" / "kernels"
MEASURED = KERNELS / "measured"


def _rows(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_a_gemm_row_is_its_latency_against_the_catalog_peak():
    # The 70B o_proj (8192 x 8192) at M = 4096 in bf16: 2 x 4096 x 8192 x 8192 = 5.4976e11 FLOP; at the measured
    # latency L ms that is 5.4976e11 / (L x 1e-3) / 1e12 TFLOP/s, and the efficiency is that over 989.
    row = next(r for r in _rows(MEASURED / "h200-gemm.csv")
               if (r["dtype"], r["tokens"], r["n"], r["k"]) == ("bf16", "4096", "8192", "8192"))
    tflops = 2 * 4096 * 8192 * 8192 / (float(row["latency_ms"]) * 1e-3) / 1e12
    assert float(row["achieved_tflops"]) == pytest.approx(tflops, rel=1e-3)
    assert float(row["efficiency"]) == pytest.approx(tflops / 989, rel=1e-3)


def test_no_kernel_beats_its_roofline():
    for r in _rows(MEASURED / "h200-gemm.csv"):
        assert 0 < float(r["efficiency"]) <= 1, r
    for r in _rows(MEASURED / "h200-attention.csv"):
        assert 0 < float(r["compute_fraction"]) <= 1, r
        assert 0 < float(r["bandwidth_fraction"]) <= 1, r  # copies cycled past L2: every byte came from HBM


def test_the_reduced_files_are_what_the_reduction_writes_from_the_raw_ones(tmp_path):
    spec = importlib.util.spec_from_file_location("reduce_measured", KERNELS.parents[2] / "scripts" / "reduce_measured_kernels.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for table, fn in (("gemm", mod.gemm_rows), ("attention", mod.attention_rows)):
        want = fn(_rows(MEASURED / f"h200-{table}-raw.csv"), "h200")
        got = _rows(MEASURED / f"h200-{table}.csv")
        assert [{k: str(v) for k, v in w.items()} for w in want] == got


def test_bf16_gemm_agrees_with_aiconfigurators_h200_table():
    # Two sources measuring the same kernels on the same GPU model (cuBLAS via PyTorch here, TensorRT-LLM's GEMM
    # there): at each M from 16 to 32,768 tokens the median ratio over the ten shapes lies within 20%.
    aic = {(int(r["tokens"]), int(r["n"]), int(r["k"])): float(r["efficiency"])
           for r in _rows(KERNELS / "gemm.csv") if r["gpu"] == "h200" and r["dtype"] == "bf16"}
    ours = [r for r in _rows(MEASURED / "h200-gemm.csv") if r["dtype"] == "bf16"]
    for m in (16, 128, 1024, 4096, 32768):
        ratios = [float(r["efficiency"]) / aic[(m, int(r["n"]), int(r["k"]))] for r in ours if int(r["tokens"]) == m]
        assert len(ratios) == 10
        assert 0.8 <= statistics.median(ratios) <= 1.2, (m, ratios)


def test_large_gemms_are_compute_bound_and_single_token_ones_bandwidth_bound():
    # Roofline: at M = 1 a GEMM reads n x k x 2 bytes of bf16 weights for 2 n k FLOP (1 FLOP per byte), far below
    # the H200's 989e12 / 4.8e12 = 206 FLOP per byte, so its time is the weight read: the achieved bandwidth
    # (n k 2 bytes / latency) must be a large fraction of 4.8 TB/s and the compute efficiency tiny; at M = 32,768
    # (>> 206) it is compute-bound, well above half the bf16 peak. The bandwidth half is asserted where the weights are
    # at least 64 MB: a 12 MB read takes ~3 us at 4.8 TB/s, the same order as a kernel's start and ramp.
    for r in _rows(MEASURED / "h200-gemm.csv"):
        if r["dtype"] != "bf16":
            continue
        n, k, lat_s = int(r["n"]), int(r["k"]), float(r["latency_ms"]) * 1e-3
        if r["tokens"] == "1":
            if n * k * 2 >= 64e6:
                assert n * k * 2 / lat_s / 4.8e12 > 0.4, r
            assert float(r["efficiency"]) < 0.01, r
        if r["tokens"] == "32768":
            assert float(r["efficiency"]) > 0.5, r
