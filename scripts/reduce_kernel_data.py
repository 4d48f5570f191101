"""Reduce NVIDIA AIConfigurator's measured kernel databases to the small CSVs in ``xlplan/data/kernels/``.

    python scripts/reduce_kernel_data.py GIT_DIR [--commit REV] [--out DIR]

``GIT_DIR`` is a clone (or bare mirror) of https://github.com/ai-dynamo/aiconfigurator; the tables are read with
``git show REV:PATH`` (no work tree needed), so the commit recorded in ``sources.csv`` is exactly what was read.
The data were reduced from commit 095f58a51c4ca8e61b66ec108d86f223f8d559ce (2026-08-21). The script needs pandas and
pyarrow (the ``logs`` extra); the shipped CSVs do not, and it is not run by the tests.

What is kept, per GPU and engine (one database per system and engine, ``SYSTEMS``: TensorRT-LLM's, vLLM's and SGLang's,
each the newest version measured for that system at the commit; every row carries its ``engine``). Where an engine's
table holds several kernels for the same point (vLLM's FlashAttention 3 and 4, SGLang's FA3 and Triton, the MoE
backends), the fastest is kept: each engine picks its kernel by the hardware, and the one measured fastest is the one
it would be tuned to pick. TensorRT-LLM's MoE rows keep the gated CUTLASS kernel, as before.

- ``gemm.csv``: ``gemm_perf.parquet``, the dense GEMMs bf16, fp8 (per-tensor, activations quantised at run time)
  and nvfp4, M on the powers of two the data has, for the (n, k) shapes in ``GEMM_SHAPES``.
- ``gemm_grid.csv``: the same GEMM tables on a grid of shapes, n and k each in ``GRID_NK`` (512 to 65,536), one row
  per (engine, GPU, format, n, k) with the measured latency at every power-of-two M as a column (``m1`` … ``m32768``,
  blank where not measured): what a model's own projections are interpolated from (the fastest kernel per point).
- ``moe_grid.csv``: the MoE tables at the catalog's own MoE shapes (``moe_shapes``: hidden, expert width, top-k and
  experts of every MoE model in ``xlplan/catalog/models.yaml`` that AIConfigurator measured), every expert split it
  measured within one 8-GPU node (MoE TP × EP ≤ 8), balanced routing, one row per (engine, GPU, format, shape, split) with the
  latency at each power-of-two token count as a column (``t1`` … ``t16384``); the fastest kernel per point.
- ``mla.csv``: multi-head latent attention (DeepSeek, Kimi): ``generation_mla_perf.parquet`` (decode over the latent
  cache) by heads per GPU in ``MLA_HEADS``, batch and KV-cache format, the latency at each cached length 2^j − 1 as a
  column (``s1`` … ``s131071``); ``mla_bmm.csv``: ``mla_bmm_perf.parquet`` (the absorbed per-head projections before
  and after it, ``mla_gen_pre`` and ``mla_gen_post``) by heads and format at each power-of-two token count (``t1`` …
  ``t1024``).
  TensorRT-LLM's and SGLang's tables (vLLM's MLA database holds whole modules, not these kernels, so vLLM reads
  TensorRT-LLM's; its BMMs are its own).
- ``attention.csv``: ``context_attention_perf.parquet`` (prefill, bf16, no sliding window) and
  ``generation_attention_perf.parquet`` (decode, KV cache bf16 or fp8), for the head layouts in ``HEADS``.
- ``moe.csv``: ``moe_perf.parquet``, balanced routing, the gated (SwiGLU) CUTLASS kernel, the configurations in
  ``MOE_CONFIGS``.
- ``sources.csv``: for each table and GPU, the repository, commit, backend, version, device and file path.

The FLOP and byte counts are AIConfigurator's own speed-of-light formulas (``aic-core/rust/aiconfigurator-core/src/
perf_database/attention.rs``, ``.../operators/moe.rs``); the peaks are xlplan's catalog (dense TFLOP/s by format,
HBM TB/s). ``xlplan/data/kernels/README.md`` states every column.
"""

from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from xlplan import catalog  # noqa: E402  (after the path set-up, so the checkout's copy is the one read)

REPOSITORY = "https://github.com/ai-dynamo/aiconfigurator"
DATA_ROOT = "aic-core/src/aiconfigurator_core/systems/data"

