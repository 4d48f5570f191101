"""The supporting sheets: Checks, Constants (and drop-down lists), the GPU and model catalogs, the change log."""

from __future__ import annotations

from xlplan import __version__, catalog
from xlplan.catalog import price_date
from xlplan.excel.cells import Book, Cell, Sheet, Validation
from xlplan.excel.common import (
    CATALOG_FIRST_ROW,
    CONSTANTS,
    GPU_COLUMNS,
    GPU_DERIVED,
    KV_DTYPES,
    MODEL_COLUMNS,
    MODEL_EXTRA,
    WEIGHT_DTYPES,
    Engine,
    Rows,
    catalog_gpu_keys,
    catalog_model_keys,
    gpu_derived,
)
from xlplan.excel.inputs import gpu_row_key, model_row_key
from xlplan.excel.tabs.owning import OWNING_DEFAULTS, owning_constants
from xlplan.plan.engine_settings import TP_DEGREES
from xlplan.schema.fields import PAYMENT_MODES
from xlplan.schema.policy import ROUTINGS
from xlplan.serving import engines, memory
from xlplan.words import PRICE_MISSING

CHECKS: tuple[tuple[str, str, str | None], ...] = (
    ("PromptOrdered", "Prompt lengths ordered: p50 ≤ p95 ≤ p99",
     "=AND(PromptP50<=PromptP95,OR(NOT(ISNUMBER(PromptP99)),PromptP95<=PromptP99))"),
    ("OutputOrdered", "Output lengths ordered: p50 ≤ p95 ≤ p99",
     "=AND(OutputP50<=OutputP95,OR(NOT(ISNUMBER(OutputP99)),OutputP95<=OutputP99))"),
    ("FractionsInRange", "Fractions between 0 and 1 (0.40, not 40)",
     ("=AND(AvgUtilisation>0,AvgUtilisation<=1,MFU>0,MFU<=1,OR(NOT(ISNUMBER(MemoryUtilisation)),AND(MemoryUtilisation>0,MemoryUtilisation<=1)),"
     "BandwidthEfficiency>0,BandwidthEfficiency<=1,PrefixReuse>=0,PrefixReuse<1)")),
    ("OneSpeed", "Exactly one of inter-token target and streaming speed", "=ISNUMBER(ITLInput)<>ISNUMBER(TokensPerSecondInput)"),
    ("ModelFound", "Model found on the Models sheet", "=ISNUMBER(ModelRow)"),
    ("GPUFound", "GPU found on the GPUs sheet", "=ISNUMBER(GPURow)"),
    ("ChoicesKnown", "Each drop-down input holds one of its choices (Paid as: rent_per_gpu, rent_per_node or buy)",
     None),  # choices_formula()
    ("GPUPriced", "The GPU has a price: the price paid or the catalog's (bought: the next check)",
     '=OR(CostMode="buy",ISNUMBER(GPUUSDPerHour))'),
    ("BuyInputsGiven", ("Bought: the electricity price, hardware operations, a server price and a power per GPU (1 Inputs "
                        "or the catalog's)"),
     ('=OR(CostMode<>"buy",AND(ISNUMBER(USDPerKWhInput),ISNUMBER(HardwareOpsUSDPerMonthInput),'
      'ISNUMBER(UnitCapexUSD),ISNUMBER(KWPerGPUUsed)))')),
    ("TPDividesNode", "Tensor-parallel degree divides the purchasing unit",
     "=IF(ISNUMBER(TPInput),AND(TPInput<=GPUsPerNode,MOD(GPUsPerNode,TPInput)=0),TRUE)"),
    ("SomeTPFits", "The weights fit and the promise can be met at some degree", "=COUNT(TPLoad)>0"),
    ("FleetOrdered", "Load ≤ with redundancy ≤ purchased", "=AND(FleetLoad<=FleetWithRedundancy,FleetWithRedundancy<=FleetPurchased)"),
    ("TTFTCheck", "TTFT target met by a p95 prompt", "=TTFTMet"),
    ("InputsPlausible", "Every input inside its plausible range (the plan file's: 50 ms is 0.05)", None),  # plausible_formula()
)


