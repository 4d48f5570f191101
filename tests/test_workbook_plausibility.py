"""A workbook's inputs are held to the plan file's plausible ranges: `read`, `check` and `diff` refuse a value no one
means in one line naming the workbook, the cell, the field, the value and the likely slip, unless it is accepted."""

from __future__ import annotations

import hashlib
import json

import openpyxl
import pytest
import yaml
from workbookhelp import build, edited_copies, name_ref

from xlplan.cli import main
from xlplan.excel.reader import read_workbook
from xlplan.schema.plan import Plan

EDITS = {
    "as_built": {},
    "peak_a_day": {"PeakRate": 3_456_000},  # requests a day typed where a second was meant
    "hours_a_day": {"HoursPerMonth": 24},  # hours a day typed where a month's billed hours were meant
    "both": {"PeakRate": 3_456_000, "HoursPerMonth": 24},
}

# xlplan.schema.plausibility.RANGES, by hand: forecast.peak_rps is 0.0001 to 1,000,000 requests/s, so 3,456,000 is
# outside; its slip is requests a day, 3,456,000 ÷ 86,400 s = 40 a second. hardware.hours_per_month is 168 to 744 h,
# so 24 is outside; its slip is hours a day, 24 h × 730 ÷ 24 = 730 h a month.
PEAK = ("forecast.peak_rps: got 3,456,000; expected requests per second at peak, 0.0001 to 1,000,000",
        "— was it requests a day? 3,456,000 a day is 40 a second")
HOURS = ("hardware.hours_per_month: got 24; expected billed hours in a month, 168 to 744",
         "— was it hours a day? 24 h a day is 730 h a month")


@pytest.fixture(scope="module")
def book(ref_plan):
    """The reference plan's workbook, laid out once."""
    return build(ref_plan)


@pytest.fixture(scope="module")
def books(book, tmp_path_factory):
    """The reference workbook as built and edited (saved by openpyxl, as a user's script would): {stem: path}."""
    return dict(zip(EDITS, edited_copies(book, tmp_path_factory.mktemp("plausibility"), EDITS)))


@pytest.fixture(scope="module")
def cells(book):
    """Where PeakRate and HoursPerMonth are: '1 Inputs'!B17 and '1 Inputs'!B51 in today's layout."""
    return {name: "'{}'!{}".format(*name_ref(book, name)) for name in ("PeakRate", "HoursPerMonth")}


def _run(capsys, *args) -> tuple[int, str, str]:
    rc = main(list(map(str, args)))
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return rc, out.out, out.err


def _one_line(err: str, path, where: str, expected: tuple[str, str], field: str) -> None:
    """One line: the workbook, the cell, the field and value, the range, the slip and how to accept it."""
    line = err.strip()
    assert line.count("\n") == 0, err
    assert line.startswith(f"error: {path}: {where}: {expected[0]} ("), line
    assert expected[1] in line, line
    assert line.endswith(f"; if it is meant, run xlplan --accept-implausible {field} … on the workbook (a plan "
                         "`xlplan read` writes from it then accepts it)"), line


@pytest.mark.parametrize(("stem", "name", "expected", "field"), [
    ("peak_a_day", "PeakRate", PEAK, "forecast.peak_rps"),
    ("hours_a_day", "HoursPerMonth", HOURS, "hardware.hours_per_month"),
])
def test_read_refuses_a_slip_in_one_line_and_writes_nothing(books, cells, tmp_path, capsys, stem, name, expected, field):
    # -o a file of the user's own, with --force: the refusal comes first, the file keeps what the user wrote
    out = tmp_path / "plan.yaml"
    out.write_text("mine\n", encoding="utf-8")
    before = hashlib.sha256(books[stem].read_bytes()).hexdigest()
    rc, _, err = _run(capsys, "read", books[stem], "-o", out, "--force")
    assert rc == 2
    _one_line(err, books[stem], cells[name], expected, field)
    assert out.read_text(encoding="utf-8") == "mine\n"
    assert hashlib.sha256(books[stem].read_bytes()).hexdigest() == before


