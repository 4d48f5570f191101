"""Measure kernel latencies on a GPU: dense GEMMs (bf16, fp8) and prefill/decode attention, the raw input of
xlplan's kernel efficiency curves. Not part of the package and never run by the tests: it needs PyTorch and an
NVIDIA GPU. `scripts/reduce_measured_kernels.py` turns its output into the catalog's CSVs (efficiencies against the
catalog's peaks); xlplan/data/kernels/README.md gives the provenance of the committed measurements.

    python3 scripts/measure_kernels_gpu.py OUT_DIR [--budget-s 240]

Method (the same choices AIConfigurator's collector makes, so the two sources can be compared):
- each point is timed as CUDA-graph replays of a batch of calls after warm-up (no Python launch overhead), the mean
  per call in milliseconds from CUDA events;
- GEMM weights are cycled over enough copies that they cannot stay in the 60 MB L2 (>= 4 x L2 of weights), so every
  call reads its weights from HBM, as a serving step does; the same for the decode KV cache;
- shapes: the ten (n, k) Llama-3.1 projections of xlplan/data/kernels/gemm.csv, M = 1 .. 32,768 tokens in powers of 2;
- bf16: torch.matmul (cuBLAS); fp8: torch._scaled_mm with per-tensor scales, e4m3 both operands, bf16 out: `fp8` times
  the activation's dynamic quantisation too (amax, scale, cast: as AIConfigurator's fp8 rows), `fp8_static` the GEMM
  alone (pre-quantised activations, static scales);
- attention: torch's scaled_dot_product_attention, the fastest of the cuDNN, flash and memory-efficient backends at each
  point (the backend is recorded); prefill causal, bf16, GQA heads (32, 8) and (8, 1), head dim 128; decode is one query
  token per sequence against a bf16 KV cache, grouped-query heads folded into the query axis so K and V are read once.
Stops measuring at the budget and writes what it has; every file is written whole at the end.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

L2_BYTES = 60 * 2**20
GEMM_SHAPES = [(6144, 4096), (4096, 4096), (7168, 4096), (4096, 7168), (1536, 4096),
               (10240, 8192), (8192, 8192), (7168, 8192), (8192, 3584), (2560, 8192)]
TOKENS = [2**i for i in range(16)]  # 1 .. 32,768
HEADS = [(32, 8, 128), (8, 1, 128)]
PREFILL_BATCHES = [1, 4, 16, 64]
PREFILL_LENS = [2**i for i in range(4, 15)]  # 16 .. 16,384
DECODE_BATCHES = [1, 8, 64, 256]
DECODE_LENS = [2**j - 1 for j in range(1, 18) if j not in (2, 3, 5)]  # 1 .. 131,071
KV_LIMIT_BYTES = 48 * 2**30


def _time_eager(fn, calls: int, target_ms: float = 40.0) -> float:
    """Mean milliseconds per call of fn launched from Python (the fallback where a graph cannot be captured)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for i in range(3):
        fn(i)
    torch.cuda.synchronize()
    start.record()
    for i in range(calls):
        fn(i)
    end.record()
    torch.cuda.synchronize()
    reps = max(2, min(50, int(target_ms / max(start.elapsed_time(end), 1e-3))))
    start.record()
    for _ in range(reps):
        for i in range(calls):
            fn(i)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps / calls


def _time_graph(fn, calls: int, target_ms: float = 40.0) -> float:
    """Mean milliseconds per call of fn, replayed inside a CUDA graph of `calls` calls (fn(i) does call i)."""
    try:
        return _time_captured(fn, calls, target_ms)
    except RuntimeError as exc:
        if "captur" not in str(exc).lower():
            raise
        torch.cuda.synchronize()
        return _time_eager(fn, calls, target_ms)


def _time_captured(fn, calls: int, target_ms: float) -> float:
    for i in range(3):
        fn(i)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(calls):
            fn(i)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(calls):
            fn(i)
    g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    g.replay()
    end.record()
    torch.cuda.synchronize()
    once_ms = start.elapsed_time(end)
    reps = max(2, min(50, int(target_ms / max(once_ms, 1e-3))))
    start.record()
    for _ in range(reps):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    del g
    return start.elapsed_time(end) / reps / calls


def _copies(nbytes: float) -> int:
    return max(1, min(16, math.ceil(4 * L2_BYTES / max(nbytes, 1.0))))


