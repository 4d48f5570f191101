"""Fit the default efficiencies (xlplan/data/efficiencies.yaml) to the public corpus (xlplan/data/measurements.csv).

    python scripts/fit_efficiencies.py            # rewrite the table
    python scripts/fit_efficiencies.py --check    # exit 1 if the committed table differs from a fresh fit

Every throughput and latency row the engine can predict is a run with its own conditions; see
xlplan.evidence.calibrate.fit_defaults for the procedure. The KV-capacity rows do not enter (no efficiency moves them).
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from xlplan.evidence.calibrate import fit_defaults
from xlplan.evidence.validation import fit_runs, run_of, superseded
from xlplan.io.measurement_table import read_measurements
from xlplan.io.measurements import CORPUS, measured_row, measured_rows
from xlplan.serving.efficiency_defaults import CURRENT_SERIES

TABLE = Path(__file__).resolve().parents[1] / "xlplan" / "data" / "efficiencies.yaml"
HEADER = """# Default efficiencies by GPU vendor and serving engine: what a plan runs at when it states none.
# Written by `python scripts/fit_efficiencies.py` from xlplan/data/measurements.csv (the public corpus, each row with its
# source) by a hierarchy of regularised fits (xlplan/evidence/calibrate_map.py): overall (the runbook's 40% MFU and 60% of
# bandwidth as the prior), then each vendor with the overall fit as its prior, then each vendor x engine with its
# vendor's. Dense runs fit prefill MFU, decode MFU, bandwidth efficiency and the per-step overhead [s]; MoE runs fit
# the expert efficiency. A class with fewer than 4 runs of a kind keeps the fit above it and says so (dense_fallback,
# moe_fallback). `runs` and `moe_runs` count the runs behind each. The README's validation table reports these
# in-sample figures beside leave-one-source-out ones, which fit without the source they predict.
"""


def table_text() -> str:
    rows = read_measurements(CORPUS)
    table = fit_defaults(fit_runs(measured_rows(rows)))
    table["not_fitted"] = {"why": ("engine releases older than the defaults describe (vLLM " + CURRENT_SERIES["vllm"][1]
                                   + ", SGLang " + CURRENT_SERIES["sglang"][1] + "): validated, not fitted"),
                           "rows": [r.source for r in (run_of(measured_row(x)) for x in rows) if r is not None and superseded(r.conditions)]}
    return HEADER + yaml.safe_dump(table, sort_keys=False)


if __name__ == "__main__":
    text = table_text()
    if "--check" in sys.argv:
        sys.exit(0 if TABLE.read_text(encoding="utf-8") == text else 1)
    TABLE.write_text(text, encoding="utf-8")
    print(f"wrote {TABLE}")
