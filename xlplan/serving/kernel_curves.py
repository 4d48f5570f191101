"""Achieved kernel efficiency as a function of the work, from NVIDIA AIConfigurator's measured kernel databases.

Where the serving model holds one decode MFU, one prefill MFU and one bandwidth efficiency, the kernels themselves
run far from a constant: a GEMM with one token in its step is bound by reading its weights and reaches a fraction of
a percent of peak, the same GEMM with thousands of tokens 40-80% (bf16, fp8). These functions give that efficiency
for the work at hand, read from ``xlplan/data/kernels/`` (measured latencies reduced by
``scripts/reduce_kernel_data.py``; the README there states every column):

- :func:`gemm_efficiency`: dense GEMM, achieved ÷ the catalog's dense peak for the format, by tokens in the step
  (the GEMM's M), log-linear in tokens, at the nearest tabulated (n, k);
- :func:`prefill_attention_efficiency`: causal prefill attention, achieved ÷ the bf16 dense peak, by prompt length;
- :func:`decode_attention_bandwidth_fraction`: decode attention, bytes moved ÷ HBM bandwidth, by cached tokens;
- :func:`moe_efficiency`: the fused MoE expert GEMMs, achieved ÷ peak, by tokens routed to each expert;
- :func:`curve_source` / :func:`gemm_source`: which GPU's measurements answer for a GPU, :func:`source_paths` the
  database files behind them.

A GPU without measurements borrows a measured GPU's curve (:func:`curve_source`): its own architecture's where one is
measured (``FAMILY_FALLBACK``), else the measured GPU nearest in dense bf16 peak and HBM bandwidth. A borrowed GEMM or
MoE curve is rescaled by the two GPUs' rooflines (the measured share of the source's roofline bound, times the
borrower's bound ÷ its peak), so a weight-bound GEMM on a GPU with less bandwidth per FLOP reads lower; a borrowed
attention fraction is carried over unscaled.

References
----------
NVIDIA AIConfigurator (Apache-2.0, Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES),
github.com/ai-dynamo/aiconfigurator @095f58a51c4c, ``aic-core/src/aiconfigurator_core/systems/data/<system>/
{gemm,attention,moe}/trtllm/<version>/{gemm,context_attention,generation_attention,moe}_perf.parquet``; the FLOP and
byte counts are its speed-of-light formulas (``aic-core/rust/aiconfigurator-core/src/perf_database/attention.rs``,
``src/operators/moe.rs``). Every file used is listed in ``xlplan/data/kernels/sources.csv``.
"""

from __future__ import annotations

import bisect
import csv
import functools
import io
import math
import statistics
from importlib import resources

from xlplan import catalog

DTYPES = {"bf16": "bf16", "bfloat16": "bf16", "fp8": "fp8", "nvfp4": "nvfp4", "fp4": "nvfp4"}
"""Format names accepted, to the name the tables use."""

PEAK_FIELD = {"bf16": "bf16_tflops", "fp8": "fp8_tflops", "nvfp4": "fp4_tflops"}
BYTES_PER_WEIGHT = {"bf16": 2.0, "fp8": 1.0, "nvfp4": 0.5}

FAMILY_FALLBACK = {
    # GPU without measurements -> the measured GPU of its architecture whose curve it borrows
    "h100-pcie": "h100-sxm", "h100-nvl": "h100-sxm", "h20": "h100-sxm", "gh200-96gb": "h100-sxm",
    "gh200-144gb": "h200", "h200-nvl": "h200",
    "a100-40gb": "a100-80gb", "a100-80gb-pcie": "a100-80gb", "a10g": "a100-80gb", "a10": "a100-80gb",
    "rtx-3090": "a100-80gb",
    "l4": "l40s", "rtx-4090": "l40s", "rtx-6000-ada": "l40s",
    "rtx-5090": "rtx-pro-6000",
}
"""Hopper to H100/H200, Ampere to A100, Ada to L40S, consumer Blackwell to RTX PRO 6000."""


@functools.cache
def _rows(name: str) -> tuple[dict, ...]:
    text = resources.files("xlplan.data").joinpath("kernels").joinpath(name).read_text(encoding="utf-8")
    return tuple(csv.DictReader(io.StringIO(text)))


def _curves(rows, key_of, x: str, y: str) -> dict:
    out: dict = {}
    for r in rows:
        out.setdefault(key_of(r), []).append((float(r[x]), float(r[y])))
    return {k: (tuple(a for a, _ in sorted(v)), tuple(b for _, b in sorted(v))) for k, v in out.items()}


@functools.cache
def _gemm() -> dict:
    return _curves(_rows("gemm.csv"), lambda r: (r["engine"], r["gpu"], r["dtype"], (int(r["n"]), int(r["k"]))), "tokens",
                   "efficiency")


