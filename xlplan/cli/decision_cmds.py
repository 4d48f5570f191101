"""The purchase decision: `xlplan compare` (which hardware) and `xlplan schedule` (when to order)."""

from __future__ import annotations

import datetime as dt
import math
import re
from pathlib import Path

import typer

from xlplan import catalog
from xlplan.cli.app import PLAN_ARG, app
from xlplan.cli.app import load as _load
from xlplan.io.errors import InputError, percent_hint
from xlplan.io.outputs import json_text
from xlplan.words import PRICE_MISSING, count


def _usd(x: float | None, digits: int = 0) -> str:
    return PRICE_MISSING if x is None else f"${x:,.{digits}f}"


@app.command("compare")
def compare_cmd(
    plan_file: Path | None = PLAN_ARG,
    gpus: str | None = typer.Option(None, "--gpus", help="Compare only these GPUs, comma-separated (catalog names: h100-sxm,h200,b200)."),
    as_json: bool = typer.Option(False, "--json", help="Print every option as JSON."),
    top: int = typer.Option(15, "--top", min=1, help="Rows of the ranked table to print (the plan's own row is always shown)."),
    verify_top: int = typer.Option(5, "--verify-top", min=0, max=200,
                                   help="Simulate this many of the cheapest options at peak, as `plan` verifies its Answer (0: the closed form alone)."),
    show_all: bool = typer.Option(False, "--all", help=("Also show GPUs not for datacenter use (GeForce) and other weight "
                                                        "formats, each marked, after the ranked ones.")),
) -> None:
    """Which hardware: the plan on every datacenter GPU at its weights format, ranked by $/M tokens as the plan pays."""
    from xlplan.decide.hardware_choice import choose

    names = [g.strip() for g in gpus.split(",") if g.strip()] if gpus is not None else None
    if names is not None and not names:
        raise InputError("--gpus", [f"got {gpus!r}; expected catalog GPU names separated by commas, e.g. h100-sxm,h200"])
    p = _load(plan_file)
    if names is not None:
        for n in names:  # a typo is named at the option that carries it
            try:
                catalog.gpu_key(n)
            except catalog.UnknownNameError as e:
                raise InputError("--gpus", [str(e)]) from None
    choice = choose(p, names, verify_top, show_all)
    if as_json:
        typer.echo(json_text({"recommendation": "\n".join(choice.recommendation),
                              "options": [o.model_dump(mode="json") for o in choice.options],
                              "recommendation_lines": choice.recommendation, "payment_mode": choice.payment_mode,
                              "format_options": [o.model_dump(mode="json") for o in choice.format_options]}))
        return
    _print_options(p, choice, top, verify_top)


def _mark(o) -> str:
    """Why a row is outside the ranking (--all): not for datacenter use, another weights format. [text]"""
    why = ([] if o.eligible is not False else ["not for datacenter use (GeForce licence)"]) + ([o.format_change] if o.format_change else [])
    return "; ".join(why)


def _print_options(p, choice, top: int, verify_top: int) -> None:
    """The ranked table, then how the fleets were found and the recommendation's lines."""
    from rich.console import Console
    from rich.table import Table

    options = choice.options
    scope = "every GPU and format" if choice.include_all else f"datacenter GPUs at {p.model.weights_dtype} weights"
    table = Table(title=f"{p.name}: {scope}, ranked by $/M tokens ({p.costs.mode})")
    for col in ("#", "GPU", "weights", "cache", "TP", "load", "+redundancy", "order", "fleet from", "binds", "$/month", "$/M tokens", "note"):
        table.add_column(col, justify="right" if col in ("#", "TP", "load", "+redundancy", "$/month", "$/M tokens") else "left")
    rank, shown = 0, 0
    for o in options:  # the ranked rows numbered (the first --top of them shown); with --all the marked ones after, unnumbered
        rank += bool(o.ranked)
        if (rank > top or not o.ranked) and not o.is_plan and not (choice.include_all and not o.ranked):
            continue
        shown += 1
        i = rank if o.ranked else "—"
        mark = " (plan)" if o.is_plan else ""
        note = "; ".join(x for x in (_mark(o), o.reason if o.usd_per_mtok is None else "") if x)
        if not o.feasible:
            table.add_row(str(i), o.gpu_name + mark, o.weights_dtype, o.kv_dtype, "", "", "", "", "", "", "", "",
                          "; ".join(x for x in (_mark(o), f"cannot: {o.reason[:70]}") if x))
            continue
        table.add_row(str(i), o.gpu_name + mark, o.weights_dtype, o.kv_dtype, str(o.tp), str(o.load), str(o.with_redundancy),
                      o.order or str(o.purchased), "simulation" if o.source == "verified" else o.source, o.binding or "",
                      _usd(o.monthly_usd), _usd(o.usd_per_mtok, 3), note)
    console = Console(width=200)
    console.print(table)
    if shown < len(options):
        console.print(f"{count(len(options) - shown, 'more option')}: --top {len(options)} or --json shows them all.")
    if not choice.include_all:
        console.print("GPUs not for datacenter use (GeForce) and other weight formats are left out of the ranking: --all shows them, marked.")
    verified = sum(o.source == "verified" for o in options)
    which = (f"the {verify_top} cheapest ranked, the plan's own and its cheapest other weights format" if verify_top > 0
             else "none: --verify-top 0")
    console.print(f"Fleets: {verified} verified in simulation at peak on every seed, as `xlplan plan` verifies its Answer "
                  f"({which}); the rest are the closed form (the largest of the memory, compute, latency and queueing "
                  "paths), not simulated.")
    for line in choice.recommendation:
        console.print(line)


_MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")


def _growth(text: str) -> float:
    """'0.10' or '10%' -> 0.10, refused past the range a monthly growth can have. [fraction/month]"""
    t = text.strip()
    try:
        g = float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
    except ValueError:
        raise InputError("--growth", [f"got {text!r}; expected a monthly growth such as 0.10 or 10%"]) from None
    if not (math.isfinite(g) and -0.5 < g <= 1):
        hint = percent_hint(g) if not t.endswith("%") else ""
        raise InputError("--growth", [(f"got {text}; expected a monthly growth above -50% and at most 100% (0.10 or 10% is "
                                      f"10% a month){hint}")])
    return g


@app.command("schedule")
def schedule_cmd(
    plan_file: Path | None = PLAN_ARG,
    growth: str | None = typer.Option(None, "--growth", help="Monthly growth of the peak: 0.10 or 10% (compounding)."),
    forecast: Path | None = typer.Option(None, "--forecast", help="CSV of monthly peaks: columns month (YYYY-MM) and peak_rps."),
    months: int | None = typer.Option(None, "--months", help="Months to plan (default: the plan's growth.months, else 12)."),
    lead_time_days: int | None = typer.Option(None, "--lead-time-days", help="Days from order to GPUs in service (or growth.lead_time_days)."),
    start: str | None = typer.Option(None, "--start", help="First month, YYYY-MM (default: the plan's growth.start, else next month)."),
    verify: str = typer.Option("every", "--verify", help=("every (the default): each month decided as `xlplan plan` decides "
                                                          "it, simulated where affordable; margin: the closed form plus the "
                                                          "shortfall simulated at the first and largest month (faster); none: "
                                                          "the closed form.")),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """When to order: the fleet month by month as the peak grows, each order dated its lead time ahead."""
    from xlplan.decide.schedule import plan_schedule

    _check_schedule_options(growth, forecast, months, lead_time_days, start, verify)
    p = _load(plan_file)
    peaks, words, start = _peaks(p, growth, forecast, months, start)
    lead = _lead_time_days(p, lead_time_days)
    today = dt.date.today()
    out = plan_schedule(p, today, verify, (peaks, words), lead, start)
    if as_json:
        typer.echo(json_text(out.model_dump(mode="json")))
        return
    _print_schedule(p.name, out, words, lead, [m for m in out.months if m.month in out.late_orders], today,
                    "bought" if p.costs.mode == "buy" else "rented")


def _check_schedule_options(growth: str | None, forecast: Path | None, months: int | None, lead_time_days: int | None,
                            start: str | None, verify: str) -> None:
    """One line naming the option whose value no schedule can have."""
    from xlplan.decide.schedule import VERIFY_MODES

    if growth is not None and forecast is not None:
        raise InputError("--growth", ["given with --forecast; expected one of them"])
    if months is not None and not 1 <= months <= 240:
        raise InputError("--months", [f"got {months}; expected 1 to 240 months"])
    if lead_time_days is not None and not 0 <= lead_time_days <= 1095:
        raise InputError("--lead-time-days", [f"got {lead_time_days}; expected 0 to 1,095 days"])
    if start is not None and not _MONTH.match(start):
        raise InputError("--start", [f"got {start!r}; expected YYYY-MM, e.g. 2027-01"])
    if verify not in VERIFY_MODES:
        raise InputError("--verify", [f"got {verify!r}; expected one of {', '.join(VERIFY_MODES)}"])


def _peaks(p, growth: str | None, forecast: Path | None, months: int | None, start: str | None) -> tuple[list[float], str, str | None]:
    """(monthly peaks, where they come from in words, the first month): --forecast, --growth, else the plan's growth."""
    from xlplan.decide.schedule_calendar import monthly_peaks, plan_growth

    g = p.growth
    n = months or (g.months if g else 12)
    if forecast is not None:
        return _forecast_peaks(forecast, months, start)
    if growth is not None:
        rate = _growth(growth)
        return monthly_peaks(p.forecast.peak_rps, rate, n), f"{rate:.1%} a month from {p.forecast.peak_rps:g} req/s (--growth)", start
    if g is not None and g.peaks_rps is not None and months is not None and months > len(g.peaks_rps):
        raise InputError("--months", [f"got {months}; the plan's growth.peaks_rps gives {len(g.peaks_rps)} month(s)"])
    planned = plan_growth(p.forecast.peak_rps, g, months)
    if planned is not None:
        return *planned, start
    raise InputError("--growth", [("missing; expected --growth G (0.10 is 10% a month), --forecast CSV, "
                                  "or a growth section in the plan (growth.monthly or growth.peaks_rps)")])


def _forecast_peaks(forecast: Path, months: int | None, start: str | None) -> tuple[list[float], str, str]:
    """(peaks, words, first month) of a --forecast file, cut to --months; its months are its own."""
    from xlplan.io.forecast_table import read_forecast

    first, peaks = read_forecast(forecast)
    if start is not None and start != first:
        raise InputError("--start", [(f"got {start}; the forecast {forecast} starts in {first} and its months are its own "
                                     "(leave --start out, or edit the file)")])
    if months is not None and months > len(peaks):
        raise InputError("--months", [f"got {months}; {forecast} gives {len(peaks)} month(s) ({first} on)"])
    if months is not None:
        peaks = peaks[:months]
    return peaks, f"monthly peaks from {forecast}", first


def _lead_time_days(p, lead_time_days: int | None) -> int:
    """Days from order to service: --lead-time-days, else the plan's growth.lead_time_days; missing, the published one is hinted. [days]"""
    g = p.growth
    lead = lead_time_days if lead_time_days is not None else (g.lead_time_days if g else None)
    if lead is None:
        gpu = p.hardware.resolve()
        known = catalog.ownership_for(gpu.name).get("lead_time") if isinstance(p.hardware.gpu, str) else None
        hint = f" (published for {gpu.name}: {known})" if known else ""
        raise InputError("--lead-time-days", [(f"missing; expected the days from order to GPUs in service{hint}, "
                                              "or growth.lead_time_days in the plan")])
    return lead


def _print_schedule(name: str, out, words: str, lead: int, late: list, today: dt.date, held: str = "bought") -> None:
    """The month-by-month table, then how the fleets were sized, the API's monthly crossover and cumulative break-even, the
    binding, late orders and stops."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{name}: the fleet month by month ({words}; lead time {count(lead, 'day')})")
    for col in ("month", "peak req/s", "load", "+redundancy", held, "new", "order by", "$/month", "cumulative $", "binds",
                "API $/month", "fleet from"):
        table.add_column(col, justify="left" if col in ("month", "order by", "binds", "fleet from") else "right")
    for m in out.months:
        table.add_row(m.month, f"{m.peak_rps:,.1f}", str(m.load), str(m.with_redundancy), str(m.purchased),
                      str(m.new_gpus) if m.new_gpus else "", (m.order_by or "") + (" LATE" if m in late else ""),
                      _usd(m.monthly_usd), _usd(m.cumulative_usd), m.binding, _usd(m.api_monthly_usd),
                      "simulation" if m.source == "verified" else m.source)
    console = Console(width=200)
    console.print(table)
    if out.cash_totals:
        console.print(_cash_table(out))
    console.print(f"Fleets: {out.method}.")
    console.print(f"API: {out.breakeven_words}.")
    console.print(f"Binding: {'changes to ' + next(m.binding for m in out.months if m.month == out.binding_change_month) + ' in ' + out.binding_change_month if out.binding_change_month else 'the same in every month'}.")
    if late:
        console.print(f"[bold red]Late:[/] the order for {', '.join(m.month for m in late)} should already have gone out (order-by date before today, {today}).")
    if out.stopped:
        console.print(f"[bold red]Stops:[/] {out.stopped}")


def _cash_table(out):
    """Cash by fiscal quarter and year: capex paid, running costs, their sum, and depreciation beside it (not cash)."""
    from rich.table import Table

    fy = "the calendar year" if out.fiscal_year_start_month == 1 else f"fiscal years from month {out.fiscal_year_start_month}"
    table = Table(title=f"Cash out (capex paid at {out.capex_paid_at}; {fy}; depreciation is not cash)")
    for col in ("period", "months", "capex $", "running $", "cash $", "depreciation $"):
        table.add_column(col, justify="left" if col == "period" else "right")
    if out.capex_before_schedule_usd:
        table.add_row("of which before the schedule (counted in its period)", "", _usd(out.capex_before_schedule_usd), "", "", "")
    for t in out.cash_totals:
        table.add_row(t.period, str(t.months), _usd(t.capex_usd), _usd(t.opex_usd), _usd(t.cash_usd), _usd(t.depreciation_usd))
    return table
