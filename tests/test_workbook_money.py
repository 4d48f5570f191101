"""The workbook's money as a reader sees it in either spreadsheet engine (issue 23): the API comparison as a factor of at
least 1 named by the cheaper side, a missing price in words (never $0.00), each figure credited to its own source, the
schedule's monthly crossover and cumulative break-even, and yes/no inputs as Excel booleans.

Each plan's workbook is built without cached values and recalculated once in LibreOffice and once in the Excel-grammar
engine (`formulas`); every formula cell must agree with the engine's value (tests/workbookhelp.py), and the figures
named here are read from both.
"""

from __future__ import annotations

import re

import pytest
from planhelp import replan
from workbookhelp import build, compare_book, engine_json, evaluate_many, name_ref, recalculate, require_libreoffice

from xlplan.excel.writer import workbook_bytes
from xlplan.io.planfile import reference_plan
from xlplan.schema.plan import Plan

H20_QUOTE = "integrator quote for 8x H20, 2026-11 (capex, power); site tariff 2026 (electricity)"
"""Where the H20 plan's own buy figures come from (costs.source)."""

H20_BUY = {"gpu": "h20", "gpus_per_node": 8, "usd_per_gpu_hour": None}
"""The H20: the catalog has no rental price for it, nor a node price (ownership.yaml), so a buy plan states its own."""


def _h20_bought() -> Plan:
    """The reference traffic on H20s bought at a stated node price: its rental price, and so renting instead and the
    payback, are unknown."""
    return replan(reference_plan(), hardware=H20_BUY,
                  costs={"mode": "buy", "capex_usd_per_node": 200000, "kw_per_gpu": 1.0, "usd_per_kwh": 0.09,
                         "hardware_ops_usd_per_month": 0, "source": H20_QUOTE})


def _cheap_api() -> Plan:
    """The reference at $0.005 per million tokens either way: the API is the cheaper."""
    return replan(reference_plan(), api={"usd_per_mtok_input": 0.005, "usd_per_mtok_output": 0.005})


def _growing() -> Plan:
    """The reference growing 10% a month for a year from 2027-04, the API at half the runbook's prices, $500 a month of
    engineering: the API is cheaper at first (tests/test_decisions.py works its months by hand)."""
    return replan(reference_plan(), api={"usd_per_mtok_input": 0.125, "usd_per_mtok_output": 0.375},
                  hardware={"ops_usd_per_month": 500.0},
                  growth={"monthly": 0.10, "months": 12, "lead_time_days": 90, "start": "2027-04"})


def _switched_on() -> Plan:
    """The reference with its three yes/no inputs set: TTFT in the time in system, attention FLOPs in decode, DP
    attention."""
    return replan(reference_plan(), policy={"include_ttft_in_time_in_system": True, "decode_attention_flops": True,
                                            "attention_data_parallel": True})


def _dip(mode: str):
    """The reference with a dip month (40, 10, 40 req/s) paid for as ``mode``: rented, the dip holds less; bought, the
    GPUs bought stay (xlplan.decide.schedule.held_gpus), by formula on the Schedule as in the engine."""
    costs = {"mode": mode} if mode != "buy" else {"mode": "buy", "usd_per_kwh": 0.09, "hardware_ops_usd_per_month": 0}
    return lambda: replan(reference_plan(), costs=costs,
                          growth={"peaks_rps": [40.0, 10.0, 40.0], "lead_time_days": 30, "start": "2027-04"})


def _slow_payback() -> Plan:
    """Bought at $1,000,000 a node: the capex takes 73.5 months to recover against renting the same 8 GPUs, past the
    5-year life (tests/test_payment.py works it by hand): the workbook says never, as the note does."""
    return replan(reference_plan(), costs={"mode": "buy", "capex_usd_per_node": 1_000_000, "usd_per_kwh": 0.09,
                                           "hardware_ops_usd_per_month": 1000})


PLANS = {"slow_payback": _slow_payback, "reference": reference_plan, "cheap_api": _cheap_api, "h20_bought": _h20_bought, "growing": _growing,
         "switched_on": _switched_on, "dip_by_node": _dip("rent_per_node"), "dip_bought": _dip("buy")}