@pytest.mark.parametrize(("stem", "name", "expected", "field"), [
    ("peak_a_day", "PeakRate", PEAK, "forecast.peak_rps"),
    ("hours_a_day", "HoursPerMonth", HOURS, "hardware.hours_per_month"),
])
def test_check_refuses_a_slip_before_any_simulation(books, cells, capsys, stem, name, expected, field):
    # the current inputs are judged, not the Summary's snapshot (which holds the plausible values it was built from)
    rc, out, err = _run(capsys, "check", books[stem])
    assert rc == 2 and out == ""
    _one_line(err, books[stem], cells[name], expected, field)


@pytest.mark.parametrize(("stem", "name", "expected", "field"), [
    ("peak_a_day", "PeakRate", PEAK, "forecast.peak_rps"),
    ("hours_a_day", "HoursPerMonth", HOURS, "hardware.hours_per_month"),
])
def test_diff_refuses_a_slip_in_either_workbook(books, cells, capsys, stem, name, expected, field):
    # as NEW against the workbook as built, and as OLD: the one line names the edited workbook either way
    old, new = (books["as_built"], books[stem]) if stem == "peak_a_day" else (books[stem], books["as_built"])
    rc, out, err = _run(capsys, "diff", old, new)
    assert rc == 2 and out == ""
    _one_line(err, books[stem], cells[name], expected, field)


@pytest.mark.slow
def test_every_slip_is_one_line_under_the_workbook(books, cells, capsys):
    # two values outside their ranges: the workbook named once with the count, then one line each at its cell
    rc, _, err = _run(capsys, "read", books["both"])
    lines = err.strip().splitlines()
    assert rc == 2 and lines[0] == f"error: {books['both']}: 2 problem(s)", err
    assert lines[1].startswith(f"  {cells['PeakRate']}: {PEAK[0]} (") and PEAK[1] in lines[1]
    assert lines[2].startswith(f"  {cells['HoursPerMonth']}: {HOURS[0]} (") and HOURS[1] in lines[2]


@pytest.mark.slow
def test_accepting_the_field_reads_the_plan_and_it_carries_the_acceptance(books, tmp_path, capsys):
    # the option before the command or after it; the plan written accepts the field, so `plan` reads it as given
    out = tmp_path / "plan.yaml"
    rc, _, err = _run(capsys, "read", books["peak_a_day"], "-o", out, "--accept-implausible", "forecast.peak_rps")
    assert rc == 0, err
    plan = Plan.model_validate(yaml.safe_load(out.read_text(encoding="utf-8")))
    assert plan.forecast.peak_rps == 3_456_000 and plan.accept_implausible == ["forecast.peak_rps"]
    rc, text, err = _run(capsys, "--accept-implausible", "hardware.hours_per_month", "read", books["hours_a_day"])
    assert rc == 0 and "hours_per_month: 24" in text, err


@pytest.mark.slow
def test_accepting_one_field_leaves_the_other_refused(books, cells, capsys):
    # both edited, peak_rps accepted: the hours are the one line left
    rc, _, err = _run(capsys, "--accept-implausible", "forecast.peak_rps", "read", books["both"])
    assert rc == 2
    _one_line(err, books["both"], cells["HoursPerMonth"], HOURS, "hardware.hours_per_month")


@pytest.mark.slow
def test_check_takes_the_option_too(books, capsys):
    # accepted, check goes past the reading to its findings: the edit (HoursPerMonth 730 -> 24; the reference bills
    # 730 h a month) is one inputs-changed finding, exit 0 without --strict
    rc, out, err = _run(capsys, "--accept-implausible", "hardware.hours_per_month", "check", books["hours_a_day"])
    assert rc == 0 and "inputs-changed" in out and "HoursPerMonth 730 -> 24" in out, out + err


@pytest.mark.slow
def test_diff_takes_the_option_too(books, capsys):
    # accepted, diff names the input changed, 730 → 24 h a month (the reference bills 730), the bill 7 GPUs rented ×
    # $3 × 730 h = $15,330 → 7 × $3 × 24 h = $504, and exits 1 as it differs
    rc, out, err = _run(capsys, "--accept-implausible", "hardware.hours_per_month", "diff", books["as_built"],
                        books["hours_a_day"])
    assert rc == 1 and "hardware.hours_per_month: 730 h/month → 24 h/month" in out, out + err
    assert "monthly bill:                         $15,330 → $504" in out


