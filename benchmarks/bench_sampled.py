"""Sampled runs against full runs: the fewest replicas a verification finds, every replica simulated or a sample.

    python benchmarks/bench_sampled.py [scenario ...] [--sample=K] > benchmarks/bench_sampled.txt

A verification whose fleet starts past :data:`xlplan.simulate.workload.SAMPLE_ABOVE_REPLICAS` replicas simulates a
sample of them, each run serving the sample's share of the peak (:class:`xlplan.simulate.workload.SampledWorkload`).
This measures what that costs in accuracy: for plans of ``benchmarks/battery/`` at a peak whose closed form, at the
setting it deploys, is past :data:`SCALED_FLEET` replicas, the fewest replicas keeping the promise on every seed
(:func:`xlplan.simulate.search.minimum_replicas`, the verification's rule) with every replica simulated and with
the sample ``plan`` takes (:func:`xlplan.simulate.workload.sample_replicas`). The battery's plans were written before
sampling existed; none was chosen for this. The cost of the default verified ``plan`` of a fleet of about 10,000
GPUs, which samples, is ``bench_simulate.py``'s.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

from xlplan.decide.answer import deployed
from xlplan.io.planfile import read_plan
from xlplan.plan import closed_form, steps
from xlplan.plan.scenario import resolve
from xlplan.simulate import search, workload

BATTERY = Path(__file__).resolve().parent / "battery"
SCALED_FLEET = 160
"""Each plan runs at the peak that takes its closed form past this many replicas (its own peak where that is past
it already): past :data:`xlplan.simulate.workload.SAMPLE_ABOVE_REPLICAS`, where ``plan`` samples. [replicas]"""
CASES = ("reference*16", "reference", "reference@round_robin", "reference@random", "bursty", "heavy-tail", "long-prompts", "chat-500",
         "itl-25ms", "rag", "8b-2000rps")
"""The battery's plans measured (``name@routing`` under another load balancer; ``name*16`` at 16 times its peak, the
88-GPU plan, instead of past :data:`SCALED_FLEET`): a full run of 160 replicas takes seconds and a search a dozen
runs, so not every plan. [text]"""


def _case(label: str):
    """(plan, scale): the battery plan ``name[@routing]`` at the peak that takes its closed form past
    :data:`SCALED_FLEET` replicas. [Plan], [1]"""
    label, _, fixed = label.partition("*")  # name*16: at 16 times its peak
    name, _, routing = label.partition("@")
    p = read_plan(BATTERY / f"{name}.yaml")
    if fixed:
        return p.model_copy(update={"forecast": p.forecast.model_copy(
            update={"peak_rps": p.forecast.peak_rps * int(fixed)})}), int(fixed)
    if routing:
        p = p.model_copy(update={"policy": p.policy.model_copy(update={"routing": routing})})
    scale, n = 0, 1
    while True:  # the closed form grows about in proportion to the peak: a step or two
        scale = max(scale + 1, math.ceil(scale * SCALED_FLEET / n)) if scale else 1
        q = p.model_copy(update={"forecast": p.forecast.model_copy(update={"peak_rps": p.forecast.peak_rps * scale})})
        s = resolve(q)
        n = closed_form.closed_form(s, steps.solve(s), q.policy.max_num_batched_tokens is not None).load_replicas
        if n > SCALED_FLEET:
            return q, scale


def main(argv: list[str]) -> int:
    print("scenario | peak [req/s] | TP | closed form [replicas] | sample [replicas] | full / sampled [replicas] | "
          "difference | seconds full / sampled")
    rows = []
    forced = [int(a.split("=", 1)[1]) for a in argv if a.startswith("--sample=")]  # a sample size to try instead
    argv = [a for a in argv if not a.startswith("--sample=")]
    for label in argv or CASES:
        p, scale = _case(label)
        s = resolve(p)
        cf = closed_form.closed_form(s, steps.solve(s), p.policy.max_num_batched_tokens is not None)
        n = int(cf.load_replicas)
        k = forced[0] if forced else workload.sample_replicas(s, n)
        sd, ctx = deployed(s, cf), p.model.resolve().max_context_tokens
        found, secs = {}, {}
        for how, sample in (("full", 0), ("sampled", k)):
            t = time.perf_counter()
            found[how] = search.minimum_replicas(sd, int(cf.tp), n, p.promise.percentile, cv2=s.arrival_cv2,
                                                 max_context=ctx, sample=sample)
            secs[how] = time.perf_counter() - t
        full, samp = found["full"], found["sampled"]
        diff = (samp - full) if (full is not None and samp is not None) else None
        rows.append((diff, full))
        print(f"{label} | {s.peak_rps:,g} (x{scale}) | {int(cf.tp)} | {n} | {k} | {full} / {samp} | "
              f"{'—' if diff is None else f'{diff:+d} ({diff / full:+.1%})'} | {secs['full']:.0f} / {secs['sampled']:.0f}",
              flush=True)
    within = sum(1 for d, _ in rows if d is not None and abs(d) <= 1)
    worst = max((abs(d) / f for d, f in rows if d is not None), default=0.0)
    print(f"\n{within} of {len(rows)} within one replica; the largest difference {worst:.1%} of the fleet")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
