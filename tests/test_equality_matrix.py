"""The equality matrix: every surface gives the engine's figure, on every plan of tests/matrix_plans.py.

Plans: dense, MoE, MLA, long context, heavy-tailed and calibrated on the engine's default conventions, and the
reference. The engine's figure is ``xlplan.decide.planner.plan(p)``'s Answer (the fleet verified in simulation where the
default plan simulates, else the closed form, labelled). Surfaces, and where each is checked:

- note (text), JSON, Markdown, the workbook's cached values: here, from one ``xlplan plan --json --markdown
  --workbook`` run;
- native formulas in LibreOffice and the Excel-grammar engine: here (every formula cell against its cached value and
  the named outputs against the JSON, ``workbookhelp.recalc_and_compare``);
- the ``--formulas udf`` workbook computed through the functions, and every Excel function it calls:
  tests/test_udf_workbook.py (the same six default-convention plans, group ``defaults``);
- ``compare``, ``schedule``, ``simulate`` and ``capacity``: here.

Where a surface differs by design it says so and the test holds it to that: the workbook's formulas and its Options and
Schedule tabs show the closed form, labelled; the Answer cells are the engine's values.
"""

import json

import openpyxl
import pytest
import yaml
from matrix_plans import matrix_plans

from xlplan.cli import main
from xlplan.decide import capacity, compare, schedule
from xlplan.plan.scenario import resolve
from xlplan.report.note import render_text

NAMES = list(matrix_plans())


def _money(x: float) -> str:
    return f"${x:,.0f}"


def _surfaces(p, tmp_path, capsys):
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(p.model_dump(mode="json", exclude_none=True)), encoding="utf-8")
    md, wb = tmp_path / "note.md", tmp_path / "note.xlsx"
    capsys.readouterr()
    assert main(["plan", str(path), "--json", "--markdown", str(md), "--workbook", str(wb)]) == 0
    js = json.loads(capsys.readouterr().out)
    return path, js, md.read_text(encoding="utf-8"), openpyxl.load_workbook(wb, data_only=True)


def _named(book, name):
    (title, ref), = book.defined_names[name].destinations
    return book[title][ref.replace("$", "")].value


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_surface_gives_the_engines_answer(matrix_results, name, tmp_path, capsys):
    p, r = matrix_results[name]
    a = r.answer
    path, js, md, book = _surfaces(p, tmp_path, capsys)
    # the Answer line's words: load, with redundancy, the order (what the bill pays for) and the bill, identical in
    # the note and the Markdown; the bill is the GPUs the order names at the plan's price and hours
    words = (f"{a.load} GPUs for the load, {a.with_redundancy} with redundancy", f": {a.order};", _money(a.monthly_usd))
    assert a.monthly_usd == pytest.approx(a.billed_gpus * r.cost.usd_per_gpu_hour * r.cost.hours_per_month
                                          + (r.cost.monthly_usd - r.cost.billed_gpus * r.cost.usd_per_gpu_hour
                                             * r.cost.hours_per_month))  # the owned fleet's fixed costs, where bought
    for text in (render_text(r), md):
        answer_line = next(ln for ln in text.splitlines() if "Answer:" in ln)
        assert all(w in answer_line for w in words), (name, answer_line)
    # JSON: the same figures, to the cent
    ja = js["answer"]
    assert (ja["source"], ja["load"], ja["with_redundancy"], ja["purchased"]) == (a.source, a.load, a.with_redundancy, a.purchased)
    assert ja["monthly_usd"] == pytest.approx(a.monthly_usd, abs=0.005)
    # the workbook's Answer cells (engine values, cached)
    assert (_named(book, "AnswerLoad"), _named(book, "AnswerWithRedundancy"), _named(book, "AnswerPurchased")) == (
        a.load, a.with_redundancy, a.purchased)
    assert _named(book, "AnswerMonthlyUSD") == pytest.approx(a.monthly_usd, abs=0.005)
    assert (_named(book, "AnswerOrder"), _named(book, "AnswerBilledGPUs")) == (a.order, a.billed_gpus)
    # the setting to deploy: the Summary's Deploy cell, the JSON's and the note's Deploy row say the same flags
    assert _named(book, "AnswerSettings") == ja["settings"] == a.settings
    assert any(ln.strip().startswith("Deploy") and a.settings in ln for ln in render_text(r).splitlines())
    if r.verified is not None:  # the simulation's sentence on the Summary carries its stale flag, current as built
        assert _named(book, "SummaryVerifiedSentenceStale") == "current"
    # compare: the plan's own row is the Answer (verified as plan verifies it)
    own = next(o for o in compare.compare(p, [p.hardware.gpu], verify_top=1) if o.is_plan)
    assert (own.source, own.load, own.with_redundancy, own.purchased) == (a.source if a.source == "verified" else own.source,
                                                                          a.load, a.with_redundancy, a.purchased)
    assert own.order == a.order
    assert own.monthly_usd == pytest.approx(a.monthly_usd)
    # schedule, every month verified: a one-month schedule at the plan's peak is the Answer
    s = resolve(p)
    month = schedule.schedule(s, [p.forecast.peak_rps], "2027-01", 90, verify="every", percentile=p.promise.percentile,
                              max_context=p.model.resolve().max_context_tokens,
                              budget_set_by_plan=p.policy.max_num_batched_tokens is not None).months[0]
    assert (month.load, month.with_redundancy, month.order) == (a.load, a.with_redundancy, a.order)
    assert (month.tp, month.step_budget_tokens) == (a.tp, a.step_budget_tokens)  # at the Answer's setting
    assert month.monthly_usd == pytest.approx(a.monthly_usd)
    if a.source != "verified":
        # the long-context plan's closed form is past what the default simulation takes on (plan says so): simulate
        # and capacity would answer a question plan did not; the closed form is what every surface above shows
        assert r.verified is None and any("not simulated" in w for w in r.warnings)
        return
    # simulate: the default fleet is the one plan simulates, and its search finds the Answer's load
    capsys.readouterr()
    assert main(["simulate", str(path), "--search", "--json"]) == 0
    sim = json.loads(capsys.readouterr().out)
    assert sim["gpus"] == a.closed_form_load  # the closed form at the Answer's setting (the configuration search's)
    assert sim["verified_load_gpus"] == a.load and sim["tp"] == a.tp
    # capacity: the Answer's load holds the plan's peak in simulation; one replica fewer does not
    holds = capacity.verified_capacity(s, a.load, p.promise.percentile, p.model.resolve().max_context_tokens, 0.25,
                                       p.policy.max_num_batched_tokens is not None)
    assert holds.max_peak_rps >= p.forecast.peak_rps
    if a.load > a.tp:
        fewer = capacity.verified_capacity(s, a.load - a.tp, p.promise.percentile, p.model.resolve().max_context_tokens,
                                           0.25, p.policy.max_num_batched_tokens is not None)
        assert fewer.max_peak_rps < p.forecast.peak_rps


@pytest.mark.slow
def test_native_formulas_in_both_engines_agree_with_the_engine(tmp_path):
    # every formula cell of each matrix plan's workbook, evaluated by LibreOffice and by the Excel-grammar engine,
    # equals the cached value the exporter wrote, and the named outputs equal `xlplan plan --json`
    from workbookhelp import recalc_and_compare

    assert recalc_and_compare(matrix_plans(), tmp_path) == []
