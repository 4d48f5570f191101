"""Write the sample files in ``examples/``: request logs, benchmark results and Prometheus scrapes, each in its tool's format.

    .venv/bin/python examples/make_examples.py            # rewrite examples/ in place
    .venv/bin/python examples/make_examples.py --out DIR  # write them under DIR instead (tests/test_examples.py does)

Deterministic: every random figure comes from ``numpy.random.default_rng(SEED)`` streams and every date is fixed, so
running it again writes the same bytes (the Parquet file holds the same table; its footer names the pyarrow that
wrote it). Everything describes one deployment, the reference plan's (``xlplan example``): Llama-3.1-8B-Instruct in
bf16 served by vLLM, one H100 SXM per replica.

- ``logs/``: slices of one simulated peak hour at an API gateway, 14:00-15:00 UTC on Tuesday 24 November 2026. Requests
  arrive as a Poisson process whose rate rises from ``RATE_MIN_RPS`` at 14:00 to ``RATE_MAX_RPS`` at 14:30 and falls
  back (:func:`rate_rps`); prompts and outputs are log-normal (medians ``PROMPT_MEDIAN`` and ``OUTPUT_MEDIAN``), most
  requests share a system prompt the prefix cache holds. A whole hour at these rates is some 90,000 requests, so each
  file holds one slice (``SLICES``), short enough to stay well under 300 KB: the OpenAI usage records the start of the
  hour, the CSV and the Parquet file the three minutes from 14:29:15 (contiguous: read them together), the LiteLLM spend
  logs its last 30 s. ``openai-usage.jsonl.gz`` is ``openai-usage.jsonl`` compressed.
- ``bench/``: closed-loop benchmarks at 16, 64 and 128 concurrent requests of 2,000 prompt and 300 output tokens on one
  H100, by ``vllm bench serve --save-result``, GuideLLM (``--profile concurrent``) and genai-perf. Their figures are
  what xlplan's own serving model (:func:`xlplan.evidence.predict.steady_state`, what ``calibrate`` fits) predicts at :func:`true_efficiencies` (the
  engine's defaults moved by a few percent: what ``xlplan calibrate`` should find), with per-request scatter around
  those means and a 2% measurement noise per run; floats are rounded to four decimals (the tools write every digit;
  fewer keep the files short and the same from one machine to the next).
- ``scrapes/``: five ``curl -s http://vllm-llama-8b-3:8000/metrics`` of one production replica at the peak, 15 s apart:
  about 64 requests running and a few waiting while the KV cache is under half full (compute binds), counters and
  histograms growing by what the completed requests add.
- ``reference-plan.yaml``: the reference plan, exactly as ``xlplan example`` prints it (for ``--plan``).
- ``review/``: the month a review of the reference plan reads (``xlplan review``), January 2027, in which prompts grew:
  median ``REVIEW_PROMPT_MEDIAN`` instead of the plan's 2,000 (p95 about 3,500 where the plan says 2,000); the replica's
  time per output token at the peak is what the serving model predicts at 64 running and the benchmarks' efficiencies. Five minutes
  of the month's busiest hour at the gateway (``requests-2027-01.csv.gz``, 14:27:30-14:32:30 UTC on Tuesday 26 January;
  the peak rate and the lengths, not a month's volume: a whole month at 40 req/s is some 40 million rows), five scrapes
  of one replica at that peak drawn with the longer prompts, and a benchmark run that week (``bench/vllm-c64.json``).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import json
import math
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
SEED = 20261124
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
HOUR_START = datetime(2026, 11, 24, 14, 0, 0, tzinfo=timezone.utc)
"""The simulated peak hour starts here (a Tuesday). [UTC]"""
RATE_MIN_RPS, RATE_MAX_RPS = 10.0, 40.0
"""The arrival rate at 14:00 and 15:00, and at 14:30. [requests/s]"""
PROMPT_MEDIAN, PROMPT_SIGMA = 1800.0, 0.6
OUTPUT_MEDIAN, OUTPUT_SIGMA, MAX_TOKENS = 260.0, 0.65, 1024
SYSTEM_PROMPT_TOKENS, SYSTEM_PROMPT_SHARE, BLOCK = 544, 0.7, 16
"""The shared system prompt (34 blocks of 16 tokens) and the share of requests that start with it."""
SLICES = {"openai-usage": (0, 80), "requests-csv": (1755, 1830), "requests-parquet": (1830, 1950), "litellm": (3570, 3600)}
"""Each log's slice of the hour: [start, end) seconds after 14:00. [s]"""
USD_PER_TOKEN_IN, USD_PER_TOKEN_OUT = 0.25e-6, 0.75e-6
"""LiteLLM's configured price for the model (the reference plan's managed-API comparison). [USD/token]"""

CONCURRENCIES = (16, 64, 128)
ISL, OSL = 2000, 300
BENCH_DAY = datetime(2026, 11, 25, 10, 0, 0, tzinfo=timezone.utc)
SCRAPE_AT = datetime(2026, 11, 24, 14, 29, 30, tzinfo=timezone.utc)
SCRAPES, SCRAPE_INTERVAL_S = 5, 15.0
REPLICA_PEAK_RPS = 5.0
TPOT_S = 0.041
"""The replica's mean time per output token at the peak in November's scrapes. [s]"""
"""Requests one production replica completes a second at 14:30 (40 req/s over eight replicas). [requests/s]"""


# --------------------------------------------------------------------------- request logs

def rate_rps(t_s):
    """The gateway's arrival rate ``t_s`` seconds after 14:00: RATE_MIN at 14:00 and 15:00, RATE_MAX at 14:30. [requests/s]"""
    mid, half = (RATE_MAX_RPS + RATE_MIN_RPS) / 2, (RATE_MAX_RPS - RATE_MIN_RPS) / 2
    return mid - half * np.cos(2 * np.pi * np.asarray(t_s) / 3600.0)


