"""Time the test suite and write its counts and times into the README.

    python scripts/suite_time.py           # the fast set, in one process: tests, CPU seconds, wall seconds
    python scripts/suite_time.py --full    # the whole suite as the README's second command runs it (every core)
    python scripts/suite_time.py --write   # the same, written into README.md between its suite-time markers

The fast set is ``pytest -m "not slow"``; its target is under 60 CPU-seconds (user + system time of pytest and every
process it starts, measured with ``resource.getrusage(RUSAGE_CHILDREN)``, so the figure is the work done whatever the
cores). It runs in one process (``-n 0``) so that no worker's start-up is counted. The whole suite is timed as CI runs
it, on every core (``-n auto``), by wall clock. The README's sentences between ``<!-- fast-set:start -->`` and
``<!-- fast-set:end -->`` (and ``full-suite``) are this script's, with the day and the machine's cores.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FAST_TARGET_CPU_S = 60.0
"""The fast set's budget: under a minute of CPU. [s]"""


def run(args: list[str]) -> dict:
    """Run pytest with ``args`` from the checkout; its counts, CPU and wall time.

    Parameters
    ----------
    args : list of str
        Arguments after ``pytest -q -p no:cacheprovider``.

    Returns
    -------
    dict
        ``passed``, ``failed`` [tests]; ``cpu_s`` (user + system of pytest and its children) [s]; ``wall_s`` [s];
        ``tail``: pytest's closing line.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    tail = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr.strip()[-300:]
    count = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|errors?)", tail)}
    return {"passed": count.get("passed", 0), "failed": count.get("failed", 0) + count.get("error", 0) + count.get("errors", 0),
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), "wall_s": wall, "tail": tail}


def fast_sentence(r: dict) -> str:
    """The README's sentence for the fast set. [text]"""
    verdict = "within" if r["cpu_s"] < FAST_TARGET_CPU_S else "over"
    return (f"{r['passed']:,} tests, {r['cpu_s']:.0f} CPU-seconds in one process ({verdict} the 60 s budget; "
            f"{r['wall_s']:.0f} s wall), measured by `python scripts/suite_time.py` on {dt.date.today():%Y-%m-%d} "
            f"on a {os.cpu_count()}-core machine")


def full_sentence(r: dict) -> str:
    """The README's sentence for the whole suite. [text]"""
    minutes, seconds = divmod(round(r["wall_s"]), 60)
    return (f"{r['passed']:,} tests in {minutes} min {seconds} s on {os.cpu_count()} cores, measured by "
            f"`python scripts/suite_time.py --full` on {dt.date.today():%Y-%m-%d}")


def write(key: str, sentence: str) -> None:
    """Replace README.md's text between the ``key`` markers with ``sentence``."""
    text = README.read_text(encoding="utf-8")
    start, end = f"<!-- {key}:start -->", f"<!-- {key}:end -->"
    if start not in text or end not in text:
        raise SystemExit(f"README.md: no {start} … {end} markers")
    head, rest = text.split(start, 1)
    README.write_text(head + start + sentence + end + rest.split(end, 1)[1], encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Time the fast set (or the whole suite) and print, or write, its sentence; exit 1 when a test failed.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments.

    Returns
    -------
    int
        0, or 1 when a test failed.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="time the whole suite on every core")
    parser.add_argument("--write", action="store_true", help="write the sentence into README.md")
    args = parser.parse_args(argv)
    if args.full:
        r = run([])
        sentence, key = full_sentence(r), "full-suite"
    else:
        r = run(["-m", "not slow", "-n", "0"])
        sentence, key = fast_sentence(r), "fast-set"
    print(r["tail"])
    if r["failed"] or not r["passed"]:
        print("not measured: the tests did not all pass", file=sys.stderr)
        return 1
    print(sentence)
    if args.write:
        write(key, sentence)
    return 0


if __name__ == "__main__":
    sys.exit(main())
