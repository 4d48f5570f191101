"""Validation: each published measurement predicted by the engine, with the relative error.

Reads a file in the schema of ``shared/reference/measurements-public.csv`` and maps
its outside names (Hugging Face ids, GPU descriptions, engine settings) to ours at
this edge. Rows whose model, GPU, precision or parallelism the file does not pin
down are skipped with the reason, never guessed.

Conventions (stated, global, no per-row factors):

- **KV capacity at start-up** (vLLM): the start-up log's own non-KV memory (activation
  peak, non-torch allocations, as ``util × visible − weights − KV``) is an input, as
  vLLM logs it; the engine predicts the weights per GPU and so the KV that remains,
  in GiB, and in tokens where the row reports them.
- **Precision**: ``bf16`` is bf16 weights and cache; ``fp8`` is fp8 weights, with an
  fp8 KV cache on TensorRT-LLM and NIM (their fp8 recipe) and a bf16 one on vLLM
  unless its settings say ``kv_cache_dtype=fp8``.
- **Offline maximum throughput**: the KV cache after weights and the planner's 3 GiB
  overhead, times the engine's ``kv_cache_free_gpu_mem_fraction`` (0.90 if not stated),
  limits the batch at the mean context; the roofline gives the step.
- **Online at a fixed concurrency**: the step at batch = concurrency; lengths not given
  leave context and prefill out.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from xlplan import architecture, catalog, memory
from xlplan.io.errors import InputError
from xlplan.predict import Efficiencies, Hardware, itl_s, offline_output_tok_s, online_output_tok_s
from xlplan.scenario import weights_compute_dtype
from xlplan.units import GIB

REQUIRED = ("id", "category", "model", "precision", "gpu", "gpu_count", "parallelism", "engine", "settings", "isl", "osl",
            "concurrency_or_rate", "weights_GiB_per_gpu", "kv_cache_GiB_per_gpu", "kv_cache_tokens", "output_tok_s",
            "tpot_or_itl_mean_ms")
CATEGORIES = {
    "kv_capacity": "KV-cache capacity at start-up",
    "offline_max_throughput": "offline maximum throughput",
    "online_latency_sweep": "online throughput and inter-token latency at a fixed concurrency",
    "online_latency": "online throughput and inter-token latency at a fixed concurrency",
    "mlperf_offline": "MLPerf offline",
    "mlperf_server": "MLPerf server",
}
THROUGHPUT, LATENCY, CAPACITY = "throughput", "latency", "capacity"
PLANNER_OVERHEAD_GIB = 3.0
"""Non-KV memory per GPU for engines that do not log it (the plan's default overhead). [GiB]"""


@dataclass(frozen=True)
class Check:
    """One predicted figure against its measurement."""

    id: str
    category: str
    metric: str  # e.g. 'output tokens/s'
    kind: str  # capacity | throughput | latency
    predicted: float | None
    measured: float | None
    relative_error: float | None  # predicted ÷ measured − 1 [fraction]
    skipped: str = ""  # why it was not predicted
    note: str = ""


def _num(v) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def _gpu(text: str) -> str | None:
    candidates = [text, text.split("(")[0]]
    inner = re.search(r"\(([^)]*)\)", text)
    if inner:
        candidates.append(re.sub(r"^\d+\s*x\s*", "", inner.group(1).strip()))
    for c in candidates:
        try:
            return catalog.gpu_key(c.strip())
        except catalog.UnknownNameError:
            continue
    return None


def _dtypes(precision: str, engine: str, settings: str) -> tuple[str, str] | None:
    p = precision.lower()
    if p.startswith("bf16"):
        return "bf16", "bf16"
    if p.startswith("fp8"):
        if "vllm" in engine.lower():
            return "fp8", "fp8" if "kv_cache_dtype=fp8" in settings.replace(" ", "") else "bf16"
        return "fp8", "fp8"
    return None


def _setting(settings: str, key: str) -> float | None:
    m = re.search(rf"{key}\D*?(\d+(?:\.\d+)?)", settings)
    return float(m.group(1)) if m else None


def _hardware(model_key: str, gpu_key: str, wd: str, kd: str, tp: int) -> Hardware:
    m, g = catalog.get_model(model_key), catalog.get_gpu(gpu_key)
    peak = g.peak_tflops(weights_compute_dtype(wd, g))
    shards = memory.kv_shards(tp, 1 if m.attention == "mla" else m.num_key_value_heads)
    return Hardware(float(architecture.active_params(m)), memory.weights_bytes(m, wd), memory.kv_bytes_per_token(m, kd), tp, shards,
                    peak, g.hbm_tbps)


def _check(row, metric, kind, predicted, measured, note="") -> Check:
    err = None if predicted is None or not measured else predicted / measured - 1.0
    return Check(str(row["id"]), str(row["category"]), metric, kind, predicted, measured, err, "", note)


def _skip(row, reason: str) -> Check:
    return Check(str(row["id"]), str(row["category"]), "", "", None, None, None, reason)


def predict_row(row: dict, eff: Efficiencies) -> list[Check]:
    """The checks one measurement row allows (or one skipped check with the reason)."""
    category = str(row["category"])
    if category not in CATEGORIES:
        return [_skip(row, f"category {category!r} is not one the engine predicts ({', '.join(CATEGORIES)})")]
    try:
        model_key = catalog.model_key(str(row["model"]))
    except catalog.UnknownNameError:
        return [_skip(row, f"model {row['model']!r} is not in the catalog")]
    gpu_key = _gpu(str(row["gpu"]))
    if gpu_key is None:
        return [_skip(row, f"GPU {row['gpu']!r} is not in the catalog")]
    settings, engine = str(row.get("settings") or ""), str(row.get("engine") or "")
    dtypes = _dtypes(str(row["precision"]), engine, settings)
    if dtypes is None:
        return [_skip(row, f"precision {row['precision'][:40]!r} is not stated as bf16 or fp8")]
    tp_match = re.match(r"TP(\d+)", str(row["parallelism"]))
    if not tp_match:
        return [_skip(row, f"parallelism {row['parallelism']!r} is not stated as a TP degree")]
    tp = int(tp_match.group(1))
    wd, kd = dtypes
    h = _hardware(model_key, gpu_key, wd, kd, tp)
    gpus = int(_num(row["gpu_count"]) or tp)
    if category == "kv_capacity":
        util = _setting(settings, "gpu_memory_utilization")
        visible = re.search(r"\((\d+(?:\.\d+)?) GiB visible\)", str(row["gpu"]))
        visible_gib = float(visible.group(1)) if visible else catalog.get_gpu(gpu_key).cuda_visible_gib
        w_meas, kv_meas = _num(row["weights_GiB_per_gpu"]), _num(row["kv_cache_GiB_per_gpu"])
        if util is None or visible_gib is None or w_meas is None or kv_meas is None:
            return [_skip(row, "start-up figures (gpu_memory_utilization, visible memory, weights and KV GiB) not all given")]
        logged_overhead = util * visible_gib - w_meas - kv_meas
        weights = h.weights_bytes / tp / GIB
        kv = memory.kv_budget_gib(visible_gib, util, weights, logged_overhead)
        out = [_check(row, "weights GiB per GPU", CAPACITY, weights, w_meas),
               _check(row, "KV cache GiB per GPU", CAPACITY, kv, kv_meas,
                      f"{util:g} × {visible_gib:g} − {weights:.2f} weights − {logged_overhead:.2f} logged non-KV memory")]
        tokens = _num(row["kv_cache_tokens"])
        if tokens:
            out.append(_check(row, "KV cache tokens", CAPACITY, kv * GIB * h.kv_shards / h.kv_bytes_per_token, tokens))
        return out
    isl, osl = _num(row["isl"]), _num(row["osl"])
    if category == "offline_max_throughput":
        if not isl or not osl:
            return [_skip(row, "input and output lengths not given")]
        fraction = _setting(settings, "kv_cache_free_gpu_mem_fraction") or 0.90
        g = catalog.get_gpu(gpu_key)
        kv_gib = (g.memory_gib - h.weights_bytes / tp / GIB - PLANNER_OVERHEAD_GIB) * fraction
        per_replica, batch = offline_output_tok_s(h, kv_gib, isl, osl, eff)
        return [_check(row, "output tokens/s", THROUGHPUT, per_replica * gpus / tp, _num(row["output_tok_s"]),
                       f"batch {batch:,.0f} held by {kv_gib:.1f} GiB of KV per GPU ({kd} cache)")]
    if category in ("online_latency_sweep", "online_latency"):
        c = re.search(r"concurrency\s+(\d+(?:\.\d+)?)", str(row["concurrency_or_rate"]))
        if not c:
            return [_skip(row, f"concurrency not stated in {row['concurrency_or_rate']!r}")]
        conc = float(c.group(1))
        note = "" if isl and osl else "lengths not given: context and prefill left out"
        i, o = (isl, osl) if isl and osl else (0.0, 1.0)
        out = []
        if _num(row["output_tok_s"]):
            out.append(_check(row, "output tokens/s", THROUGHPUT, online_output_tok_s(h, conc, i, o, eff) * gpus / tp,
                              _num(row["output_tok_s"]), note))
        if _num(row["tpot_or_itl_mean_ms"]):
            out.append(_check(row, "inter-token latency ms", LATENCY, itl_s(h, conc, i, o, eff) * 1e3, _num(row["tpot_or_itl_mean_ms"]), note))
        return out or [_skip(row, "no throughput or latency measured")]
    return [_skip(row, "MLPerf rows: parallelism, precision and input lengths are the vendor's and not given")]


def predict_row_inputs(row: dict):
    """A throughput or latency row as a calibration run (None for rows that are not, or are skipped)."""
    from xlplan.calibrate import Run
    from xlplan.predict import kv_batch

    category = str(row["category"])
    if category not in ("offline_max_throughput", "online_latency_sweep", "online_latency"):
        return None
    try:
        model_key = catalog.model_key(str(row["model"]))
    except catalog.UnknownNameError:
        return None
    gpu_key = _gpu(str(row["gpu"]))
    dtypes = _dtypes(str(row["precision"]), str(row.get("engine") or ""), str(row.get("settings") or ""))
    tp_match = re.match(r"TP(\d+)", str(row["parallelism"]))
    if gpu_key is None or dtypes is None or not tp_match:
        return None
    tp = int(tp_match.group(1))
    h = _hardware(model_key, gpu_key, *dtypes, tp)
    gpus = int(_num(row["gpu_count"]) or tp)
    isl, osl = _num(row["isl"]) or 0.0, _num(row["osl"]) or 1.0
    if category == "offline_max_throughput":
        fraction = _setting(str(row.get("settings") or ""), "kv_cache_free_gpu_mem_fraction") or 0.90
        kv_gib = (catalog.get_gpu(gpu_key).memory_gib - h.weights_bytes / tp / GIB - PLANNER_OVERHEAD_GIB) * fraction
        batch = kv_batch(kv_gib, h, isl, osl)
        per_replica = (_num(row["output_tok_s"]) or 0) * tp / gpus
        return Run(str(row["id"]), batch, isl, osl, None, batch / per_replica if per_replica else None, per_replica, h)
    c = re.search(r"concurrency\s+(\d+(?:\.\d+)?)", str(row["concurrency_or_rate"]))
    itl = _num(row["tpot_or_itl_mean_ms"])
    if not c or not itl:
        return None
    conc = float(c.group(1))
    ttft = _num(row.get("ttft_mean_ms"))
    # TTFT is the prefill alone only without a queue: at concurrency 1
    first = ttft / 1e3 if ttft and isl and conc == 1 else None
    return Run(str(row["id"]), conc, isl, osl, first, itl / 1e3, _num(row["output_tok_s"]), h)


def read_measurements(path: str | Path) -> list[dict]:
    """Rows of a measurements CSV as dicts; a missing column or a file of another format is an InputError."""
    import pandas as pd

    path = Path(path)
    src = str(path)
    if not path.exists():
        raise InputError(src, ["file not found; expected a CSV in the schema of measurements-public.csv"])
    try:
        frame = pd.read_csv(path)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as e:
        raise InputError(src, [f"not a CSV ({type(e).__name__}); expected the schema of measurements-public.csv"]) from None
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise InputError(src, [f"missing column(s) {', '.join(missing)}; expected the columns of measurements-public.csv "
                               f"({', '.join(REQUIRED)}, …)"])
    return frame.to_dict("records")


def validate(rows: list[dict], eff: Efficiencies = Efficiencies()) -> list[Check]:
    """Every row predicted (or skipped with the reason)."""
    return [c for row in rows for c in predict_row(row, eff)]


def medians(checks: list[Check]) -> dict[str, float]:
    """Median absolute relative error by category and by kind (throughput, latency, capacity). [fraction]"""
    import statistics

    out = {}
    for key in sorted({c.category for c in checks} | {c.kind for c in checks if c.kind}):
        errs = [abs(c.relative_error) for c in checks if c.relative_error is not None and key in (c.category, c.kind)]
        if errs:
            out[key] = statistics.median(errs)
    return out


def as_json(checks: list[Check], eff: Efficiencies) -> dict:
    return {"efficiencies": asdict(eff), "checks": [asdict(c) for c in checks], "median_absolute_error": medians(checks)}
