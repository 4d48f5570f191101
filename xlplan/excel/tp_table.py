"""3 Constraints' table of every tensor-parallel degree, and the chart of each path against peak rate.

One row per degree, one formula per column (the largest decode batch, which the engine searches, is a shaded value);
the chosen degree is the row with the smallest objective. The chart's data scale each path at the chosen degree
linearly with the rate, with a vertical marker at the current peak.
"""

from __future__ import annotations

import math

from openpyxl.utils import get_column_letter

from xlplan.excel import formulas as F
from xlplan.excel.cells import Cell, Validation
from xlplan.excel.common import FMT, NONE, Engine, Rows, num
from xlplan.plan.engine_settings import TP_DEGREES
from xlplan.schema.steps import Paths

TP_COLS = ("TP", "Considered", "KV shards", "Weights per GPU [GiB]", "KV budget per GPU [GiB]", "Conversations per replica",
           "Memory GPUs (exact)", "Memory GPUs", "Compute GPUs (exact)", "Compute GPUs", "Max decode batch (engine) [sequences]",
           "Latency GPUs (exact)", "Latency GPUs", "Load GPUs", "With redundancy", "Purchased", "Billed", "Objective")

TP_RANGES = (("TPDegreeCol", "A"), ("TPShards", "C"), ("TPWeightsGiB", "D"), ("TPBudgetGiB", "E"), ("TPConversations", "F"),
             ("TPMemoryExact", "G"), ("TPMemory", "H"), ("TPComputeExact", "I"), ("TPCompute", "J"),
             ("TPMaxBatch", "K"), ("TPLatencyExact", "L"), ("TPLatency", "M"), ("TPLoad", "N"),
             ("TPWithRedundancy", "O"), ("TPPurchased", "P"), ("TPBilled", "Q"), ("TPObjective", "R"))
"""Defined name of each TP-table column the tab's other formulas read: (name, column)."""

PEAK_MULTIPLES = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0)
"""Rows of the chart's data: multiples of the current peak rate. [1]"""


def _tp_specs(e: Engine, k: int, tp: int, r: int) -> dict[str, tuple | None]:
    """Column -> (formula, the engine's value, number format) of degree ``tp``'s row ``r``; None for the engine's
    searched largest batch."""
    s = e.s
    c = _candidate(e, tp)
    considered = tp in s.tp_options
    feasible = considered and not math.isinf(c.load)
    return {
        "A": (f"=INDEX(TPDegrees,{k + 1})", tp, "0"),
        "B": ("=" + F.tp_considered(f"A{r}"), considered, None),
        "C": (f"=IF(AttentionDataParallel,A{r},MIN(A{r},KVShardLimit))", c.kv_shards, "0"),
        "D": (f"=WeightsBytes/A{r}/GiB", c.weights_gib_per_gpu, FMT["gib"]),
        "E": ("=" + F.kv_budget_engine("WeightsBytes", f"A{r}", F.activation_gib(f"A{r}")), c.kv_budget_gib_per_gpu, FMT["gib"]),
        "F": (f"=MAX(E{r},0)*C{r}/KVPerConversationGiB", c.conversations_per_replica, FMT["num"]),
        "G": (f'=IF(F{r}>0,A{r}*(Concurrency/F{r}),"{NONE}")', num(c.memory_gpus_exact), FMT["num"]),
        "H": (f'=IF(ISNUMBER(G{r}),{F.whole_gpus(f"G{r}/A{r}", f"A{r}")},"{NONE}")', num(c.memory_gpus), "0"),
        "I": ("=PrefillTFLOPS/(PeakTFLOPS*PrefillMFU)+DecodeTFLOPS/(PeakTFLOPS*DecodeMFU)", c.compute_gpus_exact, FMT["num"]),
        "J": ("=" + F.whole_gpus(f"I{r}/A{r}", f"A{r}"), c.compute_gpus, "0"),
        "K": None,
        "L": (f'=IF(K{r}>0,A{r}*(Concurrency/K{r}),"{NONE}")', num(c.latency_gpus_exact), FMT["num"]),
        "M": (f'=IF(ISNUMBER(L{r}),{F.whole_gpus(f"L{r}/A{r}", f"A{r}")},"{NONE}")', num(c.latency_gpus), "0"),
        "N": (f'=IF(AND(B{r},ISNUMBER(H{r}),ISNUMBER(M{r})),MAX(H{r},J{r},M{r}),"")',
              c.load if (considered and not math.isinf(c.load)) else "", "0"),
        "O": (f'=IF(ISNUMBER(N{r}),(N{r}/A{r}+Redundancy)*A{r},"")', c.with_redundancy if feasible else "", "0"),
        "P": (f'=IF(ISNUMBER(O{r}),ROUNDUP(O{r}/GPUsPerNode,0)*GPUsPerNode,"")', c.purchased if feasible else "", "0"),
        "Q": (f'=IF(ISNUMBER(P{r}),IF(BillPurchased,P{r},O{r}),"")',
              e.fig.tp_billed[tp] if feasible else "", "0"),
        "R": (f'=IF(ISNUMBER(Q{r}),{F.tp_objective(f"P{r}", f"Q{r}", f"A{r}")},"")',
              e.fig.tp_objectives.get(tp, "") if feasible else "", "0"),
    }


