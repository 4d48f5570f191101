"""Helpers shared by tests."""

from xlplan.schema.plan import Plan


def replan(base: Plan, **sections) -> Plan:
    """A copy of ``base`` with sections updated field by field, re-validated."""
    data = base.model_dump(exclude_none=True)
    for section, fields in sections.items():
        if isinstance(fields, dict) and isinstance(data.get(section), dict):
            data[section] = {k: v for k, v in {**data[section], **fields}.items() if v is not None}
        else:
            data[section] = fields
    return Plan.model_validate(data)


def heavy_tail_plan(peak_rps: float = 15.0) -> Plan:
    """A new user's plan from the 2026-12-04 trials: mistral-7b on L40S bought in units of 4, prompts p50/p95/p99
    800/1,500/2,000 and outputs 150/1,200/4,000 tokens (a heavy tail), TTFT 1 s and 40 ms a token at p95; its Answer
    runs TP 2."""
    return Plan.model_validate({
        "forecast": {"peak_rps": peak_rps, "prompt_tokens": {"p50": 800, "p95": 1500, "p99": 2000},
                     "output_tokens": {"p50": 150, "p95": 1200, "p99": 4000}, "average_utilisation": 0.4},
        "promise": {"ttft_s": 1.0, "itl_s": 0.04, "percentile": 95},
        "model": {"name": "mistral-7b", "weights_dtype": "bf16", "kv_dtype": "bf16"},
        "hardware": {"gpu": "l40s", "gpus_per_node": 4, "usd_per_gpu_hour": 1.2}})