FP8 = torch.float8_e4m3fn
FP8_MAX = torch.finfo(FP8).max


def gemm_points(deadline: float, log, rows: list[dict]) -> list[dict]:
    dev = "cuda"
    for n, k in GEMM_SHAPES:
        ncopy = _copies(n * k * 2)
        w16 = [torch.randn(n, k, device=dev, dtype=torch.bfloat16) * 0.02 for _ in range(ncopy)]
        w8 = [w.to(FP8) for w in w16]
        one = torch.ones((), device=dev, dtype=torch.float32)
        for m in TOKENS:
            if time.monotonic() > deadline:
                log(f"gemm: budget reached at n={n} k={k} m={m}")
                return rows
            x16 = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            x8 = x16.to(FP8)
            calls = max(1, min(20, ncopy * max(1, 8 // max(1, m // 1024))))

            def bf16(i, x16=x16, w16=w16, ncopy=ncopy):
                return torch.matmul(x16, w16[i % ncopy].t())

            def fp8_static(i, x8=x8, w8=w8, one=one, ncopy=ncopy):
                return torch._scaled_mm(x8, w8[i % ncopy].t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

            def fp8_dynamic(i, x16=x16, w8=w8, one=one, ncopy=ncopy):
                scale = (x16.abs().amax().float() / FP8_MAX).clamp(min=1e-12)
                xq = (x16 / scale).to(FP8)
                return torch._scaled_mm(xq, w8[i % ncopy].t(), scale_a=scale, scale_b=one, out_dtype=torch.bfloat16)

            for name, fn in (("bf16", bf16), ("fp8", fp8_dynamic), ("fp8_static", fp8_static)):
                try:
                    ms = _time_graph(fn, calls)
                except Exception as exc:  # a shape a kernel refuses is recorded as absent, not fatal
                    log(f"gemm {name} n={n} k={k} m={m}: {type(exc).__name__}: {exc}")
                    continue
                rows.append({"dtype": name, "tokens": m, "n": n, "k": k, "latency_ms": f"{ms:.6g}",
                             "weight_copies": ncopy, "kernel": "torch.matmul" if name == "bf16" else "torch._scaled_mm"})
            del x16, x8
        del w16, w8
        torch.cuda.empty_cache()
        log(f"gemm n={n} k={k}: done ({len(rows)} rows)")
    return rows


def _backends():
    from torch.nn.attention import SDPBackend
    return [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
            ("efficient", SDPBackend.EFFICIENT_ATTENTION)]


def _best(make_fn, calls: int, log, label: str):
    from torch.nn.attention import sdpa_kernel
    best = None
    for name, be in _backends():
        try:
            with sdpa_kernel([be]):
                ms = _time_graph(make_fn(), calls)
        except Exception as exc:
            log(f"{label} {name}: {type(exc).__name__}: {str(exc)[:120]}")
            continue
        if best is None or ms < best[0]:
            best = (ms, name)
    return best


def attention_points(deadline: float, log, rows: list[dict]) -> list[dict]:
    dev, dt = "cuda", torch.bfloat16
    for n, n_kv, h in HEADS:
        for b in PREFILL_BATCHES:
            for s in PREFILL_LENS:
                if time.monotonic() > deadline:
                    log("attention prefill: budget reached")
                    return rows
                if b * s > 262144:
                    continue
                q = torch.randn(b, n, s, h, device=dev, dtype=dt)
                kk = torch.randn(b, n_kv, s, h, device=dev, dtype=dt)
                v = torch.randn(b, n_kv, s, h, device=dev, dtype=dt)

                def make(q=q, kk=kk, v=v):
                    return lambda i, q=q, kk=kk, v=v: F.scaled_dot_product_attention(q, kk, v, is_causal=True,
                                                                                      enable_gqa=True)

                best = _best(make, 4, log, f"prefill h={n}/{n_kv} b={b} s={s}")
                if best is None:  # no backend takes grouped heads: expand K and V (the same FLOPs, read n/n_kv times)
                    ke, ve = kk.repeat_interleave(n // n_kv, 1), v.repeat_interleave(n // n_kv, 1)
                    try:
                        best = (_time_graph(lambda i, q=q, ke=ke, ve=ve: F.scaled_dot_product_attention(
                            q, ke, ve, is_causal=True), 4),
                                "default-expanded-kv")
                    except Exception as exc:
                        log(f"prefill expanded h={n}/{n_kv} b={b} s={s}: {type(exc).__name__}: {str(exc)[:120]}")
                    del ke, ve
                if best:
                    rows.append({"phase": "prefill", "kv_dtype": "bf16", "num_heads": n, "num_kv_heads": n_kv,
                                 "head_dim": h, "batch": b, "seq_len": s, "latency_ms": f"{best[0]:.6g}",
                                 "backend": best[1], "kv_copies": 1})
                del q, kk, v
        for b in DECODE_BATCHES:
            for s in DECODE_LENS:
                if time.monotonic() > deadline:
                    log("attention decode: budget reached")
                    return rows
                kv_bytes = b * 2 * n_kv * s * h * 2
                if kv_bytes > KV_LIMIT_BYTES:
                    continue
                ncopy = _copies(kv_bytes)
                g = n // n_kv
                q = torch.randn(b, n_kv, g, h, device=dev, dtype=dt)  # the g query heads of a KV head share its reads
                ks = [torch.randn(b, n_kv, s, h, device=dev, dtype=dt) for _ in range(ncopy)]
                vs = [torch.randn(b, n_kv, s, h, device=dev, dtype=dt) for _ in range(ncopy)]

                def make(q=q, ks=ks, vs=vs, ncopy=ncopy):
                    return lambda i, q=q, ks=ks, vs=vs, ncopy=ncopy: F.scaled_dot_product_attention(
                        q, ks[i % ncopy], vs[i % ncopy])

                best = _best(make, max(4, ncopy), log, f"decode h={n}/{n_kv} b={b} s={s}")
                if best:
                    rows.append({"phase": "decode", "kv_dtype": "bf16", "num_heads": n, "num_kv_heads": n_kv,
                                 "head_dim": h, "batch": b, "seq_len": s, "latency_ms": f"{best[0]:.6g}",
                                 "backend": best[1], "kv_copies": ncopy})
                del q, ks, vs
                torch.cuda.empty_cache()
        log(f"attention heads {n}/{n_kv}: done ({len(rows)} rows)")
    return rows


def _write_csv(path: str, rows: list[dict]) -> None:
    if not rows:
        return
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)


def _smi(query: str) -> str:
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=20).stdout.strip()
    except Exception as exc:
        return f"unavailable: {exc}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--budget-s", type=float, default=240.0)
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    t0 = time.monotonic()
    log_lines: list[str] = []

    def log(msg: str) -> None:
        line = f"[{time.monotonic() - t0:7.1f} s] {msg}"
        log_lines.append(line)
        print(line, flush=True)

    torch.backends.cuda.matmul.allow_tf32 = False
    meta = {"started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "device": torch.cuda.get_device_name(0),
            "torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "python": sys.version.split()[0], "platform": platform.platform(),
            "nvidia_smi": _smi("name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit"),
            "method": "CUDA-graph replay, mean per call (CUDA events), weights/KV cycled past 4x L2; see script docstring"}
    log(f"device {meta['device']}, torch {meta['torch']}, cuda {meta['cuda']}")
    gemm: list[dict] = []
    attn: list[dict] = []
    try:
        gemm_points(t0 + a.budget_s * 0.5, log, gemm)
    except Exception as exc:
        log(f"gemm section stopped: {type(exc).__name__}: {exc}")
    _write_csv(os.path.join(a.out, "gemm_raw.csv"), gemm)
    torch.cuda.empty_cache()
    try:
        attention_points(t0 + a.budget_s, log, attn)
    except Exception as exc:
        log(f"attention section stopped: {type(exc).__name__}: {exc}")
    _write_csv(os.path.join(a.out, "attention_raw.csv"), attn)
    meta["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    meta["clocks_after"] = _smi("clocks.sm,clocks.mem,temperature.gpu,power.draw")
    meta["rows"] = {"gemm": len(gemm), "attention": len(attn)}
    with open(os.path.join(a.out, "meta.json"), "w") as fh:
        json.dump(meta, fh, indent=1)
    with open(os.path.join(a.out, "log.txt"), "w") as fh:
        fh.write("\n".join(log_lines) + "\n")
    log(f"wrote {len(gemm)} GEMM and {len(attn)} attention rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
