"""From request logs to the forecast: traffic."""

from __future__ import annotations

from pathlib import Path

import typer

from xlplan.cli.app import app
from xlplan.cli.app import load as _load
from xlplan.evidence.traffic_growth import weeks_until
from xlplan.evidence.traffic_windows import window_counts
from xlplan.io.errors import InputError
from xlplan.io.outputs import PNG, YAML, Output, check_outputs, write_outputs

MAX_WINDOW_S = 7 * 86400.0
"""Longest --window: a week. [s]"""


def _window_s(text: str) -> float:
    units = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
    t = text.strip().lower()
    for suffix in sorted(units, key=len, reverse=True):
        if t.endswith(suffix):
            number, factor = t[: -len(suffix)], units[suffix]
            break
    else:
        number, factor = t, 1.0
    try:
        value = float(number) * factor
    except ValueError:
        value = -1.0
    if not 0 < value <= MAX_WINDOW_S:  # NaN fails too
        raise InputError("--window", [f"got {text!r}; expected a positive duration of at most a week, such as 60s, 5m or 1h"])
    return value


@app.command("traffic")
def traffic_cmd(
    logs: list[Path] = typer.Argument(..., help="Request logs: OpenAI usage JSONL, LiteLLM spend logs, CSV or Parquet; .gz read as is."),
    window: str = typer.Option("60s", "--window", help="Window the peak rate is averaged over: 60s, 5m, 1h."),
    output: Path | None = typer.Option(None, "-o", "--output", help="Write the forecast (or, with --plan, the updated plan) here as YAML; PNGs go beside it."),
    plan_file: Path | None = typer.Option(None, "--plan", help="Write the forecast into a copy of this plan and show how the fleet changes."),
    columns: str | None = typer.Option(None, "--columns", help="Map columns: timestamp=ts,prompt=in_tok,output=out_tok[,cached=c][,id=request_id]."),
    strict: bool = typer.Option(False, "--strict", help="Any bad row is an error (default: counted, reported and left out)."),
    workbook: Path | None = typer.Option(None, "--workbook", help="Also write the capacity-note workbook with the traffic sheets."),
    force: bool = typer.Option(False, "--force", help="Overwrite existing output files."),
) -> None:
    """From request logs to the forecast: peak rate, p50/p95/p99 lengths, utilisation, prefix reuse, growth."""
    from xlplan.io.extras import require

    require("pandas", "matplotlib", command="traffic")
    from rich.console import Console

    from xlplan.decide.planner import plan as run_plan
    from xlplan.evidence.traffic import UnsuitableLog, summarise
    from xlplan.io.logs import parse_columns, read_logs, untimed_inside
    from xlplan.report.traffic_report import plan_fragment

    win = _window_s(window)
    mapping = parse_columns(columns)
    check_outputs(_outputs(output, workbook), force, inputs=[*logs, *([plan_file] if plan_file is not None else [])])
    base = _load(plan_file)
    req = read_logs(logs, mapping, strict=strict)
    try:
        s = summarise(req.arrival_t_s, req.prompt, req.output, req.cached, win, req.offset_s)
    except UnsuitableLog as e:
        raise InputError(", ".join(req.files), [str(e)], req.bad.lines()) from None
    inside = untimed_inside(req, s.peak_window_start_s, s.peak_window_start_s + s.window_s)
    if inside is not None:
        raise InputError(", ".join(req.files), [inside], req.bad.lines())
    console = Console(width=160)
    _print_traffic(console, req, s)
    fragment = plan_fragment(req, s)
    new_plan = _with_forecast(base, fragment)
    new = run_plan(new_plan)
    if plan_file is not None:
        console.print(_fleet_change(plan_file, run_plan(base), new))
    console.print("Outlook: " + _outlook(req, s, new_plan, new))
    contents = _contents(req, s, fragment, new_plan, plan_file, output, workbook)
    write_outputs(contents)
    if contents:
        console.print("wrote " + ", ".join(str(p) for p, _ in contents))


