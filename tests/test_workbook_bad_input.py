"""Workbooks come from people: each class of bad input gets sheet, cell, value and what was expected; exit 2; no file changed."""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import openpyxl
import pytest
from workbookhelp import workbook_for_plan

from xlplan.cli import main
from xlplan.io.planfile import reference_plan

DATA = Path(__file__).parent / "data"


@pytest.fixture
def wb_path(tmp_path):
    path = tmp_path / "plan.xlsx"
    path.write_bytes(workbook_for_plan(reference_plan()))
    return path


def _edit(path: Path, name: str, value) -> str:
    """Set the input behind a defined name with openpyxl, as a user's script would; returns its 'sheet'!cell."""
    wb = openpyxl.load_workbook(path)
    (title, ref), = wb.defined_names[name].destinations
    wb[title][ref.replace("$", "")].value = value
    wb.save(path)
    return f"'{title}'!{ref.replace('$', '')}"


def _read(path: Path, capsys, tmp_path) -> tuple[int, str]:
    """Run `xlplan read` with -o; check the workbook is unchanged and no plan file was written."""
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    out = tmp_path / "out.yaml"
    rc = main(["read", str(path), "-o", str(out)])
    err = capsys.readouterr().err
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert not out.exists()
    return rc, err


@pytest.mark.slow
def test_text_in_a_number_cell(wb_path, capsys, tmp_path):
    where = _edit(wb_path, "PeakRate", "forty")
    rc, err = _read(wb_path, capsys, tmp_path)
    assert rc == 2
    assert f"{where} (PeakRate, Peak arrival rate): found 'forty'; expected a positive number [requests/s]" in err


@pytest.mark.slow
def test_empty_required_input(wb_path, capsys, tmp_path):
    where = _edit(wb_path, "PromptP50", None)
    rc, err = _read(wb_path, capsys, tmp_path)
    assert rc == 2 and f"{where} (PromptP50, Prompt length p50): empty; expected a positive number [tokens]" in err


@pytest.mark.slow
def test_forty_for_forty_percent(wb_path, capsys, tmp_path):
    where = _edit(wb_path, "AvgUtilisation", 40)
    rc, err = _read(wb_path, capsys, tmp_path)
    assert rc == 2 and where in err and "got 40.0" in err and "write 0.40, not 40" in err


@pytest.mark.slow
def test_p95_below_p50(wb_path, capsys, tmp_path):
    where = _edit(wb_path, "PromptP95", 1000)  # p50 is 2,000
    rc, err = _read(wb_path, capsys, tmp_path)
    assert rc == 2 and where in err and "p95 (1000) is below p50 (2000)" in err


@pytest.mark.slow
def test_both_speeds_given(wb_path, capsys, tmp_path):
    where = _edit(wb_path, "TokensPerSecondInput", 20)  # ITL 0.05 s is given too
    rc, err = _read(wb_path, capsys, tmp_path)
    assert rc == 2 and where.split("!")[0] in err and "give exactly one of itl_s" in err


@pytest.mark.slow
def test_deleted_defined_name(wb_path, capsys, tmp_path):
    wb = openpyxl.load_workbook(wb_path)
    del wb.defined_names["PeakRate"]
    wb.save(wb_path)
    rc, err = _read(wb_path, capsys, tmp_path)
    assert rc == 2 and "defined name 'PeakRate' is missing" in err


@pytest.mark.slow
def test_deleted_sheet(wb_path, capsys, tmp_path):
    wb = openpyxl.load_workbook(wb_path)
    del wb["2 Model"]
    wb.save(wb_path)
    rc, err = _read(wb_path, capsys, tmp_path)
    assert rc == 2 and "sheet '2 Model' not found" in err and "renamed or deleted" in err


@pytest.mark.slow
def test_renamed_tab(wb_path, capsys, tmp_path):
    wb = openpyxl.load_workbook(wb_path)
    wb["1 Inputs"].title = "Inputs"
    wb.save(wb_path)
    rc, err = _read(wb_path, capsys, tmp_path)
    assert rc == 2 and "sheet '1 Inputs' not found (sheets: Summary, Inputs," in err


def test_legacy_xls(capsys, tmp_path):
    # tests/data/legacy.xls: a one-cell workbook saved by LibreOffice 7.4 as Excel 97-2003
    path = tmp_path / "old.xls"
    path.write_bytes((DATA / "legacy.xls").read_bytes())
    rc, err = _read(path, capsys, tmp_path)
    assert rc == 2 and "legacy Excel 97-2003 .xls; expected .xlsx" in err


