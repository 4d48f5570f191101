"""The note's words read as the numbers mean: singular for one, and the minimum replica explained where it binds."""

from __future__ import annotations

from xlplan.io.planfile import reference_plan
from xlplan.note import render_text
from xlplan.plan import Plan
from xlplan.planner import plan


def test_a_load_one_replica_carries_is_explained_and_singular():
    # 0.2 req/s of the runbook's traffic: Little's Law puts 0.2 × ~15 s = 3 conversations in flight, far below what one
    # H100 holds (the runbook's 150 per GPU), so no path needs more than one replica of TP 1: the minimum replica binds
    d = reference_plan().model_dump()
    d["forecast"]["peak_rps"] = 0.2
    r = plan(Plan.model_validate(d))
    answer = next(line for line in render_text(r).splitlines() if line.startswith("Answer:"))
    assert answer.startswith("Answer: 1 GPU for the load,"), answer
    assert "binding: minimum replica (one replica of 1 GPU carries the peak with room to spare" in answer
