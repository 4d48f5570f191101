"""The purchase decision: which hardware (compare), when to order (schedule), rent or buy (costs).

Expected figures come from the runbook's worked example (5 GPUs x $3 x 730 h = $10,950 a month, 8 purchased),
from compounding growth worked by hand, and from the ownership formula worked by hand in each test's comment.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import statistics
from pathlib import Path

import pytest
import yaml
from planhelp import replan

from xlplan import dates
from xlplan.cli import main
from xlplan.decide import compare, schedule, schedule_calendar
from xlplan.decide.planner import plan as run_plan
from xlplan.io.planfile import reference_plan
from xlplan.plan.scenario import resolve

DATA = Path(__file__).resolve().parents[1] / "xlplan" / "data"


def _write(tmp_path, data, name="p.yaml") -> Path:
    f = tmp_path / name
    f.write_text(yaml.safe_dump(data))
    return f


# ----------------------------------------------------------------------------------------------------------- compare


@pytest.mark.slow
@pytest.mark.slow
def test_reference_option_is_exactly_the_plan():
    # `compare` gives the plan's own row the fleet `plan` answers: the runbook's method says 4 + 1 (its bill $10,950),
    # but in simulation 4 queue without bound and 6 keep the promise, 7 with one replica lost (6 + 1 at TP 1), a node
    # of 8: 7 × $3/h × 730 h = $15,330 a month.
    options = compare.compare(reference_plan())
    mine = [o for o in options if o.is_plan]
    assert len(mine) == 1
    o = mine[0]
    r = run_plan(reference_plan(), verify=True)
    assert (o.gpu, o.weights_dtype, o.kv_dtype, o.tp) == ("h100-sxm", "bf16", "bf16", 1)
    assert o.source == "verified" and (o.load, o.with_redundancy, o.purchased) == (6, 7, 8)
    assert (o.load, o.with_redundancy, o.purchased) == (r.answer.load, r.answer.with_redundancy, r.answer.purchased)
    assert o.monthly_usd == pytest.approx(7 * 3.0 * 730) == r.answer.monthly_usd
    assert o.runbook_load == 4 and o.closed_form_load == r.closed_form.load
    assert o.binding == r.closed_form.binding
    # the five cheapest priced options are all verified, each as `plan` would verify it on its own
    priced = [x for x in options if x.feasible and x.usd_per_mtok is not None]
    assert all(x.source == "verified" for x in priced[:5])


def test_without_verification_every_option_is_the_closed_form():
    # verify_top=0 ranks the closed form alone (the workbook's Options tab), each row saying so
    options = compare.compare(reference_plan(), ["h100-sxm"], verify_top=0)
    assert {o.source for o in options if o.feasible} == {"closed form"}
    mine = next(o for o in options if o.is_plan)
    assert mine.load == run_plan(reference_plan()).closed_form.load


def test_options_are_ranked_and_unpriced_ones_are_missing_not_zero():
    options = compare.compare(reference_plan(), verify_top=0)  # the ranking rule, on the closed form alone
    priced = [o.usd_per_mtok for o in options if o.feasible and o.usd_per_mtok is not None]
    assert priced == sorted(priced)
    # The GH200 has no rental price in the catalog: its cost is missing, never $0, and it ranks after every priced one.
    gh = [o for o in options if o.gpu == "gh200-96gb"]
    assert gh and all(o.monthly_usd is None and o.usd_per_mtok is None and "no catalog price" in o.reason for o in gh)
    first_unpriced = next(i for i, o in enumerate(options) if o.feasible and o.usd_per_mtok is None)
    assert all(o.usd_per_mtok is None or not o.feasible for o in options[first_unpriced:])


def test_compare_shows_a_missing_price_as_price_missing_never_zero(capsys):
    # The GH200 has no rental price in the catalog: its $/month, $/M tokens (and in JSON its fixed cost, which has no
    # bill to be added to) are missing, said in words in the table, null in JSON; none is $0, which would read as free.
    # --all: its four formats (bf16 and fp8 weights, each cache), the fp8-weights rows marked as a format change
    assert main(["compare", "--gpus", "h100-sxm,gh200-96gb", "--verify-top", "0", "--all"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "│ NVIDIA GH200" in line]
    assert len(rows) == 4 and all(line.count("price missing") == 2 and "$0" not in line for line in rows)
    assert main(["compare", "--gpus", "h100-sxm,gh200-96gb", "--verify-top", "0", "--json"]) == 0
    gh = [o for o in json.loads(capsys.readouterr().out)["options"] if o["gpu"] == "gh200-96gb"]
    assert gh and all(o[k] is None for o in gh for k in ("usd_per_gpu_hour", "monthly_usd", "usd_per_mtok", "fixed_usd_per_month"))


def test_formats_follow_the_tensor_cores():
    # An A100 has no FP8 tensor cores: bf16 only. An H100 adds fp8; a B200 adds fp4 (NVFP4) weights.
    from xlplan import catalog

    assert compare.formats(catalog.get_gpu("a100-80gb")) == [("bf16", "bf16")]
    assert ("fp8", "fp8") in compare.formats(catalog.get_gpu("h100-sxm"))
    assert ("nvfp4", "fp8") in compare.formats(catalog.get_gpu("b200"))
    assert not any(w == "nvfp4" for w, _ in compare.formats(catalog.get_gpu("h100-sxm")))


def test_compare_json_and_named_gpus(capsys):
    assert main(["compare", "--gpus", "h100-sxm,h200", "--verify-top", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {o["gpu"] for o in out["options"]} == {"h100-sxm", "h200"}
    for o in out["options"]:
        for key in ("gpu", "weights_dtype", "kv_dtype", "tp", "load", "with_redundancy", "purchased", "binding",
                    "monthly_usd", "usd_per_mtok", "feasible", "reason"):
            assert key in o
    assert "cheaper per token" in out["recommendation"] or "cheapest" in out["recommendation"]


def test_compare_unknown_gpu_exits_2(capsys):
    assert main(["compare", "--gpus", "h100-sx"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "h100-sx" in err[0] and "did you mean" in err[0]


def test_infeasible_option_says_why():
    # Llama-3.1-405B in bf16 (~756 GiB) fits no TP degree on 24 GiB cards: infeasible with the planner's reason.
    data = reference_plan().model_dump(exclude_none=True)
    data["model"] = {"name": "llama-3.1-405b", "weights_dtype": "bf16", "kv_dtype": "bf16"}
    from xlplan.schema.plan import Plan

    o = compare.option(Plan.model_validate(data), "rtx-4090", "bf16", "bf16")
    assert not o.feasible and "do not fit" in o.reason


# ---------------------------------------------------------------------------------------------------------- schedule


def test_ten_percent_a_month_for_a_year():
    # Compounding: month m's peak is 40 x 1.1^m. The fleet bought never shrinks; each month that adds GPUs has its
    # order dated exactly the lead time (90 days) before the month's first day.
    s = resolve(reference_plan())
    out = schedule.schedule(s, schedule_calendar.monthly_peaks(40.0, 0.10, 12), "2027-01", 90)
    assert len(out.months) == 12
    for m, x in enumerate(out.months):
        assert x.peak_rps == pytest.approx(40.0 * 1.1**m, rel=1e-12)
        assert x.month == f"{2027 + m // 12}-{m % 12 + 1:02d}"
    # rented per GPU (the reference's costs.mode), each month holds its own fleet with redundancy; growing traffic
    # only adds to it, so the GPUs added month by month sum to the last month's fleet
    held = [x.purchased for x in out.months]
    assert held == [x.with_redundancy for x in out.months] and held == sorted(held)
    assert sum(x.new_gpus for x in out.months) == held[-1]
    assert all(x.order == f"rent {x.with_redundancy} GPUs" for x in out.months)
    for x in out.months:
        first_day = dt.date.fromisoformat(x.month + "-01")
        if x.new_gpus:
            assert dt.date.fromisoformat(x.order_by) == first_day - dt.timedelta(days=90)
        else:
            assert x.order_by is None
    # a rented fleet's bill follows each month's fleet with redundancy at $3 x 730 h
    assert [x.monthly_usd for x in out.months] == pytest.approx([x.with_redundancy * 3.0 * 730 for x in out.months])
    assert out.months[-1].cumulative_usd == pytest.approx(sum(x.monthly_usd for x in out.months))


@pytest.mark.slow
def test_schedule_months_are_the_answer_plan_gives_at_their_peak():
    # Each month's fleet is the fleet `plan` answers at that month's peak: with --verify every, the verified one;
    # with the default margin, the closed form plus the shortfall the simulation measured at the first and the
    # largest month (the reference's closed form at 40 req/s is 6, as verified: no shortfall, so each month is its
    # closed form) — and the month a margin was measured at is the verified fleet itself.
    p = reference_plan()
    s = resolve(p)
    peaks = schedule_calendar.monthly_peaks(40.0, 0.25, 3)  # 40, 50, 62.5 req/s
    every = schedule.schedule(s, peaks, "2027-01", 90, verify="every", percentile=95.0)
    margin = schedule.schedule(s, peaks, "2027-01", 90, verify="margin", percentile=95.0)
    none = schedule.schedule(s, peaks, "2027-01", 90)
    for k, peak in enumerate(peaks):
        a = run_plan(replan(p, forecast={"peak_rps": peak}), verify=True).answer
        assert every.months[k].source == "verified"
        assert (every.months[k].load, every.months[k].with_redundancy) == (a.load, a.with_redundancy)
        assert none.months[k].source == "closed form" and none.months[k].load == none.months[k].closed_form_load
    assert margin.months[0].source == margin.months[-1].source == "verified"
    m = margin.margin_replicas
    assert margin.months[1].load == margin.months[1].closed_form_load + m * margin.months[1].tp
    assert "margin" in margin.method and "each month verified" in every.method and "not simulated" in none.method
    # the bill is the Answer's arithmetic on each month's fleet: with redundancy × $3/h × 730 h (rented)
    assert [x.monthly_usd for x in every.months] == pytest.approx([x.with_redundancy * 3.0 * 730 for x in every.months])


@pytest.mark.slow
def test_a_flat_schedule_holds_the_verified_fleet_every_month():
    # Prompts at p95 9,000 tokens and no growth: the first month is verified at load 8 with 10 held (the simulation adds
    # a spare for the redundancy lost mid-run, where the closed form holds 8 + 1 = 9). Every later month is the same
    # peak, so it must hold what the first does, the closed form plus both margins (load and spares)
    p = replan(reference_plan(), forecast={"prompt_tokens": {"p50": 2000, "p95": 9000, "p99": 9000}})
    out = schedule.schedule(resolve(p), [40.0] * 3, "2027-02", 60, verify="margin", percentile=95.0)
    first = out.months[0]
    assert first.source == "verified" and first.with_redundancy > first.closed_form_load + 1  # more than N+1 spares
    assert all((x.load, x.with_redundancy) == (first.load, first.with_redundancy) for x in out.months[1:])
    assert out.spare_margin_replicas >= 1 and "spare replica" in out.method


@pytest.mark.slow
def test_schedule_cli_json(tmp_path, capsys):
    assert main(["schedule", "--growth", "10%", "--months", "3", "--lead-time-days", "60", "--start", "2027-01", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [m["month"] for m in out["months"]][:2] == ["2027-01", "2027-02"]
    for m in out["months"]:
        for key in ("month", "peak_rps", "load", "with_redundancy", "purchased", "new_gpus", "order_by", "monthly_usd", "cumulative_usd"):
            assert key in m
    assert out["months"][0]["order_by"] == "2026-11-02"  # 2027-01-01 minus 60 days
    assert "monthly_crossover_month" in out and "cumulative_breakeven_month" in out and "binding_change_month" in out


def test_monthly_crossover_and_cumulative_break_even_by_hand():
    # Four months, self-hosting $100 each (fixed and engineering included), the API $40, $80, $120, $160:
    #   month:                0     1     2     3
    #   self-hosting cheaper: no    no    yes   yes   -> the monthly crossover is month 2 (100 < 120)
    #   self-hosting so far:  100   200   300   400
    #   the API so far:        40   120   240   400   -> cumulative break-even in month 3 (400 at or below 400)
    self_hosted, api = [100.0, 100.0, 100.0, 100.0], [40.0, 80.0, 120.0, 160.0]
    assert schedule.monthly_crossover(self_hosted, api) == 2
    assert schedule.cumulative_breakeven(self_hosted, api) == 3
    # the API at $150 in month 3: 390 against 400, never at or below within the schedule, though it crosses monthly
    assert schedule.cumulative_breakeven(self_hosted, [40.0, 80.0, 120.0, 150.0]) is None
    assert schedule.monthly_crossover(self_hosted, [40.0, 80.0, 120.0, 150.0]) == 2
    # cheaper from the first month: no crossover, and break-even in month 0 ($100 at or below $150)
    assert schedule.monthly_crossover(self_hosted, [150.0] * 4) is None
    assert schedule.cumulative_breakeven(self_hosted, [150.0] * 4) == 0


def test_the_schedule_names_its_crossover_and_break_even_for_what_they_are():
    # The reference traffic growing 10% a month from 40 req/s, the API at half the runbook's prices ($0.125 and
    # $0.375/M: 40 × 0.4 × 730 × 3,600 × (2,000 × 0.125 + 300 × 0.375)/10^6 = $15,242.40 in the first month), and
    # $500 a month of engineering: the closed form's monthly bills (with redundancy × $3 × 730 h) plus $500 against
    # the API's, from 2027-04: 15,830/15,242; 18,020/16,767; 18,020/18,443 -> self-hosting cheaper from 2027-06
    # (the monthly crossover). Totals: 15,830/15,242; 33,850/32,009; 51,870/50,452; 72,080/70,740; 94,480/93,056;
    # 119,070/117,604; 145,850/144,607; 172,630/174,310 -> at or below the API's first in 2027-11 (cumulative).
    p = replan(reference_plan(), api={"usd_per_mtok_input": 0.125, "usd_per_mtok_output": 0.375},
               hardware={"ops_usd_per_month": 500.0})
    out = schedule.schedule(resolve(p), schedule_calendar.monthly_peaks(40.0, 0.10, 12), "2027-04", 90)
    assert out.months[0].api_monthly_usd == pytest.approx(15_242.4)
    assert [x.monthly_usd + 500 for x in out.months[:3]] == pytest.approx([15_830, 18_020, 18_020])
    assert out.monthly_crossover_month == "2027-06" and out.cumulative_breakeven_month == "2027-11"
    assert out.months[7].all_in_cumulative_usd == pytest.approx(172_630) and out.months[7].api_cumulative_usd < 174_311
    # the monthly comparison after the crossover: where a month adding GPUs is dearer than the API again, the words
    # say so rather than 'from 2027-06'
    later = [x.self_hosted_cheaper for x in out.months if x.month >= "2027-06"]
    when = "from 2027-06" if all(later) else "first in 2027-06, not in every month after"
    assert (f"monthly crossover: self-hosting becomes cheaper than the API {when}" in out.breakeven_words
            and "cumulative break-even (self-hosting's total since 2027-04 at or below the API's): 2027-11" in out.breakeven_words)
    never = schedule.schedule(resolve(p), schedule_calendar.monthly_peaks(40.0, 0.10, 6), "2027-04", 90)
    assert never.cumulative_breakeven_month is None and never.breakeven_words.endswith(": not within the schedule")


@pytest.mark.slow
def test_schedule_from_a_forecast_table(tmp_path, capsys):
    f = tmp_path / "peaks.csv"
    f.write_text("month,peak_rps\n2027-03,40\n2027-04,60\n2027-05,90\n")
    assert main(["schedule", "--forecast", str(f), "--lead-time-days", "30", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [m["peak_rps"] for m in out["months"]] == [40, 60, 90]
    assert out["start"] == "2027-03"


@pytest.mark.slow
def test_schedule_from_the_plan_growth_section(tmp_path, capsys):
    data = reference_plan().model_dump(exclude_none=True)
    data["growth"] = {"monthly": 0.05, "months": 3, "lead_time_days": 45, "start": "2027-06"}
    assert main(["schedule", str(_write(tmp_path, data)), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [round(m["peak_rps"], 6) for m in out["months"]] == [40.0, 42.0, 44.1]
    assert out["months"][0]["order_by"] == "2027-04-17"  # 2027-06-01 minus 45 days


def test_the_workbook_schedule_is_the_commands_and_late_orders_are_the_results(tmp_path, capsys):
    # one figure, one place: the Schedule sheet's figures (xlplan.excel.book) are `xlplan schedule --verify none`'s for the
    # same plan, and the months ordered too late are a field of the result, not of the command's JSON alone
    from xlplan.excel.book import decisions
    from xlplan.schema.plan import Plan

    data = reference_plan().model_dump(exclude_none=True)
    data["growth"] = {"monthly": 0.05, "months": 3, "lead_time_days": 45, "start": "2027-06"}
    assert main(["schedule", str(_write(tmp_path, data)), "--verify", "none", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    book = decisions(Plan.model_validate(data), today=dt.date.today()).schedule.model_dump(mode="json")
    assert book == cli
    # made on 2027-05-01, the first month's order (2027-06-01 minus 45 days = 2027-04-17) is already late, the
    # second's (2027-07-01 minus 45 = 2027-05-17) is not; only months that add GPUs have an order date
    late = decisions(Plan.model_validate(data), today=dt.date(2027, 5, 1)).schedule
    assert late.late_orders == ["2027-06"]
    assert dates.first_month(dt.date(2026, 12, 3)) == "2027-01" and dates.first_month(dt.date(2027, 1, 31)) == "2027-02"


@pytest.mark.parametrize("content, where", [
    ("month,peak\n2027-01,40\n", "line 1"),
    ("month,peak_rps\n2027-13,40\n", "line 2, column 'month'"),
    ("month,peak_rps\n1/1/2027,40\n", "line 2, column 'month'"),  # 1 January or 1 February: not guessed
    ("month,peak_rps\n2027-01,1,200\n", "line 2: 3 cells under a 2-column header"),  # would read as 1 req/s
    ("month;peak_rps\n2027-01;1.200\n", "line 2, column 'peak_rps': got '1.200'"),  # 1.2 or 1,200: not guessed
    ("month,peak_rps\n2027-01,40\n2027-03,50\n", "expected 2027-02"),
    ("month,peak_rps\n2027-01,-4\n", "line 2, column 'peak_rps'"),
    ("month,peak_rps\n2027-01,lots\n", "line 2, column 'peak_rps'"),
    ("month,peak_rps\n", "no months"),
])
def test_bad_forecast_tables_exit_2(tmp_path, capsys, content, where):
    f = tmp_path / "peaks.csv"
    f.write_text(content)
    assert main(["schedule", "--forecast", str(f), "--lead-time-days", "30"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(f) in err[0] and where in err[0], err


@pytest.mark.slow
@pytest.mark.parametrize("content", [
    "month,peak_rps\n2027-03,40\n2027-04,60\n2027-05,1200\n",
    "\ufeffMonth;Peak RPS\r\n2027-03;40\r\n2027-04;60\r\n2027-05;1200\r\n\r\n",  # Excel's CSV (semicolon, BOM, CRLF)
    "month\tpeak_rps\n2027-03-01\t40\n2027-04-01\t60\n2027-05-01\t1200\n",  # tabs, first-of-month dates
    'month,peak_rps,note\nMar 2027,40,launch\nApril 2027,60,\nMay 2027,"1,200",\n',  # month names, quoted thousands
])
def test_forecast_tables_as_people_keep_them(tmp_path, capsys, content):
    f = tmp_path / "peaks.csv"
    f.write_text(content, encoding="utf-8")
    assert main(["schedule", "--forecast", str(f), "--lead-time-days", "30", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["start"] == "2027-03" and [m["peak_rps"] for m in out["months"]] == [40, 60, 1200]


def test_every_bad_row_of_a_forecast_is_named(tmp_path, capsys):
    f = tmp_path / "peaks.csv"
    f.write_text("month,peak_rps\n2027-01,40\n2027-02,abc\n2027-03,-5\n2027-04,1e12\n")
    assert main(["schedule", "--forecast", str(f), "--lead-time-days", "30"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == f"error: {f}: 3 problem(s)" and [e.split(",")[0].strip() for e in err[1:]] == ["line 3", "line 4", "line 5"]


@pytest.mark.parametrize("args, option", [
    (["--growth", "lots", "--lead-time-days", "9"], "--growth"),
    (["--growth", "2000%", "--lead-time-days", "9"], "--growth"),
    (["--growth", "0.1"], "--lead-time-days"),
    (["--growth", "0.1", "--lead-time-days", "-3"], "--lead-time-days"),
    (["--growth", "0.1", "--lead-time-days", "9", "--start", "2027-13"], "--start"),
    (["--growth", "0.1", "--lead-time-days", "9", "--months", "0"], "--months"),
    ([], "--growth"),
])
def test_bad_schedule_options_exit_2(capsys, args, option):
    assert main(["schedule", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and option in err[0], err


def test_missing_lead_time_quotes_the_published_range(capsys):
    assert main(["schedule", "--growth", "0.1"]) == 2
    assert "Omdia" in capsys.readouterr().err  # the catalog's sourced H100 lead times, as guidance


# ------------------------------------------------------------------------------------------------------- rent or buy


def _buy(**costs):
    data = reference_plan().model_dump(exclude_none=True)
    data["costs"] = {"mode": "buy", **costs}
    return data


def test_buying_reproduces_a_hand_computed_monthly_cost(tmp_path):
    # 8 H100s bought (one node), no network, residual or cost of capital stated (each 0), so the capital charge is
    # straight-line depreciation and power is drawn at the stated maximum (no typical draw beside it). Per month:
    #   depreciation 300,000 per node / (5 x 12) = 5,000.00
    #   electricity  8 x 1.2 kW x PUE 1.5 x $0.10 x 730 h = 1,051.20
    #   hosting      8 x 1.2 kW x $150 per kW-month = 1,440.00
    #   hardware ops 1,000.00
    #   total        8,491.20
    from xlplan.schema.plan import Plan

    p = Plan.model_validate(_buy(capex_usd_per_node=300000, depreciation_years=5, kw_per_gpu=1.2, pue=1.5, usd_per_kwh=0.10,
                                 hosting_usd_per_kw_month=150, hardware_ops_usd_per_month=1000, network_usd_per_node=0,
                                 residual_fraction=0, cost_of_capital=0))
    r = run_plan(p)
    assert r.fleet.purchased == 8
    assert r.cost.billed_gpus == 8
    assert r.cost.monthly_usd == pytest.approx(8491.20, rel=1e-12)
    # against renting the same 8 GPUs at the plan's $3/h (8 x 3 x 730 = 17,520 a month), the running costs being
    # 1,051.20 + 1,440 + 1,000 = 3,491.20: payback = 300,000 / (17,520 - 3,491.20) = 21.38 months, within 60
    o = r.cost.ownership
    assert o.rent_monthly_usd == pytest.approx(17520.0)
    assert o.payback_months == pytest.approx(300000 / (17520 - 3491.20), rel=1e-12)
    assert r.cost.billing == "owned"


def test_buy_defaults_come_from_dated_sources():
    # Left out, capex and power fall back on the catalog's H100 figures (DGX H100 ~$270,000, 10.2 kW / 8 GPUs maximum,
    # 7.5 kW / 8 typical), depreciation 5 years (AWS 2025), PUE 1.54 (Uptime 2025), hosting $184.06/kW-month (CBRE H2
    # 2024), a network share of $15,060 a node (2024-08), a residual of 0.78^5 of the capex (resale curve, 2026) and an
    # assumed 8% cost of capital.
    from xlplan.schema.plan import Plan

    p = Plan.model_validate(_buy(usd_per_kwh=0.09, hardware_ops_usd_per_month=0))
    own = p.ownership()
    assert own["capex_usd_per_node"]["value"] == 270000 and "SemiAnalysis" in own["capex_usd_per_node"]["source"]
    assert own["kw_per_gpu"]["value"] == 1.275
    assert own["depreciation_years"]["value"] == 5 and own["pue"]["value"] == 1.54
    assert own["hosting_usd_per_kw_month"]["value"] == 184.06
    capex, i, n = 270000 + 15060, 0.08 / 12, 60
    capital = (capex - capex * 0.78 ** 5 / (1 + i) ** n) * i / (1 - (1 + i) ** -n)  # the annuity of capex less the residual's PV
    expected = capital + 8 * 0.9375 * 1.54 * 0.09 * 730 + 8 * 1.275 * 184.06  # power at typical draw, colocation at maximum
    assert run_plan(p).cost.monthly_usd == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("costs, field", [
    ({"hardware_ops_usd_per_month": 0}, "usd_per_kwh"),
    ({"usd_per_kwh": 0.1}, "hardware_ops_usd_per_month"),
])
def test_buy_without_a_credible_default_is_required(tmp_path, capsys, costs, field):
    assert main(["plan", str(_write(tmp_path, _buy(**costs)))]) == 2
    err = capsys.readouterr().err
    assert field in err and "required" in err


def test_buy_on_a_gpu_without_a_node_price_requires_capex(tmp_path, capsys):
    data = _buy(usd_per_kwh=0.1, hardware_ops_usd_per_month=0)
    data["hardware"] = {"gpu": "l40s", "gpus_per_node": 8, "usd_per_gpu_hour": 1.0}
    assert main(["plan", str(_write(tmp_path, data))]) == 2
    assert "capex_usd_per_node" in capsys.readouterr().err


def test_rent_with_buy_figures_keeps_and_ignores_them(tmp_path, capsys):
    # a workbook switched from buy to rent keeps its Buy rows for a switch back: the plan it reads as holds them, the
    # bill ignores them (a rented fleet's bill is GPUs x the price x the hours, runbook step 7), and a warning says so
    data = reference_plan().model_dump(exclude_none=True)
    data["costs"] = {"mode": "rent_per_gpu", "pue": 1.3, "usd_per_kwh": 0.09}
    assert main(["plan", str(_write(tmp_path, data)), "--json", "--no-verify"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert any("pue, usd_per_kwh" in w and "kept and ignored" in w for w in out["warnings"])
    c = out["cost"]
    assert c["ownership"] is None
    assert c["monthly_usd"] == pytest.approx(c["billed_gpus"] * c["usd_per_gpu_hour"] * c["hours_per_month"])


# ------------------------------------------------------------------------------------- inputs in the wrong unit or form


@pytest.mark.parametrize("section, fields, line", [
    # a percentage typed where a fraction belongs: 10 would compound 1000% a month, 40 -> 440 req/s in one month
    ("growth", {"monthly": 10, "lead_time_days": 30}, "growth.monthly: got 10; expected a value less than or equal to 1 (write 0.10, not 10)"),
    # a node price in thousands: $270 a node would make owning nearly free
    ("costs", {"mode": "buy", "capex_usd_per_node": 270, "usd_per_kwh": 0.1, "hardware_ops_usd_per_month": 0},
     "costs.capex_usd_per_node: got 270; expected a value greater than or equal to 1000 (whole dollars: 270,000 for 270 thousand)"),
    # watts for kilowatts (an H100 node: 10.2 kW / 8 = 1.275 kW a GPU), a PUE as a percentage, cents for dollars
    ("costs", {"mode": "buy", "kw_per_gpu": 1275, "usd_per_kwh": 0.1, "hardware_ops_usd_per_month": 0},
     "costs.kw_per_gpu: got 1275; expected a value less than or equal to 20 (kilowatts, not watts: write 1.275, not 1275)"),
    ("costs", {"mode": "buy", "pue": 130, "usd_per_kwh": 0.1, "hardware_ops_usd_per_month": 0},
     "costs.pue: got 130; expected a value less than or equal to 3 (write 1.3, not 130)"),
    ("costs", {"mode": "buy", "usd_per_kwh": 9, "hardware_ops_usd_per_month": 0},
     "costs.usd_per_kwh: got 9; expected a value less than or equal to 2 (dollars, not cents: write 0.09, not 9)"),
    ("growth", {"monthly": 0.05, "lead_time_days": 30, "start": "2027-01-01"},
     "growth.start: got '2027-01-01'; expected a month written YYYY-MM, e.g. 2027-01"),
    ("growth", {"peaks_rps": [40, 50, 60], "months": 12, "lead_time_days": 30},
     "growth.months: got 12; peaks_rps gives 3 month(s) (leave months out, or give a peak for each month)"),
])
def test_a_figure_in_the_wrong_unit_is_named_with_the_likely_fix(tmp_path, capsys, section, fields, line):
    data = reference_plan().model_dump(exclude_none=True)
    data[section] = fields
    f = _write(tmp_path, data)
    assert main(["plan", str(f)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"error: {f}: {line}"]


def test_missing_buy_figures_are_named_at_their_own_path(tmp_path, capsys):
    # two required fields missing: two lines, each at costs.FIELD, never "(top level)" with the plan pasted in
    f = _write(tmp_path, _buy())
    assert main(["plan", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == f"error: {f}: 2 problem(s)"
    assert [e.split(":")[0].strip() for e in err[1:]] == ["costs.usd_per_kwh", "costs.hardware_ops_usd_per_month"]
    assert not any("top level" in e or "forecast" in e for e in err)


def test_a_day_that_does_not_exist_is_refused(tmp_path, capsys):
    data = reference_plan().model_dump(exclude_none=True)
    data["date"] = "2026-02-30"
    f = _write(tmp_path, data)
    assert main(["plan", str(f)]) == 2
    assert "date: got '2026-02-30'; expected a day of the calendar" in capsys.readouterr().err


@pytest.mark.slow
def test_growth_as_percent_text_reads_as_the_command_line_does(tmp_path, capsys):
    # growth.monthly '10%' is 0.10, as --growth 10% is: 40 x 1.1 = 44 req/s in the second month
    data = reference_plan().model_dump(exclude_none=True)
    data["growth"] = {"monthly": "10%", "months": 2, "lead_time_days": 30, "start": "2027-01"}
    assert main(["schedule", str(_write(tmp_path, data)), "--json"]) == 0
    assert [round(m["peak_rps"], 9) for m in json.loads(capsys.readouterr().out)["months"]] == [40.0, 44.0]


@pytest.mark.slow
def test_runaway_growth_stops_at_the_cap_and_says_so(capsys):
    # doubling every month from 40 req/s: the bill grows with the rate (~$297 a month per req/s at scale: 135,437 GPUs
    # × $3 × 730 h at 10⁶ req/s), so month 15's 40 × 2^14 = 655,360 req/s (~$195M) passes the $100M-a-month bound
    # before month 16's 1,310,720 req/s would pass the 10⁶ req/s cap: 14 months plan (the last, 327,680 req/s, ~$97M)
    # (the closed form each month, --verify none: the bounds and the cap are what is tested, not the simulation)
    assert main(["schedule", "--growth", "1", "--months", "240", "--lead-time-days", "9", "--start", "2027-01",
                 "--verify", "none", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["months"]) == 14 and max(m["peak_rps"] for m in out["months"]) == 40 * 2 ** 13
    assert out["stopped"].startswith("2028-03: at 655,360 requests/s the answer passes a plausible bound (result.monthly_usd")
    # accepted, the cap on the rate is what stops it, a month later
    assert main(["--accept-implausible", "result.fleet_gpus", "--accept-implausible", "result.monthly_usd", "schedule",
                 "--growth", "1", "--months", "240", "--lead-time-days", "9", "--start", "2027-01", "--verify", "none",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["months"]) == 15 and out["stopped"].startswith("2028-04: the peak reaches 1.31072e+06 requests/s")


def test_a_forecast_file_keeps_its_own_months(tmp_path, capsys):
    f = tmp_path / "peaks.csv"
    f.write_text("month,peak_rps\n2027-01,40\n2027-02,45\n2027-03,52\n")
    assert main(["schedule", "--forecast", str(f), "--lead-time-days", "9", "--start", "2028-05"]) == 2
    assert "--start: got 2028-05; the forecast" in capsys.readouterr().err
    assert main(["schedule", "--forecast", str(f), "--lead-time-days", "9", "--months", "12"]) == 2
    assert f"--months: got 12; {f} gives 3 month(s)" in capsys.readouterr().err


@pytest.mark.slow
def test_growth_section_survives_the_workbook_round_trip(tmp_path, capsys):
    # plan -> workbook -> plan: the growth section comes back as given (the Schedule sheet carries it)
    from xlplan.io.planfile import read_plan

    data = reference_plan().model_dump(exclude_none=True)
    data["growth"] = {"monthly": 0.08, "lead_time_days": 120, "start": "2027-03", "source": "finance forecast"}
    book, back = tmp_path / "p.xlsx", tmp_path / "back.yaml"
    assert main(["workbook", str(_write(tmp_path, data)), "-o", str(book)]) == 0
    assert main(["read", str(book), "-o", str(back)]) == 0
    capsys.readouterr()
    g = read_plan(back).growth
    assert (g.monthly, g.lead_time_days, g.start, g.source) == (0.08, 120, "2027-03", "finance forecast")


# ---------------------------------------------------------------------------------------------------- the API price


def test_api_price_is_matched_to_the_size_class():
    # Left out, the API price is the median listed offer for the model's size class in api_prices.csv:
    # Llama-3.1-8B is dense with 8.03 B parameters, class 'dense 5-12B'.
    with open(DATA / "api_prices.csv", newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["size_class"] == "dense 5-12B"]
    data = reference_plan().model_dump(exclude_none=True)
    data.pop("api")
    from xlplan.schema.plan import Plan

    api = Plan.model_validate(data).api_used()
    assert api.usd_per_mtok_input == statistics.median(float(r["usd_per_1M_input"]) for r in rows)
    assert api.usd_per_mtok_output == statistics.median(float(r["usd_per_1M_output"]) for r in rows)
    assert "dense 5-12B" in api.provider and f"{len(rows)} listed offers" in api.provider


def test_a_forecast_row_in_requests_a_day_is_refused_by_line(tmp_path, capsys):
    # the plan file's range for a peak (at most 10⁶ req/s) holds in a forecast table too: 3,456,000 was a day's
    # requests (3,456,000 / 86,400 = 40 a second); the schedule ran one month and dropped the rest with exit 0
    path = tmp_path / "forecast.csv"
    path.write_text("month,peak_rps\n2027-01,40\n2027-02,3456000\n2027-03,48\n", encoding="utf-8")
    assert main(["schedule", "--forecast", str(path), "--verify", "none", "--lead-time-days", "90"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: line 3, column 'peak_rps': got 3,456,000" in err
    assert "3,456,000 a day is 40 a second" in err