TRTLLM_SYSTEMS = (
    # (AIConfigurator system, xlplan catalog key, backend, version)
    ("h100_sxm", "h100-sxm", "trtllm", "1.3.0rc20"),
    ("h200_sxm", "h200", "trtllm", "1.3.0rc20"),
    ("b200_sxm", "b200", "trtllm", "1.3.0rc20"),
    ("b300_sxm", "b300", "trtllm", "1.3.0rc20"),
    ("gb200", "gb200", "trtllm", "1.3.0rc20"),
    ("gb300", "gb300", "trtllm", "1.3.0rc20"),
    ("l40s", "l40s", "trtllm", "1.3.0rc20"),
    ("rtx_pro_6000_server", "rtx-pro-6000", "trtllm", "1.3.0rc20"),
    ("a100_sxm", "a100-80gb", "trtllm", "1.0.0"),  # the newest TensorRT-LLM database for A100; bf16 GEMMs only
)
NEWEST = {
    # engine -> its newest database version per system at the commit (git ls-tree .../<system>/gemm/<engine>/)
    "vllm": {"a100_sxm": "0.22.0"},
    "sglang": {"a100_sxm": "0.5.12"},
}
NEWEST_DEFAULT = {"vllm": "0.24.0", "sglang": "0.5.14"}
SYSTEMS = TRTLLM_SYSTEMS + tuple(
    (system, gpu, engine, NEWEST[engine].get(system, NEWEST_DEFAULT[engine]))
    for engine in ("vllm", "sglang") for system, gpu, _, _ in TRTLLM_SYSTEMS)
"""Every database reduced: TensorRT-LLM's as before, then vLLM's and SGLang's newest for the same nine systems."""

DTYPES = (("bfloat16", "bf16", "bf16_tflops", 2.0), ("fp8", "fp8", "fp8_tflops", 1.0), ("nvfp4", "nvfp4", "fp4_tflops", 0.5))
"""(AIConfigurator gemm_dtype / moe_dtype, the name written, the catalog peak field, bytes per weight element)."""

GEMM_SHAPES = (
    # (n, k): output features x input features of one projection; each matches one Llama-3.1 projection exactly
    (6144, 4096),   # Llama-3.1-8B fused QKV, TP 1: (32 + 2 x 8) heads x 128
    (4096, 4096),   # Llama-3.1-8B o_proj, TP 1
    (7168, 4096),   # Llama-3.1-8B fused gate+up, TP 4: 2 x 14336 / 4
    (4096, 7168),   # Llama-3.1-8B down_proj, TP 2: 14336 / 2
    (1536, 4096),   # Llama-3.1-8B fused QKV, TP 4
    (10240, 8192),  # Llama-3.1-70B fused QKV, TP 1: (64 + 2 x 8) heads x 128
    (8192, 8192),   # Llama-3.1-70B o_proj, TP 1
    (7168, 8192),   # Llama-3.1-70B fused gate+up, TP 8: 2 x 28672 / 8
    (8192, 3584),   # Llama-3.1-70B down_proj, TP 8: 28672 / 8
    (2560, 8192),   # Llama-3.1-70B fused QKV, TP 4
)

GRID_NK = (512, 1024, 2048, 4096, 8192, 16384, 65536)
"""n and k of the shape grid (each a size AIConfigurator measured; 65,536 covers vocabularies and wide MLPs). [1]"""
GRID_M = tuple(2 ** i for i in range(16))
"""The M columns of the shape grid: 1 to 32,768 tokens. [tokens]"""

GRID_TOKENS = tuple(2 ** i for i in range(15))
"""The token columns of the MoE grid: 1 to 16,384 tokens entering the layer. [tokens]"""
MOE_DTYPES = (("bfloat16", "bf16", "bf16_tflops"), ("fp8", "fp8", "fp8_tflops"), ("fp8_block", "fp8_block", "fp8_tflops"),
              ("nvfp4", "nvfp4", "fp4_tflops"), ("w4a16_mxfp4", "mxfp4", "bf16_tflops"),
              ("w4a8_mxfp4_mxfp8", "mxfp4_fp8", "fp8_tflops"))
"""(AIConfigurator moe_dtype, the name written, the catalog peak the GPU needs for it)."""