@functools.cache
def _attention(phase: str, y: str) -> dict:
    rows = [r for r in _rows("attention.csv") if r["phase"] == phase]
    return _curves(rows, lambda r: (r["engine"], r["gpu"], r["kv_dtype"], (int(r["num_heads"]), int(r["num_kv_heads"])),
                                    int(r["batch"])), "seq_len", y)


@functools.cache
def _moe() -> dict:
    return _curves(_rows("moe.csv"), lambda r: (r["engine"], r["gpu"], r["dtype"], tuple(int(r[c]) for c in (
        "hidden", "inter", "topk", "experts", "moe_tp", "moe_ep"))), "tokens_per_expert", "efficiency")


def _loglinear(xs: tuple, ys: tuple, x: float) -> float:
    """``ys`` at ``x``, linear in log x between the points, the end value held beyond them."""
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    i = bisect.bisect_right(xs, x)
    t = (math.log(x) - math.log(xs[i - 1])) / (math.log(xs[i]) - math.log(xs[i - 1]))
    return ys[i - 1] + t * (ys[i] - ys[i - 1])


def _wide(name: str, text: tuple[str, ...], whole: tuple[str, ...], prefix: str, columns: tuple) -> dict:
    """A wide table's rows by key (its ``text`` columns, then its ``whole``-number ones) -> the latencies in its
    ``prefix``-named columns, one per value of ``columns``, NaN where blank [ms]."""
    return {(*(r[c] for c in text), *(int(r[c]) for c in whole)):
            tuple(float(r[f"{prefix}{x}"]) if r[f"{prefix}{x}"] else math.nan for x in columns) for r in _rows(name)}


def _linear(xs: tuple, ys: tuple, x: float) -> float:
    """``ys`` at ``x``: linear between the measured points (NaN left out), held below, in proportion beyond."""
    pts = [(a, b) for a, b in zip(xs, ys) if not math.isnan(b)]
    if x <= pts[0][0]:
        return pts[0][1]
    if x >= pts[-1][0]:
        return pts[-1][1] * x / pts[-1][0]
    i = bisect.bisect_right([a for a, _ in pts], x)
    (x0, y0), (x1, y1) = pts[i - 1], pts[i]
    return y0 + (x - x0) / (x1 - x0) * (y1 - y0)


def _nearest(options, want: tuple) -> tuple:
    """The option closest to ``want`` in log distance over the leading fields (``None`` fields ignored)."""
    def dist(o):
        return sum(abs(math.log(a / w)) for a, w in zip(o, want) if w is not None)
    return min(sorted(options), key=dist)


def _dtype(dtype: str) -> str:
    try:
        return DTYPES[dtype.lower()]
    except KeyError:
        raise ValueError(f"format {dtype!r} has no kernel curves; one of {sorted(set(DTYPES.values()))}") from None


def _table(table: str) -> dict:
    if table == "gemm":
        return _gemm()
    if table == "moe":
        return _moe()
    if table in ("prefill", "decode"):
        return _attention(table, "compute_fraction" if table == "prefill" else "bandwidth_fraction")
    raise ValueError(f"table {table!r}: one of 'gemm', 'prefill', 'decode', 'moe'")


def engine_source(table: str, engine: str, dtype: str = "bf16") -> str:
    """The engine whose measured kernels answer for ``engine`` in one table and format. [text]

    Parameters
    ----------
    table : {'gemm', 'prefill', 'decode', 'moe'}
        Which curves.
    engine : str
        The serving engine ('vllm', 'sglang', 'trtllm'; any other name reads TensorRT-LLM's).
    dtype : {'bf16', 'fp8', 'nvfp4'}
        As for :func:`curve_source`.

    Returns
    -------
    str
        ``engine`` itself where its own database (its newest version, ``sources.csv``) measured the format on some
        GPU; else 'trtllm', whose tables cover every format the others lack (SGLang's MoE tables have no per-tensor
        fp8).

    Examples
    --------
    >>> engine_source("gemm", "vllm"), engine_source("gemm", "tgi")
    ('vllm', 'trtllm')
    """
    fmt = _dtype(dtype)
    engine = (engine or "").lower()
    if engine != "trtllm" and any(k[0] == engine and k[2] == fmt for k in _table(table)):
        return engine
    return "trtllm"


