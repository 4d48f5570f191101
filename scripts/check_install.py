"""A plain `pip install <checkout>` (no extras) in a clean virtual environment gives a working command line.

Run by `.ci/run` after the suite (it was a test; at about a minute, mostly pip, it left the suite's ten-minute budget).
NEEDS AN INDEX: pip downloads the core dependencies (pydantic, PyYAML, typer, rich, openpyxl, defusedxml, olefile,
numpy) and setuptools for the build. Exit 0 when every check holds, 1 naming the first that does not.

Usage: python scripts/check_install.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _copy_checkout(dest: Path) -> Path:
    """The files a build needs, copied so that building writes nothing into the checkout."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("xlplan", "udfs"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    return dest


def _check(ok: bool, what: str, detail: str = "") -> None:
    if not ok:
        sys.exit(f"check_install: {what} failed{': ' + detail[-600:] if detail else ''}")
    print(f"ok  {what}")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        venv = tmp_path / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        bindir = venv / ("Scripts" if os.name == "nt" else "bin")
        src = _copy_checkout(tmp_path / "checkout")
        pip = subprocess.run([str(bindir / "python"), "-m", "pip", "install", "-q", str(src)], capture_output=True,
                             text=True, timeout=600, check=False)
        _check(pip.returncode == 0, "pip install <checkout> without extras", pip.stderr)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        xlplan = str(bindir / "xlplan")

        def run(*args):
            return subprocess.run([xlplan, *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
                                  check=False)

        # the runbook's answer: 4 GPUs for the load, 5 with redundancy, a node of 8
        r = run("plan")
        _check(r.returncode == 0 and "Traceback" not in r.stderr and r.stdout.startswith("CAPACITY NOTE"),
               "xlplan plan prints the capacity note", r.stderr)
        r = run("workbook", "-o", "x.xlsx")
        _check(r.returncode == 0 and zipfile.is_zipfile(tmp_path / "x.xlsx"), "xlplan workbook writes an .xlsx", r.stderr)
        r = run("check", "x.xlsx")
        _check(r.returncode == 0, "xlplan check on that workbook", r.stdout + r.stderr)
        # commands whose extra is missing: one line naming the extra, exit 2
        (tmp_path / "log.csv").write_text("timestamp,prompt_tokens,completion_tokens\n1767225600,100,10\n",
                                          encoding="utf-8")
        r = run("traffic", "log.csv")
        _check(r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "pip install 'xlplan[logs]'" in r.stderr,
               "traffic without the logs extra: one line naming it, exit 2", r.stderr)
        for cmd, extra in (("confirm", "metrics"), ("calibrate", "fit")):
            args = ("confirm", "log.csv", "x.xlsx") if cmd == "confirm" else ("calibrate", "log.csv")
            r = run(*args)
            _check(r.returncode == 2 and f"pip install 'xlplan[{extra}]'" in r.stderr and "Traceback" not in r.stderr,
                   f"{cmd} without the {extra} extra: names it, exit 2", r.stderr)
        # the purchase decision and the simulation need no extra
        for args in (("simulate", "--gpus", "6", "--minutes", "2"), ("compare", "--gpus", "h100-sxm,h200"),
                     ("schedule", "--growth", "0.1", "--lead-time-days", "60", "--months", "3")):
            r = run(*args)
            _check(r.returncode == 0 and "Traceback" not in r.stderr, f"xlplan {args[0]} with no extra", r.stderr)
        # the version, from the console script and from python -m xlplan
        _check(run("--version").stdout.strip() == "xlplan 0.1.0", "xlplan --version")
        r = subprocess.run([str(bindir / "python"), "-m", "xlplan", "--version"], capture_output=True, text=True,
                           env=env, check=False)
        _check(r.stdout.strip() == "xlplan 0.1.0", "python -m xlplan --version", r.stderr)


if __name__ == "__main__":
    main()
