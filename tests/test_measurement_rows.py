"""A measurement row's conditions come from its condition columns, never a note; only the planner's refusal skips it."""

from __future__ import annotations

import pytest

from xlplan.evidence import validation
from xlplan.evidence.validation import predict_row
from xlplan.io.measurement_table import read_measurements
from xlplan.io.measurements import CORPUS, measured_row
from xlplan.plan.scenario import PlanningError


@pytest.fixture(scope="module")
def corpus():
    return {r["id"]: r for r in read_measurements(CORPUS)}


def _with(row: dict, **columns) -> dict:
    return {**row, **columns}


def test_a_note_about_a_missing_figure_does_not_make_the_settings_unknown(corpus):
    # N01's settings are stated; a worked note saying the TTFT was not in the excerpt is about a figure, not the engine
    row = _with(corpus["N01"], planner_check="TTFT not in the excerpt; settings unknown; launch command not shown",
                ttft_mean_ms="")
    checks = predict_row(measured_row(row))
    assert checks and not any(c.skipped for c in checks)
    assert {c.kind for c in checks} == {"throughput", "latency"}


def test_a_note_about_speculative_decoding_does_not_skip_a_plain_run(corpus):
    row = _with(corpus["N01"], planner_check="compare with the MTP speculative decoding run (EAGLE, draft model)")
    assert not any(c.skipped for c in predict_row(measured_row(row)))


def test_settings_the_settings_column_says_are_unknown_are_predicted_at_the_engines_defaults(corpus):
    # a benchmark that states no settings ran the engine's defaults: the same prediction as a row whose settings
    # column is blank (no memory fraction or budget given, so each is the engine's default), said on every check
    blank = predict_row(measured_row(_with(corpus["N01"], settings="", planner_check="")))
    for settings in ("settings unknown", "not stated", "launch command not in excerpt read"):
        checks = predict_row(measured_row(_with(corpus["N01"], settings=settings, planner_check="")))
        assert [c.predicted for c in checks] == [c.predicted for c in blank] and not any(c.skipped for c in checks)
        assert all("settings not stated: the engine's defaults" in c.note for c in checks)


def test_speculative_decoding_is_read_from_the_settings(corpus):
    (check,) = predict_row(measured_row(_with(corpus["N01"], settings="fixed concurrency; EAGLE-3 speculative decoding", planner_check="")))
    assert "speculative decoding" in check.skipped


def test_conditions_the_planner_refuses_are_skipped_with_its_reason(corpus, monkeypatch):
    # a prompt longer than the model's context: the plan the conditions make is invalid (pydantic's ValidationError)
    (check,) = predict_row(measured_row(_with(corpus["N01"], isl="10000000")))
    assert check.skipped.startswith("cannot be predicted:") and "context limit" in check.skipped

    def refuses(*args):
        raise PlanningError("no degree holds the weights")

    monkeypatch.setattr(validation, "_predict", refuses)
    (check,) = predict_row(measured_row(corpus["N01"]))
    assert check.skipped == "cannot be predicted: no degree holds the weights"


@pytest.mark.parametrize("bug", [ZeroDivisionError("float division by zero"), TypeError("unsupported operand"),
                                 ValueError("math domain error")])
def test_a_bug_in_the_model_is_raised_not_reported_as_a_skipped_row(corpus, monkeypatch, bug):
    def broken(*args):
        raise bug

    monkeypatch.setattr(validation, "_predict", broken)
    with pytest.raises(type(bug), match=str(bug)):
        predict_row(measured_row(corpus["N01"]))
