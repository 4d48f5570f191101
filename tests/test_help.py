"""`xlplan --help` groups the commands by the job (issue 22), and every command's help shows its options the way
click and argparse show them: a flag alone (`--force`), a value with its type in capitals (`--gpus INTEGER`,
`-o PATH`), arguments in the usage line as `[PLAN_FILE]` or `LOGS...` -- never typer's `<bool>` or `<int>`."""

from __future__ import annotations

import re

import pytest

from xlplan.cli import main
from xlplan.cli.app import HELP_PANELS, app

JOBS = ["Plan", "Check against reality", "Decide", "Workbook"]


def _help(capsys, *args: str) -> str:
    with pytest.raises(SystemExit) as e:
        app(list(args) + ["--help"], prog_name="xlplan")
    assert e.value.code == 0
    return capsys.readouterr().out


def test_the_commands_are_listed_by_job_in_the_readmes_order(capsys):
    out = _help(capsys)
    titles = [t for t in JOBS if re.search(rf"─ {re.escape(t)} ─", out)]
    assert titles == JOBS
    positions = [out.index(f"─ {t} ─") for t in JOBS]
    assert positions == sorted(positions)
    # each command appears once, under its job's title and before the next title
    for title, names in HELP_PANELS.items():
        start = out.index(f"─ {title} ─")
        nxt = [p for p in positions if p > start]
        block = out[start:nxt[0] if nxt else len(out)]
        for name in names:
            assert re.search(rf"│ {name}\s", block), (title, name)


def test_every_registered_command_has_a_job():
    registered = {i.name for i in app.registered_commands}
    placed = [n for names in HELP_PANELS.values() for n in names]
    assert sorted(placed) == sorted(registered)  # none left out, none twice


@pytest.mark.parametrize("command", sorted(n for names in HELP_PANELS.values() for n in names))
def test_options_read_as_the_ecosystem_writes_them(capsys, command):
    out = _help(capsys, command)
    assert "<bool>" not in out and not re.search(r"<(int|float|str|path|list\[\w+\])>", out), out
    usage = next(line for line in out.splitlines() if "Usage:" in line)
    assert "{" not in usage and not re.search(r"\[[a-z_]+\]", usage), usage  # PLAN_FILE, [PLAN_FILE], LOGS...


def test_flags_stand_alone_and_values_name_their_type(capsys):
    out = _help(capsys, "simulate")
    assert re.search(r"--search\s{2,}\S", out) and not re.search(r"--search\s+(BOOL|<)", out)
    assert re.search(r"--gpus\s+INTEGER", out)
    assert re.search(r"--seed\s+INTEGER", out)


def test_main_still_runs_a_command(capsys):
    assert main(["example"]) == 0
    assert "forecast:" in capsys.readouterr().out
