"""The Summary's contract mix: the Answer's fleet paid for as a reserved (or owned) base, on-demand hours, API overflow
and spot (the plan's ``contracts`` section over its daily curve), as engine values; and the plan file's contracts and
daily curve as written, so that reading the workbook gives the plan back.
"""

from __future__ import annotations

import json

from xlplan import words
from xlplan.excel.cells import Book, Cell
from xlplan.excel.common import FMT, Engine

MIX_ROWS = ("AnswerMix", "AnswerMixMonthlyUSD", "AnswerMixSavingsRate", "AnswerMixCoverage", "AnswerMixUtilisation",
            "AnswerMixBreakEven")
"""The Summary's names of the mix's rows, each with its stale flag. [text]"""


def mix_rows(r) -> list[tuple[str, str, object, str, str | None, str]]:
    """(name, label, the engine's value, unit, format, how) of the contract mix; none without a contracts section. [—]

    Parameters
    ----------
    r : PlanResult
        The plan's result; its ``contracts`` is the mix.

    Returns
    -------
    list of tuple
        The mix's parts in words, its monthly cost, savings rate, coverage, utilisation and break-even.
    """
    m = r.contracts
    if m is None:
        return []
    parts = [f"{m.base_gpus} GPUs {m.term.replace('_', ' ')} {words.usd(m.base_monthly_usd)}",
             f"{m.on_demand_gpu_hours_per_month:,.0f} on-demand GPU-hours {words.usd(m.on_demand_monthly_usd)}"]
    if m.api_overflow:
        parts.append(f"{m.api_requests_per_month:,.0f} requests on the API {words.usd(m.api_monthly_usd)}")
    if m.spot_usd_per_gpu_hour is not None:
        parts.append(f"{m.spot_gpu_hours_per_month:,.0f} spot GPU-hours {words.usd(m.spot_monthly_usd)}")
    return [
        ("AnswerMix", "Contract mix", " + ".join(parts), "", None,
         "the base carries the promise and its redundancy all day; on-demand covers the daily peak (contracts, daily curve)"),
        ("AnswerMixMonthlyUSD", "The mix per month", m.monthly_usd, "USD/month", FMT["usd"],
         f"against {words.usd(m.always_on_demand_monthly_usd)} for the fleet on demand all day"),
        ("AnswerMixSavingsRate", "Effective savings rate", m.effective_savings_rate, "fraction", "0.0%",
         "1 − GPU cost ÷ the same GPU-hours at the on-demand price"),
        ("AnswerMixCoverage", "Commitment coverage", m.commitment_coverage, "fraction", "0.0%", "base GPU-hours in use ÷ GPU-hours used"),
        ("AnswerMixUtilisation", "Commitment utilisation", m.commitment_utilisation, "fraction", "0.0%",
         "base GPU-hours in use ÷ GPU-hours committed"),
        ("AnswerMixBreakEven", "Break-even against on-demand", m.break_even, "fraction", "0.0%",
         "a reserved GPU beats on-demand when busy more than this share of the hours (reserved ÷ on-demand price)"),
    ]


def contracts_section(book: Book, sh, e: Engine) -> None:
    """The plan file's contracts section, daily curve and review sections (installed, orders, triggers) as given (JSON),
    named ContractsSection, for `xlplan read`."""
    given = {}
    if e.plan.contracts is not None:
        given["contracts"] = e.plan.contracts.model_dump(mode="json", exclude_unset=True)
    if e.plan.forecast.daily_curve is not None:
        given["daily_curve"] = list(e.plan.forecast.daily_curve)
    for section in ("installed", "orders", "triggers"):  # what a monthly review reads, kept as written
        value = getattr(e.plan, section, None)
        if value:
            given[section] = (value.model_dump(mode="json", exclude_none=True) if hasattr(value, "model_dump")
                              else [v.model_dump(mode="json", exclude_none=True) for v in value])
    if not given:
        return
    r = sh.row
    sh.put("A", r, Cell("Sections of the plan file kept as written: " + ", ".join(sorted(given)) + " (read back by `xlplan read`)",
                        kind="label"))
    book.define("ContractsSection", sh, sh.put("D", r, Cell(json.dumps(given, sort_keys=True), kind="static", depends=())))
    sh.row += 1
