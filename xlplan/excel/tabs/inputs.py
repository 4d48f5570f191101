"""Tab 1 · Inputs: every input with its unit, owner, dated source, validation and note; the master check."""

from __future__ import annotations

from xlplan import catalog
from xlplan.catalog import price_date
from xlplan.catalog.specs import vendor
from xlplan.excel import formulas as F
from xlplan.excel.cells import Book, Cell, Sheet, Validation
from xlplan.excel.common import FMT, SIX_TABS, Engine, Rows
from xlplan.excel.inputs import INPUT_SPECS, OWNER_SECTIONS, InputSpec, all_inputs, input_value
from xlplan.excel.support import check_values, owned_sources, price_note_shown, put_banner
from xlplan.excel.tabs.owning import OWNING_DEFAULTS
from xlplan.schema import plausibility
from xlplan.words import PRICE_MISSING


def _validation(spec: InputSpec) -> Validation:
    blank = not spec.required
    unit = f" [{spec.unit}]"
    r = plausibility.RANGE_OF.get(".".join(spec.path))
    if r is not None:  # the plausible range the plan file is held to, with its reason (and the fraction's slip)
        low, high = plausibility.excel_number(r.low), plausibility.excel_number(r.high)
        slip = " 0.40, not 40." if spec.kind in ("fraction", "fraction0") else ""
        return Validation("decimal", "between", low, high, blank, spec.label[:32], spec.note[:255],
                          f"Enter {r.expected}, {low} to {high} ({r.reason}).{slip}"[:255])
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


def _efficiencies_used(rows: Rows, e: Engine) -> None:
    """What the plan runs at: each efficiency and budget as given, else the engine's default for the GPU."""
    from xlplan.serving import efficiency_defaults, engines

    s = e.s
    rows.section("Efficiencies and budgets used — given above, else the engine's defaults for this GPU (Constants sheet)")
    rows.header("Quantity", "Value", "Unit", "", "", "How")
    key = f"{vendor(e.gpu.name)}|{s.engine}"
    table_row = [f"{v}|{eng}" for v in efficiency_defaults.VENDORS for eng in engines.ENGINES].index(key) + 1
    rows.calc("EffRow", "Row of the defaults table", '=MATCH(GPUVendor&"|"&Engine,EffKeys,0)', table_row, "row", "0",
              "the GPU's vendor and the engine")
    rows.calc("MFU", "MFU used", "=IF(ISNUMBER(MFUInput),MFUInput,INDEX(EffDecode,EffRow))", s.mfu, "fraction", "0%",
              "as given, else the engine's decode MFU")
    rows.calc("PrefillMFU", "MFU in prefill used",
              '=IF(ISNUMBER(PrefillMFUInput),PrefillMFUInput,IF(OR(ISNUMBER(MFUInput),Engine="runbook"),MFU,INDEX(EffPrefill,EffRow)))',
              e.fig.prefill_mfu, "fraction", "0%", "calibrated, else the MFU given, else the engine's default")
    rows.calc("DecodeMFU", "MFU in decode used",
              '=IF(ISNUMBER(DecodeMFUInput),DecodeMFUInput,IF(OR(ISNUMBER(MFUInput),Engine="runbook"),MFU,INDEX(EffDecode,EffRow)))',
              e.fig.decode_mfu, "fraction", "0%", "calibrated, else the MFU given, else the engine's default")
    for name, label, field, unit, fmt in (
            ("BandwidthEfficiency", "Bandwidth efficiency used", "bandwidth_efficiency", "fraction", "0%"),
            ("StepOverhead", "Time per engine step used", "step_overhead_s", "s", FMT["s"]),
            ("ExpertEfficiency", "Expert GEMM efficiency used", "expert_efficiency", "fraction", "0%")):
        table = {"bandwidth_efficiency": "EffBandwidth", "step_overhead_s": "EffOverhead", "expert_efficiency": "EffExpert"}[field]
        given = {"bandwidth_efficiency": "BandwidthEfficiencyInput", "step_overhead_s": "StepOverheadInput",
                 "expert_efficiency": "ExpertEfficiencyInput"}[field]
        rows.calc(name, label, f"=IF(ISNUMBER({given}),{given},INDEX({table},EffRow))", getattr(s, field), unit, fmt,
                  "as given, else the engine's default")
    rows.calc("MaxNumBatchedTokens", "Tokens per engine step used",
              '=IF(ISNUMBER(MaxNumBatchedTokensInput),MaxNumBatchedTokensInput,IF(Engine="runbook",RunbookUnbounded,'
              'IF(Engine="sglang",INDEX(SGLangChunkTokens,MATCH(GPUMemoryGiB,SGLangTierFromGiB,1)),'
              "GPUDefaultMaxNumBatchedTokens)))", s.max_num_batched_tokens, "tokens", "#,##0",
              "as given, else the engine's default for the GPU: SGLang's chunked_prefill_size by memory, vLLM's for "
              "the others (no budget for 'runbook')")
    rows.calc("PrefillChunkTokens", "Prompt tokens per request per step used",
              "=IF(AND(ISNUMBER(LongPrefillThresholdInput),LongPrefillThresholdInput>0),"
              "MIN(MaxNumBatchedTokens,LongPrefillThresholdInput),MaxNumBatchedTokens)",
              e.fig.prefill_chunk_tokens, "tokens", "#,##0",
              "the step budget, or the long-prefill threshold where that is smaller: one prompt's chunk")
    rows.calc("MaxNumSeqs", "Sequences per replica used",
              '=IF(ISNUMBER(MaxNumSeqsInput),MaxNumSeqsInput,IF(Engine="runbook",RunbookUnbounded,GPUDefaultMaxNumSeqs))',
              s.max_num_seqs, "sequences", "#,##0", "as given, else vLLM's default for the GPU")


