"""Benchmark: `xlplan validate` on the whole silicon sample on one core (issue 45: "validate on the whole sample runs
in under two minutes on one core").

Runs ``xlplan validate --corpus silicon --json`` as a user does, as one process pinned to one core (``taskset -c 0``
where the system has it; numpy's and BLAS's threads held to one either way), three times, and prints the least and
the most wall time and the peak memory. Every row of the sample is read, predicted at the shipped defaults, held out by
deployment and by model, and left out by source. Run:

    .venv/bin/python benchmarks/bench_validate.py

Its last run is committed beside it (bench_validate.txt).
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time

TARGET_S = 120.0  # the bound [s]
RUNS = 3


def main() -> int:
    env = os.environ | {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    cmd = [*pin, sys.executable, "-m", "xlplan", "validate", "--corpus", "silicon", "--json"]
    times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    core = "one core (taskset -c 0)" if pin else "threads held to one (no taskset here)"
    print(f"validate --corpus silicon on {core}: {min(times):.1f}-{max(times):.1f} s over {RUNS} runs, peak "
          f"{peak_mib:,.0f} MiB; target under {TARGET_S:.0f} s -> {'met' if max(times) < TARGET_S else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
