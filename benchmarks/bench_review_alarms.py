"""Benchmark: the monthly review's false-alarm rate on months drawn at the plan's own forecast (issue 44: "over at
least 200 seeds of a month drawn at the plan's own forecast, the review's false-alarm rate is at most 5%").

Each month is ten minutes of a Poisson stream at exactly the reference plan's 40 req/s (prompts 2,000 tokens, outputs
300, as the plan says), seed 0 to 199, reviewed by ``xlplan review`` as a user runs it (``--json``; ``--no-verify``
so 200 reviews take minutes, not an hour: the verified re-plan is tested in tests/test_review.py). A month that exits
1 is a false alarm: nothing changed but the sampling noise. The busiest minute of such a month reads above 40 in
nearly every seed (the issue's 42 req/s); the review allows the band of that noise. Run:

    .venv/bin/python benchmarks/bench_review_alarms.py            # 200 seeds
    .venv/bin/python benchmarks/bench_review_alarms.py 50         # fewer

Its last run is committed beside it (bench_review_alarms.txt).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from xlplan.cli import main
from xlplan.io.planfile import reference_plan_text

RATE = 40.0  # the reference plan's peak [requests/s]
SPAN_S = 600.0  # ten minutes of peak: the worst case, every window at peak [s]
T0 = 1_798_761_600  # 2027-01-01 00:00:00 UTC
TARGET = 0.05  # the bound on false alarms [fraction of months]


def month(path: Path, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    t = T0 + np.sort(rng.uniform(0, SPAN_S, rng.poisson(RATE * SPAN_S)))
    pd.DataFrame({"timestamp": pd.to_datetime(t, unit="s", utc=True).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                  "prompt_tokens": 2000, "completion_tokens": 300}).to_csv(path, index=False)
    return path


def run(seeds: int = 200) -> int:
    alarms, high = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        plan = folder / "plan.yaml"
        data = yaml.safe_load(reference_plan_text())
        plan.write_text(yaml.safe_dump({**data, "date": str(data["date"])}), encoding="utf-8")
        for seed in range(seeds):
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                rc = main(["review", str(plan), "--log", str(month(folder / "m.csv", seed)), "--date", "2027-01-01",
                           "--json", "--no-verify"])
            if rc not in (0, 1):
                print(f"seed {seed}: exit {rc}")
                return 1
            r = json.loads(out.getvalue())
            high += next(f for f in r["forecast"] if f["key"] == "peak_rps")["measured"] > RATE
            if rc == 1:
                alarms.append(f"seed {seed}: " + "; ".join(r["reasons"]))
    rate = len(alarms) / seeds
    for a in alarms:
        print(a)
    print(f"{seeds} months at the plan's own 40 req/s: busiest minute above 40 in {high}; review exits 1 in "
          f"{len(alarms)} ({rate:.1%}; target at most {TARGET:.0%}) -> {'ok' if rate <= TARGET else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(run(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
