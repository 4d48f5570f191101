"""The configuration battery, searched by brute force: is the Answer the cheapest setting that keeps the promise?

    python benchmarks/bench_configurations.py [scenario ...] > benchmarks/bench_configurations.txt

(naming scenarios prints their rows only; the committed table is every scenario's, one row replaced where only its
scenario was run again).

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
form is past 128 replicas (:data:`LARGE_REPLICAS`) are screened instead of searched: every setting is simulated once
(seed 1) at the most replicas that still bill less than the Answer, and searched by the verification's rule only where
that run keeps the promise. A setting whose run misses there cannot be cheaper: fewer replicas of the same requests
never keep a promise that more miss (the verification's bisection rests on the same fact, tested in
``tests/test_simulate.py::test_more_replicas_never_raise_p95_ttft``). One run a setting instead of a search from the closed form, which at 345
replicas took hours.
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
from xlplan.simulate.run import simulate
from xlplan.simulate.workload import run_minutes, workload_for

BATTERY = Path(__file__).resolve().parent / "battery"
SLOTS = "slots"
"""The cap the search tries: the decodes one step carries within the inter-token target at that setting
(:func:`xlplan.decide.configuration.sequence_cap`)."""
CAPS = (None, SLOTS, 64, 256)
"""Sequence caps tried: the engine's default (None), the search's own cap (:data:`SLOTS`), and 64 and 256 whatever
the setting (each below the engine's cap only). [sequences]"""
LARGE_REPLICAS = 128
"""Past this many replicas in the closed form, every setting is screened by one run at the most replicas billing
less than the Answer (:func:`_screened`) before any search. [replicas]"""


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


def _screened(s, tp: int, below_billed: int, percentile: float, max_context) -> bool:
    """Whether the most replicas of ``tp`` GPUs billing less than ``below_billed`` (with redundancy) keep the promise
    on seed 1; False also where no replica bills less. [bool]"""
    n = 0
    while configuration.fleet_of(s, (n + 1) * tp, tp)[2] < below_billed:
        n += 1
    if n == 0:
        return False
    minutes = run_minutes(s.peak_rps)
    wl = workload_for(s, minutes, 1, s.arrival_cv2, max_context)
    return simulate(s, n, tp, wl, minutes * 60.0, percentile).meets_promise


def brute_force(p, s, below_billed: int | None = None) -> tuple[dict | None, int]:
    """The cheapest setting found, and how many settings were simulated; ``below_billed`` (the Answer's bill): every
    setting is first screened by one run at the most replicas billing less (:func:`_screened`), and searched only
    where that run keeps the promise. [dict], [settings]"""
    sol = steps.solve(s)
    fixed_budget = p.policy.max_num_batched_tokens
    budgets = (int(s.max_num_batched_tokens),) if fixed_budget is not None else queue_path.STEP_BUDGETS
    caps = (None,) if p.policy.max_num_seqs is not None else CAPS
    max_context = p.model.resolve().max_context_tokens
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
            if below_billed is not None and not _screened(sc, tp, below_billed, p.promise.percentile, max_context):
                continue
            got = _verified(sc, tp, int(cf.load_replicas), p.promise.percentile, max_context,
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
        large = r.closed_form.load // r.closed_form.tp > LARGE_REPLICAS
        best, n = brute_force(p, s, a.billed_gpus if large else None)
        within = a.source == "verified" and abs(cf_reps - v_reps) <= 1
        cheapest = best is None or a.billed_gpus <= best["billed"]
        verdict = ("ok" if within and cheapest else
                   ", ".join(w for w, bad in (("closed form off by more than a replica", not within),
                                              ("dearer than the brute force", not cheapest)) if bad))
        failures += verdict != "ok"
        bf = (f"none billing under the Answer's {a.billed_gpus} keeps the promise (screened)" if best is None and large else
              "none keeps the promise" if best is None else
              f"TP {best['tp']}, {best['budget']:,}, cap {best['cap']}{best['layout']}, {best['load']}, {best['with_redundancy']}, {best['billed']}")
        print(f"{name} | {answer} | {bf} | {n} | {verdict} | {time.perf_counter() - t0:.0f}", flush=True)
    print(f"{len(names) - failures} of {len(names)} brute-forced scenarios ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
