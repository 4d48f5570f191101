"""Validation: each published measurement predicted from its stated conditions, with the error.

Reads a CSV in the schema of ``shared/reference/measurements-public.csv`` (the corpus
``xlplan/data/measurements.csv`` by default). Each row's outside names — Hugging Face ids with
suffixes, GPU strings with counts and vendors, precision strings, engines — are read by
:mod:`xlplan.io.names`; its conditions go to :mod:`xlplan.evidence.predict`, the planner's own serving model.
No measured column is an input to a prediction: a row is predicted from its model, precision, GPU,
count, parallelism, engine, settings, lengths and concurrency alone. A row that cannot be predicted
says what is missing.

Metrics and how each is scored:

- **capacity**: KV cache GiB per GPU (or tokens per replica) at start-up. The error is taken against
  the measured figure, or against 5 GiB where the figure is smaller (a cache near zero, or a model
  that does not fit), so 0.5 GiB there scores as 10%.
- **throughput**: output tokens/s of the whole system.
- **latency**: mean inter-token latency (TPOT) at a fixed concurrency.
- **ttft**: mean time to first token at a fixed concurrency (shown, not in the headline targets).
"""

from __future__ import annotations

import re
import statistics
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from urllib.parse import urlparse

from xlplan import catalog
from xlplan.evidence import bench_conditions, predict
from xlplan.io import names
from xlplan.io.measurement_table import _num
from xlplan.serving import efficiency_defaults

CATEGORIES = {
    "kv_capacity": "KV-cache capacity at start-up",
    "offline_max_throughput": "offline maximum throughput",
    "online_latency_sweep": "throughput and latency at a fixed concurrency",
    "online_latency": "throughput and latency at a fixed concurrency",
    "mlperf_offline": "MLPerf offline",
    "mlperf_server": "MLPerf server",
}
CAPACITY, THROUGHPUT, LATENCY, TTFT = "capacity", "throughput", "latency", "ttft"
KINDS = (CAPACITY, THROUGHPUT, LATENCY, TTFT)
CAPACITY_FLOOR_GIB = 5.0
"""Capacity errors are taken against the measured figure, or this much where it is smaller. [GiB]"""
DEFAULT_UTILISATION = {"vllm": 0.90, "sglang": 0.88, "trtllm": 0.90}
"""The engines' default memory fractions (vLLM gpu_memory_utilization, SGLang mem_fraction_static on large GPUs,
TensorRT-LLM free_gpu_memory_fraction for trtllm-bench/serve). [fraction]"""

CORPUS = Path(__file__).resolve().parents[1] / "data" / "measurements.csv"
"""The public corpus that ships with xlplan (every row with its source and a reliability note)."""


@dataclass(frozen=True)
class Check:
    """One predicted figure against its measurement (or a row that could not be predicted, with why)."""

    id: str
    category: str
    source: str  # the source group the row comes from (host and repository)
    metric: str
    kind: str  # capacity | throughput | latency | ttft
    predicted: float | None
    measured: float | None
    relative_error: float | None  # predicted ÷ measured − 1; capacity against max(|measured|, 5 GiB) [fraction]
    skipped: str = ""
    note: str = ""


def source_group(url: str) -> str:
    """The host and repository a row's source is in: what leave-one-source-out leaves out.

    Examples
    --------
    >>> source_group("https://github.com/NVIDIA/TensorRT-LLM/blob/00f3/docs/perf.md")
    'github.com/NVIDIA/TensorRT-LLM'
    >>> source_group("https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance.html")
    'docs.nvidia.com/nim'
    """
    first = str(url).split()[0] if str(url).split() else ""
    if "://" not in first:
        first = "https://" + first
    u = urlparse(first)
    parts = [p for p in u.path.split("/") if p]
    keep = 2 if u.netloc.endswith("github.com") or u.netloc.endswith("huggingface.co") else 1
    return "/".join([u.netloc, *parts[:keep]])


def _check(row, metric, kind, predicted, measured, note="") -> Check:
    if predicted is None or measured is None:
        err = None
    elif kind == CAPACITY:
        err = (predicted - measured) / max(abs(measured), CAPACITY_FLOOR_GIB if "GiB" in metric else abs(measured) or 1.0)
    else:
        err = predicted / measured - 1.0 if measured else None
    return Check(str(row["id"]), str(row["category"]), source_group(row.get("source", "")), metric, kind, predicted, measured,
                 err, "", note)