def hour_of_requests(rng) -> pd.DataFrame:
    """The peak hour's requests: arrival offset [s], prompt, output and cached tokens, time to first token and latency [s]."""
    n = rng.poisson(RATE_MAX_RPS * 3600)
    t = np.sort(rng.uniform(0.0, 3600.0, n))
    t = t[rng.uniform(0.0, RATE_MAX_RPS, n) < rate_rps(t)]  # thinning: a Poisson process at rate_rps(t)
    n = t.size
    prompt = np.clip(np.round(rng.lognormal(math.log(PROMPT_MEDIAN), PROMPT_SIGMA, n)), 12, 30_000).astype(int)
    output = np.clip(np.round(rng.lognormal(math.log(OUTPUT_MEDIAN), OUTPUT_SIGMA, n)), 1, MAX_TOKENS).astype(int)
    shared = rng.uniform(size=n) < SYSTEM_PROMPT_SHARE
    turn = shared & (rng.uniform(size=n) < 0.3)  # a later turn of a conversation: its history is cached too
    cached = np.where(shared, SYSTEM_PROMPT_TOKENS, 0) + np.where(turn, rng.uniform(size=n) * (prompt - SYSTEM_PROMPT_TOKENS), 0)
    cached = (np.minimum(cached, prompt - 1) // BLOCK * BLOCK).clip(0).astype(int)  # whole blocks, never the last token
    ttft = rng.lognormal(math.log(0.22), 0.45, n) + prompt / 60_000
    latency = ttft + (output - 1) * rng.lognormal(math.log(0.030), 0.15, n)
    return pd.DataFrame({"t": t, "prompt": prompt, "output": output, "cached": cached, "ttft": ttft, "latency": latency})


def _slice(hour: pd.DataFrame, name: str) -> pd.DataFrame:
    a, b = SLICES[name]
    return hour[(hour.t >= a) & (hour.t < b)].reset_index(drop=True)


def _hex(rng, n: int, chars: int) -> list[str]:
    return [rng.bytes(chars // 2).hex() for _ in range(n)]


def _iso(t_s: float, digits: int = 3, zone: str = "Z") -> str:
    """HOUR_START + t_s as ISO 8601 text, with ``digits`` decimals of seconds. [text]"""
    text = (HOUR_START + timedelta(seconds=float(t_s))).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return text[: len(text) - 6 + digits] + zone


def openai_usage_lines(rng, rows: pd.DataFrame) -> str:
    """OpenAI chat-completion usage records, one JSON object a line, as a gateway keeps them (the response less its text)."""
    t0 = int(HOUR_START.timestamp())
    ids = _hex(rng, len(rows), 32)
    lines = []
    for r, rid in zip(rows.itertuples(), ids):
        lines.append(json.dumps({
            "id": f"chatcmpl-{rid}", "object": "chat.completion", "created": t0 + int(r.t), "model": MODEL,
            "usage": {"prompt_tokens": int(r.prompt), "total_tokens": int(r.prompt + r.output),
                      "completion_tokens": int(r.output), "prompt_tokens_details": {"cached_tokens": int(r.cached)}},
        }))
    return "\n".join(lines) + "\n"


def litellm_spend_logs(rng, rows: pd.DataFrame) -> str:
    """LiteLLM's spend logs (``GET /spend/logs``, the LiteLLM_SpendLogs table) as one JSON array."""
    key = hashlib.sha256(b"sk-examples-chat-frontend").hexdigest()
    ids = _hex(rng, len(rows), 32)
    records = []
    for r, rid in zip(rows.itertuples(), ids):
        spend = r.prompt * USD_PER_TOKEN_IN + r.output * USD_PER_TOKEN_OUT
        records.append({
            "request_id": f"chatcmpl-{rid}", "call_type": "acompletion", "api_key": key, "spend": round(float(spend), 9),
            "total_tokens": int(r.prompt + r.output), "prompt_tokens": int(r.prompt), "completion_tokens": int(r.output),
            "startTime": _iso(r.t, 6, "+00:00"), "endTime": _iso(r.t + r.latency, 6, "+00:00"),
            "completionStartTime": _iso(r.t + r.ttft, 6, "+00:00"), "model": MODEL,
            "model_id": "b1f4a0c2d7e9", "model_group": "llama-3.1-8b", "custom_llm_provider": "hosted_vllm",
            "api_base": "http://vllm-llama-8b:8000/v1", "user": "", "cache_hit": "False", "cache_key": "Cache OFF",
            "request_tags": [], "team_id": "team-assistant", "end_user": "", "requester_ip_address": "",
            "status": "success",
            "metadata": {"user_api_key_alias": "chat-frontend", "user_api_key_team_alias": "assistant",
                         "additional_usage_values": {"prompt_tokens_details": {"cached_tokens": int(r.cached)}}},
        })
    return json.dumps(records, separators=(",", ":")) + "\n"


def requests_csv(rng, rows: pd.DataFrame) -> str:
    """A gateway's request table exported as CSV: ISO 8601 time, id, token counts, HTTP status."""
    ids = _hex(rng, len(rows), 12)
    out = ["timestamp,request_id,model,prompt_tokens,completion_tokens,cached_tokens,status"]
    out += [f"{_iso(r.t)},req_{rid},llama-3.1-8b,{r.prompt},{r.output},{r.cached},200" for r, rid in zip(rows.itertuples(), ids)]
    return "\n".join(out) + "\n"


def requests_frame(rng, rows: pd.DataFrame) -> pd.DataFrame:
    """The same table from a data warehouse, as Parquet: a real timestamp type and input/output token names."""
    t = pd.to_datetime([HOUR_START + timedelta(seconds=float(x)) for x in rows.t]).astype("datetime64[ms, UTC]")
    return pd.DataFrame({"created_at": t, "request_id": [f"req_{h}" for h in _hex(rng, len(rows), 12)],
                         "model": "llama-3.1-8b", "input_tokens": rows.prompt.astype("int32"),
                         "output_tokens": rows.output.astype("int32"), "cached_tokens": rows.cached.astype("int32")})


# --------------------------------------------------------------------------- benchmark results

def true_efficiencies():
    """The efficiencies the benchmarked replica runs at: vLLM's defaults for an H100, moved by a few percent."""
    from xlplan.evidence.bench_conditions import Efficiencies, conditions_of_plan
    from xlplan.io.planfile import reference_plan

    d = Efficiencies().resolved("vllm", conditions_of_plan(reference_plan(), 1).gpu.name)
    return Efficiencies(prefill_mfu=d.prefill_mfu * 0.92, decode_mfu=d.decode_mfu * 0.95,
                        bandwidth_efficiency=d.bandwidth_efficiency * 0.97, step_overhead_s=d.step_overhead_s * 1.15,
                        expert_efficiency=d.expert_efficiency)


def predicted_run(concurrency: int) -> dict[str, float]:
    """xlplan's prediction at TRUE: mean TTFT [s], inter-token latency [s] and output tokens/s at a concurrency."""
    from xlplan.evidence.bench_conditions import conditions_of_plan, replace_concurrency
    from xlplan.evidence.predict import steady_state
    from xlplan.io.planfile import reference_plan

    c = replace(replace_concurrency(conditions_of_plan(reference_plan(), 1), concurrency), isl=ISL, osl=OSL)
    on = steady_state(c, true_efficiencies())
    return {"ttft": on.ttft_s, "itl": on.itl_s, "tok_s": on.output_tok_s}


def _scaled(x, mean: float):
    """Samples rescaled to a given mean. [unit of mean]"""
    return x * (mean / x.mean())


def per_request(rng, concurrency: int, n: int, noise: float = 0.02) -> dict:
    """Per-request figures of one closed-loop run: TTFT and TPOT [s] per request, ITL [s] per token, end-to-end [s]."""
    p = predicted_run(concurrency)
    ttft_mean = p["ttft"] * (1 + rng.normal(0, noise))
    itl_mean = p["itl"] * (1 + rng.normal(0, noise))
    ttft = _scaled(rng.lognormal(0, 0.35, n), ttft_mean)
    tpot = _scaled(rng.lognormal(0, 0.06, n), itl_mean)
    spike = rng.uniform(size=(n, OSL - 1)) < 0.12  # steps that carry a prefill chunk run longer
    gaps = np.where(spike, 1.75, (1 - 0.12 * 1.75) / 0.88) * rng.lognormal(0, 0.04, (n, OSL - 1))
    itl = (gaps / gaps.mean(axis=1, keepdims=True)) * tpot[:, None]
    e2e = ttft + (OSL - 1) * tpot
    return {"ttft": ttft, "tpot": tpot, "itl": itl.ravel(), "e2e": e2e}


def _stats_ms(name: str, x) -> dict:
    ms = np.asarray(x) * 1e3
    return {f"mean_{name}_ms": float(ms.mean()), f"median_{name}_ms": float(np.median(ms)), f"std_{name}_ms": float(ms.std()),
            f"p99_{name}_ms": float(np.percentile(ms, 99))}


def vllm_result(rng, concurrency: int, minute: int) -> dict:
    """``vllm bench serve --backend vllm --dataset-name random --random-input-len 2000 --random-output-len 300
    --ignore-eos --max-concurrency C --num-prompts 10C --percentile-metrics ttft,tpot,itl,e2el --save-result``."""
    n = 10 * concurrency
    r = per_request(rng, concurrency, n)
    duration = n / concurrency * r["e2e"].mean() * 1.015  # the last wave drains part-empty
    tok_in, tok_out = n * ISL, n * OSL
    out = {"date": (BENCH_DAY + timedelta(minutes=minute)).strftime("%Y%m%d-%H%M%S"), "endpoint_type": "vllm",
           "backend": "vllm", "label": None, "model_id": MODEL, "tokenizer_id": MODEL, "num_prompts": n,
           "request_rate": "inf", "burstiness": 1.0, "max_concurrency": concurrency, "duration": duration, "completed": n,
           "failed": 0, "total_input_tokens": tok_in, "total_output_tokens": tok_out, "request_throughput": n / duration,
           "request_goodput": None, "output_throughput": tok_out / duration,
           "total_token_throughput": (tok_in + tok_out) / duration,
           "max_output_tokens_per_s": float(round(concurrency / r["itl"].mean() * 1.08)), "max_concurrent_requests": concurrency}
    for name, x in (("ttft", r["ttft"]), ("tpot", r["tpot"]), ("itl", r["itl"]), ("e2el", r["e2e"])):
        out |= _stats_ms(name, x)
    return out


def _summary(values, weights=None) -> dict:
    """GuideLLM's DistributionSummary of values (weighted as GuideLLM weighs them)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        zero = {k: 0.0 for k in ("p001", "p01", "p05", "p10", "p25", "p75", "p90", "p95", "p99", "p999")}
        return {"mean": 0.0, "median": 0.0, "mode": 0.0, "variance": 0.0, "std_dev": 0.0, "min": 0.0, "max": 0.0, "count": 0,
                "total_sum": 0.0, "percentiles": zero, "cumulative_distribution_function": None}
    w = np.ones_like(v) if weights is None else np.asarray(weights, dtype=float)
    order = np.argsort(v, kind="stable")
    v, w = v[order], w[order] / w.sum()
    cdf = np.cumsum(w)
    mean = float((v * w).sum())

    def at(q):
        return float(v[np.argmax(cdf >= q)])

    var = float(((v - mean) ** 2 * w).sum())
    return {"mean": mean, "median": at(0.5), "mode": float(v[np.argmax(w)]), "variance": var, "std_dev": math.sqrt(var),
            "min": float(v[0]), "max": float(v[-1]), "count": int(v.size), "total_sum": float(v.sum()),
            "percentiles": {k: at(q) for k, q in (("p001", 0.001), ("p01", 0.01), ("p05", 0.05), ("p10", 0.1), ("p25", 0.25),
                                                  ("p75", 0.75), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999))},
            "cumulative_distribution_function": None}


def _status(successful, incomplete, weights_s=None, weights_i=None) -> dict:
    both = np.concatenate([successful, incomplete])
    wb = None if weights_s is None else np.concatenate([weights_s, weights_i])
    return {"successful": _summary(successful, weights_s), "errored": _summary([]), "incomplete": _summary(incomplete, weights_i),
            "total": _summary(both, wb)}


def guidellm_benchmark(rng, index: int, concurrency: int, start: float, run_id: str) -> dict:
    """One ``--profile concurrent`` benchmark of GuideLLM 0.3 (``args.strategy``), run for ``--max-seconds 180``."""
    p = predicted_run(concurrency)
    cycle = p["ttft"] + OSL * p["itl"]
    n = int(180 / cycle * concurrency)
    r = per_request(rng, concurrency, n)
    prompt = np.full(n, float(ISL))
    output = np.full(n, float(OSL))
    latency = r["ttft"] + (OSL - 1) * r["tpot"]
    # the requests still in flight at the 180 s cut: cancelled part-way through their outputs
    inc_out = np.floor(rng.uniform(1, OSL, concurrency))
    inc_ttft = _scaled(rng.lognormal(0, 0.35, concurrency), r["ttft"].mean())
    inc_itl = rng.choice(r["tpot"], concurrency)
    inc_lat = inc_ttft + (inc_out - 1) * inc_itl
    duration = n / concurrency * latency.mean()
    tok_s = n * OSL / duration
    rps = n / duration

    def rate(mean, spread):  # a time-weighted rate distribution (GuideLLM's requests/tokens per second)
        x = _scaled(rng.lognormal(0, spread, 400), mean)
        return {"successful": _summary(x), "errored": _summary([]), "incomplete": _summary([]), "total": _summary(x)}

    metrics = {
        "requests_per_second": rate(rps, 0.25),
        "request_concurrency": rate(concurrency * 0.985, 0.02),
        "request_latency": _status(latency, inc_lat),
        "prompt_token_count": _status(prompt, np.full(concurrency, float(ISL))),
        "output_token_count": _status(output, inc_out),
        "time_to_first_token_ms": _status(r["ttft"] * 1e3, inc_ttft * 1e3),
        "time_per_output_token_ms": _status(latency / OSL * 1e3, inc_lat / inc_out * 1e3, output, inc_out),
        "inter_token_latency_ms": _status(r["tpot"] * 1e3, inc_itl * 1e3, output - 1, np.maximum(inc_out - 1, 1)),
        "output_tokens_per_second": rate(tok_s, 0.08),
        "tokens_per_second": rate(tok_s * (ISL + OSL) / OSL, 0.12),
    }
    end = start + duration + 0.4
    n_total = n + concurrency
    return {
        "type_": "generative_benchmark", "id_": _uuid(rng), "run_id": run_id,
        "args": {"profile": {"type_": "concurrent", "completed_strategies": len(CONCURRENCIES), "measured_rates": [],
                             "measured_concurrencies": [], "streams": list(CONCURRENCIES)},
                 "strategy_index": index, "strategy": {"type_": "concurrent", "streams": concurrency},
                 "max_number": None, "max_duration": 180.0, "warmup_number": None, "warmup_duration": None,
                 "cooldown_number": None, "cooldown_duration": None},
        "run_stats": {"start_time": start, "end_time": end,
                      "requests_made": {"successful": n, "errored": 0, "incomplete": concurrency, "total": n_total},
                      "queued_time_avg": 0.0021, "scheduled_time_delay_avg": 0.0004, "scheduled_time_sleep_avg": 0.0,
                      "worker_start_delay_avg": 0.0009, "worker_time_avg": float(latency.mean()),
                      "worker_start_time_targeted_delay_avg": float(latency.mean()),
                      "request_start_time_delay_avg": 0.0012, "request_start_time_targeted_delay_avg": float(latency.mean()),
                      "request_time_delay_avg": 0.0018, "request_time_avg": float(latency.mean())},
        "worker": {"type_": "generative_requests_worker", "backend_type": "openai_http",
                   "backend_target": "http://10.0.3.21:8000", "backend_model": MODEL,
                   "backend_info": {"max_output_tokens": 16384, "timeout": 300.0, "http2": True, "authorization": False,
                                    "organization": None, "project": None, "text_completions_path": "/v1/completions",
                                    "chat_completions_path": "/v1/chat/completions"}},
        "request_loader": {"type_": "generative_request_loader", "data": json.dumps({"prompt_tokens": ISL, "output_tokens": OSL},
                                                                                     separators=(",", ":")),
                           "data_args": None, "processor": MODEL, "processor_args": None},
        "extras": {},
        "metrics": metrics,
        "start_time": start + 0.05, "end_time": end - 0.02,
        "request_totals": {"successful": n, "errored": 0, "incomplete": concurrency, "total": n_total},
        "request_samples": {"successful": 0, "errored": 0, "incomplete": 0, "total": None},
        "requests": {"successful": [], "errored": [], "incomplete": [], "total": None},
        "duration": duration + 0.33,
    }


def _uuid(rng) -> str:
    h = rng.bytes(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def guidellm_report(rng) -> dict:
    """``guidellm benchmark --target http://10.0.3.21:8000 --profile concurrent --rate 16,64,128 --max-seconds 180
    --data prompt_tokens=2000,output_tokens=300 --output-sampling 0 --output-path benchmarks.json``."""
    run_id = _uuid(rng)
    start = (BENCH_DAY + timedelta(hours=1)).timestamp()
    benchmarks = []
    for k, c in enumerate(CONCURRENCIES):
        b = guidellm_benchmark(rng, k, c, start, run_id)
        benchmarks.append(b)
        start = b["run_stats"]["end_time"] + 1.7
    return {"benchmarks": benchmarks}


def _gp_stats(unit: str, x) -> dict:
    x = np.asarray(x, dtype=float)
    out = {"unit": unit, "avg": float(x.mean())}
    out |= {f"p{q}": float(np.percentile(x, q)) for q in (1, 5, 10, 25, 50, 75, 90, 95, 99)}
    return out | {"min": float(x.min()), "max": float(x.max()), "std": float(x.std())}


def genai_perf_export(rng, concurrency: int) -> dict:
    """``genai-perf profile -m meta-llama/Llama-3.1-8B-Instruct --endpoint-type chat --streaming -u 10.0.3.21:8000
    --synthetic-input-tokens-mean 2000 --output-tokens-mean 300 --extra-inputs ignore_eos:true --concurrency C
    --measurement-interval 10000``: its profile_export_genai_perf.json."""
    n = 3 * concurrency * 4  # three stable 10 s measurement windows
    r = per_request(rng, concurrency, n)
    isl = ISL + np.round(rng.normal(0, 0.6, n))  # the chat template and re-tokenisation move a token or two
    osl = OSL - (rng.uniform(size=n) < 0.03).astype(float)  # re-tokenised text now and then one token short
    latency = r["ttft"] + (osl - 1) * r["tpot"]
    duration = n / concurrency * latency.mean()
    name = MODEL.replace("/", "_")
    artifacts = f"artifacts/{name}-openai-chat-concurrency{concurrency}"
    return {
        "request_throughput": {"unit": "requests/sec", "avg": n / duration},
        "request_latency": _gp_stats("ms", latency * 1e3),
        "time_to_first_token": _gp_stats("ms", r["ttft"] * 1e3),
        "time_to_second_token": _gp_stats("ms", r["tpot"] * 1e3 * rng.lognormal(0, 0.1, n)),
        "inter_token_latency": _gp_stats("ms", r["tpot"] * 1e3),
        "output_token_throughput": {"unit": "tokens/sec", "avg": float(osl.sum() / duration)},
        "output_token_throughput_per_user": _gp_stats("tokens/sec/user", 1.0 / r["tpot"]),
        "output_sequence_length": _gp_stats("tokens", osl),
        "input_sequence_length": _gp_stats("tokens", isl),
        "request_count": {"unit": "count", "avg": float(n)},
        "input_config": {
            "subcommand": "profile", "model": [MODEL], "model_selection_strategy": "round_robin", "backend": "tensorrtllm",
            "endpoint": None, "endpoint_type": "chat", "service_kind": "openai", "server_metrics_url": None, "streaming": True,
            "u": "10.0.3.21:8000", "batch_size_image": 1, "batch_size_text": 1, "goodput": None, "num_dataset_entries": 100,
            "output_tokens_mean": OSL, "output_tokens_mean_deterministic": False, "output_tokens_stddev": 0, "random_seed": 0,
            "request_count": 0, "synthetic_input_tokens_mean": ISL, "synthetic_input_tokens_stddev": 0,
            "warmup_request_count": 0, "image_width_mean": 100, "image_width_stddev": 0, "image_height_mean": 100,
            "image_height_stddev": 0, "image_format": None, "concurrency": concurrency, "measurement_interval": 10000,
            "request_rate": None, "stability_percentage": 999, "artifact_dir": artifacts, "generate_plots": False,
            "profile_export_file": f"{artifacts}/profile_export.json", "tokenizer": MODEL, "tokenizer_revision": "main",
            "tokenizer_trust_remote_code": False, "verbose": False, "synthetic_input_files": None, "prompt_source": "synthetic",
            "formatted_model_name": name, "extra_inputs": {"ignore_eos": True},
        },
    }


def _round_floats(x, digits: int = 4):
    """Every float in a JSON-like value rounded to ``digits`` decimals (short files, the same bytes on every machine)."""
    if isinstance(x, float):
        return round(x, digits)
    if isinstance(x, dict):
        return {k: _round_floats(v, digits) for k, v in x.items()}
    if isinstance(x, list):
        return [_round_floats(v, digits) for v in x]
    return x


# --------------------------------------------------------------------------- Prometheus scrapes

LABELS = {"engine": "0", "model_name": MODEL}
BUCKETS_1_2_5 = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000)
BUCKETS_TTFT = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
                160.0, 640.0, 2560.0)
BUCKETS_TPOT = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0)
BUCKETS_LATENCY = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
                   960.0, 1920.0, 7680.0)
BUCKETS_STEP = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)


def go_float(v: float) -> str:
    """A value as Prometheus' text format writes it (prometheus_client's floatToGoString). [text]"""
    v = float(v)
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    s = repr(v)
    dot = s.find(".")
    if v > 0 and dot > 6:
        mantissa = f"{s[0]}.{s[1:dot]}{s[dot + 1:]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
    return s


class Exposition:
    """Prometheus text format as a Python client (prometheus_client) writes it: HELP and TYPE per family, labels in
    name order, counters with ``_total``, each family's ``_created`` samples in a gauge family after it."""

    def __init__(self):
        self.lines: list[str] = []

    def _sample(self, name: str, labels: dict, value: float) -> str:
        body = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        return f"{name}{{{body}}} {go_float(value)}" if body else f"{name} {go_float(value)}"

    def family(self, name: str, kind: str, doc: str, samples: list[tuple[str, dict, float]], created: list | None = None):
        shown = name + "_total" if kind == "counter" else name
        self.lines += [f"# HELP {shown} {doc}", f"# TYPE {shown} {kind}"]
        self.lines += [self._sample(n, lab, v) for n, lab, v in samples]
        if created:
            self.lines += [f"# HELP {name}_created {doc}", f"# TYPE {name}_created gauge"]
            self.lines += [self._sample(f"{name}_created", lab, v) for lab, v in created]

    def gauge(self, name: str, doc: str, value: float, labels: dict = LABELS):
        self.family(name, "gauge", doc, [(name, labels, value)])

    def counter(self, name: str, doc: str, values: list[tuple[dict, float]], created_s: float):
        self.family(name, "counter", doc, [(name + "_total", lab, v) for lab, v in values], [(lab, created_s) for lab, _ in values])

    def histogram(self, name: str, doc: str, buckets, values, created_s: float, weights=None):
        v = np.asarray(values, dtype=float)
        w = np.ones_like(v) if weights is None else np.asarray(weights, dtype=float)
        order = np.argsort(v, kind="stable")  # one sort, then each bucket's cumulative weight (integer weights: exact)
        cumulative = np.concatenate([[0.0], np.cumsum(w[order])])
        below = cumulative[np.searchsorted(v[order], np.asarray(buckets, dtype=float), side="right")]
        samples = [(name + "_bucket", LABELS | {"le": go_float(b)}, float(c)) for b, c in zip(buckets, below)]
        samples += [(name + "_bucket", LABELS | {"le": "+Inf"}, float(w.sum())), (name + "_count", LABELS, float(w.sum())),
                    (name + "_sum", LABELS, round(float((v * w).sum()), 6))]
        self.family(name, "histogram", doc, samples, [(LABELS, created_s)])

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def server_day(rng, start_s: float, end_s: float) -> pd.DataFrame:
    """Every request one production replica completed from its start to ``end_s``: finish time [Unix s] and its figures.

    The replica takes its share of the gateway's traffic, ``REPLICA_PEAK_RPS`` at 14:30 (one of the eight GPUs the
    calibrated plan buys for 40 req/s; about 64 requests running, as in the c64 benchmarks), lighter in the morning;
    lengths and cache hits as in the logs, latencies at about 64 running.
    """
    n = rng.poisson(REPLICA_PEAK_RPS / 1.6 * (end_s - start_s))
    finish = np.sort(start_s + (end_s - start_s) * rng.beta(1.6, 1.0, n))  # density 1.6 x^0.6: REPLICA_PEAK_RPS at the end
    prompt = np.clip(np.round(rng.lognormal(math.log(PROMPT_MEDIAN), PROMPT_SIGMA, n)), 12, 30_000)
    output = np.clip(np.round(rng.lognormal(math.log(OUTPUT_MEDIAN), OUTPUT_SIGMA, n)), 1, MAX_TOKENS)
    shared = rng.uniform(size=n) < SYSTEM_PROMPT_SHARE
    cached = np.minimum(np.where(shared, SYSTEM_PROMPT_TOKENS, 0), (prompt - 1) // BLOCK * BLOCK)
    queue = np.where(rng.uniform(size=n) < 0.6, rng.exponential(0.35, n), rng.exponential(0.01, n))
    prefill = (prompt - cached) / 11_000 * rng.lognormal(0, 0.3, n) + 0.02
    tpot = TPOT_S * rng.lognormal(0, 0.08, n)
    decode = (output - 1) * tpot
    return pd.DataFrame({"finish": finish, "prompt": prompt, "output": output, "cached": cached, "queue": queue,
                         "prefill": prefill, "tpot": tpot, "decode": decode, "ttft": queue + prefill,
                         "e2e": queue + prefill + decode + 0.004, "length": output >= MAX_TOKENS})


def scrape(day: pd.DataFrame, at_s: float, start_s: float, gauges: dict) -> str:
    """One /metrics page at ``at_s``: what the replica had completed by then, and the gauges then."""
    done = day[day.finish <= at_s]
    up = at_s - start_s
    e = Exposition()
    e.family("python_gc_objects_collected", "counter", "Objects collected during gc",
             [("python_gc_objects_collected_total", {"generation": g}, float(int(v)))
              for g, v in (("0", 18_204 + up * 0.9), ("1", 9_631 + up * 0.21), ("2", 1_204 + up * 0.01))])
    e.family("python_gc_objects_uncollectable", "counter", "Uncollectable objects found during GC",
             [("python_gc_objects_uncollectable_total", {"generation": g}, 0.0) for g in "012"])
    e.family("python_gc_collections", "counter", "Number of times this generation was collected",
             [("python_gc_collections_total", {"generation": g}, float(int(v)))
              for g, v in (("0", 2_611 + up * 0.11), ("1", 237 + up * 0.01), ("2", 14 + up * 0.0004))])
    e.family("python_info", "gauge", "Python platform information",
             [("python_info", {"implementation": "CPython", "major": "3", "minor": "12", "patchlevel": "11",
                               "version": "3.12.11"}, 1.0)])
    e.family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
             [("process_virtual_memory_bytes", {}, 1.1723816960e11)])
    e.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
             [("process_resident_memory_bytes", {}, float(4_285_640_704 + 4096 * int(up / 60)))])
    e.family("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
             [("process_start_time_seconds", {}, start_s - 42.37)])
    e.family("process_cpu_seconds", "counter", "Total user and system CPU time spent in seconds.",
             [("process_cpu_seconds_total", {}, round(up * 0.93, 2))])
    e.family("process_open_fds", "gauge", "Number of open file descriptors.", [("process_open_fds", {}, gauges["fds"])])
    e.family("process_max_fds", "gauge", "Maximum number of open file descriptors.", [("process_max_fds", {}, 1_048_576.0)])
    e.family("http_requests", "counter", "Total number of requests by method, status and handler.",
             [("http_requests_total", {"handler": h, "method": m, "status": "2xx"}, v)
              for h, m, v in (("/health", "GET", float(int(up / 10))), ("/metrics", "GET", float(int(up / 15))),
                              ("/v1/chat/completions", "POST", float(len(done))))],
             [({"handler": h, "method": m, "status": "2xx"}, start_s + 31.5)
              for h, m in (("/health", "GET"), ("/metrics", "GET"), ("/v1/chat/completions", "POST"))])
    e.gauge("vllm:num_requests_running", "Number of requests in model execution batches.", gauges["running"])
    e.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", gauges["waiting"])
    e.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", gauges["kv"])
    created = start_s + 29.8
    in_flight_prompt = gauges["running"] * PROMPT_MEDIAN * 1.2  # prompts admitted, not yet finished
    queried = float(done.prompt.sum() + in_flight_prompt)
    e.counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", [(LABELS, queried)],
              created)
    e.counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
              [(LABELS, float(done.cached.sum() + in_flight_prompt * 0.21))], created)
    e.counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", [(LABELS, 3.0)], created)
    e.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", [(LABELS, queried)], created)
    e.counter("vllm:generation_tokens", "Number of generation tokens processed.",
              [(LABELS, float(done.output.sum() + gauges["running"] * OUTPUT_MEDIAN * 0.5))], created)
    steps = float(done.output.sum()) / 48  # a step decodes the batch; about one in four also carries a prefill chunk
    e.histogram("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", BUCKETS_STEP,
                [1.0, 12.0, 40.0, 63.0, 700.0, 2048.0], created,
                np.round(steps * np.array([0.004, 0.03, 0.19, 0.52, 0.16, 0.096])))
    e.counter("vllm:request_success", "Count of successfully processed requests.",
              [(LABELS | {"finished_reason": "abort"}, 0.0),
               (LABELS | {"finished_reason": "length"}, float(done.length.sum())),
               (LABELS | {"finished_reason": "stop"}, float((~done.length).sum()))], created)
    e.histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", BUCKETS_1_2_5, done.prompt, created)
    e.histogram("vllm:request_generation_tokens", "Number of generation tokens processed.", BUCKETS_1_2_5, done.output, created)
    e.histogram("vllm:request_max_num_generation_tokens", "Histogram of maximum number of requested generation tokens.",
                BUCKETS_1_2_5, np.full(len(done), float(MAX_TOKENS)), created)
    e.histogram("vllm:request_params_n", "Histogram of the n request parameter.", (1, 2, 5, 10, 20), np.ones(len(done)), created)
    e.histogram("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", BUCKETS_1_2_5,
                np.full(len(done), float(MAX_TOKENS)), created)
    e.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", BUCKETS_TTFT, done.ttft,
                created)
    e.histogram("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", BUCKETS_TPOT,
                done.tpot, created, done.output - 1)
    e.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", BUCKETS_LATENCY, done.e2e,
                created)
    for phase, doc, col in (("queue", "Histogram of time spent in WAITING phase for request.", done.queue),
                            ("inference", "Histogram of time spent in RUNNING phase for request.", done.prefill + done.decode),
                            ("prefill", "Histogram of time spent in PREFILL phase for request.", done.prefill),
                            ("decode", "Histogram of time spent in DECODE phase for request.", done.decode)):
        e.histogram(f"vllm:request_{phase}_time_seconds", doc, BUCKETS_LATENCY, col, created)
    e.family("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig",
             [("vllm:cache_config_info", {"block_size": str(BLOCK), "cache_dtype": "auto", "calculate_kv_scales": "False",
                                          "cpu_offload_gb": "0", "enable_prefix_caching": "True", "engine": "0",
                                          "gpu_memory_utilization": "0.9", "is_attention_free": "False",
                                          "num_cpu_blocks": "None", "num_gpu_blocks": str(gauges["blocks"]),
                                          "num_gpu_blocks_override": "None", "prefix_caching_hash_algo": "sha256",
                                          "sliding_window": "None", "swap_space": "4", "swap_space_bytes": "4294967296"},
               1.0)])
    return e.text()


