"""The typer application every command module registers on, and what they share: the plan argument and its loading."""

from __future__ import annotations

from pathlib import Path

import typer

from xlplan import __version__
from xlplan.io.planfile import read_plan, reference_plan

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="LLM-inference capacity planning: from a traffic forecast and a latency promise to a fleet, a bill and the binding constraint.",
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"xlplan {__version__}")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                          help="Print the version and exit.")) -> None:
    """LLM-inference capacity planning: from a traffic forecast and a latency promise to a fleet, a bill and the binding constraint."""


PLAN_ARG = typer.Argument(None, help="Plan file (YAML or JSON); left out, the built-in reference plan (the runbook's worked example; `xlplan example` writes it as a starting point).")


def load(path: Path | None):
    """The plan in a file, or the built-in reference plan."""
    return reference_plan() if path is None else read_plan(path)
