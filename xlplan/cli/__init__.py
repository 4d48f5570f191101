"""The command line: ``xlplan plan``, ``workbook``, ``traffic``, ``validate``... one module per group of commands.

A thin layer: it reads files, calls the planner and prints. Bad input exits with
status 2 and one line per problem, never a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from xlplan import catalog
from xlplan.cli import (  # noqa: F401  (registers the commands)
    decision_cmds,
    diff_cmds,
    measure_cmds,
    plan_cmds,
    review_cmds,
    simulate_cmds,
    traffic_cmds,
    workbook_cmds,
)
from xlplan.cli.app import PLAN_ARG, app, arrange_help, load  # noqa: F401  (the names callers and tests use)
from xlplan.io.errors import InputError
from xlplan.io.extras import missing_extra
from xlplan.plan.scenario import PlanningError

arrange_help()


def _command(argv: list[str] | None) -> str | None:
    args = sys.argv[1:] if argv is None else argv
    return next((a for a in args if not a.startswith("-")), None)


def report(e: InputError) -> None:
    """Print an InputError: one line for one problem (its details indented under it), else a count and a line for each."""
    if len(e.problems) == 1:
        typer.echo(f"error: {e.source}: {e.problems[0]}", err=True)
        for line in getattr(e, "details", ()):
            typer.echo(f"  {line}", err=True)
        return
    typer.echo(f"error: {e.source}: {len(e.problems)} problem(s)", err=True)
    for p in [*e.problems, *getattr(e, "details", ())]:
        typer.echo(f"  {p}", err=True)


ACCEPT = "--accept-implausible"


def _hoisted(argv: list[str]) -> list[str]:
    """``--accept-implausible FIELD`` moved in front of the command, where the app's option is read: it may be written
    after the command as well (``xlplan plan big.yaml --accept-implausible forecast.peak_rps``)."""
    front, rest, i = [], [], 0
    while i < len(argv):
        a = argv[i]
        if a == ACCEPT:
            if i + 1 == len(argv) or "." not in argv[i + 1]:
                got = f"got {argv[i + 1]!r}" if i + 1 < len(argv) else "got nothing after it"
                raise InputError(ACCEPT, [f"{got}; expected a plan field such as forecast.peak_rps after it"])
            front += [a, argv[i + 1]]
            i += 2
            continue
        (front if a.startswith(ACCEPT + "=") else rest).append(a)
        i += 1
    return front + rest


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, turning bad input into exit status 2 and clear lines."""
    try:
        argv = _hoisted(list(sys.argv[1:] if argv is None else argv))
    except InputError as e:
        report(e)
        return 2
    try:
        # not standalone: usage errors are raised to us (not printed as a box), and a command's typer.Exit(code)
        # comes back as its code; commands return nothing else
        code = app(args=argv, prog_name="xlplan", standalone_mode=False)
        return code if isinstance(code, int) else 0
    except typer.TyperException as e:  # a usage error: an unknown option, a value of the wrong type
        ctx = getattr(e, "ctx", None)
        where = ctx.command_path if ctx is not None else "xlplan"
        if type(e).__name__ == "NoArgsIsHelpError":  # `xlplan` alone: the help, and the usage-error status
            typer.echo(ctx.get_help() if ctx is not None else e.format_message(), err=True)
        else:
            typer.echo(f"error: {where}: {e.format_message().rstrip('.')}; see `{where} --help`", err=True)
        return 2
    except typer.Exit as e:
        return e.exit_code
    except typer.Abort:
        typer.echo("error: aborted", err=True)
        return 1
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except InputError as e:
        report(e)
        return 2
    except ModuleNotFoundError as e:
        missing = missing_extra(e, _command(argv))
        if missing is None:
            raise  # not an optional package: a bug, shown as one
        report(missing)
        return 2
    except PlanningError as e:
        plan_file = next((a for a in argv if a.endswith((".yaml", ".yml")) and Path(a).is_file()), None)
        typer.echo(f"error: {plan_file + ': ' if plan_file else ''}cannot plan: {e}", err=True)
        return 2
    except catalog.UnknownNameError as e:
        typer.echo(f"error: {e}", err=True)
        return 2


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
