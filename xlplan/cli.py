"""The command line: ``xlplan plan``, ``example``, ``capacity``, ``catalog``, ``schema``.

A thin layer: it reads files, calls the planner and prints. Bad input exits with
status 2 and one line per problem, never a traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from xlplan import catalog
from xlplan.io.errors import InputError
from xlplan.io.planfile import read_plan, reference_plan, reference_plan_text, write_text_atomic
from xlplan.steps import PlanningError

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="LLM-inference capacity planning: from a traffic forecast and a latency promise to a fleet, a bill and the binding constraint.",
)

PLAN_ARG = typer.Argument(None, help="Plan file (YAML or JSON); left out, the built-in reference plan (the runbook's worked example).")


def _load(path: Path | None):
    return reference_plan() if path is None else read_plan(path)


@app.command("plan")
def plan_cmd(
    plan_file: Path | None = PLAN_ARG,
    as_json: bool = typer.Option(False, "--json", help="Print the full result as JSON."),
    markdown: Path | None = typer.Option(None, "--markdown", help="Also write the note as Markdown to this file."),
    workbook: Path | None = typer.Option(None, "--workbook", help="Also write the capacity-note workbook (.xlsx) to this file."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --markdown or --workbook file."),
) -> None:
    """Print the one-page capacity note for a plan."""
    from xlplan.note import render_markdown, render_text
    from xlplan.planner import plan

    p = _load(plan_file)
    result = plan(p)
    if markdown is not None:
        write_text_atomic(markdown, render_markdown(result), force=force)
    if workbook is not None:
        from xlplan.io.workbook.export import export

        export(p, workbook, force=force)
        typer.echo(f"wrote {workbook}", err=True)
    if as_json:
        typer.echo(json.dumps(result.model_dump(mode="json"), indent=2))
    else:
        typer.echo(render_text(result), nl=False)


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
        write_text_atomic(output, text, force=force)
        typer.echo(f"wrote {output}")


@app.command("capacity")
def capacity_cmd(
    plan_file: Path | None = PLAN_ARG,
    gpus: int = typer.Option(..., "--gpus", min=1, help="GPUs serving the load (spares excluded). [GPUs]"),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """The inverse question: the highest peak rate a given number of GPUs sustains under the promise."""
    from xlplan.capacity import capacity
    from xlplan.scenario import resolve

    p = _load(plan_file)
    cap = capacity(resolve(p), gpus)
    if as_json:
        typer.echo(json.dumps({"gpus": cap.gpus, "tp": cap.tp, "max_peak_rps": cap.max_peak_rps, "limited_by": cap.limited_by,
                               "per_path_rps": cap.per_path_rps}, indent=2))
        return
    per = ", ".join(f"{k} {v:,.2f}" for k, v in cap.per_path_rps.items())
    typer.echo(f"{gpus} GPUs (TP {cap.tp}) sustain at most {cap.max_peak_rps:,.2f} requests/s at peak "
               f"under the promise (plan: {p.forecast.peak_rps:g}); {cap.limited_by} stops it first. By path [requests/s]: {per}.")


@app.command("catalog")
def catalog_cmd(
    kind: str = typer.Argument(..., help="'gpus' or 'models'."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON, every field with its source."),
) -> None:
    """List the catalog of GPUs or models, with sources."""
    from xlplan import architecture, memory

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
                       f"{g.hbm_tbps:5g} TB/s  ${g.usd_per_gpu_hour or 0:.2f}/h")
            typer.echo(f"{'':10s} source: {g.source}")
        return
    items = {k: catalog.get_model(k) for k in catalog.model_names()}
    if as_json:
        typer.echo(json.dumps({k: v.model_dump() for k, v in items.items()}, indent=2))
        return
    for k, m in items.items():
        typer.echo(f"{k:22s} {architecture.total_params(m) / 1e9:8.2f} B total  {architecture.active_params(m) / 1e9:7.2f} B active  "
                   f"KV {memory.kv_bytes_per_token(m, 'bf16'):>9,.0f} B/token (bf16)")
        typer.echo(f"{'':22s} source: {m.source}")


@app.command("schema")
def schema_cmd(output: Path | None = typer.Option(None, "-o", "--output", help="Write here instead of standard output."),
               force: bool = typer.Option(False, "--force", help="Overwrite an existing file.")) -> None:
    """Print the JSON Schema of plan files."""
    from xlplan.plan import plan_json_schema

    text = json.dumps(plan_json_schema(), indent=2) + "\n"
    if output is None:
        typer.echo(text, nl=False)
    else:
        write_text_atomic(output, text, force=force)


TEMPLATE_PATH = Path("workbook") / "capacity-plan.xlsx"


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


@app.command("template")
def template_cmd(
    output: Path = typer.Option(TEMPLATE_PATH, "-o", "--output", help="Where the template goes."),
    check: bool = typer.Option(False, "--check", help="Do not write: exit 1 if the file differs from a fresh build (CI drift check)."),
) -> None:
    """Regenerate the template workbook (the reference plan's inputs) from code; it is never edited by hand."""
    from xlplan.io.workbook.export import workbook_for_plan
    from xlplan.io.workbook.writer import write_atomic

    data = workbook_for_plan(reference_plan())
    if check:
        if not output.exists() or output.read_bytes() != data:
            typer.echo(f"{output} differs from a fresh build: run `xlplan template` and commit the result", err=True)
            raise typer.Exit(1)
        typer.echo(f"{output} is current")
        return
    write_atomic(output, data, force=True)
    typer.echo(f"wrote {output}")


@app.command("workbook")
def workbook_cmd(
    plan_file: Path | None = PLAN_ARG,
    output: Path = typer.Option(..., "-o", "--output", help="The workbook to write (.xlsx)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
    pdf: bool = typer.Option(False, "--pdf", help="Also write OUTPUT.pdf of the six tabs (needs LibreOffice)."),
    recalc: bool = typer.Option(False, "--recalc", help="Take the cached values from a forced LibreOffice recalculation instead of the engine."),
    formulas: str = typer.Option("native", "--formulas", help="'native' Excel formulas (any Excel, LibreOffice), or 'udf': key cells call the xlplan Excel functions (needs the add-in)."),
    namespace: str = typer.Option("", "--namespace", help="Prefix for calls to the xlplan functions as your add-in registers them: XLWINGS for xlwings Server's default (=XLWINGS.MEMORY_GPUS()); none for classic xlwings and Lite."),
) -> None:
    """Write the capacity-note workbook for a plan: six tabs of live formulas, cached values, checks."""
    from xlplan.io.workbook.common import check_namespace
    from xlplan.io.workbook.export import export

    if formulas not in ("native", "udf"):
        raise InputError("--formulas", [f"got {formulas!r}; expected 'native' or 'udf'"])
    try:
        check_namespace(namespace)
    except ValueError as e:
        raise InputError("--namespace", [str(e).split(": ", 1)[1]]) from None
    p = _load(plan_file)
    export(p, output, force=force, pdf=pdf, recalc=recalc, formulas=formulas, namespace=namespace)
    typer.echo(f"wrote {output}" + (f" and {output.with_suffix('.pdf')}" if pdf else ""))


@app.command("read")
def read_cmd(
    workbook: Path = typer.Argument(..., help="A filled-in capacity-note workbook (.xlsx)."),
    output: Path | None = typer.Option(None, "-o", "--output", help="Write the plan (YAML) here instead of standard output."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Read a workbook's inputs back into a validated plan file."""
    from xlplan.io.planfile import plan_to_yaml
    from xlplan.io.workbook.reader import read_workbook

    text = plan_to_yaml(read_workbook(workbook))
    if output is None:
        typer.echo(text, nl=False)
    else:
        write_text_atomic(output, text, force=force)
        typer.echo(f"wrote {output}", err=True)


@app.command("check")
def check_cmd(
    workbook: Path = typer.Argument(..., help="A capacity-note workbook someone has edited (.xlsx)."),
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
) -> None:
    """Audit a workbook: formulas against the template's, values against the engine's, the checks block. Exit 1 on findings."""
    from xlplan.io.workbook.check import check_workbook

    findings = check_workbook(workbook)
    if as_json:
        typer.echo(json.dumps([f.as_dict() for f in findings], indent=2))
    elif not findings:
        typer.echo(f"{workbook}: no findings: every formula is the template's, every value the engine's, every check passes")
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"{workbook}: {len(findings)} finding(s)", show_lines=False)
        for col in ("Where", "Finding", "Found", "Expected"):
            table.add_column(col, overflow="fold")
        for f in findings:
            table.add_row(f.where, f.kind, f.found, f.expected)
        Console(width=200).print(table)
    if findings:
        raise typer.Exit(1)


@app.command("validate")
def validate_cmd(
    measurements: Path = typer.Argument(..., help="A CSV in the schema of shared/reference/measurements-public.csv."),
    as_json: bool = typer.Option(False, "--json", help="Print every check and the medians as JSON."),
) -> None:
    """Predict each published measurement with the engine and show the relative error, by category."""
    from rich.console import Console
    from rich.table import Table

    from xlplan.io.measurements import CATEGORIES, medians, read_measurements, validate
    from xlplan.io.measurements import as_json as checks_json
    from xlplan.predict import Efficiencies

    eff = Efficiencies()
    checks = validate(read_measurements(measurements), eff)
    if as_json:
        typer.echo(json.dumps(checks_json(checks, eff), indent=2))
        return
    console = Console(width=170)
    console.print(f"Efficiencies (global defaults): prefill MFU {eff.prefill_mfu:.2f}, decode MFU {eff.decode_mfu:.2f}, "
                  f"bandwidth {eff.bandwidth_efficiency:.2f}")
    med = medians(checks)
    for category, title in dict.fromkeys(CATEGORIES.items()):
        rows = [c for c in checks if c.category == category]
        if not rows:
            continue
        table = Table(title=f"{title} — median |error| {med[category]:.1%}" if category in med else title)
        for col in ("Row", "Figure", "Predicted", "Measured", "Error", "Note"):
            table.add_column(col, overflow="fold")
        for c in rows:
            if c.skipped:
                table.add_row(c.id, "skipped", "", "", "", c.skipped)
            else:
                table.add_row(c.id, c.metric, f"{c.predicted:,.2f}", f"{c.measured:,.2f}", f"{c.relative_error:+.1%}", c.note)
        console.print(table)
    for kind in ("capacity", "throughput", "latency"):
        if kind in med:
            console.print(f"median |error|, {kind}: {med[kind]:.1%}")


@app.command("calibrate")
def calibrate_cmd(
    results: list[Path] = typer.Argument(..., help="Benchmark results: vllm bench serve --save-result JSON, GuideLLM report JSON, genai-perf profile export."),
    plan_file: Path | None = typer.Option(None, "--plan", help="The plan whose model, GPU and dtypes were benchmarked (default: the reference plan)."),
    tp: int | None = typer.Option(None, "--tp", min=1, help="GPUs per replica in the benchmark (default: the plan's TP, else 1). [GPUs]"),
    output: Path | None = typer.Option(None, "-o", "--output", help="Write the calibrated plan (YAML) here."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Fit prefill MFU, decode MFU and bandwidth efficiency to your benchmark; write them as the plan's policy."""
    from pydantic import ValidationError

    from xlplan.calibrate import fit
    from xlplan.io.bench_results import read_results
    from xlplan.io.errors import describe_validation_error
    from xlplan.io.planfile import plan_to_yaml
    from xlplan.plan import Plan
    from xlplan.planner import plan as run_plan
    from xlplan.predict import hardware_from_scenario
    from xlplan.scenario import resolve

    base = _load(plan_file)
    degree = tp or base.policy.tp or 1
    runs = read_results(results)
    f = fit(hardware_from_scenario(resolve(base), degree), runs)
    for r in runs:
        side = f.sides.get(r.source, "—")
        ttft = f"{r.ttft_s * 1e3:,.1f} ms" if r.ttft_s else "—"
        itl = f"{r.itl_s * 1e3:,.2f} ms" if r.itl_s else "—"
        typer.echo(f"  {r.source}: concurrency {r.concurrency:g}, {r.isl:,.0f} in / {r.osl:,.0f} out, TTFT {ttft}, ITL {itl} ({side}-bound)")
    e = f.efficiencies
    typer.echo(f"Fitted on {len(runs)} run(s), TP {degree}: prefill MFU {e.prefill_mfu:.3f} ({f.prefill_range[0]:.3f}-{f.prefill_range[1]:.3f}), "
               f"decode MFU {e.decode_mfu:.3f} ({f.decode_range[0]:.3f}-{f.decode_range[1]:.3f}), bandwidth efficiency "
               f"{e.bandwidth_efficiency:.3f} ({f.bandwidth_range[0]:.3f}-{f.bandwidth_range[1]:.3f})")
    for note in f.notes:
        typer.echo(f"  note: {note}")
    names = ", ".join(p.name for p in results)
    data = base.model_dump(exclude_none=True)
    data["policy"].update(prefill_mfu=e.prefill_mfu, decode_mfu=e.decode_mfu, bandwidth_efficiency=e.bandwidth_efficiency,
                          calibration={"source": f"{names} ({len(runs)} runs, TP {degree})", "runs": len(runs),
                                       "prefill_mfu_range": list(f.prefill_range), "decode_mfu_range": list(f.decode_range),
                                       "bandwidth_efficiency_range": list(f.bandwidth_range)})
    try:
        calibrated = Plan.model_validate(data)
    except ValidationError as err:
        raise InputError(names, ["the fitted efficiencies are not fractions of peak — the runs are faster than the roofline "
                                 "allows; check the plan's GPU, TP degree and dtypes against the benchmark"]
                         + describe_validation_error(err)) from None
    r = run_plan(calibrated)
    lo, hi = r.fleet.calibrated_low, r.fleet.calibrated_high
    typer.echo(f"Fleet with the calibrated efficiencies: {r.fleet.with_redundancy} GPUs ({r.fleet.purchased} purchased); "
               f"range {hi.with_redundancy if hi.feasible else 'infeasible'} to {lo.with_redundancy if lo.feasible else 'infeasible'}")
    if output is not None:
        write_text_atomic(output, plan_to_yaml(calibrated), force=force)
        typer.echo(f"wrote {output}")


@app.command("confirm")
def confirm_cmd(
    scrapes: list[Path] = typer.Argument(..., help="Prometheus text-format scrapes of a vLLM or SGLang server, in time order."),
    plan_file: Path | None = typer.Option(None, "--plan", help="The plan whose binding constraint production should confirm."),
    interval: float = typer.Option(15.0, "--interval", min=0.001, help="Seconds between scrapes. [s]"),
    as_json: bool = typer.Option(False, "--json", help="Print the evidence and the verdict as JSON."),
) -> None:
    """Which constraint binds in production, from the two gauges: cache utilisation and preemptions vs queueing with a comfortable cache."""
    from dataclasses import asdict

    from xlplan.confirm import agrees_with_plan, verdict
    from xlplan.io.metrics import read_scrapes

    e = read_scrapes(scrapes, interval)
    found, why = verdict(e)
    planned = None
    if plan_file is not None:
        from xlplan.planner import plan

        planned = plan(read_plan(plan_file)).binding
    if as_json:
        out = {"verdict": found, "why": why, "evidence": asdict(e)}
        if planned is not None:
            out.update(plan_binding=planned, agrees=agrees_with_plan(found, planned))
        typer.echo(json.dumps(out, indent=2))
        return
    gen = f"{e.generation_tok_s:,.0f} output tokens/s" if e.generation_tok_s is not None else "no token counters"
    typer.echo(f"{e.scrapes} scrapes over {e.seconds:,.0f} s: cache utilisation p50 {e.cache_p50:.0%}, p95 {e.cache_p95:.0%}; "
               f"{e.preemptions_per_s:.3f} preemptions/s; waiting p50 {e.waiting_p50:g} (max {e.waiting_max:g}); "
               f"running p50 {e.running_p50:g}; {gen}")
    typer.echo(f"Binds in production: {found} — {why}")
    if planned is not None:
        word = "agrees with" if agrees_with_plan(found, planned) else "does not confirm"
        typer.echo(f"This {word} the plan, which says {planned} binds.")


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, turning bad input into exit status 2 and clear lines."""
    try:
        app(args=argv, prog_name="xlplan")  # standalone: usage errors print the usage line and exit 2
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except InputError as e:
        typer.echo(f"error: {e.source}: {len(e.problems)} problem(s)", err=True)
        for p in e.problems:
            typer.echo(f"  {p}", err=True)
        return 2
    except PlanningError as e:
        typer.echo(f"error: cannot plan: {e}", err=True)
        return 2
    except catalog.UnknownNameError as e:
        typer.echo(f"error: {e}", err=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