def _plan_date(e: Engine) -> str:
    """The plan's date (YYYY-MM-DD) as the print header shows it: the plan's own, else :data:`xlplan.excel.common.UNDATED`."""
    from xlplan.excel.common import UNDATED

    return getattr(e.plan, "date", None) or UNDATED


def _catalog_price(sh: Sheet, e: Engine) -> None:
    """The chosen GPU's catalog price beside the price paid, with its dated note, and a flag where the two differ, so
    switching GPU cannot silently keep the old GPU's negotiated price."""
    cat = e.gpu.usd_per_gpu_hour or 0.0
    r = sh.row
    sh.put("A", r, Cell("Catalog price for this GPU", kind="label"))
    sh.put("B", r, Cell(f'=IF(GPUCatalogUSDPerHour>0,GPUCatalogUSDPerHour,"{PRICE_MISSING}")', formula=True,
                        cached=cat or PRICE_MISSING, kind="calc", fmt=FMT["usd2"]))
    sh.put("C", r, Cell("USD/GPU-hour", kind="unit"))
    sh.put("D", r, Cell("GPUs sheet", kind="note"))
    sh.put("E", r, Cell('=INDEX(GPUPriceNotes,GPURow)&""', formula=True, cached=price_note_shown(e.gpu), kind="calc",
                        wrap=True))
    sh.put("F", r, Cell('=INDEX(GPUPriceDates,GPURow)&""', formula=True, cached=price_date(e.gpu.price_note), kind="calc"))
    sh.put("G", r, Cell("The catalog's representative price for the GPU chosen above, with its dated source.", kind="note"))
    sh.row += 1
    paid = e.plan.hardware.usd_per_gpu_hour
    override = paid is not None and paid != cat
    listed = F.when("GPUCatalogUSDPerHour>0", cat > 0,
                    F.join(F.usd("GPUCatalogUSDPerHour", cat, 2), F.when('INDEX(GPUPriceDates,GPURow)<>""', bool(price_date(e.gpu.price_note)),
                                                                     F.join(" (", F.ref("INDEX(GPUPriceDates,GPURow)", price_date(e.gpu.price_note)), ")"))),
                    PRICE_MISSING)
    flag = F.when("AND(ISNUMBER(GPUUSDPerHourInput),GPUUSDPerHourInput<>GPUCatalogUSDPerHour)", override,
                  F.join("OVERRIDE: ", F.usd("GPUUSDPerHourInput", paid or 0.0, 2), "/GPU-hour paid; the catalog's price for ",
                         F.ref("GPUName", e.gpu.name), " is ", listed, " — check the price paid is for this GPU"))
    sh.put("A", sh.row, Cell("Price paid against the catalog", kind="label"))
    sh.put("B", sh.row, Cell(F.cell_formula(flag), formula=True, cached=flag.text, kind="flag"))
    sh.row += 1


