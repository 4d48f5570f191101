"""The configuration battery under each load balancer: is the closed form within one replica of the verified fleet?

    python benchmarks/bench_routing.py [scenario ...] > benchmarks/bench_routing.txt

For every plan of ``benchmarks/battery/`` under 100 GPUs (the larger ones take hours to verify three times over)
this prints, for each ``policy.routing`` (least-loaded, round robin, random, least KV): the Answer's setting (TP degree,
step budget), its closed form and its verified load in replicas (``xlplan plan --verify``), and whether they are within
one replica. Least-loaded and least-KV routing pool the replicas as one queue's servers; round robin and random make each replica
an M/M/c queue of its own over its slots (:func:`xlplan.serving.queueing.routed_wait_at_percentile_s`), with each
replica's prefill as an M/G/1 queue (:func:`xlplan.plan.queue_path.prefill_queue`).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from xlplan.decide.planner import plan as run_plan
from xlplan.io.planfile import read_plan
from xlplan.schema.policy import ROUTINGS

BATTERY = Path(__file__).resolve().parent / "battery"
LARGE = ("8b-2000rps", "chat-500", "deepseek-v3", "deepseek-v3-sglang", "405b-fp8-h200", "h200-peak-x2")
"""Battery plans left out: fleets of hundreds of GPUs, each verified for many minutes. [text]"""


def main(argv: list[str]) -> int:
    names = argv or sorted(f.stem for f in BATTERY.glob("*.yaml") if f.stem not in LARGE)
    print("scenario | routing | Answer: TP, step budget | closed form / verified [replicas] | within one | seconds")
    within = total = 0
    for name in names:
        p = read_plan(BATTERY / f"{name}.yaml")
        for routing in ROUTINGS:
            q = p.model_copy(update={"policy": p.policy.model_copy(update={"routing": routing})})
            t = time.perf_counter()
            a = run_plan(q, verify=True).answer
            cf, v = a.closed_form_load // a.tp, a.load // a.tp
            ok = a.source == "verified" and abs(cf - v) <= 1
            within, total = within + ok, total + 1
            print(f"{name} | {routing} | TP {a.tp}, {a.step_budget_tokens:,} | {cf} / {v if a.source == 'verified' else '—'} | "
                  f"{'yes' if ok else 'NO'} | {time.perf_counter() - t:.0f}", flush=True)
    print(f"\n{within} of {total} within one replica")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
