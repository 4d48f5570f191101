"""Commands on a plan: plan, example, capacity, catalog, schema."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import typer

from xlplan import catalog
from xlplan.cli.app import PLAN_ARG, ROUTING_OPTION, app, check_fleet_option, with_routing
from xlplan.cli.app import load as _load
from xlplan.io.errors import InputError
from xlplan.io.extras import require
from xlplan.io.outputs import JSON, MARKDOWN, PNG, YAML, Output, check_outputs, json_text, write_outputs
from xlplan.io.planfile import reference_plan_text


@app.command("plan")
def plan_cmd(
    plan_file: Path | None = PLAN_ARG,
    as_json: bool = typer.Option(False, "--json", help="Print the full result as JSON."),
    markdown: Path | None = typer.Option(None, "--markdown", help="Also write the note as Markdown to this file."),
    workbook: Path | None = typer.Option(None, "--workbook", help="Also write the capacity-note workbook (.xlsx) to this file."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --markdown or --workbook file."),
    verify: bool | None = typer.Option(None, "--verify/--no-verify", help="Simulate the fleet at peak (the default): the "
                                       "Answer is the fewest GPUs that keep the promise on three seeds, with the plan's "
                                       "redundancy lost mid-run; --no-verify gives the closed form alone, in a fraction of "
                                       "a second. With --markdown, a picture beside the note (NOTE.verified.png) where "
                                       "matplotlib is installed (--verify requires it)."),
    routing: str | None = ROUTING_OPTION,
) -> None:
    """Print the one-page capacity note for a plan."""
    from xlplan.decide.planner import plan
    from xlplan.excel.export import workbook_files, workbook_outputs
    from xlplan.io.verify_picture import picture_path, picture_png
    from xlplan.report.note import render_markdown, render_text

    simulate = verify is not False
    wants_picture = simulate and markdown is not None and (verify is True or _have_matplotlib())
    picture = picture_path(markdown) if wants_picture else None
    outputs = ([Output(markdown, "--markdown", MARKDOWN)] if markdown is not None else []) + \
        ([Output(picture, "--markdown (its picture)", PNG)] if picture is not None else []) + \
        (workbook_outputs(workbook, option="--workbook") if workbook is not None else [])
    check_outputs(outputs, force, inputs=[plan_file] if plan_file is not None else [])
    if picture is not None:
        require("matplotlib", command="plan --verify --markdown")
    p = with_routing(_load(plan_file), routing)
    result = plan(p, verify="auto" if verify is None else verify, as_of=p.date or dt.date.today().isoformat())
    contents = [(markdown, render_markdown(result))] if markdown is not None else []
    if picture is not None:
        v = result.verified
        if v is not None:
            contents.append((picture, picture_png(v.curve, p.promise.ttft_s, p.promise.itl, v.percentile, v.runbook_load, p.name)))
    if workbook is not None:
        from xlplan.excel.book import figures

        contents += workbook_files(figures(p, verify=result.verified is not None, result=result), workbook)
    write_outputs(contents)
    for path, _ in contents:
        typer.echo(f"wrote {path}", err=True)
    if as_json:  # led by what to order: the Answer's fleet and bill at the top (schema version 2)
        from xlplan.decide.output import plan_output

        typer.echo(json_text(plan_output(result).model_dump(mode="json")))
    else:
        typer.echo(render_text(result), nl=False)


def _have_matplotlib() -> bool:
    """Whether the picture beside a verified note can be drawn (matplotlib is an optional extra). [bool]"""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


@app.command("example")
def example_cmd(
    output: Path | None = typer.Option(None, "-o", "--output", help="Write here instead of standard output."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write the reference plan (the runbook's worked example) as a starting point."""
    text = reference_plan_text()
    if output is None:
        typer.echo(text, nl=False)
    else:
        check_outputs([Output(output, "-o", YAML)], force)
        write_outputs([(output, text)])
        typer.echo(f"wrote {output}")