def _choices_formula() -> str:
    """The check that every drop-down input on 1 Inputs other than the model and the GPU (their own checks) holds one
    of its list's values, a blank where it may be left blank. [formula]"""
    from xlplan.excel.inputs import all_inputs

    terms = [f'OR({i.name}="",ISNUMBER(MATCH({i.name},{i.choices},0)))' if not i.required else
             f"ISNUMBER(MATCH({i.name},{i.choices},0))"
             for i in all_inputs() if i.kind == "choice" and i.choices and i.name not in ("ModelKey", "GPUKey")]
    return "=AND(" + ",".join(terms) + ")"


def _plausible_inputs() -> list[tuple[str, object]]:
    """(defined name, plausibility range) of every 1 Inputs cell whose plan field has one. [—]"""
    from xlplan.excel.inputs import all_inputs
    from xlplan.schema import plausibility

    return [(spec.name, plausibility.RANGE_OF[".".join(spec.path)]) for spec in all_inputs()
            if ".".join(spec.path) in plausibility.RANGE_OF]


def _plausible_formula() -> str:
    """The check that every ranged input is blank or inside its range (the Constants sheet's PlausibleLow<Input> and
    PlausibleHigh<Input>), as both spreadsheet engines evaluate it. [formula]"""
    return "=AND(" + ",".join(f"OR(NOT(ISNUMBER({n})),AND({n}>=PlausibleLow{n},{n}<=PlausibleHigh{n}))"
                              for n, _ in _plausible_inputs()) + ")"


FAILURES: dict[str, str] = {
    "PromptOrdered": "prompt lengths out of order (p50 ≤ p95 ≤ p99)",
    "OutputOrdered": "output lengths out of order (p50 ≤ p95 ≤ p99)",
    "FractionsInRange": "a fraction outside 0-1 (0.40, not 40)",
    "OneSpeed": "give the inter-token target or the streaming speed, not both or neither",
    "ModelFound": "the model is not on the Models sheet",
    "GPUFound": "the GPU is not on the GPUs sheet",
    "ChoicesKnown": "a drop-down input holds a value not among its choices",
    "GPUPriced": "the GPU's price is missing: give the price paid on 1 Inputs",
    "BuyInputsGiven": "Paid as buy needs ",
    "TPDividesNode": "the tensor-parallel degree does not divide the purchasing unit",
    "SomeTPFits": "no tensor-parallel degree fits the weights and keeps the promise",
    "FleetOrdered": "load, redundancy and purchase out of order",
    "TTFTCheck": "a p95 prompt misses the TTFT target",
    "InputsPlausible": "an input outside its plausible range (a unit slip? the plan file refuses it unless accepted)",
}
"""What the banner on every tab says for each failed check."""

BANNER_CELL = "A3"
"""Where each of the six tabs shows the check banner: under the title, above the frozen line."""

SEPARATOR = "; "


def banner_text(e: Engine) -> str:
    """The check banner for the engine's figures: empty when every check passes. [text]"""
    values = check_values(e)
    failed = [FAILURES[name] for name, _, _ in CHECKS if not values[name]]
    if not failed:
        return ""
    return f"CHECK FAILED on 1 Inputs: {SEPARATOR.join(failed)} — these figures are not a plan"


def put_banner(sh: Sheet, e: Engine) -> None:
    """The check banner near the top of a tab: empty while every check passes, a red warning when one fails."""
    col = BANNER_CELL.rstrip("0123456789")
    sh.put(col, int(BANNER_CELL[len(col):]), Cell("=CheckBanner", formula=True, cached=banner_text(e), kind="banner"))


def price_note_shown(gpu) -> str:
    """A GPU's price note as the GPUs sheet shows it: 'price missing' for a GPU without a price, never a blank a reader
    takes for none needed. [text]"""
    return gpu.price_note or (PRICE_MISSING if gpu.usd_per_gpu_hour is None else "")


