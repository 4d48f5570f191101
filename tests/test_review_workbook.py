"""`xlplan review --workbook`: the capacity-note workbook with a Review tab, its formulas recomputed by LibreOffice and
the Excel-grammar engine to the review's figures; the breakpoint crossed read from the plan's own section 6 and the
log's p95, never from the review's output."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import re

import openpyxl
import pytest
from test_review import DATE, write_log, write_plan
from workbookhelp import compare_book, engine_json, evaluate_many, recalculate, require_libreoffice

from xlplan.cli import main
from xlplan.decide.planner import plan as run_plan
from xlplan.excel.book import figures
from xlplan.excel.layout import build
from xlplan.excel.reader import read_workbook
from xlplan.excel.writer import workbook_bytes
from xlplan.io.planfile import read_plan, reference_plan
from xlplan.schema.review import ReviewOut

LONG = 800  # of 7,210 prompts at 7,000 tokens: the log's p95 is 7,000 (the top 11% of the sorted prompts, test_review.py)


LEAD_ONLY = {"lead_time_days": 14}
GROWN = {"lead_time_days": 14, "monthly": 0.1, "start": "2026-12"}  # January 2027 is month 1: planned peak 40 × 1.1 = 44


def _review(folder, *extra, growth=LEAD_ONLY):
    """`xlplan review` of the reference plan (with ``growth``) on a month whose p95 prompts reach 7,000:
    (exit status, stdout, stderr, the plan file)."""
    folder.mkdir(parents=True, exist_ok=True)
    plan = write_plan(folder, growth=growth)
    log = write_log(folder / "month.csv", long_prompts=LONG)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["review", str(plan), "--log", str(log), "--date", DATE, *map(str, extra)])
    assert "Traceback" not in err.getvalue()
    return rc, out.getvalue(), err.getvalue(), plan


def _flip_row(book) -> int:
    """The Review tab's row judging tab 6's p95-prompt binding change (its At cell names that breakpoint)."""
    sheet = book.get("Review")
    return next(int(c[1:]) for c, cell in sheet.cells.items() if cell.value == "=BreakpointPromptP95UpFlip")


@pytest.mark.slow
def test_the_workbook_has_the_review_tab_after_the_six_and_checks_and_reads_back(tmp_path, capsys):
    wb = tmp_path / "review.xlsx"
    rc, _, _, path = _review(tmp_path, "--workbook", wb)
    assert rc == 1  # p95 prompts crossed a breakpoint
    sheets = openpyxl.load_workbook(wb).sheetnames
    assert sheets[sheets.index("6 Sensitivities") + 1] == "Review" and sheets[sheets.index("Review") + 1] == "Options"
    assert main(["check", str(wb)]) == 0  # the Review tab is not the template's: check audits the others
    assert "no findings" in capsys.readouterr().out
    assert read_workbook(wb).model_dump() == read_plan(path).model_dump()
    # a second write refuses to overwrite without --force, and writes nothing
    before = wb.read_bytes()
    rc, _, err, _ = _review(tmp_path, "--workbook", wb)
    assert rc == 2 and "--force" in err and wb.read_bytes() == before
    rc, *_ = _review(tmp_path, "--workbook", wb, "--force")
    assert rc == 1


@pytest.mark.slow
def test_the_review_tab_holds_no_number_inside_a_formula(tmp_path):
    book, _ = _book(tmp_path)
    for coord, cell in book.get("Review").cells.items():
        if cell.formula:
            text = re.sub(r'"[^"]*"', "", cell.value)  # strings ("0%", the words)
            text = re.sub(r"'[^']*'!\$?[A-Z]{1,3}\$?[0-9]+|\$?[A-Z]{1,3}\$?[0-9]+", "", text)  # references
            text = re.sub(r"[A-Za-z_][A-Za-z0-9_.]*", "", text)  # names and functions (PromptP95 ...)
            assert set(re.findall(r"\d+(?:\.\d+)?", text)) <= {"0", "1"}, f"Review!{coord}: {cell.value}"


def _book(folder, growth=LEAD_ONLY):
    """The review workbook as the command lays it out, from the review's JSON, and the plan reviewed."""
    rc, out, _, path = _review(folder, "--json", growth=growth)
    assert rc == 1
    plan = read_plan(path)
    return build(figures(plan, today=dt.date.fromisoformat(DATE)), review=ReviewOut.model_validate(json.loads(out))), plan


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    """The review workbook recalculated by LibreOffice and the Excel-grammar engine: (book, readers, problems)."""
    require_libreoffice()
    from excelgrammar import value

    folder = tmp_path_factory.mktemp("review")
    built, plans, files = {}, {}, []
    for stem, growth in (("month", LEAD_ONLY), ("grown", GROWN)):
        built[stem], plans[stem] = _book(folder / stem, growth)
        files.append(folder / f"{stem}.xlsx")
        files[-1].write_bytes(workbook_bytes(built[stem], caches=False))
    readers: dict = {"LibreOffice": {}, "Excel-grammar": {}}
    for stem, out, values in zip(built, recalculate(files, folder / "lo"), evaluate_many(files)):
        wb = openpyxl.load_workbook(out, data_only=True)
        readers["LibreOffice"][stem] = lambda t, c, wb=wb: wb[t][c].value
        readers["Excel-grammar"][stem] = lambda t, c, v=values: value(v, t, c)
    problems = []
    for stem, book in built.items():
        js = engine_json(plans[stem], folder, stem)
        problems += [f"{engine}: {p}" for engine, per in readers.items() for p in compare_book(stem, book, per[stem], js)]
    return built, readers, problems


