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


HELP_PANELS: dict[str, tuple[str, ...]] = {
    "Plan": ("plan", "capacity", "simulate", "example", "catalog", "schema"),
    "Check against reality": ("traffic", "validate", "calibrate", "confirm", "review"),
    "Decide": ("compare", "schedule", "diff"),
    "Workbook": ("workbook", "read", "check", "template"),
}
"""`xlplan --help` lists the commands by the job they do, in this order (the jobs of the README's command table)."""

CLICK_TYPE_NAMES = {"int": "INTEGER", "float": "FLOAT", "str": "TEXT", "path": "PATH", "bool": ""}
"""Typer's own type labels (`<int>`) shown as click and argparse show them (`INTEGER`); a flag shows none."""


def arrange_help() -> None:
    """Put every registered command in its panel of HELP_PANELS, in that order, and show option types the usual way
    (`--force`, `--gpus INTEGER`, `-o PATH`) where typer would print `<bool>` and `<int>`. Called once the command
    modules have registered; a command missing from HELP_PANELS is an error here, not a command --help leaves out."""
    order = [name for names in HELP_PANELS.values() for name in names]
    panel = {name: title for title, names in HELP_PANELS.items() for name in names}
    infos = app.registered_commands
    unplaced = sorted({i.name for i in infos} - set(order))
    if unplaced:
        raise RuntimeError(f"commands with no --help panel: {', '.join(unplaced)} (add them to HELP_PANELS)")
    for info in infos:
        info.rich_help_panel = panel[info.name]
    infos.sort(key=lambda i: order.index(i.name))
    _usual_option_types()


def _usual_option_types() -> None:
    try:
        from typer.core import TyperArgument, TyperOption
    except ImportError:  # a typer without its own parameter classes prints click's names already
        return
    for cls in (TyperOption, TyperArgument):
        _usual_type_of(cls)
    if hasattr(TyperArgument, "_usage_display_name") and not getattr(TyperArgument, "_xlplan_usual", False):
        def usage_name(self) -> str:  # click's form: PLAN_FILE required, [PLAN_FILE] optional, LOGS... repeated
            name = str(self.display_name_raw).upper()
            name = name if self.required else f"[{name}]"
            return name + ("..." if self.nargs != 1 else "")

        TyperArgument._usage_display_name = usage_name
        TyperArgument._xlplan_usual = True
        if hasattr(TyperArgument, "_rich_display_name"):
            plain = TyperArgument._rich_display_name
            TyperArgument._rich_display_name = lambda self: str(plain(self)).upper()


def _usual_type_of(cls) -> None:
    typer_label = getattr(cls, "display_type", None)
    if typer_label is None or getattr(typer_label, "_xlplan_usual", False):
        return

    def usual(self, ctx):
        if getattr(self, "is_flag", False):
            return ""
        if getattr(self, "metavar", None) and cls.__name__ == "TyperOption":
            return self.metavar
        label = str(typer_label(self, ctx)).strip("<>")
        inner = label[5:-1] if label.startswith("list[") and label.endswith("]") else label
        return CLICK_TYPE_NAMES.get(inner, inner.upper())

    usual._xlplan_usual = True
    cls.display_type = usual
    if hasattr(cls, "display_type_rich"):
        cls.display_type_rich = usual


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
ROUTING_OPTION = typer.Option(None, "--routing", help="The load balancer, in place of the plan's policy.routing: "
                              "least_loaded (the default), round_robin, random or least_kv. The queueing path and the simulation "
                              "both route by it, and the output names it.")


def with_routing(plan, routing: str | None):
    """The plan with ``--routing`` in place of its ``policy.routing``; a rule not in the list is one line, exit 2. [Plan]"""
    from xlplan.io.errors import InputError
    from xlplan.schema.policy import ROUTINGS

    if routing is None:
        return plan
    if routing not in ROUTINGS:
        expected = f"expected one of {', '.join(ROUTINGS)} (underscores, as in the plan file's policy.routing)"
        raise InputError("--routing", [f"got {routing!r}; {expected}"])
    return plan.model_copy(update={"policy": plan.policy.model_copy(update={"routing": routing})})


def _current_context():
    """The running command's context: typer's own click (typer 0.22 and later carry it inside), else click's."""
    try:
        from typer._click.globals import get_current_context
    except ImportError:  # typer before 0.22 runs on the click package
        from click import get_current_context
    return get_current_context(silent=True)


def accepted_fields() -> tuple[str, ...]:
    """The fields given to ``--accept-implausible`` on this command line; none outside a command. [text]"""
    ctx = _current_context()
    root = ctx.find_root().obj if ctx is not None else None
    return tuple((root or {}).get("accept_implausible", ()))


def load(path: Path | None):
    """The plan in a file, or the built-in reference plan; fields given to ``--accept-implausible`` are accepted."""
    accepted = accepted_fields()
    if path is not None:
        return read_plan(path, accepted)
    ref = reference_plan()
    if not accepted:
        return ref
    from xlplan.schema.plan import Plan

    return Plan.model_validate({**ref.model_dump(), "accept_implausible": list(accepted)})


def check_fleet_option(plan, gpus: int | None, option: str = "--gpus") -> None:
    """Refuse a fleet given on the command line past the answer's bound (:data:`xlplan.schema.plausibility.RESULT_BOUNDS`),
    before anything is simulated: ten million GPUs is a slip, which a simulation would take a minute to find.

    Parameters
    ----------
    plan : Plan
        The plan, whose ``accept_implausible`` may accept the bound.
    gpus : int or None
        The option's value; None when not given. [GPUs]
    option : str
        The option's name, as the line names it.

    Raises
    ------
    InputError
        Naming the option, the value, the bound and how to accept it.
    """
    from xlplan.io.errors import InputError
    from xlplan.schema import plausibility

    if gpus is None:
        return
    if gpus > plausibility.FLEET_CEILING_GPUS:
        raise InputError(option, [plausibility.past_ceiling(gpus)])
    past = plausibility.results(gpus, 0.0, plan.accept_implausible)
    if past:
        raise InputError(option, [past[0].message])
