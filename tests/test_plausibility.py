"""Plausibility: a value no one means is refused in one line naming the likely slip, unless the plan accepts it."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xlplan.cli import main
from xlplan.decide.planner import plan as run_plan
from xlplan.io.planfile import reference_plan, reference_plan_text
from xlplan.plan.scenario import PlanningError
from xlplan.schema import plausibility
from xlplan.schema.plan import Plan

GOOD = yaml.safe_load(reference_plan_text())


def _with(section, **fields):
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in GOOD.items()}
    data[section] = {**(data.get(section) or {}), **fields}
    return data


def _run(tmp_path, capsys, data, *args):
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    rc = main(["plan", str(path), "--no-verify", *args])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return rc, out.out, out.err, str(path)


@pytest.mark.parametrize(("section", "field", "value", "slip", "by_schema"), [
    # each slip's fix is the arithmetic of its unit: 1.5 ms = 0.0015 s; $2,190 a month ÷ 730 h = $3.00 an hour;
    # 3,456,000 a day ÷ 86,400 s = 40 a second; 700 W = 0.7 kW; 12 cents = $0.12. The last two the schema refuses
    # first (past what can be: 20 kW per GPU, $2 per kWh), with the same fix in its own words.
    ("promise", "itl_s", 1.5, "1.5 ms is 0.0015", False),
    ("hardware", "usd_per_gpu_hour", 2190, "$2,190 a month is $3.00 an hour", False),
    ("forecast", "peak_rps", 3_456_000, "3,456,000 a day is 40 a second", False),
    ("policy", "mfu", 1.0, "0.01 to 0.8", False),
    ("policy", "memory_utilisation", 1.0, "0.05 to 0.98", False),
    ("policy", "step_overhead_s", 0.5, "0 to 0.1", False),
    ("costs", "kw_per_gpu", 700, "write 0.7", True),
    ("costs", "usd_per_kwh", 12, "write 0.12", True),
])
def test_a_slip_is_one_line_naming_the_file_field_value_and_fix(tmp_path, capsys, section, field, value, slip, by_schema):
    rc, _, err, path = _run(tmp_path, capsys, _with(section, **{field: value}))
    line = err.strip()
    assert rc == 2 and line.count("\n") == 0, err
    assert line.startswith(f"error: {path}: {section}.{field}: got "), line
    assert slip in line, line
    if not by_schema:
        assert f"accept_implausible: [{section}.{field}]" in line  # and how to say it is meant


def _never_planned(*_, **__):
    raise AssertionError("planned: an implausible input is refused before any computation")


@pytest.mark.parametrize(("changes", "field", "slip"), [
    # the fields the ranges first missed, each with the arithmetic of its likely slip: 3,350 GB/s ÷ 1,000 = 3.35 TB/s;
    # 989,000 GFLOP/s ÷ 1,000 = 989 TFLOP/s; 640 GiB a node ÷ 8 = 80 GiB a GPU; 24 h a day × 730 ÷ 24 = 730 h a month;
    # a reserved price above on-demand the schema refuses, so a tenth of a cent is the slip left; the 95th percentile written as a fraction
    ({"hardware": {"gpu": {"name": "h100-sxm", "hbm_tbps": 3350}}}, "hardware.gpu.hbm_tbps", "3,350 GB/s is 3.35 TB/s"),
    ({"hardware": {"gpu": {"name": "h100-sxm", "bf16_tflops": 989_000}}}, "hardware.gpu.bf16_tflops",
     "989,000 GFLOP/s is 989 TFLOP/s"),
    ({"hardware": {"gpu": {"name": "h100-sxm", "memory_gib": 5120}}}, "hardware.gpu.memory_gib",
     "5,120 GiB over 8 GPUs is 640 GiB each"),
    ({"hardware": {"gpu": {"name": "h100-sxm", "usd_per_gpu_hour": 2190}}}, "hardware.gpu.usd_per_gpu_hour",
     "$2,190 a month is $3.00 an hour"),
    ({"hardware": {"gpu": "h100-sxm", "hours_per_month": 24}}, "hardware.hours_per_month", "24 h a day is 730 h a month"),
    ({"policy": {"redundancy": 100}}, "policy.redundancy", "spare replicas on top of the load"),
    ({"forecast": {"average_utilisation": 0.0001}}, "forecast.average_utilisation", "0.001 to 1"),
    ({"forecast": {"prefix_reuse": 0.999}}, "forecast.prefix_reuse", "0 to 0.95"),
    ({"promise": {"percentile": 0.95}}, "promise.percentile", "the 95th percentile is written 95, not 0.95"),
    ({"costs": {"mode": "buy", "usd_per_kwh": 0.1, "hardware_ops_usd_per_month": 0, "residual_fraction": 0.9}}, "costs.residual_fraction", "0 to 0.6"),
    ({"costs": {"mode": "buy", "usd_per_kwh": 0.1, "hardware_ops_usd_per_month": 0, "licence_usd_per_gpu_year": 450_000}}, "costs.licence_usd_per_gpu_year", "0 to 20,000"),
    ({"costs": {"mode": "buy", "usd_per_kwh": 0.1, "hardware_ops_usd_per_month": 0, "network_usd_per_node": 5e7}}, "costs.network_usd_per_node", "0 to 500,000"),
    ({"costs": {"mode": "buy", "usd_per_kwh": 0.1, "hardware_ops_usd_per_month": 0, "storage_usd_per_node": 5e7}}, "costs.storage_usd_per_node", "0 to 500,000"),
    ({"costs": {"mode": "buy", "usd_per_kwh": 0.1, "hardware_ops_usd_per_month": 0, "installation_usd_per_node": 5e7}}, "costs.installation_usd_per_node", "0 to 250,000"),
    ({"contracts": {"reserved_usd_per_gpu_hour": 0.001, "source": "a quote, 2026-12"},
      "forecast": {**GOOD["forecast"], "daily_curve": [0.5] * 23 + [1.0]}}, "contracts.reserved_usd_per_gpu_hour", "0.05 to 100"),
    ({"installed": {"gpus": 5_000_000, "since": "2026-12"}}, "installed.gpus", "0 to 100,000"),
    ({"orders": [{"gpus": 8, "placed": "2026-12-01", "delivery": "2027-02"},
                 {"gpus": 9_000_000, "placed": "2026-12-01", "delivery": "2027-03"}]}, "orders.gpus", "1 to 100,000"),
    ({"growth": {"monthly": 0.9}}, "growth.monthly", "-0.3 to 0.5"),
    ({"growth": {"peaks_rps": [40, 50, 4_320_000]}}, "growth.peaks_rps", "4,320,000 a day is 50 a second"),
])
def test_every_field_a_user_types_has_a_range(tmp_path, capsys, changes, field, slip):
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in GOOD.items()}
    for section, fields in changes.items():
        data[section] = {**(data.get(section) or {}), **fields} if isinstance(fields, dict) else fields
    with pytest.MonkeyPatch.context() as mp:  # a refusal, not a computation: planning would fail the test
        mp.setattr("xlplan.decide.planner.plan", _never_planned)
        rc, _, err, path = _run(tmp_path, capsys, data)
    line = err.strip()
    assert rc == 2 and line.count("\n") == 0, err
    assert line.startswith(f"error: {path}: {field}: got "), line
    assert slip in line and f"accept_implausible: [{field}]" in line, line
    # accepted, the file reads (nothing else in it is refused), and the note records the acceptance
    from xlplan.io.planfile import read_plan

    accepted = read_plan(path, accept_implausible=(field,))
    assert [line.split(" = ")[0] for line in plausibility.accepted_lines(accepted)] == [f"accepted as meant: {field}"]


def test_a_rate_of_ten_to_the_fourteen_is_refused_not_planned(tmp_path, capsys):
    # 10¹⁴ req/s used to run the Erlang sums for minutes; the plausible range stops it before the engine starts
    rc, _, err, _ = _run(tmp_path, capsys, _with("forecast", peak_rps=1e14))
    assert rc == 2 and "forecast.peak_rps: got 100,000,000,000,000" in err


def test_a_value_meant_is_planned_and_the_note_says_so(tmp_path, capsys):
    data = _with("policy", mfu=0.9)
    data["accept_implausible"] = ["policy.mfu"]
    rc, out, _, _ = _run(tmp_path, capsys, data)
    assert rc == 0 and "accepted as meant: policy.mfu = 0.9" in out
    # the same from the command line, written after the command or before it
    for args in (["--accept-implausible", "policy.mfu"], ["--accept-implausible=policy.mfu"]):
        rc, out, err, _ = _run(tmp_path, capsys, _with("policy", mfu=0.9), *args)
        assert rc == 0 and "accepted as meant: policy.mfu = 0.9" in out, err


def test_accepting_a_field_without_a_range_is_refused(tmp_path, capsys):
    data = dict(GOOD, accept_implausible=["policy.mfx"])
    rc, _, err, _ = _run(tmp_path, capsys, data)
    assert rc == 2 and "accept_implausible" in err and "'policy.mfx' has no plausible range" in err
    assert "did you mean policy.mfu?" in err  # one letter from a field that has a range


@pytest.mark.slow
def test_an_answer_past_its_bounds_is_refused_unless_accepted():
    # 2,000,000 req/s of the runbook's traffic: Little's Law alone puts 2e6 × 15 s = 3e7 requests in flight, some
    # 200,000 replicas of one GPU at 150 conversations each — past 100,000 GPUs and $100M a month
    big = reference_plan().model_copy(update={"accept_implausible": ["forecast.peak_rps"]})
    big = Plan.model_validate({**big.model_dump(), "forecast": {**big.forecast.model_dump(), "peak_rps": 2e6}})
    with pytest.raises(PlanningError, match="result.fleet_gpus: got"):
        run_plan(big)
    meant = Plan.model_validate({**big.model_dump(), "accept_implausible": ["forecast.peak_rps", "result.fleet_gpus",
                                                                            "result.monthly_usd"]})
    r = run_plan(meant)
    assert r.answer.purchased > 100_000
    assert any(w.startswith("accepted as meant: result.fleet_gpus") for w in r.warnings)


def test_the_engines_own_defaults_and_the_reference_are_plausible():
    assert plausibility.inputs(reference_plan()) == []
    for r in plausibility.RANGES:
        assert r.low < r.high and r.reason and r.expected, r.field


# Orders of magnitude each numeric field is swept across; every other field as in the reference plan.
# (Left out: prices, and the fields inside an inline GPU, a list or a section the reference plan lacks.)
SWEPT = [r.field for r in plausibility.RANGES if not r.field.startswith(
    ("api.", "costs.", "hardware.gpu.", "orders.", "installed.", "contracts.", "growth."))]


@pytest.mark.slow
@settings(max_examples=40, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(SWEPT), exponent=st.integers(-6, 9))
def test_no_plan_exits_0_with_an_implausible_answer_without_a_warning(tmp_path_factory, field, exponent):
    # Thresholds of this test's own, independent of the plausibility layer: a fleet over 100,000 GPUs, a bill over
    # $100M a month or under $1, $/M tokens over $1,000 — each is an answer no one meant.
    section, *rest = field.split(".")
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in GOOD.items()}
    node = data.setdefault(section, {})
    for part in rest[:-1]:
        node[part] = dict(node.get(part) or {})
        node = node[part]
    node[rest[-1]] = 10.0 ** exponent
    path = tmp_path_factory.mktemp("sweep") / "plan.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    from xlplan.io.errors import InputError
    from xlplan.io.planfile import read_plan

    try:
        r = run_plan(read_plan(path))
    except (InputError, PlanningError):
        return  # refused: exit 2 with its line
    absurd = (r.answer.purchased > 100_000 or not 1.0 <= r.answer.monthly_usd <= 1e8
              or r.cost.usd_per_mtok > 1000)
    assert not absurd or r.warnings, (field, exponent, r.answer)


def test_the_readme_lists_every_range_as_the_code_has_it():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    for r in plausibility.RANGES + plausibility.RESULT_BOUNDS:
        assert f"| `{r.field}` | {plausibility._num(r.low)} to {plausibility._num(r.high)} |" in readme, r.field


@pytest.mark.parametrize(("section", "field", "value", "slip"), [
    # found trying it as a new user: seconds per token written as a speed (0.05 s/token = 1 ÷ 0.05 = 20 tokens/s);
    # an API price per thousand tokens ($0.00025 per 1k × 1,000 = $0.25 per million); half a millisecond in seconds
    ("promise", "tokens_per_s", 0.05, "0.05 s a token is 20 tokens/s"),
    ("api", "usd_per_mtok_input", 0.00025, "$0.00025 per 1k is $0.25 per million"),
    ("policy", "step_overhead_s", 0.5, "0.5 ms is 0.0005"),
])
def test_slips_a_new_user_made(tmp_path, capsys, section, field, value, slip):
    data = _with(section, **{field: value})
    if section == "api":
        data["api"] = {"usd_per_mtok_input": value, "usd_per_mtok_output": 0.75}
    if field == "tokens_per_s":
        data["promise"] = {k: v for k, v in data["promise"].items() if k != "itl_s"}  # the speed instead of the target
    rc, _, err, _ = _run(tmp_path, capsys, data)
    assert rc == 2 and slip in err, err


def test_the_flag_without_a_field_and_a_field_given_alone(tmp_path, capsys):
    assert main(["plan", "--no-verify", "--accept-implausible"]) == 2
    assert "--accept-implausible: got nothing after it; expected a plan field" in capsys.readouterr().err
    assert main(["--accept-implausible", "plan", "--no-verify"]) == 2  # the command taken for the field
    assert "--accept-implausible: got 'plan'; expected a plan field" in capsys.readouterr().err
    data = _with("policy", mfu=0.9)
    data["accept_implausible"] = "policy.mfu"  # one field without brackets reads as the list it means
    rc, out, _, _ = _run(tmp_path, capsys, data)
    assert rc == 0 and "accepted as meant: policy.mfu = 0.9" in out


@pytest.mark.slow
def test_an_answer_past_both_bounds_names_the_file_and_one_way_to_accept_both(tmp_path, capsys):
    data = _with("forecast", peak_rps=2e6)
    data["accept_implausible"] = ["forecast.peak_rps"]
    rc, _, err, path = _run(tmp_path, capsys, data)
    assert rc == 2 and err.startswith(f"error: {path}: cannot plan: result.fleet_gpus: got ")
    assert "accept_implausible: [result.fleet_gpus, result.monthly_usd]" in err


@pytest.mark.slow
def test_compare_refuses_an_option_past_the_bounds_as_plan_does():
    # the same 2,000,000 req/s plan that `plan` refuses (test above): compare's own row says why, not a $1B bill
    from xlplan.decide import compare

    d = reference_plan().model_dump()
    d["forecast"]["peak_rps"], d["accept_implausible"] = 2e6, ["forecast.peak_rps"]
    p = Plan.model_validate(d)
    own = compare.option(p, "", p.model.weights_dtype, p.model.kv_dtype, is_plan=True)
    assert not own.feasible and own.reason.startswith("result.fleet_gpus: got ")
    meant = Plan.model_validate({**d, "accept_implausible": ["forecast.peak_rps", "result.fleet_gpus", "result.monthly_usd"]})
    assert compare.option(meant, "", p.model.weights_dtype, p.model.kv_dtype, is_plan=True).feasible


def test_schedule_stops_at_the_first_month_past_a_bound_unless_accepted():
    # the runbook's traffic at scale: 135,437 GPUs × $3/h × 730 h = $296.6M a month at 10⁶ req/s, ~$297 per req/s
    # (queueing binds, so the fleet grows with the rate): 30,000 req/s is ~$8.9M, within $100M; 500,000 is ~$148M, past it
    from xlplan.decide import schedule
    from xlplan.plan.scenario import resolve

    s = resolve(reference_plan())
    out = schedule.schedule(s, [30_000.0, 500_000.0], "2027-01", 90)
    assert [m.month for m in out.months] == ["2027-01"]
    assert out.stopped.startswith("2027-02: at 500,000 requests/s the answer passes a plausible bound (result.")
    meant = schedule.schedule(s, [30_000.0, 500_000.0], "2027-01", 90,
                              accepted=("result.fleet_gpus", "result.monthly_usd"))
    assert len(meant.months) == 2 and not meant.stopped