def check_values(e: Engine) -> dict[str, bool]:
    """What each check evaluates to for a plan the engine accepted: the input checks hold by validation."""
    from xlplan.schema import plausibility

    s, pa = e.s, e.sol.paths
    names = {r.field for _, r in _plausible_inputs()}
    return {
        "InputsPlausible": not (names & plausibility.outside_fields(e.plan)),
        "PromptOrdered": True, "OutputOrdered": True, "FractionsInRange": True, "OneSpeed": True, "ModelFound": True,
        "GPUFound": True, "ChoicesKnown": True, "GPUPriced": True, "BuyInputsGiven": True, "TPDividesNode": True, "SomeTPFits": True,
        "FleetOrdered": pa.load <= pa.with_redundancy <= pa.purchased,
        "TTFTCheck": pa.ttft_p95_s <= s.ttft_s,
    }


FROM_CATALOG = ("FractionsInRange", "GPUPriced", "BuyInputsGiven", "SomeTPFits", "FleetOrdered", "TTFTCheck")
"""Checks computed from the model's and the GPU's rows (their efficiencies, price, memory, FLOP/s): the banner leaves
them unsaid while either row is not found, which its own check says."""

BUY_NEEDS = (
    # (the condition that the figure is there, 1 Inputs' name of what to give): what buying prices the GPU-hour from
    ("ISNUMBER(USDPerKWhInput)", "USDPerKWhInput"),
    ("ISNUMBER(HardwareOpsUSDPerMonthInput)", "HardwareOpsUSDPerMonthInput"),
    ("ISNUMBER(UnitCapexUSD)", "CapexUSDPerNodeInput"),  # the catalog's quote where 1 Inputs gives none
    ("ISNUMBER(KWPerGPUUsed)", "KWPerGPUInput"),
)
"""What a bought fleet needs, each as the banner names it when missing: its label on 1 Inputs."""


def _failure_words(name: str) -> str:
    """A failed check in words, as a formula: each check's fixed words; buying names every input it misses. [formula]"""
    if name != "BuyInputsGiven":
        return f'"{FAILURES[name]}"'
    from xlplan.excel.inputs import all_inputs

    labels = {s.name: s.label for s in all_inputs()}
    missing = "&".join(f'IF({cond},"",", {labels[n].removeprefix("Buy: ")}")' for cond, n in BUY_NEEDS)
    return f'"{FAILURES[name]}"&MID({missing},LEN(", ")+1,LEN({missing}))&" on the Buy rows of 1 Inputs (hardware operations: 0 if none)"'


def checks_sheet(book: Book, e: Engine) -> None:
    sh = book.sheet("Checks", "Supporting sheet: the checks block. Every row must be TRUE; the master check is shown on 1 Inputs.",
                    widths={"A": 60, "B": 14, "C": 60}, freeze="A5", pages_wide=1)
    rows = Rows(book, sh)
    rows.title("Checks — every row must be TRUE", "Supporting sheet. The master check appears on 1 Inputs.")
    rows.header("Check", "Passes")
    values = check_values(e)
    first = sh.row
    for name, label, formula in CHECKS:
        if formula is None:  # built from 1 Inputs' cells: the ranged ones, the drop-downs
            formula = _choices_formula() if name == "ChoicesKnown" else _plausible_formula()
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
    # What failed, in words, and the banner every tab shows: a check that is an error (an edited input gone bad)
    # counts as failed.
    # a check computed from the model's or the GPU's row says nothing while that row is not found: left unsaid
    found = "AND(IFERROR(CheckModelFound,FALSE),IFERROR(CheckGPUFound,FALSE))"
    failed = "&".join(f'IF({f"OR(NOT({found}),IFERROR(Check{name},FALSE))" if name in FROM_CATALOG else f"IFERROR(Check{name},FALSE)"},'
                      f'"","{SEPARATOR}"&{_failure_words(name)})' for name, _, _ in CHECKS)
    r += 1
    sh.put("A", r, Cell("Failed checks", kind="label"))
    coord = sh.put("B", r, Cell("=" + failed, formula=True, kind="calc",
                                cached="".join(SEPARATOR + FAILURES[n] for n, _, _ in CHECKS if not values[n])))
    book.define("FailedChecks", sh, coord)
    r += 1
    sh.put("A", r, Cell("Banner on every tab", kind="label"))
    coord = sh.put("B", r, Cell('=IF(IFERROR(AllChecksPass,FALSE),"","CHECK FAILED on 1 Inputs: "'
                                f'&MID(FailedChecks,LEN("{SEPARATOR}")+1,LEN(FailedChecks))&" — these figures are not a plan")',
                                formula=True, cached=banner_text(e), kind="banner"))
    book.define("CheckBanner", sh, coord)


