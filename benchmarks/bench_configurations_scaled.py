"""The configuration battery off its own rates: every plan at 0.6 and 1.7 times its peak, as held-out scenarios.

    python benchmarks/bench_configurations_scaled.py [scale ...] > benchmarks/bench_configurations_scaled.txt

The battery's scenarios were the ones the closed form was checked on while it was built; the same plans at other peak
rates were not. For each plan of ``benchmarks/battery/`` at each scale (default 0.6 and 1.7) this prints the
Answer (``xlplan plan --verify``): its setting, its closed form against its verified load in replicas (issue 48's
rule: within one replica) and its bill, beside the brute force of ``bench_configurations.py`` (the same rule:
every TP degree, step budget, sequence cap and layout, simulated by the verification's own rule; past 128
replicas screened at the most replicas billing less than the Answer).
"""

from __future__ import annotations

import sys
import time

from bench_configurations import BATTERY, LARGE_REPLICAS, _answer_layout, brute_force

from xlplan.decide.planner import plan as run_plan
from xlplan.io.planfile import read_plan
from xlplan.plan.scenario import resolve
from xlplan.schema.plan import Plan

SCALES = (0.6, 1.7)
"""Multiples of each plan's peak rate tried. [1]"""


def scaled(p: Plan, scale: float) -> Plan:
    """The plan at ``scale`` times its peak rate (rounded to 0.01 req/s), everything else as written. [Plan]"""
    data = p.model_dump(exclude_none=True)
    data["forecast"]["peak_rps"] = round(p.forecast.peak_rps * scale, 2)
    data["name"] = f"{p.name} at {scale:g}× its peak"
    return Plan.model_validate(data)


def main(argv: list[str]) -> int:
    scales = [float(x) for x in argv] or list(SCALES)
    names = sorted(x.stem for x in BATTERY.glob("*.yaml"))
    print("scenario | scale | peak [req/s] | Answer: TP, step budget, cap, layout | closed form / verified [replicas] | "
          "with redundancy, billed | brute force: TP, budget, cap, layout, load, with redundancy, billed | verdict | seconds")
    rows = off = dearer = 0
    for scale in scales:
        for name in names:
            t0 = time.perf_counter()
            p = scaled(read_plan(BATTERY / f"{name}.yaml"), scale)
            r = run_plan(p, verify=True)
            a = r.answer
            cf_reps = a.closed_form_load // a.tp
            v_reps = a.load // a.tp if a.source == "verified" else None
            large = r.closed_form.load // r.closed_form.tp > LARGE_REPLICAS
            best, _ = brute_force(p, resolve(p), a.billed_gpus if large else None)
            within = v_reps is not None and abs(cf_reps - v_reps) <= 1
            cheapest = best is None or a.billed_gpus <= best["billed"]
            verdict = ("ok" if within and cheapest else
                       ", ".join(w for w, bad in ((f"closed form off by {abs(cf_reps - v_reps) if v_reps is not None else '?'} replicas",
                                                   not within), ("dearer than the brute force", not cheapest)) if bad))
            rows += 1
            off += not within
            dearer += not cheapest
            bf = (f"none billing under the Answer's {a.billed_gpus} keeps the promise (screened)" if best is None and large else
                  "none keeps the promise" if best is None else
                  f"TP {best['tp']}, {best['budget']:,}, cap {best['cap']}{best['layout']}, {best['load']}, "
                  f"{best['with_redundancy']}, {best['billed']}")
            print(f"{name} | {scale:g} | {p.forecast.peak_rps:g} | TP {a.tp}, {a.step_budget_tokens:,}{_answer_layout(r)} | "
                  f"{cf_reps} / {v_reps if v_reps is not None else '—'} | {a.with_redundancy}, {a.billed_gpus} | {bf} | "
                  f"{verdict} | {time.perf_counter() - t0:.0f}", flush=True)
    print(f"{rows - off} of {rows} within one replica; {rows - dearer} of {rows} no dearer than the brute force")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
