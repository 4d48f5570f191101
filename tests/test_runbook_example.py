"""The runbook's worked example (document 14), step by step.

Reference stack: Llama-3.1-8B bf16 on H100 SXM, 40 req/s, 2,000 in / 300 out,
20 tokens/s (0.05 s inter-token), 40% average utilisation, $3/GPU-hour.
"""

import pytest

approx = pytest.approx


def test_time_in_system(ref):
    # 300 output tokens × 0.05 s = 15.0 s  ("at 20 tokens/second a 300-token answer occupies a slot for 15 seconds")
    assert ref.time_in_system_s == approx(15.0)


def test_concurrency(ref):
    # Little's Law: 40 req/s × 15 s = 600 in flight
    assert ref.concurrency == approx(600.0)


def test_kv_per_conversation(ref):
    # 2 × 32 layers × 8 KV heads × 128 × 2 bytes = 131,072 B/token (models.csv);
    # (2,000 + 300) tokens × 131,072 B = 301,465,600 B = 0.2808 GiB -> "0.281 GiB"
    assert ref.model.kv_bytes_per_token == 131072
    assert ref.memory.kv_gib_per_conversation == approx(0.281, abs=5e-4)


def test_kv_total(ref):
    # 600 × 0.2808 GiB = 168.46 GiB -> "168.5 GiB"
    assert ref.memory.kv_gib_total == approx(168.5, abs=0.05)


def test_kv_budget_per_gpu(ref):
    # 81,559 MiB (nvidia-smi) = 79.65 GiB; × 0.90 = 71.68 GiB; weights 8,030,261,248 × 2 B = 14.96 GiB;
    # overhead 3.0 GiB: 71.68 − 14.96 − 3.0 = 53.73 GiB ("÷ 53.73 GiB per GPU")
    assert ref.memory.weights_gib_per_gpu == approx(14.96, abs=0.005)
    assert ref.memory.overhead_gib == 3.0
    assert ref.memory.kv_budget_gib_per_gpu == approx(53.73, abs=0.005)


def test_memory_path(ref):
    # 168.5 GiB ÷ 53.73 GiB = 3.14 -> 4 GPUs
    assert ref.memory.gpus_exact == approx(3.135, abs=0.001)
    assert ref.memory.gpus == 4


def test_compute_demand(ref):
    # prefill: 40 × (2 × 8.03e9 × 2,000 + 4 × 32 × 2,000² × 4,096) = 1,284.8 + 83.9 = 1,368.7 -> "1,369 TFLOP/s"
    # decode: 40 × 300 × 2 × 8.03e9 = 192.7 -> "193 TFLOP/s"
    assert ref.compute.prefill_tflops == approx(1369, abs=0.5)
    assert ref.compute.decode_tflops == approx(193, abs=0.5)


def test_compute_per_gpu_and_path(ref):
    # 989 TFLOP/s dense BF16 × 40% MFU = 395.6 -> "396 per GPU"; 1,561.5 ÷ 395.6 = 3.95 -> 4 GPUs
    assert ref.compute.tflops_per_gpu == approx(396, abs=0.5)
    assert ref.compute.gpus_exact == approx(3.947, abs=0.001)
    assert ref.compute.gpus == 4


def test_both_bind(ref):
    # "both constraints bind about equally here — say so"
    assert ref.binding == "both"
    assert ref.binding_paths == ["memory", "compute"]


def test_fleet_three_numbers(ref):
    # "4 for the load, +1 for N+1 … buy a node of 8"
    assert (ref.fleet.load, ref.fleet.with_redundancy, ref.fleet.purchased) == (4, 5, 8)
    assert ref.fleet.tp == 1


def test_monthly_bill(ref):
    # 5 GPUs × $3/h × 730 h = $10,950 ("~$11,000 / month")
    assert ref.cost.billed_gpus == 5
    assert ref.cost.monthly_usd == approx(10950)


def test_tokens_per_month(ref):
    # 40 req/s × 2,300 tokens × 0.40 × 730 h × 3,600 s = 96.71e9 ("roughly 95 billion")
    assert ref.cost.tokens_per_month == approx(96.7e9, rel=1e-3)


def test_cost_per_mtok(ref):
    # $10,950 ÷ 96,710 M tokens = $0.1132 ("~$0.11 per million tokens")
    assert ref.cost.usd_per_mtok == approx(0.113, abs=5e-4)


