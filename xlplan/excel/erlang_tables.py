"""3 Constraints' queueing path: the engine's queue figures, the Erlang C tables by formula, and the closed form.

Engine values (shaded): the step budget deployed, a replica's slots and step at the promise, the prefill at the
percentile, the long-prefill-step limit, and the memory, compute and latency paths at the closed form's degree.
Formulas: the service rate, the offered load, the wait target, a table of the wait at the percentile for each
replica count, the fewest replicas within the target, and the closed-form fleet. The tables themselves go last on
the tab, outside the printed page (:func:`erlang_tables`).
"""

from __future__ import annotations

from typing import Any

from xlplan.excel import formulas as F
from xlplan.excel.cells import Cell, Line, write_lines
from xlplan.excel.common import FMT, NONE, Engine, Rows, num
from xlplan.excel.figures import ErlangRows
from xlplan.excel.staleness import FLEET_VALUE
from xlplan.serving.queueing import POOLED_ROUTINGS

ERLANG_ROWS_NAME = "ErlangTableRows"
"""Defined name of :data:`xlplan.excel.common.ERLANG_ROWS` on the Constants sheet: a coarse step wider than the fine table is past it."""

BEYOND_TABLE = "beyond the table"

Static = tuple[str, str, Any, str, "str | None", str]
"""An engine value on its own row: (defined name, label, value, unit, number format, how)."""


def _static(rows: Rows, name: str, label: str, value, unit: str, fmt: str | None, how: str) -> None:
    """An engine value on its own row, shaded, named. [cell]"""
    sh = rows.sheet
    r = sh.row
    sh.put("A", r, Cell(label, kind="label"))
    coord = sh.put("B", r, Cell(num(value), kind="static", fmt=fmt))
    rows.book.define(name, sh, coord)
    sh.put("C", r, Cell(unit, kind="unit"))
    sh.put("D", r, Cell(how, kind="note", depends=FLEET_VALUE))  # its words name how the engine chose it
    sh.row += 1


def _queue_statics(e: Engine) -> list[Static]:
    """The engine's queue figures the formulas start from: degree, step budget, slots, step, prefill, tail limit."""
    cf, q = e.result.closed_form, e.result.queueing
    return [
        ("QueueTP", "GPUs per replica (the closed form's degree)", cf.tp, "GPUs", "0",
         "engine value: the degree that buys the fewest GPUs on the closed form"),
        ("QueueStepBudget", "Step budget deployed", cf.step_budget_tokens, "tokens", FMT["gpus"],
         f"engine value ({cf.budget_chosen_by}): policy.max_num_batched_tokens"),
        ("QueueSlots", "Decodes per step within the inter-token target", q.slots_per_replica, "sequences", FMT["num"],
         "engine value: the serving model's step, prefill share included, within the step budget"),
        ("QueueStep", "The step at that batch", q.step_s, "s", FMT["s"], "engine value"),
        ("QueuePrefill", "Prefill of a prompt at the percentile, idle replica", q.prefill_at_percentile_s, "s", FMT["s"],
         "engine value"),
        ("QueueTailReplicas", "Replicas the long-prefill-step limit needs", q.tail_replicas, "replicas", FMT["gpus"],
         "engine value: 0 where a step with a prompt chunk stays within the inter-token target"),
        ("QueuePrefillReplicas", "Replicas each replica's own prefill queue needs", q.prefill_queue_replicas, "replicas",
         FMT["gpus"], "engine value: M/G/1 (Pollaczek–Khinchine) where a whole prompt fits one step; 0 where prompts are chunked"),
    ]