def moe_shapes() -> list[tuple[int, int, int, int]]:
    """(hidden, expert intermediate, top-k, experts) of every MoE model in the catalog, sorted."""
    out = set()
    for name in catalog.model_names():
        m = catalog.get_model(name)
        if m.num_experts:
            out.add((m.hidden_size, m.moe_intermediate_size, m.experts_per_token, m.num_experts))
    return sorted(out)


MLA_HEADS = (8, 16, 32, 64, 128)
"""Heads per GPU kept for MLA: DeepSeek's 128 and Kimi's 64 over TP 1 to 8. [heads]"""
MLA_STEPS = tuple(2 ** j - 1 for j in range(1, 18))
"""Cached lengths of the MLA decode columns: 1 to 131,071 tokens. [tokens]"""
BMM_TOKENS = tuple(2 ** i for i in range(11))
"""Token columns of the MLA BMM rows: 1 to 1,024. [tokens]"""


def mla_rows(gen: pd.DataFrame | None, bmm: pd.DataFrame | None, gpu: str, engine: str) -> tuple[list[dict], list[dict]]:
    """(MLA decode rows: heads, batch, KV format, latency by cached length; BMM rows: 'pre' or 'post', heads, format,
    latency by tokens), the fastest kernel per point [ms]."""
    rows, bmm_rows = [], []
    if gen is not None:
        g = _fastest(gen[gen.num_heads.isin(MLA_HEADS) & gen.step.isin(MLA_STEPS)],
                     ["num_heads", "batch_size", "kv_cache_dtype", "step"])
        for (h, b, kv), e in g.groupby(["num_heads", "batch_size", "kv_cache_dtype"]):
            lat = dict(zip(e.step.astype(int), e.latency.astype(float)))
            rows.append({"engine": engine, "gpu": gpu, "kv_dtype": "bf16" if kv == "bfloat16" else kv,
                         "heads": int(h), "batch": int(b), **{f"s{x}": (_g(lat[x], 4) if x in lat else "") for x in MLA_STEPS}})
    if bmm is not None:
        g = _fastest(bmm[bmm.num_heads.isin(MLA_HEADS) & bmm.num_tokens.isin(BMM_TOKENS)],
                     ["op_name", "num_heads", "bmm_dtype", "num_tokens"])
        for (op, h, dt), e in g.groupby(["op_name", "num_heads", "bmm_dtype"]):
            lat = dict(zip(e.num_tokens.astype(int), e.latency.astype(float)))
            bmm_rows.append({"engine": engine, "gpu": gpu, "op": "pre" if op == "mla_gen_pre" else "post",
                             "dtype": "bf16" if dt == "bfloat16" else dt, "heads": int(h),
                             **{f"t{x}": (_g(lat[x], 4) if x in lat else "") for x in BMM_TOKENS}})
    return rows, bmm_rows


HEADS = (
    # (query heads, KV heads, head dim) per GPU
    (32, 8, 128),  # Llama-3.1-8B at TP 1
    (8, 1, 128),   # Llama-3.1-70B at TP 8
)
PREFILL_BATCHES = (1, 4, 16, 64)
DECODE_BATCHES = (1, 8, 64, 256)
DECODE_KV_LENS_LEFT_OUT = (3, 7, 31)  # the grid is 2^j - 1 cached tokens; these three add nothing a planner reads

MOE_CONFIGS = (
    # (hidden, expert intermediate, top-k, experts, moe TP, moe EP)
    (4096, 14336, 2, 8, 1, 1),   # Mixtral-8x7B, all experts on one GPU
    (2048, 768, 8, 128, 1, 1),   # Qwen3-30B-A3B, all experts on one GPU
    (4096, 1536, 8, 128, 1, 8),  # Qwen3-235B-A22B, experts spread over 8 GPUs
)


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def _table(repo: Path, commit: str, path: str) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(_git(repo, "show", f"{commit}:{path}")))


def _path(system: str, op: str, backend: str, version: str, name: str) -> str:
    return f"{DATA_ROOT}/{system}/{op}/{backend}/{version}/{name}"


