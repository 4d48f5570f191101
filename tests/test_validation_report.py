"""Accuracy reported honestly: the headline is leave-one-source-out, the in-sample figure is labelled, calibration is
scored within a deployment, and a row whose engine borrows another engine's defaults says so."""

from __future__ import annotations

import json
import math
import statistics

import pytest

from xlplan.catalog.specs import vendor
from xlplan.cli import main
from xlplan.evidence.validation import headline, predict_row, run_of, within_deployment
from xlplan.io.measurement_table import read_measurements
from xlplan.io.measurements import CORPUS, measured_row, measured_rows, source_group
from xlplan.report.validation_report import build, current, held_out_median, markdown, summary_lines
from xlplan.serving import efficiency_defaults


@pytest.fixture(scope="module")
def rows():
    return read_measurements(CORPUS)


@pytest.fixture(scope="module")
def report(rows):  # the report refits the default table once per source (about 20 s): its users are marked slow
    return build(rows)





@pytest.mark.slow
def test_a_left_out_check_is_predicted_by_a_fit_that_saw_no_row_of_its_source(rows, report):
    # the definition of leave one source out, checked on one source by hand: refit the defaults on every run whose
    # source differs and predict the source's rows with that table; the report's left-out checks must be exactly those
    from xlplan.evidence import held_out
    from xlplan.evidence.validation import fit_pool

    source = "docs.nvidia.com/nim"
    train = held_out.linearise(fit_pool(measured_rows([x for x in rows if source_group(x["source"]) != source])))
    table = held_out.fit_table(train)
    assert train and all(r.source != source for r in train)
    expected = [c for x in rows if source_group(x["source"]) == source for c in predict_row(measured_row(x), table=table)]
    got = [c for c in report.left_out if c.source == source]
    assert [(c.id, c.metric, c.predicted) for c in got] == [(c.id, c.metric, c.predicted) for c in expected]
    # and the fold differs from the shipped table, so the figure is not the in-sample one relabelled
    assert table != efficiency_defaults.shipped_table()


@pytest.mark.slow
def test_capacity_is_the_same_both_ways_and_efficiency_figures_are_not(report):
    # no efficiency enters a KV-capacity prediction (memory arithmetic only), so leaving a source out of the efficiency
    # fit cannot move it; throughput does depend on the fitted efficiencies
    ins = {(c.id, c.metric): c.predicted for c in report.in_sample if c.relative_error is not None}
    out = {(c.id, c.metric): c.predicted for c in report.left_out if c.relative_error is not None}
    assert ins.keys() == out.keys()
    cap = [k for k in ins if "KV cache" in k[1]]
    assert cap and all(ins[k] == out[k] for k in cap)
    assert any(not math.isclose(ins[k], out[k]) for k in ins if k[1] == "output tokens/s")


