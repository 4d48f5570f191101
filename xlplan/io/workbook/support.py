"""The supporting sheets: Checks, Constants (and drop-down lists), the GPU and model catalogs, the change log."""

from __future__ import annotations

from xlplan import __version__, catalog, memory
from xlplan.io.workbook.cells import Book, Cell, Sheet, Validation
from xlplan.io.workbook.common import (
    CATALOG_FIRST_ROW,
    CONSTANTS,
    GPU_COLUMNS,
    KV_DTYPES,
    MODEL_COLUMNS,
    MODEL_EXTRA,
    WEIGHT_DTYPES,
    Engine,
    Rows,
    catalog_gpu_keys,
    catalog_model_keys,
)
from xlplan.io.workbook.inputs import gpu_row_key, model_row_key
from xlplan.scenario import TP_DEGREES

CHECKS: tuple[tuple[str, str, str], ...] = (
    ("PromptOrdered", "Prompt lengths ordered: p50 ≤ p95 ≤ p99",
     "=AND(PromptP50<=PromptP95,OR(NOT(ISNUMBER(PromptP99)),PromptP95<=PromptP99))"),
    ("OutputOrdered", "Output lengths ordered: p50 ≤ p95 ≤ p99",
     "=AND(OutputP50<=OutputP95,OR(NOT(ISNUMBER(OutputP99)),OutputP95<=OutputP99))"),
    ("FractionsInRange", "Fractions between 0 and 1 (0.40, not 40)",
     "=AND(AvgUtilisation>0,AvgUtilisation<=1,MFU>0,MFU<=1,MemoryUtilisation>0,MemoryUtilisation<=1,"
     "BandwidthEfficiency>0,BandwidthEfficiency<=1,PrefixReuse>=0,PrefixReuse<1)"),
    ("OneSpeed", "Exactly one of inter-token target and streaming speed", "=ISNUMBER(ITLInput)<>ISNUMBER(TokensPerSecondInput)"),
    ("ModelFound", "Model found on the Models sheet", "=ISNUMBER(ModelRow)"),
    ("GPUFound", "GPU found on the GPUs sheet", "=ISNUMBER(GPURow)"),
    ("TPDividesNode", "Tensor-parallel degree divides the purchasing unit",
     "=IF(ISNUMBER(TPInput),AND(TPInput<=GPUsPerNode,MOD(GPUsPerNode,TPInput)=0),TRUE)"),
    ("SomeTPFits", "The weights fit and the promise can be met at some degree", "=COUNT(TPLoad)>0"),
    ("FleetOrdered", "Load ≤ with redundancy ≤ purchased", "=AND(FleetLoad<=FleetWithRedundancy,FleetWithRedundancy<=FleetPurchased)"),
    ("TTFTCheck", "TTFT target met by a p95 prompt", "=TTFTMet"),
)


def check_values(e: Engine) -> dict[str, bool]:
    """What each check evaluates to for a plan the engine accepted: the input checks hold by validation."""
    s, pa = e.s, e.sol.paths
    return {
        "PromptOrdered": True, "OutputOrdered": True, "FractionsInRange": True, "OneSpeed": True, "ModelFound": True,
        "GPUFound": True, "TPDividesNode": True, "SomeTPFits": True,
        "FleetOrdered": pa.load <= pa.with_redundancy <= pa.purchased,
        "TTFTCheck": pa.ttft_p95_s <= s.ttft_s,
    }