def curve_source(table: str, gpu_key: str, dtype: str = "bf16", engine: str = "trtllm") -> str:
    """The catalog key of the GPU whose measurements answer for ``gpu_key`` in one table. [text]

    Parameters
    ----------
    table : {'gemm', 'prefill', 'decode', 'moe'}
        Which curves: dense GEMM, prefill or decode attention, MoE experts.
    gpu_key : str
        The GPU (catalog key, display name or alias).
    dtype : {'bf16', 'fp8', 'nvfp4'}
        The GEMM or MoE format ('fp4' reads as 'nvfp4'); for attention, the KV cache's format.
    engine : str
        The serving engine; its tables are searched (:func:`engine_source` says which engine's answer).

    Returns
    -------
    str
        ``gpu_key``'s own key when it was measured; else the measured GPU of its architecture
        (``FAMILY_FALLBACK``) when that one has the format, else the measured GPU nearest in dense bf16 peak and HBM
        bandwidth (sum of the absolute log ratios). Raises ValueError when no measured GPU has the format, or when
        ``gpu_key`` has no dense peak for it (GEMM and MoE).

    References
    ----------
    ``xlplan/data/kernels/sources.csv``: the AIConfigurator database each measured GPU's curves come from.
    """
    key, fmt = catalog.gpu_key(gpu_key), _dtype(dtype)
    if table in ("gemm", "moe") and not getattr(catalog.get_gpu(key), PEAK_FIELD[fmt]):
        raise ValueError(f"{key} has no dense {fmt} peak in the catalog: no {fmt} {table} efficiency")
    eng = engine_source(table, engine, fmt)
    measured = sorted({k[1] for k in _table(table) if k[0] == eng and k[2] == fmt})
    if not measured:
        raise ValueError(f"no measured GPU has {fmt} {table} curves")
    if key in measured:
        return key
    if FAMILY_FALLBACK.get(key) in measured:
        return FAMILY_FALLBACK[key]
    me = catalog.get_gpu(key)
    return _nearest(_specs(measured), (me.bf16_tflops, me.hbm_tbps, None))[2]


def _specs(keys) -> list[tuple[float, float, str]]:
    """(dense bf16 TFLOP/s, HBM TB/s, key) per GPU key: what :func:`curve_source` compares."""
    return [(catalog.get_gpu(k).bf16_tflops, catalog.get_gpu(k).hbm_tbps, k) for k in keys]


def gemm_source(gpu_key: str, dtype: str, engine: str = "trtllm") -> str:
    """The catalog key of the GPU whose GEMM measurements :func:`gemm_efficiency` uses for ``gpu_key``. [text]

    Parameters
    ----------
    gpu_key : str
        The GPU (catalog key, display name or alias).
    dtype : {'bf16', 'fp8', 'nvfp4'}
        The GEMM's format ('fp4' reads as 'nvfp4').
    engine : str
        The serving engine (:func:`engine_source`).

    Returns
    -------
    str
        ``curve_source('gemm', gpu_key, dtype, engine)``: ``gpu_key`` itself when measured, else the GPU borrowed
        from.

    References
    ----------
    AIConfigurator ``systems/data/<system>/gemm/trtllm/<version>/gemm_perf.parquet`` @095f58a, per
    ``xlplan/data/kernels/sources.csv``.
    """
    return curve_source("gemm", gpu_key, dtype, engine)


def source_paths(table: str, gpu_key: str, dtype: str = "bf16", engine: str = "trtllm") -> tuple[str, ...]:
    """The AIConfigurator files, ``repository@commit:path``, behind one table's curves for a GPU. [text]

    Parameters
    ----------
    table : {'gemm', 'prefill', 'decode', 'moe'}
        Which curves.
    gpu_key : str
        The GPU; a GPU without measurements gets its :func:`curve_source`'s files.
    dtype : {'bf16', 'fp8', 'nvfp4'}
        As for :func:`curve_source`.
    engine : str
        The serving engine; the files of the engine that answers (:func:`engine_source`).

    Returns
    -------
    tuple of str
        One entry per database file.

    References
    ----------
    ``xlplan/data/kernels/sources.csv``, written by ``scripts/reduce_kernel_data.py``.
    """
    src, eng = curve_source(table, gpu_key, dtype, engine), engine_source(table, engine, dtype)
    name = {"prefill": "context_attention", "decode": "generation_attention"}.get(table, table)
    return tuple(f"{r['repository']}@{r['commit']}:{r['path']}" for r in _rows("sources.csv")
                 if r["gpu"] == src and r["backend"] == eng and r["path"].endswith(f"/{name}_perf.parquet"))


def _roofline_fraction(gpu: str, fmt: str, m: float, n: float, k: float) -> float:
    """min(peak, arithmetic intensity x HBM bandwidth) / peak for an (m x k) . (k x n) GEMM, bf16 output."""
    spec = catalog.get_gpu(gpu)
    peak = getattr(spec, PEAK_FIELD[fmt])
    nbytes = (m * k + n * k) * BYTES_PER_WEIGHT[fmt] + 2.0 * m * n
    return min(peak, 2.0 * m * n * k / nbytes * spec.hbm_tbps) / peak


