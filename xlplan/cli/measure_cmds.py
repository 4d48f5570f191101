"""Checks against measurement: validate, calibrate, confirm."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import typer

from xlplan.cli.app import app
from xlplan.cli.app import load as _load
from xlplan.io.errors import InputError
from xlplan.io.planfile import read_plan, write_text_atomic

CORPORA = ("measurements", "silicon", "both")
"""What ``validate --corpus`` reads: the measurements corpus (or the file given), AIConfigurator's silicon sample, or both."""


@app.command("validate")
def validate_cmd(
    measurements: Path | None = typer.Argument(None, help="A CSV with the columns of the corpus (xlplan/data/measurements.csv); left out, that corpus."),
    as_json: bool = typer.Option(False, "--json", help="Print every check and the medians as JSON."),
    markdown: bool = typer.Option(False, "--markdown", help="Print the README's validation table (with leave-one-source-out)."),
    corpus: str = typer.Option("measurements", "--corpus", help=(
        "measurements: the corpus (or the file given); silicon: AIConfigurator's measured sample "
        "(xlplan/data/silicon_sample.csv.gz); both. Every row is scored at the shipped defaults and held out by "
        "deployment and by model (JSON: headline_leave_one_deployment_out, median_absolute_error_by_deployment, "
        "median_absolute_error_by_model, by_deployment_checks, by_model_checks). With the sample, calibration within a "
        "deployment is not scored.")),
    limit: int | None = typer.Option(None, "--limit", min=1, help=(
        "Read N rows of the silicon sample, evenly spaced through it (every row of the corpus is read). [rows]")),
) -> None:
    """Predict each published measurement from its stated conditions with the planner's serving model; show the errors."""
    from rich.console import Console
    from rich.table import Table

    from xlplan.evidence.bench_conditions import Efficiencies
    from xlplan.evidence.validation import CATEGORIES, medians
    from xlplan.io.measurement_table import MeasurementTable, read_measurement_table
    from xlplan.io.measurements import CORPUS, measured_rows
    from xlplan.report.validation_report import build, build_rows, current, row_counts, summary_lines

    if corpus not in CORPORA:
        raise InputError("--corpus", [f"got {corpus!r}; expected {', '.join(map(repr, CORPORA))}"])
    if measurements is not None and corpus == "silicon":
        raise InputError("--corpus", ["a measurements file is read with --corpus measurements or both; silicon reads the sample alone"])
    if limit is not None and corpus == "measurements":
        raise InputError("--limit", ["takes rows of the silicon sample: give --corpus silicon or both"])
    eff = Efficiencies()
    table = read_measurement_table(measurements or CORPUS) if corpus != "silicon" else MeasurementTable([], [], [])
    rows = table.rows
    sample = _silicon_rows(limit) if corpus != "measurements" else []
    report = build(rows) if corpus == "measurements" else build_rows(measured_rows(rows) + sample)
    checks = report.in_sample
    problems = [f"left out: {x}" for x in table.left_out] + [f"skipped: {x}" for x in table.skipped_cells]
    for line in problems:
        typer.echo(f"warning: {measurements or CORPUS}: {line}", err=True)
    if as_json:
        read = {"measurements": len(rows), "silicon": len(sample)}
        typer.echo(json.dumps({"corpus": corpus, "rows_read": read} | _validate_json(report, checks, table, eff), indent=2))
        return
    if markdown:
        from xlplan.report.validation_report import markdown as readme_table

        typer.echo(readme_table(report), nl=False)
        return
    console = Console(width=170)
    console.print("Efficiencies: the engine's defaults for each row's GPU vendor and engine (xlplan/data/efficiencies.yaml, "
                  "fitted on the corpus). Each table's error is at those defaults (in-sample for the corpus' rows"
                  + ("; the silicon sample's were not fitted" if sample else "") + "); the headline at the end "
                  "leaves each row's deployment (model × GPU × engine) out of the fit.")
    med = medians([c for c in current(report, checks) if c.kind != "ttft"])  # as the README's category table
    at = "in-sample" if report.corpus else "at the shipped defaults"  # fitted on the corpus: in-sample for its rows only
    for category, title in dict.fromkeys(CATEGORIES.items()):
        sel = [c for c in checks if c.category == category]
        if not sel:
            continue
        shown = f"{title} ({category})"
        table = Table(title=f"{shown} — median |error| {med[category]:.1%} {at} (TTFT apart)" if category in med else shown)
        for col in ("Row", "Figure", "Predicted", "Measured", f"Error ({at})", "Note"):
            table.add_column(col, overflow="fold")
        for c in sel:
            note = (f"older engine release: validated, not fitted; {c.note}" if c.id in report.superseded else c.note)
            if c.skipped:
                table.add_row(c.id, "skipped", "", "", "", c.skipped)
            else:
                table.add_row(c.id, c.metric, f"{c.predicted:,.2f}", f"{c.measured:,.2f}", f"{c.relative_error:+.1%}", note)
        console.print(table)
    rows_n, predicted_n, skipped_n = row_counts(checks)
    console.print(f"{rows_n} rows: {predicted_n} predicted ({len(report.superseded)} of older engine releases, "
                  f"validated but not fitted nor in the headline), {skipped_n} skipped with the reason")
    for line in summary_lines(report):
        console.print(line)