def _candidate(e: Engine, tp: int) -> Paths:
    """The paths at degree ``tp``, as the engine computed them (:attr:`xlplan.excel.figures.Figures.tp_paths`)."""
    return e.fig.tp_paths[tp]


def _tp_cells(e: Engine, k: int, tp: int, r: int) -> dict[str, Cell]:
    """Column -> cell of degree ``tp``'s row ``r``: a formula with the engine's value, or, for the largest decode
    batch the engine searches, a value shaded like the breakpoints."""
    out = {}
    for col, spec in _tp_specs(e, k, tp, r).items():
        if spec is None:
            c = _candidate(e, tp)
            out[col] = Cell(num(c.max_decode_batch) if not math.isinf(c.max_decode_batch) else 0.0, kind="static",
                            fmt=FMT["num"])
        else:
            formula, cached, fmt = spec
            out[col] = Cell(formula, formula=True, cached=cached, kind="calc", fmt=fmt)
    return out


def tp_table(rows: Rows, e: Engine) -> None:
    """The TP table (one row per degree, one formula per column), its columns' names, and the chosen row."""
    sh = rows.sheet
    rows.section("Every tensor-parallel degree — the planner buys the fewest GPUs, then bills the fewest, then takes the smallest degree")
    hdr = sh.row
    for i, label in enumerate(TP_COLS):
        sh.put(i + 1, hdr, Cell(label, kind="header"))
    first = hdr + 1
    for k, tp in enumerate(TP_DEGREES):
        r = first + k
        for col, cell in _tp_cells(e, k, tp, r).items():
            sh.put(col, r, cell)
    last = first + len(TP_DEGREES) - 1
    end = get_column_letter(len(TP_COLS))
    sh.row_flags.update({r: f"{end}{hdr - 1}" for r in range(first, last + 1)})  # one flag, above the table's last column
    for name, col in TP_RANGES:
        rows.book.define_range(name, sh, f"{col}{first}", f"{col}{last}")
    sh.row = last + 1
    rows.calc("TPChoiceRow", "Row of the chosen degree", "=MATCH(MIN(TPObjective),TPObjective,0)",
              TP_DEGREES.index(e.sol.paths.tp) + 1, "row", "0",
              "fewest purchased, then fewest billed, then the smallest degree (Objective column); #N/A if none fits")


