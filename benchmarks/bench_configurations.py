"""The configuration battery, searched by brute force: is the Answer the cheapest setting that keeps the promise?

    python benchmarks/bench_configurations.py [scenario ...] > benchmarks/bench_configurations.txt

For every plan of ``benchmarks/battery/`` (``benchmarks/battery_plans.py`` writes them) this prints:

- **the Answer** (``xlplan plan --verify``): its setting (TP degree, step budget), its closed form and its verified
  load at that setting in replicas (issue 48's rule: within one replica), the fleet with redundancy and its bill;
- **the brute force**: every TP degree the plan allows × every step budget of
  :data:`xlplan.plan.queue_path.STEP_BUDGETS` × the sequence cap (:data:`CAPS`: the engine's, the search's, 64 and
  256), the plan's own
  settings held where it fixes them, each simulated by the verification's own rule (the fewest replicas keeping the
  promise on seeds 1, 2 and 3, then the fewest keeping it with the redundancy lost, never below load + redundancy ×
  TP), and the cheapest bill found.

A setting is skipped, not simulated, where even one replica of it (with redundancy) bills no less than the cheapest
found so far, or where its one-seed search already does; skipped settings cannot be cheaper. Scenarios whose closed
form is past 128 replicas keep the engine's default sequence cap in the brute force (a run takes minutes).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

from xlplan.decide import configuration
from xlplan.decide.planner import plan as run_plan
from xlplan.io.planfile import read_plan
from xlplan.plan import closed_form, queue_path, steps
from xlplan.plan.scenario import resolve
from xlplan.simulate import search
from xlplan.simulate.workload import run_minutes, workload_for

BATTERY = Path(__file__).resolve().parent / "battery"
SLOTS = "slots"
"""The cap the search tries: the decodes one step carries within the inter-token target at that setting
(:func:`xlplan.decide.configuration.sequence_cap`)."""
CAPS = (None, SLOTS, 64, 256)
"""Sequence caps tried: the engine's default (None), the search's own cap (:data:`SLOTS`), and 64 and 256 whatever
the setting (each below the engine's cap only). [sequences]"""
LARGE_REPLICAS = 128
"""Past this many replicas in the closed form, the brute force keeps the engine's default sequence cap (a run takes
minutes). [replicas]"""


def _verified(s, tp: int, start: int, percentile: float, max_context, best_billed):
    """(load replicas, with-redundancy GPUs, billed) at one setting by the verification's rule; None where none keeps
    the promise or the one-seed answer already bills no less than ``best_billed``."""
    minutes = run_minutes(s.peak_rps)
    wls = [workload_for(s, minutes, seed, s.arrival_cv2, max_context) for seed in range(1, search.VERIFY_SEEDS + 1)]
    runs: dict = {}
    found = search.search(s, tp, wls[0], minutes * 60.0, max(start, 1), percentile, runs)
    if found.verified_replicas is None:
        return None
    if best_billed is not None and configuration.fleet_of(s, found.verified_replicas * tp, tp)[2] >= best_billed:
        return None
    n = search.on_every_seed(s, tp, wls[0], wls[1:], minutes * 60.0, percentile, found.verified_replicas,
                             found.cap_replicas, runs)
    if n is None:
        return None
    red, _ = search._survives_loss(s, tp, wls, minutes * 60.0, percentile, n, int(s.redundancy), found.cap_replicas)
    red_gpus, _, billed = configuration.fleet_of(s, n * tp, tp, red * tp if red is not None else None)
    return n, red_gpus, billed


def brute_force(p, s, large: bool = False) -> tuple[dict | None, int]:
    """The cheapest setting found, and how many settings were simulated; ``large``: the default sequence cap only.
    [dict], [settings]"""
    sol = steps.solve(s)
    fixed_budget = p.policy.max_num_batched_tokens
    budgets = (int(s.max_num_batched_tokens),) if fixed_budget is not None else queue_path.STEP_BUDGETS
    caps = (None,) if (p.policy.max_num_seqs is not None or large) else CAPS
    best, simulated = None, 0
    settings = []
    for pa in sol.candidates:
        for layout in [{}] + configuration.layouts(s, int(pa.tp)):
            for b in budgets:
                cf = closed_form.at_setting(s, sol.traffic, int(pa.tp), b, fixed_budget is not None, **layout)
                if cf is not None:
                    settings.append((configuration.fleet_of(s, cf.load, cf.tp)[2], int(pa.tp), b, cf, layout))
    for _, tp, b, cf, layout in sorted(settings, key=lambda x: x[0]):
        for cap in caps:
            one = configuration.fleet_of(s, tp, tp)[2]
            if best is not None and one >= best["billed"]:
                continue
            sc = dataclasses.replace(s, max_num_batched_tokens=float(b), **layout)
            if cap == SLOTS:
                cap = configuration.sequence_cap(s, cf)
                if cap is None:
                    continue
            if cap is not None:
                if cap >= min(s.max_num_seqs, b):
                    continue
                sc = dataclasses.replace(sc, max_num_seqs=float(cap))
            simulated += 1
            got = _verified(sc, tp, int(cf.load_replicas), p.promise.percentile, p.model.resolve().max_context_tokens,
                            best["billed"] if best else None)
            if got is not None and (best is None or got[2] < best["billed"]):
                best = {"tp": tp, "budget": b, "cap": cap or int(min(s.max_num_seqs, b)), "load": got[0] * tp,
                        "with_redundancy": got[1], "billed": got[2], "layout": _layout_words(layout)}
    return best, simulated


def _answer_layout(r) -> str:
    """The Answer's sequence cap and parallel layout. [text]"""
    a = r.answer
    layout = ({"expert_parallel": a.expert_parallel} if a.expert_parallel > 1 else {}) | (
        {"attention_data_parallel": True} if a.attention_data_parallel else {})
    return (f", cap {a.max_num_seqs}" if a.max_num_seqs is not None else "") + _layout_words(layout)


def _layout_words(layout: dict) -> str:
    """', EP 8, DP attention' and the like: the parallel layout a setting changes, for the table. [text]"""
    return "".join((f", EP {layout['expert_parallel']}" if "expert_parallel" in layout else "")
                   + (", DP attention" if layout.get("attention_data_parallel") else ""))


SKIPPED = {"8b-2000rps": "345 replicas a run at every setting: the brute force takes hours; issue 49's sampled "
                         "simulation is for it"}
"""Scenarios the brute force leaves out, and why. [text]"""


def main(argv: list[str]) -> int:
    names = argv or sorted(x.stem for x in BATTERY.glob("*.yaml"))
    print("scenario | Answer: TP, step budget, cap, layout | closed form / verified [replicas] | with redundancy, billed, $/month | "
          "brute force: TP, budget, cap, layout, load, with redundancy, billed | settings simulated | verdict | seconds")
    failures = 0
    for name in names:
        t0 = time.perf_counter()
        p = read_plan(BATTERY / f"{name}.yaml")
        s = resolve(p)
        r = run_plan(p, verify=True)
        a = r.answer
        cf_reps, v_reps = a.closed_form_load // a.tp, a.load // a.tp
        answer = (f"TP {a.tp}, {a.step_budget_tokens:,}{_answer_layout(r)} | {cf_reps} / {v_reps if a.source == 'verified' else '—'} | "
                  f"{a.with_redundancy}, {a.billed_gpus}, ${a.monthly_usd:,.0f}")
        if name in SKIPPED:
            print(f"{name} | {answer} | not brute-forced: {SKIPPED[name]} | — | — | {time.perf_counter() - t0:.0f}", flush=True)
            continue
        best, n = brute_force(p, s, large=r.closed_form.load // r.closed_form.tp > LARGE_REPLICAS)
        within = a.source == "verified" and abs(cf_reps - v_reps) <= 1
        cheapest = best is None or a.billed_gpus <= best["billed"]
        verdict = ("ok" if within and cheapest else
                   ", ".join(w for w, bad in (("closed form off by more than a replica", not within),
                                              ("dearer than the brute force", not cheapest)) if bad))
        failures += verdict != "ok"
        bf = ("none keeps the promise" if best is None else
              f"TP {best['tp']}, {best['budget']:,}, cap {best['cap']}{best['layout']}, {best['load']}, {best['with_redundancy']}, {best['billed']}")
        print(f"{name} | {answer} | {bf} | {n} | {verdict} | {time.perf_counter() - t0:.0f}", flush=True)
    skipped = [n for n in names if n in SKIPPED]
    brute = len(names) - len(skipped)
    print(f"{brute - failures} of {brute} brute-forced scenarios ok"
          + (f"; not brute-forced: {', '.join(skipped)}" if skipped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