def _borrowed(value: float, src: str, gpu: str, fmt: str, m: float, n: float, k: float) -> float:
    if src == gpu:
        return value
    return min(1.0, value / _roofline_fraction(src, fmt, m, n, k) * _roofline_fraction(gpu, fmt, m, n, k))


def gemm_efficiency(gpu_key: str, dtype: str, tokens: float, n: int | None = None, k: int | None = None,
                    engine: str = "trtllm") -> float:
    """Achieved ÷ dense peak of one GEMM with ``tokens`` rows (the step's tokens), as measured. [fraction]

    Parameters
    ----------
    gpu_key : str
        The GPU (catalog key, display name or alias).
    dtype : {'bf16', 'fp8', 'nvfp4'}
        The GEMM's format ('fp4' reads as 'nvfp4'); fp8 is per-tensor with the activations quantised at run time.
    tokens : float
        The GEMM's M, tokens in the step [tokens]; > 0. Log-linear between the tabulated powers of two; the end
        value held outside them (1 to 32,768; 8,192 in TensorRT-LLM's and vLLM's A100 tables).
    n, k : int, optional
        Output and input features [1]: the curve of the nearest tabulated shape (log distance) is used; left out,
        the median over the tabulated shapes (Llama-3.1-8B and -70B projections at TP 1-8).
    engine : str
        The serving engine whose kernels (its newest measured version) to read: 'vllm', 'sglang' or 'trtllm'
        (:func:`engine_source`: another engine, or a format the engine's table lacks, reads TensorRT-LLM's).

    Returns
    -------
    float
        Achieved TFLOP/s ÷ the catalog's dense TFLOP/s for ``dtype`` [fraction], in (0, 1]. For a GPU without
        measurements, the :func:`gemm_source` GPU's value rescaled by the two rooflines (module docstring).

    References
    ----------
    AIConfigurator ``aic-core/src/aiconfigurator_core/systems/data/<system>/gemm/trtllm/<version>/gemm_perf.parquet``
    @095f58a, reduced to ``xlplan/data/kernels/gemm.csv``.
    """
    if not tokens > 0:
        raise ValueError(f"tokens must be > 0, not {tokens}")
    key, fmt = catalog.gpu_key(gpu_key), _dtype(dtype)
    src, eng = gemm_source(key, fmt, engine), engine_source("gemm", engine, fmt)
    shapes = sorted(s for e, g, d, s in _gemm() if e == eng and g == src and d == fmt)
    chosen = shapes if n is None and k is None else [_nearest(shapes, (n, k))]
    values = [_borrowed(_loglinear(*_gemm()[(eng, src, fmt, s)], tokens), src, key, fmt, tokens, *s) for s in chosen]
    return statistics.median(values)


GRID_M = tuple(2 ** i for i in range(16))
"""The powers of two M at which ``gemm_grid.csv`` holds each shape's latency: 1 to 32,768 tokens. [tokens]"""


@functools.cache
def _grid() -> dict:
    """(engine, GPU, format, n, k) -> latency at each of GRID_M [ms], NaN where not measured."""
    return _wide("gemm_grid.csv", ("engine", "gpu", "dtype"), ("n", "k"), "m", GRID_M)


def _grid_point_ms(eng: str, src: str, fmt: str, n: int, k: int, tokens: float) -> float:
    """One grid shape's latency at M = ``tokens`` [ms]: linear in M between the measured powers of two, held below
    the smallest, in proportion to M beyond the largest; a shape missing from the grid (65,536 × 65,536) scaled by
    n·k from its measured neighbour."""
    lats = _grid().get((eng, src, fmt, n, k))
    if lats is None:
        nn = max((key for key in _grid() if key[:3] == (eng, src, fmt)),
                 key=lambda key: (-abs(math.log(key[3] * key[4] / (n * k))), key[3], key[4]))
        return _grid_point_ms(eng, src, fmt, nn[3], nn[4], tokens) * n * k / (nn[3] * nn[4])
    return _linear(GRID_M, lats, tokens)


def _bracket(grid: list[int], x: float) -> tuple[int, int, float, float]:
    """(lower, upper grid value, weight of the upper in log x, scale for x beyond the grid's largest: held at 1
    below its smallest)."""
    if x <= grid[0]:
        return grid[0], grid[0], 0.0, 1.0
    if x >= grid[-1]:
        return grid[-1], grid[-1], 0.0, x / grid[-1]
    i = bisect.bisect_right(grid, x)
    lo, hi = grid[i - 1], grid[i]
    return lo, hi, (math.log(x) - math.log(lo)) / (math.log(hi) - math.log(lo)), 1.0