@pytest.mark.slow
def test_both_engines_agree_with_the_review_on_every_formula_cell(books):
    assert books[2] == []


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["LibreOffice", "Excel-grammar"])
def test_the_crossed_breakpoint_reads_crossed(books, engine):
    # the plan's own section 6 (the runbook's method, which tab 6 names): p95 prompts change the binding constraint at
    # binding_flip_at; the log's p95 is 7,000 tokens, past it
    flip = next(b for b in run_plan(reference_plan()).breakpoints if b.variable == "prompt_p95" and b.direction == "up")
    assert flip.binding_flip_at < 7000
    built, readers, _ = books
    r = _flip_row(built["month"])
    read = readers[engine]["month"]
    assert read("Review", f"B{r}") == pytest.approx(7000)
    assert read("Review", f"C{r}") == pytest.approx(flip.binding_flip_at)
    assert read("Review", f"D{r}") == "crossed"
    # the purchase step lies beyond 7,000: headroom, not crossed
    assert flip.fleet_step_at > 7000
    assert read("Review", f"D{r - 1}").endswith("to go")


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["LibreOffice", "Excel-grammar"])
def test_the_planned_peak_grows_to_the_review_month(books, engine):
    built, readers, _ = books
    sheet = built["grown"].get("Review")
    r = next(int(c[1:]) for c, cell in sheet.cells.items() if cell.value == "=PeakRate*ReviewGrowthFactor")
    read = readers[engine]["grown"]
    # growth 10% a month from 2026-12: January 2027 plans 40 × 1.1 = 44 req/s; the log measured 40: 40 / 44 − 1 = −9.1%
    assert read("Review", f"B{r}") == pytest.approx(44.0)
    assert read("Review", f"D{r}") == pytest.approx(40 / 44 - 1)


@pytest.mark.slow
def test_a_growing_plans_review_workbook_checks_clean_whatever_the_day(tmp_path, capsys):
    # A plan that grows but dates no growth.start counts its schedule from the month after a day: the review's day when
    # the review writes the workbook (2027-06-30: from 2027-07), not the day `check` runs. check rebuilds the schedule
    # from the month the workbook's Schedule starts (ScheduleFirstMonth), so it finds nothing to report
    plan = write_plan(tmp_path, growth={"monthly": 0.05, "lead_time_days": 60})
    out = tmp_path / "review.xlsx"
    main(["review", str(plan), "--log", str(write_log(tmp_path / "m.csv", month="2027-06")), "--date", "2027-06-30",
          "--workbook", str(out)])
    capsys.readouterr()
    wb = openpyxl.load_workbook(out)
    title, coord = next(iter(wb.defined_names["ScheduleFirstMonth"].destinations))
    assert wb[title][coord.replace("$", "")].value == "2027-07"
    assert main(["check", str(out)]) == 0, capsys.readouterr().out[-2000:]
