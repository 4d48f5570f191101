"""The plans every surface is held to: six on the engine's default conventions, and the reference.

Each is the reference plan's traffic and prices with its policy reset to the defaults (vLLM's memory rule and fitted
efficiencies, the engine's attention-FLOPs convention and latency step), then changed where its name says.
"""

from planhelp import replan

from xlplan.io.planfile import reference_plan
from xlplan.schema.plan import Plan


def _defaults(**sections) -> Plan:
    data = reference_plan().model_dump(exclude_none=True)
    data["policy"] = {"redundancy": 1}
    return replan(Plan.model_validate(data), **sections)


def matrix_plans() -> dict[str, Plan]:
    """Name -> plan: dense, MoE, MLA, long context, heavy-tailed, calibrated (engine defaults), and the reference."""
    return {
        "dense": _defaults(),
        "moe": _defaults(model={"name": "qwen3-30b-a3b", "weights_dtype": "bf16", "kv_dtype": "bf16"},
                         forecast={"peak_rps": 20}),
        "mla": _defaults(model={"name": "deepseek-v3", "weights_dtype": "fp8", "kv_dtype": "bf16"},
                         hardware={"gpu": "h200", "gpus_per_node": 8, "usd_per_gpu_hour": 3.6}, forecast={"peak_rps": 10}),
        "long_context": _defaults(forecast={"peak_rps": 2, "prompt_tokens": {"p50": 32000, "p95": 64000, "p99": 100000},
                                            "output_tokens": {"p50": 500, "p95": 1000, "p99": 2000}},
                                  promise={"ttft_s": 10.0}),
        "heavy_tailed": _defaults(forecast={"prompt_tokens": {"p50": 2000, "p95": 8000, "p99": 14208},
                                            "output_tokens": {"p50": 300, "p95": 900, "p99": 1500}}),
        "calibrated": _defaults(policy={"redundancy": 1, "prefill_mfu": 0.5, "decode_mfu": 0.3, "calibration": {
            "source": "vllm-bench.json (3 runs)", "runs": 3, "prefill_mfu_range": [0.45, 0.55],
            "decode_mfu_range": [0.25, 0.35], "bandwidth_efficiency_range": [0.55, 0.65]}}),
        "reference": reference_plan(),
    }
