"""From request logs to the forecast: traffic."""

from __future__ import annotations

from pathlib import Path

import typer

from xlplan.cli import app
from xlplan.cli import load as _load
from xlplan.io.errors import InputError
from xlplan.io.planfile import write_text_atomic


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
    if value <= 0:
        raise InputError("--window", [f"got {text!r}; expected a positive duration such as 60s, 5m or 1h"])
    return value


@app.command("traffic")
def traffic_cmd(
    logs: list[Path] = typer.Argument(..., help="Request logs: OpenAI usage JSONL, LiteLLM spend logs, CSV or Parquet; .gz read as is."),
    window: str = typer.Option("60s", "--window", help="Window the peak rate is averaged over: 60s, 5m, 1h."),
    output: Path | None = typer.Option(None, "-o", "--output", help="Write the forecast (or, with --plan, the updated plan) here as YAML; PNGs go beside it."),
    plan_file: Path | None = typer.Option(None, "--plan", help="Write the forecast into a copy of this plan and show how the fleet changes."),
    columns: str | None = typer.Option(None, "--columns", help="Map columns: timestamp=ts,prompt=in_tok,output=out_tok[,cached=c]."),
    strict: bool = typer.Option(False, "--strict", help="Any bad row is an error (default: counted, reported and left out)."),
    workbook: Path | None = typer.Option(None, "--workbook", help="Also write the capacity-note workbook with the traffic sheets."),
    force: bool = typer.Option(False, "--force", help="Overwrite existing output files."),
) -> None:
    """From request logs to the forecast: peak rate, p50/p95/p99 lengths, utilisation, prefix reuse, growth."""
    from rich.console import Console
    from rich.table import Table

    from xlplan.io.logs import parse_columns, read_logs
    from xlplan.io.planfile import plan_from_mapping, plan_to_yaml
    from xlplan.io.traffic_report import outlook, pictures, plan_fragment, provenance, summary_lines
    from xlplan.planner import plan as run_plan
    from xlplan.traffic import summarise

    win = _window_s(window)
    req = read_logs(logs, parse_columns(columns), strict=strict)
    s = summarise(req.t_s, req.prompt, req.output, req.cached, win, req.offset_s)
    console = Console(width=160)
    table = Table(title="Traffic from the log", show_header=False)
    for label, value in summary_lines(req, s):
        table.add_row(label, value)
    console.print(table)
    for w in s.warnings:
        console.print(f"[bold yellow]warning:[/] {w}")
    for line in req.bad.lines():
        console.print(f"[yellow]{line}[/]")
    fragment = plan_fragment(req, s)
    base = _load(plan_file)
    data = base.model_dump(exclude_none=True)
    data["forecast"] = fragment["forecast"]
    data.setdefault("sources", {})["forecast"] = fragment["sources"]["forecast"]
    data.setdefault("owners", {})["forecast"] = fragment["owners"]["forecast"]
    new_plan = plan_from_mapping(data, "forecast from the log")
    new = run_plan(new_plan)
    if plan_file is not None:
        old = run_plan(base)
        console.print(f"Fleet for {plan_file}: load {old.fleet.load} → {new.fleet.load}, with redundancy {old.fleet.with_redundancy} → "
                      f"{new.fleet.with_redundancy}, purchased {old.fleet.purchased} → {new.fleet.purchased}; binding {old.binding} → "
                      f"{new.binding}; ${old.cost.monthly_usd:,.0f} → ${new.cost.monthly_usd:,.0f}/month")
    from xlplan.capacity import capacity
    from xlplan.scenario import resolve

    cap = capacity(resolve(new_plan), new.fleet.load)
    console.print("Outlook: " + outlook(s, cap.max_peak_rps, new.fleet.load, req.offset_s))
    import yaml

    text = plan_to_yaml(new_plan) if plan_file is not None else yaml.safe_dump(fragment, sort_keys=False, allow_unicode=True)
    if output is not None:
        write_text_atomic(output, text, force=force)
        written = [output, *pictures(req, s, output.with_suffix(""))]
        console.print("wrote " + ", ".join(map(str, written)))
    else:
        typer.echo(text, nl=False)
    if workbook is not None:
        from xlplan.io.workbook.export import export

        export(new_plan, workbook, force=force, traffic=(s, req.t_s, req.prompt, req.output, provenance(req, s)))
        console.print(f"wrote {workbook}")