def _outputs(output: Path | None, workbook: Path | None) -> list[Output]:
    """The files the command will write: the YAML and its pictures, the workbook's."""
    from xlplan.excel.export import workbook_outputs
    from xlplan.report.traffic_report import picture_paths

    outputs = []
    if output is not None:
        outputs += [Output(output, "-o", YAML)] + [Output(p, "-o (its picture)", PNG) for p in picture_paths(output.with_suffix(""))]
    if workbook is not None:
        outputs += workbook_outputs(workbook, option="--workbook")
    return outputs


def _print_traffic(console, req, s) -> None:
    """The summary table, the summary's warnings and the bad rows left out."""
    from rich.table import Table

    from xlplan.report.traffic_report import summary_lines

    table = Table(title="Traffic from the log", show_header=False)
    for label, value in summary_lines(req, s):
        table.add_row(label, value)
    console.print(table)
    for w in s.warnings:
        console.print(f"[bold yellow]warning:[/] {w}")
    for line in req.bad.lines():
        console.print(f"[yellow]{line}[/]")


def _with_forecast(base, fragment: dict):
    """The plan with the log's forecast, its source and owner, and the measured growth (lead time and start kept)."""
    from xlplan.io.planfile import plan_from_mapping

    data = base.model_dump(exclude_none=True)
    data["forecast"] = {**data["forecast"], **fragment["forecast"]}  # what the log does not measure stays the plan's
    data.setdefault("sources", {})["forecast"] = fragment["sources"]["forecast"]
    data.setdefault("owners", {})["forecast"] = fragment["owners"]["forecast"]
    if "growth" in fragment:  # the measured growth, for `xlplan schedule` (the plan's lead time and start kept)
        data["growth"] = {**data.get("growth", {}), **fragment["growth"]}
        data["growth"].pop("peaks_rps", None)
    return plan_from_mapping(data, f"the forecast from the {fragment['owners']['forecast']}")  # names the log's files


def _fleet_change(plan_file: Path, old, new) -> str:
    """The Answer's fleet, binding and cost of the plan as written → with the log's forecast (the closed form, as
    ``xlplan plan --no-verify`` answers; the runbook's method is the note's). [text]"""
    a, b = old.answer, new.answer
    return (f"Fleet for {plan_file} ({b.source}): load {a.load} → {b.load}, with redundancy {a.with_redundancy} → "
            f"{b.with_redundancy}, purchased {a.purchased} → {b.purchased}; binding {a.binding} → {b.binding}; "
            f"${a.monthly_usd:,.0f} → ${b.monthly_usd:,.0f}/month")


def _outlook(req, s, new_plan, new) -> str:
    """When the growth outruns the Answer's load: the rate its GPUs hold by the closed form's inverse (all four paths,
    as ``xlplan capacity --no-verify`` prints). [text]"""
    from xlplan.decide.capacity import closed_form_capacity
    from xlplan.plan.scenario import resolve
    from xlplan.report.traffic_report import outlook

    gpus = new.answer.load
    cap = closed_form_capacity(resolve(new_plan), gpus, new_plan.policy.max_num_batched_tokens is not None)
    weeks = weeks_until(cap.max_peak_rps, s.peak_rps, s.weekly_growth)
    return outlook(s, weeks, cap.max_peak_rps, gpus, req.offset_s)


def _contents(req, s, fragment: dict, new_plan, plan_file: Path | None, output: Path | None, workbook: Path | None) -> list:
    """(path, content) of every file to write; without -o the YAML is printed instead."""
    import yaml

    from xlplan.excel.book import figures
    from xlplan.excel.export import workbook_files
    from xlplan.io.planfile import plan_to_yaml
    from xlplan.report.traffic_report import pictures, provenance

    text = plan_to_yaml(new_plan) if plan_file is not None else yaml.safe_dump(fragment, sort_keys=False, allow_unicode=True)
    contents = []
    counts = window_counts(req.arrival_t_s, s.window_s)
    if output is not None:
        contents += [(output, text), *pictures(req, s, output.with_suffix(""), counts)]
    else:
        typer.echo(text, nl=False)
    if workbook is not None:
        contents += workbook_files(figures(new_plan), workbook, traffic=(s, counts, req.prompt, req.output, provenance(req, s)))
    return contents