def checks_sheet(book: Book, e: Engine) -> None:
    sh = book.sheet("Checks", "Supporting sheet: the checks block. Every row must be TRUE; the master check is shown on 1 Inputs.",
                    widths={"A": 60, "B": 14, "C": 60})
    rows = Rows(book, sh)
    rows.title("Checks — every row must be TRUE", "Supporting sheet. The master check appears on 1 Inputs.")
    rows.header("Check", "Passes")
    values = check_values(e)
    first = sh.row
    for name, label, formula in CHECKS:
        r = sh.row
        sh.put("A", r, Cell(label, kind="label"))
        coord = sh.put("B", r, Cell(formula, formula=True, cached=values[name], kind="check", name=f"Check{name}"))
        book.define(f"Check{name}", sh, coord)
        sh.row += 1
    book.define_range("CheckResults", sh, f"B{first}", f"B{sh.row - 1}")
    sh.row += 1
    r = sh.row
    sh.put("A", r, Cell("All checks pass", kind="label", bold=True))
    coord = sh.put("B", r, Cell("=AND(CheckResults)", formula=True, cached=all(values.values()), kind="check"))
    book.define("AllChecksPass", sh, coord)


def constants_sheet(book: Book) -> None:
    sh = book.sheet("Constants", "Supporting sheet: every constant the formulas use, labelled, and the drop-down lists.",
                    widths={"A": 28, "B": 46, "C": 22, "D": 16, "E": 70})
    sh.put("A", 1, Cell("Constants — every number the formulas use, with its unit", kind="title"))
    sh.put("A", 2, Cell("Supporting sheet. Formulas refer to these by name; none has a number written inside it.", kind="note"))
    for i, h in enumerate(("Name", "Meaning", "Value", "Unit", "Why")):
        sh.put(i + 1, 4, Cell(h, kind="header"))
    r = 5
    for name, label, value, unit, why in CONSTANTS:
        sh.put("A", r, Cell(name, kind="label"))
        sh.put("B", r, Cell(label, kind="label"))
        coord = sh.put("C", r, Cell(value, kind="const", fmt="General"))
        book.define(name, sh, coord)
        sh.put("D", r, Cell(unit, kind="unit"))
        sh.put("E", r, Cell(why, kind="note"))
        r += 1
    r += 1
    lists = (
        ("WeightDtypes", "WeightDtypeBytes", "Weight dtype", "Bytes per weight", [(d, memory.WEIGHT_BYTES_PER_PARAM[d]) for d in WEIGHT_DTYPES]),
        ("KVDtypes", "KVDtypeBytes", "KV dtype", "Bytes per cached element", [(d, memory.KV_BYTES_PER_ELEMENT[d]) for d in KV_DTYPES]),
    )
    for key_name, val_name, h1, h2, items in lists:
        sh.put("A", r, Cell(h1, kind="header"))
        sh.put("B", r, Cell(h2, kind="header"))
        first = r + 1
        for d, v in items:
            r += 1
            sh.put("A", r, Cell(d, kind="const"))
            sh.put("B", r, Cell(v, kind="const", fmt="General"))
        book.define_range(key_name, sh, f"A{first}", f"A{r}")
        book.define_range(val_name, sh, f"B{first}", f"B{r}")
        r += 2
    simple = (
        ("ComputeDtypes", "Compute dtypes", ["bf16", "fp8", "fp4"]),
        ("BillingModes", "Billing", ["rented", "purchased"]),
        ("MemoryConventions", "KV sizing convention", ["paged", "worst_case"]),
        ("Booleans", "Yes / no", [True, False]),
        ("TPDegrees", "Tensor-parallel degrees considered", list(TP_DEGREES)),
    )
    for name, header, items in simple:
        sh.put("A", r, Cell(header, kind="header"))
        first = r + 1
        for v in items:
            r += 1
            sh.put("A", r, Cell(v, kind="const"))
        book.define_range(name, sh, f"A{first}", f"A{r}")
        r += 2