@pytest.mark.slow
def test_the_headline_is_the_left_out_figure_everywhere(report, capsys):
    # validate's summary, the README table (its first target row) and the JSON lead with the median left out by
    # deployment; every corpus row is its own point, so that is the plain median of the left-out checks
    errs = [abs(c.relative_error) for c in current(report, report.by_deployment)
            if c.relative_error is not None and c.kind in ("throughput", "latency")]
    left = statistics.median(errs)
    assert held_out_median(report, report.by_deployment) == pytest.approx(left, rel=1e-12)
    assert summary_lines(report)[0].endswith(f"{left:.1%}") and "leave one deployment out" in summary_lines(report)[0]
    assert any(line.startswith("leave one source out") and line.endswith(f"{headline(current(report, report.left_out)):.1%}")
               for line in summary_lines(report))
    table = markdown(report).splitlines()
    assert table[2].startswith("| **headline**") and f"| {left:.1%} |" in table[2]
    assert any("in-sample (fitted on these rows; not the headline)" in line for line in table)
    assert main(["validate", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["headline_leave_one_deployment_out"] == pytest.approx(left)
    assert out["headline_leave_one_source_out"] == pytest.approx(headline(current(report, report.left_out)))


@pytest.mark.slow
def test_calibration_pairs_are_every_ordered_pair_within_a_deployment(rows):
    # one run calibrates, another of the same GPU, model and engine is predicted: a deployment of n runs gives
    # n(n-1) ordered pairs; "all but one" gives n for each deployment of at least three runs
    groups: dict = {}
    for r in (run_of(measured_row(x)) for x in rows):
        if r is not None:
            c = r.conditions
            groups[(c.gpu.name, c.model.name, c.engine)] = groups.get((c.gpu.name, c.model.name, c.engine), 0) + 1
    one, rest = within_deployment(measured_rows(rows))
    assert one.pairs == sum(n * (n - 1) for n in groups.values())
    assert rest.pairs == sum(n for n in groups.values() if n >= 3)
    assert one.improved + one.unchanged + one.worse == one.pairs


@pytest.mark.slow
def test_a_row_whose_engine_borrows_another_fit_says_so_on_every_check(rows):
    # a vendor x engine class with fewer than four runs of a kind keeps the fit above it, and the table says so
    # (dense_fallback / moe_fallback); every throughput or latency check of a row in such a class must carry that
    # sentence, and no check of a class with its own fit may. SGLang on NVIDIA has three MoE runs: its MoE rows borrow;
    # SGLang on AMD has no fitted run at all (its rows are of older releases): its rows borrow AMD's fit.
    table = efficiency_defaults.shipped_table()
    assert "moe_fallback" in table["vendors"]["nvidia"]["sglang"]
    assert "dense_fallback" not in table["vendors"]["nvidia"]["trtllm"]
    borrowed_rows = 0
    for x in rows:
        checks = [c for c in predict_row(measured_row(x)) if c.relative_error is not None and c.kind != "capacity"]
        r = run_of(measured_row(x))
        if not checks or r is None:
            continue
        c = r.conditions
        entry = table["vendors"].get(vendor(c.gpu.name), {}).get(c.engine)
        borrowed = entry is None or "dense_fallback" in entry or (bool(c.model.num_experts) and "moe_fallback" in entry)
        borrowed_rows += borrowed
        for k in checks:
            assert ("defaults: " in k.note) == borrowed, (k.id, k.note)
            if borrowed:
                assert f"{c.engine} on {vendor(c.gpu.name)}: " in k.note
                assert ("fewer than 4" in k.note) if entry else ("no fitted runs" in k.note)
    assert borrowed_rows > 0


@pytest.mark.parametrize(("engine", "version", "old"), [
    ("sglang", "0.4.3.post2 (image lmsysorg/sglang:latest)", True),  # SGLang's 0.4 series, before the fitted 0.5
    ("sglang", "v0.5.5.post1", False),
    ("vllm", "0.7.4.dev181+gf35f8e22", True),  # vLLM before 0.8: the V0 engine
    ("vllm", "v0.11.0", False),
    ("vllm", "", False),  # not stated: fitted, never guessed old
    ("trtllm", "0.9.0", False),  # every TensorRT-LLM release counts
])
def test_a_plan_on_an_older_engine_release_is_told_to_calibrate(engine, version, old):
    # the defaults are fitted on runs of current releases only; a plan that says it deploys an older one is warned,
    # once, in the plan's own warnings (the note prints them), and the same releases are the ones the fit leaves out
    from planhelp import replan

    from xlplan.decide.planner import plan
    from xlplan.io.planfile import reference_plan

    p = replan(reference_plan(), policy={"engine": engine, "engine_version": version, "redundancy": 1})
    warned = [w for w in plan(p, verify=False).warnings if w.startswith("engine release")]
    assert len(warned) == (1 if old else 0)
    assert bool(efficiency_defaults.superseded_release(engine, version)) == old