def gemm_time_s(gpu_key: str, dtype: str, tokens: float, n: float, k: float, engine: str = "trtllm") -> float:
    """Time of one (tokens × k) · (k × n) GEMM on one GPU, interpolated from the measured shape grid. [s]

    Parameters
    ----------
    gpu_key : str
        The GPU (catalog key, display name or alias).
    dtype : {'bf16', 'fp8', 'nvfp4'}
        The GEMM's format ('fp4' reads as 'nvfp4'); fp8 is per-tensor with the activations quantised at run time.
    tokens : float
        The GEMM's M, tokens in the step [tokens]; > 0. Linear in M between the measured powers of two (1 to 32,768;
        8,192 in TensorRT-LLM's and vLLM's A100 tables), held below 1, in proportion to M beyond the largest.
    n, k : float
        Output and input features [1]; > 0: bilinear in (log n, log k) on log time between the grid's sizes (512,
        1,024, 2,048, 4,096, 8,192, 16,384, 65,536), in proportion to n (or k) beyond the largest, and held at the
        smallest below it (a GEMM under 512 wide takes no less time than one 512 wide: its kernel's fixed cost).
    engine : str
        The serving engine whose kernels (its newest measured version) to read (:func:`engine_source`).

    Returns
    -------
    float
        Seconds [s]. For a GPU without measurements, the :func:`gemm_source` GPU's time turned into an efficiency,
        borrowed as :func:`gemm_efficiency` borrows (scaled by the two rooflines), and back into time on this GPU.

    References
    ----------
    AIConfigurator ``systems/data/<system>/gemm/<engine>/<version>/gemm_perf.parquet`` @095f58a, reduced to
    ``xlplan/data/kernels/gemm_grid.csv`` by ``scripts/reduce_kernel_data.py`` (the fastest kernel at each point).

    Examples
    --------
    A grid shape at a measured M comes back as measured: TensorRT-LLM bf16 on H100, 4096 × 4096 at M = 1 is
    ``gemm_grid.csv``'s ``m1`` cell, 0.01656 ms.

    >>> round(gemm_time_s("h100-sxm", "bf16", 1, 4096, 4096) * 1e3, 5)
    0.01656
    """
    if not tokens > 0:
        raise ValueError(f"tokens must be > 0, not {tokens}")
    if not (n > 0 and k > 0):
        raise ValueError(f"n and k must be > 0, not {n} and {k}")
    key, fmt = catalog.gpu_key(gpu_key), _dtype(dtype)
    src, eng = gemm_source(key, fmt, engine), engine_source("gemm", engine, fmt)
    sizes = sorted({g[3] for g in _grid() if g[:3] == (eng, src, fmt)})
    n0, n1, wn, sn = _bracket(sizes, n)
    k0, k1, wk, sk = _bracket(sizes, k)
    logs = {(a, b): math.log(_grid_point_ms(eng, src, fmt, a, b, tokens)) for a in (n0, n1) for b in (k0, k1)}
    ms = math.exp((1 - wn) * (1 - wk) * logs[(n0, k0)] + wn * (1 - wk) * logs[(n1, k0)]
                  + (1 - wn) * wk * logs[(n0, k1)] + wn * wk * logs[(n1, k1)]) * sn * sk
    if src == key:
        return ms * 1e-3
    peak = {g: getattr(catalog.get_gpu(g), PEAK_FIELD[fmt]) for g in (src, key)}
    flops = 2.0 * tokens * n * k
    eff = _borrowed(flops / (ms * 1e-3) / (peak[src] * 1e12), src, key, fmt, tokens, n, k)
    return flops / (eff * peak[key] * 1e12)


GRID_TOKENS = tuple(2 ** i for i in range(15))
"""The powers of two at which ``moe_grid.csv`` holds each MoE layer's latency: 1 to 16,384 tokens. [tokens]"""

MOE_FORMATS = ("bf16", "fp8", "fp8_block", "nvfp4", "mxfp4", "mxfp4_fp8")
"""The MoE grid's formats (``xlplan/data/kernels/README.md``)."""


@functools.cache
def _moe_grid() -> dict:
    """(engine, GPU, format, hidden, inter, top-k, experts, MoE TP, MoE EP) -> latency at each GRID_TOKENS [ms]."""
    return _wide("moe_grid.csv", ("engine", "gpu", "dtype"), ("hidden", "inter", "topk", "experts", "moe_tp", "moe_ep"),
                 "t", GRID_TOKENS)