def catalog_sheets(book: Book, e: Engine) -> tuple[int, int]:
    from openpyxl.utils import get_column_letter

    gs = book.sheet("GPUs", "Supporting sheet: the GPU catalog the drop-down on 1 Inputs picks from, with sources.",
                    widths={"A": 18, "B": 30, **{get_column_letter(3 + i): 13 for i in range(len(GPU_COLUMNS))}, "I": 60, "J": 90})
    heads = ["Key", "Name"] + [f"{f} [{u}]" for f, _, u in GPU_COLUMNS] + ["Price note", "Source"]
    _catalog_rows(book, gs, "GPUs — the catalog, with sources", heads, "GPUKeys", "GPUNames",
                  [(key, e.gpu if key == gpu_row_key(e.plan) and key not in catalog.gpu_names() else catalog.get_gpu(key))
                   for key in catalog_gpu_keys(e.plan)],
                  lambda spec: [getattr(spec, f) for f, _, _ in GPU_COLUMNS] + [spec.price_note, spec.source])
    keys = catalog_gpu_keys(e.plan)

    ms = book.sheet("Models", "Supporting sheet: model configs (Hugging Face config.json fields) the drop-down picks from, with sources.",
                    widths={"A": 26, "B": 30, **{get_column_letter(3 + i): 11 for i in range(len(MODEL_COLUMNS))}})
    heads = ["Key", "Name"] + [f for f, _, _ in MODEL_COLUMNS] + [f for f in MODEL_EXTRA]
    mkeys = catalog_model_keys(e.plan)
    _catalog_rows(book, ms, "Models — config.json fields, with sources", heads, "ModelKeys", "ModelNames",
                  [(key, e.model if key == model_row_key(e.plan) and key not in catalog.model_names() else catalog.get_model(key))
                   for key in mkeys],
                  lambda spec: [getattr(spec, f) for f, _, _ in MODEL_COLUMNS] + [getattr(spec, f) for f in MODEL_EXTRA])
    return len(mkeys), len(keys)


def _catalog_rows(book: Book, sh: Sheet, title: str, heads: list[str], key_name: str, name_name: str, entries, fields) -> None:
    sh.put("A", 1, Cell(title, kind="title"))
    sh.put("A", 2, Cell(sh.purpose + " A plan's own model or GPU is added as '(from plan)'.", kind="note"))
    for i, h in enumerate(heads):
        sh.put(i + 1, CATALOG_FIRST_ROW - 1, Cell(h, kind="header"))
    for k, (key, spec) in enumerate(entries):
        for i, v in enumerate([key, spec.name] + fields(spec)):
            sh.put(i + 1, CATALOG_FIRST_ROW + k, Cell(v, kind="const", fmt="General"))
    last = CATALOG_FIRST_ROW + len(entries) - 1
    book.define_range(key_name, sh, f"A{CATALOG_FIRST_ROW}", f"A{last}")
    book.define_range(name_name, sh, f"B{CATALOG_FIRST_ROW}", f"B{last}")


def changelog_sheet(book: Book, e: Engine) -> None:
    sh = book.sheet("Change log", "Supporting sheet: who changed what and why. Add a row for every change.",
                    widths={"A": 14, "B": 24, "C": 100})
    sh.put("A", 1, Cell("Change log — add a row for every change", kind="title"))
    sh.put("A", 2, Cell("Supporting sheet.", kind="note"))
    for i, h in enumerate(("Date", "Who", "What changed and why")):
        sh.put(i + 1, 4, Cell(h, kind="header"))
    checks = {
        "A": Validation("date", "greaterThan", "36526", None, True, "Date", "The date of the change (a date, e.g. 2026-11-30).",
                        "Enter a date after 2000-01-01."),
        "B": Validation("textLength", "lessThanOrEqual", "255", None, True, "Who", "Who made the change.", "Text up to 255 characters."),
        "C": Validation("textLength", "lessThanOrEqual", "1000", None, True, "What and why", "What changed, and why.",
                        "Text up to 1,000 characters."),
    }
    first = {"A": None, "B": f"xlplan {__version__}",
             "C": f"Generated from the plan '{e.plan.name}' by `xlplan workbook`; formulas are the template's."}
    for r in range(5, 31):
        for col in "ABC":
            sh.put(col, r, Cell(first[col] if r == 5 else None, kind="input", validation=checks[col], fmt="yyyy-mm-dd" if col == "A" else None))