def _queue_lines(e: Engine) -> list[Line]:
    """Service rate, offered load, wait target, tail fraction and the Allen–Cunneen factor, by formula."""
    q = e.result.queueing
    tail = 1.0 - e.s.percentile / 100.0
    return [
        Line("QueueServiceRPS", "Requests one replica serves per second", "=IF(ISNUMBER(QueueStep),QueueSlots/(OutputMean*QueueStep),0)",
             q.service_rps_per_replica, "requests/s", FMT["num"], "slots ÷ (mean output × step)"),
        Line("QueueOffered", "Replicas busy on average (offered load)",
             f'=IF(QueueServiceRPS>0,PeakRate/QueueServiceRPS,"{NONE}")', num(q.offered_erlangs), "erlangs", FMT["num"],
             "peak rate ÷ service rate"),
        Line("QueueWaitTarget", "Longest wait for a slot allowed", "=TTFTTarget-QueuePrefill", q.wait_target_s, "s", FMT["s"],
             "the TTFT promise less the prefill"),
        Line("QueueTailFraction", "Requests allowed past the target", "=1-PromisePercentile/PercentPerFraction", tail,
             "fraction", FMT["num"], ""),
        Line("QueueACFactor", "Allen–Cunneen factor at the fleet's arrivals", "=(ArrivalCV2+QueueServiceCV2)/AllenCunneenDivisor",
             e.fig.allen_cunneen_factor, "1", FMT["num"],
             "1 for Poisson arrivals and exponential service; a queue per replica takes its own (the tables below)"),
        Line("QueuePooled", "One queue for the fleet (least-loaded or least-KV routing)",
             '=OR(Routing="least_loaded",Routing="least_kv")', e.s.routing in POOLED_ROUTINGS, "TRUE | FALSE", None,
             "TRUE: the replicas are one queue's servers; FALSE (round robin, random): each replica is a queue of its "
             "own over its whole slots, at the peak rate ÷ replicas"),
    ]


def _queueing_lines(e: Engine) -> list[Line]:
    """The fewest replicas within the target (the fine table's first row within it) and their GPUs."""
    cf, q = e.result.closed_form, e.result.queueing
    replicas = q.replicas if q.replicas is not None else NONE
    return [
        Line("QueueingReplicas", "Fewest replicas keeping the wait within the target",
             f'=IF(OR(NOT(ISNUMBER(QueueOffered)),QueueWaitTarget<0),"{NONE}",IFERROR(MAX(QueueTailReplicas,QueuePrefillReplicas,'
             f'IF(QueueMidStep>{ERLANG_ROWS_NAME},"{BEYOND_TABLE}",INDEX(QueueFineN,MATCH(TRUE,QueueFineMeets,0)))),"{BEYOND_TABLE}"))', replicas, "replicas", FMT["gpus"],
             "the first row of the fine table below within the target, at least the long-prefill-step limit and the prefill queue",
             udf="QUEUEING_REPLICAS(PeakRate,QueueServiceRPS,QueueWaitTarget,PromisePercentile,QueueTailReplicas,ArrivalCV2,"
                 "QueuePrefillReplicas,Routing,QueueSlots)"),
        Line("QueueingGPUs", "Queueing path", "=IF(ISNUMBER(QueueingReplicas),QueueingReplicas*QueueTP,QueueingReplicas)",
             cf.queueing_gpus if cf.queueing_gpus is not None else NONE, "GPUs", FMT["gpus"], "replicas × TP"),
    ]


def _closed_statics(e: Engine) -> list[Static]:
    """The memory, compute and latency paths at the closed form's degree (engine values)."""
    cf = e.result.closed_form
    return [
        ("ClosedMemoryGPUs", "Memory path at the achieved time in system", cf.memory_gpus, "GPUs", FMT["gpus"],
         "engine value: the fewest replicas whose caches hold their own load (3 Constraints shows the runbook's)"),
        ("ClosedComputeGPUs", "Compute path at that degree", cf.compute_gpus, "GPUs", FMT["gpus"], "engine value"),
        ("ClosedLatencyGPUs", "Latency check at that degree", cf.latency_gpus, "GPUs", FMT["gpus"], "engine value"),
    ]