def moe_time_s(gpu_key: str, dtype: str, tokens: float, hidden: int, inter: int, topk: int, experts: int,
               moe_tp: int = 1, moe_ep: int = 1, engine: str = "trtllm") -> float:
    """Time of one MoE layer's experts on one GPU, as measured at the catalog model's own shape and split. [s]

    Parameters
    ----------
    gpu_key : str
        A GPU AIConfigurator measured (catalog key, display name or alias); others raise ValueError.
    dtype : {'bf16', 'fp8', 'fp8_block', 'nvfp4', 'mxfp4', 'mxfp4_fp8'}
        The experts' format (``moe_grid.csv``).
    tokens : float
        Tokens entering the layer [tokens]; > 0. Linear in tokens between the measured powers of two, held below
        1, in proportion beyond the largest measured.
    hidden, inter, topk, experts : int
        The MoE layer: model width, one expert's width, experts per token, routed experts [1]; one of the catalog's
        MoE shapes.
    moe_tp, moe_ep : int
        The split: experts sliced ``moe_tp`` ways and spread over ``moe_ep`` GPUs [GPUs]; MoE TP × EP ≤ 8.
    engine : str
        The serving engine whose kernels to read: its own where it measured this shape, split and format, else
        TensorRT-LLM's (the rule of :func:`engine_source`, applied to the one row).

    Returns
    -------
    float
        Seconds [s].

    Raises
    ------
    ValueError
        Where no engine measured the shape, split and format on this GPU.

    References
    ----------
    AIConfigurator ``systems/data/<system>/moe/<engine>/<version>/moe_perf.parquet`` @095f58a, balanced routing,
    reduced to ``xlplan/data/kernels/moe_grid.csv`` by ``scripts/reduce_kernel_data.py``.
    """
    if not tokens > 0:
        raise ValueError(f"tokens must be > 0, not {tokens}")
    key = catalog.gpu_key(gpu_key)
    want = (key, dtype, hidden, inter, topk, experts, moe_tp, moe_ep)
    lats = _moe_grid().get(((engine or "").lower(), *want)) or _moe_grid().get(("trtllm", *want))
    if lats is None:
        raise ValueError(f"no measured {dtype} MoE layer {hidden}/{inter}, top-{topk} of {experts}, "
                         f"TP {moe_tp} × EP {moe_ep} on {key}")
    return _linear(GRID_TOKENS, lats, tokens) * 1e-3


MLA_STEPS = tuple(2 ** j - 1 for j in range(1, 18))
"""Cached lengths at which ``mla.csv`` holds each decode row's latency: 1 to 131,071 tokens. [tokens]"""

BMM_TOKENS = tuple(2 ** i for i in range(11))
"""Token counts at which ``mla_bmm.csv`` holds each row's latency: 1 to 1,024. [tokens]"""


@functools.cache
def _mla() -> dict:
    """(engine, GPU, KV format, heads, batch) -> latency at each MLA_STEPS [ms]."""
    return _wide("mla.csv", ("engine", "gpu", "kv_dtype"), ("heads", "batch"), "s", MLA_STEPS)


@functools.cache
def _mla_bmm() -> dict:
    """(engine, GPU, 'pre' or 'post', format, heads) -> latency at each BMM_TOKENS [ms]."""
    return _wide("mla_bmm.csv", ("engine", "gpu", "op", "dtype"), ("heads",), "t", BMM_TOKENS)


def mla_decode_time_s(gpu_key: str, kv_dtype: str, heads: int, batch: float, kv_len: float,
                      engine: str = "trtllm") -> float:
    """Time of one layer's MLA decode attention on one GPU (latent cache, absorbed), as measured. [s]

    Parameters
    ----------
    gpu_key : str
        A GPU AIConfigurator measured (catalog key, display name or alias).
    kv_dtype : {'bf16', 'fp8'}
        The latent cache's format.
    heads : int
        Query heads on this GPU [heads]: 8, 16, 32, 64 or 128 (DeepSeek's 128 and Kimi's 64 over TP 1 to 8).
    batch : float
        Sequences decoding [sequences]; log-linear between the measured batches (1 to 1,024), in proportion beyond.
    kv_len : float
        Tokens cached per sequence [tokens]; linear between the measured lengths (2^j − 1, 1 to 131,071).
    engine : str
        The engine's own table where it measured this GPU (TensorRT-LLM's, SGLang's), else TensorRT-LLM's: vLLM's
        MLA database holds whole modules, not this kernel.

    Returns
    -------
    float
        Seconds [s].

    References
    ----------
    AIConfigurator ``systems/data/<system>/mla/<engine>/<version>/generation_mla_perf.parquet`` @095f58a, reduced to
    ``xlplan/data/kernels/mla.csv``.
    """
    key, kv = catalog.gpu_key(gpu_key), _dtype(kv_dtype)
    eng = engine if any(k[:2] == (engine, key) for k in _mla()) else "trtllm"
    batches = sorted(k[4] for k in _mla() if k[:4] == (eng, key, kv, heads))
    if not batches:
        raise ValueError(f"no measured {kv} MLA decode with {heads} heads per GPU on {key}")

    def at(b: int) -> float:
        return _linear(MLA_STEPS, _mla()[(eng, key, kv, heads, b)], kv_len)

    lo, hi, w, scale = _bracket(batches, batch)
    ms = (math.exp((1 - w) * math.log(at(lo)) + w * math.log(at(hi))) * (scale if batch > batches[-1] else 1.0))
    return ms * 1e-3


