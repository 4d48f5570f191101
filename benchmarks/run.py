"""Run every speed and memory benchmark, print their figures, and end with one line naming each missed target.

    .venv/bin/python benchmarks/run.py

Each benchmark line ends ``-> met`` or ``-> MISSED``. Times and memory are this machine's, so a missed one is named but
does not fail the run; a benchmark exits 1 only for a machine-independent ratio (the sweep against the scalar
planner, the verified plan against the closed form), and then so does this. The hostile-file check (``bench_bombs.py``) is a safety check CI runs on its own.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

BENCHMARKS = ("bench_plan.py", "bench_simulate.py", "bench_workbook.py", "bench_traffic.py", "bench_refusals.py",
              "bench_accuracy.py", "bench_validate.py")
"""The benchmarks, in the order they print."""


def main() -> int:
    missed, failed = [], []
    for name in BENCHMARKS:
        print(f"== {name}", flush=True)
        proc = subprocess.run([sys.executable, str(HERE / name)], capture_output=True, text=True, cwd=HERE.parent, check=False)
        out = proc.stdout.rstrip()
        if out:
            print(out, flush=True)
        if proc.returncode != 0:
            failed.append(name)
            last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            print(f"{name} exited {proc.returncode}: {last}", flush=True)
        missed += [f"{name}: {line.rsplit(' -> ', 1)[0].strip()}" for line in out.splitlines() if line.rstrip().endswith("-> MISSED")]
    if missed:
        print(f"benchmarks: {len(missed)} target(s) missed — " + "; ".join(missed))
    else:
        print("benchmarks: every target met")
    if failed:
        print(f"benchmarks failing the run: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