@pytest.fixture(scope="module")
def money(tmp_path_factory):
    """(books, {engine: {stem: read(title, coord)}}, problems): each plan's workbook evaluated by both engines, and
    every disagreement of a formula cell or named output with the engine."""
    require_libreoffice()
    from excelgrammar import value

    folder = tmp_path_factory.mktemp("money")
    books, files, problems = {}, [], []
    for stem, make in PLANS.items():
        books[stem] = build(make())
        f = folder / f"{stem}.xlsx"
        f.write_bytes(workbook_bytes(books[stem], caches=False))
        files.append(f)
    lo = recalculate(files, folder / "lo")
    import openpyxl

    readers = {"LibreOffice": {}, "Excel-grammar": {}}
    for stem, out, values in zip(books, lo, evaluate_many(files)):
        wb = openpyxl.load_workbook(out, data_only=True)
        readers["LibreOffice"][stem] = lambda t, c, wb=wb: wb[t][c].value
        readers["Excel-grammar"][stem] = lambda t, c, v=values: value(v, t, c)
        js = engine_json(PLANS[stem](), folder, stem)
        for engine, per in readers.items():
            problems += [f"{engine}: {p}" for p in compare_book(stem, books[stem], per[stem], js)]
    return books, readers, problems


def _row_labelled(book, title: str, label: str) -> int:
    """The row whose column A holds ``label`` on sheet ``title``."""
    sheet = book.get(title)
    return next(int(c[1:]) for c, cell in sheet.cells.items() if c[0] == "A" and c[1:].isdigit() and cell.value == label)


@pytest.mark.slow
def test_the_money_workbooks_agree_with_the_engine_in_both_engines(money):
    assert money[2] == []


@pytest.mark.slow
def test_a_missing_price_reads_price_missing_in_both_engines_never_zero(money):
    # The H20 has no catalog rental price: the catalog price beside the price paid, the rental price used, renting the
    # fleet instead and the payback against it all say "price missing" (a $0.00 would read as free, and a payback
    # against free rent as "never"); the bought fleet's own cost per GPU-hour is known and stays a number. On the
    # Options sheet, every option without a price (the GH200s: no rental price; in a buy plan every GPU without a
    # catalog node price) shows its price, fixed cost, month and $/M tokens as missing, never as $0.
    books, readers, _ = money
    book = books["h20_bought"]
    for engine, per in readers.items():
        read = per["h20_bought"]
        for name in ("RentUSDPerGPUHour", "RentMonthlyUSD", "PaybackMonths"):
            assert read(*name_ref(book, name)) == "price missing", (engine, name)
        assert isinstance(read(*name_ref(book, "GPUUSDPerHour")), float)
        row = _row_labelled(book, "1 Inputs", "Catalog price for this GPU")
        assert read("1 Inputs", f"B{row}") == "price missing" and read("1 Inputs", f"E{row}") == "price missing"
        options = book.get("Options")
        rows = sorted({int(c[1:]) for c in options.cells if c.startswith("B") and "GH200" in str(options.cells[c].value)})
        assert rows
        for r in rows:
            assert [read("Options", f"{col}{r}") for col in "JLMN"] == ["price missing"] * 4, (engine, r)
        ranked = {int(c[1:]) for c, cell in options.cells.items() if c[0] == "A" and isinstance(cell.value, int)}
        priced = {r for r in ranked if f"J{r}" in options.cells}  # the feasible options' rows
        assert not [(c, r) for r in priced for c in "JMN" if read("Options", f"{c}{r}") == 0], engine


@pytest.mark.slow
def test_self_hosting_against_the_api_is_a_factor_above_one_in_the_direction_of_its_words(money):
    # 5 Cost compares the runbook's bill (5 GPUs × $3/h × 730 h = $10,950) with the API's; the Summary repeats it, and
    # beside the Answer gives the note's own sentence (the Answer's 7 GPUs × $3 × 730 = $15,330).
    # reference: the API bills 42.05 M requests × (2,000 × $0.25 + 300 × $0.75)/M = $30,484.80: self-hosting is
    #   30,484.80 / 10,950 = 2.78 -> "2.8×" cheaper (and 30,484.80 / 15,330 = 1.99 -> "2.0×" for the Answer)
    # cheap API: 42.05 M × 2,300 tokens × $0.005/M = $483.55: the API is 10,950 / 483.55 = 22.64 -> "22.6×" cheaper
    #   (15,330 / 483.55 = 31.70 -> "31.7×" for the Answer), never "self-hosting is 0.0× cheaper"
    from xlplan.decide.planner import plan
    from xlplan.report.note import render_text

    books, readers, _ = money
    expected = {"reference": ("self-hosting is 2.8× cheaper than the API", "self-hosting is 2.0× cheaper than the API"),
                "cheap_api": ("the API is 22.6× cheaper than self-hosting", "the API is 31.7× cheaper than self-hosting")}
    for stem, (method, answer) in expected.items():
        book = books[stem]
        for engine, per in readers.items():
            read = per[stem]
            assert read(*name_ref(book, "APIComparison")) == method, engine
            assert read(*name_ref(book, "SummaryAgainstAPI")) == method, engine
        title, coord = name_ref(book, "AnswerAgainstAPI")
        assert book.get(title).cells[coord].cached == answer  # the engine's words, as the note prints them
        for engine, per in readers.items():  # and the formula over the Answer's bill on 5 Cost says the same
            assert per[stem](title, coord) == answer, engine
        assert f"On infrastructure alone {answer} at this volume." in render_text(plan(PLANS[stem]()))
        for text in (method, answer):
            assert all(float(x) >= 1 for x in re.findall(r"([\d.]+)×", text))