def _closed_form_lines(e: Engine) -> list[Line]:
    """The closed form: the largest of the four paths, then with redundancy in whole purchasing units."""
    cf = e.result.closed_form
    return [
        Line("ClosedFormLoad", "Closed form: GPUs for the load",
             "=IF(ISNUMBER(QueueingGPUs),MAX(ClosedMemoryGPUs,ClosedComputeGPUs,ClosedLatencyGPUs,QueueingGPUs),"
             "MAX(ClosedMemoryGPUs,ClosedComputeGPUs,ClosedLatencyGPUs))", cf.load, "GPUs", FMT["gpus"],
             "the largest of the four paths"),
        Line("ClosedFormPurchased", "Closed form: with redundancy, in whole units",
             "=ROUNDUP((ClosedFormLoad+Redundancy*QueueTP)/GPUsPerNode,0)*GPUsPerNode", cf.purchased, "GPUs", FMT["gpus"],
             F.join("(load + redundancy × TP = ", F.fixed("ClosedFormLoad+Redundancy*QueueTP", cf.with_redundancy),
                    ") rounded up to the purchasing unit")),
    ]


def queueing_section(rows: Rows, e: Engine) -> ErlangRows:
    """The queueing path (Erlang C by POISSON, the Allen–Cunneen factor) and the closed form: the largest of four
    paths. Returns the tables' replica counts; :func:`erlang_tables` lays the tables out, last on the tab."""
    rows.section("Queueing path — the wait for a slot at the promise's percentile (Erlang C by POISSON, Allen–Cunneen); "
                 "and the closed form, the largest of the four paths")
    rows.header("Quantity", "Value", "Unit", "How")
    for row in _queue_statics(e):
        _static(rows, *row)
    write_lines(rows, _queue_lines(e))
    # the tables go at the end of the tab (erlang_tables); the answer reads the fine one's first row within the target
    write_lines(rows, _queueing_lines(e))
    for row in _closed_statics(e):
        _static(rows, *row)
    write_lines(rows, _closed_form_lines(e))
    return e.fig.erlang


def _erlang_row(rows: Rows, e: Engine, row: int, n: int, n_formula: str) -> None:
    """One replica count's row: the count, each queue's servers and offered load, P(wait) by POISSON, the
    Allen–Cunneen factor at the routed arrivals, the wait at the percentile, whether it is within the target."""
    sh = rows.sheet
    sh.put("A", row, Cell(n_formula, formula=True, cached=n, kind="calc", fmt=FMT["gpus"]))
    servers, offered, c, ac, w, meets = e.fig.erlang.waits[n]
    sh.put("B", row, Cell(f"=IF(QueuePooled,A{row},MAX(1,INT(QueueSlots)))", formula=True, cached=servers, kind="calc",
                          fmt=FMT["gpus"]))
    sh.put("C", row, Cell(f'=IFERROR(IF(QueuePooled,QueueOffered,QueueOffered*QueueSlots/A{row}),"{NONE}")', formula=True,
                          cached=offered, kind="calc", fmt=FMT["num"]))
    p_n, p_below = f"POISSON(B{row},C{row},FALSE)", f"POISSON(B{row}-1,C{row},TRUE)"
    # a queue at or past its servers (a replica's whole slots under an offered load above them) waits for certain
    sh.put("D", row, Cell(f"=IFERROR(IF(C{row}>=B{row},1,{p_n}/({p_n}+(1-C{row}/B{row})*{p_below})),1)", formula=True,
                          cached=c, kind="calc", fmt=FMT["num"]))
    arrivals = (f'IF(QueuePooled,ArrivalCV2,IF(Routing="round_robin",ArrivalCV2/A{row},ArrivalCV2/A{row}+1-1/A{row}))')
    sh.put("E", row, Cell(f'=IFERROR(({arrivals}+QueueServiceCV2)/AllenCunneenDivisor,"{NONE}")', formula=True,
                          cached=ac, kind="calc", fmt=FMT["num"]))
    sh.put("F", row, Cell(f"=IFERROR(IF(C{row}>=B{row},\"{NONE}\",IF(D{row}<=QueueTailFraction,0,LN(D{row}/QueueTailFraction)"
                          f"/(B{row}-C{row})*IF(QueuePooled,1,QueueSlots)/QueueServiceRPS*E{row})),\"{NONE}\")", formula=True,
                          cached=num(w), kind="calc", fmt=FMT["s"]))
    sh.put("G", row, Cell(f"=IF(ISNUMBER(F{row}),F{row}<=QueueWaitTarget,FALSE)", formula=True, cached=meets, kind="calc"))