def mla_bmm_time_s(gpu_key: str, dtype: str, tokens: float, heads: int, engine: str = "trtllm") -> float:
    """Time of MLA's absorbed per-head projections around the decode kernel (before and after), as measured. [s]

    Parameters
    ----------
    gpu_key : str
        A GPU AIConfigurator measured.
    dtype : {'bf16', 'fp8'}
        The BMMs' format.
    tokens : float
        Tokens in the step [tokens]; linear between the measured powers of two (1 to 1,024), in proportion beyond.
    heads : int
        Query heads on this GPU [heads]: 8 to 128.
    engine : str
        The engine's own table where it measured this GPU and format, else TensorRT-LLM's.

    Returns
    -------
    float
        Seconds: ``mla_gen_pre`` + ``mla_gen_post`` [s].

    References
    ----------
    AIConfigurator ``systems/data/<system>/mla_bmm/<engine>/<version>/mla_bmm_perf.parquet`` @095f58a, reduced to
    ``xlplan/data/kernels/mla_bmm.csv``.
    """
    key, fmt = catalog.gpu_key(gpu_key), _dtype(dtype)
    eng = engine if (engine, key, "pre", fmt, heads) in _mla_bmm() else "trtllm"
    if (eng, key, "pre", fmt, heads) not in _mla_bmm():
        raise ValueError(f"no measured {fmt} MLA BMM with {heads} heads per GPU on {key}")
    return sum(_linear(BMM_TOKENS, _mla_bmm()[(eng, key, op, fmt, heads)], tokens) for op in ("pre", "post")) * 1e-3


def _heads(curves: dict, eng: str, src: str, kv: str, num_heads: int, num_kv_heads: int, batch: int) -> tuple:
    keys = [c for c in curves if c[0] == eng and c[1] == src and c[2] == kv]
    heads = _nearest({c[3] for c in keys}, (num_heads, num_kv_heads))
    b = _nearest({(c[4],) for c in keys if c[3] == heads}, (batch,))[0]
    return curves[(eng, src, kv, heads, b)]


def prefill_attention_efficiency(gpu_key: str, seq_len: float, batch: int = 1, num_heads: int = 32,
                                 num_kv_heads: int = 8, engine: str = "trtllm") -> float:
    """Achieved ÷ bf16 dense peak of causal prefill attention (bf16, head dim 128), as measured. [fraction]

    Parameters
    ----------
    gpu_key : str
        The GPU (catalog key, display name or alias).
    seq_len : float
        Prompt tokens per sequence [tokens]; log-linear between the tabulated lengths (16 to 16,384), the end
        value held beyond the batch's measured range.
    batch : int
        Sequences prefilled together [sequences]; the nearest tabulated batch (1, 4, 16, 64) in log distance.
    num_heads, num_kv_heads : int
        Query and KV heads on one GPU [1]; the nearest tabulated layout: (32, 8), Llama-3.1-8B at TP 1, or (8, 1),
        Llama-3.1-70B at TP 8.
    engine : str
        The serving engine whose kernels to read (:func:`engine_source`).

    Returns
    -------
    float
        2·batch·heads·head_dim·seq_len² FLOPs ÷ latency ÷ the catalog's bf16 dense TFLOP/s [fraction]. A GPU without
        measurements gets its :func:`curve_source` GPU's fraction, unscaled.

    References
    ----------
    AIConfigurator ``systems/data/<system>/attention/trtllm/<version>/context_attention_perf.parquet`` @095f58a
    (FLOPs as ``perf_database/attention.rs::context_attention_sol``), in ``xlplan/data/kernels/attention.csv``.
    """
    if not seq_len > 0:
        raise ValueError(f"seq_len must be > 0, not {seq_len}")
    src, eng = curve_source("prefill", gpu_key, "bf16", engine), engine_source("prefill", engine, "bf16")
    return _loglinear(*_heads(_table("prefill"), eng, src, "bf16", num_heads, num_kv_heads, batch), seq_len)


