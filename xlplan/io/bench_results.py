"""Reading the user's benchmark results into runs: vLLM, GuideLLM and genai-perf (AIPerf) formats.

- ``vllm bench serve --save-result`` JSON: ``max_concurrency``, ``completed``, ``total_input_tokens``,
  ``total_output_tokens``, ``output_throughput``, ``mean_ttft_ms``, ``mean_itl_ms``;
- GuideLLM's report JSON: ``benchmarks[]`` with ``config.strategy`` (or ``args.strategy``)
  ``{"type_": "concurrent", "streams": N}`` and ``metrics`` whose ``successful.mean`` give
  ``time_to_first_token_ms``, ``inter_token_latency_ms``, ``output_tokens_per_second``,
  ``prompt_token_count``, ``output_token_count``;
- NVIDIA genai-perf's ``profile_export_genai_perf.json`` (and AIPerf's ``profile_export_aiperf.json``):
  top-level metrics with ``avg`` (``time_to_first_token``, ``inter_token_latency``,
  ``output_token_throughput``, ``input_sequence_length``, ``output_sequence_length``) and the
  concurrency in ``input_config`` (``concurrency``, or ``loadgen.concurrency``).
"""

from __future__ import annotations

import json
from pathlib import Path

from xlplan.calibrate import Run
from xlplan.io.errors import InputError

EXPECTED = ("expected `vllm bench serve --save-result` JSON, a GuideLLM report JSON, or genai-perf's "
            "profile_export_genai_perf.json")


def _f(x) -> float | None:
    try:
        return None if x is None else float(x)
    except (TypeError, ValueError):
        return None


def _vllm(d: dict, src: str) -> list[Run]:
    done = _f(d.get("completed")) or 0
    if not done:
        raise InputError(src, ["vLLM result with no completed requests; expected a finished benchmark"])
    conc = _f(d.get("max_concurrency"))
    if conc is None:
        raise InputError(src, ["vLLM result without max_concurrency; expected a run with --max-concurrency (a fixed concurrency)"])
    return [Run(src, conc, _f(d.get("total_input_tokens")) / done, _f(d.get("total_output_tokens")) / done,
                (_f(d.get("mean_ttft_ms")) or 0) / 1e3 or None, (_f(d.get("mean_itl_ms")) or 0) / 1e3 or None,
                _f(d.get("output_throughput")))]


def _mean(metrics: dict, name: str) -> float | None:
    m = metrics.get(name) or {}
    m = m.get("successful", m)
    return _f(m.get("mean")) if isinstance(m, dict) else None


def _guidellm(d: dict, src: str) -> list[Run]:
    runs = []
    for k, b in enumerate(d["benchmarks"]):
        strategy = (b.get("config") or {}).get("strategy") or (b.get("args") or {}).get("strategy") or {}
        conc = _f(strategy.get("streams"))
        if strategy.get("type_") != "concurrent" or conc is None:
            continue
        m = b.get("metrics") or {}
        isl, osl = _mean(m, "prompt_token_count"), _mean(m, "output_token_count")
        if not isl or not osl:
            raise InputError(src, [f"benchmarks[{k}]: no prompt_token_count / output_token_count means; expected GuideLLM's metrics"])
        ttft, itl = _mean(m, "time_to_first_token_ms"), _mean(m, "inter_token_latency_ms")
        runs.append(Run(f"{src}#{k}", conc, isl, osl, ttft / 1e3 if ttft else None, itl / 1e3 if itl else None,
                        _mean(m, "output_tokens_per_second")))
    if not runs:
        raise InputError(src, ["GuideLLM report with no concurrent benchmarks; expected --profile concurrent runs (a fixed number of streams)"])
    return runs


def _avg(d: dict, name: str) -> float | None:
    m = d.get(name)
    return _f(m.get("avg")) if isinstance(m, dict) else None


def _genai_perf(d: dict, src: str) -> list[Run]:
    cfg = d.get("input_config") or {}
    conc = _f(cfg.get("concurrency")) or _f((cfg.get("loadgen") or {}).get("concurrency"))
    if conc is None:
        raise InputError(src, ["genai-perf export without input_config.concurrency; expected a run with --concurrency"])
    isl, osl = _avg(d, "input_sequence_length"), _avg(d, "output_sequence_length")
    if not isl or not osl:
        raise InputError(src, ["genai-perf export without input_sequence_length / output_sequence_length; expected both averages"])
    ttft, itl = _avg(d, "time_to_first_token"), _avg(d, "inter_token_latency")
    return [Run(src, conc, isl, osl, ttft / 1e3 if ttft else None, itl / 1e3 if itl else None, _avg(d, "output_token_throughput"))]


def read_results(paths: list[str | Path]) -> list[Run]:
    """Runs from benchmark result files, each format recognised by its keys."""
    runs = []
    for p in map(Path, paths):
        src = str(p)
        if not p.exists():
            raise InputError(src, [f"file not found; {EXPECTED}"])
        try:
            d = json.loads(p.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InputError(src, [f"not JSON ({e}); {EXPECTED}"]) from None
        if isinstance(d, dict) and "output_throughput" in d and "mean_itl_ms" in d:
            runs += _vllm(d, src)
        elif isinstance(d, dict) and isinstance(d.get("benchmarks"), list):
            runs += _guidellm(d, src)
        elif isinstance(d, dict) and isinstance(d.get("inter_token_latency"), dict):
            runs += _genai_perf(d, src)
        else:
            keys = ", ".join(list(d)[:8]) if isinstance(d, dict) else type(d).__name__
            raise InputError(src, [f"a result file of another format (keys: {keys}); {EXPECTED}"])
    return runs
