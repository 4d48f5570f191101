"""The workbook: template, workbook, read, check."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from xlplan import words
from xlplan.cli.app import PLAN_ARG, accepted_fields, app
from xlplan.cli.app import load as _load
from xlplan.io.errors import InputError
from xlplan.io.outputs import WORKBOOK, YAML, Output, check_outputs, write_outputs
from xlplan.io.planfile import reference_plan

TEMPLATE_PATH = Path("workbook") / "capacity-plan.xlsx"


@app.command("template")
def template_cmd(
    output: Path | None = typer.Option(None, "-o", "--output", help=f"Where the template goes (.xlsx); left out, {TEMPLATE_PATH}, "
                                       "which is regenerated in place."),
    check: bool = typer.Option(False, "--check", help="Do not write: exit 1 if the file differs from a fresh build (CI drift check)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing -o file."),
) -> None:
    """Regenerate the template workbook (the reference plan, its Answer verified in simulation) from code.

    The template is never edited by hand: `--check` says whether the committed file is what the code builds."""
    from xlplan.excel.book import figures
    from xlplan.excel.export import workbook_for
    from xlplan.io import files

    target = TEMPLATE_PATH if output is None else output
    if check:
        data = workbook_for(figures(reference_plan(), verify=True))
        if not target.is_file():
            typer.echo(f"error: {target}: no such file; expected the template workbook (run from the checkout's "
                       "top folder, or give -o)", err=True)
            raise typer.Exit(2)
        if files.read_bytes(target, "the template workbook", files.WORKBOOK_MAX_BYTES) != data:
            typer.echo(f"{target} differs from a fresh build: run `xlplan template` and commit the result", err=True)
            raise typer.Exit(1)
        typer.echo(f"{target} is current")
        return
    # the default template is generated, never edited, so it is regenerated in place; any other file needs --force
    check_outputs([Output(target, "-o", WORKBOOK)], force or output is None)
    write_outputs([(target, workbook_for(figures(reference_plan(), verify=True)))])
    typer.echo(f"wrote {target}")


@app.command("workbook")
def workbook_cmd(
    plan_file: Path | None = PLAN_ARG,
    output: Path = typer.Option(..., "-o", "--output", help="The workbook to write (.xlsx)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
    pdf: Path | None = typer.Option(None, "--pdf", help="Also print the Summary and the six tabs to this PDF (needs LibreOffice)."),
    recalc: bool = typer.Option(False, "--recalc", help="Take the cached values from a forced LibreOffice recalculation instead of the engine."),
    formulas: str = typer.Option("native", "--formulas", help="'native' Excel formulas (any Excel, LibreOffice), or 'udf': key cells call the xlplan Excel functions (needs the add-in)."),
    namespace: str = typer.Option("", "--namespace", help="Prefix for calls to the xlplan functions as your add-in registers them: XLWINGS for xlwings Server's default (=XLWINGS.MEMORY_GPUS()); none for classic xlwings and Lite."),
    verify: bool = typer.Option(True, "--verify/--no-verify", help="Simulate the fleet at peak (the default): the Summary's Answer is the verified fleet, shaded, with a stale flag; --no-verify: the closed form."),
) -> None:
    """Write the capacity-note workbook for a plan: six tabs of live formulas, cached values, checks."""
    from xlplan.excel.book import figures
    from xlplan.excel.common import check_namespace
    from xlplan.excel.export import export

    if formulas not in ("native", "udf"):
        raise InputError("--formulas", [f"got {formulas!r}; expected 'native' or 'udf'"])
    try:
        check_namespace(namespace)
    except ValueError as e:
        raise InputError("--namespace", [str(e).split(": ", 1)[1]]) from None
    p = _load(plan_file)
    export(lambda: figures(p, verify="auto" if verify else False), output, force=force, pdf=pdf, recalc=recalc,
           formulas=formulas, namespace=namespace, inputs=(plan_file,) if plan_file is not None else ())
    typer.echo(f"wrote {output}" + (f" and {pdf}" if pdf is not None else ""))


@app.command("read")
def read_cmd(
    workbook: Path = typer.Argument(..., help="A filled-in capacity-note workbook (.xlsx)."),
    output: Path | None = typer.Option(None, "-o", "--output", help="Write the plan (YAML) here instead of standard output."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Read a workbook's inputs back into a validated plan file."""
    from xlplan.excel.reader import read_workbook
    from xlplan.io.planfile import plan_to_yaml

    if output is not None:
        check_outputs([Output(output, "-o", YAML)], force, inputs=[workbook])
    text = plan_to_yaml(read_workbook(workbook, accept_implausible=accepted_fields()))
    if output is None:
        typer.echo(text, nl=False)
    else:
        write_outputs([(output, text)])
        typer.echo(f"wrote {output}", err=True)


@app.command("check")
def check_cmd(
    workbook: Path = typer.Argument(..., help="A capacity-note workbook someone has edited (.xlsx)."),
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on any finding, changed inputs and uncomputed values too (what CI runs)."),
) -> None:
    """Audit a workbook: formulas against the template's, values against the engine's, the checks block. Exit 1 on a
    problem with the file (an overwritten formula, a failing check, a deleted name); inputs edited since the engine
    last ran are one finding, exit 0 (1 with --strict)."""
    from xlplan.excel.book import figures, whatif_row
    from xlplan.excel.check import REAL_PROBLEMS, check_workbook

    findings = check_workbook(workbook, figures, lambda p, s, whatifs: [whatif_row(p, s, w) for w in whatifs],
                              accepted_fields())
    problems = [f for f in findings if f.kind in REAL_PROBLEMS]
    if as_json:
        typer.echo(json.dumps([f.as_dict() for f in findings], indent=2))
    elif not findings:
        typer.echo(f"{workbook}: no findings: every formula is the template's, every value the engine's, every check passes")
    else:
        from rich.console import Console
        from rich.table import Table

        title = (f"{workbook}: {words.count(len(problems), 'problem')} with the file" if problems else
                 f"{workbook}: no problem with the file")
        if len(findings) > len(problems):
            title += f"; {words.count(len(findings) - len(problems), 'state')} an edit leaves (exit 1 with --strict)"
        table = Table(title=title, show_lines=False)
        for col in ("Where", "Finding", "Found", "Expected"):
            table.add_column(col, overflow="fold")
        for f in findings:
            table.add_row(f.where, f.kind, f.found, f.expected)
        Console(width=200).print(table)
    if problems or (strict and findings):
        raise typer.Exit(1)