def scrapes(rng) -> list[str]:
    """Five scrapes of one replica at the peak, 15 s apart: about 64 running, 1-6 waiting, the cache 33-42% full."""
    from xlplan.evidence.bench_conditions import conditions_of_plan
    from xlplan.evidence.predict import replica_for
    from xlplan.io.planfile import reference_plan

    kv_tokens = replica_for(conditions_of_plan(reference_plan(), 1), true_efficiencies()).kv_tokens
    start_s = SCRAPE_AT.replace(hour=6, minute=2, second=11).timestamp()  # the replica started at 06:02:11 that day
    first = SCRAPE_AT.timestamp()
    day = server_day(rng, start_s, first + SCRAPE_INTERVAL_S * SCRAPES)
    out = []
    for i in range(SCRAPES):
        running = float(rng.integers(61, 66))
        context = running * (PROMPT_MEDIAN * 1.2 + OUTPUT_MEDIAN * 0.6) * rng.lognormal(0, 0.06)
        gauges = {"running": running, "waiting": float(rng.integers(1, 7)), "kv": round(context / kv_tokens, 4),
                  "blocks": int(kv_tokens // BLOCK), "fds": float(rng.integers(180, 215))}
        out.append(scrape(day, first + SCRAPE_INTERVAL_S * i, start_s, gauges))
    return out


# --------------------------------------------------------------------------- the month a review reads

REVIEW_PROMPT_MEDIAN, REVIEW_PROMPT_SIGMA = 2300.0, 0.25
"""January's prompts: longer than the plan's 2,000 and less spread than November's logs (p95 2,300 x e^(1.645 x 0.25) =
3,470 tokens). [tokens]"""
REVIEW_OUTPUT_SIGMA = 0.1
"""January's outputs: the plan's 300-token median, tightly spread (p95 300 x e^(1.645 x 0.1) = 354). [1]"""
REVIEW_SLICE = (1650, 1950)
"""The review log's five minutes around the busiest hour's peak (14:30): [start, end) seconds after 14:00. [s]"""


@contextlib.contextmanager
def _january():
    """The generator's figures moved to January 2027 and its longer prompts, for as long as the block runs."""
    g = globals()
    moved = {"HOUR_START": datetime(2027, 1, 26, 14, 0, 0, tzinfo=timezone.utc),
             "SCRAPE_AT": datetime(2027, 1, 26, 14, 29, 30, tzinfo=timezone.utc),
             "BENCH_DAY": datetime(2027, 1, 27, 10, 0, 0, tzinfo=timezone.utc),
             "PROMPT_MEDIAN": REVIEW_PROMPT_MEDIAN, "PROMPT_SIGMA": REVIEW_PROMPT_SIGMA, "OUTPUT_SIGMA": REVIEW_OUTPUT_SIGMA,
             "TPOT_S": predicted_run(64)["itl"]}
    kept = {k: g[k] for k in moved}
    g.update(moved)
    try:
        yield
    finally:
        g.update(kept)


def review_month(rng_seed: int) -> dict[str, bytes]:
    """The review's sample month: relative path -> bytes (the log gzipped)."""
    logs, ids, bench, prom = (np.random.default_rng(s) for s in np.random.SeedSequence(rng_seed + 1).spawn(4))
    with _january():
        hour = hour_of_requests(logs)
        rows = hour[(hour.t >= REVIEW_SLICE[0]) & (hour.t < REVIEW_SLICE[1])].reset_index(drop=True)
        out = {"review/requests-2027-01.csv.gz": gzip.compress(requests_csv(ids, rows).encode(), compresslevel=9, mtime=0),
               "review/bench/vllm-c64.json": (json.dumps(_round_floats(vllm_result(bench, 64, 0)), indent=4) + "\n").encode()}
        for i, text in enumerate(scrapes(prom), start=1):
            out[f"review/scrapes/vllm-{i:02d}.prom"] = text.encode()
    return out


# --------------------------------------------------------------------------- writing

def files(rng_seed: int = SEED) -> dict[str, bytes | pd.DataFrame]:
    """Every sample file: relative path -> its bytes (a Parquet file as its data frame)."""
    from xlplan.io.planfile import reference_plan_text

    streams = np.random.SeedSequence(rng_seed).spawn(6)
    logs, ids, bench_v, bench_g, bench_n, prom = (np.random.default_rng(s) for s in streams)
    hour = hour_of_requests(logs)
    jsonl = openai_usage_lines(ids, _slice(hour, "openai-usage")).encode()
    out: dict[str, bytes | pd.DataFrame] = {
        "reference-plan.yaml": reference_plan_text().encode(),
        "logs/openai-usage.jsonl": jsonl,
        "logs/openai-usage.jsonl.gz": gzip.compress(jsonl, compresslevel=9, mtime=0),
        "logs/litellm-spend-logs.json": litellm_spend_logs(ids, _slice(hour, "litellm")).encode(),
        "logs/requests.csv": requests_csv(ids, _slice(hour, "requests-csv")).encode(),
        "logs/requests.parquet": requests_frame(ids, _slice(hour, "requests-parquet")),
    }
    for k, c in enumerate(CONCURRENCIES):
        out[f"bench/vllm-c{c}.json"] = (json.dumps(_round_floats(vllm_result(bench_v, c, 12 * k)), indent=4) + "\n").encode()
    out["bench/guidellm-benchmarks.json"] = (json.dumps(_round_floats(guidellm_report(bench_g)), indent=2) + "\n").encode()
    out["bench/genai-perf-c64/profile_export_genai_perf.json"] = (
        json.dumps(_round_floats(genai_perf_export(bench_n, 64)), indent=2) + "\n").encode()
    for i, text in enumerate(scrapes(prom), start=1):
        out[f"scrapes/vllm-{i:02d}.prom"] = text.encode()
    return out | review_month(rng_seed)


def write(folder: Path) -> list[Path]:
    """Write every sample file under ``folder``; the paths written."""
    written = []
    for rel, content in files().items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, pd.DataFrame):
            content.to_parquet(path, index=False, compression="zstd")
        else:
            path.write_bytes(content)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write into (default: examples/, beside this script)")
    args = parser.parse_args(argv)
    for path in write(args.out):
        print(f"{path.stat().st_size:>9,} bytes  {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
