"""Calibration: benchmark files built from known efficiencies give those efficiencies back; public data split in half."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
import yaml

from xlplan.cli import main
from xlplan.evidence.bench_conditions import Efficiencies, conditions_of_plan, replace_concurrency
from xlplan.evidence.calibrate import fit
from xlplan.evidence.predict import steady_state
from xlplan.io.bench_results import read_results
from xlplan.io.errors import InputError
from xlplan.io.planfile import reference_plan

# The truth the synthetic benchmark files are written from: a vLLM replica of Llama-3.1-8B bf16 on one H100 whose
# efficiencies are these. Concurrency 1 and 8 with short prompts are memory- and overhead-bound; 64 with 8k prompts
# reads 64 long caches per step; 384 with long outputs is compute-bound in its weight GEMMs.
TRUE = Efficiencies(prefill_mfu=0.52, decode_mfu=0.33, bandwidth_efficiency=0.71, step_overhead_s=0.003, expert_efficiency=1.0)
RUNS = [(1, 1000, 200), (8, 1000, 200), (64, 8000, 300), (384, 300, 1000)]


def _conditions():
    return conditions_of_plan(reference_plan(), 1)


def _truth(c, isl, osl):
    from dataclasses import replace

    on = steady_state(replace(replace_concurrency(_conditions(), c), isl=isl, osl=osl), TRUE)
    return on.ttft_s, on.itl_s, on.output_tok_s


def write_vllm(folder: Path) -> list[Path]:
    paths = []
    for c, isl, osl in RUNS:
        ttft, itl, thr = _truth(c, isl, osl)
        d = {"date": "20261130-120000", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B", "num_prompts": 1000,
             "max_concurrency": c, "duration": 100.0, "completed": 1000, "total_input_tokens": 1000 * isl,
             "total_output_tokens": 1000 * osl, "request_throughput": thr / osl, "output_throughput": thr,
             "total_token_throughput": thr * (isl + osl) / osl, "mean_ttft_ms": ttft * 1e3, "median_ttft_ms": ttft * 1e3,
             "mean_tpot_ms": itl * 1e3, "mean_itl_ms": itl * 1e3, "median_itl_ms": itl * 1e3}
        p = folder / f"vllm-c{c}.json"
        p.write_text(json.dumps(d))
        paths.append(p)
    return paths


def write_guidellm(folder: Path) -> list[Path]:
    benchmarks = []
    for c, isl, osl in RUNS:
        ttft, itl, thr = _truth(c, isl, osl)
        benchmarks.append({"type_": "generative_benchmark", "config": {"strategy": {"type_": "concurrent", "streams": c}},
                           "metrics": {"time_to_first_token_ms": {"successful": {"mean": ttft * 1e3, "median": ttft * 1e3}},
                                       "inter_token_latency_ms": {"successful": {"mean": itl * 1e3}},
                                       "output_tokens_per_second": {"successful": {"mean": thr}},
                                       "prompt_token_count": {"successful": {"mean": isl}},
                                       "output_token_count": {"successful": {"mean": osl}}}})
    p = folder / "guidellm.json"
    p.write_text(json.dumps({"benchmarks": benchmarks}))
    return [p]


def write_genai_perf(folder: Path) -> list[Path]:
    paths = []
    for c, isl, osl in RUNS:
        ttft, itl, thr = _truth(c, isl, osl)
        d = {"request_throughput": {"unit": "requests/sec", "avg": thr / osl},
             "time_to_first_token": {"unit": "ms", "avg": ttft * 1e3, "p50": ttft * 1e3},
             "inter_token_latency": {"unit": "ms", "avg": itl * 1e3},
             "output_token_throughput": {"unit": "tokens/sec", "avg": thr},
             "output_sequence_length": {"unit": "tokens", "avg": osl}, "input_sequence_length": {"unit": "tokens", "avg": isl},
             "input_config": {"model": ["meta-llama/Llama-3.1-8B"], "concurrency": c}}
        p = folder / f"c{c}" / "profile_export_genai_perf.json"
        p.parent.mkdir()
        p.write_text(json.dumps(d))
        paths.append(p)
    return paths


@pytest.mark.parametrize("writer", [write_vllm, write_guidellm, write_genai_perf])
def test_known_efficiencies_fall_in_the_fits_intervals(tmp_path, writer):
    # the files hold exactly what the serving model predicts at TRUE. The fit is regularised (the engine's defaults are
    # its prior), so it need not land on TRUE where the runs pin a field only loosely (bandwidth against the per-step
    # overhead here); what a posterior must do is move each field it fits from the prior towards the truth and hold the
    # truth inside its stated 95% interval.
    runs = read_results(writer(tmp_path))
    assert len(runs) == 4
    f = fit(runs, _conditions())
    prior = Efficiencies().resolved("vllm", _conditions().gpu.name)
    assert set(f.identified) == {"prefill_mfu", "decode_mfu", "bandwidth_efficiency", "step_overhead_s"}
    spans = {"prefill_mfu": f.prefill_range, "decode_mfu": f.decode_range, "bandwidth_efficiency": f.bandwidth_range,
             "step_overhead_s": f.overhead_range_s}
    for field, (lo, hi) in spans.items():
        truth, got, was = getattr(TRUE, field), getattr(f.efficiencies, field), getattr(prior, field)
        assert lo <= truth <= hi, field
        assert abs(got - truth) < abs(was - truth), field
    # the runs that pin prefill (TTFT of an 8,000-token prompt) and decode compute (batch 384) give them back closely
    assert f.efficiencies.prefill_mfu == pytest.approx(0.52, rel=0.05)
    assert f.efficiencies.decode_mfu == pytest.approx(0.33, rel=0.10)
    assert f.median_error < 0.01


def test_one_run_leaves_what_it_cannot_identify_at_the_default(tmp_path):
    # one run at concurrency 1: each step reads the weights once, so its inter-token latency is overhead + bytes ÷
    # bandwidth — one equation in two unknowns, and no GEMM is compute-bound (decode MFU cannot show). The fit may move
    # one of bandwidth and overhead, never both, and must leave decode MFU exactly at the engine's default, saying so.
    runs = read_results(write_vllm(tmp_path))[:1]
    f = fit(runs, _conditions())
    prior = Efficiencies().resolved("vllm", _conditions().gpu.name)
    assert "decode_mfu" not in f.identified and f.efficiencies.decode_mfu == prior.decode_mfu
    assert not {"bandwidth_efficiency", "step_overhead_s"} <= set(f.identified)
    assert any("decode MFU" in n and "left at its default" in n for n in f.notes)
    assert f.decode_range == (prior.decode_mfu, prior.decode_mfu)


def test_an_implausible_fit_is_refused_naming_the_run(tmp_path, capsys):
    # a run four times faster than the model allows at the default efficiencies: no plausible efficiency reproduces it
    # (the fit would need bandwidth past the ~92% any kernel reaches, or an MFU past 0.8), so it is refused by name
    from xlplan.evidence.calibrate_map import ImplausibleFit

    path = write_vllm(tmp_path)[0]
    d = json.loads(path.read_text())
    d.update(mean_itl_ms=d["mean_itl_ms"] / 4, mean_tpot_ms=d["mean_tpot_ms"] / 4, median_itl_ms=d["median_itl_ms"] / 4,
             output_throughput=d["output_throughput"] * 4, mean_ttft_ms=d["mean_ttft_ms"] / 4, median_ttft_ms=d["median_ttft_ms"] / 4)
    path.write_text(json.dumps(d))
    with pytest.raises(ImplausibleFit, match="vllm-c1.json: the fit is implausible"):
        fit(read_results([path]), _conditions())
    assert main(["calibrate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "vllm-c1.json" in err and "implausible" in err and "Traceback" not in err


@pytest.mark.slow
def test_calibrate_writes_the_policy_and_the_plan_reports_a_range(tmp_path, capsys):
    paths = write_vllm(tmp_path)
    out = tmp_path / "calibrated.yaml"
    assert main(["calibrate", *map(str, paths), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "the engine's defaults as the prior" in printed and "95% interval" in printed and "range" in printed
    policy = yaml.safe_load(out.read_text())["policy"]
    lo, hi = policy["calibration"]["decode_mfu_range"]
    assert lo <= 0.33 <= hi and lo < policy["decode_mfu"] < hi and policy["calibration"]["runs"] == 4
    assert policy["calibration"]["source"].startswith("vllm-c1.json, vllm-c8.json")
    assert main(["plan", str(out)]) == 0
    assert "Calibrated range" in capsys.readouterr().out


def test_a_result_file_of_another_format(tmp_path, capsys):
    p = tmp_path / "other.json"
    p.write_text(json.dumps({"accuracy": 0.9, "model": "x"}))
    with pytest.raises(InputError, match="a result file of another format \\(keys: accuracy, model\\); expected `vllm bench serve"):
        read_results([p])
    q = tmp_path / "notjson.json"
    q.write_text("time,value\n1,2\n")
    assert main(["calibrate", str(q)]) == 2
    assert "not JSON" in capsys.readouterr().err


@pytest.mark.slow
def test_leave_one_source_out_uses_no_row_of_the_source_it_predicts():
    # the honest check of the default efficiencies: refit the table without one source and predict that source's rows

    from xlplan.evidence.calibrate import fit_defaults, predicted
    from xlplan.evidence.validation import run_of
    from xlplan.io.measurement_table import read_measurements
    from xlplan.io.measurements import CORPUS, measured_row, source_group

    rows = read_measurements(CORPUS)
    pairs = [(source_group(r["source"]), run_of(measured_row(r))) for r in rows]
    pairs = [(g, r) for g, r in pairs if r is not None]
    groups = {g for g, _ in pairs}
    assert len(groups) >= 5
    errors = []
    # three folds, each a full refit (the report's every-source figure uses xlplan/evidence/held_out.py)
    for g in sorted(groups, key=lambda h: -sum(1 for k, _ in pairs if k == h))[:3]:
        train = [r for h, r in pairs if h != g]
        table = fit_defaults(train)
        assert table["overall"]["runs"] + table["overall"].get("moe_runs", 0) == len(train)
        for r in (r for h, r in pairs if h == g):
            p = predicted(r, Efficiencies(), table=table)
            errors += [abs(p[k] / m - 1) for k, m in (("output_tok_s", r.output_tok_s), ("itl_s", r.itl_s)) if m]
    # the fold's table is a value: the shipped defaults are untouched by it
    from xlplan.serving import efficiency_defaults

    assert efficiency_defaults.default_efficiencies("vllm", "H100 SXM") == efficiency_defaults.default_efficiencies_for("vllm", "nvidia", efficiency_defaults.shipped_table())
    # the figure the README reports (a measurement of the model, not a target met): see benchmarks/bench_accuracy.py
    assert 0 < statistics.median(errors) < 0.5


@pytest.mark.slow
def test_workbook_shows_the_calibrated_range_on_3_constraints(tmp_path, capsys):
    import openpyxl

    paths = write_vllm(tmp_path)
    out = tmp_path / "calibrated.yaml"
    assert main(["calibrate", *map(str, paths), "-o", str(out)]) == 0
    xlsx = tmp_path / "c.xlsx"
    assert main(["workbook", str(out), "-o", str(xlsx)]) == 0
    ws = openpyxl.load_workbook(xlsx)["3 Constraints"]
    labels = {row[0].value: row for row in ws.iter_rows(min_col=1, max_col=4) if row[0].value}
    assert "High efficiencies (fewer GPUs)" in labels and "Low efficiencies (more GPUs)" in labels
    assert "calibrated from vllm-c1.json" in labels["Low efficiencies (more GPUs)"][3].value
    capsys.readouterr()
    assert main(["check", str(xlsx)]) == 0


def test_an_inter_token_latency_written_in_seconds_is_refused_with_the_unit_named(tmp_path, capsys):
    # mean_itl_ms is in milliseconds; a run that wrote 0.012 (seconds) where 12 was meant claims an 8B step in 12 µs,
    # a thousand times under what reading the weights once takes at any plausible bandwidth (~16 GB ÷ 3.35 TB/s ≈ 5 ms),
    # and no engine's token gap is under half a millisecond: the reader refuses it before any fit, naming the file, the
    # field and the likely slip
    paths = write_vllm(tmp_path)
    d = json.loads(paths[1].read_text())
    d.update(mean_itl_ms=d["mean_itl_ms"] / 1e3, median_itl_ms=d["median_itl_ms"] / 1e3, mean_tpot_ms=d["mean_tpot_ms"] / 1e3)
    paths[1].write_text(json.dumps(d))
    assert main(["calibrate", *map(str, paths)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "vllm-c8.json" in err[0] and "mean_itl_ms: got 0.0102373; expected milliseconds" in err[0]
    assert "was it seconds?" in err[0]
    assert err[0].count("vllm-c8.json") == 1  # named once, not in the prefix and again in the message


def test_calibrate_never_writes_over_its_own_plan_even_with_force(tmp_path, capsys):
    # `calibrate … --plan cal.yaml -o cal.yaml --force` once rewrote the plan it read: refused before any fitting
    paths = write_vllm(tmp_path)
    plan_file = tmp_path / "cal.yaml"
    main(["example", "-o", str(plan_file)])
    before = plan_file.read_bytes()
    capsys.readouterr()
    rc = main(["calibrate", *map(str, paths), "--plan", str(plan_file), "-o", str(plan_file), "--force"])
    err = capsys.readouterr().err
    assert rc == 2 and "cal.yaml" in err and err.strip().count("\n") == 0, err
    assert plan_file.read_bytes() == before
