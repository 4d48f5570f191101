"""Benchmark: an absurd value is refused in under a second, accepted or not (issue 44: "every case above gets one line
and exit 2, or a warning, within a second"; "fleet bounds refuse in under a second").

Each case runs the command in this process (the interpreter's start-up is not counted) and must end with exit status 2
and one line:

- a plan file with a value past its plausible range (a rate of 3,456,000 a second: requests a day), and one of a
  plan-file version newer than this xlplan reads;
- a plan at 10⁶ req/s of 100,000-token conversations that accepts every bound: its closed form buys about 10⁹
  GPUs, past the 10⁶ xlplan sizes accepted or not (the Erlang sums there used to run for minutes);
- ``capacity --gpus 1000000`` and ``simulate --gpus 10000000`` without acceptance (past the 100,000-GPU bound), and
  ``simulate --gpus 900000`` accepted (900,000 replicas for a run of some 24,000 requests);
- a review of a month its log does not cover (``--date 1999-01-15``).

Run:

    .venv/bin/python benchmarks/bench_refusals.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from bench_bombs import refused_in  # the same clock around one command, as the bomb benchmark times it

from xlplan.io.planfile import reference_plan_text

TARGET_S = 1.0
EVERY_BOUND = ["result.fleet_gpus", "result.monthly_usd"]


def _plan(folder: Path, name: str, **changes) -> str:
    data = yaml.safe_load(reference_plan_text())
    data["date"] = str(data["date"])
    for section, fields in changes.items():
        data[section] = {**(data.get(section) or {}), **fields} if isinstance(fields, dict) else fields
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(path)


def _log(folder: Path) -> str:
    t = 1_798_761_600 + np.arange(24_000) / 40.0  # ten minutes at 40 req/s from 2027-01-01
    path = folder / "month.csv"
    pd.DataFrame({"timestamp": pd.to_datetime(t, unit="s", utc=True).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  "prompt_tokens": 2000, "completion_tokens": 300}).to_csv(path, index=False)
    return str(path)


def run() -> int:
    refused_in(["plan", "--no-verify"])  # warm the imports, as a user's second command finds them
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        huge = {"peak_rps": 1e6, "prompt_tokens": {"p50": 100_000, "p95": 120_000, "p99": 128_000},
                "output_tokens": {"p50": 100_000, "p95": 120_000, "p99": 128_000}}
        accepting = _plan(folder, "accepting", forecast=huge, promise={"ttft_s": 600, "itl_s": 1.0},
                          accept_implausible=EVERY_BOUND)
        plain = _plan(folder, "plain")
        accepted = _plan(folder, "accepted", accept_implausible=EVERY_BOUND)
        cases = [("plan: a rate written per day", ["plan", _plan(folder, "per-day", forecast={"peak_rps": 3_456_000})]),
                 ("plan: a file of a newer version", ["plan", _plan(folder, "newer", schema_version=99)]),
                 ("plan: every bound accepted, 1e9 GPUs", ["plan", accepting]),
                 ("capacity --gpus 1,000,000", ["capacity", plain, "--gpus", "1000000"]),
                 ("simulate --gpus 10,000,000", ["simulate", plain, "--gpus", "10000000"]),
                 ("simulate --gpus 900,000 accepted", ["simulate", accepted, "--gpus", "900000"]),
                 ("review --date 1999-01-15", ["review", plain, "--log", _log(folder), "--date", "1999-01-15"])]
        for name, args in cases:
            seconds, rc, message = refused_in(args)
            one_line = rc == 2 and "\n" not in message
            worst = max(worst, seconds if one_line else float("inf"))
            print(f"{name:42s} {seconds:6.2f} s  exit {rc}  {message[:100]}")
    ok = worst < TARGET_S
    print(f"worst refusal {worst:.2f} s (target < {TARGET_S:g} s) -> {'ok' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(run())