# ---------------------------------------------------------------------------------------------- sheets


def _plan_header(book: Book, sh: Sheet, e: Engine) -> None:
    """The plan's name and date (inputs) and the master check, above the inputs."""
    sh.put("A", 4, Cell("Plan name", kind="label"))
    coord = sh.put("B", 4, Cell(e.plan.name, kind="input", name="PlanName",
                                validation=Validation("textLength", "lessThanOrEqual", "255", None, False, "Plan name",
                                                      "Title of the capacity note.", "Text up to 255 characters.")))
    book.define("PlanName", sh, coord)
    sh.put("A", 6, Cell("Plan date", kind="label"))
    coord = sh.put("B", 6, Cell(e.plan.date or "", kind="input", fmt="yyyy-mm-dd",
                                validation=Validation("textLength", "lessThanOrEqual", "10", None, True, "Plan date",
                                                      "When the plan was prepared, YYYY-MM-DD; blank: the day the workbook is built.",
                                                      "Write the date as YYYY-MM-DD, e.g. 2027-01-15.")))
    book.define("PlanDate", sh, coord)
    sh.put("D", 6, Cell("YYYY-MM-DD; blank: the Summary shows the day the workbook was built", kind="note"))
    sh.put("A", 5, Cell("All checks pass", kind="label", bold=True))
    sh.put("B", 5, Cell("=AllChecksPass", formula=True, cached=all(check_values(e).values()), kind="check"))
    sh.put("D", 5, Cell("TRUE when every check on the Checks sheet passes.", kind="note"))
    sh.row = 7


def _owners_section(book: Book, sh: Sheet, rows: Rows, e: Engine) -> None:
    """Who owns each section of inputs and where they come from (inputs the rows below quote)."""
    rows.section("Who owns each input, and where it comes from")
    rows.header("Inputs of", "Owner", "Source and date")
    sh.merges.append(f"C{sh.row - 1}:E{sh.row - 1}")
    for key, label in OWNER_SECTIONS:
        r = sh.row
        sh.put("A", r, Cell(label, kind="label"))
        for col, prefix, value in (("B", "Owner", getattr(e.plan.owners, key)), ("C", "Source", getattr(e.plan.sources, key))):
            name = f"{prefix}{key.capitalize()}"
            c = sh.put(col, r, Cell(value, kind="input", name=name, wrap=prefix == "Source",
                                    validation=Validation("textLength", "lessThanOrEqual", "255", None, True, f"{prefix} of {label}"[:32],
                                                          f"{'Who answers for' if prefix == 'Owner' else 'Where and when you got'} the {label.lower()} inputs.",
                                                          "Text up to 255 characters.")))
            book.define(name, sh, c)
        sh.merges.append(f"C{r}:E{r}")  # the source across Unit, Owner and Source: wide enough to read
        sh.row += 1


NO_DEFAULT = "no default: a buy plan states it"
"""The Source of a blank buy input nothing credible fills (ownership.yaml gives no default for it). [text]"""


