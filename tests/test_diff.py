"""`xlplan diff OLD NEW` (issue 25): the inputs that changed, with owner and source, and what they change.

Expected consequences come from the reference plan's own section 6 (its closed-form breakpoints and what-ifs, computed
by the what-if search on the scenario, not by re-planning a changed plan) and from the runbook's bill arithmetic.
"""

from __future__ import annotations

import json

import pytest

from xlplan.cli import main
from xlplan.decide.diff import consequences, owner_section
from xlplan.decide.planner import plan
from xlplan.excel.inputs import LEGACY_INPUTS, all_inputs
from xlplan.io.planfile import plan_to_yaml, reference_plan
from xlplan.schema.diff import Compared, Consequences, InputChange, PlanDiff
from xlplan.schema.plan import Plan

P95 = 8000.0  # the runbook's what-if: p95 prompts x4, from 2,000 tokens


def _changed(**forecast_prompt) -> Plan:
    d = reference_plan().model_dump()
    d["forecast"]["prompt_tokens"].update(forecast_prompt)
    return Plan.model_validate(d)


def _write(tmp_path, name: str, p: Plan):
    path = tmp_path / name
    path.write_text(plan_to_yaml(p), encoding="utf-8")
    return path


def _diff_json(capsys, *args) -> tuple[int, dict]:
    code = main(["diff", *map(str, args), "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def ref_result():
    return plan(reference_plan(), verify=False)


@pytest.fixture
def files(tmp_path):
    # p99 rises with p95 (it may not be below it), as the what-if does (breakpoint_search.with_prompt_p95)
    return _write(tmp_path, "old.yaml", reference_plan()), _write(tmp_path, "new.yaml", _changed(p95=P95, p99=P95))


def _expected_consequences(ref_result) -> dict:
    """The closed-form consequence of p95 prompts at 8,000 tokens, from the reference plan's own section 6."""
    ref = reference_plan()
    step = next(b for b in ref_result.closed_form_breakpoints if b.variable == "prompt_p95" and b.direction == "up")
    what_if = next(s for s in ref_result.closed_form_sensitivities if "8,000 tokens" in s.change)
    runbook = next(b for b in ref_result.breakpoints if b.variable == "prompt_p95" and b.direction == "up")
    # the purchase grows one unit past 6,773 tokens (< 8,000) to 16 GPUs; the binding path changes only past 56,430
    # tokens (> 8,000), so the closed form's binding stays; the runbook's method flips to compute past 2,774 (< 8,000)
    assert step.fleet_step_at < P95 and step.binding_flip_at > P95 and runbook.binding_flip_at < P95
    hours, price = ref.hardware.hours_per_month, ref.hardware.usd_per_gpu_hour
    return {
        "purchased": {"old": 8, "new": step.purchased_after},  # 7 GPUs in nodes of 8 -> 8; the breakpoint says 16
        "with_redundancy": {"old": 7, "new": what_if.fleet},  # "the fleet goes to 9" (section 6)
        "load": {"old": 6, "new": what_if.load},  # N+1: 7 - 1 and 9 - 1
        "binding": {"old": "queueing", "new": "queueing"},
        "runbook_binding": {"old": "both", "new": runbook.binding_after},  # both -> compute
        # rented per GPU: GPUs with redundancy x $3/GPU-hour x 730 h = 7 x 2,190 = 15,330 and 9 x 2,190 = 19,710
        "monthly_usd": {"old": 7 * price * hours, "new": 9 * price * hours},
        "order": {"old": "rent 7 GPUs", "new": "rent 9 GPUs"},
    }


def test_one_changed_input_is_named_with_owner_source_and_every_consequence(capsys, files, ref_result):
    code, out = _diff_json(capsys, *files, "--no-verify")
    assert code == 1  # something differs, as diff says it
    assert set(out) == {"schema_version", "inputs_changed", "consequences", "differs"}
    ref = reference_plan()
    changed = {c["path"]: c for c in out["inputs_changed"]}
    assert list(changed) == ["forecast.prompt_tokens.p95", "forecast.prompt_tokens.p99"]
    p95 = changed["forecast.prompt_tokens.p95"]
    assert (p95["old"], p95["new"], p95["unit"]) == (2000, P95, "tokens")  # Percentiles: [tokens]
    assert p95["owner_section"] == "forecast"  # the workbook's PromptP95 input is the forecast owner's
    assert (p95["owner"], p95["source"]) == (ref.owners.forecast, ref.sources.forecast)
    assert p95["new_owner"] is None and p95["new_source"] is None  # neither changed
    c = out["consequences"]
    assert c["method"] == "closed form"
    assert (c["source"]["old"], c["source"]["new"]) == ("closed form", "closed form")  # not simulated: --no-verify
    for name, want in _expected_consequences(ref_result).items():
        assert (c[name]["old"], c[name]["new"]) == pytest.approx((want["old"], want["new"])), name
        assert c[name]["changed"] is (want["old"] != want["new"]), name
    what_if = next(s for s in ref_result.closed_form_sensitivities if "8,000 tokens" in s.change)
    assert c["usd_per_mtok"]["new"] == pytest.approx(what_if.usd_per_mtok)  # $0.166/M tokens on the note
    assert c["order_dates"] is None  # the reference plan has no growth section


def test_the_text_says_old_to_new_with_units_and_unchanged(capsys, files):
    assert main(["diff", *map(str, files), "--no-verify"]) == 1
    out = capsys.readouterr().out
    assert "forecast.prompt_tokens.p95: 2,000 tokens → 8,000 tokens" in out
    assert "owner (forecast): " in out and "source: " in out
    assert "purchased:" in out and "8 GPUs → 16 GPUs" in out
    assert "$15,330 → $19,710" in out  # 7 and 9 GPUs x $3 x 730 h
    assert "queueing, unchanged" in out
    assert "closed form" in out and "--no-verify" in out


@pytest.mark.slow
def test_a_plan_against_the_workbook_written_from_it_differs_in_nothing(capsys, tmp_path, files):
    book = tmp_path / "ref.xlsx"
    assert main(["plan", "--no-verify", str(files[0]), "--workbook", str(book)]) == 0
    capsys.readouterr()
    code, out = _diff_json(capsys, files[0], book)
    assert code == 0 and out["differs"] is False and out["inputs_changed"] == []
    assert not any(v["changed"] for v in out["consequences"].values() if isinstance(v, dict))


@pytest.mark.slow
def test_a_workbook_against_a_plan_file_finds_the_same_change(capsys, tmp_path, files):
    book = tmp_path / "ref.xlsx"
    assert main(["plan", "--no-verify", str(files[0]), "--workbook", str(book)]) == 0
    capsys.readouterr()
    _, from_files = _diff_json(capsys, *files)
    code, mixed = _diff_json(capsys, book, files[1])
    assert code == 1
    assert mixed == from_files


def test_a_new_owner_and_source_are_shown_beside_the_input(capsys, tmp_path):
    d = _changed(p95=P95, p99=P95).model_dump()
    d["owners"]["forecast"], d["sources"]["forecast"] = "Growth team", "traffic logs 2027-01"
    old, new = _write(tmp_path, "old.yaml", reference_plan()), _write(tmp_path, "new.yaml", Plan.model_validate(d))
    _, out = _diff_json(capsys, old, new)
    p95 = next(c for c in out["inputs_changed"] if c["path"] == "forecast.prompt_tokens.p95")
    assert (p95["new_owner"], p95["new_source"]) == ("Growth team", "traffic logs 2027-01")
    assert {"owners.forecast", "sources.forecast"} <= {c["path"] for c in out["inputs_changed"]}


def test_a_costs_input_names_the_pricing_owner_and_the_sections_own_source(capsys, tmp_path):
    d = reference_plan().model_dump()
    d["costs"]["source"] = "quote 2026-10"
    new = _write(tmp_path, "new.yaml", Plan.model_validate(d))
    d["hardware"]["usd_per_gpu_hour"] = 2.5
    newer = _write(tmp_path, "newer.yaml", Plan.model_validate(d))
    _, out = _diff_json(capsys, new, newer)
    [price] = out["inputs_changed"]
    assert (price["path"], price["unit"], price["owner_section"]) == ("hardware.usd_per_gpu_hour", "USD/GPU-hour", "pricing")
    _, out = _diff_json(capsys, tmp_path / "new.yaml", _write(tmp_path, "c.yaml", reference_plan()))
    [source] = out["inputs_changed"]
    assert source["path"] == "costs.source" and "costs.source: quote 2026-10" in source["source"]


def test_owner_sections_follow_the_workbooks_inputs():
    for spec in [*all_inputs(), *LEGACY_INPUTS]:
        assert owner_section(spec.path) == spec.owner, spec.name


def test_order_dates_are_the_schedules(capsys, tmp_path):
    # both plans grow 10% a month with a 90-day lead time; the order dates are what `xlplan schedule` prints for each
    def grown(p: Plan) -> Plan:
        return Plan.model_validate({**p.model_dump(), "growth": {"monthly": 0.10, "lead_time_days": 90, "start": "2027-04"}})

    old = _write(tmp_path, "old.yaml", grown(reference_plan()))
    new = _write(tmp_path, "new.yaml", grown(_changed(p95=P95, p99=P95)))
    _, out = _diff_json(capsys, old, new)
    dates = out["consequences"]["order_dates"]
    for side, path in (("old", old), ("new", new)):
        assert main(["schedule", str(path), "--verify", "none", "--json"]) == 0
        months = json.loads(capsys.readouterr().out)["months"]
        want = [(m["month"], m["order_by"]) for m in months if m["new_gpus"]]
        assert [(x.split(":")[0], x.split("order by ")[1]) for x in dates[side]] == want
    assert dates["changed"] is True  # 9 GPUs in the first month, not 7


def test_a_plan_that_cannot_be_met_has_no_figures(ref_result):
    c = consequences(ref_result, None, "closed form", ("", "the promise cannot be met"))
    assert c.feasible.new == "no: the promise cannot be met" and c.feasible.changed
    assert c.purchased.old == 8 and c.purchased.new is None and c.purchased.changed


@pytest.mark.parametrize("bad", ["missing.yaml", "folder", "not-a-plan.yaml", "missing.xlsx"])
def test_bad_input_is_one_line_and_status_2(capsys, tmp_path, files, bad):
    (tmp_path / "folder").mkdir()
    (tmp_path / "not-a-plan.yaml").write_text("foo: 1\nbar: [1, 2]\n", encoding="utf-8")
    assert main(["diff", str(files[0]), str(tmp_path / bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {tmp_path / bad}: "), err


@pytest.mark.parametrize("model", [InputChange, Compared, Consequences, PlanDiff])
def test_every_result_field_has_a_unit_or_is_a_section(model):
    for name, field in model.model_fields.items():
        section = any(m.__name__ in str(field.annotation) for m in (InputChange, Compared, Consequences))
        assert field.description and (section or "[" in field.description), f"{model.__name__}.{name}"


@pytest.mark.slow
def test_verify_passes_on_both_simulated_answers(capsys, files):
    code, out = _diff_json(capsys, *files, "--verify")
    c = out["consequences"]
    assert code == 1 and c["method"] == "verified"
    simulated = [plan(p, verify=True).answer for p in (reference_plan(), _changed(p95=P95, p99=P95))]
    assert (c["source"]["old"], c["source"]["new"]) == tuple(a.source for a in simulated)
    assert (c["with_redundancy"]["old"], c["with_redundancy"]["new"]) == tuple(a.with_redundancy for a in simulated)
    assert (c["monthly_usd"]["old"], c["monthly_usd"]["new"]) == pytest.approx(tuple(a.monthly_usd for a in simulated))
    # the setting each deploys, in the engine's own flags, as plan's Deploy line says it
    assert (c["settings"]["old"], c["settings"]["new"]) == tuple(a.settings for a in simulated)
