"""The workbook's charts and print setup (issue 23): every series reads as many categories as values, all of them
figures; the tornado on 6 Sensitivities ranks each what-if's monthly cost against the plan's; the catalog sheets print
one page wide."""

from __future__ import annotations

import io
import math

import numpy as np
import openpyxl
import pytest
from openpyxl.utils import range_boundaries
from pytest import approx
from workbookhelp import build, engine_json, plan_figures, recalculate, require_libreoffice, workbook_for_plan

from xlplan.evidence.traffic import summarise
from xlplan.excel import layout
from xlplan.excel.common import SUPPORT_TABS
from xlplan.excel.writer import PAGES_TALL_BOUND, workbook_bytes
from xlplan.io.planfile import reference_plan
from xlplan.schema.plan import Plan

T0 = 1_767_225_600  # 2026-01-01 00:00:00 UTC


@pytest.fixture(scope="module")
def every_chart_xlsx() -> bytes:
    """A workbook with every chart the writer draws: the reference plan verified in simulation (tab 4's chart), with a
    growth section (the Schedule's chart) and a day's request log (the traffic sheets' charts)."""
    grown = reference_plan().model_dump(exclude_none=True)
    grown["growth"] = {"monthly": 0.10, "months": 12, "lead_time_days": 90, "start": "2027-01"}
    rng = np.random.default_rng(0)
    t_s = T0 + np.sort(rng.uniform(0, 86_400, 2000))
    prompt, output = rng.integers(100, 4000, 2000).astype(float), rng.integers(10, 500, 2000).astype(float)
    traffic = (summarise(t_s, prompt, output), t_s, prompt, output, "a day drawn for the test")
    return workbook_bytes(layout.build(plan_figures(Plan.model_validate(grown), verify=True), traffic=traffic))


def _ref(source) -> str:
    """The formula of a series' data source ('Sheet'!$A$1:$A$9), numbers or text."""
    return (source.numRef or source.strRef).f


def _cells(wb, ref: str) -> list:
    """The cells of a range reference, in order."""
    title, rng = ref.rsplit("!", 1)
    min_col, min_row, max_col, max_row = range_boundaries(rng.replace("$", ""))
    ws = wb[title.strip("'").replace("''", "'")]
    return [c for row in ws.iter_rows(min_row=min_row, max_row=max_row, min_col=min_col, max_col=max_col) for c in row]


def _title(chart) -> str:
    """A chart's title as text."""
    return "".join(r.t for p in chart.title.tx.rich.p for r in (p.r or []))


def _is_figure(value) -> bool:
    """A number or a formula: what a plotted cell holds (a header or a units row holds text)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or (isinstance(value, str) and value.startswith("="))


@pytest.mark.slow
def test_every_series_reads_as_many_categories_as_values_all_figures(every_chart_xlsx):
    # a series whose values start on its units row (the Schedule's did: G12:G24 against D13:D24) plots each month's
    # figure at the month before it and the unit's text as a zero; here every cell of both ranges is a figure
    wb = openpyxl.load_workbook(io.BytesIO(every_chart_xlsx))
    series_by_sheet: dict[str, int] = {}
    for sheet in [*wb.worksheets, *wb.chartsheets]:
        for chart in sheet._charts:
            for series in chart.series:
                xs = _cells(wb, _ref(series.xVal or series.cat))
                ys = _cells(wb, _ref(series.yVal or series.val))
                where = f"{sheet.title}: {_title(chart)}: {_ref(series.yVal or series.val)}"
                assert len(xs) == len(ys) > 0, where
                assert all(_is_figure(c.value) for c in xs + ys), where
                title = _cells(wb, series.tx.strRef.f)[0].value  # the series' name: its header, text
                assert isinstance(title, str) and not title.startswith("="), where
                series_by_sheet[sheet.title] = series_by_sheet.get(sheet.title, 0) + 1
    assert set(series_by_sheet) == {"3 Constraints", "4 Fleet", "5 Cost", "6 Sensitivities", "Schedule", "Traffic data",
                                    "Traffic chart"}
    # GPUs the load needs, with redundancy, held; then the second chart's cumulative cash
    assert series_by_sheet["Schedule"] == 4


def _tornado(wb):
    """The 6 Sensitivities sheet's one horizontal bar chart."""
    bars = [c for c in wb["6 Sensitivities"]._charts if c.tagname == "barChart"]
    assert len(bars) == 1 and bars[0].type == "bar"
    return bars[0]


