"""Reduce a raw kernel measurement (scripts/measure_kernels_gpu.py's output) to the catalog's curve format.

    python scripts/reduce_measured_kernels.py xlplan/data/kernels/measured/h200 h200

reads PREFIX-gemm-raw.csv and PREFIX-attention-raw.csv and writes PREFIX-gemm.csv and PREFIX-attention.csv: the
columns of xlplan/data/kernels/gemm.csv and attention.csv, with the same speed-of-light FLOP and byte counts
(scripts/reduce_kernel_data.py) and efficiencies against the catalog peaks of GPU (xlplan/catalog/gpus.yaml), plus
the kernel or attention backend that was timed. Nothing is fitted or smoothed.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from xlplan import catalog

PEAK = {"bf16": "bf16_tflops", "fp8": "fp8_tflops", "fp8_static": "fp8_tflops"}


def _g(x: float, digits: int = 4) -> str:
    return f"{x:.{digits}g}"


def gemm_rows(raw: list[dict], gpu: str) -> list[dict]:
    spec = catalog.get_gpu(gpu)
    out = []
    for r in raw:
        m, n, k, lat_ms = int(r["tokens"]), int(r["n"]), int(r["k"]), float(r["latency_ms"])
        tflops = 2.0 * m * n * k / (lat_ms * 1e-3) / 1e12
        peak = getattr(spec, PEAK[r["dtype"]])
        out.append({"gpu": gpu, "dtype": r["dtype"], "tokens": m, "n": n, "k": k, "latency_ms": r["latency_ms"],
                    "achieved_tflops": _g(tflops), "efficiency": _g(tflops / peak), "kernel": r["kernel"]})
    return out


def attention_rows(raw: list[dict], gpu: str) -> list[dict]:
    spec = catalog.get_gpu(gpu)
    out = []
    for r in raw:
        n, n_kv, h, b, s = (int(r[c]) for c in ("num_heads", "num_kv_heads", "head_dim", "batch", "seq_len"))
        lat_s = float(r["latency_ms"]) * 1e-3
        kv_b = 2.0  # bf16 KV cache (the only format measured)
        if r["phase"] == "prefill":
            flops = 2.0 * b * s * s * n * h  # causal: 2 (FMA) x 2 (QK^T, PV) x s^2 / 2
            nbytes = 2.0 * b * (2 * n * s * h) + 2.0 * b * (2 * n_kv * s * h)  # Q read, O write, K and V
        else:
            flops = 4.0 * b * n * h * s
            nbytes = b * (4.0 * n * h + 2.0 * n_kv * s * h * kv_b)  # Q read + O write (bf16), K and V read
        tflops, tbps = flops / lat_s / 1e12, nbytes / lat_s / 1e12
        out.append({"gpu": gpu, "phase": r["phase"], "kv_dtype": r["kv_dtype"], "num_heads": n, "num_kv_heads": n_kv,
                    "head_dim": h, "batch": b, "seq_len": s, "latency_ms": r["latency_ms"],
                    "achieved_tflops": _g(tflops), "achieved_tbps": _g(tbps),
                    "compute_fraction": _g(tflops / spec.bf16_tflops), "bandwidth_fraction": _g(tbps / spec.hbm_tbps),
                    "backend": r["backend"]})
    return out


def _read(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _write(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"{path}: {len(rows)} rows")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("prefix", help="path prefix of the raw files, e.g. xlplan/data/kernels/measured/h200")
    ap.add_argument("gpu", help="xlplan catalog key of the GPU measured")
    a = ap.parse_args(argv)
    _write(Path(f"{a.prefix}-gemm.csv"), gemm_rows(_read(Path(f"{a.prefix}-gemm-raw.csv")), a.gpu))
    _write(Path(f"{a.prefix}-attention.csv"), attention_rows(_read(Path(f"{a.prefix}-attention-raw.csv")), a.gpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