@pytest.fixture(scope="module")
def accepted_book(ref_plan, tmp_path_factory):
    """A plan that accepts 24 billed hours a month, and its workbook, as built and with 730 typed over the 24."""
    data = ref_plan.model_dump(exclude_none=True)
    data["hardware"]["hours_per_month"] = 24
    plan = Plan.model_validate({**data, "accept_implausible": ["hardware.hours_per_month"]})
    edits = {"accepted": {}, "retyped": {"HoursPerMonth": 730}}
    return plan, *edited_copies(build(plan), tmp_path_factory.mktemp("accepted"), edits)


@pytest.mark.slow
def test_a_workbook_of_an_accepted_plan_reads_back_with_the_option(accepted_book, cells, capsys):
    # the workbook does not carry the plan's acceptance: read alone refuses the 24 h at its cell, and with the option
    # the plan comes back as it was (accept_implausible included): plan → workbook → plan is the identity
    plan, path, _ = accepted_book
    rc, _, err = _run(capsys, "read", path)
    assert rc == 2
    _one_line(err, path, cells["HoursPerMonth"], HOURS, "hardware.hours_per_month")
    assert read_workbook(path, accept_implausible=("hardware.hours_per_month",)).model_dump() == plan.model_dump()


@pytest.mark.slow
def test_the_snapshot_it_was_built_from_is_not_judged(accepted_book, capsys):
    # 730 h typed over the 24 the plan accepted: the current inputs are plausible and read; the Summary's snapshot
    # (24 h, what the engine ran on) is the file's record, read unjudged, so check gets past it to its findings:
    # one edited input (HoursPerMonth 24 -> 730), exit 0 without --strict
    _, _, retyped = accepted_book
    assert read_workbook(retyped).hardware.hours_per_month == 730
    assert read_workbook(retyped, built=True).hardware.hours_per_month == 24
    rc, out, err = _run(capsys, "check", retyped)
    assert rc == 0 and "inputs-changed" in out and "HoursPerMonth 24 -> 730" in out, out + err


@pytest.mark.slow
def test_a_value_off_1_inputs_is_named_at_its_own_cell(ref_plan, tmp_path, capsys):
    # a GPU given inline is a row of the GPUs sheet, its memory in column C; the growth section is kept as JSON on the
    # Schedule sheet (GrowthSection). 5,120 GiB is past 1,024 (5,120 ÷ 8 GPUs = 640 GiB each, the node's memory);
    # 0.9 a month is past the 0.5 the fastest-growing services reached
    data = ref_plan.model_dump(exclude_none=True)
    data["hardware"]["gpu"] = {"name": "h100-sxm", "usd_per_gpu_hour": 3.0}
    data["growth"] = {"monthly": 0.05, "months": 6}
    book = build(Plan.model_validate(data))
    gpus = book.get("GPUs")
    row = next(int(c[1:]) for c, cell in gpus.cells.items() if c.startswith("A") and cell.value == "h100-sxm (from plan)")
    title, coord = name_ref(book, "GrowthSection")
    path, = edited_copies(book, tmp_path, {"off_inputs": {}})
    wb = openpyxl.load_workbook(path)
    wb["GPUs"][f"C{row}"].value = 5120
    wb[title][coord].value = json.dumps({"monthly": 0.9, "months": 6})
    wb.save(path)
    rc, _, err = _run(capsys, "read", path)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 3, err
    assert lines[1].startswith(f"  GPUs!C{row}: hardware.gpu.memory_gib: got 5,120; expected GiB per GPU, 8 to 1,024 (")
    assert "5,120 GiB over 8 GPUs is 640 GiB each" in lines[1]
    assert lines[2].startswith(f"  {title}!{coord}: growth.monthly: got 0.9; expected the peak's growth a month, as a "
                               "fraction, -0.3 to 0.5 (")