def _erlang_table(rows: Rows, e: Engine, title: str, first_n: str, next_n: str, ns: list[int], prefix: str) -> None:
    """One Erlang C table: a row per replica count, its counts and verdicts named ``{prefix}N`` and ``{prefix}Meets``."""
    sh = rows.sheet
    rows.section(title)
    rows.header("Replicas", "Servers per queue", "Offered per queue [erlangs]", "P(wait) (Erlang C)", "Allen–Cunneen factor",
                "Wait at percentile [s]", "Within target")
    first = sh.row
    for k, n in enumerate(ns):
        row = sh.row
        _erlang_row(rows, e, row, n, first_n if k == 0 else next_n.format(prev=row - 1))
        sh.row += 1
    rows.book.define_range(f"{prefix}N", sh, f"A{first}", f"A{sh.row - 1}")
    rows.book.define_range(f"{prefix}Meets", sh, f"G{first}", f"G{sh.row - 1}")


def erlang_tables(rows: Rows, e: Engine, t: ErlangRows) -> None:
    """Where the queueing path comes from: the coarse table from the offered load, the middle one across the first
    coarse row within the target, then the fine one across the first middle row within it."""
    sh = rows.sheet
    rows.section("Erlang C — where the queueing path comes from: the wait at the percentile by replica count "
                 "(least-loaded routing: the replicas as one queue's servers; round robin and random: each replica "
                 "a queue of its own)")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("QueueBase", "Fewest replicas above the offered load", "=IFERROR(MAX(1,INT(QueueOffered)+1),1)", t.base,
              "replicas", FMT["gpus"], "")
    rows.calc("QueueCoarseStep", "Coarse table's step",
              "=IFERROR(MAX(1,ROUNDUP(IF(QueuePooled,SQRT(QueueOffered),QueueOffered)/ErlangCoarseDivisor,0)),1)",
              t.step, "replicas", FMT["gpus"],
              "a quarter of the offered load's square root (one queue) or of the offered load (a queue per replica): "
              "the coarse rows span ~4√a or ~4a")
    rows.calc("QueueMidStep", "Middle table's step", f"=MAX(1,ROUNDUP(QueueCoarseStep/{ERLANG_ROWS_NAME},0))", t.mid_step,
              "replicas", FMT["gpus"], "the coarse step over the rows: the middle rows span one coarse step")
    starts_at = sh.row
    sh.row += 2
    _erlang_table(rows, e, "Coarse: every step-th replica count from the base", "=QueueBase",
                  "=A{prev}+QueueCoarseStep", t.coarse, "QueueCoarse")
    _erlang_table(rows, e, "Middle: every middle step across the first coarse row within the target", "=QueueMidStart",
                  "=A{prev}+QueueMidStep", t.mid, "QueueMid")
    sh.row, after = starts_at, sh.row
    rows.calc("QueueMidStart", "Middle table starts at",
              "=IFERROR(MAX(QueueBase,INDEX(QueueCoarseN,MATCH(TRUE,QueueCoarseMeets,0))-QueueCoarseStep+QueueMidStep),QueueBase)",
              t.mid_start, "replicas", FMT["gpus"], "one coarse step below the first coarse row within the target, plus a middle step")
    rows.calc("QueueFineStart", "Fine table starts at",
              "=IFERROR(MAX(QueueBase,INDEX(QueueMidN,MATCH(TRUE,QueueMidMeets,0))-QueueMidStep+1),QueueBase)",
              t.fine_start, "replicas", FMT["gpus"], "one middle step below the first middle row within the target, plus one")
    sh.row = after
    _erlang_table(rows, e, "Fine: every replica count from there (the queueing path is its first row within the target)",
                  "=QueueFineStart", "=A{prev}+1", t.fine, "QueueFine")
