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
from xlplan.catalog.specs import vendor
from xlplan.evidence import bench_conditions
from xlplan.evidence.validation import MeasuredRow
from xlplan.io import layouts, names
from xlplan.io.measurement_table import UNREADABLE, _num

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
    spec = catalog.get_gpu(gpu)
    eng = names.engine(str(row.get("engine") or ""), vendor(spec.name))
    if eng is None:
        return None, f"engine {row.get('engine')!r} is not vLLM, SGLang or TensorRT-LLM"
    settings = str(row.get("settings") or "")
    precision = str(row.get("precision") or "")
    if vendor_chosen(precision):  # a submitter's own choice: the narrowest format the GPU computes natively
        wd = native_narrowest(spec)
        precision = f"{wd} weights, fp8 KV cache" if wd != "bf16" else "bf16"
    wd = names.weights_dtype(precision, model_text, model.weights_dtype_native)
    if wd is None:
        return None, f"precision {str(row.get('precision'))[:40]!r} is not stated in a form xlplan reads"
    kd = names.kv_dtype(precision, model_text, eng, settings, wd)
    if kd is None:
        return None, f"the KV cache format stated in {str(row.get('precision'))[:40]!r} is not bf16, fp8 or int8"
    count = _num(row.get("gpu_count"))
    layout, why = layout_of(row)
    if layout is None:
        return None, why
    tp, ep, dp_attention, replicas, why = layouts.in_xlplan_names(layout, bool(model.num_experts),
                                                                  int(count) if count else None)
    if why:
        return None, why
    util, seqs, tokens, v0 = _engine_settings(row, settings, eng, model, layout.attention_dp if dp_attention else 1)
    isl, osl = _num(row.get("isl")) or 0.0, _num(row.get("osl")) or 0.0
    if not (isl and osl):
        isl, osl, why = mlperf_lengths(row, key, isl, osl)
        if why:
            return None, why
    return bench_conditions.Conditions(
        model=model, gpu=spec, weights_dtype=wd, kv_dtype=kd, gpus=tp * replicas, tp=tp, ep=ep, engine=eng,
        memory_utilisation=util,
        max_num_seqs=int(seqs) if seqs else None, max_num_batched_tokens=int(tokens) if tokens else None,
        isl=isl, osl=osl, v0=v0,
        num_prompts=_num(row.get("num_prompts")), attention_dp=dp_attention,
        engine_version=str(row.get("engine_version") or "").strip(),
    ), ""


VENDOR_CHOSEN = re.compile(r"^\W*(vendor[- ]chosen|submitter[- ]chosen|vendor's choice)", re.IGNORECASE)
"""A precision or parallelism column that says the submitter chose it (MLPerf rows pooled across submitters). [—]"""


def vendor_chosen(text: str) -> bool:
    """Whether a precision or parallelism column says the submitter chose it, without saying what.

    Examples
    --------
    >>> vendor_chosen("vendor-chosen (NVIDIA Hopper FP8, B200 FP4)"), vendor_chosen("fp8")
    (True, False)
    """
    return bool(VENDOR_CHOSEN.search(str(text or "")))


def native_narrowest(gpu) -> str:
    """The narrowest weight format the GPU's tensor cores run natively, by its catalog entry: what an MLPerf
    submitter, free to choose, runs (NVIDIA's Blackwell FP4 and Hopper FP8, AMD's MI355X MXFP4 and MI300X FP8
    submissions). [text]

    Examples
    --------
    >>> from xlplan import catalog
    >>> native_narrowest(catalog.get_gpu("h100-sxm")), native_narrowest(catalog.get_gpu("b200"))
    ('fp8', 'nvfp4')
    """
    if gpu.fp4_tflops:
        return "mxfp4" if vendor(gpu.name) == "amd" else "nvfp4"
    return "fp8" if gpu.fp8_tflops else "bf16"