def test_corrupt_file(wb_path, capsys, tmp_path):
    wb_path.write_bytes(wb_path.read_bytes()[:2000])  # truncated download
    rc, err = _read(wb_path, capsys, tmp_path)
    assert rc == 2 and "not a valid .xlsx" in err


def test_zip_that_is_not_a_workbook(tmp_path, capsys):
    path = tmp_path / "notes.xlsx"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("readme.txt", "hello")
    rc, err = _read(path, capsys, tmp_path)
    assert rc == 2 and "not a readable .xlsx" in err


@pytest.mark.slow
def test_password_protected(wb_path, capsys, tmp_path):
    from msoffcrypto.format.ooxml import OOXMLFile

    enc = tmp_path / "locked.xlsx"
    with open(wb_path, "rb") as f, open(enc, "wb") as out:
        OOXMLFile(f).encrypt("secret", out)
    rc, err = _read(enc, capsys, tmp_path)
    assert rc == 2 and "password-protected" in err and "remove the password" in err


def test_entity_expansion_is_refused(wb_path, capsys, tmp_path):
    # a "billion laughs" workbook: openpyxl parses with defusedxml, which refuses entity declarations
    raw = io.BytesIO(wb_path.read_bytes())
    out = io.BytesIO()
    with zipfile.ZipFile(raw) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "xl/workbook.xml":
                text = data.decode()
                bomb = '<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>'
                head, sep, rest = text.partition("?>")
                data = (head + sep + bomb + rest if sep else bomb + text).encode()
            dst.writestr(info, data)
    wb_path.write_bytes(out.getvalue())
    rc, err = _read(wb_path, capsys, tmp_path)
    assert rc == 2 and "Forbidden" in err


def test_missing_file(capsys, tmp_path):
    rc = main(["read", str(tmp_path / "nope.xlsx")])
    assert rc == 2 and "file not found" in capsys.readouterr().err


@pytest.mark.slow
def test_existing_output_is_not_overwritten_without_force(tmp_path, capsys):
    out = tmp_path / "mine.xlsx"
    out.write_bytes(b"the user's own work")
    assert main(["workbook", "-o", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err and out.read_bytes() == b"the user's own work"
    assert main(["workbook", "-o", str(out), "--force"]) == 0
    assert zipfile.is_zipfile(out)


def test_a_failed_build_leaves_no_file(tmp_path, capsys):
    # weights that fit no GPU: the plan fails before anything is written, and no temporary file is left behind
    plan = tmp_path / "big.yaml"
    plan.write_text(
        "forecast: {peak_rps: 1, prompt_tokens: {p50: 100, p95: 100}, output_tokens: {p50: 10, p95: 10}}\n"
        "promise: {ttft_s: 1, itl_s: 0.05}\nmodel: {name: llama-3.1-405b}\nhardware: {gpu: l4, gpus_per_node: 1}\n")
    assert main(["workbook", str(plan), "-o", str(tmp_path / "out.xlsx")]) == 2
    assert "cannot plan" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.yaml"]


def test_output_must_be_xlsx(tmp_path, capsys):
    assert main(["workbook", "-o", str(tmp_path / "out.xls")]) == 2
    assert "must end in .xlsx" in capsys.readouterr().err


def test_usage_error_is_a_message_not_a_traceback(capsys):
    # typer 0.29 no longer installs click: a missing option must still be a usage line and exit status 2
    assert main(["workbook"]) == 2
    err = capsys.readouterr().err
    assert "Missing" in err and "output" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_misspelt_gpu_names_its_cell_and_the_nearest_key(wb_path, capsys, tmp_path):
    # 'h100-sx' is one letter short of the catalog's 'h100-sxm' (the reference plan's GPU): the line names the cell the
    # key was typed in and the key meant, as a plan file's unknown GPU does
    where = _edit(wb_path, "GPUKey", "h100-sx")
    rc, err = _read(wb_path, capsys, tmp_path)
    assert rc == 2 and f"{where}: got 'h100-sx'; expected a key of the GPUs sheet (column A) — did you mean 'h100-sxm'?" in err


@pytest.mark.slow
def test_buying_without_an_electricity_price_names_its_cell(wb_path, capsys, tmp_path):
    # Paid as buy needs the electricity price (schema: costs.usd_per_kwh has no default): the plan-wide rule's line is
    # put at the cell of the field it names
    _edit(wb_path, "CostMode", "buy")
    where = _edit(wb_path, "HardwareOpsUSDPerMonthInput", 0)
    rc, err = _read(wb_path, capsys, tmp_path)
    wb = openpyxl.load_workbook(wb_path)
    (title, ref), = wb.defined_names["USDPerKWhInput"].destinations
    assert rc == 2 and f"'{title}'!{ref.replace('$', '')}: costs.usd_per_kwh: missing" in err and where not in err