@pytest.mark.slow
def test_each_buy_figure_and_api_price_is_credited_to_its_own_source(money):
    # The Source column of 1 Inputs credits each input: a buy figure left blank to its dated default in
    # catalog/ownership.yaml (PUE: Uptime Institute 2025; colocation: CBRE H2 2024; depreciation: AWS 2025; an H100's
    # power: NVIDIA's DGX H100 guide), one with no credible default says so, one the plan gives to the plan's
    # costs.source, an API price to the API's source; none to the pricing section's source, which is the runbook's
    # GPU price ("runbook document 14 ($3/GPU-hour rented H100)")
    from xlplan import catalog

    books, readers, _ = money
    own, h100 = catalog.ownership_defaults(), catalog.ownership_for("h100-sxm")
    gpu_price = reference_plan().sources.pricing
    expected = {
        "reference": {
            "Buy: PUE": (f"default: {own['pue']['source']}", str(own["pue"]["date"])),
            "Buy: colocation": (f"default: {own['hosting_usd_per_kw_month']['source']}",
                                str(own["hosting_usd_per_kw_month"]["date"])),
            "Buy: depreciation life": (f"default: {own['depreciation_years']['source']}", str(own["depreciation_years"]["date"])),
            "Buy: maximum power per GPU": (f"catalog default for this GPU: {h100['kw_per_gpu']['source']}",
                                           h100["kw_per_gpu"]["date"]),
            "Buy: electricity price": ("no default: a buy plan states it", None),
            "Buy: network share per node": (f"default: {own['network_usd_per_node']['source']}", str(own["network_usd_per_node"]["date"])),
            "Buy: residual value": (f"default: {own['residual_decay_per_year']['source']}", str(own["residual_decay_per_year"]["date"])),
            "Buy: cost of capital": (f"default: {own['cost_of_capital']['source']}", str(own["cost_of_capital"]["date"])),
            "Buy: software licence": (f"default: {own['licence_usd_per_gpu_year']['source']}", str(own["licence_usd_per_gpu_year"]["date"])),
            "API input price": (reference_plan().api.source, None),
            "GPU price paid": (gpu_price, None),
        },
        "h20_bought": {
            "Buy: server price per node": (f"the plan's figure: {H20_QUOTE}", ""),
            "Buy: electricity price": (f"the plan's figure: {H20_QUOTE}", None),
            "Buy: PUE": (f"default: {own['pue']['source']}", str(own["pue"]["date"])),
        },
    }
    for stem, rows in expected.items():
        for engine, per in readers.items():
            for label, (source, date) in rows.items():
                r = _row_labelled(books[stem], "1 Inputs", label)
                assert per[stem]("1 Inputs", f"E{r}") == source, (engine, stem, label)
                assert per[stem]("1 Inputs", f"F{r}") in ((None, "") if not date else (date,)), (engine, stem, label)
                assert label == "GPU price paid" or source != gpu_price


@pytest.mark.slow
def test_the_schedule_tab_gives_the_monthly_crossover_and_the_cumulative_break_even_by_formula(money):
    # test_decisions.py::test_the_schedule_names_its_crossover_and_break_even_for_what_they_are works this plan's
    # months by hand: self-hosting's month (ops included) drops below the API's from 2027-06 (the monthly crossover),
    # its total since 2027-04 reaches the API's in 2027-11 (172,630 against 174,310: the cumulative break-even). Both
    # are formulas over the month table's running totals, so each engine finds them itself; the sentence above the
    # table names each for what it is.
    books, readers, _ = money
    book = books["growing"]
    for engine, per in readers.items():
        assert per["growing"](*name_ref(book, "ScheduleMonthlyCrossover")) == "2027-06", engine
        assert per["growing"](*name_ref(book, "ScheduleCumulativeBreakeven")) == "2027-11", engine
    title, coord = name_ref(book, "ScheduleCumulativeBreakeven")
    assert book.get(title).cells[coord].formula and "MATCH(TRUE," in book.get(title).cells[coord].value
    sentence = next(c.value for c in book.get("Schedule").cells.values() if str(c.value).startswith("API: "))
    assert "monthly crossover: self-hosting becomes cheaper than the API first in 2027-06" in sentence  # test_decisions: not every month after
    assert "cumulative break-even (self-hosting's total since 2027-04 at or below the API's): 2027-11" in sentence
    summary = " ".join(str(c.value) for c in book.get("Summary").cells.values())
    assert "monthly crossover" in summary and "cumulative break-even" in summary