def mlperf_lengths(row: dict, model_key: str, isl: float, osl: float) -> tuple[float, float, str]:
    """A row's prompt and output lengths where it states none: an MLPerf row's benchmark's published means
    (:mod:`xlplan.io.mlperf`), else what it states (zero: not stated), with why a length an MLPerf row needs is
    missing. [tokens], [tokens], [text]"""
    if not str(row.get("category") or "").startswith("mlperf"):
        return isl, osl, ""
    from xlplan.io import mlperf

    bench = mlperf.benchmark_for(model_key, " ".join(str(row.get(c) or "") for c in ("settings", "dataset", "model")))
    if bench is None:
        return isl, osl, f"isl, osl: not stated, and MLPerf defines no benchmark of {model_key} in {mlperf.BENCHMARKS.name}"
    isl, osl = isl or bench.mean_input_tokens or 0.0, osl or bench.mean_output_tokens or 0.0
    missing = [n for n, v in (("isl", isl), ("osl", osl)) if not v]
    if missing:
        return isl, osl, (f"{', '.join(missing)}: not stated, and MLPerf {bench.benchmark}'s definition publishes no mean "
                          f"{' or '.join('prompt' if n == 'isl' else 'output' for n in missing)} length "
                          f"({mlperf.BENCHMARKS.name}); state it in the row to predict it")
    return isl, osl, ""


def server_limits(row: dict, c) -> tuple[float, float] | None:
    """An MLPerf Server row's p99 TTFT and TPOT limits, from its benchmark's definition (:mod:`xlplan.io.mlperf`).

    Parameters
    ----------
    row : dict
        One row of a measurements CSV. [text]
    c : Conditions or None
        Its conditions as read (None: unreadable). [—]

    Returns
    -------
    tuple of float or None
        (TTFT limit [s], TPOT limit [s/token]); None for a row of another category, or a benchmark with no Server
        limits in the table.
    """
    if str(row.get("category")) != "mlperf_server" or c is None:
        return None
    from xlplan.io import mlperf

    bench = mlperf.benchmark_for(names.model_key(str(row.get("model") or "")) or "",
                                 " ".join(str(row.get(k) or "") for k in ("settings", "dataset", "model")))
    if bench is None or bench.server_ttft_p99_s is None or bench.server_tpot_p99_s is None:
        return None
    return bench.server_ttft_p99_s, bench.server_tpot_p99_s


def layout_of(row: dict) -> tuple[layouts.Layout | None, str]:
    """A row's layout: its six layout columns where filled, else its ``parallelism`` prose read by the grammar.

    Parameters
    ----------
    row : dict
        One row of a measurements CSV, column name to text. [text]

    Returns
    -------
    tuple
        ``(Layout, '')`` or ``(None, why)`` (:func:`xlplan.io.layouts.from_prose`). [—]
    """
    stated = layouts.from_cells(row)
    if stated is not None:
        return stated, ""
    count = _num(row.get("gpu_count"))
    if vendor_chosen(str(row.get("parallelism") or "")) and count:  # the submitter's: the best is searched for
        return layouts.Layout(int(count), 1, 1, 1, int(count), 1), ""
    return layouts.from_prose(str(row.get("parallelism") or ""), str(row.get("settings") or ""),
                              int(count) if count else None)


def _engine_settings(row: dict, settings: str, eng: str, model, ranks: int):
    """(memory fraction, max sequences, max batched tokens, vLLM V0) from the row's settings; the batch and token
    budgets of an attention-DP worker are per rank (TensorRT-LLM, SGLang), so ``ranks`` of them."""
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
    return util, seqs * ranks if seqs else None, tokens * ranks if tokens else None, v0


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
    offline = (str(row.get("category")) in ("offline_max_throughput", "mlperf_offline")
               and not re.search(r"concurrency\s*\d", rate.lower()))
    conc, conc_why = (None, "") if offline else names.concurrency(rate)
    return MeasuredRow(
        id=str(row["id"]), category=str(row.get("category")), source=source_group(row.get("source", "")), conditions=c,
        why=why, speculative=names.speculative(row),
        settings_unknown=names.settings_unknown(str(row.get("settings") or "")) or not str(row.get("settings") or "").strip(),
        offline=offline, concurrency=conc, concurrency_why=conc_why, kv_gib=_num(row.get("kv_cache_GiB_per_gpu")),
        kv_tokens=_num(row.get("kv_cache_tokens")), output_tok_s=_num(row.get("output_tok_s")),
        total_tok_s=_num(row.get("total_tok_s")), samples_per_s=_num(row.get("samples_per_s")),
        layout_free=vendor_chosen(str(row.get("parallelism") or "")) and not layouts.from_cells(row),
        unreadable=str(row.get(UNREADABLE) or ""),
        itl_ms=_num(row.get("tpot_or_itl_mean_ms")), ttft_ms=_num(row.get("ttft_mean_ms")),
        server_limits_s=server_limits(row, c))


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