def _constant_rows(book: Book, sh: Sheet, r: int) -> int:
    """Every constant the formulas use, named, from row ``r``; returns the row after the last."""
    for name, label, value, unit, why in (*CONSTANTS, *owning_constants()):
        sh.put("A", r, Cell(name, kind="label"))
        sh.put("B", r, Cell(label, kind="label"))
        coord = sh.put("C", r, Cell(value, kind="const", fmt="General"))
        book.define(name, sh, coord)
        sh.put("D", r, Cell(unit, kind="unit"))
        sh.put("E", r, Cell(why, kind="note"))
        r += 1
    return r


def _dtype_tables(book: Book, sh: Sheet, r: int) -> int:
    """The weight and KV dtypes with their bytes per element, from row ``r``; returns the row after the last."""
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
    return r


def _drop_down_lists(book: Book, sh: Sheet, r: int) -> int:
    """The choices each drop-down on 1 Inputs offers, from row ``r``; returns the row after the last."""
    simple = (
        ("ComputeDtypes", "Compute dtypes", ["bf16", "fp8", "fp4"]),
        ("CostModes", "Paid as", list(PAYMENT_MODES)),
        ("PowerDraws", "Power counted", ["typical", "maximum"]),
        ("MemoryConventions", "KV sizing convention", ["paged", "worst_case"]),
        ("EngineNames", "Serving engine", list(engines.ENGINES)),
        ("AttentionFLOPsKinds", "Prefill attention FLOPs", ["causal", "full"]),
        ("LatencySteps", "Latency check's step", ["with_prefill", "decode_only"]),
        ("Routings", "Load balancer", list(ROUTINGS)),
        ("Booleans", "TRUE / FALSE", [True, False]),  # Excel booleans, the one form a yes/no input takes
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
    return r


def _efficiency_table(book: Book, sh: Sheet, r: int, table) -> int:
    """The default efficiencies by vendor and engine (xlplan/data/efficiencies.yaml, fitted to the public corpus; the
    runbook's figures for its engine), one row per vendor|engine, fallbacks already applied, from row ``r``; returns
    the row after the last."""
    heads = ("Vendor|engine", "Prefill MFU", "Decode MFU", "Bandwidth efficiency", "Step overhead [s]", "Expert efficiency")
    for i, h in enumerate(heads):
        sh.put(i + 1, r, Cell(h, kind="header"))
    first = r + 1
    for key, d in table:  # computed once by the workbook's figures (:attr:`xlplan.excel.figures.Figures.efficiency_table`)
        r += 1
        sh.put("A", r, Cell(key, kind="const"))
        for i, f in enumerate(("prefill_mfu", "decode_mfu", "bandwidth_efficiency", "step_overhead_s", "expert_efficiency")):
            sh.put(i + 2, r, Cell(d[f], kind="const", fmt="General"))
    for name, col in (("EffKeys", "A"), ("EffPrefill", "B"), ("EffDecode", "C"), ("EffBandwidth", "D"), ("EffOverhead", "E"),
                      ("EffExpert", "F")):
        book.define_range(name, sh, f"{col}{first}", f"{col}{r}")
    return r + 1


def _sglang_tiers(book: Book, sh: Sheet, r: int, tiers) -> int:
    """SGLang's defaults by the GPU's memory (:attr:`xlplan.excel.figures.Figures.sglang_tiers`), one row per tier from
    its lower bound, named SGLangTierFromGiB, SGLangGraphBatchSmallTP (TP below SGLangGraphTPLarge),
    SGLangGraphBatchLargeTP and SGLangChunkTokens, from row ``r``; returns the row after the last."""
    heads = ("SGLang by memory: from GiB", "Graph batch, TP below 4", "Graph batch, TP 4 or more", "Prefill chunk")
    for i, h in enumerate(heads):
        sh.put(i + 1, r, Cell(h, kind="header"))
    first = r + 1
    for row in tiers:
        r += 1
        for col, v in zip("ABCD", row, strict=True):
            sh.put(col, r, Cell(float(v), kind="const", fmt="General"))
    for name, col in (("SGLangTierFromGiB", "A"), ("SGLangGraphBatchSmallTP", "B"), ("SGLangGraphBatchLargeTP", "C"),
                      ("SGLangChunkTokens", "D")):
        book.define_range(name, sh, f"{col}{first}", f"{col}{r}")
    return r + 1


def _default_sources(book: Book, sh: Sheet, r: int) -> int:
    """The dated source of each buy default, named Default<Input>Source and Default<Input>Date, from row ``r``, for the
    Source and Date columns of 1 Inputs (a source runs past the 255 characters a formula's text may hold); returns the
    row after the last."""
    for i, h in enumerate(("Buy default", "Source", "Date")):
        sh.put(i + 1, r, Cell(h, kind="header"))
    for stem, field, _, _ in OWNING_DEFAULTS:
        r += 1
        d = catalog.ownership_defaults()[field]
        sh.put("A", r, Cell(field, kind="label"))
        book.define(f"Default{stem}Source", sh, sh.put("B", r, Cell(d["source"], kind="const", wrap=True)))
        book.define(f"Default{stem}Date", sh, sh.put("C", r, Cell(str(d["date"]), kind="const")))
    return r + 1


def owned_sources(gpu) -> list[str]:
    """[node price source, its date, power source, its date] the catalog gives a GPU ('' where it gives none). [text]"""
    try:
        own = catalog.ownership_for(gpu.name)
    except catalog.UnknownNameError:  # a GPU given in the plan: no catalog figures
        own = {}
    return [str(own.get(f, {}).get(k, "")) for f in ("capex_usd_per_node", "kw_per_gpu") for k in ("source", "date")]


def constants_sheet(book: Book, e: Engine) -> None:
    """Lay out the Constants sheet: every constant the formulas use, the dtype tables, the drop-down lists and the
    default efficiencies."""
    sh = book.sheet("Constants", "Supporting sheet: every constant the formulas use, labelled, and the drop-down lists.",
                    widths={"A": 28, "B": 46, "C": 22, "D": 16, "E": 70}, freeze="A5", landscape=True, print_title_rows="4:4",
                    pages_wide=1)
    sh.put("A", 1, Cell("Constants — every number the formulas use, with its unit", kind="title"))
    sh.put("A", 2, Cell("Supporting sheet. Formulas refer to these by name; none has a number written inside it.", kind="note"))
    for i, h in enumerate(("Name", "Meaning", "Value", "Unit", "Why")):
        sh.put(i + 1, 4, Cell(h, kind="header"))
    r = _constant_rows(book, sh, 5) + 1
    r = _dtype_tables(book, sh, r)
    r = _drop_down_lists(book, sh, r)
    r = _efficiency_table(book, sh, r, e.fig.efficiency_table)
    r = _sglang_tiers(book, sh, r + 1, e.fig.sglang_tiers)
    r = _default_sources(book, sh, r + 1)
    _plausible_table(book, sh, r + 2)


def _plausible_table(book: Book, sh: Sheet, r: int) -> None:
    """Each ranged input's plausible range (xlplan/schema/plausibility.py), named PlausibleLow<Input> and PlausibleHigh<Input>
    for the Checks row that holds the inputs to them, from row ``r``."""
    for i, h in enumerate(("Input", "Plausible from", "Plausible to", "Unit", "Why")):
        sh.put(i + 1, r, Cell(h, kind="header"))
    for name, rng in _plausible_inputs():
        r += 1
        sh.put("A", r, Cell(name, kind="label"))
        book.define(f"PlausibleLow{name}", sh, sh.put("B", r, Cell(rng.low, kind="const", fmt="General")))
        book.define(f"PlausibleHigh{name}", sh, sh.put("C", r, Cell(rng.high, kind="const", fmt="General")))
        sh.put("D", r, Cell(rng.expected, kind="unit"))
        sh.put("E", r, Cell(rng.reason, kind="note"))


def catalog_sheets(book: Book, e: Engine) -> tuple[int, int]:
    from openpyxl.utils import get_column_letter

    note_col = get_column_letter(3 + len(GPU_COLUMNS) + len(GPU_DERIVED))
    date_col = get_column_letter(5 + len(GPU_COLUMNS) + len(GPU_DERIVED))  # after the source
    owned = {i: get_column_letter(6 + len(GPU_COLUMNS) + len(GPU_DERIVED) + i) for i in range(4)}  # after the price date
    gs = book.sheet("GPUs", "Supporting sheet: the GPU catalog the drop-down on 1 Inputs picks from, with sources.",
                    widths={"A": 18, "B": 30, **{get_column_letter(3 + i): 13 for i in range(len(GPU_COLUMNS) + len(GPU_DERIVED))},
                            note_col: 60, get_column_letter(4 + len(GPU_COLUMNS) + len(GPU_DERIVED)): 90, date_col: 12,
                            owned[0]: 60, owned[2]: 60},
                    **REFERENCE_PRINT)
    heads = (["Key", "Name"] + [f"{f} [{u}]" for f, _, u in GPU_COLUMNS] + [f"{f} [{u}]" for f, _, u in GPU_DERIVED]
             + ["Price note", "Source", "Price date", "Node price source", "Node price date", "Power source", "Power date"])
    _catalog_rows(book, gs, "GPUs — the catalog, with sources", heads, "GPUKeys", "GPUNames",
                  [(key, e.gpu if key == gpu_row_key(e.plan) and key not in catalog.gpu_names() else catalog.get_gpu(key))
                   for key in catalog_gpu_keys(e.plan)],
                  lambda spec: [getattr(spec, f) for f, _, _ in GPU_COLUMNS] + gpu_derived(e.fig, spec)
                  + [price_note_shown(spec), spec.source, price_date(spec.price_note)] + owned_sources(spec))
    keys = catalog_gpu_keys(e.plan)
    last = CATALOG_FIRST_ROW + len(keys) - 1
    book.define_range("GPUPriceNotes", gs, f"{note_col}{CATALOG_FIRST_ROW}", f"{note_col}{last}")
    book.define_range("GPUPriceDates", gs, f"{date_col}{CATALOG_FIRST_ROW}", f"{date_col}{last}")
    for i, name in enumerate(("GPUCapexSources", "GPUCapexDates", "GPUPowerSources", "GPUPowerDates")):
        book.define_range(name, gs, f"{owned[i]}{CATALOG_FIRST_ROW}", f"{owned[i]}{last}")

    ms = book.sheet("Models", "Supporting sheet: model configs (Hugging Face config.json fields) the drop-down picks from, with sources.",
                    widths={"A": 26, "B": 30, **{get_column_letter(3 + i): 11 for i in range(len(MODEL_COLUMNS))},
                            get_column_letter(3 + len(MODEL_COLUMNS)): 90, get_column_letter(4 + len(MODEL_COLUMNS)): 30},
                    **REFERENCE_PRINT)  # the source and the Hugging Face id wide enough to wrap in a few lines
    heads = ["Key", "Name"] + [f for f, _, _ in MODEL_COLUMNS] + [f for f in MODEL_EXTRA]
    mkeys = catalog_model_keys(e.plan)
    _catalog_rows(book, ms, "Models — config.json fields, with sources", heads, "ModelKeys", "ModelNames",
                  [(key, e.model if key == model_row_key(e.plan) and key not in catalog.model_names() else catalog.get_model(key))
                   for key in mkeys],
                  lambda spec: [getattr(spec, f) for f, _, _ in MODEL_COLUMNS] + [getattr(spec, f) for f in MODEL_EXTRA])
    return len(mkeys), len(keys)


REFERENCE_PRINT = dict(freeze="C5", landscape=True, print_title_rows=f"{CATALOG_FIRST_ROW - 1}:{CATALOG_FIRST_ROW - 1}",
                       pages_wide=1)
"""How the wide catalog sheets scroll and print: key and name columns and the header kept in view; printed landscape,
one page wide like every supporting sheet (at a fixed scale they ran to 15 pages across, half of the printed workbook;
the workbook's PDF leaves them out)."""


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
                    widths={"A": 14, "B": 24, "C": 100}, freeze="A5", landscape=True, print_title_rows="4:4",
                    pages_wide=1)
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