def _skip(row, reason: str) -> Check:
    return Check(str(row["id"]), str(row["category"]), source_group(row.get("source", "")), "", "", None, None, None, reason)


def conditions(row: dict) -> tuple[bench_conditions.Conditions | None, str]:
    """A row's stated conditions in xlplan's names, or (None, what is missing).

    Read from the condition columns alone (model, precision, GPU, count, parallelism, engine and version, settings,
    lengths, prompts); the weights' and the cache's formats apart (:func:`xlplan.io.names.weights_dtype`,
    :func:`xlplan.io.names.kv_dtype`). No measured column and no note is read.

    Parameters
    ----------
    row : dict
        One row of a measurements CSV (:func:`xlplan.io.measurement_table.read_measurements`), column name to text. [text]

    Returns
    -------
    tuple
        ``(Conditions, '')``, or ``(None, why)`` naming what cannot be read. [—]
    """
    model_text = str(row.get("model") or "")
    key = names.model_key(model_text)
    if key is None:
        return None, f"model {model_text!r} is not in the catalog"
    model = catalog.get_model(key)
    gpu, why = names.gpu_key(str(row.get("gpu") or ""))
    if gpu is None:
        return None, why
    eng = names.engine(str(row.get("engine") or ""))
    if eng is None:
        return None, f"engine {row.get('engine')!r} is not vLLM, SGLang or TensorRT-LLM"
    settings = str(row.get("settings") or "")
    wd = names.weights_dtype(str(row.get("precision") or ""), model_text, model.weights_dtype_native)
    if wd is None:
        return None, f"precision {str(row.get('precision'))[:40]!r} is not stated in a form xlplan reads"
    kd = names.kv_dtype(str(row.get("precision") or ""), model_text, eng, settings, wd)
    if kd is None:
        return None, f"the KV cache format stated in {str(row.get('precision'))[:40]!r} is not bf16, fp8 or int8"
    count = _num(row.get("gpu_count"))
    tp, ep, why = names.parallelism(str(row.get("parallelism") or ""), int(count) if count else None)
    if tp is None:
        return None, why
    gpus = int(count) if count else tp
    util, seqs, tokens, v0, dp_attention = _engine_settings(row, settings, eng, model, tp)
    return bench_conditions.Conditions(
        model=model, gpu=catalog.get_gpu(gpu), weights_dtype=wd, kv_dtype=kd, gpus=gpus, tp=tp, ep=ep, engine=eng,
        memory_utilisation=util if util is not None else DEFAULT_UTILISATION[eng],
        max_num_seqs=int(seqs) if seqs else None, max_num_batched_tokens=int(tokens) if tokens else None,
        isl=_num(row.get("isl")) or 0.0, osl=_num(row.get("osl")) or 0.0, v0=v0,
        num_prompts=_num(row.get("num_prompts")), attention_dp=dp_attention,
        engine_version=str(row.get("engine_version") or "").strip(),
    ), ""


def _engine_settings(row: dict, settings: str, eng: str, model, tp: int):
    """(memory fraction, max sequences, max batched tokens, vLLM V0, attention data parallel) from the row's settings."""
    util = names.setting(settings, "gpu_memory_utilization", "mem_fraction_static", "kv_cache_free_gpu_mem_fraction",
                         "free_gpu_memory_fraction")
    if util is not None and not 0 < util <= 1:
        util = None
    seqs = names.setting(settings, "max_num_seqs", "max_batch_size", "max_running_requests")
    tokens = names.setting(settings, "max_num_batched_tokens", "max_num_tokens", "chunked_prefill_size")
    v0 = eng == "vllm" and names.vllm_v0(str(row.get("engine_version") or "") + " " + str(row.get("engine") or ""))
    if v0 and tokens is None:
        # V0 profiled the whole context limit, unless chunked prefill was on (its default past 32K tokens: 2,048 per step)
        max_len = names.setting(settings, "max_model_len") or model.max_context_tokens or 2048
        tokens = 2048 if max_len > 32768 else max(max_len, 2048)
    dp_attention = bool(re.search(r"dp[- ]attention|attention[- ]dp|enable-dp-attention", str(row.get("parallelism") or "")
                                  + " " + settings, re.IGNORECASE))
    if dp_attention:  # with attention data parallel the batch and token budgets are per rank (TensorRT-LLM, SGLang)
        seqs = seqs * tp if seqs else None
        tokens = tokens * tp if tokens else None
    return util, seqs, tokens, v0, dp_attention


