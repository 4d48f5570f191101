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
def _options(ctx: typer.Context,
             version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                          help="Print the version and exit."),
             accept_implausible: list[str] = typer.Option(
                 [], "--accept-implausible", metavar="FIELD",
                 help="Plan a value outside its plausible range as given, e.g. `xlplan --accept-implausible "
                      "forecast.peak_rps plan big.yaml`; repeat for more fields. The note says what was accepted.")) -> None:
    """LLM-inference capacity planning: from a traffic forecast and a latency promise to a fleet, a bill and the binding constraint."""
    ctx.obj = {"accept_implausible": tuple(accept_implausible)}


PLAN_ARG = typer.Argument(None, help="Plan file (YAML or JSON); left out, the built-in reference plan (the runbook's worked example; `xlplan example` writes it as a starting point).")


def _current_context():
    """The running command's context: typer's own click (typer 0.22 and later carry it inside), else click's."""
    try:
        from typer._click.globals import get_current_context
    except ImportError:  # typer before 0.22 runs on the click package
        from click import get_current_context
    return get_current_context(silent=True)


def load(path: Path | None):
    """The plan in a file, or the built-in reference plan; fields given to ``--accept-implausible`` are accepted."""
    ctx = _current_context()
    root = ctx.find_root().obj if ctx is not None else None
    accepted = (root or {}).get("accept_implausible", ())
    if path is not None:
        return read_plan(path, accepted)
    ref = reference_plan()
    if not accepted:
        return ref
    from xlplan.plan import Plan

    return Plan.model_validate({**ref.model_dump(), "accept_implausible": list(accepted)})
