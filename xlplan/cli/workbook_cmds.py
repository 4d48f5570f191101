"""The workbook: template, workbook, read, check."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from xlplan.cli import PLAN_ARG, app
from xlplan.cli import load as _load
from xlplan.io.errors import InputError
from xlplan.io.planfile import reference_plan, write_text_atomic

TEMPLATE_PATH = Path("workbook") / "capacity-plan.xlsx"


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
