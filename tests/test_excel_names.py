"""Every defined name in every workbook we write is a name Excel accepts.

Excel's rules (ECMA-376 Part 1, §18.2.5 definedName and §18.17 formulas; Microsoft support, "Names in formulas":
"Names cannot be the same as a cell reference, such as Z$100 or R1C1"): a name starts with a letter, an underscore
or a backslash, continues with letters, digits, periods and underscores, is at most 255 characters, is not TRUE or
FALSE, is not "R" or "C", and is neither an A1 address (columns A..XFD, rows 1..1048576) nor R1C1-shaped.
LibreOffice accepts some names Excel refuses (it read the old `Z95` fine), so this is checked by rule, not by engine.
"""

from __future__ import annotations

import io
import re

import openpyxl
import pytest
from planhelp import replan
from workbookhelp import build

from xlplan.excel.writer import workbook_bytes

MAX_COLUMN = 16384  # XFD
MAX_ROW = 1048576
A1 = re.compile(r"^\$?([A-Za-z]{1,3})\$?([0-9]+)$")
R1C1 = re.compile(r"^[Rr]([0-9]*)[Cc]([0-9]*)$|^[Rr][0-9]*$|^[Cc][0-9]*$")
CHARACTERS = re.compile(r"^[A-Za-z_\\][A-Za-z0-9_.\\]*$")


def _column_number(letters: str) -> int:
    n = 0
    for ch in letters.upper():
        n = n * 26 + ord(ch) - 64
    return n


def excel_name_problem(name: str) -> str | None:
    """Why Excel would refuse ``name`` as a defined name, or None."""
    if not name or len(name) > 255:
        return "empty or longer than 255 characters"
    if not CHARACTERS.match(name):
        return "characters other than letters, digits, '.', '_' and '\\', or a digit first"
    if name.upper() in ("TRUE", "FALSE"):
        return "a boolean constant"
    m = A1.match(name)
    if m and _column_number(m.group(1)) <= MAX_COLUMN and 1 <= int(m.group(2)) <= MAX_ROW:
        return "shaped like an A1 cell address"
    if R1C1.match(name):
        return "shaped like an R1C1 reference"
    return None


@pytest.mark.parametrize("name, bad", [
    ("Z95", True), ("Z99", True), ("XFD1048576", True), ("AB12", True), ("R1C1", True), ("R", True), ("c", True),
    ("RC", True), ("R12", True), ("TRUE", True), ("1Inputs", True), ("Peak Rate", True), ("a" * 256, True),
    ("XFE1", False), ("ABCD1", False), ("ZScore95", False), ("TP1", True), ("PeakRate", False), ("_x.y", False),
])
def test_the_rule_itself(name, bad):
    # TP1 is column TP, row 1: a cell address, so the workbook must not use it as a name either
    assert (excel_name_problem(name) is not None) is bad


def _workbooks(ref_plan):
    plans = {
        "reference": ref_plan,
        "p95_8k": replan(ref_plan, forecast={"prompt_tokens": {"p50": 2000, "p95": 8000, "p99": 8000}}),
        "mla_fp8": replan(ref_plan, model={"name": "deepseek-v3", "weights_dtype": "fp8", "kv_dtype": "fp8"},
                          hardware={"gpu": "h200", "usd_per_gpu_hour": 3.6}, forecast={"peak_rps": 6}),
        "moe_int4_no_api": replan(ref_plan, model={"name": "qwen3-30b-a3b", "weights_dtype": "int4"}, api=None),
    }
    for stem, plan in plans.items():
        yield stem, build(plan)
        yield stem + "_udf", build(plan, formulas="udf")
    yield "namespace", build(ref_plan, formulas="udf", namespace="XLWINGS")
    yield "verified", build(ref_plan, verify=True)


@pytest.mark.slow
def test_every_defined_name_in_every_workbook_is_valid_in_excel(ref_plan):
    problems, seen = [], 0
    for stem, book in _workbooks(ref_plan):
        wb = openpyxl.load_workbook(io.BytesIO(workbook_bytes(book)))
        names = set(wb.defined_names) | set(book.names)
        for ws in wb.worksheets:  # sheet-scope names (print areas and titles are Excel's own reserved ones)
            names |= {n for n in ws.defined_names if not n.startswith("_xlnm.")}
        for name in names:
            seen += 1
            why = excel_name_problem(name)
            if why:
                problems.append(f"{stem}: {name!r} is {why}")
    assert problems == []
    assert seen > 8 * 150  # the check ran over every workbook's full set of names


@pytest.mark.slow
def test_workbook_with_traffic_sheets_has_valid_names(ref_plan, tmp_path):
    # `xlplan traffic --workbook` adds sheets and names of its own
    import pandas as pd

    from xlplan.cli import main

    log = tmp_path / "log.csv"
    pd.DataFrame({"timestamp": (pd.date_range("2026-01-05", periods=400, freq="37s") - pd.Timestamp("1970-01-01"))
                  // pd.Timedelta("1s"),  # Unix seconds, whatever unit pandas stores
                  "prompt_tokens": [1500 + 7 * i % 900 for i in range(400)],
                  "completion_tokens": [200 + 3 * i % 300 for i in range(400)]}).to_csv(log, index=False)
    out = tmp_path / "t.xlsx"
    assert main(["traffic", str(log), "--window", "60s", "--workbook", str(out)]) == 0
    wb = openpyxl.load_workbook(out)
    assert "Traffic data" in wb.sheetnames
    assert [n for n in wb.defined_names if excel_name_problem(n)] == []
