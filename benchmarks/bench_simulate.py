"""Benchmark: the discrete-event simulation of the reference plan's peak (issue 12).

Targets, on one core: 10 minutes of the reference peak (about 24,000 requests) on 5 replicas in under 2 s, and a
``--search`` (the verified load, from the runbook's 4 GPUs) in under 15 s. Run:

    .venv/bin/python benchmarks/bench_simulate.py
"""

from __future__ import annotations

import sys

from bench_plan import best_of  # the benchmarks' one timer (this folder is on the path when run as a script)

from xlplan import simulate, steps
from xlplan.io.planfile import reference_plan
from xlplan.scenario import resolve

RUN_TARGET_S = 2.0
SEARCH_TARGET_S = 15.0


def main() -> int:
    s = resolve(reference_plan())
    wl = simulate.poisson_workload(s, 600.0, simulate.DEFAULT_SEED)
    run_s = best_of(lambda: simulate.simulate(s, 5, 1, wl, 600.0), 3)
    search_s = best_of(lambda: simulate.search(s, 1, simulate.poisson_workload(s, 600.0, 1), 600.0, 4), 2)
    verify_s = best_of(lambda: simulate.verify(s, steps.solve(s)), 1)
    print(f"10 min at 40 req/s on 5 replicas ({len(wl.arrival_s):,} requests): {run_s:.2f} s (target < {RUN_TARGET_S:g} s)")
    print(f"--search from 4 GPUs: {search_s:.2f} s (target < {SEARCH_TARGET_S:g} s)")
    print(f"plan --verify's simulation (search, runbook load, failure check): {verify_s:.2f} s")
    ok = run_s < RUN_TARGET_S and search_s < SEARCH_TARGET_S
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