def _silicon_rows(limit: int | None) -> list:
    """The silicon sample as read (:mod:`xlplan.io.silicon_sample`), or ``limit`` of its rows evenly spaced through it."""
    from xlplan.io.silicon_sample import measured_rows, read_sample

    rows = read_sample()
    if limit is not None and limit < len(rows):
        rows = [rows[k * len(rows) // limit] for k in range(limit)]
    return measured_rows(rows)


def _validate_json(report, checks, table, eff) -> dict:
    """validate --json: the headline, the medians both ways, every check, and the rows left out and cells skipped."""
    from xlplan.evidence.validation import as_json as checks_json
    from xlplan.evidence.validation import headline, medians
    from xlplan.report.validation_report import current, held_out_median

    now = current(report, report.left_out)
    out = {"headline_leave_one_deployment_out": held_out_median(report, report.by_deployment),
           "median_absolute_error_by_deployment": {k: held_out_median(report, report.by_deployment, (k,))
                                                   for k in ("throughput", "latency", "ttft")},
           "median_absolute_error_by_model": {k: held_out_median(report, report.by_model, (k,))
                                              for k in ("throughput", "latency", "ttft")},
           "headline_leave_one_source_out": headline(now),
           "median_absolute_error_left_out": medians(now),
           "median_absolute_error_in_sample": medians(current(report, checks)),
           "leave_one_source_out_with_older_releases": headline(report.left_out),
           "older_releases_not_fitted": sorted(report.superseded),
           "calibration_within_deployment": [asdict(p) for p in report.calibration],
           "rows_left_out": table.left_out, "cells_skipped": table.skipped_cells}
    out |= checks_json(checks, eff) | {"left_out_checks": [asdict(c) for c in report.left_out],
                                       "by_deployment_checks": [asdict(c) for c in report.by_deployment],
                                       "by_model_checks": [asdict(c) for c in report.by_model]}
    return out


@app.command("calibrate")
def calibrate_cmd(
    results: list[Path] = typer.Argument(..., help="Benchmark results: vllm bench serve --save-result JSON, GuideLLM report JSON, genai-perf profile export."),
    plan_file: Path | None = typer.Option(None, "--plan", help="The plan whose model, GPU and dtypes were benchmarked (default: the reference plan)."),
    tp: int | None = typer.Option(None, "--tp", min=1, help="GPUs per replica in the benchmark (default: the plan's TP, else 1). [GPUs]"),
    output: Path | None = typer.Option(None, "-o", "--output", help="Write the calibrated plan (YAML) here."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Fit prefill MFU, decode MFU, bandwidth efficiency and the per-step overhead to your benchmark; write them as the plan's policy."""
    from xlplan.io.extras import require

    require("scipy", command="calibrate")
    if tp is not None:  # the degree the benchmark ran at, held to the plan's own range for it
        from xlplan.schema import plausibility

        if (slip := plausibility.finding("policy.tp", tp)) is not None:
            raise InputError("--tp", [slip.replace("policy.tp: ", "", 1)])
    if output is not None:  # before any work, and never one of the files read (--force does not make it one)
        from xlplan.io.outputs import YAML, Output, check_outputs

        check_outputs([Output(output, "-o", YAML)], force, inputs=[*results, *([plan_file] if plan_file else [])])
    from xlplan.decide.planner import plan as run_plan
    from xlplan.evidence.bench_conditions import conditions_of_plan
    from xlplan.evidence.calibrate import fit
    from xlplan.io.bench_results import read_results
    from xlplan.io.planfile import plan_to_yaml

    base = _load(plan_file)
    degree = tp or base.policy.tp or 1
    runs = read_results(results, plan_model=base.model.name)
    for w in getattr(runs, "warnings", []):
        typer.echo(f"warning: {w}", err=True)
    from xlplan.evidence.calibrate_map import ImplausibleFit

    try:
        f = fit(runs, conditions_of_plan(base, degree))
    except ImplausibleFit as e:
        raise InputError(e.runs, [e.why]) from None
    for line in _fit_lines(runs, f, degree):
        typer.echo(line)
    calibrated = _calibrated(base, f, ", ".join(p.name for p in results), len(runs), degree)
    r = run_plan(calibrated)
    lo, hi = r.fleet.calibrated_low, r.fleet.calibrated_high
    typer.echo(f"Fleet with the calibrated efficiencies: {r.fleet.with_redundancy} GPUs ({r.fleet.purchased} purchased); "
               f"range {hi.with_redundancy if hi.feasible else 'infeasible'} to {lo.with_redundancy if lo.feasible else 'infeasible'}")
    if output is not None:
        write_text_atomic(output, plan_to_yaml(calibrated), force=force)
        typer.echo(f"wrote {output}")


def _fit_lines(runs, f, degree: int) -> list[str]:
    """Each run as read, then the fitted efficiencies with their ranges and the fit's notes."""
    lines = []
    for r in runs:
        ttft = f"{r.ttft_s * 1e3:,.1f} ms" if r.ttft_s else "—"
        itl = f"{r.itl_s * 1e3:,.2f} ms" if r.itl_s else "—"
        conc = "offline" if r.concurrency is None else f"concurrency {r.concurrency:g}"
        lines.append(f"  {r.source}: {conc}, {r.isl:,.0f} in / {r.osl:,.0f} out, TTFT {ttft}, ITL {itl}")
    e = f.efficiencies

    def shown(field: str, value: str, span: tuple[float, float], unit: str = "") -> str:
        if field in f.held:
            return f"{value} (default: held, the fit would be implausible)"
        if field not in f.identified:
            return f"{value} (default: not identified)"
        return f"{value} (95% interval {span[0]:.3f}-{span[1]:.3f}{unit})"

    lines.append(f"Fitted on {len(runs)} run(s), TP {degree}, the engine's defaults as the prior: "
                 f"prefill MFU {shown('prefill_mfu', f'{e.prefill_mfu:.3f}', f.prefill_range)}, "
                 f"decode MFU {shown('decode_mfu', f'{e.decode_mfu:.3f}', f.decode_range)}, "
                 f"bandwidth efficiency {shown('bandwidth_efficiency', f'{e.bandwidth_efficiency:.3f}', f.bandwidth_range)}, "
                 f"step overhead {e.step_overhead_s * 1e3:.2f} ms"
                 + (f" (95% interval {f.overhead_range_s[0] * 1e3:.2f}-{f.overhead_range_s[1] * 1e3:.2f} ms)"
                    if "step_overhead_s" in f.identified else " (default: held, the fit would be implausible)"
                    if "step_overhead_s" in f.held else " (default: not identified)")
                 + f"; median |error| at the fit {f.median_error:.1%}")
    return lines + [f"  note: {note}" for note in f.notes]


def _calibrated(base, f, names: str, runs: int, degree: int):
    """The plan with the fitted efficiencies as its policy, and where they came from (a real engine's rules apply)."""
    from pydantic import ValidationError

    from xlplan.io.errors import describe_validation_error
    from xlplan.schema.plan import Plan

    e = f.efficiencies
    data = base.model_dump(exclude_none=True)
    data["policy"].update(prefill_mfu=e.prefill_mfu, decode_mfu=e.decode_mfu, bandwidth_efficiency=e.bandwidth_efficiency,
                          step_overhead_s=e.step_overhead_s,
                          calibration={"source": f"{names} ({runs} runs, TP {degree})", "runs": runs,
                                       "prefill_mfu_range": list(f.prefill_range), "decode_mfu_range": list(f.decode_range),
                                       "bandwidth_efficiency_range": list(f.bandwidth_range)})
    if data["policy"].get("engine") == "runbook":
        data["policy"]["engine"] = "vllm"  # a benchmark ran on a real engine: its memory rule and budgets apply
    try:
        return Plan.model_validate(data)
    except ValidationError as err:
        raise InputError(names, [("the fitted efficiencies are not fractions of peak — the runs are faster than the roofline "
                                 "allows; check the plan's GPU, TP degree and dtypes against the benchmark")]
                         + describe_validation_error(err)) from None


@app.command("confirm")
def confirm_cmd(
    scrapes: list[Path] = typer.Argument(..., help="Prometheus text-format scrapes of a vLLM or SGLang server, in time order."),
    plan_file: Path | None = typer.Option(None, "--plan", help="The plan whose binding constraint production should confirm."),
    interval: float = typer.Option(15.0, "--interval", min=0.001, help="Seconds between scrapes. [s]"),
    as_json: bool = typer.Option(False, "--json", help="Print the evidence and the verdict as JSON."),
    verify: bool | None = typer.Option(None, "--verify/--no-verify", help="With --plan: the Answer as `xlplan plan` gives "
                                       "it, verified in simulation where affordable (the default); --no-verify takes "
                                       "the closed form's binding."),
) -> None:
    """Which constraint binds in production, from the two gauges: cache utilisation and preemptions vs queueing with a comfortable cache."""
    from dataclasses import asdict

    from xlplan.evidence.confirm import agrees_with_plan, evidence, verdict
    from xlplan.io.metrics import read_scrapes

    e = evidence(read_scrapes(scrapes, interval))
    found, why = verdict(e)
    planned = None
    if plan_file is not None:
        from xlplan.decide.planner import plan

        r = plan(read_plan(plan_file), verify="auto" if verify is None else verify)
        planned = r.answer.binding if r.answer is not None else r.binding  # the Answer's: what the fleet is sized by
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
        typer.echo(f"This {word} the plan's Answer, which says {planned} binds.")