def _source_of(e: Engine, spec: InputSpec, value) -> tuple[F.Prose, F.Prose | None]:
    """(Source, Date) of an input, each the text a formula shows: its own where it has one (a buy figure: the plan's
    costs.source where given, else its dated default; an API price: the API's source), else its owner section's
    (the Date column then left blank). [text]"""
    own = {("residual_fraction" if f == "residual_decay_per_year" else f): stem for stem, f, _, _ in OWNING_DEFAULTS}
    field, given = spec.path[-1], value is not None
    stated = e.plan.costs.source or ""
    plan_text = F.join("the plan's figure: ", F.when('CostsSource<>""', bool(stated), F.ref("CostsSource", stated),
                                                     "no costs.source given"))
    if spec.path[0] == "costs" and field in own:
        d = catalog.ownership_defaults()["residual_decay_per_year" if field == "residual_fraction" else field]
        return (F.when(f"ISNUMBER({spec.name})", given, plan_text, F.join("default: ", F.ref(f"Default{own[field]}Source", d["source"]))),
                F.when(f"ISNUMBER({spec.name})", given, "", F.ref(f"Default{own[field]}Date", str(d["date"]))))
    if spec.path[0] == "costs" and field in ("capex_usd_per_node", "kw_per_gpu"):
        src, date = owned_sources(e.gpu)[:2] if field == "capex_usd_per_node" else owned_sources(e.gpu)[2:]
        col = "GPUCapex" if field == "capex_usd_per_node" else "GPUPower"
        listed = F.when(f'INDEX({col}Sources,GPURow)<>""', bool(src),
                        F.join("catalog default for this GPU: ", F.ref(f"INDEX({col}Sources,GPURow)", src)), NO_DEFAULT)
        return (F.when(f"ISNUMBER({spec.name})", given, plan_text, listed),
                F.when(f"ISNUMBER({spec.name})", given, "", F.ref(f"INDEX({col}Dates,GPURow)", date)))
    if spec.path[0] == "costs" and field in ("usd_per_kwh", "hardware_ops_usd_per_month"):
        return F.when(f"ISNUMBER({spec.name})", given, plan_text, NO_DEFAULT), None
    if spec.path[0] == "api" and field != "source":
        api_source = e.plan.api_used().source or ""
        return (F.when('APISource<>""', bool(api_source), F.ref("APISource", api_source),
                       F.ref("SourcePricing", e.plan.sources.pricing)), None)
    return F.ref(f"Source{spec.owner.capitalize()}", getattr(e.plan.sources, spec.owner)), None


def _input_row(book: Book, sh: Sheet, e: Engine, spec: InputSpec) -> None:
    """One input: its label, value (validated, with its note as a comment), unit, owner, source and note."""
    r = sh.row
    value = input_value(e.plan, spec)
    sh.put("A", r, Cell(spec.label, kind="label"))
    coord = sh.put("B", r, Cell(value, kind="input", fmt=spec.fmt, name=spec.name, validation=_validation(spec),
                                comment=spec.note))
    book.define(spec.name, sh, coord)
    sh.put("C", r, Cell(spec.unit, kind="unit"))
    owner_name = f"Owner{spec.owner.capitalize()}"
    sh.put("D", r, Cell(f'={owner_name}&""', formula=True, cached=getattr(e.plan.owners, spec.owner), kind="calc"))
    source, date = _source_of(e, spec, value)
    sh.put("E", r, Cell(F.cell_formula(source), formula=True, cached=source.text, kind="calc", wrap=True))
    if date is not None:
        sh.put("F", r, Cell(F.cell_formula(date), formula=True, cached=date.text, kind="calc"))
    sh.put("G", r, Cell(spec.note, kind="note"))
    sh.row += 1