def _resolved(repo: Path, commit: str, system: str, op: str, backend: str, version: str, name: str) -> str:
    """The file a version's table is: its own, or the one its ``reuse.yaml`` names (AIConfigurator's way of saying a
    release's kernels were not re-measured: ``reuse: [{table: gemm_perf, from_version: 0.14.0}]``), followed."""
    listing = _git(repo, "ls-tree", "--name-only", commit, _path(system, op, backend, version, "")).decode().split()
    if _path(system, op, backend, version, name) in listing:
        return _path(system, op, backend, version, name)
    reuse = yaml.safe_load(_git(repo, "show", f"{commit}:{_path(system, op, backend, version, 'reuse.yaml')}"))
    table = name.removesuffix(".parquet")
    donor = next(r["from_version"] for r in reuse["reuse"] if r["table"] == table)
    return _resolved(repo, commit, system, op, backend, str(donor), name)


def _g(x: float, digits: int = 4) -> str:
    return f"{x:.{digits}g}"


def _powers_of_two(values) -> list[int]:
    return sorted(v for v in set(int(x) for x in values) if v & (v - 1) == 0)


def _fastest(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per point: the fastest of the kernels measured there (an engine's table may hold several)."""
    return df.sort_values("latency", kind="stable").drop_duplicates(keys)


def gemm_rows(df: pd.DataFrame, gpu: str, engine: str) -> list[dict]:
    spec = catalog.get_gpu(gpu)
    rows = []
    for src, name, peak_field, _ in DTYPES:
        peak = getattr(spec, peak_field)
        d = _fastest(df[df.gemm_dtype == src], ["m", "n", "k"])
        if d.empty or not peak:
            continue
        for n, k in GEMM_SHAPES:
            s = d[(d.n == n) & (d.k == k)]
            for m in _powers_of_two(s.m):
                lat_ms = float(s[s.m == m].latency.iloc[0])
                tflops = 2.0 * m * n * k / (lat_ms * 1e-3) / 1e12
                assert 0 < tflops / peak <= 1, (gpu, name, m, n, k, tflops, peak)
                rows.append({"engine": engine, "gpu": gpu, "dtype": name, "tokens": m, "n": n, "k": k, "latency_ms": _g(lat_ms, 6),
                             "achieved_tflops": _g(tflops), "efficiency": _g(tflops / peak)})
    return rows


def gemm_grid_rows(df: pd.DataFrame, gpu: str, engine: str) -> list[dict]:
    """One row per (format, n, k) of the grid: the fastest measured latency at each power-of-two M [ms]."""
    spec = catalog.get_gpu(gpu)
    rows = []
    for src, name, peak_field, _ in DTYPES:
        if not getattr(spec, peak_field):
            continue
        d = _fastest(df[(df.gemm_dtype == src) & df.n.isin(GRID_NK) & df.k.isin(GRID_NK) & df.m.isin(GRID_M)],
                     ["m", "n", "k"])
        for (n, k), e in d.groupby(["n", "k"]):
            lat = dict(zip(e.m.astype(int), e.latency.astype(float)))
            rows.append({"engine": engine, "gpu": gpu, "dtype": name, "n": int(n), "k": int(k),
                         **{f"m{m}": (_g(lat[m], 4) if m in lat else "") for m in GRID_M}})
    return rows


def moe_grid_rows(df: pd.DataFrame, gpu: str, engine: str) -> list[dict]:
    """One row per (format, MoE shape, split): the fastest measured latency at each power-of-two token count [ms]."""
    spec = catalog.get_gpu(gpu)
    rows = []
    d0 = df[(df.distribution == "balanced") & df.num_tokens.isin(GRID_TOKENS) & (df.moe_tp_size * df.moe_ep_size <= 8)]
    if engine == "trtllm":
        d0 = d0[d0.kernel_source != "moe_torch_flow_nongated"]
    shapes = moe_shapes()
    for src, name, peak_field in MOE_DTYPES:
        if not getattr(spec, peak_field):
            continue
        d1 = d0[d0.moe_dtype == src]
        for hidden, inter, topk, experts in shapes:
            d2 = d1[(d1.hidden_size == hidden) & (d1.inter_size == inter) & (d1.topk == topk) & (d1.num_experts == experts)]
            d2 = _fastest(d2, ["num_tokens", "moe_tp_size", "moe_ep_size"])
            for (tp, ep), e in d2.groupby(["moe_tp_size", "moe_ep_size"]):
                lat = dict(zip(e.num_tokens.astype(int), e.latency.astype(float)))
                rows.append({"engine": engine, "gpu": gpu, "dtype": name, "hidden": hidden, "inter": inter,
                             "topk": topk, "experts": experts, "moe_tp": int(tp), "moe_ep": int(ep),
                             **{f"t{t}": (_g(lat[t], 4) if t in lat else "") for t in GRID_TOKENS}})
    return rows


def attention_rows(ctx: pd.DataFrame, gen: pd.DataFrame, gpu: str, engine: str) -> list[dict]:
    spec = catalog.get_gpu(gpu)
    ctx, gen = (t if "window_size" in t else t.assign(window_size=0) for t in (ctx, gen))  # older tables: no windows
    rows = []
    for n, n_kv, h in HEADS:
        c = ctx[(ctx.window_size == 0) & (ctx.attn_dtype == "bfloat16") & (ctx.kv_cache_dtype == "bfloat16")
                & (ctx.num_heads == n) & (ctx.num_key_value_heads == n_kv) & (ctx.head_dim == h)]
        c = _fastest(c, ["batch_size", "isl"])
        c = c[c.batch_size.isin(PREFILL_BATCHES) & (c.isl > 1)]  # a one-token prompt is no prefill
        for r in c.sort_values(["batch_size", "isl"]).itertuples():
            b, s = r.batch_size, r.isl
            flops = 2.0 * b * s * s * n * h  # causal: 2 (FMA) x 2 (QK^T, PV) x s^2 / 2
            nbytes = 2.0 * b * (2 * n * s * h) + 2.0 * b * (2 * n_kv * s * h)  # Q read, O write, K and V written
            rows.append(_attention_row(engine, gpu, spec, "prefill", "bf16", n, n_kv, h, b, s, r.latency, flops, nbytes))
        for kv_src, kv_name, kv_b in (("bfloat16", "bf16", 2.0), ("fp8", "fp8", 1.0)):
            g = gen[(gen.window_size == 0) & (gen.kv_cache_dtype == kv_src) & (gen.num_heads == n)
                    & (gen.num_key_value_heads == n_kv) & (gen.head_dim == h)]
            g = _fastest(g, ["batch_size", "step"])
            g = g[g.batch_size.isin(DECODE_BATCHES) & ~g.step.isin(DECODE_KV_LENS_LEFT_OUT)]
            for r in g.sort_values(["batch_size", "step"]).itertuples():
                b, kv_len = r.batch_size, r.step  # step = tokens already in the KV cache
                flops = 4.0 * b * n * h * kv_len
                nbytes = b * (4.0 * n * h + 2.0 * n_kv * kv_len * h * kv_b)  # Q read + O write (bf16), K and V read
                rows.append(_attention_row(engine, gpu, spec, "decode", kv_name, n, n_kv, h, b, kv_len, r.latency, flops, nbytes))
    return rows


def _attention_row(engine, gpu, spec, phase, kv, n, n_kv, h, b, s, lat_ms, flops, nbytes) -> dict:
    tflops = flops / (lat_ms * 1e-3) / 1e12
    tbps = nbytes / (lat_ms * 1e-3) / 1e12
    return {"engine": engine, "gpu": gpu, "phase": phase, "kv_dtype": kv, "num_heads": n, "num_kv_heads": n_kv, "head_dim": h,
            "batch": b, "seq_len": s, "latency_ms": _g(lat_ms, 6), "achieved_tflops": _g(tflops),
            "achieved_tbps": _g(tbps), "compute_fraction": _g(tflops / spec.bf16_tflops),
            "bandwidth_fraction": _g(tbps / spec.hbm_tbps)}


def moe_rows(df: pd.DataFrame, gpu: str, engine: str) -> list[dict]:
    spec = catalog.get_gpu(gpu)
    rows = []
    d0 = df[df.distribution == "balanced"]
    if engine == "trtllm":
        d0 = d0[d0.kernel_source == "moe_torch_flow_cutlass"]
    for src, name, peak_field, _ in DTYPES:
        peak = getattr(spec, peak_field)
        if not peak:
            continue
        for hidden, inter, topk, experts, tp, ep in MOE_CONFIGS:
            d = d0[(d0.moe_dtype == src) & (d0.hidden_size == hidden) & (d0.inter_size == inter) & (d0.topk == topk)
                   & (d0.num_experts == experts) & (d0.moe_tp_size == tp) & (d0.moe_ep_size == ep)]
            d = _fastest(d, ["num_tokens"])
            for r in d.sort_values("num_tokens").itertuples():
                t = r.num_tokens
                flops = 2.0 * t * topk * hidden * inter * 3 / (tp * ep)  # gate, up and down GEMMs on this GPU's share
                tflops = flops / (r.latency * 1e-3) / 1e12
                rows.append({"engine": engine, "gpu": gpu, "dtype": name, "hidden": hidden, "inter": inter, "topk": topk,
                             "experts": experts, "moe_tp": tp, "moe_ep": ep, "tokens": t,
                             "tokens_per_expert": _g(t * topk / experts, 6), "latency_ms": _g(float(r.latency), 6),
                             "achieved_tflops": _g(tflops), "efficiency": _g(tflops / peak)})
    return rows


def _write(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {len(rows)} rows, {path.stat().st_size} bytes")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path, help="git directory of ai-dynamo/aiconfigurator")
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--out", type=Path, default=ROOT / "xlplan" / "data" / "kernels")
    a = ap.parse_args(argv)
    commit = _git(a.repo, "rev-parse", a.commit).decode().strip()
    gemm, grid, attn, moe, moe_grid, mla, mla_bmm, sources = [], [], [], [], [], [], [], []
    for system, gpu, backend, version in SYSTEMS:
        paths = {key: _resolved(a.repo, commit, system, op, backend, version, name) for key, op, name in (
            ("gemm", "gemm", "gemm_perf.parquet"), ("prefill", "attention", "context_attention_perf.parquet"),
            ("decode", "attention", "generation_attention_perf.parquet"), ("moe", "moe", "moe_perf.parquet"))}
        tables = {key: _table(a.repo, commit, p) for key, p in paths.items()}
        produced = {"gemm": gemm_rows(tables["gemm"], gpu, backend),
                    "attention": attention_rows(tables["prefill"], tables["decode"], gpu, backend),
                    "moe": moe_rows(tables["moe"], gpu, backend)}
        gemm += produced["gemm"]
        grid += gemm_grid_rows(tables["gemm"], gpu, backend)
        moe_grid += moe_grid_rows(tables["moe"], gpu, backend)
        mla_tables = {}
        for key, op, name in (("mla", "mla", "generation_mla_perf.parquet"), ("mla_bmm", "mla_bmm", "mla_bmm_perf.parquet")):
            try:
                path = _resolved(a.repo, commit, system, op, backend, version, name)
            except (subprocess.CalledProcessError, StopIteration, TypeError, KeyError):
                continue  # not measured for this engine (vLLM's MLA tables are whole modules) or system
            mla_tables[key] = _table(a.repo, commit, path)
            sources.append({"table": key, "gpu": gpu, "system": system, "backend": backend, "version": version,
                            "measured_version": path.split("/")[-2], "device": mla_tables[key].device.iloc[0],
                            "kernels": " ".join(sorted(set(mla_tables[key].kernel_source))), "repository": REPOSITORY,
                            "commit": commit, "path": path})
        decode_rows, bmm_rows = mla_rows(mla_tables.get("mla"), mla_tables.get("mla_bmm"), gpu, backend)
        mla += decode_rows
        mla_bmm += bmm_rows
        attn += produced["attention"]
        moe += produced["moe"]
        for key, p in paths.items():
            table = "attention" if key in ("prefill", "decode") else key
            if produced[table]:
                sources.append({"table": table, "gpu": gpu, "system": system, "backend": backend, "version": version,
                                "measured_version": p.split("/")[-2], "device": tables[key].device.iloc[0],
                                "kernels": " ".join(sorted(set(tables[key].kernel_source))), "repository": REPOSITORY,
                                "commit": commit, "path": p})
    a.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("gemm.csv", gemm), ("gemm_grid.csv", grid), ("attention.csv", attn), ("moe.csv", moe),
                       ("moe_grid.csv", moe_grid), ("mla.csv", mla), ("mla_bmm.csv", mla_bmm), ("sources.csv", sources)):
        _write(a.out / name, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