@app.command("capacity")
def capacity_cmd(
    plan_file: Path | None = PLAN_ARG,
    gpus: int = typer.Option(..., "--gpus", min=1, help="GPUs serving the load (spares excluded). [GPUs]"),
    no_verify: bool = typer.Option(False, "--no-verify", help="Only the closed form's inverse, without simulating."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """The inverse question: the highest peak rate a given number of GPUs serves keeping the promise (simulated)."""
    from xlplan import words
    from xlplan.decide.capacity import plan_capacity

    p = _load(plan_file)
    check_fleet_option(p, gpus)
    r = plan_capacity(p, gpus, verify=not no_verify)
    if as_json:
        typer.echo(json_text(r.model_dump(exclude_none=True)))
        return
    four, cap = r.closed_form, r.closed_form.without_queueing
    per = ", ".join(f"{k} {v:,.2f}" for k, v in cap.per_path_rps.items())
    stops = "stop" if " and " in four.limited_by else "stops"
    closed_line = (f"the closed form says {four.max_peak_rps:,.2f} requests/s (TP {four.tp}); {four.limited_by} {stops} it "
                   f"first (without the queueing path {cap.max_peak_rps:,.2f}; by path [requests/s]: {per}).")
    if r.not_simulated:
        typer.echo(f"{words.count(gpus, 'GPU')}: {closed_line[0].upper()}{closed_line[1:]} (plan: {p.forecast.peak_rps:g}; {r.not_simulated})")
        return
    ver = r
    seeds = ", ".join(map(str, ver.seeds[:-1])) + f" and {ver.seeds[-1]}"
    idle = gpus - ver.replicas * ver.tp
    typer.echo(f"{words.count(gpus, 'GPU')} (TP {ver.tp}, {words.count(ver.replicas, 'replica')}"
               f"{f', {idle} idle' if idle else ''}) {words.verb(gpus, 'keeps', 'keep')} the "
               f"promise up to {ver.max_peak_rps:,.2f} requests/s at peak in simulation (on each of seeds {seeds}, "
               f"{ver.minutes:.3g} min of arrivals; {words.verb(gpus, 'it misses', 'they miss')} it at {ver.fails_at_rps:,.2f}); plan: {p.forecast.peak_rps:g}. Not simulated, {closed_line}")


@app.command("catalog")
def catalog_cmd(
    kind: str = typer.Argument(..., help="'gpus' or 'models'."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON, every field with its source."),
) -> None:
    """List the catalog of GPUs or models, with sources."""
    from xlplan import words
    from xlplan.catalog import parameters as architecture
    from xlplan.serving import memory
    from xlplan.words import readable_source

    if kind not in ("gpus", "models"):
        raise InputError("catalog", [f"kind: got {kind!r}; expected 'gpus' or 'models'"])
    if kind == "gpus":
        items = {k: catalog.get_gpu(k) for k in catalog.gpu_names()}
        if as_json:
            typer.echo(json.dumps({k: v.model_dump() for k, v in items.items()}, indent=2))
            return
        for k, g in items.items():
            fp8 = f"{g.fp8_tflops:g}" if g.fp8_tflops else "—"
            typer.echo(f"{k:10s} {g.name:28s} {g.memory_gib:7.2f} GiB  bf16 {g.bf16_tflops:7g}  fp8 {fp8:>6} TFLOP/s  "
                       f"{g.hbm_tbps:5g} TB/s  {words.hourly_price(g.usd_per_gpu_hour)}")
            typer.echo(f"{'':10s} source: {readable_source(g.source)}")
        return
    items = {k: catalog.get_model(k) for k in catalog.model_names()}
    if as_json:
        typer.echo(json.dumps({k: v.model_dump() for k, v in items.items()}, indent=2))
        return
    for k, m in items.items():
        typer.echo(f"{k:22s} {architecture.total_params(m) / 1e9:8.2f} B total  {architecture.active_params(m) / 1e9:7.2f} B active  "
                   f"KV {memory.kv_bytes_per_token(m, 'bf16'):>9,.0f} B/token (bf16)")
        typer.echo(f"{'':22s} source: {readable_source(m.source)}")


@app.command("schema")
def schema_cmd(output: Path | None = typer.Option(None, "-o", "--output", help="Write here instead of standard output."),
               force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
               result: bool = typer.Option(False, "--result", help="The JSON Schema of `plan --json`'s output instead (schema version 2).")) -> None:
    """Print the JSON Schema of plan files (or, with --result, of `plan --json`)."""
    from xlplan.schema.plan import plan_json_schema
    from xlplan.schema.result import PlanOutput

    text = json.dumps(PlanOutput.model_json_schema() if result else plan_json_schema(), indent=2) + "\n"
    if output is None:
        typer.echo(text, nl=False)
    else:
        check_outputs([Output(output, "-o", JSON)], force)
        write_outputs([(output, text)])