def decode_attention_bandwidth_fraction(gpu_key: str, kv_len: float, batch: int = 1, kv_dtype: str = "bf16",
                                        num_heads: int = 32, num_kv_heads: int = 8, engine: str = "trtllm") -> float:
    """Bytes moved ÷ HBM bandwidth of one decode-attention step (head dim 128), as measured, at most 1. [fraction]

    Parameters
    ----------
    gpu_key : str
        The GPU (catalog key, display name or alias).
    kv_len : float
        Tokens already in each sequence's KV cache [tokens]; log-linear between the tabulated lengths (2^j - 1,
        1 to 131,071), the end value held beyond the batch's measured range.
    batch : int
        Sequences decoded together [sequences]; the nearest tabulated batch (1, 8, 64, 256) in log distance.
    kv_dtype : {'bf16', 'fp8'}
        The KV cache's format (A100 has bf16 only).
    num_heads, num_kv_heads : int
        Query and KV heads on one GPU [1]; the nearest tabulated layout, (32, 8) or (8, 1).
    engine : str
        The serving engine whose kernels to read (:func:`engine_source`).

    Returns
    -------
    float
        batch·(4·heads·head_dim + 2·kv_heads·kv_len·head_dim·bytes per KV element) ÷ latency ÷ the catalog's HBM
        bandwidth [fraction], capped at 1: where one layer's KV cache fits in L2 the benchmark, which reads the same
        cache every iteration, measures more than HBM bandwidth (A100, L40S, RTX PRO 6000 rows above 1), which a
        model's many layers do not see. A GPU without measurements gets its :func:`curve_source` GPU's fraction.

    References
    ----------
    AIConfigurator ``systems/data/<system>/attention/trtllm/<version>/generation_attention_perf.parquet`` @095f58a
    (bytes as ``perf_database/attention.rs::generation_attention_sol``), in ``xlplan/data/kernels/attention.csv``.
    """
    kv = _dtype(kv_dtype)
    src, eng = curve_source("decode", gpu_key, kv, engine), engine_source("decode", engine, kv)
    return min(1.0, _loglinear(*_heads(_table("decode"), eng, src, kv, num_heads, num_kv_heads, batch),
                               max(kv_len, 1.0)))


def moe_efficiency(gpu_key: str, dtype: str, tokens_per_expert: float, hidden: int | None = None,
                   inter: int | None = None, engine: str = "trtllm") -> float:
    """Achieved ÷ dense peak of the fused MoE expert GEMMs (gated, balanced routing), as measured. [fraction]

    Parameters
    ----------
    gpu_key : str
        The GPU (catalog key, display name or alias).
    dtype : {'bf16', 'fp8', 'nvfp4'}
        The experts' format ('fp4' reads as 'nvfp4').
    tokens_per_expert : float
        Tokens routed to each expert in the step, tokens × top-k ÷ experts [tokens]; > 0; log-linear between the
        tabulated values, the end value held beyond them.
    hidden, inter : int, optional
        Model width and expert intermediate size [1]: the nearest tabulated configuration (Mixtral-8x7B 4096/14336,
        Qwen3-30B-A3B 2048/768, Qwen3-235B-A22B 4096/1536 at EP 8); left out, the median over the three.
    engine : str
        The serving engine whose kernels to read (:func:`engine_source`); vLLM's and SGLang's tables keep the
        fastest of the MoE backends each measured.

    Returns
    -------
    float
        2·tokens·top-k·hidden·inter·3 ÷ (TP·EP) FLOPs ÷ latency ÷ the catalog's dense TFLOP/s for ``dtype``
        [fraction]. A GPU without measurements gets its :func:`curve_source` GPU's value rescaled by the rooflines
        of one expert's GEMM (M = tokens per expert, n = 3·inter ÷ TP, k = hidden).

    References
    ----------
    AIConfigurator ``systems/data/<system>/moe/trtllm/<version>/moe_perf.parquet`` @095f58a (FLOPs as
    ``operators/moe.rs::moe_sol``), in ``xlplan/data/kernels/moe.csv``.
    """
    if not tokens_per_expert > 0:
        raise ValueError(f"tokens_per_expert must be > 0, not {tokens_per_expert}")
    key, fmt = catalog.gpu_key(gpu_key), _dtype(dtype)
    src, eng = curve_source("moe", key, fmt, engine), engine_source("moe", engine, fmt)
    configs = sorted(c for e, g, d, c in _moe() if e == eng and g == src and d == fmt)
    chosen = configs if hidden is None and inter is None else [_nearest(configs, (hidden, inter))]
    return statistics.median(
        _borrowed(_loglinear(*_moe()[(eng, src, fmt, c)], tokens_per_expert), src, key, fmt, tokens_per_expert,
                  3.0 * c[1] / c[4], c[0]) for c in chosen)