def predict_row(row: dict, eff: bench_conditions.Efficiencies = bench_conditions.Efficiencies(), table: dict | None = None) -> list[Check]:
    """The checks one measurement row allows, or one skipped check with the reason.

    A row is skipped for its conditions only as its condition columns state them: speculative decoding
    (:data:`xlplan.io.names.SPECULATIVE_COLUMNS`), settings the ``settings`` column says are unknown
    (:func:`xlplan.io.names.settings_unknown`), a
    name xlplan cannot read (:func:`conditions`). A note (``planner_check``) is never read. Conditions the planner refuses (a :class:`xlplan.plan.scenario.PlanningError`, or a
    plan the conditions make invalid, a pydantic ``ValidationError``) skip the row with the planner's reason; any
    other exception is a bug and is raised.

    Parameters
    ----------
    row : dict
        One row of a measurements CSV (:func:`xlplan.io.measurement_table.read_measurements`). [text]
    eff : Efficiencies
        The efficiencies to predict at; a field left None takes the engine's default. [—]
    table : dict, optional
        The default-efficiency table the empty fields come from (a leave-one-source-out fold's); left out, the
        shipped one. A row whose engine and vendor borrow another class's fit says so in its checks' notes.

    Returns
    -------
    list of Check
        One check per measured figure the row allows (capacity [GiB] or [tokens], throughput [tokens/s], latency
        and TTFT [ms]), or one skipped check with the reason. [—]
    """
    from pydantic import ValidationError

    from xlplan.plan.scenario import PlanningError

    category = str(row.get("category"))
    if category not in CATEGORIES:
        return [_skip(row, f"category {category!r} is not one xlplan predicts ({', '.join(CATEGORIES)})")]
    if category.startswith("mlperf"):
        return [_skip(row, "MLPerf rows: precision, parallelism and lengths are the vendor's and not stated")]
    c, why = conditions(row)
    if c is None:
        return [_skip(row, why)]
    if names.speculative(row):
        return [_skip(row, "speculative decoding (MTP, EAGLE, a draft model) is not modelled")]
    if names.settings_unknown(str(row.get("settings") or "")):
        return [_skip(row, "the engine's settings (memory fraction, budgets) are not stated")]
    try:
        checks = _predict(row, category, c, eff.resolved(c.engine, c.gpu.name, table))
    except (PlanningError, ValidationError) as e:  # conditions the planner refuses: reported, not raised
        return [_skip(row, f"cannot be predicted: {e}")]
    borrowed = efficiency_defaults.fallback_note(c.engine, c.gpu.name, bool(c.model.num_experts), table) if eff == bench_conditions.Efficiencies() else ""
    if not borrowed:
        return checks
    return [replace(k, note=f"{k.note}; defaults: {borrowed}" if k.note else f"defaults: {borrowed}") if k.kind != CAPACITY
            else k for k in checks]


