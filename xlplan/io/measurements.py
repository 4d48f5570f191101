"""The measurements corpus at the edge: each published row read into xlplan's names, its figures parsed.

Reads a CSV in the schema of ``shared/reference/measurements-public.csv`` (the corpus
``xlplan/data/measurements.csv`` by default). Each row's outside names — Hugging Face ids with
suffixes, GPU strings with counts and vendors, precision strings, engines — are read by
:mod:`xlplan.io.names`; :mod:`xlplan.evidence.validation` predicts and scores them.
No measured column is an input to a prediction: a row is predicted from its model, precision, GPU,
count, parallelism, engine, settings, lengths and concurrency alone. A row that cannot be predicted
says what is missing.

How each row is predicted and scored is :mod:`xlplan.evidence.validation`'s.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

from xlplan import catalog
from xlplan.evidence import bench_conditions
from xlplan.evidence.validation import MeasuredRow
from xlplan.io import names
from xlplan.io.measurement_table import _num

DEFAULT_UTILISATION = {"vllm": 0.90, "sglang": 0.88, "trtllm": 0.90}
"""The engines' default memory fractions (vLLM gpu_memory_utilization, SGLang mem_fraction_static on large GPUs,
TensorRT-LLM free_gpu_memory_fraction for trtllm-bench/serve). [fraction]"""

CORPUS = Path(__file__).resolve().parents[1] / "data" / "measurements.csv"
"""The public corpus that ships with xlplan (every row with its source and a reliability note)."""


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


def measured_row(row: dict) -> MeasuredRow:
    """One measurement row as xlplan reads it: its conditions in xlplan's names (or why not), what its condition
    columns say of speculative decoding and settings, its concurrency, and its measured figures parsed.

    No note (``planner_check``) is read: a row is skipped for its conditions only as its condition columns state them
    (:data:`xlplan.io.names.SPECULATIVE_COLUMNS`, :func:`xlplan.io.names.settings_unknown`).

    Parameters
    ----------
    row : dict
        One row of a measurements CSV (:func:`xlplan.io.measurement_table.read_measurements`), column name to text.

    Returns
    -------
    MeasuredRow
        The row in xlplan's names, for :mod:`xlplan.evidence.validation`.
    """
    c, why = conditions(row)
    rate = str(row.get("concurrency_or_rate") or "")
    offline = str(row.get("category")) == "offline_max_throughput" and not re.search(r"concurrency\s*\d", rate.lower())
    conc, conc_why = (None, "") if offline else names.concurrency(rate)
    return MeasuredRow(
        id=str(row["id"]), category=str(row.get("category")), source=source_group(row.get("source", "")), conditions=c,
        why=why, speculative=names.speculative(row), settings_unknown=names.settings_unknown(str(row.get("settings") or "")),
        offline=offline, concurrency=conc, concurrency_why=conc_why, kv_gib=_num(row.get("kv_cache_GiB_per_gpu")),
        kv_tokens=_num(row.get("kv_cache_tokens")), output_tok_s=_num(row.get("output_tok_s")),
        itl_ms=_num(row.get("tpot_or_itl_mean_ms")), ttft_ms=_num(row.get("ttft_mean_ms")))


def measured_rows(rows: list[dict]) -> list[MeasuredRow]:
    """Every row as :func:`measured_row` reads it, in order.

    Parameters
    ----------
    rows : list of dict
        Rows of a measurements CSV.

    Returns
    -------
    list of MeasuredRow
        The rows in xlplan's names.
    """
    return [measured_row(r) for r in rows]
