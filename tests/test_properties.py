"""Property tests: monotonicity of the plan, and the inverse agreeing with the forward plan."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xlplan.decide.capacity import capacity
from xlplan.io.planfile import reference_plan
from xlplan.plan.scenario import PlanningError, resolve
from xlplan.plan.steps import paths, solve, traffic

BASE = resolve(reference_plan())

rates = st.floats(min_value=0.5, max_value=400)
lengths = st.floats(min_value=50, max_value=8000)
itls = st.floats(min_value=0.015, max_value=0.2)


def scenario(rate, p50, spread, out50, itl):
    return replace(BASE, peak_rps=rate, prompt_p50=p50, prompt_p95=p50 * spread, prompt_p99=p50 * spread * 1.3,
                   output_p50=out50, output_p95=out50 * 1.5, output_p99=out50 * 2, itl_s=itl)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(rates, st.floats(1.01, 4), lengths, st.floats(1.0, 3.0), st.floats(50, 1500), itls)
def test_more_traffic_never_needs_fewer_gpus(rate, factor, p50, spread, out50, itl):
    a, b = scenario(rate, p50, spread, out50, itl), scenario(rate * factor, p50, spread, out50, itl)
    try:
        sa = solve(a)
    except PlanningError:
        return
    sb = solve(b)
    # at each TP degree every path grows with the rate, so the purchase (the objective's first criterion, a minimum over
    # degrees of non-decreasing counts) never shrinks; the load at the chosen degree may (a wider degree can buy the same)
    assert sb.paths.purchased >= sa.paths.purchased
    assert min(c.load for c in sb.candidates) >= min(c.load for c in sa.candidates)


@settings(max_examples=150, deadline=None)
@given(rates, lengths, st.floats(50, 1500), itls, st.floats(1.01, 4), st.sampled_from([1, 2, 4, 8]))
def test_looser_itl_never_shrinks_memory_path(rate, p50, out50, itl, factor, tp):
    a, b = scenario(rate, p50, 1.5, out50, itl), scenario(rate, p50, 1.5, out50, itl * factor)
    pa, pb = paths(a, traffic(a), tp), paths(b, traffic(b), tp)
    assert pb.memory_gpus >= pa.memory_gpus
    assert pb.memory_gpus_exact >= pa.memory_gpus_exact


@settings(max_examples=150, deadline=None)
@given(rates, lengths, st.floats(50, 1500), st.floats(22, 200), st.floats(1.0, 3.0), st.sampled_from([1, 2, 4, 8]))
def test_more_gpu_memory_never_grows_memory_path(rate, p50, out50, mem_gib, factor, tp):
    s = scenario(rate, p50, 1.5, out50, 0.05)
    a, b = replace(s, memory_gib=mem_gib), replace(s, memory_gib=mem_gib * factor)
    pa, pb = paths(a, traffic(a), tp), paths(b, traffic(b), tp)
    assert pb.memory_gpus <= pa.memory_gpus


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(rates, lengths, st.floats(1.0, 3.0), st.floats(50, 1500), itls)
def test_capacity_of_the_load_fleet_covers_the_peak(rate, p50, spread, out50, itl):
    s = scenario(rate, p50, spread, out50, itl)
    try:
        sol = solve(s)
    except PlanningError:
        return
    cap = capacity(s, int(sol.paths.load))
    # whole replicas round up, so the load fleet carries at least the peak (to float rounding)
    assert cap.max_peak_rps >= rate * (1 - 1e-9)
