"""The audit view of a change: `xlplan diff OLD NEW`, on plan files or workbooks, prints what changed and what it changes."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import typer

from xlplan.cli.app import accepted_fields, app
from xlplan.cli.app import load as _load
from xlplan.io.errors import InputError
from xlplan.io.outputs import json_text

WORKBOOK_SUFFIXES = (".xlsx", ".xlsm")
PLAN_SECTIONS = ("forecast", "promise", "model", "hardware")


def read_either(path: Path):
    """The plan a plan file or a workbook (by its suffix) describes, each held to its plausible ranges unless accepted
    (``--accept-implausible``); a file with none of a plan's sections is named as such in one line."""
    if path.suffix.lower() in WORKBOOK_SUFFIXES:
        from xlplan.excel.reader import read_workbook

        return read_workbook(path, accept_implausible=accepted_fields())
    try:
        return _load(path)
    except InputError as e:
        missing = [s for s in PLAN_SECTIONS if f"{s}: missing; expected this field" in e.problems]
        if len(missing) == len(PLAN_SECTIONS):
            raise InputError(e.source, [(f"not a plan: none of {', '.join(PLAN_SECTIONS)} at the top level; expected a "
                                         "plan file (YAML or JSON, `xlplan example` writes one) or a workbook (.xlsx)")]) from None
        raise


@app.command("diff")
def diff_cmd(
    old: Path = typer.Argument(..., help="The plan before the change: a plan file (YAML or JSON) or a workbook (.xlsx)."),
    new: Path = typer.Argument(..., help="The plan after it: a plan file or a workbook."),
    verify: bool = typer.Option(True, "--verify/--no-verify", help=("Simulate both Answers at peak, as `xlplan plan` "
                                                                     "verifies its Answer (where affordable; seconds "
                                                                     "each), the default; --no-verify: the closed form alone.")),
    as_json: bool = typer.Option(False, "--json", help="Print the inputs changed and the consequences as JSON."),
) -> None:
    """The audit view: which inputs changed (with owner and source) and what that changes in the fleet, binding, bill
    and order dates. Exit status 0 when nothing differs, 1 when something does."""
    from xlplan.decide.diff import diff_plans

    before, after = read_either(old), read_either(new)
    out = diff_plans(before, after, verify, dt.date.today())
    if as_json:
        typer.echo(json_text(out.model_dump(mode="json")))
    else:
        for line in diff_lines(out, old, new):
            typer.echo(line)
    if out.differs:
        raise typer.Exit(1)


NULL_MEANS = {"policy.memory_utilisation": "(the engine's own default)"}
"""What an input's null stands for, where it is not nothing: a memory fraction left to the engine. [text]"""


def _value(v, unit: str = "", quoted: bool = True, path: str = "") -> str:
    """A value as a reviewer reads it: numbers grouped, an input's text quoted, nothing as '(none)' (or what a null
    stands for, :data:`NULL_MEANS`), the unit after."""
    if v is None:
        return NULL_MEANS.get(path, "(none)")
    if isinstance(v, bool):
        text = str(v).lower()
    elif isinstance(v, (int, float)):
        plain = f"{v:,.0f}" if float(v).is_integer() and abs(v) < 1e15 else f"{v:,.6g}"  # 1,000,000, never 1e+06
        text = f"${v:,.3f}" if unit == "USD/Mtok" else f"${v:,.0f}" if unit == "USD/month" else plain
        return text if unit.startswith("USD") else f"{text} {unit}".rstrip()
    elif isinstance(v, str):
        text = repr(v) if quoted else v
    else:
        text = str(v)
    return f"{text} {unit}".rstrip()


def _input_lines(change) -> list[str]:
    old, new = (_value(v, change.unit, path=change.path) for v in (change.old, change.new))
    lines = [f"  {change.path}: {old} → {new}"]
    if change.owner_section is None:
        return lines
    owner = change.owner + (f" → {change.new_owner}" if change.new_owner is not None else "")
    source = (change.source or "(none)") + (f" → {change.new_source or '(none)'}" if change.new_source is not None else "")
    return lines + [f"      owner ({change.owner_section}): {owner}; source: {source}"]


FIGURES = (("feasible", "plan can be met"), ("source", "fleet from"), ("load", "fleet, load"), ("with_redundancy", "with redundancy"),
           ("purchased", "purchased"), ("order", "what to order"), ("settings", "deploy"),
           ("binding", "binding (the Answer's, closed form)"),
           ("runbook_binding", "binding (the runbook's method)"), ("monthly_usd", "monthly bill"),
           ("usd_per_mtok", "$/M tokens"))


def diff_lines(out, old: Path, new: Path) -> list[str]:
    """The text report: the inputs changed, then each consequence old → new, 'unchanged' where equal."""
    c = out.consequences
    lines = [f"xlplan diff {old} {new}", "", f"Inputs changed: {len(out.inputs_changed) or 'none'}"]
    for change in out.inputs_changed:
        lines += _input_lines(change)
    how = ("each Answer simulated at peak" if c.method == "verified"
           else "the closed form on both plans, not simulated (--no-verify; without it both Answers are simulated)")
    lines += ["", f"Consequences ({how}):"]
    for name, label in FIGURES:
        f = getattr(c, name)
        shown = (f"{_value(f.old, f.unit, False)}, unchanged" if not f.changed
                 else f"{_value(f.old, f.unit, False)} → {_value(f.new, f.unit, False)}")
        lines.append(f"  {label + ':':<38}{shown}")
    if c.order_dates is not None:
        d = c.order_dates
        lines.append(f"  {'order dates:':<38}{'unchanged' if not d.changed else 'changed'}")
        if d.changed:
            lines += [f"    old  {x}" for x in d.old] + [f"    new  {x}" for x in d.new]
        else:
            lines += [f"    {x}" for x in d.old]
    if c.schedule_note:
        lines.append(f"  ({c.schedule_note})")
    lines += ["", "Differs: " + ("yes (exit status 1)" if out.differs else "no (exit status 0)")]
    return lines
