"""Benchmark: the discrete-event simulation of the reference plan's peak (issue 12).

Targets, on one core: 10 minutes of the reference peak (about 24,000 requests) on 5 replicas in under 2 s, a
``--search`` (the verified load, from the runbook's 4 GPUs) in under 15 s, ``plan --verify``'s simulation of the
reference in under 3 s, of a plan of about 100 GPUs (the reference at 16 times its peak: 88 verified) in under 5 s
(issue 49; it samples 36 of its replicas), and the default plan of a fleet of about 10,000 GPUs (the reference at
1,800 times its peak), verified on a sample of its replicas, in under 60 s and 1 GiB, in a process of its own
(imports and the compiled loop's load included). Run:

    .venv/bin/python benchmarks/bench_simulate.py
"""

from __future__ import annotations

import dataclasses
import resource
import subprocess
import sys

from bench_plan import best_of, verdict  # the benchmarks' timer and verdict (this folder is on the path as a script)

from xlplan.decide.planner import plan
from xlplan.io.planfile import reference_plan
from xlplan.plan.scenario import resolve
from xlplan.simulate import run, search, workload

RUN_TARGET_S = 2.0
SEARCH_TARGET_S = 15.0
VERIFY_TARGET_S = 3.0
"""Issue 18: the default (verified) plan of the reference under 3 s on one core. [s]"""
LARGE_VERIFY_TARGET_S = 5.0
"""Issue 49: the default (verified) plan of about 100 GPUs (the reference at 16 × its peak, 640 req/s) under 5 s. [s]"""
HUGE_PEAK_FACTOR = 1_800
"""The reference's peak times this: 72,000 req/s, about 10,000 GPUs. [1]"""
HUGE_TARGET_S = 60.0
"""Issue 49: that plan verified by default in under 60 s, its process whole. [s]"""
HUGE_TARGET_GIB = 1.0
"""...and in under 1 GiB (the process's peak resident memory). [GiB]"""
HUGE_SCRIPT = """
import time
t = time.perf_counter()
from xlplan.decide.planner import plan
from xlplan.io.planfile import reference_plan
ref = reference_plan()
big = ref.model_copy(update={"forecast": ref.forecast.model_copy(update={"peak_rps": ref.forecast.peak_rps * %d})})
r = plan(big, verify="auto")
print(r.answer.source, r.answer.purchased, r.verified.sampled_replicas if r.verified else 0, time.perf_counter() - t)
"""
"""The 10,000-GPU plan, run in a process of its own so its memory is its own."""
LARGE_PEAK_FACTOR = 16
"""The reference's peak times this: 640 req/s, about 385,000 requests in 10 minutes, 88 GPUs verified. [1]"""
RATIO_TARGET = 60.0
"""Issue 18: verified against closed form, 3 s against the closed form's 50 ms: a ratio, the same on any machine. [1]"""


def main() -> int:
    s = resolve(reference_plan())
    wl = workload.poisson_workload(s, 600.0, workload.DEFAULT_SEED)
    run_s = best_of(lambda: run.simulate(s, 5, 1, wl, 600.0), 3)
    search_s = best_of(lambda: search.search(s, 1, workload.poisson_workload(s, 600.0, 1), 600.0, 4), 2)
    verify_s = best_of(lambda: plan(reference_plan(), verify=True), 1)  # the default `xlplan plan`, in process
    closed_s = best_of(lambda: plan(reference_plan()), 5)
    ref = reference_plan()
    big = ref.model_copy(update={"forecast": ref.forecast.model_copy(update={"peak_rps": ref.forecast.peak_rps * LARGE_PEAK_FACTOR})})
    large = dataclasses.replace(s, peak_rps=s.peak_rps * LARGE_PEAK_FACTOR)
    large_v = []
    large_s = best_of(lambda: large_v.append(plan(big, verify=True).verified), 1)
    ratio = verify_s / closed_s
    child = subprocess.run([sys.executable, "-c", HUGE_SCRIPT % HUGE_PEAK_FACTOR], capture_output=True, text=True,
                           check=True)
    source, purchased, sampled, huge_s = child.stdout.split()
    huge_gib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024**2  # Linux: KiB; the one child so far
    print(f"10 min at 40 req/s on 5 replicas ({len(wl.arrival_s):,} requests): {run_s:.2f} s (target < {RUN_TARGET_S:g} s) "
          f"-> {verdict(run_s < RUN_TARGET_S)}")
    print(f"--search from 4 GPUs: {search_s:.2f} s (target < {SEARCH_TARGET_S:g} s) -> {verdict(search_s < SEARCH_TARGET_S)}")
    print(f"the default plan, verified (three seeds, the runbook load, the redundancy and failure checks): {verify_s:.2f} s "
          f"(target < {VERIFY_TARGET_S:g} s) -> {verdict(verify_s < VERIFY_TARGET_S)}")
    print(f"the default plan at {large.peak_rps:g} req/s ({large_v[-1].load} GPUs verified): {large_s:.2f} s "
          f"(target < {LARGE_VERIFY_TARGET_S:g} s) -> {verdict(large_s < LARGE_VERIFY_TARGET_S)}")
    huge_ok = float(huge_s) < HUGE_TARGET_S and huge_gib < HUGE_TARGET_GIB and source == "verified"
    print(f"the default plan at {s.peak_rps * HUGE_PEAK_FACTOR:,g} req/s ({int(purchased):,} GPUs purchased, {source} on "
          f"{sampled} replicas sampled): {float(huge_s):.1f} s and {huge_gib:.2f} GiB in its own process (target < "
          f"{HUGE_TARGET_S:g} s, < {HUGE_TARGET_GIB:g} GiB) -> {verdict(huge_ok)}")
    print(f"verified against the closed form ({closed_s * 1000:.0f} ms): {ratio:,.0f}x (target <= {RATIO_TARGET:g}x, a ratio; "
          f"the same on any machine, so a miss fails the run) -> {verdict(ratio <= RATIO_TARGET)}")
    return 0 if ratio <= RATIO_TARGET else 1  # times are this machine's and only named; the ratio fails the run

if __name__ == "__main__":
    sys.exit(main())
