"""Reading Prometheus text-format scrapes of a vLLM or SGLang server, taken over time.

Each file is one scrape (``curl -s http://server:8000/metrics > scrape-0001.txt``),
in the order given, ``interval_s`` apart unless the samples carry their own
timestamps. Parsed with ``prometheus_client``'s parser; a malformed scrape is an
error naming the file and the line. Samples of a metric are summed over their
labels (several engines or models on one server add up).
"""

from __future__ import annotations

from pathlib import Path

from xlplan.confirm import Evidence, percentile, rate
from xlplan.io.errors import InputError

# role -> metric names, vLLM (current and older) then SGLang
METRICS: dict[str, tuple[str, ...]] = {
    "cache": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"),
    "preemptions": ("vllm:num_preemptions_total", "vllm:num_preemptions", "sglang:num_retracted_reqs_total",
                    "sglang:num_retracted_reqs"),
    "waiting": ("vllm:num_requests_waiting", "sglang:num_queue_reqs"),
    "running": ("vllm:num_requests_running", "sglang:num_running_reqs"),
    "generation": ("vllm:generation_tokens_total", "vllm:generation_tokens", "sglang:generation_tokens_total"),
    "prompt": ("vllm:prompt_tokens_total", "vllm:prompt_tokens", "sglang:prompt_tokens_total"),
    "gpu_util": ("DCGM_FI_DEV_GPU_UTIL",),
}


def _parse(text: str, src: str) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    try:
        families = list(text_string_to_metric_families(text))
    except ValueError as e:
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip() and not line.startswith("#"):
                try:
                    list(text_string_to_metric_families(line + "\n"))
                except ValueError:
                    raise InputError(src, [f"line {number}: not Prometheus text format ({e}): {line[:120]!r}"]) from None
        raise InputError(src, [f"not Prometheus text format ({e})"]) from None
    values: dict[str, float] = {}
    for family in families:
        for sample in family.samples:
            if sample.name.endswith(("_created", "_bucket", "_sum", "_count")) and sample.name not in sum(METRICS.values(), ()):
                continue
            values[sample.name] = values.get(sample.name, 0.0) + float(sample.value)
    return values


def _pick(scrape: dict[str, float], role: str) -> float | None:
    for name in METRICS[role]:
        if name in scrape:
            return scrape[name]
    return None


def read_scrapes(paths: list[str | Path], interval_s: float = 15.0) -> Evidence:
    """The evidence in a series of scrapes.

    Raises
    ------
    InputError
        A missing or malformed file, fewer than two scrapes, or scrapes without vLLM or SGLang metrics.
    """
    scrapes = []
    for p in map(Path, paths):
        if not p.exists():
            raise InputError(str(p), ["file not found; expected a Prometheus text-format scrape (curl http://server/metrics)"])
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise InputError(str(p), ["not text; expected a Prometheus text-format scrape"]) from None
        s = _parse(text, str(p))
        if _pick(s, "cache") is None:
            found = ", ".join(sorted(s)[:8]) or "no metrics"
            raise InputError(str(p), [f"no vLLM or SGLang cache metric (found: {found}); expected one of "
                                      f"{', '.join(METRICS['cache'])} — is this the inference server's /metrics?"])
        scrapes.append(s)
    if len(scrapes) < 2:
        raise InputError(", ".join(map(str, paths)), ["one scrape; expected at least two, taken over time at peak (rates need two)"])
    seconds = interval_s * (len(scrapes) - 1)

    def series(role: str) -> list[float]:
        return [v for v in (_pick(s, role) for s in scrapes) if v is not None]

    cache = series("cache")
    gpu = series("gpu_util")
    gen, prompt = series("generation"), series("prompt")
    return Evidence(
        scrapes=len(scrapes), seconds=seconds, cache_p50=percentile(cache, 0.5), cache_p95=percentile(cache, 0.95),
        preemptions_per_s=rate(series("preemptions"), seconds), waiting_p50=percentile(series("waiting"), 0.5),
        waiting_max=max(series("waiting") or [0.0]), running_p50=percentile(series("running"), 0.5),
        generation_tok_s=rate(gen, seconds) if len(gen) > 1 else None, prompt_tok_s=rate(prompt, seconds) if len(prompt) > 1 else None,
        gpu_util_p50=percentile([g / 100.0 for g in gpu], 0.5) if gpu else None,
    )