def _chart_rows(rows: Rows, e: Engine, hdr: int) -> None:
    """The chart's data: each path's GPUs at each multiple of the peak, and the GPUs purchased."""
    s, pa, sh = e.s, e.sol.paths, rows.sheet
    lat = pa.latency_gpus_exact
    for k, x in enumerate(PEAK_MULTIPLES):
        r = hdr + 1 + k
        sh.put("A", r, Cell(x, kind="input", fmt="0.00",
                            validation=Validation("decimal", "greaterThan", "0", None, False, "Multiple of peak",
                                                  "A multiple of the current peak rate to chart.", "Enter a positive number.")))
        sh.put("B", r, Cell(f"=PeakRate*A{r}", formula=True, cached=s.peak_rps * x, kind="calc", fmt=FMT["num"]))
        sh.put("C", r, Cell(f'=IF(ISNUMBER(MemoryGPUsExact),MemoryGPUsExact*A{r},"")', formula=True,
                            cached=pa.memory_gpus_exact * x if not math.isinf(pa.memory_gpus_exact) else "", kind="calc", fmt=FMT["num"]))
        sh.put("D", r, Cell(f"=ComputeGPUsExact*A{r}", formula=True, cached=pa.compute_gpus_exact * x, kind="calc", fmt=FMT["num"]))
        sh.put("E", r, Cell(f'=IF(ISNUMBER(LatencyGPUsExact),LatencyGPUsExact*A{r},"")', formula=True,
                            cached=lat * x if not math.isinf(lat) else "", kind="calc", fmt=FMT["num"]))
        sh.put("F", r, Cell("=FleetPurchased", formula=True, cached=pa.purchased, kind="calc", fmt=FMT["gpus"]))


def _peak_marker(rows: Rows, e: Engine, hdr: int, end: int, mark: int) -> None:
    """The current peak, drawn as a vertical line from 0 to the top of the chart."""
    s, pa, sh = e.s, e.sol.paths, rows.sheet
    for col, label in (("A", "Marker"), ("B", "Peak rate [req/s]"), ("C", "Current peak")):
        sh.put(col, mark, Cell(label, kind="header"))
    exact = [v for v in (pa.memory_gpus_exact, pa.compute_gpus_exact, pa.latency_gpus_exact) if not math.isinf(v)]
    for k, (label, formula, cached) in enumerate((("bottom", "=0", 0.0),
                                                  ("top", f"=MAX(C{hdr + 1}:F{end})", max(max(exact) * PEAK_MULTIPLES[-1], pa.purchased)))):
        r = mark + 1 + k
        sh.put("A", r, Cell(label, kind="label"))
        sh.put("B", r, Cell("=PeakRate", formula=True, cached=s.peak_rps, kind="calc", fmt=FMT["num"]))
        sh.put("C", r, Cell(formula, formula=True, cached=cached, kind="calc", fmt=FMT["num"]))


def paths_chart(rows: Rows, e: Engine) -> None:
    """Each path against peak rate at the chosen degree (linear in the rate): where the lines cross, the binding
    constraint flips."""
    sh = rows.sheet
    rows.section("Each path against peak rate (at the chosen degree): where the lines cross, the binding constraint flips")
    hdr = sh.row
    for i, label in enumerate(("x current peak", "Peak rate [req/s]", "Memory path", "Compute path", "Latency path",
                               "GPUs purchased")):
        sh.put(i + 1, hdr, Cell(label, kind="header"))
    _chart_rows(rows, e, hdr)
    end = hdr + len(PEAK_MULTIPLES)
    mark = end + 2
    _peak_marker(rows, e, hdr, end, mark)
    paths = [{"col": c, "rows": (hdr, end), "colour": colour} for c, colour in (("C", "1F77B4"), ("D", "FF7F0E"), ("E", "2CA02C"))]
    sh.charts.append({"kind": "scatter", "title": "GPUs by path against peak rate",
                      "x_title": "Peak rate [requests/s]", "y_title": "GPUs (before rounding)",
                      "x": ("B", hdr + 1, end), "x_format": "#,##0", "y_format": "#,##0", "x_min": 0, "y_min": 0,
                      "series": paths + [{"col": "F", "rows": (hdr, end), "colour": "9467BD", "dash": "dash", "marker": "none"},
                                         {"col": "C", "rows": (mark, mark + 2), "x": ("B", mark + 1, mark + 2), "colour": "D62728",
                                          "dash": "sysDash", "marker": "none"}],
                      "anchor": f"H{hdr}", "width": 18, "height": 11})
    sh.row = mark + 3