@pytest.mark.slow
def test_a_yes_no_input_is_an_excel_boolean_in_both_engines(money):
    # One form for yes/no: Excel's TRUE and FALSE. Each input on 1 Inputs and its echo on the Summary is a boolean
    # cell in both engines (never 1, never the text "TRUE" or "1": LibreOffice turns TRUE&"" into "1", Excel into
    # "TRUE"), the drop-down offers the booleans under a header that says so, and every formula whose engine value
    # is a boolean evaluates to one (the agreement above compares types: tests/workbookhelp.py).
    from xlplan.excel.inputs import all_inputs

    books, readers, _ = money
    flags = [s for s in all_inputs() if s.kind == "bool"]
    assert {s.name for s in flags} == {"AttentionDataParallel", "IncludeTTFT", "DecodeAttention"}
    # DP attention may be left out (a blank cell: the closed form takes it off and the configuration search tries
    # it); the reference leaves it out, so its input and echo are blank there, never 0, "FALSE" or "0"
    left_out = {("reference", "AttentionDataParallel")}
    for stem, value in (("reference", False), ("switched_on", True)):
        book = books[stem]
        for engine, per in readers.items():
            for spec in flags:
                title, coord = name_ref(book, spec.name)
                echo = _row_labelled(book, "Summary", spec.label)
                for where in ((title, coord), ("Summary", f"B{echo}")):
                    got = per[stem](*where)
                    if (stem, spec.name) in left_out:
                        assert got in (None, ""), (engine, stem, spec.name, where, got)
                        continue
                    assert type(got) is bool and got is value, (engine, stem, spec.name, where, got)
                assert book.get(title).cells[f"C{coord[1:]}"].value == "TRUE | FALSE"
            title, coord = name_ref(book, "AnswerCurrent")
            assert per[stem](title, coord) == "current", engine  # the echo compared as booleans, not as text
    constants = books["reference"].get("Constants")
    header = next(c for c, cell in constants.cells.items() if cell.value == "TRUE / FALSE")
    below = [constants.cells[f"A{int(header[1:]) + k}"].value for k in (1, 2)]
    assert below == [True, False] and all(type(v) is bool for v in below)


@pytest.mark.slow
def test_a_payback_past_the_life_reads_never_in_both_engines(money):
    # tests/test_payment.py: 73.5 months to recover the capex against renting the same 8 GPUs, past the 60-month life
    books, readers, _ = money
    title, coord = books["slow_payback"].names["PaybackMonths"].split("!")
    title, coord = title.strip("'"), coord.replace("$", "")
    for engine in readers.values():
        assert engine["slow_payback"](title, coord) == "never pays back in its life"


def test_bought_the_summary_gives_the_capex_and_the_payback_of_the_nodes_ordered(money):
    # the slow-payback plan buys 1 node: a $1,000,000 server and the catalog's network share of $15,060 (2024-08,
    # tests/test_payment.py): capex 1 x 1,015,060, and its payback
    # past the 60-month life reads never; the H20 bought has no rental price: its payback reads 'price missing'; a
    # rented plan shows n/a in both rows. Formulas over the Answer's fleet on 5 Cost, in both engines.
    books, readers, _ = money

    def formula(stem, name):
        title, coord = name_ref(books[stem], name)
        return books[stem].get(title).cells[coord].value

    for engine, per in readers.items():
        def named(stem, name, per=per):
            return per[stem](*name_ref(books[stem], name))

        assert named("slow_payback", "AnswerCapexUSD") == pytest.approx(1_015_060), engine
        assert named("slow_payback", "AnswerPaybackMonths") == "never pays back in its life", engine
        assert named("h20_bought", "AnswerPaybackMonths") == "price missing", engine
        assert named("reference", "AnswerCapexUSD") == "n/a" and named("reference", "AnswerPaybackMonths") == "n/a", engine
    # each with its stale flag over the fleet's inputs only: the node price moves it live
    for name in ("AnswerCapexUSDStale", "AnswerPaybackMonthsStale"):
        assert "UnchangedFleetInputs" in formula("slow_payback", name) and "UnchangedPriceInputs" not in formula("slow_payback", name)
