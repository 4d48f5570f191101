"""Tab 1 · Inputs: every input with its unit, owner, dated source, validation and note; the master check."""

from __future__ import annotations

from xlplan.io.workbook.cells import Book, Cell, Validation
from xlplan.io.workbook.common import (
    FMT,
    SIX_TABS,
    Engine,
    Rows,
)
from xlplan.io.workbook.inputs import INPUT_SPECS, OWNER_SECTIONS, InputSpec, input_value
from xlplan.io.workbook.support import check_values


def _validation(spec: InputSpec) -> Validation:
    blank = not spec.required
    unit = f" [{spec.unit}]"
    if spec.kind == "fraction":
        return Validation("decimal", "between", "0", "1", blank, spec.label[:32],
                          spec.note[:255], "Enter a fraction between 0 and 1: 0.40, not 40.")
    if spec.kind == "fraction0":
        return Validation("decimal", "between", "0", "0.999999", blank, spec.label[:32],
                          spec.note[:255], "Enter a fraction from 0 up to (not including) 1: 0.30, not 30.")
    if spec.kind == "number":
        return Validation("decimal", "greaterThan", "0", None, blank, spec.label[:32], spec.note[:255],
                          f"Enter a positive number{unit}.")
    if spec.kind == "number0":
        return Validation("decimal", "greaterThanOrEqual", "0", None, blank, spec.label[:32], spec.note[:255],
                          f"Enter zero or a positive number{unit}.")
    if spec.kind in ("whole", "whole0") and spec.choices is None:
        low = "1" if spec.kind == "whole" else "0"
        return Validation("whole", "greaterThanOrEqual", low, None, blank, spec.label[:32], spec.note[:255],
                          f"Enter a whole number of at least {low}{unit}.")
    if spec.choices:
        return Validation("list", None, f"={spec.choices}", None, blank, spec.label[:32], spec.note[:255],
                          f"Pick one of the list ({spec.choices}).")
    return Validation("textLength", "lessThanOrEqual", "255", None, True, spec.label[:32], spec.note[:255],
                      "Text up to 255 characters.")


# ---------------------------------------------------------------------------------------------- sheets


def inputs_tab(book: Book, e: Engine) -> None:
    sh = book.sheet(SIX_TABS[0], "Section 1 of the capacity note: every input, with its unit, its owner and its dated source.",
                    widths={"A": 34, "B": 22, "C": 16, "D": 20, "E": 34, "F": 70}, print_title_rows="1:2", landscape=True)
    rows = Rows(book, sh)
    rows.title("1 · Inputs — the forecast, the promise and the prices, attributed",
               "Yellow cells are inputs; everything else is computed. A wrong forecast is a forecast problem: each input "
               "names its owner and source.")
    sh.put("A", 4, Cell("Plan name", kind="label"))
    coord = sh.put("B", 4, Cell(e.plan.name, kind="input", name="PlanName",
                                validation=Validation("textLength", "lessThanOrEqual", "255", None, False, "Plan name",
                                                      "Title of the capacity note.", "Text up to 255 characters.")))
    book.define("PlanName", sh, coord)
    sh.put("A", 5, Cell("All checks pass", kind="label", bold=True))
    coord = sh.put("B", 5, Cell("=AllChecksPass", formula=True, cached=all(check_values(e).values()), kind="check"))
    sh.put("D", 5, Cell("TRUE when every check on the Checks sheet passes.", kind="note"))
    sh.row = 7
    rows.section("Who owns each input, and where it comes from")
    rows.header("Inputs of", "Owner", "Source and date")
    for key, label in OWNER_SECTIONS:
        r = sh.row
        sh.put("A", r, Cell(label, kind="label"))
        for col, prefix, value in (("B", "Owner", getattr(e.plan.owners, key)), ("C", "Source", getattr(e.plan.sources, key))):
            name = f"{prefix}{key.capitalize()}"
            c = sh.put(col, r, Cell(value, kind="input", name=name,
                                    validation=Validation("textLength", "lessThanOrEqual", "255", None, True, f"{prefix} of {label}"[:32],
                                                          f"{'Who answers for' if prefix == 'Owner' else 'Where and when you got'} the {label.lower()} inputs.",
                                                          "Text up to 255 characters.")))
            book.define(name, sh, c)
        sh.row += 1
    for title, specs in INPUT_SPECS:
        rows.section(title)
        rows.header("Input", "Value", "Unit", "Owner", "Source", "What it means and how to get it right")
        for spec in specs:
            r = sh.row
            value = input_value(e.plan, spec)
            sh.put("A", r, Cell(spec.label, kind="label"))
            coord = sh.put("B", r, Cell(value, kind="input", fmt=spec.fmt, name=spec.name, validation=_validation(spec),
                                        comment=spec.note))
            book.define(spec.name, sh, coord)
            sh.put("C", r, Cell(spec.unit, kind="unit"))
            owner_name = f"Owner{spec.owner.capitalize()}"
            source_name = f"Source{spec.owner.capitalize()}"
            sh.put("D", r, Cell(f'={owner_name}&""', formula=True, cached=getattr(e.plan.owners, spec.owner), kind="calc"))
            sh.put("E", r, Cell(f'={source_name}&""', formula=True, cached=getattr(e.plan.sources, spec.owner), kind="calc"))
            sh.put("F", r, Cell(spec.note, kind="note"))
            sh.row += 1
            if spec.name == "TokensPerSecondInput":
                rows.calc("ITLTarget", "Inter-token target used", '=IF(ISNUMBER(ITLInput),ITLInput,1/TokensPerSecondInput)',
                          e.s.itl_s, "s/token", '0.0000 "s"', "The target as given, or 1 ÷ the streaming speed.")
            if spec.name == "DecodeMFUInput":
                rows.calc("PrefillMFU", "MFU in prefill used", "=IF(ISNUMBER(PrefillMFUInput),PrefillMFUInput,MFU)",
                          e.s.prefill_mfu, "fraction", "0%", "The calibrated value, or the MFU.")
                rows.calc("DecodeMFU", "MFU in decode used", "=IF(ISNUMBER(DecodeMFUInput),DecodeMFUInput,MFU)",
                          e.s.decode_mfu, "fraction", "0%", "The calibrated value, or the MFU.")
            if spec.name == "GPUUSDPerHourInput":
                rows.calc("GPUUSDPerHour", "GPU price used",
                          '=IF(ISNUMBER(GPUUSDPerHourInput),GPUUSDPerHourInput,GPUCatalogUSDPerHour)',
                          e.s.usd_per_gpu_hour, "USD/GPU-hour", FMT["usd2"], "The price paid, or the catalog's price.")
