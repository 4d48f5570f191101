"""The vectorized sweep equals the scalar planner row by row (array-equals-scalar)."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from xlplan.io.planfile import reference_plan
from xlplan.scenario import resolve
from xlplan.steps import PlanningError, solve


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
    from xlplan.sweep import sweep

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


def test_reference_row_reproduces_runbook():
    from xlplan.sweep import sweep

    out = sweep(reference_plan(), pd.DataFrame({"peak_rps": [40.0, 80.0]}))
    # 40 req/s: 4 / 5 / 8 GPUs, both bind, $10,950 (runbook); 80 req/s: compute 7.89 -> 8, +1 = 9 -> 16
    assert out["fleet_load"].tolist() == [4, 8]
    assert out["fleet_with_redundancy"].tolist() == [5, 9]
    assert out["fleet_purchased"].tolist() == [8, 16]
    assert out["binding"].tolist() == ["both", "compute"]
    assert out["monthly_usd"].iloc[0] == pytest.approx(10950)


def test_unknown_column_is_named():
    from xlplan.sweep import sweep

    with pytest.raises(ValueError, match="peak_rpm"):
        sweep(reference_plan(), pd.DataFrame({"peak_rpm": [1.0]}))