@pytest.mark.slow
def test_tornado_reads_the_what_if_table_largest_first(ref_plan):
    wb = openpyxl.load_workbook(io.BytesIO(workbook_for_plan(ref_plan)))
    chart = _tornado(wb)
    assert chart.x_axis.scaling.orientation == "maxMin"  # the first category (the largest change) at the top
    assert chart.x_axis.tickLblSkip == 1  # every bar labelled (a new user saw every other one)
    assert "monthly cost" in _title(chart).lower() and "minus the plan's" in _title(chart)


@pytest.mark.slow
def test_tornado_bars_are_each_what_ifs_monthly_cost_minus_the_plans(ref_plan, tmp_path):
    require_libreoffice()
    src = tmp_path / "reference.xlsx"
    src.write_bytes(workbook_bytes(build(ref_plan), caches=False))  # LibreOffice computes every figure itself
    out, = recalculate([src], tmp_path / "recalculated")
    js = engine_json(ref_plan, tmp_path, "reference")
    series, = _tornado(openpyxl.load_workbook(src)).series
    wv = openpyxl.load_workbook(out, data_only=True)
    labels = [c.value for c in _cells(wv, _ref(series.cat))]
    values = [c.value for c in _cells(wv, _ref(series.val))]
    (_, ref), = wv.defined_names["WhatIfInputs"].destinations
    first = range_boundaries(ref.replace("$", ""))[1]
    ws = wv["6 Sensitivities"]
    plan_usd = js["runbook_method"]["cost"]["monthly_usd"]  # the what-ifs re-plan the runbook's method
    # each standard what-if's label (column A of its row) and its monthly cost minus the plan's, from `plan --json`
    rows = [(ws[f"A{first + k}"].value, s["monthly_usd"] - plan_usd if s["feasible"] else None)
            for k, s in enumerate(js["sensitivities"])]
    # a tornado: the largest change first, an infeasible row last; changes equal to the cent tie (one GPU-month
    # more or less is 2,190.00 USD whatever the last bits) and keep the table's order (sorted is stable)
    expected = sorted(rows, key=lambda row: -round(abs(row[1]), 2) if row[1] is not None else math.inf)
    assert len(labels) == len(rows) == 10
    assert labels == [label for label, _ in expected]
    assert [v is None for v in values] == [v is None for _, v in expected]
    assert [v for v in values if v is not None] == approx([v for _, v in expected if v is not None], rel=1e-9)
    assert any(v != 0 for v in values)  # the reference's what-ifs move its cost (peak x2: 19,710 - 10,950 USD)


@pytest.mark.slow
def test_catalog_sheets_print_one_page_wide(ref_plan):
    # the GPUs (19 columns, two of them 60 and 90 characters wide) and Models (36 columns) catalogs printed to 15
    # pages at a fixed 70% scale, several across each; now every supporting sheet is one page wide, as long as it
    # takes, and the two catalogs landscape
    wb = openpyxl.load_workbook(io.BytesIO(workbook_for_plan(ref_plan)))
    for title in SUPPORT_TABS:
        ws = wb[title]
        assert ws.sheet_properties.pageSetUpPr.fitToPage, title
        assert (ws.page_setup.fitToWidth, ws.page_setup.fitToHeight) == (1, PAGES_TALL_BOUND), title
    for title in ("GPUs", "Models"):
        assert wb[title].page_setup.orientation == "landscape"