def _prices_used(rows: Rows, e: Engine) -> None:
    """The catalog price beside the price paid, then the rental price and the GPU-hour cost the plan uses."""
    _catalog_price(rows.sheet, e)
    quoted = e.plan.hardware.quoted_price()
    rent = quoted[0] if quoted is not None else PRICE_MISSING
    rows.calc("RentUSDPerGPUHour", "Rental price used",
              f'=IF(ISNUMBER(GPUUSDPerHourInput),GPUUSDPerHourInput,IF(GPUCatalogUSDPerHour>0,GPUCatalogUSDPerHour,"{PRICE_MISSING}"))',
              rent, "USD/GPU-hour", FMT["usd2"], "The price paid, or the catalog's price (text where neither is known).")
    rows.calc("GPUUSDPerHour", "GPU cost per hour used", '=IF(CostMode="buy",OwnedUSDPerGPUHour,RentUSDPerGPUHour)',
              e.s.usd_per_gpu_hour, "USD/GPU-hour", FMT["usd2"],
              "rent: the rental price; buy: what an owned GPU costs an hour (5 Cost, rent or buy)")


def _after_input(rows: Rows, e: Engine, spec: InputSpec) -> None:
    """What the sheet derives right below an input: the targets, efficiencies, prices and billing the plan uses."""
    if spec.name == "TokensPerSecondInput":
        rows.calc("ITLTarget", "Inter-token target used", '=IF(ISNUMBER(ITLInput),ITLInput,1/TokensPerSecondInput)',
                  e.s.itl_s, "s/token", FMT["s"], "The target as given, or 1 ÷ the streaming speed.")
    if spec.name == "LatencyStep":
        _efficiencies_used(rows, e)
    if spec.name == "GPUUSDPerHourInput":
        _prices_used(rows, e)
    if spec.name == "CostMode":
        rows.calc("BillPurchased", "The bill counts whole purchasing units", '=CostMode<>"rent_per_gpu"',
                  e.s.bill_purchased, "TRUE | FALSE", None, "rented by the node, or bought; rented per GPU, the fleet with redundancy")
        rows.calc("BuyRowsIgnored", "The Buy rows while renting", f'=IF(AND(CostMode<>"buy",COUNT({",".join(_buy_inputs())})>0),'
                  f'"{BUY_ROWS_KEPT}","")', BUY_ROWS_KEPT if e.plan.costs.ignored_figures() else "", "", None,
                  "a switch from buy to rent keeps what the Buy rows hold, for a switch back (the plan's warnings say so too)")


BUY_ROWS_KEPT = "kept and ignored: the Buy rows below count only while Paid as is buy"
"""What the Paid as rows say while a rented fleet's Buy rows still hold figures. [text]"""


def _buy_inputs() -> list[str]:
    """The names of 1 Inputs' buy figures (:data:`xlplan.schema.costs.OWNERSHIP_FIELDS`). [names]"""
    from xlplan.schema.costs import OWNERSHIP_FIELDS

    return [s.name for s in all_inputs() if s.path[0] == "costs" and s.path[-1] in OWNERSHIP_FIELDS]


def inputs_tab(book: Book, e: Engine) -> None:
    """Lay out 1 Inputs: the plan's name and date, the master check, the owners and sources, then every input by
    section with what the plan derives from it right below."""
    sh = book.sheet(SIX_TABS[0], "Section 1 of the capacity note: every input, with its unit, its owner and its dated source.",
                    widths={"A": 34, "B": 22, "C": 16, "D": 20, "E": 40, "F": 12, "G": 70}, print_title_rows="1:3",
                    landscape=True, freeze="A4")
    book.print_header = f"{e.plan.name} — {_plan_date(e)}"
    rows = Rows(book, sh)
    rows.title("1 · Inputs — the forecast, the promise and the prices, attributed",
               "Yellow cells are inputs; everything else is computed. A wrong forecast is a forecast problem: each input "
               "names its owner and source.")
    put_banner(sh, e)
    _plan_header(book, sh, e)
    _owners_section(book, sh, rows, e)
    for title, specs in INPUT_SPECS:
        rows.section(title)
        rows.header("Input", "Value", "Unit", "Owner", "Source", "Date", "What it means and how to get it right")
        for spec in specs:
            _input_row(book, sh, e, spec)
            _after_input(rows, e, spec)
