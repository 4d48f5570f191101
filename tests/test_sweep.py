"""The vectorized sweep equals the scalar planner row by row (array-equals-scalar)."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from xlplan.io.planfile import reference_plan
from xlplan.plan.scenario import PlanningError, resolve
from xlplan.plan.steps import solve


@pytest.mark.slow
def test_sweep_equals_scalar_planner():
    rng = np.random.default_rng(7)
    n = 300
    p50 = rng.uniform(100, 6000, n)
    df = pd.DataFrame({
        "peak_rps": rng.uniform(1, 200, n),
        "prompt_p50": p50, "prompt_p95": p50 * rng.uniform(1, 4, n), "prompt_p99": p50 * 5,
        "output_p50": rng.uniform(50, 1000, n),
        "itl_s": rng.uniform(0.01, 0.15, n),
        "usd_per_gpu_hour": rng.uniform(1, 6, n),
    })
    df["output_p95"] = df["output_p50"] * 2
    df["output_p99"] = df["output_p50"] * 3
    from xlplan.plan.sweep import sweep

    base = reference_plan()
    out = sweep(base, df)
    s0 = resolve(base)
    for i, row in df.iterrows():
        s = replace(s0, **{c: float(row[c]) for c in df.columns})
        try:
            sol = solve(s)
        except PlanningError:
            assert out.loc[i, "binding"] == "infeasible"
            continue
        assert out.loc[i, "fleet_load"] == sol.paths.load
        assert out.loc[i, "fleet_purchased"] == sol.paths.purchased
        assert out.loc[i, "tp"] == sol.paths.tp
        assert out.loc[i, "binding"] == sol.binding
        assert out.loc[i, "monthly_usd"] == pytest.approx(sol.bill.monthly_usd)
        assert out.loc[i, "usd_per_mtok"] == pytest.approx(sol.bill.usd_per_mtok)


def _value_variants(name: str, base: float) -> list[float]:
    """Four values of one sweepable input around the plan's, inside its valid range."""
    if name in ("average_utilisation", "memory_utilisation", "mfu", "prefill_mfu", "decode_mfu", "bandwidth_efficiency",
                "expert_efficiency"):
        return [base * f for f in (0.5, 0.8, 0.95)] + [min(base * 1.2, 1.0)]
    if name == "prefix_reuse":
        return [0.0, 0.2, 0.5, 0.9]
    if name in ("step_overhead_s", "ops_usd_per_month", "overhead_gib", "link_latency_s") and not base:
        return [0.0, 0.001, 0.004, 0.02]
    if name.startswith(("prompt_p", "output_p")):
        return [base * f for f in (1.0, 1.0, 1.0, 1.0)]  # percentiles move together below
    return [base * f for f in (0.5, 0.8, 1.25, 2.0)]


@pytest.mark.parametrize("name", __import__("xlplan.plan.scenario", fromlist=["SWEEPABLE"]).SWEEPABLE)
def test_every_sweepable_column_equals_the_scalar_planner(name):
    # The allow-list: each input a sweep column may set changes the result exactly as the scalar planner does — mfu
    # included, which a sweep used to ignore because the split MFUs were stored beside it. A default plan (engine vllm,
    # causal attention, the latency step with prefill) so every term of the serving model is live.
    from xlplan.plan.sweep import sweep
    from xlplan.schema.plan import Plan

    base = Plan.model_validate({
        "forecast": {"peak_rps": 25, "prompt_tokens": {"p50": 1500, "p95": 4000, "p99": 6000},
                     "output_tokens": {"p50": 300, "p95": 700, "p99": 900}},
        "promise": {"ttft_s": 2, "itl_s": 0.05}, "model": {"name": "qwen3-30b-a3b", "weights_dtype": "fp8"},
        "hardware": {"gpu": "h100-sxm", "usd_per_gpu_hour": 2.5},
        "api": {"usd_per_mtok_input": 0.1, "usd_per_mtok_output": 0.4}, "policy": {"mfu": 0.4}})
    s0 = resolve(base)
    start = getattr(s0, name)
    if start is None:
        start = s0.mfu
    values = _value_variants(name, float(start))
    df = pd.DataFrame({name: values})
    if name.startswith(("prompt_p", "output_p")):
        kind = name.split("_")[0]
        scale = np.array([0.5, 0.8, 1.25, 2.0])
        df = pd.DataFrame({f"{kind}_{q}": getattr(s0, f"{kind}_{q}") * scale for q in ("p50", "p95", "p99")})
    out = sweep(base, df)
    for i, row in df.iterrows():
        s = replace(s0, **{c: float(row[c]) for c in df.columns})
        try:
            sol = solve(s)
        except PlanningError:
            assert out.loc[i, "binding"] == "infeasible"
            continue
        assert (out.loc[i, "fleet_load"], out.loc[i, "fleet_purchased"], out.loc[i, "tp"], out.loc[i, "binding"]) == (
            sol.paths.load, sol.paths.purchased, sol.paths.tp, sol.binding), (name, row.to_dict())
        assert out.loc[i, "monthly_usd"] == pytest.approx(sol.bill.monthly_usd)
        assert out.loc[i, "memory_gpus"] == sol.paths.memory_gpus and out.loc[i, "latency_gpus"] == sol.paths.latency_gpus


def test_sweeping_mfu_moves_the_compute_path():
    # the bug this allow-list closes: an mfu column left the split MFUs behind (4/4/4 where plan() gave 8/4/2)
    from xlplan.plan.sweep import sweep

    out = sweep(reference_plan(), pd.DataFrame({"mfu": [0.2, 0.4, 0.8]}))
    # compute path: 1,562 TFLOP/s ÷ (989 × MFU): 7.9 → 8, 3.95 → 4, 1.97 → 2 GPUs
    assert out["compute_gpus"].tolist() == [8, 4, 2]


def test_reference_row_reproduces_runbook():
    from xlplan.plan.sweep import sweep

    out = sweep(reference_plan(), pd.DataFrame({"peak_rps": [40.0, 80.0]}))
    # 40 req/s: 4 / 5 / 8 GPUs, both bind, $10,950 (runbook); 80 req/s: compute 7.89 -> 8, +1 = 9 -> 16
    assert out["fleet_load"].tolist() == [4, 8]
    assert out["fleet_with_redundancy"].tolist() == [5, 9]
    assert out["fleet_purchased"].tolist() == [8, 16]
    assert out["binding"].tolist() == ["both", "compute"]
    assert out["monthly_usd"].iloc[0] == pytest.approx(10950)


def test_unknown_column_is_named():
    from xlplan.plan.sweep import sweep

    with pytest.raises(ValueError, match="peak_rpm"):
        sweep(reference_plan(), pd.DataFrame({"peak_rpm": [1.0]}))
