"""vLLM's long-prefill threshold as a plan setting (policy.long_prefill_token_threshold).

vLLM's V1 scheduler caps each request's new tokens in a step at ``long_prefill_token_threshold`` (0: off), so a long
prompt is chunked at it and the rest of the step's budget goes to the prompts behind it. The simulator's chunks are
checked against hand-worked steps and Little's Law in tests/test_simulate.py (and the compiled loop against the Python
one in tests/test_sim_kernel.py); here, the plan file, the closed form, the workbook's cell and what the note and JSON
tell the user to deploy.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from planhelp import replan

from xlplan.decide.planner import plan
from xlplan.io.errors import InputError
from xlplan.io.planfile import plan_from_mapping, reference_plan
from xlplan.plan import closed_form, latency_step, replica_at_tp, steps
from xlplan.plan.scenario import changed, resolve
from xlplan.report.note import render_text

LONG_TAIL = {  # long-tailed prompts on vLLM's 8,192-token steps, Llama-3.1-8B on one H100
    "forecast": {"peak_rps": 8, "prompt_tokens": {"p50": 800, "p95": 6000, "p99": 12000},
                 "output_tokens": {"p50": 200, "p95": 500, "p99": 800}, "average_utilisation": 0.4},
    "promise": {"ttft_s": 1.5, "itl_s": 0.05, "percentile": 95},
    "model": {"name": "llama-3.1-8b", "weights_dtype": "bf16", "kv_dtype": "bf16"},
    "hardware": {"gpu": "h100-sxm", "gpus_per_node": 8, "usd_per_gpu_hour": 3.0},
    "policy": {"engine": "vllm", "max_num_batched_tokens": 8192, "tp": 1},
}


def _plan(**policy):
    data = json.loads(json.dumps(LONG_TAIL))
    data["policy"].update(policy)
    return plan_from_mapping(data, "plan.yaml")


def test_the_plan_file_takes_the_threshold_and_zero_is_off():
    # vLLM's own convention: 0 switches the threshold off, as leaving it out does
    assert resolve(_plan(long_prefill_token_threshold=1024)).long_prefill_token_threshold == 1024.0
    assert resolve(_plan(long_prefill_token_threshold=0)).long_prefill_token_threshold == math.inf
    assert resolve(_plan()).long_prefill_token_threshold == math.inf


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_an_engine_without_the_threshold_is_refused_with_the_setting_it_has(engine):
    with pytest.raises(InputError) as e:
        _plan(engine=engine, long_prefill_token_threshold=1024)
    message = str(e.value)
    assert "long_prefill_token_threshold" in message and "1024" in message and "max_num_batched_tokens" in message
    assert "\n" not in message


def test_the_closed_form_chunks_a_prompt_at_the_threshold_as_at_a_budget_of_that_size():
    # A prompt's prefill on an idle replica is ⌈prompt ÷ min(budget, threshold)⌉ steps: a 1,024-token threshold
    # under 8,192-token steps chunks a 6,000-token prompt as 1,024-token steps would (6 chunks of 1,000), and more
    # steps than the threshold-free 8,192-token budget (1 step) take longer, each paying the engine's step overhead.
    s = resolve(_plan())
    r = replica_at_tp.replica(s, 1)
    at_threshold = float(latency_step.prefill_alone_s(changed(s, long_prefill_token_threshold=1024.0), r, 6000.0))
    at_budget = float(latency_step.prefill_alone_s(changed(s, max_num_batched_tokens=1024.0), r, 6000.0))
    whole = float(latency_step.prefill_alone_s(s, r, 6000.0))
    assert at_threshold == at_budget
    assert at_threshold >= whole + 5 * s.step_overhead_s  # five more steps, each at least the overhead


def test_a_threshold_over_the_budget_changes_nothing():
    # min(budget, threshold) is the budget: every figure of the closed form is the threshold-free plan's
    base, over = resolve(_plan()), resolve(_plan(long_prefill_token_threshold=16384))
    a, b = closed_form.closed_form(base, steps.solve(base), True), closed_form.closed_form(over, steps.solve(over), True)
    assert dataclasses.replace(b, long_prefill_token_threshold=math.inf) == a


@pytest.mark.slow
def test_the_note_and_json_deploy_the_threshold():
    r = plan(_plan(long_prefill_token_threshold=1024), verify=True)
    assert r.answer.long_prefill_token_threshold == 1024
    assert "--long-prefill-token-threshold 1024" in r.answer.settings
    assert "--long-prefill-token-threshold 1024" in render_text(r)
    assert r.verified is not None and r.verified.load is not None  # the simulation ran the threshold and kept it
    plain = plan(replan(reference_plan()), verify=False)
    assert plain.answer.long_prefill_token_threshold is None and "--long-prefill" not in plain.answer.settings
