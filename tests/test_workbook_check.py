"""`xlplan check`: a formula replaced by a number, inputs changed without recalculation, a failing check."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import openpyxl
import pytest
from planhelp import replan
from workbookhelp import require_libreoffice, workbook_for_plan

from xlplan.cli import main
from xlplan.excel.common import SIX_TABS, SUPPORT_TABS

SHEETS = ["Summary", *SIX_TABS, "Options", "Schedule", *SUPPORT_TABS]  # the order of the package's sheet files


def _cell_of(path: Path, name: str) -> tuple[str, str]:
    wb = openpyxl.load_workbook(path)
    (title, ref), = wb.defined_names[name].destinations
    return title, ref.replace("$", "")


def _patch_cell(path: Path, title: str, coord: str, new_xml: str) -> None:
    """Replace one cell's XML inside the package, leaving every other cell and cache as it was (as Excel's
    'type over a formula, save without recalculating' would)."""
    member = f"xl/worksheets/sheet{SHEETS.index(title) + 1}.xml"
    src = zipfile.ZipFile(io.BytesIO(path.read_bytes()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == member:
                text, n = re.subn(rf'<c r="{coord}"[^>]*?(?:/>|>.*?</c>)', new_xml, data.decode(), count=1, flags=re.DOTALL)
                assert n == 1, coord
                data = text.encode()
            dst.writestr(info, data)
    path.write_bytes(out.getvalue())


def _check(path: Path, capsys) -> tuple[int, list[dict]]:
    rc = main(["check", str(path), "--json"])
    return rc, json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_the_template_has_no_findings(ref_plan, tmp_path, capsys):
    path = tmp_path / "t.xlsx"
    path.write_bytes(workbook_for_plan(ref_plan))
    assert _check(path, capsys) == (0, [])


@pytest.mark.slow
def test_formula_replaced_by_a_number(ref_plan, tmp_path, capsys):
    path = tmp_path / "t.xlsx"
    path.write_bytes(workbook_for_plan(ref_plan))
    title, coord = _cell_of(path, "Concurrency")
    _patch_cell(path, title, coord, f'<c r="{coord}"><v>600</v></c>')  # typed 600 over =PeakRate*TimeInSystem
    rc, findings = _check(path, capsys)
    assert rc == 1
    assert findings == [{"where": f"'{title}'!{coord}", "kind": "formula-overwritten", "found": "600",
                         "expected": "=PeakRate*TimeInSystem"}]


@pytest.mark.slow
def test_changed_input_makes_values_stale(ref_plan, tmp_path, capsys):
    path = tmp_path / "t.xlsx"
    path.write_bytes(workbook_for_plan(ref_plan))
    title, coord = _cell_of(path, "PeakRate")
    _patch_cell(path, title, coord, f'<c r="{coord}" s="1"><v>50</v></c>')  # 40 -> 50 req/s, cached values left as they were
    # an ordinary edit, not a problem with the file: one finding naming the input against its value at build time
    # (the Summary's snapshot), which the values computed for 40 req/s (Little's Law's 600 in flight among them)
    # follow; exit 0, and 1 with --strict
    rc, findings = _check(path, capsys)
    assert rc == 0
    assert [(f["where"], f["kind"], f["found"]) for f in findings] == [("1 Inputs", "inputs-changed", "PeakRate 40 -> 50")]
    assert "regenerate" in findings[0]["expected"] and "xlplan read" in findings[0]["expected"]
    assert main(["check", str(path), "--strict"]) == 1
    out = capsys.readouterr().out
    assert "no problem with the file" in out and "exit 1 with --strict" in out


@pytest.mark.slow
def test_failing_check_is_reported(ref_plan, tmp_path, capsys):
    # a 0.05 s TTFT target: a 2,000-token prompt takes 3.42e13 FLOP ÷ 395.6 TFLOP/s = 0.087 s to prefill
    plan = replan(ref_plan, promise={"ttft_s": 0.05})
    path = tmp_path / "t.xlsx"
    path.write_bytes(workbook_for_plan(plan))
    rc, findings = _check(path, capsys)
    assert rc == 1
    assert [f["kind"] for f in findings] == ["check-failed"]
    assert findings[0]["expected"] == "TRUE: TTFT target met by a p95 prompt" and findings[0]["where"].startswith("Checks!")


@pytest.mark.slow
def test_table_output_names_sheet_and_cell(ref_plan, tmp_path, capsys):
    path = tmp_path / "t.xlsx"
    path.write_bytes(workbook_for_plan(ref_plan))
    title, coord = _cell_of(path, "FleetPurchased")
    _patch_cell(path, title, coord, f'<c r="{coord}"><v>8</v></c>')
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"'{title}'!{coord}" in out and "formula-overwritten" in out


@pytest.mark.slow
def test_edited_and_recalculated_workbook_agrees_but_breakpoints_are_stale(ref_plan, tmp_path, capsys):
    # a user changes an input and the spreadsheet recalculates: every formula's value now agrees with the engine for
    # the new input; only the breakpoints, which the engine searched at build time, are reported stale
    require_libreoffice()
    from xlplan.io.libreoffice import recalculate

    path = tmp_path / "t.xlsx"
    path.write_bytes(workbook_for_plan(ref_plan))
    wb = openpyxl.load_workbook(path)
    (title, ref), = wb.defined_names["PeakRate"].destinations
    wb[title][ref.replace("$", "")].value = 55
    wb.save(path)
    out = recalculate([path], tmp_path / "lo")[0]
    # the Summary's Answer (engine values: the fleet computed for 40 req/s) is flagged, by formula, as stale
    done = openpyxl.load_workbook(out, data_only=True)
    (title, ref), = done.defined_names["AnswerCurrent"].destinations
    assert str(done[title][ref.replace("$", "")].value).startswith("STALE")
    rc, findings = _check(out, capsys)
    # the engine-searched values (breakpoints, the Options' re-plans, the Schedule's fleets, the Summary's Answer), each
    # flagged STALE, are one finding that names the edit: built at 40 req/s, the workbook now says 55; exit 0
    assert rc == 0
    assert [(f["kind"], f["found"]) for f in findings] == [("inputs-changed", "PeakRate 40 -> 55")]
    n = int(findings[0]["expected"].split("(")[1].split(" ")[0].replace(",", ""))
    assert n > 10  # breakpoints, options and the Answer's cells at least


@pytest.mark.slow
def test_a_file_saved_without_computed_values_is_one_finding(ref_plan, tmp_path, capsys):
    # openpyxl (and pandas through it) saves formulas without their computed values: every formula cell is then
    # uncomputed, which is one fact, said once; no check is reported failed for a value nobody computed
    path = tmp_path / "resaved.xlsx"
    path.write_bytes(workbook_for_plan(ref_plan))
    openpyxl.load_workbook(path).save(path)
    rc, findings = _check(path, capsys)
    assert rc == 0  # nothing wrong with the file: its values are yet to be computed (exit 1 with --strict)
    assert [(f["where"], f["kind"]) for f in findings] == [("(every formula cell)", "no-cached-value")]
    assert "open and save it in Excel or LibreOffice" in findings[0]["expected"]
    assert main(["check", str(path), "--strict"]) == 1


@pytest.mark.slow
def test_a_cross_check_without_the_add_in_is_not_checked_in_grey_and_no_finding(ref_plan, tmp_path, capsys):
    # Without the add-in a cross-check's IFERROR falls back to its text: a state ("not checked"), not an error
    # ("not loaded" read as one), so it is grey (808080, as notes are muted) and `xlplan check` finds nothing in it;
    # a workbook built before keeps its own words in the formula and its cached value, and is no finding either
    from xlplan.excel.common import ADDIN_MISSING, ADDIN_MISSING_BEFORE, CROSSCHECK_COL

    path = tmp_path / "t.xlsx"
    path.write_bytes(workbook_for_plan(ref_plan))
    title, coord = _cell_of(path, "Concurrency")
    cell = openpyxl.load_workbook(path)[title][f"{CROSSCHECK_COL}{coord[1:]}"]
    assert ADDIN_MISSING == "not checked (no add-in)" and cell.value.endswith(f',"{ADDIN_MISSING}")')
    assert cell.font.color.rgb.endswith("808080")
    assert openpyxl.load_workbook(path, data_only=True)[title][cell.coordinate].value == ADDIN_MISSING
    older = path.read_bytes()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(older)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info, src.read(info.filename).replace(ADDIN_MISSING.encode(), ADDIN_MISSING_BEFORE[0].encode()))
    old = tmp_path / "older.xlsx"
    old.write_bytes(out.getvalue())
    assert openpyxl.load_workbook(old, data_only=True)[title][cell.coordinate].value == "add-in not loaded"
    assert _check(path, capsys) == (0, [])
    assert _check(old, capsys) == (0, [])
