"""Held out by deployment and by model: a fold's table never sees the rows it predicts; repeats weigh as one point.

Truths used: a maximum a-posteriori fit with no data is its prior (Tarantola 2005, §3.2: the posterior mean with an
empty data term is the prior mean); a fold fitted without a deployment cannot depend on that deployment's figures;
a point measured twice is one configuration, so its two rows at half weight each are the one row at full weight.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from xlplan.evidence import held_out
from xlplan.evidence.bench_conditions import deployment
from xlplan.evidence.calibrate import OVERALL_PRIOR
from xlplan.evidence.validation import fit_pool, validate
from xlplan.io.measurement_table import read_measurements
from xlplan.io.measurements import CORPUS, measured_rows
from xlplan.serving.efficiency_defaults import EFFICIENCY_FIELDS


@pytest.fixture(scope="module")
def rows():
    return measured_rows(read_measurements(CORPUS))


@pytest.fixture(scope="module")
def pool(rows):
    return held_out.linearise(fit_pool(rows))


def test_a_fit_on_no_runs_is_its_prior():
    table = held_out.fit_table([])
    assert table["vendors"] == {}
    for f in EFFICIENCY_FIELDS:
        assert table["overall"][f] == pytest.approx(getattr(OVERALL_PRIOR, f), rel=1e-12)


@pytest.mark.slow
def test_a_deployment_left_out_is_predicted_without_its_own_figures(rows, pool):
    # the NIM rows (Llama-3.3-70B, 2 × H100, TensorRT-LLM): scale their measured figures by 3 in the pool; their
    # leave-one-deployment-out predictions do not move, while the in-sample fit (which sees them) does
    nim = [m for m in rows if m.id.startswith("NIM")]
    key = deployment(nim[0].conditions)
    def tripled(m):
        return replace(m, output_tok_s=m.output_tok_s and m.output_tok_s * 3, itl_ms=m.itl_ms and m.itl_ms * 3,
                       ttft_ms=m.ttft_ms and m.ttft_ms * 3)

    scaled = [tripled(m) if m.conditions is not None and deployment(m.conditions) == key else m for m in rows]
    other = held_out.linearise(fit_pool(scaled))
    before = held_out.held_out_checks(nim, pool, "deployment", validate)
    after = held_out.held_out_checks(nim, other, "deployment", validate)
    assert [c.predicted for c in after] == pytest.approx([c.predicted for c in before], rel=1e-9)
    inside = held_out.held_out_checks(nim, other, "in-sample", validate)
    assert [c.predicted for c in inside] != pytest.approx([c.predicted for c in before], rel=1e-3)


def test_a_points_repeats_weigh_as_the_one_point(pool):
    # the same run listed twice under one point gives the fit the weight of the run once
    run = pool[0]
    pair = [replace(run, gram=run.gram / 2, rhs=run.rhs / 2)] * 2
    one, two = held_out.fit_table([run] + pool[1:]), held_out.fit_table(pair + pool[1:])
    for f in EFFICIENCY_FIELDS:
        assert two["overall"][f] == pytest.approx(one["overall"][f], rel=1e-9)


def test_linearise_weighs_a_points_rows_by_one_over_their_count(rows):
    from xlplan.evidence.validation import run_of

    m = next(m for m in rows if run_of(m) is not None and m.id.startswith("NIM"))
    single = held_out.linearise([(m, run_of(m))])[0]
    twice = held_out.linearise([(replace(m, point="p"), run_of(m)), (replace(m, id="copy", point="p"), run_of(m))])
    assert np.allclose(twice[0].gram * 2, single.gram) and np.allclose(twice[0].rhs * 2, single.rhs)


def test_point_errors_score_a_points_repeats_against_their_mean(rows):
    from xlplan.evidence.validation import Check

    a = Check("a", "online_latency", "s", "inter-token latency ms", "latency", 10.0, 8.0, 10 / 8 - 1)
    b = Check("b", "online_latency", "s", "inter-token latency ms", "latency", 10.0, 12.0, 10 / 12 - 1)
    pts = [replace(rows[0], id="a", point="p"), replace(rows[0], id="b", point="p")]
    # measured 8 and 12 ms at one point: its mean 10 ms is what the one prediction of 10 ms is scored against
    assert held_out.point_errors([a, b], pts, ("latency",)) == [0.0]