def test_api_comparison(ref):
    # input 40 × 2,000 × 0.4 × 2.628e6 s = 84.1e9 tokens × $0.25/M = $21,024;
    # output 40 × 300 × 0.4 × 2.628e6 = 12.6e9 × $0.75/M = $9,461; total $30,485 ("~$30,000 / month")
    assert ref.cost.api_monthly_usd == approx(30484.8, rel=1e-6)
    # break-even: $10,950 ÷ ($30,484.8 / 96,710 M tokens = $0.3152/M) = 34.7e9 tokens/month
    assert ref.cost.breakeven_tokens_per_month == approx(34.74e9, rel=1e-3)


def test_utilisation_lever(ref):
    # "raising average utilisation from 20% to 50% is a 2.5× improvement in cost per token"
    table = {round(u.utilisation, 2): u.usd_per_mtok for u in ref.cost.usd_per_mtok_by_utilisation}
    assert table[0.2] / table[0.5] == approx(2.5)
    # "At 10% average load … a quarter of the tokens": 4× the 40% cost
    assert table[0.1] == approx(4 * ref.cost.usd_per_mtok)


def test_runbook_sensitivity_p95_8k(ref):
    # "If p95 prompts reach 8k, compute binds and the fleet goes to 7": p50 2,000, p95 = p99 = 8,000 fits
    # sigma = ln 4 × (1.645 + 2.326) / (1.645² + 2.326²) = 0.678; E[n] = 2,000 e^{σ²/2} = 2,517;
    # E[n²] = 4e6 e^{2σ²} = 1.004e7; prefill 40 × (2 × 8.03e9 × 2,517 + 4 × 32 × 1.004e7 × 4,096) = 1,827 TFLOP/s;
    # + 193 decode = 2,020 ÷ 395.6 = 5.1 -> 6 GPUs, +1 = 7
    s = next(x for x in ref.sensitivities if x.change.startswith("p95 prompts reach 8,000"))
    assert (s.binding, s.fleet) == ("compute", 7)


def test_cli_json_matches(ref, capsys):
    import json

    from xlplan.cli import main

    assert main(["plan", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # schema version 2: the runbook's method's lines under runbook_method (600 in flight, 4 + 1, a node of 8, ~$11k)
    method = out["runbook_method"]
    assert out["schema_version"] == 2
    for key in ("concurrency", "time_in_system_s"):
        assert out[key] == getattr(ref, key)
    assert method["binding"] == ref.binding
    assert out["memory"]["kv_budget_gib_per_gpu"] == ref.memory.kv_budget_gib_per_gpu
    assert method["fleet"] == ref.fleet.model_dump()
    for key in ("monthly_usd", "tokens_per_month", "usd_per_mtok", "api_monthly_usd", "breakeven_tokens_per_month"):
        assert method["cost"][key] == getattr(ref.cost, key)
    assert {"change", "fleet", "binding"} <= set(out["sensitivities"][0])
    assert out["breakpoints"]


def test_the_json_says_which_method_each_figure_follows(ref):
    # a new user read plan --json's top-level fleet (the runbook's 4/5/8) as the answer; basis names, for every figure
    # field, which method it follows, and the Answer is the one to order from
    from xlplan.schema.result import FIGURES_BASIS

    named = {f.strip() for key in FIGURES_BASIS for f in key.split(",")}
    figures = set(type(ref).model_fields) - {"name", "calibration_source", "inputs", "model", "warnings", "basis"}
    assert figures <= named, sorted(figures - named)
    assert "order from" in ref.basis["answer"] and "runbook's method" in next(v for k, v in ref.basis.items() if "fleet" in k)


def test_the_jsons_top_level_fleet_and_cost_are_the_answers(ref, capsys):
    # a script reading plan --json's fleet.with_redundancy orders what the note's Answer line says: the fleet that keeps
    # the promise in simulation (on the reference plan 6 + 1 = 7 GPUs at $3/h × 730 h = $15,330, README), never the
    # runbook's method's 4 + 1 = 5 ($10,950), which keeps it only on paper
    import json

    from xlplan.cli import main
    from xlplan.decide.planner import plan
    from xlplan.io.planfile import reference_plan

    assert main(["plan", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    a = plan(reference_plan()).answer
    assert (out["fleet"]["tp"], out["fleet"]["load"], out["fleet"]["with_redundancy"], out["fleet"]["purchased"]) == (
        a.tp, a.load, a.with_redundancy, a.purchased)
    assert out["cost"]["billed_gpus"] == a.billed_gpus and out["cost"]["monthly_usd"] == a.monthly_usd
    assert out["cost"]["monthly_usd"] == out["cost"]["billed_gpus"] * 3.0 * 730.0  # runbook step 7's arithmetic
    assert out["binding"] == a.binding and out["runbook_method"]["fleet"]["with_redundancy"] == 5
    assert "order from" in next(v for k, v in out["basis"].items() if k.startswith("fleet"))
