"""The configuration battery as plan files: the scenarios the closed form and the configuration search are judged on.

    python benchmarks/battery_plans.py           # write benchmarks/battery/*.yaml
    python benchmarks/battery_plans.py --check   # exit 1 where a file differs from what this script writes

Each scenario is the reference plan (the runbook's worked example) with the sections named here replaced. The first
nineteen are issue 18's battery and its held-back cases (``tests/test_queue_path.py``); the last sixteen are issue 48's
(vLLM's defaults unless stated): Llama-3.1-70B at TP 2, 4 and 8, Llama-3.1-405B in fp8 on H200, DeepSeek-V3, long
prompts, a chatty 500 req/s, Qwen3-32B at 1 req/s, 2,000 req/s, heavy-tailed outputs, a tight TTFT, a tight and a
loose inter-token target, renting per node and per GPU, and redundancy 2 at p99; and one added with the search's
parallel layouts: DeepSeek-V3 on SGLang at 10 req/s, where the experts over the replica and DP attention are tried.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import yaml

from xlplan.io.planfile import reference_plan_text

HERE = Path(__file__).resolve().parent / "battery"

L70 = {"name": "llama-3.1-70b", "weights_dtype": "bf16", "kv_dtype": "bf16"}
VLLM = {"engine": "vllm"}


def _lengths(p50, p95, p99):
    return {"p50": p50, "p95": p95, "p99": p99}


SCENARIOS = {
    # issue 18's battery (the runbook's engine unless stated)
    "reference": {},
    "rag": {"forecast": {"peak_rps": 10, "prompt_tokens": _lengths(8000, 8000, 8000), "output_tokens": _lengths(200, 200, 200)}},
    "long-answers": {"forecast": {"peak_rps": 10, "prompt_tokens": _lengths(300, 300, 300),
                                  "output_tokens": _lengths(2000, 2000, 2000)}},
    "heavy-tail": {"forecast": {"prompt_tokens": _lengths(2000, 8000, 14208)}},
    "tiny": {"forecast": {"peak_rps": 0.5}},
    "moe-tp2": {"model": {"name": "qwen3-30b-a3b", "weights_dtype": "bf16", "kv_dtype": "bf16"}, "policy": {"tp": 2}},
    "long-context": {"forecast": {"peak_rps": 2, "prompt_tokens": _lengths(16000, 16000, 16000)}, "promise": {"ttft_s": 3.0}},
    "h200-peak-x2": {"forecast": {"peak_rps": 80}, "hardware": {"gpu": "h200", "usd_per_gpu_hour": 3.6}},
    "fp8": {"model": {"name": "llama-3.1-8b", "weights_dtype": "fp8", "kv_dtype": "fp8"}},
    "vllm-defaults": {"policy": VLLM},
    "70b-tp4": {"forecast": {"peak_rps": 10}, "model": L70, "policy": {"tp": 4}},
    "70b-tp8": {"forecast": {"peak_rps": 20}, "model": L70, "policy": {"tp": 8}},
    "bursty": {"forecast": {"arrival_cv2": 4.0}},
    "itl-25ms": {"promise": {"itl_s": 0.025}},
    "gemma-window": {"forecast": {"peak_rps": 10}, "model": {"name": "gemma-3-27b", "weights_dtype": "bf16", "kv_dtype": "bf16"}},
    # issue 18's held-back cases
    "p99-promise": {"promise": {"percentile": 99}},
    "half-cached-prefix": {"forecast": {"prefix_reuse": 0.5}},
    "short-chat-120": {"forecast": {"peak_rps": 120, "prompt_tokens": _lengths(500, 1500, 3000),
                                    "output_tokens": _lengths(150, 400, 700)}},
    "gemma-long-answers": {"forecast": {"peak_rps": 4, "prompt_tokens": _lengths(300, 600, 900),
                                        "output_tokens": _lengths(1500, 2500, 3000)},
                           "model": {"name": "gemma-3-27b", "weights_dtype": "bf16", "kv_dtype": "bf16"}},
    # issue 48's sixteen (vLLM's defaults unless stated)
    "70b-h200-tp2": {"forecast": {"peak_rps": 15}, "model": L70, "hardware": {"gpu": "h200", "usd_per_gpu_hour": 3.6},
                     "policy": {**VLLM, "tp": 2}},
    "70b-h200-tp4": {"forecast": {"peak_rps": 15}, "model": L70, "hardware": {"gpu": "h200", "usd_per_gpu_hour": 3.6},
                     "policy": {**VLLM, "tp": 4}},
    "70b-h200-tp8": {"forecast": {"peak_rps": 15}, "model": L70, "hardware": {"gpu": "h200", "usd_per_gpu_hour": 3.6},
                     "policy": {**VLLM, "tp": 8}},
    "405b-fp8-h200": {"forecast": {"peak_rps": 2}, "model": {"name": "llama-3.1-405b", "weights_dtype": "fp8", "kv_dtype": "fp8"},
                      "hardware": {"gpu": "h200", "usd_per_gpu_hour": 3.6}, "policy": VLLM},
    "deepseek-v3": {"forecast": {"peak_rps": 2}, "model": {"name": "deepseek-v3", "weights_dtype": "fp8", "kv_dtype": "bf16"},
                    "hardware": {"gpu": "h200", "usd_per_gpu_hour": 3.6}, "policy": VLLM, "promise": {"ttft_s": 2.0}},
    "deepseek-v3-sglang": {"forecast": {"peak_rps": 10},
                           "model": {"name": "deepseek-v3", "weights_dtype": "fp8", "kv_dtype": "bf16"},
                           "hardware": {"gpu": "h200", "usd_per_gpu_hour": 3.6}, "policy": {"engine": "sglang"},
                           "promise": {"ttft_s": 2.0}},
    "long-prompts": {"forecast": {"peak_rps": 1, "prompt_tokens": _lengths(8000, 32000, 60000)}, "promise": {"ttft_s": 5.0},
                     "policy": VLLM},
    "chat-500": {"forecast": {"peak_rps": 500, "prompt_tokens": _lengths(500, 1500, 3000),
                              "output_tokens": _lengths(150, 400, 700)}, "policy": VLLM},
    "qwen3-32b-1rps": {"forecast": {"peak_rps": 1, "prompt_tokens": _lengths(1500, 4000, 6000),
                                    "output_tokens": _lengths(300, 600, 900)},
                       "model": {"name": "qwen3-32b", "weights_dtype": "bf16", "kv_dtype": "bf16"}, "policy": VLLM},
    "8b-2000rps": {"forecast": {"peak_rps": 2000}, "policy": VLLM},
    "heavy-tail-outputs": {"forecast": {"output_tokens": _lengths(200, 1500, 4000)}, "policy": VLLM},
    "tight-ttft": {"promise": {"ttft_s": 0.3}, "policy": VLLM},
    "tight-itl": {"promise": {"itl_s": 0.02}, "policy": VLLM},
    "loose-itl": {"promise": {"itl_s": 0.1}, "policy": VLLM},
    "per-node": {"forecast": {"peak_rps": 20}, "costs": {"mode": "rent_per_node"}, "policy": VLLM},
    "per-gpu": {"forecast": {"peak_rps": 20}, "policy": VLLM},
    "redundancy-2-p99": {"promise": {"percentile": 99}, "policy": {**VLLM, "redundancy": 2}},
}
"""Scenario name → the sections it changes in the reference plan (section → fields replaced). [plan fields]"""

RUNBOOK_POLICY = ("engine", "attention_flops", "latency_step", "step_overhead_s", "mfu", "memory_utilisation",
                  "overhead_gib", "memory_convention")
"""The reference plan's runbook conventions, dropped where a scenario runs on an engine's defaults (vLLM, SGLang, TensorRT-LLM). [fields]"""


def plan_data(name: str) -> dict:
    """The scenario's plan as a mapping: the reference plan with its changes applied. [plan fields]"""
    data = yaml.safe_load(reference_plan_text())
    changes = copy.deepcopy(SCENARIOS[name])
    if changes.get("policy", {}).get("engine") in ("vllm", "sglang", "trtllm"):
        for k in RUNBOOK_POLICY:
            data["policy"].pop(k, None)
    for section, fields in changes.items():
        if isinstance(data.get(section), dict):
            data[section].update(fields)
        else:
            data[section] = fields
    data["name"] = f"Battery: {name}"
    for k in ("owners", "sources"):  # the reference's attributions are the runbook's, not these scenarios'
        data.pop(k, None)
    data["api"]["source"] = "the reference plan's API price, kept for every scenario of the battery"
    return data


def text(name: str) -> str:
    """The scenario's plan file. [YAML]"""
    head = f"# The configuration battery's '{name}' (benchmarks/battery_plans.py writes it; edit SCENARIOS there).\n"
    return head + yaml.safe_dump(plan_data(name), sort_keys=False, allow_unicode=True)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for name in SCENARIOS:
        path = HERE / f"{name}.yaml"
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text(name):
                stale.append(path.name)
        else:
            HERE.mkdir(exist_ok=True)
            path.write_text(text(name), encoding="utf-8")
    if stale:
        print("stale: " + ", ".join(stale) + " (run: python benchmarks/battery_plans.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
