"""The monthly review: `xlplan review`, production measurements back to the plan."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import typer

from xlplan.cli.app import app
from xlplan.cli.app import load as _load
from xlplan.io.errors import InputError


def _review_day(text: str | None) -> str | None:
    """The --date as a calendar day, or None where it is not given (the logs' last day is then the review's)."""
    if text is None:
        return None
    try:
        if len(text) != 10:
            raise ValueError(text)
        return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        raise InputError("--date", [f"got {text!r}; expected a day of the calendar, YYYY-MM-DD"]) from None


def _peak_band(base, day: str, summary, fragment: dict) -> float:
    """The top of the planned peak's sampling band over the log's span; where the measured peak is within the band
    (from the planned peak up to its top), the re-plan keeps the planned peak (the fragment's is replaced): a log drawn
    at the plan's own rate reads a little above it in most months, and that noise orders nothing. Its busiest window
    reads under the planned peak only if every one of its windows does, which the busiest of even 13 independent
    draws does in 0.5^13 = 0.01% of months: a measured peak under the planned one is traffic that fell. [requests/s]"""
    from xlplan.evidence.traffic_windows import busiest_window_band_rps
    from xlplan.review.replan import planned_peak

    planned = planned_peak(base, dt.date.fromisoformat(day))[1]
    top = busiest_window_band_rps(planned, summary.window_s, summary.last_s - summary.first_s)
    if planned <= summary.peak_rps <= top:  # under the planned peak is traffic that fell: re-planned as measured
        fragment["forecast"]["peak_rps"] = planned
    return top


def _in_the_logs(day: str | None, summary) -> str:
    """The review day: --date where its month holds some of the logs' requests, else refused; without --date, the day
    of the last request (a review is of the month its logs measured, not of whatever today is)."""
    first = dt.datetime.fromtimestamp(summary.first_s, dt.timezone.utc).date()
    last = dt.datetime.fromtimestamp(summary.last_s, dt.timezone.utc).date()
    if day is None:
        return last.isoformat()
    d = dt.date.fromisoformat(day)
    start = d.replace(day=1)
    end = (start + dt.timedelta(days=32)).replace(day=1)
    if last < start or first >= end:
        raise InputError("--date", [(f"got {day}: it reviews {d:%Y-%m}, but the logs span {first} to {last}; expected a day "
                                     "in a month the logs cover (or leave --date out: the review is then of the logs' last day)")])
    return day


@app.command("review")
def review_cmd(
    plan_file: Path = typer.Argument(..., help="The plan under review (YAML or JSON), with any installed, orders and triggers sections."),
    logs: list[Path] = typer.Option([], "--log", help="Request logs of the month, as `xlplan traffic` reads them; repeat for more. Required."),
    scrapes: list[Path] = typer.Option([], "--scrapes", help="Prometheus text-format scrapes, in time order: which constraint binds in production; repeat for more."),
    results: list[Path] = typer.Option([], "--results", help="Benchmark results, as `xlplan calibrate` reads them: the re-plan uses the fitted efficiencies; repeat for more."),
    date: str | None = typer.Option(None, "--date", help="The review day, YYYY-MM-DD, in a month the logs cover (default: the day of the logs' last request); its month is the month reviewed."),
    markdown: Path | None = typer.Option(None, "--markdown", help="Also write the review note as Markdown here."),
    as_json: bool = typer.Option(False, "--json", help="Print the review as JSON."),
    history: Path | None = typer.Option(None, "--history", help="Append one line for this review to this JSON Lines file and show the forecast's accuracy over time: the one output allowed to grow (without it nothing is written)."),
    workbook: Path | None = typer.Option(None, "--workbook", help="Also write the plan's capacity-note workbook (.xlsx) with a Review tab after the six: the measured figures as inputs against the plan's, and tab 6's breakpoints crossed, by formula."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --markdown or --workbook file."),
    verify: bool | None = typer.Option(None, "--verify/--no-verify", help="Verify the plan's and the re-plan's fleets in "
                                       "simulation at peak, as `xlplan plan` does by default (the default: where the "
                                       "simulation is affordable); --no-verify compares the closed forms alone."),
) -> None:
    """The monthly review: the forecast against the month's logs, the breakpoints crossed, the re-plan and its orders, the triggers. Exit 0: no action; 1: a trigger fired, a breakpoint was crossed, the promise was missed or an order is due; 2: bad input."""
    from xlplan.decide.planner import plan as run_plan
    from xlplan.excel.export import workbook_files, workbook_outputs
    from xlplan.io.extras import require
    from xlplan.io.outputs import MARKDOWN, Output, check_outputs, json_text, write_outputs
    from xlplan.io.review_history import append_history, read_history
    from xlplan.report.review_note import review_note
    from xlplan.review.monthly import review

    day = _review_day(date)
    if not logs:
        raise InputError("--log", ["missing; expected the month's request logs (--log FILE, repeat for more)"])
    require("pandas", command="review")
    inputs = [plan_file, *logs, *scrapes, *results]
    outputs = ([Output(markdown, "--markdown", MARKDOWN)] if markdown is not None else []) + \
        (workbook_outputs(workbook, option="--workbook") if workbook is not None else [])
    check_outputs(outputs, force, inputs=inputs)
    past, past_text = read_history(history) if history is not None else ([], "")
    base = _load(plan_file)
    summary, fragment = _traffic(logs)
    day = _in_the_logs(day, summary)  # a month the logs do not cover is refused before anything is planned
    mode = "auto" if verify is None else verify
    result = run_plan(base, verify=mode)
    band = _peak_band(base, day, summary, fragment)
    evidence = _scrapes(scrapes)
    measured_plan, recalibrated = _measured_plan(base, fragment, results)
    latency, model, measured_plan, recalibrated = _production(base, result, scrapes, measured_plan, recalibrated)
    out = review(base, result, summary, measured_plan, day, evidence, latency, model, recalibrated=recalibrated,
                 history=tuple(past), peak_band_rps=band, verify=mode)
    contents = [(markdown, review_note(out, md=True))] if markdown is not None else []
    if workbook is not None:
        from xlplan.excel.book import figures

        contents += workbook_files(figures(base, result=result, today=dt.date.fromisoformat(day)), workbook, review=out)
    write_outputs(contents)
    if history is not None:
        append_history(history, past_text, out.history_line)
    typer.echo(json_text(out.model_dump(mode="json")) if as_json else review_note(out), nl=as_json)
    if out.needs_action:
        raise typer.Exit(1)


def _traffic(logs: list[Path]):
    """The month's summary (a 60 s peak window, as `xlplan traffic`'s default) and the forecast it gives a plan."""
    from xlplan.evidence.traffic import UnsuitableLog, summarise
    from xlplan.io.logs import read_logs, untimed_inside
    from xlplan.report.traffic_report import plan_fragment

    req = read_logs(logs, {})
    try:
        s = summarise(req.arrival_t_s, req.prompt, req.output, req.cached, 60.0, req.offset_s)
    except UnsuitableLog as e:
        raise InputError(", ".join(req.files), [str(e)], req.bad.lines()) from None
    inside = untimed_inside(req, s.peak_window_start_s, s.peak_window_start_s + s.window_s)
    if inside is not None:
        raise InputError(", ".join(req.files), [inside], req.bad.lines())
    return s, plan_fragment(req, s)  # a log under a day leaves the plan's average utilisation (its forecast section)


def _scrapes(scrapes: list[Path]):
    """The scrapes' evidence, or None without any."""
    if not scrapes:
        return None
    from xlplan.evidence.confirm import evidence
    from xlplan.io.metrics import read_scrapes

    return evidence(read_scrapes(scrapes))


def _production(base, result, scrapes: list[Path], measured_plan, recalibrated: str):
    """Sections 3 and 5 from the scrapes' histograms, and the measured plan with production's efficiencies where the
    model and production differ (a benchmark's, from --results, where there is no scrape): (latency, model, plan, from)."""
    if not scrapes:
        return None, None, measured_plan, recalibrated
    from xlplan.evidence.production import latency_evidence, step_observations
    from xlplan.evidence.recalibration import recalibrate
    from xlplan.io.histograms import read_histogram_scrapes
    from xlplan.review import production

    series = read_histogram_scrapes(scrapes, required=False)
    if series is None:  # gauges only (section 4, as confirm reads them): no latency, no step times
        from xlplan.io.histograms import HISTOGRAMS

        names = ", ".join(n for ns in HISTOGRAMS.values() for n in ns)
        why = f"the scrapes hold no latency histogram ({names})"
        return (production.Latency(None, None, why), production.Model(f"not given: {why}, so no step times"),
                measured_plan, recalibrated)
    lat = production.latency(latency_evidence(series, base.promise.percentile), base.promise.ttft_s, base.promise.itl)
    steps = step_observations(series)
    if not steps.observations:
        return lat, production.Model(f"not given: {steps.derived}, but no scrape interval gave a step"), measured_plan, recalibrated
    fit = recalibrate(measured_plan, steps.observations, result.answer.tp if result.answer else result.fleet.tp)
    model = production.model(fit, len(steps.observations))
    if fit.differs and fit.identified:
        policy = {**measured_plan.policy.model_dump(exclude_none=True), **fit.policy()}
        measured_plan = measured_plan.model_validate({**measured_plan.model_dump(exclude_none=True), "policy": policy})
        scraped = f"production scrapes ({len(steps.observations)} intervals)"
        recalibrated = f"{recalibrated}, then {scraped}" if recalibrated else scraped
    return lat, model, measured_plan, recalibrated


def _measured_plan(base, fragment: dict, results: list[Path]):
    """(the plan with the measured forecast and any benchmark's fitted efficiencies, where those come from or '')."""
    from xlplan.cli.traffic_cmds import _with_forecast

    if not results:
        return _with_forecast(base, fragment), ""
    from xlplan.io.extras import require

    require("scipy", command="review --results")
    from xlplan.cli.measure_cmds import _calibrated
    from xlplan.evidence.bench_conditions import conditions_of_plan
    from xlplan.evidence.calibrate import fit
    from xlplan.evidence.calibrate_map import ImplausibleFit
    from xlplan.io.bench_results import read_results

    degree = base.policy.tp or 1
    runs = read_results(results, plan_model=base.model.name)
    from pydantic import ValidationError

    from xlplan.io.errors import describe_validation_error

    try:
        f = fit(runs, conditions_of_plan(base, degree))
    except ImplausibleFit as e:
        raise InputError(e.runs, [e.why]) from None
    except ValidationError as e:  # a run whose lengths no plan of this model can serve (past its context)
        raise InputError(", ".join(str(p) for p in results), [f"a run cannot be planned: {describe_validation_error(e)[0]}"]) from None
    names = ", ".join(p.name for p in results)
    return _with_forecast(_calibrated(base, f, names, len(runs), degree), fragment), f"{names} ({len(runs)} run{'' if len(runs) == 1 else 's'})"