def _predict(row: dict, category: str, c: bench_conditions.Conditions, eff: bench_conditions.Efficiencies) -> list[Check]:
    if category == "kv_capacity":
        gib, tokens = predict.kv_capacity(c)
        out = []
        if _num(row.get("kv_cache_GiB_per_gpu")) is not None:
            out.append(_check(row, "KV cache GiB per GPU", CAPACITY, gib, _num(row["kv_cache_GiB_per_gpu"]),
                              f"{c.engine} rule at {c.memory_utilisation:g}"))
        if _num(row.get("kv_cache_tokens")) is not None:
            out.append(_check(row, "KV cache tokens per replica", CAPACITY, tokens, _num(row["kv_cache_tokens"])))
        return out or [_skip(row, "no KV figure measured")]
    if not c.isl or not c.osl:
        return [_skip(row, "input and output lengths not stated (a dataset such as ShareGPT without its token counts)")]
    if category == "offline_max_throughput" and not re.search(r"concurrency\s*\d", str(row.get("concurrency_or_rate", "")).lower()):
        measured = _num(row.get("output_tok_s"))
        if measured is None:
            return [_skip(row, "no output tokens/s measured")]
        tok_s, batch = predict.offline_output_tok_s(c, eff)
        return [_check(row, "output tokens/s", THROUGHPUT, tok_s, measured, f"batch {batch:,.0f} per replica")]
    conc, why = names.concurrency(str(row.get("concurrency_or_rate") or ""))
    if conc is None:
        return [_skip(row, why)]
    on = predict.fixed_concurrency(bench_conditions.replace_concurrency(c, conc), eff)
    out = []
    note = f"batch {on.batch:,.1f} per replica" + (f", {on.waiting:,.1f} waiting" if on.waiting > 0.05 else "")
    if _num(row.get("output_tok_s")) is not None:
        out.append(_check(row, "output tokens/s", THROUGHPUT, on.output_tok_s, _num(row["output_tok_s"]), note))
    if _num(row.get("tpot_or_itl_mean_ms")) is not None:
        out.append(_check(row, "inter-token latency ms", LATENCY, on.itl_s * 1e3, _num(row["tpot_or_itl_mean_ms"]), note))
    if _num(row.get("ttft_mean_ms")) is not None:
        out.append(_check(row, "TTFT ms", TTFT, on.ttft_s * 1e3, _num(row["ttft_mean_ms"]), note))
    return out or [_skip(row, "no throughput or latency measured")]


def validate(rows: list[dict], eff: bench_conditions.Efficiencies = bench_conditions.Efficiencies(), table: dict | None = None) -> list[Check]:
    """Every row predicted (or skipped with the reason), the empty efficiencies from ``table`` (default: shipped)."""
    return [c for row in rows for c in predict_row(row, eff, table)]


def medians(checks: list[Check]) -> dict[str, float]:
    """Median absolute error by category and by kind. [fraction]"""
    out = {}
    for key in sorted({c.category for c in checks} | {c.kind for c in checks if c.kind}):
        errs = [abs(c.relative_error) for c in checks if c.relative_error is not None and key in (c.category, c.kind)]
        if errs:
            out[key] = statistics.median(errs)
    return out


def as_json(checks: list[Check], eff: bench_conditions.Efficiencies) -> dict:
    return {"efficiencies": asdict(eff), "checks": [asdict(c) for c in checks], "median_absolute_error": medians(checks)}


def run_of(row: dict):
    """A throughput or latency row as a calibration run with its own conditions, or None (capacity rows, skipped rows)."""
    from xlplan.evidence.calibrate import Run

    category = str(row.get("category"))
    if category not in ("offline_max_throughput", "online_latency_sweep", "online_latency"):
        return None
    checks = predict_row(row)
    if not checks or checks[0].skipped:
        return None
    c, _ = conditions(row)
    offline = category == "offline_max_throughput" and not re.search(r"concurrency\s*\d", str(row.get("concurrency_or_rate", "")).lower())
    conc = None if offline else names.concurrency(str(row.get("concurrency_or_rate") or ""))[0]
    itl, ttft = _num(row.get("tpot_or_itl_mean_ms")), _num(row.get("ttft_mean_ms"))
    return Run(str(row["id"]), conc, c.isl, c.osl, None if offline or not ttft else ttft / 1e3,
               None if offline or not itl else itl / 1e3, _num(row.get("output_tok_s")), c)


def superseded(c: bench_conditions.Conditions) -> str:
    """Why a row's engine release is older than the defaults describe, or '' (:func:`xlplan.serving.efficiency_defaults.superseded_release`).

    Parameters
    ----------
    c : Conditions
        A row's conditions, with its engine version as the source states it.

    Returns
    -------
    str
        E.g. "SGLang 0.4, before 0.5 or later"; empty where the release is current or not stated. [text]
    """
    return efficiency_defaults.superseded_release(c.engine, c.engine_version, c.v0)


def fit_runs(rows: list[dict]) -> list:
    """The throughput and latency runs the default efficiencies are fitted on: every predictable row of a current release.

    Parameters
    ----------
    rows : list of dict
        Measurement rows (:func:`xlplan.io.measurement_table.read_measurements`).

    Returns
    -------
    list of Run
        :func:`run_of` for each row, without rows that cannot be predicted and rows :func:`superseded` names. [—]
    """
    runs = [run_of(r) for r in rows]
    return [r for r in runs if r is not None and not superseded(r.conditions)]
